"""``ember.function``: stages a Python function into graph functions, one per input signature.

A call computes a key from its arguments — dtype and shape of each tensor (NumPy arrays count as
tensors), the value of every other argument, the nesting structure, and whether it is made inside another
trace — and runs the cached graph for it; a new key traces the Python function once more (000 "defun: a
brief specification"; 002 "Input signatures"). ``input_signature`` fixes one graph; ``reduce_retracing``
relaxes a dimension that changed to unknown.
"""

import collections
import copy
import functools
import inspect
import warnings
import weakref

import numpy as np

from ember import _C, config, dtypes, errors, function_type, variable_creation
from ember.device_scope import current_device
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec
from ember.function_graph import _RESULT, ConcreteFunction
from ember.util import nest

_PartitionedCall = _C.op("PartitionedCall")
_MAX_CACHED_TRACES = 256  # per function; least recently used traces are dropped beyond this
_RETRACE_WARNING_THRESHOLD = 5


class _TensorLeaf:
    """A tensor argument's place in the key: (dtype, shape)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = shape

    def __eq__(self, other):
        return isinstance(other, _TensorLeaf) and self.dtype == other.dtype and self.shape == other.shape

    def __hash__(self):
        return hash((self.dtype, self.shape))

    def describe(self):
        return f"{dtypes.ALL[self.dtype].name}{list(self.shape) if self.shape is not None else '<unknown>'}"


class _ValueLeaf:
    """A non-tensor argument's place in the key: its type and value (1, 1.0 and True differ)."""

    __slots__ = ("type", "value")

    def __init__(self, value):
        self.type = type(value)
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _ValueLeaf) and self.type is other.type and self.value == other.value

    def __hash__(self):
        return hash((self.type, self.value))


class _Unhashable:
    """An argument that is neither a tensor nor hashable: keyed by identity."""

    __slots__ = ("ident",)

    def __init__(self, obj):
        self.ident = id(obj)

    def __eq__(self, other):
        return isinstance(other, _Unhashable) and other.ident == self.ident

    def __hash__(self):
        return self.ident


class _VariableLeaf:
    """A variable argument: keyed by dtype and shape, as TensorFlow keys it, and by which earlier variable
    argument of the call it is (``f(v, v)`` and ``f(v, w)`` differ: automatic control dependencies order
    the ops of one variable). A call with other variables runs the trace rebound to them
    (``_for_variables``)."""

    __slots__ = ("dtype", "shape", "alias")

    def __init__(self, variable, alias):
        self.dtype = variable.dtype._enum
        self.shape = None if variable._unknown_rank else tuple(variable._shape_list)  # declared, -1 unknown
        self.alias = alias

    def __eq__(self, other):
        return (isinstance(other, _VariableLeaf) and self.dtype == other.dtype and self.shape == other.shape
                and self.alias == other.alias)

    def __hash__(self):
        return hash((self.dtype, self.shape, self.alias))


def _leaf_key(value, tensors, variables=None):
    """The key of one leaf; tensor leaves are appended to ``tensors``, the call's distinct variable
    arguments to ``variables``."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return _TensorLeaf(value._dtype_enum, value._shape_tuple)
    if isinstance(value, np.ndarray):
        t = convert_to_tensor(value)
        tensors.append(t)
        return _TensorLeaf(t._dtype_enum, t._shape_tuple)
    if getattr(value, "_ember_variable", False):
        if variables is None:
            variables = []
        for i, seen in enumerate(variables):
            if seen is value:
                return _VariableLeaf(value, i)
        variables.append(value)
        return _VariableLeaf(value, len(variables) - 1)
    try:
        hash(value)
    except TypeError:
        return _Unhashable(value)
    return _ValueLeaf(value)


def _structure_key(value, tensors, variables=None):
    if variables is None:
        variables = []
    if isinstance(value, dict):
        keys = nest._sorted_keys(value)
        return ("dict", type(value), tuple(keys),
                tuple(_structure_key(value[k], tensors, variables) for k in keys))
    if isinstance(value, (list, tuple)):
        return ("seq", type(value), tuple(_structure_key(v, tensors, variables) for v in value))
    return _leaf_key(value, tensors, variables)


def _describe_change(names, old_key, new_key):
    """'argument x: shape (2,) -> (3,)' for the first leaf that differs between two keys."""
    old_leaves, new_leaves = [], []
    _leaves_of(old_key[0], old_leaves)
    _leaves_of(new_key[0], new_leaves)
    for i, (a, b) in enumerate(zip(old_leaves, new_leaves)):
        if a != b:
            name = names[i] if i < len(names) else f"#{i}"
            if isinstance(a, _TensorLeaf) and isinstance(b, _TensorLeaf):
                if a.dtype != b.dtype:
                    return f"argument {name}: dtype {dtypes.ALL[a.dtype].name} -> {dtypes.ALL[b.dtype].name}"
                return f"argument {name}: shape {_shape_str(a.shape)} -> {_shape_str(b.shape)}"
            return f"argument {name}: {_leaf_str(a)} -> {_leaf_str(b)}"
    if len(old_leaves) != len(new_leaves) or old_key[0] != new_key[0]:
        return "the structure of the arguments changed"
    if old_key[2] != new_key[2]:
        return f"the device scope changed ({old_key[2]!r} -> {new_key[2]!r})"
    return "the calling context changed (inside another trace or not)"


def _shape_str(shape):
    if shape is None:
        return "<unknown>"
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"


def _leaf_str(leaf):
    if isinstance(leaf, _ValueLeaf):
        return f"{leaf.type.__name__} {leaf.value!r}"
    if isinstance(leaf, _TensorLeaf):
        return "tensor " + leaf.describe()
    if isinstance(leaf, _VariableLeaf):
        shape = "<unknown>" if leaf.shape is None else [None if d < 0 else d for d in leaf.shape]
        return (f"variable {dtypes.ALL[leaf.dtype].name}{shape}"
                + f" (distinct variable argument #{leaf.alias})")
    return "an unhashable object"


def _leaves_of(key, out):
    """The leaves of a structure key: containers are tuples ("dict"|"seq", type, ..., children)."""
    if isinstance(key, tuple):
        for child in key[-1]:
            _leaves_of(child, out)
    else:
        out.append(key)


def _leaf_names(sig_names, args):
    """Names of the leaves of bound positional arguments ('x', 'pair[0]', ...)."""
    names = []

    def walk(value, name):
        if isinstance(value, dict):
            for k in nest._sorted_keys(value):
                walk(value[k], f"{name}[{k!r}]")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{name}[{i}]")
        else:
            names.append(name)

    for name, value in zip(sig_names, args):
        walk(value, name)
    return names


def _as_spec(item):
    """A TensorSpec from a TensorSpec, or the seeds' ``(dtype, shape)`` pair; a composite tensor's spec
    (RaggedTensorSpec, SparseTensorSpec) as it is."""
    if isinstance(item, TensorSpec) or _is_composite_spec(item):
        return item
    if isinstance(item, tuple) and len(item) == 2 and not isinstance(item[0], (list, tuple)):
        dtype, shape = item
        return TensorSpec(shape, dtype)
    raise TypeError(f"input_signature entries must be ember.TensorSpec, got {item!r}")


def _normalize_signature(signature):
    if signature is None:
        return None
    # The seeds write a one-argument signature as a bare (dtype, shape) pair.
    if isinstance(signature, tuple) and len(signature) == 2 and isinstance(signature[0], dtypes.DType):
        signature = [signature]
    return [nest.map_structure(_as_spec, s) if isinstance(s, (list, dict)) else _as_spec(s)
            for s in signature]


class Function(_C.FunctionBase):
    """A polymorphic graph function: traced once per input signature, then run by the C++ runtime.

    Calls go through ``_C.FunctionBase.__call__`` (C++): it keys simple calls itself and runs the graph a
    previous call resolved to; other calls come here (``_call_slow``)."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 reduce_retracing=False, jit_compile=None):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = _normalize_signature(input_signature)
        if self._input_signature is not None and all(isinstance(s, TensorSpec) for s in self._input_signature):
            # The C++ call path keys these tensors by the specs, so a new batch size skips Python too. A
            # dimension beyond int64 is left to the trace, which reports it.
            try:
                self._set_call_signature([
                    (-1, ()) if s.shape.rank is None else
                    (s.shape.rank, tuple(-1 if d is None else d for d in s.shape.as_list()))
                    for s in self._input_signature])
            except OverflowError:
                pass
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = jit_compile
        self._cache = collections.OrderedDict()
        self._tracing_count = 0
        self._last_key = None
        self._retraces = 0
        try:
            self._signature = inspect.signature(python_function)
        except (TypeError, ValueError):
            self._signature = None
        self._instances = weakref.WeakKeyDictionary()
        # Whose first trace may create variables: the function itself, or (ember.method) each instance's
        # bound copy. An ember.function method shares one first trace across instances (the seeds).
        self._per_instance_variables = False
        self._creation_owner = self
        self._traced_any = False
        functools.update_wrapper(self, python_function)

    # ---- binding to instances: @ember.function on a method
    def __get__(self, instance, owner):
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:  # the instance cannot be weakly referenced
            bound = None
        if bound is None:
            bound = Function(_weakly_bound(self._python_function, instance), self._name, self._input_signature,
                             self._autograph, self._reduce_retracing, self._jit_compile)
            bound._per_instance_variables = self._per_instance_variables
            bound._creation_owner = bound if self._per_instance_variables else self
            try:
                self._instances[instance] = bound
            except TypeError:
                pass
        return bound

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self):
        return self._tracing_count

    # ---- introspection, as TensorFlow's function guide shows it
    @property
    def function_spec(self):
        return function_type.FunctionSpec(self._python_function, self._input_signature)

    @property
    def function_type(self):
        """The Python function's signature, its parameters annotated with the input_signature's specs."""
        if self._signature is None:
            return None
        specs = list(self._input_signature or [])
        params = [p.replace(annotation=function_type._Type(function_type.type_text(specs[i]))) if i < len(specs)
                  else p for i, p in enumerate(self._signature.parameters.values())]
        return self._signature.replace(parameters=params)

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Each cached trace's signature, oldest first, separated by blank lines (a function with an
        input_signature is traced for it first, as TensorFlow lists it before any call)."""
        if not self._cache and self._input_signature is not None:
            self.get_concrete_function()
        traces = sorted(self._cache.values(), key=lambda c: c._trace_number)  # the cache is in LRU order
        return "\n\n".join(c.pretty_printed_signature(verbose=verbose) for c in traces)

    # ---- calls (``__call__`` is _C.FunctionBase's)
    def _call_slow(self, *args, **kwargs):
        if config.functions_run_eagerly():
            return self._python_function(*args, **kwargs)
        concrete, tensors = self._concrete_for(args, kwargs)
        return concrete._call_flat(tensors)

    def _call_and_resolve(self, *args):
        """The C++ call path's miss: run, and report the graph so that the next such call skips Python."""
        if config.functions_run_eagerly():
            return self._python_function(*args), None, None, False, -1
        concrete, tensors = self._concrete_for(args, {})
        result = concrete._call_flat(tensors)
        single = len(concrete._template) == 1 and isinstance(concrete._structured_outputs, Tensor)
        return result, concrete, concrete._gf, single, len(tensors)

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (tensors or TensorSpecs); traces if needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        args = tuple(_spec_to_placeholder_marker(a) for a in args)
        kwargs = {k: _spec_to_placeholder_marker(v) for k, v in kwargs.items()}
        concrete, _ = self._concrete_for(args, kwargs, specs_allowed=True)
        return concrete

    graph_function = get_concrete_function  # the seeds' name

    def _bind(self, args, kwargs):
        if self._signature is None:
            return list(args), [f"#{i}" for i in range(len(args))]
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        names, values = [], []
        for name, value in bound.arguments.items():
            kind = self._signature.parameters[name].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                names += [f"{name}[{i}]" for i in range(len(value))]
                values += list(value)
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k in sorted(value):
                    names.append(k)
                    values.append(value[k])
            else:
                names.append(name)
                values.append(value)
        return values, names

    def _concrete_for(self, args, kwargs, specs_allowed=False):
        values, names = self._bind(args, kwargs)
        if self._input_signature is not None:
            values = self._apply_signature(values, names)
        else:
            values = _decompose_composites(values)
        tensors, variables = [], []
        key = (_spec_key(values, tensors, variables), _C.in_trace(), current_device())
        concrete = self._cache.get(key)
        if concrete is not None:
            self._cache.move_to_end(key)
            return self._for_variables(concrete, variables, values, names, key, tensors), tensors
        # A trace made for more general shapes serves the call too (the most specific such one), as
        # TensorFlow's dispatch does with or without reduce_retracing.
        general = self._most_specific_fit(key)
        if general is not None:
            self._cache.move_to_end(general)
            return self._for_variables(self._cache[general], variables, values, names, general, tensors), tensors
        concrete = self._trace(values, names, key, tensors)
        concrete._variable_ids = tuple(v._id for v in variables)
        return concrete, tensors
    def _for_variables(self, concrete, variables, values, names, key, tensors):
        """``concrete`` naming the call's variable arguments: the trace itself for the variables it was made
        with, else a copy rebound to these (kept while they live: a freed variable's copies go with it, and
        as variable ids are never reused, no trace runs for a variable other than the one it names)."""
        ids = tuple(v._id for v in variables)
        traced = getattr(concrete, "_variable_ids", ())
        if ids == traced:
            return concrete
        rebinds = concrete.__dict__.setdefault("_rebinds", {})
        rebound = rebinds.get(ids)
        if rebound is not None:
            return rebound
        try:
            graph_function = concrete._gf.rebind_variables([(a, b) for a, b in zip(traced, ids) if a != b])
        except errors.FailedPreconditionError:
            # A custom gradient's replay names the traced variables: trace for these ones instead, kept
            # beside the cached trace rather than replacing it.
            rebound = self._trace(values, names, key, tensors)
            self._cache[key] = concrete
            rebound._variable_ids = ids
        else:
            rebound = copy.copy(concrete)
            rebound._gf = graph_function
            rebound._graph = None
            rebound._variable_ids = ids
            rebound._rebinds = {}
        rebinds[ids] = rebound
        for v in variables:
            weakref.finalize(v, rebinds.pop, ids, None)
        return rebound

    def _apply_signature(self, values, names):
        sig = self._input_signature
        if len(values) < len(sig):
            raise TypeError(f"{self._name}(): expected {len(sig)} argument(s) matching input_signature "
                            f"{sig}, got {len(values)}")
        extra = list(zip(names[len(sig):], values[len(sig):]))
        if extra and not all(self._is_default(name, value) for name, value in extra):
            raise TypeError(f"{self._name}(): input_signature has {len(sig)} entries but the function got "
                            f"{len(values)} argument(s)")
        # Parameters past the signature keep their defaults (tf.nn.relu's name=None), traced as constants.
        return [self._match_spec(value, spec, name) for value, spec, name in zip(values, sig, names)] + \
            [value for _, value in extra]

    def _is_default(self, name, value):
        parameter = self._signature.parameters.get(name) if self._signature is not None else None
        if parameter is None or parameter.default is inspect.Parameter.empty:
            return False
        default = parameter.default
        # TF binds such a parameter as a literal of its default: an equal Python value passes too.
        return value is default or (type(value) is type(default) and isinstance(value, (bool, int, float, str))
                                    and value == default)

    def _match_spec(self, value, spec, name):
        """``value`` matched to one signature entry: a TensorSpec, or a list/tuple/dict of them (nested
        structures trace once, as TensorFlow's)."""
        if isinstance(spec, dict):
            if not isinstance(value, dict) or set(value) != set(spec):
                raise TypeError(f"{self._name}(): argument {name}: expected a dict with keys "
                                f"{sorted(spec, key=str)} (input_signature), got {value!r}")
            return type(value)((k, self._match_spec(value[k], spec[k], f"{name}[{k!r}]")) for k in value)
        if isinstance(spec, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(spec):
                raise TypeError(f"{self._name}(): argument {name}: expected a sequence of {len(spec)} "
                                f"element(s) (input_signature {spec}), got {value!r}")
            return type(value)(self._match_spec(v, s, f"{name}[{i}]") for i, (v, s) in enumerate(zip(value, spec)))
        if _is_composite_spec(spec):
            return self._match_composite(value, spec, name)
        if isinstance(value, _PlaceholderMarker):
            value = value.spec
        if isinstance(value, TensorSpec):
            if not (value.dtype == spec.dtype and spec.shape.is_compatible_with(value.shape)):
                raise TypeError(f"{self._name}(): argument {name}: {value} does not match {spec}")
            return _PlaceholderMarker(spec)
        try:
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{self._name}(): argument {name}: cannot convert {value!r} to match "
                            f"{spec}: {e}") from None
        if t.dtype != spec.dtype:
            raise TypeError(f"{self._name}(): argument {name}: expected dtype {spec.dtype.name} "
                            f"(input_signature {spec}), got {t.dtype.name}")
        if not spec.shape.is_compatible_with(t.shape):
            raise TypeError(f"{self._name}(): argument {name}: shape {t.shape} is not compatible "
                            f"with input_signature {spec}")
        return _SignatureArg(t, spec)

    def _match_composite(self, value, spec, name):
        """A RaggedTensor/SparseTensor argument (or a holder of placeholder markers from
        get_concrete_function) matched to its spec: its components traced with the spec's component specs,
        so the trace key holds ragged_rank and dtypes, not the row lengths."""
        if isinstance(value, _CompositeHolder):
            if value._spec != spec and not spec.is_compatible_with(value._spec):
                raise TypeError(f"{self._name}(): argument {name}: {value._spec} does not match {spec}")
            return _holder_class(spec)([_PlaceholderMarker(s) for s in spec._component_specs()])
        if not getattr(value, "_ember_composite", False) or not spec.is_compatible_with(value):
            raise TypeError(f"{self._name}(): argument {name}: expected a value matching {spec} "
                            f"(input_signature), got {value!r}")
        return _holder_class(spec)([_SignatureArg(t, s) for t, s in zip(value._to_components(),
                                                                        spec._component_specs())])

    def _most_specific_fit(self, key):
        """The key of the cached trace whose specs accept ``key``'s arguments, the most specific first."""
        best = None
        for cached in self._cache:
            if _fits(cached, key) and (best is None or _fits(best, cached)):
                best = cached
        return best

    def _generalized(self, key):
        """``key`` with each dimension (or rank) that differs from a compatible earlier trace made unknown
        (TensorFlow's reduce_retracing): joined with every cached trace of the same structure, dtypes and
        Python values, so the trace it makes serves all of their shapes and the new one."""
        relaxed = key
        for cached in self._cache:
            joined = _relax(cached, relaxed)
            if joined is not None:
                relaxed = joined
        return relaxed

    def _trace(self, values, names, key, tensors):
        self._tracing_count += 1
        if self._last_key is not None and self._input_signature is None:
            self._retraces += 1
            if self._retraces >= _RETRACE_WARNING_THRESHOLD:
                change = _describe_change(_leaf_names(names, values), self._last_key, key)
                warnings.warn(f"ember.function '{self._name}' has been retraced {self._tracing_count} times; "
                              f"the latest retrace happened because {change}. Retracing is expensive: pass "
                              f"tensors rather than Python values, or use input_signature or "
                              f"reduce_retracing=True.", stacklevel=3)
        if self._reduce_retracing and self._input_signature is None:
            key = self._generalized(key)
        self._last_key = key
        owner = self._creation_owner
        first = not owner._traced_any
        owner._traced_any = True
        concrete, created = self._trace_with_creation_rule(values, names, key, allowed=first, tensors=tensors)
        if created:
            # It created variables: trace again, now reading them; that trace must create none.
            self._tracing_count += 1
            concrete, _ = self._trace_with_creation_rule(values, names, key, allowed=False)
            concrete._created_variables = created
        concrete._trace_number = self._tracing_count
        for hook in TRACE_HOOKS:
            hook(concrete)
        self._cache[key] = concrete
        while len(self._cache) > _MAX_CACHED_TRACES:
            self._cache.popitem(last=False)
        return concrete

    def _trace_with_creation_rule(self, values, names, key, allowed, tensors=()):
        from_specs = any(isinstance(v, _PlaceholderMarker) for v in nest.flatten(values))
        if not from_specs and any(t._is_symbolic for t in tensors):
            from_specs = True  # called inside another trace: its arguments have no values either
        policy = variable_creation.CreationPolicy(self._name, allowed, from_specs, initializes=True)
        variable_creation.push(policy)
        try:
            python_function = self._python_function
            if self._autograph:
                from ember.autograph import api as autograph_api
                python_function = autograph_api.converted(python_function)
            concrete = trace_function(python_function, self._name, values, names, key,
                                      signature=self._signature,
                                      extra_outputs=lambda: [value for _, value in policy.deferred])
        finally:
            variable_creation.pop()
        if policy.deferred:
            _initialize_deferred(concrete, policy.deferred, tensors)
        if policy.created:
            concrete._created_variables = policy.created  # the graph reads them: keep them alive
        if policy.resources:
            concrete._created_resources = policy.resources  # the same for tables
        return concrete, policy.created

    def __repr__(self):
        return f"<ember.function {self._name}>"


def _initialize_deferred(concrete, deferred, tensors):
    """Assigns the variables created from the function's inputs on its first trace their initial values,
    each computed from the call's tensors by the first trace's graph pruned to that value (so none of the
    trace's other ops, its side effects, run), in creation order, so that a value computed from an earlier
    such variable sees its initial value."""
    outputs = concrete.outputs[len(concrete.outputs) - len(deferred):]
    feeds = concrete.inputs[:concrete._gf.num_user_args]
    fed = {feed.name: tensor for feed, tensor in zip(feeds, tensors)}
    for (variable, _), output in zip(deferred, outputs):
        value = fed.get(output.name)  # the argument itself (prune computes only what lies past its feeds)
        variable.assign(value if value is not None else concrete.prune(feeds, [output])(*tensors))


def _weakly_bound(python_function, instance):
    """``python_function`` bound to ``instance`` through a weak reference: the per-instance Function lives in
    a WeakKeyDictionary keyed by the instance, and a bound method there would keep its own key alive (the
    instance, and the variables its methods created, would never be freed)."""
    instance_ref = weakref.ref(instance)

    @functools.wraps(python_function)
    def bound(*args, **kwargs):
        obj = instance_ref()
        if obj is None:
            raise ReferenceError(f"{python_function.__qualname__}: the instance this method was bound to has "
                                 f"been freed")
        return python_function(obj, *args, **kwargs)

    bound._ember_bound_method = (python_function, instance_ref)  # AutoGraph converts the method itself
    try:
        signature = inspect.signature(python_function)
        params = list(signature.parameters.values())
        if params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                         inspect.Parameter.POSITIONAL_OR_KEYWORD):
            bound.__signature__ = signature.replace(parameters=params[1:])
    except (TypeError, ValueError):
        pass
    return bound


class _PlaceholderMarker:
    """A TensorSpec passed to get_concrete_function: traced as a placeholder, never a value."""

    __slots__ = ("spec",)

    def __init__(self, spec):
        self.spec = spec


class _SignatureArg:
    """A tensor matched to an input_signature spec: traced with the spec's (relaxed) shape."""

    __slots__ = ("tensor", "spec")

    def __init__(self, tensor, spec):
        self.tensor = tensor
        self.spec = spec


def _spec_to_placeholder_marker(value):
    if isinstance(value, TensorSpec):
        return _PlaceholderMarker(value)
    if _is_composite_spec(value):
        return _holder_class(value)([_PlaceholderMarker(s) for s in value._component_specs()])
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], dtypes.DType):
        return _PlaceholderMarker(_as_spec(value))
    if isinstance(value, (list, tuple, dict)):  # specs nested in lists, tuples and dicts (TensorFlow's)
        return nest.map_structure(lambda v: _PlaceholderMarker(v) if isinstance(v, TensorSpec) else v, value)
    return value


def _spec_key(values, tensors, variables=None):
    """Like _structure_key, but TensorSpecs and signature-matched tensors key by their spec."""
    if variables is None:
        variables = []

    def key(value):
        if isinstance(value, _PlaceholderMarker):
            s = value.spec
            return _TensorLeaf(s.dtype._enum, None if s.shape.rank is None else tuple(s.shape.as_list()))
        if isinstance(value, _SignatureArg):
            tensors.append(value.tensor)
            s = value.spec
            return _TensorLeaf(s.dtype._enum, None if s.shape.rank is None else tuple(s.shape.as_list()))
        if isinstance(value, dict):
            keys = nest._sorted_keys(value)
            return ("dict", type(value), tuple(keys), tuple(key(value[k]) for k in keys))
        if isinstance(value, (list, tuple)):
            return ("seq", type(value), tuple(key(v) for v in value))
        return _leaf_key(value, tensors, variables)

    return key(values)


def _fits(general, specific):
    """Whether a trace keyed ``general`` accepts arguments keyed ``specific``: the same structure, dtypes
    and Python values, and each tensor's (or variable's declared) shape compatible (an unknown rank or
    dimension accepts any)."""
    if isinstance(general, _TensorLeaf):
        if not isinstance(specific, _TensorLeaf) or general.dtype != specific.dtype:
            return False
        if general.shape is None:
            return True
        if specific.shape is None or len(general.shape) != len(specific.shape):
            return False
        return all(g is None or g == s for g, s in zip(general.shape, specific.shape))
    if isinstance(general, _VariableLeaf):
        # TensorFlow's VariableSpec: a trace for a variable declared with unknown dimensions (or rank) serves
        # variables whose declared shape fills them in; the trace reads its declared, more general shape.
        if (not isinstance(specific, _VariableLeaf) or general.dtype != specific.dtype
                or general.alias != specific.alias):
            return False
        if general.shape is None:
            return True
        if specific.shape is None or len(general.shape) != len(specific.shape):
            return False
        return all(g < 0 or g == s for g, s in zip(general.shape, specific.shape))
    if isinstance(general, tuple):
        return (isinstance(specific, tuple) and len(general) == len(specific)
                and all(_fits(g, s) for g, s in zip(general, specific)))
    return not isinstance(specific, _TensorLeaf) and general == specific


def _relax(old_key, new_key):
    """new_key with every dimension that differs from old_key made unknown (None)."""

    def relax(a, b):
        if isinstance(a, _TensorLeaf) and isinstance(b, _TensorLeaf):
            if a.dtype != b.dtype:
                raise _NotRelaxable
            if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
                return _TensorLeaf(b.dtype, None)
            return _TensorLeaf(b.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(relax(x, y) for x, y in zip(a, b))
        if a != b:
            raise _NotRelaxable
        return b

    try:
        return relax(old_key, new_key)
    except _NotRelaxable:
        return None


class _NotRelaxable(Exception):
    pass


# The argument leaves a trace turns into placeholders, in nest.flatten order.
_PLACEHOLDER_LEAVES = (Tensor, np.ndarray, _PlaceholderMarker, _SignatureArg)


# Called with each ConcreteFunction an ember.function traces (ember.summary.trace_on records their graphs).
TRACE_HOOKS = []


def trace_function(python_function, name, values, names, key, auto_control_deps=True, signature=None,
                   extra_outputs=None):
    """Traces ``python_function`` on placeholders made from the tensor leaves of ``key``; ``signature`` (the
    Python function's, when known) gives the parameters' kinds for the trace's printed signature.
    ``extra_outputs`` (called after the Python function ran) gives tensors of the trace that the graph
    returns after the function's results (the template does not cover them)."""
    # Traced inside another function, it takes the floating constants it reads from there as call inputs, as
    # a branch does (Note [Folded values of concrete arguments] in src/ember/trace/trace_context.cc).
    trace = _C.Trace(name, auto_control_deps, lifts_enclosing_constants=_C.in_trace())
    tensor_leaves = []
    _leaves_of(key[0], tensor_leaves)
    tensor_leaves = [l for l in tensor_leaves if isinstance(l, _TensorLeaf)]
    leaf_names = [n for n, leaf in zip(_leaf_names(names, values), _all_leaves(key[0]))
                  if isinstance(leaf, _TensorLeaf)]
    # A placeholder is named by its spec's name where the input_signature gives one (TensorFlow's
    # ConcreteFunction inputs), else by its place in the arguments ("x", "pair_1").
    given = [v.spec.name if isinstance(v, (_PlaceholderMarker, _SignatureArg)) else None
             for v in nest.flatten(values) if isinstance(v, _PLACEHOLDER_LEAVES)]
    leaf_names = [(given[i] if i < len(given) and given[i] else None) or _sanitize(n)
                  for i, n in enumerate(leaf_names)]
    placeholders = []
    for i, leaf in enumerate(tensor_leaves):
        arg_name = leaf_names[i] if i < len(leaf_names) else f"arg{i}"
        placeholders.append(trace.add_argument(leaf.dtype, leaf.shape, arg_name))
    it = iter(placeholders)

    def substitute(v):
        if isinstance(v, _PLACEHOLDER_LEAVES):
            return next(it)
        return v

    traced_values = nest.map_structure(substitute, values)
    kinds = _kinds(names, signature)
    args = [v for v, k in zip(traced_values, kinds) if k not in _KEYWORD_KINDS]
    kwargs = {n: v for n, v, k in zip(names, traced_values, kinds) if k in _KEYWORD_KINDS}
    trace.enter()
    try:
        output = _composite_outputs(python_function(*args, **kwargs))
        # A returned variable comes back as its value (002), read inside the graph, after its updates;
        # Python numbers and arrays become constants of the graph, as TensorFlow returns them (None stays).
        flat_out = [_graph_output(v, name) for v in nest.flatten(output)]
    finally:
        trace.exit()
    result_tensors, template = [], []
    for v in flat_out:
        if not isinstance(v, Tensor):
            template.append(v)
        else:
            result_tensors.append(v)
            template.append(_RESULT)
    if extra_outputs is not None:
        result_tensors += extra_outputs()
    graph_function = trace.finish(result_tensors)
    input_specs = [TensorSpec(l.shape, dtypes.ALL[l.dtype], n) for l, n in zip(tensor_leaves, leaf_names)]
    concrete = ConcreteFunction(graph_function, output, template, input_specs, name)
    concrete._parameters = _parameters(values, names, input_specs, signature)
    concrete._output_type = nest.pack_sequence_as(output, flat_out)
    return concrete


def _parameters(values, names, input_specs, signature):
    """The trace's parameters: each bound value with its tensors replaced by their (named) TensorSpecs."""
    def spec_maker(named):
        specs = iter(input_specs)

        def as_spec(v):
            if isinstance(v, _PLACEHOLDER_LEAVES):
                spec = next(specs)
                given = v.spec.name if isinstance(v, (_PlaceholderMarker, _SignatureArg)) else None
                return TensorSpec(spec.shape, spec.dtype, given or (spec.name if named else None))
            return v

        return as_spec

    # As TensorFlow: the printed type keeps the name the user gave a spec (or None), the structured input
    # signature names every tensor (after its parameter where the user did not).
    as_given, as_named = spec_maker(False), spec_maker(True)
    return [function_type.Parameter(name, kind, nest.map_structure(as_given, value),
                                    nest.map_structure(as_named, value))
            for value, name, kind in zip(values, names, _kinds(names, signature))]


_KEYWORD_KINDS = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)


def _kinds(names, signature):
    """The inspect kind of each bound value (Function._bind's names): keyword-only parameters and the
    entries of ``**kwargs`` are passed by keyword."""
    kinds = []
    for name in names:
        param = signature.parameters.get(name) if signature is not None else None
        if param is not None:
            kinds.append(param.kind)
        elif signature is not None and "[" in name:
            kinds.append(inspect.Parameter.POSITIONAL_ONLY)  # an element of *args
        elif signature is not None:
            kinds.append(inspect.Parameter.VAR_KEYWORD)  # an entry of **kwargs
        else:
            kinds.append(inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return kinds


def _graph_output(value, function_name):
    # A returned Python string becomes a tf.string constant, as TensorFlow's.
    if value is None or isinstance(value, Tensor):
        return value
    if getattr(value, "_ember_variable", False):
        return value.read_value()
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"ember.function '{function_name}' must return tensors, Python numbers or strings, "
                        f"NumPy arrays or None (in nested lists, tuples and dicts), got a value of type "
                        f"{type(value).__name__}: {e}") from None


def _all_leaves(key):
    out = []
    _leaves_of(key, out)
    return out


def _sanitize(name):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    return out or "arg"


# ---- composite tensors (RaggedTensor, SparseTensor) as arguments and results
# Note [Composite arguments]: a composite value enters a trace as its component tensors (a RaggedTensor's flat
# values and row splits, a SparseTensor's indices, values and dense shape), held in a tuple subclass made for
# its spec. The structure key then holds the holder class (one per spec: dtype, ragged_rank, static shape with
# None for ragged dimensions) and the components keyed by the spec's component specs (their lengths
# unknown), so new row lengths reuse the trace, as in TensorFlow. Packing the holder with tensors (nest's
# pack_sequence_as calls type(holder)(items)) rebuilds the composite value, which gives the Python function
# its RaggedTensor of placeholders and the caller its RaggedTensor of results with no change to nest or the
# C++ call path; packing it with TensorSpecs gives the spec (for printed signatures).


def _is_composite_spec(value):
    return hasattr(value, "_component_specs") and hasattr(value, "_from_components")


class _CompositeHolder(tuple):
    __slots__ = ()
    _spec = None

    def __new__(cls, items):
        items = list(items)
        if items and all(isinstance(i, Tensor) for i in items):
            return cls._spec._from_components(items)
        if items and all(isinstance(i, TensorSpec) for i in items):
            return cls._spec
        return tuple.__new__(cls, items)


_HOLDER_CLASSES = {}


def _holder_class(spec):
    cls = _HOLDER_CLASSES.get(spec)
    if cls is None:
        cls = type(f"Composite[{spec!r}]", (_CompositeHolder,), {"__slots__": (), "_spec": spec})
        _HOLDER_CLASSES[spec] = cls
    return cls


def _same_mapping(value, items):
    """A mapping of `value`'s type holding `items`; a defaultdict becomes a plain dict, as TensorFlow's
    arguments inside the trace and its results are (its constructor takes the default factory first)."""
    if type(value) is dict or isinstance(value, collections.defaultdict):
        return dict(items)
    return type(value)(items)


def _decompose_composites(value):
    """The call's arguments with each composite value replaced by its holder of signature-matched
    components (keyed by the value's spec)."""
    if getattr(value, "_ember_composite", False):
        spec = value._type_spec
        return _holder_class(spec)([_SignatureArg(t, s) for t, s in zip(value._to_components(),
                                                                        spec._component_specs())])
    if isinstance(value, dict):
        return _same_mapping(value, ((k, _decompose_composites(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)) and not isinstance(value, _CompositeHolder):
        items = [_decompose_composites(v) for v in value]
        if nest._is_namedtuple(value):
            return type(value)(*items)
        return type(value)(items)
    return value


def _composite_outputs(value):
    """The function's results with each composite value replaced by its holder of component tensors."""
    if getattr(value, "_ember_composite", False):
        spec = value._type_spec
        return tuple.__new__(_holder_class(spec), value._to_components())
    if isinstance(value, dict):
        return _same_mapping(value, ((k, _composite_outputs(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        items = [_composite_outputs(v) for v in value]
        if nest._is_namedtuple(value):
            return type(value)(*items)
        return type(value)(items)
    return value


def function(func=None, input_signature=None, autograph=True, reduce_retracing=False, jit_compile=None,
             experimental_relax_shapes=None, name=None, **unused):
    """Decorator: ``@ember.function`` or ``@ember.function(input_signature=[...])``. On a method, each
    instance gets its own function, whose first trace may create that instance's variables (TF 2; seed 001:
    "each new instance is allowed to create variables in each @tf.function once")."""
    return _decorator(func, True, input_signature, autograph, reduce_retracing, jit_compile,
                      experimental_relax_shapes, name)


def defun(func=None, input_signature=None, autograph=True, reduce_retracing=False, jit_compile=None,
          experimental_relax_shapes=None, name=None, **unused):
    """Seed 000's ``defun``: ``ember.function`` except on a method, where only the first trace of all
    instances may create variables (a second instance creating its own raises; ``ember.method`` lifts it)."""
    return _decorator(func, False, input_signature, autograph, reduce_retracing, jit_compile,
                      experimental_relax_shapes, name)


def _decorator(func, per_instance_variables, input_signature, autograph, reduce_retracing, jit_compile,
               experimental_relax_shapes, name):
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(f):
        fn = Function(f, name=name, input_signature=input_signature, autograph=autograph,
                      reduce_retracing=reduce_retracing, jit_compile=jit_compile)
        fn._per_instance_variables = per_instance_variables
        return fn

    return decorate(func) if func is not None else decorate


def method(func=None, **kwargs):
    """The seeds' ``ember.method``: like ``ember.defun`` on a method, but each instance may create its
    variables on its own first call (as ``ember.function`` allows)."""
    return _decorator(func, True, kwargs.get("input_signature"), kwargs.get("autograph", True),
                      kwargs.get("reduce_retracing", False), kwargs.get("jit_compile"),
                      kwargs.get("experimental_relax_shapes"), kwargs.get("name"))

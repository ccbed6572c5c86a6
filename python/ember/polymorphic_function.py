"""``ember.function``: stages a Python function into graph functions, one per input signature.

A call computes a key from its arguments — dtype and shape of each tensor (NumPy arrays count as
tensors), the value of every other argument, the nesting structure, and whether it is made inside another
trace — and runs the cached graph for it; a new key traces the Python function once more (000 "defun: a
brief specification"; 002 "Input signatures"). ``input_signature`` fixes one graph; ``reduce_retracing``
relaxes a dimension that changed to unknown.
"""

import collections
import functools
import inspect
import warnings
import weakref

import numpy as np

from ember import _C, config, dtypes, variable_creation
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


def _leaf_key(value, tensors):
    """The key of one leaf; tensor leaves are appended to ``tensors``."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return _TensorLeaf(value._dtype_enum, value._shape_tuple)
    if isinstance(value, np.ndarray):
        t = convert_to_tensor(value)
        tensors.append(t)
        return _TensorLeaf(t._dtype_enum, t._shape_tuple)
    try:
        hash(value)
    except TypeError:
        return _Unhashable(value)
    return _ValueLeaf(value)


def _structure_key(value, tensors):
    if isinstance(value, dict):
        keys = nest._sorted_keys(value)
        return ("dict", type(value), tuple(keys), tuple(_structure_key(value[k], tensors) for k in keys))
    if isinstance(value, (list, tuple)):
        return ("seq", type(value), tuple(_structure_key(v, tensors) for v in value))
    return _leaf_key(value, tensors)


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
    """A TensorSpec from a TensorSpec, or the seeds' ``(dtype, shape)`` pair."""
    if isinstance(item, TensorSpec):
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
            bound = Function(self._python_function.__get__(instance, owner), self._name, self._input_signature,
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
        tensors = []
        key = (_spec_key(values, tensors), _C.in_trace(), current_device())
        concrete = self._cache.get(key)
        if concrete is not None:
            self._cache.move_to_end(key)
            return concrete, tensors
        # A trace made for more general shapes serves the call too (the most specific such one), as
        # TensorFlow's dispatch does with or without reduce_retracing.
        general = self._most_specific_fit(key)
        if general is not None:
            self._cache.move_to_end(general)
            return self._cache[general], tensors
        concrete = self._trace(values, names, key)
        return concrete, tensors
    def _apply_signature(self, values, names):
        sig = self._input_signature
        if len(values) < len(sig):
            raise TypeError(f"{self._name}(): expected {len(sig)} argument(s) matching input_signature "
                            f"{sig}, got {len(values)}")
        if len(values) > len(sig):
            raise TypeError(f"{self._name}(): input_signature has {len(sig)} entries but the function got "
                            f"{len(values)} argument(s)")
        out = []
        for value, spec, name in zip(values, sig, names):
            if isinstance(spec, TensorSpec):
                if isinstance(value, _PlaceholderMarker):
                    value = value.spec
                if isinstance(value, TensorSpec):
                    if not (value.dtype == spec.dtype and spec.shape.is_compatible_with(value.shape)):
                        raise ValueError(f"{self._name}(): argument {name}: {value} does not match {spec}")
                    out.append(_PlaceholderMarker(spec))
                    continue
                try:
                    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=spec.dtype)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"{self._name}(): argument {name}: cannot convert {value!r} to match "
                                    f"{spec}: {e}") from None
                if t.dtype != spec.dtype:
                    raise TypeError(f"{self._name}(): argument {name}: expected dtype {spec.dtype.name} "
                                    f"(input_signature {spec}), got {t.dtype.name}")
                if not spec.shape.is_compatible_with(t.shape):
                    raise ValueError(f"{self._name}(): argument {name}: shape {t.shape} is not compatible "
                                     f"with input_signature {spec}")
                out.append(_SignatureArg(t, spec))
            else:
                out.append(value)
        return out

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

    def _trace(self, values, names, key):
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
        concrete, created = self._trace_with_creation_rule(values, names, key, allowed=first)
        if created:
            # It created variables: trace again, now reading them; that trace must create none.
            self._tracing_count += 1
            concrete, _ = self._trace_with_creation_rule(values, names, key, allowed=False)
            concrete._created_variables = created
        self._cache[key] = concrete
        while len(self._cache) > _MAX_CACHED_TRACES:
            self._cache.popitem(last=False)
        return concrete

    def _trace_with_creation_rule(self, values, names, key, allowed):
        policy = variable_creation.CreationPolicy(self._name, allowed)
        variable_creation.push(policy)
        try:
            concrete = trace_function(self._python_function, self._name, values, names, key)
        finally:
            variable_creation.pop()
        if policy.created:
            concrete._created_variables = policy.created  # the graph reads them: keep them alive
        return concrete, policy.created

    def __repr__(self):
        return f"<ember.function {self._name}>"


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
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], dtypes.DType):
        return _PlaceholderMarker(_as_spec(value))
    return value


def _spec_key(values, tensors):
    """Like _structure_key, but TensorSpecs and signature-matched tensors key by their spec."""

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
        return _leaf_key(value, tensors)

    return key(values)


def _fits(general, specific):
    """Whether a trace keyed ``general`` accepts arguments keyed ``specific``: the same structure, dtypes
    and Python values, and each tensor's shape compatible (an unknown rank or dimension accepts any)."""
    if isinstance(general, _TensorLeaf):
        if not isinstance(specific, _TensorLeaf) or general.dtype != specific.dtype:
            return False
        if general.shape is None:
            return True
        if specific.shape is None or len(general.shape) != len(specific.shape):
            return False
        return all(g is None or g == s for g, s in zip(general.shape, specific.shape))
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


def trace_function(python_function, name, values, names, key, auto_control_deps=True):
    """Traces ``python_function`` on placeholders made from the tensor leaves of ``key``."""
    trace = _C.Trace(name, auto_control_deps)
    tensor_leaves = []
    _leaves_of(key[0], tensor_leaves)
    tensor_leaves = [l for l in tensor_leaves if isinstance(l, _TensorLeaf)]
    leaf_names = [n for n, leaf in zip(_leaf_names(names, values), _all_leaves(key[0]))
                  if isinstance(leaf, _TensorLeaf)]
    placeholders = []
    for i, leaf in enumerate(tensor_leaves):
        arg_name = _sanitize(leaf_names[i] if i < len(leaf_names) else f"arg{i}")
        placeholders.append(trace.add_argument(leaf.dtype, leaf.shape, arg_name))
    it = iter(placeholders)

    def substitute(v):
        if isinstance(v, (Tensor, np.ndarray, _PlaceholderMarker, _SignatureArg)):
            return next(it)
        return v

    traced_values = nest.map_structure(substitute, values)
    trace.enter()
    try:
        output = python_function(*traced_values)
        # A returned variable comes back as its value (002), read inside the graph, after its updates.
        flat_out = [v.read_value() if getattr(v, "_ember_variable", False) else v for v in nest.flatten(output)]
    finally:
        trace.exit()
    result_tensors, template = [], []
    for v in flat_out:
        if isinstance(v, (Tensor, np.ndarray)):
            result_tensors.append(v if isinstance(v, Tensor) else convert_to_tensor(v))
            template.append(_RESULT)
        else:
            template.append(v)  # Python values come back as they were returned
    graph_function = trace.finish(result_tensors)
    input_specs = [TensorSpec(l.shape, dtypes.ALL[l.dtype], n) for l, n in zip(tensor_leaves, leaf_names)]
    return ConcreteFunction(graph_function, output, template, input_specs, name)


def _all_leaves(key):
    out = []
    _leaves_of(key, out)
    return out


def _sanitize(name):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    return out or "arg"


def function(func=None, input_signature=None, autograph=True, reduce_retracing=False, jit_compile=None,
             experimental_relax_shapes=None, name=None, **unused):
    """Decorator: ``@ember.function`` or ``@ember.function(input_signature=[...])``."""
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(f):
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing, jit_compile=jit_compile)

    return decorate(func) if func is not None else decorate


defun = function  # the seeds' name


def method(func=None, **kwargs):
    """The seeds' ``ember.method``: like ``ember.function`` on a method, but each instance may create its
    variables on its own first call (``ember.function`` allows that only on the very first trace)."""

    def decorate(f):
        fn = function(f, **kwargs)
        fn._per_instance_variables = True
        return fn

    return decorate(func) if func is not None else decorate

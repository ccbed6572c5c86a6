"""``ember.compat.v1``: running TensorFlow 1.x graph-construction code (000 "Transitioning from 1.x").

``wrap_function(fn, signature, *args)`` traces ``fn`` once; the variables it creates (with ``Variable`` or
``get_variable``) are the wrapped function's own state, kept alive by it and listed in creation order in
``.variables``; collections are local to the trace."""

import contextlib

from ember import dtypes, initializers
from ember.compat import v1_train as train  # noqa: F401 - tf.compat.v1.train
from ember.framework.tensor_spec import TensorSpec
from ember.util import nest

_trace_state = []  # (variables created, collections) of the wrap_function being traced


def placeholder(dtype, shape=None, name=None):
    """In wrap_function's signature: a TensorSpec (there are no graph placeholders to feed in TF 2)."""
    return TensorSpec(shape, dtype, name)


def get_variable(name, shape=None, dtype=dtypes.float32, initializer=None, trainable=True, **unused):
    """A variable created with an initializer (default Glorot uniform), named exactly ``name``."""
    from ember.variables import Variable

    dtype = dtypes.as_dtype(dtype)
    init = initializer if initializer is not None else initializers.GlorotUniform()
    if isinstance(init, type):
        init = init()
    value = (lambda: init(shape, dtype)) if callable(init) else init
    variable = Variable(value, trainable=trainable, name=name, dtype=dtype)
    variable._name = name  # the seeds read `.name == "weight"`
    if _trace_state:
        _trace_state[-1][1].setdefault("variables", []).append(variable)
    return variable


def get_collection(key, scope=None):
    return list(_trace_state[-1][1].get(key, [])) if _trace_state else []


def add_to_collection(name, value):
    if _trace_state:
        _trace_state[-1][1].setdefault(name, []).append(value)


class WrappedFunction:
    """The object wrap_function returns: call it with tensors; it owns the variables the trace created."""

    def __init__(self, concrete, variables):
        self._concrete = concrete
        self._variables = variables

    @property
    def variables(self):
        return list(self._variables)

    @property
    def trainable_variables(self):
        return [v for v in self._variables if v.trainable]

    @property
    def graph(self):
        return self._concrete.graph

    @property
    def inputs(self):
        return self._concrete.inputs

    @property
    def outputs(self):
        return self._concrete.outputs

    @property
    def structured_outputs(self):
        return self._concrete.structured_outputs

    def __call__(self, *args):
        return self._concrete(*args)

    def prune(self, feeds, fetches):
        return self._concrete.prune(feeds, fetches)


def wrap_function(fn, signature, *args):
    """Traces ``fn(*placeholders_from_signature, *args)`` once and returns a WrappedFunction."""
    from ember import variable_creation
    from ember.polymorphic_function import _PlaceholderMarker, _spec_key, trace_function

    entries = signature if isinstance(signature, (list, tuple)) and not _is_pair(signature) else [signature]
    entries = [TensorSpec(e[1], e[0]) if _is_pair(e) else e for e in entries]
    # A Python value in the signature is passed as it is, as TensorFlow does; the TensorSpecs become the
    # wrapped function's arguments.
    specs = [e for e in entries if isinstance(e, TensorSpec)]

    def call_with_placeholders(*tensors):
        it = iter(tensors)
        return fn(*[next(it) if isinstance(e, TensorSpec) else e for e in entries], *args)

    created = []
    _trace_state.append((created, {}))
    policy = variable_creation.CreationPolicy(getattr(fn, "__name__", "wrapped"), allowed=True)
    variable_creation.push(policy)
    try:
        # One trace, with variable creation allowed (unlike ember.function, no second trace).
        values = [_PlaceholderMarker(s) for s in specs]
        key = (_spec_key(values, []), False, "")
        names = [s.name or f"arg{i}" for i, s in enumerate(specs)]
        concrete = trace_function(call_with_placeholders, policy.function_name, values, names, key,
                                  auto_control_deps=False)
    finally:
        variable_creation.pop()
        _trace_state.pop()
    return WrappedFunction(concrete, policy.created)


def _is_pair(signature):
    return isinstance(signature, tuple) and len(signature) == 2 and isinstance(signature[0], dtypes.DType)


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Stateful ops in ember always run, in program order, so this only checks its argument."""
    nest.flatten(control_inputs)
    yield


def set_random_seed(seed):
    from ember.ops import random_ops

    random_ops.set_seed(seed)

# TensorFlow 1's scatters into a variable: the variable's methods, which return it.
def _scatter_function(method):
    from ember.framework.indexed_slices import IndexedSlices

    def scatter(ref, indices, updates, use_locking=True, name=None):
        return getattr(ref, method)(IndexedSlices(updates, indices))

    scatter.__name__ = scatter.__qualname__ = method
    scatter.__doc__ = f"``tf.compat.v1.{method}(ref, indices, updates)``: ``ref.{method}(IndexedSlices(updates, indices))``."
    return scatter


def _scatter_nd_function(method):
    def scatter_nd(ref, indices, updates, use_locking=True, name=None):
        return getattr(ref, method)(indices, updates)

    scatter_nd.__name__ = scatter_nd.__qualname__ = method
    scatter_nd.__doc__ = f"``tf.compat.v1.{method}(ref, indices, updates)``: ``ref.{method}(indices, updates)``."
    return scatter_nd


scatter_update = _scatter_function("scatter_update")
scatter_add = _scatter_function("scatter_add")
scatter_sub = _scatter_function("scatter_sub")
scatter_mul = _scatter_function("scatter_mul")
scatter_div = _scatter_function("scatter_div")
scatter_min = _scatter_function("scatter_min")
scatter_max = _scatter_function("scatter_max")
batch_scatter_update = _scatter_function("batch_scatter_update")
scatter_nd_update = _scatter_nd_function("scatter_nd_update")
scatter_nd_add = _scatter_nd_function("scatter_nd_add")
scatter_nd_sub = _scatter_nd_function("scatter_nd_sub")

# TensorFlow 1 names of the control-flow helpers (issue 15): the same functions as TensorFlow 2's.
from ember.debugging import (Assert, assert_equal, assert_greater, assert_greater_equal,  # noqa: E402,F401
                             assert_integer, assert_less, assert_less_equal, assert_negative, assert_non_negative,
                             assert_non_positive, assert_none_equal, assert_positive, assert_rank,
                             assert_rank_at_least, assert_rank_in, assert_scalar, assert_type, check_numerics)
from ember.ops.functional_ops import foldl, foldr, map_fn, scan, vectorized_map  # noqa: E402,F401
from ember.ops.tensor_array_ops import TensorArray  # noqa: E402,F401
from ember.io import v1 as io  # noqa: E402,F401  (tf.compat.v1.io)
from ember.compat import v1_image as image  # noqa: E402,F401  (tf.compat.v1.image's resize functions)
from ember.compat import v1_nn as nn  # noqa: E402,F401  (tf.compat.v1.nn: ember.nn with v1's CTC signatures)
from ember.io.v1 import decode_base64, decode_raw, encode_base64  # noqa: E402,F401

"""Retracing of ember.function compared with TensorFlow's tf.function: which calls trace, what the traces'
signatures are (reduce_retracing generalises a changing dimension to None, a changing rank to an unknown
rank), and that a generalised trace serves later calls without another trace."""

import numpy as np
import pytest

import ember as tf

# Each scenario: a list of calls; a call is a tuple of arguments. ("t", shape, dtype) is a tensor of ones,
# ("n", shape) a NumPy float32 array, anything else a Python value as is.
SCENARIOS = {
    "batch_grows": [[("t", [2])], [("t", [3])], [("t", [4])], [("t", [5])], [("t", [2])]],
    "two_dims_change_in_turn": [[("t", [2, 3])], [("t", [4, 3])], [("t", [4, 5])], [("t", [2, 3])],
                                [("t", [7, 9])]],
    "rank_changes": [[("t", [2])], [("t", [2, 3])], [("t", [2, 3, 4])], [("t", [5])], [("t", [1])]],
    "scalar_then_vector": [[("t", [])], [("t", [3])], [("t", [4])]],
    "dtype_changes": [[("t", [2])], [("t", [3])], [("t", [2], "int32")], [("t", [4], "int32")],
                      [("t", [5])]],
    "join_with_every_trace": [[("t", [2, 3])], [("t", [2, 4])], [("t", [3, 3])], [("t", [5, 3])],
                              [("t", [2, 7])]],
    "most_specific_trace_serves": [[("t", [2, 3])], [("t", [2, 4])], [("t", [3, 3])], [("t", [2, 3])],
                                   [("t", [2, 9])]],
    "numpy_arrays": [[("n", [2])], [("n", [3])], [("n", [4])]],
    "python_values_split_traces": [[("t", [2]), 1], [("t", [3]), 1], [("t", [4]), 2], [("t", [5]), 2],
                                   [("t", [6]), 1]],
    "python_values_never_generalise": [[1], [2], [3], [2]],
    "two_arguments": [[("t", [2]), ("t", [2])], [("t", [3]), ("t", [3])], [("t", [3]), ("t", [4])],
                      [("t", [5, 1]), ("t", [6])], [("t", [2, 2]), ("t", [9])]],
    "list_lengths": [[[("t", [2])]], [[("t", [3])]], [[("t", [3]), ("t", [3])]], [[("t", [4]), ("t", [4])]],
                     [[("t", [4]), ("t", [4]), ("t", [1])]]],
    "dict_argument": [[{"x": ("t", [2]), "y": ("t", [2])}], [{"x": ("t", [3]), "y": ("t", [3])}],
                      [{"x": ("t", [3]), "y": ("t", [1])}]],
}


def _make(lib, spec):
    if isinstance(spec, tuple) and spec and spec[0] == "t":
        dtype = getattr(lib, spec[2]) if len(spec) > 2 else lib.float32
        return lib.ones(spec[1], dtype)
    if isinstance(spec, tuple) and spec and spec[0] == "n":
        return np.ones(spec[1], np.float32)
    if isinstance(spec, list):
        return [_make(lib, s) for s in spec]
    if isinstance(spec, dict):
        return {k: _make(lib, v) for k, v in spec.items()}
    return spec


def _flatten(value):
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(value[k])]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _flat_specs(lib, signature):
    flat = _flatten(signature)
    return [None if s.shape.rank is None else tuple(s.shape.as_list()) for s in flat
            if isinstance(s, lib.TensorSpec)]


def _history(lib, calls, reduce_retracing=True):
    def body(*args):
        return [a for a in _flatten(args) if isinstance(a, lib.Tensor)]

    f = lib.function(body, reduce_retracing=reduce_retracing)
    out = []
    for call in calls:
        args = [_make(lib, a) for a in call]
        f(*args)
        served = f.get_concrete_function(*args)
        out.append((f.experimental_get_tracing_count(), _flat_specs(lib, served.structured_input_signature)))
    return out


@pytest.fixture(scope="module")
def real_tf():
    # Never skipped: CI installs tensorflow-cpu, and a missing TensorFlow must fail these tests.
    import tensorflow

    return tensorflow


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_reduce_retracing_matches_tensorflow(real_tf, name):
    calls = SCENARIOS[name]
    assert _history(tf, calls) == _history(real_tf, calls)


@pytest.mark.parametrize("name", ["batch_grows", "rank_changes", "dtype_changes"])
def test_plain_function_matches_tensorflow(real_tf, name):
    calls = SCENARIOS[name]
    assert _history(tf, calls, reduce_retracing=False) == _history(real_tf, calls, reduce_retracing=False)


def test_generalised_trace_has_unknown_dims_and_serves_later_calls():
    seen = []

    @tf.function(reduce_retracing=True)
    def f(x):
        seen.append(tuple(x.shape.as_list()) if x.shape.rank is not None else None)
        return x * 2

    f(tf.ones([2, 3]))
    f(tf.ones([4, 3]))
    assert seen == [(2, 3), (None, 3)]
    for n in [0, 1, 7, 100]:
        np.testing.assert_array_equal(f(tf.ones([n, 3])).numpy(), np.full([n, 3], 2.0, np.float32))
    assert f.experimental_get_tracing_count() == 2
    f(tf.ones([4, 5]))  # the other dimension now changes too
    assert seen[-1] == (None, None) and f.experimental_get_tracing_count() == 3
    f(tf.ones([4, 5, 6]))
    assert seen[-1] is None and f.experimental_get_tracing_count() == 4
    f(tf.ones([1]))
    f(tf.ones([2, 2, 2, 2]))
    assert f.experimental_get_tracing_count() == 4


def test_more_general_concrete_function_serves_calls(real_tf):
    for lib in (tf, real_tf):
        @lib.function
        def f(x):
            return x * 2

        f.get_concrete_function(lib.TensorSpec([None, 3], lib.float32))
        f(lib.ones([5, 3]))
        f(lib.ones([1, 3]))
        assert f.experimental_get_tracing_count() == 1, lib.__name__
        assert _flat_specs(lib, f.get_concrete_function(lib.ones([8, 3])).structured_input_signature) == [
            (None, 3)]


def test_input_signature_traces_once_for_any_batch(real_tf):
    for lib in (tf, real_tf):
        @lib.function(input_signature=[lib.TensorSpec([None, 3], lib.float32)], reduce_retracing=True)
        def f(x):
            return x + 1

        for n in [2, 0, 1, 9]:
            f(lib.ones([n, 3]))
        assert f.experimental_get_tracing_count() == 1, lib.__name__


def test_every_batch_size_of_a_signature_shares_one_call_memo_entry():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([2], tf.float32)])
    def f(x, y):
        return x * 2.0, y

    y = tf.ones([2])
    for n in [0, 1, 5, 9, 1, 64]:
        data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(f(tf.constant(data), y)[0].numpy(), data * 2)
    assert f._call_memo_size() == 1
    assert f.experimental_get_tracing_count() == 1
    # Tensors the signature does not accept are refused every time, never served by the shared entry.
    for _ in range(2):
        with pytest.raises(TypeError, match="not compatible"):
            f(tf.ones([4, 5]), y)
        with pytest.raises(TypeError, match="not compatible"):
            f(tf.ones([4, 3]), tf.ones([3]))
        with pytest.raises(TypeError, match="not compatible"):
            f(tf.ones([3]), y)
        with pytest.raises(TypeError, match="dtype"):
            f(tf.ones([4, 3], tf.float64), y)
    assert f._call_memo_size() == 1


def test_unknown_rank_signature_shares_one_call_memo_entry():
    f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec(None, tf.float32)])
    for shape in [[], [3], [2, 2], [1, 2, 3]]:
        np.testing.assert_array_equal(f(tf.ones(shape)).numpy(), np.full(shape, 2.0, np.float32))
    assert f._call_memo_size() == 1
    assert f.experimental_get_tracing_count() == 1


# Variable arguments: (declared shape, initial value's shape) per variable; "u" declares an unknown rank.
# A trace for a variable with unknown dimensions serves variables that fill them in (TensorFlow's
# VariableSpec subtyping), never the reverse; dtype and which arguments are the same variable still split.
VARIABLE_SCENARIOS = {
    "unknown_then_known": [[([None], [2])], [([3], [3])], [([5], [5])]],
    "known_then_unknown": [[([3], [3])], [([None], [3])], [([3], [3])], [([4], [4])]],
    "known_dims_differ": [[([3], [3])], [([4], [4])], [([3], [3])]],
    "partly_known": [[([None, 2], [1, 2])], [([3, 2], [3, 2])], [([None, None], [1, 1])], [([3, 2], [3, 2])],
                     [([4, 5], [4, 5])], [([None, 2], [2, 2])]],
    "unknown_rank": [[("u", [2])], [("u", [2, 3])], [([4], [4])], [([], [])], [([None, 1], [2, 1])]],
    "dtype_splits": [[([None], [2])], [([None], [2], "float64")], [([3], [3], "float64")]],
    "aliasing": [[([None], [2]), "same"], [([2], [2]), "same"], [([None], [2]), ([2], [2])],
                 [([2], [2]), ([None], [2])], [([2], [2]), ([2], [2])]],
}


def _variable(lib, spec):
    declared, init = spec[0], spec[1]
    dtype = getattr(lib, spec[2]) if len(spec) > 2 else lib.float32
    shape = lib.TensorShape(None) if declared == "u" else lib.TensorShape(declared)
    return lib.Variable(lib.fill(init, lib.constant(1.5, dtype)), shape=shape)


def _variable_history(lib, calls):
    @lib.function
    def f(*variables):
        return [v * 2.0 + lib.cast(lib.size(v), v.dtype) for v in variables]

    out = []
    for call in calls:
        first = _variable(lib, call[0])
        args = [first] + [first if a == "same" else _variable(lib, a) for a in call[1:]]
        results = f(*args)
        out.append((f.experimental_get_tracing_count(), [r.numpy().tolist() for r in results]))
    return out


@pytest.mark.parametrize("name", sorted(VARIABLE_SCENARIOS))
def test_variable_arguments_retrace_as_tensorflow(real_tf, name):
    calls = VARIABLE_SCENARIOS[name]
    assert _variable_history(tf, calls) == _variable_history(real_tf, calls)


def test_variables_in_a_structure_reuse_a_general_trace(real_tf):
    def history(lib):
        f = lib.function(lambda d: d["v"] * 2.0)
        general = lib.Variable(lib.zeros([2]), shape=lib.TensorShape([None]))
        counts = []
        for v in (general, lib.Variable([1.0, 2.0]), lib.Variable([1.0, 2.0, 3.0])):
            np.testing.assert_array_equal(f({"v": v}).numpy(), v.numpy() * 2.0)
            counts.append(f.experimental_get_tracing_count())
        return counts

    assert history(tf) == history(real_tf) == [1, 1, 1]


def test_reduce_retracing_does_not_relax_variable_shapes():
    # TensorFlow reuses a relaxed trace that kept the first variable's static shape, and then reports that
    # shape for a variable of another size (tf.shape gives [4] for a [5] variable); ember traces again.
    f = tf.function(lambda v: tf.shape(v), reduce_retracing=True)
    shapes = [f(tf.Variable(tf.zeros([n]))).numpy().tolist() for n in (3, 4, 5)]
    assert shapes == [[3], [4], [5]] and f.experimental_get_tracing_count() == 3

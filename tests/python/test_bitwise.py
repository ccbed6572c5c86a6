"""tf.bitwise (the Invert, BitwiseAnd/Or/Xor, LeftShift and RightShift rows of kernels/elementwise_ops.h;
python/ember/bitwise.py), tf.raw_ops.PopulationCount (ops/bincount.cc) and the Python operators &, |, ^, ~
on tensors, each compared with TensorFlow 2 on the same values, eagerly and inside ember.function, for every
integer dtype ember has."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]
BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
RNG = np.random.default_rng(5)


def values(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def shift_amounts(dtype, shape):
    """Amounts in and out of [0, bits - 1]: TensorFlow clamps the others."""
    bits = np.iinfo(dtype).bits
    low = -3 if np.iinfo(dtype).min < 0 else 0
    return RNG.integers(low, min(bits + 5, np.iinfo(dtype).max), size=shape, endpoint=True).astype(dtype)


def assert_same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_match_tensorflow_with_broadcasting(name, dtype):
    x = values(dtype, [4, 1, 6])
    y = shift_amounts(dtype, [3, 6]) if "shift" in name else values(dtype, [3, 6])
    theirs = getattr(real_tf.bitwise, name)(x, y).numpy()
    assert_same(getattr(tf.bitwise, name)(tf.constant(x), tf.constant(y)), theirs)
    staged = tf.function(lambda a, b: getattr(tf.bitwise, name)(a, b))
    assert_same(staged(tf.constant(x), tf.constant(y)), theirs)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shift_amounts_out_of_range_are_clamped_as_tensorflow(dtype):
    bits = np.iinfo(dtype).bits
    x = np.array([1, 3, np.iinfo(dtype).max, np.iinfo(dtype).min, 7, 5], dtype)
    amounts = [0, bits - 1, bits, bits + 1, 100 % (np.iinfo(dtype).max + 1), 1]
    if np.iinfo(dtype).min < 0:
        amounts[-1] = -1
    y = np.array(amounts, dtype)
    for name in ["left_shift", "right_shift"]:
        assert_same(getattr(tf.bitwise, name)(x, y), getattr(real_tf.bitwise, name)(x, y).numpy())


@pytest.mark.parametrize("dtype", ["int32", "uint8"])
def test_chains_fused_in_a_function_match_tensorflow(dtype):
    x, y = values(dtype, [64, 33]), shift_amounts(dtype, [33])

    def chain(bw, a, b):
        return bw.bitwise.right_shift(bw.bitwise.left_shift(~(a & b) ^ (a | 5), b), b) + a

    theirs = chain(real_tf, real_tf.constant(x), real_tf.constant(y)).numpy()
    assert_same(tf.function(lambda a, b: chain(tf, a, b))(tf.constant(x), tf.constant(y)), theirs)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_invert_matches_tensorflow(dtype):
    x = values(dtype, [5, 3])
    assert_same(tf.bitwise.invert(tf.constant(x)), real_tf.bitwise.invert(x).numpy())
    assert_same(~tf.constant(x), (~real_tf.constant(x)).numpy())
    assert_same(tf.function(lambda a: ~a)(tf.constant(x)), real_tf.bitwise.invert(x).numpy())


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_operators_on_integer_tensors_are_bitwise(dtype):
    x, y = values(dtype, [2, 3]), values(dtype, [3])
    for op in [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: a & 6,
               lambda a, b: 5 ^ b, lambda a, b: 3 | a]:
        assert_same(op(tf.constant(x), tf.constant(y)), op(real_tf.constant(x), real_tf.constant(y)).numpy())


def test_operators_on_bool_tensors_stay_logical():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    for op in [lambda p, q: p & q, lambda p, q: p | q, lambda p, q: p ^ q, lambda p, q: ~p, lambda p, q: p ^ True,
               lambda p, q: False | q]:
        assert_same(op(tf.constant(a), tf.constant(b)), op(real_tf.constant(a), real_tf.constant(b)).numpy())
    assert_same(tf.function(lambda p, q: p ^ q)(tf.constant(a), tf.constant(b)), a ^ b)


def test_operators_on_variables():
    v, x = tf.Variable([12, 10]), tf.constant([10, 6])
    real_v, real_x = real_tf.Variable([12, 10]), real_tf.constant([10, 6])
    for op in [lambda p, q: p & q, lambda p, q: p ^ q, lambda p, q: q ^ p, lambda p, q: ~p]:
        assert_same(op(v, x), op(real_v, real_x).numpy())


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_population_count_matches_tensorflow(dtype):
    x = values(dtype, [7, 5])
    theirs = real_tf.raw_ops.PopulationCount(x=x).numpy()
    assert_same(tf.raw_ops.PopulationCount(x=tf.constant(x)), theirs)
    assert_same(tf.function(lambda a: tf.raw_ops.PopulationCount(x=a))(tf.constant(x)), theirs)


def test_raw_ops_and_public_names():
    x, y = np.array([12, 10], np.int32), np.array([10, 6], np.int32)
    for name in ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"]:
        assert_same(getattr(tf.raw_ops, name)(x=tf.constant(x), y=tf.constant(y)),
                    getattr(real_tf.raw_ops, name)(x=x, y=y).numpy())
    assert_same(tf.raw_ops.Invert(x=tf.constant(x)), real_tf.raw_ops.Invert(x=x).numpy())
    assert sorted(tf.bitwise.__all__) == sorted(n for n in dir(real_tf.bitwise) if not n.startswith("_"))
    assert not hasattr(tf.math, "bitwise_and") and not hasattr(real_tf.math, "bitwise_and")


@pytest.mark.parametrize("call", [
    lambda bw: bw.bitwise_and(bw.constant([1.0]), bw.constant([1.0])),
    lambda bw: bw.invert(bw.constant([True])),
    lambda bw: ~bw.constant([1.5]),
    lambda bw: bw.constant([1.0]) ^ bw.constant([2.0]),
    lambda bw: bw.bitwise_or(bw.constant([1]), bw.constant([1], bw.int64)),
    lambda bw: bw.left_shift(bw.constant([1, 2]), bw.constant([1, 2, 3])),
])
def test_bad_operands_raise_invalid_argument_as_tensorflow(call):
    class Namespace:  # the tf.bitwise functions beside constant and the dtypes
        def __init__(self, module):
            self.module = module

        def __getattr__(self, name):
            return getattr(self.module.bitwise, name, None) or getattr(self.module, name)

    with pytest.raises(real_tf.errors.InvalidArgumentError):
        call(Namespace(real_tf))
    with pytest.raises(errors.InvalidArgumentError, match="Bitwise|Invert|LeftShift"):
        call(Namespace(tf))


def test_tensorflow_runs_the_exported_graph_def():
    fn = tf.function(lambda a, b: tf.raw_ops.PopulationCount(x=tf.bitwise.left_shift(a & b, b) ^ ~a))
    spec = tf.TensorSpec([3], tf.int32)
    graph_def = real_tf.compat.v1.GraphDef.FromString(
        fn.get_concrete_function(spec, spec).graph.as_graph_def().SerializeToString())
    a, b = np.array([5, -7, 12], np.int32), np.array([1, 40, -2], np.int32)
    with real_tf.Graph().as_default():
        real_tf.import_graph_def(graph_def, name="")
        with real_tf.compat.v1.Session() as session:
            theirs = session.run(graph_def.node[-1].name + ":0", {"a:0": a, "b:0": b})
    assert_same(fn(tf.constant(a), tf.constant(b)), theirs)

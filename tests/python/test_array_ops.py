"""Array ops through their TensorFlow API names (python/ember/ops/array_ops.py) against NumPy, for several
dtypes: shapes, dtypes and values, and bad inputs raising the exception TF raises with a message that names
the op. Expected dtypes that NumPy cannot tell us (range, one_hot, where, linspace) were recorded from TF 2."""
import numpy as np
import pytest

import ember as tf
from ember import errors
from ember.ops import array_ops

DTYPES = [tf.float32, tf.float64, tf.int32, tf.int64, tf.bool, tf.float16, tf.bfloat16]
NUMERIC = [d for d in DTYPES if d != tf.bool] + [tf.int8, tf.uint8]
INDEX_DTYPES = [tf.int32, tf.int64]
ids = lambda d: d.name  # noqa: E731


def invalid(match):
    """Expects an ember.errors.InvalidArgumentError whose message matches (and so names the op)."""
    return pytest.raises(errors.InvalidArgumentError, match=match)


def values(dtype, shape, rng):
    """Random values exactly representable in dtype, as a NumPy array of dtype's NumPy type."""
    if dtype == tf.bool:
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        return rng.integers(0 if dtype.is_unsigned else -50, 50, shape).astype(dtype.as_numpy_dtype)
    return rng.uniform(-8, 8, shape).astype(dtype.as_numpy_dtype)


def check(out, expected, dtype=None):
    """out is a Tensor equal to the NumPy array expected, with its shape and dtype (or the given dtype)."""
    expected = np.asarray(expected)
    assert isinstance(out, tf.Tensor)
    assert out.dtype == (dtype or tf.as_dtype(expected.dtype)), (out.dtype, expected.dtype)
    assert tuple(out.shape) == expected.shape
    got = out.numpy()
    if out.dtype in (tf.bfloat16, tf.float16):
        got, expected = got.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(got, expected)


def check_list(outs, expected, dtype):
    assert isinstance(outs, list) and len(outs) == len(expected)
    for out, e in zip(outs, expected):
        check(out, e, dtype)


# ---- reshape, transpose, expand_dims, squeeze ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_reshape(dtype, rng):
    x = values(dtype, (2, 3, 4), rng)
    t = tf.constant(x, dtype=dtype)
    for shape in ([24], [4, -1], (-1, 2, 3), [2, 3, 2, 2], [1, 24, 1], tf.TensorShape([6, 4]),
                  tf.constant([3, 8]), tf.constant([8, -1], tf.int64), np.array([12, 2])):
        target = list(np.asarray(shape.as_list() if isinstance(shape, tf.TensorShape) else shape))
        check(tf.reshape(t, shape), x.reshape(target), dtype)
    check(tf.reshape(tf.constant(x[0, 0, :1], dtype=dtype), []), x[0, 0, 0], dtype)
    # TF infers -1 from the non-zero dims (NumPy refuses [-1, 0]): [0, 3] -> [-1, 0] is [3, 0], [0, -1] is [0, 3].
    check(tf.reshape(tf.zeros([0, 3], dtype), [-1, 0]), np.zeros((3, 0)), dtype)
    check(tf.reshape(tf.zeros([0, 3], dtype), [0, -1]), np.zeros((0, 3)), dtype)
    check(tf.reshape([[1, 2], [3, 4]], [4]), np.array([1, 2, 3, 4], np.int32))


def test_reshape_errors():
    x = tf.range(6)
    for shape, message in [([4, -1], "Reshape: cannot reshape a tensor with 6 elements"),
                           ([5], "Reshape: cannot reshape a tensor with 6 elements to shape \\[5\\]"),
                           ([-1, -1], "Reshape: only one dimension .* may be -1"),
                           ([-2, 3], "Reshape: dimension 0 .* is -2"),
                           ([2.0, 3], "Reshape: shape must be integers"),
                           (tf.constant([2.0, 3.0]), "Reshape: shape must be an int32 or int64 tensor"),
                           ([[2, 3]], "Reshape: shape must be a vector")]:
        with invalid(message):
            tf.reshape(x, shape)
    with pytest.raises(ValueError, match="Reshape: cannot convert a partially known TensorShape"):
        tf.reshape(x, tf.TensorShape([None, 3]))
    with pytest.raises(ValueError, match="Reshape"):
        tf.reshape(x, [None, 3])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_transpose(dtype, rng):
    for rank in range(5):
        x = values(dtype, (2, 3, 4, 5)[:rank], rng)
        check(tf.transpose(tf.constant(x, dtype=dtype)), np.transpose(x), dtype)
    x = values(dtype, (2, 3, 4), rng)
    t = tf.constant(x, dtype=dtype)
    for perm in ([1, 0, 2], [2, 0, 1], [0, 1, 2], [-1, 0, 1], tf.constant([1, 2, 0]), np.array([2, 1, 0])):
        check(tf.transpose(t, perm), np.transpose(x, np.asarray(perm) % 3), dtype)
    check(tf.transpose([[1, 2], [3, 4]]), np.array([[1, 3], [2, 4]], np.int32))
    check(tf.transpose(tf.zeros([2, 0, 3], dtype), [2, 0, 1]), np.zeros((3, 2, 0)), dtype)


def test_transpose_errors():
    x = tf.zeros([2, 3, 4])
    with invalid("Transpose: perm \\[0,1\\] has 2 entries but the input has rank 3"):
        tf.transpose(x, [0, 1])
    with invalid("Transpose: perm \\[0,0,1\\] is not a permutation"):
        tf.transpose(x, [0, 0, 1])
    with invalid("Transpose: perm \\[0,1,3\\] is not a permutation"):
        tf.transpose(x, [0, 1, 3])
    with invalid("Transpose: perm must be integers"):
        tf.transpose(x, [1.0, 0, 2])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_expand_dims(dtype, rng):
    for shape in [(), (3,), (2, 3)]:
        x = values(dtype, shape, rng)
        t = tf.constant(x, dtype=dtype)
        for axis in range(-len(shape) - 1, len(shape) + 1):
            check(tf.expand_dims(t, axis), np.expand_dims(x, axis), dtype)
    x = values(dtype, (3,), rng)
    for axis in (tf.constant(1), tf.constant(1, tf.int64), [1], tf.constant([1]), np.int64(1)):
        check(tf.expand_dims(tf.constant(x, dtype=dtype), axis), x[:, None], dtype)


def test_expand_dims_errors():
    with invalid("ExpandDims: axis 2 is out of range for a tensor of rank 1"):
        tf.expand_dims(tf.range(3), 2)
    with invalid("ExpandDims: axis -3 is out of range"):
        tf.expand_dims(tf.range(3), -3)
    with invalid("ExpandDims: axis must be a single integer"):
        tf.expand_dims(tf.range(3), [0, 1])
    with pytest.raises(TypeError, match="ExpandDims: axis must be integers"):
        tf.expand_dims(tf.range(3), 1.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_squeeze(dtype, rng):
    x = values(dtype, (1, 2, 1, 3, 1), rng)
    t = tf.constant(x, dtype=dtype)
    check(tf.squeeze(t), np.squeeze(x), dtype)
    for axis in (0, 2, -1, [0, 2], (0, -1), [-3, 0, 4], [0, 0]):
        check(tf.squeeze(t, axis), np.squeeze(x, tuple(set(np.asarray(axis).reshape(-1) % 5))), dtype)
    check(tf.squeeze(t, []), np.squeeze(x), dtype)  # TF: an empty list squeezes every size-1 dim
    check(tf.squeeze(tf.zeros([1, 1], dtype)), np.zeros(()), dtype)
    check(tf.squeeze(tf.zeros([1, 0, 1], dtype)), np.zeros((0,)), dtype)
    check(tf.squeeze([[7]]), np.int32(7))


def test_squeeze_errors():
    x = tf.zeros([1, 2, 1, 3])
    with invalid("Squeeze: cannot squeeze dim 1 of shape \\[1,2,1,3\\]"):
        tf.squeeze(x, 1)
    with invalid("Squeeze: axis 4 is out of range for a tensor of rank 4"):
        tf.squeeze(x, 4)
    with invalid("Squeeze: cannot squeeze dim 1 of shape \\[1,0,1\\]"):
        tf.squeeze(tf.zeros([1, 0, 1]), 1)


# ---- concat, stack, unstack, split ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_concat(dtype, rng):
    a, b, c = values(dtype, (2, 3, 4), rng), values(dtype, (2, 1, 4), rng), values(dtype, (2, 2, 4), rng)
    ts = [tf.constant(v, dtype=dtype) for v in (a, b, c)]
    for axis in (1, -2, tf.constant(1), np.int64(1), [1]):
        check(tf.concat(ts, axis), np.concatenate([a, b, c], 1), dtype)
    check(tf.concat((ts[0], ts[0]), 0), np.concatenate([a, a], 0), dtype)
    check(tf.concat([ts[0], ts[0]], -1), np.concatenate([a, a], -1), dtype)
    check(tf.concat([tf.zeros([2, 0], dtype), tf.ones([2, 3], dtype)], 1), np.ones((2, 3)), dtype)


def test_concat_one_tensor_and_python_values():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    # TF returns a lone tensor as is (without checking axis), whether or not it is in a list.
    for values_ in (x, [x], (x,)):
        check(tf.concat(values_, 1), x.numpy())
    check(tf.concat([x], 5), x.numpy())
    check(tf.concat([tf.constant(1.0)], 0), np.float32(1))
    check(tf.concat([[1, 2], [3]], 0), np.array([1, 2, 3], np.int32))
    check(tf.concat([tf.zeros([1, 2], tf.float64), [[5.0, 6.0]]], 0), np.array([[0, 0], [5, 6]], np.float64))
    check(tf.concat([[1, 2], tf.zeros([2], tf.int64)], 0), np.array([1, 2, 0, 0], np.int64))


def test_concat_errors():
    with invalid("ConcatV2: dimension 1 of input #1 \\(shape \\[2,1\\]\\) is 1"):
        tf.concat([tf.zeros([2, 3]), tf.ones([2, 1])], 0)
    with invalid("ConcatV2: input #1 .* has dtype int32 but input #0"):
        tf.concat([tf.zeros([2, 3]), tf.ones([2, 3], tf.int32)], 0)
    with invalid("ConcatV2: all inputs must have the same rank"):
        tf.concat([tf.zeros([2, 3]), tf.ones([2])], 0)
    with invalid("ConcatV2: axis 2 is out of range for a tensor of rank 2"):
        tf.concat([tf.zeros([2, 3]), tf.ones([2, 3])], 2)
    with invalid("ConcatV2: cannot concatenate scalars"):
        tf.concat([tf.constant(1), tf.constant(2)], 0)
    with invalid("ConcatV2: expected a non-empty list"):
        tf.concat([], 0)
    with pytest.raises(TypeError, match="ConcatV2: axis must be integers"):
        tf.concat([tf.zeros([2]), tf.zeros([2])], 0.0)
    with invalid("ConcatV2: axis must be an int32 or int64 tensor, got dtype float32"):
        tf.concat([tf.zeros([2]), tf.zeros([2])], tf.constant(0.0))
    with invalid("ConcatV2: axis must be a scalar, got a tensor of shape \\[2\\]"):
        tf.concat([tf.zeros([2]), tf.zeros([2])], tf.constant([0, 0]))
    with invalid("ConcatV2: axis -3 is out of range for a tensor of rank 2"):
        tf.concat([tf.zeros([2, 3]), tf.ones([2, 3])], tf.constant(-3, tf.int64))
    op = array_ops._ConcatV2  # the op itself, past the wrapper's checks
    with invalid("ConcatV2: axis must be a scalar, got a tensor of shape \\[1\\]"):
        op([tf.zeros([2]), tf.zeros([2])], tf.constant([0]))
    with invalid("ConcatV2: input 'axis' must have a dtype in \\{int32, int64\\}, got float32"):
        op([tf.zeros([2]), tf.zeros([2])], tf.constant(0.0))


def test_concat_axis_as_a_tensor_and_negative():
    x, y = tf.constant([[1, 2], [3, 4]]), tf.constant([[5], [6]])
    check(tf.concat([x, y], -1), np.array([[1, 2, 5], [3, 4, 6]], np.int32))
    check(tf.concat([x, y], tf.constant(1, tf.int64)), np.array([[1, 2, 5], [3, 4, 6]], np.int32))
    check(tf.concat([x, tf.transpose(y)], tf.constant(-2)), np.array([[1, 2], [3, 4], [5, 6]], np.int32))
    # int32 values with an int32 axis: the axis is not taken for one of the values.
    check(tf.concat([tf.constant([1, 2]), tf.constant([3])], tf.constant(0)), np.array([1, 2, 3], np.int32))


def test_concat_errors_in_a_function_name_the_op():
    """Traced, a constant axis fails while tracing; an axis computed in the graph fails when the function
    runs, with the same errors."""
    signature = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None, None], tf.float32),
                 tf.TensorSpec([], tf.int32)]
    joined = tf.function(lambda a, b, axis: tf.concat([a, b], axis), input_signature=signature)
    np.testing.assert_array_equal(joined(tf.ones([2, 3]), tf.zeros([2, 1]), -1).numpy(),
                                  np.concatenate([np.ones([2, 3]), np.zeros([2, 1])], -1))
    with invalid("ConcatV2 \\(created at .*test_array_ops.py:\\d+\\): axis 2 is out of range for a tensor of rank 2"):
        joined(tf.ones([2, 3]), tf.ones([2, 3]), 2)
    with invalid("ConcatV2 .*dimension 0 of input #1 \\(shape \\[3,3\\]\\) is 3 but input #0"):
        joined(tf.ones([2, 3]), tf.ones([3, 3]), 1)
    wide = tf.function(lambda a, axis: tf.concat([a, a], axis),
                       input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32)])
    with invalid("ConcatV2: axis must be a scalar, got a tensor of shape \\[None\\]"):
        wide(tf.ones([2]), tf.constant([0, 0]))
    any_rank = tf.function(lambda a, axis: tf.concat([a, a], axis),
                           input_signature=[tf.TensorSpec([2], tf.float32), tf.TensorSpec(None, tf.int32)])
    with invalid("ConcatV2 .*axis must be a scalar, got a tensor of shape \\[2\\]"):  # known only at run time
        any_rank(tf.ones([2]), tf.constant([0, 0]))
    with invalid("ConcatV2 .*axis must be a scalar, got a tensor of shape \\[\\?\\]"):
        _ = tf.function(lambda a, axis: array_ops._ConcatV2([a, a], axis),
                        input_signature=[tf.TensorSpec([2], tf.float32), tf.TensorSpec([None], tf.int32)])(
                            tf.ones([2]), tf.constant([0, 0]))
    with invalid("ConcatV2 .*axis 1 is out of range for a tensor of rank 1"):
        tf.function(lambda a: tf.concat([a, a], 1))(tf.ones([2]))
    with invalid("ConcatV2: axis must be an int32 or int64 tensor, got dtype float32"):
        tf.function(lambda a, axis: tf.concat([a, a], axis))(tf.ones([2]), tf.constant(0.0))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_stack_and_unstack(dtype, rng):
    xs = [values(dtype, (2, 3), rng) for _ in range(4)]
    ts = [tf.constant(x, dtype=dtype) for x in xs]
    for axis in range(-3, 3):
        stacked = tf.stack(ts, axis)
        check(stacked, np.stack(xs, axis), dtype)
        check_list(tf.unstack(stacked, axis=axis), xs, dtype)
    check_list(tf.unstack(ts[0]), list(xs[0]), dtype)
    check_list(tf.unstack(ts[0], axis=-1), list(xs[0].T), dtype)
    check_list(tf.unstack(ts[0], num=2), list(xs[0]), dtype)
    check(tf.stack([tf.zeros([2, 0], dtype)] * 2, axis=2), np.zeros((2, 0, 2)), dtype)
    assert tf.unstack(tf.zeros([3, 0], dtype), axis=1) == []
    check_list(tf.unstack(tf.zeros([3, 0], dtype)), [np.zeros(0)] * 3, dtype)


def test_stack_python_values():
    check(tf.stack([1, 2, 3]), np.array([1, 2, 3], np.int32))
    check(tf.stack([[1, 2], [3, 4]], axis=1), np.array([[1, 3], [2, 4]], np.int32))
    check(tf.stack([tf.constant(1.0), 2.0]), np.array([1, 2], np.float32))
    check(tf.stack([]), np.zeros(0, np.float32))
    check_list(tf.unstack([[1, 2], [3, 4]]), [np.array([1, 2], np.int32), np.array([3, 4], np.int32)], tf.int32)


def test_stack_and_unstack_errors():
    x = tf.range(3)
    with pytest.raises(ValueError, match="Pack: argument `axis` = 2 not in range \\[-2, 2\\)"):
        tf.stack([x, x], 2)
    with pytest.raises(ValueError, match="Pack: argument `axis` = -3 not in range"):
        tf.stack([x, x], -3)
    with invalid("Pack: all inputs must have the same shape"):
        tf.stack([x, tf.range(2)])
    with invalid("Pack: input #1 .* has dtype float32 but input #0"):
        tf.stack([x, tf.zeros([3])])
    m = tf.zeros([2, 3])
    with pytest.raises(ValueError, match="Unpack: argument `axis` = 2 not in range \\[-2, 2\\)"):
        tf.unstack(m, axis=2)
    with pytest.raises(ValueError, match="Unpack: argument `axis` = -3 not in range"):
        tf.unstack(m, axis=-3)
    with pytest.raises(ValueError, match="Unpack: argument `axis` = 0 not in range \\[0, 0\\)"):
        tf.unstack(tf.constant(3))
    with invalid("Unpack: num is 3 but dimension 0 of shape \\[2,3\\] is 2"):
        tf.unstack(m, num=3)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_split(dtype, rng):
    x = values(dtype, (6, 4), rng)
    t = tf.constant(x, dtype=dtype)
    for parts in (1, 2, 3, 6, np.int64(3)):
        check_list(tf.split(t, parts), np.split(x, int(parts)), dtype)
    check_list(tf.split(t, 2, axis=1), np.split(x, 2, axis=1), dtype)
    check_list(tf.split(t, 4, axis=-1), np.split(x, 4, axis=1), dtype)
    for sizes, cuts in [([1, 5], [1]), ([1, -1, 2], [1, 4]), ((2, 0, -1), [2, 2]), (np.array([3, 3]), [3]),
                        (tf.constant([4, 2]), [4]), (tf.constant([1, 5], tf.int64), [1]), ([6], [])]:
        check_list(tf.split(t, sizes), np.split(x, cuts), dtype)
    check_list(tf.split(t, [1, 3], axis=-1), np.split(x, [1], axis=1), dtype)
    check_list(tf.split(t, [2, 2], axis=1, num=2), np.split(x, 2, axis=1), dtype)
    check_list(tf.split(t, 2, num=5), np.split(x, 2), dtype)  # TF ignores num with a number of parts
    check_list(tf.split(tf.zeros([0], dtype), [0, 0, -1]), [np.zeros(0)] * 3, dtype)
    check_list(tf.split([1, 2, 3, 4], 2), [np.array([1, 2], np.int32), np.array([3, 4], np.int32)], tf.int32)


def test_split_errors():
    x = tf.range(6)
    with invalid("Split: number of ways to split should evenly divide the split dimension, but got "
                 "split_dim 0 \\(size = 6\\) and num_split 4"):
        tf.split(x, 4)
    for parts in (0, -1):
        with invalid("Split: num_split must be at least 1"):
            tf.split(x, parts)
    with invalid("Split: axis 1 is out of range for a tensor of rank 1"):
        tf.split(x, 2, axis=1)
    with invalid("SplitV: size_splits \\[1,2\\] must sum to the size of the split dimension, 6; got 3"):
        tf.split(x, [1, 2])
    with invalid("SplitV: only one entry of size_splits \\[1,-1,-1\\] may be -1"):
        tf.split(x, [1, -1, -1])
    with invalid("SplitV: size_splits \\[-2,8\\] has a negative entry"):
        tf.split(x, [-2, 8])
    with invalid("SplitV: size_splits \\[7,-1\\] must sum"):
        tf.split(x, [7, -1])
    with invalid("SplitV: axis 1 is out of range for a tensor of rank 1"):
        tf.split(x, [1, 5], axis=1)
    with invalid("SplitV: num is 3 but size_splits \\[3,3\\] has 2 entries"):
        tf.split(x, [3, 3], num=3)
    with invalid("SplitV: size_splits must be integers"):
        tf.split(x, [2.0, 4.0])
    for parts in (tf.constant(2), 2.0):
        with pytest.raises(ValueError, match="Split: rank-0 tensors are not supported as the num_or_size_splits"):
            tf.split(x, parts)


# ---- slice, gather -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_slice(dtype, rng):
    x = values(dtype, (3, 4, 5), rng)
    t = tf.constant(x, dtype=dtype)
    for begin, size in [([0, 0, 0], [3, 4, 5]), ([1, 1, 2], [2, 2, 3]), ([1, 0, 4], [-1, -1, 1]),
                        ([2, 3, 0], [1, 1, -1]), ([3, 4, 5], [0, 0, 0])]:
        expected = x[tuple(np.s_[b:(None if s == -1 else b + s)] for b, s in zip(begin, size))]
        check(tf.slice(t, begin, size), expected, dtype)
        check(tf.slice(t, tf.constant(begin), tf.constant(size, tf.int64)), expected, dtype)
    check(tf.slice([1, 2, 3], [1], [2]), np.array([2, 3], np.int32))


def test_slice_errors():
    x = tf.zeros([3, 4])
    with invalid("Slice: expected size\\[0\\] in \\[0, 2\\] \\(or -1\\)"):
        tf.slice(x, [1, 1], [3, 2])
    with invalid("Slice: expected begin\\[0\\] in \\[0, 3\\]"):
        tf.slice(x, [-1, 1], [1, 2])
    with invalid("Slice: expected size\\[1\\] in \\[0, 3\\] \\(or -1\\)"):
        tf.slice(x, [1, 1], [1, -2])
    with invalid("Slice: begin \\[1\\] and size \\[1\\] must each have one entry"):
        tf.slice(x, [1], [1])
    with invalid("Slice: begin must be integers"):
        tf.slice(x, [0.0, 0], [1, 1])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_gather(dtype, rng):
    x = values(dtype, (4, 5, 3), rng)
    t = tf.constant(x, dtype=dtype)
    for index_dtype in (tf.int32, tf.int64, tf.int16):
        for axis in (0, 1, 2, -1, -3):
            n = x.shape[axis]
            indices = rng.integers(0, n, (2, 3))
            out = tf.gather(t, tf.constant(indices, dtype=index_dtype), axis=axis)
            check(out, np.take(x, indices, axis=axis), dtype)
    check(tf.gather(t, [3, 0, 3]), x[[3, 0, 3]], dtype)
    check(tf.gather(t, 2, axis=1), x[:, 2], dtype)
    check(tf.gather(t, np.array([1, 0], np.int64), axis=tf.constant(2)), x[:, :, [1, 0]], dtype)
    check(tf.gather(t, tf.zeros([0], tf.int32), axis=1), x[:, :0], dtype)
    # batch_dims: one gather per row; axis defaults to batch_dims.
    m = values(dtype, (3, 4), rng)
    indices = np.array([[0, 1], [2, 3], [1, 0]])
    expected = np.stack([m[i, indices[i]] for i in range(3)])
    check(tf.gather(tf.constant(m, dtype=dtype), indices, batch_dims=1), expected, dtype)
    check(tf.gather(tf.constant(m, dtype=dtype), indices, axis=1, batch_dims=1), expected, dtype)
    check(tf.gather([10, 20, 30], [2, 0]), np.array([30, 10], np.int32))


def test_gather_errors_name_the_bad_index():
    x = tf.reshape(tf.range(12), [3, 4])
    with invalid("GatherV2: indices\\[1\\] = 7 is not in \\[0, 4\\)"):
        tf.gather(x, [0, 7], axis=1)
    with invalid("GatherV2: indices\\[0\\] = -1 is not in \\[0, 3\\)"):
        tf.gather(x, [-1])
    with invalid("GatherV2: indices\\[1,0\\] = 3 is not in \\[0, 3\\)"):
        tf.gather(x, tf.constant([[0, 1], [3, 0]], tf.int64))
    with invalid("GatherV2: indices\\[0\\] = 0 is not in \\[0, 0\\)"):
        tf.gather(tf.zeros([0, 3]), [0])
    with invalid("GatherV2: axis 2 is out of range for a tensor of rank 2"):
        tf.gather(x, [0], axis=2)
    for indices in ([0.0], tf.constant([0], tf.uint8), []):
        with invalid("GatherV2: input 'indices' must have a dtype in"):
            tf.gather(x, indices)
    with invalid("GatherV2: axis must be integers"):
        tf.gather(x, [0], axis=0.0)


# ---- tile, pad, broadcast_to ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_tile(dtype, rng):
    x = values(dtype, (2, 3), rng)
    t = tf.constant(x, dtype=dtype)
    for multiples in ([1, 1], [2, 3], [3, 1], [0, 2], tf.constant([2, 2]), (1, 4)):
        check(tf.tile(t, multiples), np.tile(x, np.asarray(multiples)), dtype)
    check(tf.tile(tf.constant(x[0, 0], dtype=dtype), []), x[0, 0], dtype)
    check(tf.tile(tf.zeros([2, 0], dtype), [2, 3]), np.zeros((4, 0)), dtype)


def test_tile_errors():
    x = tf.constant([[1, 2]])
    with invalid("Tile: multiples \\[2\\] must have one entry per dimension"):
        tf.tile(x, [2])
    with invalid("Tile: multiples\\[1\\] must be >= 0, got -1"):
        tf.tile(x, [2, -1])
    with invalid("Tile: multiples must be integers"):
        tf.tile(x, [1.0, 2])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_pad_constant(dtype, rng):
    x = values(dtype, (2, 3), rng)
    t = tf.constant(x, dtype=dtype)
    paddings = [[1, 2], [0, 3]]
    check(tf.pad(t, paddings), np.pad(x, paddings), dtype)
    check(tf.pad(t, tf.constant(paddings)), np.pad(x, paddings), dtype)
    check(tf.pad(t, np.array(paddings, np.int64), mode="constant"), np.pad(x, paddings), dtype)
    fill = True if dtype == tf.bool else 7
    check(tf.pad(t, paddings, constant_values=fill), np.pad(x, paddings, constant_values=fill), dtype)
    if dtype.is_floating:
        check(tf.pad(t, paddings, constant_values=-1.5), np.pad(x, paddings, constant_values=-1.5), dtype)
    check(tf.pad(tf.constant(x[0, 0], dtype=dtype), np.zeros((0, 2), np.int32)), x[0, 0], dtype)


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC", "reflect", "Symmetric"])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_pad_mirror(mode, dtype, rng):
    x = values(dtype, (3, 4), rng)
    t = tf.constant(x, dtype=dtype)
    largest = 2 if mode.upper() == "REFLECT" else 3  # REFLECT: < dim; SYMMETRIC: <= dim
    for paddings in ([[0, 0], [0, 0]], [[1, 2], [3, 0]], [[largest, largest], [1, 1]]):
        check(tf.pad(t, paddings, mode=mode), np.pad(x, paddings, mode=mode.lower()), dtype)


def test_pad_values_and_errors():
    check(tf.pad([[1, 2], [3, 4]], [[1, 1], [2, 0]], constant_values=7),
          np.pad(np.array([[1, 2], [3, 4]], np.int32), [[1, 1], [2, 0]], constant_values=7))
    check(tf.pad(tf.constant([1, 2]), [[1, 1]], constant_values=0.0), np.array([0, 1, 2, 0], np.int32))
    check(tf.pad(tf.constant([1.0, 2.0]), [[1, 0]], constant_values=tf.constant(3.0)), np.array([3, 1, 2], np.float32))
    x = tf.constant([[1, 2, 3], [3, 4, 5]])
    with invalid("Pad: REFLECT paddings must be less than the dimension size"):
        tf.pad(x, [[2, 1], [2, 2]], mode="REFLECT")
    with invalid("Pad: SYMMETRIC paddings must be no greater than the dimension size"):
        tf.pad(x, [[3, 2], [3, 3]], mode="SYMMETRIC")
    with invalid("Pad: paddings must have shape \\[2, 2\\]"):
        tf.pad(x, [[1, 1]])
    with invalid("Pad: paddings must be non-negative, got -1"):
        tf.pad(x, [[1, 1], [-1, 0]])
    with invalid("Pad: paddings must be a matrix with 2 columns"):
        tf.pad(x, [1, 1, 1, 0])
    with invalid("Pad: paddings must be a matrix with 2 columns"):
        tf.pad(tf.constant(1), [])
    with invalid("Pad: paddings must be integers"):
        tf.pad(x, [[1.0, 1], [0, 0]])
    with pytest.raises(ValueError, match="Pad: value of argument `mode` expected to be one of"):
        tf.pad(x, [[1, 1], [1, 0]], mode="FOO")
    with pytest.raises(TypeError):
        tf.pad(x, [[1, 1], [2, 0]], constant_values=1.5)  # TF: Cannot convert 1.5 to EagerTensor of dtype int32


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_broadcast_to(dtype, rng):
    x = values(dtype, (3, 1), rng)
    t = tf.constant(x, dtype=dtype)
    for shape in ([3, 4], (2, 3, 4), tf.constant([3, 1]), tf.TensorShape([5, 3, 2]), [3, 0], np.array([1, 3, 1])):
        target = tuple(shape.as_list()) if isinstance(shape, tf.TensorShape) else tuple(np.asarray(shape))
        check(tf.broadcast_to(t, shape), np.broadcast_to(x, target), dtype)
    check(tf.broadcast_to(3, [2, 2]), np.full((2, 2), 3, np.int32))


def test_broadcast_to_errors():
    with invalid("BroadcastTo: cannot broadcast a tensor of shape \\[2\\] to shape \\[3,3\\]"):
        tf.broadcast_to([1, 2], [3, 3])
    with invalid("BroadcastTo: cannot broadcast a tensor of shape \\[2,1\\]"):
        tf.broadcast_to(tf.zeros([2, 1]), [2])
    with invalid("BroadcastTo: shape must be integers"):
        tf.broadcast_to(tf.zeros([3]), [2.0, 3])


# ---- shape, size, rank, identity -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_shape_size_rank_identity(dtype, rng):
    for shape in [(), (0,), (3,), (2, 0, 4), (2, 3, 4, 1)]:
        x = values(dtype, shape, rng)
        t = tf.constant(x, dtype=dtype)
        check(tf.shape(t), np.array(shape, np.int32))
        check(tf.shape(t, out_type=tf.int64), np.array(shape, np.int64))
        check(tf.size(t), np.int32(x.size))
        check(tf.size(t, out_type=tf.int64), np.int64(x.size))
        check(tf.rank(t), np.int32(len(shape)))
        check(tf.identity(t), x, dtype)


def test_shape_size_rank_of_python_values():
    check(tf.shape([[1, 2, 3]]), np.array([1, 3], np.int32))
    check(tf.shape(3.0), np.zeros(0, np.int32))
    check(tf.shape([]), np.array([0], np.int32))
    check(tf.size([[1, 2, 3]]), np.int32(3))
    check(tf.rank([[1, 2, 3]]), np.int32(2))
    check(tf.rank(3), np.int32(0))
    check(tf.identity([1, 2]), np.array([1, 2], np.int32))
    with invalid("Shape: out_type must be int32 or int64, got float32"):
        tf.shape(tf.zeros([2]), out_type=tf.float32)
    with invalid("Size: out_type must be int32 or int64, got bool"):
        tf.size(tf.zeros([2]), out_type=tf.bool)


# ---- where ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_where_one_argument_gives_coordinates(dtype, rng):
    for shape in [(5,), (3, 4), (2, 3, 4), (2, 0, 3)]:
        x = values(dtype, shape, rng)
        x.reshape(-1)[::3] = 0
        check(tf.where(tf.constant(x, dtype=dtype)), np.argwhere(x).astype(np.int64))
    check(tf.where([True, False, True]), np.array([[0], [2]], np.int64))


def test_where_on_a_scalar_is_an_error_as_in_tf():
    # TF: "WhereOp : Unhandled input dimensions: 0". NumPy's argwhere would give shape (1, 0).
    with invalid("Where"):
        tf.where(tf.constant(True))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_where_selects_with_broadcasting(dtype, rng):
    for cond_shape, x_shape, y_shape in [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (3, 4)), ((4,), (3, 4), ()),
                                         ((), (2, 3), (2, 3)), ((2, 1, 3), (4, 1), (1,))]:
        c = rng.random(cond_shape) > 0.5
        x, y = values(dtype, x_shape, rng), values(dtype, y_shape, rng)
        out = tf.where(tf.constant(c), tf.constant(x, dtype=dtype), tf.constant(y, dtype=dtype))
        check(out, np.where(c, x, y), dtype)


def test_where_converts_python_values_like_tf():
    check(tf.where([True, False], [1, 2], [3, 4]), np.array([1, 4], np.int32))
    check(tf.where([True, False], 1.0, 0), np.array([1, 0], np.float32))  # the first value fixes the dtype
    check(tf.where([[True], [False]], tf.constant([1.0, 2.0]), 0.5), np.array([[1, 2], [0.5, 0.5]], np.float32))
    check(tf.where([[True], [False]], 0.5, tf.constant([1.0, 2.0], tf.float64)),
          np.array([[0.5, 0.5], [1, 2]], np.float64))
    check(tf.where(True, [1, 2], [3, 4]), np.array([1, 2], np.int32))
    for x, y in [(1, 0.5), (tf.constant([1, 2]), 0.5)]:
        with pytest.raises(TypeError):  # TF: Cannot convert 0.5 to EagerTensor of dtype int32
            tf.where([True, False], x, y)
    with pytest.raises(TypeError):  # TF: Cannot convert [1, 0] to EagerTensor of dtype bool
        tf.where([1, 0], [1, 2], [3, 4])
    with pytest.raises(ValueError, match="dtype bool"):
        tf.where(tf.constant([1, 0]), [1, 2], [3, 4])
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None"):
        tf.where([True, False], [1, 2])
    with invalid("SelectV2: condition \\[3\\], t \\[2\\] and e \\[2\\] must be broadcastable"):
        tf.where([True, False, True], [1, 2], [3, 4])
    with invalid("SelectV2: input #2 \\('e'\\) has dtype float32"):
        tf.where([True, False], tf.constant([1, 2]), tf.constant([1.0, 2.0]))


# ---- fill, zeros, ones, zeros_like, ones_like, eye -----------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_fill_zeros_ones(dtype):
    np_dtype = dtype.as_numpy_dtype
    for shape in ([2, 3], (2, 3), tf.TensorShape([2, 3]), tf.constant([2, 3]), tf.constant([2, 3], tf.int64),
                  np.array([2, 3])):
        check(tf.zeros(shape, dtype), np.zeros((2, 3), np_dtype), dtype)
        check(tf.ones(shape, dtype), np.ones((2, 3), np_dtype), dtype)
        check(tf.fill(shape, tf.ones([], dtype)), np.ones((2, 3), np_dtype), dtype)
    for shape, expected in [([], ()), (3, (3,)), ([0, 4], (0, 4)), (np.int64(2), (2,)), (tf.constant(2), (2,))]:
        check(tf.zeros(shape, dtype), np.zeros(expected, np_dtype), dtype)
        check(tf.ones(shape, dtype=dtype), np.ones(expected, np_dtype), dtype)


def test_fill_zeros_ones_dtypes_and_values():
    check(tf.zeros([2]), np.zeros(2, np.float32))
    check(tf.ones([2], "float16"), np.ones(2, np.float16))
    check(tf.zeros([2], np.int64), np.zeros(2, np.int64))
    check(tf.fill([2, 3], 7), np.full((2, 3), 7, np.int32))
    check(tf.fill([2, 3], 7.5), np.full((2, 3), 7.5, np.float32))
    check(tf.fill((2,), True), np.array([True, True]))
    check(tf.fill([], 3), np.int32(3))
    check(tf.fill(tf.constant([2, 2]), tf.constant(1.5, tf.float64)), np.full((2, 2), 1.5))


def test_fill_zeros_ones_errors():
    with invalid("Fill: 'dims' \\[2, -1\\]: dimension -1 must be >= 0"):
        tf.fill([2, -1], 3)
    with invalid("Fill: 'dims' \\[2, -1\\]: dimension -1 must be >= 0"):
        tf.zeros([2, -1])
    with invalid("Fill: value must be a scalar, got shape \\[2\\]"):
        tf.fill([2, 2], [1, 2])
    with invalid("Fill: dims must be integers"):
        tf.fill([2.0, 3], 1)
    for shape in ([2.0, 3], 2.0):  # TF: Cannot convert [2.0, 3] to EagerTensor of dtype int32
        with pytest.raises(TypeError, match="Fill: shape must be integers"):
            tf.ones(shape)
    with pytest.raises(ValueError, match="partially known TensorShape"):
        tf.zeros(tf.TensorShape([None, 3]))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_zeros_like_ones_like(dtype, rng):
    x = values(dtype, (2, 3), rng)
    t = tf.constant(x, dtype=dtype)
    check(tf.zeros_like(t), np.zeros_like(x), dtype)
    check(tf.ones_like(t), np.ones_like(x), dtype)
    for target in DTYPES:
        np_target = target.as_numpy_dtype
        check(tf.zeros_like(t, dtype=target), np.zeros(x.shape, np_target), target)
        check(tf.ones_like(t, dtype=target), np.ones(x.shape, np_target), target)
    check(tf.zeros_like([[1, 2], [3, 4]]), np.zeros((2, 2), np.int32))
    check(tf.ones_like([1, 2], dtype=tf.float64), np.ones(2))
    check(tf.ones_like(3.0), np.float32(1))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_eye(dtype):
    np_dtype = dtype.as_numpy_dtype
    check(tf.eye(3, dtype=dtype), np.eye(3, dtype=np_dtype), dtype)
    check(tf.eye(2, 4, dtype=dtype), np.eye(2, 4, dtype=np_dtype), dtype)
    check(tf.eye(3, num_columns=2, dtype=dtype), np.eye(3, 2, dtype=np_dtype), dtype)
    check(tf.eye(0, 2, dtype=dtype), np.eye(0, 2, dtype=np_dtype), dtype)
    for batch_shape in ([3], (2, 1), tf.constant([2]), tf.TensorShape([2, 2])):
        batch = tf.TensorShape(batch_shape.numpy() if isinstance(batch_shape, tf.Tensor) else batch_shape)
        batch = tuple(batch.as_list())
        expected = np.broadcast_to(np.eye(2, 3, dtype=np_dtype), batch + (2, 3))
        check(tf.eye(2, 3, batch_shape=batch_shape, dtype=dtype), expected, dtype)
    check(tf.eye(tf.constant(2)), np.eye(2, dtype=np.float32))


def test_eye_errors():
    with invalid("Eye: num_rows must be >= 0, got -1"):
        tf.eye(-1)
    with invalid("Eye: num_columns must be >= 0"):
        tf.eye(2, -2)
    for args in [(2.0,), (2, 3.0)]:
        with pytest.raises(TypeError, match="Eye: arguments `num_rows` and `num_columns` must be positive integer"):
            tf.eye(*args)
    with pytest.raises(TypeError, match="Eye: batch_shape must be integers"):
        tf.eye(2, batch_shape=[2.0])


# ---- range, linspace -----------------------------------------------------------------------------

# (args, kwargs, dtype TF 2 gives): Python ints -> int32, any float -> float32, tensors and NumPy keep theirs,
# the widest of int32 < int64 < float16 < bfloat16 < float32 < float64 wins.
RANGE_DTYPES = [
    ((5,), {}, tf.int32),
    ((5.0,), {}, tf.float32),
    ((1, 5.0, 2), {}, tf.float32),
    ((1, 5, 0.5), {}, tf.float32),
    ((np.int64(5),), {}, tf.int64),
    ((np.float64(5),), {}, tf.float64),
    ((np.float32(2), 5), {}, tf.float32),
    ((tf.constant(5, tf.int64),), {}, tf.int64),
    ((tf.constant(1, tf.int64), 5.0), {}, tf.float32),
    ((tf.constant(1.0, tf.float64), tf.constant(5.0)), {}, tf.float64),
    ((tf.constant(1), tf.constant(5, tf.int64)), {}, tf.int64),
    ((1, 2, tf.constant(0.25, tf.float16)), {}, tf.float16),
    ((2**31 + 5, 2**31 + 8), {}, tf.int64),
    ((5,), {"dtype": tf.float64}, tf.float64),
    ((tf.constant(3),), {"dtype": tf.float32}, tf.float32),
]


@pytest.mark.parametrize("args,kwargs,dtype", RANGE_DTYPES, ids=[str(i) for i in range(len(RANGE_DTYPES))])
def test_range_dtype_inference(args, kwargs, dtype):
    bounds = [float(np.asarray(a)) for a in args]
    check(tf.range(*args, **kwargs), np.arange(*bounds).astype(dtype.as_numpy_dtype), dtype)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != tf.bool], ids=ids)
def test_range_values(dtype):
    np_dtype = dtype.as_numpy_dtype
    cases = [(0, 10, 1), (2, 9, 3), (9, 2, -2), (3, 3, 1), (-4, 4, 3), (5, -5, -1)]
    if dtype.is_floating:
        cases += [(0, 1, 0.125), (2, -1, -0.75), (0.5, 4, 1.5)]
    for start, limit, delta in cases:
        check(tf.range(start, limit, delta, dtype=dtype), np.arange(start, limit, delta).astype(np_dtype), dtype)
    check(tf.range(start=2, limit=8, delta=3, dtype=dtype), np.array([2, 5], np_dtype), dtype)
    check(tf.range(10, delta=3, dtype=dtype), np.array([0, 3, 6, 9], np_dtype), dtype)
    check(tf.range(0, dtype=dtype), np.zeros(0, np_dtype), dtype)


def test_range_float_steps_match_tf():
    # TF computes start + i * delta in the output dtype; recorded from TF 2.
    np.testing.assert_array_equal(tf.range(0.0, 1.0, 0.1).numpy(), np.array(
        [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.90000004], np.float32))
    assert tf.range(0.0, 1.0, 0.1, dtype=tf.float64).shape == (10,)
    check(tf.range(5, 1, -1.5), np.array([5, 3.5, 2], np.float32))


def test_range_errors():
    with invalid("Range: requires start <= limit when delta > 0"):
        tf.range(5, 1)
    with invalid("Range: requires start <= limit when delta > 0"):
        tf.range(-3)
    with invalid("Range: requires start >= limit when delta < 0"):
        tf.range(1, 5, -1)
    with invalid("Range: delta must not be 0"):
        tf.range(1, 5, 0)
    with invalid("Range: limit must be a scalar"):
        tf.range(tf.constant([1, 5]))
    for args, kwargs in [((5.5,), {"dtype": tf.int32}), ((0.5, 5), {"dtype": tf.int64}), ((5,), {"dtype": tf.bool})]:
        with pytest.raises(TypeError):  # TF: Cannot convert 5.5 to EagerTensor of dtype int32
            tf.range(*args, **kwargs)


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64], ids=ids)
def test_linspace(dtype):
    np_dtype = dtype.as_numpy_dtype
    rtol = {tf.float16: 1e-3, tf.bfloat16: 8e-3}.get(dtype, 1e-6)
    for start, stop, num in [(0, 1, 5), (2, -1, 4), (-3, 7, 11), (1, 1, 3), (0.5, 2, 2), (-1, 1, 1)]:
        out = tf.linspace(tf.constant(start, dtype), tf.constant(stop, dtype), num)
        assert out.dtype == dtype and out.shape == (num,)
        expected = np.linspace(start, stop, num)
        np.testing.assert_allclose(out.numpy().astype(np.float64), expected, rtol=rtol, atol=rtol)
        assert out.numpy()[0] == np_dtype(start) and out.numpy()[-1] == np_dtype(stop if num > 1 else start)
    check(tf.linspace(tf.constant(0, dtype), tf.constant(1, dtype), 0), np.zeros(0, np_dtype), dtype)


def test_linspace_dtypes_and_nd_bounds():
    check(tf.linspace(0.0, 1.0, 5), np.linspace(0, 1, 5).astype(np.float32))
    check(tf.linspace(0, 1, 5), np.linspace(0, 1, 5))  # TF: integer bounds give float64
    check(tf.linspace(tf.constant(0.0, tf.float64), 1.0, 5), np.linspace(0, 1, 5))
    check(tf.linspace(0.0, 1.0, tf.constant(3)), np.array([0, 0.5, 1], np.float32))
    start, stop = np.array([0.0, 1.0], np.float32), np.array([1.0, 3.0], np.float32)
    for axis in (0, 1, -1, -2):
        np.testing.assert_allclose(tf.linspace(start, stop, 3, axis=axis).numpy(),
                                   np.linspace(start, stop, 3, axis=axis), rtol=1e-6)
    start2, stop2 = np.array([[0.0], [1.0]], np.float32), np.array([[1.0], [3.0]], np.float32)
    out = tf.linspace(start2, stop2, 4, axis=-1)
    assert out.shape == (2, 1, 4)
    np.testing.assert_allclose(out.numpy(), np.linspace(start2, stop2, 4, axis=-1), rtol=1e-6)
    check(tf.linspace([0.0, 1.0], 2.0, 3), np.array([[0, 1], [1, 1.5], [2, 2]], np.float32))
    check(tf.linspace([0.0, 1.0], [1.0, 3.0], 0), np.zeros((0, 2), np.float32))
    check(tf.linspace([0.0, 1.0], [1.0, 3.0], 1), np.array([[0, 1]], np.float32))


def test_linspace_errors():
    with invalid("LinSpace: num must be >= 0, got -1"):
        tf.linspace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match="LinSpace: num must be an integer"):
        tf.linspace(0.0, 1.0, 3.0)
    with invalid("LinSpace: axis 1 is out of range for a result of rank 1"):
        tf.linspace(0.0, 1.0, 3, axis=1)
    with invalid("LinSpace: start and stop must be floating or integer"):
        tf.linspace(tf.constant(True), tf.constant(False), 3)


# ---- one_hot, clip_by_value ----------------------------------------------------------------------


def one_hot_reference(indices, depth, on, off, axis, np_dtype):
    indices = np.asarray(indices)
    out = np.where(indices[..., None] == np.arange(depth), on, off).astype(np_dtype)
    return np.moveaxis(out, -1, axis if axis >= 0 else out.ndim - 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_one_hot(dtype, rng):
    np_dtype = dtype.as_numpy_dtype
    on, off = (True, False) if dtype == tf.bool else (np_dtype(5), np_dtype(-2) if dtype != tf.uint8 else 0)
    for index_dtype in (tf.int32, tf.int64, tf.uint8):
        indices = rng.integers(0 if index_dtype == tf.uint8 else -2, 6, (3, 4))  # some outside [0, 4): all off
        for axis in (-1, 0, 1, 2):
            out = tf.one_hot(tf.constant(indices, index_dtype), 4, on_value=on, off_value=off, axis=axis, dtype=dtype)
            check(out, one_hot_reference(indices, 4, on, off, axis, np_dtype), dtype)
    if dtype != tf.bool:
        check(tf.one_hot([0, 3, -1, 9], 4, dtype=dtype), one_hot_reference([0, 3, -1, 9], 4, 1, 0, -1, np_dtype), dtype)


def test_one_hot_dtype_inference_as_tf():
    check(tf.one_hot([0, 2, 1], 3), np.eye(3, dtype=np.float32)[[0, 2, 1]])
    check(tf.one_hot([0, 2], 3, on_value=5), np.array([[5, 0, 0], [0, 0, 5]], np.int32))
    check(tf.one_hot([0, 2], 3, on_value=5, off_value=-1), np.array([[5, -1, -1], [-1, -1, 5]], np.int32))
    check(tf.one_hot([0, 2], 3, off_value=-1.0), np.array([[1, -1, -1], [-1, -1, 1]], np.float32))
    check(tf.one_hot([0, 2], 3, on_value=True, off_value=False), np.eye(3, dtype=bool)[[0, 2]])
    check(tf.one_hot([0, 2], 3, on_value=2, dtype=tf.float32), np.array([[2, 0, 0], [0, 0, 2]], np.float32))
    check(tf.one_hot([0, 2], 3, on_value=tf.constant(1, tf.int64), off_value=tf.constant(0, tf.int64)),
          np.eye(3, dtype=np.int64)[[0, 2]])
    check(tf.one_hot(tf.zeros([0], tf.int32), 3), np.zeros((0, 3), np.float32))
    check(tf.one_hot([0, 1], 0), np.zeros((2, 0), np.float32))
    check(tf.one_hot(1, tf.constant(3)), np.array([0, 1, 0], np.float32))


def test_one_hot_errors():
    for kwargs in [{"on_value": 2.0, "dtype": tf.int32}, {"on_value": 2, "off_value": 0.5},
                   {"on_value": tf.constant(2), "off_value": tf.constant(1.0)}, {"dtype": tf.bool}]:
        with pytest.raises(TypeError):  # e.g. TF: dtype int32 of on_value does not match dtype float32 of off_value
            tf.one_hot([0, 2], 3, **kwargs)
    with pytest.raises(TypeError, match="OneHot: dtype int32 of on_value does not match dtype float32 of off_value"):
        tf.one_hot([0, 2], 3, on_value=2, off_value=0.5)
    with invalid("OneHot: input 'indices' must have a dtype in"):
        tf.one_hot([0.0, 2.0], 3)
    with invalid("OneHot: input 'indices' must have a dtype in"):
        tf.one_hot(tf.constant([0, 2], tf.int16), 3)
    with invalid("OneHot: depth must be non-negative, got -1"):
        tf.one_hot([0, 2], -1)
    with invalid("OneHot: axis must be -1 or in \\[0, 2\\]"):
        tf.one_hot([[0, 2], [1, 1]], 3, axis=3)
    with pytest.raises(TypeError, match="OneHot: depth must be integers"):
        tf.one_hot([0, 1], 3.0)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
def test_clip_by_value(dtype, rng):
    x = values(dtype, (3, 4), rng)
    t = tf.constant(x, dtype=dtype)
    lo, hi = (np.uint8(5), np.uint8(30)) if dtype == tf.uint8 else (-3, 4)
    check(tf.clip_by_value(t, lo, hi), np.clip(x, lo, hi), dtype)
    lo_t = tf.constant(lo, dtype)
    check(tf.clip_by_value(t, lo_t, tf.constant(hi, dtype)), np.clip(x, lo, hi), dtype)
    # Bounds broadcast against t.
    rows = values(dtype, (3, 1), rng)
    upper = np.maximum(rows, rows + 10) if dtype != tf.uint8 else rows
    check(tf.clip_by_value(t, tf.constant(rows, dtype), tf.constant(upper, dtype)),
          np.minimum(np.maximum(x, rows), upper), dtype)


def test_clip_by_value_values_and_errors():
    check(tf.clip_by_value([1, 5, 10], 2, 8), np.array([2, 5, 8], np.int32))
    check(tf.clip_by_value([1.0, 5.0, 10.0], 2, 8), np.array([2, 5, 8], np.float32))
    check(tf.clip_by_value(tf.constant([1.0, np.nan, -np.inf]), 0.0, 1.0), np.array([1, np.nan, 0], np.float32))
    check(tf.clip_by_value(3.0, 0.0, 1.0), np.float32(1))
    with pytest.raises(TypeError):  # TF: Cannot convert 8.5 to EagerTensor of dtype int32
        tf.clip_by_value(tf.constant([1, 5, 10]), 2.5, 8.5)
    with invalid("ClipByValue: input 't' must have a dtype in"):
        tf.clip_by_value(tf.constant([True, False]), False, True)
    with invalid("ClipByValue: input #1 \\('clip_value_min'\\) has dtype int32"):
        tf.clip_by_value(tf.constant([1, 5], tf.int64), tf.constant(2), 4)
    with invalid("ClipByValue: clip_value_min of shape \\[3\\] must broadcast"):
        tf.clip_by_value(tf.constant([1.0, 5.0]), [0.0, 6.0, 1.0], 7.0)


def test_bfloat16_results_convert_to_numpy_as_bfloat16():
    # np.asarray(t) must give bfloat16 values, as for TF tensors (not the raw uint16 bits).
    out = np.asarray(tf.range(3, dtype=tf.bfloat16))
    assert out.dtype == tf.bfloat16.as_numpy_dtype
    np.testing.assert_array_equal(out.astype(np.float32), [0, 1, 2])


def test_every_array_op_has_a_tf_api_name():
    from ember.util.dispatch import unwrap  # the public name is the dispatching wrapper around the function

    for name in ["reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack", "split", "slice",
                 "strided_slice", "gather", "tile", "pad", "broadcast_to", "shape", "size", "rank", "identity",
                 "where", "fill", "zeros", "ones", "zeros_like", "ones_like", "eye", "range", "linspace", "one_hot",
                 "clip_by_value"]:
        assert unwrap(getattr(tf, name)) is getattr(array_ops, name), name


# ---- sizes from user input are overflow-checked (issue 12, items 3 and 9)

def test_split_sizes_that_overflow_int64_are_rejected():
    # The sizes wrap around to 6 when summed in int64; the third piece would start outside the buffer.
    x = tf.constant(np.arange(6, dtype=np.float32))
    with invalid("SplitV.*2\\^63"):
        tf.split(x, [2**63 - 1, 2**63 - 1, 8])
    with invalid("SplitV"):
        tf.function(lambda t: tf.split(t, [2**63 - 1, 2**63 - 1, 8]))(x)


def test_split_and_unstack_of_empty_tensors_with_huge_dims():
    pieces = tf.split(tf.zeros([2**40, 0]), [2**39, 2**39])
    assert [p.shape.as_list() for p in pieces] == [[2**39, 0], [2**39, 0]]
    assert [p.shape.as_list() for p in tf.unstack(tf.zeros([0, 2**40]))] == []
    assert [p.shape.as_list() for p in tf.unstack(tf.zeros([3, 2**61, 0]))] == [[2**61, 0]] * 3


def test_unstack_into_billions_of_outputs_is_an_error_not_an_abort():
    with invalid("Unpack.*3037000500.*outputs"):
        tf.unstack(tf.zeros([3037000500, 0]))
    # The same through a GraphDef whose placeholder has the huge dim (the 113-byte reproducer).
    f = tf.function(lambda x: tf.unstack(x)[0])
    gd = f.get_concrete_function(tf.TensorSpec([3, 0], tf.float32)).graph.as_graph_def()
    for node in gd.node:
        if node.op == "Placeholder":
            node.attr["shape"].shape.dim[0].size = 3037000500
        if node.op == "Unpack":
            node.attr["num"].i = -1
    with invalid("Unpack.*3037000500.*outputs"):
        tf.graph_util.import_graph_def(gd.SerializeToString())


@pytest.mark.parametrize("dims", [[2**40, 2**40, 0], [2**62, 2**62], [2**40, 0, 2**40]])
def test_shapes_past_int64_are_invalid_even_when_empty(dims):
    # TensorFlow: "Shape [...] would have more than 2**63 - 1 elements".
    with invalid("exceeds 2\\^63-1"):
        tf.zeros(dims)
    with invalid("exceeds 2\\^63-1"):
        tf.broadcast_to(tf.zeros([1] * len(dims)), dims)
    with invalid("exceeds 2\\^63-1|more than 2\\^63"):
        tf.reshape(tf.zeros([0]), dims)


def test_huge_allocations_are_resource_exhausted():
    with pytest.raises(errors.ResourceExhaustedError):
        tf.zeros([2**40, 2**20])
    with pytest.raises((errors.ResourceExhaustedError, errors.InvalidArgumentError), match="Range"):
        tf.range(0, 2**62, 1, dtype=tf.int64)


def test_tile_and_pad_past_int64_are_invalid():
    with invalid("Tile.*overflows"):
        tf.tile(tf.zeros([2, 2]), [2**62, 2**62])
    with invalid("Pad.*overflows"):
        tf.pad(tf.zeros([2]), [[2**62, 2**62]])


@pytest.mark.parametrize("value, source, target", [
    ([1.0, -2.5], np.float32, tf.int32),  # same size
    ([[1, 2], [3, -4]], np.int16, tf.int32),  # widening consumes the last dim
    ([1, 70000], np.int32, tf.uint8),  # narrowing appends one
    (7, np.int64, tf.int16),  # a scalar narrows to a vector
    ([[1.5, 2.0]], np.float32, tf.complex64),
    ([1.0, 2.0], np.float64, tf.bfloat16),
])
def test_bitcast_matches_tensorflow(value, source, target):
    import tensorflow as real_tf

    got = tf.bitcast(tf.constant(np.array(value, source)), target)
    want = real_tf.bitcast(real_tf.constant(np.array(value, source)), real_tf.as_dtype(target.name))
    assert got.dtype == target and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    staged = tf.function(lambda x: tf.bitcast(x, target))(tf.constant(np.array(value, source)))
    np.testing.assert_array_equal(staged.numpy(), want.numpy())


def test_bitcast_errors():
    with pytest.raises(errors.InvalidArgumentError, match="Bitcast: cannot bitcast from int16 to int32"):
        tf.bitcast(tf.constant(np.array([1, 2, 3], np.int16)), tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match="Bitcast: cannot bitcast from int32 to int64"):
        tf.bitcast(tf.constant(1), tf.int64)
    with pytest.raises((errors.InvalidArgumentError, TypeError), match="Bitcast"):
        tf.bitcast(tf.constant([1.0]), tf.bool)
    # Narrowing adds a dimension: from rank 8, ember's most, that is refused eagerly and when traced (the op
    # fuzzer found the shape written past its 8 dims)
    eight_dims = tf.zeros([1, 1, 2, 1, 1, 1, 1, 2])
    with pytest.raises(errors.InvalidArgumentError, match="Bitcast: .*adds a dimension.*rank 8"):
        tf.bitcast(eight_dims, tf.uint8)
    with pytest.raises(errors.InvalidArgumentError, match="Bitcast.*adds a dimension"):
        tf.function(lambda x: tf.bitcast(x, tf.uint8))(eight_dims)


def test_rint_and_tan_at_the_top_level():
    import tensorflow as real_tf

    x = [0.5, 1.5, 2.5, -0.5, -1.7, 3.2]
    np.testing.assert_array_equal(tf.math.rint(tf.constant(x)).numpy(), real_tf.math.rint(x).numpy())
    np.testing.assert_allclose(tf.tan(tf.constant(x)).numpy(), real_tf.tan(x).numpy(), rtol=1e-6)
    with pytest.raises(errors.InvalidArgumentError, match="Rint"):
        tf.math.rint(tf.constant([1, 2]))

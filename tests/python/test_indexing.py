"""Tensor.__getitem__ (array_ops._slice_helper over StridedSlice), iteration and len() against NumPy basic
indexing, and TensorFlow's rules where they differ from NumPy: a top-level list is a tuple of indices, a
bool tensor or array is a boolean_mask, and anything else that is not an int, slice, ``...`` or ``None``
is a TypeError."""
import numpy as np
import pytest

import ember as tf
from ember import errors
from ember.ops import array_ops

DTYPES = [tf.float32, tf.int64, tf.bool, tf.bfloat16, tf.int8]


def invalid(match):
    """Expects an ember.errors.InvalidArgumentError whose message matches (and so names the op)."""
    return pytest.raises(errors.InvalidArgumentError, match=match)


def make(shape, dtype, rng):
    if dtype == tf.bool:
        x = rng.random(shape) > 0.5
    elif dtype.is_integer:
        x = rng.integers(-100, 100, shape)
    else:
        x = rng.uniform(-10, 10, shape)
    return x.astype(dtype.as_numpy_dtype)


def check(out, expected):
    expected = np.asarray(expected)
    assert isinstance(out, tf.Tensor)
    assert out.dtype == tf.as_dtype(expected.dtype)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy().astype(np.float64), expected.astype(np.float64))


def random_bound(rng, dim):
    """None, or an int that may lie outside [-dim, dim] (slices clamp such bounds)."""
    return None if rng.random() < 0.3 else int(rng.integers(-dim - 3, dim + 4))


def random_key(rng, shape):
    """A NumPy basic index for shape: ints (in range), slices, at most one ``...`` and some ``None``."""
    items, used, ellipsis = [], 0, False
    for _ in range(rng.integers(0, len(shape) + 3)):
        r = rng.random()
        if r < 0.1 and not ellipsis:
            items.append(Ellipsis)
            ellipsis = True
        elif r < 0.2 and len(shape) + sum(i is None for i in items) < 7:  # results stay within rank 8
            items.append(None)
        elif used < len(shape):
            # With an ellipsis before it, an item indexes one of the last dims; any of them is a valid size
            # for a slice, and an int must fit the dim it lands on, so ints only come before an ellipsis.
            dim = shape[used]
            if r < 0.45 and dim > 0 and not ellipsis:
                items.append(int(rng.integers(-dim, dim)))
            else:
                step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
                items.append(slice(random_bound(rng, dim), random_bound(rng, dim), step))
            used += 1
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]  # a bare key, not a tuple
    return tuple(items)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_random_basic_indexing_matches_numpy(dtype, rng):
    for _ in range(300):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(0, 5, rank))
        x = make(shape, dtype, rng)
        key = random_key(rng, shape)
        check(tf.constant(x, dtype=dtype)[key], x[key])


def test_index_forms_tf_accepts():
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    t = tf.constant(x)
    for index in (1, -1, np.int64(2), np.uint8(1), np.array(1), tf.constant(1), tf.constant(-2, tf.int64),
                  tf.constant(1, tf.int16)):
        check(t[index], x[int(index)])
        check(t[:, index], x[:, int(index)])
    check(t[tf.constant(1):tf.constant(3, tf.int64), ::tf.constant(-1)], x[1:3, ::-1])
    check(t[np.int64(0):np.array(2), np.int32(1)], x[0:2, 1])
    check(t[0, None:2], x[0, :2])
    check(t[()], x)
    check(t[...], x)
    check(t[None], x[None])
    check(t[..., None], x[..., None])
    check(t[1, ..., 2], x[1, ..., 2])
    check(t[None, 1, None, ..., None, -1], x[None, 1, None, ..., None, -1])
    s = tf.constant(5)
    check(s[()], np.int32(5))
    check(s[...], np.int32(5))
    check(s[None], np.array([5], np.int32))
    check(s[None, ...], np.array([5], np.int32))
    check(tf.zeros([0, 3])[:, 1], np.zeros(0, np.float32))
    check(tf.zeros([0, 3])[5:, ::-1], np.zeros((0, 3), np.float32))


def test_top_level_list_is_a_tuple_of_indices():
    # TF reads t[[a, b]] as t[a, b] (NumPy would gather); a list inside a tuple is an error.
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = tf.constant(x)
    check(t[[0, 1]], x[0, 1])
    check(t[[-1]], x[-1])
    check(t[[]], x)
    check(t[[0, slice(None, None, -1), None]], x[0, ::-1, None])
    check(t[[0, Ellipsis, 1]], x[0, ..., 1])
    check(t[[tf.constant(1), 2]], x[1, 2])
    check(t[0, True], x[0, 1])  # inside a tuple a Python bool is an int, as in TF
    with pytest.raises(TypeError, match="valid indices, got \\[1\\]"):
        t[0, [1]]
    with pytest.raises(TypeError, match="valid indices, got \\[0, 1\\]"):
        t[[[0, 1]]]
    with invalid("StridedSlice: indices must be integers, got booleans"):
        t[[True, False]]
    with invalid("StridedSlice: indices must be integers, got booleans"):
        t[(True,)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_bool_mask_keys(dtype, rng):
    x = make((2, 3, 4), dtype, rng)
    t = tf.constant(x, dtype=dtype)
    for mask_shape in [(2,), (2, 3), (2, 3, 4)]:
        mask = rng.random(mask_shape) > 0.5
        check(t[tf.constant(mask)], x[mask])
        check(t[mask], x[mask])
        check(array_ops.boolean_mask(t, mask), x[mask])
    check(t[tf.zeros([2, 3], tf.bool)], np.zeros((0, 4), x.dtype))
    check(t[tf.ones([2, 3, 4], tf.bool)], x.reshape(-1))
    mask = np.array([True, False, True])
    check(array_ops.boolean_mask(t, mask, axis=1), x[:, mask])
    mask = [[True, False, False, True]] * 3
    check(array_ops.boolean_mask(t, mask, axis=-2), x[:, np.array(mask)])


def test_bool_mask_errors():
    t = tf.zeros([2, 3, 4])
    for key in (True, False, tf.constant(True), np.array(True)):
        with pytest.raises(ValueError, match="boolean_mask: mask cannot be scalar"):
            t[key]
    with pytest.raises(ValueError, match="boolean_mask: shapes \\(2,\\) and \\(3,\\) are incompatible"):
        t[tf.constant([True, False, True])]
    with pytest.raises(ValueError, match="boolean_mask: shapes \\(2,\\) and \\(3,\\) are incompatible"):
        t[np.zeros(3, bool)]
    # Only a top-level mask is a mask; inside a tuple a bool tensor is an invalid index.
    with pytest.raises(TypeError, match="valid indices"):
        t[tf.constant([True, False]), 0]


def test_index_out_of_range_names_the_index():
    t = tf.reshape(tf.range(24), [2, 3, 4])
    for key, message in [(2, "index 2 is out of bounds for axis 0 with size 2"),
                         (-3, "index -3 is out of bounds for axis 0 with size 2"),
                         ((0, 3), "index 3 is out of bounds for axis 1 with size 3"),
                         ((slice(None), -4), "index -4 is out of bounds for axis 1 with size 3"),
                         ((Ellipsis, 4), "index 4 is out of bounds for axis 2 with size 4"),
                         ((None, 2), "index 2 is out of bounds for axis 0 with size 2"),
                         ((slice(None), None, 3), "index 3 is out of bounds for axis 1 with size 3"),
                         (tf.constant(2), "index 2 is out of bounds for axis 0 with size 2")]:
        with invalid(f"StridedSlice: {message}"):
            t[key]
    with invalid("StridedSlice: index 0 is out of bounds for axis 0 with size 0"):
        tf.zeros([0, 3])[0]
    with invalid("StridedSlice: too many indices for a tensor of rank 3"):
        t[0, 0, 0, 0]
    with invalid("StridedSlice: too many indices for a tensor of rank 3"):
        t[:, :, :, :]
    for key in (0, slice(None)):
        with invalid("StridedSlice: too many indices for a tensor of rank 0"):
            tf.constant(5)[key]
    with invalid("StridedSlice: at most one ellipsis"):
        t[..., ..., 1]
    with invalid("StridedSlice: strides\\[0\\] must be non-zero"):
        t[::0]
    with invalid("StridedSlice: strides\\[1\\] must be non-zero"):
        t[0, ::tf.constant(0)]


@pytest.mark.parametrize("key", [1.0, np.float32(1.0), tf.constant(1.0), tf.constant([1]), tf.constant(1, tf.uint8),
                                 np.array([1]), np.bool_(True), "a", {}, (0, 1.5), (slice(1.0, None),),
                                 (slice(None, 2.0),), (slice(None, None, 2.0),), (0, slice(tf.constant([1]), 2)),
                                 (0, slice(tf.constant(1.0), 2)), (slice(None, None, "x"),)],
                         ids=repr)
def test_unsupported_keys_are_type_errors(key):
    with pytest.raises(TypeError, match="Only integers, slices \\(`:`\\), ellipsis \\(`...`\\), tf.newaxis "
                                        "\\(`None`\\) and scalar tf.int32/tf.int64 tensors are valid indices, got"):
        tf.reshape(tf.range(24), [2, 3, 4])[key]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_iteration_and_len(dtype, rng):
    x = make((3, 2, 2), dtype, rng)
    t = tf.constant(x, dtype=dtype)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    for row, expected in zip(rows, x):
        check(row, expected)
    first, second, third = t  # unpacking iterates
    check(third, x[2])
    assert [len(r) for r in t] == [2, 2, 2]
    check(tf.stack([row for row in t]), x)
    empty = tf.zeros([0, 2], dtype)
    assert len(empty) == 0 and list(empty) == []
    assert len(tf.zeros([4], dtype)) == 4
    check(list(tf.constant(x[:, 0, 0], dtype=dtype))[1], x[1, 0, 0])


def test_scalars_have_no_len_or_iteration():
    with pytest.raises(TypeError):
        len(tf.constant(1))
    with pytest.raises(TypeError, match="Cannot iterate over a scalar tensor"):
        iter(tf.constant(1))
    with pytest.raises(TypeError, match="Cannot iterate over a scalar tensor"):
        list(tf.constant(1.0))


def test_strided_slice_with_masks_matches_numpy(rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    t = tf.constant(x)
    check(tf.strided_slice(t, [1, 0, 0], [3, 5, 6], [1, 2, 3]), x[1:3, 0:5:2, 0:6:3])
    check(tf.strided_slice(t, [3, -1], [0, 0], [-1, -2]), x[3:0:-1, -1:0:-2])
    check(tf.strided_slice(t, [0, 1], [0, 4], begin_mask=1, end_mask=1), x[:, 1:4])
    check(tf.strided_slice(t, [2, 0], [3, 0], shrink_axis_mask=1, ellipsis_mask=2), x[2, ...])
    check(tf.strided_slice(t, [0, 1], [0, 2], new_axis_mask=1, shrink_axis_mask=2), x[None, 1])
    check(tf.strided_slice(t, tf.constant([1]), tf.constant([-1]), tf.constant([2])), x[1:-1:2])
    with invalid("StridedSlice: begin must be integers"):
        tf.strided_slice(t, [1.0], [2])

"""tf.nn.space_to_depth/depth_to_space, tf.space_to_batch_nd/batch_to_space and tf.nn.atrous_conv2d
(python/ember/ops/space_batch_ops.py) against TensorFlow 2.21: values and gradients eagerly, in a function and
with an unknown batch, and TensorFlow's errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em
from tf_differential import values_and_gradient

RNG = np.random.default_rng(8)


def _compare(fn, x, unknown=None, tol=1e-5):
    theirs = values_and_gradient(fn, x, tf)
    for mode in ["eager", "traced"] + (["unknown"] if unknown else []):
        for o, t in zip(values_and_gradient(fn, x, em, mode, unknown), theirs):
            assert o.shape == t.shape and o.dtype == t.dtype
            np.testing.assert_allclose(o, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("block", [2, 3])
def test_space_to_depth_and_back(block):
    x = RNG.standard_normal((2, 6, 12, 5)).astype(np.float32)
    _compare(lambda m, v: m.nn.space_to_depth(v, block), x, unknown=[None, 6, 12, 5])
    _compare(lambda m, v: m.nn.depth_to_space(v, block), x.reshape(2, 6, 5, 12)[..., :9 if block == 3 else 12],
             unknown=[None, 6, 5, 9 if block == 3 else 12])


def test_nchw_is_the_nhwc_result_transposed():
    x = RNG.standard_normal((2, 4, 6, 3)).astype(np.float32)
    nchw = em.nn.space_to_depth(np.transpose(x, [0, 3, 1, 2]), 2, data_format="NCHW").numpy()
    np.testing.assert_array_equal(np.transpose(nchw, [0, 2, 3, 1]), tf.nn.space_to_depth(x, 2).numpy())
    back = em.nn.depth_to_space(nchw, 2, data_format="NCHW").numpy()
    np.testing.assert_array_equal(back, np.transpose(x, [0, 3, 1, 2]))


@pytest.mark.parametrize("shape,block,pads", [
    ((2, 5, 6, 3), [2, 3], [[1, 0], [0, 0]]), ((1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]]),
    ((3, 5, 2), [3], [[2, 2]]), ((2, 3, 4, 5, 2), [1, 2, 5], [[0, 0], [1, 1], [3, 2]])])
def test_space_to_batch_and_back(shape, block, pads):
    x = RNG.standard_normal(shape).astype(np.float32)
    _compare(lambda m, v: m.space_to_batch_nd(v, block, pads), x, unknown=[None] + list(shape[1:]))
    _compare(lambda m, v: m.space_to_batch(v, block, pads), x)
    batched = tf.space_to_batch_nd(x, block, pads).numpy()
    _compare(lambda m, v: m.batch_to_space(v, block, pads), batched, unknown=[None] + list(batched.shape[1:]))
    _compare(lambda m, v: m.nn.space_to_batch(v, block, m.constant(pads)), x)


@pytest.mark.parametrize("rate", [1, 2, 3])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_atrous_conv2d(rate, padding):
    x = RNG.standard_normal((2, 9, 10, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    _compare(lambda m, v: m.nn.atrous_conv2d(v, w, rate, padding), x, tol=1e-4)


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.space_to_depth(np.zeros([1, 5, 4, 1], np.float32), 2),
    lambda m: m.nn.space_to_depth(np.zeros([1, 4, 4, 1], np.float32), 1),
    lambda m: m.nn.space_to_depth(np.zeros([4, 4, 1], np.float32), 2),
    lambda m: m.nn.depth_to_space(np.zeros([1, 4, 4, 3], np.float32), 2),
    lambda m: m.space_to_batch_nd(np.zeros([1, 5, 4, 1], np.float32), [2, 2], [[0, 0], [0, 0]]),
    lambda m: m.space_to_batch_nd(np.zeros([2, 5, 3], np.float32), [2], [[1, -1]]),
    lambda m: m.space_to_batch_nd(np.zeros([2, 5, 3], np.float32), [0], [[1, 0]]),
    lambda m: m.space_to_batch_nd(np.zeros([2, 5, 3], np.float32), [2, 1, 1], [[1, 0], [0, 0], [0, 0]]),
    lambda m: m.space_to_batch_nd(np.zeros([2, 5, 3], np.float32), [2], [[1, 0], [0, 0]]),
    lambda m: m.batch_to_space(np.zeros([3, 5, 4, 1], np.float32), [2, 2], [[0, 1], [0, 0]]),
    lambda m: m.nn.atrous_conv2d(np.zeros([1, 5, 4, 1], np.float32), np.zeros([2, 2, 1, 1], np.float32), 0, "SAME"),
])
def test_errors_match_tensorflow(fn):
    with pytest.raises(Exception) as theirs:
        fn(tf)
    with pytest.raises(Exception) as ours:
        fn(em)
    assert type(ours.value).__name__ == type(theirs.value).__name__, (ours.value, theirs.value)
    assert isinstance(ours.value, (ValueError, em.errors.OpError))

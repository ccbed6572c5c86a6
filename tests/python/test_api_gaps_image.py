"""tf.image.rot90, transpose and the YIQ/YUV conversions (python/ember/image.py, ops/image_color_ops.py)
against TensorFlow 2.21: values, dtypes, shapes, eager and inside ember.function, gradients, errors."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def _same(ours, theirs, rtol=0.0):
    assert ours.dtype.name == theirs.dtype.name and tuple(ours.shape) == tuple(theirs.shape)
    if rtol:
        np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), np.asarray(theirs.numpy(), np.float64),
                                   rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("shape", [(3, 4, 2), (2, 3, 4, 1)])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, -1, -3, 7])
def test_rot90(shape, k):
    x = np.arange(np.prod(shape)).reshape(shape).astype(np.float32)
    theirs = real_tf.image.rot90(real_tf.constant(x), k=k)
    _same(em.image.rot90(em.constant(x), k=k), theirs)
    _same(em.image.rot90(em.constant(x), k=em.constant(k)), theirs)
    _same(em.function(lambda v, kk: em.image.rot90(v, kk))(em.constant(x), em.constant(k)), theirs)
    _same(em.function(lambda v: em.image.rot90(v, k))(em.constant(x)), theirs)


def test_rot90_gradient_and_errors():
    x = np.arange(12.0).reshape(1, 3, 4, 1)
    w = np.random.default_rng(0).normal(size=(1, 4, 3, 1))
    xe, xt = em.Variable(x), real_tf.Variable(x)
    with em.GradientTape() as t1:
        y1 = em.reduce_sum(em.image.rot90(xe, 3) * w)
    with real_tf.GradientTape() as t2:
        y2 = real_tf.reduce_sum(real_tf.image.rot90(xt, 3) * w)
    np.testing.assert_array_equal(t1.gradient(y1, xe).numpy(), t2.gradient(y2, xt).numpy())
    for bad in (np.zeros([3, 4]), np.zeros([1, 1, 3, 4, 1])):
        with pytest.raises(ValueError):
            real_tf.image.rot90(bad)
        with pytest.raises(ValueError):
            em.image.rot90(bad)
    with pytest.raises(TypeError):
        real_tf.image.rot90(np.zeros([1, 3, 4, 1]), k=1.5)
    with pytest.raises((TypeError, ValueError)):
        em.image.rot90(np.zeros([1, 3, 4, 1]), k=1.5)


@pytest.mark.parametrize("shape", [(3, 4, 2), (2, 3, 4, 1)])
def test_transpose(shape):
    x = np.arange(np.prod(shape)).reshape(shape).astype(np.int32)
    theirs = real_tf.image.transpose(real_tf.constant(x))
    _same(em.image.transpose(em.constant(x)), theirs)
    _same(em.function(em.image.transpose)(em.constant(x)), theirs)
    with pytest.raises(ValueError):
        real_tf.image.transpose(np.zeros([2, 2]))
    with pytest.raises(ValueError):
        em.image.transpose(np.zeros([2, 2]))


CONVERSIONS = ["rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb"]


@pytest.mark.parametrize("name", CONVERSIONS)
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-7), (np.float64, 1e-15), (np.float16, 1e-3)])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (2, 2, 3, 3), (3,)])
def test_color_conversions(name, dtype, rtol, shape):
    x = np.random.default_rng(1).uniform(size=shape).astype(dtype)
    theirs = getattr(real_tf.image, name)(real_tf.constant(x))
    _same(getattr(em.image, name)(em.constant(x)), theirs, rtol)
    _same(em.function(getattr(em.image, name))(em.constant(x)), theirs, rtol)


@pytest.mark.parametrize("name", CONVERSIONS)
def test_color_conversion_gradients_and_errors(name):
    x = np.random.default_rng(2).uniform(size=(2, 3, 3))
    w = np.random.default_rng(3).normal(size=(2, 3, 3))
    xe, xt = em.Variable(x), real_tf.Variable(x)
    with em.GradientTape() as t1:
        y1 = em.reduce_sum(getattr(em.image, name)(xe) * w)
    with real_tf.GradientTape() as t2:
        y2 = real_tf.reduce_sum(getattr(real_tf.image, name)(xt) * w)
    np.testing.assert_allclose(t1.gradient(y1, xe).numpy(), t2.gradient(y2, xt).numpy(), rtol=1e-14)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        getattr(real_tf.image, name)(real_tf.zeros([2, 4]))
    with pytest.raises(errors.InvalidArgumentError):
        getattr(em.image, name)(em.zeros([2, 4]))
    with pytest.raises(TypeError):
        getattr(real_tf.image, name)(real_tf.zeros([2, 3], real_tf.int32))
    with pytest.raises(TypeError):
        getattr(em.image, name)(em.zeros([2, 3], em.int32))

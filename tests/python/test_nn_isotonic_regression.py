"""tf.nn.isotonic_regression (IsotonicRegression, src/ember/ops/nn_isotonic.cc) against TensorFlow 2.21:
values and segments in every dtype TensorFlow takes, both directions, every axis, ties, infinities and NaN,
the gradient (TensorFlow's segment-mean rule) and finite differences, eager against ember.function, and
errors naming the op."""

import ml_dtypes
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def _draw(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 5, shape).astype(dtype)
    v = rng.normal(size=shape)
    v[rng.random(shape) < 0.3] = 0.5  # ties
    return v.astype(dtype)


def _check(ours, theirs, dtype):
    for o, t in zip(ours, theirs):
        assert o.dtype.name == t.dtype.name and o.shape == t.shape
        a, b = np.asarray(o.numpy(), np.float64), np.asarray(t.numpy(), np.float64)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int16,
                                   np.int32, np.int64])
@pytest.mark.parametrize("decreasing", [True, False])
def test_values_and_segments_match_tensorflow(dtype, decreasing):
    rng = np.random.default_rng(4)
    for shape, axis in (((5, 9), -1), ((4, 6), 0), ((2, 3, 7), 1), ((12,), 0), ((3, 0), -1), ((0, 4), 1)):
        x = _draw(rng, shape, dtype)
        ours = em.nn.isotonic_regression(em.constant(x), decreasing=decreasing, axis=axis)
        theirs = real_tf.nn.isotonic_regression(real_tf.constant(x), decreasing=decreasing, axis=axis)
        _check(ours, theirs, dtype)


def test_special_values_and_raw_op():
    x = np.array([[np.inf, 1.0, -np.inf, np.nan, 3.0], [1e8, 1e8 + 1, 3.0, 5.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0],
                  [np.nan, 1.0, 0.0, 2.0, -1.0]], np.float32)
    _check(em.raw_ops.IsotonicRegression(input=em.constant(x)),
           real_tf.raw_ops.IsotonicRegression(input=real_tf.constant(x)), np.float32)
    _check(em.raw_ops.IsotonicRegression(input=em.constant(3.0)),
           real_tf.raw_ops.IsotonicRegression(input=real_tf.constant(3.0)), np.float32)
    _check(em.raw_ops.IsotonicRegression(input=em.constant([[3, 1, 2]]), output_dtype=em.float64),
           real_tf.raw_ops.IsotonicRegression(input=real_tf.constant([[3, 1, 2]]), output_dtype=real_tf.float64),
           np.float64)


def test_traced_matches_eager():
    x = em.constant(np.random.default_rng(2).normal(size=(3, 8)).astype(np.float32))
    fn = em.function(lambda v: em.nn.isotonic_regression(v, decreasing=False, axis=0))
    for o, e in zip(fn(x), em.nn.isotonic_regression(x, decreasing=False, axis=0)):
        np.testing.assert_array_equal(o.numpy(), e.numpy())
    out = fn.get_concrete_function(em.TensorSpec([None, 8], em.float32)).structured_outputs
    assert out[0].shape.as_list() == [None, 8] and out[1].dtype == em.int32


@pytest.mark.parametrize("decreasing,axis", [(True, -1), (False, -1), (True, 0)])
def test_gradient_matches_tensorflow_and_finite_differences(decreasing, axis):
    rng = np.random.default_rng(9)
    x = rng.normal(size=(4, 7))
    w = rng.normal(size=(4, 7))

    def ours(v):
        with em.GradientTape() as tape:
            tape.watch(v)
            loss = em.reduce_sum(em.nn.isotonic_regression(v, decreasing=decreasing, axis=axis)[0] * w)
        return tape.gradient(loss, v)

    tx = real_tf.constant(x)
    with real_tf.GradientTape() as tape:
        tape.watch(tx)
        loss = real_tf.reduce_sum(real_tf.nn.isotonic_regression(tx, decreasing=decreasing, axis=axis)[0] * w)
    expected = tape.gradient(loss, tx).numpy()
    np.testing.assert_allclose(ours(em.constant(x)).numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(em.function(ours)(em.constant(x)).numpy(), expected, rtol=1e-12, atol=1e-12)
    # The pooling is locally constant, so a central difference along a random direction is exact up to
    # rounding.
    probe = rng.normal(size=x.shape)
    eps = 1e-6

    def f(v):
        return float(np.sum(em.nn.isotonic_regression(em.constant(v), decreasing=decreasing,
                                                       axis=axis)[0].numpy() * w))

    numeric = (f(x + eps * probe) - f(x - eps * probe)) / (2 * eps)
    assert numeric == pytest.approx(float(np.sum(expected * probe)), rel=1e-6, abs=1e-8)


def test_errors_name_the_op():
    with pytest.raises((real_tf.errors.NotFoundError, real_tf.errors.InvalidArgumentError)):
        real_tf.raw_ops.IsotonicRegression(input=real_tf.constant([[1.0]], real_tf.float64))
    with pytest.raises(errors.InvalidArgumentError, match="IsotonicRegression: a float64 input needs output_dtype "
                                                          "float64, got float32"):
        em.raw_ops.IsotonicRegression(input=em.constant([[1.0]], em.float64))
    with pytest.raises(errors.InvalidArgumentError, match="IsotonicRegression"):
        em.raw_ops.IsotonicRegression(input=em.constant([[1]], em.uint8))
    with pytest.raises(errors.InvalidArgumentError, match="isotonic_regression: axis 2"):
        em.nn.isotonic_regression(em.constant([[1.0]]), axis=2)

"""tf.linalg.sqrtm and tf.linalg.logm (the MatrixSquareRoot and MatrixLogarithm ops, src/ember/ops/linalg_schur.cc)
against TensorFlow 2.21: float32, float64 (sqrtm), complex64, complex128, batches, TensorFlow's NaN for a
matrix without a root or logarithm, sqrtm's gradient (TensorFlow's Sylvester rule, and finite differences),
unknown dims inside functions; logm, as TensorFlow's, is complex only and not differentiable."""
import numpy as np
import pytest

import ember as tf
from ember import errors
from linalg_testing import both, check_finite_differences, check_traced_like_eager, loss_gradient

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}


def _matrix(rng, shape, dtype):
    a = rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a.astype(dtype)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_sqrtm_matches_tensorflow(dtype, shape, rng):
    a = _matrix(rng, shape, dtype)
    ours, theirs = both(lambda m: m.linalg.sqrtm(a))
    assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(ours.numpy() @ ours.numpy(), a, rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


def test_special_matrices_as_tensorflow():
    cases = [np.array([[-1.0, 0.0], [0.0, 1.0]]),  # a negative eigenvalue: no real root, NaN
             np.array([[0.0, 1.0], [-1.0, 0.0]]),  # eigenvalues +-i: a real root
             np.array([[0.0, 1.0], [0.0, 0.0]]),  # nilpotent: no root, inf and NaN
             np.array([[np.nan, 0.0], [0.0, 1.0]])]
    for a in cases:
        ours, theirs = both(lambda m: m.linalg.sqrtm(a))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: d.__name__)
def test_gradient_matches_tensorflow_and_finite_differences(dtype, rng):
    fn = lambda m, x: m.linalg.sqrtm(x)  # noqa: E731
    x = _matrix(rng, (2, 3, 3), dtype)
    (_, ours), (_, theirs) = both(lambda m: loss_gradient(m, fn, x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-9)
    if dtype == np.float64:  # TensorFlow's complex rule uses transposes, not the adjoints a real loss needs
        check_finite_differences(fn, x, ours.numpy(), rng.uniform(-1, 1, x.shape))


def test_unknown_dims_in_a_function_match_eager(rng):
    fn = lambda m, x: m.linalg.sqrtm(x)  # noqa: E731
    x = _matrix(rng, (2, 3, 3), np.float64)
    check_traced_like_eager(fn, x, tf.float64, rtol=1e-10, atol=1e-12)


def test_non_square_input_is_refused():
    with pytest.raises(errors.InvalidArgumentError, match=r"MatrixSquareRoot: input must be square .*\[2,3\]"):
        tf.linalg.sqrtm(np.ones((2, 3)))


# ---- logm


@pytest.mark.parametrize("scale", [0.3, 1.0, 20.0])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: d.__name__)
def test_logm_matches_tensorflow(dtype, shape, scale, rng):
    a = (scale * (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)) + np.eye(shape[-1])).astype(dtype)
    ours, theirs = both(lambda m: m.linalg.logm(a))
    assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape
    tol = TOL[dtype] * max(1.0, float(np.abs(theirs.numpy()).max(initial=0.0)))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(tf.linalg.expm(ours).numpy(), a, rtol=100 * TOL[dtype], atol=100 * TOL[dtype] * scale)


def test_logm_special_matrices_as_tensorflow():
    cases = [np.array([[-1.0, 0.0], [0.0, 0.0]]),  # singular: NaN
             np.array([[0.0, 1.0], [-1.0, 0.0]]),  # a rotation
             np.array([[-2.0, 0.0], [0.0, 3.0]]),  # a negative eigenvalue: the principal branch, log 2 + i pi
             np.eye(3)]
    for a in cases:
        ours, theirs = both(lambda m: m.linalg.logm(a.astype(np.complex128)))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_logm_in_a_function_matches_eager(rng):
    a = rng.uniform(-1, 1, (2, 3, 3)) + 1j * rng.uniform(-1, 1, (2, 3, 3)) + 2 * np.eye(3)

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.complex128)])
    def traced(v):
        return tf.linalg.logm(v)

    np.testing.assert_allclose(traced(tf.constant(a)).numpy(), tf.linalg.logm(a).numpy(), rtol=1e-14)


def test_logm_refuses_real_input_and_has_no_gradient():
    with pytest.raises(errors.InvalidArgumentError, match="MatrixLogarithm"):
        tf.linalg.logm(np.eye(2))
    x = tf.constant(np.eye(2, dtype=np.complex128) * 2)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.abs(tf.linalg.logm(x)))
    assert tape.gradient(loss, x) is None  # TensorFlow 2.21: LookupError, no gradient registered

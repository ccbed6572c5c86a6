"""tf.linalg.tridiagonal_solve (the TridiagonalSolve op, src/ember/ops/linalg_tridiagonal.cc) against
TensorFlow 2.21: float32, float64, complex64, complex128, with and without partial pivoting, the compact,
sequence and matrix formats, vector, transposed and conjugated right-hand sides, batches, singular matrices,
TensorFlow's gradient (and finite differences), unknown dims inside functions, errors."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors
from linalg_testing import check_finite_differences, check_traced_like_eager, loss_gradient

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}


def _both(fn):
    """fn(module, to_tensor) with ember and TensorFlow (whose tridiagonal_solve wants tensors)."""
    return fn(tf, tf.constant), fn(real_tf, real_tf.constant)


def _diagonals(rng, shape, dtype, dominant=3.0):
    d = rng.uniform(-1, 1, shape)
    d[..., 1, :] += dominant
    if np.issubdtype(dtype, np.complexfloating):
        d = d + 1j * rng.uniform(-1, 1, shape)
    return d.astype(dtype)


def _rhs(rng, shape, dtype):
    b = rng.uniform(-1, 1, shape)
    if np.issubdtype(dtype, np.complexfloating):
        b = b + 1j * rng.uniform(-1, 1, shape)
    return b.astype(dtype)


@pytest.mark.parametrize("pivoting", [True, False])
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 3, 4), (3, 1)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_values_match_tensorflow(dtype, shape, pivoting, rng):
    # A weak diagonal, so partial pivoting does exchange rows.
    d = _diagonals(rng, shape, dtype, dominant=0.2)
    b = _rhs(rng, shape[:-2] + (shape[-1], 2), dtype)
    ours, theirs = _both(lambda m, c: m.linalg.tridiagonal_solve(c(d), c(b), partial_pivoting=pivoting))
    assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=100 * TOL[dtype], atol=100 * TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: d.__name__)
def test_formats_and_right_hand_sides_match_tensorflow(dtype, rng):
    d = _diagonals(rng, (2, 3, 4), dtype)
    matrix = np.zeros((2, 4, 4), dtype)
    for i in range(4):
        matrix[:, i, i] = d[:, 1, i]
        if i + 1 < 4:
            matrix[:, i, i + 1] = d[:, 0, i]
            matrix[:, i + 1, i] = d[:, 2, i + 1]
    b, bt, v = _rhs(rng, (2, 4, 3), dtype), _rhs(rng, (2, 3, 4), dtype), _rhs(rng, (2, 4), dtype)
    cases = {
        "matrix": lambda m, c: m.linalg.tridiagonal_solve(c(matrix), c(b), diagonals_format="matrix"),
        "sequence": lambda m, c: m.linalg.tridiagonal_solve((c(d[:, 0]), c(d[:, 1]), c(d[:, 2])), c(b),
                                                             diagonals_format="sequence"),
        "short_sequence": lambda m, c: m.linalg.tridiagonal_solve((c(d[:, 0, :-1]), c(d[:, 1]), c(d[:, 2, 1:])),
                                                                   c(b), diagonals_format="sequence"),
        "vector": lambda m, c: m.linalg.tridiagonal_solve(c(d), c(v), conjugate_rhs=True),
        "transposed": lambda m, c: m.linalg.tridiagonal_solve(c(d), c(bt), transpose_rhs=True),
        "transposed_conjugated": lambda m, c: m.linalg.tridiagonal_solve(c(d), c(bt), transpose_rhs=True,
                                                                          conjugate_rhs=True),
    }
    for name, fn in cases.items():
        ours, theirs = _both(fn)
        assert ours.shape == theirs.shape, name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(matrix @ cases["matrix"](tf, tf.constant).numpy(), b, atol=1e-12)


def test_singular_matrices_as_tensorflow():
    singular = np.zeros((3, 3))
    zero_first_pivot = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])  # invertible
    for d in (singular, zero_first_pivot):
        for pivoting in (True, False):
            ours, theirs = _both(lambda m, c: m.linalg.tridiagonal_solve(c(d), c(np.ones((3, 1))),
                                                                          partial_pivoting=pivoting))
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    ours, theirs = _both(lambda m, c: m.linalg.tridiagonal_solve(c(zero_first_pivot), c(np.ones((3, 1))),
                                                                  perturb_singular=True))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(errors.UnimplementedError, match="perturb_singular"):
        tf.linalg.tridiagonal_solve(singular, np.ones((3, 1)), perturb_singular=True)


@pytest.mark.parametrize("pivoting", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: d.__name__)
def test_gradients_match_tensorflow_and_finite_differences(dtype, pivoting, rng):
    def fn(m, x):
        return m.linalg.tridiagonal_solve(x[..., :3, :], m.linalg.matrix_transpose(x[..., 3:, :]),
                                          partial_pivoting=pivoting)

    x = np.concatenate([_diagonals(rng, (2, 3, 4), dtype), _rhs(rng, (2, 2, 4), dtype)], axis=-2)
    (_, ours), (_, theirs) = loss_gradient(tf, fn, x), loss_gradient(real_tf, fn, x)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    if dtype == np.float64:  # TensorFlow's complex rule uses transposes, not adjoints
        direction = rng.uniform(-1, 1, x.shape)
        direction[..., 0, -1] = direction[..., 2, 0] = 0  # the unused corner entries
        check_finite_differences(fn, x, ours.numpy(), direction)
    check_traced_like_eager(fn, x, tf.as_dtype(dtype), rtol=1e-10, atol=1e-12)


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="Expected 3 diagonals got 2"):
        tf.linalg.tridiagonal_solve(np.ones((2, 4)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="Batch shapes"):
        tf.linalg.tridiagonal_solve(np.ones((2, 3, 3)), np.ones((1, 3, 1)))
    with pytest.raises(ValueError, match="left-hand sided and right-hand sides"):
        tf.linalg.tridiagonal_solve(np.ones((3, 3)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="Unrecognized diagonals_format"):
        tf.linalg.tridiagonal_solve(np.ones((3, 3)), np.ones((3, 1)), diagonals_format="banded")
    with pytest.raises(ValueError, match="sequence of length 3"):
        tf.linalg.tridiagonal_solve([np.ones(3)], np.ones((3, 1)), diagonals_format="sequence")

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float64), tf.TensorSpec(None, tf.float64)])
    def unknown_ranks(d, b):
        return tf.linalg.tridiagonal_solve(d, b)

    with pytest.raises(errors.InvalidArgumentError, match=r"TridiagonalSolve.*: expected diagonals \[\.\.\., 3, M\]"):
        unknown_ranks(tf.ones((2, 3), tf.float64), tf.ones((3, 1), tf.float64))

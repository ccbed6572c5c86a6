"""MatMul through tf.linalg.matmul, tf.matmul and ``@`` against NumPy for every dtype it declares:
transposes and adjoints, batch broadcasting, a 1024x1024 product, errors that name the op and show the
shapes; and the tf.linalg helpers built on it (matvec, matrix_transpose, tensordot, norm, ...)."""
import numpy as np
import pytest

import ember as tf
from ember import _C, errors

MATMUL_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64]
UNSUPPORTED = [tf.int8, tf.int16, tf.uint8, tf.bool]

# Per-dtype tolerance relative to the size of the terms: 16-bit floats accumulate in float32 and round
# once, so the error is about one rounding of the output dtype.
TOL = {tf.float16: 2e-3, tf.bfloat16: 1.6e-2, tf.float32: 1e-5, tf.float64: 1e-12}


def _operand(dtype, rng, shape):
    """Random values exactly representable in ``dtype``, as float64 (small integers for int dtypes)."""
    if dtype.is_integer:
        return rng.integers(-10, 11, shape).astype(np.float64)
    return rng.uniform(-1, 1, shape).astype(dtype.as_numpy_dtype).astype(np.float64)


def _assert_product(actual, expected, dtype, k, msg=""):
    actual = actual.numpy() if isinstance(actual, tf.Tensor) else actual
    assert actual.shape == expected.shape, msg
    if dtype.is_integer:
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype), err_msg=msg)
        return
    tol = TOL[dtype]
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol * max(1.0, np.sqrt(k)),
                               err_msg=msg)


def _t(x):
    return np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (2, 3, 4), (5, 1, 7), (17, 33, 9), (64, 128, 48)])
def test_matmul_against_numpy(dtype, m, k, n, rng):
    a = _operand(dtype, rng, (m, k))
    b = _operand(dtype, rng, (k, n))
    ta, tb = tf.constant(a, dtype), tf.constant(b, dtype)
    for fn in (tf.linalg.matmul, tf.matmul, lambda x, y: x @ y):
        out = fn(ta, tb)
        assert out.dtype == dtype
        _assert_product(out, a @ b, dtype, k)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=lambda d: d.name)
def test_transpose_and_adjoint(dtype, rng):
    a = _operand(dtype, rng, (3, 5))
    b = _operand(dtype, rng, (5, 4))
    for a_flag in (None, "transpose_a", "adjoint_a"):
        for b_flag in (None, "transpose_b", "adjoint_b"):
            x = _t(a) if a_flag else a
            y = _t(b) if b_flag else b
            kwargs = {f: True for f in (a_flag, b_flag) if f}
            out = tf.linalg.matmul(tf.constant(x, dtype), tf.constant(y, dtype), **kwargs)
            _assert_product(out, a @ b, dtype, 5, str(kwargs))


def test_transpose_with_batch_dims(rng):
    a = rng.standard_normal((2, 4, 3))
    b = rng.standard_normal((2, 5, 4))
    out = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=True, transpose_b=True)
    _assert_product(out, _t(a) @ _t(b), tf.float64, 4)
    out = tf.matmul(tf.constant(a), tf.constant(b), adjoint_a=True, adjoint_b=True)
    _assert_product(out, _t(a) @ _t(b), tf.float64, 4)


def test_transpose_and_adjoint_together_is_a_value_error():
    x = tf.ones([2, 2])
    with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a` can be True"):
        tf.matmul(x, x, transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="Only one of `transpose_b` and `adjoint_b` can be True"):
        tf.linalg.matmul(x, x, transpose_b=True, adjoint_b=True)


BATCH_SHAPES = [
    ((2, 1, 3, 4), (5, 4, 2), (2, 5, 3, 2)),
    ((3, 4), (2, 4, 5), (2, 3, 5)),
    ((2, 3, 4), (4, 5), (2, 3, 5)),
    ((1, 2, 3), (4, 3, 2), (4, 2, 2)),
    ((4, 2, 3), (1, 3, 2), (4, 2, 2)),
    ((6, 1, 2, 3, 4), (1, 7, 1, 4, 2), (6, 7, 2, 3, 2)),
    ((2, 3, 4), (2, 4, 5), (2, 3, 5)),
]


@pytest.mark.parametrize("shape_a,shape_b,shape_out", BATCH_SHAPES, ids=[str(s[:2]) for s in BATCH_SHAPES])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.bfloat16], ids=lambda d: d.name)
def test_batch_broadcasting(shape_a, shape_b, shape_out, dtype, rng):
    a = _operand(dtype, rng, shape_a)
    b = _operand(dtype, rng, shape_b)
    out = tf.matmul(tf.constant(a, dtype), tf.constant(b, dtype))
    assert out.shape == shape_out
    _assert_product(out, np.matmul(a, b), dtype, shape_a[-1])
    out = tf.constant(a, dtype) @ tf.constant(b, dtype)
    _assert_product(out, np.matmul(a, b), dtype, shape_a[-1])


def test_operator_with_python_and_numpy_operands():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tf.constant(a)
    out = t @ [[1.0], [2.0], [3.0]]
    assert out.dtype == tf.float32 and out.numpy().tolist() == [[8.0], [26.0]]
    out = [[1.0, 2.0]] @ t
    assert out.dtype == tf.float32 and out.numpy().tolist() == [[6.0, 9.0, 12.0]]
    out = np.ones((1, 2), np.float32) @ t
    assert isinstance(out, tf.Tensor) and out.numpy().tolist() == [[3.0, 5.0, 7.0]]
    out = tf.matmul([[1, 2]], [[3], [4]])
    assert out.dtype == tf.int32 and out.numpy().tolist() == [[11]]
    out = tf.matmul(tf.constant([[1.0, 2.0]], tf.float64), [[3.0], [4.0]])  # b takes a's dtype
    assert out.dtype == tf.float64 and out.numpy().tolist() == [[11.0]]
    assert tf.matmul is tf.linalg.matmul


def test_1024x1024(threads, rng):
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    out = tf.matmul(tf.constant(a), tf.constant(b))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-3)
    out = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=True, transpose_b=True)
    np.testing.assert_allclose(out.numpy(), a.T.astype(np.float64) @ b.T.astype(np.float64), rtol=1e-4, atol=1e-3)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(tf.matmul(tf.constant(a64), tf.constant(b64)).numpy(), expected, rtol=1e-10,
                               atol=1e-10)
    ai = rng.integers(-100, 100, (1024, 1024))
    bi = rng.integers(-100, 100, (1024, 1024))
    exact = ai.astype(np.float64) @ bi.astype(np.float64)  # exact: every partial sum is below 2^53
    np.testing.assert_array_equal(tf.matmul(tf.constant(ai, tf.int32), tf.constant(bi, tf.int32)).numpy(), exact)


def test_1024x1024_sixteen_bit(rng):
    a = rng.uniform(-1, 1, (1024, 1024))
    b = rng.uniform(-1, 1, (1024, 1024))
    for dtype in (tf.float16, tf.bfloat16):
        x = a.astype(dtype.as_numpy_dtype).astype(np.float64)
        y = b.astype(dtype.as_numpy_dtype).astype(np.float64)
        out = tf.matmul(tf.constant(x, dtype), tf.constant(y, dtype))
        _assert_product(out, x @ y, dtype, 1024, dtype.name)


def test_strided_and_transposed_operands(rng):
    y = rng.standard_normal((6, 8))
    strided = tf.constant(y)[:, ::2]
    out = tf.matmul(strided, tf.constant(y)[:4, ::2])
    np.testing.assert_allclose(out.numpy(), y[:, ::2] @ y[:4, ::2], rtol=1e-12)
    transposed = tf.transpose(tf.constant(y))
    np.testing.assert_allclose(tf.matmul(transposed, transposed, transpose_b=True).numpy(), y.T @ y, rtol=1e-12)
    out = tf.matmul(tf.ones([1, 2, 1, 2, 1, 2, 3, 4]), tf.ones([2, 1, 2, 1, 2, 1, 4, 2]))  # rank 8
    assert out.shape == (2, 2, 2, 2, 2, 2, 3, 2) and (out.numpy() == 4).all()


def test_empty_operands():
    out = tf.matmul(tf.zeros([2, 0]), tf.zeros([0, 3]))  # k == 0: a sum of nothing
    assert out.shape == (2, 3) and not out.numpy().any()
    assert tf.matmul(tf.zeros([0, 2]), tf.zeros([2, 3])).shape == (0, 3)
    assert tf.matmul(tf.zeros([2, 3]), tf.zeros([3, 0])).shape == (2, 0)
    assert tf.matmul(tf.zeros([0, 2, 2]), tf.zeros([2, 3])).shape == (0, 2, 3)
    out = tf.matmul(tf.zeros([4, 2, 0], tf.int32), tf.zeros([0, 5], tf.int32))
    assert out.shape == (4, 2, 5) and not out.numpy().any()


def test_special_values():
    out = tf.matmul(tf.constant([[np.nan, 1.0]]), tf.constant([[0.0], [1.0]]))
    assert np.isnan(out.numpy()).all()
    out = tf.matmul(tf.constant([[np.inf, 1.0]]), tf.constant([[0.0], [1.0]]))
    assert np.isnan(out.numpy()).all()  # inf * 0
    out = tf.matmul(tf.constant([[np.inf, 1.0]]), tf.constant([[2.0], [1.0]]))
    assert out.numpy().tolist() == [[np.inf]]


def test_integer_overflow_wraps_and_int64_is_exact():
    # 2 * 2^20 * 2^12 = 2^33 wraps to 0 in int32, as TF.
    out = tf.matmul(tf.constant([[2**20, 2**20]]), tf.constant([[2**12], [2**12]]))
    assert out.numpy().tolist() == [[0]]
    big = 3_000_000_000
    out = tf.matmul(tf.constant([[big, 1]], tf.int64), tf.constant([[3], [big]], tf.int64))
    assert out.numpy().tolist() == [[4 * big]]


def test_output_type_int8_to_int32():
    a = tf.constant([[100, 100], [-3, 7]], tf.int8)
    b = tf.constant([[100], [27]], tf.int8)
    out = tf.matmul(a, b, output_type=tf.int32)
    assert out.dtype == tf.int32 and out.numpy().tolist() == [[12700], [-111]]
    out = tf.matmul(tf.constant([[200, 3]], tf.uint8), tf.constant([[200], [1]], tf.uint8), output_type=tf.int32)
    assert out.numpy().tolist() == [[40003]]
    out = tf.matmul(tf.ones([2, 3]), tf.ones([3, 2]), output_type=tf.float32)  # same dtype: a plain matmul
    assert out.dtype == tf.float32
    with pytest.raises(errors.NotFoundError, match="MatMul"):
        tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), output_type=tf.float64)


# ---- errors --------------------------------------------------------------------------------------------

def test_inner_dimension_mismatch():
    a = tf.ones([2, 3])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^MatMul: in\[0\] is \[2,3\], in\[1\] is \[2,3\]; inner dimensions 3 and 2 differ$"):
        tf.matmul(a, a)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"in\[0\] is \[2,3\] \(transposed\), in\[1\] is \[4,5\]; inner dimensions 2 and 4"):
        tf.matmul(a, tf.ones([4, 5]), transpose_a=True)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"in\[0\] is \[3,2\], in\[1\] is \[2,3\] \(transposed\); inner dimensions 2 and 3 differ"):
        tf.matmul(tf.ones([3, 2]), a, transpose_b=True)
    with pytest.raises(errors.InvalidArgumentError, match=r"^MatMul: .*inner dimensions 4 and 5 differ"):
        tf.ones([7, 2, 4]) @ tf.ones([5, 6])


def test_rank_below_two():
    m = tf.ones([2, 3])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^MatMul: in\[0\] is \[2\], in\[1\] is \[2,3\]; in\[0\] must have rank >= 2, got rank 1"):
        tf.matmul(tf.constant([1.0, 2.0]), m)
    with pytest.raises(errors.InvalidArgumentError, match=r"in\[1\] must have rank >= 2, got rank 1"):
        tf.matmul(m, tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(errors.InvalidArgumentError, match=r"in\[0\] must have rank >= 2, got rank 0"):
        tf.matmul(tf.constant(1.0), m)
    with pytest.raises(errors.InvalidArgumentError, match="MatMul"):
        tf.constant([1.0, 2.0]) @ tf.constant([1.0, 2.0])


def test_dtype_mismatch():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^MatMul: input #1 \('b'\) has dtype float64 but input #0 \('a'\) has dtype float32"):
        tf.matmul(tf.ones([2, 2]), tf.ones([2, 2], tf.float64))
    with pytest.raises(errors.InvalidArgumentError, match=r"^MatMul: .*int32.*float32"):
        tf.matmul(tf.ones([2, 2]), tf.ones([2, 2], tf.int32))
    with pytest.raises(errors.InvalidArgumentError, match="MatMul"):
        tf.ones([2, 2], tf.float16) @ tf.ones([2, 2])


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=lambda d: d.name)
def test_unsupported_dtypes(dtype):
    x = tf.ones([2, 2], dtype)
    with pytest.raises(errors.InvalidArgumentError, match=rf"^MatMul: .*got {dtype.name}"):
        tf.matmul(x, x)


def test_batch_dims_not_broadcastable():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^MatMul: in\[0\] is \[2,3,4\], in\[1\] is \[5,4,2\]; batch dimensions \[2\] and \[5\] "
                             "are not broadcastable"):
        tf.matmul(tf.ones([2, 3, 4]), tf.ones([5, 4, 2]))


# ---- tf.linalg helpers --------------------------------------------------------------------------------------

def test_matvec(rng):
    a = rng.standard_normal((2, 3, 4))
    v = rng.standard_normal((2, 4))
    out = tf.linalg.matvec(tf.constant(a), tf.constant(v))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.numpy(), np.einsum("bij,bj->bi", a, v), rtol=1e-12)
    w = rng.standard_normal(3)
    out = tf.linalg.matvec(tf.constant(a), tf.constant(w), transpose_a=True)
    np.testing.assert_allclose(out.numpy(), np.einsum("bji,j->bi", a, w), rtol=1e-12)
    assert tf.linalg.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]).numpy().tolist() == [3.0, 7.0]


def test_matrix_transpose_and_adjoint():
    x = tf.reshape(tf.range(24), [2, 3, 4])
    out = tf.linalg.matrix_transpose(x)
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out.numpy(), np.swapaxes(x.numpy(), 1, 2))
    np.testing.assert_array_equal(tf.linalg.adjoint(x).numpy(), np.swapaxes(x.numpy(), 1, 2))
    with pytest.raises(ValueError, match="rank >= 2"):
        tf.linalg.matrix_transpose(tf.constant([1, 2]))


def test_tensordot(rng):
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 3, 5))
    ta, tb = tf.constant(a), tf.constant(b)
    for axes in (1, [[2], [0]], [[1, 2], [1, 0]], ([2, 1], [0, 1]), [2, 0]):
        out = tf.tensordot(ta, tb, axes)
        np.testing.assert_allclose(out.numpy(), np.tensordot(a, b, axes), rtol=1e-12, err_msg=str(axes))
    assert tf.tensordot(ta, tf.constant(rng.standard_normal((3, 4))), 2).shape == (2,)
    out = tf.linalg.tensordot(ta, tb, 0)  # outer product
    assert out.shape == (2, 3, 4, 4, 3, 5)
    assert float(tf.tensordot([1.0, 2.0], [3.0, 4.0], 1)) == 11.0
    with pytest.raises(ValueError):
        tf.tensordot(ta, tb, -1)
    with pytest.raises(ValueError):
        tf.tensordot(ta, tb, [[0, 1], [0]])
    with pytest.raises(errors.InvalidArgumentError, match="tensordot"):
        tf.tensordot(ta, tb, [[0], [0]])


def test_norm(rng):
    x = rng.standard_normal((3, 4))
    t = tf.constant(x)
    assert float(tf.norm(t)) == pytest.approx(np.linalg.norm(x))
    assert float(tf.linalg.norm(t, ord="fro", axis=[0, 1])) == pytest.approx(np.linalg.norm(x, "fro"))
    np.testing.assert_allclose(tf.norm(t, axis=1).numpy(), np.linalg.norm(x, axis=1))
    np.testing.assert_allclose(tf.norm(t, ord=1, axis=0).numpy(), np.abs(x).sum(axis=0))
    np.testing.assert_allclose(tf.norm(t, ord=np.inf, axis=-1).numpy(), np.abs(x).max(axis=-1))
    np.testing.assert_allclose(tf.norm(t, ord=3, axis=1).numpy(), (np.abs(x) ** 3).sum(axis=1) ** (1 / 3))
    assert float(tf.norm(t, ord=1, axis=(0, 1))) == pytest.approx(np.linalg.norm(x, 1))
    assert float(tf.norm(t, ord=np.inf, axis=(0, 1))) == pytest.approx(np.linalg.norm(x, np.inf))
    assert tf.norm(t, axis=1, keepdims=True).shape == (3, 1)
    assert tf.norm(t, keepdims=True).shape == (1, 1)
    assert float(tf.norm([3.0, 4.0])) == 5.0
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm"):
        tf.norm(t, ord=-1)
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm(t, ord=3, axis=[0, 1])
    with pytest.raises(ValueError, match="'axis' must be"):
        tf.norm(t, axis=[0, 0])
    with pytest.raises(ValueError, match="'axis' must be"):
        tf.norm(t, axis=[1])  # as TF: an int, or a pair for a matrix norm
    with pytest.raises(errors.UnimplementedError, match="SVD"):
        tf.norm(t, ord=2, axis=[0, 1])


def test_l2_normalize_and_eye():
    x = tf.constant([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(tf.linalg.l2_normalize(x, axis=1).numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    assert tf.linalg.l2_normalize is tf.nn.l2_normalize is tf.math.l2_normalize
    np.testing.assert_array_equal(tf.linalg.eye(2, 3).numpy(), np.eye(2, 3))


# ---- Factorizations and solves through LAPACK (src/ember/ops/linalg_lapack.cc) and the tf.linalg helpers
# composed from them, against TensorFlow 2.21.

import tensorflow as real_tf  # noqa: E402
from linalg_testing import both as _both  # noqa: E402
from linalg_testing import check_finite_differences, check_traced_like_eager  # noqa: E402
from linalg_testing import loss_gradient as _loss_gradient  # noqa: E402

LAPACK_TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _well_conditioned(rng, shape, dtype):
    n = shape[-1]
    return (rng.uniform(-1, 1, shape) + 3 * np.eye(n)).astype(dtype)


def _spd(rng, shape, dtype):
    a = rng.uniform(-1, 1, shape)
    return (a @ _t(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _close(actual, expected, dtype):
    tol = LAPACK_TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


UNARY_CASES = {
    "inv": (lambda m, x: m.linalg.inv(x), _well_conditioned),
    "inv_adjoint": (lambda m, x: m.linalg.inv(x, adjoint=True), _well_conditioned),
    "det": (lambda m, x: m.linalg.det(x), _well_conditioned),
    "slogdet": (lambda m, x: m.stack(m.linalg.slogdet(x)), _well_conditioned),
    "cholesky": (lambda m, x: m.linalg.cholesky(x), _spd),
    "expm": (lambda m, x: m.linalg.expm(x), _well_conditioned),
    "diag_part": (lambda m, x: m.linalg.diag_part(x), _well_conditioned),
    "trace": (lambda m, x: m.linalg.trace(x), _well_conditioned),
    "logdet": (lambda m, x: m.linalg.logdet(x), _spd),
    "band_part": (lambda m, x: m.linalg.band_part(x, 1, 0), _well_conditioned),
    "diag": (lambda m, x: m.linalg.diag(x[..., 0]), _well_conditioned),
    "set_diag": (lambda m, x: m.linalg.set_diag(x, x[..., -1]), _well_conditioned),
}


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3, 3), (1, 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("case", sorted(UNARY_CASES))
def test_unary_linalg_matches_tensorflow(case, dtype, shape, rng):
    fn, make = UNARY_CASES[case]
    x = make(rng, shape, dtype)
    ours, theirs = _both(fn, x)
    assert ours.dtype.name == theirs.dtype.name and tuple(ours.shape) == tuple(theirs.shape)
    _close(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("adjoint", [False, True])
def test_solves_match_tensorflow(dtype, adjoint, rng):
    a = _well_conditioned(rng, (2, 4, 4), dtype)
    b = rng.uniform(-1, 1, (2, 4, 3)).astype(dtype)
    _close(*_both(lambda m: m.linalg.solve(a, b, adjoint=adjoint)), dtype)
    for lower in (True, False):
        _close(*_both(lambda m: m.linalg.triangular_solve(a, b, lower=lower, adjoint=adjoint)), dtype)
    chol = np.linalg.cholesky(_spd(rng, (2, 4, 4), np.float64)).astype(dtype)
    _close(*_both(lambda m: m.linalg.cholesky_solve(chol, b)), dtype)


def test_triangular_solve_broadcasts_batch_dims(rng):
    a = _well_conditioned(rng, (4, 4), np.float64)
    b = rng.uniform(-1, 1, (3, 4, 2))
    _close(*_both(lambda m: m.linalg.triangular_solve(a, b)), np.float64)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (2, 5, 5)], ids=str)
def test_lstsq_matches_tensorflow(shape, rng):
    a = rng.uniform(-1, 1, shape)
    b = rng.uniform(-1, 1, shape[:-1] + (2,))
    ours, theirs = _both(lambda m: m.linalg.lstsq(a, b, l2_regularizer=0.1))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-8)


def test_non_square_diag_part_and_set_diag(rng):
    for shape in [(2, 3, 5), (2, 5, 3)]:
        x = rng.uniform(-1, 1, shape)
        _close(*_both(lambda m: m.linalg.diag_part(x)), np.float64)
        v = rng.uniform(-1, 1, shape[:-2] + (min(shape[-2:]),))
        _close(*_both(lambda m: m.linalg.set_diag(x, v)), np.float64)


def test_expm_of_large_norm_squares_back(rng):
    x = rng.uniform(-1, 1, (2, 3, 3)) * np.array([0.1, 20.0])[:, None, None]
    ours, theirs = _both(lambda m: m.linalg.expm(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9)


GRAD_CASES = {
    "inv": (lambda m, x: m.linalg.inv(x), _well_conditioned),
    "inv_adjoint": (lambda m, x: m.linalg.inv(x, adjoint=True), _well_conditioned),
    "det": (lambda m, x: m.linalg.det(x), _well_conditioned),
    "slogdet": (lambda m, x: m.linalg.slogdet(x)[1], _well_conditioned),
    "cholesky": (lambda m, x: m.linalg.cholesky(x), _spd),
    "solve": (lambda m, x: m.linalg.solve(x, x[..., :2] * 0.5 + 1.0), _well_conditioned),
    "solve_adjoint": (lambda m, x: m.linalg.solve(x, m.sin(x), adjoint=True), _well_conditioned),
    "triangular_solve": (lambda m, x: m.linalg.triangular_solve(x, m.cos(x)), _well_conditioned),
    "triangular_solve_upper_adjoint": (lambda m, x: m.linalg.triangular_solve(x, m.cos(x), lower=False,
                                                                                adjoint=True), _well_conditioned),
    "cholesky_solve": (lambda m, x: m.linalg.cholesky_solve(m.linalg.cholesky(x), x[..., :1]), _spd),
    "expm": (lambda m, x: m.linalg.expm(x), _well_conditioned),
    "trace": (lambda m, x: m.linalg.trace(x), _well_conditioned),
    "diag_part": (lambda m, x: m.linalg.diag_part(x), _well_conditioned),
    "set_diag": (lambda m, x: m.linalg.set_diag(x, m.linalg.diag_part(x) ** 2), _well_conditioned),
    "lstsq": (lambda m, x: m.linalg.lstsq(x, m.sin(x[..., :1]), l2_regularizer=0.01), _well_conditioned),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_tensorflow_and_finite_differences(case, rng):
    fn, make = GRAD_CASES[case]
    x = make(rng, (2, 3, 3), np.float64)
    (_, ours), (_, theirs) = _both(lambda m: _loss_gradient(m, fn, x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-9)
    # Finite differences along a random direction; symmetric for Cholesky, which reads one triangle and
    # whose gradient is the symmetrized one.
    d = rng.uniform(-1, 1, x.shape)
    if case.startswith("cholesky"):
        d = d + _t(d)
    check_finite_differences(fn, x, ours.numpy(), d)


@pytest.mark.parametrize("case", ["inv", "det", "slogdet", "cholesky", "solve", "triangular_solve", "trace"])
def test_unknown_dims_in_function_match_eager(case, rng):
    fn, make = GRAD_CASES[case]
    x = make(rng, (2, 3, 3), np.float64)

    check_traced_like_eager(fn, x, tf.float64, rtol=1e-12, atol=1e-12)


def test_singular_and_special_inputs_as_tensorflow():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(errors.InvalidArgumentError, match="MatrixInverse.*not invertible"):
        tf.linalg.inv(singular)
    with pytest.raises(errors.InvalidArgumentError, match="MatrixSolve.*not invertible"):
        tf.linalg.solve(singular, np.ones((2, 1)))
    # TensorFlow 2.21's Cholesky fills a matrix that is not positive definite with NaN below the diagonal;
    # above it, that matrix holds whatever TensorFlow's buffer did (seen: 3e161), so the lower triangles are
    # compared.
    not_pd = np.array([[[1.0, 2.0], [2.0, 1.0]], [[4.0, 0.0], [0.0, 1.0]]])
    _close(*_both(lambda m: m.linalg.band_part(
        m.where(m.math.is_nan(m.linalg.cholesky(not_pd)), -7.0, m.linalg.cholesky(not_pd)), -1, 0)), np.float64)
    assert np.all(np.triu(tf.linalg.cholesky(not_pd).numpy(), 1) == 0)  # ember's upper triangles are zeros
    assert tf.linalg.det(singular).numpy() == 0.0
    sign, logdet = tf.linalg.slogdet(singular)
    assert sign.numpy() == 0.0 and logdet.numpy() == -np.inf
    # TensorFlow raises the same classes.
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.linalg.inv(singular)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.linalg.solve(singular, np.ones((2, 1)))
    # An empty batch and 0x0 matrices.
    assert tf.linalg.inv(np.zeros((0, 3, 3))).shape == (0, 3, 3)
    assert tf.linalg.det(np.zeros((2, 0, 0))).numpy().tolist() == [1.0, 1.0]


def test_shape_errors_name_the_op():
    with pytest.raises(errors.InvalidArgumentError, match=r"MatrixInverse: input must be square.*\[2,3\]"):
        tf.linalg.inv(np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="MatrixDeterminant: input must be a matrix"):
        tf.linalg.det(np.ones(3))
    with pytest.raises(errors.InvalidArgumentError, match="MatrixSolve: matrix is .* rows must match"):
        tf.linalg.solve(np.eye(3), np.ones((2, 1)))
    with pytest.raises(errors.InvalidArgumentError, match=r"MatrixSolve: the batch dims .* must be equal"):
        tf.linalg.solve(np.ones((2, 3, 3)), np.ones((1, 3, 1)))
    with pytest.raises(errors.InvalidArgumentError, match=r"MatrixSolve: the batch dims .* must be equal"):
        tf.linalg.solve(np.ones((3, 3)), np.ones((2, 3, 1)))
    with pytest.raises(errors.InvalidArgumentError, match="MatrixTriangularSolve: matrix must be square"):
        tf.linalg.triangular_solve(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(errors.InvalidArgumentError, match="MatrixBandPart: num_lower must be <= 2"):
        tf.linalg.band_part(np.ones((2, 2)), 3, 0)
    with pytest.raises(errors.InvalidArgumentError, match="MatrixInverse"):
        tf.linalg.inv(np.ones((2, 2), np.int32))

    @tf.function(input_signature=[tf.TensorSpec([None, 2, 3], tf.float32)])
    def staged(x):
        return tf.linalg.cholesky(x)

    with pytest.raises(errors.InvalidArgumentError, match=r"Cholesky.*: input must be square .*\[\?,2,3\]"):
        staged.get_concrete_function()


# ---- Decompositions whose vectors are defined up to sign: compared through invariants.

@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 3), (3, 5), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_qr_and_svd_match_tensorflow(shape, full, dtype, rng):
    a = rng.uniform(-1, 1, shape).astype(dtype)
    (q, r), (tq, tr) = _both(lambda m: m.linalg.qr(a, full_matrices=full))
    assert q.shape == tq.shape and r.shape == tr.shape and q.dtype.name == tq.dtype.name
    _close(tf.matmul(q, r), a, dtype)
    _close(np.abs(r.numpy()), np.abs(tr.numpy()), dtype)
    _close(np.abs(q.numpy()), np.abs(tq.numpy()), dtype)
    (s, u, v), (ts, tu, tv) = _both(lambda m: m.linalg.svd(a, full_matrices=full))
    assert s.shape == ts.shape and u.shape == tu.shape and v.shape == tv.shape
    _close(s, ts, dtype)
    p = min(shape[-2:])
    _close(tf.matmul(u[..., :p] * s[..., None, :], v[..., :p], transpose_b=True), a, dtype)
    _close(np.abs(u.numpy()[..., :p]), np.abs(tu.numpy()[..., :p]), dtype)
    _close(*_both(lambda m: m.linalg.svd(a, compute_uv=False)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
def test_eigh_matches_tensorflow(dtype, rng):
    x = rng.uniform(-1, 1, (2, 3, 4, 4))
    lower_only = np.tril(x).astype(dtype)  # eigh reads the lower triangle, as TensorFlow
    (e, v), (te, tv) = _both(lambda m: m.linalg.eigh(lower_only))
    _close(e, te, dtype)
    _close(np.abs(v.numpy()), np.abs(tv.numpy()), dtype)
    sym = np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)
    _close(tf.matmul(v * e[..., None, :], v, transpose_b=True), sym, dtype)
    _close(*_both(lambda m: m.linalg.eigvalsh(lower_only)), dtype)


# Losses invariant under each vector's sign.
SIGN_INVARIANT_GRAD_CASES = {
    "eigh": (lambda m, x: m.reduce_sum(m.sin(m.linalg.eigh(x)[0]))
             + m.reduce_sum(m.linalg.eigh(x)[1] ** 4), (2, 4, 4)),
    "eigvalsh": (lambda m, x: m.reduce_sum(m.linalg.eigvalsh(x) ** 3), (2, 3, 3)),
    "qr_tall": (lambda m, x: m.reduce_sum(m.sin(m.linalg.qr(x)[0])) + m.reduce_sum(m.cos(m.linalg.qr(x)[1])),
                (2, 5, 3)),
    "qr_square_full": (lambda m, x: m.reduce_sum(m.linalg.qr(x, full_matrices=True)[0] ** 2 * x), (3, 3)),
    "svd_values": (lambda m, x: m.reduce_sum(m.sin(m.linalg.svd(x, compute_uv=False))), (2, 3, 5)),
    "svd_square": (lambda m, x: m.reduce_sum(m.linalg.svd(x)[1] ** 4) + m.reduce_sum(m.linalg.svd(x)[2] ** 4)
                   + m.reduce_sum(m.linalg.svd(x)[0] ** 2), (2, 4, 4)),
    "svd_tall": (lambda m, x: m.reduce_sum(m.linalg.svd(x)[1] ** 4) + m.reduce_sum(m.linalg.svd(x)[2] ** 4),
                 (2, 5, 3)),
    "svd_wide": (lambda m, x: m.reduce_sum(m.abs(m.linalg.svd(x)[1])) + m.reduce_sum(m.linalg.svd(x)[2] ** 4),
                 (3, 5)),
}


@pytest.mark.parametrize("case", sorted(SIGN_INVARIANT_GRAD_CASES))
def test_decomposition_gradients_match_tensorflow_and_finite_differences(case, rng):
    fn, shape = SIGN_INVARIANT_GRAD_CASES[case]
    x = rng.uniform(-1, 1, shape)
    if case.startswith("eig"):
        x = x + _t(x)
    (_, ours), (_, theirs) = _both(lambda m: _loss_gradient(m, fn, x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-9)
    d = rng.uniform(-1, 1, x.shape)
    if case.startswith("eig"):
        d = d + _t(d)
    # The gradient is folded onto the lower triangle that eigh reads; a symmetric step sees it whole.
    check_finite_differences(fn, x, ours.numpy(), d, np.tril(d) if case.startswith("eig") else d)


@pytest.mark.parametrize("case", ["eigh", "qr_tall", "svd_tall", "svd_wide", "svd_values"])
def test_decomposition_gradients_with_unknown_dims(case, rng):
    fn, shape = SIGN_INVARIANT_GRAD_CASES[case]
    x = rng.uniform(-1, 1, shape)
    if case.startswith("eig"):
        x = x + _t(x)

    check_traced_like_eager(fn, x, tf.float64, rtol=1e-10, atol=1e-12)


def test_decomposition_errors_name_the_op():
    with pytest.raises(errors.InvalidArgumentError, match="SelfAdjointEigV2: input must be square"):
        tf.linalg.eigh(np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="Qr: input must be a matrix"):
        tf.linalg.qr(np.ones(3))
    with pytest.raises(errors.InvalidArgumentError, match="Svd: input must be a matrix"):
        tf.linalg.svd(np.ones(3))
    x = tf.constant(np.ones((2, 4)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.linalg.qr(x)[1])
    with pytest.raises(errors.UnimplementedError, match="Qr: no gradient for a wide matrix"):
        tape.gradient(y, x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float16], ids=lambda d: d.__name__)
def test_band_part_and_diag_of_other_dtypes(dtype, rng):
    x = rng.integers(-5, 5, (2, 3, 4))
    x = (x > 1) if dtype == np.bool_ else x.astype(dtype)
    for lower, upper in [(0, 0), (1, -1), (-1, 2)]:
        ours, theirs = _both(lambda m: m.linalg.band_part(x, lower, upper))
        assert ours.dtype.name == theirs.dtype.name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if dtype != np.bool_:
        ours, theirs = _both(lambda m: m.linalg.diag(x[..., 0]))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)], ids=str)
def test_pinv_matches_tensorflow(shape, rng):
    a = rng.uniform(-1, 1, shape)
    a[..., -1] = a[..., 0]  # rank-deficient: the dropped singular value matters
    ours, theirs = _both(lambda m: m.linalg.pinv(a))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-10)


JACOBIAN_CASES = {
    "inv": lambda m, x: m.linalg.inv(x),
    "det": lambda m, x: m.linalg.det(x),
    "svd_values": lambda m, x: m.linalg.svd(x, compute_uv=False),
    "solve": lambda m, x: m.linalg.solve(x, m.ones((3, 1), m.float64)),
    "cholesky": lambda m, x: m.linalg.cholesky(m.matmul(x, x, transpose_b=True)),
    "eigvalsh": lambda m, x: m.linalg.eigvalsh(x + m.transpose(x)),
}


@pytest.mark.parametrize("case", sorted(JACOBIAN_CASES))
def test_jacobians_match_tensorflow(case, rng):
    a = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)

    def jacobian(m):
        x = m.constant(a)
        with m.GradientTape() as tape:
            tape.watch(x)
            y = JACOBIAN_CASES[case](m, x)
        return tape.jacobian(y, x)

    ours, theirs = _both(jacobian)
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-9, atol=1e-12)


def test_tensorflow_runs_an_exported_linalg_graph(rng):
    @tf.function(input_signature=[tf.TensorSpec([None, 3, 3], tf.float64)])
    def f(x):
        sign, logabs = tf.linalg.slogdet(x)
        return (tf.linalg.inv(x) + tf.linalg.solve(x, x) + tf.linalg.triangular_solve(x, x)
                + tf.linalg.cholesky(x) + tf.linalg.band_part(x, 0, 1), tf.linalg.svd(x)[0], tf.linalg.qr(x)[1],
                tf.linalg.eigh(x)[0], sign * logabs, tf.linalg.det(x))

    graph = f.get_concrete_function().graph
    graph_def = real_tf.compat.v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    wrapped = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = wrapped.prune(feeds=[graph.inputs[0].name], fetches=[t.name for t in graph.outputs])
    a = _spd(rng, (2, 3, 3), np.float64)
    for theirs, ours in zip(run(real_tf.constant(a)), f(a)):
        np.testing.assert_allclose(theirs.numpy(), np.asarray(ours), rtol=1e-10, atol=1e-12)


def test_expm_in_function_with_unknown_dims(rng):
    a = rng.uniform(-1, 1, (2, 3, 3)) * np.array([0.5, 10.0])[:, None, None]

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float64)])
    def traced(v):
        return _loss_gradient(tf, lambda m, x: m.linalg.expm(x), v)

    y, g = traced(tf.constant(a))
    ty, tg = _loss_gradient(real_tf, lambda m, x: m.linalg.expm(x), a)
    # exp of a norm-30 matrix has entries near 1e5: compare relative to the gradient's size.
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-7, atol=1e-9 * np.max(np.abs(tg.numpy())))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6)


def test_nan_and_inf_inputs_end_instead_of_hanging():
    # Found by the op fuzzer: LAPACK's gesdd hung on a 3x3 float32 with an infinity. Svd gives NaN throughout
    # (as a decomposition of such a matrix is); SelfAdjointEigV2 fails as TensorFlow's CPU kernel does.
    for bad in (np.nan, np.inf):
        m = np.array([[1.0, 2.0, 0.5], [2.0, bad, 1.0], [0.5, 1.0, 3.0]], np.float32)
        s, u, v = tf.linalg.svd(np.stack([m, np.eye(3, dtype=np.float32)]))
        assert np.isnan(s.numpy()[0]).all() and np.isnan(u.numpy()[0]).all() and np.isnan(v.numpy()[0]).all()
        np.testing.assert_allclose(s.numpy()[1], np.ones(3))
        with pytest.raises(errors.InvalidArgumentError, match="SelfAdjointEigV2: matrix 0 holds a NaN"):
            tf.linalg.eigh(m)
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.linalg.eigh(m)


def test_off_diagonal_k_matches_tensorflow():
    # Formerly an UnimplementedError; every band and alignment is compared in test_matrix_diag.py.
    np.testing.assert_array_equal(tf.linalg.diag([1.0, 2.0], k=1).numpy(),
                                  real_tf.linalg.diag([1.0, 2.0], k=1).numpy())


def test_svd_of_empty_matrices_gives_identities_as_tensorflow():
    # Found by the op fuzzer: U and V of an empty matrix held whatever their buffers did.
    for shape in ((1, 1, 0), (1, 0, 1), (2, 3, 0)):
        x = np.zeros(shape, np.float32)
        ours, theirs = tf.linalg.svd(x, full_matrices=True), real_tf.linalg.svd(x, full_matrices=True)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_qr_of_empty_matrices_as_tensorflow():
    # Found by the op fuzzer: a full Q of a [1, 5, 1, 0] input held whatever its buffer did.
    for shape in ((1, 5, 1, 0), (2, 3, 0), (3, 0)):
        x = np.zeros(shape, np.float32)
        for full in (True, False):
            ours, theirs = tf.linalg.qr(x, full_matrices=full), real_tf.linalg.qr(x, full_matrices=full)
            for a, b in zip(ours, theirs):
                np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- matrix_rank and cross (compositions of Svd and slices, python/ember/ops/linalg_ops.py)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64], ids=lambda d: d.__name__)
def test_matrix_rank_matches_tensorflow(dtype, rng):
    full = rng.uniform(-1, 1, (2, 4, 3))
    low = full[..., :1] @ full[..., :1, :]  # rank 1
    for x in (full, low, np.zeros((3, 3)), rng.uniform(-1, 1, (5, 2))):
        for tol in (None, 0.5):
            ours, theirs = _both(lambda m: m.linalg.matrix_rank(x.astype(dtype), tol=tol))
            assert ours.dtype == tf.int32
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float64)])
    def traced(x):
        return tf.linalg.matrix_rank(x)

    np.testing.assert_array_equal(traced(tf.constant(low)).numpy(), [1, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=lambda d: d.__name__)
def test_cross_matches_tensorflow(dtype, rng):
    a = (rng.uniform(-5, 5, (2, 4, 3))).astype(dtype)
    b = (rng.uniform(-5, 5, (2, 4, 3))).astype(dtype)
    ours, theirs = _both(lambda m: m.linalg.cross(a, b))
    assert ours.dtype.name == theirs.dtype.name
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_cross_gradient_matches_tensorflow(rng):
    a, b = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))

    def grads(m):
        x, y = m.constant(a), m.constant(b)
        with m.GradientTape() as tape:
            tape.watch([x, y])
            loss = m.reduce_sum(m.sin(m.linalg.cross(x, y)))
        return tape.gradient(loss, [x, y])

    for o, t in zip(*_both(grads)):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)


def test_cross_errors_as_tensorflow():
    with pytest.raises(errors.FailedPreconditionError, match="only defined for 3-element vectors"):
        tf.linalg.cross(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(real_tf.errors.FailedPreconditionError):
        real_tf.linalg.cross(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(errors.InvalidArgumentError, match="Both inputs must be of same shape"):
        tf.linalg.cross(np.ones((2, 3)), np.ones((1, 3)))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.linalg.cross(np.ones((2, 3)), np.ones((1, 3)))

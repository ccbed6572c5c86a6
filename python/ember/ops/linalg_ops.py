"""``tf.linalg``'s factorizations, solves and matrix helpers (docs/linalg.md).

The factorizations are registry ops run through LAPACK (src/ember/ops/linalg_lapack.cc), ``diag``,
``diag_part`` and ``set_diag`` TensorFlow's MatrixDiagV3 family (ops/matrix_diag.py); ``trace``,
``cholesky_solve``, ``lstsq`` and ``expm`` are compositions of ops, as TensorFlow builds them, so their
gradients come from the ops they use.
"""
import collections
import math

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, control_flow_ops, math_ops, matrix_diag

_MatrixInverse = _C.op("MatrixInverse")
_MatrixDeterminant = _C.op("MatrixDeterminant")
_LogMatrixDeterminant = _C.op("LogMatrixDeterminant")
_Cholesky = _C.op("Cholesky")
_MatrixSolve = _C.op("MatrixSolve")
_MatrixTriangularSolve = _C.op("MatrixTriangularSolve")
_MatrixBandPart = _C.op("MatrixBandPart")
_SelfAdjointEigV2 = _C.op("SelfAdjointEigV2")
_Qr = _C.op("Qr")
_Svd = _C.op("Svd")
_Eig = _C.op("Eig")
_Lu = _C.op("Lu")
_MatrixSquareRoot = _C.op("MatrixSquareRoot")
_MatrixLogarithm = _C.op("MatrixLogarithm")
_TridiagonalSolve = _C.op("TridiagonalSolve")

Qr = collections.namedtuple("Qr", ["q", "r"])
Lu = collections.namedtuple("Lu", ["lu", "p"])


def _t(x, dtype=None):
    return convert_to_tensor(x, dtype=dtype)


def inv(input, adjoint=False, name=None):  # noqa: A002 - TF's name
    """The inverse of each square matrix in the last two dims; a singular one raises InvalidArgumentError."""
    return _MatrixInverse(_t(input), bool(adjoint))


def det(input, name=None):  # noqa: A002 - TF's name
    return _MatrixDeterminant(_t(input))


def slogdet(input, name=None):  # noqa: A002 - TF's name
    """(sign, log|det|) of each square matrix; a singular one gives (0, -inf) as in TensorFlow."""
    return _LogMatrixDeterminant(_t(input))


def cholesky(input, name=None):  # noqa: A002 - TF's name
    return _Cholesky(_t(input))


def _rhs(rhs, matrix):
    """A Python or NumPy rhs takes the matrix's dtype; a tensor of another dtype is the op's
    InvalidArgumentError, as in TensorFlow, not a conversion error."""
    return rhs if isinstance(rhs, Tensor) else _t(rhs, matrix.dtype)


def solve(matrix, rhs, adjoint=False, name=None):
    matrix = _t(matrix)
    return _MatrixSolve(matrix, _rhs(rhs, matrix), bool(adjoint))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    matrix = _t(matrix)
    return _MatrixTriangularSolve(matrix, _rhs(rhs, matrix), bool(lower), bool(adjoint))


def logdet(matrix, name=None):
    """log det of each Hermitian positive definite matrix: twice the log of its Cholesky factor's diagonal.

    Real for a complex matrix (float32 for complex64), as TensorFlow's: the factor's diagonal is real."""
    return 2.0 * math_ops.reduce_sum(math_ops.log(math_ops.real(diag_part(cholesky(matrix)))), -1)


def cholesky_solve(chol, rhs, name=None):
    """X with (L L^H) X = rhs for the Cholesky factor L: two triangular solves, as TensorFlow does."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def eigh(tensor, name=None):
    """(e, v): ascending eigenvalues and eigenvectors (columns) of each symmetric matrix's lower triangle."""
    e, v = _SelfAdjointEigV2(_t(tensor), True)
    return e, v


def eigvalsh(tensor, name=None):
    return _SelfAdjointEigV2(_t(tensor), False)[0]


def _eig_dtype(tensor):
    """Eig's complex output dtype: complex64 for float32 and complex64, complex128 for float64 and complex128."""
    if tensor.dtype in (dtypes.float32, dtypes.complex64):
        return dtypes.complex64
    if tensor.dtype in (dtypes.float64, dtypes.complex128):
        return dtypes.complex128
    raise ValueError("input must be of dtype float32, float64, complex64, or complex128.")  # TensorFlow's


def eig(tensor, name=None):
    """(e, v): complex eigenvalues and unit eigenvectors (columns) of each square matrix, A v = e v.

    The order of the eigenvalues and each vector's phase are LAPACK geev's, which need not be TensorFlow's
    (Eigen's): both are valid decompositions (docs/linalg.md)."""
    tensor = _t(tensor)
    e, v = _Eig(tensor, True, _eig_dtype(tensor))
    return e, v


def eigvals(tensor, name=None):
    tensor = _t(tensor)
    return _Eig(tensor, False, _eig_dtype(tensor))[0]


def lu(input, output_idx_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    """(lu, p): input[..., p, :] = L U with L unit lower triangular (below lu's diagonal) and U upper."""
    lower_upper, p = _Lu(_t(input), dtypes.as_dtype(output_idx_type))
    return Lu(lower_upper, p)


def _lu_lower(lower_upper):
    """L of a packed LU factorization: lu's strictly lower triangle with a unit diagonal."""
    lower = band_part(lower_upper, -1, 0)
    return set_diag(lower, array_ops.ones_like(diag_part(lower)))


def _permutation_matrix(perm, dtype):
    """P with (P X)[i] = X[perm[i]]: a one-hot row per index, so batches of perm broadcast as matmul's."""
    return math_ops.cast(array_ops.one_hot(perm, array_ops.shape(perm)[-1]), dtype)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """The matrix whose Lu is (lower_upper, perm): P^T L U."""
    lower_upper = _t(lower_upper)
    x = math_ops.matmul(_lu_lower(lower_upper), band_part(lower_upper, 0, -1))
    return math_ops.matmul(_permutation_matrix(_t(perm), lower_upper.dtype), x, transpose_a=True)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """X with A X = rhs for A = P^T L U given by Lu: rhs permuted, then two triangular solves (batch dims
    broadcast, as TensorFlow's)."""
    lower_upper = _t(lower_upper)
    rhs = _rhs(rhs, lower_upper)
    permuted_rhs = math_ops.matmul(_permutation_matrix(_t(perm), lower_upper.dtype), rhs)
    lower_inv_rhs = triangular_solve(_lu_lower(lower_upper), permuted_rhs, lower=True)
    return triangular_solve(lower_upper, lower_inv_rhs, lower=False)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """inv(A) from A's Lu factors: lu_solve with the identity as rhs."""
    lower_upper = _t(lower_upper)
    identity = set_diag(array_ops.zeros_like(lower_upper), array_ops.ones_like(diag_part(lower_upper)))
    return lu_solve(lower_upper, perm, identity)


def qr(input, full_matrices=False, name=None):  # noqa: A002 - TF's name
    q, r = _Qr(_t(input), bool(full_matrices))
    return Qr(q, r)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """s (descending), and with compute_uv (s, u, v) with A = u diag(s) v^H, as TensorFlow orders them.

    s is real (float32 for complex64): the Svd op gives it in the input's dtype, as TensorFlow's, and this
    takes its real part, as TensorFlow's svd does."""
    s, u, v = _Svd(_t(tensor), bool(compute_uv), bool(full_matrices))
    if s.dtype.is_complex:
        s = math_ops.real(s)
    return (s, u, v) if compute_uv else s


def pinv(a, rcond=None, validate_args=False, name=None):
    """Moore-Penrose pseudo-inverse from the SVD: singular values below rcond * max(s) count as zero."""
    a = _t(a)
    if not a.dtype.is_floating:  # TensorFlow's check, complex included
        raise TypeError(f"Input `a` must have `float`-like `dtype` (saw {a.dtype.name}).")
    m, n = _static_dims(a)
    if m is None or n is None:
        raise ValueError(f"pinv: the matrix's last two dims must be known, got shape {a.shape}")
    if rcond is None:
        rcond = 10.0 * max(m, n) * float(np.finfo(a.dtype.as_numpy_dtype).eps)
    s, u, v = svd(a, full_matrices=False, compute_uv=True)
    cutoff = math_ops.cast(rcond, a.dtype) * math_ops.reduce_max(s, -1, keepdims=True)
    kept = array_ops.where(s > cutoff, s, array_ops.fill(array_ops.shape(s), math_ops.cast(np.inf, a.dtype)))
    return math_ops.matmul(v / array_ops.expand_dims(kept, -2), u, transpose_b=True)


def sqrtm(input, name=None):  # noqa: A002 - TF's name
    """The principal square root of each square matrix; NaN for a real matrix with a negative real eigenvalue,
    as TensorFlow's."""
    return _MatrixSquareRoot(_t(input))


def logm(input, name=None):  # noqa: A002 - TF's name
    """The principal logarithm of each square complex matrix (complex64 or complex128 only, as TensorFlow's);
    NaN for a singular one. Not differentiable (TensorFlow 2.21 registers no gradient)."""
    return _MatrixLogarithm(_t(input))


def _compact_diagonals(diagonals, diagonals_format):
    """The [..., 3, M] compact form (superdiagonal, diagonal, subdiagonal) of TensorFlow's three formats."""
    if diagonals_format == "compact":
        return _t(diagonals)
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
            raise ValueError("Expected diagonals to be a sequence of length 3.")
        superdiag, maindiag, subdiag = (_t(d) for d in diagonals)
        if not (subdiag.shape[:-1].is_compatible_with(maindiag.shape[:-1])
                and superdiag.shape[:-1].is_compatible_with(maindiag.shape[:-1])):
            raise ValueError("Tensors representing the three diagonals must have the same shape, except for the "
                             f"last dimension, got {subdiag.shape}, {maindiag.shape}, {superdiag.shape}")
        m = maindiag.shape[-1]

        def padded(t, what, before):
            n = t.shape[-1]
            if n is None or m is None or n == m:
                return t
            if n != m - 1:
                raise ValueError(f"Expected {what} to be have length {m} or {m - 1}, got {n}.")
            return array_ops.pad(t, [[0, 0]] * (t.shape.rank - 1) + [[1, 0] if before else [0, 1]])

        return array_ops.stack([padded(superdiag, "superdiagonal", False), maindiag,
                                padded(subdiag, "subdiagonal", True)], axis=-2)
    if diagonals_format == "matrix":
        diagonals = _t(diagonals)
        rows, cols = _static_dims(diagonals)
        if rows is not None and cols is not None and rows != cols:
            raise ValueError(f"Expected last two dimensions of diagonals to be same, got {cols} and {rows}")
        return diag_part(diagonals, k=(-1, 1), align="LEFT_RIGHT")
    raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False, conjugate_rhs=False,
                      name=None, partial_pivoting=True, perturb_singular=False):
    """X with A X = rhs for tridiagonal A: rhs [..., M, K] (or [..., K, M] with transpose_rhs, or a vector
    [..., M]); NaN for a singular A, as TensorFlow's."""
    diagonals = _compact_diagonals(diagonals, diagonals_format)
    rhs = _rhs(rhs, diagonals)
    rank, rhs_rank = diagonals.shape.rank, rhs.shape.rank
    if rank is not None:
        if rank < 2:
            raise ValueError(f"Expected diagonals to have rank at least 2, got {rank}")
        if rhs_rank is not None and rhs_rank not in (rank, rank - 1):
            raise ValueError(f"Expected the rank of rhs to be {rank - 1} or {rank}, got {rhs_rank}")
        if rhs_rank is not None and not diagonals.shape[:-2].is_compatible_with(rhs.shape[:rank - 2]):
            raise ValueError(f"Batch shapes {diagonals.shape[:-2]} and {rhs.shape[:rank - 2]} are incompatible")
        if diagonals.shape[-2] is not None and diagonals.shape[-2] != 3:
            raise ValueError(f"Expected 3 diagonals got {diagonals.shape[-2]}")
    vector = rank is not None and rhs_rank == rank - 1
    if conjugate_rhs:
        rhs = math_ops.conj(rhs)
    if vector:
        rhs = array_ops.expand_dims(rhs, -1)
    elif transpose_rhs:
        rhs = math_ops.matrix_transpose(rhs)
    if diagonals.shape.rank and rhs.shape.rank and diagonals.shape[-1] is not None and \
            rhs.shape[-2] is not None and diagonals.shape[-1] != rhs.shape[-2]:
        raise ValueError("Expected number of left-hand sided and right-hand sides to be equal, got "
                         f"{diagonals.shape[-1]} and {rhs.shape[-2]}")
    x = _TridiagonalSolve(diagonals, rhs, bool(partial_pivoting), bool(perturb_singular))
    return array_ops.squeeze(x, -1) if vector else x


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """How many singular values of each matrix exceed tol (default: eps * max(M, N) * the largest), int32."""
    a = _t(a)
    s = svd(a, compute_uv=False)
    if tol is None:
        m, n = _static_dims(a)
        size = (math_ops.cast(max(m, n), s.dtype) if m is not None and n is not None else
                math_ops.cast(math_ops.reduce_max(array_ops.shape(a)[-2:]), s.dtype))
        eps = float(np.finfo(s.dtype.as_numpy_dtype).eps)
        tol = eps * size * math_ops.reduce_max(s, -1, keepdims=True)
    else:
        tol = _t(tol, s.dtype)
    return math_ops.reduce_sum(math_ops.cast(s > tol, dtypes.int32), -1)


def cross(a, b, name=None):
    """The cross product of the 3-vectors in the last dim of a and b (same shapes, no broadcasting, as
    TensorFlow's Cross op); composed of slices, so its gradient is (cross(b, dy), cross(dy, a))."""
    a = _t(a)
    b = _rhs(b, a)
    if a.dtype != b.dtype:
        raise errors.InvalidArgumentError(None, None, f"Cross: a is {a.dtype.name} and b {b.dtype.name}; "
                                          "expected one dtype")
    if a.shape.rank is not None and b.shape.rank is not None and \
            not a.shape.is_compatible_with(b.shape):
        raise errors.InvalidArgumentError(None, None, f"Cross: Both inputs must be of same shape: {a.shape} "
                                          f"vs. {b.shape}")
    last = a.shape[-1] if a.shape.rank else None
    if a.shape.rank == 0 or (last is not None and last != 3):
        raise errors.FailedPreconditionError(None, None, "Cross: Cross-products are only defined for "
                                             f"3-element vectors, got shape {a.shape}")
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    return array_ops.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 - TF's name
    lower, upper = _t(num_lower), _t(num_upper)
    if lower.dtype != upper.dtype:  # TensorFlow's Tindex is one type for both
        lower, upper = math_ops.cast(lower, dtypes.int64), math_ops.cast(upper, dtypes.int64)
    return _MatrixBandPart(_t(input), lower, upper)


def _static_dims(x):
    shape = x.shape
    if shape.rank is None or shape.rank < 2:
        return None, None
    return shape[-2], shape[-1]


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """A batch of matrices with ``diagonal`` on their diagonals k (main: [..., n] -> [..., n, n])."""
    return matrix_diag.diag(diagonal, k, num_rows, num_cols, padding_value, align)


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    """The diagonals k of each matrix (main: [..., min(M, N)])."""
    return matrix_diag.diag_part(input, k, padding_value, align)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002 - TF's name
    return matrix_diag.set_diag(input, diagonal, k, align)


def trace(x, name=None):
    return math_ops.reduce_sum(diag_part(x), -1)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least squares through the regularized normal equations and a Cholesky factor (TensorFlow's fast path).

    The normal equations use A^H A (or A A^H), so complex matrices solve as TensorFlow's."""
    if not fast:
        raise errors.UnimplementedError(None, None, "MatrixSolveLs: only fast=True (the normal equations) is "
                                        "supported")
    a = _t(matrix)
    if a.dtype == dtypes.complex128 and not (isinstance(l2_regularizer, (int, float)) and l2_regularizer == 0):
        # TensorFlow 2.21 refuses this case (its accuracy bug), so a program that runs on ember runs on it.
        raise NotImplementedError("matrix_solve_ls is currently disabled for complex128 and l2_regularizer != 0 "
                                  "due to poor accuracy.")
    b = _t(rhs, a.dtype)
    m, n = _static_dims(a)
    if m is None or n is None:
        raise ValueError(f"MatrixSolveLs: the matrix's last two dims must be known, got shape {a.shape}")
    reg = math_ops.cast(l2_regularizer, a.dtype)
    if m >= n:
        gram = math_ops.matmul(a, a, adjoint_a=True) + reg * array_ops.eye(n, dtype=a.dtype)
        return cholesky_solve(cholesky(gram), math_ops.matmul(a, b, adjoint_a=True))
    gram = math_ops.matmul(a, a, adjoint_b=True) + reg * array_ops.eye(m, dtype=a.dtype)
    return math_ops.matmul(a, cholesky_solve(cholesky(gram), b), adjoint_a=True)


# Padé (13, 13) coefficients of exp and the 1-norm below which it is accurate without scaling (Higham 2005).
_PADE13 = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0]
_THETA13 = 5.371920351148152


def expm(input, name=None):  # noqa: A002 - TF's name
    """exp of each square matrix: scaling and squaring around a Padé (13, 13) approximant."""
    a = _t(input)
    m, n = _static_dims(a)
    if m is not None and n is not None and m != n:
        raise ValueError(f"MatrixExponential: input must be square [..., M, M], got shape {a.shape}")
    norm1 = math_ops.reduce_max(math_ops.reduce_sum(math_ops.abs(a), -2), -1)
    # Per matrix: halve it s times so its 1-norm is below theta, then square the result s times.
    s = math_ops.maximum(math_ops.ceil(math_ops.log(norm1 / _THETA13) / math.log(2.0)), 0.0)
    s = array_ops.where(math_ops.is_finite(s), s, array_ops.zeros_like(s))
    # s is real (the 1-norm's); a complex matrix is divided by its power of two cast to the matrix's dtype.
    divisor = math_ops.cast(math_ops.pow(2.0 * array_ops.ones_like(s), s), a.dtype)
    scaled = a / array_ops.expand_dims(array_ops.expand_dims(divisor, -1), -1)
    b = _PADE13
    ident = band_part(array_ops.ones_like(a), 0, 0)  # the identity, also when n is unknown while tracing
    a2 = math_ops.matmul(scaled, scaled)
    a4 = math_ops.matmul(a2, a2)
    a6 = math_ops.matmul(a4, a2)
    u = math_ops.matmul(scaled, math_ops.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                        + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = math_ops.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    r = solve(v - u, v + u)
    steps = math_ops.reduce_max(s)
    s_mat = array_ops.expand_dims(array_ops.expand_dims(s, -1), -1)

    def body(i, r):
        return i + 1.0, array_ops.where(i < s_mat, math_ops.matmul(r, r), r)

    _, r = control_flow_ops.while_loop(lambda i, r: i < steps, body, [array_ops.zeros_like(steps), r])
    return r

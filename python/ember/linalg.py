"""``ember.linalg``: TensorFlow's ``tf.linalg`` namespace."""

from ember.ops.array_ops import eye  # noqa: F401
from ember.ops.math_ops import adjoint, matmul, matrix_transpose, matvec, norm, tensordot  # noqa: F401
from ember.ops.nn_ops import l2_normalize  # noqa: F401
from ember.ops.special_math_ops import einsum, global_norm  # noqa: F401
from ember.ops.linalg_ops import (  # noqa: F401
    band_part, cholesky, cholesky_solve, cross, det, diag, diag_part, eig, eigh, eigvals, eigvalsh, expm, inv, logdet, logm, lstsq, lu,
    lu_matrix_inverse, lu_reconstruct, lu_solve, matrix_rank, pinv, qr, set_diag, slogdet, solve, sqrtm, svd, trace, triangular_solve,
    tridiagonal_solve)
from ember.ops.linalg_composite_ops import normalize, tensor_diag, tensor_diag_part, tridiagonal_matmul  # noqa: F401,E402

"""``tf.linalg`` helpers composed of existing ops: normalize, tensor_diag, tensor_diag_part and
tridiagonal_matmul (TensorFlow 2.21's semantics; tests/python/test_api_gaps_linalg.py). Gradients come from
the ops they are built of."""

import math

from ember import errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.matrix_diag import diag, diag_part


def _t(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002 - TF's name
    """(tensor / norm, norm): the norm over axis kept as size-1 dimensions, in the tensor's dtype."""
    x = _t(tensor)
    norm = math_ops.norm(x, ord=ord, axis=axis, keepdims=True)
    norm = math_ops.cast(norm, x.dtype)
    return x / norm, norm


def _static_dims(x, op):
    dims = x.shape.as_list() if x.shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"{op}: the input needs a fully known static shape; got {x.shape}")
    return dims


def tensor_diag(diagonal, name=None):
    """A tensor of shape diagonal.shape + diagonal.shape with out[i..., i...] = diagonal[i...], 0 elsewhere."""
    d = _t(diagonal)
    dims = _static_dims(d, "tensor_diag")
    if len(dims) < 1:
        raise errors.InvalidArgumentError(None, None, f"tensor_diag: Input must be at least rank 1, got {len(dims)}")
    n = math.prod(dims)
    return array_ops.reshape(diag(array_ops.reshape(d, [n])), dims + dims)


def tensor_diag_part(input, name=None):  # noqa: A002 - TF's name
    """The inverse of tensor_diag: for input of shape s + s, the values input[i..., i...], shape s."""
    x = _t(input)
    dims = _static_dims(x, "tensor_diag_part")
    half = len(dims) // 2
    if len(dims) == 0 or len(dims) % 2 or dims[:half] != dims[half:]:
        raise errors.InvalidArgumentError(None, None, f"tensor_diag_part: the input's rank must be even and "
                                                      f"positive, its first half of dimensions equal to its "
                                                      f"second; got shape {dims}")
    n = math.prod(dims[:half])
    return array_ops.reshape(diag_part(array_ops.reshape(x, [n, n])), dims[:half])


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """A @ rhs for A tridiagonal, given as ``compact`` [..., 3, M] (superdiagonal, main, subdiagonal rows; the
    superdiagonal's last and the subdiagonal's first entries are ignored), ``sequence`` (a list of the
    three [..., M] vectors) or ``matrix`` [..., M, M]. rhs is [..., M, N]."""
    if diagonals_format == "compact":
        d = _t(diagonals)
        # TensorFlow reads rows 0, 1 and 2 and checks nothing more (a fourth row is ignored).
        if d.shape.rank is not None and d.shape.rank < 2:
            raise errors.InvalidArgumentError(None, None, f"TridiagonalMatMul: expected diagonals of shape "
                                                          f"[..., 3, M]; got shape {d.shape}")
        superdiag, maindiag, subdiag = d[..., 0, :], d[..., 1, :], d[..., 2, :]
    elif diagonals_format == "sequence":
        if not isinstance(diagonals, (list, tuple)) or len(diagonals) != 3:
            raise ValueError("Expected diagonals to be a sequence of length 3.")
        superdiag, maindiag, subdiag = (_t(v) for v in diagonals)
    elif diagonals_format == "matrix":
        m = _t(diagonals)
        if m.shape.rank is not None and m.shape.rank < 2:
            raise ValueError(f"Expected diagonals to be a matrix; got shape {m.shape}")
        maindiag = diag_part(m)
        zero = array_ops.zeros_like(maindiag[..., :1])
        superdiag = array_ops.concat([diag_part(m, k=1), zero], -1)
        subdiag = array_ops.concat([zero, diag_part(m, k=-1)], -1)
    else:
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    b = _t(rhs)
    if b.dtype != maindiag.dtype:
        raise errors.InvalidArgumentError(None, None, f"TridiagonalMatMul: diagonals and rhs must have one dtype; "
                                                      f"got {maindiag.dtype.name} and {b.dtype.name}")
    if b.shape.rank is not None and b.shape.rank < 2:
        raise errors.InvalidArgumentError(None, None, f"TridiagonalMatMul: rhs must be at least rank 2; got shape "
                                                      f"{b.shape}")
    m = b.shape[-2]
    if m is not None and maindiag.shape.rank and maindiag.shape[-1] not in (None, m):
        raise errors.InvalidArgumentError(None, None, f"TridiagonalMatMul: the diagonals' length "
                                                      f"{maindiag.shape[-1]} must equal rhs's rows {m}")
    zero_row = array_ops.zeros_like(b[..., :1, :])
    below = array_ops.concat([b[..., 1:, :], zero_row], -2)  # row i holds rhs[i + 1]
    above = array_ops.concat([zero_row, b[..., :-1, :]], -2)  # row i holds rhs[i - 1]
    return (superdiag[..., :, None] * below + maindiag[..., :, None] * b + subdiag[..., :, None] * above)

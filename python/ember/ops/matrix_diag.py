"""``tf.linalg.diag``, ``diag_part`` and ``set_diag``: TensorFlow's MatrixDiagV3, MatrixDiagPartV3 and
MatrixSetDiagV3 ops (src/ember/ops/matrix_diag.cc, Note [Diagonal layout] there), for any diagonals k (a
scalar or a band (lo, hi), possibly a tensor computed in the graph) and alignment. What is left here is
TensorFlow's argument conversion: k, num_rows and num_cols become int32 tensors (a float is a TypeError, an
int beyond int32 an InvalidArgumentError: TensorFlow wraps it around silently), padding_value takes the
matrix's dtype.
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

_MatrixDiagV3 = _C.op("MatrixDiagV3")
_MatrixDiagPartV3 = _C.op("MatrixDiagPartV3")
_MatrixSetDiagV3 = _C.op("MatrixSetDiagV3")
_Pack = _C.op("Pack")
_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _int32(op, what, value):
    """An int32 tensor from an int, a list of ints or an int32 tensor, as TensorFlow converts it."""
    if isinstance(value, Tensor):
        if value.dtype != dtypes.int32:
            raise ValueError(f"{op}: {what} must be an int32 tensor, got {value.dtype.name}")
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return _Pack([_int32(op, what, v) for v in value], 0)  # a band computed in the graph
    values = np.asarray(value, dtype=object)
    for v in values.reshape(-1):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}: {what} must be int32, cannot convert {v!r}")
        if not -(1 << 31) <= int(v) < (1 << 31):
            raise errors.InvalidArgumentError(None, None, f"{op}: {what} = {int(v)} does not fit int32")
    return convert_to_tensor(np.asarray(value, np.int32))


def _align(align):
    if align not in _ALIGNS:
        raise ValueError(f"align must be one of {_ALIGNS}, got {align!r}")
    return align


def _padding(value, dtype):
    return value if isinstance(value, Tensor) and value.dtype == dtype else convert_to_tensor(value, dtype=dtype)


def diag(diagonal, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """MatrixDiagV3: matrices with `diagonal` on the diagonals k and padding_value elsewhere; the size is
    inferred from k and the diagonal's length where num_rows/num_cols are -1 (square when both are)."""
    op = "MatrixDiagV3"
    diagonal = convert_to_tensor(diagonal)
    return _MatrixDiagV3(diagonal, _int32(op, "k", k), _int32(op, "num_rows", num_rows),
                         _int32(op, "num_cols", num_cols), _padding(padding_value, diagonal.dtype), _align(align))


def diag_part(x, k=0, padding_value=0, align="RIGHT_LEFT"):
    """MatrixDiagPartV3: the diagonals k of each matrix, [..., max_len] for one, [..., hi - lo + 1,
    max_len] for a band."""
    x = convert_to_tensor(x)
    return _MatrixDiagPartV3(x, _int32("MatrixDiagPartV3", "k", k), _padding(padding_value, x.dtype), _align(align))


def set_diag(x, diagonal, k=0, align="RIGHT_LEFT"):
    """MatrixSetDiagV3: x with its diagonals k replaced by `diagonal` (laid out as diag_part's result)."""
    x = convert_to_tensor(x)
    diagonal = diagonal if isinstance(diagonal, Tensor) else convert_to_tensor(diagonal, dtype=x.dtype)
    return _MatrixSetDiagV3(x, diagonal, _int32("MatrixSetDiagV3", "k", k), _align(align))

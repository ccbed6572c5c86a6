"""TensorFlow's MatrixDiagV3 family for any diagonals k (a scalar or a band (k0, k1)) and alignment:
``tf.linalg.diag``, ``diag_part`` and ``set_diag`` beyond the main diagonal (linalg_ops.py keeps the k = 0
forms). Each is one gather from a table of positions computed here from the static matrix sizes, so it
traces, differentiates (GatherV2's gradient) and batches like any gather.

Note [Diagonal layout]: diagonals are stacked from k1 (top) down to k0, each padded to the longest,
max_len = min(M + min(k1, 0), N - max(k0, 0)). ``align`` names how superdiagonals and subdiagonals are
padded ("RIGHT_LEFT", TensorFlow's default: superdiagonals right-aligned, i.e. padded on the left,
subdiagonals left-aligned). The main diagonal belongs to both groups: it is left-aligned when either part
says LEFT (checked against TensorFlow for every align and band in tests/python/test_matrix_diag.py).
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor

_op = _C.op
_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")
_MAX_ELEMENTS = 1 << 31  # a position table (a matrix) larger than this is a resource error, not an attempt


def _int(op, what, value):
    """An int argument: a Python/NumPy int or an int scalar tensor; anything else is TensorFlow's TypeError,
    a value beyond int64 an InvalidArgumentError."""
    if isinstance(value, Tensor):
        if value._is_symbolic:
            raise errors.UnimplementedError(None, None, f"{op}: {what} must be known while tracing")
        if value.dtype not in (dtypes.int32, dtypes.int64) or value.shape.rank != 0:
            raise TypeError(f"{op}: {what} must be an int scalar, got {value!r}")
        value = int(value.numpy())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {what} must be an int, got {value!r}")
    value = int(value)
    if not -(1 << 63) <= value < (1 << 63):
        raise errors.InvalidArgumentError(None, None, f"{op}: {what} = {value} does not fit int64")
    return value


def _t(x, dtype=None):
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x, dtype_hint=dtype) if dtype is not None else convert_to_tensor(x)


def _band(op, k):
    if isinstance(k, Tensor) and k.shape.rank == 1 and not k._is_symbolic:
        k = list(k.numpy())
    if isinstance(k, (list, tuple, np.ndarray)):
        k = [_int(op, "k", v) for v in k]
        if len(k) == 1:
            k = [k[0], k[0]]
        if len(k) != 2:
            raise errors.InvalidArgumentError(None, None, f"{op}: k must be a scalar or a pair, got {k}")
    else:
        k = [_int(op, "k", k)] * 2
    if k[0] > k[1]:
        raise errors.InvalidArgumentError(None, None, f"{op}: lower_diag_index must not be larger than "
                                                      f"upper_diag_index: {k[0]} > {k[1]}")
    return k


def _left_aligned(align, d):
    if align not in _ALIGNS:
        raise ValueError(f"align must be one of {_ALIGNS}, got {align!r}")
    upper, lower = align.split("_")
    return (d >= 0 and upper == "LEFT") or (d <= 0 and lower == "LEFT")


def _length(m, n, d):
    return min(m + min(0, d), n - max(0, d))


def _positions(m, n, k0, k1, align):
    """For each diagonal d (k1 first) and slot j < max_len: the matrix position (row * n + col) it holds, or
    -1 for padding; and max_len."""
    max_len = min(m + min(k1, 0), n - max(k0, 0))
    if (k1 - k0 + 1) * max(max_len, 0) > _MAX_ELEMENTS or m * n > _MAX_ELEMENTS:
        raise errors.ResourceExhaustedError(None, None, f"a {m}x{n} matrix with diagonals ({k0}, {k1}) is too "
                                                        f"large")
    table = np.full((k1 - k0 + 1, max(max_len, 0)), -1, np.int64)
    for row, d in enumerate(range(k1, k0 - 1, -1)):
        length = max(_length(m, n, d), 0)
        offset = 0 if _left_aligned(align, d) else max_len - length
        i = np.arange(length, dtype=np.int64)
        table[row, i + offset] = (i + max(0, -d)) * n + i + max(0, d)
    return table, max_len


def _check_band(op, m, n, k0, k1):
    """The diagonals must lie in the matrix (TensorFlow's rule for a non-empty one); the count is bounded by
    the matrix either way, so a hostile band never builds a huge table."""
    if (m and n and not (-m < k0 and k1 < n)) or k1 - k0 > m + n:
        raise errors.InvalidArgumentError(None, None, f"{op}: the diagonals ({k0}, {k1}) must be inside "
                                                      f"(-{m}, {n}) for a {m}x{n} matrix")


def _static_matrix(op, x):
    if x.shape.rank is None or x.shape.rank < 2 or x.shape[-1] is None or x.shape[-2] is None:
        raise errors.UnimplementedError(None, None, f"{op}: the matrix dims must be known (got shape {x.shape})")
    return x.shape[-2], x.shape[-1]


def _batch_flat(x, inner):
    """x with its last `inner` dims flattened into one, and a function restoring the batch dims."""
    shape = _op("Shape")(x, dtypes.int32)
    batch = shape[:x.shape.rank - inner]
    flat = _op("Reshape")(x, _op("ConcatV2")([batch, convert_to_tensor(np.array([-1], np.int32))], 0))
    return flat, batch


def _with_padding(flat, padding_value):
    """flat [..., n] with one more element, padding_value, at position n (where -1 entries point)."""
    pad = _op("BroadcastTo")(_op("Cast")(_t(padding_value, flat.dtype), flat.dtype),
                             _op("ConcatV2")([_op("Shape")(flat, dtypes.int32)[:-1],
                                              convert_to_tensor(np.array([1], np.int32))], 0))
    return _op("ConcatV2")([flat, pad], -1)


def diag_part(x, k, padding_value, align):
    """MatrixDiagPartV3: the diagonals k of each matrix, [..., max_len] for one, [..., k1 - k0 + 1, max_len]
    for a band."""
    op = "MatrixDiagPartV3"
    x = _t(x)
    k0, k1 = _band(op, k)
    m, n = _static_matrix(op, x)
    _check_band(op, m, n, k0, k1)
    table, max_len = _positions(m, n, k0, k1, align)
    flat, batch = _batch_flat(x, 2)
    flat = _with_padding(flat, padding_value)
    index = np.where(table < 0, m * n, table)
    out = _op("GatherV2")(flat, convert_to_tensor(index.reshape(-1)), -1, 0)
    tail = [max_len] if k0 == k1 else [k1 - k0 + 1, max_len]
    return _op("Reshape")(out, _op("ConcatV2")([batch, convert_to_tensor(np.array(tail, np.int32))], 0))


def _matrix_sources(m, n, k0, k1, align):
    """For each matrix position: the slot (diag_row * max_len + j) of the diagonal tensor it takes, or -1."""
    table, max_len = _positions(m, n, k0, k1, align)
    source = np.full(m * n, -1, np.int64)
    flat = table.reshape(-1)
    placed = flat >= 0
    source[flat[placed]] = np.flatnonzero(placed)
    return source, table.shape[0] * max(max_len, 0), max_len


def _diagonal_rows(op, diagonal, k0, k1):
    """The diagonal tensor as [..., num_diags, max_len] (a single diagonal gets its row dim)."""
    if k0 == k1:
        return _op("ExpandDims")(diagonal, -2)
    if diagonal.shape.rank is None or diagonal.shape.rank < 2:
        raise ValueError(f"{op}: a band of diagonals needs diagonal of rank >= 2, got shape {diagonal.shape}")
    if diagonal.shape[-2] is not None and diagonal.shape[-2] != k1 - k0 + 1:
        raise errors.InvalidArgumentError(None, None, f"{op}: diagonal has {diagonal.shape[-2]} diagonals, "
                                                      f"expected k1 - k0 + 1 = {k1 - k0 + 1}")
    return diagonal


def diag(diagonal, k, num_rows, num_cols, padding_value, align):
    """MatrixDiagV3: matrices with the given diagonals and padding_value elsewhere; the size is inferred
    from k and the diagonal's length where num_rows/num_cols are -1 (square when both are)."""
    op = "MatrixDiagV3"
    diagonal = _t(diagonal)
    k0, k1 = _band(op, k)
    if diagonal.shape.rank == 0:
        raise ValueError(f"{op}: diagonal must be at least 1-D, got a scalar")
    rows = _diagonal_rows(op, diagonal, k0, k1)
    max_len = rows.shape[-1]
    if max_len is None:
        raise errors.UnimplementedError(None, None, f"{op}: the diagonal's length must be known")
    min_rows, min_cols = max_len - min(k1, 0), max_len + max(k0, 0)
    num_rows, num_cols = _int(op, "num_rows", num_rows), _int(op, "num_cols", num_cols)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if k1 - k0 + 1 != rows.shape[-2]:
        raise errors.InvalidArgumentError(None, None, f"{op}: diagonal has {rows.shape[-2]} diagonals, expected "
                                                      f"k1 - k0 + 1 = {k1 - k0 + 1}")
    if num_rows < min_rows or num_cols < min_cols:
        raise errors.InvalidArgumentError(None, None, f"{op}: the smallest matrix holding these diagonals is "
                                                      f"{min_rows}x{min_cols}, got {num_rows}x{num_cols}")
    source, slots, want_len = _matrix_sources(num_rows, num_cols, k0, k1, align)
    if want_len != max_len:
        raise errors.InvalidArgumentError(None, None, f"{op}: diagonals of length {max_len} do not fit a "
                                                      f"{num_rows}x{num_cols} matrix (expected length {want_len})")
    flat, batch = _batch_flat(rows, 2)
    flat = _with_padding(flat, padding_value)
    index = np.where(source < 0, slots, source)
    out = _op("GatherV2")(flat, convert_to_tensor(index), -1, 0)
    return _op("Reshape")(out, _op("ConcatV2")([batch, convert_to_tensor(np.array([num_rows, num_cols], np.int32))],
                                               0))


def set_diag(x, diagonal, k, align):
    """MatrixSetDiagV3: x with its diagonals k replaced by `diagonal` (laid out as diag_part's result)."""
    op = "MatrixSetDiagV3"
    x = _t(x)
    diagonal = _t(diagonal, x.dtype)
    k0, k1 = _band(op, k)
    m, n = _static_matrix(op, x)
    _check_band(op, m, n, k0, k1)
    rows = _diagonal_rows(op, diagonal, k0, k1)
    source, slots, max_len = _matrix_sources(m, n, k0, k1, align)
    if rows.shape[-1] is not None and rows.shape[-1] != max_len:
        raise errors.InvalidArgumentError(None, None, f"{op}: diagonal has length {rows.shape[-1]}, expected "
                                                      f"{max_len} for a {m}x{n} matrix and k = ({k0}, {k1})")
    flat, batch = _batch_flat(rows, 2)
    spread = _op("GatherV2")(_with_padding(flat, 0), convert_to_tensor(np.where(source < 0, slots, source)), -1, 0)
    spread = _op("Reshape")(spread, _op("Shape")(x, dtypes.int32))
    on_band = convert_to_tensor((source >= 0).reshape(m, n))
    return _op("SelectV2")(on_band, spread, x)

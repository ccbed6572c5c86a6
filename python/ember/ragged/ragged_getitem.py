"""``rt[key]`` for RaggedTensors, with TensorFlow's rules: ints and slices on the outer dimension, slices on
ragged dimensions (each row sliced), ints and slices on uniform inner dimensions; an int on a ragged inner
dimension is a ValueError, as in TensorFlow."""

import builtins
import numbers

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ragged import ragged_ops
from ember.ragged.ragged_tensor import (RaggedTensor, _invalid, _is_eager, _partition_from_lengths, _scalar,
                                        _unimplemented)

_op = _C.op


def getitem(rt, key):
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key) or any(k is Ellipsis for k in key[:-1] if k is not Ellipsis) \
            or any(isinstance(k, (list, Tensor)) and getattr(k, "ndim", 1) > 0 for k in key):
        raise _unimplemented("ember: RaggedTensor indexing supports ints and slices (no tf.newaxis, "
                                  "tensors of indices or masks yet)")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        fill = rt.shape.rank - (len(key) - 1)
        key = key[:i] + (builtins.slice(None),) * fill + key[i + 1:]
    if len(key) > rt.shape.rank:
        raise ValueError(f"Too many indices for RaggedTensor of rank {rt.shape.rank}: {len(key)}")
    return _getitem(rt, key)


def _getitem(rt, key):
    if not key:
        return rt
    first, rest = key[0], key[1:]
    if isinstance(first, builtins.slice):
        rows = rt if _is_full(first) else _slice_rows(rt, first)
        return _inner(rows, rest)
    row = _row(rt, first)
    if not rest:
        return row
    if isinstance(row, RaggedTensor):
        return _getitem(row, rest)
    return row[rest]


def _is_full(s):
    return s.start is None and s.stop is None and s.step in (None, 1)


def _index(i):
    if isinstance(i, numbers.Integral):
        return int(i)
    if isinstance(i, Tensor) and i.dtype in (dtypes.int32, dtypes.int64) and i.shape.rank == 0:
        return i
    raise TypeError(f"RaggedTensor indices must be integers or slices, got {i!r}")


def _row(rt, i):
    i = _index(i)
    splits_dtype = rt.row_splits.dtype
    nrows = rt.nrows()
    if isinstance(i, int) and _is_eager(nrows):
        n = int(nrows.numpy())
        if not -n <= i < n:
            raise _invalid("RaggedTensor.__getitem__", f"slice index {i} of dimension 0 out of bounds "
                           f"(the RaggedTensor has {n} rows)")
        i = i + n if i < 0 else i
    i = convert_to_tensor(i, dtype=splits_dtype) if isinstance(i, int) else _op("Cast")(i, splits_dtype)
    i = _op("SelectV2")(_op("Less")(i, _scalar(0, splits_dtype)), i + nrows, i)
    start = _op("GatherV2")(rt.row_splits, i, 0, 0)
    limit = _op("GatherV2")(rt.row_splits, i + _scalar(1, splits_dtype), 0, 0)
    values = rt.values
    if isinstance(values, RaggedTensor):
        return _slice_rows(values, builtins.slice(start, limit))
    begin = _op("ConcatV2")([_op("Reshape")(start, [1]), _op("ZerosLike")(_op("Shape")(values, splits_dtype)[1:])], 0)
    size = _op("ConcatV2")([_op("Reshape")(limit - start, [1]), _op("Shape")(values, splits_dtype)[1:]], 0)
    return _op("Slice")(values, begin, size)


def _slice_rows(rt, s):
    """rt's rows at range(nrows)[s], gathered (steps too)."""
    splits_dtype = rt.row_splits.dtype
    positions = _op("Range")(_scalar(0, splits_dtype), rt.nrows(), _scalar(1, splits_dtype))
    if isinstance(s.start, Tensor) or isinstance(s.stop, Tensor):
        begin = _op("Reshape")(_op("Cast")(convert_to_tensor(s.start if s.start is not None else 0), splits_dtype), [1])
        size = _op("Reshape")(_op("Cast")(s.stop, splits_dtype) - begin[0], [1])
        chosen = _op("Slice")(positions, begin, size)
    else:
        chosen = positions[s]
    return ragged_ops.gather(rt, chosen)


def _inner(rt, rest):
    """rest applied to the dimensions below the outer one, row by row."""
    if not rest:
        return rt
    item, more = rest[0], rest[1:]
    if not isinstance(item, builtins.slice):
        raise ValueError("Cannot index into an inner ragged dimension.")
    if not _is_full(item):
        rt = _slice_each_row(rt, item)
    if not more:
        return rt
    values = rt.values
    if isinstance(values, RaggedTensor):
        return rt.with_values(_inner(values, more))
    return rt.with_values(values[(builtins.slice(None),) + tuple(more)])


def _slice_each_row(rt, s):
    """Each row cut to row[s] (Python's slice rules, step 1)."""
    if s.step not in (None, 1):
        raise _unimplemented("ember: a step when slicing a ragged dimension is not supported yet")
    splits_dtype = rt.row_splits.dtype
    lengths = rt.row_lengths()
    zero = _op("ZerosLike")(lengths)

    def bound(b, default):
        if b is None:
            return default
        b = _op("Cast")(b if isinstance(b, Tensor) else convert_to_tensor(b), splits_dtype)
        b = _op("SelectV2")(_op("Less")(b, _scalar(0, splits_dtype)), lengths + b, zero + b)
        return _op("Minimum")(_op("Maximum")(b, zero), lengths)

    begin = bound(s.start, zero)
    end = _op("Maximum")(bound(s.stop, lengths), begin)
    new_lengths = end - begin
    splits, rowids, cols = _partition_from_lengths(new_lengths)
    starts = rt.row_splits[:-1] + begin
    index = _op("GatherV2")(starts, rowids, 0, 0) + cols
    values = rt.values
    values = ragged_ops.gather(values, index) if isinstance(values, RaggedTensor) else \
        _op("GatherV2")(values, index, 0, 0)
    return RaggedTensor.from_row_splits(values, splits, validate=False)

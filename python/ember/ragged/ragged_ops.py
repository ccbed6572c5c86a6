"""Ops on RaggedTensors, composed of registry ops: dense <-> ragged, reductions over ragged axes, concat,
stack, gather, merge_dims and map_flat_values. Each works on the components (flat values and row splits), so
it traces and differentiates through those ops (docs/composite.md)."""

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ragged.ragged_tensor import (RaggedTensor, _concat_zero, _cumsum, _int_arg, _invalid, _is_eager,
                                        _partition_from_lengths, _scalar, _unimplemented)

_op = _C.op


def is_ragged(x):
    return isinstance(x, RaggedTensor)


def _dense(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


# ---- map_flat_values ------------------------------------------------------------------------------------

def map_flat_values(op, *args, **kwargs):
    """op applied to the flat values of the RaggedTensor arguments (which must share their row partitions);
    the result keeps that partition. map_flat_values(tf.ones_like, rt) has rt's rows, all ones."""
    partition = []

    def replace(x):
        if isinstance(x, RaggedTensor):
            partition.append(x)
            return x.flat_values
        if isinstance(x, (list, tuple)):
            return type(x)(replace(v) for v in x)
        if isinstance(x, dict):
            return {k: replace(v) for k, v in x.items()}
        return x

    new_args = replace(list(args))
    new_kwargs = replace(kwargs)
    if not partition:
        return op(*args, **kwargs)
    first = partition[0]
    for other in partition[1:]:
        _check_same_partition(first, other, "map_flat_values")
    out = op(*new_args, **new_kwargs)
    flat = first.flat_values
    if out.shape.rank is not None and flat.shape.rank is not None and out.shape[0] is not None \
            and flat.shape[0] is not None and out.shape[0] != flat.shape[0]:
        raise ValueError(f"map_flat_values: op returned {out.shape[0]} values for {flat.shape[0]} flat values "
                         f"(the op must keep the outer dimension)")
    return first.with_flat_values(out)


def _check_same_partition(a, b, op):
    if a.ragged_rank != b.ragged_rank:
        raise ValueError(f"{op}: inputs have different ragged ranks ({a.ragged_rank} and {b.ragged_rank})")
    for sa, sb in zip(a.nested_row_splits, b.nested_row_splits):
        if sa is sb:
            continue
        if _is_eager(sa, sb):
            x, y = sa.numpy(), sb.numpy()
            if x.shape != y.shape or np.any(x != y):
                raise _invalid(op, f"inputs must have identical row partitions, got row_splits {x.tolist()} and "
                               f"{y.tolist()}")


# ---- dense <-> ragged --------------------------------------------------------------------------------

def to_tensor(rt, default_value=None, shape=None):
    """RaggedTensorToTensor: rows padded with default_value (to the longest row, or to ``shape``, which
    also cuts rows and values beyond it)."""
    if shape is not None:
        shape = [None if d is None or (isinstance(d, int) and d < 0) else d
                 for d in (shape.as_list() if hasattr(shape, "as_list") else list(shape))]
        if len(shape) != rt.shape.rank:
            raise ValueError(f"RaggedTensorToTensor: shape {shape} must have rank {rt.shape.rank}")
    flat = rt.flat_values
    if default_value is None:  # the dtype's zero (b"" for strings)
        default = convert_to_tensor(b"", dtype=flat.dtype) if flat.dtype == dtypes.string else _scalar(0, flat.dtype)
    else:
        default = convert_to_tensor(default_value, dtype=flat.dtype)
    if default.shape.rank not in (0, None) and default.shape.rank > flat.shape.rank - 1:
        raise ValueError(f"RaggedTensorToTensor: default_value of shape {default.shape} must broadcast to the "
                         f"inner shape {flat.shape[1:]}")
    # The kernel (src/ember/ops/ragged.cc): shape -1 takes the longest row; inner dimensions must match, as in
    # TensorFlow.
    wanted = convert_to_tensor(np.asarray(-1 if shape is None else [-1 if d is None else d for d in shape], np.int64))
    return _op("RaggedTensorToTensor")(wanted, flat, default, list(rt.nested_row_splits))


def from_tensor(tensor, lengths, padding, ragged_rank, row_splits_dtype):
    op = "RaggedTensor.from_tensor"
    tensor = _dense(tensor)
    rank = tensor.shape.rank
    if rank is None or rank < 2:
        raise ValueError(f"{op}: tensor must have rank at least 2, got shape {tensor.shape}")
    if not isinstance(ragged_rank, int) or not 0 < ragged_rank < rank:
        raise ValueError(f"{op}: ragged_rank must be in [1, {rank}), got {ragged_rank}")
    if lengths is not None and padding is not None:
        raise ValueError(f"{op}: specify lengths or padding, but not both")
    if ragged_rank > 1:
        if lengths is not None or padding is not None:
            raise _unimplemented(f"{op}: lengths/padding with ragged_rank > 1 is not supported by ember yet")
        # The outer ragged_rank dimensions become uniform ragged rows, innermost first.
        dims = _op("Shape")(tensor, row_splits_dtype)
        flat = _op("Reshape")(tensor, _op("ConcatV2")([_op("Reshape")(_op("Prod")(dims[:ragged_rank + 1], [0],
                                                                                   False), [1]),
                                                        dims[ragged_rank + 1:]], 0))
        result = flat
        for axis in range(ragged_rank, 0, -1):
            result = RaggedTensor.from_uniform_row_length(result, dims[axis], validate=False)
            result = result.with_row_splits_dtype(row_splits_dtype) if result.row_splits.dtype != row_splits_dtype \
                else result
        return result
    dims = _op("Shape")(tensor, row_splits_dtype)
    nrows, ncols = dims[0], dims[1]
    flat = _op("Reshape")(tensor, _op("ConcatV2")([_op("Reshape")(nrows * ncols, [1]), dims[2:]], 0))
    if lengths is None and padding is None:
        splits = _op("Range")(_scalar(0, row_splits_dtype), nrows + _scalar(1, row_splits_dtype),
                              _scalar(1, row_splits_dtype)) * ncols
        rt = RaggedTensor.from_row_splits(flat, splits, validate=False)
        rt._cache["uniform_row_length"] = ncols
        if tensor.shape[1] is not None:
            rt._cache["uniform_static"] = tensor.shape[1]
        return rt
    if padding is not None:
        padding = convert_to_tensor(padding, dtype=tensor.dtype)
        differs = _op("NotEqual")(tensor, padding)
        if rank > 2:
            differs = _op("Any")(differs, list(range(2, rank)), False)
        # The length of a row is one past its last value that is not padding.
        positions = _op("Range")(_scalar(1, row_splits_dtype), ncols + _scalar(1, row_splits_dtype),
                                 _scalar(1, row_splits_dtype))
        marked = _op("SelectV2")(differs, _op("Reshape")(positions, [1, -1]),
                                 _op("ZerosLike")(_op("Reshape")(positions, [1, -1])))
        lengths = _op("Maximum")(_op("Max")(marked, [1], False), _scalar(0, row_splits_dtype))
    else:
        lengths = _dense(lengths)
        if lengths.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"{op}: lengths must be int32 or int64, got {lengths.dtype.name}")
        lengths = _op("Cast")(lengths, row_splits_dtype)
        if _is_eager(lengths, tensor):
            ls = lengths.numpy()
            if ls.size and (ls.min() < 0 or ls.max() > tensor.shape[1]):
                raise _invalid(op, f"lengths must be in [0, {tensor.shape[1]}], got {ls.tolist()}")
    cols = _op("Range")(_scalar(0, row_splits_dtype), ncols, _scalar(1, row_splits_dtype))
    mask = _op("Less")(_op("Reshape")(cols, [1, -1]), _op("Reshape")(lengths, [-1, 1]))
    where = _op("Reshape")(_op("Where")(_op("Reshape")(mask, [-1])), [-1])
    values = _op("GatherV2")(flat, where, 0, 0)
    return RaggedTensor.from_row_lengths(values, lengths, validate=False)


# ---- merge_dims --------------------------------------------------------------------------------------

def merge_dims(rt, outer_axis, inner_axis):
    """Dimensions outer_axis..inner_axis merged into one: merge_dims(0, 1) of [[1, 2], [3]] is [1, 2, 3]."""
    rank = rt.shape.rank
    if outer_axis < 0:
        outer_axis += rank
    if inner_axis < 0:
        inner_axis += rank
    if not 0 <= outer_axis <= inner_axis < rank:
        raise ValueError(f"merge_dims: expected 0 <= outer_axis ({outer_axis}) <= inner_axis ({inner_axis}) < "
                         f"rank ({rank})")
    if outer_axis == inner_axis:
        return rt
    if outer_axis == 0:
        values = rt
        axis = inner_axis
        while axis > 0 and isinstance(values, RaggedTensor):
            values = values.values
            axis -= 1
        if axis > 0:  # the rest of the merged dimensions are dense inner ones
            dims = _op("Shape")(values, dtypes.int64)
            new = _op("ConcatV2")([_op("Reshape")(_op("Prod")(dims[:axis + 1], [0], False), [1]),
                                   dims[axis + 1:]], 0)
            values = _op("Reshape")(values, new)
        return values
    if outer_axis > 1:  # rt's first two dimensions stay: the values' dimensions merge
        return rt.with_values(merge_dims(rt.values, outer_axis - 1, inner_axis - 1))
    # Each value of rt becomes a block of the merged values: rt's splits move to the blocks' offsets.
    new_values = merge_dims(rt.values, 0, inner_axis - 1)
    offsets = _merged_offsets(rt.values, inner_axis - 1, rt.row_splits.dtype)
    return RaggedTensor.from_row_splits(new_values, _op("GatherV2")(offsets, rt.row_splits, 0, 0), validate=False)


def _merged_offsets(x, depth, dtype):
    """Where each outer element of x starts (and the last ends) in merge_dims(x, 0, depth)."""
    if isinstance(x, RaggedTensor):
        if depth == 0:
            return _op("Range")(_scalar(0, dtype), x.nrows() + _scalar(1, dtype), _scalar(1, dtype))
        return _op("GatherV2")(_merged_offsets(x.values, depth - 1, dtype), x.row_splits, 0, 0)
    dims = _op("Shape")(x, dtype)
    step = _op("Prod")(dims[1:depth + 1], [0], False)
    return _op("Range")(_scalar(0, dtype), dims[0] + _scalar(1, dtype), _scalar(1, dtype)) * step


# ---- reductions ----------------------------------------------------------------------------------------

_SEGMENT = {"sum": "UnsortedSegmentSum", "max": "UnsortedSegmentMax", "min": "UnsortedSegmentMin",
            "prod": "UnsortedSegmentProd"}


def _segment_reduce(data, ids, n, kind):
    """Rows of ``data`` (a tensor or ragged) combined per segment id into n rows; ragged rows are combined
    position by position, so a segment's row is as long as its longest member (shorter ones add nothing)."""
    if not isinstance(data, RaggedTensor):
        if kind in ("all", "any"):
            as_int = _op("Cast")(data, dtypes.int32)
            red = _op("UnsortedSegmentMin" if kind == "all" else "UnsortedSegmentMax")(as_int, ids, n)
            if kind == "any":  # an empty segment: the lowest int; all of nothing is true (the highest)
                red = _op("Maximum")(red, _op("ZerosLike")(red))
            return _op("Cast")(red, dtypes.bool)
        return _op(_SEGMENT[kind])(data, ids, n)
    splits_dtype = data.row_splits.dtype
    ids = _op("Cast")(ids, splits_dtype)
    n = _op("Cast")(n, splits_dtype)
    lengths = data.row_lengths()
    new_lengths = _op("Maximum")(_op("UnsortedSegmentMax")(lengths, ids, n), _scalar(0, splits_dtype))
    new_splits = _concat_zero(_cumsum(new_lengths))
    rowids = data.value_rowids()
    new_index = _op("GatherV2")(new_splits, _op("GatherV2")(ids, rowids, 0, 0), 0, 0) + data._value_columns()
    values = _segment_reduce(data.values, new_index, new_splits[-1], kind)
    return RaggedTensor.from_row_splits(values, new_splits, validate=False)


def _reduce_axis(rt, axis, kind):
    if axis == 0:
        ids = _op("ZerosLike")(rt.row_splits[1:])
        result = _segment_reduce(rt, ids, _scalar(1, rt.row_splits.dtype), kind)
        return result[0]
    if axis == 1:
        return _segment_reduce(rt.values, rt.value_rowids(), rt.nrows(), kind)
    if isinstance(rt.values, RaggedTensor):
        return rt.with_values(_reduce_axis(rt.values, axis - 1, kind))
    return rt.with_values(_dense_reduce(rt.values, axis - 1, kind))


def _dense_reduce(x, axis, kind):
    names = {"sum": "Sum", "max": "Max", "min": "Min", "prod": "Prod", "all": "All", "any": "Any"}
    return _op(names[kind])(x, [axis], False)


def reduce(kind, input_tensor, axis=None, keepdims=False):
    """reduce_sum/max/min/prod/all/any of a RaggedTensor: axis None reduces everything to a scalar."""
    rt = input_tensor
    rank = rt.shape.rank
    if axis is None:
        out = _dense_reduce(_op("Reshape")(rt.flat_values, [-1]), 0, kind)
        return _op("Reshape")(out, [1] * rank) if keepdims else out
    axes = [_int_arg(a, f"reduce_{kind}", "axis") for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    axes = sorted({a + rank if a < 0 else a for a in axes}, reverse=True)
    for a in axes:
        if not 0 <= a < rank:
            raise ValueError(f"reduce_{kind}: axis {a} is out of range for a RaggedTensor of rank {rank}")
    result = rt
    for a in axes:
        if isinstance(result, RaggedTensor):
            result = _reduce_axis(result, a, kind)
        else:
            result = _dense_reduce(result, a, kind)
    if keepdims:
        if isinstance(result, RaggedTensor):
            raise _unimplemented("ember: keepdims=True for a RaggedTensor reduction whose result is ragged is "
                                      "not supported yet")
        for a in sorted(axes):  # the reduced axes back as size 1, lowest first
            result = _op("ExpandDims")(result, a)
    return result


def reduce_mean(input_tensor, axis=None, keepdims=False):
    """The mean over the values present (rows differ in how many values they have)."""
    rt = input_tensor
    values = rt.flat_values
    if values.dtype.is_integer:  # TensorFlow's ragged mean divides in float64
        rt = rt.with_flat_values(_op("Cast")(values, dtypes.float64))
    total = reduce("sum", rt, axis, keepdims)
    count = reduce("sum", rt.with_flat_values(_op("OnesLike")(rt.flat_values)), axis, keepdims)
    if isinstance(total, RaggedTensor):
        return total.with_flat_values(total.flat_values / count.flat_values)
    return total / count


# ---- concat, stack, gather ----------------------------------------------------------------------------

def _as_ragged(x, ragged_rank, splits_dtype):
    if isinstance(x, RaggedTensor):
        return x.with_row_splits_dtype(splits_dtype)
    x = _dense(x)
    return from_tensor(x, None, None, ragged_rank, splits_dtype) if ragged_rank else x


def _values_list(values, op):
    if isinstance(values, RaggedTensor) or not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{op}: expected a non-empty list of RaggedTensors and tensors, got {values!r}")
    return list(values)


def concat(values, axis):
    """tf.concat of RaggedTensors (and dense tensors of the same rank): along axis 0 the rows follow each
    other; along axis 1 row i joins the i-th rows."""
    values = _values_list(values, "concat")
    axis = _int_arg(axis, "concat", "axis")
    ragged = [v for v in values if isinstance(v, RaggedTensor)]
    rank = ragged[0].shape.rank
    splits_dtype = dtypes.int64 if any(v.row_splits.dtype == dtypes.int64 for v in ragged) else dtypes.int32
    ragged_rank = max(v.ragged_rank for v in ragged)
    values = [_as_ragged(v, min(ragged_rank, max(1, v.shape.rank - 1)), splits_dtype) for v in values]
    if axis < 0:
        axis += rank
    if len(values) == 1:
        return values[0]
    if axis == 0:
        return _concat_rows(values)
    stacked = stack(values, axis)
    return merge_dims(stacked, axis, axis + 1)


def _concat_rows(values):
    for v in values[1:]:
        if v.ragged_rank != values[0].ragged_rank:
            raise ValueError(f"concat: ragged ranks differ ({values[0].ragged_rank} and {v.ragged_rank})")
    inner = [v.values for v in values]
    inner_values = _concat_rows(inner) if isinstance(inner[0], RaggedTensor) else _op("ConcatV2")(inner, 0)
    pieces, offset = [values[0].row_splits], values[0].row_splits[-1]
    for v in values[1:]:
        pieces.append(v.row_splits[1:] + offset)
        offset = offset + v.row_splits[-1]
    return RaggedTensor.from_row_splits(inner_values, _op("ConcatV2")(pieces, 0), validate=False)


def stack(values, axis=0):
    """tf.stack of RaggedTensors: a new dimension at axis (0: one row per input; 1: row i of the result
    holds the i-th rows of the inputs)."""
    values = _values_list(values, "tf.ragged.stack")
    axis = _int_arg(axis, "tf.ragged.stack", "axis")
    if not any(isinstance(v, RaggedTensor) for v in values):  # tf.ragged.stack of dense tensors
        values = [from_tensor(_dense(v), None, None, 1, dtypes.int64) if _dense(v).shape.rank and
                  _dense(v).shape.rank >= 2 else _dense(v) for v in values]
        if not any(isinstance(v, RaggedTensor) for v in values):
            from ember.ops import array_ops

            return array_ops.stack(values, axis)
    ragged = [v for v in values if isinstance(v, RaggedTensor)]
    splits_dtype = dtypes.int64 if any(v.row_splits.dtype == dtypes.int64 for v in ragged) else dtypes.int32
    rank = ragged[0].shape.rank
    ragged_rank = max(v.ragged_rank for v in ragged)
    values = [_as_ragged(v, min(ragged_rank, max(1, v.shape.rank - 1)), splits_dtype) for v in values]
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        raise ValueError(f"tf.ragged.stack: axis {axis} is out of range for inputs of rank {rank}")
    if axis == 0:
        rows = _concat_rows(values)
        counts = _op("Pack")([v.nrows() for v in values], 0)
        return RaggedTensor.from_row_lengths(rows, counts, validate=False)
    if axis == 1:
        k = len(values)
        rows = _concat_rows(values)
        nrows = values[0].nrows()
        for v in values[1:]:
            if _is_eager(nrows) and int(v.nrows().numpy()) != int(nrows.numpy()):
                raise _invalid("stack", f"inputs must have the same number of rows, got {int(nrows.numpy())} "
                               f"and {int(v.nrows().numpy())}")
        # Row i of input m is row m * nrows + i of the concatenation; it goes to i * k + m.
        i = _op("Range")(_scalar(0, splits_dtype), nrows, _scalar(1, splits_dtype))
        m = _op("Range")(_scalar(0, splits_dtype), _scalar(k, splits_dtype), _scalar(1, splits_dtype))
        order = _op("Reshape")(_op("Reshape")(m, [1, -1]) * nrows + _op("Reshape")(i, [-1, 1]), [-1])
        gathered = gather(rows, order)
        result = RaggedTensor.from_uniform_row_length(gathered, _scalar(k, dtypes.int64), nrows=nrows,
                                                      validate=False).with_row_splits_dtype(splits_dtype)
        result._cache.pop("uniform_static", None)  # TensorFlow's result has a ragged dimension there
        return result
    return RaggedTensor.from_row_splits(stack([v.values if isinstance(v, RaggedTensor) else v
                                              for v in values], axis - 1), values[0].row_splits, validate=False) \
        if all(v.row_splits is values[0].row_splits for v in values) else _stack_inner(values, axis)


def _stack_inner(values, axis):
    for v in values[1:]:
        _check_same_partition(values[0], v, "stack")
    return values[0].with_values(stack([v.values for v in values], axis - 1)) \
        if isinstance(values[0].values, RaggedTensor) else \
        values[0].with_values(_op("Pack")([v.values for v in values], axis - 1))


def gather(params, indices, axis=0):
    """Rows of a RaggedTensor at ``indices`` (a vector or a RaggedTensor of indices)."""
    if isinstance(indices, RaggedTensor):
        return indices.with_flat_values(gather(params, indices.flat_values, axis))
    indices = _dense(indices)
    if axis not in (0, None):
        if axis < 0:
            axis += params.shape.rank
        if axis > params.ragged_rank:
            return params.with_flat_values(_op("GatherV2")(params.flat_values, indices, axis - params.ragged_rank, 0))
        raise _unimplemented("ember: tf.gather on a ragged axis other than 0 is not supported yet")
    splits_dtype = params.row_splits.dtype
    indices = _op("Cast")(indices, splits_dtype)
    if _is_eager(indices, params.row_splits):
        n = int(params.nrows().numpy())
        bad = indices.numpy()
        bad = bad[(bad < 0) | (bad >= n)]
        if bad.size:
            raise _invalid("RaggedGather", f"indices[{int(np.argmax((indices.numpy() < 0) | (indices.numpy() >= n)))}]"
                           f" = {bad[0]} is not in [0, {n})")
    if indices.shape.rank != 1:
        flat = gather(params, _op("Reshape")(indices, [-1]))
        dims = indices.shape.as_list()
        result = flat
        for d in reversed(dims[1:]):
            result = RaggedTensor.from_uniform_row_length(result, _scalar(d, dtypes.int64), validate=False) \
                .with_row_splits_dtype(splits_dtype)
            result._cache.pop("uniform_static", None)
        return result
    starts = _op("GatherV2")(params.row_splits[:-1], indices, 0, 0)
    lengths = _op("GatherV2")(params.row_lengths(), indices, 0, 0)
    splits, rowids, cols = _partition_from_lengths(lengths)
    value_index = _op("GatherV2")(starts, rowids, 0, 0) + cols
    inner = params.values
    inner = gather(inner, value_index) if isinstance(inner, RaggedTensor) else _op("GatherV2")(inner, value_index, 0, 0)
    return RaggedTensor.from_row_splits(inner, splits, validate=False)


def boolean_mask(data, mask):
    """Values of ``data`` where the ragged or dense ``mask`` is true, keeping the rows."""
    if isinstance(mask, RaggedTensor) and isinstance(data, RaggedTensor):
        _check_same_partition(data, mask, "boolean_mask")
        keep = _op("Cast")(mask.flat_values, data.row_splits.dtype)
        where = _op("Reshape")(_op("Where")(mask.flat_values), [-1])
        values = _op("GatherV2")(data.flat_values, where, 0, 0)
        if data.ragged_rank != 1:
            raise _unimplemented("ember: ragged boolean_mask with ragged_rank > 1 is not supported yet")
        lengths = _op("UnsortedSegmentSum")(keep, data.value_rowids(), data.nrows())
        return RaggedTensor.from_row_lengths(values, lengths, validate=False)
    raise _unimplemented("ember: boolean_mask supports a ragged mask over ragged data only")


def row_splits_to_segment_ids(splits, name=None, out_type=None):
    rt = RaggedTensor.from_row_splits(_op("ZerosLike")(_op("Range")(_scalar(0, _dense(splits).dtype),
                                                                      _dense(splits)[-1],
                                                                      _scalar(1, _dense(splits).dtype))),
                                      splits, validate=True)
    ids = rt.value_rowids()
    return ids if out_type is None else _op("Cast")(ids, dtypes.as_dtype(out_type))


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    ids = _dense(segment_ids)
    out_type = dtypes.as_dtype(out_type) if out_type is not None else dtypes.int64
    rt = RaggedTensor.from_value_rowids(_op("ZerosLike")(ids), _op("Cast")(ids, out_type), num_segments)
    return rt.row_splits


def ragged_range(starts, limits=None, deltas=1, dtype=None, name=None, row_splits_dtype=dtypes.int64):
    """tf.ragged.range: row i is range(starts[i], limits[i], deltas[i])."""
    if limits is None:
        starts, limits = 0, starts
    limits = _dense(limits)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else limits.dtype
    starts = _op("Cast")(_dense(starts), dtype)
    limits = _op("Cast")(limits, dtype)
    deltas = _op("Cast")(_dense(deltas), dtype)
    rank = max(t.shape.rank for t in (starts, limits, deltas))
    if rank == 0:
        starts, limits = _op("Reshape")(starts, [1]), _op("Reshape")(limits, [1])
    zero = _op("ZerosLike")(starts) + _op("ZerosLike")(limits) + _op("ZerosLike")(deltas)  # the broadcast shape
    starts, limits, deltas = starts + zero, limits + zero, deltas + zero
    if _is_eager(deltas) and np.any(deltas.numpy() == 0):
        raise _invalid("RaggedRange", "Requires delta != 0")
    span = limits - starts
    counts = _op("Ceil")(_op("Cast")(span, dtypes.float64) / _op("Cast")(deltas, dtypes.float64))
    counts = _op("Maximum")(_op("Cast")(counts, row_splits_dtype), _scalar(0, row_splits_dtype))
    splits, rows, cols = _partition_from_lengths(counts)
    cols = _op("Cast")(cols, dtype)
    values = _op("GatherV2")(starts, rows, 0, 0) + cols * _op("GatherV2")(deltas, rows, 0, 0)
    return RaggedTensor.from_row_splits(values, splits, validate=False)

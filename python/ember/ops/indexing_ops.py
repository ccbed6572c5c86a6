"""N-d indexing, scatters, segments and the index helpers with TensorFlow's names: ``gather_nd``,
``scatter_nd``, ``tensor_scatter_nd_*``, ``math.segment_*`` and ``math.unsorted_segment_*``, ``math.bincount``,
``dynamic_partition``/``dynamic_stitch``, ``unique``, ``meshgrid``, ``roll``, ``reverse``, ``repeat``,
``sequence_mask``, ``searchsorted`` and ``histogram_fixed_width``.

The ops with a kernel of their own are in src/ember/ops/scatter_nd.cc and sort.cc; the others are composed here
of registry ops, as TensorFlow's Python composes them, so they trace, differentiate and batch through those.
"""

import collections

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops
from ember.ops.array_ops import _INDEX_DTYPES, _invalid, _shape_operand, _tensor, _to_int

_GatherNd = _C.op("GatherNd")
_ScatterNd = _C.op("ScatterNd")
_TensorScatter = {mode: _C.op(f"TensorScatter{mode}") for mode in ("Update", "Add", "Sub", "Min", "Max")}
_UnsortedSegment = {kind: _C.op(f"UnsortedSegment{kind}") for kind in ("Sum", "Max", "Min", "Prod")}
_Unique = _C.op("Unique")
_ReverseV2 = _C.op("ReverseV2")
_Roll = _C.op("Roll")
_UniqueWithCounts = _C.op("UniqueWithCounts")
_LowerBound = _C.op("LowerBound")
_UpperBound = _C.op("UpperBound")
_Shape = _C.op("Shape")
_Reshape = _C.op("Reshape")
_Cast = _C.op("Cast")
_Range = _C.op("Range")
_Max = _C.op("Max")
_Less = _C.op("Less")
_Equal = _C.op("Equal")
_Maximum = _C.op("Maximum")
_Minimum = _C.op("Minimum")
_SelectV2 = _C.op("SelectV2")
_ConcatV2 = _C.op("ConcatV2")
_GatherV2 = _C.op("GatherV2")
_OnesLike = _C.op("OnesLike")
_ZerosLike = _C.op("ZerosLike")
_Fill = _C.op("Fill")
_Floor = _C.op("Floor")
_RealDiv = _C.op("RealDiv")
_ClipByValue = _C.op("ClipByValue")


def _indices(indices, op):
    indices = _tensor(indices)
    if indices.dtype == dtypes.int16:  # TF accepts int16 indices; the ops take int32 and int64
        indices = _Cast(indices, dtypes.int32)
    if indices.dtype not in _INDEX_DTYPES:
        raise _invalid(op, f"indices must be int32 or int64, got {indices.dtype.name}")
    return indices


def _dims(x):
    """x's dims: ints where known, else int32 scalar tensors read from Shape(x) at run time."""
    dims = x.shape.as_list()
    if None not in dims:
        return dims
    shape = _Shape(x, dtypes.int32)
    return [d if d is not None else shape[i] for i, d in enumerate(dims)]


def _vector(values):
    """ints and int32 scalar tensors as one shape operand."""
    if all(isinstance(v, int) for v in values):
        return list(values)
    return array_ops._pack_ints(values, "shape", "shape")


def _product(values):
    out = 1
    for v in values:
        out = out * v
    return out


# ---- gather_nd / scatter_nd -----------------------------------------------------------------------


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of params at the index tuples in indices' last dim; the first ``batch_dims`` dims of params and
    indices are batch dims, indexed together (TF's batch_gather_nd)."""
    params = _tensor(params)
    indices = _indices(indices, "GatherNd")
    batch_dims = _to_int(batch_dims, "GatherNd", "batch_dims")
    if batch_dims == 0:
        return _GatherNd(params, indices)
    if batch_dims < 0 or indices.shape.rank is None or batch_dims >= indices.shape.rank:
        raise ValueError(f"gather_nd: batch_dims must be in [0, rank(indices) - 1), got {batch_dims} for "
                         f"indices of shape {indices.shape}")
    # Collapse the batch dims into one, put the batch number in front of each tuple, and gather once.
    pdims, idims = _dims(params), _dims(indices)
    batch = _product(pdims[:batch_dims])
    flat_params = _Reshape(params, _vector([batch] + pdims[batch_dims:]))
    flat_indices = _Reshape(indices, _vector([batch] + idims[batch_dims:]))
    inner = idims[batch_dims:-1]
    number = _Range(convert_to_tensor(0, dtype=indices.dtype), _Cast(convert_to_tensor(batch), indices.dtype)
                    if isinstance(batch, Tensor) else convert_to_tensor(batch, dtype=indices.dtype),
                    convert_to_tensor(1, dtype=indices.dtype))
    number = _Reshape(number, [-1] + [1] * (len(inner) + 1))
    number = number * _OnesLike(flat_indices[..., :1])
    out = _GatherNd(flat_params, _ConcatV2([number, flat_indices], -1))
    if out.shape.rank is None:  # the index depth is unknown while tracing
        head = _vector(pdims[:batch_dims])
        head = head if isinstance(head, Tensor) else convert_to_tensor(head, dtype=dtypes.int32)
        return _Reshape(out, _ConcatV2([head, _Shape(out, dtypes.int32)[1:]], 0))
    return _Reshape(out, _vector(pdims[:batch_dims] + _dims(out)[1:]))


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at the index tuples (duplicates sum)."""
    return _ScatterNd(_indices(indices, "ScatterNd"), updates, _shape_operand(shape, "ScatterNd", "shape"))


def _tensor_scatter(mode):
    op_name = f"TensorScatter{mode}"
    op = _TensorScatter[mode]

    def fn(tensor, indices, updates, name=None):
        tensor = _tensor(tensor)
        updates = updates if isinstance(updates, Tensor) else convert_to_tensor(updates, dtype=tensor.dtype)
        return op(tensor, _indices(indices, op_name), updates)

    fn.__name__ = fn.__qualname__ = f"tensor_scatter_nd_{mode.lower()}"
    fn.__doc__ = _C.op_info(op_name)["doc"]
    return fn


tensor_scatter_nd_update = _tensor_scatter("Update")
tensor_scatter_nd_add = _tensor_scatter("Add")
tensor_scatter_nd_sub = _tensor_scatter("Sub")
tensor_scatter_nd_min = _tensor_scatter("Min")
tensor_scatter_nd_max = _tensor_scatter("Max")


# ---- segments -----------------------------------------------------------------------------------


def _index_vector(x, op, what):
    x = _tensor(x)
    if x.dtype not in _INDEX_DTYPES:
        raise TypeError(f"{op}: {what} must be int32 or int64, got {x.dtype.name}")
    return x


def _segment_ids(segment_ids, op):
    return _index_vector(segment_ids, op, "segment_ids")


def _unsorted(kind):
    op_name = f"UnsortedSegment{kind}"
    op = _UnsortedSegment[kind]

    def fn(data, segment_ids, num_segments, name=None):
        num = _shape_operand(num_segments, op_name, "num_segments", errors.InvalidArgumentError, scalar=True)
        return op(_tensor(data), _segment_ids(segment_ids, op_name), num)

    fn.__name__ = fn.__qualname__ = f"unsorted_segment_{kind.lower()}"
    fn.__doc__ = _C.op_info(op_name)["doc"]
    return fn


unsorted_segment_sum = _unsorted("Sum")
unsorted_segment_max = _unsorted("Max")
unsorted_segment_min = _unsorted("Min")
unsorted_segment_prod = _unsorted("Prod")


def _segment_counts(data, segment_ids, num_segments):
    """How many rows each segment has, shaped [num_segments, 1, ...] to broadcast against a segment result."""
    ones = _OnesLike(_Cast(segment_ids, data.dtype))
    count = _UnsortedSegment["Sum"](ones, segment_ids, num_segments)
    extra = data.shape.rank - segment_ids.shape.rank
    return _Reshape(count, [-1] + [1] * extra) if extra else count


def _refuse_complex(data, op_name):
    """TensorFlow composes these of Maximum, which refuses complex values; ember says so by the op's name."""
    if data.dtype.is_complex:
        raise errors.InvalidArgumentError(None, None, f"{op_name}: data must be a real number type, got "
                                          f"{data.dtype.name} (TensorFlow refuses complex data here too)")


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of data's rows per segment (an empty segment: 0)."""
    data = _tensor(data)
    _refuse_complex(data, "UnsortedSegmentMean")
    segment_ids = _segment_ids(segment_ids, "UnsortedSegmentMean")
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    count = _segment_counts(data, segment_ids, num_segments)
    return total / _Maximum(count, convert_to_tensor(1, dtype=data.dtype))


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """The sum of data's rows per segment over the square root of its row count (an empty segment: 0)."""
    data = _tensor(data)
    _refuse_complex(data, "UnsortedSegmentSqrtN")
    segment_ids = _segment_ids(segment_ids, "UnsortedSegmentSqrtN")
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    count = _segment_counts(data, segment_ids, num_segments)
    return total / _C.op("Sqrt")(_Maximum(count, convert_to_tensor(1, dtype=data.dtype)))


def _sorted_segment(kind):
    op_name = f"Segment{kind}"
    op = _C.op(op_name)

    def fn(data, segment_ids, name=None):
        return op(_tensor(data), _segment_ids(segment_ids, op_name))

    fn.__name__ = fn.__qualname__ = f"segment_{kind.lower()}"
    fn.__doc__ = _C.op_info(op_name)["doc"]
    return fn


segment_sum = _sorted_segment("Sum")
segment_mean = _sorted_segment("Mean")
segment_max = _sorted_segment("Max")
segment_min = _sorted_segment("Min")
segment_prod = _sorted_segment("Prod")


def _sparse_segment(kind):
    """tf.sparse.segment_<kind>: the rows data[indices] reduced by sorted segment_ids, into num_segments rows
    (SparseSegment<Kind>WithNumSegments) or the last id + 1 (SparseSegment<Kind>)."""
    ops = {False: _C.op(f"SparseSegment{kind}"), True: _C.op(f"SparseSegment{kind}WithNumSegments")}

    def fn(data, indices, segment_ids, num_segments=None, name=None, sparse_gradient=False):
        op_name = f"SparseSegment{kind}" + ("" if num_segments is None else "WithNumSegments")
        args = [_tensor(data), _index_vector(indices, op_name, "indices"),
                _index_vector(segment_ids, op_name, "segment_ids")]
        if num_segments is not None:
            args.append(_shape_operand(num_segments, op_name, "num_segments", errors.InvalidArgumentError,
                                       scalar=True))
        return ops[num_segments is not None](*args, bool(sparse_gradient))

    fn.__name__ = fn.__qualname__ = f"segment_{'sqrt_n' if kind == 'SqrtN' else kind.lower()}"
    fn.__doc__ = _C.op_info(f"SparseSegment{kind}")["doc"]
    return fn


sparse_segment_sum = _sparse_segment("Sum")
sparse_segment_mean = _sparse_segment("Mean")
sparse_segment_sqrt_n = _sparse_segment("SqrtN")


_DenseBincount = _C.op("DenseBincount")
_HistogramFixedWidth = _C.op("HistogramFixedWidth")
_BINCOUNT_WEIGHT_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32, name=None, axis=None,
             binary_output=False):
    """How often each value in [0, size) occurs in arr (or the sum of its weights), size = max(arr) + 1 clipped
    to [minlength, maxlength]; values at or above maxlength are left out. ``axis=-1`` counts each row."""
    arr = _tensor(arr)
    if arr.dtype not in _INDEX_DTYPES:
        raise TypeError(f"bincount: arr must be int32 or int64, got {arr.dtype.name}")
    if axis not in (None, 0, -1):
        raise ValueError(f"bincount: axis must be None, 0 or -1, got {axis}")
    if weights is not None and binary_output:
        raise ValueError("bincount: binary_output and weights are mutually exclusive")
    if not arr._is_symbolic:
        values = arr.numpy()
        if values.size and values.min() < 0:
            raise _invalid("Bincount", f"arr must be non-negative, got {values.min()}")
    flat = arr if axis == -1 else _Reshape(arr, [-1])
    size = _Max(flat, list(range(flat.shape.rank)), False) + convert_to_tensor(1, dtype=arr.dtype) \
        if flat.shape.num_elements() != 0 else convert_to_tensor(0, dtype=arr.dtype)
    if flat.shape.num_elements() is None:  # empty at run time: max is the lowest int, so clip at 0
        size = _Maximum(size, convert_to_tensor(0, dtype=arr.dtype))
    if minlength is not None:
        size = _Maximum(size, convert_to_tensor(minlength, dtype=arr.dtype))
    if maxlength is not None:
        size = _Minimum(size, convert_to_tensor(maxlength, dtype=arr.dtype))
    out_dtype = dtypes.as_dtype(dtype) if weights is None else _tensor(weights).dtype
    if out_dtype in _BINCOUNT_WEIGHT_TYPES and (axis == -1 or flat.shape.rank == 1):
        # The DenseBincount kernel (src/ember/ops/bincount.cc), per row for axis=-1; no weights: empty.
        w = _Reshape(_Cast(_tensor(weights), out_dtype), _Shape(flat, dtypes.int32)) if weights is not None \
            else _tensor(np.zeros([0], out_dtype.as_numpy_dtype))
        return _DenseBincount(flat, _Cast(size, flat.dtype), w, bool(binary_output))
    values = _OnesLike(_Cast(flat, out_dtype)) if weights is None else \
        _Reshape(_tensor(weights), _Shape(flat, dtypes.int32))
    ids = _SelectV2(_Less(flat, size), flat, -_OnesLike(flat))  # values past maxlength drop out
    if axis == -1:
        # One row per segment block: row r's value v goes to segment r * size + v.
        rows = _Shape(flat, arr.dtype)[0]
        first = _Reshape(_Range(convert_to_tensor(0, dtype=arr.dtype), rows, convert_to_tensor(1, dtype=arr.dtype)),
                         [-1, 1])
        ids = _SelectV2(ids >= _ZerosLike(ids), ids + first * size, ids)
        out = _UnsortedSegment["Sum"](values, ids, rows * size)
        out = _Reshape(out, array_ops._pack_ints([rows, size], "bincount", "shape"))
    else:
        out = _UnsortedSegment["Sum"](values, ids, size)
    if binary_output:
        out = _Minimum(out, _OnesLike(out))
    return out


# ---- partition and stitch, unique ----------------------------------------------------------------


_MAX_PARTITIONS = 1 << 20  # as Unpack's outputs (found by the API fuzzer: 2^63 partitions hung)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """data's slices split into num_partitions lists by the int32 ``partitions`` (a prefix of data's shape)."""
    data = _tensor(data)
    partitions = _tensor(partitions)
    if partitions.dtype != dtypes.int32:
        raise TypeError(f"DynamicPartition: partitions must be int32, got {partitions.dtype.name}")
    num_partitions = _to_int(num_partitions, "DynamicPartition", "num_partitions")
    if not 1 <= num_partitions <= _MAX_PARTITIONS:  # each partition is an output
        raise ValueError(f"DynamicPartition: num_partitions must be in [1, {_MAX_PARTITIONS}], got {num_partitions}")
    return list(_C.op("DynamicPartition")(data, partitions, num_partitions))


def dynamic_stitch(indices, data, name=None):
    """merged[indices[m][i, ...]] = data[m][i, ...]: the lists interleaved into one tensor of max index + 1
    slices; where indices repeat, the later value wins. The indices are int32, as TensorFlow's."""
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise ValueError(f"DynamicStitch: expected as many (at least one) data as indices tensors, got "
                         f"{len(data)} and {len(indices)}")
    indices = [_tensor(i, dtypes.int32) if not isinstance(i, Tensor) else i for i in indices]
    return _C.op("DynamicStitch")(indices, [_tensor(d) for d in data])


UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct elements of the vector x in order of first appearance, and each element's position
    among them."""
    return UniqueOutput(*_Unique(_tensor(x), dtypes.as_dtype(out_idx)))


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """unique, and how often each distinct element appears."""
    return UniqueWithCountsOutput(*_UniqueWithCounts(_tensor(x), dtypes.as_dtype(out_idx)))


# ---- meshgrid, roll, reverse, repeat, sequence_mask ----------------------------------------------


def meshgrid(*args, **kwargs):
    """N-d coordinate grids from N vectors; ``indexing='xy'`` (the default) swaps the first two axes."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    args = [_Reshape(_tensor(a), [-1]) for a in args]
    n = len(args)
    if n == 0:
        return []
    shaped = []
    for i, a in enumerate(args):
        shape = [1] * n
        shape[i] = -1
        shaped.append(_Reshape(a, shape))
    if indexing == "xy" and n > 1:
        for i in (0, 1):
            shape = [1] * n
            shape[1 - i] = -1
            shaped[i] = _Reshape(args[i], shape)
    ones = None
    for s in shaped:
        o = _OnesLike(s)
        ones = o if ones is None else ones * o
    return [s * ones for s in shaped]


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's name
    """Elements shifted along each axis by shift (wrapping around); shifts on one axis add up."""
    return _Roll(_tensor(input), _shape_operand(shift, "Roll", "shift"), _shape_operand(axis, "Roll", "axis"))


def reverse(tensor, axis, name=None):
    """tensor with the order of elements along each of ``axis`` reversed."""
    return _ReverseV2(_tensor(tensor), _shape_operand(axis, "ReverseV2", "axis"))


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    """mask[..., j] = j < lengths[...]; maxlen defaults to max(lengths)."""
    lengths = _tensor(lengths)
    if lengths.dtype not in _INDEX_DTYPES:
        raise TypeError(f"sequence_mask: lengths must be int32 or int64, got {lengths.dtype.name}")
    if maxlen is None:
        maxlen = _Max(lengths, list(range(lengths.shape.rank)), False)
        maxlen = _Maximum(maxlen, _ZerosLike(maxlen))
    else:
        maxlen = _tensor(maxlen, lengths.dtype)
        if maxlen.shape.rank not in (None, 0):
            raise ValueError(f"sequence_mask: maxlen must be a scalar, got shape {maxlen.shape}")
    maxlen = _Cast(maxlen, lengths.dtype) if maxlen.dtype != lengths.dtype else maxlen
    positions = _Range(convert_to_tensor(0, dtype=lengths.dtype), maxlen, convert_to_tensor(1, dtype=lengths.dtype))
    mask = _Less(positions, _C.op("ExpandDims")(lengths, -1))
    dtype = dtypes.as_dtype(dtype)
    return mask if dtype == dtypes.bool else _Cast(mask, dtype)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF's name
    """Each slice along axis repeated ``repeats`` times (a scalar, or one count per slice); axis None
    flattens first."""
    x = _tensor(input)
    if axis is None:
        x = _Reshape(x, [-1])
        axis = 0
    axis = _to_int(axis, "repeat", "axis")
    rank = x.shape.rank
    if not -rank <= axis < rank:
        raise ValueError(f"repeat: axis {axis} is out of range for a tensor of rank {rank}")
    axis %= rank
    repeats = _tensor(repeats, dtypes.int32)
    if repeats.dtype not in _INDEX_DTYPES:
        raise TypeError(f"repeat: repeats must be int32 or int64, got {repeats.dtype.name}")
    n = _dims(x)[axis]
    if repeats.shape.rank == 0:
        repeats = _Fill(_vector([n]), repeats)
    elif repeats.shape.rank != 1:
        raise ValueError(f"repeat: repeats must be a scalar or a vector, got shape {repeats.shape}")
    # Row i of sequence_mask(repeats) has repeats[i] true elements: their row coordinates, in order, are the
    # source slice of each output slice.
    mask = sequence_mask(repeats)
    rows = _C.op("Where")(mask)[:, 0]
    return _GatherV2(x, rows, axis, 0)


# ---- search and histogram -----------------------------------------------------------------------


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """Per row of the innermost axis: where each value would go in the sorted row to keep it sorted;
    ``side='left'`` the first such place, ``'right'`` the last."""
    seq, vals = _tensor(sorted_sequence), _tensor(values)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    for what, t in (("sorted_sequence", seq), ("values", vals)):
        if t.shape.rank == 0:
            raise _invalid("LowerBound" if side == "left" else "UpperBound",
                           f"searchsorted: {what} must be at least 1-D, got a scalar")
    vals = vals if vals.dtype == seq.dtype else _Cast(vals, seq.dtype)
    seq_dims, val_dims = _dims(seq), _dims(vals)
    op = _LowerBound if side == "left" else _UpperBound
    out = op(_Reshape(seq, _vector([-1, seq_dims[-1]])), _Reshape(vals, _vector([-1, val_dims[-1]])),
             dtypes.as_dtype(out_type))
    return _Reshape(out, _vector(val_dims))


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """Counts of values in nbins equal bins over value_range = [lo, hi]; values outside go to the end bins."""
    values = _tensor(values)
    value_range = _tensor(value_range, values.dtype)
    nbins = _tensor(nbins, dtypes.int32)
    if nbins.dtype != dtypes.int32:
        raise TypeError(f"histogram_fixed_width: nbins must be int32, got {nbins.dtype.name}")
    if not nbins._is_symbolic and int(nbins.numpy()) <= 0:
        raise _invalid("HistogramFixedWidth", f"nbins must be positive, got {int(nbins.numpy())}")
    if values.dtype in _BINCOUNT_WEIGHT_TYPES and dtypes.as_dtype(dtype) in _INDEX_DTYPES:
        # The HistogramFixedWidth kernel (src/ember/ops/bincount.cc) checks nbins and value_range at run time.
        return _HistogramFixedWidth(values, value_range, nbins, dtypes.as_dtype(dtype))
    compute = dtypes.float64 if values.dtype in (dtypes.float64, dtypes.int64, dtypes.int32) else dtypes.float32
    v = _Cast(values, compute) if values.dtype != compute else values
    lo, hi = _Cast(value_range[0], compute), _Cast(value_range[1], compute)
    if not value_range._is_symbolic and not lo.numpy() < hi.numpy():
        raise _invalid("HistogramFixedWidth", f"value_range must satisfy lo < hi, got {value_range.numpy()}")
    bins = _Cast(nbins, compute)
    index = _Floor(_RealDiv(v - lo, hi - lo) * bins)
    index = _ClipByValue(index, _ZerosLike(bins), bins - convert_to_tensor(1, dtype=compute))
    ids = _Reshape(_Cast(index, dtypes.int32), [-1])
    ones = _OnesLike(_Cast(ids, dtypes.as_dtype(dtype)))
    return _UnsortedSegment["Sum"](ones, ids, nbins)

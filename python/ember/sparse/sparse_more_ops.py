"""More of ``tf.sparse``: concat, split, softmax, minimum/maximum, fill_empty_rows, to_indicator, bincount,
reset_shape and map_values, composed of registry ops on indices and values like sparse_ops.py, so they
trace inside ``ember.function`` and gradients reach ``values`` (TensorFlow has them for softmax,
fill_empty_rows and map_values; ember's concat and split pass them on too, where TensorFlow's give None)."""

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.sparse.sparse_ops import (_argsort_int64, _dense, _eager, _int_arg, _invalid, _linear, _scalar, _sparse,
                                     reorder, sparse_slice, to_dense)
from ember.sparse.sparse_tensor import SparseTensor

_op = _C.op


def _gather(x, positions):
    return _op("GatherV2")(x, positions, 0, 0)


def _static_rank(sp, op):
    rank = sp.indices.shape[1]
    if rank is None:
        rank = sp.dense_shape.shape[0]
    if rank is None:
        raise ValueError(f"{op}: the rank of the SparseTensor must be known")
    return rank


def _axis(axis, rank, op):
    axis = _int_arg(axis, op, "axis")
    if not -rank <= axis < rank:
        raise _invalid(op, f"axis {axis} is out of range for a SparseTensor of rank {rank}")
    return axis + rank if axis < 0 else axis


# ---- concat, split ------------------------------------------------------------------------------

def concat(axis, sp_inputs, expand_nonconcat_dims=False, name=None):
    """SparseConcat: the SparseTensors joined along ``axis`` (their entries moved by the sizes before them),
    in row-major order. The other dimensions must agree, or with expand_nonconcat_dims each is the largest."""
    sp_inputs = [_sparse(sp, "SparseConcat") for sp in sp_inputs]
    if not sp_inputs:
        raise ValueError("SparseConcat: sp_inputs must not be empty")
    rank = _static_rank(sp_inputs[0], "SparseConcat")
    axis = _axis(axis, rank, "SparseConcat")
    for sp in sp_inputs[1:]:
        if sp.dtype != sp_inputs[0].dtype:
            raise TypeError(f"SparseConcat: the inputs have dtypes {sp_inputs[0].dtype.name} and {sp.dtype.name}")
        if _static_rank(sp, "SparseConcat") != rank:
            raise _invalid("SparseConcat", f"all inputs must have rank {rank}, got one of rank "
                                           f"{_static_rank(sp, 'SparseConcat')}")
    if not expand_nonconcat_dims and all(_eager(sp.dense_shape) for sp in sp_inputs):
        first = sp_inputs[0].dense_shape.numpy()
        for position, sp in enumerate(sp_inputs[1:], 1):
            shape = sp.dense_shape.numpy()
            for d in range(rank):
                if d != axis and shape[d] != first[d]:
                    raise _invalid("SparseConcat", f"Input shapes must match: expected {first[d]} for dimension "
                                                   f"{d} but got {shape[d]} at position {position}")
    unit = convert_to_tensor(np.eye(rank, dtype=np.int64)[axis])  # 1 at axis: moves an entry along it
    offset = _scalar(0, dtypes.int64)
    indices, values, shapes = [], [], []
    for sp in sp_inputs:
        indices.append(sp.indices + _op("Reshape")(offset * unit, [1, -1]))
        values.append(sp.values)
        shapes.append(sp.dense_shape)
        offset = offset + sp.dense_shape[axis]
    others = shapes[0]
    for shape in shapes[1:]:
        others = _op("Maximum")(others, shape) if expand_nonconcat_dims else others
    dense_shape = others * (1 - unit) + offset * unit
    joined = SparseTensor(_op("ConcatV2")(indices, 0), _op("ConcatV2")(values, 0), dense_shape)
    return reorder(joined)


def split(sp_input=None, num_split=None, axis=None, name=None, keyword_required=None):
    """SparseSplit: num_split SparseTensors along ``axis``; the first (size % num_split) pieces are one
    longer than the rest."""
    sp = _sparse(sp_input, "SparseSplit")
    if num_split is None or axis is None:
        raise ValueError("SparseSplit: num_split and axis are required")
    num_split = _int_arg(num_split, "SparseSplit", "num_split")
    if num_split < 1:
        raise _invalid("SparseSplit", f"Input num_split should be between 1 and the splitting dimension size, "
                                      f"got {num_split}")
    rank = _static_rank(sp, "SparseSplit")
    axis = _axis(axis, rank, "SparseSplit")
    size = sp.shape[axis] if sp.shape.rank is not None else None  # static where known, also in a trace
    if size is not None and size < num_split:
        raise _invalid("SparseSplit", f"Input num_split should be between 1 and the splitting dimension size "
                                      f"({size}), got {num_split}")
    size = sp.dense_shape[axis]
    base = _op("FloorDiv")(size, _scalar(num_split, dtypes.int64))
    extra = _op("FloorMod")(size, _scalar(num_split, dtypes.int64))
    unit = convert_to_tensor(np.eye(rank, dtype=np.int64)[axis])
    pieces = []
    start = _scalar(0, dtypes.int64)
    for i in range(num_split):
        length = base + _op("Cast")(_op("Less")(_scalar(i, dtypes.int64), extra), dtypes.int64)
        begin = start * unit
        extent = sp.dense_shape * (1 - unit) + length * unit
        pieces.append(sparse_slice(sp, begin, extent))
        start = start + length
    return pieces


# ---- softmax, minimum, maximum ------------------------------------------------------------------

def softmax(sp_input, name=None):
    """SparseSoftmax: the softmax of each innermost row's stored values (the missing ones are not part of
    it, as if -inf); the result has sp_input's indices."""
    sp = _sparse(sp_input, "SparseSoftmax")
    if not sp.dtype.is_floating:
        raise TypeError(f"SparseSoftmax: values must be floating point, got {sp.dtype.name}")
    rank = _static_rank(sp, "SparseSoftmax")
    if rank < 2:
        raise _invalid("SparseSoftmax", f"the SparseTensor must have rank 2 or more, got {rank}")
    outer = SparseTensor(sp.indices[:, :-1], sp.values, sp.dense_shape[:-1])
    _, row = _op("Unique")(_linear(outer), dtypes.int64)
    rows = _op("Size")(sp.values, dtypes.int64)
    # The row maximum only keeps exp finite; softmax does not depend on it, so no gradient through it.
    peak = _op("StopGradient")(_op("UnsortedSegmentMax")(sp.values, row, rows))
    e = _op("Exp")(sp.values - _gather(peak, row))
    total = _op("UnsortedSegmentSum")(e, row, rows)
    return sp.with_values(_op("RealDiv")(e, _gather(total, row)))


def _union_indices(a, b, op):
    """The row-major union of a's and b's indices (both must be in canonical order, as for TensorFlow)."""
    if _eager(a.dense_shape, b.dense_shape) and a.dense_shape.numpy().tolist() != b.dense_shape.numpy().tolist():
        raise _invalid(op, f"Operands' shapes do not match: got {a.dense_shape.numpy().tolist()} and "
                           f"{b.dense_shape.numpy().tolist()}")
    ones = lambda sp: _op("Fill")(_op("Shape")(sp.values, dtypes.int64), _scalar(1.0, dtypes.float32))  # noqa: E731
    indices, _, _ = _op("SparseAdd")(a.indices, ones(a), a.dense_shape, b.indices, ones(b), b.dense_shape,
                                     _scalar(0.0, dtypes.float32))
    return indices


def _elementwise(a, b, kernel, op):
    a, b = _sparse(a, op), _sparse(b, op)
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: operands have dtypes {a.dtype.name} and {b.dtype.name}")
    indices = _union_indices(a, b, op)
    at = lambda sp: _op("GatherNd")(to_dense(sp, validate_indices=False), indices)  # noqa: E731
    return SparseTensor(indices, _op(kernel)(at(a), at(b)), a.dense_shape)


def maximum(sp_a, sp_b, name=None):
    """SparseSparseMaximum: the elementwise maximum at the union of both operands' indices (a missing
    element is 0)."""
    return _elementwise(sp_a, sp_b, "Maximum", "SparseSparseMaximum")


def minimum(sp_a, sp_b, name=None):
    """SparseSparseMinimum: the elementwise minimum at the union of both operands' indices."""
    return _elementwise(sp_a, sp_b, "Minimum", "SparseSparseMinimum")


# ---- fill_empty_rows, to_indicator, reset_shape, map_values -------------------------------------

def fill_empty_rows(sp_input, default_value, name=None):
    """SparseFillEmptyRows: (the SparseTensor with default_value at [r, 0, ..., 0] for each row r that has
    no entry, its entries grouped by row; a bool vector marking the rows that were empty)."""
    sp = _sparse(sp_input, "SparseFillEmptyRows")
    rank = _static_rank(sp, "SparseFillEmptyRows")
    rows = sp.indices[:, 0]
    count = _op("UnsortedSegmentSum")(_op("OnesLike")(rows), rows, sp.dense_shape[0])
    empty = _op("Equal")(count, _op("ZerosLike")(count))
    empty_rows = _op("Reshape")(_op("Where")(empty), [-1, 1])
    fill_indices = _op("ConcatV2")([empty_rows, _op("ZerosLike")(empty_rows)[:, :0] if rank == 1 else
                                    _op("Fill")(_op("ConcatV2")([_op("Shape")(empty_rows, dtypes.int64)[:1],
                                                                 _scalar([rank - 1], dtypes.int64)], 0),
                                                _scalar(0, dtypes.int64))], 1)
    default = _op("Cast")(_dense(default_value, sp.dtype), sp.dtype) if isinstance(default_value, Tensor) \
        else _scalar(default_value, sp.dtype)
    fill_values = _op("Fill")(_op("Shape")(empty_rows, dtypes.int64)[:1], default)
    indices = _op("ConcatV2")([sp.indices, fill_indices], 0)
    values = _op("ConcatV2")([sp.values, fill_values], 0)
    order = _argsort_int64(indices[:, 0])  # stable: a row's entries keep their order
    return SparseTensor(_gather(indices, order), _gather(values, order), sp.dense_shape), empty


def to_indicator(sp_input, vocab_size, name=None):
    """A dense bool tensor of sp_input's shape with the last dimension replaced by vocab_size: True at
    [..., v] where v is one of the row's (integer) values."""
    sp = _sparse(sp_input, "tf.sparse.to_indicator")
    if not sp.dtype.is_integer:
        raise TypeError(f"tf.sparse.to_indicator: values must be integers, got {sp.dtype.name}")
    vocab = _op("Reshape")(_op("Cast")(_dense(vocab_size, dtypes.int64), dtypes.int64), [1])
    values = _op("Reshape")(_op("Cast")(sp.values, dtypes.int64), [-1, 1])
    if _eager(values, vocab):
        v, n = sp.values.numpy(), int(vocab.numpy()[0])
        bad = [int(x) for x in v if not 0 <= x < n]
        if bad:
            raise _invalid("tf.sparse.to_indicator", f"values must be in [0, vocab_size={n}), got {bad[0]}")
    indices = _op("ConcatV2")([sp.indices[:, :-1], values], 1)
    shape = _op("ConcatV2")([sp.dense_shape[:-1], vocab], 0)
    hits = _op("ScatterNd")(indices, _op("OnesLike")(_op("Reshape")(values, [-1])), shape)
    return _op("Greater")(hits, _op("ZerosLike")(hits))


def reset_shape(sp_input, new_shape=None):
    """The same entries with dense_shape new_shape (each dimension at least the current one), or, without
    it, the tightest shape that holds the indices."""
    sp = _sparse(sp_input, "tf.sparse.reset_shape")
    if new_shape is None:
        rank = _static_rank(sp, "tf.sparse.reset_shape")
        top = _op("Max")(_op("ConcatV2")([sp.indices, _op("Fill")([1, rank], _scalar(-1, dtypes.int64))], 0),
                         [0], False)
        return SparseTensor(sp.indices, sp.values, top + 1)
    shape = _op("Cast")(_dense(new_shape, dtypes.int64), dtypes.int64)
    if shape.shape.rank != 1:
        raise ValueError(f"tf.sparse.reset_shape: new_shape must be a vector, got shape {shape.shape}")
    rank = sp.indices.shape[1]
    if rank is not None and shape.shape[0] is not None and shape.shape[0] != rank:
        raise ValueError(f"tf.sparse.reset_shape: new_shape has rank {shape.shape[0]}, the SparseTensor {rank}")
    if _eager(shape, sp.dense_shape) and np.any(shape.numpy() < sp.dense_shape.numpy()):
        raise ValueError(f"Requested new_shape should have dimension sizes >= sp_input.shape.  Found new_shape "
                         f"({shape.numpy()}), sp_input.shape ({sp.dense_shape.numpy()}).")
    return SparseTensor(sp.indices, sp.values, shape)


def map_values(op, *args, **kwargs):
    """op applied to the values of the SparseTensors among args and kwargs (which must share indices); the
    result has their indices and dense shape."""
    found = [v for v in list(args) + list(kwargs.values()) if isinstance(v, SparseTensor)]
    if not found:
        raise ValueError("tf.sparse.map_values: no SparseTensor among the arguments")
    first = found[0]
    for other in found[1:]:
        if other.indices is not first.indices and _eager(first.indices, other.indices) and (
                first.indices.numpy().shape != other.indices.numpy().shape
                or np.any(first.indices.numpy() != other.indices.numpy())):
            raise _invalid("tf.sparse.map_values", "all SparseTensor arguments must have the same indices")
    swap = lambda v: v.values if isinstance(v, SparseTensor) else v  # noqa: E731
    out = op(*[swap(v) for v in args], **{k: swap(v) for k, v in kwargs.items()})
    return SparseTensor(first.indices, out, first.dense_shape)


# ---- bincount -----------------------------------------------------------------------------------

def bincount(values, weights=None, axis=0, minlength=None, maxlength=None, binary_output=False, name=None):
    """SparseBincount/DenseBincount/RaggedBincount's sparse form: the count (or weight sum, or 1 with
    binary_output) of each value present, as a SparseTensor; axis=0 counts all values together, axis=-1
    each row (dimension 0) of a rank-2 tensor, SparseTensor or RaggedTensor."""
    if axis is None:
        axis = 0
    if axis not in (0, -1):
        raise _invalid("tf.sparse.bincount", f"axis must be 0 or -1, got {axis}")
    flat, row, batch = _bincount_inputs(values, axis)
    w = None
    if weights is not None:
        w = weights.values if isinstance(weights, SparseTensor) else (
            weights.flat_values if hasattr(weights, "flat_values") else _op("Reshape")(_dense(weights), [-1]))
    if _eager(flat) and flat.numpy().size and flat.numpy().min() < 0:
        raise _invalid("tf.sparse.bincount", f"Input arr must be non-negative, got {int(flat.numpy().min())}")
    flat = _op("Cast")(flat, dtypes.int64)
    top = _op("Max")(_op("ConcatV2")([flat, _scalar([-1], dtypes.int64)], 0), [0], False) + 1
    size = top
    if minlength is not None:
        size = _op("Maximum")(size, _op("Cast")(_dense(minlength, dtypes.int64), dtypes.int64))
    if maxlength is not None:
        size = _op("Minimum")(size, _op("Cast")(_dense(maxlength, dtypes.int64), dtypes.int64))
    keep = _op("Reshape")(_op("Where")(_op("Less")(flat, size)), [-1])
    flat = _gather(flat, keep)
    key = _gather(row, keep) * _op("Maximum")(size, _scalar(1, dtypes.int64)) + flat
    unique_keys, slot = _op("Unique")(key, dtypes.int64)
    n = _op("Size")(unique_keys, dtypes.int64)
    if binary_output:
        out_dtype = _values_dtype(values) if w is None else w.dtype
        counts = _op("Fill")([n], _scalar(1, out_dtype))
    elif w is None:
        counts = _op("Cast")(_op("UnsortedSegmentSum")(_op("OnesLike")(flat), slot, n), _values_dtype(values))
    else:
        counts = _op("UnsortedSegmentSum")(_gather(w, keep), slot, n)
    order = _argsort_int64(unique_keys)
    unique_keys, counts = _gather(unique_keys, order), _gather(counts, order)
    width = _op("Maximum")(size, _scalar(1, dtypes.int64))
    if axis == 0:
        return SparseTensor(_op("Reshape")(unique_keys, [-1, 1]), counts, _op("Reshape")(size, [1]))
    indices = _op("Pack")([_op("FloorDiv")(unique_keys, width), _op("FloorMod")(unique_keys, width)], 1)
    return SparseTensor(indices, counts, _op("Pack")([batch, size], 0))


def _values_dtype(values):
    if isinstance(values, SparseTensor):
        return values.dtype
    if hasattr(values, "flat_values"):
        return values.flat_values.dtype
    return _dense(values).dtype


def _bincount_inputs(values, axis):
    """(the values as a vector, each one's row (int64), the number of rows) of a dense, sparse or ragged
    input; with axis=0 every value is in row 0."""
    if isinstance(values, SparseTensor):
        flat = values.values
        row = values.indices[:, 0] if axis == -1 else None
        batch = values.dense_shape[0]
        if axis == -1 and _static_rank(values, "tf.sparse.bincount") != 2:
            raise _invalid("tf.sparse.bincount", "axis=-1 needs a SparseTensor of rank 2")
    elif hasattr(values, "flat_values"):
        flat = values.flat_values
        row = _op("Cast")(values.value_rowids(), dtypes.int64) if axis == -1 else None
        batch = _op("Cast")(values.nrows(), dtypes.int64)
    else:
        dense = _dense(values)
        if axis == -1 and dense.shape.rank != 2:
            raise _invalid("tf.sparse.bincount", f"axis=-1 needs a rank-2 input, got shape {dense.shape}")
        flat = _op("Reshape")(dense, [-1])
        batch = _op("Shape")(dense, dtypes.int64)[0] if axis == -1 else _scalar(1, dtypes.int64)
        if axis == -1:
            width = _op("Shape")(dense, dtypes.int64)[1]
            position = _op("Range")(_scalar(0, dtypes.int64), _op("Size")(flat, dtypes.int64), _scalar(1, dtypes.int64))
            row = _op("FloorDiv")(position, _op("Maximum")(width, _scalar(1, dtypes.int64)))
        else:
            row = None
    if flat.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"tf.sparse.bincount: values must be int32 or int64, got {flat.dtype.name}")
    if row is None:
        row = _op("ZerosLike")(_op("Cast")(flat, dtypes.int64))
    return flat, row, batch

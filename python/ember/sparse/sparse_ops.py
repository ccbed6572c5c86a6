"""``tf.sparse``: ops on SparseTensors, composed of registry ops on their indices and values, so they trace
inside ``ember.function`` and gradients reach ``values`` (and dense operands) through those ops
(docs/composite.md). Where TensorFlow's kernel requires canonical order (row-major, no repeats) or in-range
indices, the eager path checks it and raises InvalidArgumentError naming TensorFlow's op."""

import operator

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.sparse.sparse_tensor import SparseTensor

_op = _C.op


def _invalid(op, message):
    return errors.InvalidArgumentError(None, None, f"{op}: {message}")


def _dense(x, dtype=None):
    if isinstance(x, Tensor):
        return x
    if getattr(x, "_ember_variable", False):
        return convert_to_tensor(x)
    return convert_to_tensor(x, dtype_hint=dtype)


def _sparse(x, op):
    if isinstance(x, SparseTensor):
        return x
    raise TypeError(f"{op}: expected a SparseTensor, got {type(x).__name__}")


def _int_arg(value, op, what):
    if isinstance(value, Tensor) and value.shape.rank == 0 and not value._is_symbolic and value.dtype.is_integer:
        value = value.numpy()
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int, got {value!r}") from None


def _int_list(value, op, what):
    items = value if isinstance(value, (list, tuple)) else [value]
    return [_int_arg(v, op, what) for v in items]


def _eager(*tensors):
    return not any(t._is_symbolic for t in tensors)


def _scalar(v, dtype):
    return convert_to_tensor(v, dtype=dtype)


def _strides(dense_shape):
    """Row-major strides of dense_shape (int64), so indices @ strides is each element's linear position."""
    rank = dense_shape.shape[0]
    if rank == 0:
        return dense_shape
    rest = _op("Cumprod")(dense_shape, 0, True, True)  # exclusive, reverse: product of the later dims
    return rest


def _linear(sp):
    return _op("Sum")(sp.indices * _op("Reshape")(_strides(sp.dense_shape), [1, -1]), [1], False)


def _check_indices(sp, op, need_order):
    """Eager checks of in-range (and, when need_order, strictly increasing row-major) indices, with
    TensorFlow's messages."""
    if not _eager(sp.indices, sp.dense_shape):
        return
    idx = sp.indices.numpy()
    shape = sp.dense_shape.numpy()
    shape_text = "[" + ",".join(str(d) for d in shape) + "]"
    for i, row in enumerate(idx):
        if np.any(row < 0) or np.any(row >= shape):
            raise _invalid(op, f"indices[{i}] = [{','.join(str(v) for v in row)}] is out of bounds: need 0 <= "
                               f"index < {shape_text}")
        if need_order and i:
            prev = tuple(idx[i - 1])
            if tuple(row) == prev:
                raise _invalid(op, f"indices[{i}] = [{','.join(str(v) for v in row)}] is repeated")
            if tuple(row) < prev:
                raise _invalid(op, f"indices[{i}] = [{','.join(str(v) for v in row)}] is out of order. Many "
                                   f"sparse ops require sorted indices. Use `tf.sparse.reorder` to create a "
                                   f"correctly ordered copy.")


# ---- dense <-> sparse ------------------------------------------------------------------------------

def from_dense(tensor, name=None):
    """The non-zero elements of ``tensor`` as a SparseTensor (row-major order)."""
    tensor = _dense(tensor)
    zero = _op("ZerosLike")(tensor)
    indices = _op("Where")(_op("NotEqual")(tensor, zero))
    indices = _op("Cast")(indices, dtypes.int64)
    values = _op("GatherNd")(tensor, indices)
    return SparseTensor(indices, values, _op("Shape")(tensor, dtypes.int64))


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """SparseToDense: the dense tensor, default_value (0) where sp_input has no value. With
    validate_indices, indices must be in range, sorted and unique (tf.sparse.reorder sorts them)."""
    sp = _sparse(sp_input, "SparseToDense")
    zero = b"" if sp.dtype == dtypes.string else 0  # the dtype's zero, as TensorFlow's default
    default = _scalar(zero if default_value is None else default_value, sp.dtype)
    return _op("SparseToDense")(sp.indices, sp.dense_shape, sp.values, default, bool(validate_indices))


def reorder(sp_input, name=None):
    """SparseReorder: the same SparseTensor with its entries in row-major order."""
    sp = _sparse(sp_input, "SparseReorder")
    _check_indices(sp, "SparseReorder", need_order=False)
    order = _argsort_int64(_linear(sp))
    return SparseTensor(_op("GatherV2")(sp.indices, order, 0, 0), _op("GatherV2")(sp.values, order, 0, 0),
                        sp.dense_shape)


def _argsort_int64(keys):
    """A stable ascending argsort of int64 keys."""
    from ember.ops import sort_ops

    return sort_ops.argsort(keys, stable=True)


# ---- products -----------------------------------------------------------------------------------

def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """SparseTensorDenseMatMul: sp_a (a sparse matrix) @ b (dense); adjoint_a/adjoint_b transpose them
    first. A dense first and a sparse second operand is computed as (b^T @ a^T)^T."""
    if not isinstance(sp_a, SparseTensor) and isinstance(b, SparseTensor):
        out = sparse_dense_matmul(b, _op("Transpose")(_dense(sp_a), [1, 0]) if not adjoint_a else _dense(sp_a),
                                  adjoint_a=not adjoint_b, adjoint_b=False)
        return _op("Transpose")(out, [1, 0])
    sp = _sparse(sp_a, "SparseTensorDenseMatMul")
    b = _dense(b, sp.dtype)
    if b.dtype != sp.dtype:
        raise TypeError(f"SparseTensorDenseMatMul: a has dtype {sp.dtype.name} but b has {b.dtype.name}")
    if b.shape.rank != 2 or (sp.indices.shape[1] is not None and sp.indices.shape[1] != 2):
        raise ValueError(f"SparseTensorDenseMatMul: both operands must be matrices, got a of rank "
                         f"{sp.indices.shape[1]} and b of shape {b.shape}")
    if sp.dtype in (dtypes.float32, dtypes.float64):  # the kernel (src/ember/ops/sparse.cc)
        return _op("SparseTensorDenseMatMul")(sp.indices, sp.values, sp.dense_shape, b, bool(adjoint_a),
                                              bool(adjoint_b))
    if adjoint_b:
        b = _op("Transpose")(b, [1, 0])
    rows, cols = sp.indices[:, 0], sp.indices[:, 1]
    out_rows, inner = sp.dense_shape[0], sp.dense_shape[1]
    if adjoint_a:
        rows, cols = cols, rows
        out_rows, inner = inner, out_rows
    if _eager(sp.indices, sp.dense_shape, b):
        _check_matmul(sp, b, adjoint_a)
    products = _op("GatherV2")(b, cols, 0, 0) * _op("Reshape")(sp.values, [-1, 1])
    return _op("UnsortedSegmentSum")(products, rows, out_rows)


def _check_matmul(sp, b, adjoint_a):
    shape = sp.dense_shape.numpy()
    m, k = (shape[1], shape[0]) if adjoint_a else (shape[0], shape[1])
    if b.shape[0] != k:
        raise _invalid("SparseTensorDenseMatMul", f"Cannot multiply A and B because inner dimension does not match: "
                                                  f"{k} vs. {b.shape[0]}")
    idx = sp.indices.numpy()
    for i, (r, c) in enumerate(idx):
        rr, cc = (c, r) if adjoint_a else (r, c)
        if not 0 <= rr < m:
            raise _invalid("SparseTensorDenseMatMul", f"m ({rr}) from index[{i},{1 if adjoint_a else 0}] out of "
                                                      f"bounds (>={m})")
        if not 0 <= cc < k:
            raise _invalid("SparseTensorDenseMatMul", f"k ({cc}) from index[{i},{0 if adjoint_a else 1}] out of "
                                                      f"bounds (>={k})")


def matmul(a, b, adjoint_a=False, adjoint_b=False):
    return sparse_dense_matmul(a, b, adjoint_a, adjoint_b)


def _dense_at_indices(sp, dense, op):
    """The elements of ``dense`` (broadcast to sp's shape) at sp's indices."""
    dense = _dense(dense, sp.dtype)
    rank = dense.shape.rank
    sp_rank = sp.indices.shape[1]
    if rank == 0:
        return _op("BroadcastTo")(dense, _op("Shape")(sp.values, dtypes.int64))
    if sp_rank is not None and rank > sp_rank:
        raise ValueError(f"{op}: the dense operand of rank {rank} does not broadcast to a SparseTensor of rank "
                         f"{sp_rank}")
    idx = sp.indices[:, -rank:] if sp_rank is None or rank < sp_rank else sp.indices
    # Dimensions of size 1 in the dense operand broadcast: read its element 0 there.
    keep = _op("Cast")(_op("Greater")(_op("Shape")(dense, dtypes.int64), _scalar(1, dtypes.int64)), dtypes.int64)
    return _op("GatherNd")(dense, idx * _op("Reshape")(keep, [1, -1]))


def sparse_dense_cwise_mul(sp, dense):
    """SparseDenseCwiseMul: sp * dense (dense broadcast to sp's shape), sparse, at sp's indices."""
    return sp.with_values(sp.values * _dense_at_indices(sp, dense, "SparseDenseCwiseMul"))


def sparse_dense_cwise_div(sp, dense):
    from ember.ops import math_ops

    return sp.with_values(math_ops.truediv(sp.values, _dense_at_indices(sp, dense, "SparseDenseCwiseDiv")))


# ---- add -----------------------------------------------------------------------------------------

def add(a, b, threshold=0, name=None):
    """SparseAdd: sparse + sparse is sparse (values at equal indices summed; sums whose magnitude is
    below threshold dropped); sparse + dense is dense."""
    if not isinstance(a, SparseTensor):
        a, b = b, a
    if not isinstance(a, SparseTensor):
        raise TypeError("tf.sparse.add: at least one operand must be a SparseTensor")
    if not isinstance(b, SparseTensor):
        b = _dense(b, a.dtype)
        _check_indices(a, "SparseTensorDenseAdd", need_order=False)
        return _op("TensorScatterAdd")(b, a.indices, a.values)
    if a.dtype != b.dtype:
        raise TypeError(f"SparseAdd: operands have dtypes {a.dtype.name} and {b.dtype.name}")
    # TensorFlow's SparseAdd op (src/ember/ops/sparse.cc): both operands' entries must be in row-major order.
    real = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(a.dtype, a.dtype)
    thresh = _op("Cast")(_dense(threshold), real) if isinstance(threshold, Tensor) else _scalar(threshold, real)
    indices, values, shape = _op("SparseAdd")(a.indices, a.values, a.dense_shape, b.indices, b.values,
                                              b.dense_shape, thresh)
    return SparseTensor(indices, values, shape)


# ---- reductions, reshape, slice, retain, transpose -----------------------------------------------

def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """SparseReduceSum: the sum over ``axis`` (all axes by default) as a dense tensor (or a SparseTensor
    with output_is_sparse, built from the dense sum where TensorFlow runs SparseReduceSumSparse)."""
    sp = _sparse(sp_input, "SparseReduceSum")
    if axis is None:
        rank = sp.indices.shape[1]
        if rank is None:
            raise ValueError("SparseReduceSum: the rank of the SparseTensor must be known to reduce all axes")
        axes = convert_to_tensor(np.arange(rank, dtype=np.int32))
    elif isinstance(axis, Tensor):
        axes = axis if axis.dtype == dtypes.int32 else _op("Cast")(axis, dtypes.int32)
    else:
        axes = convert_to_tensor(np.asarray(_int_list(axis, "SparseReduceSum", "axis"), np.int32))
    dense = _op("SparseReduceSum")(sp.indices, sp.values, sp.dense_shape, axes, bool(keepdims))
    return from_dense(dense) if output_is_sparse else dense


def reduce_max(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """SparseReduceMax over the stored values (the implicit zeros are not counted, as in TensorFlow's kernel
    for an axis that has stored values)."""
    sp = _sparse(sp_input, "SparseReduceMax")
    dense = to_dense(sp, default_value=_lowest(sp.dtype), validate_indices=False)
    out = _op("Max")(dense, list(range(sp.indices.shape[1])) if axis is None else
                     _int_list(axis, "SparseReduceMax", "axis"), bool(keepdims))
    return from_dense(out) if output_is_sparse else out


def _lowest(dtype):
    return float("-inf") if dtype.is_floating else int(np.iinfo(dtype.as_numpy_dtype).min)


def reshape(sp_input, shape, name=None):
    """SparseReshape: the same elements in a tensor of ``shape`` (one -1 is inferred), row-major."""
    sp = _sparse(sp_input, "SparseReshape")
    new_shape = _op("Cast")(_dense(shape, dtypes.int64), dtypes.int64)
    indices, dense_shape = _op("SparseReshape")(sp.indices, sp.dense_shape, new_shape)
    return SparseTensor(indices, sp.values, dense_shape)


def sparse_slice(sp_input, start, size, name=None):
    """SparseSlice: the entries inside [start, start + size), re-indexed from start; the result's shape is
    size cut at the input's bounds."""
    sp = _sparse(sp_input, "SparseSlice")
    start = _op("Cast")(_dense(start, dtypes.int64), dtypes.int64)
    size = _op("Cast")(_dense(size, dtypes.int64), dtypes.int64)
    end = _op("Minimum")(start + size, sp.dense_shape)
    inside = _op("All")(_op("LogicalAnd")(_op("GreaterEqual")(sp.indices, _op("Reshape")(start, [1, -1])),
                                          _op("Less")(sp.indices, _op("Reshape")(end, [1, -1]))), [1], False)
    keep = _op("Reshape")(_op("Where")(inside), [-1])
    indices = _op("GatherV2")(sp.indices, keep, 0, 0) - _op("Reshape")(start, [1, -1])
    shape = _op("Maximum")(end - start, _op("ZerosLike")(start))
    return SparseTensor(indices, _op("GatherV2")(sp.values, keep, 0, 0), shape)


def retain(sp_input, to_retain):
    """SparseRetain: the entries where the bool vector to_retain is true."""
    sp = _sparse(sp_input, "SparseRetain")
    mask = _dense(to_retain)
    if mask.dtype != dtypes.bool:
        raise TypeError(f"tf.sparse.retain: to_retain must be bool, got {mask.dtype.name}")
    if _eager(mask, sp.values) and mask.shape[0] != sp.values.shape[0]:
        raise ValueError(f"tf.sparse.retain: to_retain has {mask.shape[0]} elements for {sp.values.shape[0]} values")
    keep = _op("Reshape")(_op("Where")(mask), [-1])
    return SparseTensor(_op("GatherV2")(sp.indices, keep, 0, 0), _op("GatherV2")(sp.values, keep, 0, 0),
                        sp.dense_shape)


def transpose(sp_input, perm=None, name=None):
    """The SparseTensor with its dimensions permuted (reversed by default), reordered row-major."""
    sp = _sparse(sp_input, "SparseTranspose")
    rank = sp.indices.shape[1]
    perm = list(range(rank))[::-1] if perm is None else _int_list(perm, "SparseTranspose", "perm")
    if sorted(perm) != list(range(rank)):
        raise _invalid("SparseTranspose", f"perm must be a permutation of [0, {rank}), got {perm}")
    p = convert_to_tensor(np.asarray(perm, np.int64))
    out = SparseTensor(_op("GatherV2")(sp.indices, p, 1, 0), sp.values, _op("GatherV2")(sp.dense_shape, p, 0, 0))
    return reorder(out)


def eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    num_rows = _int_arg(num_rows, "tf.sparse.eye", "num_rows")
    num_columns = num_rows if num_columns is None else _int_arg(num_columns, "tf.sparse.eye", "num_columns")
    if num_rows < 0 or num_columns < 0 or num_rows >= 1 << 62 or num_columns >= 1 << 62:
        raise _invalid("tf.sparse.eye", f"num_rows and num_columns must be in [0, 2^62), got {num_rows}, "
                                        f"{num_columns}")
    n = min(num_rows, num_columns)
    if n > 1 << 28:
        raise errors.ResourceExhaustedError(None, None, f"tf.sparse.eye: {n} diagonal values are too many")
    idx = np.stack([np.arange(n), np.arange(n)], 1).astype(np.int64)
    return SparseTensor(idx, _op("Fill")([n], _scalar(1, dtypes.as_dtype(dtype))), [num_rows, num_columns])


def expand_dims(sp_input, axis=None, name=None):
    sp = _sparse(sp_input, "SparseExpandDims")
    rank = sp.indices.shape[1]
    axis = -1 if axis is None else _int_arg(axis, "SparseExpandDims", "axis")
    if not -rank - 1 <= axis <= rank:
        raise _invalid("SparseExpandDims", f"axis {axis} is out of range for a SparseTensor of rank {rank}")
    if axis < 0:
        axis += rank + 1
    zeros = _op("ZerosLike")(sp.indices[:, :1])
    indices = _op("ConcatV2")([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
    shape = _op("ConcatV2")([sp.dense_shape[:axis], _op("Reshape")(_scalar(1, dtypes.int64), [1]),
                             sp.dense_shape[axis:]], 0)
    return SparseTensor(indices, sp.values, shape)

"""``tf.sets``: set operations along the last dimension of dense tensors and SparseTensors.

Each row (all dimensions but the last) is a set of its values; ``intersection``, ``union`` and
``difference`` give, per row, the sorted distinct result values as a SparseTensor whose last dimension is
the longest result row, and ``size`` the number of distinct values per row.

    a = tf.constant([[1, 2, 3, 3]]); b = tf.constant([[2, 7]])
    tf.sets.union(a, b)   # indices [[0,0],[0,1],[0,2],[0,3]], values [1, 2, 3, 7], dense_shape [1, 4]

The per-row work (grouping, sorting strings and integers, set algebra) runs on the host, as TensorFlow's
set kernels do; inside ``ember.function`` it runs through ``numpy_function``. TensorFlow defines no
gradient for these ops, and neither does ember.
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.sparse.sparse_tensor import SparseTensor

__all__ = ["difference", "intersection", "size", "union"]

_op = _C.op
# TensorFlow also takes uint16, a dtype ember does not have.
_SET_DTYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.string)


def _invalid(op, message):
    return errors.InvalidArgumentError(None, None, f"{op}: {message}")


def _as_set_operand(x, name):
    value = x if isinstance(x, (SparseTensor, Tensor)) else convert_to_tensor(x)
    if value.dtype not in _SET_DTYPES:
        allowed = ", ".join(d.name for d in _SET_DTYPES)
        raise TypeError(f"tf.sets: '{name}' has invalid dtype {value.dtype.name}, expected one of {allowed}")
    return value


def _operands(a, b):
    a = _as_set_operand(a, "a")
    b = _as_set_operand(b, "b")
    if a.dtype != b.dtype:
        raise TypeError(f"tf.sets: types don't match, {a.dtype.name} vs {b.dtype.name}")
    return a, b


def _components(x):
    return [x.indices, x.values, x.dense_shape] if isinstance(x, SparseTensor) else [x]


def _rows(arrays, is_sparse, op, validate):
    """(group_shape, {group index tuple: set of values}) of one operand given as NumPy arrays."""
    if not is_sparse:
        dense = np.asarray(arrays[0], dtype=object if isinstance(arrays[0], bytes) else None)  # a scalar string
        if dense.ndim < 2:
            raise _invalid(op, f"Shape {list(dense.shape)} has rank {dense.ndim} < 2")
        group_shape = tuple(dense.shape[:-1])
        flat = dense.reshape(int(np.prod(group_shape)), dense.shape[-1])
        groups = {}
        for i, pos in enumerate(np.ndindex(*group_shape)):
            groups[pos] = set(flat[i].tolist())
        return group_shape, groups
    indices, values, shape = arrays
    if shape.shape[0] < 2:
        raise _invalid(op, f"Shape {shape.tolist()} has rank {shape.shape[0]} < 2")
    if validate:
        _validate(indices, shape, op)
    groups = {}
    for row, value in zip(indices.tolist(), values.tolist()):
        groups.setdefault(tuple(row[:-1]), set()).add(value)
    return tuple(shape[:-1].tolist()), groups


def _validate(indices, shape, op):
    """TensorFlow's checks of a SparseTensor operand: indices in range, row-major and not repeated."""
    text = "[" + ",".join(str(d) for d in shape.tolist()) + "]"
    previous = None
    for i, row in enumerate(indices.tolist()):
        where = ",".join(str(v) for v in row)
        if any(v < 0 or v >= d for v, d in zip(row, shape.tolist())):
            raise _invalid(op, f"indices[{i}] = [{where}] is out of bounds: need 0 <= index < {text}")
        if previous is not None and row == previous:
            raise _invalid(op, f"indices[{i}] = [{where}] is repeated")
        if previous is not None and row < previous:
            raise _invalid(op, f"indices[{i}] = [{where}] is out of order. Many sparse ops require sorted "
                               f"indices. Use `tf.sparse.reorder` to create a correctly ordered copy.")
        previous = row


def _combine(kind, a, b):
    if kind == "intersection":
        return a & b
    if kind == "union":
        return a | b
    if kind == "a-b":
        return a - b
    return b - a


def _set_operation(kind, a, b, validate, op):
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    dtype = a.dtype
    n_a = 3 if a_sparse else 1

    def compute(*arrays):
        a_shape, a_rows = _rows(arrays[:n_a], a_sparse, op, validate)
        b_shape, b_rows = _rows(arrays[n_a:], b_sparse, op, validate)
        if a_shape != b_shape:
            raise _invalid(op, f"Shape mismatch: the operands' group shapes (all dimensions but the last) are "
                               f"{list(a_shape)} and {list(b_shape)}")
        results = []
        for pos in sorted(set(a_rows) | set(b_rows)):
            values = sorted(_combine(kind, a_rows.get(pos, set()), b_rows.get(pos, set())))
            if values:
                results.append((pos, values))
        return _sparse_arrays(results, a_shape, dtype)

    return _run_on_host(compute, _components(a) + _components(b), dtype, _rank(a), op)


def _sparse_arrays(results, group_shape, dtype):
    width = max((len(v) for _, v in results), default=0)
    indices = np.array([list(pos) + [k] for pos, values in results for k in range(len(values))],
                       np.int64).reshape(-1, len(group_shape) + 1)
    flat = [v for _, values in results for v in values]
    values = np.array(flat, dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
    if dtype == dtypes.string:
        values = values.astype(object).reshape(-1)
    return indices, values, np.array(list(group_shape) + [width], np.int64)


def _rank(x):
    if isinstance(x, SparseTensor):
        return x.indices.shape[1]
    return x.shape.rank


def _run_on_host(compute, inputs, dtype, rank, op):
    """compute's (indices, values, dense_shape) as a SparseTensor: directly eagerly, through
    numpy_function inside ember.function (the shapes made static again where the rank is known)."""
    if not any(t._is_symbolic for t in inputs):
        indices, values, shape = compute(*[t.numpy() for t in inputs])
        return SparseTensor(convert_to_tensor(indices, dtype=dtypes.int64), convert_to_tensor(values, dtype=dtype),
                            convert_to_tensor(shape, dtype=dtypes.int64))
    from ember.ops.script_ops import numpy_function

    indices, values, shape = numpy_function(compute, inputs, [dtypes.int64, dtype, dtypes.int64], stateful=False)
    width = -1 if rank is None else rank
    return SparseTensor(_op("Reshape")(indices, [-1, width]), _op("Reshape")(values, [-1]),
                        _op("Reshape")(shape, [width]))


def size(a, validate_indices=True):
    """SetSize: the number of distinct values in each row (all dimensions but the last) of the
    SparseTensor ``a``, as an int32 tensor of a's shape without its last dimension."""
    if not isinstance(a, SparseTensor):
        raise TypeError(f"tf.sets.size: expected a SparseTensor, got {type(a).__name__}")
    a = _as_set_operand(a, "a")
    inputs = _components(a)

    def compute(indices, values, shape):
        group_shape, groups = _rows([indices, values, shape], True, "SetSize", validate_indices)
        out = np.zeros(group_shape, np.int32)
        for pos, members in groups.items():
            out[pos] = len(members)
        return out

    if not any(t._is_symbolic for t in inputs):
        return convert_to_tensor(compute(*[t.numpy() for t in inputs]), dtype=dtypes.int32)
    from ember.ops.script_ops import numpy_function

    out = numpy_function(compute, inputs, dtypes.int32, stateful=False)
    rank = a.indices.shape[1]
    if rank is None:
        return out
    return _op("Reshape")(out, _op("GatherV2")(a.dense_shape, list(range(rank - 1)), 0, 0))


def intersection(a, b, validate_indices=True):
    """The sorted values in both a's and b's row, per row (a and b dense or SparseTensors)."""
    a, b = _operands(a, b)
    return _set_operation("intersection", a, b, validate_indices, _op_name(a, b))


def union(a, b, validate_indices=True):
    """The sorted values in a's or b's row, per row."""
    a, b = _operands(a, b)
    return _set_operation("union", a, b, validate_indices, _op_name(a, b))


def difference(a, b, aminusb=True, validate_indices=True):
    """The sorted values of a's row not in b's (b's not in a's with aminusb=False), per row."""
    a, b = _operands(a, b)
    return _set_operation("a-b" if aminusb else "b-a", a, b, validate_indices, _op_name(a, b))


def _op_name(a, b):
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if a_sparse and b_sparse:
        return "SparseToSparseSetOperation"
    if a_sparse or b_sparse:
        return "DenseToSparseSetOperation"
    return "DenseToDenseSetOperation"

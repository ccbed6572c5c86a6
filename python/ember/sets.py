"""``tf.sets``: set operations along the last dimension of dense tensors and SparseTensors.

Each row (all dimensions but the last) is a set of its values; ``intersection``, ``union`` and
``difference`` give, per row, the sorted distinct result values as a SparseTensor whose last dimension is
the longest result row, and ``size`` the number of distinct values per row.

    a = tf.constant([[1, 2, 3, 3]]); b = tf.constant([[2, 7]])
    tf.sets.union(a, b)   # indices [[0,0],[0,1],[0,2],[0,3]], values [1, 2, 3, 7], dense_shape [1, 4]

Each function calls TensorFlow's op (``SetSize``, ``DenseToDenseSetOperation``,
``DenseToSparseSetOperation``, ``SparseToSparseSetOperation``; C++ kernels in src/ember/ops/sets.cc),
eagerly and inside ``ember.function`` alike, so a traced function exports to a GraphDef that TensorFlow
runs. TensorFlow defines no gradient for these ops, and neither does ember.
"""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.sparse.sparse_tensor import SparseTensor

__all__ = ["difference", "intersection", "size", "union"]

_op = _C.op
# TensorFlow also takes uint16, a dtype ember does not have.
_SET_DTYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.string)


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
    if isinstance(x, SparseTensor):
        return [x.indices, x.values, x.dense_shape]
    return [x]


def _set_operation(kind, a, b, validate):
    """The registry op for kind ("a-b", "b-a", "intersection", "union") of a and b, as a SparseTensor.
    TensorFlow's ops take a dense operand first only: a SparseTensor ``a`` with a dense ``b`` is swapped
    (and the difference turned around), as tf.sets does."""
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        a, b = b, a
        kind = {"a-b": "b-a", "b-a": "a-b"}.get(kind, kind)
    indices, values, shape = _op(_op_name(a, b))(*_components(a), *_components(b), kind, bool(validate))
    return SparseTensor(indices, values, shape)


def size(a, validate_indices=True):
    """SetSize: the number of distinct values in each row (all dimensions but the last) of the
    SparseTensor ``a``, as an int32 tensor of a's shape without its last dimension."""
    if not isinstance(a, SparseTensor):
        raise TypeError(f"tf.sets.size: expected a SparseTensor, got {type(a).__name__}")
    a = _as_set_operand(a, "a")
    return _op("SetSize")(a.indices, a.values, a.dense_shape, bool(validate_indices))


def intersection(a, b, validate_indices=True):
    """The sorted values in both a's and b's row, per row (a and b dense or SparseTensors)."""
    a, b = _operands(a, b)
    return _set_operation("intersection", a, b, validate_indices)


def union(a, b, validate_indices=True):
    """The sorted values in a's or b's row, per row."""
    a, b = _operands(a, b)
    return _set_operation("union", a, b, validate_indices)


def difference(a, b, aminusb=True, validate_indices=True):
    """The sorted values of a's row not in b's (b's not in a's with aminusb=False), per row."""
    a, b = _operands(a, b)
    return _set_operation("a-b" if aminusb else "b-a", a, b, validate_indices)


def _op_name(a, b):
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if a_sparse and b_sparse:
        return "SparseToSparseSetOperation"
    if a_sparse or b_sparse:
        return "DenseToSparseSetOperation"
    return "DenseToDenseSetOperation"

"""``tf.sparse.SparseTensor``: a tensor stored as the coordinates of its non-default values.

``indices`` (int64 [N, rank]) names where each of ``values`` ([N]) sits in a tensor of shape ``dense_shape``
(int64 [rank]); every other element is zero. Ops that need canonical order (row-major, no duplicates), as
TensorFlow's kernels do, check it eagerly and say so (``tf.sparse.reorder`` makes it).
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape

_op = _C.op


def _unimplemented(message):
    return errors.UnimplementedError(None, None, message)


def _int64(value, what):
    if isinstance(value, Tensor):
        t = value
    elif isinstance(value, (list, tuple)) and not value:
        t = convert_to_tensor(np.zeros([0], np.int64))
    else:
        t = convert_to_tensor(value, dtype_hint=dtypes.int64)
    if t.dtype == dtypes.int32:
        t = _op("Cast")(t, dtypes.int64)
    if t.dtype != dtypes.int64:
        raise TypeError(f"SparseTensor: {what} must be int64, got {t.dtype.name}")
    return t


class SparseTensor:
    """``tf.sparse.SparseTensor(indices, values, dense_shape)``:
    SparseTensor(indices=[[0, 0], [1, 2]], values=[1., 2.], dense_shape=[3, 4]) is a 3x4 matrix with two
    non-zero elements."""

    __slots__ = ("_indices", "_values", "_dense_shape", "_static_shape", "__weakref__")
    _ember_composite = True

    def __init__(self, indices, values, dense_shape):
        indices = _int64(indices, "indices")
        if indices.shape.rank == 1 and indices.shape[0] == 0:
            indices = _op("Reshape")(indices, [0, -1 if not isinstance(dense_shape, (list, tuple))
                                               else len(dense_shape)])
        values = values if isinstance(values, Tensor) else convert_to_tensor(values)
        dense_shape = _int64(dense_shape, "dense_shape")
        if indices.shape.rank not in (None, 2):
            raise ValueError(f"SparseTensor: indices must be a matrix [N, rank], got shape {indices.shape}")
        if values.shape.rank not in (None, 1):
            raise ValueError(f"SparseTensor: values must be a vector, got shape {values.shape}")
        if dense_shape.shape.rank not in (None, 1):
            raise ValueError(f"SparseTensor: dense_shape must be a vector, got shape {dense_shape.shape}")
        n_idx, n_val = indices.shape[0], values.shape[0]
        if n_idx is not None and n_val is not None and n_idx != n_val:
            raise ValueError(f"Dimensions {n_idx} and {n_val} are not compatible")
        rank_idx, rank_shape = indices.shape[1], dense_shape.shape[0]
        if rank_idx is not None and rank_shape is not None and rank_idx != rank_shape:
            raise ValueError(f"SparseTensor: indices have {rank_idx} columns but dense_shape has rank {rank_shape}")
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        self._static_shape = None

    @classmethod
    def from_value(cls, value):
        return value if isinstance(value, SparseTensor) else cls(value.indices, value.values, value.dense_shape)

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        """The static dense shape: known where dense_shape is a value (eagerly), else its rank."""
        if not self._dense_shape._is_symbolic:
            return TensorShape(self._dense_shape.numpy().tolist())
        if self._static_shape is not None:  # rebuilt in a trace from its spec, which knew it
            return self._static_shape
        rank = self._dense_shape.shape[0]
        return TensorShape(None if rank is None else [None] * rank)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self.shape.rank

    def with_values(self, new_values):
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def __repr__(self):
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"

    __str__ = __repr__

    def __array__(self, dtype=None, copy=None):
        raise TypeError("A SparseTensor cannot be converted to a dense tensor or array implicitly; use "
                        "tf.sparse.to_dense")

    def __mul__(self, other):
        from ember.sparse import sparse_ops

        return sparse_ops.sparse_dense_cwise_mul(self, other)

    def __truediv__(self, other):
        from ember.sparse import sparse_ops

        return sparse_ops.sparse_dense_cwise_div(self, other)

    __hash__ = None

    # ---- composite-tensor protocol (ember.function, tf.data) ---------------------------------------
    @property
    def _type_spec(self):
        return SparseTensorSpec(self.shape, self.dtype)

    def _to_components(self):
        return [self._indices, self._values, self._dense_shape]


class SparseTensorSpec:
    """Describes a SparseTensor: its dense shape (dimensions may be None) and dtype."""

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape=None, dtype=dtypes.float32):
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def value_type(self):
        return SparseTensor

    def _component_specs(self):
        from ember.framework.tensor_spec import TensorSpec

        rank = self._shape.rank
        return [TensorSpec([None, rank], dtypes.int64), TensorSpec([None], self._dtype),
                TensorSpec([rank], dtypes.int64)]

    def _from_components(self, components):
        indices, values, dense_shape = components
        sp = SparseTensor.__new__(SparseTensor)
        sp._indices, sp._values, sp._dense_shape = indices, values, dense_shape
        sp._static_shape = self._shape
        return sp

    def is_compatible_with(self, other):
        if isinstance(other, SparseTensor):
            other = SparseTensorSpec.from_value(other)
        return (isinstance(other, SparseTensorSpec) and self._dtype == other._dtype
                and self._shape.is_compatible_with(other._shape))

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and (self._shape, self._dtype) == (other._shape, other._dtype)

    def __hash__(self):
        return hash((self._shape, self._dtype))

    def __repr__(self):
        dims = self._shape.as_list() if self._shape.rank is not None else None
        return f"SparseTensorSpec(TensorShape({dims}), {self._dtype!r})"


def is_sparse(x):
    return isinstance(x, SparseTensor)


def from_ragged(rt):
    """The SparseTensor of a RaggedTensor's values at their (row, column, ...) coordinates."""
    from ember.ragged.ragged_tensor import RaggedTensor

    coords = []
    level = rt
    while isinstance(level, RaggedTensor):
        coords.append((level.value_rowids(), level._value_columns()))
        level = level.values
    if level.shape.rank != 1:
        raise _unimplemented("ember: RaggedTensor.to_sparse with uniform inner dimensions is not supported yet")
    # Compose: the innermost values' coordinates through each level's rows.
    rows, cols = coords[-1]
    index_cols = [cols]
    for up_rows, up_cols in reversed(coords[:-1]):
        index_cols.insert(0, _op("GatherV2")(up_cols, rows, 0, 0))
        rows = _op("GatherV2")(up_rows, rows, 0, 0)
    index_cols.insert(0, rows)
    indices = _op("Cast")(_op("Pack")(index_cols, 1), dtypes.int64)
    dense_shape = _op("Cast")(rt.bounding_shape(), dtypes.int64)
    return SparseTensor(indices, level, dense_shape)



"""``tf.RaggedTensor``: a tensor whose rows have different lengths, as TensorFlow represents it.

A RaggedTensor is its ``values`` (a Tensor, or another RaggedTensor for more ragged dimensions) cut into rows
by ``row_splits``: row i is ``values[row_splits[i]:row_splits[i + 1]]``. Everything else (row lengths, value
row ids, the padded dense tensor) is computed from these two with registry ops, so a RaggedTensor works
eagerly and inside ``ember.function`` alike, and gradients reach ``flat_values`` through those ops
(docs/composite.md).
"""

import operator

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape

_SPLITS_DTYPES = (dtypes.int32, dtypes.int64)


def _op(name):
    return _C.op(name)


def _math_ops():
    from ember.ops import math_ops

    return math_ops


def _invalid(op, message):
    return errors.InvalidArgumentError(None, None, f"{op}: {message}")


def _unimplemented(message):
    """What ember does not support yet: UnimplementedError (an ember.errors class), as TensorFlow's."""
    return errors.UnimplementedError(None, None, message)


def _int_arg(value, op, what):
    """An int argument (axis, count): Python/NumPy ints or int scalar tensors, else TypeError."""
    if isinstance(value, Tensor) and value.dtype in _SPLITS_DTYPES and value.shape.rank == 0 and \
            not value._is_symbolic:
        value = value.numpy()
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int, got {value!r}") from None


def _is_eager(*tensors):
    return not any(isinstance(t, Tensor) and t._is_symbolic for t in tensors)


def _splits_tensor(value, dtype, op, what):
    """``value`` as an int32/int64 vector tensor (``dtype`` when given, else its own or int64)."""
    if isinstance(value, Tensor):
        t = value
    elif isinstance(value, (list, tuple)) and not value:
        t = convert_to_tensor(np.zeros([0], (dtype or dtypes.int64).as_numpy_dtype))
    else:
        t = convert_to_tensor(value, dtype_hint=dtype or dtypes.int64)
        if dtype is None and t.dtype == dtypes.int32:  # Python ints: TensorFlow's default splits are int64
            t = _op("Cast")(t, dtypes.int64)
    if t.dtype not in _SPLITS_DTYPES:
        raise TypeError(f"{op}: {what} must be int32 or int64, got {t.dtype.name}")
    if dtype is not None and t.dtype != dtype:
        t = _op("Cast")(t, dtype)
    if t.shape.rank is not None and t.shape.rank != 1:
        raise ValueError(f"{op}: {what} must be a vector, got shape {t.shape}")
    return t


def _values_tensor(values):
    if isinstance(values, RaggedTensor):
        return values
    return values if isinstance(values, Tensor) else convert_to_tensor(values)


def _nrows_of(values, out_type):
    """The outer dimension of ``values`` (a tensor or ragged) as a scalar of ``out_type``."""
    if isinstance(values, RaggedTensor):
        return values.nrows(out_type)
    return _op("Shape")(values, out_type)[0]


def _scalar(value, dtype):
    return convert_to_tensor(value, dtype=dtype)


def _concat_zero(tensor):
    """[0] + tensor: the splits whose differences are ``tensor`` start at 0."""
    zero = _op("Reshape")(_scalar(0, tensor.dtype), [1])
    return _op("ConcatV2")([zero, tensor], 0)


def _cumsum(x):
    return _op("Cumsum")(x, 0, False, False)


class RaggedTensor:
    """A tensor with one or more ragged dimensions (``tf.RaggedTensor``): build it with ``tf.ragged.constant``
    or the ``from_*`` factories, never with the constructor."""

    __slots__ = ("_values", "_row_splits", "_cache", "__weakref__")
    _ember_composite = True  # ember.function and tf.data take it apart into its component tensors

    def __init__(self, values, row_splits, internal=False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the factory methods "
                             "instead (e.g., RaggedTensor.from_row_lengths())")
        self._values = values
        self._row_splits = row_splits
        self._cache = {}

    # ---- factories (TensorFlow's names and arguments) --------------------------------------------------
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Row i is values[row_splits[i]:row_splits[i+1]]. from_row_splits([3, 1, 4, 1], [0, 2, 2, 4])
        == [[3, 1], [], [4, 1]]."""
        values = _values_tensor(values)
        row_splits = _splits_tensor(row_splits, None, "RaggedTensor.from_row_splits", "row_splits")
        values = _match_splits_dtype(values, row_splits.dtype)
        if validate:
            _validate_splits(values, row_splits, "RaggedTensor.from_row_splits")
        return cls(values, row_splits, internal=True)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Row i has row_lengths[i] values. from_row_lengths([3, 1, 4, 1], [2, 0, 2]) == [[3, 1], [], [4, 1]]."""
        values = _values_tensor(values)
        lengths = _splits_tensor(row_lengths, None, "RaggedTensor.from_row_lengths", "row_lengths")
        if validate and _is_eager(lengths) and lengths.shape[0] and lengths.numpy().min() < 0:
            raise _invalid("RaggedTensor.from_row_lengths", f"row_lengths must be non-negative, got "
                           f"{lengths.numpy().tolist()}")
        rt = cls.from_row_splits(values, _concat_zero(_cumsum(lengths)), validate=validate)
        rt._cache["row_lengths"] = lengths
        return rt

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        """Row i is values[row_starts[i]:row_starts[i+1]] (the last up to the end of values)."""
        values = _values_tensor(values)
        starts = _splits_tensor(row_starts, None, "RaggedTensor.from_row_starts", "row_starts")
        nvals = _op("Reshape")(_nrows_of(values, starts.dtype), [1])
        return cls.from_row_splits(values, _op("ConcatV2")([starts, nvals], 0), validate=validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        """Row i is values[row_limits[i-1]:row_limits[i]] (the first from 0)."""
        values = _values_tensor(values)
        limits = _splits_tensor(row_limits, None, "RaggedTensor.from_row_limits", "row_limits")
        return cls.from_row_splits(values, _concat_zero(limits), validate=validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """values[j] belongs to row value_rowids[j] (sorted ascending); nrows defaults to the last id + 1.
        from_value_rowids([3, 1, 4], [0, 0, 2], nrows=4) == [[3, 1], [], [4], []]."""
        op = "RaggedTensor.from_value_rowids"
        values = _values_tensor(values)
        rowids = _splits_tensor(value_rowids, None, op, "value_rowids")
        if nrows is None:
            n = _op("Shape")(rowids, rowids.dtype)[0]
            last = _op("Max")(rowids, [0], False)
            nrows = _op("SelectV2")(_op("Greater")(n, _scalar(0, rowids.dtype)), last + _scalar(1, rowids.dtype),
                                    _scalar(0, rowids.dtype))
        else:
            nrows = convert_to_tensor(nrows, dtype=rowids.dtype) if not isinstance(nrows, Tensor) else \
                _op("Cast")(nrows, rowids.dtype)
        if validate and _is_eager(rowids, nrows):
            ids = rowids.numpy()
            n = int(nrows.numpy())
            if ids.size and (np.any(np.diff(ids) < 0) or ids[0] < 0 or ids[-1] >= n):
                raise _invalid(op, f"value_rowids must be sorted, non-negative and less than nrows={n}, got "
                               f"{ids.tolist()}")
            if n < 0:
                raise _invalid(op, f"nrows must be non-negative, got {n}")
        # Row r ends after the ids <= r: the upper bound of r in the sorted ids.
        rows = _op("Range")(_scalar(0, rowids.dtype), nrows, _scalar(1, rowids.dtype))
        limits = _op("UpperBound")(_op("Reshape")(rowids, [1, -1]), _op("Reshape")(rows, [1, -1]), rowids.dtype)
        rt = cls.from_row_splits(values, _concat_zero(_op("Reshape")(limits, [-1])), validate=validate)
        rt._cache["value_rowids"] = rowids
        return rt

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None, validate=True, name=None):
        """Rows of uniform_row_length values each."""
        values = _values_tensor(values)
        length = convert_to_tensor(uniform_row_length, dtype_hint=dtypes.int64)
        if length.dtype == dtypes.int32:
            length = _op("Cast")(length, dtypes.int64)
        nvals = _nrows_of(values, length.dtype)
        if nrows is None:
            nrows = _op("SelectV2")(_op("Equal")(length, _scalar(0, length.dtype)), _scalar(0, length.dtype),
                                    _op("FloorDiv")(nvals, _op("Maximum")(length, _scalar(1, length.dtype))))
        else:
            nrows = _op("Cast")(convert_to_tensor(nrows), length.dtype)
        splits = _op("Range")(_scalar(0, length.dtype), nrows + _scalar(1, length.dtype),
                              _scalar(1, length.dtype)) * length
        rt = cls.from_row_splits(values, splits, validate=validate)
        rt._cache["uniform_row_length"] = length
        if _is_eager(length):
            rt._cache["uniform_static"] = int(length.numpy())
        return rt

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        """from_row_splits applied innermost first: one ragged dimension per splits vector."""
        if isinstance(nested_row_splits, Tensor):
            raise TypeError("nested_row_splits must be a list of Tensors")
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate=True):
        result = flat_values
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None, name=None,
                                 validate=True):
        nested_nrows = [None] * len(nested_value_rowids) if nested_nrows is None else list(nested_nrows)
        result = flat_values
        for ids, n in reversed(list(zip(nested_value_rowids, nested_nrows))):
            result = cls.from_value_rowids(result, ids, n, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None, row_splits_dtype=dtypes.int64):
        """A dense tensor cut into ragged rows: all of each row (default), its first lengths[i] values, or all
        up to its trailing ``padding`` values. from_tensor([[1, 0], [2, 3]], padding=0) == [[1], [2, 3]]."""
        from ember.ragged import ragged_ops

        return ragged_ops.from_tensor(tensor, lengths, padding, ragged_rank, dtypes.as_dtype(row_splits_dtype))

    # ---- components ----------------------------------------------------------------------------------
    @property
    def values(self):
        return self._values

    @property
    def row_splits(self):
        return self._row_splits

    @property
    def flat_values(self):
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self):
        out = [self._row_splits]
        v = self._values
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self):
        return 1 + (self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 0)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def row_splits_dtype(self):
        return self._row_splits.dtype

    @property
    def shape(self):
        """The static shape: nrows, None for each ragged dimension, then the uniform inner dimensions."""
        nrows = self._row_splits.shape[0]
        nrows = None if nrows is None else nrows - 1
        return TensorShape([nrows, self._cache.get("uniform_static")] + self._values.shape.as_list()[1:]) \
            if self._values.shape.rank is not None else TensorShape(None)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self.shape.rank

    def numpy(self):
        """A NumPy object array of the rows (each a NumPy array), as TensorFlow's."""
        rows = [np.asarray(r) for r in self._rows_numpy()]
        out = np.empty(len(rows), dtype=object)
        for i, r in enumerate(rows):
            out[i] = r
        return out

    def _rows_numpy(self):
        splits = self._row_splits.numpy()
        values = self._values
        if isinstance(values, RaggedTensor):
            inner = values._rows_numpy()
            return [inner[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]
        arr = values.numpy()
        return [arr[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]

    def to_list(self):
        """The value as nested Python lists."""
        splits = self._row_splits.numpy().tolist()
        inner = self._values.to_list() if isinstance(self._values, RaggedTensor) else self._values.numpy().tolist()
        return [inner[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]

    # ---- derived row partitions ---------------------------------------------------------------------
    def nrows(self, out_type=None, name=None):
        n = _op("Shape")(self._row_splits, self._row_splits.dtype)[0] - _scalar(1, self._row_splits.dtype)
        return n if out_type is None else _op("Cast")(n, dtypes.as_dtype(out_type))

    def row_starts(self, name=None):
        return self._row_splits[:-1]

    def row_limits(self, name=None):
        return self._row_splits[1:]

    def row_lengths(self, axis=1, name=None):
        """The length of each row (axis=1), or of each row of a deeper ragged dimension (a ragged result)."""
        if axis == 0:
            return self.nrows()
        if axis < 0:
            axis += self.shape.rank
        if axis == 1:
            lengths = self._cache.get("row_lengths")
            if lengths is None:
                lengths = self._row_splits[1:] - self._row_splits[:-1]
                self._cache["row_lengths"] = lengths
            return lengths
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        dims = _op("Shape")(self._values, self._row_splits.dtype)
        return self.with_values(_op("Fill")(_op("Reshape")(dims[0], [1]), dims[axis - 1]))

    def nested_row_lengths(self, name=None):
        out = [self.row_lengths()]
        v = self._values
        while isinstance(v, RaggedTensor):
            out.append(v.row_lengths())
            v = v._values
        return tuple(out)

    def value_rowids(self, name=None):
        """The row of each value: [0, 0, 2] for row_splits [0, 2, 2, 3]."""
        ids = self._cache.get("value_rowids")
        if ids is None:
            ids = _rowids_from_splits(self._row_splits)
            self._cache["value_rowids"] = ids
        return ids

    def nested_value_rowids(self, name=None):
        out = [self.value_rowids()]
        v = self._values
        while isinstance(v, RaggedTensor):
            out.append(v.value_rowids())
            v = v._values
        return tuple(out)

    def _value_columns(self):
        """The position of each value within its row."""
        ids = self.value_rowids()
        nvals = _op("Shape")(ids, ids.dtype)[0]
        return _op("Range")(_scalar(0, ids.dtype), nvals, _scalar(1, ids.dtype)) - \
            _op("GatherV2")(self._row_splits, ids, 0, 0)

    @property
    def uniform_row_length(self):
        return self._cache.get("uniform_row_length")

    def bounding_shape(self, axis=None, name=None, out_type=None):
        """The smallest dense shape that holds the value: [nrows, max row length, ...]."""
        out_type = self._row_splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        lengths = self.row_lengths()
        width = _op("Max")(_concat_zero(lengths), [0], False)
        inner = self._values.bounding_shape(out_type=out_type)[1:] if isinstance(self._values, RaggedTensor) \
            else _op("Shape")(self._values, out_type)[1:]
        head = _op("Cast")(_op("Pack")([self.nrows(), width], 0), out_type)
        shape = _op("ConcatV2")([head, inner], 0)
        return shape if axis is None else shape[axis]

    # ---- building from this one -----------------------------------------------------------------
    def with_values(self, new_values):
        """The same row partition over ``new_values`` (as many rows as values has)."""
        new_values = _values_tensor(new_values)
        new_values = _match_splits_dtype(new_values, self._row_splits.dtype)
        rt = RaggedTensor(new_values, self._row_splits, internal=True)
        for k in ("row_lengths", "value_rowids", "uniform_row_length", "uniform_static"):
            if k in self._cache:
                rt._cache[k] = self._cache[k]
        return rt

    def with_flat_values(self, new_values):
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        dtype = dtypes.as_dtype(dtype)
        if dtype == self._row_splits.dtype:
            return self
        values = self._values.with_row_splits_dtype(dtype) if isinstance(self._values, RaggedTensor) \
            else self._values
        return RaggedTensor(values, _op("Cast")(self._row_splits, dtype), internal=True)

    def to_tensor(self, default_value=None, name=None, shape=None):
        """The dense tensor, rows padded with default_value (0) to the longest row, or cut/padded to
        ``shape``. [[1, 2], [3]] -> [[1, 2], [3, 0]]."""
        from ember.ragged import ragged_ops

        return ragged_ops.to_tensor(self, default_value, shape)

    def to_sparse(self, name=None):
        from ember.sparse import sparse_tensor

        return sparse_tensor.from_ragged(self)

    def merge_dims(self, outer_axis, inner_axis):
        from ember.ragged import ragged_ops

        return ragged_ops.merge_dims(self, outer_axis, inner_axis)

    # ---- indexing and operators --------------------------------------------------------------------
    def __getitem__(self, key):
        from ember.ragged import ragged_getitem

        return ragged_getitem.getitem(self, key)

    def __len__(self):
        n = self.shape[0]
        if n is None:
            raise TypeError("len is not well defined for a RaggedTensor whose number of rows is unknown")
        return n

    def __iter__(self):
        if not _is_eager(self._row_splits):
            raise TypeError("Iterating over a symbolic RaggedTensor is not allowed")
        return (self[i] for i in range(len(self)))

    def __array__(self, dtype=None, copy=None):
        # NumPy would read equal-length rows as a dense array: an op given a RaggedTensor it does not
        # dispatch on must not silently densify it.
        raise TypeError("A RaggedTensor cannot be converted to a dense tensor or array implicitly; use "
                        "rt.to_tensor() or rt.numpy()")

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    def __repr__(self):
        if not _is_eager(self.flat_values, *self.nested_row_splits):
            return f"tf.RaggedTensor(values={self._values}, row_splits={self._row_splits})"
        return f"<tf.RaggedTensor {self.to_list()!r}>"

    __str__ = __repr__

    # The element-wise operators run the op on the values (ragged_dispatch.binary checks the partitions).
    def _binary(self, other, fn, reverse=False):
        from ember.ragged import ragged_dispatch

        return ragged_dispatch.binary(fn, other, self) if reverse else ragged_dispatch.binary(fn, self, other)

    def __add__(self, o):
        return self._binary(o, _math_ops().add)

    def __radd__(self, o):
        return self._binary(o, _math_ops().add, True)

    def __sub__(self, o):
        return self._binary(o, _math_ops().subtract)

    def __rsub__(self, o):
        return self._binary(o, _math_ops().subtract, True)

    def __mul__(self, o):
        return self._binary(o, _math_ops().multiply)

    def __rmul__(self, o):
        return self._binary(o, _math_ops().multiply, True)

    def __truediv__(self, o):
        return self._binary(o, _math_ops().truediv)

    def __rtruediv__(self, o):
        return self._binary(o, _math_ops().truediv, True)

    def __floordiv__(self, o):
        return self._binary(o, _math_ops().floordiv)

    def __rfloordiv__(self, o):
        return self._binary(o, _math_ops().floordiv, True)

    def __mod__(self, o):
        return self._binary(o, _math_ops().floormod)

    def __pow__(self, o):
        return self._binary(o, _math_ops().pow)

    def __lt__(self, o):
        return self._binary(o, _math_ops().less)

    def __le__(self, o):
        return self._binary(o, _math_ops().less_equal)

    def __gt__(self, o):
        return self._binary(o, _math_ops().greater)

    def __ge__(self, o):
        return self._binary(o, _math_ops().greater_equal)

    def __and__(self, o):
        return self._binary(o, _math_ops().logical_and)

    def __or__(self, o):
        return self._binary(o, _math_ops().logical_or)

    def __neg__(self):
        return self.with_flat_values(-self.flat_values)

    def __abs__(self):
        return self.with_flat_values(_math_ops().abs(self.flat_values))

    def __invert__(self):
        return self.with_flat_values(_math_ops().logical_not(self.flat_values))

    __hash__ = None  # element-wise == would be ambiguous, as for TensorFlow's eager tensors

    # ---- composite-tensor protocol (ember.function, tf.data) ---------------------------------------
    @property
    def _type_spec(self):
        return RaggedTensorSpec.from_value(self)

    def _to_components(self):
        return [self.flat_values] + list(self.nested_row_splits)


def _match_splits_dtype(values, dtype):
    """TensorFlow requires one splits dtype through all ragged dimensions; a ragged ``values`` of the other
    dtype is an error, as there."""
    if isinstance(values, RaggedTensor) and values.row_splits.dtype != dtype:
        raise ValueError(f"RaggedTensor: row_splits dtype {dtype.name} differs from the values' row_splits dtype "
                         f"{values.row_splits.dtype.name}; use RaggedTensor.with_row_splits_dtype to convert")
    return values


def _validate_splits(values, splits, op):
    """Eager checks of a row partition (inside a trace the splits are not known: they are trusted, as with
    validate=False)."""
    if not _is_eager(splits) or (isinstance(values, Tensor) and values._is_symbolic):
        return
    s = splits.numpy()
    if s.size == 0:
        raise _invalid(op, "row_splits must have at least one element (0), got []")
    if s[0] != 0:
        raise _invalid(op, f"row_splits must start with 0, got row_splits[0] = {s[0]}")
    if np.any(np.diff(s) < 0):
        raise _invalid(op, f"row_splits must be sorted in ascending order, got {s.tolist()}")
    nvals = values.nrows().numpy() if isinstance(values, RaggedTensor) else values.shape[0]
    if values.shape.rank == 0:
        raise ValueError(f"{op}: values must have rank at least 1, got a scalar")
    if nvals is not None and s[-1] != nvals:
        raise _invalid(op, f"row_splits[-1] = {s[-1]} must equal the number of values, {nvals}")


class RaggedTensorSpec:
    """Describes a RaggedTensor: shape (None for ragged dimensions), dtype, ragged_rank, row_splits dtype
    (``tf.RaggedTensorSpec``). As an ``input_signature`` entry it fixes these, not the row lengths."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype", "_flat_values_spec")

    def __init__(self, shape=None, dtype=dtypes.float32, ragged_rank=None, row_splits_dtype=dtypes.int64,
                 flat_values_spec=None):
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = rank - 1
        if rank is not None and not 0 <= ragged_rank < max(rank, 1):
            raise ValueError(f"ragged_rank must be in [0, {rank}), got {ragged_rank}")
        self._ragged_rank = ragged_rank
        self._flat_values_spec = flat_values_spec

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits_dtype)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ragged_rank(self):
        return self._ragged_rank

    @property
    def row_splits_dtype(self):
        return self._row_splits_dtype

    @property
    def flat_values_spec(self):
        return self._flat_values_spec

    @property
    def value_type(self):
        return RaggedTensor

    def _component_specs(self):
        """The specs of _to_components' tensors: flat_values, then each splits vector."""
        from ember.framework.tensor_spec import TensorSpec

        dims = self._shape.as_list() if self._shape.rank is not None else None
        inner = None if dims is None else dims[self._ragged_rank + 1:]
        first = None
        if dims is not None and dims[0] is not None and self._ragged_rank > 0:
            first = dims[0] + 1
        flat = TensorSpec(None if inner is None else [None] + inner, self._dtype)
        splits = [TensorSpec([first if k == 0 else None], self._row_splits_dtype) for k in range(self._ragged_rank)]
        return [flat] + splits

    def _from_components(self, components):
        if self._ragged_rank == 0:
            return components[0]
        return RaggedTensor.from_nested_row_splits(components[0], components[1:], validate=False)

    def is_compatible_with(self, other):
        if isinstance(other, RaggedTensor):
            other = RaggedTensorSpec.from_value(other)
        if not isinstance(other, RaggedTensorSpec):
            return False
        return (self._dtype == other._dtype and self._ragged_rank == other._ragged_rank
                and self._row_splits_dtype == other._row_splits_dtype
                and self._shape.is_compatible_with(other._shape))

    def _key(self):
        return (self._shape, self._dtype, self._ragged_rank, self._row_splits_dtype)

    def __eq__(self, other):
        return isinstance(other, RaggedTensorSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"RaggedTensorSpec(TensorShape({self._shape.as_list() if self._shape.rank is not None else None}), "
                f"{self._dtype!r}, {self._ragged_rank}, {self._row_splits_dtype!r})")


def _rowids_from_splits(splits):
    """The row of each value: position p belongs to the number of rows r >= 1 that start at or before it,
    so a count at each later row's start, summed cumulatively (O(values + rows); a binary search per value
    was 4x slower)."""
    nvals = splits[-1]
    ones = _op("OnesLike")(splits[1:])
    starts = _op("UnsortedSegmentSum")(ones, splits[1:], nvals + _scalar(1, splits.dtype))
    return _cumsum(starts)[:-1]


def _partition_from_lengths(lengths):
    """(row_splits, value_rowids, value_columns) of rows of these lengths, with no values needed."""
    splits = _concat_zero(_cumsum(lengths))
    nvals = splits[-1]
    positions = _op("Range")(_scalar(0, splits.dtype), nvals, _scalar(1, splits.dtype))
    rowids = _rowids_from_splits(splits)
    cols = positions - _op("GatherV2")(splits, rowids, 0, 0)
    return splits, rowids, cols

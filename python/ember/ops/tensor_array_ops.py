"""``ember.TensorArray``: TensorFlow 2's TensorArray, a list of same-dtype tensors indexed by position.

Note [Two representations of a TensorArray]
Eagerly (and inside a trace while every index is known) the array is a Python list of its element tensors:
a write is O(1), ``stack`` packs them once, and GradientTape sees the ops that made and packed them. A loop
variable of a staged ``while_loop`` must be one tensor, so there (and when an index is symbolic, or the size
is only known when the function runs) the array is *dense*: one tensor whose leading dimension is the size,
written by ``InplaceUpdate`` (src/ember/ops/tensor_array.cc) and read by ``GatherV2``. That tensor is also a
dense TensorList (Note [TensorLists as dense tensors] there), so ``gather``/``scatter``/``concat``/``split`` of
a dense array are TensorFlow's ``TensorListGather``/``ScatterIntoExistingList``/``ConcatV2``/``Split``, as
TensorFlow's graph TensorArray calls them. Every op involved has a gradient rule of the registry, so autodiff needs nothing special; a dense write costs one pass over the buffer (see
the report of issue 15 for measured numbers). Until its first write a dense array whose element shape is
unknown has no buffer (*pending*); the staged ``while_loop`` learns the element shape by tracing the body
once (Note [TensorArray loop variables]).

Note [Splitting into pieces of different lengths]
``split`` with lengths known while tracing (or eagerly) makes a list of pieces of any lengths. With lengths
known only when the function runs the pieces may differ in length, which no dense buffer holds, so the array
is *ragged*: the split value and its lengths, as they came (a RaggedTensor's values and row lengths).
``concat`` is then the value itself, ``read(i)`` a slice of it at the sum of the lengths before i, ``size`` the
number of lengths: the ops TensorFlow programs apply after a split, all of them plain ops with gradients (a
concat's gradient flows to the split value untouched, as TensorFlow's concat and split are each other's
gradient). Everything that needs elements of one shape (stack, gather, scatter, a write, a loop's writes)
first makes the dense buffer with ``TensorListSplit``, which checks, when it runs, that the lengths are equal
(TensorFlow refuses to stack pieces of different shapes too). So equal lengths keep the dense fast path
after one copy, and unequal ones cost nothing until something needs one shape. A ragged array is carried by a
``while_loop`` as its two tensors. Why not a ragged kind of dense list in the TensorList kernels: a list in
ember is one tensor (Note [TensorLists as dense tensors]), and the row lengths would have to travel beside
it through every op, loop and call; in Python the array object carries them for free.

A dynamic_size array written at tensor indices keeps spare rows: its buffer doubles when a write goes past
it (a Pad by 0 rows otherwise, which takes the dying buffer over without a copy) and ``_length`` counts the
rows in use, so such writes cost O(1) amortized, as TensorFlow's TensorListSetItem with
resize_if_index_out_of_bounds; its readers see the first ``_length`` rows (a view).

As in TensorFlow 2, writes are functional inside ``ember.function`` (``ta = ta.write(i, x)`` returns the new
array, the old one is unchanged); eagerly the array is updated in place and ``write`` returns it.
"""

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape

_InplaceUpdate = _C.op("InplaceUpdate")
# TensorFlow's TensorList ops over ember's dense lists (src/ember/ops/tensor_array.cc): a dense array's buffer
# is such a list, so gather/scatter/concat/split of a dense array are these ops, as TensorFlow's graph
# TensorArray (v3 on lists) calls them; each has its gradient rule in the registry.
_TensorListGather = _C.op("TensorListGather")
_TensorListScatterIntoExistingList = _C.op("TensorListScatterIntoExistingList")
_TensorListConcatV2 = _C.op("TensorListConcatV2")
_TensorListSplit = _C.op("TensorListSplit")


def _ops():
    from ember.ops import array_ops, math_ops

    return array_ops, math_ops


def _concrete_int(value):
    """value as a Python int when it is known now (a Python int, an eager or constant tensor), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, Tensor):
        if value._is_symbolic or value.shape.rank != 0 or not value.dtype.is_integer:
            return None
        return int(value)
    try:
        import numpy as np

        arr = np.asarray(value)
        if arr.ndim == 0 and np.issubdtype(arr.dtype, np.integer):
            return int(arr)
    except Exception:  # noqa: BLE001 - not a number: the caller converts it and reports
        pass
    return None


def _concrete_ints(value):
    if isinstance(value, Tensor):
        if value._is_symbolic:
            return None
        return [int(v) for v in value.numpy().reshape(-1)]
    if isinstance(value, (list, tuple)):
        out = [_concrete_int(v) for v in value]
        return None if any(v is None for v in out) else out
    import numpy as np

    return [int(v) for v in np.asarray(value).reshape(-1)]


def _shape_operand(shape):
    """A TensorShape as the element_shape operand of the TensorList ops: -1 for unknown dims, the scalar -1
    for an unknown rank."""
    shape = TensorShape(shape)
    if shape.rank is None:
        return convert_to_tensor(-1, dtype=dtypes.int32)
    return convert_to_tensor([-1 if d is None else d for d in shape.as_list()], dtype=dtypes.int32)


def _zero_of(dtype):
    """The zero element of dtype: the empty string for strings, as TensorFlow's zeros."""
    return convert_to_tensor("" if dtype == dtypes.string else 0, dtype=dtype)


# Note [Reading an array of an enclosing trace]
# Reading packs a list-mode array into its dense buffer once and keeps it (_densify). A branch or loop body
# that reads an array made by the enclosing function (captured by closure, not a loop variable) must not keep
# that buffer: it is a value of the body's graph, and the enclosing function, reading the array after the
# loop, would find a tensor of another graph. So an array remembers the trace it belongs to (_trace, the
# trace's serial) and a read from any other trace works on a copy. The body then packs the elements it
# lifted each time it runs: one copy of the array per iteration that reads it (TensorFlow reads its list
# without copying); a loop variable, or an array written in the loop, is dense already and reads in place.


class _Cleared:
    """An element read once from an array with clear_after_read."""


_CLEARED = _Cleared()


class TensorArray:
    """A list of tensors of one dtype, written and read by index, as ``tf.TensorArray``."""

    _ember_composite = True

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        if handle is not None or flow is not None:
            raise NotImplementedError("TensorArray: handle= and flow= (TensorFlow 1 arrays) are not supported")
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = infer_shape
        self._element_shape = TensorShape(element_shape)
        self._name = name or tensor_array_name or "TensorArray"
        self._items = None  # list mode: element tensors (None where unwritten)
        self._buffer = None  # dense mode: [size] + element shape
        self._length = None  # dense mode: the rows of _buffer in use (int32 scalar), None when all are
        self._size = None  # pending mode: a scalar int32 tensor
        self._ragged = None  # ragged mode: (value, int64 lengths), Note [Splitting into pieces of different lengths]
        self._trace = _C.trace_token()  # Note [Reading an array of an enclosing trace]
        if size is None:
            if not _C.in_trace():
                raise ValueError("Size must be declared for TensorArrays when eager execution is enabled.")
            size = 0
            self._dynamic_size = True
        n = _concrete_int(size)
        if n is not None:
            if n < 0:
                raise errors.InvalidArgumentError(None, None, f"TensorArray: size must be non-negative, got {n}")
            self._items = [None] * n
        else:
            size = convert_to_tensor(size)
            if size.dtype != dtypes.int32 or size.shape.rank not in (None, 0):
                raise TypeError(f"TensorArray: size must be an int32 scalar, got {size.dtype.name} of shape "
                                f"{size.shape}")
            self._size = size

    # ---- properties

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def handle(self):
        return None

    @property
    def flow(self):
        return self.stack() if self._items is None or self._items else None

    def __repr__(self):
        mode = "list" if self._items is not None else ("dense" if self._buffer is not None else (
            "ragged" if self._ragged is not None else "pending"))
        return f"<ember.TensorArray dtype={self._dtype.name} element_shape={self._element_shape} ({mode})>"

    # ---- internals

    def _new(self):
        """Eagerly the array itself (TensorFlow updates eager arrays in place), staged a copy."""
        if not _C.in_trace():
            return self
        return self._copy()

    def _copy(self):
        other = object.__new__(TensorArray)
        other.__dict__.update(self.__dict__)
        if other._items is not None:
            other._items = list(other._items)
        other._trace = _C.trace_token()
        return other

    def _foreign(self):
        """Whether this array belongs to an enclosing trace (Note [Reading an array of an enclosing trace])."""
        return self._trace != _C.trace_token() and _C.in_trace()

    def _check_value(self, value, what="write"):
        if isinstance(value, Tensor) and value.dtype != self._dtype:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray dtype is {self._dtype.name} but Op is trying to {what} dtype "
                f"{value.dtype.name}")
        value = convert_to_tensor(value, dtype=self._dtype)
        return value

    def _merge_shape(self, shape):
        if not self._infer_shape:
            return
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Incompatible shape for value ({_shape_text(shape)}), expected "
                             f"({_shape_text(self._element_shape)})")
        self._element_shape = self._element_shape.merge_with(shape)

    def _static_size(self):
        if self._items is not None:
            return len(self._items)
        if self._ragged is not None:
            return self._ragged[1].shape.as_list()[0] if self._ragged[1].shape.rank == 1 else None
        if self._buffer is not None:
            if self._length is not None:
                return _concrete_int(self._length)
            return self._buffer.shape.as_list()[0] if self._buffer.shape.rank else None
        return _concrete_int(self._size)

    def _size_tensor(self):
        array_ops, _ = _ops()
        if self._items is not None:
            return convert_to_tensor(len(self._items), dtype=dtypes.int32)
        if self._ragged is not None:
            return array_ops.shape(self._ragged[1])[0]
        if self._buffer is not None:
            return self._length if self._length is not None else array_ops.shape(self._buffer)[0]
        return self._size

    def _rows(self):
        """The dense buffer's rows in use: the buffer, or a view of its first _length rows."""
        if self._length is None:
            return self._buffer
        return self._buffer[:self._length]

    def _compact(self):
        """Drops spare rows (before an operation that works on the whole buffer)."""
        if self._length is not None:
            self._buffer = self._rows()
            self._length = None

    def _zeros_element(self):
        array_ops, _ = _ops()
        if not self._element_shape.is_fully_defined():
            raise ValueError(f"TensorArray: cannot read an element that was never written when the element shape "
                             f"({self._element_shape}) is not fully known")
        return array_ops.zeros(self._element_shape.as_list(), dtype=self._dtype)

    def _densify(self):
        """Turns a list-mode array into a dense one (this object changes representation, not value)."""
        array_ops, _ = _ops()
        if self._ragged is not None:
            # One shape for every piece: the element shape [longest piece] + rows makes TensorListSplit refuse
            # pieces of different lengths as TensorFlow's stack does (InvalidArgumentError) when it runs.
            from ember.ops import math_ops

            value, lengths = self._ragged
            longest = math_ops.maximum(math_ops.reduce_max(lengths), convert_to_tensor(0, dtype=dtypes.int64))
            element = array_ops.concat([array_ops.reshape(longest, [1]),
                                        math_ops.cast(array_ops.shape(value)[1:], dtypes.int64)], 0)
            self._buffer = _TensorListSplit(value, element, lengths)
            self._ragged = None
            return
        if self._items is None:
            return
        items = [None if v is _CLEARED else v for v in self._items]  # a cleared element reads as unwritten
        if any(v is None for v in items):
            known = [v for v in items if v is not None]
            if not known and not self._element_shape.is_fully_defined():
                # Nothing written and no element shape: pending until the first write.
                self._size = convert_to_tensor(len(items), dtype=dtypes.int32)
                self._items = None
                return
            zero = array_ops.zeros_like(known[0]) if known and not self._element_shape.is_fully_defined() \
                else self._zeros_element()
            items = [zero if v is None else v for v in items]
        shapes = {tuple(v.shape.as_list()) if v.shape.rank is not None else None for v in items}
        if len(shapes) > 1:
            raise ValueError(f"TensorArray: its elements have different shapes {sorted(map(str, shapes))}; only an "
                             f"array of same-shaped elements can be indexed by a tensor or carried by a loop")
        if items:
            self._buffer = array_ops.stack(items)
        else:
            self._buffer = array_ops.zeros([0] + self._element_shape.as_list(), dtype=self._dtype) \
                if self._element_shape.is_fully_defined() else None
            if self._buffer is None:
                self._size = convert_to_tensor(0, dtype=dtypes.int32)
        self._items = None

    def _materialize(self, example=None, element_shape=None):
        """Gives a pending array its zero buffer: [size] + element shape, unknown dimensions as 1 (a write
        broadcasts them to the written shape)."""
        array_ops, _ = _ops()
        if example is not None:
            dims = array_ops.shape(example)
        else:
            shape = element_shape if element_shape is not None else self._element_shape
            if shape.rank is None:
                raise ValueError("TensorArray: a loop variable's element shape must have a known rank; give "
                                 "element_shape=")
            dims = convert_to_tensor([1 if d is None else d for d in shape.as_list()], dtype=dtypes.int32)
            if self._infer_shape and self._element_shape.is_compatible_with(shape):
                # The shape the body's writes give: the loop's buffer keeps it, so writes need no broadcast
                # and may go in place.
                self._element_shape = self._element_shape.merge_with(shape)
        full = array_ops.concat([array_ops.reshape(self._size, [1]), dims], 0)
        self._buffer = array_ops.fill(full, _zero_of(self._dtype))
        self._size = None

    # ---- reading

    def read(self, index, name=None):
        """The element at ``index`` (zeros of the element shape where nothing was written)."""
        if self._foreign():
            return self._copy().read(index, name)
        i = _concrete_int(index)
        if self._items is not None and i is not None:
            if i < 0:
                raise errors.OutOfRangeError(None, None, f"Reading from negative indices (index {i}) is not "
                                                         f"allowed.")
            if i >= len(self._items):
                raise errors.OutOfRangeError(None, None, f"Tried to read from index {i} but array size is: "
                                                         f"{len(self._items)}")
            value = self._items[i]
            if value is _CLEARED:
                raise errors.InvalidArgumentError(
                    None, None, f"Could not read index {i} twice because it was cleared after a previous read "
                    f"(perhaps try setting clear_after_read = false?)")
            if value is None:
                return self._zeros_element()
            if self._clear_after_read and not _C.in_trace():
                self._items[i] = _CLEARED
            return value
        array_ops, _ = _ops()
        if self._ragged is not None:
            return self._read_ragged(index)
        self._densify()
        if self._buffer is None:
            return self._zeros_element()
        index = convert_to_tensor(index, dtype=dtypes.int32)
        value = array_ops.gather(self._rows(), index)
        return value if not self._element_shape.is_fully_defined() else array_ops.reshape(
            value, self._element_shape.as_list())

    def _read_ragged(self, index):
        """Piece ``index`` of a ragged array: the value's rows from the sum of the lengths before it."""
        array_ops, math_ops = _ops()
        value, lengths = self._ragged
        index = convert_to_tensor(index, dtype=dtypes.int32)
        starts = math_ops.cumsum(lengths, exclusive=True)
        start = math_ops.cast(array_ops.gather(starts, index), dtypes.int32)
        length = math_ops.cast(array_ops.gather(lengths, index), dtypes.int32)
        return value[start:start + length]

    def stack(self, name=None):
        """The elements packed along a new first dimension."""
        if self._foreign():
            return self._copy().stack(name)
        array_ops, _ = _ops()
        if self._items is not None:
            if not self._items:
                if _C.in_trace() and not self._element_shape.is_fully_defined():
                    raise errors.InvalidArgumentError(
                        None, None, f"Tried to stack elements of an empty list with non-fully-defined "
                        f"element_shape: {self._element_shape}")
                if self._element_shape.rank is None:
                    return array_ops.zeros([0], dtype=self._dtype)
                return array_ops.zeros([0] + [d or 0 for d in self._element_shape.as_list()], dtype=self._dtype)
            if all(v is None or v is _CLEARED for v in self._items) and not self._element_shape.is_fully_defined():
                raise ValueError("Cannot convert a partially known TensorShape <unknown> to a Tensor.")
        self._densify()
        if self._buffer is None:
            raise ValueError(f"TensorArray: stack of an array never written whose element shape "
                             f"({self._element_shape}) is not fully known")
        return array_ops.identity(self._rows())

    def gather(self, indices, name=None):
        """The elements at ``indices``, packed."""
        if self._foreign():
            return self._copy().gather(indices, name)
        array_ops, _ = _ops()
        idx = _concrete_ints(indices)
        if self._items is not None and idx is not None:
            if not idx:
                return array_ops.gather(self.stack(), idx)
            for i in idx:
                if not 0 <= i < len(self._items):
                    raise errors.OutOfRangeError(None, None, f"TensorArray.gather: index {i} is not in [0, "
                                                             f"{len(self._items)})")
            # Gather does not clear what it reads (TensorFlow's eager arrays clear on read() only).
            return array_ops.stack([v if v is not None and v is not _CLEARED else self._zeros_element()
                                    for v in (self._items[i] for i in idx)])
        self._densify()
        if self._buffer is None:
            return self.stack()
        rows = self._rows()
        element = self._element_shape if self._infer_shape else TensorShape(None)
        if rows.shape.rank is not None and element.rank is not None and element.rank != rows.shape.rank - 1:
            element = TensorShape(None)
        return _TensorListGather(rows, convert_to_tensor(indices, dtype=dtypes.int32), _shape_operand(element),
                                 self._dtype)

    def concat(self, name=None):
        """The elements concatenated along their first dimension."""
        if self._foreign():
            return self._copy().concat(name)
        array_ops, _ = _ops()
        if self._items is not None:
            items = [v if v is not None and v is not _CLEARED else self._zeros_element() for v in self._items]
            for k, v in enumerate(items):
                if v.shape.rank == 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Concat saw a scalar shape at index {k} but requires at least vectors.")
            if not items:
                rest = self._element_shape.as_list()[1:] if self._element_shape.rank else []
                return array_ops.zeros([0] + [d or 0 for d in rest], dtype=self._dtype)
            return array_ops.concat(items, 0)
        if self._ragged is not None:
            return array_ops.identity(self._ragged[0])
        self._densify()
        buffer = self.stack()
        if buffer.shape.rank is not None and buffer.shape.rank < 2:
            raise errors.InvalidArgumentError(None, None, "Concat saw a scalar shape at index 0 but requires at "
                                                          "least vectors.")
        empty = convert_to_tensor([], dtype=dtypes.int64)
        return _TensorListConcatV2(buffer, _shape_operand(None), empty, self._dtype)[0]

    def size(self, name=None):
        """The number of elements, an int32 scalar."""
        return self._size_tensor()

    # ---- writing

    def write(self, index, value, name=None):
        """The array with ``value`` at ``index``."""
        array_ops, math_ops = _ops()
        value = self._check_value(value)
        i = _concrete_int(index)
        if self._items is not None and i is not None:
            if i < 0:
                raise errors.OutOfRangeError(None, None, f"Writing to negative indices (index {i}) is not "
                                                         f"allowed.")
            if i >= len(self._items) and not self._dynamic_size:
                raise errors.OutOfRangeError(None, None, f"Tried to write to index {i} but array is not "
                                                         f"resizeable and size is: {len(self._items)}")
            self._merge_shape(value.shape)
            out = self._new()
            if i >= len(out._items):
                out._items.extend([None] * (i + 1 - len(out._items)))
            out._items[i] = value
            return out
        self._merge_shape(value.shape)
        out = self._new()
        out._densify()
        index = convert_to_tensor(index, dtype=dtypes.int32)
        if out._buffer is None:
            out._materialize(example=value)
        buffer = out._buffer
        if out._dynamic_size:
            # Capacity doubles when the write goes past it; otherwise the Pad adds no rows and takes the
            # buffer over in place (see the module's note).
            n = array_ops.shape(buffer)[0]
            used = out._length if out._length is not None else n
            need = index + 1
            grow = math_ops.maximum(math_ops.maximum(need, 2 * n) - n, 0) * math_ops.cast(need > n, dtypes.int32)
            rank = buffer.shape.rank
            paddings = array_ops.concat([array_ops.reshape(array_ops.stack([0, grow]), [1, 2]),
                                         array_ops.zeros([rank - 1, 2], dtype=dtypes.int32)], 0)
            buffer = array_ops.pad(buffer, paddings)
            out._length = math_ops.maximum(used, need)
        if value.shape.rank is None:
            # A value whose rank only the run knows (a numpy_function's result) takes the array's element
            # shape, checked when the write runs, as TensorFlow's TensorListSetItem checks it.
            known = self._element_shape if self._element_shape.rank is not None else (
                buffer.shape[1:] if buffer.shape.rank is not None else None)
            if known is None:
                # ember's dense buffer needs a rank while tracing; TensorFlow's TensorList does not.
                raise ValueError("TensorArray.write: a value of unknown rank (a numpy_function's result?) "
                                 "cannot be written at a tensor index of an array whose element shape is "
                                 "unknown; give element_shape= (map_fn: fn_output_signature=TensorSpec(shape))")
            from ember.debugging import ensure_shape

            value = ensure_shape(value, known)
        buffer_rows = buffer.shape.as_list()[1:] if buffer.shape.rank is not None else None
        if buffer_rows is None or buffer_rows != value.shape.as_list() or None in buffer_rows:
            # A buffer made before the element shape was known has 1 in the unknown dimensions: Note [Two
            # representations of a TensorArray].
            buffer = array_ops.broadcast_to(buffer, array_ops.concat(
                [array_ops.shape(buffer)[:1], array_ops.shape(value)], 0))
        out._buffer = _InplaceUpdate(buffer, array_ops.reshape(index, [1]), array_ops.expand_dims(value, 0))
        return out

    def unstack(self, value, name=None):
        """The array whose elements are the slices of ``value`` along its first dimension."""
        array_ops, _ = _ops()
        value = self._check_value(value, "unstack")
        if value.shape.rank == 0:
            raise ValueError("TensorArray.unstack: the value must have at least one dimension, got a scalar")
        n = value.shape.as_list()[0] if value.shape.rank is not None else None
        size = self._static_size()
        if n is not None and size is not None and n > size and not self._dynamic_size:
            error = errors.InvalidArgumentError if _C.in_trace() else ValueError  # as TensorFlow's TensorList
            message = f"Cannot unstack {n} tensors into a TensorArray of static size {size} "
            raise error(None, None, message) if _C.in_trace() else error(message)
        self._merge_shape(value.shape[1:] if value.shape.rank is not None else TensorShape(None))
        out = self._new()
        if n is not None and not value._is_symbolic and out._items is not None and n <= 64:
            items = array_ops.unstack(value) if n else []
            if len(out._items) < n:
                out._items = [None] * n
            out._items[:n] = items
            return out
        out._items = None
        out._size = None
        out._buffer = value
        out._length = None
        out._ragged = None
        return out

    def scatter(self, indices, value, name=None):
        """The array with ``value[k]`` at ``indices[k]``."""
        array_ops, math_ops = _ops()
        value = self._check_value(value, "scatter")
        idx = _concrete_ints(indices)
        if self._items is not None and idx is not None and not value._is_symbolic:
            out = self
            for k, i in enumerate(idx):
                out = out.write(i, value[k])
            return out
        self._merge_shape(value.shape[1:] if value.shape.rank is not None else TensorShape(None))
        out = self._new()
        out._densify()
        out._compact()
        indices = convert_to_tensor(indices, dtype=dtypes.int32)
        if out._buffer is None:
            out._materialize(example=value[0])
        buffer = out._buffer
        if value.shape.rank is None:
            raise ValueError("TensorArray.scatter: a value of unknown rank cannot be scattered at tensor indices")
        rows = value.shape.as_list()[1:]
        buffer_rows = buffer.shape.as_list()[1:] if buffer.shape.rank is not None else None
        if buffer_rows is None or buffer_rows != rows or None in buffer_rows:
            # A buffer made before the element shape was known has 1 in the unknown dimensions (Note [Two
            # representations of a TensorArray]); the list op takes rows of the value's shape.
            buffer = array_ops.broadcast_to(buffer, array_ops.concat(
                [array_ops.shape(buffer)[:1], array_ops.shape(value)[1:]], 0))
        out._buffer = _TensorListScatterIntoExistingList(buffer, value, indices, self._dtype)
        return out

    def split(self, value, lengths, name=None):
        """The array whose elements are consecutive pieces of ``value`` with the given lengths."""
        array_ops, _ = _ops()
        value = self._check_value(value, "split")
        sizes = _concrete_ints(lengths)
        if sizes is None:
            return self._split_ragged(value, lengths)
        pieces = array_ops.split(value, sizes, 0) if sizes else []
        out = self._new()
        if out._items is None:
            out._items = []
            out._buffer = None
            out._size = None
            out._length = None
            out._ragged = None
        if len(out._items) < len(pieces):
            if not self._dynamic_size and out._items and len(pieces) > len(out._items):
                raise ValueError(f"Cannot split into {len(pieces)} tensors a TensorArray of static size "
                                 f"{len(out._items)}")
            out._items = out._items + [None] * (len(pieces) - len(out._items))
        for k, piece in enumerate(pieces):
            out._items[k] = piece
        if len({tuple(p.shape.as_list()) for p in pieces}) == 1:
            out._merge_shape(pieces[0].shape)
        return out

    def _ragged_from_pieces(self):
        """A list whose elements (all written) differ only in their first dimension, as after split with
        lengths known while tracing or writes with infer_shape=False, becomes the ragged array split makes
        of their concatenation, which a function argument carries (one buffer cannot)."""
        items = self._items
        if not items or any(v is None or v is _CLEARED or v.shape.rank in (None, 0) for v in items):
            return
        if len({tuple(v.shape.as_list()) for v in items}) == 1 or len({tuple(v.shape.as_list()[1:])
                                                                         for v in items}) != 1:
            return
        array_ops, _ = _ops()
        lengths = [v.shape.as_list()[0] for v in items]
        if None in lengths:
            return
        self._ragged = (array_ops.concat(items, 0), convert_to_tensor(lengths, dtype=dtypes.int64))
        self._items = None

    def _split_ragged(self, value, lengths):
        """split with lengths known only when the function runs: a ragged array (Note [Splitting into pieces
        of different lengths])."""
        from ember.ops import math_ops

        if value.shape.rank == 0:
            raise ValueError("TensorArray.split: the value must have at least one dimension, got a scalar")
        lengths = convert_to_tensor(lengths)
        if not lengths.dtype.is_integer or lengths.shape.rank not in (None, 1):
            raise TypeError(f"TensorArray.split: lengths must be a vector of integers, got {lengths.dtype.name} "
                            f"of shape {lengths.shape}")
        if lengths.dtype != dtypes.int64:
            lengths = math_ops.cast(lengths, dtypes.int64)
        if value.shape.rank is not None:
            self._merge_shape(TensorShape([None]).concatenate(value.shape[1:]))
        out = self._new()
        out._items, out._size, out._length, out._buffer = None, None, None, None
        out._ragged = (value, lengths)
        return out

    def identity(self):
        """The same array (TensorFlow's identity of its flow)."""
        return self._new()

    def close(self, name=None):
        return None

    # ---- as a loop variable: Note [TensorArray loop variables] in composite_loops

    def _loop_tensors(self, element_shape=None):
        """The array as one dense tensor for a loop, and that tensor's shape invariant ([None] + element
        shape). A pending array with no known element rank raises _NeedsElementShape. A ragged array goes as
        its value and lengths."""
        if self._ragged is not None:
            value, lengths = self._ragged
            return [value, lengths], [TensorShape([None]).concatenate(value.shape[1:]) if value.shape.rank
                                      is not None else TensorShape(None), TensorShape([None])]
        self._densify()
        if self._buffer is None:
            shape = element_shape if element_shape is not None else self._element_shape
            if shape.rank is None:
                raise _NeedsElementShape()
            self._materialize(element_shape=shape)
        shape = self._element_shape if self._infer_shape else TensorShape(None)
        if self._buffer.shape.rank is not None:
            rank = self._buffer.shape.rank - 1
            es = shape if shape.rank == rank else TensorShape([None] * rank)
            tensors, invariants = [self._buffer], [TensorShape([None]).concatenate(es)]
        else:
            tensors, invariants = [self._buffer], [TensorShape(None)]
        if self._dynamic_size:
            # The rows in use travel with the buffer, so writes in the loop keep spare rows.
            tensors.append(self._size_tensor())
            invariants.append(TensorShape([]))
        return tensors, invariants

    # ---- composite-tensor protocol: Note [TensorArray arguments of functions]
    @property
    def _type_spec(self):
        return TensorArraySpec._of(self)[0]

    def _to_components(self):
        return TensorArraySpec._of(self)[1]

    def _from_loop_tensors(self, tensors):
        other = object.__new__(TensorArray)
        other.__dict__.update(self.__dict__)
        other._trace = _C.trace_token()
        if self._ragged is not None:
            other._items, other._size, other._buffer, other._length = None, None, None, None
            other._ragged = (tensors[0], tensors[1])
            return other
        other._items, other._size, other._buffer = None, None, tensors[0]
        other._length = tensors[1] if len(tensors) > 1 else None
        return other


class _NeedsElementShape(Exception):
    pass


def _form(array):
    return "ragged (split by lengths known at run time)" if array._ragged is not None else "dense"


def _shape_text(shape):
    shape = TensorShape(shape)
    if shape.rank is None:
        return "<unknown>"
    dims = ", ".join("None" if d is None else str(d) for d in shape.as_list())
    return f"({dims},)" if shape.rank == 1 else f"({dims})"


# Note [TensorArray loop variables]
# A staged while_loop carries tensors only, so a loop variable that is a composite (an object with
# _ember_composite, today TensorArray) goes in as its tensors (_loop_tensors: the dense buffer, with the
# invariant [None] + element shape so that the size may change) and is rebuilt around them in the condition,
# the body and the results (_from_loop_tensors). A pending array (never written, element shape unknown) has
# no tensor yet: the body is traced once with the array still pending, which shows the shape its writes
# give, and then the loop is traced for real with a zero buffer of that shape (unknown dimensions as 1,
# broadcast by the first write). Eagerly the loop is Python, and arrays stay lists.


class _Retrace(Exception):
    def __init__(self, shapes):
        super().__init__("retrace")
        self.shapes = shapes


def _is_composite(value):
    return getattr(value, "_ember_composite", False)


def composite_while_loop(while_loop, cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
                         maximum_iterations=None, name=None):
    """while_loop for loop variables that hold composites (see Note [TensorArray loop variables])."""
    from ember.ops.control_flow_ops import _truth
    from ember.util import nest

    single = not isinstance(loop_vars, (list, tuple, dict))
    structure = [loop_vars] if single else loop_vars

    def call(fn, values):
        return fn(**values) if isinstance(values, dict) else fn(*values)

    def call_body(values):
        out = call(body, values)
        if isinstance(values, (list, tuple)) and len(values) == 1 and not isinstance(out, (list, tuple)):
            out = type(values)([out]) if not hasattr(type(values), "_fields") else type(values)(out)
        try:
            nest.assert_same_structure(values, out, check_types=False)
        except ValueError as e:
            raise ValueError(f"while_loop: the body must return the structure of loop_vars. {e}") from None
        return out

    if not _C.in_trace():
        values = structure
        iteration = 0
        while maximum_iterations is None or iteration < int(maximum_iterations):
            if not _truth(call(cond, values), "while_loop"):
                break
            values = call_body(values)
            iteration += 1
        return values[0] if single else values

    leaves = nest.flatten(structure)
    user_invariants = None
    if shape_invariants is not None:
        invariants_in = [shape_invariants] if single else shape_invariants
        try:
            user_invariants = nest.flatten_up_to(structure, invariants_in) if hasattr(nest, "flatten_up_to") \
                else nest.flatten(invariants_in)
        except (ValueError, TypeError):
            user_invariants = None
        if user_invariants is not None and len(user_invariants) != len(leaves):
            user_invariants = None
    shapes = {}
    for _attempt in range(3):
        templates, flat, invariants, pending = [], [], [], set()
        for k, leaf in enumerate(leaves):
            if _is_composite(leaf):
                leaf = leaf._new() if isinstance(leaf, TensorArray) else leaf
                try:
                    tensors, invs = leaf._loop_tensors(shapes.get(k))
                except _NeedsElementShape:
                    pending.add(k)
                    tensors, invs = [], []
                templates.append((k, leaf, len(tensors)))
                flat.extend(tensors)
                invariants.extend(invs)
            else:
                tensor = convert_to_tensor(leaf)
                templates.append((k, None, 1))
                flat.append(tensor)
                given = user_invariants[k] if user_invariants is not None else None
                invariants.append(TensorShape(given) if given is not None else tensor.shape)
        dummy = not flat
        if dummy:
            flat, invariants = [convert_to_tensor(0)], [TensorShape([])]
        seen_shapes = {}

        def rebuild(flat_values, templates=templates):
            it = iter(flat_values)
            out = []
            for k, leaf, count in templates:
                if leaf is None:
                    out.append(next(it))
                elif k in pending:
                    out.append(leaf._new())
                else:
                    out.append(leaf._from_loop_tensors([next(it) for _ in range(count)]))
            return nest.pack_sequence_as(structure, out)

        def flat_cond(*values, rebuild=rebuild):
            return call(cond, rebuild(values[1:] if dummy else values))

        def flat_body(*values, rebuild=rebuild, templates=templates, pending=pending, seen=seen_shapes):
            out = call_body(rebuild(values[1:] if dummy else values))
            out_leaves = nest.flatten(out)
            result = [values[0]] if dummy else []
            discovered = {}
            for (k, leaf, _), value in zip(templates, out_leaves):
                if leaf is None:
                    result.append(value)
                    continue
                if not isinstance(value, type(leaf)):
                    raise TypeError(f"while_loop: loop variable {k} enters the loop as a {type(leaf).__name__} "
                                    f"but the body returns {type(value).__name__}")
                if isinstance(value, TensorArray) and value._dtype != leaf._dtype:
                    raise TypeError(f"while_loop: the TensorArray loop variable {k} enters as "
                                    f"{leaf._dtype.name} but the body returns one of {value._dtype.name}")
                if k in pending:
                    value._densify()
                    if value._buffer is None or value._buffer.shape.rank is None:
                        raise ValueError(f"while_loop: the TensorArray loop variable {k} is never written in "
                                         f"the body and its element shape is unknown; give element_shape=")
                    discovered[k] = TensorShape(value._buffer.shape.as_list()[1:])
                    continue
                if isinstance(value, TensorArray) and (value._ragged is None) != (leaf._ragged is None):
                    raise ValueError(f"while_loop: the TensorArray loop variable {k} enters the loop {_form(leaf)} "
                                     f"but the body returns it {_form(value)}; stack or concat it outside the loop, "
                                     f"or split it inside")
                seen[k] = value.element_shape
                result.extend(value._loop_tensors()[0])
            if discovered:
                raise _Retrace(discovered)
            return result

        try:
            flat_out = while_loop(flat_cond, flat_body, flat, shape_invariants=invariants,
                                  parallel_iterations=parallel_iterations, maximum_iterations=maximum_iterations,
                                  name=name)
        except _Retrace as r:
            shapes.update(r.shapes)
            continue
        flat_out = _as_list(flat_out)
        result = rebuild(flat_out[1:] if dummy else flat_out)
        for k, value in enumerate(nest.flatten(result)):
            if isinstance(value, TensorArray) and k in seen_shapes and value._infer_shape:
                if value._element_shape.is_compatible_with(seen_shapes[k]):
                    value._element_shape = value._element_shape.merge_with(seen_shapes[k])
        return result[0] if single else result
    raise ValueError("while_loop: could not settle the element shapes of the TensorArray loop variables")


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


# Note [TensorArray arguments of functions]
# An array given to an ember.function goes in as the tensors a loop would carry it as (Note [TensorArray loop
# variables]): a dense array its buffer (and its rows in use when dynamic_size), a ragged one (or a list whose
# elements differ only in their first dimension) its value and lengths, and an array with nothing written
# and an element shape not fully known its size. The spec names which of those
# it is, with the components' shapes ([None] + element shape, so arrays of any size share a trace), and the
# function rebuilds the array around its arguments. Inside, writes are functional as for any staged array:
# the caller's array is unchanged (TensorFlow's eager arrays would take the function's symbolic values in).
# A returned array comes back the same way.


class TensorArraySpec:
    """Describes a TensorArray argument of a function: element shape, dtype, dynamic_size, infer_shape."""

    __slots__ = ("_element_shape", "_dtype", "_dynamic_size", "_infer_shape", "_form", "_shapes")

    def __init__(self, element_shape=None, dtype=dtypes.float32, dynamic_size=False, infer_shape=True):
        self._element_shape = TensorShape(element_shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        self._form = "dense"
        rows = (TensorShape([None]).concatenate(self._element_shape)
                if self._infer_shape and self._element_shape.rank is not None else TensorShape(None))
        self._shapes = (rows, TensorShape([])) if self._dynamic_size else (rows,)

    @staticmethod
    def _of(array):
        """(spec, components) of an array; the array itself is left as it is."""
        copy = object.__new__(TensorArray)
        copy.__dict__.update(array.__dict__)
        if copy._items is not None:
            copy._items = list(copy._items)
        spec = TensorArraySpec(array._element_shape, array._dtype, array._dynamic_size, array._infer_shape)
        copy._ragged_from_pieces()
        try:
            if (copy._items is not None and copy._ragged is None and not copy._element_shape.is_fully_defined()
                    and all(v is None or v is _CLEARED for v in copy._items)):
                # Never written: its zero rows would need the unknown dimensions, so it goes as its size and
                # reading an unwritten element fails inside as it does outside (TensorFlow's too).
                raise _NeedsElementShape()
            tensors, shapes = copy._loop_tensors()
            spec._form = "ragged" if copy._ragged is not None else "dense"
        except _NeedsElementShape:
            tensors, shapes = [copy._size_tensor()], [TensorShape([])]
            spec._form = "pending"
        spec._shapes = tuple(TensorShape(s) for s in shapes)
        return spec, tensors

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def infer_shape(self):
        return self._infer_shape

    @property
    def value_type(self):
        return TensorArray

    @classmethod
    def from_value(cls, value):
        return cls._of(value)[0]

    def _component_dtypes(self):
        if self._form == "pending":
            return [dtypes.int32]
        if self._form == "ragged":
            return [self._dtype, dtypes.int64]
        return [self._dtype] + ([dtypes.int32] if self._dynamic_size else [])

    def _component_specs(self):
        from ember.framework.tensor_spec import TensorSpec

        return [TensorSpec(shape, dtype) for shape, dtype in zip(self._shapes, self._component_dtypes())]

    def _from_components(self, components):
        array = object.__new__(TensorArray)
        array._dtype, array._dynamic_size, array._infer_shape = self._dtype, self._dynamic_size, self._infer_shape
        array._clear_after_read, array._element_shape, array._name = True, self._element_shape, "TensorArray"
        array._items = array._buffer = array._length = array._size = array._ragged = None
        array._trace = _C.trace_token()
        components = list(components)
        if self._form == "pending":
            array._size = components[0]
        elif self._form == "ragged":
            array._ragged = (components[0], components[1])
        else:
            array._buffer = components[0]
            array._length = components[1] if len(components) > 1 else None
        return array

    def is_compatible_with(self, other):
        if isinstance(other, TensorArray):
            other = TensorArraySpec._of(other)[0]
        return (isinstance(other, TensorArraySpec) and self._dtype == other._dtype
                and self._dynamic_size == other._dynamic_size and self._infer_shape == other._infer_shape
                and self._form == other._form and len(self._shapes) == len(other._shapes)
                and self._element_shape.is_compatible_with(other._element_shape)
                and all(a.is_compatible_with(b) for a, b in zip(self._shapes, other._shapes)))

    def _key(self):
        return (self._element_shape, self._dtype, self._dynamic_size, self._infer_shape, self._form, self._shapes)

    def __eq__(self, other):
        return isinstance(other, TensorArraySpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        shape = self._element_shape
        shape_text = "None" if shape.rank is None else repr(shape.as_list())
        return (f"TensorArraySpec(TensorShape({shape_text}), {self._dtype!r}, {self._dynamic_size}, "
                f"{self._infer_shape})")

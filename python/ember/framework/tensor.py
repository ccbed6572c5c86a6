"""ember.Tensor and conversion of Python values (scalars, nested lists, NumPy arrays) to tensors."""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor_shape import TensorShape


_SYMBOLIC_VALUE_MESSAGE = ("a symbolic tensor (inside ember.function) has no value yet; return it from the "
                           "function to get its value")


class _SymbolicNumpyError(AttributeError, TypeError):
    """``.numpy()`` of a graph tensor: an AttributeError, as TensorFlow's (``hasattr(t, "numpy")`` is False
    inside a function), and a TypeError, as ember's other reads of a value a graph tensor lacks are."""


class _SymbolicArrayError(NotImplementedError, TypeError):
    """NumPy conversion of a graph tensor: TensorFlow's NotImplementedError, and a TypeError as above."""


class Tensor(_C.TensorBase):
    """An immutable multi-dimensional array, computed eagerly.

    Arithmetic operators, comparisons and ``@`` run ember ops from C (no Python on that path); the
    methods here give the rest of ``tf.Tensor``'s interface.
    """

    __slots__ = ()
    __array_priority__ = 100  # NumPy defers binary operators to us: np_array + tensor -> Tensor

    @property
    def shape(self):
        return TensorShape(self._shape_tuple)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied shape {TensorShape(shape)}")

    @property
    def rank(self):
        return self.ndim

    @property
    def numpy(self):
        """A NumPy copy of the value (a NumPy scalar for rank 0). A symbolic tensor has no ``numpy``
        (AttributeError, as TensorFlow's graph tensors), so ``hasattr(t, "numpy")`` tells the two apart."""
        if self._is_symbolic:
            raise _SymbolicNumpyError(f"'Tensor' object has no attribute 'numpy': {_SYMBOLIC_VALUE_MESSAGE}")
        return self._numpy

    def _numpy(self):
        array = np.array(self._as_array(), copy=True)
        return array[()] if array.ndim == 0 else array

    def _as_array(self):
        """A read-only NumPy view of the buffer (no copy); for strings a new object array of bytes."""
        if self._is_symbolic:  # checked first for every dtype: a graph tensor has no buffer to view
            raise TypeError(_SYMBOLIC_VALUE_MESSAGE)
        if self._dtype_enum == dtypes.string._enum:
            return _string_array(_C.string_values(self), self._shape_tuple)
        if self._dtype_enum == dtypes.bfloat16._enum:
            return np.asarray(_ArrayView(self)).view(dtypes.bfloat16.as_numpy_dtype)
        return np.asarray(memoryview(self))

    def __array__(self, dtype=None, copy=None):
        if self._is_symbolic:  # TensorFlow's class for this: NumPy code catches it
            raise _SymbolicArrayError(f"Cannot convert a symbolic ember.Tensor to a NumPy array: "
                                      f"{_SYMBOLIC_VALUE_MESSAGE}")
        array = self._as_array()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        if copy:
            return array.copy()
        return array

    def __complex__(self):
        """complex(t) of a one-element tensor; without it Python takes __float__ and drops the imaginary part
        (and so does NumPy filling an array from a list of tensors)."""
        if self._is_symbolic:
            raise TypeError(f"complex() of a symbolic tensor: {_SYMBOLIC_VALUE_MESSAGE}")
        return complex(self._numpy())  # NumPy's rules for which shapes convert, as TensorFlow's

    def __dlpack__(self, **kwargs):
        """DLPack export (``np.from_dlpack(t)``, ``torch.from_dlpack(t)``): a view of the buffer, no copy."""
        return _C.tensor_dlpack(self, **{k: v for k, v in kwargs.items() if k != "stream"})

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        from ember.ops import array_ops

        return iter(array_ops.unstack(self, axis=0)) if len(self) else iter(())

    def __getitem__(self, key):
        from ember.ops import array_ops

        return array_ops._slice_helper(self, key)

    def __repr__(self):
        if self._is_symbolic:
            return f"<ember.Tensor '{_C.symbolic_name(self)}' shape={self.shape} dtype={self.dtype.name}>"
        body = _numpy_repr(self.numpy())
        return f"<ember.Tensor: shape={self._shape_str()}, dtype={self.dtype.name}, numpy={body}>"

    def __str__(self):
        if self._is_symbolic:
            return f"Tensor(\"{_C.symbolic_name(self)}\", shape={self.shape}, dtype={self.dtype.name})"
        body = np.array2string(self.numpy()) if self.ndim else str(self.numpy())
        if "\n" in body:
            body = "\n" + body  # TensorFlow starts a multi-line value on its own line
        return f"tf.Tensor({body}, shape={self._shape_str()}, dtype={self.dtype.name})"

    def _shape_str(self):
        shape = self._shape_tuple
        return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.numpy(), spec)
        return format(str(self), spec)

    def __reduce__(self):
        return convert_to_tensor, (self.numpy(),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def ref(self):
        """A hashable reference to this tensor (``Tensor`` itself is unhashable, like TF's)."""
        return _TensorRef(self)

    def experimental_ref(self):
        return self.ref()

    # Reverse operators: the C slots already handle both operand orders for + - * / // % ** @ & | ^.

    def __rmatmul__(self, other):
        return convert_to_tensor(other, dtype_hint=self.dtype) @ self

    # Methods that mirror common ops.
    def cpu(self):
        return self

    @property
    def name(self):
        """The graph tensor name ("Square:0") of a symbolic tensor; eager tensors have none (as in TF)."""
        if self._is_symbolic:
            return _C.symbolic_name(self)
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")


def _numpy_repr(value):
    if isinstance(value, np.ndarray):
        text = repr(value)
        return ("\n" + text) if "\n" in text else text
    if isinstance(value, (np.bool_,)):
        return repr(bool(value))
    if isinstance(value, np.floating):
        return repr(value.item()) if value.dtype in (np.float32, np.float64) else str(value)
    if isinstance(value, np.integer):
        return str(int(value))
    return repr(value)


def _string_array(values, shape):
    """An object array of bytes of `shape` from a flat list (np.array would make a fixed-width bytes array or,
    for equal-length lists, add a dimension)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array.reshape(shape)


class _ArrayView:
    """Exposes a tensor's buffer through __array_interface__ (for dtypes the buffer protocol cannot name);
    the resulting array keeps this object, and so the tensor, alive."""

    __slots__ = ("_tensor", "__array_interface__")

    def __init__(self, tensor):
        self._tensor = tensor
        self.__array_interface__ = {
            "shape": tensor._shape_tuple,
            "typestr": "<u2",
            "data": (tensor._data_ptr, True),
            "version": 3,
        }


class _TensorRef:
    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, _TensorRef) and other._tensor is self._tensor


# ---- conversion -------------------------------------------------------------------------------------

_PY_INFERRED = {np.dtype(np.float64): dtypes.float32, np.dtype(np.bool_): dtypes.bool}


def _infer_python_dtype(array):
    """TensorFlow's inference for Python values: float -> float32, int -> int32 (int64 if needed)."""
    kind = array.dtype.kind
    if kind == "f":
        return dtypes.float32
    if kind == "b":
        return dtypes.bool
    if kind == "c":
        return dtypes.complex128  # TensorFlow keeps Python complex numbers at double precision
    if kind in "iu":
        if array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            return dtypes.int64
        return dtypes.int32
    if kind in "US":
        return dtypes.string
    if kind == "O" and array.size and isinstance(array.reshape(-1)[0], (str, bytes)):
        return dtypes.string  # the other elements are checked by _C.from_strings
    if kind in "OUS":
        raise ValueError("Can't convert Python sequence with mixed or non-numeric types to Tensor.")
    raise ValueError(f"Can't convert a value of NumPy dtype {array.dtype} to a Tensor.")


def _python_value_fits(kind, dtype):
    """Whether Python values of NumPy kind ``kind`` may adopt ``dtype`` (TF: floats never become ints)."""
    if kind == "f":
        return dtype.is_floating or dtype.is_complex
    if kind == "c":
        return dtype.is_complex
    return not dtype.is_bool or kind == "b"


def _to_numpy(value):
    """Returns (array, is_numpy) for a Python or NumPy value."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value), True
    if value is None:
        raise ValueError(f"Attempt to convert a value (None) with an unsupported type ({type(value)}) to a Tensor.")
    if isinstance(value, (str, bytes)):
        return _string_array([value], ()), False
    if isinstance(value, (list, tuple)) and isinstance(_first_leaf(value), (str, bytes)):
        try:
            array = np.array(value, dtype=object)
        except ValueError:
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.") from None
        return array, False  # _C.from_strings checks every element (a list among them: not rectangular)
    if isinstance(value, (list, tuple)):
        try:
            array = np.array(value)
        except ValueError:
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.") from None
        if array.dtype == object:
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
        if array.dtype.kind in "SU":  # NumPy turned numbers and strings into strings: TensorFlow refuses
            raise ValueError("Can't convert Python sequence with mixed types to Tensor.")
        # A list of tensors packs to a tensor of their dtype.
        flat = _first_leaf(value)
        if isinstance(flat, Tensor):
            return array.astype(flat.dtype.as_numpy_dtype, copy=False), True
        return array, False
    if isinstance(value, (int, float, bool, complex)):
        return np.array(value), False
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return np.asarray(value), True
    raise ValueError(f"Attempt to convert a value ({value!r}) with an unsupported type ({type(value)}) to a Tensor.")


def _first_leaf(value):
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return value


def _from_array(array, dtype, from_python=False):
    try:
        return _from_array_unchecked(array, dtype, from_python)
    except MemoryError:  # NumPy's copy of a huge value (constant(x, shape=[2**31])): TF's resource error
        raise errors.ResourceExhaustedError(
            None, None, f"constant: out of memory converting a value of shape {list(array.shape)} to "
            f"{dtype.name}") from None


def _from_array_unchecked(array, dtype, from_python=False):
    if array.size == 0 and (dtype == dtypes.string) != (array.dtype.kind in "OSU") and not (
            dtype == dtypes.bfloat16 and array.dtype.kind in "SU"):
        # An empty value has no element to disagree with the dtype: [] (float64 to NumPy) is a string
        # tensor and np.array([], object) a number one, as TensorFlow converts them (but for an empty
        # bytes or str array to bfloat16, which TensorFlow's converter refuses).
        array = np.empty(array.shape, dtype=object if dtype == dtypes.string else np.float64)
    if dtype == dtypes.string or array.dtype.kind in "OSU":
        return _from_string_array(array, dtype)
    np_dtype = dtype.as_numpy_dtype
    if array.dtype != np_dtype:
        try:
            with np.errstate(all="ignore"):
                array = array.astype(np_dtype)
        except OverflowError:  # Python ints beyond int64 (an object array): TF's ValueError
            raise ValueError("Can't convert Python sequence with out-of-range integer to Tensor.") from None
    shape = list(array.shape)
    array = np.require(array, requirements="C")  # ascontiguousarray would turn a scalar into shape (1,)
    if dtype == dtypes.bfloat16:
        array = array.view(np.uint16)
        if from_python:
            array = _flush_subnormal_bits(array)
    return _C.from_buffer(array, dtype._enum, shape)


def _flush_subnormal_bits(bits):
    """bfloat16 bits with every subnormal made a zero of its sign: TensorFlow's converter of Python numbers to
    bfloat16 flushes them (tf.constant(1e-39, tf.bfloat16) is 0), as a NumPy array's conversion does not
    (docs/subnormals.md)."""
    subnormal = ((bits & 0x7F80) == 0) & ((bits & 0x007F) != 0)
    if not subnormal.any():
        return bits
    return np.where(subnormal, bits & 0x8000, bits).astype(np.uint16)


def _from_string_array(array, dtype):
    if dtype != dtypes.string or array.dtype.kind not in "OSU":
        shown = array.item() if array.ndim == 0 else array
        raise TypeError(f"Cannot convert {shown!r} to EagerTensor of dtype {dtype.name}")
    try:
        return _C.from_strings(array.reshape(-1), list(array.shape))
    except TypeError:
        if array.dtype.kind != "O":
            raise
        if any(isinstance(v, (list, tuple)) for v in array.reshape(-1)):
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.") from None
        raise ValueError("Can't convert Python sequence with mixed types to Tensor.") from None


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts ``value`` to a Tensor. ``dtype`` is required (mismatch is an error); ``dtype_hint`` is
    preferred when the value converts to it."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    # A Variable reads its value (a node while tracing); IndexedSlices become their dense tensor.
    if getattr(value, "_ember_variable", False) or getattr(value, "_ember_indexed_slices", False):
        return value._as_tensor(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    if isinstance(value, (list, tuple)) and _holds_symbolic(value):
        return _autopack(value, dtype)  # the tensors' dtype wins over a hint, as in TensorFlow
    array, is_numpy = _to_numpy(value)
    if dtype is not None:
        if not is_numpy and array.dtype.kind == "f" and array.size and not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")  # [] is float64
        if not is_numpy and array.dtype.kind == "c" and not dtype.is_complex:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        if not is_numpy and array.dtype.kind in "iub" and dtype.is_bool and array.dtype.kind != "b":
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        return _from_array(array, dtype, from_python=not is_numpy)
    if dtype_hint is not None:
        hint = dtypes.as_dtype(dtype_hint)
        if not is_numpy and array.size == 0:  # an empty list has no dtype of its own: it takes the hint
            return _from_array(array.astype(hint.as_numpy_dtype if hint != dtypes.string else object), hint,
                               from_python=True)
        if (is_numpy or _python_value_fits(array.dtype.kind, hint)) and (
                (array.dtype.kind in "OSU") == (hint == dtypes.string)):
            return _from_array(array, hint, from_python=not is_numpy)
    if is_numpy:
        try:
            inferred = dtypes.as_dtype(array.dtype)
        except TypeError:
            raise TypeError(f"Cannot convert a NumPy array of dtype {array.dtype} to a Tensor") from None
    else:
        inferred = _infer_python_dtype(array)
    return _from_array(array, inferred)


def _holds_symbolic(value):
    if isinstance(value, (list, tuple)):
        return any(_holds_symbolic(v) for v in value)
    return isinstance(value, Tensor) and value._is_symbolic


def _autopack(value, dtype):
    """TensorFlow's autopacking: a (nested) list holding tensors computed in a graph (tf.stack([[0, 0],
    [n, n]]) with n = tf.shape(x)[0]) becomes a Pack of its rows, so the graph keeps what is known of them;
    Python numbers in it take the tensors' dtype."""
    if dtype is None:
        dtype = _first_tensor_dtype(value)
    for v in value:
        if isinstance(v, Tensor) and v.dtype != dtype:
            raise TypeError(f"Cannot convert a list containing a tensor of dtype {v.dtype.name} to {dtype.name} "
                            f"(Tensor is: {v!r})")
    rows = [convert_to_tensor(v, dtype=dtype) for v in value]
    return _C.op("Pack")(rows, 0)


def _first_tensor_dtype(value):
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (list, tuple)):
        for v in value:
            found = _first_tensor_dtype(v)
            if found is not None:
                return found
    return None


def _convert_for_c(value, hint_enum):
    """Called from C for values that are not Python scalars: hint_enum is the dtype of the operand that
    shares this one's type (a tensor, or the first operand), adopted where the value converts to it (a
    list of floats stays float and the op reports the mismatch, as TensorFlow's eager binary ops do)."""
    hint = None if hint_enum is None else dtypes.ALL[hint_enum]
    try:
        return convert_to_tensor(value, dtype_hint=hint)
    except ValueError as e:
        raise TypeError(str(e)) from None


def constant(value, dtype=None, shape=None, name="Const"):
    """Creates a constant tensor from a Python or NumPy value, like ``tf.constant``."""
    if isinstance(value, Tensor):
        tensor = value if dtype is None else _C.op("Cast")(value, dtypes.as_dtype(dtype))
    else:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        array, is_numpy = _to_numpy(value)
        if dtype is None:
            dtype = dtypes.as_dtype(array.dtype) if is_numpy else _infer_python_dtype(array)
        elif not is_numpy and array.dtype.kind == "f" and array.size and not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        elif not is_numpy and array.dtype.kind == "c" and not dtype.is_complex:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        if shape is not None:
            shape = list(TensorShape(shape).as_list())
            n = int(np.prod(shape)) if shape else 1
            if array.size == 1:
                array = np.broadcast_to(array.reshape(()), shape)
            elif array.size == n:
                array = array.reshape(shape)
            else:
                raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {value!r} "
                                f"(converted from {array.shape}) has {array.size} elements, but got `shape` "
                                f"{tuple(shape)} with {n} elements).")
        tensor = _from_array(array, dtype, from_python=not is_numpy)
    return tensor


_C._register(Tensor, list(dtypes.ALL), dict(errors._BY_CODE), _convert_for_c)


def is_tensor(x):
    """Whether ``x`` is an ember tensor or variable (TensorFlow's ``tf.is_tensor``: NumPy arrays and Python
    numbers are not)."""
    return isinstance(x, Tensor) or getattr(x, "_ember_variable", False)

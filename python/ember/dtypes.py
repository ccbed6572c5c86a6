"""TensorFlow-compatible dtype objects: ``ember.float32`` and friends."""

import builtins

import numpy as np

from ember import _C

try:  # bfloat16 as a NumPy dtype comes from ml_dtypes when installed (TensorFlow and JAX ship it).
    import ml_dtypes as _ml_dtypes

    _BFLOAT16_NP = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None
    _BFLOAT16_NP = None


class DType:
    """A tensor element type. Compare with ``==``; ``as_numpy_dtype`` gives NumPy's type."""

    __slots__ = ("_enum", "_name", "_np", "_size", "_row")

    def __init__(self, row):
        self._row = row  # a row of _C.dtype_table(): the C++ enum number and the type's properties
        self._enum = row["enum"]
        self._name = row["name"]
        if self._name in ("string", "resource"):  # bytes, handles: NumPy object arrays, as TensorFlow's
            self._np = np.dtype(object)
        else:
            self._np = _BFLOAT16_NP if self._name == "bfloat16" else np.dtype(self._name)
        self._size = 0 if self._name in ("string", "resource") else row["size"]  # TensorFlow's tf.string.size

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        if self._np is None:
            raise TypeError(f"{self._name} has no NumPy dtype: install ml_dtypes")
        if self._name in ("string", "resource"):
            return object  # TensorFlow's tf.string.as_numpy_dtype
        return self._np.type

    @property
    def as_datatype_enum(self):
        """TensorFlow's DataType number (DT_FLOAT = 1, ...), as in GraphDefs."""
        return self._row["tf_datatype"]

    @property
    def size(self):
        return self._size

    @property
    def is_floating(self):
        return self._row["is_floating"]

    @property
    def is_integer(self):
        return self._row["is_integer"]

    @property
    def is_unsigned(self):
        return self._row["is_unsigned"]

    @property
    def is_bool(self):
        return self._row["is_bool"]

    @property
    def is_numeric(self):
        return self._row["is_numeric"]

    @property
    def is_complex(self):
        return self._row["is_complex"]

    @property
    def is_quantized(self):
        return False

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        """float32 for complex64, float64 for complex128, the type itself otherwise (TensorFlow's)."""
        return ALL[self._row["real_dtype"]]

    @property
    def min(self):
        if self.is_bool or self.is_complex or self._name == "string":
            raise TypeError(f"Cannot find minimum value of {self}.")
        if self.is_floating:
            return float(_finfo(self).min)
        return int(np.iinfo(self._np).min)

    @property
    def max(self):
        if self.is_bool or self.is_complex or self._name == "string":
            raise TypeError(f"Cannot find maximum value of {self}.")
        if self.is_floating:
            return float(_finfo(self).max)
        return int(np.iinfo(self._np).max)

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if other is None:
            return False
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return f"tf.{self._name}"

    def __str__(self):
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return as_dtype, (self._name,)


def _finfo(dtype):
    return _ml_dtypes.finfo(dtype._np) if dtype._name == "bfloat16" else np.finfo(dtype._np)


# One DType per entry of the C++ enum (core/dtype.h), in its order, so ALL[enum] is the type of that number.
ALL = tuple(DType(row) for row in _C.dtype_table())
_BY_NAME = {d.name: d for d in ALL}
float16 = _BY_NAME["float16"]
bfloat16 = _BY_NAME["bfloat16"]
float32 = _BY_NAME["float32"]
float64 = _BY_NAME["float64"]
int8 = _BY_NAME["int8"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
bool = _BY_NAME["bool"]  # noqa: A001 - TensorFlow's name
complex64 = _BY_NAME["complex64"]
complex128 = _BY_NAME["complex128"]
string = _BY_NAME["string"]
half = float16
double = float64
_FROM_TF_DATATYPE = {d.as_datatype_enum: d for d in ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NP = {d._np: d for d in ALL if d._np is not None}
# tf.resource, the dtype of a variable's handle (Variable.handle). No tensor of ember's holds it: a handle
# names its variable (variables.ResourceHandle), so it has no C++ enum and sits outside ALL.
resource = DType({"enum": -1, "name": "resource", "tf_datatype": 20, "size": 0, "is_floating": False,
                  "is_integer": False, "is_unsigned": False, "is_bool": False, "is_numeric": False,
                  "is_complex": False})
_BY_NAME["resource"] = resource
_FROM_TF_DATATYPE[resource.as_datatype_enum] = resource


def as_dtype(value):
    """Converts a DType, name, NumPy dtype or Python type to an ember DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.")
    if value is float:
        return float32
    if value is int:
        return int32
    if value is builtins.bool:
        return bool
    if value is complex:
        return complex128
    if isinstance(value, int) and not isinstance(value, builtins.bool) and value in _FROM_TF_DATATYPE:
        return _FROM_TF_DATATYPE[value]  # a TensorFlow DataType number: tf.as_dtype(1) is float32
    enum = getattr(value, "_enum", None)
    if isinstance(enum, int) and 0 <= enum < len(ALL):
        return ALL[enum]
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.") from None
    if np_dtype in _BY_NP:
        return _BY_NP[np_dtype]
    if np_dtype.kind in "SU":  # np.bytes_, np.str_ and fixed-width arrays of them: TensorFlow's string
        return string
    raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType: ember has no {np_dtype} type.")

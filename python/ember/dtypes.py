"""TensorFlow-compatible dtype objects: ``ember.float32`` and friends."""

import builtins

import numpy as np

try:  # bfloat16 as a NumPy dtype comes from ml_dtypes when installed (TensorFlow and JAX ship it).
    import ml_dtypes as _ml_dtypes

    _BFLOAT16_NP = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None
    _BFLOAT16_NP = None


class DType:
    """A tensor element type. Compare with ``==``; ``as_numpy_dtype`` gives NumPy's type."""

    __slots__ = ("_enum", "_name", "_np", "_size")

    def __init__(self, enum, name, np_dtype, size):
        self._enum = enum
        self._name = name
        self._np = np_dtype
        self._size = size

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        if self._np is None:
            raise TypeError(f"{self._name} has no NumPy dtype: install ml_dtypes")
        return self._np.type

    @property
    def as_datatype_enum(self):
        """TensorFlow's DataType number (DT_FLOAT = 1, ...), as in GraphDefs."""
        return _TF_DATATYPE[self._enum]

    @property
    def size(self):
        return self._size

    @property
    def is_floating(self):
        return self._enum <= 3

    @property
    def is_integer(self):
        return 4 <= self._enum <= 8

    @property
    def is_unsigned(self):
        return self._enum in (8, 9)

    @property
    def is_bool(self):
        return self._enum == 9

    @property
    def is_numeric(self):
        return self._enum != 9

    @property
    def is_complex(self):
        return False

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        return self

    @property
    def min(self):
        if self.is_bool:
            return False
        if self.is_floating:
            return float(_finfo(self).min)
        return int(np.iinfo(self._np).min)

    @property
    def max(self):
        if self.is_bool:
            return True
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
    return _ml_dtypes.finfo(dtype._np) if dtype._enum == 1 else np.finfo(dtype._np)


float16 = DType(0, "float16", np.dtype(np.float16), 2)
half = float16
bfloat16 = DType(1, "bfloat16", _BFLOAT16_NP, 2)
float32 = DType(2, "float32", np.dtype(np.float32), 4)
float64 = DType(3, "float64", np.dtype(np.float64), 8)
double = float64
int8 = DType(4, "int8", np.dtype(np.int8), 1)
int16 = DType(5, "int16", np.dtype(np.int16), 2)
int32 = DType(6, "int32", np.dtype(np.int32), 4)
int64 = DType(7, "int64", np.dtype(np.int64), 8)
uint8 = DType(8, "uint8", np.dtype(np.uint8), 1)
bool = DType(9, "bool", np.dtype(np.bool_), 1)  # noqa: A001 - TensorFlow's name

ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool)
# TensorFlow's DataType enum values, indexed by ember's dtype enum.
_TF_DATATYPE = (19, 14, 1, 2, 6, 5, 3, 9, 4, 10)
_FROM_TF_DATATYPE = {tf_enum: ALL[i] for i, tf_enum in enumerate(_TF_DATATYPE)}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NP = {d._np: d for d in ALL if d._np is not None}


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
    raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType: ember has no {np_dtype} type.")

"""ember's dtypes against TensorFlow's, property by property; the table comes from C++ (_C.dtype_table)."""

import pickle

import numpy as np
import pytest

import ember
from ember import _C, dtypes

NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64",
         "complex128", "string"]
PROPERTIES = ["name", "size", "is_floating", "is_integer", "is_unsigned", "is_bool", "is_numeric",
              "is_complex", "is_quantized", "is_numpy_compatible", "as_datatype_enum", "as_numpy_dtype"]


@pytest.fixture(scope="module")
def tf():
    import tensorflow
    return tensorflow


@pytest.mark.parametrize("name", NAMES)
def test_properties_match_tensorflow(tf, name):
    ours, theirs = getattr(ember, name), getattr(tf, name)
    for prop in PROPERTIES:
        assert getattr(ours, prop) == getattr(theirs, prop), (name, prop)
    assert ours.base_dtype == ours and ours.real_dtype.name == theirs.real_dtype.name
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)


@pytest.mark.parametrize("name", NAMES)
def test_limits_match_tensorflow(tf, name):
    ours, theirs = getattr(ember, name), getattr(tf, name)
    if name in ("bool", "complex64", "complex128", "string"):  # TensorFlow has no min or max for them
        for prop in ("min", "max"):
            with pytest.raises(TypeError):
                getattr(theirs, prop)
            with pytest.raises(TypeError):
                getattr(ours, prop)
        return
    assert ours.min == float(theirs.min) if ours.is_floating else ours.min == theirs.min
    assert ours.max == float(theirs.max) if ours.is_floating else ours.max == theirs.max


def test_bool_is_not_unsigned():
    assert not ember.bool.is_unsigned and ember.uint8.is_unsigned


def test_table_is_the_cpp_enum_in_order():
    table = _C.dtype_table()
    assert [row["name"] for row in table] == NAMES
    assert [d.name for d in dtypes.ALL] == NAMES
    for row, d in zip(table, dtypes.ALL):
        assert d._enum == row["enum"]


def test_conversions(tf):
    for name in NAMES:
        d = getattr(ember, name)
        assert dtypes.as_dtype(name) is d
        assert dtypes.as_dtype(getattr(tf, name).as_datatype_enum) is d
        assert dtypes.as_dtype(d.as_numpy_dtype) is d if name != "bfloat16" or d._np is not None else True
        assert pickle.loads(pickle.dumps(d)) is d
    assert ember.half is ember.float16 and ember.double is ember.float64
    assert dtypes.as_dtype(np.float32) is ember.float32
    with pytest.raises(TypeError, match="Cannot convert"):
        dtypes.as_dtype("qint8")

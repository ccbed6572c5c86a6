"""An empty value converts to any dtype, as in TensorFlow: NumPy reads [] as float64, which must make
neither an integer nor a string constant a TypeError. Found by the program fuzzer (tests/fuzz) on empty
shapes; the string cases (tf.constant([], tf.string)) by issue 17. Each case is compared with TensorFlow."""
import numpy as np
import pytest
import tensorflow

import ember as tf

_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64", "bool",
           "complex64", "complex128", "string"]
_EMPTY_VALUES = {
    "[]": [], "[[]]": [[]], "[[], []]": [[], []], "()": (), "[[[]]]": [[[]]],
    "np float64 (0,)": np.zeros([0]), "np float32 (2, 0)": np.zeros([2, 0], np.float32),
    "np object (0,)": np.array([], dtype=object), "np object (0, 2)": np.zeros([0, 2], dtype=object),
    "np bytes (0,)": np.array([], dtype="S"), "np str (3, 0)": np.zeros([3, 0], dtype="U"),
}


def _result(module, make):
    """(dtype name, shape, values) of make(module), or the exception's type name."""
    try:
        t = make(module)
    except Exception as e:  # noqa: BLE001 - the kind of failure is what is compared
        return type(e).__name__
    return t.dtype.name, tuple(t.shape), np.asarray(t.numpy()).tolist()


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("value", list(_EMPTY_VALUES), ids=str)
def test_empty_values_convert_to_every_dtype_as_tensorflow(dtype, value):
    v = _EMPTY_VALUES[value]
    for make in (lambda m: m.constant(v, getattr(m, dtype)), lambda m: m.convert_to_tensor(v, getattr(m, dtype))):
        want = _result(tensorflow, make)
        assert want != "TypeError" or dtype != "string", "TensorFlow converts every empty value to a string"
        assert _result(tf, make) == want


@pytest.mark.parametrize("value", list(_EMPTY_VALUES), ids=str)
def test_empty_values_without_a_dtype_as_tensorflow(value):
    v = _EMPTY_VALUES[value]
    assert _result(tf, lambda m: m.constant(v)) == _result(tensorflow, lambda m: m.constant(v))


@pytest.mark.parametrize("make", [
    lambda m: m.constant([], m.string, shape=[0, 3]),
    lambda m: m.constant([[]], m.string, shape=[1, 0]),
    lambda m: m.constant("a", shape=[2, 0]),
    lambda m: m.zeros([0], m.string),
    lambda m: m.zeros([2, 0], m.string),
    lambda m: m.zeros([2], m.string),
    lambda m: m.fill([0], "a"),
    lambda m: m.fill([2, 1], b"a"),
    lambda m: m.zeros_like(m.constant([[], []], m.string)),
    lambda m: m.constant([], m.string) == m.constant([], m.string),
    lambda m: m.concat([m.constant([], m.string), m.constant(["x"])], 0),
    lambda m: m.Variable(m.constant([], m.string)).read_value(),
    lambda m: m.function(lambda: m.constant([[]], m.string))(),
], ids=lambda make: "")
def test_empty_string_tensors_as_tensorflow(make):
    assert _result(tf, make) == _result(tensorflow, make)


def test_ones_of_strings_is_tensorflows_type_error():
    for make in (lambda m: m.ones([2], m.string), lambda m: m.ones([0], m.string)):
        with pytest.raises(TypeError, match="Cannot convert 1 to EagerTensor of dtype string"):
            make(tf)
        with pytest.raises(TypeError, match="Cannot convert 1 to EagerTensor of dtype string"):
            make(tensorflow)


def test_float_values_still_refuse_an_integer_dtype():
    with pytest.raises(TypeError, match="int32"):
        tf.constant([1.5], tf.int32)
    with pytest.raises(TypeError, match="string"):
        tf.constant([1.5], tf.string)
    np.testing.assert_array_equal(tf.constant([], tf.int32).numpy(), np.zeros([0], np.int32))

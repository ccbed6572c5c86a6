"""ember.Tensor: construction, dtype inference, NumPy interop, Python protocols and repr."""
import numpy as np
import pytest

import ember as tf
from ember import errors


def test_dtype_inference_follows_tensorflow():
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant([1, 2.5]).dtype == tf.float32
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant(np.array([1.0])).dtype == tf.float64  # NumPy keeps its dtype
    assert tf.constant(np.array([1], np.int64)).dtype == tf.int64
    assert tf.constant(np.float32(2)).dtype == tf.float32


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16,
                                   tf.int32, tf.int64, tf.uint8, tf.bool])
def test_roundtrip_every_dtype(dtype):
    values = np.array([[0, 1, 2], [3, 4, 5]]) % (2 if dtype == tf.bool else 100)
    t = tf.constant(values, dtype=dtype)
    assert t.dtype == dtype
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy().astype(np.float64), values.astype(dtype.as_numpy_dtype).astype(np.float64))


def test_rank_zero_to_eight():
    for rank in range(9):
        t = tf.constant(np.ones([2] * rank, np.float32))
        assert t.ndim == rank and t.shape.as_list() == [2] * rank
    with pytest.raises(errors.InvalidArgumentError, match="rank 9 exceeds"):
        tf.constant(np.ones([1] * 9, np.float32))


def test_numpy_is_a_copy_and_asarray_is_a_view():
    t = tf.constant([1.0, 2.0])
    copy = t.numpy()
    copy[0] = 10
    assert t.numpy()[0] == 1.0
    view = np.asarray(t)
    assert not view.flags.writeable
    assert view.ctypes.data == np.asarray(t).ctypes.data  # no copy: both views share the buffer
    assert isinstance(tf.constant(2.5).numpy(), np.float32)


def test_alignment_is_64_bytes():
    for n in (1, 3, 17, 1000, 100000):
        assert np.asarray(tf.constant(np.zeros(n, np.float32))).ctypes.data % 64 == 0


def test_repr_and_str_match_tensorflow_format():
    assert repr(tf.constant([1.0, 2.0])) == \
        "<ember.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert repr(tf.constant(3)) == "<ember.Tensor: shape=(), dtype=int32, numpy=3>"
    assert repr(tf.constant(True)) == "<ember.Tensor: shape=(), dtype=bool, numpy=True>"
    assert str(tf.constant([1, 2])) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"
    assert repr(tf.constant([[1, 2], [3, 4]])).startswith("<ember.Tensor: shape=(2, 2), dtype=int32, numpy=\narray(")


def test_python_protocols():
    t = tf.constant([[1, 2], [3, 4]])
    assert len(t) == 2
    assert [r.numpy().tolist() for r in t] == [[1, 2], [3, 4]]
    assert int(tf.constant(7)) == 7 and float(tf.constant(2.5)) == 2.5
    assert bool(tf.constant(1)) and not bool(tf.constant(0.0))
    assert [10, 20, 30][tf.constant(1)] == 20  # __index__
    with pytest.raises(ValueError, match="one element"):
        bool(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    assert {t.ref(): 1}[t.ref()] == 1
    with pytest.raises(TypeError):
        len(tf.constant(1.0))


def test_operators():
    x = tf.constant([1.0, 2.0, 4.0])
    np.testing.assert_allclose((x + 1).numpy(), [2, 3, 5])
    np.testing.assert_allclose((1 - x).numpy(), [0, -1, -3])
    np.testing.assert_allclose((2 * x).numpy(), [2, 4, 8])
    np.testing.assert_allclose((x / 2).numpy(), [0.5, 1, 2])
    np.testing.assert_allclose((1 / x).numpy(), [1, 0.5, 0.25])
    np.testing.assert_allclose((x // 3).numpy(), [0, 0, 1])
    np.testing.assert_allclose((x % 3).numpy(), [1, 2, 1])
    np.testing.assert_allclose((x ** 2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((2 ** x).numpy(), [2, 4, 16])
    np.testing.assert_allclose((-x).numpy(), [-1, -2, -4])
    np.testing.assert_allclose(abs(-x).numpy(), [1, 2, 4])
    assert (x < 2).numpy().tolist() == [True, False, False]
    assert (x >= 2).numpy().tolist() == [False, True, True]
    assert (x == 2).numpy().tolist() == [False, True, False]
    assert (x != 2).numpy().tolist() == [True, False, True]
    b = tf.constant([True, False])
    assert (b & tf.constant([True, True])).numpy().tolist() == [True, False]
    assert (b | False).numpy().tolist() == [True, False]
    assert (~b).numpy().tolist() == [False, True]


def test_integer_true_division_goes_to_float_like_tensorflow():
    assert (tf.constant([1, 2]) / 2).dtype == tf.float64
    assert (tf.constant([1, 2], tf.int16) / tf.constant([2, 2], tf.int16)).dtype == tf.float32
    assert (tf.constant([1, 2]) // 2).dtype == tf.int32


def test_scalars_adopt_the_tensor_dtype_and_numpy_arrays_too():
    assert (tf.constant([1.0], tf.float64) + 1).dtype == tf.float64
    assert (tf.constant([1], tf.int64) * 3).dtype == tf.int64
    assert (tf.constant([1.0]) + np.array([1.0])).dtype == tf.float32
    assert (np.array([1.0, 2.0]) + tf.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]


def test_no_implicit_promotion():
    with pytest.raises(errors.InvalidArgumentError, match="does not promote"):
        tf.constant([1.0]) + tf.constant([1])
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.constant([1, 2]) + 1.5  # TensorFlow converts 1.5 to the tensor's dtype, and refuses


def test_equality_with_incompatible_shapes_is_false():
    assert (tf.constant([1, 2]) == tf.constant([1, 2, 3])) is False
    assert (tf.constant([1, 2]) != tf.constant([1, 2, 3])) is True
    assert (tf.constant([1]) == None) is False  # noqa: E711


def test_bad_conversions():
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant([[1], [2, 3]])
    with pytest.raises(ValueError, match="None"):
        tf.constant(None)
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.constant(1.5, dtype=tf.int32)
    with pytest.raises(ValueError):
        tf.constant([1, "a"])
    # TensorFlow 2.21 converts "abc" to a string tensor and AddV2 rejects it (InvalidArgumentError).
    with pytest.raises((TypeError, errors.InvalidArgumentError)):
        tf.constant([1.0]) + "abc"


def test_constant_with_shape():
    assert tf.constant(0.0, shape=[2, 3]).numpy().tolist() == [[0.0] * 3] * 2
    assert tf.constant([1, 2, 3, 4], shape=(2, 2)).numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="elements"):
        tf.constant([1, 2, 3], shape=[2, 2])


def test_convert_to_tensor():
    t = tf.constant([1.0])
    assert tf.convert_to_tensor(t) is t
    assert tf.convert_to_tensor([1, 2], dtype=tf.float32).dtype == tf.float32
    assert tf.convert_to_tensor([1, 2], dtype_hint=tf.float64).dtype == tf.float64
    assert tf.convert_to_tensor([1.5], dtype_hint=tf.int32).dtype == tf.float32
    with pytest.raises(ValueError, match="requested dtype"):
        tf.convert_to_tensor(t, dtype=tf.int32)


def test_dtypes_api():
    assert tf.float32.name == "float32" and tf.as_dtype("float64") == tf.float64
    assert tf.as_dtype(np.int64) == tf.int64 and tf.as_dtype(float) == tf.float32
    assert tf.float32.is_floating and tf.int8.is_integer and tf.uint8.is_unsigned
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.int8.max == 127 and tf.uint8.min == 0
    assert repr(tf.float32) == "tf.float32"


def test_device():
    assert tf.constant(1.0).device.endswith("device:CPU:0")


def test_datatype_enums_are_tensorflows():
    assert tf.float32.as_datatype_enum == 1 and tf.int64.as_datatype_enum == 9
    assert tf.as_dtype(1) == tf.float32 and tf.as_dtype(10) == tf.bool


def test_a_list_holding_graph_tensors_autopacks_as_in_tensorflow():
    import tensorflow as real_tf

    def build(m):
        def f(x):
            n = m.shape(x)[0]
            return m.convert_to_tensor([[n, 1], [2, n * 2]], dtype_hint=m.float32) + 0
        return f

    ours = tf.function(build(tf), input_signature=[tf.TensorSpec([None], tf.float32)])
    theirs = real_tf.function(build(real_tf), input_signature=[real_tf.TensorSpec([None], real_tf.float32)])
    assert ours.get_concrete_function().structured_outputs.shape.as_list() == [2, 2]
    out = ours(tf.ones([3]))
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), theirs(real_tf.ones([3])).numpy())
    with pytest.raises(TypeError, match="int64 to int32"):  # mixed dtypes, as in TensorFlow
        tf.function(lambda x: tf.convert_to_tensor([tf.shape(x)[0], tf.cast(tf.shape(x)[0], tf.int64)]),
                    input_signature=[tf.TensorSpec([None], tf.float32)]).get_concrete_function()


@pytest.mark.parametrize("value", [[], (), [[], []], [[]]])
@pytest.mark.parametrize("hint", ["int32", "int64", "bool", "string", "float64", "int8"])
def test_an_empty_list_takes_the_dtype_hint_as_tensorflow(value, hint):
    import tensorflow as real_tf

    ours = tf.convert_to_tensor(value, dtype_hint=getattr(tf, hint))
    theirs = real_tf.convert_to_tensor(value, dtype_hint=getattr(real_tf, hint))
    assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape


def test_int64_arrays_are_numpys_own_int64_as_tensorflows():
    import tensorflow as real_tf

    ours = tf.constant([1, 2], tf.int64).numpy()
    theirs = real_tf.constant([1, 2], real_tf.int64).numpy()
    assert ours.dtype.char == theirs.dtype.char and repr(ours) == repr(theirs)
    assert isinstance(ours[0], np.int64) and repr(tf.constant(5, tf.int64).numpy()) == "np.int64(5)"
    assert repr(next(iter(tf.data.Dataset.range(3).batch(3).as_numpy_iterator()))) == "array([0, 1, 2])"

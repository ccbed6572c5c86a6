"""An empty Python list converts to any dtype, as in TensorFlow (NumPy reads [] as float64, which must not
make an integer constant a TypeError). Found by the program fuzzer (tests/fuzz) on empty shapes."""
import numpy as np
import pytest

import ember as tf


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.float32, tf.bool])
@pytest.mark.parametrize("value,shape", [([], (0,)), ([[]], (1, 0))])
def test_empty_list_converts_to_every_dtype(dtype, value, shape):
    for t in (tf.constant(value, dtype), tf.convert_to_tensor(value, dtype)):
        assert t.dtype == dtype
        assert tuple(t.shape) == shape
        assert t.numpy().size == 0


def test_float_values_still_refuse_an_integer_dtype():
    with pytest.raises(TypeError, match="int32"):
        tf.constant([1.5], tf.int32)
    np.testing.assert_array_equal(tf.constant([], tf.int32).numpy(), np.zeros([0], np.int32))

"""Cases the op fuzzer (tests/fuzz/test_op_fuzz.py) found crashing, each compared with TensorFlow where
TensorFlow defines the answer."""
import numpy as np
import pytest
import tensorflow

import ember as tf
from ember import _C


def test_concat_of_an_empty_list_with_an_unknown_first_dimension_is_empty():
    # seed 20261125 case 19973: TensorListConcat read leading_dims, which v1 does not have, for an empty list
    empty = np.zeros([0, 2, 2, 3, 0], np.float32)
    tensor, lengths = _C.op("TensorListConcat")(tf.constant(empty), tf.float32, [-1])
    assert tensor.shape == (0,) and lengths.shape == (0,)
    handle = tensorflow.raw_ops.TensorListFromTensor(tensor=empty, element_shape=[-1, 2, 3, 0])
    want, want_lengths = tensorflow.raw_ops.TensorListConcat(input_handle=handle, element_dtype=tensorflow.float32,
                                                            element_shape=[-1])
    assert want.shape[0] == 0 and want_lengths.shape == (0,)


@pytest.mark.parametrize("staged", [False, True])
def test_histogram_of_integers_over_a_range_wider_than_int32(staged):
    # seed 20261125 case 36448: v - lo overflowed int32 and indexed a negative bin
    values = np.array([-2**31, -5, 0, 7, 2**31 - 1], np.int32)
    value_range = np.array([-2**31, 2**31 - 1], np.int32)

    def run(fw):
        f = lambda v, r: fw.histogram_fixed_width(v, r, nbins=4)  # noqa: E731
        return (fw.function(f) if staged else f)(values, value_range).numpy()

    got = run(tf)
    step = (float(value_range[1]) - float(value_range[0])) / 4
    bins = np.minimum((values.astype(np.float64) - float(value_range[0])) // step, 3).astype(int)
    np.testing.assert_array_equal(got, np.bincount(bins, minlength=4))  # the bins float64 arithmetic gives


def test_a_text_file_column_past_int64_is_a_clear_error(tmp_path):
    # seed 20261125 case 49762: value_index near 2^63 overflowed the column count and read past the fields
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n")
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["x"], [0], key_dtype=tf.string, value_dtype=tf.int64), -1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="InitializeTableFromTextFileV2"):
        _C.op("InitializeTableFromTextFileV2")(tf.constant(str(path)), table._id, -2, 2**63 - 1, -1, "\t",
                                               0)

"""tf.strings.ngrams (python/ember/strings.py) compared with TensorFlow over a table of inputs and arguments:
dense tensors of rank 1 to 3 (a dense result of the same rank), RaggedTensors of ragged rank 1 and 2 (a
RaggedTensor), padding, several widths, short sequences, eagerly and inside ember.function, and the errors."""

import numpy as np
import pytest
import tensorflow

import ember


def _dense(values):
    return lambda tf: tf.constant(values, dtype=tf.string)


def _ragged(values, row_splits_dtype="int64"):
    return lambda tf: tf.ragged.constant(values, dtype=tf.string, row_splits_dtype=getattr(tf, row_splits_dtype))


def _plain(result):
    """What a program sees of a result: ragged rows as lists, a dense tensor's dtype, shape and values."""
    if type(result).__name__ == "RaggedTensor":
        return ("ragged", result.ragged_rank, result.row_splits.dtype.name, result.to_list())
    return ("dense", result.dtype.name, list(result.shape), np.asarray(result.numpy()).tolist())


WORDS = ["the", "quick", "brown", "fox", "jumps"]

CASES = {
    "vector_bigrams": (_dense(WORDS), dict(ngram_width=2)),
    "vector_unigrams": (_dense(WORDS), dict(ngram_width=1)),
    "vector_width_longer_than_data": (_dense(["a", "b"]), dict(ngram_width=3)),
    "vector_widths_in_order": (_dense(WORDS), dict(ngram_width=[3, 1, 2])),
    "vector_no_widths": (_dense(WORDS), dict(ngram_width=[])),
    "vector_separator": (_dense(WORDS), dict(ngram_width=2, separator="_")),
    "vector_bytes_separator_and_pads": (_dense(WORDS), dict(ngram_width=[2, 3], separator=b"-",
                                                            pad_values=(b"<", b">"), padding_width=1)),
    "vector_one_pad_default_width": (_dense(WORDS), dict(ngram_width=3, pad_values="P")),
    "vector_pad_pair": (_dense(["a", "b"]), dict(ngram_width=3, pad_values=("L", "R"))),
    "vector_padding_wider_than_width": (_dense(["a", "b", "c"]), dict(ngram_width=2, pad_values="p",
                                                                      padding_width=5)),
    "vector_unigrams_never_padded": (_dense(["a", "b"]), dict(ngram_width=1, pad_values="p", padding_width=2)),
    "vector_preserve_short": (_dense(["a", "b"]), dict(ngram_width=3, preserve_short_sequences=True)),
    "vector_preserve_short_padded": (_dense(["a"]), dict(ngram_width=4, pad_values="p", padding_width=1,
                                                         preserve_short_sequences=True)),
    "vector_empty": (lambda tf: tf.constant([], dtype=tf.string), dict(ngram_width=2)),
    "vector_empty_preserve_short": (lambda tf: tf.constant([], dtype=tf.string),
                                    dict(ngram_width=2, preserve_short_sequences=True)),
    "vector_numpy_and_float_widths": (_dense(WORDS), dict(ngram_width=[np.int64(2), 3.0])),
    "vector_unicode": (_dense(["é", "ü", "日本"]), dict(ngram_width=2, separator="·")),
    "matrix": (_dense([WORDS[:3], WORDS[2:]]), dict(ngram_width=2)),
    "matrix_padded": (_dense([["a", "b"], ["c", "d"]]), dict(ngram_width=[1, 2], pad_values="#")),
    "matrix_preserve_short": (_dense([["a", "b"], ["c", "d"]]), dict(ngram_width=5, preserve_short_sequences=True)),
    "matrix_no_columns": (lambda tf: tf.zeros([2, 0], tf.string), dict(ngram_width=2)),
    "matrix_no_rows": (lambda tf: tf.zeros([0, 3], tf.string), dict(ngram_width=2)),
    "rank3": (_dense([[["a", "b", "c"], ["d", "e", "f"]], [["g", "h", "i"], ["j", "k", "l"]]]),
              dict(ngram_width=[2, 3], separator="+")),
    "python_list": (lambda tf: ["x", "y", "z"], dict(ngram_width=2)),
    "ragged": (_ragged([WORDS, ["a"], [], ["b", "c"]]), dict(ngram_width=2)),
    "ragged_padded_widths": (_ragged([["a", "b", "c"], ["d"]]), dict(ngram_width=[1, 2], pad_values="P",
                                                                     padding_width=1)),
    "ragged_preserve_short": (_ragged([["a"], [], ["b", "c", "d"]]), dict(ngram_width=3, pad_values="p",
                                                                          padding_width=1,
                                                                          preserve_short_sequences=True)),
    "ragged_int32_splits": (_ragged([["a", "b"], []], "int32"), dict(ngram_width=2)),
    "ragged_rank2": (_ragged([[["a", "b", "c"], ["d"]], [], [["e", "f"]]]), dict(ngram_width=2)),
    "ragged_rank2_padded": (_ragged([[["a", "b"], []], [["c"]]]), dict(ngram_width=2, pad_values=("<", ">"))),
    "ragged_from_dense_rows": (lambda tf: tf.RaggedTensor.from_tensor(tf.constant([["a", "b"], ["c", "d"]])),
                               dict(ngram_width=2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ngrams_match_tensorflow(name):
    data, kwargs = CASES[name]
    expected = _plain(tensorflow.strings.ngrams(data(tensorflow), **kwargs))
    assert _plain(ember.strings.ngrams(data(ember), **kwargs)) == expected


TRACEABLE = ["vector_bigrams", "vector_bytes_separator_and_pads", "matrix_padded", "rank3", "ragged_padded_widths",
             "ragged_preserve_short", "ragged_rank2"]


@pytest.mark.parametrize("name", TRACEABLE)
def test_ngrams_inside_function_match_tensorflow(name):
    data, kwargs = CASES[name]
    expected = _plain(tensorflow.function(lambda x: tensorflow.strings.ngrams(x, **kwargs))(data(tensorflow)))
    assert _plain(ember.function(lambda x: ember.strings.ngrams(x, **kwargs))(data(ember))) == expected


@pytest.mark.parametrize("spec", [[None], [None, None], [None, 3], [1, None, None]])
def test_ngrams_traced_with_unknown_dimensions(spec):
    data = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    data = data[0] if len(spec) == 1 else data[None] if len(spec) == 3 else data
    results = []
    for tf in (tensorflow, ember):
        fn = tf.function(lambda x, tf=tf: tf.strings.ngrams(x, [1, 2], pad_values="_"),
                         input_signature=[tf.TensorSpec(spec, tf.string)])
        results.append(_plain(fn(tf.constant(data))))
    assert results[1] == results[0]


def test_ngrams_of_a_string_tensor_of_unknown_rank_is_tensorflows_value_error():
    for tf in (tensorflow, ember):
        fn = tf.function(lambda x, tf=tf: tf.strings.ngrams(x, 2), input_signature=[tf.TensorSpec(None, tf.string)])
        with pytest.raises(ValueError, match="Rank of data must be known"):
            fn.get_concrete_function()


ERRORS = {
    "zero_width": (_dense(WORDS), dict(ngram_width=0), ValueError, "ngram_widths must be greater than 0"),
    "negative_width_in_list": (_dense(WORDS), dict(ngram_width=[2, -1]), ValueError, "greater than 0"),
    "zero_padding_width": (_dense(WORDS), dict(ngram_width=2, pad_values="p", padding_width=0), ValueError,
                           "padding_width must be greater than 0"),
    "padding_width_without_pads": (_dense(WORDS), dict(ngram_width=2, padding_width=1), ValueError,
                                   "pad_values must be provided"),
    "pad_values_not_strings": (_dense(WORDS), dict(ngram_width=2, pad_values=3), TypeError, "pad_values must be"),
    "pad_pair_of_ints": (_dense(WORDS), dict(ngram_width=2, pad_values=(1, 2)), TypeError, "pad_values must be"),
    "separator_tensor": (_dense(WORDS), dict(ngram_width=2, separator="x"), TypeError, "separator"),
    "scalar_data": (lambda tf: tf.constant("a b"), dict(ngram_width=2), ValueError, "rank>0"),
    "int_tensor": (lambda tf: tf.constant([1, 2]), dict(ngram_width=2), ValueError, "dtype string"),
    "int_list": (lambda tf: [1, 2], dict(ngram_width=2), TypeError, "dtype string"),
    "string_width": (_dense(WORDS), dict(ngram_width="2"), TypeError, None),  # messages differ
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_ngrams_errors_match_tensorflow(name):
    data, kwargs, error, message = ERRORS[name]
    for tf in (tensorflow, ember):
        if name == "separator_tensor":
            kwargs = dict(kwargs, separator=tf.constant("x"))
        with pytest.raises(error, match=message):
            tf.strings.ngrams(data(tf), **kwargs)


def test_a_pad_tuple_of_one_is_a_type_error():
    # TensorFlow's own code indexes pad_values[1] and raises a bare IndexError; ember says what it wanted.
    with pytest.raises(IndexError):
        tensorflow.strings.ngrams(["a", "b"], 2, pad_values=("a",))
    with pytest.raises(TypeError, match=r"pad_values must be a string, tuple of strings, or None. Got \('a',\)"):
        ember.strings.ngrams(["a", "b"], 2, pad_values=("a",))


def test_ngrams_of_a_ragged_tensor_of_ints_is_a_value_error():
    with pytest.raises(ValueError, match="must hold strings"):
        ember.strings.ngrams(ember.ragged.constant([[1, 2]]), 2)
    with pytest.raises(ValueError):
        tensorflow.strings.ngrams(tensorflow.ragged.constant([[1, 2]]), 2)

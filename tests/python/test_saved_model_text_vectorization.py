"""TextVectorization in SavedModels across frameworks, against TensorFlow 2.21 and tf_keras: a model adapted
and saved by tf_keras (`model.save`) or by `tf.saved_model.save` runs in ember (`saved_model.load`'s
signature and `keras.models.load_model`) with tf_keras' outputs, and ember's saved model runs in TensorFlow
and tf_keras. The graphs hold StaticRegexReplace, StringSplitV2, StringNGrams, RaggedTensorToTensor (with
FIRST_DIM_SIZE/VALUE_ROWIDS partitions or row splits), RaggedBincount and DenseBincount."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import ember as em

DOCUMENTS = ["The quick brown fox!", "jumped over the lazy dog.", "the Dog, the fox", "a b c d e f g",
             "Fox & dog: quick, quick!"]
BATCH = [["the fox jumped"], ["zzz Dog!"], [""], ["quick quick a b"]]

# (id, TextVectorization arguments): every output mode, standardize and split variant, ngrams.
CONFIGS = [
    ("int", dict(output_mode="int", output_sequence_length=6)),
    ("int_ngrams_lower", dict(output_mode="int", output_sequence_length=7, ngrams=2, standardize="lower")),
    ("int_characters", dict(output_mode="int", output_sequence_length=9, split="character",
                            standardize="strip_punctuation")),
    ("multi_hot", dict(output_mode="multi_hot")),
    ("count_ngrams", dict(output_mode="count", ngrams=(1, 3))),
    ("tf_idf", dict(output_mode="tf_idf")),
    ("tf_idf_padded", dict(output_mode="tf_idf", pad_to_max_tokens=True, ngrams=2)),
]


def _model(keras, arguments):
    layer = keras.layers.TextVectorization(max_tokens=30, **arguments)
    layer.adapt(DOCUMENTS)
    inputs = keras.Input(shape=(1,), dtype="string")
    return keras.Model(inputs, layer(inputs))


def _serve(loaded, lib, batch):
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    (out,) = signature(**{name: lib.constant(batch)}).values()
    return out.numpy()


@pytest.fixture(scope="module")
def tf_keras_saved(tmp_path_factory):
    """Each config's tf_keras model saved by model.save, with its outputs on BATCH."""
    saved = {}
    for name, arguments in CONFIGS:
        model = _model(tf_keras, arguments)
        path = str(tmp_path_factory.mktemp("tf_keras") / name)
        model.save(path)
        saved[name] = (path, model.predict(tf.constant(BATCH), verbose=0))
    return saved


@pytest.mark.parametrize("name", [name for name, _ in CONFIGS])
def test_tf_keras_model_loads_in_ember(tf_keras_saved, name):
    path, expected = tf_keras_saved[name]
    np.testing.assert_allclose(_serve(em.saved_model.load(path), em, BATCH), expected, rtol=1e-6)
    model = em.keras.models.load_model(path)
    assert isinstance(model, em.keras.Model)  # rebuilt from its config, not the restored object
    np.testing.assert_allclose(model(em.constant(BATCH)).numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name,arguments", CONFIGS, ids=[name for name, _ in CONFIGS])
def test_embers_model_loads_in_tensorflow_and_tf_keras(tmp_path, tf_keras_saved, name, arguments):
    _, expected = tf_keras_saved[name]
    model = _model(em.keras, arguments)
    np.testing.assert_allclose(model(em.constant(BATCH)).numpy(), expected, rtol=1e-6)
    path = str(tmp_path / name)
    model.save(path)
    np.testing.assert_allclose(_serve(tf.saved_model.load(path), tf, BATCH), expected, rtol=1e-6)
    np.testing.assert_allclose(tf_keras.models.load_model(path)(tf.constant(BATCH)).numpy(), expected, rtol=1e-6)
    # And back in ember: the tf_idf weights and the adapted vocabulary come from the SavedModel.
    np.testing.assert_allclose(em.keras.models.load_model(path)(em.constant(BATCH)).numpy(), expected, rtol=1e-6)


def _vectorizer_module(arguments):
    layer = tf_keras.layers.TextVectorization(max_tokens=30, **arguments)
    layer.adapt(DOCUMENTS)

    class Vectorizer(tf.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def vectorize(self, text):
            return self.layer(text)

    return Vectorizer()


@pytest.mark.parametrize("name", ["int", "tf_idf"])
def test_tf_saved_model_save_of_a_vectorizer_loads_in_ember(tmp_path, name):
    module = _vectorizer_module(dict(CONFIGS)[name])
    text = [row[0] for row in BATCH]
    expected = module.vectorize(tf.constant(text)).numpy()
    path = str(tmp_path / name)
    tf.saved_model.save(module, path)
    loaded = em.saved_model.load(path)
    np.testing.assert_allclose(loaded.vectorize(em.constant(text)).numpy(), expected, rtol=1e-6)


def test_tf_keras_int_graph_holds_value_rowids_partitions(tf_keras_saved):
    """The "int" model without ngrams is the one whose RaggedTensorToTensor takes FIRST_DIM_SIZE and
    VALUE_ROWIDS (what test_tf_keras_model_loads_in_ember[int] runs in ember)."""
    path, _ = tf_keras_saved["int"]
    graph = tf.saved_model.load(path).signatures["serving_default"].graph.as_graph_def()
    kinds = [list(node.attr["row_partition_types"].list.s) for function in graph.library.function
             for node in function.node_def if node.op == "RaggedTensorToTensor"]
    assert [b"FIRST_DIM_SIZE", b"VALUE_ROWIDS"] in kinds


# ---- RaggedTensorToTensor's partition layouts against TensorFlow's raw op

def _to_tensor(lib, raw, kinds, partitions, shape=(-1,), values=(1.0, 2.0, 3.0, 4.0)):
    arguments = (lib.constant(list(shape) if len(shape) > 1 else shape[0], lib.int64), lib.constant(list(values)),
                 lib.constant(0.0), [lib.constant(p, lib.int64) for p in partitions])
    if raw:
        return tf.raw_ops.RaggedTensorToTensor(shape=arguments[0], values=arguments[1], default_value=arguments[2],
                                               row_partition_tensors=arguments[3], row_partition_types=kinds)
    return em._C.op("RaggedTensorToTensor")(*arguments, ",".join(kinds))


@pytest.mark.parametrize("kinds,partitions,shape", [
    (["ROW_SPLITS"], [[0, 1, 4]], (-1,)),
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS"], [3, [0, 2, 2, 2]], (-1,)),
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS"], [5, [0, 2, 2, 2]], (-1,)),  # trailing empty rows
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS"], [3, [0, 2, 2, 2]], (2, 2)),  # cut
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS", "ROW_SPLITS"], [2, [0, 1, 1], [0, 1, 2, 4]], (-1, -1, -1)),
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS", "VALUE_ROWIDS"], [2, [0, 1, 1], [0, 2, 2, 2]], (-1, -1, -1)),
    (["FIRST_DIM_SIZE", "ROW_SPLITS"], [2, [0, 1, 4]], (-1,)),
])
def test_row_partitions_match_tensorflow(kinds, partitions, shape):
    if len(shape) == 1 and len(kinds) - (kinds[0] == "FIRST_DIM_SIZE") > 1:
        shape = (-1,) * (len(kinds) + 1)
    expected = _to_tensor(tf, True, kinds, partitions, shape).numpy()
    np.testing.assert_array_equal(_to_tensor(em, False, kinds, partitions, shape).numpy(), expected)


@pytest.mark.parametrize("kinds,partitions,message", [
    (["ROW_LENGTHS"], [[1, 3]], "ROW_LENGTHS"),
    (["VALUE_ROWIDS"], [[0, 2, 2, 2]], "FIRST_DIM_SIZE before it"),
    (["BOGUS"], [[0, 1, 4]], "unknown row partition type 'BOGUS'"),
    (["FIRST_DIM_SIZE", "VALUE_ROWIDS"], [2, [0, 2, 2, 2]], r"in \[0, 2\), got 2"),
])
def test_bad_row_partitions_are_invalid_argument_as_in_tensorflow(kinds, partitions, message):
    with pytest.raises(tf.errors.InvalidArgumentError):
        _to_tensor(tf, True, kinds, partitions)
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        _to_tensor(em, False, kinds, partitions)


def test_unsorted_value_rowids_are_refused():
    """TensorFlow's kernel does not check that value_rowids are sorted (its result then depends on its loop);
    ember's says so."""
    with pytest.raises(em.errors.InvalidArgumentError, match="must be sorted"):
        _to_tensor(em, False, ["FIRST_DIM_SIZE", "VALUE_ROWIDS"], [3, [1, 0, 2, 2]])


def test_ragged_bincount_matches_tensorflow():
    splits, values, weights = [0, 2, 2, 5], [1, 1, 0, 3, 7], [0.5, 1.0, 2.0, 4.0, 8.0]
    for binary in (False, True):
        for w in ([], weights):
            expected = tf.raw_ops.RaggedBincount(splits=tf.constant(splits, tf.int64), values=tf.constant(values),
                                                 size=tf.constant(4), weights=tf.constant(w, tf.float32),
                                                 binary_output=binary)
            ours = em._C.op("RaggedBincount")(em.constant(splits, em.int64), em.constant(values), em.constant(4),
                                              em.constant(w, em.float32), binary)
            np.testing.assert_array_equal(ours.numpy(), expected.numpy())
    with pytest.raises(em.errors.InvalidArgumentError, match="Splits must end with the number of values"):
        em._C.op("RaggedBincount")(em.constant([0, 2], em.int64), em.constant(values), em.constant(4),
                                   em.constant([], em.float32), False)

"""keras.utils (python/ember/keras/utils/): pad_sequences, normalize, to_ordinal, timeseries and text
datasets, split_dataset, the (x, y, sample_weight) packers, Sequence in fit, and the custom-object registry
(custom_object_scope, register_keras_serializable) used by deserialization, compared with tf_keras."""
import json

import numpy as np
import pytest
import tensorflow
import tf_keras

import ember

DATA = np.arange(50, dtype=np.float32).reshape(25, 2)
TARGETS = np.arange(25) * 10


def _listed(value):
    return json.loads(json.dumps(value, default=lambda v: v.decode() if isinstance(v, bytes) else
                                 np.asarray(v).tolist()))


def _elements(ds):
    return [_listed(tensorflow.nest.map_structure(lambda t: t.numpy(), e)) for e in ds]


CASES = {
    "pad post": lambda tf, k: k.utils.pad_sequences([[1, 2, 3], [4], [5, 6], []], maxlen=2, padding="post",
                                                    truncating="post", value=-1),
    "pad default": lambda tf, k: k.utils.pad_sequences([[1, 2, 3], [4], [5, 6]]),
    "pad features": lambda tf, k: k.utils.pad_sequences([[[1, 2]], [[3, 4], [5, 6]]], dtype="float32"),
    "pad strings": lambda tf, k: k.utils.pad_sequences([["a", "b"], ["c"]], dtype=object, value="_"),
    "pad bad padding": lambda tf, k: k.utils.pad_sequences([[1]], padding="middle"),
    "normalize": lambda tf, k: np.round(k.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]])), 6),
    "normalize l1 axis 0": lambda tf, k: np.round(k.utils.normalize(np.array([[3.0, 4.0], [1.0, 2.0]]), 0, 1), 6),
    "to_ordinal": lambda tf, k: k.utils.to_ordinal([0, 2, 1]),
    "timeseries": lambda tf, k: _elements(k.utils.timeseries_dataset_from_array(
        DATA, TARGETS, sequence_length=4, sequence_stride=3, sampling_rate=2, batch_size=3, start_index=2,
        end_index=20)),
    "timeseries unbatched": lambda tf, k: _elements(k.utils.timeseries_dataset_from_array(
        DATA, None, sequence_length=5, batch_size=None))[:3],
    "timeseries bad start": lambda tf, k: k.utils.timeseries_dataset_from_array(DATA, None, 3, start_index=30),
    "unpack": lambda tf, k: [str(k.utils.unpack_x_y_sample_weight(v)) for v in [(1,), (1, 2), [1, 2, 3], 5]],
    "pack": lambda tf, k: [str(k.utils.pack_x_y_sample_weight(*a)) for a in [(1,), (1, 2), (1, 2, 3)]],
    "split fraction": lambda tf, k: [_elements(d) for d in k.utils.split_dataset(np.arange(10), left_size=0.7)],
    "split tuple": lambda tf, k: [_elements(d) for d in k.utils.split_dataset((np.arange(6), np.arange(6) * 2),
                                                                              right_size=2)],
}


def _outcome(case, tf, keras):
    try:
        return ("ok", _listed(case(tf, keras)))
    except Exception as e:  # noqa: BLE001 - the class is compared
        return ("error", type(e).__name__)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    assert _outcome(CASES[name], ember, ember.keras) == _outcome(CASES[name], tensorflow, tf_keras)


def test_text_dataset_from_directory_matches_tf_keras(tmp_path):
    for label, texts in {"neg": ["bad", "awful film"], "pos": ["good", "great", "fine movie"]}.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    (tmp_path / "pos" / "notes.md").write_text("not a text file")

    def read(tf, keras, **kwargs):
        ds = keras.utils.text_dataset_from_directory(str(tmp_path), batch_size=2, shuffle=False, **kwargs)
        return ds.class_names, _elements(ds)

    for kwargs in ({}, {"label_mode": "categorical", "max_length": 4}, {"label_mode": "binary"},
                   {"validation_split": 0.4, "subset": "validation", "seed": 1}):
        assert read(ember, ember.keras, **kwargs) == read(tensorflow, tf_keras, **kwargs), kwargs
    train, validation = ember.keras.utils.text_dataset_from_directory(
        str(tmp_path), validation_split=0.4, subset="both", seed=3)
    assert sum(len(x) for x, _ in _elements(train)) + sum(len(x) for x, _ in _elements(validation)) == 5


class _Batches(ember.keras.utils.Sequence):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0
        self.indices_seen = []

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, index):
        self.indices_seen.append(index)
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_fit_takes_a_sequence_calls_on_epoch_end_and_shuffles_batches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model = ember.keras.Sequential([ember.keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=ember.keras.optimizers.SGD(0.1), loss="mse")
    batches = _Batches(x, y, 8)
    history = model.fit(batches, epochs=4, verbose=0)
    assert batches.epochs_ended == 4
    assert len(history.history["loss"]) == 4 and history.history["loss"][-1] < history.history["loss"][0]
    assert sorted(batches.indices_seen) == sorted(list(range(5)) * 4)
    assert batches.indices_seen != list(range(5)) * 4  # shuffle=True reorders the batches
    in_order = _Batches(x, y, 8)
    model.fit(in_order, epochs=2, verbose=0, shuffle=False)
    assert in_order.indices_seen == list(range(5)) * 2


def test_custom_objects_reach_deserialization():
    keras = ember.keras

    @keras.utils.register_keras_serializable(package="Tests")
    class Scaled(keras.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    def halve(x):
        return x / 2.0

    assert keras.utils.get_registered_name(Scaled) == "Tests>Scaled"
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,)), Scaled(3.0)])
    config = model.get_config()
    assert config["layers"][-1]["class_name"] == "Tests>Scaled"
    rebuilt = keras.Sequential.from_config(config)
    assert isinstance(rebuilt.layers[-1], Scaled) and rebuilt.layers[-1].factor == 3.0

    with pytest.raises(ValueError, match="custom_object_scope"):
        keras.layers.deserialize({"class_name": "Halver", "config": {}})
    with keras.utils.custom_object_scope({"halve": halve}):
        assert keras.activations.get("halve") is halve
        assert keras.losses.get("halve") is halve
    with pytest.raises(ValueError):
        keras.activations.get("halve")
    keras.utils.get_custom_objects()["halve"] = halve
    try:
        assert keras.activations.deserialize("halve") is halve
        assert keras.utils.get_registered_object("halve") is halve
    finally:
        del keras.utils.get_custom_objects()["halve"]
    serialized = keras.utils.serialize_keras_object(Scaled(1.5))
    assert serialized["class_name"] == "Tests>Scaled"
    assert keras.utils.deserialize_keras_object(serialized).factor == 1.5


TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "Cat and dog; cat, dog, CAT?", ""]


def _tokenizer_outputs(keras, **options):
    tokenizer = keras.preprocessing.text.Tokenizer(**options)
    tokenizer.fit_on_texts(TEXTS)
    sequences = tokenizer.texts_to_sequences(TEXTS + ["an unseen cat"])
    out = {"word_index": tokenizer.word_index, "sequences": sequences,
           "texts": tokenizer.sequences_to_texts(sequences), "documents": tokenizer.document_count,
           "word_docs": dict(tokenizer.word_docs)}
    for mode in ("binary", "count", "freq", "tfidf"):
        out[mode] = np.round(tokenizer.texts_to_matrix(TEXTS[:3], mode=mode), 6).tolist()
    restored = keras.preprocessing.text.tokenizer_from_json(tokenizer.to_json())
    out["restored"] = restored.texts_to_sequences(TEXTS)
    return out


@pytest.mark.parametrize("options", [{}, {"num_words": 4}, {"oov_token": "<unk>", "num_words": 5},
                                     {"char_level": True}, {"lower": False, "filters": ""}])
def test_tokenizer_matches_tf_keras(options):
    assert _tokenizer_outputs(ember.keras, **options) == _tokenizer_outputs(tf_keras, **options)


def test_text_helpers_match_tf_keras():
    for keras_module in (ember.keras, tf_keras):
        text = keras_module.preprocessing.text
        assert text.text_to_word_sequence("Hello, World!  again") == ["hello", "world", "again"]
    ours = ember.keras.preprocessing.text.hashing_trick("a b a c", 10, hash_function="md5")
    theirs = tf_keras.preprocessing.text.hashing_trick("a b a c", 10, hash_function="md5")
    assert ours == theirs
    np.testing.assert_allclose(ember.keras.preprocessing.sequence.make_sampling_table(20),
                               tf_keras.preprocessing.sequence.make_sampling_table(20))
    couples, labels = ember.keras.preprocessing.sequence.skipgrams([1, 2, 3, 0, 4], 5, window_size=1, seed=3)
    positives = sorted(tuple(c) for c, l in zip(couples, labels) if l == 1)
    assert positives == [(1, 2), (2, 1), (2, 3), (3, 2)]
    assert labels.count(0) == 4 and all(1 <= c[1] < 5 for c in couples)


def test_text_dataset_from_directory_prints_tf_keras_counts(tmp_path, capsys):
    import tf_keras

    for name in ("neg", "pos"):
        (tmp_path / name).mkdir()
        for i in range(3):
            (tmp_path / name / f"{i}.txt").write_text(f"{name} {i}")
    calls = [dict(validation_split=0.5, subset="training", seed=1), dict(validation_split=0.5, subset="both", seed=1),
             dict(labels=None)]
    printed = []
    for keras in (ember.keras, tf_keras):
        for kwargs in calls:
            keras.utils.text_dataset_from_directory(str(tmp_path), **kwargs)
        printed.append(capsys.readouterr().out.splitlines())
    assert printed[0] == printed[1] and printed[0][0] == "Found 6 files belonging to 2 classes."

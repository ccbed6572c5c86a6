"""Keras models in SavedModels, across ember, TensorFlow and tf_keras: ``tf.saved_model.save(model)``
writes tf_keras' ``serving_default`` signature (training.py ``_ember_default_save_signature``), and
``model.save`` writes a ``keras_metadata.pb`` that ``tf_keras.models.load_model`` rebuilds the model from
(keras_metadata.py)."""

import os

import numpy as np
import pytest

import ember as tf


@pytest.fixture(scope="module")
def keras():
    import tensorflow
    import tf_keras

    return tensorflow, tf_keras


X = np.random.default_rng(1).normal(size=(6, 3)).astype(np.float32)


def _functional(k, t):
    a = k.Input((3,), name="x")
    h = k.layers.Dense(8, activation="relu", name="h")(a)
    h = t.concat([h, a * 2.0], axis=1)
    return k.Model(a, k.layers.Dense(2, activation="softmax", name="o")(k.layers.Dropout(0.5)(h)), name="f")


def _two_in_two_out(k, t):
    a, b = k.Input((3,), name="a"), k.Input((2,), name="b")
    joined = k.layers.Concatenate(name="cat")([a, b])
    return k.Model([a, b], [k.layers.Dense(1, name="y1")(joined), k.layers.Dense(2, name="y2")(joined)])


def _sequential(k, t):
    return k.Sequential([k.layers.Dense(4, activation="tanh", input_shape=(3,), name="d0"),
                         k.layers.Dense(2, name="d1")], name="seq")


def _signature_keys(signature):
    return sorted(signature.structured_input_signature[1]), sorted(signature.structured_outputs)


@pytest.mark.parametrize("make", [_functional, _two_in_two_out, _sequential])
def test_tf_saved_model_save_writes_tf_keras_serving_signature(tmp_path, keras, make):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = make(tf.keras, tf), make(tf_keras, real_tf)
    theirs.set_weights(ours.get_weights())
    tf.saved_model.save(ours, str(tmp_path / "ours"))
    real_tf.saved_model.save(theirs, str(tmp_path / "theirs"))
    served = real_tf.saved_model.load(str(tmp_path / "ours")).signatures["serving_default"]
    reference = real_tf.saved_model.load(str(tmp_path / "theirs")).signatures["serving_default"]
    assert _signature_keys(served) == _signature_keys(reference)
    inputs = {"a": X, "b": X[:, :2]} if make is _two_in_two_out else {sorted(
        served.structured_input_signature[1])[0]: X}
    got = served(**{k: real_tf.constant(v) for k, v in inputs.items()})
    want = reference(**{k: real_tf.constant(v) for k, v in inputs.items()})
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-5, atol=1e-6)
    # ember reads its own signature back too
    mine = tf.saved_model.load(str(tmp_path / "ours")).signatures["serving_default"]
    for key, value in mine(**{k: tf.constant(v) for k, v in inputs.items()}).items():
        np.testing.assert_allclose(value.numpy(), want[key].numpy(), rtol=1e-5, atol=1e-6)


def test_model_save_signature_matches_tf_keras(tmp_path, keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = _functional(tf.keras, tf), _functional(tf_keras, real_tf)
    ours.save(str(tmp_path / "ours"))
    theirs.save(str(tmp_path / "theirs"))
    served = real_tf.saved_model.load(str(tmp_path / "ours")).signatures["serving_default"]
    reference = real_tf.saved_model.load(str(tmp_path / "theirs")).signatures["serving_default"]
    assert _signature_keys(served) == _signature_keys(reference)


@pytest.mark.parametrize("make", [_functional, _two_in_two_out, _sequential])
def test_tf_keras_load_model_rebuilds_what_ember_saves(tmp_path, keras, make):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    model = make(tf.keras, tf)
    path = str(tmp_path / "m")
    model.save(path)
    assert os.path.exists(os.path.join(path, "keras_metadata.pb"))
    loaded = tf_keras.models.load_model(path)
    assert isinstance(loaded, tf_keras.Model) and type(loaded).__name__ == type(model).__name__
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    inputs = [X, X[:, :2]] if make is _two_in_two_out else X
    want = model.predict(inputs, verbose=0)
    got = loaded.predict(inputs, verbose=0)
    for a, b in zip(np.atleast_1d(got) if not isinstance(got, list) else got,
                    np.atleast_1d(want) if not isinstance(want, list) else want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_tf_keras_load_model_compiles_and_trains_what_ember_saves(tmp_path, keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    model = _functional(tf.keras, tf)
    y = np.array([0, 1, 1, 0, 1, 0])
    model.compile(tf.keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(X, y, epochs=2, verbose=0)
    model.save(str(tmp_path / "m"))
    loaded = tf_keras.models.load_model(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.evaluate(X, y, verbose=0), model.evaluate(X, y, verbose=0), rtol=1e-5)
    assert type(loaded.optimizer).__name__ == "Adam"
    assert loaded.optimizer.learning_rate.numpy() == pytest.approx(0.01)
    loaded.fit(X, y, epochs=1, verbose=0)


def test_subclassed_model_writes_no_keras_metadata(tmp_path, keras):
    real_tf, tf_keras = keras

    class Sub(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

    model = Sub()
    model(X)
    model.save(str(tmp_path / "sub"))
    assert not os.path.exists(str(tmp_path / "sub" / "keras_metadata.pb"))
    loaded = tf_keras.models.load_model(str(tmp_path / "sub"))  # falls back to tf.saved_model.load
    got = list(loaded.signatures["serving_default"](**{"input_1": real_tf.constant(X)}).values())[0]
    np.testing.assert_allclose(got.numpy(), model(X).numpy(), rtol=1e-5, atol=1e-6)


def test_ember_reads_tf_keras_saved_model_with_op_layers(tmp_path, keras):
    real_tf, tf_keras = keras
    tf_keras.backend.clear_session()
    theirs = _functional(tf_keras, real_tf)
    theirs.save(str(tmp_path / "theirs"))
    ours = tf.keras.models.load_model(str(tmp_path / "theirs"))
    assert isinstance(ours, tf.keras.Model)
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


def test_tf_keras_load_model_rebuilds_nested_models_and_masks(tmp_path, keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    inner_in = tf.keras.Input((3,), name="ii")
    inner = tf.keras.Model(inner_in, tf.keras.layers.Dense(2, name="id")(inner_in), name="inner")
    a = tf.keras.Input((3,), name="a")
    shared = tf.keras.layers.Dense(3, name="shared")
    nested = tf.keras.Model(a, inner(shared(shared(a))), name="outer")
    nested.save(str(tmp_path / "nested"))
    loaded = tf_keras.models.load_model(str(tmp_path / "nested"))
    np.testing.assert_allclose(loaded(X).numpy(), nested(X).numpy(), rtol=1e-5, atol=1e-6)
    ids = tf.keras.Input((5,), name="ids")
    pooled = tf.keras.layers.GlobalAveragePooling1D(name="gap")(tf.keras.layers.Embedding(10, 4, mask_zero=True)(ids))
    masked = tf.keras.Model(ids, tf.keras.layers.Dense(1, name="o")(pooled))
    masked.save(str(tmp_path / "masked"))
    loaded = tf_keras.models.load_model(str(tmp_path / "masked"))
    data = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 0]], np.int32)
    np.testing.assert_allclose(loaded(data).numpy(), masked(data).numpy(), rtol=1e-5, atol=1e-6)


def test_model_with_a_layer_without_config_saves_and_loads_as_callable(tmp_path, keras):
    real_tf, tf_keras = keras

    class Scale(tf.keras.layers.Layer):  # __init__ takes an argument, and there is no get_config
        def __init__(self, factor):
            super().__init__()
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

    a = tf.keras.Input((3,), name="x")
    model = tf.keras.Model(a, Scale(3.0)(tf.keras.layers.Dense(2, name="d")(a)))
    with pytest.warns(UserWarning, match="config is not available"):
        model.save(str(tmp_path / "m"))
    assert not os.path.exists(str(tmp_path / "m" / "keras_metadata.pb"))
    ours = tf.keras.models.load_model(str(tmp_path / "m"))
    np.testing.assert_allclose(ours(tf.constant(X)).numpy(), model(X).numpy(), rtol=1e-6)
    theirs = tf_keras.models.load_model(str(tmp_path / "m"))
    got = theirs.signatures["serving_default"](x=real_tf.constant(X))
    np.testing.assert_allclose(list(got.values())[0].numpy(), model(X).numpy(), rtol=1e-5, atol=1e-6)


def test_ember_reads_tf_keras_saved_nested_model(tmp_path, keras):
    real_tf, tf_keras = keras
    tf_keras.backend.clear_session()
    inner_in = tf_keras.Input((3,), name="ii")
    inner = tf_keras.Model(inner_in, tf_keras.layers.Dense(2, name="id")(inner_in) * 2.0, name="inner")
    a = tf_keras.Input((3,), name="a")
    shared = tf_keras.layers.Dense(3, name="shared")
    theirs = tf_keras.Model(a, inner(shared(shared(a)) + 1.0), name="outer")
    theirs.save(str(tmp_path / "nested"))
    ours = tf.keras.models.load_model(str(tmp_path / "nested"))
    assert isinstance(ours, tf.keras.Model) and [l.name for l in ours.layers] == [l.name for l in theirs.layers]
    np.testing.assert_allclose(ours(X).numpy(), theirs(X).numpy(), rtol=1e-5, atol=1e-6)

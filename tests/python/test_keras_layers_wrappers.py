"""keras.layers.Wrapper and SpectralNormalization against tf_keras: the same kernel and vector_u give the same
normalized kernel, vector_u and outputs after training calls (Dense, Conv2D, Embedding), inference calls
leave the weights alone, configs round-trip, and bad arguments raise as tf_keras does."""

import types

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import layers

RNG = np.random.default_rng(2)


class _TensorFlowWithKeras2InputSpec:
    """tensorflow, but with tf_keras' InputSpec as ``keras.layers.InputSpec``."""

    def __getattr__(self, name):
        import tensorflow

        if name == "keras":
            return types.SimpleNamespace(layers=types.SimpleNamespace(InputSpec=tf_keras.layers.InputSpec))
        return getattr(tensorflow, name)


@pytest.fixture(autouse=True)
def tf_keras_spectral_normalization_builds(monkeypatch):
    # tf_keras' SpectralNormalization.build makes ``tf.keras.layers.InputSpec``, which in TF 2.21 is Keras 3's,
    # and its own Layer then rejects it; point that one name at tf_keras' InputSpec.
    from tf_keras.src.layers.normalization import spectral_normalization

    monkeypatch.setattr(spectral_normalization, "tf", _TensorFlowWithKeras2InputSpec())


@pytest.mark.parametrize("power_iterations", [1, 3])
@pytest.mark.parametrize("make, x", [
    (lambda keras: keras.layers.Dense(4), RNG.normal(size=(3, 5)).astype(np.float32)),
    (lambda keras: keras.layers.Conv2D(3, 2), RNG.normal(size=(2, 5, 5, 2)).astype(np.float32)),
    (lambda keras: keras.layers.Embedding(10, 4), RNG.integers(0, 10, (2, 3))),
])
def test_spectral_normalization_as_tf_keras(make, x, power_iterations):
    theirs = tf_keras.layers.SpectralNormalization(make(tf_keras), power_iterations=power_iterations)
    ours = layers.SpectralNormalization(make(ember.keras), power_iterations=power_iterations)
    theirs(x)
    ours(x)
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    weights = [RNG.normal(size=w.shape).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    np.testing.assert_allclose(np.asarray(ours(x)), theirs(x).numpy(), rtol=1e-5, atol=1e-5)  # inference
    for our_weight, weight in zip(ours.get_weights(), weights):
        np.testing.assert_array_equal(our_weight, weight)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(ours(x, training=True)), theirs(x, training=True).numpy(),
                                   rtol=1e-4, atol=1e-5)
    for our_weight, their_weight in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(our_weight, their_weight, rtol=1e-4, atol=1e-6)


def test_spectral_normalization_in_fit_matches_tf_keras():
    def build(keras):
        model = keras.Sequential([keras.layers.SpectralNormalization(keras.layers.Dense(3), input_shape=(4,)),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        return model

    theirs, ours = build(tf_keras), build(ember.keras)
    # Layer by layer: a model's weight list is ordered differently (docs/keras.md, SpectralNormalization).
    for our_layer, their_layer in zip(ours.layers, theirs.layers):
        our_layer.set_weights(their_layer.get_weights())
    x, y = RNG.normal(size=(8, 4)).astype(np.float32), RNG.normal(size=(8, 1)).astype(np.float32)
    theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for our_layer, their_layer in zip(ours.layers, theirs.layers):
        for our_weight, their_weight in zip(our_layer.get_weights(), their_layer.get_weights()):
            np.testing.assert_allclose(our_weight, their_weight, rtol=1e-4, atol=1e-5)


def test_an_all_zero_kernel_is_left_alone():
    layer = layers.SpectralNormalization(layers.Dense(2, kernel_initializer="zeros"))
    out = layer(np.ones((1, 3), np.float32), training=True)
    assert not np.isnan(np.asarray(out)).any()
    np.testing.assert_array_equal(layer.get_weights()[0], np.zeros((3, 2), np.float32))


def test_wrapper_config_round_trips_and_bad_arguments_raise():
    layer = layers.SpectralNormalization(layers.Dense(3, activation="relu"), power_iterations=2, name="sn")
    config = layer.get_config()
    their_config = tf_keras.layers.SpectralNormalization(tf_keras.layers.Dense(3, activation="relu"),
                                                         power_iterations=2, name="sn").get_config()
    assert set(config) == set(their_config) and config["power_iterations"] == 2
    assert config["layer"]["class_name"] == their_config["layer"]["class_name"] == "Dense"
    clone = layers.deserialize(layers.serialize(layer))
    assert isinstance(clone, layers.SpectralNormalization) and isinstance(clone.layer, layers.Dense)
    assert clone.get_config() == config

    with pytest.raises(ValueError, match="power_iterations"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="not a supported layer type"):
        layers.Wrapper("dense")
    with pytest.raises(ValueError, match="nor 'embeddings'"):
        layers.SpectralNormalization(layers.Flatten())(np.ones((1, 2, 2), np.float32))


def test_a_user_wrapper_builds_its_layer_and_serializes_it():
    class Twice(layers.Wrapper):
        def call(self, inputs):
            return self.layer(self.layer(inputs))

    wrapper = Twice(layers.Dense(3))
    out = wrapper(np.ones((2, 3), np.float32))
    assert out.shape == (2, 3) and wrapper.layer.built and len(wrapper.trainable_weights) == 2
    clone = Twice.from_config(wrapper.get_config())
    assert isinstance(clone.layer, layers.Dense) and clone.layer.units == 3

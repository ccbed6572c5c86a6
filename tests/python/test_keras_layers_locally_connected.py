"""LocallyConnected1D/2D against tf_keras (implementation 1): the same weights (copied with set_weights, in
tf_keras' layout) give the same outputs and gradients, for both data formats, with strides, bias and
activation; configs round-trip; bad arguments raise as tf_keras does."""

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import layers

RNG = np.random.default_rng(11)

CASES = [
    ("LocallyConnected1D", (2, 9, 3), {"filters": 4, "kernel_size": 3}),
    ("LocallyConnected1D", (2, 10, 3), {"filters": 2, "kernel_size": 2, "strides": 3, "activation": "relu"}),
    ("LocallyConnected1D", (2, 3, 8), {"filters": 4, "kernel_size": 3, "strides": 2,
                                       "data_format": "channels_first"}),
    ("LocallyConnected1D", (2, 7, 2), {"filters": 3, "kernel_size": 2, "use_bias": False}),
    ("LocallyConnected2D", (2, 6, 5, 3), {"filters": 4, "kernel_size": (3, 2)}),
    ("LocallyConnected2D", (2, 7, 6, 2), {"filters": 3, "kernel_size": 2, "strides": (2, 1), "activation": "tanh"}),
    ("LocallyConnected2D", (2, 3, 6, 5), {"filters": 2, "kernel_size": (2, 3), "strides": 2,
                                          "data_format": "channels_first"}),
]


@pytest.mark.parametrize("name, shape, kwargs", CASES)
def test_outputs_and_gradients_match_tf_keras_with_its_weights(name, shape, kwargs):
    x = RNG.normal(size=shape).astype(np.float32)
    theirs = getattr(tf_keras.layers, name)(**kwargs)
    their_out = theirs(x).numpy()
    ours = getattr(layers, name)(**kwargs)
    ours.build(shape)
    assert [tuple(w.shape) for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    # Random biases, so a wrong bias layout shows.
    weights = [RNG.normal(size=w.shape).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    np.testing.assert_allclose(np.asarray(ours(x)), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    assert tuple(ours.compute_output_shape(shape).as_list()) == their_out.shape

    import tensorflow as tf

    with tf.GradientTape() as tape:
        their_loss = tf.reduce_sum(theirs(x) ** 2)
    their_grads = tape.gradient(their_loss, theirs.trainable_weights)
    with ember.GradientTape() as tape:
        our_loss = ember.reduce_sum(ours(x) ** 2)
    our_grads = tape.gradient(our_loss, ours.trainable_weights)
    for our_grad, their_grad in zip(our_grads, their_grads):
        np.testing.assert_allclose(np.asarray(our_grad), their_grad.numpy(), rtol=1e-4, atol=1e-4)


def test_in_a_model_weights_round_trip_from_tf_keras():
    def build(keras):
        return keras.Sequential([keras.layers.LocallyConnected2D(3, 2, input_shape=(5, 5, 2)),
                                 keras.layers.Flatten(), keras.layers.Dense(1)])

    theirs, ours = build(tf_keras), build(ember.keras)
    ours.set_weights(theirs.get_weights())
    x = RNG.normal(size=(4, 5, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_config_round_trips_and_matches_tf_keras_keys():
    layer = layers.LocallyConnected1D(4, 3, strides=2, activation="relu", data_format="channels_first")
    config = layer.get_config()
    their_config = tf_keras.layers.LocallyConnected1D(4, 3, strides=2, activation="relu",
                                                      data_format="channels_first").get_config()
    assert set(config) == set(their_config)
    for key in ("filters", "kernel_size", "strides", "padding", "data_format", "activation", "implementation"):
        assert config[key] == their_config[key]
    clone = layers.deserialize(layers.serialize(layer))
    assert isinstance(clone, layers.LocallyConnected1D) and clone.get_config() == config


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="only \"valid\" is supported"):
        layers.LocallyConnected1D(2, 3, padding="same")
    with pytest.raises(ValueError, match="Unrecognized implementation"):
        layers.LocallyConnected2D(2, 3, implementation=4)
    with pytest.raises(NotImplementedError, match="implementation=2"):
        layers.LocallyConnected2D(2, 3, implementation=2)
    with pytest.raises(ValueError, match="<= 0"):
        layers.LocallyConnected1D(2, 5)(np.zeros((1, 3, 2), np.float32))
    with pytest.raises(ValueError):
        layers.LocallyConnected2D(2, 2)(np.zeros((1, 4, 4), np.float32))

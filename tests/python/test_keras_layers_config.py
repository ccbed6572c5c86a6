"""The layers of convolutional/pooling/normalization/recurrent/attention.py serialise as Keras 2 does:
``get_config`` -> ``from_config`` gives the same config, tf_keras accepts the config, and a model of them
survives ``save_weights``/``load_weights`` with equal outputs."""

import numpy as np
import pytest
import tf_keras

import ember as tf
from ember.keras import layers as L

MAKERS = [
    lambda: L.Conv2D(4, 3, padding="same", activation="relu"),
    lambda: L.Conv1D(2, 3, padding="causal", dilation_rate=2),
    lambda: L.Conv3D(2, 2, use_bias=False),
    lambda: L.Conv2DTranspose(3, 3, strides=2, output_padding=1),
    lambda: L.DepthwiseConv2D(3, depth_multiplier=2),
    lambda: L.DepthwiseConv1D(3, depth_multiplier=2, padding="same"),
    lambda: L.Conv1DTranspose(3, 3, strides=2, output_padding=1),
    lambda: L.Conv3DTranspose(2, 2, strides=2, padding="same"),
    lambda: L.GroupNormalization(groups=2, epsilon=1e-4),
    lambda: L.MaxPooling2D(3, strides=2, padding="same"),
    lambda: L.AveragePooling1D(3),
    lambda: L.GlobalAveragePooling2D(keepdims=True),
    lambda: L.BatchNormalization(momentum=0.9, center=False),
    lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-5),
    lambda: L.LSTM(4, return_sequences=True, unit_forget_bias=False),
    lambda: L.GRU(3, reset_after=False, go_backwards=True),
    lambda: L.SimpleRNN(2, return_state=True, activation="relu"),
    lambda: L.MultiHeadAttention(2, 3, value_dim=4, dropout=0.1),
    lambda: L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode="sum"),
]


@pytest.mark.parametrize("make", MAKERS, ids=[str(i) for i in range(len(MAKERS))])
def test_config_round_trips_and_tf_keras_accepts_it(make):
    layer = make()
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config
    if not isinstance(layer, L.Bidirectional):  # its config nests ember's serialised layer
        getattr(tf_keras.layers, type(layer).__name__).from_config(config)


def test_model_of_these_layers_saves_and_loads_weights(tmp_path):
    def model():
        inp = L.Input((12, 12, 3))
        x = L.Conv2D(4, 3, activation="relu")(inp)
        x = L.BatchNormalization()(x)
        x = L.MaxPooling2D()(x)
        x = L.DepthwiseConv2D(3, padding="same")(x)
        x = L.Reshape((25, 4))(x)
        x = L.LSTM(6, return_sequences=True)(x)
        x = L.MultiHeadAttention(2, 3)(x, x)
        x = L.LayerNormalization()(x)
        x = L.Bidirectional(L.GRU(3))(x)
        return tf.keras.Model(inp, x)

    a = model()
    x = np.random.default_rng(0).standard_normal((2, 12, 12, 3)).astype(np.float32)
    a(tf.constant(x), training=True)  # moves BatchNormalization's moving statistics
    want = a(tf.constant(x)).numpy()
    a.save_weights(str(tmp_path / "ckpt"))
    b = model()
    b.load_weights(str(tmp_path / "ckpt"))
    np.testing.assert_allclose(b(tf.constant(x)).numpy(), want, atol=1e-6)


def test_checkpoints_of_the_newer_layers_load_both_ways_with_tf_keras(tmp_path):
    """ConvLSTM2D, Conv1D/2DTranspose, GroupNormalization and DepthwiseConv1D keep tf_keras' checkpoint keys."""
    def model(keras):
        inputs = keras.Input((3, 6, 6, 2))
        x = keras.layers.ConvLSTM2D(4, 3, return_sequences=True)(inputs)
        x = keras.layers.TimeDistributed(keras.layers.Conv2DTranspose(2, 3))(x)
        x = keras.layers.Reshape((3, 36, 2))(x)
        x = keras.layers.TimeDistributed(keras.layers.GroupNormalization(2))(x)
        x = keras.layers.Reshape((3, 72))(x)
        x = keras.layers.Conv1DTranspose(2, 3)(x)
        return keras.Model(inputs, keras.layers.DepthwiseConv1D(3, depth_multiplier=2)(x))

    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6, 2)).astype(np.float32)
    ref, ours = model(tf_keras), model(tf.keras)
    ref.save_weights(str(tmp_path / "tf_keras"))
    ours.load_weights(str(tmp_path / "tf_keras"))
    np.testing.assert_allclose(ours(tf.constant(x)).numpy(), ref(x).numpy(), atol=1e-5)
    ours.save_weights(str(tmp_path / "ember"))
    again = model(tf_keras)
    again.load_weights(str(tmp_path / "ember"))
    np.testing.assert_allclose(again(x).numpy(), ref(x).numpy(), atol=1e-5)

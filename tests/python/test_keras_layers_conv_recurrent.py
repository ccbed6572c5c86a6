"""ConvLSTM1D/2D/3D (python/ember/keras/layers/conv_recurrent.py) against tf_keras with the same weights:
forward, gradients, eager vs ember.function, None batch; return_sequences, return_state, go_backwards,
strides and padding, channels_first, stateful calls, configs; bad inputs raise naming the layer."""

import numpy as np
import pytest
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras import layers as L
from ember.keras.layers import conv_recurrent as CR


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CASES = [
    ("ConvLSTM2D", dict(filters=3, kernel_size=3), (2, 4, 6, 6, 2)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=3, padding="same", return_sequences=True), (2, 3, 5, 5, 2)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=(3, 2), strides=2, padding="same", return_state=True,
                        go_backwards=True), (2, 3, 7, 6, 1)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=2, dilation_rate=2, use_bias=False, activation="relu",
                        recurrent_activation="sigmoid", return_sequences=True, return_state=True),
     (1, 3, 6, 6, 2)),
    ("ConvLSTM1D", dict(filters=3, kernel_size=3, return_sequences=True), (2, 4, 7, 2)),
    ("ConvLSTM1D", dict(filters=2, kernel_size=2, strides=2, padding="same", unit_forget_bias=False,
                        return_state=True), (2, 3, 6, 3)),
    ("ConvLSTM3D", dict(filters=2, kernel_size=2, return_sequences=True), (1, 3, 3, 4, 3, 2)),
]


@pytest.mark.parametrize("name,kwargs,shape", CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_conv_lstm_matches_tf_keras(name, kwargs, shape):
    layer, ref = check_layer(lambda: getattr(CR, name)(**kwargs), lambda: getattr(tf_keras.layers, name)(**kwargs),
                             [data(*shape)])
    want = ref.compute_output_shape((None,) + shape[1:])
    got = layer.compute_output_shape((None,) + shape[1:])
    assert [list(s) for s in (want if isinstance(want, list) else [want])] == \
        [s.as_list() for s in (got if isinstance(got, list) else [got])]
    assert [w.shape for w in layer.weights] == [w.shape for w in ref.weights]


def test_conv_lstm_with_unknown_steps_and_size_runs_the_loop_with_the_same_values():
    x = data(2, 4, 6, 5, 2)
    ref = tf_keras.layers.ConvLSTM2D(2, 3, strides=2, return_sequences=True)
    want = ref(x).numpy()
    layer = L.ConvLSTM2D(2, 3, strides=2, return_sequences=True)
    layer(tf.constant(x))
    layer.set_weights(ref.get_weights())
    spec = tf.TensorSpec([None, None, None, None, 2], tf.float32)
    got = tf.function(lambda v: layer(v), input_signature=[spec])(tf.constant(x)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_conv_lstm_channels_first_is_channels_last_transposed():
    """TensorFlow's CPU convolutions have no NCHW kernel: checked against ember's channels_last layer."""
    x = data(2, 3, 5, 5, 2)
    last = L.ConvLSTM2D(3, 3, padding="same", return_sequences=True)
    want = last(tf.constant(x)).numpy()
    first = L.ConvLSTM2D(3, 3, padding="same", return_sequences=True, data_format="channels_first")
    first(tf.constant(x.transpose(0, 1, 4, 2, 3)))
    first.set_weights(last.get_weights())
    got = first(tf.constant(x.transpose(0, 1, 4, 2, 3))).numpy().transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_conv_lstm_mask_matches_tf_keras():
    x = data(2, 4, 5, 5, 1)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    ref = tf_keras.layers.ConvLSTM2D(2, 3, return_sequences=True)
    want = ref(x, mask=mask).numpy()
    layer = L.ConvLSTM2D(2, 3, return_sequences=True)
    layer(tf.constant(x))
    layer.set_weights(ref.get_weights())
    np.testing.assert_allclose(layer(tf.constant(x), mask=tf.constant(mask)).numpy(), want, atol=1e-5)


def test_stateful_conv_lstm_matches_tf_keras_over_consecutive_calls():
    ref = tf_keras.layers.ConvLSTM2D(2, 3, stateful=True)
    layer = L.ConvLSTM2D(2, 3, stateful=True)
    ref(data(2, 3, 5, 5, 1))
    layer(tf.constant(data(2, 3, 5, 5, 1)))
    layer.set_weights(ref.get_weights())
    ref.reset_states()
    layer.reset_states()
    for i in range(3):
        x = data(2, 3, 5, 5, 1, seed=i + 1)
        np.testing.assert_allclose(layer(tf.constant(x)).numpy(), ref(x).numpy(), atol=1e-5)
    assert [s.shape.as_list() for s in layer.states] == [[2, 3, 3, 2]] * 2
    for s, r in zip(layer.states, ref.states):
        np.testing.assert_allclose(s.numpy(), r.numpy(), atol=1e-5)


@pytest.mark.parametrize("name,kwargs", [
    ("ConvLSTM2D", dict(filters=4, kernel_size=3, padding="same", return_sequences=True, dropout=0.1)),
    ("ConvLSTM1D", dict(filters=2, kernel_size=2, strides=2, unit_forget_bias=False, go_backwards=True)),
    ("ConvLSTM3D", dict(filters=2, kernel_size=(1, 2, 2), return_state=True)),
])
def test_conv_lstm_config_round_trips_and_equals_tf_keras(name, kwargs):
    ours = getattr(L, name)(name="layer", **kwargs).get_config()
    want = getattr(tf_keras.layers, name)(name="layer", **kwargs).get_config()
    assert ours == want
    assert getattr(L, name).from_config(ours).get_config() == ours
    getattr(tf_keras.layers, name).from_config(ours)


def test_conv_lstm_in_a_model_trains_like_tf_keras():
    def model(keras):
        inputs = keras.Input((3, 6, 6, 1))
        x = keras.layers.ConvLSTM2D(2, 3, padding="same")(inputs)
        return keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Flatten()(x)))

    ref, ours = model(tf_keras), model(tf.keras)
    ours.set_weights(ref.get_weights())
    x, y = data(8, 3, 6, 6, 1, seed=1), data(8, 1, seed=2)
    ref.compile(tf_keras.optimizers.SGD(0.01), "mse")
    ours.compile(tf.keras.optimizers.SGD(0.01), "mse")
    want = ref.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_conv_lstm_bad_inputs_raise_naming_the_layer():
    layer = L.ConvLSTM2D(2, 3, name="clstm")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"ConvLSTM2D 'clstm'.*rank 5"):
        layer(tf.zeros([2, 5, 5, 1]))
    layer(tf.zeros([2, 3, 5, 5, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="clstm.*1 input channels.*got 2"):
        layer(tf.zeros([2, 3, 5, 5, 2]))
    with pytest.raises(ValueError, match="needs to know its batch size"):
        L.ConvLSTM2D(2, 3, stateful=True)(tf.keras.Input((3, 5, 5, 1)))


def test_conv_lstm_names_its_weights_as_tf_keras():
    tf.keras.backend.clear_session()
    layer = L.ConvLSTM2D(2, 3)
    layer(tf.zeros([1, 2, 5, 5, 1]))
    assert [w.name for w in layer.weights] == ["conv_lstm2d/kernel:0", "conv_lstm2d/recurrent_kernel:0",
                                              "conv_lstm2d/bias:0"]
    assert L.ConvLSTM1D(2, 3).name == "conv_lstm1d"

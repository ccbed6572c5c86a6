"""LocallyConnected1D/2D against tf_keras, for each of its three implementations: the same weights (copied
with set_weights, in tf_keras' layout of that implementation) give the same outputs and gradients, for both
data formats, with strides, bias, activation and (implementations 2 and 3) "same" padding; a traced call
equals the eager one; the kernel's gradient matches finite differences; configs round-trip; bad arguments
raise as tf_keras does."""

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


# "same" padding exists only in implementations 2 and 3; tf_keras places its windows its own way
SAME_PADDING_CASES = [
    ("LocallyConnected1D", (2, 7, 2), {"filters": 3, "kernel_size": 3, "padding": "same"}),
    ("LocallyConnected1D", (2, 2, 9), {"filters": 2, "kernel_size": 4, "strides": 2, "padding": "same",
                                       "data_format": "channels_first"}),
    ("LocallyConnected2D", (2, 7, 6, 2), {"filters": 3, "kernel_size": 3, "strides": (2, 1), "padding": "same"}),
    ("LocallyConnected2D", (2, 3, 5, 6), {"filters": 2, "kernel_size": (2, 3), "strides": 2, "padding": "same",
                                          "data_format": "channels_first", "use_bias": False}),
]
ALL_CASES = ([(1, *case) for case in CASES] + [(impl, *case) for impl in (2, 3) for case in CASES + SAME_PADDING_CASES])


@pytest.mark.parametrize("implementation, name, shape, kwargs", ALL_CASES)
def test_outputs_and_gradients_match_tf_keras_with_its_weights(implementation, name, shape, kwargs):
    kwargs = dict(kwargs, implementation=implementation)
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
    traced = ember.function(lambda t: ours(t))
    np.testing.assert_allclose(np.asarray(traced(x)), np.asarray(ours(x)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("implementation", [1, 2, 3])
@pytest.mark.parametrize("name, shape, kwargs", [CASES[2], CASES[6]])
def test_kernel_gradient_matches_finite_differences(implementation, name, shape, kwargs):
    layer = getattr(layers, name)(implementation=implementation, dtype="float64", **kwargs)
    x = RNG.normal(size=shape)
    layer.build(shape)
    kernel = RNG.normal(size=tuple(layer.kernel.shape))

    layer.kernel.assign(kernel)
    with ember.GradientTape() as tape:
        loss = ember.reduce_sum(ember.sin(layer(x)))
    analytic = np.asarray(tape.gradient(loss, layer.kernel)).ravel()
    numeric = np.zeros(kernel.size)
    eps = 1e-6
    for i in range(kernel.size):
        values = []
        for sign in (1, -1):
            shifted = kernel.copy().ravel()
            shifted[i] += sign * eps
            layer.kernel.assign(shifted.reshape(kernel.shape))
            values.append(float(ember.reduce_sum(ember.sin(layer(x)))))
        numeric[i] = (values[0] - values[1]) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("implementation", [1, 2, 3])
def test_in_a_model_with_an_unknown_batch_trains(implementation):
    model = ember.keras.Sequential([layers.LocallyConnected2D(2, 2, implementation=implementation,
                                                              input_shape=(4, 4, 1)),
                                    layers.Flatten(), layers.Dense(1)])
    model.compile("sgd", "mse")
    x = RNG.normal(size=(8, 4, 4, 1)).astype(np.float32)
    history = model.fit(x, x.sum(axis=(1, 2)), epochs=3, batch_size=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize("implementation", [1, 2, 3])
def test_in_a_model_weights_round_trip_from_tf_keras(implementation):
    def build(keras):
        return keras.Sequential([keras.layers.LocallyConnected2D(3, 2, implementation=implementation,
                                                                 input_shape=(5, 5, 2)),
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
    layers.LocallyConnected2D(2, 3, padding="same", implementation=2)  # "same" is refused by implementation 1 only
    with pytest.raises(ValueError, match="<= 0"):
        layers.LocallyConnected1D(2, 5)(np.zeros((1, 3, 2), np.float32))
    with pytest.raises(ValueError):
        layers.LocallyConnected2D(2, 2)(np.zeros((1, 4, 4), np.float32))


@pytest.mark.parametrize("implementation", [1, 2, 3])
def test_mixed_precision_computes_in_float16_as_tf_keras(implementation):
    x = RNG.normal(size=(2, 5, 4, 2)).astype(np.float32)
    ember.keras.mixed_precision.set_global_policy("mixed_float16")
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        theirs = tf_keras.layers.LocallyConnected2D(3, 2, implementation=implementation)
        their_out = theirs(x)
        ours = layers.LocallyConnected2D(3, 2, implementation=implementation)
        ours.build(x.shape)
        ours.set_weights(theirs.get_weights())
        out = ours(x)
    finally:
        ember.keras.mixed_precision.set_global_policy("float32")
        tf_keras.mixed_precision.set_global_policy("float32")
    assert out.dtype == ember.float16 and ours.kernel.dtype == ember.float32
    np.testing.assert_allclose(np.asarray(out, np.float32), their_out.numpy().astype(np.float32), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("implementation", [1, 2, 3])
def test_a_tf_keras_hdf5_model_loads_with_each_implementation(tmp_path, implementation):
    theirs = tf_keras.Sequential([tf_keras.layers.LocallyConnected1D(2, 3, implementation=implementation,
                                                                     input_shape=(7, 3)),
                                  tf_keras.layers.Flatten(), tf_keras.layers.Dense(1)])
    path = str(tmp_path / "model.h5")
    theirs.save(path)
    ours = ember.keras.models.load_model(path)
    assert ours.layers[0].implementation == implementation
    x = RNG.normal(size=(2, 7, 3)).astype(np.float32)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-5)

"""Cross-entropies of a Keras sigmoid's or softmax's output use its logits, as tf_keras' do (``_keras_logits``):
their value and gradient stay finite where the probabilities round to 0 or 1, and a model whose output layer
saturates still trains. Each case runs in ember and in tf_keras (Keras 2) and compares values and gradients."""

import warnings

import numpy as np
import pytest
import tensorflow as real_tf
import tf_keras

import ember as tf

LOGITS = {
    "moderate": np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]], np.float32),
    "saturated": np.array([[40.0, -35.0, 2.0], [-60.0, 90.0, 0.5]], np.float32),
}
ONE_HOT = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
SPARSE = np.array([1, 0])
BINARY = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]], np.float32)


def _cases(keras):
    losses, backend = keras.losses, keras.backend
    return {
        "binary_crossentropy": ("sigmoid", BINARY, lambda y, p, **k: losses.binary_crossentropy(y, p, **k)),
        "binary_crossentropy_smoothed": ("sigmoid", BINARY,
                                         lambda y, p, **k: losses.binary_crossentropy(y, p, label_smoothing=0.1, **k)),
        "BinaryCrossentropy": ("sigmoid", BINARY, lambda y, p, **k: losses.BinaryCrossentropy(**k)(y, p)),
        "binary_focal_crossentropy": ("sigmoid", BINARY,
                                      lambda y, p, **k: losses.binary_focal_crossentropy(y, p, gamma=2.0, **k)),
        "backend_binary_crossentropy": ("sigmoid", BINARY, lambda y, p, **k: backend.binary_crossentropy(y, p, **k)),
        "categorical_crossentropy": ("softmax", ONE_HOT, lambda y, p, **k: losses.categorical_crossentropy(y, p, **k)),
        "CategoricalCrossentropy": ("softmax", ONE_HOT,
                                    lambda y, p, **k: losses.CategoricalCrossentropy(label_smoothing=0.2, **k)(y, p)),
        "sparse_categorical_crossentropy": ("softmax", SPARSE,
                                            lambda y, p, **k: losses.sparse_categorical_crossentropy(y, p, **k)),
        "SparseCategoricalCrossentropy": ("softmax", SPARSE,
                                          lambda y, p, **k: losses.SparseCategoricalCrossentropy(**k)(y, p)),
        "backend_categorical_crossentropy": ("softmax", ONE_HOT,
                                             lambda y, p, **k: backend.categorical_crossentropy(y, p, **k)),
    }


def _value_and_gradient(lib, keras, case, logits, from_logits=False):
    activation, labels, loss = _cases(keras)[case]
    x = lib.constant(logits)
    with lib.GradientTape() as tape:
        tape.watch(x)
        value = loss(lib.constant(labels), getattr(keras.activations, activation)(x), from_logits=from_logits)
    return value.numpy(), tape.gradient(value, x).numpy()


@pytest.mark.parametrize("scale", sorted(LOGITS))
@pytest.mark.parametrize("case", sorted(_cases(tf.keras)))
def test_loss_of_an_activation_output_uses_its_logits_as_tf_keras(case, scale):
    ours = _value_and_gradient(tf, tf.keras, case, LOGITS[scale])
    theirs = _value_and_gradient(real_tf, tf_keras, case, LOGITS[scale])
    assert np.all(np.isfinite(ours[0])) and np.all(np.isfinite(ours[1]))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"])
def test_from_logits_on_an_activation_output_warns_and_uses_the_logits(case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = _value_and_gradient(tf, tf.keras, case, LOGITS["moderate"], from_logits=True)
    assert any("from_logits" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _value_and_gradient(real_tf, tf_keras, case, LOGITS["moderate"], from_logits=True)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_plain_probabilities_are_still_clipped():
    probabilities = np.array([[1.0, 0.0, 0.5]], np.float32)
    labels = np.array([[0.0, 1.0, 1.0]], np.float32)
    ours = tf.keras.losses.binary_crossentropy(labels, tf.constant(probabilities)).numpy()
    theirs = tf_keras.losses.binary_crossentropy(labels, real_tf.constant(probabilities)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def _saturating_model(keras, activation, units):
    return keras.Sequential([
        keras.layers.Dense(4, kernel_initializer="ones", activation="relu", input_shape=(3,)),
        keras.layers.Dense(units, kernel_initializer=keras.initializers.Constant(3.0), activation=activation),
    ])


@pytest.mark.parametrize("activation, units, loss, labels", [
    ("sigmoid", 1, "binary_crossentropy", np.array([0.0, 1.0, 0.0, 1.0], np.float32)),
    ("softmax", 3, "sparse_categorical_crossentropy", np.array([0, 1, 2, 1])),
    ("softmax", 3, "categorical_crossentropy", np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]),
])
def test_a_saturated_output_layer_trains_as_in_tf_keras(activation, units, loss, labels):
    x = np.array([[4.0, 2.0, 1.0], [3.0, 5.0, 0.0], [1.0, 1.0, 6.0], [2.0, 2.0, 2.0]], np.float32)
    histories = []
    for keras in (tf.keras, tf_keras):
        model = _saturating_model(keras, activation, units)
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss)
        histories.append(model.fit(x, labels, batch_size=4, epochs=3, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-4)
    assert histories[0][-1] < histories[0][0]


@pytest.mark.parametrize("loss", ["sparse_categorical_crossentropy", "categorical_crossentropy"])
def test_a_model_ending_in_tf_nn_softmax_trains_on_its_logits_as_tf_keras(loss):
    """Inside fit's function tf_keras takes any Softmax op's input as the logits (not only a Keras
    activation's), so a saturated subclassed model still learns."""
    x = np.array([[4.0, 2.0, 1.0], [3.0, 5.0, 0.0], [1.0, 1.0, 6.0], [2.0, 2.0, 2.0]], np.float32)
    labels = np.array([0, 1, 2, 1])
    if loss == "categorical_crossentropy":
        labels = np.eye(3, dtype=np.float32)[labels]
    histories = []
    for lib, keras in ((tf, tf.keras), (real_tf, tf_keras)):
        class Model(keras.Model):
            def __init__(self):
                super().__init__()
                self.hidden = keras.layers.Dense(4, kernel_initializer="ones", activation="relu")
                self.out = keras.layers.Dense(3, kernel_initializer=keras.initializers.Constant(3.0))

            def call(self, inputs):
                return lib.nn.softmax(self.out(self.hidden(inputs)))

        model = Model()
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss)
        histories.append(model.fit(x * 10, labels, batch_size=4, epochs=3, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-4)


def test_softmax_over_another_axis_is_not_taken_for_logits():
    x = np.array([[40.0, -35.0, 2.0], [-60.0, 90.0, 0.5]], np.float32)
    results = []
    for lib, keras in ((tf, tf.keras), (real_tf, tf_keras)):
        step = lib.function(lambda z: keras.losses.categorical_crossentropy(ONE_HOT, lib.nn.softmax(z, axis=0)))
        results.append(step(lib.constant(x)).numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)

"""keras.optimizers.legacy (python/ember/keras/optimizers/legacy.py) against tf_keras.optimizers.legacy: the
same gradients applied for several steps, with and without ``decay``, give the same weights; ``lr``,
get_config and the arguments the legacy classes refuse."""
import numpy as np
import pytest
import tensorflow
import tf_keras

import ember

RNG = np.random.default_rng(11)
START = RNG.standard_normal((3, 2)).astype(np.float32)
GRADS = [RNG.standard_normal((3, 2)).astype(np.float32) for _ in range(5)]

CONFIGS = [
    ("SGD", {"learning_rate": 0.1}), ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "decay": 0.05}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "nesterov": True}),
    ("Adam", {"learning_rate": 0.01}), ("Adam", {"learning_rate": 0.01, "decay": 0.1, "amsgrad": True}),
    ("Adamax", {"learning_rate": 0.01, "decay": 0.01}), ("Nadam", {"learning_rate": 0.01}),
    ("Nadam", {"learning_rate": 0.01, "schedule_decay": 0.1}),
    ("RMSprop", {"learning_rate": 0.01}), ("RMSprop", {"learning_rate": 0.01, "decay": 0.2, "centered": True}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.9}), ("Adagrad", {"learning_rate": 0.1, "decay": 0.1}),
    ("Adadelta", {"learning_rate": 1.0}), ("Ftrl", {"learning_rate": 0.1}),
]


def _train(tf, module, name, options):
    optimizer = getattr(module.optimizers.legacy, name)(**options)
    variable = tf.Variable(START)
    for g in GRADS:
        optimizer.apply_gradients([(tf.constant(g), variable)])
    return variable.numpy()


@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{sorted(o)}" for n, o in CONFIGS])
def test_steps_match_tf_keras(name, options):
    np.testing.assert_allclose(_train(ember, ember.keras, name, options),
                               _train(tensorflow, tf_keras, name, options), rtol=2e-5, atol=2e-6)


def test_lr_spelling_config_and_refusals():
    with pytest.warns(UserWarning, match="lr"):
        optimizer = ember.keras.optimizers.legacy.Adam(lr=0.01, decay=0.1)
    theirs = tf_keras.optimizers.legacy.Adam(learning_rate=0.01, decay=0.1).get_config()
    ours = optimizer.get_config()
    assert {k: ours[k] for k in theirs if k != "name"} == pytest.approx({k: theirs[k] for k in theirs if k != "name"})
    assert ember.keras.optimizers.legacy.Adam.from_config(ours).decay == 0.1
    assert ember.keras.optimizers.legacy.Adam().get_config()["name"] == "Adam"  # as tf_keras' legacy names
    with pytest.raises(ValueError, match="decay"):
        ember.keras.optimizers.legacy.SGD(decay=-1.0)
    with pytest.raises(TypeError, match="weight_decay"):
        ember.keras.optimizers.legacy.SGD(weight_decay=0.1)


def test_a_legacy_optimizer_trains_a_keras_model():
    x = RNG.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model = ember.keras.Sequential([ember.keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=ember.keras.optimizers.legacy.Adam(0.05, decay=1e-3), loss="mse")
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0]

"""Optimizer state that tf_keras (Keras 2) checkpointed restores into ember's optimizers. tf_keras lists an
optimizer's variables without the learning rate (its ``_variables/1`` is the first slot), TensorFlow 2.21's
Keras 3 — whose layout ember writes — lists the learning rate second; ember reads either. Each case: tf_keras
takes two steps on three variables (two of one shape, so a slot restored into the wrong variable would not
be caught by a shape check), writes a checkpoint; ember restores it, before and after its slots exist, and
its third step equals tf_keras's."""

import numpy as np
import pytest
import tensorflow as real_tf
import tf_keras

import ember

SHAPES = [(3, 4), (5,), (3, 4)]
RNG = np.random.default_rng(7)
INIT = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
GRADS = [[RNG.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(3)]

CASES = {
    "sgd_momentum": ("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
    "sgd_nesterov": ("SGD", {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True}),
    "adam": ("Adam", {"learning_rate": 0.01}),
    "adam_amsgrad": ("Adam", {"learning_rate": 0.01, "amsgrad": True}),
    "adamw": ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.01}),
    "rmsprop_centered": ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    "adagrad": ("Adagrad", {"learning_rate": 0.05}),
    "adamax": ("Adamax", {"learning_rate": 0.01}),
    "nadam": ("Nadam", {"learning_rate": 0.01}),
    "adadelta": ("Adadelta", {"learning_rate": 0.5}),
}


def _tf_keras_run(cls, kwargs, directory):
    variables = [real_tf.Variable(v) for v in INIT]
    optimizer = getattr(tf_keras.optimizers, cls)(**kwargs)
    for k in range(2):
        optimizer.apply_gradients(zip([real_tf.constant(g) for g in GRADS[k]], variables))
    path = real_tf.train.Checkpoint(optimizer=optimizer, v=variables).write(str(directory / "ck"))
    optimizer.apply_gradients(zip([real_tf.constant(g) for g in GRADS[2]], variables))
    return path, [v.numpy() for v in variables]


@pytest.mark.parametrize("key", sorted(CASES))
@pytest.mark.parametrize("slots_first", [False, True], ids=["restore_on_create", "slots_exist"])
def test_tf_keras_optimizer_state_restores(tmp_path, key, slots_first):
    cls, kwargs = CASES[key]
    path, want = _tf_keras_run(cls, kwargs, tmp_path)
    variables = [ember.Variable(np.zeros(s, np.float32)) for s in SHAPES]
    optimizer = getattr(ember.keras.optimizers, cls)(**kwargs)
    if slots_first:
        optimizer.build(variables)
    status = ember.train.Checkpoint(optimizer=optimizer, v=variables).read(path)
    optimizer.apply_gradients(zip([ember.constant(g) for g in GRADS[2]], variables))
    status.assert_consumed()
    assert int(optimizer.iterations.numpy()) == 3
    for got, expected in zip(variables, want):
        np.testing.assert_allclose(got.numpy(), expected, rtol=2e-5, atol=2e-6)

"""Keras under MirroredStrategy: a model made in strategy.scope() trains with fit (each global batch split
across the replicas, gradients all-reduced) to the weights one device reaches on the same global batches;
evaluate and predict give the single-device results."""

import numpy as np
import pytest

import ember as tf
from distribute_util import logical_cpus


def _data(n=128, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    labels = (x[:, :3].sum(axis=1) > 0).astype(np.int64)
    return x, labels


def _model():
    return tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(6,)),
                                tf.keras.layers.Dense(2)])


def _compile(model, optimizer):
    model.compile(optimizer=optimizer, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["function", "eager"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("replicas", [2, 4])
def test_fit_matches_single_device(replicas, optimizer, run_eagerly):
    x, y = _data()
    strategy = tf.distribute.MirroredStrategy(logical_cpus(replicas))
    with strategy.scope():
        model = _model()
        _compile(model, optimizer)
    model.run_eagerly = run_eagerly
    assert model.distribute_strategy is strategy
    reference = _model()
    reference.set_weights(model.get_weights())
    _compile(reference, optimizer)

    history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0, validation_data=(x[:64], y[:64]))
    ref_history = reference.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0,
                                validation_data=(x[:64], y[:64]))
    for w, r in zip(model.trainable_variables, reference.trainable_variables):
        assert isinstance(w, tf.distribute.MirroredVariable)
        for component in w.values:
            np.testing.assert_allclose(component.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(history.history[key], ref_history.history[key], rtol=1e-5, atol=1e-6)
    assert int(model.optimizer.iterations) == int(reference.optimizer.iterations) == 12

    logs = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    ref_logs = reference.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    for key in ("loss", "accuracy"):
        np.testing.assert_allclose(logs[key], ref_logs[key], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, batch_size=32, verbose=0),
                               reference.predict(x, batch_size=32, verbose=0), rtol=1e-5, atol=1e-6)


def test_fit_on_a_dataset_and_uneven_last_batch():
    x, y = _data(100)
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        model = _model()
        _compile(model, tf.keras.optimizers.SGD(0.05))
    reference = _model()
    reference.set_weights(model.get_weights())
    _compile(reference, tf.keras.optimizers.SGD(0.05))
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(20)
    model.fit(dataset, epochs=2, verbose=0)
    reference.fit(dataset, epochs=2, verbose=0)
    for w, r in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
    # 100 rows in batches of 32: the last batch of 4 splits 2 + 2, still the global mean
    predictions = model.predict(x, batch_size=32, verbose=0)
    assert predictions.shape == (100, 2)
    np.testing.assert_allclose(predictions, reference.predict(x, batch_size=32, verbose=0), rtol=1e-5, atol=1e-6)


def test_metric_variables_are_synchronized_on_read():
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        metric = tf.keras.metrics.Mean()
    assert isinstance(metric.variables[0], tf.distribute.SyncOnReadVariable)
    strategy.run(lambda: metric.update_state(
        tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) * 2.0))
    assert float(metric.result()) == 1.0  # (0 + 2) / 2
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_each_replica_runs_train_step_on_its_part():
    seen = []

    class Recording(tf.keras.Sequential):
        def train_step(self, data):
            context = tf.distribute.get_replica_context()
            seen.append((context.replica_id_in_sync_group, int(data[0].shape[0]), data[0].device))
            return super().train_step(data)

    x, y = _data(64)
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        model = Recording([tf.keras.layers.Dense(2, input_shape=(6,))])
        _compile(model, "sgd")
    model.run_eagerly = True
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    assert [(r, n) for r, n, _ in seen] == [(0, 16), (1, 16)] * 2

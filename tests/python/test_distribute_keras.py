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


def test_distributed_training_guide_cells():
    """The cells of TensorFlow's "Distributed training with TensorFlow" guide (MirroredStrategy on two CPUs)."""
    mirrored_strategy = tf.distribute.MirroredStrategy(devices=logical_cpus(2))
    tf.distribute.MirroredStrategy(devices=logical_cpus(2), cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())
    with mirrored_strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,),
                                                           kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
        model.compile(loss="mse", optimizer="sgd")
    dataset = tf.data.Dataset.from_tensors(([1.0], [1.0])).repeat(100).batch(10)
    model.fit(dataset, epochs=2, verbose=0)
    model.evaluate(dataset, verbose=0)
    inputs, targets = np.ones((100, 1)), np.ones((100, 1))
    history = model.fit(inputs, targets, epochs=2, batch_size=10, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    assert mirrored_strategy.num_replicas_in_sync == 2

    global_batch_size = 5 * mirrored_strategy.num_replicas_in_sync
    with mirrored_strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,),
                                                           kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
        optimizer = tf.keras.optimizers.SGD()
    dataset = tf.data.Dataset.from_tensors(([1.0], [1.0])).repeat(1000).batch(global_batch_size)
    dist_dataset = mirrored_strategy.experimental_distribute_dataset(dataset)
    loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def compute_loss(labels, predictions):
        per_example_loss = loss_object(labels, predictions)
        return tf.nn.compute_average_loss(per_example_loss, global_batch_size=global_batch_size)

    def train_step(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(features, training=True)
            loss = compute_loss(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def distributed_train_step(dist_inputs):
        per_replica_losses = mirrored_strategy.run(train_step, args=(dist_inputs,))
        return mirrored_strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

    losses = [float(distributed_train_step(dist_inputs)) for dist_inputs in dist_dataset]
    iterator = iter(dist_dataset)
    losses += [float(distributed_train_step(next(iterator))) for _ in range(10)]
    assert len(losses) == 110 and losses[-1] < losses[0]
    assert int(optimizer.iterations) == 110


def test_metric_result_inside_a_replica_is_global():
    # Keras' "customizing what happens in fit": train_step returns {m.name: m.result()} itself.
    class Custom(tf.keras.Sequential):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x, y, y_pred)
            self.optimizer.apply_gradients(zip(tape.gradient(loss, self.trainable_variables),
                                               self.trainable_variables))
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    x, y = _data(64)
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        model = Custom([tf.keras.layers.Dense(2, input_shape=(6,))])
        _compile(model, "sgd")
    reference = Custom([tf.keras.layers.Dense(2, input_shape=(6,))])
    reference.set_weights(model.get_weights())
    _compile(reference, "sgd")
    logs = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0).history
    ref_logs = reference.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0).history
    np.testing.assert_allclose(logs["accuracy"], ref_logs["accuracy"], rtol=1e-6)
    strategy_metric = tf.keras.metrics.Mean()
    with strategy.scope():
        strategy_metric = tf.keras.metrics.Mean()
    out = strategy.run(lambda: strategy_metric(tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group,
                                                       tf.float32) * 2.0))
    assert [float(t) for t in strategy.experimental_local_results(out)] == [1.0, 1.0]


def test_train_step_values_that_differ_per_replica_are_taken_from_the_first():
    class PerReplicaLogs(tf.keras.Sequential):
        def train_step(self, data):
            logs = super().train_step(data)
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group
            logs["replica"] = tf.constant(float(replica))
            logs["rows"] = tf.cast(tf.shape(data[0])[0], tf.float32)
            return logs

    x, y = _data(64)
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        model = PerReplicaLogs([tf.keras.layers.Dense(2, input_shape=(6,))])
        _compile(model, "sgd")
    history = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0).history
    assert history["replica"] == [0.0] and history["rows"] == [16.0]  # Keras 2 reduces them with "first"

"""Data-parallel training with MirroredStrategy: gradients all-reduced once per step, each variable updated
once, the same weights as one device training on the global batch (eagerly and inside ember.function)."""

import numpy as np
import pytest

import ember as tf
from distribute_util import logical_cpus


def _data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    y = (x @ rng.standard_normal((5, 1)) + 0.1 * rng.standard_normal((n, 1))).astype(np.float32)
    return x, y


def _model():
    return tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(5,)),
                                tf.keras.layers.Dense(1)])


def _train(strategy, make_optimizer, use_function, steps=6, global_batch=16):
    x, y = _data()
    tf.keras.utils.set_random_seed(1)  # the same initial weights whatever ran before
    with strategy.scope():
        model = _model()
        optimizer = make_optimizer()
    initial = [w.copy() for w in model.get_weights()]

    def replica_step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum(tf.square(model(xb) - yb), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def step(batch):
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce("SUM", per_replica, axis=None)

    if use_function:
        step = tf.function(step)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch).take(steps)
    losses = [float(step(batch)) for batch in strategy.experimental_distribute_dataset(dataset)]
    return initial, model, optimizer, losses


def _reference(initial, make_optimizer, steps=6, global_batch=16):
    x, y = _data()
    model = _model()
    model.set_weights(initial)
    optimizer = make_optimizer()
    losses = []
    for i in range(steps):
        xb, yb = x[i * global_batch:(i + 1) * global_batch], y[i * global_batch:(i + 1) * global_batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(model(xb) - yb), axis=1))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    return model, optimizer, losses


OPTIMIZERS = {"sgd": lambda: tf.keras.optimizers.SGD(0.1),
              "adam": lambda: tf.keras.optimizers.Adam(0.01)}

# Replicas sum their gradients in another order than one device does. SGD passes a rounding difference on
# unchanged; Adam divides each gradient by its own running magnitude, so a component whose per-example terms
# nearly cancel moves by a different fraction of its step (a CI machine saw 9e-6 with lr 0.01). A real fault
# (a missed all-reduce, an update applied twice) is a whole step off, 0.01, so 1e-4 still catches it.
WEIGHT_ATOL = {"sgd": 1e-6, "adam": 1e-4}


@pytest.mark.parametrize("use_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("replicas", [2, 4])
def test_custom_loop_matches_single_device(replicas, name, use_function):
    strategy = tf.distribute.MirroredStrategy(logical_cpus(replicas))
    initial, model, optimizer, losses = _train(strategy, OPTIMIZERS[name], use_function)
    ref_model, ref_optimizer, ref_losses = _reference(initial, OPTIMIZERS[name])
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    for w, r in zip(model.trainable_variables, ref_model.trainable_variables):
        assert isinstance(w, tf.distribute.MirroredVariable)
        for component in w.values:  # every copy took the same single update
            np.testing.assert_allclose(component.numpy(), r.numpy(), rtol=1e-5, atol=WEIGHT_ATOL[name])
    assert int(optimizer.iterations) == int(ref_optimizer.iterations) == 6


def test_compat_v1_optimizer_applies_once():
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)

    def fn():
        scale = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * scale)
        optimizer.apply_gradients([(tape.gradient(loss, v), v)])

    strategy.run(fn)
    # gradients 1 and 2 per element, summed to 3: one step of 0.5 * 3
    assert [c.numpy().tolist() for c in v.values] == [[-0.5, 0.5], [-0.5, 0.5]]


def test_checkpoint_saves_one_copy_and_restores_every_copy(tmp_path):
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
        s = tf.Variable(3.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)
    path = tf.train.Checkpoint(v=v, s=s).write(str(tmp_path / "ckpt"))
    names = sorted(name for name, _ in tf.train.list_variables(path))
    assert names == ["_CHECKPOINTABLE_OBJECT_GRAPH", "s/.ATTRIBUTES/VARIABLE_VALUE", "v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert tf.train.load_checkpoint(path).get_tensor("s/.ATTRIBUTES/VARIABLE_VALUE") == 6.0  # the aggregated value
    v.assign([0.0, 0.0])
    s.assign(0.0)
    tf.train.Checkpoint(v=v, s=s).read(path)
    assert [c.numpy().tolist() for c in v.values] == [[1.0, 2.0], [1.0, 2.0]]
    assert s.numpy() == 6.0 and [c.numpy() for c in s.values] == [3.0, 3.0]
    # a single-device model reads what the strategy wrote
    plain = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(v=plain).read(path).expect_partial()
    assert plain.numpy().tolist() == [1.0, 2.0]


def test_custom_training_guide_loop():
    """The loop of TensorFlow's "Custom training with tf.distribute.Strategy" guide, on small data: losses with
    compute_average_loss and scale_regularization_loss, metrics updated in the replicas and read outside,
    a checkpoint of the model and the optimizer; the result matches one device."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = rng.integers(0, 3, 64).astype(np.int64)

    def create_model():
        return tf.keras.Sequential([
            tf.keras.layers.Dense(16, activation="relu", input_shape=(8,),
                                  kernel_regularizer=tf.keras.regularizers.l2(0.01)),
            tf.keras.layers.Dense(3)])

    def run(strategy, initial=None):
        with strategy.scope():
            loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
            train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
            model = create_model()
            optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
            checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)
        if initial is not None:
            model.set_weights(initial)
        start = [w.copy() for w in model.get_weights()]

        def compute_loss(labels, predictions, model_losses):
            loss = tf.nn.compute_average_loss(loss_object(labels, predictions))
            if model_losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
            return loss

        def train_step(inputs):
            images, labels = inputs
            with tf.GradientTape() as tape:
                predictions = model(images, training=True)
                loss = compute_loss(labels, predictions, model.losses)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            train_accuracy.update_state(labels, predictions)
            return loss

        @tf.function
        def distributed_train_step(dataset_inputs):
            per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

        dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(16))
        epochs = []
        for _ in range(2):
            total_loss, num_batches = 0.0, 0
            for batch in dataset:
                total_loss += float(distributed_train_step(batch))
                num_batches += 1
            epochs.append((total_loss / num_batches, float(train_accuracy.result())))
            train_accuracy.reset_state()
        return start, model, epochs, checkpoint

    start, model, epochs, checkpoint = run(tf.distribute.MirroredStrategy(logical_cpus(2)))
    _, reference, ref_epochs, _ = run(tf.distribute.get_strategy(), initial=start)
    np.testing.assert_allclose(epochs, ref_epochs, rtol=1e-5, atol=1e-6)
    for w, r in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
    assert int(checkpoint.optimizer.iterations) == 8


class _TwinWorkerOps(tf.distribute.ReductionToOneDevice):
    """Cross-device ops of a pretend second process that holds the same values as this one: the global sum is
    twice the local one (what a cross-process all-reduce returns when both workers compute the same)."""

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        values = list(per_replica_value.values) if isinstance(per_replica_value, tf.distribute.DistributedValues) \
            else [per_replica_value]
        total = self._local_sum(values, destinations[0]) * 2
        if reduce_op == tf.distribute.ReduceOp.MEAN:
            total = total / (2.0 * len(values))
        return self._broadcast(total, destinations)


class _TwinWorkerStrategy(tf.distribute.MirroredStrategy):
    """The shape of a multi-process strategy built on MirroredStrategy (docs/distribute.md, section 5)."""

    def __init__(self):
        super().__init__(["cpu:0"], cross_device_ops=_TwinWorkerOps())
        self.extended._num_replicas_in_sync = lambda: 2


def test_a_multi_process_subclass_needs_only_cross_device_ops_and_the_count():
    x, y = _data()
    strategy = _TwinWorkerStrategy()
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        model = _model()
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    reference = _model()
    reference.set_weights(model.get_weights())
    reference.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    # Each worker's batch of 16 is its half of a global batch of 32 whose other half is the same data: the
    # global mean gradient is the local one.
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    reference.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    for w, r in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
    assert float(strategy.reduce("SUM", tf.constant(3.0), axis=None)) == 6.0
    assert float(strategy.reduce("MEAN", tf.constant([1.0, 3.0]), axis=0)) == 2.0
    out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.constant(1.0)))
    assert float(out) == 2.0

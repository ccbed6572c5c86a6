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
            np.testing.assert_allclose(component.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)
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

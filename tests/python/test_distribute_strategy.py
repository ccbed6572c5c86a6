"""tf.distribute: contexts, MirroredStrategy's variables, run/reduce/gather, distributed datasets.

Expected values are TensorFlow 2.21's with the same calls on two (or four) logical CPUs."""

import numpy as np
import pytest

import ember as tf
from distribute_util import logical_cpus


@pytest.fixture
def strategy():
    return tf.distribute.MirroredStrategy(logical_cpus(2))


def _rid():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def test_default_strategy_and_contexts(strategy):
    default = tf.distribute.get_strategy()
    assert not tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()
    context = tf.distribute.get_replica_context()
    assert context is not None and context.num_replicas_in_sync == 1 and context.replica_id_in_sync_group == 0
    assert default.num_replicas_in_sync == 1 and default.run(lambda x: x + 1, args=(1,)) == 2
    assert tf.distribute.get_cross_replica_context() is None
    with strategy.scope():
        assert tf.distribute.get_strategy() is strategy and tf.distribute.has_strategy()
        assert tf.distribute.in_cross_replica_context() and tf.distribute.get_replica_context() is None
        assert tf.distribute.get_cross_replica_context() is strategy
    assert tf.distribute.get_strategy() is default
    tf.distribute.experimental_set_strategy(strategy)
    try:
        assert tf.distribute.get_strategy() is strategy
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert not tf.distribute.has_strategy()


def test_devices_are_canonical_and_checked(strategy):
    assert strategy.num_replicas_in_sync == 2
    assert strategy.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",
                                                "/job:localhost/replica:0/task:0/device:CPU:1")
    with pytest.raises(ValueError, match="No duplicates"):
        tf.distribute.MirroredStrategy(["cpu:0", "/CPU:0"])
    with pytest.raises(ValueError, match="cannot parse"):
        tf.distribute.MirroredStrategy(["cpu"])
    assert isinstance(strategy.extended._cross_device_ops, tf.distribute.CrossDeviceOps)
    # the default: every logical CPU (TensorFlow 2.21 takes both CPUs of a CPU split in two)
    logical_cpus(4)
    names = [d.name.rsplit("/", 1)[-1] for d in tf.config.list_logical_devices("CPU")]
    assert [d.rsplit("/", 1)[-1] for d in tf.distribute.MirroredStrategy().extended.worker_devices] == names
    assert len(names) == 4
    with pytest.raises(ValueError, match="unknown device"):
        tf.distribute.MirroredStrategy(["cpu:0", "cpu:9"])


def test_mixing_strategies_is_an_error(strategy):
    other = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope(), pytest.raises(ValueError, match="Mixing different"):
        with other.scope():
            pass


def test_mirrored_variable_components_and_repr(strategy):
    with strategy.scope():
        v = tf.Variable([1.0, 2.0], name="w")
    assert isinstance(v, tf.distribute.MirroredVariable) and isinstance(v, tf.Variable)
    assert [c.name for c in v.values] == ["w:0", "w/replica_1:0"]
    assert v.aggregation == tf.VariableAggregation.NONE
    assert v.synchronization == tf.VariableSynchronization.ON_WRITE
    assert "MirroredVariable:{" in repr(v)
    assert strategy.extended.variable_created_in_scope(v)
    assert not strategy.extended.variable_created_in_scope(tf.Variable(1.0))
    v.assign_add([1.0, 1.0])  # cross-replica: every copy
    assert [c.numpy().tolist() for c in v.values] == [[2.0, 3.0], [2.0, 3.0]]
    assert (v * 2).numpy().tolist() == [4.0, 6.0]


def test_random_initial_value_is_mirrored(strategy):
    with strategy.scope():
        v = tf.Variable(tf.random.normal([3, 3]))
        w = tf.Variable(lambda: tf.random.normal([3, 3]))
    for var in (v, w):
        np.testing.assert_array_equal(var.values[0].numpy(), var.values[1].numpy())


def test_replica_context_writes_follow_aggregation(strategy):
    # TensorFlow 2.21: SUM adds every replica's delta, MEAN their mean, ONLY_FIRST_REPLICA replica 0's,
    # NONE writes each replica's own copy.
    with strategy.scope():
        none = tf.Variable(1.0)
        total = tf.Variable(1.0, aggregation=tf.VariableAggregation.SUM)
        mean = tf.Variable(1.0, aggregation=tf.VariableAggregation.MEAN)
        first = tf.Variable(1.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

    def fn():
        delta = tf.cast(_rid(), tf.float32) + 1.0
        total.assign_add(delta)
        mean.assign_add(delta)
        first.assign_add(delta)
        none.assign(tf.cast(_rid(), tf.float32))

    strategy.run(fn)
    assert total.numpy() == 4.0 and mean.numpy() == 2.5 and first.numpy() == 2.0
    assert [c.numpy() for c in total.values] == [4.0, 4.0]
    assert [c.numpy() for c in none.values] == [0.0, 1.0]
    strategy.run(lambda: none.assign_add(1.0))
    assert [c.numpy() for c in none.values] == [1.0, 2.0]


def test_sync_on_read_variable(strategy):
    with strategy.scope():
        v = tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)
    assert isinstance(v, tf.distribute.SyncOnReadVariable) and v.numpy() == 2.0
    v.assign(4.0)
    assert v.numpy() == 4.0 and [c.numpy() for c in v.values] == [2.0, 2.0]
    strategy.run(lambda: v.assign_add(1.0))
    assert v.numpy() == 6.0
    local = strategy.run(lambda: v.read_value())
    assert [t.numpy() for t in strategy.experimental_local_results(local)] == [3.0, 3.0]


def test_run_all_reduce_and_per_replica(strategy):
    def fn(x):
        context = tf.distribute.get_replica_context()
        return context.all_reduce("sum", x * tf.cast(_rid() + 1, tf.float32)), _rid()

    reduced, ids = strategy.run(fn, args=(tf.constant(2.0),))
    assert isinstance(reduced, tf.distribute.PerReplica) and "PerReplica:{" in repr(reduced)
    assert [t.numpy() for t in strategy.experimental_local_results(reduced)] == [6.0, 6.0]
    assert strategy.experimental_local_results(ids) == (0, 1)
    assert strategy.experimental_local_results(tf.constant(1.0))[0].numpy() == 1.0


def test_all_reduce_mean_and_nested(strategy):
    def fn():
        x = tf.fill([2], tf.cast(_rid(), tf.float32))
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, {"a": x, "b": [x * 2]})

    out = strategy.run(fn)
    for part in strategy.experimental_local_results(out):
        assert part["a"].numpy().tolist() == [0.5, 0.5] and part["b"][0].numpy().tolist() == [1.0, 1.0]


def test_run_inside_function_traces_each_replica_on_its_device(strategy):
    @tf.function
    def step(x):
        return strategy.run(lambda x: x * 2 + tf.cast(_rid(), tf.float32), args=(x,))

    out = step(tf.constant(1.0))
    assert [t.numpy() for t in strategy.experimental_local_results(out)] == [2.0, 3.0]
    out = step(tf.constant(2.0))
    assert [t.numpy() for t in strategy.experimental_local_results(out)] == [4.0, 5.0]


def test_all_reduce_inside_function(strategy):
    @tf.function
    def step(x):
        def fn(x):
            return tf.distribute.get_replica_context().all_reduce("sum", x * tf.cast(_rid() + 1, tf.float32))

        return strategy.reduce("MEAN", strategy.run(fn, args=(x,)), axis=None)

    assert step(tf.constant(2.0)).numpy() == 6.0


def test_reduce_and_gather(strategy):
    per_replica = strategy.run(lambda: tf.ones([2, 3]) * tf.cast(_rid() + 1, tf.float32))
    assert strategy.reduce("SUM", per_replica, axis=0).numpy().tolist() == [6.0] * 3
    assert strategy.reduce("MEAN", per_replica, axis=0).numpy().tolist() == [1.5] * 3
    assert strategy.reduce("SUM", per_replica, axis=None).numpy().tolist() == [[3.0] * 3] * 2
    assert strategy.gather(per_replica, axis=0).numpy().tolist() == [[1.0] * 3] * 2 + [[2.0] * 3] * 2
    ids = strategy.run(lambda: tf.constant(_rid()))
    assert strategy.reduce(tf.distribute.ReduceOp.SUM, ids, axis=None).numpy() == 1
    assert strategy.reduce("MEAN", tf.constant(3.0), axis=None).numpy() == 3.0
    with pytest.raises(ValueError, match="non-DistributedValues"):
        strategy.reduce("SUM", tf.constant(3.0), axis=None)
    with pytest.raises(ValueError, match="reduce_op"):
        strategy.reduce("max", per_replica, axis=None)


def test_replica_error_propagates_and_run_recovers(strategy):
    def fn():
        if _rid() == 1:
            raise KeyError("replica one failed")
        return tf.distribute.get_replica_context().all_reduce("sum", tf.constant(1.0))

    with pytest.raises(KeyError, match="replica one failed"):
        strategy.run(fn)
    out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.constant(1.0)))
    assert [t.numpy() for t in strategy.experimental_local_results(out)] == [2.0, 2.0]


def test_replicas_must_make_the_same_merge_calls(strategy):
    def fn():
        if _rid() == 0:
            return tf.distribute.get_replica_context().all_reduce("sum", tf.constant(1.0))
        return tf.constant(0.0)

    with pytest.raises(RuntimeError, match="same cross-replica calls"):
        strategy.run(fn)


@pytest.mark.parametrize("replicas,batch,total,expected", [
    (2, 4, 10, [[2, 2], [2, 2], [1, 1]]),
    (2, 5, 5, [[3, 2]]),
    (4, 10, 17, [[3, 3, 3, 1], [2, 2, 2, 1]]),
    (4, 9, 11, [[3, 3, 3, 0], [1, 1, 0, 0]]),
    (4, 8, 13, [[2, 2, 2, 2], [2, 2, 1, 0]]),
])
def test_distribute_dataset_splits_as_tensorflow(replicas, batch, total, expected):
    strategy = tf.distribute.MirroredStrategy(logical_cpus(replicas))
    dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.range(total).batch(batch))
    sizes, rows = [], []
    for element in dataset:
        parts = strategy.experimental_local_results(element)
        sizes.append([int(p.shape[0]) for p in parts])
        rows.extend(v for p in parts for v in p.numpy().tolist())
    assert sizes == expected and rows == list(range(total))


def test_distribute_dataset_structures_and_iterator(strategy):
    data = tf.data.Dataset.from_tensor_slices(({"a": tf.range(4)}, tf.range(4))).batch(4)
    x, y = next(iter(strategy.experimental_distribute_dataset(data)))
    assert isinstance(x["a"], tf.distribute.PerReplica)
    assert [p.numpy().tolist() for p in y.values] == [[0, 1], [2, 3]]
    it = iter(strategy.experimental_distribute_dataset(tf.data.Dataset.range(4).batch(2)))
    assert [p.numpy().tolist() for p in next(it).values] == [[0], [1]]
    assert [p.numpy().tolist() for p in it.get_next().values] == [[2], [3]]
    with pytest.raises(StopIteration):
        next(it)


def test_distribute_datasets_from_function(strategy):
    contexts = []

    def dataset_fn(context):
        contexts.append(context)
        return tf.data.Dataset.range(6).batch(2)

    batches = [[p.numpy().tolist() for p in e.values] for e in strategy.distribute_datasets_from_function(dataset_fn)]
    assert batches == [[[0, 1], [2, 3]], [[4, 5], []]]
    (context,) = contexts
    assert (context.num_input_pipelines, context.input_pipeline_id, context.num_replicas_in_sync) == (1, 0, 2)
    assert context.get_per_replica_batch_size(8) == 4


def test_per_replica_argument_of_a_function_is_traced_once(strategy):
    traces = []

    @tf.function
    def step(batch):
        traces.append(1)
        return strategy.run(lambda b: tf.reduce_sum(b), args=(batch,))

    data = strategy.experimental_distribute_dataset(tf.data.Dataset.range(8).batch(4))
    sums = [[t.numpy() for t in strategy.experimental_local_results(step(b))] for b in data]
    assert sums == [[1, 5], [9, 13]] and len(traces) == 1


def test_one_device_strategy():
    strategy = tf.distribute.OneDeviceStrategy("cpu:0")
    assert strategy.num_replicas_in_sync == 1
    out = strategy.run(lambda: tf.constant(1.0) + tf.cast(_rid(), tf.float32))
    assert isinstance(out, tf.Tensor) and out.numpy() == 1.0
    with strategy.scope():
        v = tf.Variable(2.0)
        assert tf.distribute.get_strategy() is strategy
    assert strategy.reduce("SUM", out, axis=None).numpy() == 1.0 and v.numpy() == 2.0


@pytest.mark.parametrize("use_function", [False, True], ids=["eager", "function"])
def test_variables_created_inside_run_are_shared_by_the_replicas(strategy, use_function):
    with strategy.scope():
        layer = tf.keras.layers.Dense(3)

    def step(x):
        return strategy.run(lambda x: layer(x), args=(x,))

    if use_function:
        step = tf.function(step)
    out = step(tf.ones([2, 4]))
    assert len(layer.weights) == 2 and all(isinstance(w, tf.distribute.MirroredVariable) for w in layer.weights)
    assert [c.name for c in layer.kernel.values][1].endswith("kernel/replica_1:0")
    first, second = strategy.experimental_local_results(out)
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    np.testing.assert_allclose(first.numpy(), layer(tf.ones([2, 4])).numpy(), rtol=1e-6)


def test_run_kwargs_and_argument_checks(strategy):
    out = strategy.run(lambda a, b=1: a + b, args=(tf.constant(1.0),), kwargs={"b": tf.constant(2.0)})
    assert [t.numpy() for t in out.values] == [3.0, 3.0]
    with pytest.raises(TypeError, match="must be callable"):
        strategy.run(3)
    with pytest.raises(TypeError, match="args must be a tuple"):
        strategy.run(lambda x: x, args=tf.constant(1.0))


class _Recording(tf.distribute.ReductionToOneDevice):
    """Cross-device ops that record what goes through them (the channel a multi-process strategy replaces)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        self.calls.append(("reduce", reduce_op.name, len(per_replica_value.values), tuple(destinations)))
        return super().reduce_implementation(reduce_op, per_replica_value, destinations, options)

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        self.calls.append(("batch_reduce", reduce_op.name, len(value_destination_pairs)))
        return [super(_Recording, self).reduce_implementation(reduce_op, v, d, options)
                for v, d in value_destination_pairs]


def test_every_reduction_goes_through_the_cross_device_ops():
    ops = _Recording()
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2), cross_device_ops=ops)
    assert strategy.extended._cross_device_ops is ops
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
        total = tf.Variable(0.0, aggregation=tf.VariableAggregation.SUM)
        optimizer = tf.keras.optimizers.SGD(1.0)

    def fn():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * tf.cast(_rid() + 1, tf.float32))
        optimizer.apply_gradients([(tape.gradient(loss, v), v)])
        total.assign_add(1.0)
        return tf.distribute.get_replica_context().all_reduce("mean", tf.constant(1.0))

    out = strategy.run(fn)
    strategy.reduce("SUM", out, axis=None)
    kinds = [c[:2] for c in ops.calls]
    assert kinds == [("batch_reduce", "SUM"), ("reduce", "SUM"), ("batch_reduce", "MEAN"), ("reduce", "SUM")]
    assert ops.calls[0][2] == 1  # the one gradient, in one batch
    assert [c.numpy().tolist() for c in v.values] == [[-2.0, -1.0], [-2.0, -1.0]]  # gradients 1 + 2 summed
    assert total.numpy() == 2.0


def test_cross_device_ops_checks_and_alternatives(strategy):
    ops = strategy.extended._cross_device_ops
    per_replica = strategy.run(lambda: tf.constant(float(_rid() + 1)))
    mirrored = ops.reduce("sum", per_replica, destinations=list(strategy.extended.worker_devices))
    assert isinstance(mirrored, tf.distribute.Mirrored) and [t.numpy() for t in mirrored.values] == [3.0, 3.0]
    assert ops.reduce("MEAN", per_replica, destinations="cpu:0").values[0].numpy() == 1.5
    with pytest.raises(ValueError, match="destinations"):
        ops.reduce("SUM", per_replica, destinations=3)
    with pytest.raises(ValueError, match="pairs"):
        ops.batch_reduce("SUM", [per_replica])
    for cls in (tf.distribute.HierarchicalCopyAllReduce, tf.distribute.NcclAllReduce):
        other = tf.distribute.MirroredStrategy(logical_cpus(2), cross_device_ops=cls(num_packs=1))
        out = other.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.constant(2.0)))
        assert [t.numpy() for t in out.values] == [4.0, 4.0]


def test_merge_call_all_gather_and_values_from_function(strategy):
    def fn():
        def merge(s, value):
            assert tf.distribute.in_cross_replica_context() and s is strategy
            return s.reduce("SUM", value, axis=None) * 10

        context = tf.distribute.get_replica_context()
        merged = context.merge_call(merge, args=(tf.constant(float(_rid())),))
        gathered = context.all_gather(tf.fill([1, 2], float(_rid())), axis=0)
        return merged, gathered

    merged, gathered = strategy.run(fn)
    assert [t.numpy() for t in strategy.experimental_local_results(merged)] == [10.0, 10.0]
    for part in strategy.experimental_local_results(gathered):
        assert part.numpy().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(ctx.replica_id_in_sync_group * 2))
    assert [t.numpy() for t in values.values] == [0, 2]


def _short(device):
    return device.rsplit("/", 1)[-1]  # "device:CPU:1"


# Inside ember.function each replica is traced under its device scope: the multi-device function runs it there.
@pytest.mark.parametrize("use_function", [False, True], ids=["eager", "function"])
def test_replicas_run_on_their_devices(use_function):
    devices = logical_cpus(4)
    strategy = tf.distribute.MirroredStrategy(devices)
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    assert [_short(c.device) for c in v.values] == [f"device:CPU:{i}" for i in range(4)]

    def step(batch):
        return strategy.run(lambda b: b * 2.0 + v, args=(batch,))

    if use_function:
        step = tf.function(step)
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(tf.ones([8, 2])).batch(8))
    batch = next(iter(data))
    out = step(batch)
    assert [_short(t.device) for t in out.values] == [f"device:CPU:{i}" for i in range(4)]
    if use_function:  # one graph, each replica's nodes on its device
        nodes = step.get_concrete_function(batch).graph.as_graph_def().node
        assert {_short(n.device) for n in nodes if n.op == "Mul"} == {f"device:CPU:{i}" for i in range(4)}
    assert [t.numpy().tolist() for t in out.values] == [[[3.0, 4.0]] * 2] * 4


def test_iterate_distributed_dataset_inside_function(strategy):
    # The guide's "iterating inside a tf.function": the loop is staged, each batch split in the graph.
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.range(10).batch(4))

    @tf.function
    def total(dataset):
        result = tf.constant(0, tf.int64)
        for batch in dataset:
            per_replica = strategy.run(lambda b: tf.reduce_sum(b) * (tf.cast(_rid(), tf.int64) + 1), args=(batch,))
            result += strategy.reduce("SUM", per_replica, axis=None)
        return result

    # replica 0 takes [0,1] [4,5] [8]; replica 1 (weight 2) takes [2,3] [6,7] [9]
    assert int(total(data)) == (0 + 1 + 4 + 5 + 8) + 2 * (2 + 3 + 6 + 7 + 9)
    with pytest.raises(NotImplementedError, match="inside ember.function"):
        tf.function(lambda d: [b for b in d])(
            strategy.distribute_datasets_from_function(lambda ctx: tf.data.Dataset.range(4).batch(2)))


def test_run_inside_a_replica_is_an_error(strategy):
    with pytest.raises(RuntimeError, match="cross-replica context"):
        strategy.run(lambda: strategy.run(lambda: 1))
    with pytest.raises(RuntimeError, match="cross-replica context"):
        strategy.run(lambda: strategy.reduce("SUM", tf.constant(1.0), axis=None))


def test_replica_threads_are_reused_and_end_with_their_strategy():
    import gc

    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        v = tf.Variable(1.0)
    strategy.run(lambda: v + 1.0)
    threads = strategy.extended._threads.threads
    for _ in range(3):
        strategy.run(lambda: v + 1.0)
    assert strategy.extended._threads.threads == threads and len(threads) == 2  # one per replica, kept
    assert all(t.is_alive() for t in threads)
    # a run inside a merge_fn finds the threads taken and starts its own
    nested = strategy.run(lambda: tf.distribute.get_replica_context().merge_call(
        lambda s: s.experimental_local_results(s.run(lambda: tf.constant(1.0)))[1]))
    assert [float(t) for t in strategy.experimental_local_results(nested)] == [1.0, 1.0]
    del strategy, v, nested
    gc.collect()
    for t in threads:  # they end once the strategy is collected
        t.join(timeout=30)
        assert not t.is_alive()

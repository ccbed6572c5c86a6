"""The asynchronous all-reduce (Note [Overlapping collectives] in src/ember/distribute/collective_ops.cc) in one
process: _CollectiveReduceStart runs as soon as its input is computed, not where the program asked for it,
and _CollectiveReduceDone returns the reduction. Across worker processes (the gradients' buckets overlapping
the backward pass, weights equal to one process's): test_multi_worker.py."""
import numpy as np
import pytest

import ember as tf
from ember import _C, errors

_Start = _C.op("_CollectiveReduceStart")
_Done = _C.op("_CollectiveReduceDone")


def _one():
    return tf.constant(1), tf.constant(1), tf.constant(1)  # group_size, group_key, instance_key


@pytest.fixture
def one_plan_thread():
    before = tf.config.threading.get_inter_op_parallelism_threads()
    tf.config.threading.set_inter_op_parallelism_threads(1)  # the plan runs in its order on one thread
    yield
    tf.config.threading.set_inter_op_parallelism_threads(before)


def test_start_runs_right_after_its_input_not_where_the_program_asked(one_plan_thread):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((4, 8)).astype(np.float32))
    w0 = tf.Variable(rng.standard_normal((8, 16)).astype(np.float32))
    w1 = tf.Variable(rng.standard_normal((16, 2)).astype(np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(tf.nn.relu(tf.matmul(x, w0)), w1))
        g0, g1 = tape.gradient(loss, [w0, w1])
        # as an optimizer asks: after the whole backward pass, for the last layer's gradient
        handle = _Start(g1, *_one(), "Add", "Id", "auto", 0.0)
        return _Done(handle, g1), g0

    step(x)
    with tf.profiler.profile() as prof:
        reduced, g0 = step(x)
    ops = [e["op"] for e in sorted(prof.events, key=lambda e: e["start_ns"]) if e["kind"] == "node"]
    matmuls = [k for k, op in enumerate(ops) if "MatMul" in op]
    # g1 needs one MatMul of the backward pass, g0 two more: the start comes between them
    assert matmuls and ops.index("_CollectiveReduceStart") < matmuls[-1], ops
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(tf.nn.relu(tf.matmul(x, w0)), w1))
    e0, e1 = tape.gradient(loss, [w0, w1])
    np.testing.assert_allclose(reduced.numpy(), e1.numpy(), rtol=1e-6)  # a group of one: the value itself
    np.testing.assert_allclose(g0.numpy(), e0.numpy(), rtol=1e-6)


def test_a_group_of_one_starts_nothing_and_returns_the_value():
    value = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    handle = _Start(value, *_one(), "Add", "Div", "auto", 0.0)
    assert handle.dtype == tf.int64 and int(handle) == 0
    np.testing.assert_array_equal(_Done(handle, value).numpy(), value.numpy())


def test_an_unknown_handle_is_an_error_naming_the_op():
    with pytest.raises(errors.InvalidArgumentError, match=r"_CollectiveReduceDone: no all-reduce in flight has "
                                                          r"handle 12345"):
        _Done(tf.constant(12345, tf.int64), tf.constant([1.0]))


def test_bad_attributes_and_handles_are_errors_naming_the_op():
    with pytest.raises(errors.InvalidArgumentError, match=r"_CollectiveReduceStart: final_op must be"):
        _Start(tf.constant([1.0]), *_one(), "Add", "Sqrt", "auto", 0.0)
    with pytest.raises(errors.InvalidArgumentError, match=r"_CollectiveReduceDone: handle must be a scalar"):
        _Done(tf.constant([1, 2], tf.int64), tf.constant([1.0]))


def test_gradient_buckets_are_filled_last_layer_first_with_ddps_small_first_bucket():
    from ember.distribute.collective_all_reduce import CollectiveAllReduce

    # bench/ddp_mlp.py's variables in forward order: the last layers' 0.27 MB fit the 1 MiB first bucket, the
    # first layer's 0.8 MB weight gradient does not and goes in the next one
    shapes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    grads = [tf.zeros(s) for s in shapes]
    assert CollectiveAllReduce()._buckets(grads) == [[5, 4, 3, 2, 1], [0]]
    # later buckets hold up to bytes_per_pack; a dtype change closes a bucket
    assert CollectiveAllReduce(bytes_per_pack=300)._buckets(
        [tf.zeros([128]), tf.zeros([16]), tf.zeros([64]), tf.zeros([4])]) == [[3, 2], [1], [0]]
    mixed = [tf.zeros([4], tf.float64), tf.zeros([4]), tf.zeros([4])]
    assert CollectiveAllReduce()._buckets(mixed) == [[2, 1], [0]]

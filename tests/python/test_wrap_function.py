"""ember.compat.v1.wrap_function: the seeds' TF 1.x migration examples."""
import numpy as np

import ember as tf


def f(x, do_add):
    v = tf.Variable(5.0)
    if do_add:
        v.assign_add(x)
    else:
        v.assign_sub(x)
    return v


def test_seed_f_add_f_sub():
    f_add = tf.compat.v1.wrap_function(f, tf.TensorSpec(tf.float32, ()), True)
    assert float(f_add(1.0)) == 6.0
    assert float(f_add(1.0)) == 7.0
    f_sub = tf.compat.v1.wrap_function(f, tf.TensorSpec(tf.float32, ()), False)
    assert float(f_sub(1.0)) == 4.0
    assert float(f_sub(1.0)) == 3.0
    assert len(f_add.variables) == 1 and len(f_sub.variables) == 1


def test_seed_get_variable_and_collections():
    def g(x):
        W = tf.compat.v1.get_variable(name="weight", shape=[10, 10])
        b = tf.compat.v1.get_variable(name="bias", shape=[10], initializer=tf.zeros_initializer())
        c = tf.Variable(0, dtype=tf.int32, name="counter")
        with tf.control_dependencies([c.assign_add(1)]):
            return tf.matmul(x, W) + b

    wrapped = tf.compat.v1.wrap_function(g, tf.compat.v1.placeholder(tf.float32, [None, 10]))
    x = np.ones([2, 10], np.float32)
    out = wrapped(x)
    assert out.shape == (2, 10)
    assert len(wrapped.variables) == 3
    assert wrapped.variables[0].name == "weight"
    assert [v.name for v in wrapped.variables] == ["weight", "bias", "counter:0"]
    np.testing.assert_allclose(out.numpy(), x @ wrapped.variables[0].numpy(), rtol=1e-5)
    wrapped(x)
    assert int(wrapped.variables[2]) == 2  # the counter update runs on every call


def test_traced_once_and_prunable():
    traces = []

    def h(x):
        traces.append(1)
        return tf.square(tf.square(x))

    wrapped = tf.compat.v1.wrap_function(h, [tf.TensorSpec([], tf.float32)])
    assert float(wrapped(2.0)) == 16.0 and float(wrapped(3.0)) == 81.0
    assert len(traces) == 1
    pruned = wrapped.prune(feeds=["Square:0"], fetches=["Square_1:0"])
    assert float(pruned(3.0)) == 9.0


def test_no_automatic_control_dependencies():
    def g(x):
        v = tf.Variable(1.0)
        v.assign(x)
        return v.read_value() + 0.0

    wrapped = tf.compat.v1.wrap_function(g, [tf.TensorSpec([], tf.float32)])
    assert all(not op.control_inputs for op in wrapped.graph.get_operations())


def test_python_values_in_the_signature_are_passed_as_they_are():
    # TensorFlow accepts a signature mixing TensorSpecs and Python values; only the specs are arguments.
    wrapped = tf.compat.v1.wrap_function(lambda x, k: x * k, [tf.TensorSpec([2], tf.float32), 3.0])
    assert wrapped(tf.constant([1.0, 2.0])).numpy().tolist() == [3.0, 6.0]
    assert len(wrapped.inputs) == 1 and len(wrapped.outputs) == 1
    assert wrapped.inputs[0].dtype == tf.float32 and wrapped.outputs[0].shape.as_list() == [2]


def test_prune_takes_the_graph_tensors_and_runs_only_the_fetches_fan_in():
    counter = tf.Variable(0.0)

    def g(x):
        y = x * 2.0
        counter.assign_add(1.0)  # outside y's fan-in: a pruned function must not run it
        return tf.square(y)

    wrapped = tf.compat.v1.wrap_function(g, [tf.TensorSpec([], tf.float32)])
    doubled = wrapped.graph.get_operations()
    mul = next(op for op in doubled if op.type == "Mul").outputs[0]
    pruned = wrapped.prune(wrapped.inputs[0], mul)
    assert float(pruned(tf.constant(3.0))) == 6.0
    assert float(counter.numpy()) == 0.0
    both = wrapped.prune([wrapped.inputs[0]], [mul, wrapped.outputs[0]])
    assert [float(t) for t in both(tf.constant(2.0))] == [4.0, 16.0]
    assert float(wrapped(tf.constant(1.0))) == 4.0 and float(counter.numpy()) == 1.0

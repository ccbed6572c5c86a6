"""Note [Shape specialization] (runtime/executor.cc): a function traced with unknown dims and called again
with the same shapes runs a plan optimized for them, with the values of the general plan; what tracing saw
keeps its unknown dims."""
import numpy as np
import pytest

import ember as tf


def _gates(x, w):
    a, b = tf.split(tf.matmul(x, w), 2, axis=1)
    return tf.sigmoid(a) * tf.tanh(b) + a * 0.5


def _reference(x, w):
    z = x.astype(np.float64) @ w.astype(np.float64)
    a, b = np.split(z, 2, axis=1)
    return 1 / (1 + np.exp(-a)) * np.tanh(b) + a * 0.5


def _ops_run(f, *args):
    with tf.profiler.profile() as prof:
        out = f(*args)
    return [e["op"] for e in prof.events if e["kind"] == "node"], out


def test_a_repeated_shape_gets_its_own_plan_with_whole_fusion_groups():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 16)).astype(np.float32)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    shapes = []

    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32), tf.TensorSpec([6, 16], tf.float32)])
    def f(x, w):
        shapes.append(x.shape.as_list())
        return _gates(x, w)

    general, first = _ops_run(f, x, w)
    _, second = _ops_run(f, x, w)
    specialized, third = _ops_run(f, x, w)
    assert shapes == [[None, 6]]  # one trace, with the unknown batch
    # Over [?, 8] halves the fusion pass cannot tell that sigmoid(a) and tanh(b) share a run-time shape,
    # so the product stays a node of its own; for [5, 8] they are one group.
    assert len(specialized) < len(general)
    assert "Mul" in general and "Mul" not in specialized
    for out in (first, second, third):
        np.testing.assert_allclose(out.numpy(), _reference(x, w), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(first.numpy(), third.numpy())


def test_every_batch_size_gives_the_general_plans_values():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 16)).astype(np.float32)
    f = tf.function(_gates, input_signature=[tf.TensorSpec([None, 6], tf.float32),
                                             tf.TensorSpec([6, 16], tf.float32)])
    for n in [0, 1, 0, 1, 3, 3, 3, 7, 7, 0, 2, 2, 9, 9, 1, 4, 4, 3]:  # more shapes than plans are made
        x = rng.standard_normal((n, 6)).astype(np.float32)
        out = f(x, w).numpy()
        assert out.shape == (n, 8)
        np.testing.assert_allclose(out, _reference(x, w).reshape(n, 8), rtol=1e-5, atol=1e-6)


def test_gradients_and_a_bad_call_after_specialization():
    rng = np.random.default_rng(2)
    w = tf.Variable(rng.standard_normal((6, 16)).astype(np.float32))
    x = tf.constant(rng.standard_normal((4, 6)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    def loss(x):
        return tf.reduce_sum(_gates(x, w))

    grads = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            value = loss(x)
        grads.append(tape.gradient(value, w).numpy())
    eps = 1e-3
    w0 = w.numpy().astype(np.float64)
    numeric = np.zeros_like(w0)
    for i in range(w0.shape[0]):
        for j in range(w0.shape[1]):
            d = np.zeros_like(w0)
            d[i, j] = eps
            numeric[i, j] = (_reference(x.numpy(), w0 + d).sum() - _reference(x.numpy(), w0 - d).sum()) / (2 * eps)
    for g in grads:
        np.testing.assert_allclose(g, numeric, rtol=2e-3, atol=2e-3)
    with pytest.raises(TypeError, match="not compatible"):  # as TensorFlow
        loss(tf.zeros([4, 5]))
    concrete = loss.get_concrete_function()  # the plan itself checks what reaches it
    with pytest.raises((ValueError, TypeError, tf.errors.InvalidArgumentError)):
        concrete(tf.zeros([4, 5]))


def test_a_loop_variable_that_grows_every_iteration():
    @tf.function
    def grow(n):
        def body(i, acc):
            return i + 1, tf.concat([acc, tf.sigmoid(tf.cast(tf.reshape(i, [1]), tf.float32))], 0)

        return tf.while_loop(lambda i, acc: i < n, body, (0, tf.zeros([0])),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))[1]

    for n in (5, 80, 5):
        out = grow(tf.constant(n)).numpy()
        np.testing.assert_allclose(out, 1 / (1 + np.exp(-np.arange(n, dtype=np.float64))), rtol=1e-6)


def test_a_signature_the_shape_functions_reject_stops_specializing():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 16)).astype(np.float32)
    f = tf.function(lambda x, w, y: _gates(x, w) + y,
                    input_signature=[tf.TensorSpec([None, 6], tf.float32), tf.TensorSpec([6, 16], tf.float32),
                                     tf.TensorSpec([None, 8], tf.float32)])
    x = rng.standard_normal((5, 6)).astype(np.float32)
    for _ in range(3):  # the second bad call tries to specialize, and the shapes are rejected
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(x, w, np.zeros((3, 8), np.float32))
    y = rng.standard_normal((5, 8)).astype(np.float32)
    for _ in range(3):  # the function stopped looking: the general plan, with its values
        ops, out = _ops_run(f, x, w, y)
        assert "Mul" in ops
        np.testing.assert_allclose(out.numpy(), _reference(x, w) + y, rtol=1e-5, atol=1e-6)

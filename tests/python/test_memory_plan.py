"""The executor's arena memory plan, seen from Python: values stay right however the arena is reused."""
import numpy as np

import ember as tf


def _chain(x, w):
    h = x
    for _ in range(8):
        h = tf.tanh(tf.matmul(h, w) * 0.1)
    return h


def test_intermediates_of_a_static_function_live_in_a_small_arena():
    w = tf.constant(np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32))
    f = tf.function(_chain)
    x = tf.constant(np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32))
    gf = f.get_concrete_function(x, w)._gf
    assert gf.arena_slots >= 8
    assert gf.arena_bytes <= 4 * 16 * 32 * 4  # a few live values, not one buffer per op
    np.testing.assert_allclose(f(x, w).numpy(), _chain(x, w).numpy(), rtol=1e-5, atol=1e-6)


def test_results_of_earlier_calls_keep_their_values():
    w = tf.constant(np.eye(32, dtype=np.float32) * 0.5)
    f = tf.function(_chain)
    xs = [tf.constant(np.full((16, 32), v, np.float32)) for v in (0.1, 0.7, -0.4)]
    outs = [f(x, w) for x in xs]
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out.numpy(), _chain(x, w).numpy(), rtol=1e-5, atol=1e-6)


def test_a_value_assigned_to_a_variable_is_not_overwritten_by_later_ops():
    v = tf.Variable(tf.zeros((8, 8)))
    w = tf.constant(np.random.default_rng(2).standard_normal((8, 8)).astype(np.float32))

    @tf.function
    def step(x):
        t = tf.matmul(x, w) * 2.0  # stored by the variable: must keep a buffer of its own
        v.assign(t)
        u = tf.matmul(tf.exp(x), w)  # would reuse t's bytes if t were in the arena
        return tf.reduce_sum(u)

    for seed in range(3):
        x = tf.constant(np.random.default_rng(10 + seed).standard_normal((8, 8)).astype(np.float32))
        step(x)
        np.testing.assert_allclose(v.numpy(), (tf.matmul(x, w) * 2.0).numpy(), rtol=1e-5, atol=1e-6)


def test_a_view_of_an_intermediate_returned_by_the_function_stays_intact():
    @tf.function
    def f(x):
        a = tf.matmul(x, x)
        flat = tf.reshape(a, [-1])  # a view of a's buffer
        b = tf.matmul(x * 3.0, x)
        c = tf.matmul(b, x)
        return flat, c

    x1 = tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4) / 10)
    x2 = tf.constant(-np.arange(16, dtype=np.float32).reshape(4, 4) / 7)
    flat1, c1 = f(x1)
    flat2, c2 = f(x2)
    a1 = x1.numpy() @ x1.numpy()
    np.testing.assert_allclose(flat1.numpy(), a1.reshape(-1), rtol=1e-5)
    np.testing.assert_allclose(c1.numpy(), (x1.numpy() * 3) @ x1.numpy() @ x1.numpy(), rtol=1e-5)
    np.testing.assert_allclose(flat2.numpy(), (x2.numpy() @ x2.numpy()).reshape(-1), rtol=1e-5)


def test_memory_optimization_off_plans_no_arena():
    w = tf.constant(np.eye(32, dtype=np.float32))
    x = tf.constant(np.ones((16, 32), np.float32))
    tf.config.optimizer.set_experimental_options({"memory_optimization": False})
    try:
        gf = tf.function(_chain).get_concrete_function(x, w)._gf
        assert gf.arena_bytes == 0
    finally:
        tf.config.optimizer.set_experimental_options({"memory_optimization": True})

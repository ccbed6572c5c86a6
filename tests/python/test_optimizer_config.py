"""ember.config.optimizer / ember.config.threading, and optimized graphs from Python."""

import numpy as np
import pytest

import ember as tf


@pytest.fixture
def restore_options():
    saved = tf.config.optimizer.get_experimental_options()
    yield
    tf.config.optimizer.set_experimental_options(saved)


def test_options_round_trip(restore_options):
    tf.config.optimizer.set_experimental_options({"constant_folding": False, "disable_model_pruning": True})
    options = tf.config.optimizer.get_experimental_options()
    assert options["constant_folding"] is False
    assert options["disable_model_pruning"] is True
    assert options["arithmetic_optimization"] is True


def test_unknown_option_is_an_error(restore_options):
    with pytest.raises(ValueError, match="unknown option 'constant_foldin'"):
        tf.config.optimizer.set_experimental_options({"constant_foldin": False})
    tf.config.optimizer.set_experimental_options({"layout_optimizer": False})  # a TF option: accepted


def _trace(fn, *args):
    return tf.function(fn).get_concrete_function(*args)


def test_passes_rewrite_the_optimized_graph_only(restore_options):
    def f(x):
        y = tf.identity(x) * 1.0 + 0.0
        return tf.exp(y) + tf.exp(y)

    x = tf.constant([1.0, 2.0])
    concrete = _trace(f, x)
    assert "Identity" in concrete.graph.as_text()
    optimized = concrete.graph.optimized_as_text()
    assert "Identity" not in optimized
    assert optimized.count("Exp") <= 1
    np.testing.assert_allclose(concrete(x).numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)


def test_meta_optimizer_off_keeps_the_traced_graph(restore_options):
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})

    def f(x):
        return tf.identity(x) * 1.0

    concrete = _trace(f, tf.constant([3.0]))
    assert concrete.graph.optimized_as_text() == concrete.graph.as_text()
    np.testing.assert_allclose(concrete(tf.constant([3.0])).numpy(), [3.0])


@pytest.mark.parametrize("option", ["constant_folding", "arithmetic_optimization", "common_subgraph_elimination",
                                    "function_optimization", "elementwise_fusion", "memory_optimization",
                                    "sibling_matmul_merging"])
def test_each_pass_can_be_switched_off(restore_options, option):
    tf.config.optimizer.set_experimental_options({option: False})

    @tf.function
    def inner(x):
        return tf.sin(x) * 1.0 + tf.constant(2.0) * tf.constant(3.0)

    @tf.function
    def f(x):
        return inner(x) + inner(x) + tf.tanh(x) * tf.tanh(x)

    x = tf.constant(np.linspace(-1, 1, 7, dtype=np.float32))
    want = 2 * (np.sin(x.numpy()) + 6.0) + np.tanh(x.numpy()) ** 2
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5)


def test_threading_settings():
    assert tf.config.threading.get_inter_op_parallelism_threads() == 0  # TF's default: the system picks
    tf.config.threading.set_inter_op_parallelism_threads(1)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 1
    tf.config.threading.set_inter_op_parallelism_threads(0)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 0


def test_a_wide_graph_runs_in_parallel_with_the_same_values():
    @tf.function
    def f(a, b):
        for _ in range(12):
            a = tf.tanh(tf.matmul(a, a) * 0.01)
            b = tf.tanh(tf.matmul(b, b) * 0.01)
        return a + b

    a = tf.constant(np.random.RandomState(0).rand(64, 64).astype(np.float32))
    b = tf.constant(np.random.RandomState(1).rand(64, 64).astype(np.float32))
    concrete = f.get_concrete_function(a, b)
    assert concrete._gf.runs_in_parallel
    tf.config.threading.set_inter_op_parallelism_threads(2)
    try:
        got = f(a, b).numpy()
    finally:
        tf.config.threading.set_inter_op_parallelism_threads(0)
    want_a, want_b = a.numpy(), b.numpy()
    for _ in range(12):
        want_a = np.tanh(want_a @ want_a * 0.01)
        want_b = np.tanh(want_b @ want_b * 0.01)
    np.testing.assert_allclose(got, want_a + want_b, rtol=1e-4, atol=1e-5)


def test_double_transpose_with_negative_perm_entries():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))

    @tf.function
    def f(x):
        return tf.transpose(tf.transpose(x, [1, 0]), [-1, 0])

    np.testing.assert_array_equal(f(x).numpy(), tf.transpose(tf.transpose(x, [1, 0]), [-1, 0]).numpy())


def test_a_value_returned_many_times_from_a_parallel_plan():
    xs = [tf.constant(np.random.RandomState(i).rand(20000).astype(np.float32)) for i in range(16)]

    @tf.function
    def f(*xs):
        outs = [tf.reduce_sum(tf.exp(tf.sin(x) * 2.0)) for x in xs]
        y = tf.exp(tf.sin(xs[0]) * 3.0)
        return [y, y, y, y, y] + outs

    tf.config.threading.set_inter_op_parallelism_threads(2)
    try:
        assert f.get_concrete_function(*xs)._gf.runs_in_parallel
        results = f(*xs)
    finally:
        tf.config.threading.set_inter_op_parallelism_threads(0)
    want = np.exp(np.sin(xs[0].numpy()) * 3.0)
    for r in results[:5]:
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-5)


def test_minimum_and_maximum_keep_their_operand_order_for_signed_zeros():
    x = tf.constant([-0.0, 1.0])
    y = tf.constant([0.0, 2.0])

    @tf.function
    def f(x, y):
        return tf.minimum(y, x), tf.maximum(y, x), tf.minimum(x, y)

    for got, want in zip(f(x, y), (tf.minimum(y, x), tf.maximum(y, x), tf.minimum(x, y))):
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))


def test_inlining_a_pure_call_keeps_the_order_of_stateful_ops_around_it():
    @tf.function
    def pure(x):
        return x * 2.0

    @tf.function
    def f(x):
        a = tf.random.uniform([2])
        y = pure(x)
        b = tf.random.uniform([2])
        return a, y, b

    optimized = f.get_concrete_function(tf.constant(1.0)).graph.optimized_as_text()
    second = [line for line in optimized.splitlines() if line.startswith("RandomUniform_1 ")]
    assert second and "^RandomUniform" in second[0], optimized

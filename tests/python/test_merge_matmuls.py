"""Sibling-MatMul merging from Python (issue 12, item 5): products sharing a left operand where one
depends on another (directly, through element-wise ops, or through a variable write) must not be merged
into a cycle, and batched left operands merge correctly. Each runs under ember.function and eagerly."""
import numpy as np
import pytest

import ember as tf


def _rand(*shape, seed=0):
    return tf.constant(np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(np.float32))


def _same(f, *args):
    eager = f(*args)
    graph = tf.function(f)(*args)
    eager = eager if isinstance(eager, (list, tuple)) else [eager]
    graph = graph if isinstance(graph, (list, tuple)) else [graph]
    assert len(eager) == len(graph)
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def _merged_products(f, *args):
    text = tf.function(f).get_concrete_function(*args).graph.optimized_as_text()
    return text.count("/merged =")


def test_product_of_a_product():
    x = _rand(3, 3)
    _same(lambda x: x @ (x @ x), x)


def test_dependent_sibling_through_an_elementwise_chain():
    x, w = _rand(4, 4), _rand(4, 2, seed=1)
    _same(lambda x, w: [x @ w, x @ (w + tf.reduce_mean(tf.tanh(x @ w)))], x, w)


def test_dependent_sibling_through_a_variable():
    x, a = _rand(3, 3), _rand(3, 3, seed=1)

    def make():
        v = tf.Variable(np.zeros((3, 3), np.float32))

        def f(x, a):
            v.assign(x @ a)
            return x @ v

        return f, v

    f_eager, v_eager = make()
    f_graph, v_graph = make()
    want = f_eager(x, a)
    got = tf.function(f_graph)(x, a)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v_graph.numpy(), v_eager.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transpose_a", [False, True])
def test_batched_left_operand(transpose_a):
    x = _rand(2, 4, 3) if transpose_a else _rand(2, 3, 4)
    a, b = _rand(4, 5, seed=1), _rand(4, 2, seed=2)

    def f(x, a, b):
        return [tf.matmul(x, a, transpose_a=transpose_a), tf.matmul(x, b, transpose_a=transpose_a) + 1.0]

    _same(f, x, a, b)
    assert _merged_products(f, x, a, b) == 1  # merged along the last dim, not left alone


def test_batched_dependent_siblings():
    x, w = _rand(2, 3, 4), _rand(4, 2, seed=1)
    _same(lambda x, w: [x @ w, x @ (w + tf.reduce_mean(tf.tanh(x @ w)))], x, w)


def test_independent_siblings_still_merge():
    x, a, b = _rand(5, 4), _rand(4, 2, seed=1), _rand(4, 3, seed=2)
    f = lambda x, a, b: [x @ a, x @ b]  # noqa: E731
    _same(f, x, a, b)
    assert _merged_products(f, x, a, b) == 1


# The same patterns against TensorFlow itself: each program is written over the module it runs in.
_PROGRAMS = {
    "product_of_a_product": (lambda m, x, w: x @ (x @ x), [(3, 3), (3, 2)]),
    "dependent_sibling": (lambda m, x, w: [x @ w, x @ (w + m.reduce_mean(m.tanh(x @ w)))], [(4, 4), (4, 2)]),
    "independent_siblings": (lambda m, x, w: [x @ w, x @ (w * 2.0), x @ m.ones([4, 3])], [(4, 4), (4, 2)]),
    "batched_left_operand": (lambda m, x, w: [m.matmul(x, w), m.matmul(x, w + 1.0)], [(2, 3, 4), (4, 5)]),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_merged_programs_match_tensorflow(name):
    import tensorflow as real_tf

    program, shapes = _PROGRAMS[name]
    rng = np.random.RandomState(0)
    values = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in shapes]
    outs = []
    for m in (tf, real_tf):
        result = m.function(lambda x, w: program(m, x, w))(*[m.constant(v) for v in values])
        outs.append([r.numpy() for r in (result if isinstance(result, (list, tuple)) else [result])])
    assert len(outs[0]) == len(outs[1])
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)

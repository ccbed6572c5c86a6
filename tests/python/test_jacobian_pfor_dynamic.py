"""Vectorised jacobians with unknown dimensions (python/ember/pfor.py, Note [Batching with unknown
dimensions]): jacobian and batch_jacobian inside an ember.function traced with x: [None, k] run as one
vectorised backward pass (jacobians.stats counts no fallback and one backward pass per trace) and agree with
TensorFlow's GradientTape for two batch sizes through one trace; the same functions eagerly."""
import types

import numpy as np
import pytest

import ember as tf
import test_jacobian_pfor
from ember import jacobians, pfor

K = 4
rng = np.random.default_rng(7)
W1 = rng.standard_normal((K, 5)) / 2
B1 = rng.standard_normal(5)
W2 = rng.standard_normal((5, 3)) / 2
V = rng.standard_normal(K)
M = rng.standard_normal((K, K))

# name: (fn of x [b, K], whether the target's first dimension is the batch, for batch_jacobian)
CASES = {
    "mlp": (lambda x: tf.nn.relu(tf.matmul(tf.tanh(tf.matmul(x, W1) + B1), W2)) + tf.nn.softmax(x)[:, :3], True),
    "elementwise_broadcast": (lambda x: x * x * V + tf.sin(x) / (1.0 + x * x) - tf.exp(-x) * tf.reshape(V, [1, K]),
                              True),
    "reductions": (lambda x: tf.reduce_sum(x * x, 1, keepdims=True) * x + tf.reduce_mean(x, 0)
                   + tf.reduce_max(x, 1, keepdims=True) * tf.reduce_min(tf.tanh(x), axis=-1, keepdims=True), True),
    "reshape_transpose": (lambda x: tf.reshape(tf.transpose(tf.reshape(x * 2.0, [-1, 2, K // 2]), [0, 2, 1]),
                                               [tf.shape(x)[0], K]) * tf.reshape(x, [-1])[:1], True),
    "matmul": (lambda x: tf.matmul(tf.matmul(x, M), x, transpose_b=True), True),
    "outer_broadcast": (lambda x: x[:, :, None] * tf.sin(x)[:, None, :] + tf.expand_dims(x, 1), True),
    "gram": (lambda x: tf.matmul(x, x, transpose_a=True) + tf.reduce_sum(tf.square(x)), False),
    "tile_broadcast_to": (lambda x: tf.tile(x, [1, 2]) * tf.broadcast_to(tf.reduce_sum(x, 1, keepdims=True),
                                                                            tf.shape(tf.tile(x, [1, 2]))), True),
}


counted = test_jacobian_pfor.counted


def with_module(fn, module):
    return types.FunctionType(fn.__code__, {**fn.__globals__, "tf": module}, closure=fn.__closure__)


def jacobian_fn(fn, kind, module):
    f = with_module(fn, module)

    def jac(x):
        with module.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return getattr(tape, kind)(y, x)

    return jac


def tensorflow_jacobian(name, kind, x):
    import tensorflow as tf2

    return jacobian_fn(CASES[name][0], kind, tf2)(tf2.constant(x)).numpy()


def kinds(name):
    return ["jacobian", "batch_jacobian"] if CASES[name][1] else ["jacobian"]


PARAMS = [(name, kind) for name in sorted(CASES) for kind in kinds(name)]


@pytest.mark.parametrize("name, kind", PARAMS)
def test_traced_with_unknown_batch_is_vectorised_and_matches_tensorflow(name, kind):
    jac = tf.function(jacobian_fn(CASES[name][0], kind, tf), input_signature=[tf.TensorSpec([None, K], tf.float64)])
    with counted() as delta:
        for b in (2, 5):
            x = rng.standard_normal((b, K))
            got = jac(tf.constant(x)).numpy()
            want = tensorflow_jacobian(name, kind, x)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # One trace serves both batch sizes, and it took the vectorised path (no per-row loop).
    assert delta == {"vectorized": 1, "fallback": 0, "backward_passes": 1}, jacobians.last_fallback


@pytest.mark.parametrize("name, kind", PARAMS)
def test_eager_is_vectorised_and_matches_tensorflow(name, kind):
    jac = jacobian_fn(CASES[name][0], kind, tf)
    with counted() as delta:
        for b in (2, 5):
            x = rng.standard_normal((b, K))
            np.testing.assert_allclose(jac(tf.constant(x)).numpy(), tensorflow_jacobian(name, kind, x),
                                       rtol=1e-10, atol=1e-12)
    assert delta == {"vectorized": 2, "fallback": 0, "backward_passes": 2}, jacobians.last_fallback


def test_unknown_target_size_without_pfor_is_a_clear_error():
    @tf.function(input_signature=[tf.TensorSpec([None, K], tf.float64)])
    def jac(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(x)
        return tape.jacobian(y, x, experimental_use_pfor=False)

    with pytest.raises(ValueError, match="target's size is known only when the function runs"):
        jac(tf.constant(np.ones((2, K))))


def test_unconnected_source_with_unknown_target_size():
    @tf.function(input_signature=[tf.TensorSpec([None, K], tf.float64), tf.TensorSpec([None], tf.float64)])
    def jac(x, z):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, z])
            y = tf.tanh(x)
        assert tape.jacobian(y, [x, z])[1] is None
        return tape.jacobian(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO)

    zeros = jac(tf.constant(np.ones((2, K))), tf.constant(np.ones(3)))
    assert zeros.shape == (2, K, 3) and not zeros.numpy().any()


@pytest.mark.parametrize("name, kind", PARAMS)
def test_eager_tape_over_a_function_with_unknown_batch_is_vectorised(name, kind):
    # The function's backward is a PartitionedCall of a graph with unknown dimensions; pfor vectorises
    # through the call. One trace of the function serves both batch sizes.
    f = tf.function(CASES[name][0], input_signature=[tf.TensorSpec([None, K], tf.float64)])
    with counted() as delta:
        for b in (2, 5):
            x = tf.constant(rng.standard_normal((b, K)))
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            got = getattr(tape, kind)(y, x).numpy()
            np.testing.assert_allclose(got, tensorflow_jacobian(name, kind, x.numpy()), rtol=1e-10, atol=1e-12)
    assert delta == {"vectorized": 2, "fallback": 0, "backward_passes": 2}, jacobians.last_fallback
    assert f.experimental_get_tracing_count() == 1


def hessians(module, x):
    with module.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with module.GradientTape() as inner:
            inner.watch(x)
            y = module.reduce_sum(module.tanh(module.matmul(x, W1)) ** 2) + module.reduce_prod(x[:, :2])
        g = inner.gradient(y, x)
    return outer.jacobian(g, x), outer.batch_jacobian(g, x)


def test_hessian_inside_a_function_with_unknown_batch():
    import tensorflow as tf2

    f = tf.function(lambda x: hessians(tf, x), input_signature=[tf.TensorSpec([None, K], tf.float64)])
    with counted() as delta:
        for b in (2, 3):
            x = rng.standard_normal((b, K))
            for got, want in zip(f(tf.constant(x)), hessians(tf2, tf2.constant(x))):
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    assert delta == {"vectorized": 2, "fallback": 0, "backward_passes": 2}, jacobians.last_fallback


# ---- the batching rules one by one with unknown dimensions: a graph traced from f(a) with a: [None, 4],
# vectorised inside a function (so shape operands are symbolic tensors), n known and n computed in the graph,
# against f on each example alone.


@pytest.mark.parametrize("lead", [5, None])
@pytest.mark.parametrize("name", sorted(set(test_jacobian_pfor.RULE_CASES) - {"expand_squeeze"}))
def test_batching_rule_with_unknown_dims(name, lead):
    gf = test_jacobian_pfor.trace(test_jacobian_pfor.RULE_CASES[name], [None, 4])
    batch = rng.standard_normal((5, 3, 4))

    @tf.function(input_signature=[tf.TensorSpec([lead, None, 4], tf.float64)])
    def vectorised(seeds):
        return pfor._Vectorizer(gf, seeds, 5 if lead else tf.shape(seeds)[0]).run()

    got = vectorised(tf.constant(batch))
    for k in range(5):
        for g, w in zip(got, gf([tf.constant(batch[k])])):
            np.testing.assert_allclose(g.numpy()[k], w.numpy(), rtol=1e-12, atol=1e-12)


def test_squeeze_of_unknown_dims_is_unbatchable():
    # Which dimensions are 1 is known only at run time, where the batch dimension may be 1 as well.
    gf = test_jacobian_pfor.trace(lambda a: tf.squeeze(tf.expand_dims(a, -1)), [None, 4])
    with pytest.raises(pfor.Unbatchable, match="Squeeze: which dimensions to squeeze depends on unknown"):
        pfor._Vectorizer(gf, tf.constant(np.zeros((2, 3, 4))), 2).run()


def test_axis_computed_in_the_graph_out_of_range_is_an_error_not_a_wrapped_axis():
    # Sum's axis is 2 for a rank-2 example (computed from the shape, so only known at run time): the batched
    # Sum must fail as the per-example one would, not reduce a wrapped-around axis.
    gf = test_jacobian_pfor.trace(lambda a: tf.reduce_sum(a, tf.shape(a)[0] - 1), [None, 4])

    @tf.function(input_signature=[tf.TensorSpec([2, None, 4], tf.float64)])
    def vectorised(seeds):
        return pfor._Vectorizer(gf, seeds, 2).run()

    np.testing.assert_allclose(vectorised(tf.constant(np.ones((2, 2, 4))))[0].numpy(), np.full((2, 2), 4.0))
    with pytest.raises(tf.errors.InvalidArgumentError):
        gf([tf.constant(np.ones((3, 4)))])
    with pytest.raises(tf.errors.InvalidArgumentError):
        vectorised(tf.constant(np.ones((2, 3, 4))))

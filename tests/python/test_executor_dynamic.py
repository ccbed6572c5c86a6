"""Functions traced with unknown dimensions (input_signature with None): the executor resolves shapes per
call, fuses element-wise chains over the dynamic extent, and gives the values eager execution gives for
every batch size, 0 and 1 included."""
import numpy as np
import pytest

import ember as tf

BATCHES = [0, 1, 2, 17, 1, 64, 0]


def _params(seed=0, sizes=(20, 16, 16, 5)):
    rng = np.random.default_rng(seed)
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        out.append(tf.constant(rng.standard_normal((a, b)).astype(np.float32) * 0.3))
        out.append(tf.constant(rng.standard_normal((b,)).astype(np.float32) * 0.1))
    return out


def _mlp(x, w1, b1, w2, b2, w3, b3):
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    h = tf.tanh(tf.matmul(h, w2) + b2) * 0.5 + h
    z = tf.matmul(h, w3) + b3
    z = z - tf.reduce_max(z, axis=1, keepdims=True)
    e = tf.exp(z)
    return e / tf.reduce_sum(e, axis=1, keepdims=True), h


def _batch(n, seed=1, width=20):
    return tf.constant(np.random.default_rng(seed + n).standard_normal((n, width)).astype(np.float32))


@pytest.fixture
def fusion(request):
    old = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"elementwise_fusion": request.param})
    yield request.param
    tf.config.optimizer.set_experimental_options(old)


@pytest.mark.parametrize("fusion", [True, False], indirect=True)
def test_mlp_with_unknown_batch_matches_eager_for_every_batch_size(fusion):
    params = _params()
    f = tf.function(lambda x: _mlp(x, *params), input_signature=[tf.TensorSpec([None, 20], tf.float32)])
    optimized = f.get_concrete_function().graph.optimized_as_text()
    assert ("FusedElementwise" in optimized) == fusion, optimized
    assert "float32[?,16]" in optimized
    for n in BATCHES:
        x = _batch(n)
        got, want = f(x), _mlp(x, *params)
        for g, w in zip(got, want):
            assert g.shape == w.shape == (n, g.shape[1])
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    assert f.experimental_get_tracing_count() == 1


def test_dynamic_plan_matches_the_static_plan():
    params = _params(seed=3)
    dynamic = tf.function(lambda x: _mlp(x, *params), input_signature=[tf.TensorSpec([None, 20], tf.float32)])
    static = tf.function(lambda x: _mlp(x, *params))
    for n in [1, 33]:
        x = _batch(n, seed=4)
        for d, s in zip(dynamic(x), static(x)):
            np.testing.assert_allclose(d.numpy(), s.numpy(), rtol=1e-6, atol=1e-7)
    # Both plans fuse the element-wise groups; the static one also absorbs the softmax's reductions into
    # them (static shapes only: Note [Absorbed reductions] in passes/fuse_elementwise.cc).
    dynamic_text = dynamic.get_concrete_function().graph.optimized_as_text()
    static_text = static.get_concrete_function(_batch(33, seed=4)).graph.optimized_as_text()
    count = lambda text: text.count("FusedElementwise(") + text.count("FusedReduction(")  # noqa: E731
    assert count(static_text) >= count(dynamic_text) > 0
    assert "FusedReduction(" in static_text and "FusedReduction(" not in dynamic_text


def test_a_fused_result_smaller_than_the_domain_keeps_its_shape():
    def body(x, y):
        t = tf.exp(x) * 2.0
        u = tf.sin(t + y)
        return t, u

    f = tf.function(body, input_signature=[tf.TensorSpec([None], tf.float32)] * 2)
    assert "FusedElementwise" in f.get_concrete_function().graph.optimized_as_text()
    for nx, ny in [(1, 4), (4, 1), (4, 4), (0, 1), (1, 0), (1, 1)]:
        x = tf.constant(np.linspace(-1, 1, nx, dtype=np.float32))
        y = tf.constant(np.linspace(0, 2, ny, dtype=np.float32))
        for g, w in zip(f(x, y), body(x, y)):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_shapes_that_do_not_broadcast_raise_the_op_error():
    f = tf.function(lambda x, y: tf.exp(x) + y, input_signature=[tf.TensorSpec([None], tf.float32)] * 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="broadcast"):
        f(tf.ones([3]), tf.ones([4]))
    np.testing.assert_allclose(f(tf.zeros([3]), tf.ones([3])).numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("fusion", [False], indirect=True)
def test_in_place_element_wise_ops_never_write_over_the_callers_argument(fusion):
    f = tf.function(lambda x: tf.exp(tf.abs(x) * 2.0) - 1.0, input_signature=[tf.TensorSpec([None, 8])])
    for n in [1, 5, 0]:
        data = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        x = tf.constant(data)
        np.testing.assert_allclose(f(x).numpy(), np.exp(np.abs(data) * 2.0) - 1.0, rtol=1e-5)
        np.testing.assert_array_equal(x.numpy(), data)


def test_many_batch_sizes_with_one_trace():
    f = tf.function(lambda x: tf.nn.relu(x * 3.0 + 1.0) / 2.0, input_signature=[tf.TensorSpec([None, 3])])
    for n in range(0, 40):
        data = np.full((n, 3), n - 20, np.float32)
        np.testing.assert_allclose(f(tf.constant(data)).numpy(), np.maximum(data * 3 + 1, 0) / 2)
    assert f.experimental_get_tracing_count() == 1

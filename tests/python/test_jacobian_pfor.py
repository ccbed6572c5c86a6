"""Vectorised jacobians (python/ember/pfor.py): the vectorised path against the loop
(experimental_use_pfor=False), finite differences and TensorFlow; the batching rules one by one against
per-example evaluation; and the fallback to the loop where a graph cannot be batched."""
import contextlib

import numpy as np
import pytest

import ember as tf
from ember import _C, jacobians, pfor


@contextlib.contextmanager
def counted():
    """The change in jacobians.stats inside the block."""
    before = dict(jacobians.stats)
    delta = {}
    yield delta
    for key in ("vectorized", "fallback", "backward_passes"):
        delta[key] = jacobians.stats[key] - before.get(key, 0)


def numeric_jacobian(fn, values, k, eps=1e-6):
    """d fn(*values) / d values[k] by central differences (float64): target.shape + values[k].shape."""
    base = [np.array(v, np.float64) for v in values]
    target_shape = np.shape(fn(*[tf.constant(v) for v in base]).numpy())
    out = np.zeros(target_shape + base[k].shape)
    for idx in np.ndindex(base[k].shape):
        plus = [v.copy() for v in base]
        minus = [v.copy() for v in base]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        diff = fn(*[tf.constant(v) for v in plus]).numpy() - fn(*[tf.constant(v) for v in minus]).numpy()
        out[(Ellipsis,) + idx] = diff / (2 * eps)
    return out


rng = np.random.default_rng(0)
W1 = rng.standard_normal((4, 6)) / 2
B1 = rng.standard_normal(6)
W2 = rng.standard_normal((6, 3)) / 2
C34 = rng.standard_normal((3, 4))

CASES = {
    # name: (fn of the sources, source values)
    "elementwise_broadcast": (lambda x, y: x * x * y + tf.sin(x) / (1.0 + y * y) - tf.exp(-x) * C34,
                              [rng.standard_normal(4), rng.standard_normal((3, 4))]),
    "mlp_tanh_relu": (lambda x, w: tf.nn.relu(tf.matmul(tf.tanh(tf.matmul(x, w) + B1), W2)),
                      [rng.standard_normal((2, 4)), W1]),
    "mlp_vector": (lambda x: tf.reshape(tf.matmul(tf.tanh(tf.matmul(tf.reshape(x, [1, 4]), W1) + B1), W2), [3]),
                   [rng.standard_normal(4)]),
    "reductions": (lambda y: tf.reduce_sum(y * y, axis=1) + tf.reduce_mean(y, axis=0)[:3]
                   + tf.reduce_max(y, axis=1) * tf.reduce_prod(y, axis=1) + tf.reduce_min(y),
                   [rng.standard_normal((3, 4))]),
    "reshape_transpose": (lambda y: tf.transpose(tf.reshape(y * 2.0, [2, 6]))[1:, :] * tf.reshape(y, [6, 2])[:5],
                          [rng.standard_normal((3, 4))]),
    "softmax": (lambda y: tf.nn.softmax(tf.matmul(y, W1)) + tf.nn.log_softmax(y, axis=0)[:, :1],
                [rng.standard_normal((3, 4))]),
    "concat_stack_split": (lambda y: tf.concat([tf.split(y, 2, axis=1)[1], tf.stack([y[:, 0], y[:, 3]], 1)], 0)
                           * tf.expand_dims(tf.unstack(y, axis=1)[2], 0)[:, :1],
                           [rng.standard_normal((3, 4))]),
    "gather_pad_tile": (lambda y: tf.tile(tf.pad(tf.gather(y, [2, 0], axis=1), [[1, 0], [0, 1]]), [1, 2])[1:, :]
                        + tf.broadcast_to(tf.reduce_sum(y, 1, keepdims=True), [3, 6]),
                        [rng.standard_normal((3, 4))]),
    "select_max_clip": (lambda y: tf.where(y > 0, y * y, -y) + tf.maximum(y, 0.1) * tf.clip_by_value(y, -0.5, 0.5),
                        [rng.standard_normal((3, 4))]),
    "batched_matmul": (lambda m: tf.matmul(m, tf.transpose(m, [0, 2, 1])) + tf.matmul(m, C34.T),
                       [rng.standard_normal((2, 3, 4))]),
    "scalar_target": (lambda y: tf.reduce_sum(tf.tanh(y) * C34), [rng.standard_normal((3, 4))]),
}


def tape_and_target(fn, values):
    sources = [tf.constant(v) for v in values]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        target = fn(*sources)
    return tape, target, sources


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorised_matches_loop_and_finite_differences(name):
    fn, values = CASES[name]
    tape, target, sources = tape_and_target(fn, values)
    with counted() as vec:
        fast = tape.jacobian(target, sources)
    with counted() as loop:
        slow = tape.jacobian(target, sources, experimental_use_pfor=False)
    assert vec == {"vectorized": 1, "fallback": 0, "backward_passes": 1}, jacobians.last_fallback
    n = int(np.prod(target.shape.as_list()))
    assert loop == {"vectorized": 0, "fallback": 0, "backward_passes": n}
    for k, (f, s) in enumerate(zip(fast, slow)):
        assert f.shape == target.shape.concatenate(sources[k].shape)
        np.testing.assert_allclose(f.numpy(), s.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f.numpy(), numeric_jacobian(fn, values, k), rtol=1e-5, atol=1e-6)


def test_seed_example_runs_one_traced_backward():
    x = tf.constant([1., 2.])
    y = tf.constant([3., 4.])
    with tf.GradientTape() as t:
        t.watch(x)
        t.watch(y)
        z = x * x * y
    with counted() as delta:
        jx, jy = t.jacobian(z, [x, y])
    assert delta == {"vectorized": 1, "fallback": 0, "backward_passes": 1}
    np.testing.assert_allclose(jx.numpy(), np.diag([6., 16.]))  # diag(2xy)
    np.testing.assert_allclose(jy.numpy(), np.diag([1., 4.]))  # diag(x²)


def test_persistent_tape_gives_several_jacobians_and_gradients():
    x = tf.constant([0.5, -1.0, 2.0], tf.float64)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.tanh(x) * x
        z = tf.reduce_sum(y * y)
    j1 = t.jacobian(y, x)
    j2 = t.jacobian(z, x)
    g = t.gradient(z, x)
    j3 = t.jacobian(y, x)
    np.testing.assert_allclose(np.diag(j1.numpy()), np.tanh(x.numpy()) + x.numpy() / np.cosh(x.numpy()) ** 2)
    np.testing.assert_allclose(j2.numpy(), g.numpy())
    np.testing.assert_allclose(j3.numpy(), j1.numpy())


def test_non_persistent_tape_allows_one_jacobian():
    x = tf.constant([1., 2.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.jacobian(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        t.gradient(y, x)


@pytest.mark.parametrize("use_pfor", [True, False])
def test_unconnected_sources(use_pfor):
    x = tf.constant([1., 2., 3.])
    w = tf.constant([[4., 5.]])
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, w])
        y = x * 2.0
    jw, jx = t.jacobian(y, [w, x], experimental_use_pfor=use_pfor)
    assert jw is None
    np.testing.assert_allclose(jx.numpy(), 2 * np.eye(3))
    jw, jx = t.jacobian(y, [w, x], unconnected_gradients=tf.UnconnectedGradients.ZERO,
                        experimental_use_pfor=use_pfor)
    assert jw.shape == (3, 1, 2) and not jw.numpy().any()
    assert t.jacobian(tf.constant([1., 2.]) * 3.0, x, experimental_use_pfor=use_pfor) is None


def test_jacobian_of_a_source_and_of_a_variable():
    x = tf.constant([1., 2., 3.])
    v = tf.Variable([[0.5, -1.], [2., 0.3], [1., 1.]])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        z = tf.matmul(tf.reshape(x, [1, 3]), v)
    np.testing.assert_allclose(t.jacobian(x, x).numpy(), np.eye(3))
    jx, jv = t.jacobian(z, [x, v])
    lx, lv = t.jacobian(z, [x, v], experimental_use_pfor=False)
    np.testing.assert_allclose(jx.numpy(), lx.numpy())
    np.testing.assert_allclose(jv.numpy(), lv.numpy())


def test_batch_jacobian_vectorised_matches_loop_and_finite_differences():
    w = rng.standard_normal((3, 5))

    def fn(x):
        return tf.concat([tf.tanh(tf.matmul(x, w)), tf.reduce_sum(x * x, axis=1, keepdims=True)], axis=1)

    xs = rng.standard_normal((4, 3))
    tape, y, (x,) = tape_and_target(fn, [xs])
    with counted() as delta:
        fast = tape.batch_jacobian(y, x)
    assert delta == {"vectorized": 1, "fallback": 0, "backward_passes": 1}
    slow = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    assert fast.shape == (4, 6, 3)
    np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-12, atol=1e-12)
    full = numeric_jacobian(fn, [xs], 0)  # [4, 6, 4, 3]
    np.testing.assert_allclose(fast.numpy(), np.stack([full[b, :, b, :] for b in range(4)]), rtol=1e-5, atol=1e-6)


def test_batch_jacobian_unconnected():
    x = tf.constant(np.ones((2, 3)))
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.constant(np.ones((2, 4))) * 2.0
    # TensorFlow's batch_jacobian gives zeros for an unconnected source with either setting.
    for unconnected in (tf.UnconnectedGradients.NONE, tf.UnconnectedGradients.ZERO):
        z = t.batch_jacobian(y, x, unconnected_gradients=unconnected)
        assert z.shape == (2, 4, 3) and not z.numpy().any()


def _called_function_jacobian():
    @tf.function
    def inner(x):
        return tf.tanh(x) * x

    x = tf.constant([0.5, 1.0, -2.0], tf.float64)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = inner(x)
    xn = x.numpy()
    return t, y, x, np.diag(np.tanh(xn) + xn / np.cosh(xn) ** 2)


def test_called_function_is_vectorised_through_the_call():
    # A function called under the tape leaves a PartitionedCall in the backward graph: its callee is
    # vectorised node by node with the call's arguments.
    t, y, x, want = _called_function_jacobian()
    with counted() as delta:
        j = t.jacobian(y, x)
    assert delta == {"vectorized": 1, "fallback": 0, "backward_passes": 1}, jacobians.last_fallback
    np.testing.assert_allclose(j.numpy(), want)


def test_op_without_rule_inside_a_call_falls_back_to_the_loop(monkeypatch):
    t, y, x, want = _called_function_jacobian()
    monkeypatch.setitem(pfor._kinds, "Mul", "fallback")  # as if Mul's registry row declared no rule
    with counted() as delta:
        j = t.jacobian(y, x)
    assert delta == {"vectorized": 0, "fallback": 1, "backward_passes": 3}
    assert jacobians.last_fallback.startswith("PartitionedCall: in __inference_inner")
    assert "no batching rule for Mul" in jacobians.last_fallback
    np.testing.assert_allclose(j.numpy(), want)


def test_missing_rule_falls_back(monkeypatch):
    monkeypatch.setitem(pfor._kinds, "Mul", "fallback")  # as if Mul's registry row declared no rule
    x = tf.constant([1., 2.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x * 3.0
    with counted() as delta:
        j = t.jacobian(y, x)
    assert delta["fallback"] == 1 and delta["backward_passes"] == 2
    assert jacobians.last_fallback == "no batching rule for Mul (its registry row declares 'fallback')"
    np.testing.assert_allclose(j.numpy(), np.diag([6., 12.]))


def test_under_an_outer_tape_falls_back_and_second_derivatives_are_right():
    x = tf.constant([0.3, -0.7, 1.1], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.tanh(x) * tf.reduce_sum(x)
        with counted() as delta:
            j = inner.jacobian(y, x)
    assert delta["fallback"] == 1 and "another tape" in jacobians.last_fallback
    with counted() as delta:
        h = outer.jacobian(j, x)
    assert delta["vectorized"] == 1
    expected = numeric_jacobian(lambda v: tf.reshape(_exact_jacobian(v), [3, 3]), [x.numpy()], 0)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-5, atol=1e-6)


def _exact_jacobian(v):
    """d/dx of tanh(x) * sum(x): diag(sech²(x)) sum(x) + tanh(x) 1ᵀ."""
    s = tf.reduce_sum(v)
    sech2 = tf.reshape(1.0 - tf.tanh(v) ** 2, [3, 1])
    return tf.eye(3, dtype=tf.float64) * sech2 * s + tf.reshape(tf.tanh(v), [3, 1]) * tf.ones([1, 3], tf.float64)


def test_jacobian_inside_a_function_is_vectorised():
    @tf.function
    def jac(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.tanh(x) * x
        return t.jacobian(y, x)

    x = tf.constant([0.5, 1.0, -2.0], tf.float64)
    with counted() as delta:
        j = jac(x)
    assert delta["vectorized"] == 1
    xn = x.numpy()
    np.testing.assert_allclose(j.numpy(), np.diag(np.tanh(xn) + xn / np.cosh(xn) ** 2))


@pytest.mark.parametrize("name", ["mlp_vector", "softmax", "elementwise_broadcast"])
def test_against_tensorflow(name):
    # Never skipped: CI installs tensorflow-cpu, and a missing TensorFlow must fail this test rather than
    # silently drop the comparison.
    import tensorflow as tf2
    fn, values = CASES[name]
    tape, target, sources = tape_and_target(fn, values)
    ours = tape.jacobian(target, sources)
    ref_sources = [tf2.constant(v) for v in values]
    with tf2.GradientTape() as ref_tape:
        ref_tape.watch(ref_sources)
        ref_target = fn_for_tensorflow(name, tf2)(*ref_sources)
    theirs = ref_tape.jacobian(ref_target, ref_sources)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def fn_for_tensorflow(name, tf2):
    """The CASES functions, spelled with TensorFlow's module (the same API)."""
    import types

    fn, _ = CASES[name]
    return types.FunctionType(fn.__code__, {**fn.__globals__, "tf": tf2}, closure=fn.__closure__)


# ---- the batching rules, one op at a time: a graph traced from f(a), run on a batch of a's, against f on
# each a alone.


def trace(f, shape):
    tr = _C.Trace("f", True)
    a = tr.add_argument(tf.float64._enum, tuple(shape), "a")
    tr.enter()
    try:
        out = f(a)
    finally:
        tr.exit()
    return tr.finish(list(out) if isinstance(out, (list, tuple)) else [out])


K = rng.standard_normal((3, 4))
V = rng.standard_normal(4)
RULE_CASES = {
    "unary": lambda a: (tf.tanh(a) + tf.sin(a) * tf.exp(-tf.abs(a)) + tf.nn.relu(a) + tf.sigmoid(a)
                        + tf.math.softplus(a) + tf.nn.elu(a) + tf.square(a) + tf.sqrt(tf.abs(a)) + tf.cos(a)),
    "broadcasting": lambda a: a * V + K / (a * a + 1.) - tf.maximum(a, K) + tf.pow(tf.abs(a), V),
    "broadcast_rank_up": lambda a: a[0] * tf.reshape(a, [3, 4, 1])[:, :1, :],
    "select_compare_cast": lambda a: tf.where(a > 0., a, K) + tf.cast(a > V, tf.float64),
    "clip_addn": lambda a: tf.clip_by_value(K, -tf.abs(a), tf.abs(a)) + tf.add_n([a, K, a]),
    "reductions": lambda a: [tf.reduce_sum(a, 1), tf.reduce_mean(a), tf.reduce_max(a, 0, keepdims=True),
                             tf.reduce_min(a, -1), tf.reduce_prod(a, [0, 1]), tf.reduce_logsumexp(a, 1),
                             tf.nn.l2_loss(a)],
    "softmax": lambda a: [tf.nn.softmax(a), tf.nn.log_softmax(a, axis=0)],
    "matmul": lambda a: [tf.matmul(a, K, transpose_b=True), tf.matmul(K, a, transpose_a=True),
                         tf.matmul(K, a, transpose_b=True), tf.matmul(a, a, transpose_a=True)],
    "matmul_batch_broadcast": lambda a: [tf.matmul(tf.constant(rng.standard_normal((2, 5, 3))), a),
                                         tf.matmul(tf.reshape(a, [2, 3, 2]), tf.constant(rng.standard_normal((2, 5))))],
    "reshape_transpose": lambda a: tf.transpose(tf.reshape(a, [2, -1, 3]), [2, 0, 1]),
    "expand_squeeze": lambda a: tf.squeeze(tf.expand_dims(a, -1)) + tf.squeeze(tf.reshape(a, [1, 3, 1, 4])),
    "broadcast_to_tile_fill": lambda a: [tf.broadcast_to(tf.reshape(a, [3, 1, 4]), [2, 3, 5, 4]),
                                         tf.tile(a, [2, 3]), tf.fill([2, 3], tf.reduce_sum(a))],
    "slices": lambda a: [tf.slice(a, [1, 0], [2, -1]), a[1:, ::2], a[..., 1], a[None, :, 2:3], a[::-1, 1:3]],
    "pad": lambda a: [tf.pad(a, [[1, 0], [2, 1]]), tf.pad(a, [[1, 1], [1, 1]], mode="REFLECT")],
    "concat_stack_unstack_split": lambda a: [tf.concat([a, K, a], 1), tf.stack([a, K], -1)]
                                            + tf.unstack(a, axis=1) + tf.split(a, [1, 3], axis=-1),
    "gather_segment_sum": lambda a: [tf.gather(a, [3, 1], axis=1),
                                     tf.math.unsorted_segment_sum(a, [0, 2, 0], 3),
                                     tf.math.unsorted_segment_sum(a, [[0, 1, 0, 1], [1, 1, 0, 0], [2, 2, 2, 0]], 3)],
    "bias_add_cumsum": lambda a: [tf.nn.bias_add(a, V) + tf.nn.bias_add(K, a[0]),
                                  tf.math.cumsum(a, axis=1, exclusive=True)],
    "like_identity": lambda a: tf.zeros_like(a) + tf.ones_like(a) * tf.identity(a) + tf.stop_gradient(a),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_batching_rule(name):
    gf = trace(RULE_CASES[name], [3, 4])
    n = 5
    batch = rng.standard_normal((n, 3, 4))
    got = pfor._Vectorizer(gf, tf.constant(batch), n).run()
    for k in range(n):
        want = gf([tf.constant(batch[k])])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy()[k], w.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, message", [
    (lambda a: tf.gather(tf.constant(V), tf.cast(tf.abs(a[0]), tf.int32) % 4),
     "GatherV2: only the first input may depend on the seed"),
    (lambda a: tf.pad(a, [[0, 1], [1, 0]], constant_values=2.5), "Pad: a padding value other than 0"),
])
def test_unbatchable_is_reported(f, message):
    gf = trace(f, [3, 4])
    with pytest.raises(pfor.Unbatchable, match=message):
        pfor._Vectorizer(gf, tf.constant(np.zeros((2, 3, 4))), 2).run()


def test_attributes_are_read_from_their_printed_form():
    attrs = pfor._parse_attrs('{begin=[1,-2], mode="REFLECT", keepdims=true, axis=-1, DstT=float32, '
                              'constant_value=2.5, value=<float32[2]>, empty=[]}')
    assert attrs == {"begin": [1, -2], "mode": "REFLECT", "keepdims": True, "axis": -1, "DstT": tf.float32,
                     "constant_value": 2.5, "value": None, "empty": []}


@pytest.mark.parametrize("name", ["mlp", "slices_pad"])
def test_hessian_as_jacobian_of_a_gradient(name):
    w1, w2 = rng.standard_normal((4, 6)), rng.standard_normal((6, 3))
    f = {"mlp": lambda x: tf.reduce_sum(tf.nn.softmax(tf.matmul(tf.tanh(tf.matmul(tf.reshape(x, [1, 4]), w1)), w2))),
         "slices_pad": lambda x: (tf.reduce_sum(x[1:] * x[:-1] * tf.exp(x[::2][0]))
                                  + tf.reduce_sum(tf.pad(x * x, [[1, 2]]) ** 2))}[name]
    x = tf.constant(rng.standard_normal(4))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    with counted() as delta:
        h = outer.jacobian(g, x)
    assert delta["vectorized"] == 1
    np.testing.assert_allclose(h.numpy(), outer.jacobian(g, x, experimental_use_pfor=False).numpy(), atol=1e-12)
    np.testing.assert_allclose(h.numpy(), h.numpy().T, atol=1e-10)


def test_backward_pass_that_cannot_be_traced_falls_back():
    @tf.custom_gradient
    def scaled(x):
        def grad(dy):
            return dy * float(np.abs(dy.numpy()).sum())  # needs concrete values: cannot be traced

        return x * 1.0, grad

    x = tf.constant([1., 2., 3.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = scaled(x * x)
    with counted() as delta:
        j = t.jacobian(y, x)
    assert delta["fallback"] == 1 and jacobians.last_fallback.startswith("tracing the backward pass failed")
    np.testing.assert_allclose(j.numpy(), np.diag([2., 4., 6.]))


def test_batching_rules_follow_the_registry():
    # A "custom" row needs its rule here; a rule for an op whose row declares a shared kind or the fallback
    # would never run.
    kinds = {"elementwise", "broadcasting", "custom", "fallback", "undeclared"}
    for name in _C.op_names():
        kind = pfor.batching_kind(name)
        assert kind in kinds, name
        if kind == "custom":
            assert name in pfor._CUSTOM, f"{name} declares a custom batching rule but pfor.py has none"
    for name in pfor._CUSTOM:
        assert pfor.batching_kind(name) in ("custom", "undeclared"), name


def test_declared_kinds_batch_every_elementwise_op():
    x = tf.constant([0.3, 0.6, 0.9], tf.float64)
    for name in ("Sin", "Sigmoid", "Softplus", "Erf"):
        assert pfor.batching_kind(name) == "elementwise"
        op = _C.op(name)
        with tf.GradientTape() as t:
            t.watch(x)
            y = op(x) * x
        with counted() as delta:
            j = t.jacobian(y, x)
        assert delta["vectorized"] == 1 and delta["fallback"] == 0, name
        with tf.GradientTape() as t2:
            t2.watch(x)
            y2 = op(x) * x
        np.testing.assert_allclose(j.numpy(), t2.jacobian(y2, x, experimental_use_pfor=False).numpy())

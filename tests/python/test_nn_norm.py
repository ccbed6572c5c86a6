"""Normalization (src/ember/ops/nn_norm.cc, python/ember/ops/nn_norm_ops.py) against TensorFlow 2.21:
fused_batch_norm in training, inference and running-average modes, both layouts and 5-D, with gradients of
first and second order (a Hessian-vector product of a small CNN too);
batch_normalization and moments; local_response_normalization and its gradient; y's gradient against finite
differences in float64 (which TensorFlow's kernels do not take); bad input; None dims in a function."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(11)


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(ours, theirs, tol=2e-5):
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


X, SCALE, OFFSET, MEAN = _r(2, 3, 4, 5), _r(5), _r(5), _r(5)
VAR = RNG.uniform(0.5, 1.5, 5).astype(np.float32)


def _fbn(m):
    return m.nn.fused_batch_norm if m is em else tf.compat.v1.nn.fused_batch_norm


MODES = {
    "training": dict(),
    "inference": dict(mean=MEAN, variance=VAR, is_training=False),
    "running_average": dict(mean=MEAN, variance=VAR, exponential_avg_factor=0.3),
}


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_fused_batch_norm_and_its_gradients_match_tensorflow(mode, fmt):
    x = X if fmt == "NHWC" else np.moveaxis(X, -1, 1).copy()

    def run(m):
        xs = [m.constant(x), m.constant(SCALE), m.constant(OFFSET)]
        with m.GradientTape() as tape:
            tape.watch(xs)
            outs = _fbn(m)(*xs, epsilon=0.01, data_format=fmt, **MODES[mode])
            loss = m.reduce_sum(outs[0] * m.sin(outs[0]))
        return [o.numpy() for o in outs] + [g.numpy() for g in tape.gradient(loss, xs)]

    _close(run(em), run(tf), 3e-5)


def test_fused_batch_norm_of_5d_input_matches_tensorflow():
    x = _r(2, 3, 4, 2, 5)
    _close(em.nn.fused_batch_norm(x, SCALE, OFFSET, data_format="NDHWC"),
           tf.compat.v1.nn.fused_batch_norm(x, SCALE, OFFSET, data_format="NDHWC"))


def _finite_differences(loss, args, k, step=1e-6):
    """d loss / d args[k] by central differences (float64 arrays)."""
    numeric = np.zeros_like(args[k])
    for idx in np.ndindex(args[k].shape):
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        plus[k][idx] += step
        minus[k][idx] -= step
        numeric[idx] = (float(loss(*plus)) - float(loss(*minus))) / (2 * step)
    return numeric


@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_gradient_of_y_matches_finite_differences(training):
    x, scale, offset = _r(2, 2, 3, 3, dtype=np.float64), _r(3, dtype=np.float64), _r(3, dtype=np.float64)
    mean, var = _r(3, dtype=np.float64), RNG.uniform(0.5, 1.5, 3)
    weights = _r(2, 2, 3, 3, dtype=np.float64)

    def loss(*args):
        kw = {} if training else dict(mean=mean, variance=var, is_training=False)
        return em.reduce_sum(em.nn.fused_batch_norm(*args, epsilon=0.01, **kw)[0] * weights)

    args = [x, scale, offset]
    xs = [em.constant(a) for a in args]
    with em.GradientTape() as tape:
        tape.watch(xs)
        total = loss(*xs)
    for k, g in enumerate(tape.gradient(total, xs)):
        numeric = _finite_differences(loss, args, k)
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-6, atol=1e-7, err_msg=f"input {k}")


def _second_order(m, fmt, mode, args, weights, traced=False):
    """The gradient w.r.t. x, scale and offset of a loss of the first-order gradients (a nested tape), so
    FusedBatchNormGradV3 is differentiated w.r.t. y_backprop (which depends on x through the loss), x and
    scale."""
    kw = {k: (m.constant(v) if isinstance(v, np.ndarray) else v) for k, v in MODES[mode].items()}

    def step(x, scale, offset):
        with m.GradientTape() as outer:
            outer.watch([x, scale, offset])
            with m.GradientTape() as inner:
                inner.watch([x, scale, offset])
                y = _fbn(m)(x, scale, offset, epsilon=0.01, data_format=fmt, **kw)[0]
                loss = m.reduce_sum(y * m.sin(y))
            gx, gs, go = inner.gradient(loss, [x, scale, offset])
            total = m.reduce_sum(gx * weights[0]) + m.reduce_sum(gs * weights[1]) + m.reduce_sum(go * go)
        return [total] + outer.gradient(total, [x, scale, offset])

    if traced:
        step = m.function(step)
    return [t.numpy() for t in step(*[m.constant(a) for a in args])]


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_second_order_gradient_matches_tensorflow(mode, fmt):
    x = X if fmt == "NHWC" else np.moveaxis(X, -1, 1).copy()
    weights = [_r(*x.shape), _r(5)]
    theirs = _second_order(tf, fmt, mode, [x, SCALE, OFFSET], weights)
    _close(_second_order(em, fmt, mode, [x, SCALE, OFFSET], weights), theirs, 2e-4)
    _close(_second_order(em, fmt, mode, [x, SCALE, OFFSET], weights, traced=True), theirs, 2e-4)


@pytest.mark.parametrize("fmt", ["NHWC", "NCDHW"])
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_second_order_gradient_matches_finite_differences(mode, fmt):
    shape = (2, 2, 3, 3) if fmt == "NHWC" else (2, 3, 2, 1, 2)
    channels = shape[-1] if fmt == "NHWC" else shape[1]
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(shape), rng.standard_normal(channels), rng.standard_normal(channels)]
    weights = [rng.standard_normal(shape), rng.standard_normal(channels)]
    kw = {} if mode == "training" else dict(mean=rng.standard_normal(channels),
                                            variance=rng.uniform(0.5, 1.5, channels), is_training=False)

    def first_order_loss(x, scale, offset):
        with em.GradientTape() as inner:
            inner.watch([x, scale, offset])
            y = em.nn.fused_batch_norm(x, scale, offset, epsilon=0.01, data_format=fmt, **kw)[0]
            loss = em.reduce_sum(y * em.sin(y))
        gx, gs, go = inner.gradient(loss, [x, scale, offset])
        return em.reduce_sum(gx * weights[0]) + em.reduce_sum(gs * weights[1]) + em.reduce_sum(go * go)

    xs = [em.constant(a) for a in args]
    with em.GradientTape() as outer:
        outer.watch(xs)
        total = first_order_loss(*xs)
    for k, g in enumerate(outer.gradient(total, xs)):
        numeric = _finite_differences(lambda *a: first_order_loss(*map(em.constant, a)), args, k)
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-5, atol=1e-6, err_msg=f"input {k}")


@pytest.mark.parametrize("training", [True, False])
def test_hessian_vector_product_of_a_cnn_with_batch_norm_matches_tensorflow(training):
    """Conv2D -> FusedBatchNormV3 -> Relu -> Conv2D, the product of the loss's Hessian w.r.t. the filters and
    batch-norm scale with a vector (forward-over-backward by a nested tape, as TensorFlow's HVP examples)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    params = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(3, 3, 3, 4), (4,), (4,), (3, 3, 4, 2)]]
    vectors = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    mean, var = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 1.5, 4).astype(np.float32)

    def run(m):
        ps = [m.constant(p) for p in params]
        kw = {} if training else dict(mean=m.constant(mean), variance=m.constant(var), is_training=False)

        @m.function
        def hvp(*ps):
            with m.GradientTape() as outer:
                outer.watch(ps)
                with m.GradientTape() as inner:
                    inner.watch(ps)
                    h = m.nn.conv2d(m.constant(x), ps[0], 1, "SAME")
                    h = m.nn.relu(_fbn(m)(h, ps[1], ps[2], epsilon=1e-3, **kw)[0])
                    loss = m.reduce_sum(m.square(m.nn.conv2d(h, ps[3], 2, "VALID")))
                grads = inner.gradient(loss, ps)
                dot = m.add_n([m.reduce_sum(g * v) for g, v in zip(grads, vectors)])
            return outer.gradient(dot, ps)

        return [t.numpy() for t in hvp(*ps)]

    _close(run(em), run(tf), 2e-3)


def test_batch_normalization_and_moments_match_tensorflow():
    _close([em.nn.batch_normalization(X, MEAN, VAR, OFFSET, SCALE, 1e-3)],
           [tf.nn.batch_normalization(X, MEAN, VAR, OFFSET, SCALE, 1e-3)])
    _close([em.nn.batch_normalization(X, MEAN, VAR, None, None, 1e-3)],
           [tf.nn.batch_normalization(X, MEAN, VAR, None, None, 1e-3)])
    _close(em.nn.moments(X, [0, 1, 2]), tf.nn.moments(X, [0, 1, 2]))
    _close(em.nn.moments(X, [1], keepdims=True), tf.nn.moments(X, [1], keepdims=True))


@pytest.mark.parametrize("params", [dict(), dict(depth_radius=2, bias=1.5, alpha=0.3, beta=0.7),
                                    dict(depth_radius=0, bias=2.0, alpha=1.0, beta=1.0)])
def test_local_response_normalization_matches_tensorflow(params):
    def run(m):
        x = m.constant(X)
        with m.GradientTape() as tape:
            tape.watch(x)
            y = m.nn.local_response_normalization(x, **params)
            loss = m.reduce_sum(y * m.sin(y))
        return [y.numpy(), tape.gradient(loss, x).numpy()]

    _close(run(em), run(tf), 1e-5)


def test_unknown_batch_dim_in_a_function():
    f = em.function(lambda x: em.nn.fused_batch_norm(x, SCALE, OFFSET)[0] + em.nn.lrn(x, 1),
                    input_signature=[em.TensorSpec([None, 3, 4, 5], em.float32)])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 3, 4, 5]
    _close([f(X)], [tf.compat.v1.nn.fused_batch_norm(X, SCALE, OFFSET)[0] + tf.nn.lrn(X, 1)])


@pytest.mark.parametrize("call,message", [
    (lambda: em.nn.fused_batch_norm(X, SCALE[:4], OFFSET), r"FusedBatchNormV3: scale must have one element per channel"),
    (lambda: em.nn.fused_batch_norm(X, SCALE, OFFSET, data_format="HWCN"), r"FusedBatchNormV3: data_format must be"),
    (lambda: em._C.op("FusedBatchNormV3")(em.constant(X[0]), *[em.constant(v) for v in (SCALE, OFFSET, MEAN, VAR)],
                                          0.001, 1.0, "NHWC", True), r"FusedBatchNormV3: x must be 4-D"),
    (lambda: em.nn.lrn(X[0]), r"LRN: input must be 4-D"),
    (lambda: em.nn.lrn(X, depth_radius=-1), r"LRN: depth_radius must be >= 0"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        call()


def test_inference_without_statistics_is_a_value_error():
    with pytest.raises(ValueError, match="mean"):
        em.nn.fused_batch_norm(X, SCALE, OFFSET, is_training=False)


@pytest.mark.parametrize("shape", [(3, 5, 7, 16), (2, 11, 13, 3), (1, 1, 130, 64), (4, 9, 9, 1)])
def test_channels_last_batch_norm_matches_float64_and_not_the_thread_count(shape):
    """The NHWC loops (Note [Batch-norm loops]): row blocks of a fixed size summed in block order. Rows that
    are not a multiple of the block, a channel mean far from 0 (the one-pass variance must not cancel), and
    the same bits on one thread as on two."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 0.5 + 40.0).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    c = shape[-1]
    scale, offset = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.standard_normal(c).astype(np.float32)

    def run():
        xt, st, ot = em.constant(x), em.constant(scale), em.constant(offset)
        with em.GradientTape() as tape:
            tape.watch([xt, st, ot])
            y, mean, var = em.nn.fused_batch_norm(xt, st, ot, epsilon=1e-3, is_training=True)
        grads = tape.gradient(y, [xt, st, ot], output_gradients=em.constant(dy))
        return [t.numpy() for t in (y, mean, var, *grads)]

    before = em.config.threading.get_intra_op_parallelism_threads()
    try:
        em.config.threading.set_intra_op_parallelism_threads(1)
        one = run()
        em.config.threading.set_intra_op_parallelism_threads(2)
        two = run()
    finally:
        em.config.threading.set_intra_op_parallelism_threads(before)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    x64, dy64 = x.astype(np.float64).reshape(-1, c), dy.astype(np.float64).reshape(-1, c)
    n = x64.shape[0]
    m, v = x64.mean(0), x64.var(0)
    inv = 1 / np.sqrt(v + 1e-3)
    xhat = (x64 - m) * inv
    y_ref = xhat * scale + offset
    dscale = (dy64 * xhat).sum(0)
    doffset = dy64.sum(0)
    dx_ref = scale * inv * (dy64 - doffset / n - xhat * dscale / n)
    y, mean, var, dx, ds, do = one
    np.testing.assert_allclose(mean, m, rtol=1e-6)
    np.testing.assert_allclose(var, v * n / max(n - 1, 1), rtol=2e-4, atol=1e-6)  # returned unbiased
    np.testing.assert_allclose(y.reshape(-1, c), y_ref, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(dx.reshape(-1, c), dx_ref, rtol=1e-3, atol=2e-3)
    np.testing.assert_allclose(ds, dscale, rtol=1e-3, atol=2e-3)
    np.testing.assert_allclose(do, doffset, rtol=1e-4, atol=1e-3)



# ---- 16-bit x with float32 scale, offset and statistics (TensorFlow's T and U; Note [16-bit batch norm])

HALF_TOLERANCE = {"float16": 4e-3, "bfloat16": 3e-2}  # a few units in the last place of y and x_backprop
HALF_WEIGHTS = _r(*X.shape)


def _half_batch_norm(m, dtype, fmt, mode, traced=False):
    """fused_batch_norm's outputs and the gradients w.r.t. x, scale and offset of a loss of y: (their dtype
    names, their values in float32)."""
    x = X if fmt == "NHWC" else np.moveaxis(X, -1, 1).copy()
    weights = m.constant(HALF_WEIGHTS if fmt == "NHWC" else np.moveaxis(HALF_WEIGHTS, -1, 1).copy())
    kw = {k: (m.constant(v) if isinstance(v, np.ndarray) else v) for k, v in MODES[mode].items()}

    def step(x, scale, offset):
        with m.GradientTape() as tape:
            tape.watch([x, scale, offset])
            outs = m.compat.v1.nn.fused_batch_norm(x, scale, offset, epsilon=0.01, data_format=fmt, **kw)
            loss = m.reduce_sum(m.sin(m.cast(outs[0], m.float32)) * weights)
        return list(outs) + tape.gradient(loss, [x, scale, offset])

    if traced:
        step = m.function(step)
    results = step(m.cast(m.constant(x), dtype), m.constant(SCALE), m.constant(OFFSET))
    return [r.dtype.name for r in results], [np.asarray(r.numpy(), np.float32) for r in results]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_fused_batch_norm_and_its_gradients_match_tensorflow(dtype, mode, fmt, traced):
    theirs_types, theirs = _half_batch_norm(tf, dtype, fmt, mode)
    ours_types, ours = _half_batch_norm(em, dtype, fmt, mode, traced)
    assert ours_types == theirs_types == [dtype, "float32", "float32", dtype, "float32", "float32"]
    _close(ours, theirs, HALF_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_second_order_gradient_is_the_float32_one_rounded(dtype):
    """A nested tape through a 16-bit batch norm: the rule computes in float32 (U) and hands x and y_backprop
    their gradients in the 16-bit type; the values are the float32 run's within the 16-bit precision."""
    weights = [_r(*X.shape), _r(5)]
    args16 = [em.cast(em.constant(X), dtype), em.constant(SCALE), em.constant(OFFSET)]
    wide = _second_order(em, "NHWC", "training", [X, SCALE, OFFSET], weights)

    def step(x, scale, offset):
        with em.GradientTape() as outer:
            outer.watch([x, scale, offset])
            with em.GradientTape() as inner:
                inner.watch([x, scale, offset])
                y = em.cast(em.compat.v1.nn.fused_batch_norm(x, scale, offset, epsilon=0.01)[0], em.float32)
                loss = em.reduce_sum(y * em.sin(y))
            gx, gs, go = inner.gradient(loss, [x, scale, offset])
            total = (em.reduce_sum(em.cast(gx, em.float32) * weights[0]) + em.reduce_sum(gs * weights[1]) +
                     em.reduce_sum(go * go))
        return [total] + outer.gradient(total, [x, scale, offset])

    narrow = step(*args16)
    assert [t.dtype.name for t in narrow] == ["float32", dtype, "float32", "float32"]
    tolerance = 10 * HALF_TOLERANCE[dtype]  # x rounded to 16 bits first, then every intermediate
    for got, want in zip(narrow, wide):
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), want, rtol=tolerance,
                                   atol=tolerance * np.abs(want).max())


def test_16bit_x_takes_float32_statistics_as_tensorflows():
    x16, scale16, offset16 = X.astype(np.float16), SCALE.astype(np.float16), OFFSET.astype(np.float16)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.compat.v1.nn.fused_batch_norm(tf.constant(x16), tf.constant(scale16), tf.constant(offset16))
    with pytest.raises(em.errors.InvalidArgumentError,
                       match="FusedBatchNormV3: input 'scale' must have a dtype in {float32, float64}, got float16"):
        em.compat.v1.nn.fused_batch_norm(em.constant(x16), em.constant(scale16), em.constant(offset16))
    with pytest.raises(em.errors.InvalidArgumentError,
                       match="FusedBatchNormV3: scale, offset and the statistics \\(TensorFlow's U\\) must be "
                             "float32 for float16 x, got float64"):
        em.compat.v1.nn.fused_batch_norm(em.constant(x16), *[em.constant(v.astype(np.float64)) for v in
                                                             (SCALE, OFFSET, MEAN, VAR)], is_training=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_batch_normalization_matches_tensorflow(dtype):
    def run(m):
        x = m.cast(m.constant(X), dtype)
        return m.nn.batch_normalization(x, m.constant(MEAN), m.constant(VAR), m.constant(OFFSET),
                                        m.constant(SCALE), 0.01)

    ours, theirs = run(em), run(tf)
    assert ours.dtype.name == theirs.dtype.name == dtype
    _close([np.asarray(ours.numpy(), np.float32)], [np.asarray(theirs.numpy(), np.float32)],
           HALF_TOLERANCE[dtype])

"""Convolutions and pooling (src/ember/ops/nn_conv.cc, nn_pool.cc; python/ember/ops/nn_conv_ops.py) beyond the
registry tables (conv_op_examples.py): the tf.nn wrappers against TensorFlow 2.21, NCHW against NHWC, the cases
TensorFlow's CPU kernels do not run (float64 NCHW, dilated or grouped gradients) against finite differences,
float16 and bfloat16 against TensorFlow and against float32 rounded once, max-pool gradients with a consistent
orig_output, dynamic shapes, bad input, GraphDef round trips and a small
CNN trained with GradientTape against TensorFlow's losses."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember import _C

RNG = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(ours, theirs, tol=2e-5):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=tol, atol=tol)


def _value_and_grads(fw, fn, *args):
    xs = [fw.constant(a) for a in args]
    with fw.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
        loss = fw.reduce_sum(y * fw.sin(y))  # a weighting that differs per element
    return [y.numpy()] + [g.numpy() for g in tape.gradient(loss, xs)]


# ---- the tf.nn wrappers against TensorFlow, value and gradients ------------------------------------------

def _wrapper_cases():
    x4, x3, x5 = _r(2, 7, 9, 4), _r(2, 11, 3), _r(2, 5, 6, 7, 3)
    w4, w3, w5 = _r(3, 2, 4, 5), _r(3, 3, 4), _r(2, 3, 2, 3, 4)
    dw, pw = _r(3, 3, 4, 2), _r(1, 1, 8, 5)
    return {
        "conv2d_same_stride2": (lambda m, x, w: m.nn.conv2d(x, w, 2, "SAME"), x4, w4),
        "conv2d_valid_strides": (lambda m, x, w: m.nn.conv2d(x, w, [1, 2, 3, 1], "VALID"), x4, w4),
        "conv2d_explicit": (lambda m, x, w: m.nn.conv2d(x, w, 1, [[0, 0], [1, 2], [0, 3], [0, 0]]), x4, w4),
        "conv2d_1x1": (lambda m, x, w: m.nn.conv2d(x, w, 1, "VALID"), x4, _r(1, 1, 4, 6)),
        "conv1d": (lambda m, x, w: m.nn.conv1d(x, w, 2, "SAME"), x3, w3),
        "conv1d_valid": (lambda m, x, w: m.nn.conv1d(x, w, 1, "VALID"), x3, w3),
        "conv3d": (lambda m, x, w: m.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME"), x5, w5),
        "convolution_2d": (lambda m, x, w: m.nn.convolution(x, w, strides=2, padding="SAME"), x4, w4),
        "convolution_1d": (lambda m, x, w: m.nn.convolution(x, w, padding="VALID"), x3, w3),
        "depthwise": (lambda m, x, w: m.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"), x4, dw),
        "depthwise_stride": (lambda m, x, w: m.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID"), x4, dw),
        "separable": (lambda m, x, w: m.nn.separable_conv2d(x, w, pw, [1, 1, 1, 1], "SAME"), x4, dw),
        "conv2d_transpose": (lambda m, y, w: m.nn.conv2d_transpose(y, w, [2, 7, 9, 3], 2, "SAME"), _r(2, 4, 5, 6),
                             _r(3, 3, 3, 6)),
        "conv1d_transpose": (lambda m, y, w: m.nn.conv1d_transpose(y, w, [2, 11, 3], 2, "SAME"), _r(2, 6, 4),
                             _r(3, 3, 4)),
        "conv3d_transpose": (lambda m, y, w: m.nn.conv3d_transpose(y, w, [1, 4, 5, 6, 2], [1, 2, 1, 2, 1], "VALID"),
                             _r(1, 2, 3, 3, 3), _r(2, 3, 2, 2, 3)),
        "max_pool2d": (lambda m, x: m.nn.max_pool2d(x, [3, 2], [2, 2], "SAME"), x4),
        "avg_pool2d": (lambda m, x: m.nn.avg_pool2d(x, 3, 2, "SAME"), x4),
        "max_pool1d": (lambda m, x: m.nn.max_pool1d(x, 3, 2, "VALID"), x3),
        "avg_pool1d": (lambda m, x: m.nn.avg_pool1d(x, 2, 1, "SAME"), x3),
        "max_pool3d": (lambda m, x: m.nn.max_pool3d(x, 2, [1, 2, 1, 2, 1], "SAME"), x5),
        "avg_pool3d": (lambda m, x: m.nn.avg_pool3d(x, [2, 2, 3], 2, "VALID"), x5),
        "max_pool": (lambda m, x: m.nn.max_pool(x, 2, 2, "VALID"), x4),
        "pool_avg": (lambda m, x: m.nn.pool(x, [2, 3], "AVG", strides=[1, 2], padding="SAME"), x4),
    }


WRAPPERS = _wrapper_cases()


@pytest.mark.parametrize("case", sorted(WRAPPERS))
def test_wrappers_match_tensorflow(case):
    fn, *args = WRAPPERS[case]
    ours = _value_and_grads(em, lambda *a: fn(em, *a), *args)
    theirs = _value_and_grads(tf, lambda *a: fn(tf, *a), *args)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        assert o.shape == t.shape, (case, k)
        _close(o, t, 1e-4)


# ---- NCHW against NHWC (TensorFlow's CPU kernels run NCHW in float32 forward only) -------------------------

def _nchw(x):
    return np.moveaxis(x, -1, 1)


def _nhwc(x):
    return np.moveaxis(x, 1, -1)


CHANNEL_FIRST_CASES = {
    "conv2d": (lambda m, x, w, f: m.nn.conv2d(x, w, 2, "SAME", data_format=f, dilations=1), 4),
    "conv2d_dilated": (lambda m, x, w, f: m.nn.conv2d(x, w, 1, "VALID", data_format=f, dilations=2), 4),
    "conv2d_explicit": (lambda m, x, w, f: m.nn.conv2d(
        x, w, [1, 2], [[0, 0], [2, 1], [0, 1], [0, 0]] if f == "NHWC" else [[0, 0], [0, 0], [2, 1], [0, 1]],
        data_format=f), 4),
    "conv3d": (lambda m, x, w, f: m.nn.conv3d(x, w, [1, 2, 1, 1, 1] if f == "NDHWC" else [1, 1, 2, 1, 1], "SAME",
                                              data_format=f), 5),
    "depthwise": (lambda m, x, w, f: m.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", data_format=f), 4),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CHANNEL_FIRST_CASES))
def test_channels_first_is_channels_last_transposed(case, dtype):
    fn, rank = CHANNEL_FIRST_CASES[case]
    x = _r(2, 5, 6, 3, dtype=dtype) if rank == 4 else _r(2, 4, 5, 3, 3, dtype=dtype)
    w = _r(2, 3, 3, 2, dtype=dtype) if rank == 4 else _r(2, 2, 2, 3, 4, dtype=dtype)
    last, first = ("NHWC", "NCHW") if rank == 4 else ("NDHWC", "NCDHW")
    ours_last = _value_and_grads(em, lambda a, b: fn(em, a, b, last), x, w)
    ours_first = _value_and_grads(em, lambda a, b: fn(em, a, b, first), _nchw(x), w)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    _close(_nhwc(ours_first[0]), ours_last[0], tol)
    _close(_nhwc(ours_first[1]), ours_last[1], tol)
    _close(ours_first[2], ours_last[2], tol)
    if dtype == np.float32 and rank == 4 and "depthwise" not in case:  # TensorFlow's NCHW forward
        _close(ours_first[0], fn(tf, tf.constant(_nchw(x)), tf.constant(w), first).numpy(), 1e-4)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_channels_first_is_channels_last_transposed(kind, fmt):
    x = _r(2, 3, 7, 6, dtype=np.float64)
    pool = getattr(em.nn, f"{kind}_pool2d")
    ours = _value_and_grads(em, lambda a: pool(a, [3, 2], [2, 1], "SAME", data_format="NCHW"), x)
    ref = _value_and_grads(em, lambda a: pool(a, [3, 2], [2, 1], "SAME"), _nhwc(x))
    _close(_nhwc(ours[0]), ref[0], 1e-12)
    _close(_nhwc(ours[1]), ref[1], 1e-12)


# ---- float16 and bfloat16 (computed in float32, rounded once: Note [16-bit convolutions]) -----------------

_HALF_CASES = {
    "conv2d": (lambda m, x, w: m.nn.conv2d(x, w, [1, 2], "SAME", dilations=1), (2, 9, 8, 16), (3, 3, 16, 8)),
    "conv2d_nchw": (lambda m, x, w: m.nn.conv2d(x, w, 1, "VALID", data_format="NCHW"), (2, 16, 7, 6), (3, 2, 16, 4)),
    "conv2d_dilated": (lambda m, x, w: m.nn.conv2d(x, w, 1, "SAME", dilations=2), (1, 8, 8, 6), (3, 3, 6, 5)),
    "conv3d": (lambda m, x, w: m.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME"), (2, 4, 6, 5, 8), (2, 3, 3, 8, 4)),
    "depthwise": (lambda m, x, w: m.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"), (2, 7, 7, 6), (3, 3, 6, 2)),
}
# Relative to the largest magnitude of a result: a 16-bit rounding of each side plus TensorFlow's own.
_HALF_TOL = {"float16": 4e-3, "bfloat16": 3e-2}


def _half_value_and_grads(m, fn, dtype, x, w, compute_dtype=None):
    """The result and both gradients in `dtype`; with `compute_dtype`, the same 16-bit inputs and dy are
    computed in that dtype and the results rounded to `dtype` once."""
    xs = [m.cast(m.constant(a), dtype) for a in (x, w)]
    if compute_dtype is not None:
        xs = [m.cast(a, compute_dtype) for a in xs]
    with m.GradientTape() as tape:
        tape.watch(xs)
        y = fn(m, *xs)
    dy = m.cast(m.constant(RNG.standard_normal(y.shape).astype(np.float32)), dtype)
    if compute_dtype is not None:
        dy = m.cast(dy, compute_dtype)
    out = [y] + tape.gradient(y, xs, output_gradients=dy)
    if compute_dtype is not None:
        out = [m.cast(t, dtype) for t in out]
    return [m.cast(t, "float32").numpy() for t in out]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(_HALF_CASES))
def test_16_bit_convolutions_and_gradients_match_tensorflow(case, dtype):
    fn, x_shape, w_shape = _HALF_CASES[case]
    x, w = _r(*x_shape), _r(*w_shape)
    state = RNG.bit_generator.state
    ours = _half_value_and_grads(em, fn, dtype, x, w)
    RNG.bit_generator.state = state  # the same dy on both sides
    try:
        theirs = _half_value_and_grads(tf, fn, dtype, x, w)
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
        # Where TensorFlow's oneDNN kernels are off (its default on AMD CPUs), its float16 convolutions lack
        # NCHW and dilations: compare with TensorFlow's float32 result on the same 16-bit values, rounded once.
        RNG.bit_generator.state = state
        theirs = _half_value_and_grads(tf, fn, dtype, x, w, compute_dtype="float32")
    for k, (o, t) in enumerate(zip(ours, theirs)):
        scale = np.abs(t).max()
        np.testing.assert_allclose(o, t, rtol=0, atol=_HALF_TOL[dtype] * scale, err_msg=f"{case} result {k}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_convolution_is_the_float32_one_rounded_once(dtype):
    x, w = _r(2, 9, 8, 16), _r(3, 3, 16, 8)
    x16, w16 = em.cast(x, dtype), em.cast(w, dtype)
    wide = em.nn.conv2d(em.cast(x16, "float32"), em.cast(w16, "float32"), 1, "SAME")
    got = em.nn.conv2d(x16, w16, 1, "SAME")
    assert got.dtype == getattr(em, dtype)
    np.testing.assert_array_equal(em.cast(got, "float32").numpy(), em.cast(em.cast(wide, dtype), "float32").numpy())


def test_16_bit_convolution_in_a_function_and_the_fused_op_stays_float():
    x, w = em.cast(_r(1, 5, 5, 3), "float16"), em.cast(_r(3, 3, 3, 4), "float16")
    f = em.function(lambda x, w: em.nn.relu(em.nn.bias_add(em.nn.conv2d(x, w, 1, "SAME"), em.zeros([4], "float16"))))
    np.testing.assert_array_equal(f(x, w).numpy(), em.nn.relu(em.nn.conv2d(x, w, 1, "SAME")).numpy())
    with pytest.raises(em.errors.InvalidArgumentError, match=r"_FusedConv2D: .*float16"):
        _C.op("_FusedConv2D")(x, w, [em.zeros([4], "float16")], [1, 1, 1, 1], True, "SAME")


def test_int32_conv2d_and_its_input_backprop_wrap_as_tensorflow_and_the_others_refuse_int32():
    """TensorFlow 2.21 takes int32 for Conv2D and Conv2DBackpropInput only; products and sums wrap modulo 2^32."""
    x = RNG.integers(-2**20, 2**20, (2, 6, 5, 4)).astype(np.int32)
    w = RNG.integers(-2**15, 2**15, (3, 3, 4, 5)).astype(np.int32)
    dy = RNG.integers(-2**20, 2**20, (2, 3, 5, 5)).astype(np.int32)
    ours = [em.nn.conv2d(x, w, [1, 2, 1, 1], "SAME"),
            _C.op("Conv2DBackpropInput")(em.constant([2, 6, 5, 4]), w, dy, [1, 2, 1, 1], True, "SAME")]
    theirs = [tf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME"),
              tf.raw_ops.Conv2DBackpropInput(input_sizes=[2, 6, 5, 4], filter=w, out_backprop=dy, strides=[1, 2, 1, 1],
                                             padding="SAME")]
    for o, t in zip(ours, theirs):
        assert o.dtype == em.int32
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    x5, w5 = np.ones((1, 2, 2, 2, 1), np.int32), np.ones((1, 1, 1, 1, 1), np.int32)
    for call in (lambda m: m.nn.conv3d(x5, w5, [1] * 5, "VALID"),
                 lambda m: m.nn.depthwise_conv2d(x, np.ones((1, 1, 4, 1), np.int32), [1] * 4, "VALID"),
                 lambda m: (tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 3, 4, 5], out_backprop=dy,
                                                            strides=[1, 2, 1, 1], padding="SAME") if m is tf else
                            _C.op("Conv2DBackpropFilter")(x, em.constant([3, 3, 4, 5]), dy, [1, 2, 1, 1], True,
                                                          "SAME"))):
        with pytest.raises(tf.errors.InvalidArgumentError):
            call(tf)
        with pytest.raises(em.errors.InvalidArgumentError, match="int32"):
            call(em)


# ---- what TensorFlow's CPU kernels do not run: finite differences in float64 ------------------------------

def _finite_difference_check(fn, *args, eps=1e-6):
    args = [np.asarray(a, np.float64) for a in args]
    weights = RNG.standard_normal(np.asarray(fn(*[em.constant(a) for a in args])).shape)

    def loss(*vals):
        return float(np.sum(fn(*[em.constant(v) for v in vals]).numpy() * weights))

    xs = [em.constant(a) for a in args]
    with em.GradientTape() as tape:
        tape.watch(xs)
        total = em.reduce_sum(fn(*xs) * weights)
    grads = tape.gradient(total, xs)
    for k, (a, g) in enumerate(zip(args, grads)):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = [v.copy() for v in args], [v.copy() for v in args]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (loss(*plus) - loss(*minus)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-6, atol=1e-7, err_msg=f"input {k}")


FINITE_DIFFERENCE_CASES = {
    "conv2d_dilated_strided": (lambda x, w: em.nn.conv2d(x, w, [1, 2], "SAME", dilations=[2, 1]),
                               (1, 6, 7, 2), (2, 2, 2, 3)),
    "conv2d_grouped": (lambda x, w: em.nn.conv2d(x, w, 1, "SAME"), (1, 4, 4, 4), (3, 2, 2, 6)),
    "conv2d_nchw_explicit": (lambda x, w: em.nn.conv2d(x, w, 2, [[0, 0], [0, 0], [1, 2], [2, 0]],
                                                       data_format="NCHW"), (1, 2, 5, 6), (2, 3, 2, 2)),
    "depthwise_dilated": (lambda x, w: em.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=[2, 2]),
                          (1, 5, 5, 2), (2, 2, 2, 2)),
    "conv3d_ncdhw": (lambda x, w: em.nn.conv3d(x, w, [1, 1, 1, 2, 1], "SAME", data_format="NCDHW"),
                     (1, 2, 3, 4, 3), (2, 2, 2, 2, 2)),
}


@pytest.mark.parametrize("case", sorted(FINITE_DIFFERENCE_CASES))
def test_gradients_match_finite_differences(case):
    fn, xs, ws = FINITE_DIFFERENCE_CASES[case]
    _finite_difference_check(fn, RNG.standard_normal(xs), RNG.standard_normal(ws))


def test_grouped_conv2d_matches_tensorflow_forward():
    x, w = _r(2, 5, 5, 6), _r(3, 3, 2, 9)  # 3 groups of 2 input channels
    _close(em.nn.conv2d(x, w, 1, "SAME"), tf.nn.conv2d(x, w, 1, "SAME"), 1e-4)


def test_second_order_gradient_of_conv2d_matches_tensorflow():
    x, w = _r(1, 5, 5, 2), _r(3, 3, 2, 3)

    def hvp(m):
        xs = [m.constant(x), m.constant(w)]
        with m.GradientTape() as outer:
            outer.watch(xs)
            with m.GradientTape() as inner:
                inner.watch(xs)
                loss = m.reduce_sum(m.nn.conv2d(xs[0], xs[1], 1, "SAME") ** 2)
            gx, gw = inner.gradient(loss, xs)
            total = m.reduce_sum(gx * gx) + m.reduce_sum(gw)
        return [g.numpy() for g in outer.gradient(total, xs)]

    for o, t in zip(hvp(em), hvp(tf)):
        _close(o, t, 1e-3)


# ---- max-pool gradients with a consistent orig_output (TensorFlow matches against it) ---------------------

@pytest.mark.parametrize("rank", [4, 5])
def test_max_pool_grad_and_grad_grad_match_tensorflow(rank):
    x = _r(2, 5, 6, 3) if rank == 4 else _r(1, 4, 5, 3, 2)
    name = "MaxPool" if rank == 4 else "MaxPool3D"
    ksize, strides = ([1, 3, 2, 1], [1, 2, 2, 1]) if rank == 4 else ([1, 2, 2, 2, 1], [1, 2, 1, 2, 1])
    attrs = dict(ksize=ksize, strides=strides, padding="SAME")
    y = getattr(tf.raw_ops, name)(input=x, **attrs).numpy()
    dy, gx = _r(*y.shape), _r(*x.shape)
    extra = [[]] if rank == 4 else []  # MaxPoolGrad's explicit_paddings
    ours = _C.op(name + "Grad")(em.constant(x), em.constant(y), em.constant(dy), ksize, strides, "SAME", *extra,
                                "NHWC" if rank == 4 else "NDHWC")
    theirs = getattr(tf.raw_ops, name + "Grad")(orig_input=x, orig_output=y, grad=dy, **attrs)
    _close(ours, theirs, 1e-6)
    ours = _C.op(name + "GradGrad")(em.constant(x), em.constant(y), em.constant(gx), ksize, strides, "SAME",
                                    "NHWC" if rank == 4 else "NDHWC")
    theirs = getattr(tf.raw_ops, name + "GradGrad")(orig_input=x, orig_output=y, grad=gx, **attrs)
    _close(ours, theirs, 1e-6)


def test_second_order_gradient_of_max_pool_matches_tensorflow():
    x = _r(1, 6, 6, 2)

    def hvp(m):
        v = m.constant(x)
        with m.GradientTape() as outer:
            outer.watch(v)
            with m.GradientTape() as inner:
                inner.watch(v)
                loss = m.reduce_sum(m.nn.max_pool2d(v, 2, 2, "VALID") ** 3)
            g = inner.gradient(loss, v)
            total = m.reduce_sum(g * g)
        return outer.gradient(total, v).numpy()

    _close(hvp(em), hvp(tf), 1e-4)


# ---- dynamic shapes --------------------------------------------------------------------------------------

def test_unknown_batch_and_spatial_dims_in_a_function():
    w = em.constant(_r(3, 3, 3, 4))

    @em.function(input_signature=[em.TensorSpec([None, None, None, 3], em.float32)])
    def net(x):
        y = em.nn.relu(em.nn.conv2d(x, w, 2, "SAME"))
        return em.nn.max_pool2d(y, 2, 2, "VALID")

    out = net.get_concrete_function().structured_outputs
    assert out.shape.as_list() == [None, None, None, 4]
    for shape in ((1, 9, 8, 3), (3, 5, 12, 3)):
        x = _r(*shape)
        _close(net(x), tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(x, w.numpy(), 2, "SAME")), 2, 2, "VALID"), 1e-5)


def test_static_dims_are_inferred_from_known_spatial_sizes():
    w = em.constant(_r(3, 3, 3, 4))
    f = em.function(lambda x: em.nn.conv2d(x, w, [1, 2], "VALID"),
                    input_signature=[em.TensorSpec([None, 9, None, 3], em.float32)])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 7, None, 4]


# ---- bad input -------------------------------------------------------------------------------------------

def _conv(x, w, strides=(1, 1, 1, 1), padding="SAME", explicit=(), fmt="NHWC", dilations=(1, 1, 1, 1)):
    return _C.op("Conv2D")(em.constant(x), em.constant(w), list(strides), True, padding, list(explicit), fmt,
                           list(dilations))


ONES = np.ones


@pytest.mark.parametrize("call,message", [
    (lambda: _conv(ONES((4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32)), r"Conv2D: input must be 4-D.*\[4,4,1\]"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1), np.float32)), r"Conv2D: filter must be 4-D"),
    (lambda: _conv(ONES((1, 4, 4, 3), np.float32), ONES((2, 2, 2, 1), np.float32)),
     r"Conv2D: the input's channels \(3\) must be a positive multiple of the filter's in_channels.*2"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), strides=(1, 1, 1)),
     r"Conv2D: strides must have 4 elements.*\[1, 1, 1\]"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), strides=(2, 1, 1, 1)),
     r"Conv2D: strides in the batch and channel dimensions must be 1"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), strides=(1, 0, 1, 1)),
     r"Conv2D: strides must all be >= 1"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), padding="FULL"),
     r"Conv2D: padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"FULL\""),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), padding="EXPLICIT",
                   explicit=(1, 1)), r"Conv2D: explicit_paddings must have 8 elements"),
    (lambda: _conv(ONES((1, 4, 4, 1), np.float32), ONES((2, 2, 1, 1), np.float32), fmt="HWCN"),
     r"Conv2D: data_format must be"),
    (lambda: _conv(ONES((1, 2, 2, 1), np.float32), ONES((5, 5, 1, 1), np.float32), padding="VALID"),
     r"Conv2D: the output would have a negative size"),
    (lambda: _C.op("Conv2DBackpropInput")(em.constant([1, 4, 4, 1]), em.constant(ONES((2, 2, 1, 1), np.float32)),
                                          em.constant(ONES((1, 3, 3, 1), np.float32)), [1, 1, 1, 1], True, "SAME", [],
                                          "NHWC", [1, 1, 1, 1]),
     r"Conv2DBackpropInput: out_backprop must have the shape of the forward op's output, \[1,4,4,1\]"),
    (lambda: _C.op("MaxPool")(em.constant(ONES((2, 2, 1), np.float32)), [1, 2, 2, 1], [1, 1, 1, 1], "VALID", [],
                              "NHWC"), r"MaxPool: input must be 4-D"),
    (lambda: _C.op("AvgPool")(em.constant(ONES((1, 2, 2, 1), np.float32)), [1, 2, 2, 1], [1, 1, 1], "VALID",
                              "NHWC"), r"AvgPool: strides must have 4 elements"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        call()


def test_int64_input_is_rejected_naming_the_op():
    """int32 is TensorFlow's (test_int32_conv2d_...); int64 it rejects, as InvalidArgumentError."""
    args = np.ones((1, 3, 3, 1), np.int64), np.ones((1, 1, 1, 1), np.int64), 1, "SAME"
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.conv2d(*args)
    with pytest.raises(em.errors.InvalidArgumentError, match="Conv2D"):
        em.nn.conv2d(*args)


def test_window_larger_than_the_input_gives_an_empty_result():
    """TensorFlow 2.21 dies of SIGFPE on this MaxPool; ember gives the empty output TF's size formula gives."""
    y = em.nn.max_pool2d(np.ones((1, 2, 2, 1), np.float32), 3, 1, "VALID")
    assert y.shape.as_list() == [1, 0, 0, 1]


@pytest.mark.parametrize("call", [
    lambda: em.nn.conv2d(np.ones((1, 3, 3, 1), np.float32), np.ones((1, 1, 1, 1), np.float32), [1, 1, 1], "SAME"),
    lambda: em.nn.conv2d(np.ones((1, 3, 3, 1), np.float32), np.ones((1, 1, 1, 1), np.float32), 1, "FULL"),
    lambda: em.nn.conv2d(np.ones((1, 3, 3, 1), np.float32), np.ones((1, 1, 1, 1), np.float32), 1, [[1, 1]] * 4),
    lambda: em.nn.conv2d(np.ones((1, 3, 3, 1), np.float32), np.ones((1, 1, 1, 1), np.float32), 1, "SAME",
                         data_format="HWNC"),
    lambda: em.nn.max_pool(np.ones((3, 3), np.float32), 2, 1, "SAME"),
])
def test_malformed_python_arguments_are_value_errors_as_in_tensorflow(call):
    with pytest.raises(ValueError):
        call()


# ---- GraphDef round trips --------------------------------------------------------------------------------

def _run_in_tensorflow(graph_def_bytes, feeds, fetches, *args):
    graph_def = tf.compat.v1.GraphDef.FromString(graph_def_bytes)
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    return wrapped.prune(feeds=feeds, fetches=fetches)(*[tf.constant(a) for a in args])


def _training_step(m, activation=None):
    activation = activation or m.nn.relu

    def step(x, w1, w2):
        with m.GradientTape() as tape:
            tape.watch([w1, w2])
            h = activation(m.nn.conv2d(x, w1, 1, "SAME"))
            h = m.nn.max_pool2d(h, 2, 2, "VALID")
            h = m.nn.avg_pool2d(m.nn.depthwise_conv2d(h, w2, [1, 1, 1, 1], "SAME"), 2, 2, "SAME")
            loss = m.reduce_sum(h * h)
        g1, g2 = tape.gradient(loss, [w1, w2])
        return loss, g1, g2
    return step


def test_tensorflow_runs_an_ember_training_step_graph():
    f = em.function(_training_step(em), input_signature=[em.TensorSpec([None, 8, 8, 2], em.float32),
                                                         em.TensorSpec([3, 3, 2, 4], em.float32),
                                                         em.TensorSpec([3, 3, 4, 1], em.float32)])
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    ops = {n.op for n in gd.node} | {n.op for fn in gd.library.function for n in fn.node_def}
    assert {"Conv2D", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad",
            "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput"} <= ops, ops
    args = (_r(3, 8, 8, 2), _r(3, 3, 2, 4), _r(3, 3, 4, 1))
    got = _run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs], [t.name for t in graph.outputs],
                             *args)
    for o, t in zip(f(*args), got):
        _close(o, t, 1e-4)


def _forward(m):
    def forward(x, w1, w2):
        h = m.nn.max_pool2d(m.nn.relu(m.nn.conv2d(x, w1, [1, 2], "SAME", dilations=1)), 2, 2, "VALID")
        h = m.nn.depthwise_conv2d(h, w2, [1, 1, 1, 1], "SAME")
        return m.nn.avg_pool2d(h, 2, 2, "SAME")
    return forward


def test_ember_runs_a_tensorflow_graph_of_convolutions():
    """TensorFlow's forward graph imported and run by ember."""
    fn_tf = tf.function(_forward(tf), input_signature=[tf.TensorSpec([None, 8, 8, 2], tf.float32),
                                                        tf.TensorSpec([3, 3, 2, 4], tf.float32),
                                                        tf.TensorSpec([3, 3, 4, 1], tf.float32)])
    concrete = fn_tf.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    args = (_r(2, 8, 8, 2), _r(3, 3, 2, 4), _r(3, 3, 4, 1))
    _close(fn(*args), fn_tf(*args), 1e-4)


def test_ember_runs_a_tensorflow_training_graph_of_convolutions():
    """TensorFlow's gradient graph (ShapeN, Conv2DBackpropInput/Filter, the depthwise and pooling backprops,
    ReluGrad, LeakyRelu and LeakyReluGrad) imported and run by ember, with TensorFlow's gradients."""
    def gradients(x, w1, w2):
        with tf.GradientTape() as tape:
            tape.watch([x, w1, w2])
            loss = tf.reduce_sum(tf.square(tf.nn.leaky_relu(_forward(tf)(x, w1, w2), 0.1)))
        return tape.gradient(loss, [x, w1, w2])

    fn_tf = tf.function(gradients, input_signature=[tf.TensorSpec([None, 8, 8, 2], tf.float32),
                                                     tf.TensorSpec([3, 3, 2, 4], tf.float32),
                                                     tf.TensorSpec([3, 3, 4, 1], tf.float32)])
    concrete = fn_tf.get_concrete_function()
    ops = {node.op for node in concrete.graph.as_graph_def().node}
    assert {"ShapeN", "ReluGrad", "LeakyReluGrad", "Conv2DBackpropFilter"} <= ops
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    args = (_r(2, 8, 8, 2), _r(3, 3, 2, 4), _r(3, 3, 4, 1))
    for ours, theirs in zip(fn(*args), fn_tf(*args)):
        _close(ours, theirs, 1e-4)


# ---- a small CNN trained with GradientTape ---------------------------------------------------------------

def _train(m, steps=5):
    rng = np.random.default_rng(3)
    images = rng.standard_normal((16, 12, 12, 1)).astype(np.float32)
    labels = rng.integers(0, 3, 16)
    init = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((3, 3, 1, 4), (3, 3, 4, 6), (3 * 3 * 6, 3))]
    params = [m.Variable(v) for v in init]
    losses = []
    for _ in range(steps):
        with m.GradientTape() as tape:
            h = m.nn.relu(m.nn.conv2d(images, params[0], 1, "SAME"))
            h = m.nn.max_pool2d(h, 2, 2, "VALID")
            h = m.nn.relu(m.nn.conv2d(h, params[1], 1, "VALID"))
            h = m.nn.avg_pool2d(h, 1, 1, "VALID")
            logits = m.matmul(m.reshape(h, [16, -1])[:, :54], params[2])
            loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(0.1 * g)
        losses.append(float(loss.numpy()))
    return losses


def test_small_cnn_trains_as_in_tensorflow():
    ours, theirs = _train(em), _train(tf)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert ours[-1] < ours[0]


def test_zero_input_channels_are_an_error_not_a_division_by_zero():
    """Found by the op fuzzer (seed 141827883 case 26286): 0 input channels made 0 groups and a SIGFPE."""
    with pytest.raises(em.errors.InvalidArgumentError, match="Conv2D: the input's channels \\(0\\) must be a positive"):
        em.nn.conv2d(np.ones((2, 5, 6, 0)), np.ones((3, 2, 3, 4)), [1, 2], "SAME")


def test_empty_tensors_give_empty_results():
    assert em.nn.depthwise_conv2d(np.ones((1, 3, 3, 0)), np.ones((2, 2, 0, 2)), [1, 1, 1, 1], "SAME").shape == [1, 3, 3, 0]
    assert em._C.op("DepthwiseConv2dNativeBackpropFilter")(
        em.constant(np.ones((1, 3, 3, 0))), em.constant([2, 2, 0, 2]), em.constant(np.ones((1, 3, 3, 0))),
        [1, 1, 1, 1], "SAME", [], "NHWC", [1, 1, 1, 1]).shape == [2, 2, 0, 2]
    assert em.nn.conv2d(np.ones((0, 3, 3, 2)), np.ones((2, 2, 2, 3)), 1, "SAME").shape == [0, 3, 3, 3]
    assert em.nn.max_pool2d(np.ones((1, 3, 3, 0)), 2, 2, "SAME").shape == [1, 2, 2, 0]
    w = em.constant(np.ones((2, 2, 2, 3)))
    x = em.constant(np.ones((0, 3, 3, 2)))
    with em.GradientTape() as tape:
        tape.watch(w)
        y = em.reduce_sum(em.nn.conv2d(x, w, 1, "SAME"))
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), np.zeros((2, 2, 2, 3)))


# ---- batching (pfor): the examples folded into N ---------------------------------------------------------

@pytest.mark.parametrize("case", ["conv2d", "depthwise", "pool_then_conv", "max_pool", "lrn"])
def test_vectorised_jacobian_matches_the_loop(case):
    from ember import jacobians

    w4, dw = _r(2, 2, 2, 3).astype(np.float64), _r(2, 2, 2, 2).astype(np.float64)
    fns = {
        "conv2d": (lambda x: em.nn.conv2d(x, w4, 1, "SAME"), (2, 3, 3, 2)),
        "depthwise": (lambda x: em.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "VALID"), (1, 3, 3, 2)),
        "max_pool": (lambda x: em.nn.max_pool2d(x * x, 2, 1, "VALID"), (1, 3, 3, 2)),
        "pool_then_conv": (lambda x: em.nn.conv2d(em.nn.avg_pool2d(x * x, 2, 1, "SAME"), w4, 2, "SAME"), (2, 4, 4, 2)),
        "lrn": (lambda x: em.nn.lrn(x, 1) * x, (1, 2, 2, 3)),
    }
    fn, shape = fns[case]
    x = em.constant(RNG.standard_normal(shape))

    def jacobian(use_pfor):
        with em.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor).numpy()

    before = dict(jacobians.stats)
    fast = jacobian(True)
    assert jacobians.stats["vectorized"] - before.get("vectorized", 0) == 1, jacobians.last_fallback
    assert jacobians.stats["fallback"] - before.get("fallback", 0) == 0, jacobians.last_fallback
    np.testing.assert_allclose(fast, jacobian(False), rtol=1e-12, atol=1e-12)


def test_pooling_with_nothing_to_compute_returns_at_once():
    # Found by the op fuzzer: a MaxPool of [2^40, 1, 0, 1] walked 2^40 empty rows and hung.
    x = em.zeros([3, 1, 0, 1])
    assert em.nn.max_pool2d(x, 1, 1, "SAME").shape == (3, 1, 0, 1)
    assert em.nn.avg_pool2d(x, 1, 1, "SAME").shape == (3, 1, 0, 1)
    big = em.zeros([2 ** 40, 1, 0, 1])
    assert em.nn.max_pool2d(big, [3, 2], 2, "SAME").shape == (2 ** 40, 1, 0, 1)


_EXIT_SCRIPT = """
import conv_op_examples
from ember import _C
for name, (inputs, attrs) in conv_op_examples.examples().items():
    for _ in range(2):
        _C.op(name)(*inputs, *attrs)
"""


def test_process_exits_cleanly_after_every_conv_example_under_malloc_checks():
    """A oneDNN call that reorders two or more arguments grew its thread's buffer slots, and the slots' vector
    copied each buffer and freed the memory the copy still held (kernels/onednn_primitive.cc, Note [Reused
    oneDNN buffers]): test_op_registry.py passed, then the interpreter segfaulted at exit in oneDNN's exit
    handler. glibc's checking allocator (when the system has it) turns the corruption into a failure here."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.abspath(__file__))] + [p for p in sys.path if p])
    malloc_debug = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
    if os.path.exists(malloc_debug):
        env["LD_PRELOAD"] = malloc_debug
        env["GLIBC_TUNABLES"] = "glibc.malloc.check=3"
    proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", _EXIT_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])

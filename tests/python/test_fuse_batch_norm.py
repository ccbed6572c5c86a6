"""Batch-norm fusion (src/ember/passes/fuse_batch_norm.cc, TensorFlow's "remapping" option): FusedBatchNormV3
-> Relu and the gradient through both become _FusedBatchNormEx / _FusedBatchNormGradEx (Note [Matching a batch
norm and its Relu]); every pattern gives what the unfused graph gives and what TensorFlow gives, and the
patterns the pass must leave alone are left alone."""
import numpy as np
import pytest
import tensorflow

import ember as tf

RNG = np.random.default_rng(23)


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _bn(fw):
    return getattr(fw.nn, "fused_batch_norm", None) or fw.compat.v1.nn.fused_batch_norm


def _step(fw, relu_after_add=False, training=True, data_format="NHWC", extra_reader=False):
    """A conv -> batch norm -> relu -> conv -> batch norm [-> + x -> relu] step for framework `fw`: returns
    fn(x, w1, w2, g1, b1, g2, b2, m, v) -> (loss, new means/variances, gradients)."""
    bn = _bn(fw)

    def fn(x, w1, w2, g1, b1, g2, b2, m, v):
        params = [x, w1, w2, g1, b1, g2, b2]
        with fw.GradientTape() as tape:
            tape.watch(params)
            h = fw.nn.conv2d(x, w1, 1, "SAME", data_format=data_format)
            h, m1, v1 = bn(h, g1, b1, mean=m, variance=v, epsilon=1e-3, is_training=training,
                           exponential_avg_factor=0.1 if training else 1.0, data_format=data_format)
            pre = h
            h = fw.nn.relu(h)
            h = fw.nn.conv2d(h, w2, 1, "SAME", data_format=data_format)
            h, m2, v2 = bn(h, g2, b2, mean=m, variance=v, epsilon=1e-3, is_training=training,
                           exponential_avg_factor=0.1 if training else 1.0, data_format=data_format)
            h = fw.nn.relu(h + x) if relu_after_add else fw.nn.relu(h)
            loss = fw.reduce_sum(h * fw.sin(h))
            if extra_reader:
                loss += fw.reduce_sum(pre * pre)
        return [loss, m1, v1, m2, v2] + list(tape.gradient(loss, params))

    return fn


def _args(data_format="NHWC", dtype=np.float32):
    c = 4
    x = _r(2, 6, 5, c, dtype=dtype)
    if data_format == "NCHW":
        x = x.transpose(0, 3, 1, 2).copy()
    return [x, _r(3, 3, c, c, dtype=dtype), _r(3, 3, c, c, dtype=dtype), 1 + 0.1 * _r(c, dtype=dtype),
            _r(c, dtype=dtype), 1 + 0.1 * _r(c, dtype=dtype), _r(c, dtype=dtype), 0.1 * _r(c, dtype=dtype),
            1 + np.abs(_r(c, dtype=dtype))]


def _run(remapping, on, fn, args):
    """(results as NumPy, optimized text)."""
    remapping(on)
    f = tf.function(fn)
    consts = [tf.constant(a) for a in args]
    text = f.get_concrete_function(*consts).graph.optimized_as_text()
    return [r.numpy() for r in f(*consts)], text


def _close(got, want, tol):
    """Within tol relative to each array's largest magnitude (an element that is a sum of large terms of both
    signs carries their rounding, not its own)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(w)))))


@pytest.mark.parametrize("training", [True, False])
def test_training_step_matches_unfused_and_tensorflow(remapping, training):
    args = _args()
    fused, text = _run(remapping, True, _step(tf, training=training), args)
    assert text.count("_FusedBatchNormEx(") == 2, text
    assert text.count("_FusedBatchNormGradEx(") == 2, text
    assert "FusedBatchNormV3(" not in text and "ReluGrad(" not in text, text
    plain, plain_text = _run(remapping, False, _step(tf, training=training), args)
    assert "_FusedBatchNormEx" not in plain_text
    _close(fused, plain, 1e-5)
    want = [r.numpy() for r in tensorflow.function(_step(tensorflow, training=training))(*args)]
    _close(fused, want, 2e-4)


def test_nchw_and_float64_match_unfused(remapping):
    for data_format, dtype in (("NCHW", np.float32), ("NHWC", np.float64)):
        args = _args(data_format, dtype)
        fused, text = _run(remapping, True, _step(tf, data_format=data_format), args)
        assert text.count("_FusedBatchNormEx(") == 2 and text.count("_FusedBatchNormGradEx(") == 2, text
        plain, _ = _run(remapping, False, _step(tf, data_format=data_format), args)
        _close(fused, plain, 1e-5 if dtype == np.float32 else 1e-12)


def test_relu_after_a_residual_add_fuses_the_first_batch_norm_only(remapping):
    """The second batch norm's output feeds an add, not a Relu: it stays FusedBatchNormV3 (its gradient, the
    add's, is no ReluGrad of its own either)."""
    args = _args()
    fused, text = _run(remapping, True, _step(tf, relu_after_add=True), args)
    assert text.count("_FusedBatchNormEx(") == 1 and text.count("FusedBatchNormV3(") == 1, text
    plain, _ = _run(remapping, False, _step(tf, relu_after_add=True), args)
    _close(fused, plain, 1e-5)


def test_a_pre_activation_read_elsewhere_is_left_alone(remapping):
    args = _args()
    fused, text = _run(remapping, True, _step(tf, extra_reader=True), args)
    # the first batch norm's output is also squared: not fused; the second one is
    assert text.count("_FusedBatchNormEx(") == 1 and text.count("FusedBatchNormV3(") == 1, text
    plain, _ = _run(remapping, False, _step(tf, extra_reader=True), args)
    _close(fused, plain, 1e-5)


def test_a_batch_norm_output_that_is_a_result_or_feeds_relu6_is_left_alone(remapping):
    x, scale, offset = _r(2, 3, 3, 4), _r(4), _r(4)

    def result(x, scale, offset):
        y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
        return y, tf.nn.relu(y)

    def relu6(x, scale, offset):
        y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
        return tf.nn.relu6(y)

    for fn in (result, relu6):
        fused, text = _run(remapping, True, fn, [x, scale, offset])
        assert "_FusedBatchNorm" not in text, text
        plain, _ = _run(remapping, False, fn, [x, scale, offset])
        _close(fused, plain, 0)


def test_nan_and_zero_pre_activations_match_unfused(remapping):
    """relu keeps NaN and its gradient is 0 where the pre-activation is <= 0 or NaN, fused as unfused: a
    constant channel with offset 0 normalises to (near) zeros, and a NaN in x makes its channel NaN."""
    x = _r(2, 3, 3, 3)
    x[0, 1, 1, 2] = np.nan
    x[:, :, :, 1] = 5.0  # a constant channel: x - mean == 0, y == offset == 0

    def fn(x, scale, offset):
        with tf.GradientTape() as tape:
            tape.watch([x, scale, offset])
            y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
            y = tf.nn.relu(y)
            loss = tf.reduce_sum(y * tf.cos(y))
        return [y] + list(tape.gradient(loss, [x, scale, offset]))

    args = [x, np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 0.0, -0.5], np.float32)]
    fused, text = _run(remapping, True, fn, args)
    assert "_FusedBatchNormEx(" in text and "_FusedBatchNormGradEx(" in text, text
    plain, _ = _run(remapping, False, fn, args)
    for g, w in zip(fused, plain):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_fused_ops_called_directly():
    ex, grad_ex = tf._C.op("_FusedBatchNormEx"), tf._C.op("_FusedBatchNormGradEx")
    x = tf.constant([[[[1.0], [3.0]]]])
    empty = tf.constant([], tf.float32)
    y = ex(x, tf.constant([1.0]), tf.constant([0.0]), empty, empty, 0.0, 1.0, "NHWC", True, "Relu")[0]
    np.testing.assert_array_equal(y.numpy(), [[[[0.0], [1.0]]]])
    y = ex(x, tf.constant([1.0]), tf.constant([0.0]), empty, empty, 0.0, 1.0, "NHWC", True, "Identity")[0]
    np.testing.assert_array_equal(y.numpy(), [[[[-1.0], [1.0]]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="_FusedBatchNormEx: activation_mode must be"):
        ex(x, tf.constant([1.0]), tf.constant([0.0]), empty, empty, 0.0, 1.0, "NHWC", True, "Sigmoid")
    stats = [tf.constant([2.0]), tf.constant([1.0]), empty]
    with pytest.raises(tf.errors.InvalidArgumentError, match="_FusedBatchNormGradEx: y and x must have the same"):
        grad_ex(x, x, tf.constant([1.0]), *stats, tf.constant([[[[1.0]]]]), 0.0, "NHWC", True, "Relu")
    # Relu: dy counts where y > 0 only
    dx, dscale, doffset = grad_ex(tf.constant([[[[1.0], [2.0]]]]), x, tf.constant([1.0]), *stats,
                                  tf.constant([[[[0.0], [1.0]]]]), 0.0, "NHWC", True, "Relu")[:3]
    np.testing.assert_allclose(doffset.numpy(), [2.0])
    np.testing.assert_allclose(dscale.numpy(), [2.0])
    np.testing.assert_allclose(dx.numpy(), [[[[0.0], [0.0]]]], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, tf.bfloat16.as_numpy_dtype])
def test_a_16bit_training_step_fuses_and_matches_unfused_and_tensorflow(remapping, dtype):
    """A float16 or bfloat16 step (float32 scale, offset and statistics): the batch norm and its Relu fuse (the
    kernels compute in float32, Note [16-bit batch norm]); ember's 16-bit Relu gradient stays a select, so the
    backward is not fused."""
    args = _args()
    args = [a.astype(dtype) for a in args[:3]] + args[3:]
    fused, text = _run(remapping, True, _step(tf), args)
    assert text.count("_FusedBatchNormEx(") == 2, text
    plain, _ = _run(remapping, False, _step(tf), args)
    wide = [np.asarray(r, np.float32) for r in fused]
    _close(wide, [np.asarray(r, np.float32) for r in plain], 1e-6)
    want = [np.asarray(r.numpy(), np.float32) for r in tensorflow.function(_step(tensorflow))(*args)]
    _close(wide, want, 5e-2 if dtype == np.float16 else 2e-1)

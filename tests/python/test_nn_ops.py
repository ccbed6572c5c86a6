"""tf.nn against NumPy formulas: softmax and log_softmax, bias_add, l2_loss, the cross-entropy losses
(numerically stable for huge logits), and the activations, for every float dtype."""
import math

import ml_dtypes
import numpy as np
import pytest

import ember as tf
from ember import errors
from conftest import FLOAT_DTYPES, INT_DTYPES

# Relative tolerance against a float64 formula; the absolute tolerance is the same (values are O(1)).
TOL = {tf.float16: 3e-3, tf.bfloat16: 2e-2, tf.float32: 2e-6, tf.float64: 1e-12}

_erfc = np.vectorize(math.erfc)


def _values(dtype, rng, shape, scale=4.0):
    return (rng.uniform(-scale, scale, shape)).astype(dtype.as_numpy_dtype).astype(np.float64)


def _check(actual, expected, dtype, msg="", scale=1.0):
    actual = actual.numpy() if isinstance(actual, tf.Tensor) else np.asarray(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, msg
    tol = TOL[dtype]
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol * scale, err_msg=msg)


def _np_log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _np_softmax(x, axis=-1):
    return np.exp(_np_log_softmax(x, axis))


# ---- softmax, log_softmax ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_softmax_against_numpy(dtype, rng):
    x = _values(dtype, rng, (3, 4, 5))
    t = tf.constant(x, dtype)
    for axis in (None, -1, 0, 1, 2, -2, -3):
        np_axis = -1 if axis is None else axis
        out = tf.nn.softmax(t, axis=axis)
        assert out.dtype == dtype and out.shape == (3, 4, 5)
        _check(out, _np_softmax(x, np_axis), dtype, f"softmax axis={axis}")
        _check(tf.nn.log_softmax(t, axis=axis), _np_log_softmax(x, np_axis), dtype, f"log_softmax axis={axis}",
               scale=10)
    _check(tf.nn.softmax(t), _np_softmax(x), dtype)  # default: the last axis
    np.testing.assert_allclose(tf.reduce_sum(tf.cast(tf.nn.softmax(t), tf.float64), axis=-1).numpy(), 1.0,
                               rtol=4 * TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_softmax_is_stable_for_huge_logits(dtype):
    big = 1000.0 if dtype in (tf.float32, tf.float64) else 60000.0 if dtype == tf.float16 else 1e30
    x = tf.constant([[big, 0.0, -big], [big, big, 0.0], [-big, -big, -big]], dtype)
    _check(tf.nn.softmax(x), [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]], dtype)
    out = tf.nn.log_softmax(x).numpy().astype(np.float64)
    assert np.isfinite(out[:, :2]).all() and np.isfinite(out[2]).all()
    np.testing.assert_allclose(out[1], [-math.log(2), -math.log(2), -big - math.log(2)], rtol=TOL[dtype],
                               atol=TOL[dtype])
    np.testing.assert_allclose(out[0, :2], [0.0, -big], rtol=TOL[dtype], atol=TOL[dtype])


def test_softmax_special_values():
    inf = np.inf
    assert tf.nn.softmax(tf.constant([-inf, 1.0])).numpy().tolist() == [0.0, 1.0]
    assert tf.nn.log_softmax(tf.constant([-inf, 1.0])).numpy().tolist() == [-inf, 0.0]
    assert np.isnan(tf.nn.softmax(tf.constant([-inf, -inf])).numpy()).all()  # 0 / 0, as TF
    assert np.isnan(tf.nn.log_softmax(tf.constant([-inf, -inf])).numpy()).all()
    # A NaN or +inf poisons its whole row, as TF's Eigen kernel (and its float64 path) computes; other rows
    # are independent.
    for dtype in (tf.float32, tf.float64):
        assert np.isnan(tf.nn.softmax(tf.constant([np.nan, 1.0], dtype)).numpy()).all()
        assert np.isnan(tf.nn.softmax(tf.constant([inf, 1.0], dtype)).numpy()).all()
        assert np.isnan(tf.nn.log_softmax(tf.constant([np.nan, 1.0], dtype)).numpy()).all()
    out = tf.nn.softmax(tf.constant([[np.nan, 1.0], [0.0, 0.0]])).numpy()
    assert np.isnan(out[0]).all() and out[1].tolist() == [0.5, 0.5]


def test_softmax_inputs_and_errors():
    out = tf.nn.softmax([1.0, 2.0])
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), [0.26894142, 0.73105858], rtol=1e-6)
    np.testing.assert_allclose(tf.nn.log_softmax([0.0, 0.0]).numpy(), [-math.log(2)] * 2, rtol=1e-6)
    np.testing.assert_allclose(tf.nn.softmax(np.array([0.0, 0.0])).numpy(), [0.5, 0.5])
    assert tf.nn.softmax(tf.constant([[1.0, 2.0], [3.0, 0.0]]), axis=tf.constant(0)).shape == (2, 2)
    assert tf.math.softmax is tf.nn.softmax and tf.math.log_softmax is tf.nn.log_softmax
    assert tf.nn.softmax(tf.zeros([0, 3])).shape == (0, 3)
    assert tf.nn.softmax(tf.zeros([2, 0])).shape == (2, 0)
    with pytest.raises(errors.InvalidArgumentError, match=r"^Softmax: .*got int32"):
        tf.nn.softmax([1, 2])
    with pytest.raises(errors.InvalidArgumentError, match=r"^LogSoftmax: .*got int32"):
        tf.nn.log_softmax(tf.constant([1, 2]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^Softmax: axis 2 is out of range.*\[-2, 2\)"):
        tf.nn.softmax(tf.ones([2, 3]), axis=2)
    with pytest.raises(errors.InvalidArgumentError, match=r"^LogSoftmax: axis -3"):
        tf.nn.log_softmax(tf.ones([2, 3]), axis=-3)
    with pytest.raises(errors.OpError, match="^Softmax: .*scalar"):
        tf.nn.softmax(tf.constant(1.0))


# ---- bias_add --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=lambda d: d.name)
def test_bias_add_against_numpy(dtype, rng):
    def values(shape):
        if dtype.is_integer:
            return rng.integers(0 if dtype.is_unsigned else -20, 20, shape)
        return _values(dtype, rng, shape)

    for rank in (2, 3, 4, 5):
        shape = (2, 3, 4, 5, 6)[:rank]
        value = values(shape)
        bias_last, bias_c = values(shape[-1]), values(shape[1])
        last = {2: "NC", 3: "NWC", 4: "NHWC", 5: "NDHWC"}[rank]
        first = {2: "NC", 3: "NCW", 4: "NCHW", 5: "NCDHW"}[rank]
        for fmt in (None, "NHWC", last):
            if fmt == "NC":
                continue
            out = tf.nn.bias_add(tf.constant(value, dtype), tf.constant(bias_last, dtype), data_format=fmt)
            assert out.dtype == dtype
            expected = value + bias_last
            if dtype.is_integer:
                np.testing.assert_array_equal(out.numpy(), expected.astype(dtype.as_numpy_dtype))
            else:
                _check(out, expected, dtype, f"{fmt} rank {rank}", scale=8)
        for fmt in (first, "NCHW"):
            out = tf.nn.bias_add(tf.constant(value, dtype), tf.constant(bias_c, dtype), data_format=fmt)
            expected = value + bias_c.reshape((1, -1) + (1,) * (rank - 2))
            if dtype.is_integer:
                np.testing.assert_array_equal(out.numpy(), expected.astype(dtype.as_numpy_dtype))
            else:
                _check(out, expected, dtype, f"{fmt} rank {rank}", scale=8)


def test_bias_add_inputs():
    out = tf.nn.bias_add([[1.0, 2.0]], [10.0, 20.0])
    assert out.dtype == tf.float32 and out.numpy().tolist() == [[11.0, 22.0]]
    out = tf.nn.bias_add(tf.ones([2, 3], tf.float64), [1.0, 2.0, 3.0])  # the bias takes the value's dtype
    assert out.dtype == tf.float64 and out.numpy().tolist() == [[2.0, 3.0, 4.0]] * 2
    assert tf.nn.bias_add(tf.zeros([0, 3]), tf.ones([3])).shape == (0, 3)


def test_bias_add_errors():
    with pytest.raises(ValueError, match="`data_format` must be of the form `N...C` or `NC...`"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="XYZ")
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="CHWN")
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^BiasAdd: bias must have as many elements as the channel dimension of value \(dimension "
                             r"1 for NHWC\); value is \[2,3\], bias is \[2\]"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([2]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^BiasAdd: .*dimension 1 for NCHW.*\[2,3,4,5\].*\[5\]"):
        tf.nn.bias_add(tf.ones([2, 3, 4, 5]), tf.ones([5]), data_format="NCHW")
    with pytest.raises(errors.InvalidArgumentError, match=r"^BiasAdd: value must be at least 2-D, got shape \[3\]"):
        tf.nn.bias_add(tf.ones([3]), tf.ones([3]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^BiasAdd: bias must be 1-D, got shape \[1,3\]"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([1, 3]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^BiasAdd: .*int32.*float32"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.constant([1, 2, 3]))


# ---- l2_loss ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_l2_loss(dtype, rng):
    x = _values(dtype, rng, (4, 5), scale=1.0)
    out = tf.nn.l2_loss(tf.constant(x, dtype))
    assert out.dtype == dtype and out.shape == ()
    _check(out, np.sum(x * x) / 2, dtype, scale=10)
    assert float(tf.nn.l2_loss(tf.zeros([0], dtype))) == 0.0


def test_l2_loss_inputs_and_errors():
    assert float(tf.nn.l2_loss([1.0, 2.0, 3.0])) == 7.0
    assert float(tf.nn.l2_loss(tf.constant(3.0))) == 4.5
    assert float(tf.nn.l2_loss(tf.constant([1.0, 2.0], tf.float16))) == 2.5
    with pytest.raises(errors.InvalidArgumentError, match=r"^L2Loss: .*got int32"):
        tf.nn.l2_loss(tf.constant([1, 2]))


# ---- sigmoid_cross_entropy_with_logits ------------------------------------------------------------------------

def _np_sigmoid_xent(labels, logits):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_sigmoid_cross_entropy(dtype, rng):
    logits = _values(dtype, rng, (4, 6))
    labels = rng.uniform(0, 1, (4, 6)).astype(dtype.as_numpy_dtype).astype(np.float64)
    out = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(labels, dtype), logits=tf.constant(logits, dtype))
    assert out.dtype == dtype and out.shape == (4, 6)
    _check(out, _np_sigmoid_xent(labels, logits), dtype, scale=4)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=lambda d: d.name)
def test_sigmoid_cross_entropy_is_stable_for_huge_logits(dtype):
    logits = tf.constant([1000.0, -1000.0, 0.0, 1e30, -1e30, 100.0], dtype)
    labels = tf.constant([0.0, 1.0, 0.5, 1.0, 0.0, 1.0], dtype)
    out = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits).numpy()
    np.testing.assert_allclose(out, [1000.0, 1000.0, math.log(2), 0.0, 0.0, 0.0], rtol=1e-6, atol=1e-30)


def test_sigmoid_cross_entropy_arguments():
    out = tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0], logits=[0.0])
    assert out.dtype == tf.float32 and float(out[0]) == pytest.approx(math.log(2), rel=1e-6)
    out = tf.nn.sigmoid_cross_entropy_with_logits([0.0, 1.0], tf.constant([1.0, 2.0]))  # positional, as TF
    np.testing.assert_allclose(out.numpy(), [1.3132617, 0.126928], rtol=1e-6)
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        tf.nn.sigmoid_cross_entropy_with_logits(logits=tf.constant([1.0]))
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0])
    with pytest.raises(ValueError,
                       match=r"`logits` and `labels` must have the same shape, received \(\(3,\) vs \(2,\)\)"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0], logits=[1.0, 2.0, 3.0])
    with pytest.raises(errors.InvalidArgumentError, match="SigmoidCrossEntropyWithLogits"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant([0.0, 1.0], tf.float64),
                                                logits=tf.constant([1.0, 2.0]))


def test_weighted_cross_entropy(rng):
    logits = rng.uniform(-5, 5, (3, 4))
    labels = rng.uniform(0, 1, (3, 4))
    for pos_weight in (1.0, 0.5, 3.0):
        out = tf.nn.weighted_cross_entropy_with_logits(labels=tf.constant(labels), logits=tf.constant(logits),
                                                       pos_weight=pos_weight)
        expected = labels * -np.log(1 / (1 + np.exp(-logits))) * pos_weight + \
            (1 - labels) * -np.log(1 - 1 / (1 + np.exp(-logits)))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    out = tf.nn.weighted_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[-1000.0, 1000.0], pos_weight=2.0)
    np.testing.assert_allclose(out.numpy(), [2000.0, 1000.0], rtol=1e-6)


# ---- softmax_cross_entropy_with_logits --------------------------------------------------------------------

def _np_softmax_xent(labels, logits, axis=-1):
    return -np.sum(labels * _np_log_softmax(logits, axis), axis=axis)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_softmax_cross_entropy(dtype, rng):
    logits = _values(dtype, rng, (4, 5))
    labels = _np_softmax(rng.uniform(-2, 2, (4, 5))).astype(dtype.as_numpy_dtype).astype(np.float64)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(labels, dtype), logits=tf.constant(logits, dtype))
    assert out.dtype == dtype and out.shape == (4,)
    _check(out, _np_softmax_xent(labels, logits), dtype, scale=4)


def test_softmax_cross_entropy_axis(rng):
    logits = rng.standard_normal((2, 3, 4))
    labels = _np_softmax(rng.standard_normal((2, 3, 4)), axis=0)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=tf.constant(logits), axis=0)
    assert out.shape == (3, 4)  # the other dimensions keep their order
    np.testing.assert_allclose(out.numpy(), _np_softmax_xent(labels, logits, 0), rtol=1e-12)
    labels = _np_softmax(rng.standard_normal((2, 3, 4)), axis=1)
    for axis in (1, -2):
        out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=tf.constant(logits),
                                                      axis=axis)
        assert out.shape == (2, 4)
        np.testing.assert_allclose(out.numpy(), _np_softmax_xent(labels, logits, 1), rtol=1e-12)
    x = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]], np.float32)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], logits=x, axis=0)
    np.testing.assert_allclose(out.numpy(), [0.0, 0.12692805, 0.0], atol=1e-6)  # recorded from TF 2.21


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    logits = tf.constant([[1000.0, 0.0, -1000.0], [1e30, -1e30, 0.0]])
    labels = tf.constant([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy(),
                               [1000.0, 0.0], rtol=1e-6)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=[[0.5, 0.5]], logits=tf.constant([[60000.0, 0.0]], tf.float16))
    assert out.dtype == tf.float16 and float(out[0]) == 30000.0  # computed in float32, as TF


def test_softmax_cross_entropy_label_conversion_and_broadcast():
    logits = tf.constant([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    out = tf.nn.softmax_cross_entropy_with_logits(labels=[[0, 1, 0], [1, 0, 0]], logits=logits)  # int labels cast
    np.testing.assert_allclose(out.numpy(), [1.4076059, 0.0], rtol=1e-6)
    labels64 = tf.constant([[0, 1, 0], [1, 0, 0]], tf.float64)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=labels64, logits=logits)
    assert out.dtype == tf.float32
    out = tf.nn.softmax_cross_entropy_with_logits(labels=[[0.0, 1.0, 0.0]], logits=logits)  # broadcast, as TF
    np.testing.assert_allclose(out.numpy(), [1.4076059, 1000.0], rtol=1e-6)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=[0.0, 1.0, 0.0], logits=[1.0, 2.0, 3.0])
    assert out.shape == () and float(out) == pytest.approx(1.4076059, rel=1e-6)
    out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.ones([2, 2, 3]) / 3, logits=tf.ones([2, 2, 3]))
    np.testing.assert_allclose(out.numpy(), np.full((2, 2), math.log(3)), rtol=1e-6)


def test_softmax_cross_entropy_errors():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^SoftmaxCrossEntropyWithLogits: logits and labels must have the same shape; logits is "
                             r"\[2,3\], labels is \[1,2\]"):
        tf.nn.softmax_cross_entropy_with_logits(labels=[[0.0, 1.0]], logits=tf.ones([2, 3]))
    with pytest.raises(errors.InvalidArgumentError, match="SoftmaxCrossEntropyWithLogits"):
        tf.nn.softmax_cross_entropy_with_logits(labels=1.0, logits=tf.constant(1.0))


# ---- sparse_softmax_cross_entropy_with_logits ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("label_dtype", [tf.int32, tf.int64], ids=lambda d: d.name)
def test_sparse_softmax_cross_entropy(dtype, label_dtype, rng):
    logits = _values(dtype, rng, (6, 5))
    labels = rng.integers(0, 5, 6)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels, label_dtype),
                                                         logits=tf.constant(logits, dtype))
    assert out.dtype == dtype and out.shape == (6,)
    _check(out, -_np_log_softmax(logits)[np.arange(6), labels], dtype, scale=4)


def test_sparse_softmax_cross_entropy_shapes(rng):
    logits = rng.standard_normal((2, 3, 4))
    labels = rng.integers(0, 4, (2, 3))
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.constant(logits))
    assert out.shape == (2, 3)
    expected = -np.take_along_axis(_np_log_softmax(logits), labels[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=1, logits=tf.constant([1.0, 2.0]))
    assert out.shape == () and float(out) == pytest.approx(0.31326166, rel=1e-6)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits([1], [[1.0, 2.0]])
    assert out.shape == (1,)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=[[1000.0, 0.0, -1000.0]] * 2)
    np.testing.assert_allclose(out.numpy(), [0.0, 2000.0], rtol=1e-6)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([0], tf.int32), logits=tf.zeros([0, 3]))
    assert out.shape == (0,)


def test_sparse_softmax_cross_entropy_bad_labels():
    logits = tf.constant([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    # TF's message, word for word (two spaces before "Label values"), after the op's name.
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^SparseSoftmaxCrossEntropyWithLogits: Received a label value of 3 which is outside the "
                             r"valid range of \[0, 3\)\.  Label values: 1 3$"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 3], logits=logits)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Received a label value of -1 which is outside the valid range of \[0, 3\)\.  Label "
                             r"values: -1 0"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([-1, 0], tf.int64), logits=logits)
    with pytest.raises(errors.InvalidArgumentError, match=r"^SparseSoftmaxCrossEntropyWithLogits: .*got float32"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1.0, 0.0], logits=logits)
    with pytest.raises(ValueError, match=r"`labels.shape` must equal `logits.shape` except for the last dimension"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0, 1], logits=logits)
    with pytest.raises(ValueError, match=r"`labels.shape.rank` must equal `logits.shape.rank - 1`"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1, 0]], logits=logits)
    with pytest.raises(ValueError, match="`logits` cannot be a scalar"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=1, logits=tf.constant(1.0))


# ---- activations ------------------------------------------------------------------------------------------

def _sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


ACTIVATIONS = [
    ("relu", lambda x: np.maximum(x, 0)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    ("softplus", lambda x: np.logaddexp(0, x)),
    ("sigmoid", _sigmoid),
    ("tanh", np.tanh),
    # alpha is a float32 attribute of TensorFlow's LeakyRelu, so float64 inputs are scaled by float32(0.2)
    ("leaky_relu", lambda x: np.where(x > 0, x, np.float64(np.float32(0.2)) * x)),
    ("selu", lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0)))),
    # TensorFlow's 0.5 * x * erfc(-x / sqrt(2)), whose 1 / sqrt(2) is a float32 constant for float64 too
    ("gelu", lambda x: 0.5 * x * _erfc(-x * np.float64(np.float32(math.sqrt(0.5))))),
    ("silu", lambda x: x * _sigmoid(x)),
    ("swish", lambda x: x * _sigmoid(x)),
    ("softsign", lambda x: x / (1 + np.abs(x))),
]


@pytest.mark.parametrize("name,ref", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_activation_against_numpy(name, ref, dtype, rng):
    x = _values(dtype, rng, (5, 7), scale=8.0)
    x[0, :3] = [0.0, 6.0, -0.0]
    out = getattr(tf.nn, name)(tf.constant(x, dtype))
    assert out.dtype == dtype and out.shape == (5, 7)
    _check(out, ref(x), dtype, name, scale=4)


@pytest.mark.parametrize("name,ref", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_huge_inputs(name, ref):
    x = np.array([-1e30, -1000.0, -100.0, 100.0, 1000.0, 1e30], np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        expected = ref(x)
    out = getattr(tf.nn, name)(tf.constant(x, tf.float32)).numpy()
    assert not np.isnan(out).any(), name
    # Tiny results (e^-100) may be flushed to zero, as TF does on CPU; compare absolutely there.
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-30, err_msg=name)


def test_activations_take_python_lists():
    assert tf.nn.relu([-1.0, 2.0]).numpy().tolist() == [0.0, 2.0]
    assert tf.nn.relu6([-1.0, 2.0, 7.0]).numpy().tolist() == [0.0, 2.0, 6.0]
    np.testing.assert_allclose(tf.nn.elu([-1.0, 2.0]).numpy(), [-0.63212055, 2.0], rtol=1e-6)
    np.testing.assert_allclose(tf.nn.softplus([0.0]).numpy(), [math.log(2)], rtol=1e-6)
    assert tf.nn.sigmoid([0.0]).numpy().tolist() == [0.5]
    assert tf.nn.tanh([0.0]).numpy().tolist() == [0.0]


def test_integer_activations():
    assert tf.nn.relu(tf.constant([-1, 2])).numpy().tolist() == [0, 2]
    assert tf.nn.relu6(tf.constant([-3, 2, 9], tf.int8)).numpy().tolist() == [0, 2, 6]
    assert tf.nn.relu(tf.constant([1, 2], tf.uint8)).numpy().tolist() == [1, 2]
    out = tf.nn.leaky_relu(tf.constant([-10, 5]))
    assert out.dtype == tf.float32 and out.numpy().tolist() == [-2.0, 5.0]  # TF computes ints in float32
    for name in ("sigmoid", "tanh", "elu", "softplus", "softsign"):
        with pytest.raises(errors.InvalidArgumentError, match="got int32"):
            getattr(tf.nn, name)(tf.constant([-1, 2]))


def test_activation_parameters():
    np.testing.assert_allclose(tf.nn.leaky_relu([-2.0, 3.0], alpha=0.5).numpy(), [-1.0, 3.0])
    x = np.linspace(-5, 5, 11)
    out = tf.nn.gelu(tf.constant(x), approximate=True).numpy()
    coeff = np.float64(np.float32(0.044715))  # a float32 constant in TensorFlow's graph, for float64 too
    np.testing.assert_allclose(out, 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + coeff * x**3))), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(tf.nn.silu(tf.constant(x), beta=2.0).numpy(), x * _sigmoid(2 * x), rtol=1e-12)
    np.testing.assert_allclose(tf.math.log_sigmoid(tf.constant([-1000.0, 0.0, 1000.0])).numpy(),
                               [-1000.0, -math.log(2), 0.0], rtol=1e-6)
    assert tf.nn.swish is tf.nn.silu


def test_moments_and_l2_normalize(rng):
    x = rng.standard_normal((4, 5, 6))
    mean, variance = tf.nn.moments(tf.constant(x), axes=[0, 2])
    np.testing.assert_allclose(mean.numpy(), x.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(variance.numpy(), x.var(axis=(0, 2)), rtol=1e-12)
    mean, variance = tf.nn.moments(tf.constant(x), axes=[1], keepdims=True)
    assert mean.shape == (4, 1, 6) and variance.shape == (4, 1, 6)
    mean, variance = tf.nn.moments(tf.constant([1000.0, 1001.0, 1002.0], tf.float16), axes=[0])
    assert mean.dtype == tf.float16 and float(mean) == 1001.0
    assert float(variance) == pytest.approx(2 / 3, rel=1e-3)
    out = tf.nn.l2_normalize(tf.constant(x), axis=-1).numpy()
    np.testing.assert_allclose(out, x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-12)
    out = tf.nn.l2_normalize(tf.constant([3.0, 4.0])).numpy()
    np.testing.assert_allclose(out, [0.6, 0.8], rtol=1e-6)
    assert tf.nn.l2_normalize(tf.zeros([2])).numpy().tolist() == [0.0, 0.0]  # epsilon keeps 0 / 0 away


# ---- large inputs, split over threads ------------------------------------------------------------------

def test_large_inputs(threads, rng):
    x = rng.uniform(-10, 10, (2048, 600)).astype(np.float32)
    ref = x.astype(np.float64)
    t = tf.constant(x)
    for axis in (-1, 0):
        np.testing.assert_allclose(tf.nn.softmax(t, axis=axis).numpy(), _np_softmax(ref, axis), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(tf.nn.log_softmax(t, axis=axis).numpy(), _np_log_softmax(ref, axis), rtol=1e-5,
                                   atol=1e-5)
    labels = rng.integers(0, 600, 2048)
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=t)
    np.testing.assert_allclose(out.numpy(), -_np_log_softmax(ref)[np.arange(2048), labels], rtol=1e-5, atol=1e-5)
    dense = _np_softmax(rng.standard_normal((2048, 600)))
    out = tf.nn.softmax_cross_entropy_with_logits(labels=dense.astype(np.float32), logits=t)
    np.testing.assert_allclose(out.numpy(), _np_softmax_xent(dense, ref), rtol=1e-5, atol=1e-5)
    value = rng.standard_normal((8, 64, 48, 48)).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    out = tf.nn.bias_add(tf.constant(value), tf.constant(bias), data_format="NCHW")
    np.testing.assert_allclose(out.numpy(), value + bias[:, None, None], rtol=1e-6)
    assert float(tf.nn.l2_loss(t)) == pytest.approx(np.sum(ref * ref) / 2, rel=1e-5)


def test_dropout_scales_kept_values_and_zeroes_about_rate():
    tf.random.set_seed(3)
    x = tf.ones([200, 100])
    y = tf.nn.dropout(x, rate=0.25).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(1 - kept.mean() - 0.25) < 0.02
    assert tf.nn.dropout(x, rate=0.0) is x
    rows = tf.nn.dropout(x, rate=0.5, noise_shape=[200, 1]).numpy()  # whole rows kept or dropped
    assert all(len(set(row.tolist())) == 1 for row in rows)
    with pytest.raises(ValueError):
        tf.nn.dropout(x, rate=1.0)
    with pytest.raises(ValueError):
        tf.nn.dropout(x)


# ---- tf.nn.gelu as TensorFlow 2.21 writes it

def _gelu_op_types(graph_def):
    """The op types of a gelu graph but the feeds, results and constants (ember folds TensorFlow's Cast of a
    float32 constant into the constant), AddV2 and Add counted as one."""
    skip = {"Placeholder", "Identity", "Const", "Cast", "NoOp"}
    return sorted("AddV2" if n.op == "Add" else n.op for n in graph_def.node if n.op not in skip)


def _gelu_inputs(dtype):
    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, 1e-30, -1e-30, 60.0, -60.0, 1e30, -1e30,
                                                     np.inf, -np.inf, np.nan]])
    with np.errstate(over="ignore"):  # +-1e30 are +-inf in the 16-bit floats
        return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


# How far ember's gelu may be from TensorFlow's, in ulps of TensorFlow's result. The 16-bit floats compute each
# op in float and round, as TensorFlow does, and agree bit for bit. In float32 and float64 the graphs are the
# same but the kernels are not: TensorFlow's float32 Erfc is up to 62 ulps off (ember's 0.5: kernels/vmath.h's
# verfc) and its float64 one up to 8 (std::erfc: 2), and in the tanh form TensorFlow's float32 Tanh rounds to
# -1 from |x| = 7.9 on, where 1 + tanh leaves an error of about eps * |x| after the cancellation.
_GELU_ULPS = {("float16", False): 0, ("float16", True): 0, ("bfloat16", False): 0, ("bfloat16", True): 0,
              ("float32", False): 8, ("float32", True): 8, ("float64", False): 8, ("float64", True): 8}


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_gelu_writes_tensorflows_graph_and_values(approximate, dtype):
    """ember's graph has TensorFlow's ops (erfc(-x / sqrt(2)), pow(x, 3)) and constants (0.044715 and 1 / sqrt(2)
    are float32 constants cast to x's dtype), so results agree with TensorFlow's to its kernels' rounding:
    bit for bit where the kernels are (_GELU_ULPS)."""
    import tensorflow as real_tf
    x = _gelu_inputs(dtype)
    want = real_tf.nn.gelu(real_tf.constant(x), approximate=approximate).numpy()
    got = tf.nn.gelu(tf.constant(x), approximate=approximate).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if _GELU_ULPS[(dtype, approximate)] == 0:
        assert got.tobytes() == want.tobytes()
    else:
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        x, got, want = (v[finite].astype(np.float64) for v in (x, got, want))
        tolerance = _GELU_ULPS[(dtype, approximate)] * np.spacing(np.abs(want).astype(dtype))
        if approximate:
            tolerance += 2 * np.finfo(dtype).eps * np.abs(x)
        assert (np.abs(got - want) <= tolerance).all(), x[np.argmax(np.abs(got - want) - tolerance)]

    theirs = real_tf.function(lambda v: real_tf.nn.gelu(v, approximate=approximate)).get_concrete_function(
        real_tf.TensorSpec(x.shape, getattr(real_tf, dtype)))
    ours = tf.function(lambda v: tf.nn.gelu(v, approximate=approximate)).get_concrete_function(
        tf.TensorSpec(x.shape, getattr(tf, dtype)))
    assert _gelu_op_types(ours.graph.as_graph_def()) == _gelu_op_types(theirs.graph.as_graph_def())

"""Reductions (reduce_* and argmax/argmin) against NumPy for every dtype they declare: the axis in every
form TF accepts, keepdims, empty inputs, NaN and infinities, TF's integer semantics, errors that name the
op, and inputs large enough to be split over threads."""
import numpy as np
import pytest

import ember as tf
from ember import _C, errors
from conftest import FLOAT_DTYPES, INT_DTYPES

NUMERIC = FLOAT_DTYPES + INT_DTYPES
SHAPE = (2, 3, 4)

# Tolerances for a reduction of a few dozen values against a float64 reference: 16-bit floats accumulate in
# float32 and round once, so the result is within a rounding of the output dtype.
RTOL = {tf.float16: 2e-3, tf.bfloat16: 1.6e-2, tf.float32: 1e-5, tf.float64: 1e-12}

# Every form of `axis` TF accepts, for an input of rank 3 (tensors are built in the test).
AXES = [None, 0, 1, 2, -1, -3, [0, 2], (1, -1), [2, 0], [], [0, 1, 2], (-1, -2, -3), np.int64(1),
        np.array([0, -1]), ("tensor", [0, 2]), ("tensor", 1), ("tensor64", [-1])]


def _axis_arg(axis):
    if isinstance(axis, tuple) and axis and isinstance(axis[0], str):
        return tf.constant(axis[1], dtype=tf.int64 if axis[0] == "tensor64" else tf.int32)
    return axis


def _np_axis(axis, ndim=len(SHAPE)):
    if isinstance(axis, tuple) and axis and isinstance(axis[0], str):
        axis = axis[1]
    if axis is None:
        return None
    if isinstance(axis, np.ndarray):
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % ndim for a in axis)
    return int(axis) % ndim


def _values(dtype, rng, shape=SHAPE):
    """Random values exactly representable in ``dtype``, as float64 (or int64)."""
    if dtype == tf.bool:
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        low = 0 if dtype.is_unsigned else -9
        return rng.integers(low, 10, shape)
    return rng.uniform(-4, 4, shape).astype(dtype.as_numpy_dtype).astype(np.float64)


def _np_mean(x, axis, keepdims, dtype):
    if not dtype.is_integer:
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = np.sum(x.astype(np.int64), axis=axis, keepdims=keepdims)
    count = x.size // max(total.size, 1) if x.size else 0
    return np.trunc(total / count).astype(np.int64)  # C++ integer division truncates toward zero


def _np_logsumexp(x, axis, keepdims):
    top = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_reference(name, dtype):
    """NumPy's version of a reduction; integer sums and products wrap in the dtype, as TF's do."""
    np_dtype = dtype.as_numpy_dtype if dtype.is_integer else None
    return {
        "reduce_sum": lambda x, a, k: np.sum(x.astype(np_dtype) if np_dtype else x, axis=a, keepdims=k, dtype=np_dtype),
        "reduce_prod": lambda x, a, k: np.prod(x.astype(np_dtype) if np_dtype else x, axis=a, keepdims=k,
                                               dtype=np_dtype),
        "reduce_max": lambda x, a, k: np.max(x, axis=a, keepdims=k),
        "reduce_min": lambda x, a, k: np.min(x, axis=a, keepdims=k),
        "reduce_mean": lambda x, a, k: _np_mean(x, a, k, dtype),
        "reduce_logsumexp": _np_logsumexp,
        "reduce_any": lambda x, a, k: np.any(x, axis=a, keepdims=k),
        "reduce_all": lambda x, a, k: np.all(x, axis=a, keepdims=k),
    }[name]


def _assert_reduced(actual, expected, dtype, msg=""):
    actual = actual.numpy() if isinstance(actual, tf.Tensor) else actual
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, msg
    if dtype.is_floating:
        rtol = RTOL[dtype]
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                                   atol=rtol * 10, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype), err_msg=msg)


NUMERIC_REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
OP_NAMES = {"reduce_sum": "Sum", "reduce_mean": "Mean", "reduce_max": "Max", "reduce_min": "Min",
            "reduce_prod": "Prod", "reduce_any": "Any", "reduce_all": "All", "reduce_logsumexp": "ReduceLogSumExp"}
CASES = ([(name, dtype) for name in NUMERIC_REDUCTIONS for dtype in NUMERIC] +
         [("reduce_logsumexp", dtype) for dtype in FLOAT_DTYPES] +
         [("reduce_any", tf.bool), ("reduce_all", tf.bool)])


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_reduction_against_numpy(name, dtype, rng):
    x = _values(dtype, rng)
    if name == "reduce_prod" and dtype.is_floating:
        x = (np.abs(x) / 4 + 0.5).astype(dtype.as_numpy_dtype).astype(np.float64)  # in [0.5, 1.5]: no overflow
    t = tf.constant(x, dtype=dtype)
    fn = getattr(tf, name)
    ref = _np_reference(name, dtype)
    for axis in AXES:
        for keepdims in (False, True):
            out = fn(t, axis=_axis_arg(axis), keepdims=keepdims)
            assert out.dtype == dtype
            expected = ref(x, _np_axis(axis), keepdims)
            _assert_reduced(out, expected, dtype, f"{name} {dtype.name} axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize("name", list(OP_NAMES))
def test_math_namespace_aliases(name):
    assert getattr(tf.math, name) is getattr(tf, name)


def test_argmax_argmin_aliases():
    assert tf.math.argmax is tf.argmax
    assert tf.math.argmin is tf.argmin


def test_default_axis_reduces_everything_and_keepdims_keeps_rank():
    x = tf.reshape(tf.range(24.0), SHAPE)
    assert tf.reduce_sum(x).shape == ()
    assert float(tf.reduce_sum(x)) == 276.0
    assert tf.reduce_sum(x, keepdims=True).shape == (1, 1, 1)
    assert tf.reduce_max(x, axis=1, keepdims=True).shape == (2, 1, 4)
    assert tf.reduce_max(x, axis=[0, 2], keepdims=True).shape == (1, 3, 1)
    assert tf.reduce_sum(x, keepdims=None).shape == ()  # None means False, as TF
    assert tf.reduce_sum(x, axis=[]).numpy().tolist() == x.numpy().tolist()  # no axes: nothing reduced


def test_rank_8_and_strided_inputs(rng):
    x = rng.standard_normal((2, 1, 3, 1, 2, 2, 1, 3))  # the maximum rank
    t = tf.constant(x)
    for axis in (None, [1, 3, 6], [0, 2, 4, 7], [7], list(range(8)), [5, 2]):
        np_axis = None if axis is None else tuple(axis)
        np.testing.assert_allclose(tf.reduce_sum(t, axis=axis).numpy(), x.sum(axis=np_axis), rtol=1e-12)
        out = tf.reduce_max(t, axis=axis, keepdims=True)
        np.testing.assert_array_equal(out.numpy(), x.max(axis=np_axis, keepdims=True))
    np.testing.assert_array_equal(tf.argmax(t, axis=5).numpy(), x.argmax(axis=5))
    y = rng.standard_normal((6, 8))
    strided = tf.constant(y)[:, ::2]
    np.testing.assert_allclose(tf.reduce_sum(strided, axis=0).numpy(), y[:, ::2].sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(tf.reduce_mean(tf.transpose(tf.constant(y)), axis=1).numpy(), y.mean(axis=0),
                               rtol=1e-12)


def test_scalar_input():
    x = tf.constant(3.5)
    for name in NUMERIC_REDUCTIONS + ["reduce_logsumexp"]:
        out = getattr(tf, name)(x)
        assert out.shape == () and float(out) == 3.5, name
        assert getattr(tf, name)(x, keepdims=True).shape == ()
        assert getattr(tf, name)(x, axis=[]).shape == ()
    assert bool(tf.reduce_any(tf.constant(True))) is True


def test_python_and_numpy_inputs():
    out = tf.reduce_sum([[1, 2], [3, 4]], axis=1)
    assert out.dtype == tf.int32 and out.numpy().tolist() == [3, 7]
    out = tf.reduce_mean([1.0, 2.0])
    assert out.dtype == tf.float32 and float(out) == 1.5
    out = tf.reduce_max(np.array([[1.0, 5.0], [7.0, 2.0]]), axis=0)
    assert out.dtype == tf.float64 and out.numpy().tolist() == [7.0, 5.0]
    assert tf.reduce_any([[True, False], [False, False]], axis=1).numpy().tolist() == [True, False]
    assert tf.reduce_all((True, True)).numpy().item() is True
    assert int(tf.reduce_prod((2, 3, 4))) == 24
    assert float(tf.reduce_logsumexp([0.0, 0.0])) == pytest.approx(np.log(2), rel=1e-6)
    assert int(tf.reduce_sum(5)) == 5
    assert int(tf.argmax([1, 3, 2])) == 1
    assert tf.argmin(np.array([[4, 1], [0, 9]], np.int16), axis=1).numpy().tolist() == [1, 0]


# ---- TF's integer semantics --------------------------------------------------------------------------

def test_integer_mean_truncates_toward_zero():
    # Constants recorded from TensorFlow 2.21.
    assert int(tf.reduce_mean(tf.constant([1, 2]))) == 1
    assert int(tf.reduce_mean(tf.constant([-1, -2]))) == -1
    assert int(tf.reduce_mean(tf.constant([-3, -4]))) == -3
    assert tf.reduce_mean(tf.constant([[-7, 2], [5, -3]], tf.int8), axis=1).numpy().tolist() == [-2, 1]
    assert int(tf.reduce_mean(tf.constant([-100, -100, -101], tf.int8))) == -100
    assert tf.reduce_mean(tf.constant([[255, 254], [1, 2]], tf.uint8), axis=0).numpy().tolist() == [128, 128]
    out = tf.reduce_mean(tf.constant([7, 8, 8], tf.int64))
    assert out.dtype == tf.int64 and int(out) == 7


def test_integer_mean_does_not_overflow_in_narrow_types():
    # TF 2.21 sums int8/int16/uint8/int32 in a wider type before dividing.
    assert int(tf.reduce_mean(tf.constant([100, 100, 100], tf.int8))) == 100
    assert int(tf.reduce_mean(tf.constant([250, 251, 3], tf.uint8))) == 168
    assert int(tf.reduce_mean(tf.constant([30000, 30000, 30001], tf.int16))) == 30000
    assert int(tf.reduce_mean(tf.constant([2**30, 2**30, 2**30], tf.int32))) == 2**30


def test_integer_sum_and_prod_wrap_around():
    # Recorded from TensorFlow 2.21: integer arithmetic wraps in the dtype.
    assert int(tf.reduce_sum(tf.constant([100, 100, 100], tf.int8))) == 44
    assert int(tf.reduce_sum(tf.constant([2**31 - 1, 1], tf.int32))) == -(2**31)
    assert int(tf.reduce_prod(tf.constant([200, 200], tf.uint8))) == 64
    assert int(tf.reduce_prod(tf.fill([40], tf.constant(3, tf.int32)))) == 689956897
    assert int(tf.reduce_mean(tf.constant([2**62, 2**62], tf.int64))) == -(2**62)


def test_sixteen_bit_floats_accumulate_in_float32():
    # 100000 * f16(0.1): a float16 accumulator would stall near 256; TF gives 10000.
    x = tf.fill([100000], tf.constant(0.1, tf.float16))
    assert float(tf.reduce_sum(x)) == 10000.0
    assert float(tf.reduce_mean(tf.fill([5000], tf.constant(0.1, tf.float16)))) == pytest.approx(0.1, rel=1e-3)
    y = tf.fill([100000], tf.constant(0.1, tf.bfloat16))
    assert float(tf.reduce_sum(y)) == 9984.0  # the bfloat16 nearest to 10000.9, as TF
    assert float(tf.reduce_mean(y)) == pytest.approx(0.1, rel=4e-3)
    assert float(tf.reduce_sum(tf.ones([5000], tf.bfloat16))) == 4992.0
    assert float(tf.reduce_sum(tf.fill([100000], tf.constant(1.0, tf.float16)))) == np.inf  # > float16 max
    assert float(tf.reduce_prod(tf.fill([20], tf.constant(1.5, tf.float16)))) == 3326.0


# ---- empty inputs -------------------------------------------------------------------------------------

def _identity(name, dtype):
    if name == "reduce_sum":
        return 0
    if name == "reduce_prod":
        return 1
    if name == "reduce_mean":
        return np.nan if dtype.is_floating else 0
    if name == "reduce_logsumexp":
        return -np.inf
    if name == "reduce_any":
        return False
    if name == "reduce_all":
        return True
    if dtype.is_floating:
        return -np.inf if name == "reduce_max" else np.inf
    info = np.iinfo(dtype.as_numpy_dtype)
    return info.min if name == "reduce_max" else info.max


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_empty_input_gives_the_identity(name, dtype):
    fn = getattr(tf, name)
    x = tf.zeros([0, 3], dtype=dtype)
    value = _identity(name, dtype)
    out = fn(x, axis=0)
    assert out.shape == (3,) and out.dtype == dtype
    _assert_reduced(out, np.full([3], value), dtype)
    _assert_reduced(fn(x, axis=0, keepdims=True), np.full([1, 3], value), dtype)
    _assert_reduced(fn(x), np.array(value), dtype)
    assert fn(x, axis=1).shape == (0,)
    assert fn(x, axis=1, keepdims=True).shape == (0, 1)
    assert fn(tf.zeros([2, 0, 4], dtype=dtype), axis=[0, 2]).shape == (0,)


# ---- NaN and infinities --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_nan_propagates(dtype):
    for position in range(3):
        values = [1.0, 2.0, 3.0]
        values[position] = np.nan
        x = tf.constant(values, dtype=dtype)
        for name in ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp"]:
            assert np.isnan(float(getattr(tf, name)(x))), (name, dtype.name, position)
    rows = tf.constant([[1.0, np.nan], [2.0, 3.0]], dtype=dtype)
    for name in ["reduce_sum", "reduce_max", "reduce_min", "reduce_logsumexp"]:
        by_row = getattr(tf, name)(rows, axis=1).numpy().astype(np.float64)
        assert np.isnan(by_row[0]) and not np.isnan(by_row[1]), name
        by_col = getattr(tf, name)(rows, axis=0).numpy().astype(np.float64)
        assert not np.isnan(by_col[0]) and np.isnan(by_col[1]), name


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_infinities(dtype):
    inf = np.inf
    assert float(tf.reduce_max(tf.constant([-inf, -inf], dtype))) == -inf
    assert float(tf.reduce_min(tf.constant([inf, 1.0], dtype))) == 1.0
    assert np.isnan(float(tf.reduce_sum(tf.constant([inf, -inf], dtype))))
    assert float(tf.reduce_logsumexp(tf.constant([-inf, -inf], dtype))) == -inf
    assert float(tf.reduce_logsumexp(tf.constant([inf, 1.0], dtype))) == inf
    assert float(tf.reduce_logsumexp(tf.constant([inf, -inf], dtype))) == inf
    assert float(tf.reduce_logsumexp(tf.constant([inf, inf], dtype))) == inf
    out = tf.reduce_logsumexp(tf.constant([[-inf, -inf], [0.0, 0.0]], dtype), axis=1).numpy().astype(np.float64)
    assert out[0] == -inf and out[1] == pytest.approx(np.log(2), rel=RTOL[dtype])


def test_logsumexp_is_stable_for_huge_values():
    for dtype in (tf.float32, tf.float64):
        assert float(tf.reduce_logsumexp(tf.constant([1000.0, 1000.0], dtype))) == pytest.approx(1000 + np.log(2))
        assert float(tf.reduce_logsumexp(tf.constant([-1000.0, -1000.0], dtype))) == pytest.approx(-1000 + np.log(2))
        out = tf.reduce_logsumexp(tf.constant([[1e30, 0.0], [-1e30, 5.0]], dtype), axis=1).numpy()
        np.testing.assert_allclose(out, [1e30, 5.0], rtol=1e-6)
    assert float(tf.reduce_logsumexp(tf.constant([10000.0, 10000.0], tf.float16))) == 10000.0
    assert float(tf.reduce_logsumexp(tf.constant([1.0, 2.0, 3.0], tf.bfloat16))) == 3.40625  # as TF
    out = tf.reduce_logsumexp(tf.constant([[1.0, 2.0, 3.0]]), axis=1, keepdims=True)
    assert out.shape == (1, 1) and float(out[0, 0]) == pytest.approx(3.4076059, rel=1e-6)


# ---- argmax / argmin -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC + [tf.bool], ids=lambda d: d.name)
def test_argmax_argmin_against_numpy(dtype, rng):
    x = _values(dtype, rng, (5, 6, 7))
    if dtype.is_integer:
        x = x % 4  # many ties: the first index wins, as in NumPy
    t = tf.constant(x, dtype=dtype)
    for axis in (0, 1, 2, -1, -3, np.int32(1), tf.constant(1), tf.constant(2, tf.int64)):
        np_axis = int(axis) % 3
        for fn, ref in ((tf.argmax, np.argmax), (tf.argmin, np.argmin)):
            out = fn(t, axis=axis)
            assert out.dtype == tf.int64
            np.testing.assert_array_equal(out.numpy(), ref(x, axis=np_axis), err_msg=f"{fn.__name__} {axis}")
    np.testing.assert_array_equal(tf.argmax(t).numpy(), np.argmax(x, axis=0))  # default axis 0
    np.testing.assert_array_equal(tf.argmin(t).numpy(), np.argmin(x, axis=0))


def test_argmax_output_type():
    x = tf.constant([[1.0, 2.0], [3.0, 0.0]])
    for output_type in (tf.int32, tf.int64, "int32"):
        out = tf.argmax(x, axis=-1, output_type=output_type)
        assert out.dtype == tf.as_dtype(output_type) and out.numpy().tolist() == [1, 0]
        out = tf.argmin(x, axis=0, output_type=output_type)
        assert out.dtype == tf.as_dtype(output_type) and out.numpy().tolist() == [0, 1]
    with pytest.raises(errors.InvalidArgumentError, match="ArgMax: output_type must be int32 or int64"):
        tf.argmax(x, output_type=tf.float32)
    with pytest.raises(errors.InvalidArgumentError, match="ArgMin: output_type"):
        tf.argmin(x, output_type=tf.int16)


def test_argmax_ties_take_the_first_index():
    assert int(tf.argmax(tf.constant([1, 3, 3]))) == 1
    assert int(tf.argmin(tf.constant([3, 1, 1]))) == 1
    assert int(tf.argmax(tf.constant([False, True, True]))) == 1
    assert int(tf.argmax(tf.constant([-np.inf, -np.inf]))) == 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_argmax_argmin_skip_nan_as_tf(dtype):
    # Recorded from TensorFlow 2.21 (CPU): NaN never wins against a number; an all-NaN row gives 0.
    cases = [([np.nan, 1, 3], 2, 1), ([1, np.nan, 3], 2, 0), ([1, 3, np.nan], 1, 0), ([3, np.nan, 1], 0, 2),
             ([np.nan, np.nan], 0, 0), ([5, np.nan, 3, np.nan], 0, 2), ([-np.inf, np.nan], 0, 0)]
    for values, expected_max, expected_min in cases:
        x = tf.constant(values, dtype=dtype)
        assert int(tf.argmax(x)) == expected_max, (values, "argmax")
        assert int(tf.argmin(x)) == expected_min, (values, "argmin")
    x = tf.constant([[1, np.nan, 3], [np.nan, 2, 0]], dtype=dtype)
    assert tf.argmax(x, 1).numpy().tolist() == [2, 1]
    assert tf.argmin(x, 1).numpy().tolist() == [0, 2]
    assert tf.argmax(x, 0).numpy().tolist() == [0, 1, 0]
    assert tf.argmin(x, 0).numpy().tolist() == [0, 1, 1]


def test_argmax_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"ArgMax: reduction axis 0 is empty in shape \[0,3\]"):
        tf.argmax(tf.zeros([0, 3]), axis=0)
    assert tf.argmax(tf.zeros([0, 3]), axis=1).shape == (0,)  # the reduced axis is not the empty one
    with pytest.raises(errors.InvalidArgumentError, match=r"ArgMin: axis 2 is out of range.*\[-2, 2\)"):
        tf.argmin(tf.constant([[1.0, 2.0]]), axis=2)
    with pytest.raises(errors.InvalidArgumentError, match="ArgMax: axis -3"):
        tf.argmax(tf.constant([[1.0, 2.0]]), axis=-3)
    with pytest.raises(errors.InvalidArgumentError, match="ArgMax.*rank 0"):
        tf.argmax(tf.constant(3.0))
    with pytest.raises(TypeError):
        tf.argmax(tf.constant([[1.0, 2.0]]), axis=[1])
    with pytest.raises(TypeError):
        tf.argmax(tf.constant([[1.0, 2.0]]), axis=1.0)


# ---- errors ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(OP_NAMES))
def test_axis_out_of_range_names_the_op(name):
    op = OP_NAMES[name]
    x = tf.constant([[True, False]]) if name in ("reduce_any", "reduce_all") else tf.constant([[1.0, 2.0]])
    fn = getattr(tf, name)
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}: axis 2 is out of range .*\[-2, 2\)"):
        fn(x, axis=2)
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}: axis -3 is out of range"):
        fn(x, axis=[0, -3])
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}: axis 0 is out of range .*rank 0"):
        fn(x[0, 0], axis=0)


@pytest.mark.parametrize("name", list(OP_NAMES))
def test_duplicate_axis_names_the_op(name):
    op = OP_NAMES[name]
    x = tf.ones([2, 3], tf.bool) if name in ("reduce_any", "reduce_all") else tf.ones([2, 3])
    fn = getattr(tf, name)
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}: axis \[0, 0\] contains axis 0 twice"):
        fn(x, axis=[0, 0])
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}: axis \[1, -1\] contains axis 1 twice"):
        fn(x, axis=[1, -1])
    with pytest.raises(errors.InvalidArgumentError, match=rf"^{op}:"):
        fn(x, axis=tf.constant([-2, 0]))


def test_unsupported_dtypes_name_the_op():
    with pytest.raises(errors.InvalidArgumentError, match=r"^Sum: .*got bool"):
        tf.reduce_sum(tf.constant([True, False]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^Mean: .*got bool"):
        tf.reduce_mean(tf.constant([True, False]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^Any: .*got float32"):
        tf.reduce_any(tf.constant([1.0, 0.0]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^All: .*got int32"):
        tf.reduce_all(tf.constant([1, 0]))
    with pytest.raises(errors.InvalidArgumentError, match=r"^ReduceLogSumExp: .*got int32"):
        tf.reduce_logsumexp(tf.constant([1, 2]))


def test_non_integer_axis_is_a_type_error():
    x = tf.constant([[1.0, 2.0]])
    with pytest.raises(TypeError):
        tf.reduce_sum(x, axis=1.0)
    with pytest.raises(TypeError):
        tf.reduce_sum(x, axis=[0, 1.5])
    with pytest.raises(TypeError):
        tf.reduce_max(x, axis=tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.reduce_mean(x, axis="1")


# ---- reduce_variance, reduce_std, reduce_euclidean_norm, count_nonzero ----------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_variance_std_against_numpy(dtype, rng):
    x = _values(dtype, rng)
    t = tf.constant(x, dtype=dtype)
    for axis in (None, 0, -1, [0, 2], ("tensor", [1])):
        for keepdims in (False, True):
            a = _np_axis(axis)
            out = tf.math.reduce_variance(t, axis=_axis_arg(axis), keepdims=keepdims)
            assert out.dtype == dtype
            _assert_reduced(out, np.var(x, axis=a, keepdims=keepdims), dtype, f"variance {axis}")
            out = tf.math.reduce_std(t, axis=_axis_arg(axis), keepdims=keepdims)
            _assert_reduced(out, np.std(x, axis=a, keepdims=keepdims), dtype, f"std {axis}")
    assert float(tf.math.reduce_variance([[1.0, 2.0]])) == 0.25  # as TF's docstring
    assert float(tf.math.reduce_std([[1.0, 2.0], [3.0, 4.0]])) == pytest.approx(1.118034, rel=1e-6)
    with pytest.raises(TypeError, match="integer"):
        tf.math.reduce_variance(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="integer"):
        tf.math.reduce_std([1, 2])


def test_euclidean_norm():
    x = tf.constant([[3.0, 4.0], [5.0, 12.0]])
    assert tf.math.reduce_euclidean_norm(x, axis=1).numpy().tolist() == [5.0, 13.0]
    assert float(tf.math.reduce_euclidean_norm(x)) == pytest.approx(np.sqrt(194), rel=1e-6)
    assert tf.math.reduce_euclidean_norm(x, axis=0, keepdims=True).shape == (1, 2)
    # Integers are truncated, as in TF's docstring example.
    out = tf.math.reduce_euclidean_norm(tf.constant([[1, 2, 3], [1, 1, 1]]), axis=1)
    assert out.dtype == tf.int32 and out.numpy().tolist() == [3, 1]
    # Squares are summed in the dtype, as TF's kernel: 200^2 wraps to 64 in uint8, sqrt(128) -> 11.
    assert int(tf.math.reduce_euclidean_norm(tf.constant([[200, 200]], tf.uint8))) == 11
    assert float(tf.math.reduce_euclidean_norm(tf.constant([3.0, 4.0], tf.float16))) == 5.0


def test_count_nonzero():
    x = tf.constant([[0.0, 1.5, 0.0], [2.0, -1.0, 0.0]])
    out = tf.math.count_nonzero(x)
    assert out.dtype == tf.int64 and int(out) == 3
    assert tf.math.count_nonzero(x, axis=1).numpy().tolist() == [1, 2]
    assert tf.math.count_nonzero(x, axis=0, keepdims=True).numpy().tolist() == [[1, 2, 0]]
    out = tf.math.count_nonzero(tf.constant([True, False, True]), dtype=tf.int32)
    assert out.dtype == tf.int32 and int(out) == 2
    assert int(tf.math.count_nonzero([[0, 7], [3, 0]])) == 2
    assert int(tf.math.count_nonzero(tf.constant([np.nan, 0.0]))) == 1


# ---- large inputs, split over threads -------------------------------------------------------------------

def test_large_float_reductions(threads, rng):
    x = rng.random((2048, 1024), dtype=np.float32)  # 2M elements
    t = tf.constant(x)
    ref = x.astype(np.float64)
    for axis in (None, 0, 1):  # everything, columns, rows
        np.testing.assert_allclose(tf.reduce_sum(t, axis=axis).numpy(), ref.sum(axis=axis), rtol=1e-5)
        np.testing.assert_allclose(tf.reduce_mean(t, axis=axis).numpy(), ref.mean(axis=axis), rtol=1e-5)
        np.testing.assert_array_equal(tf.reduce_max(t, axis=axis).numpy(), x.max(axis=axis))
        np.testing.assert_array_equal(tf.reduce_min(t, axis=axis).numpy(), x.min(axis=axis))
        expected = _np_logsumexp(ref, axis, False)
        np.testing.assert_allclose(tf.reduce_logsumexp(t, axis=axis).numpy(), expected, rtol=1e-5)
    out = tf.reduce_sum(t, axis=1, keepdims=True)
    assert out.shape == (2048, 1)


def test_large_three_dimensional_reductions(threads, rng):
    x = rng.standard_normal((64, 130, 160)).astype(np.float32)  # 1.3M elements
    t = tf.constant(x)
    ref = x.astype(np.float64)
    for axis in ((0, 2), 1, (1, 2), (0, 1), 0, 2):
        np.testing.assert_allclose(tf.reduce_sum(t, axis=list(axis) if isinstance(axis, tuple) else axis).numpy(),
                                   ref.sum(axis=axis), rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(tf.reduce_max(t, axis=axis).numpy(), x.max(axis=axis))


def test_large_integer_and_bool_reductions(threads, rng):
    xi = rng.integers(-1000, 1000, (2048, 1024)).astype(np.int32)
    ti = tf.constant(xi)
    x64 = xi.astype(np.int64) * 3_000_000_000
    t64 = tf.constant(x64)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(tf.reduce_sum(ti, axis=axis).numpy(), xi.sum(axis=axis, dtype=np.int32))
        np.testing.assert_array_equal(tf.reduce_sum(t64, axis=axis).numpy(), x64.sum(axis=axis))
        np.testing.assert_array_equal(tf.reduce_min(ti, axis=axis).numpy(), xi.min(axis=axis))
        np.testing.assert_array_equal(tf.reduce_mean(ti, axis=axis).numpy(), _np_mean(xi, axis, False, tf.int32))
    flags = np.ones((2048, 1024), bool)
    flags[1500, 700] = False
    t = tf.constant(flags)
    assert not bool(tf.reduce_all(t))
    assert tf.reduce_all(t, axis=1).numpy().sum() == 2047 and not tf.reduce_all(t, axis=1).numpy()[1500]
    assert tf.reduce_all(t, axis=0).numpy().sum() == 1023 and not tf.reduce_all(t, axis=0).numpy()[700]
    t = tf.constant(~flags)
    assert bool(tf.reduce_any(t))
    assert tf.reduce_any(t, axis=0).numpy().nonzero()[0].tolist() == [700]
    assert tf.reduce_any(t, axis=1).numpy().nonzero()[0].tolist() == [1500]


def test_large_float64_product_and_float16_sum(threads, rng):
    x = rng.uniform(0.999, 1.001, (2048, 600))
    t = tf.constant(x)
    for axis in (None, 0, 1):
        np.testing.assert_allclose(tf.reduce_prod(t, axis=axis).numpy(), x.prod(axis=axis), rtol=1e-9)
    h = tf.fill([1024, 1024], tf.constant(0.001, tf.float16))
    value = np.float64(np.float16(0.001))
    assert float(tf.reduce_sum(h)) == pytest.approx(value * 1024 * 1024, rel=1e-3)
    np.testing.assert_allclose(tf.reduce_sum(h, axis=0).numpy().astype(np.float64), value * 1024, rtol=1e-3)
    np.testing.assert_allclose(tf.reduce_mean(h, axis=1).numpy().astype(np.float64), value, rtol=1e-3)


def test_large_argmax_argmin(threads, rng):
    x = rng.random((2048, 1024), dtype=np.float32)
    x[1234, 567] = 2.0
    x[42, 999] = -1.0
    t = tf.constant(x)
    for axis in (0, 1):
        np.testing.assert_array_equal(tf.argmax(t, axis=axis).numpy(), x.argmax(axis=axis))
        np.testing.assert_array_equal(tf.argmin(t, axis=axis).numpy(), x.argmin(axis=axis))
    flat = tf.reshape(t, [-1])
    assert int(tf.argmax(flat)) == 1234 * 1024 + 567
    assert int(tf.argmin(flat)) == 42 * 1024 + 999


@pytest.mark.parametrize("op", [tf.math.cumsum, tf.math.cumprod])
@pytest.mark.parametrize("axis", [0, 1])
def test_scan_of_an_empty_tensor_does_no_work_over_its_other_dims(op, axis):
    # Issue 12 item 8: [0, 2**40] scheduled 2**32 work items of nothing and spun for hours; a hang here
    # is what the op fuzzer's per-case timeout reports.
    for dims in ([0, 2**40], [2**40, 0]):
        out = op(tf.zeros(dims), axis=axis, exclusive=True, reverse=True)
        assert out.shape.as_list() == dims
        traced = tf.function(lambda x: op(x, axis=axis))(tf.zeros(dims))
        assert traced.shape.as_list() == dims


_OOM_SCRIPT = """
import resource
import ember as tf
from ember import errors
x = tf.zeros([1 << 27, 1], tf.bfloat16)
with open("/proc/self/status") as status:
    mapped = int(next(line for line in status if line.startswith("VmSize:")).split()[1]) * 1024
# Room for the 256 MiB output but not for the 512 MiB of float accumulators LogSumExp shifts by.
resource.setrlimit(resource.RLIMIT_AS, (mapped + (400 << 20), resource.RLIM_INFINITY))
try:
    tf.reduce_logsumexp(x, axis=1)
except errors.ResourceExhaustedError as e:
    print("ResourceExhaustedError:", e)
"""


def test_out_of_memory_in_a_reduction_buffer_is_resource_exhausted():
    # Issue 12 item 9: the kernel's temporary buffer threw std::bad_alloc, which aborted the process.
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    python = [sys.executable] + (["-S"] if sys.flags.no_site else [])
    run = subprocess.run(python + ["-c", _OOM_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ResourceExhaustedError: ReduceLogSumExp: out of memory" in run.stdout, run.stdout + run.stderr


# ---- Prod's gradient with the axis computed in the graph (Note [Product gradient with zeros]): the
# permutation that gathers the reduced axes is computed at run time. Compared with TensorFlow and with
# finite differences, first and second order, on inputs holding zeros (one and two in a reduced slice).


def _prod_zeros_input(rng, shape):
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    x.flat[1] = 0.0  # one zero in some slices
    x.flat[-1] = 0.0
    x.flat[-2] = 0.0  # two zeros in a slice along the last axis
    return x


def _prod_objective(m, x, axis, keepdims):
    return m.reduce_sum(m.sin(m.reduce_prod(x, axis, keepdims=keepdims)))


def _prod_grads(m, x, axis, w, keepdims):
    """The gradient of the objective and the gradient of <gradient, w> (second order)."""
    with m.GradientTape() as outer:
        outer.watch(x)
        with m.GradientTape() as inner:
            inner.watch(x)
            y = _prod_objective(m, x, axis, keepdims)
        g = inner.gradient(y, x)
        s = m.reduce_sum(g * w)
    return g, outer.gradient(s, x)


def _central_difference(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        out[idx] = (f(plus) - f(minus)) / (2 * eps)
    return out


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [[1], [0, 2], [2, 0], [-1], [0, 1, 2], []])
def test_prod_gradient_with_axis_computed_in_the_graph(axis, keepdims, rng):
    import tensorflow as tf2

    spec = tf.TensorSpec([None, None, None], tf.float64)

    @tf.function(input_signature=[spec, tf.TensorSpec([None], tf.int32), spec])
    def grads(x, axis, w):
        return _prod_grads(tf, x, axis, w, keepdims)

    for shape, zeros in [((2, 3, 4), True), ((3, 1, 2), True), ((2, 3, 4), False)]:  # one trace
        x = _prod_zeros_input(rng, shape) if zeros else rng.uniform(0.5, 1.5, shape)
        w = rng.standard_normal(shape)
        g, gg = (t.numpy() for t in grads(tf.constant(x), tf.constant(axis, tf.int32), tf.constant(w)))
        objective = lambda v: float(_prod_objective(tf, tf.constant(v), axis, keepdims))  # noqa: E731
        np.testing.assert_allclose(g, _central_difference(objective, x), rtol=1e-6, atol=1e-7)
        first = lambda v: float(np.sum(_prod_grads(tf, tf.constant(v), axis, w, keepdims)[0].numpy() * w))  # noqa: E731
        np.testing.assert_allclose(gg, _central_difference(first, x), rtol=1e-5, atol=1e-6)
        want_g, want_gg = (t.numpy() for t in _prod_grads(tf2, tf2.constant(x), tf2.constant(axis, tf2.int32),
                                                          tf2.constant(w), keepdims))
        np.testing.assert_allclose(g, want_g, rtol=1e-10, atol=1e-12)
        if not zeros:  # TensorFlow's Cumprod gradient divides by x, so its second order is wrong at zeros
            np.testing.assert_allclose(gg, want_gg, rtol=1e-10, atol=1e-12)
    assert grads.experimental_get_tracing_count() == 1

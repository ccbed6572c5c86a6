"""Element-wise ops against NumPy for every dtype they declare, with broadcasting."""
import math

import numpy as np
import pytest

import ember as tf
from ember import errors
from conftest import ALL_DTYPES, FLOAT_DTYPES, assert_close

_erf = np.vectorize(math.erf)
_erfc = np.vectorize(math.erfc)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name, numpy reference, input domain ("any", "positive", "nonzero", "bool"), dtypes
UNARY = [
    ("negative", np.negative, "any", "signed"),
    ("abs", np.abs, "any", "signed"),
    ("sign", np.sign, "any", "signed"),
    ("exp", np.exp, "any", "float"),
    ("log", np.log, "positive", "float"),
    ("log1p", np.log1p, "positive", "float"),
    ("expm1", np.expm1, "any", "float"),
    ("sqrt", np.sqrt, "positive", "float"),
    ("rsqrt", lambda x: 1 / np.sqrt(x), "positive", "float"),
    ("square", np.square, "any", "numeric"),
    ("reciprocal", np.reciprocal, "nonzero", "float"),
    ("sin", np.sin, "any", "float"),
    ("cos", np.cos, "any", "float"),
    ("tan", np.tan, "any", "float"),
    ("tanh", np.tanh, "any", "float"),
    ("sinh", np.sinh, "any", "float"),
    ("cosh", np.cosh, "any", "float"),
    ("sigmoid", _sigmoid, "any", "float"),
    ("relu", lambda x: np.maximum(x, 0), "any", "numeric"),
    ("relu6", lambda x: np.clip(x, 0, 6), "any", "numeric"),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x)), "any", "float"),
    ("softplus", lambda x: np.logaddexp(0, x), "any", "float"),
    ("erf", _erf, "any", "float"),
    ("erfc", _erfc, "any", "float"),
    ("floor", np.floor, "any", "float"),
    ("ceil", np.ceil, "any", "float"),
    ("round", np.round, "any", "float"),
    ("rint", np.rint, "any", "float"),
    ("logical_not", np.logical_not, "bool", "bool"),
    ("is_nan", np.isnan, "any", "float"),
    ("is_finite", np.isfinite, "any", "float"),
]

SIGNED = [d for d in ALL_DTYPES if d not in (tf.uint8, tf.bool)]
NUMERIC = [d for d in ALL_DTYPES if d != tf.bool]
DTYPE_SETS = {"signed": SIGNED, "float": FLOAT_DTYPES, "numeric": NUMERIC, "bool": [tf.bool]}


def _math_fn(name):
    return getattr(tf.math, name, None) or getattr(tf.nn, name)


def _input(domain, dtype, rng, shape=(3, 5)):
    if domain == "bool":
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        low = 0 if dtype.is_unsigned else -10
        return rng.integers(low, 10, shape)
    x = rng.uniform(-4, 4, shape)
    if domain == "positive":
        x = np.abs(x) + 0.1
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x.astype(dtype.as_numpy_dtype).astype(np.float64)  # representable in the dtype


@pytest.mark.parametrize("name,ref,domain,kinds", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_numpy(name, ref, domain, kinds, rng):
    for dtype in DTYPE_SETS[kinds]:
        x = _input(domain, dtype, rng)
        out = _math_fn(name)(tf.constant(x, dtype=dtype))
        expected = ref(x)
        if expected.dtype != np.bool_ and dtype != tf.bool and not name.startswith("is_"):
            assert out.dtype == dtype, (name, dtype)
        if dtype.is_integer:
            expected = expected.astype(dtype.as_numpy_dtype)
        assert_close(out.numpy(), expected, tf.bool if expected.dtype == np.bool_ else dtype)


def test_unary_special_values():
    x = tf.constant([np.nan, np.inf, -np.inf, 0.0, -0.0])
    np.testing.assert_array_equal(tf.math.is_nan(x).numpy(), [True, False, False, False, False])
    np.testing.assert_array_equal(tf.math.is_finite(x).numpy(), [False, False, False, True, True])
    np.testing.assert_array_equal(tf.exp(x).numpy(), [np.nan, np.inf, 0, 1, 1])
    np.testing.assert_array_equal(tf.tanh(x).numpy(), [np.nan, 1, -1, 0, 0])
    np.testing.assert_array_equal(tf.sigmoid(x).numpy(), [np.nan, 1, 0, 0.5, 0.5])
    np.testing.assert_array_equal(tf.math.log(tf.constant([0.0, -1.0, np.inf])).numpy(), [-np.inf, np.nan, np.inf])
    np.testing.assert_array_equal(tf.sign(tf.constant([np.nan, -2.0, 0.0])).numpy(), [np.nan, -1, 0])
    np.testing.assert_array_equal(tf.round(tf.constant([0.5, 1.5, 2.5, -0.5])).numpy(), [0, 2, 2, -0.0])


BINARY = [
    ("add", np.add, "numeric"),
    ("subtract", np.subtract, "numeric"),
    ("multiply", np.multiply, "numeric"),
    ("floordiv", np.floor_divide, "numeric"),
    ("floormod", np.mod, "numeric"),
    ("pow", np.power, "numeric"),
    ("maximum", np.maximum, "numeric"),
    ("minimum", np.minimum, "numeric"),
    ("squared_difference", lambda a, b: (a - b) ** 2, "numeric"),
    ("equal", np.equal, "all"),
    ("not_equal", np.not_equal, "all"),
    ("less", np.less, "numeric"),
    ("less_equal", np.less_equal, "numeric"),
    ("greater", np.greater, "numeric"),
    ("greater_equal", np.greater_equal, "numeric"),
    ("logical_and", np.logical_and, "bool"),
    ("logical_or", np.logical_or, "bool"),
]
SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (5,)), ((5,), ()), ((1,), (2, 3, 1))]


def _binary_inputs(name, dtype, rng, shape_a, shape_b):
    if dtype == tf.bool:
        return rng.random(shape_a) > 0.5, rng.random(shape_b) > 0.5
    if dtype.is_integer:
        low = 0 if dtype.is_unsigned else -6
        a = rng.integers(low, 7, shape_a)
        b = rng.integers(low, 7, shape_b)
        if name in ("floordiv", "floormod"):
            b = np.where(b == 0, 3, b)
        if name == "pow":
            a, b = np.abs(a) % 4, np.abs(b) % 4
        return a, b
    a = rng.uniform(-3, 3, shape_a)
    b = rng.uniform(-3, 3, shape_b)
    if name in ("floordiv", "floormod"):
        b = np.where(np.abs(b) < 0.5, 1.25, b)
    if name == "pow":
        a = np.abs(a) + 0.5
    cast = lambda v: np.asarray(v).astype(dtype.as_numpy_dtype).astype(np.float64)  # noqa: E731
    return cast(a), cast(b)


@pytest.mark.parametrize("name,ref,kinds", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_numpy(name, ref, kinds, rng):
    dtypes = {"numeric": NUMERIC, "all": ALL_DTYPES, "bool": [tf.bool]}[kinds]
    for dtype in dtypes:
        for shape_a, shape_b in SHAPE_PAIRS:
            a, b = _binary_inputs(name, dtype, rng, shape_a, shape_b)
            out = getattr(tf.math, name)(tf.constant(a, dtype=dtype), tf.constant(b, dtype=dtype))
            expected = ref(a, b)
            assert out.shape == np.broadcast_shapes(shape_a, shape_b)
            if expected.dtype == np.bool_:
                np.testing.assert_array_equal(out.numpy(), expected, err_msg=f"{name} {dtype}")
            else:
                if dtype.is_integer:
                    expected = expected.astype(np.int64).astype(dtype.as_numpy_dtype)
                elif dtype in (tf.float16, tf.bfloat16) and name in ("floordiv", "floormod"):
                    continue  # rounding of a/b in 16 bits legitimately moves floor() by one
                assert_close(out.numpy(), expected, dtype)


def test_divide_and_truediv():
    np.testing.assert_allclose(tf.divide(tf.constant([1.0, 3.0]), 2.0).numpy(), [0.5, 1.5])
    out = tf.math.truediv(tf.constant([7, -7]), tf.constant([2, 2]))
    assert out.dtype == tf.float64 and out.numpy().tolist() == [3.5, -3.5]


def test_integer_division_by_zero_is_an_error():
    with pytest.raises(errors.InvalidArgumentError, match="division by zero"):
        tf.math.floordiv(tf.constant([1, 2]), tf.constant([1, 0]))
    with pytest.raises(errors.InvalidArgumentError, match="negative integer powers"):
        tf.pow(tf.constant([2]), tf.constant([-1]))


def test_maximum_propagates_nan():
    out = tf.maximum(tf.constant([np.nan, 1.0]), tf.constant([0.0, np.nan]))
    assert np.isnan(out.numpy()).all()


def test_add_n():
    xs = [tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), tf.constant([5.0, 6.0])]
    assert tf.add_n(xs).numpy().tolist() == [9.0, 12.0]
    assert tf.add_n(xs[:1]).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        tf.add_n([tf.constant([1.0]), tf.constant([1.0, 2.0])])
    with pytest.raises(ValueError):
        tf.add_n([])


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
def test_cast_between_all_dtypes(src):
    values = np.array([0, 1, 2, 100]) if src != tf.bool else np.array([0, 1, 1, 0])
    x = tf.constant(values, dtype=src)
    for dst in ALL_DTYPES:
        out = tf.cast(x, dst)
        assert out.dtype == dst
        expected = values.astype(src.as_numpy_dtype).astype(dst.as_numpy_dtype)
        np.testing.assert_array_equal(out.numpy().astype(np.float64), expected.astype(np.float64))


def test_cast_truncates_toward_zero():
    assert tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy().tolist() == [1, -1]


def test_broadcast_errors_name_the_op_and_shapes():
    with pytest.raises(errors.InvalidArgumentError, match=r"Add: shapes \[2,3\] and \[4\] are not broadcastable"):
        tf.add(tf.zeros([2, 3]), tf.zeros([4]))


def test_large_tensors_split_over_threads_match_numpy(rng):
    a = rng.standard_normal((1 << 20) + 3).astype(np.float32)
    b = rng.standard_normal((1 << 20) + 3).astype(np.float32)
    np.testing.assert_array_equal((tf.constant(a) + tf.constant(b)).numpy(), a + b)
    np.testing.assert_allclose(tf.exp(tf.constant(a)).numpy(), np.exp(a), rtol=2e-6)
    m = rng.standard_normal((1024, 1024)).astype(np.float32)
    row = rng.standard_normal((1024,)).astype(np.float32)
    np.testing.assert_array_equal((tf.constant(m) * tf.constant(row)).numpy(), m * row)


# ---- integer arithmetic wraps in two's complement, as in TensorFlow (issue 12, item 3)

@pytest.mark.parametrize("dtype", [tf.int8, tf.int16, tf.int32, tf.int64])
def test_integer_arithmetic_wraps(dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    lo, hi = int(info.min), int(info.max)
    bits = 8 * np.dtype(dtype.as_numpy_dtype).itemsize

    def wrap(v):
        return (v + 2**(bits - 1)) % 2**bits - 2**(bits - 1)

    a = tf.constant([lo, hi, lo, -1, hi], dtype=dtype)
    b = tf.constant([-1, 1, lo, lo, hi], dtype=dtype)
    av, bv = [lo, hi, lo, -1, hi], [-1, 1, lo, lo, hi]
    binary = [(tf.add, lambda x, y: x + y), (tf.subtract, lambda x, y: x - y), (tf.multiply, lambda x, y: x * y)]
    if dtype in (tf.int32, tf.int64):  # TensorFlow's SquaredDifference takes no narrower integers
        binary.append((tf.math.squared_difference, lambda x, y: (x - y)**2))
    for fn, ref in binary:
        got = fn(a, b).numpy().tolist()
        assert got == [wrap(ref(x, y)) for x, y in zip(av, bv)], fn.__name__
    assert tf.negative(a).numpy().tolist() == [wrap(-x) for x in av]
    assert tf.abs(a).numpy().tolist() == [wrap(abs(x)) for x in av]
    assert tf.square(a).numpy().tolist() == [wrap(x * x) for x in av]
    # INT_MIN // -1 overflows; TensorFlow gives INT_MIN (the wrapped quotient) and a remainder of 0.
    m = tf.constant([lo, 7, -7], dtype=dtype)
    assert tf.math.floordiv(m, tf.constant(-1, dtype=dtype)).numpy().tolist() == [lo, -7, 7]
    assert tf.math.floormod(m, tf.constant(-1, dtype=dtype)).numpy().tolist() == [0, 0, 0]
    assert tf.pow(tf.constant([hi], dtype=dtype), tf.constant([3], dtype=dtype)).numpy().tolist() == \
        [wrap(hi**3)]


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_unsorted_segment_sum_of_integers_wraps(dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    data = tf.constant([int(info.max), 1, int(info.min), -1], dtype=dtype)
    got = tf.math.unsorted_segment_sum(data, tf.constant([0, 0, 1, 1]), 2).numpy().tolist()
    assert got == [int(info.min), int(info.max)]


def test_tensordot_axes_must_be_an_integer_tensor():
    # Found by the API fuzzer: a string axes tensor reached .tolist() on bytes (AttributeError).
    with pytest.raises(ValueError, match="tensordot: axes must be an int32 or int64 tensor, got string"):
        tf.tensordot(tf.ones([2, 2]), tf.ones([2, 2]), tf.constant("a"))
    np.testing.assert_allclose(tf.tensordot(tf.ones([2, 2]), tf.ones([2, 2]), tf.constant(1)).numpy(),
                               np.full([2, 2], 2.0))

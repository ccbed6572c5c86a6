"""Complex division (Note [Complex division], src/ember/kernels/complex_elementwise.cc) bit for bit against
TensorFlow 2.21's CPU kernels over a table of edge cases: zeros of both signs, infinities, NaNs, huge and tiny
parts, for RealDiv (tf.math.divide, `/`), DivNoNan, Xdivy and Reciprocal, complex64 and complex128.

TensorFlow divides with Eigen's SIMD packet algorithm except for the last few elements of a tensor (a scalar
loop that disagrees on zeros, infinities and NaNs), so each TensorFlow value is taken from a tensor of 16
copies of the case, where it is a packet's. ember divides every element as a packet does. NaN parts compare
as NaN (their sign bit is not matched); everything else compares by its bits, signed zeros included. The
table has no subnormal intermediates (both flush them to zero: docs/subnormals.md)."""
import numpy as np
import pytest
import tensorflow

import ember

_PARTS = [0.0, -0.0, 1.0, -2.5, 7.0, 1e-30, 3e37, np.inf, -np.inf, np.nan]
_CASES = [complex(re, im) for re in _PARTS for im in _PARTS]
_BITS = {np.complex64: (np.float32, np.uint32), np.complex128: (np.float64, np.uint64)}
_DTYPES = [np.complex64, np.complex128]


def _mismatches(got, want, dtype):
    """Indices where got and want differ in their bits, NaN parts counting as equal."""
    real, bits = _BITS[dtype]
    same = np.ones(got.shape, bool)
    for part in (np.real, np.imag):
        g, w = part(got).astype(real), part(want).astype(real)
        same &= (g.view(bits) == w.view(bits)) | (np.isnan(g) & np.isnan(w))
    return np.nonzero(~same)[0]


def _tensorflow_packet(fn, *args):
    """fn's result for each element as TensorFlow's SIMD loop computes it: from 16 copies of each element."""
    copies = [tensorflow.constant(np.repeat(a, 16)) for a in args]
    return fn(tensorflow, *copies).numpy().reshape(-1, 16)[:, 0]


def _assert_same(got, want, dtype, *inputs):
    bad = _mismatches(got, want, dtype)
    shown = [(tuple(complex(i[k]) for i in inputs), complex(got[k]), complex(want[k])) for k in bad[:5]]
    assert not len(bad), f"{len(bad)} of {len(got)} differ (inputs, ember, TensorFlow): {shown}"


_BINARY = {"RealDiv": lambda tf, a, b: tf.math.divide(a, b), "operator /": lambda tf, a, b: a / b,
           "DivNoNan": lambda tf, a, b: tf.math.divide_no_nan(a, b), "Xdivy": lambda tf, a, b: tf.math.xdivy(a, b)}


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", list(_BINARY))
def test_binary_division_matches_tensorflow_bit_for_bit(op, dtype):
    x = np.array([p for p in _CASES for _ in _CASES], dtype)
    y = np.array([q for _ in _CASES for q in _CASES], dtype)
    got = _BINARY[op](ember, ember.constant(x), ember.constant(y)).numpy()
    _assert_same(got, _tensorflow_packet(_BINARY[op], x, y), dtype, x, y)


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", ["reciprocal", "1 / x"])
def test_reciprocal_matches_tensorflow_bit_for_bit(op, dtype):
    fn = (lambda tf, v: tf.math.reciprocal(v)) if op == "reciprocal" else (lambda tf, v: 1 / v)
    x = np.array(_CASES, dtype)
    _assert_same(fn(ember, ember.constant(x)).numpy(), _tensorflow_packet(fn, x), dtype, x)


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("divisor", [0j, complex(0, -0.0), complex(-0.0, 0), np.inf, complex(np.nan, 1)], ids=str)
def test_a_scalar_operand_matches_tensorflow(divisor, dtype):
    x = np.array(_CASES, dtype)
    got = ember.math.divide(ember.constant(x), ember.constant(divisor, dtype=ember.as_dtype(dtype))).numpy()
    want = tensorflow.math.divide(tensorflow.constant(np.repeat(x, 16)),
                                  tensorflow.constant(divisor, dtype=tensorflow.as_dtype(dtype)))
    _assert_same(got, want.numpy().reshape(-1, 16)[:, 0], dtype, x)
    # A scalar divided by a tensor: TensorFlow's broadcast of a scalar numerator gives some zero quotients
    # the other sign than its element-wise packets do ((0 - 0i) / 1i); ember's are the packets'.
    got = ember.math.divide(ember.constant(divisor, dtype=ember.as_dtype(dtype)), ember.constant(x)).numpy()
    want = _tensorflow_packet(lambda tf, a, b: tf.math.divide(a, b), np.full(len(x), divisor, dtype), x)
    _assert_same(got, want, dtype, x)


def test_x_over_zero_is_nan_wherever_the_element_sits():
    # TensorFlow's scalar tail gives inf + inf i for (1 + 1i) / 0; its packets, and ember everywhere, NaN + NaN i
    for n in (1, 3, 5, 17):
        q = (ember.ones([n], ember.complex64) * (1 + 1j)) / ember.zeros([n], ember.complex64)
        assert np.isnan(q.numpy().real).all() and np.isnan(q.numpy().imag).all()
    packet = _tensorflow_packet(lambda tf, a, b: a / b, np.array([1 + 1j], np.complex64), np.zeros(1, np.complex64))
    assert np.isnan(packet.real).all() and np.isnan(packet.imag).all()


def test_traced_division_is_the_eager_kernels():
    x = np.array([p for p in _CASES for _ in _CASES], np.complex128)
    y = np.array([q for _ in _CASES for q in _CASES], np.complex128)
    fn = ember.function(lambda a, b: (a / b, ember.math.divide_no_nan(a, b), ember.math.reciprocal(b)))
    traced = fn(ember.constant(x), ember.constant(y))
    eager = (ember.constant(x) / ember.constant(y), ember.math.divide_no_nan(ember.constant(x), ember.constant(y)),
             ember.math.reciprocal(ember.constant(y)))
    for t, e in zip(traced, eager):
        assert not len(_mismatches(t.numpy(), e.numpy(), np.complex128))

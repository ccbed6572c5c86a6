"""The special functions (src/ember/ops/special_functions.cc, python/ember/ops/special_math_ops.py,
python/ember/math/special.py): tf.math.igamma/igammac/betainc/zeta/ndtri/erfcinv/lbeta/bessel_i*, the
tf.math.special namespace and IgammaGradA, compared with TensorFlow 2 and SciPy on dense grids that include
the edges (NaN, +-inf, +-0, poles, outside the domain), their gradients with TensorFlow's and with finite
differences, inside ember.function, and as GraphDefs that TensorFlow imports and runs.

Tolerances are relative (|got - want| <= rtol * |want| + atol, NaN where the reference is NaN, the same
inf): float64 is held to within a few ulps of SciPy (rtol 1e-14 by default; 1e-12 for the functions whose
references themselves disagree at that level, stated per op), float32 to 4 ulps of TensorFlow (rtol 5e-7),
the 16-bit floats to one rounding of the float64 value."""
import numpy as np
import pytest
import scipy.special as sp
import tensorflow as real_tf
from tensorflow.python.ops.distributions import special_math as tf_special_math

import ember as tf
from ember import errors

inf, nan = np.inf, np.nan
RNG = np.random.default_rng(17)

# name in tf.math.special -> (raw op, SciPy reference, float64 rtol against SciPy)
UNARY = {
    "bessel_i0": ("BesselI0", sp.i0, 1e-14),
    "bessel_i0e": ("BesselI0e", sp.i0e, 1e-14),
    "bessel_i1": ("BesselI1", sp.i1, 1e-14),
    "bessel_i1e": ("BesselI1e", sp.i1e, 1e-14),
    # J and Y oscillate: near their zeros a relative error means nothing, so atol 1e-15 below too.
    "bessel_j0": ("BesselJ0", sp.j0, 1e-13),
    "bessel_j1": ("BesselJ1", sp.j1, 1e-13),
    "bessel_y0": ("BesselY0", sp.y0, 1e-13),
    "bessel_y1": ("BesselY1", sp.y1, 1e-13),
    "bessel_k0": ("BesselK0", sp.k0, 1e-14),
    "bessel_k0e": ("BesselK0e", sp.k0e, 1e-14),
    "bessel_k1": ("BesselK1", sp.k1, 1e-14),
    "bessel_k1e": ("BesselK1e", sp.k1e, 1e-14),
    "dawsn": ("Dawsn", sp.dawsn, 1e-14),
    "expint": ("Expint", sp.expi, 1e-14),
    # C and S oscillate about 1/2 for large x: relative to 1/2.
    "fresnel_cos": ("FresnelCos", lambda x: sp.fresnel(x)[1], 1e-14),
    "fresnel_sin": ("FresnelSin", lambda x: sp.fresnel(x)[0], 1e-14),
    "spence": ("Spence", sp.spence, 1e-14),
}
EDGES = [nan, -inf, -1e300, -800.0, -30.0, -2.5, -1.0, -1e-300, -0.0, 0.0, 5e-324, 1e-300, 1e-8, 0.5, 1.0,
         2.0, 7.0, 30.0, 499.0, 501.0, 800.0, 1e10, 1e300, inf]


def dense_grid():
    """Edges, a dense uniform grid over [-40, 40] and a log-spaced one over 1e-20 .. 1e20 of both signs."""
    uniform = np.linspace(-40, 40, 4001)
    logs = np.logspace(-20, 20, 801)
    return np.concatenate([EDGES, uniform, logs, -logs])


def assert_matches(got, want, rtol, atol=0.0, what=""):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)],
                                  err_msg=f"{what}: infinities")
    bad = ~(np.abs(got[finite] - want[finite]) <= rtol * np.abs(want[finite]) + atol)
    assert not bad.any(), (f"{what}: {bad.sum()} of {finite.sum()} off, e.g. x index {np.flatnonzero(bad)[:5]}: "
                           f"got {got[finite][bad][:5]}, want {want[finite][bad][:5]}")


def tf_unary(op_name, x, dtype):
    return getattr(real_tf.raw_ops, op_name)(x=real_tf.constant(x, dtype)).numpy()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64_against_scipy_and_tensorflow(name):
    op_name, reference, rtol = UNARY[name]
    x = dense_grid()
    got = getattr(tf.math.special, name)(tf.constant(x, tf.float64)).numpy()
    # TensorFlow's values define the edges: where SciPy differs there (Y at x < 0, K at x < 0, Expint at
    # x <= 0 or inf, I at +-inf), TensorFlow's value is the one matched.
    theirs = tf_unary(op_name, x, real_tf.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(theirs), err_msg=f"{name}: NaN positions vs TF")
    np.testing.assert_array_equal(got[np.isinf(theirs)], theirs[np.isinf(theirs)], err_msg=name)
    with np.errstate(all="ignore"):
        want = reference(x)
    agree = np.isfinite(want) & np.isfinite(theirs)
    atol = 1e-307  # results in the subnormal range: ember flushes them to zero (docs/subnormals.md)
    if name.startswith(("bessel_j", "bessel_y", "fresnel")):
        # Past |x| = 100 Cephes (SciPy's and TensorFlow's J, Y, C and S) loses digits to its argument
        # reductions (1e-12 relative at 1e5, 30x off for J0 at 1e20; ember's are right:
        # test_oscillating_functions_at_large_arguments_against_mpmath).
        agree &= np.abs(x) <= 100
        atol = 1e-15
    assert_matches(got[agree], want[agree], rtol, atol, f"{name} vs SciPy")
    # TensorFlow's own float64 kernels (Cephes, Eigen) are within 1e-12 of SciPy on this grid, except its
    # Dawsn below x = -1e8, which has the wrong sign (dawsn is odd; ember keeps it odd, as SciPy).
    if name == "dawsn":
        far = (x < -1e8) & (x > -1e300)
        agree &= ~far
        assert (got[far] < 0).all() and (theirs[far] > 0).any()
    assert_matches(got[agree], theirs[agree], 1e-12, 1e-15, f"{name} vs TensorFlow")


def test_oscillating_functions_at_large_arguments_against_mpmath():
    import mpmath

    mpmath.mp.dps = 40
    x = np.array([150.0, 1e3, 2345.678, 3e4, 1e5 + 0.3, 1e7 + 0.123, 1e10, 1e12 + 0.5, 1e20, 1e300])
    for name, fn in [("bessel_j0", lambda v: mpmath.besselj(0, v)), ("bessel_j1", lambda v: mpmath.besselj(1, v)),
                     ("bessel_y0", lambda v: mpmath.bessely(0, v)), ("bessel_y1", lambda v: mpmath.bessely(1, v)),
                     ("fresnel_cos", mpmath.fresnelc), ("fresnel_sin", mpmath.fresnels)]:
        got = getattr(tf.math.special, name)(tf.constant(x, tf.float64)).numpy()
        want = np.array([float(fn(mpmath.mpf(v))) for v in x])
        assert_matches(got, want, 1e-14, 0, name)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_unary_narrow_floats_against_tensorflow(name, dtype):
    op_name = UNARY[name][0]
    x = np.asarray(tf.constant(dense_grid(), dtype).numpy(), np.float64)  # the grid as the dtype has it
    got = getattr(tf.math.special, name)(tf.constant(x, dtype))
    assert got.dtype == getattr(tf, dtype)
    got = np.asarray(got.numpy(), np.float64)
    # The element is computed in double and rounded once: equal to the float64 result (checked against
    # SciPy, mpmath and TensorFlow above) rounded to the dtype.
    exact = getattr(tf.math.special, name)(tf.constant(x, tf.float64)).numpy()
    want = np.asarray(real_tf.cast(exact, dtype).numpy(), np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    np.testing.assert_array_equal(got, np.where(np.isnan(want), got, want), err_msg=name)
    # TensorFlow's float32 kernels (float Cephes) are close to that, away from the zeros of J and Y.
    if dtype == "float32":
        theirs = tf_unary(op_name, x, real_tf.float32)
        # (Measured: J, Y, C and S are within 3e-6 absolute, the others 2e-6 relative; ember's are the
        # correctly rounded ones.)
        keep = np.isfinite(theirs) & np.isfinite(got) & (np.abs(want) > 1e-3) & (np.abs(x) < 25)
        oscillating = name.startswith(("bessel_j", "bessel_y", "fresnel"))
        assert_matches(got[keep], theirs[keep], 2e-6, 3e-6 if oscillating else 1e-7,
                       f"{name} float32")


def test_ndtri_erfinv_and_erfcinv_match_tensorflow_and_scipy():
    p = np.concatenate([[nan, -inf, -0.5, -0.0, 0.0, 5e-324, 1e-300, 0.5, 1 - 1e-16, 1.0, 1.5, inf],
                        np.linspace(0, 1, 2001), np.logspace(-300, -1, 600)])
    got = tf.math.ndtri(tf.constant(p, tf.float64)).numpy()
    assert_matches(got, real_tf.math.ndtri(p).numpy(), 1e-13, 0, "ndtri vs TF")
    with np.errstate(all="ignore"):
        normal = ~(np.abs(p) < 1e-307)  # subnormal inputs read as 0 (docs/subnormals.md), as TensorFlow's
        assert_matches(got[normal], np.where((p < 0) | (p > 1), nan, sp.ndtri(p))[normal], 1e-14, 0, "ndtri vs SciPy")
    q = 2 * p
    got = tf.math.erfcinv(tf.constant(q, tf.float64)).numpy()
    assert_matches(got, real_tf.math.erfcinv(q).numpy(), 1e-13, 0, "erfcinv vs TF")
    with np.errstate(all="ignore"):
        normal = ~(np.abs(q) < 1e-307)
        assert_matches(got[normal], np.where((q < 0) | (q > 2), nan, sp.erfcinv(q))[normal], 1e-14, 1e-300,
                       "erfcinv vs SciPy")
    for dtype in ["float32", "float16", "bfloat16"]:
        x = tf.constant(np.linspace(0.001, 0.999, 97), dtype)
        # TensorFlow's CPU kernels are float32 and float64 only (its op declares the 16-bit floats too): the
        # 16-bit results are compared with its float32 ones.
        want = real_tf.math.ndtri(real_tf.constant(x.numpy().astype(np.float32))).numpy().astype(np.float64)
        got = tf.math.ndtri(x)
        assert got.dtype == getattr(tf, dtype)
        assert_matches(got.numpy().astype(np.float64), want, {"float32": 5e-7}.get(dtype, 8e-3), 0, dtype)


def grid_2d(firsts, seconds):
    a, b = np.meshgrid(np.asarray(firsts, np.float64), np.asarray(seconds, np.float64), indexing="ij")
    return a.ravel(), b.ravel()


EDGE_2D = [nan, -inf, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0, 30.0, 1e5, inf]


@pytest.mark.parametrize("name, scipy_fn, rtol", [
    ("igamma", sp.gammainc, 1e-12), ("igammac", sp.gammaincc, 1e-12)])
def test_incomplete_gamma_against_tensorflow_and_scipy(name, scipy_fn, rtol):
    a, x = grid_2d(np.concatenate([EDGE_2D, np.logspace(-3, 3, 41)]), np.concatenate([EDGE_2D,
                                                                                     np.logspace(-4, 3, 61)]))
    got = getattr(tf.math, name)(a, x).numpy()
    theirs = getattr(real_tf.math, name)(a, x).numpy()
    # TensorFlow's Eigen kernels are 1e-10 relative at worst here, and its Igammac computes 1 - P where P is
    # near 1 (-2e-14 where Q is 1e-300): 1e-13 absolute.
    assert_matches(got, theirs, 1e-9, 1e-13, f"{name} vs TF")
    ok = np.isfinite(a) & np.isfinite(x) & (a > 0) & (x > 0)
    # Relative to the value, or to 1e-300 for the underflowing tail.
    assert_matches(got[ok], scipy_fn(a[ok], x[ok]), rtol, 1e-300, f"{name} vs SciPy")
    for dtype in ["float32", "float16", "bfloat16"]:
        a_d, x_d = (np.asarray(tf.constant(v, dtype).numpy(), np.float64) for v in (a, x))
        got = np.asarray(getattr(tf.math, name)(tf.constant(a_d, dtype), tf.constant(x_d, dtype)).numpy(), np.float64)
        # Computed in double, rounded once: the float64 result rounded to the dtype.
        exact = getattr(tf.math, name)(a_d, x_d).numpy()
        want = np.asarray(real_tf.cast(exact, dtype).numpy(), np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{name} {dtype}")
        np.testing.assert_array_equal(got, np.where(np.isnan(want), got, want), err_msg=f"{name} {dtype}")
        # TensorFlow's CPU kernels are float32/float64 only; its float32 ones are within 3e-5 of that below
        # a = 100 (4% off above it: igamma(1e3, 1e3) is 0.5195, 0.5004 in truth).
        theirs = getattr(real_tf.math, name)(real_tf.constant(a_d, "float32"), real_tf.constant(x_d, "float32"))
        theirs = np.asarray(real_tf.cast(theirs, dtype).numpy(), np.float64)
        keep = np.isfinite(theirs) & (a_d <= 100)
        assert_matches(got[keep], theirs[keep], {"float32": 3e-5}.get(dtype, 8e-3), 1e-6, f"{name} {dtype} vs TF")


def scipy_gamma_p_derivative_in_a(a, x, h=1e-7):
    return (sp.gammainc(a * (1 + h), x) - sp.gammainc(a * (1 - h), x)) / (2 * a * h)


def test_igamma_grad_a_against_tensorflow_and_finite_differences():
    a, x = grid_2d(np.concatenate([EDGE_2D, np.logspace(-2, 2.5, 31)]), np.concatenate([EDGE_2D,
                                                                                       np.logspace(-3, 2.5, 41)]))
    got = tf.raw_ops.IgammaGradA(a=a, x=x).numpy()
    theirs = real_tf.raw_ops.IgammaGradA(a=a, x=x).numpy()
    # TensorFlow's is 1e-10 relative to ember's (and SciPy's) except at a = x = 1e5, where it is 30% off.
    near = ~((a > 1e4) & (x > 1e4))
    assert_matches(got[near], theirs[near], 1e-10, 1e-200, "IgammaGradA vs TF")
    ok = np.isfinite(a) & np.isfinite(x) & (a > 0.05) & (x > 1e-3) & (np.abs(theirs) > 1e-100)
    # and against mpmath's derivative of its regularised gamma (every 9th point: mpmath is slow).
    import mpmath

    mpmath.mp.dps = 30
    for k in np.flatnonzero(ok)[::9]:
        # d/da P = -d/da Q: differentiate whichever of the two is small, so that its digits are all there.
        if x[k] < a[k]:
            want = float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x[k], regularized=True), a[k]))
        else:
            want = -float(mpmath.diff(lambda s: mpmath.gammainc(s, x[k], mpmath.inf, regularized=True), a[k]))
        assert abs(got[k] - want) <= 1e-12 * abs(want) + 1e-300, (a[k], x[k], got[k], want)


def test_betainc_against_tensorflow_and_scipy():
    values = [nan, -1.0, 0.0, 1e-3, 0.5, 2.0, 30.0, 1e4, inf]
    xs = [nan, -0.5, 0.0, 1e-10, 0.3, 0.5, 0.9, 1 - 1e-10, 1.0, 1.5, inf]
    a, b, x = (g.ravel() for g in np.meshgrid(values + list(np.logspace(-2, 2, 9)), values, xs, indexing="ij"))
    got = tf.math.betainc(a, b, x).numpy()
    theirs = real_tf.math.betainc(a, b, x).numpy()
    assert_matches(got, theirs, 1e-9, 1e-300, "betainc vs TF")  # TF's is 1e-9 off at a = 1e4, b = 1e-3
    ok = np.isfinite(got) & (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    assert_matches(got[ok], sp.betainc(a[ok], b[ok], x[ok]), 1e-13, 1e-300, "betainc vs SciPy")
    got32 = tf.math.betainc(tf.constant(a, tf.float32), tf.constant(b, tf.float32), tf.constant(x, tf.float32))
    want32 = real_tf.math.betainc(*(real_tf.constant(v, real_tf.float32) for v in (a, b, x))).numpy()
    # TensorFlow's float32 kernel is 2e-3 off where a or b is 1e4; ember's is the float64 value rounded.
    keep = np.isfinite(want32) & (a <= 100) & (b <= 100)
    assert_matches(got32.numpy()[keep], want32[keep], 3e-5, 1e-7, "betainc float32")  # TF's float32: 1.2e-5 off
    # Scalars broadcast; other shapes must agree, as TensorFlow's.
    np.testing.assert_allclose(tf.math.betainc(2.0, [3.0, 1.0], [0.5, 0.5]).numpy(), [0.6875, 0.25])
    with pytest.raises(errors.InvalidArgumentError, match="Betainc: a, b and x must have the same shape"):
        tf.math.betainc(np.ones((2, 3)), np.ones(3), np.ones((2, 3)))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.math.betainc(np.ones((2, 3)), np.ones(3), np.ones((2, 3)))


def test_zeta_against_tensorflow_and_scipy():
    s, q = grid_2d(np.concatenate([[nan, -inf, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0, 100.0, inf],
                                   np.linspace(1.01, 20, 39)]),
                   np.concatenate([EDGE_2D, [-2.5, -2.0, -0.5], np.logspace(-3, 3, 31)]))
    got = tf.math.zeta(s, q).numpy()
    theirs = real_tf.math.zeta(s, q).numpy()
    assert_matches(got, theirs, 1e-13, 1e-300, "zeta vs TF")
    ok = np.isfinite(s) & np.isfinite(q) & (s > 1) & (q > 0)
    assert_matches(got[ok], sp.zeta(s[ok], q[ok]), 1e-13, 1e-300, "zeta vs SciPy")


def test_polygamma_edges_match_tensorflow():
    """Polygamma shares Zeta's Hurwitz zeta (kernels/hurwitz_zeta.h): its edges (x = inf, n = inf, the poles)
    are TensorFlow's too."""
    n, x = grid_2d([nan, -inf, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, inf], [nan, -inf, -1.0, -0.0, 0.0, 0.5, 1.0,
                                                                          2.0, 3.0, inf])
    assert_matches(tf.math.polygamma(n, x).numpy(), real_tf.math.polygamma(n, x).numpy(), 1e-13, 0, "polygamma")


def test_lbeta_matches_tensorflow():
    x = np.abs(RNG.normal(size=(4, 5))) * 3
    x[0, 0] = 0.0
    np.testing.assert_allclose(tf.math.lbeta(x).numpy(), real_tf.math.lbeta(x).numpy(), rtol=1e-13)
    np.testing.assert_array_equal(tf.math.lbeta(np.zeros((2, 0))).numpy(), real_tf.math.lbeta(np.zeros((2, 0))))
    np.testing.assert_allclose(tf.math.lbeta(x.astype(np.float32)).numpy(),
                               real_tf.math.lbeta(x.astype(np.float32)).numpy(), rtol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ndtr_and_log_ndtr_match_tensorflows_special_math(dtype):
    x = np.concatenate([[nan, -inf, -40.0, -25.0, -20.0, -10.0, 0.0, 5.0, 8.0, 40.0, inf],
                        np.linspace(-30, 12, 841)]).astype(dtype)
    rtol, atol = (4e-6, 1e-37) if dtype == "float32" else (1e-14, 0)  # float32 subnormals flush to 0
    assert_matches(tf.ops.special_math_ops.ndtr(x).numpy(), tf_special_math.ndtr(x).numpy(), rtol, atol, "ndtr")
    assert_matches(tf.ops.special_math_ops.log_ndtr(x).numpy(), tf_special_math.log_ndtr(x).numpy(), rtol, 1e-30,
                   "log_ndtr")
    with pytest.raises(ValueError, match="series_order"):
        tf.ops.special_math_ops.log_ndtr(x, series_order=-1)


# ---- gradients ----------------------------------------------------------------------------------------
GRAD_POINTS = np.array([0.0, 1e-3, 0.5, -1.5, 1.0, 2.0, 7.5, -20.0])


def gradient_of(fn, *args, framework=tf):
    """d fn / d each argument (float64), with ember's tape or (framework=real_tf) TensorFlow's."""
    args = [framework.constant(a, framework.float64) for a in args]
    with framework.GradientTape(persistent=True) as tape:
        for a in args:
            tape.watch(a)
        y = fn(*args)
    return [tape.gradient(y, a) for a in args]


def tf_gradient_of(fn, *args):
    return gradient_of(fn, *args, framework=real_tf)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_tensorflow_and_finite_differences(name):
    mine = gradient_of(getattr(tf.math.special, name), GRAD_POINTS)[0].numpy()
    theirs = tf_gradient_of(getattr(real_tf.math.special, name), GRAD_POINTS)[0].numpy()
    # TensorFlow's formulas, so the same NaN and inf at the poles (I1's 1 at 0 included).
    assert_matches(mine, theirs, 1e-12, 1e-15, f"{name}'")
    h = 1e-6
    x = GRAD_POINTS[(np.abs(GRAD_POINTS) > 1e-2)]
    if name == "spence":
        x = x[x > 0]
    fn = getattr(tf.math.special, name)
    with np.errstate(invalid="ignore"):  # inf - inf at the points outside Y's and K's domain
        numeric = (fn(tf.constant(x + h, tf.float64)).numpy() - fn(tf.constant(x - h, tf.float64)).numpy()) / (2 * h)
    analytic = gradient_of(fn, x)[0].numpy()
    finite = np.isfinite(numeric)
    np.testing.assert_allclose(analytic[finite], numeric[finite], rtol=1e-6, atol=1e-8, err_msg=name)


def test_ndtri_and_erfcinv_gradients_match_tensorflow():
    p = np.array([0.0, 0.01, 0.3, 0.5, 0.9, 1.0])
    for ours, theirs in [(tf.math.ndtri, real_tf.math.ndtri), (tf.math.erfcinv, real_tf.math.erfcinv)]:
        assert_matches(gradient_of(ours, p)[0].numpy(), tf_gradient_of(theirs, p)[0].numpy(), 1e-13, 0, "grad")


def test_binary_gradients_match_tensorflow_and_finite_differences():
    a = np.array([[0.5], [2.0], [7.0]])  # broadcast against x: the gradients sum back to each shape
    x = np.array([0.3, 1.5, 6.0, 0.0])
    for ours, theirs in [(tf.math.igamma, real_tf.math.igamma), (tf.math.igammac, real_tf.math.igammac)]:
        got = gradient_of(ours, a, x)
        want = tf_gradient_of(theirs, a, x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert_matches(g.numpy(), w.numpy(), 1e-9, 1e-15, ours.__name__)
    h = 1e-6
    xs = x[:3]
    da, dx = gradient_of(lambda a_, x_: tf.math.igamma(a_, x_), a[:, 0] * 0 + 2.0, np.array([0.3, 1.5, 6.0]))
    np.testing.assert_allclose(dx.numpy(), (sp.gammainc(2.0, xs + h) - sp.gammainc(2.0, xs - h)) / (2 * h),
                               rtol=1e-6)
    np.testing.assert_allclose(da.numpy(), (sp.gammainc(2.0 + h, xs) - sp.gammainc(2.0 - h, xs)) / (2 * h),
                               rtol=1e-6)
    # Zeta: a gradient for q only, None for s, as TensorFlow's.
    s, q = np.array([2.0, 3.0]), np.array([1.5, 2.0])
    ds, dq = gradient_of(tf.math.zeta, s, q)
    assert ds is None
    np.testing.assert_allclose(dq.numpy(), tf_gradient_of(real_tf.math.zeta, s, q)[1].numpy(), rtol=1e-13)
    np.testing.assert_allclose(dq.numpy(), (sp.zeta(s, q + h) - sp.zeta(s, q - h)) / (2 * h), rtol=1e-6)
    # Betainc: a gradient for x only.
    aa, bb, xx = np.array([0.5, 2.0, 1.0]), np.array([1.5, 3.0, 2.0]), np.array([0.3, 0.5, 0.9])
    da, db, dx = gradient_of(tf.math.betainc, aa, bb, xx)
    assert da is None and db is None
    np.testing.assert_allclose(dx.numpy(), tf_gradient_of(real_tf.math.betainc, aa, bb, xx)[2].numpy(), rtol=1e-13)
    np.testing.assert_allclose(dx.numpy(), (sp.betainc(aa, bb, xx + h) - sp.betainc(aa, bb, xx - h)) / (2 * h),
                               rtol=1e-6)


@pytest.mark.parametrize("framework, error", [(tf, errors.UnimplementedError), (real_tf, LookupError)],
                         ids=["ember", "tensorflow"])
def test_second_derivative_of_igamma_in_a_raises_as_tensorflow(framework, error):
    a, x = framework.constant([2.0], framework.float64), framework.constant([1.5], framework.float64)
    with framework.GradientTape() as outer:
        outer.watch(a)
        with framework.GradientTape() as inner:
            inner.watch(a)
            y = framework.math.igamma(a, x)
        g = inner.gradient(y, a)
    with pytest.raises(error, match="IgammaGradA"):
        outer.gradient(g, a)


# ---- ember.function, GraphDef, errors, names ------------------------------------------------------------
def composite(x, a):
    return composite_in(tf, x, a)


def composite_in(m, x, a):
    """One expression over every kind of special-function op, written for ember or TensorFlow (m)."""
    special = m.math.special
    return (special.bessel_j0(x) + special.bessel_k1e(a) * special.dawsn(x) + special.fresnel_sin(x)
            + m.math.igamma(a, x * x) + m.math.betainc(a, a, m.math.sigmoid(x)) + m.math.zeta(a + 1.0, a)
            + special.spence(a) + special.expint(a) + m.math.ndtri(m.math.sigmoid(x)) + m.math.bessel_i1e(x)
            + special.bessel_y1(a) + m.math.igammac(a, a))


def test_inside_ember_function_and_tensorflow_runs_the_graph_def():
    x = RNG.normal(size=5)
    a = np.abs(RNG.normal(size=5)) + 0.5
    eager = composite(tf.constant(x), tf.constant(a)).numpy()
    fn = tf.function(composite)
    spec = tf.TensorSpec([None], tf.float64)
    np.testing.assert_array_equal(fn(tf.constant(x), tf.constant(a)).numpy(), eager)
    concrete = fn.get_concrete_function(spec, spec)
    graph_def = real_tf.compat.v1.GraphDef.FromString(concrete.graph.as_graph_def().SerializeToString())
    ops = {node.op for node in graph_def.node}
    assert {"BesselJ0", "Igamma", "Betainc", "Zeta", "Spence", "Ndtri", "Igammac"} <= ops
    with real_tf.Graph().as_default():
        real_tf.import_graph_def(graph_def, name="")
        with real_tf.compat.v1.Session() as session:
            feeds = {t.name: v for t, v in zip(concrete.graph.inputs, (x, a))}
            theirs = session.run(concrete.graph.outputs[0].name, feeds)
    np.testing.assert_allclose(eager, theirs, rtol=1e-12)
    # and its gradient, traced
    grad_fn = tf.function(lambda x_, a_: gradient_of_traced(x_, a_))
    np.testing.assert_allclose(grad_fn(tf.constant(x), tf.constant(a)).numpy(),
                               gradient_of(composite, x, a)[0].numpy(), rtol=1e-12)


def test_ember_runs_tensorflows_graph_def():
    """TensorFlow's own graph of the same composite imports into ember and gives ember's eager values."""
    spec = real_tf.TensorSpec([None], real_tf.float64)
    concrete = real_tf.function(lambda x_, a_: composite_in(real_tf, x_, a_)).get_concrete_function(spec, spec)
    graph = tf.graph_util.import_graph_def(concrete.graph.as_graph_def())
    names = [t.name for t in concrete.graph.inputs]
    fn = tf.NewGraphFunction(graph, names, [t.name for t in concrete.outputs])
    x = RNG.normal(size=6)
    a = np.abs(RNG.normal(size=6)) + 0.5
    np.testing.assert_allclose(fn(x, a).numpy(), composite(tf.constant(x), tf.constant(a)).numpy(), rtol=1e-13)
    np.testing.assert_allclose(fn(x, a).numpy(), concrete(real_tf.constant(x), real_tf.constant(a)).numpy(),
                               rtol=1e-11)


def gradient_of_traced(x, a):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = composite(x, a)
    return tape.gradient(y, x)


@pytest.mark.parametrize("call", [
    lambda m: m.math.special.bessel_j0(m.constant([1, 2])),
    lambda m: m.math.igamma(m.constant([1.0], m.float32), m.constant([1.0], m.float64)),
    lambda m: m.math.zeta(m.constant([2.0], m.float16), m.constant([1.0], m.float16)),
    lambda m: m.math.igamma(m.constant([1.0, 2.0]), m.constant([1.0, 2.0, 3.0])),
])
def test_bad_operands_raise_as_tensorflow(call):
    with pytest.raises((real_tf.errors.InvalidArgumentError, real_tf.errors.NotFoundError, TypeError)):
        call(real_tf)
    with pytest.raises((errors.InvalidArgumentError, TypeError)):
        call(tf)


def test_namespaces_match_tensorflow():
    names = sorted(n for n in dir(real_tf.math.special) if not n.startswith("_"))
    assert sorted(tf.math.special.__all__) == names
    for n in names:
        assert callable(getattr(tf.math.special, n)) and getattr(tf.math.special, n).__doc__
    for n in ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "betainc", "erfcinv", "igamma", "igammac",
              "lbeta", "ndtri", "zeta"]:
        assert hasattr(real_tf.math, n) and callable(getattr(tf.math, n)), n
    assert tf.math.special.bessel_i0.__doc__ == tf.math.bessel_i0.__doc__

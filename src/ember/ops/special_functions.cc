// TensorFlow's special-function ops (tf.math.igamma/igammac/betainc/zeta/ndtri/bessel_i0..., and
// tf.math.special.*): Igamma, Igammac, IgammaGradA, Betainc, Zeta, Ndtri, the Bessel family, Dawsn, Expint,
// FresnelCos, FresnelSin and Spence, each beside its gradient rule (TensorFlow's formulas). Every element is
// computed in double whatever the dtype and rounded once (Note [Special functions] in
// kernels/elementwise_functors.h), with TensorFlow's values at the edges (NaN, inf, zero, poles, outside the
// domain: docs/ops_indexing_sorting_math.md lists them).
//
// Note [Special functions from Boost]
// Boost.Math (headers only) does the numerics where it matches TensorFlow within the tests' tolerances:
// the regularised incomplete gamma and beta functions, erfc_inv, the Bessel functions J, Y, I and K of
// orders 0 and 1, and Ei. This is the one translation unit that includes it (Boost.Math's headers cost
// about 20 s of compile time here; nothing else pays it). Its errors are turned off (the policy below):
// a domain error gives NaN and a pole or an overflow inf, and the edges TensorFlow defines differently
// are settled before Boost is called. Boost has no Dawson, Fresnel, dilogarithm, exponentially scaled
// Bessel functions or derivative of P(a, x) in a, so those are written here (Note [Own algorithms]).
#include <boost/math/special_functions/bessel.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/expint.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>

#include "ember/core/parallel.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace special {

#include "ember/kernels/hurwitz_zeta.h"  // NOLINT: inside this namespace on purpose (see its header)

namespace {

namespace bm = boost::math;
using Policy = bm::policies::policy<bm::policies::domain_error<bm::policies::ignore_error>,
                                    bm::policies::pole_error<bm::policies::ignore_error>,
                                    bm::policies::overflow_error<bm::policies::ignore_error>,
                                    bm::policies::evaluation_error<bm::policies::ignore_error>>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = std::numbers::pi;

// Note [Own algorithms]
// - Exponentially scaled Bessel functions: e^-|x| I(|x|) and e^x K(x) from Boost's I and K while those stay
//   in range (|x| <= 500), beyond that the large-argument expansions
//   e^-x I_nu(x) ~ (2 pi x)^-1/2 sum (-1)^k a_k(nu) / x^k and e^x K_nu(x) ~ (pi / 2x)^1/2 sum a_k(nu) / x^k,
//   a_k(nu) = prod_{j=1..k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), whose terms fall fast there.
// - Dawson's integral D(x) = e^-x^2 sum x^(2n+1) / (n! (2n + 1)) (positive terms, no cancellation) below
//   |x| = 7, the asymptotic series (1 / 2x) sum (2k - 1)!! / (2x^2)^k above (its smallest term is about
//   e^-x^2 there).
// - Fresnel integrals: the power series in long double below |x| = 2.5 (its terms grow to 2e3, so about 3
//   of long double's 19 digits cancel), above it C + iS = (1 + i)/2 (1 - erfc(z)), z = (1 - i) sqrt(pi) x /
//   2, with erfc(z) = e^-z^2 / sqrt(pi) / (z + (1/2) / (z + 1 / (z + (3/2) / (z + ...)))) evaluated by
//   Lentz's method. e^-z^2 = e^(i pi x^2 / 2), whose phase is reduced exactly: x^2 is split into its
//   rounded value and the rounding error (an fma), each taken modulo 4.
// - Spence's function (TensorFlow's and SciPy's: the dilogarithm Li2(1 - x)) by the Bernoulli series
//   Li2(y) = sum B_n u^(n+1) / (n+1)!, u = -log(1 - y), after the reflections y -> 1 - y and y -> 1 / y
//   bring |u| below log 2; the arguments are formed from x directly, so nothing cancels near x = 0 or 1.
// - IgammaGradA, d/da P(a, x): the series of P (x < a + 1) and Legendre's continued fraction of Q
//   (otherwise), each carried with its derivative in a (forward-mode dual numbers through the same
//   recurrences), times the derivative of the prefactor x^a e^-x / Gamma(a).

double scaled_bessel_asymptotic(int nu, double x, bool alternate) {
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    term *= (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
    const double signed_term = (alternate && (k % 2 == 1)) ? -term : term;
    sum += signed_term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum;
}
constexpr double kScaledBesselSwitch = 500;

double bessel_i0(double x) {
  if (std::isinf(x)) return kNaN;
  return bm::cyl_bessel_i(0, std::fabs(x), Policy());
}
double bessel_i1(double x) {
  if (std::isinf(x)) return kNaN;
  if (x == 0) return 0;  // +0 for -0 too, as TensorFlow's (J1 keeps the sign)
  const double v = bm::cyl_bessel_i(1, std::fabs(x), Policy());
  return x < 0 ? -v : v;
}
double bessel_i0e(double x) {
  const double a = std::fabs(x);
  if (std::isinf(a)) return 0;
  if (a <= kScaledBesselSwitch) return std::exp(-a) * bm::cyl_bessel_i(0, a, Policy());
  return scaled_bessel_asymptotic(0, a, true) / std::sqrt(2 * kPi * a);
}
double bessel_i1e(double x) {
  const double a = std::fabs(x);
  if (x == 0) return 0;
  double v;
  if (std::isinf(a))
    v = 0;
  else if (a <= kScaledBesselSwitch)
    v = std::exp(-a) * bm::cyl_bessel_i(1, a, Policy());
  else
    v = scaled_bessel_asymptotic(1, a, true) / std::sqrt(2 * kPi * a);
  return x < 0 ? -v : v;
}
double bessel_j0(double x) {
  if (std::isinf(x)) return kNaN;
  return bm::cyl_bessel_j(0, std::fabs(x), Policy());
}
double bessel_j1(double x) {
  if (std::isinf(x)) return kNaN;
  if (x == 0) return x;
  const double v = bm::cyl_bessel_j(1, std::fabs(x), Policy());
  return x < 0 ? -v : v;
}
// Y and K are real only for x > 0; TensorFlow gives -inf (Y) and inf (K) for every x <= 0.
double bessel_y(int nu, double x) {
  if (x != x || x == kInf) return kNaN;
  if (x <= 0) return -kInf;
  return bm::cyl_neumann(nu, x, Policy());
}
double bessel_y0(double x) { return bessel_y(0, x); }
double bessel_y1(double x) { return bessel_y(1, x); }
double bessel_k(int nu, double x, bool scaled) {
  if (x != x) return kNaN;
  if (x <= 0) return kInf;
  if (x == kInf) return 0;
  if (!scaled) return bm::cyl_bessel_k(nu, x, Policy());
  if (x <= kScaledBesselSwitch) return std::exp(x) * bm::cyl_bessel_k(nu, x, Policy());
  return scaled_bessel_asymptotic(nu, x, false) * std::sqrt(kPi / (2 * x));
}
double bessel_k0(double x) { return bessel_k(0, x, false); }
double bessel_k1(double x) { return bessel_k(1, x, false); }
double bessel_k0e(double x) { return bessel_k(0, x, true); }
double bessel_k1e(double x) { return bessel_k(1, x, true); }

double dawsn(double x) {
  if (x != x) return kNaN;
  if (std::isinf(x)) return 0;  // +0 at both ends, as TensorFlow's
  const double a = std::fabs(x);
  double v;
  if (a < 7) {
    const double a2 = a * a;
    double power = a, sum = 0;  // power = a^(2n+1) / n!
    for (int n = 0; n < 400; ++n) {
      const double term = power / (2 * n + 1);
      sum += term;
      if (term < 1e-17 * sum) break;
      power *= a2 / (n + 1);
    }
    v = std::exp(-a2) * sum;
  } else {
    const double r = 1 / (2 * a * a);
    double term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const double next = term * (2 * k - 1) * r;
      if (next >= term) break;  // past the smallest term
      term = next;
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    v = sum / (2 * a);
  }
  return x < 0 ? -v : v;
}

// cos and sin of pi x^2 / 2, with x^2 reduced modulo 4 exactly (Note [Own algorithms]).
std::complex<double> half_pi_square_phase(double x) {
  const double hi = x * x, lo = std::fma(x, x, -hi);
  const double r = std::fmod(std::fmod(hi, 4.0) + std::fmod(lo, 4.0), 4.0);
  return {std::cos(kPi / 2 * r), std::sin(kPi / 2 * r)};
}

// C(x) + i S(x) for x >= 0.
std::complex<double> fresnel(double x) {
  if (x == kInf || x > 1e17) return {0.5, 0.5};  // past 1e17 the correction is below half an ulp of 0.5
  if (x < 2.5) {
    const long double t = static_cast<long double>(kPi) / 2 * x * x;
    long double power = x, c = 0, s = 0;  // power = x t^k / k!
    for (int k = 0; k < 200; ++k) {
      const long double term = power / (2 * k + 1);
      const long double signed_term = (k % 4 < 2) ? term : -term;
      (k % 2 == 0 ? c : s) += signed_term;
      if (k > 1 && term < 1e-21L * (std::fabs(c) + std::fabs(s))) break;
      power *= t / (k + 1);
    }
    return {static_cast<double>(c), static_cast<double>(s)};
  }
  const std::complex<double> z = std::complex<double>(1, -1) * (std::sqrt(kPi) / 2 * x);
  constexpr double kTiny = 1e-300;
  std::complex<double> f = z, c = z, d = 0;
  for (int k = 1; k < 5000; ++k) {
    const double a = 0.5 * k;
    d = z + a * d;
    if (std::abs(d) < kTiny) d = kTiny;
    d = 1.0 / d;
    c = z + a / c;
    if (std::abs(c) < kTiny) c = kTiny;
    const std::complex<double> delta = c * d;
    f *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  const std::complex<double> erfc_z = half_pi_square_phase(x) / (f * std::sqrt(kPi));
  return std::complex<double>(0.5, 0.5) * (1.0 - erfc_z);
}
double fresnel_cos(double x) {
  if (x != x) return kNaN;
  const double v = fresnel(std::fabs(x)).real();
  return x < 0 ? -v : v;
}
double fresnel_sin(double x) {
  if (x != x) return kNaN;
  const double v = fresnel(std::fabs(x)).imag();
  return x < 0 ? -v : v;
}

// Li2(y) for u = -log(1 - y) with |u| <= log 2 (Note [Own algorithms]).
double dilog_bernoulli(double u) {
  // B_2k / (2k + 1)! for k = 1..10.
  static constexpr double kCoefficients[] = {1.0 / 6 / 6,
                                             -1.0 / 30 / 120,
                                             1.0 / 42 / 5040,
                                             -1.0 / 30 / 362880,
                                             5.0 / 66 / 39916800,
                                             -691.0 / 2730 / 6227020800.0,
                                             7.0 / 6 / 1307674368000.0,
                                             -3617.0 / 510 / 355687428096000.0,
                                             43867.0 / 798 / 121645100408832000.0,
                                             -174611.0 / 330 / 51090942171709440000.0};
  const double u2 = u * u;
  double power = u, sum = 0;
  for (double coefficient : kCoefficients) {
    power *= u2;
    sum += coefficient * power;
  }
  return u - u2 / 4 + sum;
}
double spence(double x) {
  constexpr double kPi2Over6 = kPi * kPi / 6;
  if (x != x || x < 0 || x == kInf) return kNaN;
  if (x == 0) return kPi2Over6;
  if (x < 0.5) {  // y = 1 - x in (0.5, 1): Li2(y) = pi^2/6 - log(y) log(x) - Li2(x)
    return kPi2Over6 - std::log1p(-x) * std::log(x) - dilog_bernoulli(-std::log1p(-x));
  }
  if (x <= 2) return dilog_bernoulli(-std::log(x));  // y = 1 - x in [-1, 0.5]
  // y = 1 - x < -1: Li2(y) = -pi^2/6 - log(-y)^2 / 2 - Li2(1 / y), 1 / y = 1 / (1 - x) in (-1, 0).
  const double log_minus_y = std::log(x - 1);
  return -kPi2Over6 - 0.5 * log_minus_y * log_minus_y - dilog_bernoulli(-std::log1p(1 / (x - 1)));
}

double expint(double x) {
  if (x != x || x < 0 || x == kInf) return kNaN;
  if (x == 0) return -kInf;
  return bm::expint(x, Policy());
}

double ndtri(double p) {
  if (p != p || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  return 0.0 - std::numbers::sqrt2 * bm::erfc_inv(2 * p, Policy());  // +0 at p = 1/2, as TensorFlow's
}

// Edges as TensorFlow's Igamma, Igammac and IgammaGradA (x = 0 is 0 for P and its derivative whatever a).
double igamma(double a, double x) {
  if (x == 0) return 0;
  if (a != a || x != x || a <= 0 || x < 0) return kNaN;
  if (a == kInf) return 0;
  if (x == kInf) return 1;
  return bm::gamma_p(a, x, Policy());
}
double igammac(double a, double x) {
  if (a != a || x != x || a <= 0 || x < 0) return kNaN;
  if (x == 0) return 1;
  if (x == kInf) return 0;
  if (a == kInf) return 1;
  return bm::gamma_q(a, x, Policy());
}

// A value and its derivative in a. Hidden friends, so that they do not hide the gradient rules' operators.
struct Dual {
  double v, d;
  friend Dual operator+(Dual p, Dual q) { return {p.v + q.v, p.d + q.d}; }
  friend Dual operator*(Dual p, Dual q) { return {p.v * q.v, p.d * q.v + p.v * q.d}; }
  friend Dual operator/(Dual p, Dual q) { return {p.v / q.v, (p.d * q.v - p.v * q.d) / (q.v * q.v)}; }
};

double igamma_grad_a(double a, double x) {
  if (x == 0) return 0;
  if (a != a || x != x || a <= 0 || x < 0) return kNaN;
  if (a == kInf) return 0;
  if (x == kInf) return -0.0;
  const double log_x = std::log(x);
  if (x < a + 1) {
    // P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)).
    Dual term{1, 0}, sum{1, 0};
    for (int n = 1; n < 10000; ++n) {
      term = term * Dual{x, 0} / Dual{a + n, 1};
      sum = sum + term;
      if (std::fabs(term.v) < 1e-17 * sum.v && std::fabs(term.d) < 1e-17 * std::fabs(sum.d)) break;
    }
    const double prefactor = std::exp(a * log_x - x - std::lgamma(a + 1));
    const double prefactor_d = prefactor * (log_x - bm::digamma(a + 1, Policy()));
    return prefactor_d * sum.v + prefactor * sum.d;
  }
  // Q = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))),
  // by the modified Lentz method on dual numbers.
  constexpr double kTiny = 1e-300;
  auto guard = [](Dual q) { return std::fabs(q.v) < kTiny ? Dual{kTiny, q.d} : q; };
  Dual b{x + 1 - a, -1};
  Dual c{1 / kTiny, 0}, d = guard(b);
  d = Dual{1, 0} / d;
  Dual h = d;
  for (int i = 1; i < 10000; ++i) {
    const Dual an{-i * (i - a), static_cast<double>(i)};
    b = b + Dual{2, 0};
    d = guard(an * d + b);
    c = guard(b + an / c);
    d = Dual{1, 0} / d;
    const Dual delta = d * c;
    h = h * delta;
    if (std::fabs(delta.v - 1) < 1e-16 && std::fabs(delta.d) < 1e-16 * std::fabs(h.d / h.v) + 1e-300) break;
  }
  const double prefactor = std::exp(a * log_x - x - std::lgamma(a));
  const double prefactor_d = prefactor * (log_x - bm::digamma(a, Policy()));
  return -(prefactor_d * h.v + prefactor * h.d);
}

double betainc(double a, double b, double x) {
  if (a <= 0 || b <= 0) return kNaN;
  if (x == 0) return 0;
  if (x == 1) return 1;
  if (a != a || b != b || x != x || a == kInf || b == kInf || x < 0 || x > 1) return kNaN;
  return bm::ibeta(a, b, x, Policy());
}

// ---- kernels: the element function over each float dtype, in double.
using Scalar1 = double (*)(double);
using Scalar2 = double (*)(double, double);
using Scalar3 = double (*)(double, double, double);

template <typename T>
double widen(T v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
double widen(double v) {
  return v;
}
template <typename T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return static_cast<T>(v);
  else
    return T(static_cast<float>(v));
}

template <typename Fn>
void dispatch_float(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16:
      return fn(float16{});
    case DType::kBFloat16:
      return fn(bfloat16{});
    case DType::kFloat32:
      return fn(float{});
    default:
      return fn(double{});
  }
}

template <Scalar1 kFn>
Status unary_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  dispatch_float(in.dtype(), [&]<typename T>(T) {
    const T* x = in.data<T>();
    T* y = out.mutable_data<T>();
    parallel_for(in.num_elements(), 64, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = narrow<T>(kFn(widen(x[i])));
    });
  });
  return Status::OK();
}

// Where an operand's element for output element i is: its dims aligned to the output's from the right,
// stride 0 along the dims it is broadcast over.
struct OperandIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, strides[kMaxRank] = {};

  OperandIndex() = default;
  OperandIndex(const Shape& operand, const Shape& out) : rank(out.rank()) {
    const int lead = out.rank() - operand.rank();
    int64_t stride = 1;
    for (int i = out.rank() - 1; i >= 0; --i) {
      dims[i] = out.dim(i);
      const bool own = i >= lead && operand.dim(i - lead) != 1;
      strides[i] = own ? stride : 0;
      if (i >= lead) stride *= operand.dim(i - lead);
    }
  }
  int64_t operator()(int64_t i) const {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0 && i > 0; --d) {
      offset += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return offset;
  }
};

template <typename Call>
Status nary_kernel(KernelContext& ctx, int arity, Call call) {
  TensorImpl& out = ctx.output(0);
  dispatch_float(out.dtype(), [&]<typename T>(T) {
    SmallVector<OperandIndex, 3> index;
    const T* in[3] = {};
    for (int k = 0; k < arity; ++k) {
      index.emplace_back(ctx.input(k).shape(), out.shape());
      in[k] = ctx.input(k).data<T>();
    }
    T* y = out.mutable_data<T>();
    parallel_for(out.num_elements(), 64, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v[3] = {};
        for (int k = 0; k < arity; ++k) v[k] = widen(in[k][index[k](i)]);
        y[i] = narrow<T>(call(v));
      }
    });
  });
  return Status::OK();
}
template <Scalar2 kFn>
Status binary_kernel(KernelContext& ctx) {
  return nary_kernel(ctx, 2, [](const double* v) { return kFn(v[0], v[1]); });
}
Status betainc_kernel(KernelContext& ctx) {
  return nary_kernel(ctx, 3, [](const double* v) { return betainc(v[0], v[1], v[2]); });
}

// Betainc, as TensorFlow's: a, b and x have one shape, or are scalars.
Status betainc_shape(InferContext& ctx) {
  Shape result = Shape::unknown_rank();
  bool any_unknown_rank = false;
  for (const TensorSpec& in : ctx.inputs) {
    if (!in.shape.rank_known()) {
      any_unknown_rank = true;
      continue;
    }
    if (in.shape.rank() == 0) continue;
    if (!result.rank_known()) {
      result = in.shape;
      continue;
    }
    bool same = result.rank() == in.shape.rank();
    for (int i = 0; same && i < result.rank(); ++i) {
      const int64_t r = result.dim(i), d = in.shape.dim(i);
      if (r >= 0 && d >= 0 && r != d) same = false;
      if (r < 0) result.set_dim(i, d);
    }
    if (!same)
      return invalid_argument("Betainc: a, b and x must have the same shape or be scalars, got ",
                              ctx.inputs[0].shape.to_string(), ", ", ctx.inputs[1].shape.to_string(), " and ",
                              ctx.inputs[2].shape.to_string());
  }
  if (!result.rank_known() && !any_unknown_rank) result = Shape();
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, result});
  return Status::OK();
}

// ---- gradients: TensorFlow's formulas, in ember ops (style rule 15).
using namespace gradient;  // NOLINT(google-build-using-namespace): the rules read as formulas

GradTensor where_zero(const GradTensor& x, double at_zero, const GradTensor& elsewhere) {
  return select(compare("Equal", x, zeros_like(x)), constant_like(at_zero, x), elsewhere);
}
void bessel_i0_grad(GradContext& c) { c.set(0, c.grad() * unary("BesselI1", c.input(0))); }
void bessel_i0e_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * (unary("BesselI1e", x) - sign(x) * c.output(0)));
}
// TensorFlow sets the derivative of I1 at 0 to 1 (it is 0.5); ember gives TensorFlow's value.
void bessel_i1_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * where_zero(x, 1.0, unary("BesselI0", x) - c.output(0) / x));
}
void bessel_i1e_grad(GradContext& c) {
  const GradTensor x = c.input(0), y = c.output(0);
  c.set(0, c.grad() * where_zero(x, 0.5, unary("BesselI0e", x) - y * (sign(x) + reciprocal(x))));
}
void bessel_j0_grad(GradContext& c) { c.set(0, -(c.grad() * unary("BesselJ1", c.input(0)))); }
void bessel_j1_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * where_zero(x, 0.5, unary("BesselJ0", x) - c.output(0) / x));
}
void bessel_y0_grad(GradContext& c) { c.set(0, -(c.grad() * unary("BesselY1", c.input(0)))); }
void bessel_y1_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * (unary("BesselY0", x) - c.output(0) / x));
}
void bessel_k0_grad(GradContext& c) { c.set(0, -(c.grad() * unary("BesselK1", c.input(0)))); }
void bessel_k0e_grad(GradContext& c) { c.set(0, c.grad() * (c.output(0) - unary("BesselK1e", c.input(0)))); }
void bessel_k1_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * (-unary("BesselK0", x) - c.output(0) / x));
}
void bessel_k1e_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * (c.output(0) * (1.0 - reciprocal(x)) - unary("BesselK0e", x)));
}
void dawsn_grad(GradContext& c) { c.set(0, c.grad() * (1.0 - 2.0 * c.input(0) * c.output(0))); }
void expint_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * (exp(x) / x));
}
void fresnel_cos_grad(GradContext& c) { c.set(0, c.grad() * unary("Cos", (kPi / 2) * square(c.input(0)))); }
void fresnel_sin_grad(GradContext& c) { c.set(0, c.grad() * unary("Sin", (kPi / 2) * square(c.input(0)))); }
void spence_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  const GradTensor slope = log(x) / (1.0 - x);
  c.set(0, c.grad() * select(compare("Equal", x, ones_like(x)), -ones_like(x), slope));
}
void ndtri_grad(GradContext& c) { c.set(0, c.grad() * std::sqrt(2 * kPi) * exp(0.5 * square(c.output(0)))); }
// d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); Igammac's are the negatives.
GradTensor igamma_slope_x(const GradTensor& a, const GradTensor& x) {
  return exp(-x + (a - 1.0) * log(x) - unary("Lgamma", a));
}
void igamma_grad(GradContext& c) {
  const GradTensor a = c.input(0), x = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy * binary("IgammaGradA", a, x), a, x));
  c.set(1, reduce_to(dy * igamma_slope_x(a, x), x, a));
}
void igammac_grad(GradContext& c) {
  const GradTensor a = c.input(0), x = c.input(1), dy = c.grad();
  c.set(0, reduce_to(-(dy * binary("IgammaGradA", a, x)), a, x));
  c.set(1, reduce_to(-(dy * igamma_slope_x(a, x)), x, a));
}
// TensorFlow registers no gradient for IgammaGradA (its tape raises LookupError); ember raises too.
void igamma_grad_a_grad(GradContext&) {
  check_ok(make_error(Code::kUnimplemented,
                      "IgammaGradA: no gradient is defined (TensorFlow registers none: the second derivative "
                      "of igamma in a is not implemented)"));
}
// TensorFlow's Zeta and Betainc gradients give None for s, a and b (not implemented there).
void zeta_grad(GradContext& c) {
  const GradTensor s = c.input(0), q = c.input(1);
  c.set(1, reduce_to(c.grad() * -s * binary("Zeta", s + 1.0, q), q, s));
}
void betainc_grad(GradContext& c) {
  const GradTensor a = c.input(0), b = c.input(1), x = c.input(2);
  const GradTensor log_beta = unary("Lgamma", a) + unary("Lgamma", b) - unary("Lgamma", a + b);
  const GradTensor slope = exp(binary("Xlog1py", b - 1.0, -x) + binary("Xlogy", a - 1.0, x) - log_beta);
  c.set(2, reduce_to(c.grad() * slope, x));
}

}  // namespace
}  // namespace special

void register_special_function_ops(OpRegistry& r) {
  using namespace special;  // NOLINT(google-build-using-namespace)
  constexpr DTypeSet kFloat3264 = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
  struct Unary {
    const char* name;
    const char* api;  // tf.math's name, or "" where TensorFlow has it only in tf.math.special
    KernelFn kernel;
    GradFn grad;
    const char* doc;
  };
  const Unary unaries[] = {
      {"BesselI0", "bessel_i0", &unary_kernel<bessel_i0>, &bessel_i0_grad,
       "Modified Bessel function of the first kind, order 0. bessel_i0([1.]) == [1.2660658]"},
      {"BesselI0e", "bessel_i0e", &unary_kernel<bessel_i0e>, &bessel_i0e_grad,
       "e^-|x| I0(x). bessel_i0e([1.]) == [0.4657596]"},
      {"BesselI1", "bessel_i1", &unary_kernel<bessel_i1>, &bessel_i1_grad,
       "Modified Bessel function of the first kind, order 1. bessel_i1([1.]) == [0.5651591]"},
      {"BesselI1e", "bessel_i1e", &unary_kernel<bessel_i1e>, &bessel_i1e_grad,
       "e^-|x| I1(x). bessel_i1e([1.]) == [0.2079104]"},
      {"BesselJ0", "", &unary_kernel<bessel_j0>, &bessel_j0_grad,
       "Bessel function of the first kind, order 0. bessel_j0([1.]) == [0.7651977]"},
      {"BesselJ1", "", &unary_kernel<bessel_j1>, &bessel_j1_grad,
       "Bessel function of the first kind, order 1. bessel_j1([1.]) == [0.4400506]"},
      {"BesselY0", "", &unary_kernel<bessel_y0>, &bessel_y0_grad,
       "Bessel function of the second kind, order 0 (-inf for x <= 0). bessel_y0([1.]) == [0.08825696]"},
      {"BesselY1", "", &unary_kernel<bessel_y1>, &bessel_y1_grad,
       "Bessel function of the second kind, order 1 (-inf for x <= 0). bessel_y1([1.]) == [-0.7812128]"},
      {"BesselK0", "", &unary_kernel<bessel_k0>, &bessel_k0_grad,
       "Modified Bessel function of the second kind, order 0 (inf for x <= 0). bessel_k0([1.]) == "
       "[0.4210244]"},
      {"BesselK0e", "", &unary_kernel<bessel_k0e>, &bessel_k0e_grad,
       "e^x K0(x). bessel_k0e([1.]) == [1.1444631]"},
      {"BesselK1", "", &unary_kernel<bessel_k1>, &bessel_k1_grad,
       "Modified Bessel function of the second kind, order 1 (inf for x <= 0). bessel_k1([1.]) == "
       "[0.6019072]"},
      {"BesselK1e", "", &unary_kernel<bessel_k1e>, &bessel_k1e_grad,
       "e^x K1(x). bessel_k1e([1.]) == [1.6361535]"},
      {"Dawsn", "", &unary_kernel<dawsn>, &dawsn_grad,
       "Dawson's integral e^-x^2 * integral of e^t^2 from 0 to x. dawsn([1.]) == [0.5380795]"},
      {"Expint", "", &unary_kernel<expint>, &expint_grad,
       "The exponential integral Ei(x) (NaN for x < 0, as TensorFlow). expint([1.]) == [1.8951179]"},
      {"FresnelCos", "", &unary_kernel<fresnel_cos>, &fresnel_cos_grad,
       "Fresnel integral of cos(pi t^2 / 2) from 0 to x. fresnel_cos([1.]) == [0.7798934]"},
      {"FresnelSin", "", &unary_kernel<fresnel_sin>, &fresnel_sin_grad,
       "Fresnel integral of sin(pi t^2 / 2) from 0 to x. fresnel_sin([1.]) == [0.43825915]"},
      {"Spence", "", &unary_kernel<spence>, &spence_grad,
       "Spence's function, integral of log(t) / (1 - t) from 1 to x (x >= 0). spence([2.]) == [-0.8224670]"},
      {"Ndtri", "ndtri", &unary_kernel<ndtri>, &ndtri_grad,
       "Inverse of the standard normal CDF on [0, 1]. ndtri([0.975]) == [1.959964]"},
  };
  for (const Unary& u : unaries) {
    OpBuilder op(u.name);
    op.doc(u.doc)
        .input("x")
        .output("y")
        .type_var(kFloatTypes)
        .shape(&same_as_input_shape)
        .kernel(kFloatTypes, u.kernel)
        .grad(u.grad)
        .batching(BatchingRule::kElementwise);
    if (*u.api) op.api_name(u.api);
    op.done(r);
  }
  struct Binary {
    const char* name;
    const char* first;
    const char* second;
    DTypeSet types;
    KernelFn kernel;
    GradFn grad;
    const char* doc;
  };
  const Binary binaries[] = {
      {"Igamma", "a", "x", kFloatTypes, &binary_kernel<igamma>, &igamma_grad,
       "Regularised lower incomplete gamma P(a, x), broadcasting. igamma([1.], [1.]) == [0.6321205]"},
      {"Igammac", "a", "x", kFloatTypes, &binary_kernel<igammac>, &igammac_grad,
       "Regularised upper incomplete gamma Q(a, x) = 1 - P(a, x). igammac([1.], [1.]) == [0.36787945]"},
      // TensorFlow declares IgammaGradA for float32 and float64 only; ember takes the 16-bit floats too, so
      // that Igamma's gradient exists in every dtype Igamma takes.
      {"IgammaGradA", "a", "x", kFloatTypes, &binary_kernel<igamma_grad_a>, &igamma_grad_a_grad,
       "d/da P(a, x), igamma's gradient in a. IgammaGradA(a=[1.], x=[1.]) == [-0.4317296]"},
      {"Zeta", "x", "q", kFloat3264, &binary_kernel<special_zeta>, &zeta_grad,
       "Hurwitz zeta, sum over k >= 0 of (k + q)^-x, broadcasting. zeta([2.], [1.]) == [1.644934]"},
  };
  for (const Binary& b : binaries) {
    OpBuilder(b.name)
        .doc(b.doc)
        .input(b.first)
        .input(b.second)
        .output("z")
        .type_var(b.types)
        .shape(&broadcast_binary_shape)
        .kernel(b.types, b.kernel)
        .grad(b.grad)
        .batching(BatchingRule::kBroadcasting)
        .done(r);
  }
  OpBuilder("Betainc")
      .doc(
          "Regularised incomplete beta I_x(a, b); a, b and x share a shape or are scalars. "
          "betainc([2.], [3.], [0.5]) == [0.6875]")
      .input("a")
      .input("b")
      .input("x")
      .output("z")
      .type_var(kFloat3264)
      .shape(&betainc_shape)
      .kernel(kFloat3264, &betainc_kernel)
      .grad(&betainc_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

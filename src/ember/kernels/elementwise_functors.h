// The element-wise ops' math, one functor per row of elementwise_ops.h (its Math column). Like vmath.h this
// header has no include guard and opens no namespace: it is included inside an anonymous namespace that sits
// inside the namespace vmath.h was included in, once per ISA copy (kernels/isa/elementwise_isa.cc) and once
// more in the JIT's bitcode library (jit/bitcode/element_functions.cc), so that native fused kernels compute
// every element with the very same code as the interpreter's loops (docs/fusion.md).
//
// Needs <algorithm>, <cmath>, <cstdint>, <cstring>, <limits>, <type_traits>, kernels/compute_type.h and
// vmath.h's functions in scope.

template <typename T>
using C = compute_t<T>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Note [Integer wrap-around]
// Integer add, subtract, multiply and negate wrap in two's complement, as in TensorFlow (INT_MIN's
// negation and absolute value are INT_MIN). Signed overflow is undefined behaviour in C++, so signed
// operands compute in an unsigned type at least as wide as int (narrower ones would promote back to a
// signed int) and convert back, which C++20 defines as modular.
template <typename X>
constexpr bool kWraps = std::conjunction_v<std::is_integral<X>, std::is_signed<X>>;
template <typename X>
using Unsigned = std::make_unsigned_t<decltype(X() + X())>;
template <typename X>
X wrap_add(X a, X b) {
  if constexpr (kWraps<X>)
    return X(Unsigned<X>(a) + Unsigned<X>(b));
  else
    return X(a + b);
}
template <typename X>
X wrap_sub(X a, X b) {
  if constexpr (kWraps<X>)
    return X(Unsigned<X>(a) - Unsigned<X>(b));
  else
    return X(a - b);
}
template <typename X>
X wrap_mul(X a, X b) {
  if constexpr (kWraps<X>)
    return X(Unsigned<X>(a) * Unsigned<X>(b));
  else
    return X(a * b);
}
template <typename X>
X wrap_neg(X a) {
  if constexpr (kWraps<X>)
    return X(Unsigned<X>(0) - Unsigned<X>(a));
  else
    return X(-a);
}

// Note [Shift amounts]: the shift amount, clamped to [0, bits of X - 1].
template <typename X>
X clamp_shift(X b) {
  constexpr X kMaxShift = X(sizeof(X) * 8 - 1);
  if constexpr (std::is_signed_v<X>) {
    if (b < X(0)) return X(0);
  }
  return b > kMaxShift ? kMaxShift : b;
}

// ---- unary functors: `template <class C> C operator()(C x)`; the result type R is given separately.
#define EMBER_UNARY(Name, expr)  \
  struct Name {                  \
    template <typename X>        \
    auto operator()(X x) const { \
      return expr;               \
    }                            \
  };
EMBER_UNARY(NegF, wrap_neg(x))
// TensorFlow's abs clears a float's sign bit: -0 becomes +0 and a subnormal stays one even with DAZ set
// (a comparison with 0 would see it as 0: core/float_env.h); a NaN keeps its sign.
template <typename X>
X abs_value(X x) {
  if constexpr (kIsFloat<X>)
    return x != x ? x : std::fabs(x);
  else
    return x < X(0) ? wrap_neg(x) : x;
}
EMBER_UNARY(AbsF, abs_value(x))
EMBER_UNARY(SignF, x != x ? x : X((x > X(0)) - (x < X(0))))  // NaN stays NaN; +-inf are +-1
EMBER_UNARY(ExpF, vexp(x))
EMBER_UNARY(LogF, vlog(x))
EMBER_UNARY(Log1pF, vlog1p(x))
EMBER_UNARY(Expm1F, vexpm1(x))
EMBER_UNARY(SqrtF, std::sqrt(x))
EMBER_UNARY(RsqrtF, X(1) / std::sqrt(x))
EMBER_UNARY(SquareF, wrap_mul(x, x))
EMBER_UNARY(ReciprocalF, X(1) / x)
EMBER_UNARY(TanF, std::tan(x))
EMBER_UNARY(TanhF, vtanh(x))
EMBER_UNARY(SigmoidF, vsigmoid(x))
// NaN passes through, as TensorFlow's max(x, 0) lets it; -0 becomes +0, as in TensorFlow's vectorised path
// (its scalar tail keeps -0: TensorFlow has no one answer there).
EMBER_UNARY(ReluF, x > X(0) || x != x ? x : X(0))
EMBER_UNARY(Relu6F, x != x ? x : x > X(0) ? (x < X(6) ? x : X(6)) : X(0))
EMBER_UNARY(EluF, velu(x))
EMBER_UNARY(SoftplusF, vsoftplus(x))
EMBER_UNARY(ErfF, verf(x))
EMBER_UNARY(ErfcF, verfc(x))
EMBER_UNARY(FloorF, std::floor(x))
EMBER_UNARY(CeilF, std::ceil(x))
EMBER_UNARY(RoundF, std::nearbyint(x))
EMBER_UNARY(LogicalNotF, !x)
EMBER_UNARY(IsNanF, x != x)
EMBER_UNARY(IsFiniteF, (x - x) == (x - x))
// Special functions (Note [Special functions]): computed in double, whatever the dtype, and rounded once.
//
// Note [Special functions]
// lgamma uses the reentrant lgamma_r (std::lgamma writes the global signgam: a data race across threads).
// digamma: the reflection psi(1 - x) - pi / tan(pi x) below 0 (NaN at the poles 0, -1, ... as TensorFlow),
// the recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series. polygamma(n, x) =
// (-1)^(n+1) n! zeta(n + 1, x) with the Hurwitz zeta by Euler-Maclaurin summation (as Cephes); NaN unless n
// is a non-negative integer (n = 0 is digamma). erfinv: Giles' single-precision approximation ("Approximating
// the erfinv function", GPU Computing Gems, 2011) polished by two Newton steps on erf, which take it to
// double precision.
inline double special_digamma(double x) {
  if (x != x || x == -std::numeric_limits<double>::infinity())
    return std::numeric_limits<double>::quiet_NaN();
  double result = 0;
  if (x <= 0) {
    if (x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
    constexpr double kPi = 3.14159265358979323846;
    result = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  const double series =
      f * (-1.0 / 12 +
           f * (1.0 / 120 +
                f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132 + f * (691.0 / 32760 - f / 12))))));
  return result + std::log(x) - 0.5 / x + series;
}

#include "ember/kernels/hurwitz_zeta.h"  // NOLINT: special_zeta, shared with ops/special_functions.cc

inline double special_polygamma(double n, double x) {
  if (n != n || x != x || n < 0 || n != std::floor(n)) return std::numeric_limits<double>::quiet_NaN();
  if (n == 0) return special_digamma(x);
  const double factorial = std::tgamma(n + 1);
  return (std::fmod(n, 2.0) == 0 ? -1.0 : 1.0) * factorial * special_zeta(n + 1, x);
}

inline double special_erfinv(double x) {
  if (x != x || x < -1 || x > 1) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1 || x == -1) return x * std::numeric_limits<double>::infinity();
  if (x == 0) return 0.0;  // +0 for -0 as well, as TensorFlow's
  double w = -std::log((1 - x) * (1 + x)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double y = p * x;
  constexpr double kHalfSqrtPi = 0.88622692545275801365;
  for (int step = 0; step < 2; ++step) {
    const double slope = std::exp(-y * y) / kHalfSqrtPi;
    if (!(slope > 0)) break;
    y -= (std::erf(y) - x) / slope;
  }
  return y;
}

inline double special_lgamma(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}

EMBER_UNARY(AsinF, X(std::asin(double(x))))
EMBER_UNARY(AcosF, X(std::acos(double(x))))
EMBER_UNARY(AtanF, X(std::atan(double(x))))
EMBER_UNARY(AsinhF, X(std::asinh(double(x))))
EMBER_UNARY(AcoshF, X(std::acosh(double(x))))
EMBER_UNARY(AtanhF, X(std::atanh(double(x))))
EMBER_UNARY(SinhF, X(std::sinh(double(x))))
EMBER_UNARY(CoshF, X(std::cosh(double(x))))
EMBER_UNARY(LgammaF, X(special_lgamma(double(x))))
EMBER_UNARY(DigammaF, X(special_digamma(double(x))))
EMBER_UNARY(ErfinvF, X(special_erfinv(double(x))))
EMBER_UNARY(InvertF, X(~x))
#undef EMBER_UNARY

// Float sin / cos go through vmath's array forms, which (with FMA) pick their argument reduction per block of
// elements (Note [Float sin/cos] in vmath.h); `array` marks a functor that has one.
#define EMBER_UNARY_WITH_ARRAY(Name, fn)                                                              \
  struct Name {                                                                                       \
    template <typename X>                                                                             \
    auto operator()(X x) const {                                                                      \
      return fn(x);                                                                                   \
    }                                                                                                 \
    static void array(const float* x, float* y, int64_t n) { fn(x, y, static_cast<std::size_t>(n)); } \
  };
EMBER_UNARY_WITH_ARRAY(SinF, vsin)
EMBER_UNARY_WITH_ARRAY(CosF, vcos)
#undef EMBER_UNARY_WITH_ARRAY

// ---- binary functors
#define EMBER_BINARY(Name, expr)      \
  struct Name {                       \
    template <typename X>             \
    auto operator()(X a, X b) const { \
      return expr;                    \
    }                                 \
  };
EMBER_BINARY(AddF, wrap_add(a, b))
EMBER_BINARY(SubF, wrap_sub(a, b))
EMBER_BINARY(MulF, wrap_mul(a, b))
EMBER_BINARY(DivF, X(a / b))
EMBER_BINARY(SquaredDiffF, wrap_mul(wrap_sub(a, b), wrap_sub(a, b)))
EMBER_BINARY(MaxF, (a > b || a != a) ? a : b)
EMBER_BINARY(MinF, (a < b || a != a) ? a : b)
EMBER_BINARY(EqualF, a == b)
EMBER_BINARY(NotEqualF, a != b)
EMBER_BINARY(LessF, a < b)
EMBER_BINARY(LessEqualF, a <= b)
EMBER_BINARY(GreaterF, a > b)
EMBER_BINARY(GreaterEqualF, a >= b)
EMBER_BINARY(LogicalAndF, a&& b)
EMBER_BINARY(LogicalOrF, a || b)
EMBER_BINARY(Atan2F, X(std::atan2(double(a), double(b))))
EMBER_BINARY(PolygammaF, X(special_polygamma(double(a), double(b))))
// TensorFlow's "no NaN" products and quotients: 0 where the named operand is 0, whatever the other is. Where
// x is the one tested, the result is x itself (-0 stays -0), as TensorFlow's.
EMBER_BINARY(DivNoNanF, b == X(0) ? X(0) : X(a / b))
EMBER_BINARY(MulNoNanF, b == X(0) ? X(0) : X(a * b))
EMBER_BINARY(XlogyF, a == X(0) ? a : X(a * vlog(b)))
EMBER_BINARY(XdivyF, a == X(0) ? a : X(a / b))
EMBER_BINARY(Xlog1pyF, a == X(0) ? a : X(a * vlog1p(b)))
EMBER_BINARY(BitwiseAndF, X(a& b))
EMBER_BINARY(BitwiseOrF, X(a | b))
EMBER_BINARY(BitwiseXorF, X(a ^ b))
// Note [Shift amounts]
// TensorFlow clamps a shift amount to [0, bits - 1] (C++ leaves the others undefined): 1 << 40 in int32 is
// 1 << 31, and -8 >> 40 is -1. A left shift computes in the unsigned type (Note [Integer wrap-around]) so
// that the bits shifted out are dropped and the sign bit may be set; a signed right shift is arithmetic.
EMBER_BINARY(LeftShiftF, X(Unsigned<X>(a) << clamp_shift(b)))
EMBER_BINARY(RightShiftF, X(a >> clamp_shift(b)))
#undef EMBER_BINARY

struct FloorDivF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      return std::floor(a / b);
    } else if constexpr (std::is_unsigned_v<X>) {
      return b == 0 ? X(0) : X(a / b);
    } else {
      if (b == 0) return X(0);             // the driver rejects integer division by zero before running
      if (b == X(-1)) return wrap_neg(a);  // INT_MIN / -1 overflows (Note [Integer wrap-around])
      X q = a / b;
      return X((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);
    }
  }
};
struct FloorModF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      X r = std::fmod(a, b);
      return (r != X(0) && ((r < X(0)) != (b < X(0)))) ? X(r + b) : r;
    } else if constexpr (std::is_unsigned_v<X>) {
      return b == 0 ? X(0) : X(a % b);
    } else {
      if (b == 0 || b == X(-1)) return X(0);  // INT_MIN % -1 is undefined in C++
      X r = X(a % b);
      return X((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    }
  }
};
struct PowF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring; negative exponents are rejected by the driver, as in TensorFlow.
      X result = 1, base = a;
      auto e = b;
      while (e > 0) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        e = X(e >> 1);
      }
      return result;
    }
  }
};

// Element-wise loops for complex64 and complex128: the entries of the element-wise tables (elementwise.h)
// for the rows of elementwise_ops.h that declare complex dtypes.
//
// Note [Complex kernels]
// The per-ISA functors (kernels/isa/elementwise_isa.cc) are written on real compute types so that GCC
// vectorises them; std::complex arithmetic does not fit that mould, so complex loops are plain loops
// over std::complex, compiled once, and the ISA tables never instantiate a functor for complex (they mask
// complex out of each row's dtypes). The broadcasting driver (run_unary / run_binary) moves elements by
// dtype_size, so it serves complex loops unchanged. Complex ops are never fused (fusible_unary/_binary).
#include <algorithm>
#include <cmath>
#include <complex>

#include "ember/kernels/elementwise.h"

namespace ember::kernels {
namespace {

template <typename C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

// 1 / sqrt(x): TensorFlow's complex Rsqrt.
template <typename C>
C rsqrt(C x) {
  return C(1) / std::sqrt(x);
}

// log(1 + x) and exp(x) - 1 without losing the low bits of x near 0: the real part through log1p/expm1
// of a real argument (|1 + x|^2 = 1 + (2 re + |x|^2)).
template <typename C>
C log1p(C x) {
  using R = typename C::value_type;
  const R re = x.real(), im = x.imag();
  const R t = R(2) * re + re * re + im * im;
  return C(std::log1p(t) / R(2), std::atan2(im, R(1) + re));
}
template <typename C>
C expm1(C x) {
  using R = typename C::value_type;
  const R re = x.real(), im = x.imag();
  // e^re cos(im) - 1 = expm1(re) cos(im) - 2 sin^2(im / 2)
  const R s = std::sin(im / R(2));
  return C(std::expm1(re) * std::cos(im) - R(2) * s * s, std::exp(re) * std::sin(im));
}

// Note [Complex division]
// TensorFlow's CPU kernels divide complex numbers with Eigen's SIMD packet algorithm wherever a whole packet
// of elements is at hand, and with the C library's scalar division (C99 Annex G) for the last few elements
// of a tensor; the two disagree on zeros, infinities and NaNs (x / 0 is NaN + NaN i in a packet, inf + inf i
// in the tail). ember divides every element as a packet does, so an element's quotient does not depend on
// where it sits, and agrees with TensorFlow on all but those tail elements: the divisor y = c + d i is
// scaled by the larger magnitude of its parts, y' = y / max(|c|, |d|), then x / y = (x * conj(y')) /
// (c'^2 + d'^2) / max(|c|, |d|). Each lane takes its own max as the SIMD max instruction does (the first
// operand's magnitude when the other is NaN, so a NaN part only poisons its own lane's scale), and each
// operation is rounded on its own, as in TensorFlow's build without FMA (this file is compiled for the
// baseline ISA, so nothing is contracted). So x / 0 is NaN + NaN i (0 / 0 in the scaling), and
// 1 / (inf + 0i) is NaN + NaN i. Where TensorFlow flushes a subnormal input, intermediate or result to
// zero (its threads run with FTZ/DAZ set), ember keeps it, as in all of its kernels; NaN sign bits are not
// matched. tests/python/test_complex_division.py compares a table of edge cases bit for bit.
template <typename C>
C divide(C x, C y) {
  using R = typename C::value_type;
  const R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  const R abs_c = std::fabs(c), abs_d = std::fabs(d);
  const R scale_re = abs_d > abs_c ? abs_d : abs_c;
  const R scale_im = abs_c > abs_d ? abs_c : abs_d;
  const R c_scaled = c / scale_re, d_scaled = d / scale_im;
  const R c_squared = c_scaled * c_scaled, d_squared = d_scaled * d_scaled;
  const R minus_d = -d_scaled;
  const R re = a * c_scaled - b * minus_d;
  const R im = a * minus_d + b * c_scaled;
  return C(re / (c_squared + d_squared) / scale_re, im / (d_squared + c_squared) / scale_im);
}

// TensorFlow's DivNoNan of complex: 0 where y is 0, and where x * conj(y) is 0 (so 0 / tiny is 0 even when
// |y|^2 underflows); otherwise x / y.
template <typename C>
C divide_no_nan(C x, C y) {
  if (y == C(0) || x * std::conj(y) == C(0)) return C(0);
  return divide(x, y);
}

// TensorFlow's Sign kernel of complex z (Eigen's): z times the real reciprocal of |z|, 0 at 0, where |z| is
// Eigen's scaled hypot max * sqrt(1 + (min / max)^2). std::abs rounds |z| differently (its sign of 3 + 3i
// is one ulp larger than TensorFlow's), so it is not used here. tf.math.sign of complex z is not this op but
// DivNoNan(z, ComplexAbs(z)), in TensorFlow and in ember (python/ember/ops/math_ops.py).
template <typename C>
C sign(C x) {
  using R = typename C::value_type;
  const R abs_re = std::fabs(x.real()), abs_im = std::fabs(x.imag());
  const R larger = std::max(abs_re, abs_im);
  if (larger == R(0)) return C(0);
  const R ratio = std::min(abs_re, abs_im) / larger;
  const R inverse = R(1) / (larger * std::sqrt(R(1) + ratio * ratio));
  return C(x.real() * inverse, x.imag() * inverse);
}

// TensorFlow's SquaredDifference of complex operands is |x - y|^2 (d * conj(d)), not (x - y)^2.
template <typename C>
C squared_difference(C x, C y) {
  const C d = x - y;
  return d * std::conj(d);
}

template <typename C, typename F>
void unary_loop(const void* in_v, void* out_v, int64_t n) {
  const C* in = static_cast<const C*>(in_v);
  C* out = static_cast<C*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

template <typename C, typename R, typename F, int kSa, int kSb>
void binary_loop(const void* a_v, const void* b_v, void* out_v, int64_t n) {
  const C* a = static_cast<const C*>(a_v);
  const C* b = static_cast<const C*>(b_v);
  R* out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * kSa], b[i * kSb]);
}

#define EMBER_CUNARY(Name, expr) \
  struct Name {                  \
    template <typename C>        \
    C operator()(C x) const {    \
      return expr;               \
    }                            \
  };
EMBER_CUNARY(CNeg, -x)
EMBER_CUNARY(CExp, std::exp(x))
EMBER_CUNARY(CLog, std::log(x))
EMBER_CUNARY(CLog1p, log1p(x))
EMBER_CUNARY(CExpm1, expm1(x))
EMBER_CUNARY(CSqrt, std::sqrt(x))
EMBER_CUNARY(CRsqrt, rsqrt(x))
EMBER_CUNARY(CSquare, x* x)
EMBER_CUNARY(CReciprocal, divide(C(1), x))
EMBER_CUNARY(CSin, std::sin(x))
EMBER_CUNARY(CCos, std::cos(x))
EMBER_CUNARY(CTan, std::tan(x))
EMBER_CUNARY(CTanh, std::tanh(x))
EMBER_CUNARY(CSigmoid, sigmoid(x))
EMBER_CUNARY(CSign, sign(x))
EMBER_CUNARY(CSinh, std::sinh(x))
EMBER_CUNARY(CCosh, std::cosh(x))
EMBER_CUNARY(CAsin, std::asin(x))
EMBER_CUNARY(CAcos, std::acos(x))
EMBER_CUNARY(CAtan, std::atan(x))
EMBER_CUNARY(CAsinh, std::asinh(x))
EMBER_CUNARY(CAcosh, std::acosh(x))
EMBER_CUNARY(CAtanh, std::atanh(x))
#undef EMBER_CUNARY

#define EMBER_CBINARY(Name, expr)     \
  struct Name {                       \
    template <typename C>             \
    auto operator()(C a, C b) const { \
      return expr;                    \
    }                                 \
  };
EMBER_CBINARY(CAdd, a + b)
EMBER_CBINARY(CSub, a - b)
EMBER_CBINARY(CMul, a* b)
EMBER_CBINARY(CDiv, divide(a, b))
EMBER_CBINARY(CPow, std::pow(a, b))
EMBER_CBINARY(CEqual, a == b)
EMBER_CBINARY(CNotEqual, a != b)
EMBER_CBINARY(CDivNoNan, divide_no_nan(a, b))
EMBER_CBINARY(CMulNoNan, b == C(0) ? C(0) : a * b)
EMBER_CBINARY(CXlogy, a == C(0) ? a : a * std::log(b))
EMBER_CBINARY(CXdivy, a == C(0) ? a : divide(a, b))
EMBER_CBINARY(CXlog1py, a == C(0) ? a : a * log1p(b))
EMBER_CBINARY(CSquaredDiff, squared_difference(a, b))
#undef EMBER_CBINARY

template <typename F>
void set_unary(ElementwiseTables& t, UnaryOp op) {
  t.unary[static_cast<int>(op)][static_cast<int>(DType::kComplex64)] = &unary_loop<complex64, F>;
  t.unary[static_cast<int>(op)][static_cast<int>(DType::kComplex128)] = &unary_loop<complex128, F>;
}

template <typename F, typename C>
void set_binary_one(ElementwiseTables& t, BinaryOp op) {
  using R = std::conditional_t<std::is_same_v<decltype(F()(C(), C())), bool>, bool, C>;
  BinaryLoops& loops = t.binary[static_cast<int>(op)][static_cast<int>(dtype_of<C>::value)];
  loops.vv = &binary_loop<C, R, F, 1, 1>;
  loops.sv = &binary_loop<C, R, F, 0, 1>;
  loops.vs = &binary_loop<C, R, F, 1, 0>;
}

template <typename F>
void set_binary(ElementwiseTables& t, BinaryOp op) {
  set_binary_one<F, complex64>(t, op);
  set_binary_one<F, complex128>(t, op);
}

}  // namespace

void fill_complex_elementwise_tables(ElementwiseTables& t) {
  set_unary<CNeg>(t, UnaryOp::kNeg);
  set_unary<CExp>(t, UnaryOp::kExp);
  set_unary<CLog>(t, UnaryOp::kLog);
  set_unary<CLog1p>(t, UnaryOp::kLog1p);
  set_unary<CExpm1>(t, UnaryOp::kExpm1);
  set_unary<CSqrt>(t, UnaryOp::kSqrt);
  set_unary<CRsqrt>(t, UnaryOp::kRsqrt);
  set_unary<CSquare>(t, UnaryOp::kSquare);
  set_unary<CReciprocal>(t, UnaryOp::kReciprocal);
  set_unary<CSin>(t, UnaryOp::kSin);
  set_unary<CCos>(t, UnaryOp::kCos);
  set_unary<CTan>(t, UnaryOp::kTan);
  set_unary<CTanh>(t, UnaryOp::kTanh);
  set_unary<CSigmoid>(t, UnaryOp::kSigmoid);
  set_unary<CSign>(t, UnaryOp::kSign);
  set_unary<CSinh>(t, UnaryOp::kSinh);
  set_unary<CCosh>(t, UnaryOp::kCosh);
  set_unary<CAsin>(t, UnaryOp::kAsin);
  set_unary<CAcos>(t, UnaryOp::kAcos);
  set_unary<CAtan>(t, UnaryOp::kAtan);
  set_unary<CAsinh>(t, UnaryOp::kAsinh);
  set_unary<CAcosh>(t, UnaryOp::kAcosh);
  set_unary<CAtanh>(t, UnaryOp::kAtanh);
  set_binary<CAdd>(t, BinaryOp::kAdd);
  set_binary<CSub>(t, BinaryOp::kSub);
  set_binary<CMul>(t, BinaryOp::kMul);
  set_binary<CDiv>(t, BinaryOp::kDiv);
  set_binary<CPow>(t, BinaryOp::kPow);
  set_binary<CEqual>(t, BinaryOp::kEqual);
  set_binary<CNotEqual>(t, BinaryOp::kNotEqual);
  set_binary<CDivNoNan>(t, BinaryOp::kDivNoNan);
  set_binary<CMulNoNan>(t, BinaryOp::kMulNoNan);
  set_binary<CXlogy>(t, BinaryOp::kXlogy);
  set_binary<CXdivy>(t, BinaryOp::kXdivy);
  set_binary<CXlog1py>(t, BinaryOp::kXlog1py);
  set_binary<CSquaredDiff>(t, BinaryOp::kSquaredDiff);
}

}  // namespace ember::kernels

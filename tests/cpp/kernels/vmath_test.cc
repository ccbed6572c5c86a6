// Accuracy and special-value tests for ember/kernels/vmath.h.
//
// float results are compared in ulps against double-precision std:: references, double results against
// long double references.  Inputs are swept (a) over the whole float / double bit-pattern space with a
// stride, which covers every binade, and (b) densely and linearly over the ranges where the functions do
// something interesting.  The array forms are used for the sweeps, so the code under test is the one the
// compiler vectorised for this build.  The worst error of every function is printed (stdout +
// RecordProperty). (All 2^32 float inputs were also checked once, outside this test; see the numbers in
// vmath.h.)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

// The header goes into a namespace of the includer's choosing, as the kernel builds do; including it a second
// time into another namespace of the same translation unit must work too (no include guard, macros #undef'd).
namespace ember::kernels::vmath_test_ns {
#include "ember/kernels/vmath.h"
}  // namespace ember::kernels::vmath_test_ns
namespace ember::kernels::vmath_test_ns2 {
#include "ember/kernels/vmath.h"
}  // namespace ember::kernels::vmath_test_ns2

// This test is compiled for baseline x86-64 (no FMA); the kernels that run on AVX2 / AVX-512 machines take
// the FMA code paths of the header.  A third copy compiled for AVX2+FMA covers those; the functions are
// always_inline, so they are called through out-of-line wrappers compiled for the same target.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EMBER_VMATH_TEST_FMA 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace ember::kernels::vmath_test_fma {
#include "ember/kernels/vmath.h"
#define EMBER_VMATH_TEST_WRAP(NAME) \
  void NAME##_f(const float* x, float* y, std::size_t n) { NAME(x, y, n); }
EMBER_VMATH_TEST_WRAP(vexp)
EMBER_VMATH_TEST_WRAP(vexpm1)
EMBER_VMATH_TEST_WRAP(vtanh)
EMBER_VMATH_TEST_WRAP(vsigmoid)
EMBER_VMATH_TEST_WRAP(vsin)
EMBER_VMATH_TEST_WRAP(vcos)
#undef EMBER_VMATH_TEST_WRAP
}  // namespace ember::kernels::vmath_test_fma
#pragma GCC pop_options
#endif

namespace {

namespace vm = ember::kernels::vmath_test_ns;

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr double kNanD = std::numeric_limits<double>::quiet_NaN();

float BitsToF(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
double BitsToD(std::uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

// Error of `got` in units of the float ulp at the exact value `ref`.  Results whose exact value is
// subnormal only need to be within FLT_MIN (flush to zero is allowed).
double UlpErrF(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : 1e30;
  if (std::isnan(got)) return 1e30;
  const float reff = static_cast<float>(ref);  // rounds to inf above FLT_MAX(+half ulp)
  if (std::isinf(reff) || std::isinf(got)) return (got == reff) ? 0.0 : 1e30;
  const double diff = std::fabs(static_cast<double>(got) - ref);
  if (std::fabs(ref) < 0x1p-126 && diff <= 0x1p-126) return 0.0;
  const int e = std::max(std::ilogb(ref), -126);
  return diff / std::ldexp(1.0, e - 23);
}

double UlpErrD(double got, long double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : 1e30;
  if (std::isnan(got)) return 1e30;
  const double refd = static_cast<double>(ref);
  if (std::isinf(refd) || std::isinf(got)) return (got == refd) ? 0.0 : 1e30;
  const long double diff = std::fabs(static_cast<long double>(got) - ref);
  if (std::fabs(ref) < 0x1p-1022L && diff <= 0x1p-1022L) return 0.0;
  const int e = std::max(std::ilogb(ref), -1022);
  return static_cast<double>(diff / std::ldexp(1.0L, e - 52));
}

struct Worst {
  double ulp = 0;
  double at = 0;
  double got = 0;
  double ref = 0;
};

using ArrayF = void (*)(const float*, float*, std::size_t);
using ArrayD = void (*)(const double*, double*, std::size_t);

// Inputs: every `stride`-th finite float bit pattern of both signs, kept if in [lo, hi], plus `dense` evenly
// spaced points in [dlo, dhi].
std::vector<float> FloatInputs(float lo, float hi, std::uint32_t stride, float dlo, float dhi, int dense) {
  std::vector<float> v;
  for (std::uint64_t u = 0; u < 0x7f800000u; u += stride) {
    for (std::uint32_t s : {0u, 0x80000000u}) {
      const float x = BitsToF(static_cast<std::uint32_t>(u) | s);
      if (x >= lo && x <= hi) v.push_back(x);
    }
  }
  for (int i = 0; dense > 0 && i <= dense; ++i)
    v.push_back(dlo + (dhi - dlo) * static_cast<float>(i) / dense);
  return v;
}

// Pseudo-random doubles: uniform over the bit patterns of [lo, hi] (log-like), plus dense linear points.
std::vector<double> DoubleInputs(double lo, double hi, int n_random, double dlo, double dhi, int dense) {
  std::vector<double> v;
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  while (static_cast<int>(v.size()) < n_random) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const double x = BitsToD(s);
    if (std::isfinite(x) && x >= lo && x <= hi) v.push_back(x);
  }
  for (int i = 0; dense > 0 && i <= dense; ++i) v.push_back(dlo + (dhi - dlo) * i / dense);
  return v;
}

Worst SweepF(ArrayF f, const std::function<double(double)>& ref, const std::vector<float>& in) {
  std::vector<float> out(in.size());
  f(in.data(), out.data(), in.size());
  Worst w;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double r = ref(static_cast<double>(in[i]));
    const double e = UlpErrF(out[i], r);
    if (e > w.ulp) w = {e, in[i], out[i], r};
  }
  return w;
}

Worst SweepD(ArrayD f, const std::function<long double(long double)>& ref, const std::vector<double>& in) {
  std::vector<double> out(in.size());
  f(in.data(), out.data(), in.size());
  Worst w;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const long double r = ref(static_cast<long double>(in[i]));
    const double e = UlpErrD(out[i], r);
    if (e > w.ulp) w = {e, in[i], out[i], static_cast<double>(r)};
  }
  return w;
}

void Report(const char* name, const Worst& w, double bound) {
  std::printf("[ vmath    ] %-16s max %.3f ulp (bound %.1f) at x=%a got=%a ref=%a\n", name, w.ulp, bound,
              w.at, w.got, w.ref);
  ::testing::Test::RecordProperty(name, std::to_string(w.ulp));
  EXPECT_LE(w.ulp, bound) << name << " at x=" << w.at << " got=" << w.got << " ref=" << w.ref;
}

// ---- references
// ---------------------------------------------------------------------------------------------
double RefSigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}
double RefSoftplus(double x) { return (x > 0 ? x : 0.0) + std::log1p(std::exp(-std::fabs(x))); }
double RefElu(double x) { return x > 0 ? x : std::expm1(x); }
long double RefSigmoidL(long double x) {
  return x >= 0 ? 1.0L / (1.0L + std::exp(-x)) : std::exp(x) / (1.0L + std::exp(x));
}
long double RefSoftplusL(long double x) { return (x > 0 ? x : 0.0L) + std::log1p(std::exp(-std::fabs(x))); }
long double RefEluL(long double x) { return x > 0 ? x : std::expm1(x); }

constexpr std::uint32_t kStride = 1021;  // ~4.2M float inputs per function over the full range
constexpr float kMaxF = std::numeric_limits<float>::max();
constexpr double kMaxD = std::numeric_limits<double>::max();
constexpr double kFloatBound = 4.0;
constexpr double kDoubleBound = 4.0;  // 4 ulp ~ 4.4e-16 .. 8.9e-16 relative

TEST(VmathFloat, Exp) {
  Report("expf",
         SweepF(
             vm::vexp, [](double x) { return std::exp(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -110.f, 90.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Expm1) {
  Report("expm1f",
         SweepF(
             vm::vexpm1, [](double x) { return std::expm1(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -5.f, 5.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Log) {
  Report("logf",
         SweepF(
             vm::vlog, [](double x) { return std::log(x); },
             FloatInputs(0.f, kMaxF, kStride / 2, 0.f, 4.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Log1p) {
  Report("log1pf",
         SweepF(
             vm::vlog1p, [](double x) { return std::log1p(x); },
             FloatInputs(-1.f, kMaxF, kStride / 2, -1.f, 4.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Tanh) {
  Report("tanhf",
         SweepF(
             vm::vtanh, [](double x) { return std::tanh(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -10.f, 10.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Sigmoid) {
  Report("sigmoidf",
         SweepF(vm::vsigmoid, RefSigmoid, FloatInputs(-kMaxF, kMaxF, kStride, -110.f, 30.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Softplus) {
  Report("softplusf",
         SweepF(vm::vsoftplus, RefSoftplus, FloatInputs(-kMaxF, kMaxF, kStride, -110.f, 30.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Erf) {
  Report("erff",
         SweepF(
             vm::verf, [](double x) { return std::erf(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -5.f, 5.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, Elu) {
  Report("eluf", SweepF(vm::velu, RefElu, FloatInputs(-kMaxF, kMaxF, kStride, -20.f, 5.f, 1000000)),
         kFloatBound);
}
TEST(VmathFloat, SinCos) {
  // Accuracy is promised for |x| < 2^25*pi ~ 1e8; checked up to 1e7 here (and densely on [-10, 10] and
  // [0, 1e5]), up to 1e8 in SinCosLargeArguments.
  auto in = FloatInputs(-1e7f, 1e7f, kStride / 2, -10.f, 10.f, 1000000);
  for (int i = 0; i <= 1000000; ++i) in.push_back(1e5f * static_cast<float>(i) / 1000000);
  Report("sinf",
         SweepF(
             vm::vsin, [](double x) { return std::sin(x); }, in),
         kFloatBound);
  Report("cosf",
         SweepF(
             vm::vcos, [](double x) { return std::cos(x); }, in),
         kFloatBound);
}
// Near the multiples of pi/2 the reduction cancels most bits of x (largest relative error of r); near odd
// multiples the polynomial is evaluated at |r| ~ pi/2, where rounding could push it above 1 (clamped).
std::vector<float> NearMultiplesOfHalfPi(double max_multiple, int count) {
  std::vector<float> v;
  for (int i = 0; i < count; ++i) {
    const double k = std::floor(max_multiple * (static_cast<double>(i) + 0.5) / count);
    const float c = static_cast<float>(k * 1.5707963267948966);
    float x = c;
    for (int j = 0; j < 4; ++j) x = std::nextafter(x, -kInfF);
    for (int j = 0; j < 9; ++j, x = std::nextafter(x, kInfF)) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

TEST(VmathFloat, SinCosLargeArguments) {
  auto in = FloatInputs(1e7f, 1e8f, 61, 0.f, 0.f, 0);
  const auto near = NearMultiplesOfHalfPi(6.3e7, 200000);
  in.insert(in.end(), near.begin(), near.end());
  const auto small = NearMultiplesOfHalfPi(1e4, 10000);
  in.insert(in.end(), small.begin(), small.end());
  Report("sinf large",
         SweepF(
             vm::vsin, [](double x) { return std::sin(x); }, in),
         kFloatBound);
  Report("cosf large",
         SweepF(
             vm::vcos, [](double x) { return std::cos(x); }, in),
         kFloatBound);
  std::vector<float> s(in.size()), c(in.size());
  vm::vsin(in.data(), s.data(), in.size());
  vm::vcos(in.data(), c.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(s[i] >= -1.0f && s[i] <= 1.0f) << "sin(" << in[i] << ") = " << s[i];
    ASSERT_TRUE(c[i] >= -1.0f && c[i] <= 1.0f) << "cos(" << in[i] << ") = " << c[i];
  }
}

TEST(VmathFloat, TanhSwitchAndSaturation) {
  // |x| < 0.625 uses the odd polynomial, above it expm1: sweep every float in [0.5, 0.75] of both signs.
  std::vector<float> in;
  for (float x = 0.5f; x <= 0.75f; x = std::nextafter(x, kInfF)) {
    in.push_back(x);
    in.push_back(-x);
  }
  Report("tanhf switch",
         SweepF(
             vm::vtanh, [](double x) { return std::tanh(x); }, in),
         kFloatBound);
  // monotonic across the switch
  EXPECT_LE(vm::vtanh(std::nextafter(0.625f, 0.0f)), vm::vtanh(0.625f));
  EXPECT_LE(vm::vtanh(0.625f), vm::vtanh(std::nextafter(0.625f, 1.0f)));
  // exactly +-1 from 9.01 on (tanh(x) > 1 - 2^-25 there), also past the 9.5 clamp
  for (float x : {9.02f, 9.4999f, 9.5f, 9.5001f, 20.0f, 1e30f}) {
    EXPECT_EQ(vm::vtanh(x), 1.0f) << x;
    EXPECT_EQ(vm::vtanh(-x), -1.0f) << x;
  }
  EXPECT_LT(vm::vtanh(8.0f), 1.0f);
}

TEST(VmathFloat, ExpSubnormalOutputs) {
  // exp(x) < FLT_MIN for x < -87.34: the result is built as (p * 2^(n/2)) * 2^(n - n/2) and rounds once
  // into the subnormals; compare in absolute terms (2 subnormal ulps) down to the last non-zero result.
  for (float x = -87.3f; x > -104.0f; x -= 0.0013f) {
    const double ref = std::exp(static_cast<double>(x));
    const float got = vm::vexp(x);
    const double tol = std::max(2.0 * 0x1p-149, 4.0 * ref * 0x1p-23);
    ASSERT_LE(std::fabs(static_cast<double>(got) - ref), tol)
        << "exp(" << x << ") = " << got << ", ref " << ref;
  }
  EXPECT_EQ(vm::vexp(-103.5f), 0x1p-149f);  // exp(-103.5) = 0.80 * 2^-149
  EXPECT_EQ(vm::vexp(-104.0f), 0.0f);
  EXPECT_EQ(vm::vexp(-150.0f), 0.0f);
  // sigmoid(x) ~ exp(x) there too
  EXPECT_GT(vm::vsigmoid(-100.0f), 0.0f);
  EXPECT_EQ(vm::vsigmoid(-104.0f), 0.0f);
  // overflow edge: the largest float below ln(FLT_MAX) is finite and within bounds, the next one is inf
  const float last = 0x1.62e42ep+6f;  // 88.7228317
  EXPECT_LE(UlpErrF(vm::vexp(last), std::exp(static_cast<double>(last))), kFloatBound);
  EXPECT_EQ(vm::vexp(std::nextafter(last, kInfF)), kInfF);
}

#if EMBER_VMATH_TEST_FMA
TEST(VmathFloat, FmaBuildAccuracy) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2+FMA";
  namespace vf = ember::kernels::vmath_test_fma;
  Report("expf fma",
         SweepF(
             vf::vexp_f, [](double x) { return std::exp(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -110.f, 90.f, 1000000)),
         kFloatBound);
  Report("expm1f fma",
         SweepF(
             vf::vexpm1_f, [](double x) { return std::expm1(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -5.f, 5.f, 1000000)),
         kFloatBound);
  Report("tanhf fma",
         SweepF(
             vf::vtanh_f, [](double x) { return std::tanh(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -10.f, 10.f, 1000000)),
         kFloatBound);
  Report("sigmoidf fma",
         SweepF(vf::vsigmoid_f, RefSigmoid, FloatInputs(-kMaxF, kMaxF, kStride, -110.f, 30.f, 1000000)),
         kFloatBound);
  auto in = FloatInputs(-1e8f, 1e8f, kStride / 2, -10.f, 10.f, 1000000);
  const auto near = NearMultiplesOfHalfPi(6.3e7, 100000);
  in.insert(in.end(), near.begin(), near.end());
  Report("sinf fma",
         SweepF(
             vf::vsin_f, [](double x) { return std::sin(x); }, in),
         kFloatBound);
  Report("cosf fma",
         SweepF(
             vf::vcos_f, [](double x) { return std::cos(x); }, in),
         kFloatBound);
}
#endif

TEST(VmathFloat, SinCosHugeStaysBounded) {
  auto in = FloatInputs(-kMaxF, kMaxF, kStride, 0.f, 0.f, 0);
  std::vector<float> s(in.size()), c(in.size());
  vm::vsin(in.data(), s.data(), in.size());
  vm::vcos(in.data(), c.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(s[i] >= -1.0f && s[i] <= 1.0f) << "sin(" << in[i] << ") = " << s[i];
    ASSERT_TRUE(c[i] >= -1.0f && c[i] <= 1.0f) << "cos(" << in[i] << ") = " << c[i];
  }
}

TEST(VmathDouble, Exp) {
  Report("exp",
         SweepD(
             vm::vexp, [](long double x) { return std::exp(x); },
             DoubleInputs(-800, 800, 1000000, -750, 710, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Expm1) {
  Report("expm1",
         SweepD(
             vm::vexpm1, [](long double x) { return std::expm1(x); },
             DoubleInputs(-kMaxD, kMaxD, 1000000, -5, 5, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Log) {
  Report(
      "log",
      SweepD(
          vm::vlog, [](long double x) { return std::log(x); }, DoubleInputs(0, kMaxD, 1000000, 0, 4, 500000)),
      kDoubleBound);
}
TEST(VmathDouble, Log1p) {
  Report("log1p",
         SweepD(
             vm::vlog1p, [](long double x) { return std::log1p(x); },
             DoubleInputs(-1, kMaxD, 1000000, -1, 4, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Tanh) {
  Report("tanh",
         SweepD(
             vm::vtanh, [](long double x) { return std::tanh(x); },
             DoubleInputs(-kMaxD, kMaxD, 1000000, -25, 25, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Sigmoid) {
  Report("sigmoid", SweepD(vm::vsigmoid, RefSigmoidL, DoubleInputs(-kMaxD, kMaxD, 1000000, -750, 40, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Softplus) {
  Report("softplus",
         SweepD(vm::vsoftplus, RefSoftplusL, DoubleInputs(-kMaxD, kMaxD, 1000000, -750, 40, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Erf) {  // std::erf fallback; checked for completeness
  Report("erf",
         SweepD(
             vm::verf, [](long double x) { return std::erf(x); },
             DoubleInputs(-kMaxD, kMaxD, 1000000, -7, 7, 500000)),
         kDoubleBound);
}
TEST(VmathDouble, Elu) {
  Report("elu", SweepD(vm::velu, RefEluL, DoubleInputs(-kMaxD, kMaxD, 1000000, -40, 5, 1000000)),
         kDoubleBound);
}
TEST(VmathDouble, SinCos) {
  auto in = DoubleInputs(-1e8, 1e8, 1000000, -10, 10, 1000000);
  for (int i = 0; i <= 1000000; ++i) in.push_back(1e5 * i / 1000000);
  Report("sin",
         SweepD(
             vm::vsin, [](long double x) { return std::sin(x); }, in),
         kDoubleBound);
  Report("cos",
         SweepD(
             vm::vcos, [](long double x) { return std::cos(x); }, in),
         kDoubleBound);
  auto huge = DoubleInputs(-kMaxD, kMaxD, 1000000, 0, 0, 0);
  std::vector<double> s(huge.size()), c(huge.size());
  vm::vsin(huge.data(), s.data(), huge.size());
  vm::vcos(huge.data(), c.data(), huge.size());
  for (std::size_t i = 0; i < huge.size(); ++i) {
    ASSERT_TRUE(s[i] >= -1.0 && s[i] <= 1.0) << "sin(" << huge[i] << ") = " << s[i];
    ASSERT_TRUE(c[i] >= -1.0 && c[i] <= 1.0) << "cos(" << huge[i] << ") = " << c[i];
  }
}

// ---- special values
// -----------------------------------------------------------------------------------------
template <class T>
bool SameBits(T a, T b) {  // equal including the sign of zero
  return a == b && std::signbit(a) == std::signbit(b);
}

template <class T>
void CheckSpecials() {
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max();
  const T zero = 0, nzero = -T(0), one = 1;

  for (T (*f)(T) :
       {static_cast<T (*)(T)>(vm::vexp), static_cast<T (*)(T)>(vm::vexpm1), static_cast<T (*)(T)>(vm::vlog),
        static_cast<T (*)(T)>(vm::vlog1p), static_cast<T (*)(T)>(vm::vtanh),
        static_cast<T (*)(T)>(vm::vsigmoid), static_cast<T (*)(T)>(vm::vsoftplus),
        static_cast<T (*)(T)>(vm::verf), static_cast<T (*)(T)>(vm::vsin), static_cast<T (*)(T)>(vm::vcos),
        static_cast<T (*)(T)>(vm::velu)}) {
    EXPECT_TRUE(std::isnan(f(nan)));
    EXPECT_TRUE(std::isnan(f(-nan)));
  }
  EXPECT_EQ(vm::vexp(inf), inf);
  EXPECT_TRUE(SameBits(vm::vexp(-inf), zero));
  EXPECT_EQ(vm::vexp(big), inf);
  EXPECT_EQ(vm::vexp(T(1000)), inf);
  EXPECT_TRUE(SameBits(vm::vexp(-big), zero));
  EXPECT_TRUE(SameBits(vm::vexp(T(-1000)), zero));
  EXPECT_EQ(vm::vexp(zero), one);
  EXPECT_EQ(vm::vexp(nzero), one);

  EXPECT_EQ(vm::vexpm1(inf), inf);
  EXPECT_EQ(vm::vexpm1(-inf), -one);
  EXPECT_EQ(vm::vexpm1(big), inf);
  EXPECT_EQ(vm::vexpm1(-big), -one);
  EXPECT_TRUE(SameBits(vm::vexpm1(zero), zero));
  EXPECT_TRUE(SameBits(vm::vexpm1(nzero), nzero));

  EXPECT_EQ(vm::vlog(zero), -inf);
  EXPECT_EQ(vm::vlog(nzero), -inf);
  EXPECT_EQ(vm::vlog(inf), inf);
  EXPECT_TRUE(std::isnan(vm::vlog(-one)));
  EXPECT_TRUE(std::isnan(vm::vlog(-inf)));
  EXPECT_TRUE(std::isnan(vm::vlog(-std::numeric_limits<T>::denorm_min())));
  EXPECT_TRUE(SameBits(vm::vlog(one), zero));
  EXPECT_NEAR(vm::vlog(std::numeric_limits<T>::denorm_min()), std::log(std::numeric_limits<T>::denorm_min()),
              1e-5);

  EXPECT_EQ(vm::vlog1p(-one), -inf);
  EXPECT_EQ(vm::vlog1p(inf), inf);
  EXPECT_TRUE(std::isnan(vm::vlog1p(T(-1.5))));
  EXPECT_TRUE(std::isnan(vm::vlog1p(-inf)));
  EXPECT_TRUE(SameBits(vm::vlog1p(zero), zero));
  EXPECT_TRUE(SameBits(vm::vlog1p(nzero), nzero));
  EXPECT_EQ(vm::vlog1p(std::numeric_limits<T>::denorm_min()), std::numeric_limits<T>::denorm_min());

  EXPECT_EQ(vm::vtanh(inf), one);
  EXPECT_EQ(vm::vtanh(-inf), -one);
  EXPECT_EQ(vm::vtanh(big), one);
  EXPECT_TRUE(SameBits(vm::vtanh(zero), zero));
  EXPECT_TRUE(SameBits(vm::vtanh(nzero), nzero));
  EXPECT_EQ(vm::vtanh(std::numeric_limits<T>::denorm_min()), std::numeric_limits<T>::denorm_min());

  EXPECT_EQ(vm::vsigmoid(inf), one);
  EXPECT_TRUE(SameBits(vm::vsigmoid(-inf), zero));
  EXPECT_EQ(vm::vsigmoid(big), one);
  EXPECT_TRUE(SameBits(vm::vsigmoid(-big), zero));
  EXPECT_EQ(vm::vsigmoid(zero), T(0.5));
  EXPECT_EQ(vm::vsigmoid(nzero), T(0.5));

  EXPECT_EQ(vm::vsoftplus(inf), inf);
  EXPECT_TRUE(SameBits(vm::vsoftplus(-inf), zero));
  EXPECT_EQ(vm::vsoftplus(big), big);
  EXPECT_EQ(vm::vsoftplus(T(100)), T(100));
  EXPECT_NEAR(vm::vsoftplus(zero), std::log(T(2)), 4 * std::numeric_limits<T>::epsilon());

  EXPECT_EQ(vm::verf(inf), one);
  EXPECT_EQ(vm::verf(-inf), -one);
  EXPECT_EQ(vm::verf(big), one);
  EXPECT_TRUE(SameBits(vm::verf(zero), zero));
  EXPECT_TRUE(SameBits(vm::verf(nzero), nzero));

  EXPECT_TRUE(std::isnan(vm::vsin(inf)));
  EXPECT_TRUE(std::isnan(vm::vsin(-inf)));
  EXPECT_TRUE(std::isnan(vm::vcos(inf)));
  EXPECT_TRUE(std::isnan(vm::vcos(-inf)));
  EXPECT_TRUE(SameBits(vm::vsin(zero), zero));
  EXPECT_TRUE(SameBits(vm::vsin(nzero), nzero));
  EXPECT_EQ(vm::vcos(zero), one);
  EXPECT_EQ(vm::vcos(nzero), one);
  EXPECT_LE(std::fabs(vm::vsin(big)), one);
  EXPECT_LE(std::fabs(vm::vcos(big)), one);

  EXPECT_EQ(vm::velu(inf), inf);
  EXPECT_EQ(vm::velu(-inf), -one);
  EXPECT_EQ(vm::velu(T(-inf), T(0.5)), T(-0.5));
  EXPECT_EQ(vm::velu(T(2), T(0.5)), T(2));
  EXPECT_TRUE(SameBits(vm::velu(nzero), nzero));
  EXPECT_EQ(vm::velu(T(3)), T(3));
}

TEST(VmathFloat, SpecialValues) { CheckSpecials<float>(); }
TEST(VmathDouble, SpecialValues) { CheckSpecials<double>(); }

TEST(VmathFloat, OverflowUnderflowEdges) {
  // exp: last finite / first inf around ln(FLT_MAX) = 88.7228394
  EXPECT_TRUE(std::isfinite(vm::vexp(88.72283f)));
  EXPECT_EQ(vm::vexp(88.7229f), kInfF);
  EXPECT_TRUE(std::isfinite(vm::vexpm1(88.72283f)));
  EXPECT_EQ(vm::vexpm1(88.7229f), kInfF);
  // results in the subnormal range are either flushed or tiny
  EXPECT_LT(vm::vexp(-100.0f), 1e-43f);
  EXPECT_GE(vm::vexp(-100.0f), 0.0f);
  EXPECT_EQ(vm::vexp(-104.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(vm::vexp(709.78)));
  EXPECT_EQ(vm::vexp(709.79), kInfD);
  EXPECT_EQ(vm::vexp(-746.0), 0.0);
  EXPECT_TRUE(std::isnan(vm::vlog(kNanF)) && std::isnan(vm::vlog(kNanD)));
}

TEST(VmathFloat, SecondInclusionIsIndependentAndEqual) {
  namespace vm2 = ember::kernels::vmath_test_ns2;
  for (float x : {-3.5f, -0.1f, 0.0f, 0.7f, 2.0f, 50.0f}) {
    EXPECT_EQ(vm::vexp(x), vm2::vexp(x));
    EXPECT_EQ(vm::vtanh(x), vm2::vtanh(x));
    EXPECT_EQ(vm::verf(x), vm2::verf(x));
  }
}

TEST(VmathFloat, InPlaceArray) {
  std::vector<float> v = {-2.f, -1.f, 0.f, 0.5f, 1.f, 3.f, 10.f, -7.f, 1e-3f, 42.f, -0.25f};
  std::vector<float> ref(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) ref[i] = vm::vtanh(v[i]);
  vm::vtanh(v.data(), v.data(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], ref[i]);
}

}  // namespace

// Accuracy and special-value tests for ember/kernels/vmath.h.
//
// float results are compared in ulps against double-precision std:: references, double results against
// long double references.  Inputs are swept (a) over the whole float / double bit-pattern space with a
// stride, which covers every binade, and (b) densely and linearly over the ranges where the functions do
// something interesting.  The array forms are used for the sweeps, so the code under test is the one the
// compiler vectorised for this build.  The worst error of every function is printed (stdout +
// RecordProperty). (All 2^32 float inputs were also checked once, outside this test; see the numbers in
// vmath.h.)  Float sin / cos arrays are also run as the element-wise kernels dispatch them for this CPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ember/core/half.h"
#include "ember/kernels/elementwise.h"

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
#define EMBER_VM_ASSUME_FMA  // GCC's C++ front end does not define __FMA__ for the pragma (see vmath.h)
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
float sin_scalar(float x) { return vsin(x); }
float cos_scalar(float x) { return vcos(x); }
float sin_bounded(float x) { return vm_sincos_f_bounded<false>(x); }
float cos_bounded(float x) { return vm_sincos_f_bounded<true>(x); }
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

template <class T>
bool SameBits(T a, T b) {  // equal including the sign of zero
  return a == b && std::signbit(a) == std::signbit(b);
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

using ArrayFn = std::function<void(const float*, float*, std::size_t)>;

Worst SweepF(const ArrayFn& f, const std::function<double(double)>& ref, const std::vector<float>& in) {
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

Worst SweepF(ArrayF f, const std::function<double(double)>& ref, const std::vector<float>& in) {
  return SweepF(ArrayFn(f), ref, in);
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

// Sweeps a float sin and its cos over the same inputs against std::sin and std::cos ("sinf<suffix>", ...).
void ReportSinCosF(const std::string& suffix, const ArrayFn& sin_fn, const ArrayFn& cos_fn,
                   const std::vector<float>& in, double bound) {
  Report(("sinf" + suffix).c_str(),
         SweepF(
             sin_fn, [](double x) { return std::sin(x); }, in),
         bound);
  Report(("cosf" + suffix).c_str(),
         SweepF(
             cos_fn, [](double x) { return std::cos(x); }, in),
         bound);
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
// erfc decays to the last float subnormal at 10.05: the dense part of the sweep covers where it is not 0.
TEST(VmathFloat, Erfc) {
  Report("erfcf",
         SweepF(
             vm::verfc, [](double x) { return std::erfc(x); },
             FloatInputs(-kMaxF, kMaxF, kStride, -5.f, 11.f, 1000000)),
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
  ReportSinCosF("", static_cast<ArrayF>(vm::vsin), static_cast<ArrayF>(vm::vcos), in, kFloatBound);
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
  ReportSinCosF(" large", static_cast<ArrayF>(vm::vsin), static_cast<ArrayF>(vm::vcos), in, kFloatBound);
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
  ReportSinCosF(" fma", vf::vsin_f, vf::vcos_f, in, kFloatBound);
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

// ---- float sin / cos array forms
// With FMA they reduce the argument in float for every block of 64 whose |x| all lie below kVmSinCosFloatMax,
// in double otherwise (Note [Float sin/cos]).  Each test runs them as built here (no FMA: the double
// reduction throughout), as built for AVX2+FMA, and as the element-wise kernels dispatch them for this CPU
// (the library's AVX-512 or AVX2 build).

constexpr double kSinCosBound = 2.0;  // every float below 2^19 was checked: 1.73 ulp with FMA, 1.99 without

struct SinCosBuild {
  std::string name;
  ArrayFn sin, cos;
};

std::vector<SinCosBuild> SinCosBuilds() {
  std::vector<SinCosBuild> builds;
  builds.push_back({"baseline", static_cast<ArrayF>(vm::vsin), static_cast<ArrayF>(vm::vcos)});
#if EMBER_VMATH_TEST_FMA
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    builds.push_back(
        {"avx2+fma", ember::kernels::vmath_test_fma::vsin_f, ember::kernels::vmath_test_fma::vcos_f});
#endif
  auto dispatched = [](ember::kernels::UnaryOp op) -> ArrayFn {
    const ember::kernels::UnaryLoop loop =
        ember::kernels::elementwise_tables()
            .unary[static_cast<int>(op)][static_cast<int>(ember::DType::kFloat32)];
    return [loop](const float* x, float* y, std::size_t n) { loop(x, y, static_cast<int64_t>(n)); };
  };
  builds.push_back({std::string("dispatched ") + ember::kernels::elementwise_isa(),
                    dispatched(ember::kernels::UnaryOp::kSin), dispatched(ember::kernels::UnaryOp::kCos)});
  return builds;
}

// The error allowed at x: kSinCosBound below 2^16 (either reduction), kFloatBound up to 1e8 (the double
// reduction, as in SinCosLargeArguments); above, only a result in [-1, 1].
double SinCosAllowed(float x) {
  const float a = std::fabs(x);
  return a < 0x1p16f ? kSinCosBound : a < 1e8f ? kFloatBound : -1.0;
}

TEST(VmathFloat, SinCosArrayAccuracy) {
  // Dense [-10, 10] and [-1e4, 1e4], and every multiple of pi/2 below 2^16 with 4 neighbours on each side
  // (where the reduction cancels the most): the float reduction wherever there is FMA.
  std::vector<float> in;
  for (int i = 0; i <= 2000000; ++i) in.push_back(static_cast<float>(-10.0 + 20.0 * i / 2000000));
  for (int i = 0; i <= 2000000; ++i) in.push_back(static_cast<float>(-1e4 + 2e4 * i / 2000000));
  const auto near = NearMultiplesOfHalfPi(41721, 41721);  // k*pi/2 < 2^16 for k <= 41720
  in.insert(in.end(), near.begin(), near.end());
  for (const SinCosBuild& b : SinCosBuilds()) {
    ReportSinCosF(" array, " + b.name, b.sin, b.cos, in, kSinCosBound);
  }
}

TEST(VmathFloat, SinCosArrayPicksTheReductionPerBlock) {
  // Without FMA the array forms are plain loops of the scalar (double reduction) functions.
  std::vector<float> x(3 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(static_cast<float>(i % 17) - 8.3f, i % 13);
  std::vector<float> s(x.size()), c(x.size());
  vm::vsin(x.data(), s.data(), x.size());
  vm::vcos(x.data(), c.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(SameBits(s[i], vm::vsin(x[i]))) << i << ": x = " << x[i];
    EXPECT_TRUE(SameBits(c[i], vm::vcos(x[i]))) << i << ": x = " << x[i];
  }
#if EMBER_VMATH_TEST_FMA
  // With FMA, a block of 64 whose |x| are all below the bound goes through the float reduction, one with a
  // single lane at or above it (or inf / NaN) through the double one, lane for lane as the scalar functions.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2+FMA";
  namespace vf = ember::kernels::vmath_test_fma;
  x[64 + 5] = vf::kVmSinCosFloatMax;
  x[128 + 63] = kNanF;
  vf::vsin_f(x.data(), s.data(), x.size());
  vf::vcos_f(x.data(), c.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool near = i < 64;
    const float want_s = near ? vf::sin_bounded(x[i]) : vf::sin_scalar(x[i]);
    const float want_c = near ? vf::cos_bounded(x[i]) : vf::cos_scalar(x[i]);
    EXPECT_TRUE(SameBits(s[i], want_s) || (std::isnan(s[i]) && std::isnan(want_s))) << i << ": x = " << x[i];
    EXPECT_TRUE(SameBits(c[i], want_c) || (std::isnan(c[i]) && std::isnan(want_c))) << i << ": x = " << x[i];
  }
#endif
}

TEST(VmathFloat, SinCosArrayLargeArguments) {
  // From 2^16 (the largest bound of the float reduction) to 1e30: the double reduction.
  auto in = FloatInputs(0x1p16f, 1e30f, 509, 0.f, 0.f, 0);
  const auto near = NearMultiplesOfHalfPi(6.3e7, 100000);
  in.insert(in.end(), near.begin(), near.end());
  std::vector<float> accurate;  // |x| < 1e8
  for (float x : in)
    if (std::fabs(x) < 1e8f) accurate.push_back(x);
  for (const SinCosBuild& b : SinCosBuilds()) {
    Report(("sinf array large, " + b.name).c_str(),
           SweepF(
               b.sin, [](double x) { return std::sin(x); }, accurate),
           kFloatBound);
    Report(("cosf array large, " + b.name).c_str(),
           SweepF(
               b.cos, [](double x) { return std::cos(x); }, accurate),
           kFloatBound);
    std::vector<float> s(in.size()), c(in.size());
    b.sin(in.data(), s.data(), in.size());
    b.cos(in.data(), c.data(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(s[i] >= -1.0f && s[i] <= 1.0f) << b.name << ": sin(" << in[i] << ") = " << s[i];
      ASSERT_TRUE(c[i] >= -1.0f && c[i] <= 1.0f) << b.name << ": cos(" << in[i] << ") = " << c[i];
    }
  }
}

TEST(VmathFloat, SinCosArraySpecialValues) {
  const float sub = std::numeric_limits<float>::denorm_min();
  const float fmin = std::numeric_limits<float>::min();
  const std::vector<float> specials = {0.0f, -0.0f, sub,   -sub,   0x1p-130f, -0x1p-130f, 0x1.fffffcp-127f,
                                       fmin, -fmin, kInfF, -kInfF, kNanF,     -kNanF};
  for (const SinCosBuild& b : SinCosBuilds()) {
    // Each special value alone, and at a few places of a block of 64 small values followed by a 5-element
    // tail: with FMA, zeros and subnormals leave the block on the float reduction, inf and NaN move it to the
    // double one.
    for (float v : specials) {
      for (int pos : {-1, 0, 37, 63, 66}) {
        std::vector<float> x = pos < 0 ? std::vector<float>{v} : std::vector<float>(69, 0.75f);
        if (pos >= 0) x[pos] = v;
        std::vector<float> s(x.size()), c(x.size());
        b.sin(x.data(), s.data(), x.size());
        b.cos(x.data(), c.data(), x.size());
        const std::size_t k = pos < 0 ? 0 : static_cast<std::size_t>(pos);
        const std::string what = b.name + ": x = " + std::to_string(v) + " at " + std::to_string(pos);
        if (std::isnan(v) || std::isinf(v)) {
          EXPECT_TRUE(std::isnan(s[k])) << what << ", sin = " << s[k];
          EXPECT_TRUE(std::isnan(c[k])) << what << ", cos = " << c[k];
        } else {
          // sin(x) rounds to x (a subnormal result may be flushed to a zero of the same sign); cos(x) to 1.
          EXPECT_TRUE(SameBits(s[k], v) || (s[k] == 0.0f && std::signbit(s[k]) == std::signbit(v)))
              << what << ", sin = " << s[k];
          EXPECT_EQ(c[k], 1.0f) << what;
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (i == k) continue;
          EXPECT_LE(UlpErrF(s[i], std::sin(0.75)), kSinCosBound) << what << ", lane " << i;
          EXPECT_LE(UlpErrF(c[i], std::cos(0.75)), kSinCosBound) << what << ", lane " << i;
        }
      }
    }
  }
}

TEST(VmathFloat, SinCosArrayMixedBlocksTailsInPlace) {
  // Lengths around the block size of 64, with huge lanes nowhere, at block edges, scattered, or everywhere
  // but in every other lane.  Every lane must be right whichever reduction its block took, nothing past n may
  // be written, and in place (x == y) must give the same bits.
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<float> small(-20.0f, 20.0f);
  std::uniform_int_distribution<std::uint32_t> huge_bits(0x47800000u, 0x7149f2cau);  // [2^16, 1e30]
  auto huge = [&] { return BitsToF(huge_bits(rng) | (rng() & 0x80000000u)); };
  constexpr float kGuard = 12345.0f;
  for (std::size_t n : {1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 1000, 1024, 1025}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) {
        const bool big = pattern == 1   ? (i == 0 || i == n - 1 || i % 64 == 63 || i % 64 == 0)
                         : pattern == 2 ? rng() % 7 == 0
                         : pattern == 3 ? i % 2 == 1
                                        : false;
        x[i] = big ? huge() : small(rng);
      }
      for (const SinCosBuild& b : SinCosBuilds()) {
        for (int fn = 0; fn < 2; ++fn) {
          const ArrayFn& f = fn == 0 ? b.sin : b.cos;
          std::vector<float> y(n + 16, kGuard);
          f(x.data(), y.data(), n);
          std::vector<float> z = x;
          f(z.data(), z.data(), n);
          const std::string what = b.name + (fn == 0 ? " sin" : " cos") + ", n = " + std::to_string(n) +
                                   ", pattern " + std::to_string(pattern);
          for (std::size_t i = n; i < y.size(); ++i)
            ASSERT_EQ(y[i], kGuard) << what << ": wrote past n at " << i;
          for (std::size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(SameBits(y[i], z[i]))
                << what << ": in place differs at " << i << " (x = " << x[i] << ")";
            const double ref =
                fn == 0 ? std::sin(static_cast<double>(x[i])) : std::cos(static_cast<double>(x[i]));
            const double allowed = SinCosAllowed(x[i]);
            if (allowed > 0)
              ASSERT_LE(UlpErrF(y[i], ref), allowed)
                  << what << ": x = " << x[i] << " got " << y[i] << " ref " << ref;
            else
              ASSERT_TRUE(y[i] >= -1.0f && y[i] <= 1.0f) << what << ": x = " << x[i] << " got " << y[i];
          }
        }
      }
    }
  }
}

// 16-bit floats compute in float: the dispatched Sin / Cos loops widen a chunk and run the float array form.
// Every bit pattern, against the double result: one rounding to the 16-bit type (plus the float error) away.
template <typename T>
void CheckHalfSinCos(ember::DType dtype, int mantissa_bits, int min_exponent) {
  std::vector<T> x(65536);
  for (std::uint32_t u = 0; u < 65536; ++u) x[u].bits = static_cast<std::uint16_t>(u);
  for (ember::kernels::UnaryOp op : {ember::kernels::UnaryOp::kSin, ember::kernels::UnaryOp::kCos}) {
    const ember::kernels::UnaryLoop loop =
        ember::kernels::elementwise_tables().unary[static_cast<int>(op)][static_cast<int>(dtype)];
    ASSERT_NE(loop, nullptr);
    std::vector<T> y(x.size()), z = x;
    loop(x.data(), y.data(), static_cast<int64_t>(x.size()));
    loop(z.data(), z.data(), static_cast<int64_t>(z.size()));
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float xf = static_cast<float>(x[i]), yf = static_cast<float>(y[i]);
      ASSERT_TRUE(SameBits(yf, static_cast<float>(z[i])) ||
                  (std::isnan(yf) && std::isnan(static_cast<float>(z[i]))))
          << "in place differs at x = " << xf;
      if (!std::isfinite(xf)) {
        ASSERT_TRUE(std::isnan(yf)) << "x = " << xf;
        continue;
      }
      if (std::fabs(xf) >= 1e8f) {
        ASSERT_TRUE(yf >= -1.0f && yf <= 1.0f) << "x = " << xf;
        continue;
      }
      const double ref = op == ember::kernels::UnaryOp::kSin ? std::sin(static_cast<double>(xf))
                                                             : std::cos(static_cast<double>(xf));
      const int e = ref == 0 ? min_exponent : std::max(std::ilogb(ref), min_exponent);
      const double err = std::fabs(yf - ref) / std::ldexp(1.0, e - mantissa_bits);
      worst = std::max(worst, err);
      ASSERT_LE(err, 0.501) << "x = " << xf << " got " << yf << " ref " << ref;
    }
    std::printf("[ vmath    ] %s %s: max %.3f ulp of the 16-bit type\n",
                std::string(ember::dtype_name(dtype)).c_str(),
                op == ember::kernels::UnaryOp::kSin ? "sin" : "cos", worst);
  }
}

TEST(VmathFloat, SinCosDispatchedHalfTypes) {
  CheckHalfSinCos<ember::float16>(ember::DType::kFloat16, 10, -14);
  CheckHalfSinCos<ember::bfloat16>(ember::DType::kBFloat16, 7, -126);
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
TEST(VmathDouble, Erfc) {  // std::erfc fallback; checked for completeness
  Report("erfc",
         SweepD(
             vm::verfc, [](long double x) { return std::erfc(x); },
             DoubleInputs(-kMaxD, kMaxD, 1000000, -7, 28, 500000)),
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
void CheckSpecials() {
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max();
  const T zero = 0, nzero = -T(0), one = 1;

  for (T (*f)(T) :
       {static_cast<T (*)(T)>(vm::vexp), static_cast<T (*)(T)>(vm::vexpm1), static_cast<T (*)(T)>(vm::vlog),
        static_cast<T (*)(T)>(vm::vlog1p), static_cast<T (*)(T)>(vm::vtanh),
        static_cast<T (*)(T)>(vm::vsigmoid), static_cast<T (*)(T)>(vm::vsoftplus),
        static_cast<T (*)(T)>(vm::verf), static_cast<T (*)(T)>(vm::verfc), static_cast<T (*)(T)>(vm::vsin),
        static_cast<T (*)(T)>(vm::vcos), static_cast<T (*)(T)>(vm::velu)}) {
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

  EXPECT_TRUE(SameBits(vm::verfc(inf), zero));
  EXPECT_EQ(vm::verfc(-inf), T(2));
  EXPECT_TRUE(SameBits(vm::verfc(big), zero));
  EXPECT_EQ(vm::verfc(-big), T(2));
  EXPECT_EQ(vm::verfc(zero), one);
  EXPECT_EQ(vm::verfc(nzero), one);

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

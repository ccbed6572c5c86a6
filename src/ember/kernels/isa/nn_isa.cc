// Row loops of softmax and the cross-entropy losses. Compiled three times (baseline, avx2, avx512) like
// elementwise_isa.cc; kernels/nn.cc picks the copy matching elementwise_isa().
//
// Note [Lanes]: ember builds without -ffast-math, so GCC will not reorder a float max or sum reduction
// to vectorise it. The loops below keep kLanes independent accumulators instead: each lane is an
// ordinary element-wise select or add that GCC vectorises, and the result is the same on every ISA
// and every thread count because the summation order is fixed by the code, not by the compiler.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ember/kernels/nn.h"

namespace ember::kernels::EMBER_ISA {
namespace {

constexpr int kLanes = 16;

// e^x for float without a libm call, so loops calling it vectorise. Cephes' expf: x = n ln2 + r with
// |r| <= ln2/2, a degree-6 polynomial for e^r, and 2^n built in the exponent bits; about 1 ulp.
// Inputs below ln(FLT_MIN) give 0 (softmax only needs e^x for x <= 0, where a denormal would be lost
// against a row sum >= 1 anyway); inputs above 88 saturate at e^88; NaN stays NaN.
inline float exp_f32(float x) {
  constexpr float kLo = -87.33654475f, kHi = 88.0f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it leaves round(v) in the low mantissa bits
  const bool underflow = x < kLo;
  x = x < kLo ? kLo : x;  // comparisons are false for NaN, which passes through
  x = x > kHi ? kHi : x;
  const float t = x * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kMagic);
  float r = x - n * 0.693359375f;  // ln 2 split in two so n * ln2_hi is exact
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((ni + 127u) << 23);
  const float y = p * scale;
  return underflow ? 0.0f : y;
}

inline double exp_f64(double x) { return std::exp(x); }

template <typename T>
T row_max(const T* __restrict x, int64_t n) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = kNegInf;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  T m = kNegInf;
  for (int j = 0; j < kLanes; ++j) m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  // NaN never wins a '>' comparison; it still reaches the output through exp(x - max).
  return m;
}

template <typename T, T (*kExp)(T)>
T exp_shift_sum(const T* __restrict x, T shift, T* __restrict out, int64_t n) {
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T e = kExp(x[i + j] - shift);
      out[i + j] = e;
      acc[j] += e;
    }
  }
  T s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  for (; i < n; ++i) {
    const T e = kExp(x[i] - shift);
    out[i] = e;
    s += e;
  }
  return s;
}

template <typename T, T (*kExp)(T)>
void exp_inplace(T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = kExp(x[i]);
}

}  // namespace

void fill_nn_tables(NnTables& t) {
  t.max_f32 = &row_max<float>;
  t.max_f64 = &row_max<double>;
  t.exp_shift_sum_f32 = &exp_shift_sum<float, exp_f32>;
  t.exp_shift_sum_f64 = &exp_shift_sum<double, exp_f64>;
  t.exp_inplace_f32 = &exp_inplace<float, exp_f32>;
  t.exp_inplace_f64 = &exp_inplace<double, exp_f64>;
}

}  // namespace ember::kernels::EMBER_ISA

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
#include <cstring>
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

// A 64-byte GCC vector of T (split into smaller registers by the baseline and avx2 builds). Used for
// max: GCC will not vectorise a float max written with '?:' on scalars, but does on vectors.
template <typename T>
struct Vec64;
template <>
struct Vec64<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct Vec64<double> {
  typedef double type __attribute__((vector_size(64)));
};

template <typename T>
T row_max(const T* __restrict x, int64_t n) {
  using V = typename Vec64<T>::type;
  constexpr int kVecLanes = 64 / sizeof(T);
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  V acc = V{} + kNegInf;
  int64_t i = 0;
  for (; i + kVecLanes <= n; i += kVecLanes) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    acc = v > acc ? v : acc;
  }
  T m = kNegInf;
  for (int j = 0; j < kVecLanes; ++j) m = acc[j] > m ? acc[j] : m;
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
void softmax_row(const T* __restrict x, T* __restrict y, int64_t n, bool log) {
  if (n == 0) return;
  const T m = row_max(x, n);
  const T s = exp_shift_sum<T, kExp>(x, m, y, n);
  if (log) {
    // (x - m) - log(s) rather than x - (m + log(s)): keeps the small differences when |m| is huge.
    const T ls = std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  } else {
    const T inv = T(1) / s;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

template <typename T, T (*kExp)(T)>
void softmax_slab(const T* __restrict x, int64_t xs, T* __restrict y, int64_t ys, int64_t len, int64_t w,
                  bool log, T* __restrict mx, T* __restrict sm) {
  for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<T>::infinity(), sm[j] = 0;
  for (int64_t a = 0; a < len; ++a) {
    const T* xr = x + a * xs;
    for (int64_t j = 0; j < w; ++j) mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
  }
  for (int64_t a = 0; a < len; ++a) {
    const T* xr = x + a * xs;
    T* yr = y + a * ys;
    for (int64_t j = 0; j < w; ++j) {
      yr[j] = kExp(xr[j] - mx[j]);
      sm[j] += yr[j];
    }
  }
  if (log) {
    for (int64_t j = 0; j < w; ++j) sm[j] = std::log(sm[j]);
    for (int64_t a = 0; a < len; ++a) {
      const T* xr = x + a * xs;
      T* yr = y + a * ys;
      for (int64_t j = 0; j < w; ++j) yr[j] = (xr[j] - mx[j]) - sm[j];
    }
  } else {
    for (int64_t j = 0; j < w; ++j) sm[j] = T(1) / sm[j];
    for (int64_t a = 0; a < len; ++a) {
      T* yr = y + a * ys;
      for (int64_t j = 0; j < w; ++j) yr[j] *= sm[j];
    }
  }
}

template <typename T>
double sum_squares(const T* __restrict x, int64_t n) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double v = x[i + j];
      acc[j] += v * v;
    }
  }
  double s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

}  // namespace

void fill_nn_tables(NnTables& t) {
  t.softmax_row_f32 = &softmax_row<float, exp_f32>;
  t.softmax_row_f64 = &softmax_row<double, exp_f64>;
  t.softmax_slab_f32 = &softmax_slab<float, exp_f32>;
  t.softmax_slab_f64 = &softmax_slab<double, exp_f64>;
  t.max_f32 = &row_max<float>;
  t.max_f64 = &row_max<double>;
  t.exp_shift_sum_f32 = &exp_shift_sum<float, exp_f32>;
  t.exp_shift_sum_f64 = &exp_shift_sum<double, exp_f64>;
  t.sum_squares_f32 = &sum_squares<float>;
  t.sum_squares_f64 = &sum_squares<double>;
}

}  // namespace ember::kernels::EMBER_ISA

#include "ember/kernels/random.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/core/parallel.h"

namespace ember::kernels {
namespace {

// Note [Batched Philox]
// A Philox block is a chain of ten dependent multiply rounds, so one block at a time leaves most of
// the core idle. Uniform floats and integers (one block per group) are generated 16 groups at a time
// instead, structure-of-arrays, so the rounds run in vector registers. The integer arithmetic is the
// same as philox4x32_10's, so the bits are identical (random_test checks against philox_fill and
// against TensorFlow). Normals are dominated by log/sin/cos and truncated normals by rejection; they
// use philox.h group by group. target_clones picks the widest vector unit at load time; it gives the
// same bits on every ISA because only integer operations differ.
constexpr int kBatch = 16;

struct PhiloxBatch {
  uint32_t w[4][kBatch];  // w[k][j]: word k of the counter (in) or block (out) of lane j
};

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void philox_batch(PhiloxKey key,
                                                                                        PhiloxBatch& b) {
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < kPhiloxRounds; ++round) {
    for (int j = 0; j < kBatch; ++j) {
      const uint64_t p0 = static_cast<uint64_t>(kPhiloxM4x32A) * b.w[0][j];
      const uint64_t p1 = static_cast<uint64_t>(kPhiloxM4x32B) * b.w[2][j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ b.w[1][j] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ b.w[3][j] ^ k1;
      b.w[0][j] = n0;
      b.w[1][j] = static_cast<uint32_t>(p1);
      b.w[2][j] = n2;
      b.w[3][j] = static_cast<uint32_t>(p0);
    }
    k0 += kPhiloxW32A;
    k1 += kPhiloxW32B;
  }
}

/// a % d for 32-bit a and d by two multiplications instead of a division; exact for every a and d >= 1
/// (Lemire, Kaser, Kurz, "Faster remainder by direct computation", 2019).
class FastMod32 {
 public:
  explicit FastMod32(uint32_t d) : m_(~uint64_t{0} / d + 1), d_(d) {}
  uint32_t operator()(uint32_t a) const {
    const uint64_t low = m_ * a;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d_) >> 64);
  }

 private:
  uint64_t m_;
  uint32_t d_;
};

/// Turns one group's block into its outputs: the conversions of PhiloxUniform / PhiloxUniformInt.
template <class Dist>
struct Emitter;

template <typename T>
struct Emitter<PhiloxUniform<T>> {
  explicit Emitter(const PhiloxUniform<T>&) {}
  void operator()(const uint32_t (&b)[4], T* out) const {
    for (int i = 0; i < PhiloxUniform<T>::kGroupSize; ++i) {
      if constexpr (std::is_same_v<T, float>) {
        out[i] = philox_u32_to_float01(b[i]);
      } else if constexpr (std::is_same_v<T, double>) {
        out[i] = philox_u64_to_double01(b[2 * i], b[2 * i + 1]);
      } else if constexpr (std::is_same_v<T, float16>) {
        out[i] = philox_u16_to_half01(b[i]);
      } else {
        out[i] = philox_u16_to_bfloat16_01(b[i]);
      }
    }
  }
};

template <>
struct Emitter<PhiloxUniformInt<int32_t>> {
  explicit Emitter(const PhiloxUniformInt<int32_t>& d) : lo(static_cast<uint32_t>(d.lo())), mod(d.range()) {}
  void operator()(const uint32_t (&b)[4], int32_t* out) const {
    for (int i = 0; i < 4; ++i) out[i] = static_cast<int32_t>(lo + mod(b[i]));  // lo + bits % range
  }
  uint32_t lo;
  FastMod32 mod;
};

template <>
struct Emitter<PhiloxUniformInt<int64_t>> {
  explicit Emitter(const PhiloxUniformInt<int64_t>& d)
      : lo(static_cast<uint64_t>(d.lo())), range(d.range()) {}
  void operator()(const uint32_t (&b)[4], int64_t* out) const {
    for (int i = 0; i < 2; ++i) {
      const uint64_t bits = static_cast<uint64_t>(b[2 * i]) | (static_cast<uint64_t>(b[2 * i + 1]) << 32);
      out[i] = static_cast<int64_t>(lo + bits % range);
    }
  }
  uint64_t lo;
  uint64_t range;
};

template <class Dist>
constexpr bool kBatched = std::is_same_v<Dist, PhiloxUniform<typename Dist::value_type>> ||
                          std::is_same_v<Dist, PhiloxUniformInt<typename Dist::value_type>>;

/// philox_fill_groups for groups [begin, end), whole batches of full groups through philox_batch.
template <class Dist, typename T = typename Dist::value_type>
void fill_groups(const Dist& dist, const PhiloxState& start, T* out, int64_t n, int64_t begin, int64_t end) {
  constexpr int G = Dist::kGroupSize;
  int64_t g = begin;
  if constexpr (kBatched<Dist>) {
    const int64_t batch_end = std::min(end, n / G);  // groups whose G outputs all exist
    const Emitter<Dist> emit(dist);
    PhiloxBatch b;
    for (; g + kBatch <= batch_end; g += kBatch) {
      const PhiloxCounter base = philox_skip(start.counter, static_cast<uint64_t>(g));
      for (int j = 0; j < kBatch; ++j) {
        const PhiloxCounter c = philox_skip(base, static_cast<uint64_t>(j));
        for (int k = 0; k < 4; ++k) b.w[k][j] = c[k];
      }
      philox_batch(start.key, b);
      for (int j = 0; j < kBatch; ++j) {
        const uint32_t block[4] = {b.w[0][j], b.w[1][j], b.w[2][j], b.w[3][j]};
        emit(block, out + (g + j) * G);
      }
    }
  }
  philox_fill_groups(dist, start, out, n, g, end);  // the rest, one group at a time
}

/// Rough cycles per Philox group (one 10-round block plus the conversion), for parallel_for's grain.
template <class Dist>
constexpr int64_t group_cost() {
  using T = typename Dist::value_type;
  if constexpr (std::is_same_v<Dist, PhiloxNormal<T>>) return 160;
  if constexpr (std::is_same_v<Dist, PhiloxTruncatedNormal<T>>) return 320;
  return 16;
}

template <class Dist, typename T = typename Dist::value_type>
void fill(const Dist& dist, const PhiloxState& start, T* out, int64_t n) {
  parallel_for(philox_num_groups<Dist>(n), group_cost<Dist>(),
               [&](int64_t begin, int64_t end) { fill_groups(dist, start, out, n, begin, end); });
}

}  // namespace

Status fill_random(RandomDistribution dist, const PhiloxState& start, TensorImpl& out) {
  const int64_t n = out.num_elements();
  bool ok = visit_dtype<kFloatTypes>(out.dtype(), [&]<typename T>() {
    T* data = out.mutable_data<T>();
    switch (dist) {
      case RandomDistribution::kUniform:
        fill(PhiloxUniform<T>{}, start, data, n);
        break;
      case RandomDistribution::kNormal:
        fill(PhiloxNormal<T>{}, start, data, n);
        break;
      case RandomDistribution::kTruncatedNormal:
        fill(PhiloxTruncatedNormal<T>{}, start, data, n);
        break;
    }
  });
  if (!ok) return make_error(Code::kUnimplemented, "no random kernel for dtype ", dtype_name(out.dtype()));
  return Status::OK();
}

Status fill_random_int(const PhiloxState& start, int64_t lo, int64_t hi, TensorImpl& out) {
  if (lo >= hi) return invalid_argument("Need minval < maxval, got ", lo, " >= ", hi);
  const int64_t n = out.num_elements();
  bool ok = visit_dtype<kIndexTypes>(out.dtype(), [&]<typename T>() {
    fill(PhiloxUniformInt<T>(static_cast<T>(lo), static_cast<T>(hi)), start, out.mutable_data<T>(), n);
  });
  if (!ok) return make_error(Code::kUnimplemented, "no random kernel for dtype ", dtype_name(out.dtype()));
  return Status::OK();
}

Status fill_random_full_int(const PhiloxState& start, TensorImpl& out) {
  const int64_t n = out.num_elements();
  bool ok = visit_dtype<kIndexTypes>(
      out.dtype(), [&]<typename T>() { fill(PhiloxFullInt<T>{}, start, out.mutable_data<T>(), n); });
  if (!ok) return make_error(Code::kUnimplemented, "no random kernel for dtype ", dtype_name(out.dtype()));
  return Status::OK();
}

namespace {

/// Double draws of one sample's sub-stream, as TF's rejection samplers take them: each refill is one
/// block giving two values, handed out last first.
class DoublePairs {
 public:
  explicit DoublePairs(PhiloxStream& s) : s_(s) {}
  double uniform() {
    if (u_left_ == 0) {
      const PhiloxBlock b = s_.next_block();
      u_[0] = philox_u64_to_double01(b[0], b[1]);
      u_[1] = philox_u64_to_double01(b[2], b[3]);
      u_left_ = 2;
    }
    return u_[--u_left_];
  }
  double normal() {
    if (n_left_ == 0) {
      const PhiloxBlock b = s_.next_block();
      philox_box_muller(b[0], b[1], b[2], b[3], &n_[0], &n_[1]);
      n_left_ = 2;
    }
    return n_[--n_left_];
  }

 private:
  PhiloxStream& s_;
  double u_[2]{}, n_[2]{};
  int u_left_ = 0, n_left_ = 0;
};

double gamma_sample(PhiloxStream& stream, double alpha) {
  DoublePairs draw(stream);
  if (alpha == 1.0) return -std::log1p(-draw.uniform());
  const bool below_one = alpha < 1;
  const double d = alpha + (below_one ? 2.0 / 3 : -1.0 / 3);
  const double c = 1.0 / 3 / std::sqrt(d);
  while (true) {
    const double x = draw.normal();
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = draw.uniform();
    if (u < 1 - 0.0331 * (x * x) * (x * x) || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) {
      double res = d * v;
      if (below_one) res *= std::pow(draw.uniform(), 1 / alpha);
      return res;
    }
  }
}

/// One Poisson draw (as a double; the caller converts), or +inf for an infinite rate.
double poisson_sample(PhiloxStream& stream, double rate) {
  DoublePairs draw(stream);
  if (std::isnan(rate)) return rate;  // TF's rejection loop never ends on NaN
  if (rate < 10) {
    const double limit = std::exp(-rate);
    double prod = 1, x = 0;
    while (true) {
      prod *= draw.uniform();
      if (prod <= limit) return x;
      x += 1;
    }
  }
  if (std::isinf(rate)) return std::numeric_limits<double>::infinity();
  const double log_rate = std::log(rate);
  const double b = 0.931 + 2.53 * std::sqrt(rate);
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  while (true) {
    const double u = draw.uniform() - 0.5;
    const double v = draw.uniform();
    const double u_shifted = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / u_shifted + b) * u + rate + 0.43);
    if (k < 0) continue;
    if (u_shifted >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2)) return k;
    if (u_shifted < 0.013 && v > u_shifted) continue;
    const double s = std::log(v * inv_alpha / (a / (u_shifted * u_shifted) + b));
    const double t = -rate + k * log_rate - std::lgamma(k + 1);
    if (s <= t) return k;
  }
}

/// Runs `sample(stream, param)` for every output of the TF layout, in parallel over outputs.
/// Returns false when a NaN draw met an integer output (which has no NaN to hold it).
template <typename P, typename T, class Sample>
bool fill_per_param(const PhiloxState& start, const P* param, int64_t num_params, int64_t per_param, T* out,
                    Sample sample) {
  std::atomic<bool> nan_into_int{false};
  parallel_for(num_params * per_param, 512, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t p = i / per_param, s = i % per_param;
      PhiloxStream stream(philox_skip(start, static_cast<uint64_t>(i) * 256));
      const double v = sample(stream, static_cast<double>(param[p]));
      if constexpr (std::is_integral_v<T>) {
        if (std::isnan(v)) nan_into_int.store(true, std::memory_order_relaxed);
        out[s * num_params + p] = std::isnan(v)   ? T{0}
                                  : std::isinf(v) ? std::numeric_limits<T>::max()
                                                  : static_cast<T>(v);
      } else if constexpr (std::is_same_v<T, double>) {
        out[s * num_params + p] = v;
      } else {
        out[s * num_params + p] = static_cast<T>(static_cast<float>(v));
      }
    }
  });
  return !nan_into_int.load();
}

double binomial_inversion(PhiloxStream& stream, double count, double prob) {
  DoublePairs draw(stream);
  double geom_sum = 0;
  int num_geom = 0;
  while (true) {
    geom_sum += std::ceil(std::log(draw.uniform()) / std::log1p(-prob));
    if (geom_sum > count) return num_geom;
    ++num_geom;
  }
}

/// The tail of Stirling's series for log(k!), tabulated below 10.
double stirling_tail(double k) {
  static constexpr double kTail[] = {
      0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
      0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287};
  if (k <= 9) return kTail[static_cast<int>(k)];
  const double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/// Hormann's transformed rejection with squeeze (BTRS), for count * prob >= 10.
double binomial_btrs(PhiloxStream& stream, double count, double prob) {
  DoublePairs draw(stream);
  const double stddev = std::sqrt(count * prob * (1 - prob));
  const double b = 1.15 + 2.53 * stddev;
  const double a = -0.0873 + 0.0248 * b + 0.01 * prob;
  const double c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double r = prob / (1 - prob);
  const double alpha = (2.83 + 5.1 / b) * stddev;
  const double m = std::floor((count + 1) * prob);
  while (true) {
    double u = draw.uniform();
    double v = draw.uniform();
    u = u - 0.5;
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || k > count) continue;
    v = std::log(v * alpha / (a / (us * us) + b));
    const double bound = (m + 0.5) * std::log((m + 1) / (r * (count - m + 1))) +
                         (count + 1) * std::log((count - m + 1) / (count - k + 1)) +
                         (k + 0.5) * std::log(r * (count - k + 1) / (k + 1)) + stirling_tail(m) +
                         stirling_tail(count - m) - stirling_tail(k) - stirling_tail(count - k);
    if (v <= bound) return k;
  }
}

double binomial_sample(const PhiloxState& start, int64_t index, double count, double prob) {
  if (std::isnan(count)) return count;  // TF's inversion loop never ends on NaN
  if (count <= 0 || prob <= 0) return 0;
  if (prob >= 1) return count;
  if (std::isnan(prob)) return std::numeric_limits<double>::quiet_NaN();
  const bool flip = prob > 0.5;  // draw failures instead: the same distribution, reflected
  const double p = flip ? 1 - prob : prob;
  const bool btrs = count * p >= 10;
  PhiloxStream stream(philox_skip(start, static_cast<uint64_t>(index) * (btrs ? 256 : 42)));
  const double k = btrs ? binomial_btrs(stream, count, p) : binomial_inversion(stream, count, p);
  return flip ? count - k : k;
}

}  // namespace

Status fill_binomial(const PhiloxState& start, const TensorImpl& counts, const TensorImpl& probs,
                     int64_t samples_per_batch, TensorImpl& out) {
  const int64_t batches = counts.num_elements();
  std::atomic<bool> nan_into_int{false};
  bool ok = visit_dtype<kFloatTypes | kIndexTypes>(counts.dtype(), [&]<typename P>() {
    visit_dtype<kFloatTypes | kIndexTypes>(out.dtype(), [&]<typename T>() {
      const P* n = counts.data<P>();
      const P* pr = probs.data<P>();
      T* o = out.mutable_data<T>();
      parallel_for(batches * samples_per_batch, 512, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t b = i / samples_per_batch, s = i % samples_per_batch;
          // TF compares the probability in its own type before widening it.
          const double v = binomial_sample(start, i, static_cast<double>(n[b]), static_cast<double>(pr[b]));
          if constexpr (std::is_integral_v<T>) {
            if (std::isnan(v)) nan_into_int.store(true, std::memory_order_relaxed);
            o[s * batches + b] = std::isnan(v)   ? T{0}
                                 : std::isinf(v) ? std::numeric_limits<T>::max()
                                                 : static_cast<T>(v);
          } else if constexpr (std::is_same_v<T, double>) {
            o[s * batches + b] = v;
          } else {
            o[s * batches + b] = static_cast<T>(static_cast<float>(v));
          }
        }
      });
    });
  });
  if (!ok)
    return make_error(Code::kUnimplemented, "no binomial kernel for dtype ", dtype_name(counts.dtype()));
  if (nan_into_int.load())
    return invalid_argument("a binomial count or probability is NaN: no ", dtype_name(out.dtype()),
                            " can hold the draw");
  return Status::OK();
}

Status fill_gamma(const PhiloxState& start, const TensorImpl& alpha, int64_t samples_per_alpha,
                  TensorImpl& out) {
  bool ok = visit_dtype<kFloatTypes>(alpha.dtype(), [&]<typename T>() {
    (void)fill_per_param(start, alpha.data<T>(), alpha.num_elements(), samples_per_alpha,
                         out.mutable_data<T>(), &gamma_sample);
  });
  if (!ok) return make_error(Code::kUnimplemented, "no gamma kernel for dtype ", dtype_name(alpha.dtype()));
  return Status::OK();
}

Status fill_poisson(const PhiloxState& start, const TensorImpl& rate, int64_t samples_per_rate,
                    TensorImpl& out) {
  bool finite = true;
  bool ok = visit_dtype<kFloatTypes | kIndexTypes>(rate.dtype(), [&]<typename P>() {
    visit_dtype<kFloatTypes | kIndexTypes>(out.dtype(), [&]<typename T>() {
      finite = fill_per_param(start, rate.data<P>(), rate.num_elements(), samples_per_rate,
                              out.mutable_data<T>(), &poisson_sample);
    });
  });
  if (!finite)
    return invalid_argument("a Poisson rate is NaN: no ", dtype_name(out.dtype()), " can hold the draw");
  if (!ok) return make_error(Code::kUnimplemented, "no poisson kernel for dtype ", dtype_name(rate.dtype()));
  return Status::OK();
}

}  // namespace ember::kernels

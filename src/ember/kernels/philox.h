// Philox4x32-10 counter-based random number generator and the distributions TensorFlow builds on it.
//
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11; the Random123
// library) is a keyed bijection on 128-bit counters: block = philox(counter, key) gives four uint32.
// It is a pure function, so any block of a stream can be computed without computing the ones before
// it. That makes parallel fills trivial and deterministic: output group g is always generated from
// counter `start + g * stride`, whichever thread computes it (see philox_fill_groups).
//
// Bit compatibility with TensorFlow (CPU kernels, tensorflow/core/lib/random/ and
// tensorflow/core/kernels/random_op_cpu.h). Everything below reproduces TF's layout, so for the same
// (key, counter) ember produces the same numbers as TF:
//   * round function, multipliers, Weyl key increments and counter increment are the Random123 ones
//     (the Random123 known-answer vectors hold, see tests/cpp/kernels/philox_test.cc);
//   * a "group" is the set of outputs computed from one Philox draw:
//       uniform / normal float, float16, bfloat16, int32: 4 outputs from one block (one uint32 each,
//         two uint32 per Box-Muller pair);
//       uniform / normal double, int64: 2 outputs from one block (two uint32 each);
//     group g uses counter start + g (stride 1);
//   * truncated normal draws a variable number of uint32 (rejection), so each group gets its own
//     reserved sub-stream of 256 uint32 per output: group g starts at counter start + g * 256 for
//     float-like types (4 outputs per group) and start + g * 128 for double (2 outputs per group).
//     Rejection keeps drawing consecutive uint32 from that sub-stream, so the result depends only on
//     (key, start, g) and never on scheduling;
//   * a trailing partial group is computed in full and truncated;
//   * the [0,1) conversions use the mantissa trick: put random bits into the mantissa of a number in
//     [1,2) and subtract 1 (23 bits for float, 52 for double, 10 for float16, 7 for bfloat16). 0 is
//     possible, 1 is not;
//   * normals use Box-Muller exactly as TF does (u1 clamped to >= 1e-7, first output = r*sin(theta),
//     second = r*cos(theta)); float16/bfloat16 normals are computed in float and rounded (RNE).
//     Normals are bit-identical to TF as long as the libm (logf/sinf/cosf/log/sin/cos) is the same;
//   * uniform integers are lo + (bits mod (hi - lo)) like TF's UniformDistribution<int32/int64>. This
//     has a modulo bias of at most (hi-lo)/2^32 (int32) or (hi-lo)/2^64 (int64); TF accepts it, and so
//     do we, for compatibility.
//
// Header-only; no dependencies beyond the standard library and ember/core/half.h.
#pragma once

#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <type_traits>
#include <utility>

#include "ember/core/half.h"

namespace ember::kernels {

using PhiloxKey = std::array<uint32_t, 2>;      // 64-bit key as two words, low word first
using PhiloxCounter = std::array<uint32_t, 4>;  // 128-bit counter, word 0 least significant
using PhiloxBlock = std::array<uint32_t, 4>;    // one output block (4 x 32 random bits)

inline constexpr uint32_t kPhiloxM4x32A = 0xD2511F53u;  // multiplier applied to counter word 0
inline constexpr uint32_t kPhiloxM4x32B = 0xCD9E8D57u;  // multiplier applied to counter word 2
inline constexpr uint32_t kPhiloxW32A = 0x9E3779B9u;    // Weyl increment of key word 0 (golden ratio)
inline constexpr uint32_t kPhiloxW32B = 0xBB67AE85u;    // Weyl increment of key word 1 (sqrt(3) - 1)
inline constexpr int kPhiloxRounds = 10;

/// The Philox4x32-10 bijection: the block for `counter` under `key`. Pure and constexpr.
[[nodiscard]] constexpr PhiloxBlock philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {  // the key is bumped between rounds: 10 rounds, 9 bumps
      key[0] += kPhiloxW32A;
      key[1] += kPhiloxW32B;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM4x32A) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM4x32B) * ctr[2];
    ctr = PhiloxCounter{static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
                        static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return ctr;
}

/// counter + n as 128-bit integers (wrapping at 2^128). Block i of a stream starting at `c` is
/// philox4x32_10(philox_skip(c, i), key).
[[nodiscard]] constexpr PhiloxCounter philox_skip(PhiloxCounter c, uint64_t n) {
  const uint64_t low = (static_cast<uint64_t>(c[1]) << 32) | c[0];
  const uint64_t sum = low + n;
  c[0] = static_cast<uint32_t>(sum);
  c[1] = static_cast<uint32_t>(sum >> 32);
  if (sum < low && ++c[2] == 0) ++c[3];  // carry into the high 64 bits
  return c;
}

/// A (key, counter) pair: the start of a Philox stream.
struct PhiloxState {
  PhiloxKey key{};
  PhiloxCounter counter{};
  friend constexpr bool operator==(const PhiloxState&, const PhiloxState&) = default;
};

[[nodiscard]] constexpr PhiloxState philox_skip(const PhiloxState& s, uint64_t n) {
  return PhiloxState{s.key, philox_skip(s.counter, n)};
}

/// Sequential reader over a stream: blocks, or single uint32 words (in block order, word 0 first).
class PhiloxStream {
 public:
  constexpr PhiloxStream() = default;
  constexpr explicit PhiloxStream(const PhiloxState& s) : key_(s.key), counter_(s.counter) {}
  constexpr PhiloxStream(const PhiloxKey& key, const PhiloxCounter& counter) : key_(key), counter_(counter) {}

  /// The next block; advances the counter by one.
  constexpr PhiloxBlock next_block() {
    PhiloxBlock b = philox4x32_10(counter_, key_);
    counter_ = philox_skip(counter_, 1);
    return b;
  }
  /// The next 32-bit word. Words are taken from blocks in order; a new block is drawn when the
  /// buffered one is used up (like TF's SingleSampleAdapter).
  constexpr uint32_t next_u32() {
    if (used_ == 4) {
      buffer_ = next_block();
      used_ = 0;
    }
    return buffer_[used_++];
  }
  /// Skips n whole blocks (drops any partly used block).
  constexpr void skip_blocks(uint64_t n) {
    counter_ = philox_skip(counter_, n);
    used_ = 4;
  }
  constexpr const PhiloxKey& key() const { return key_; }
  /// The counter of the next block to be drawn.
  constexpr const PhiloxCounter& counter() const { return counter_; }

 private:
  PhiloxKey key_{};
  PhiloxCounter counter_{};
  PhiloxBlock buffer_{};
  int used_ = 4;
};

// ------------------------------------------------------------------------------------------------
// Bits -> [0,1) (mantissa trick) and Box-Muller, exactly as TF computes them.

/// 23 random bits -> float in [0,1): (bits of 1.m) - 1.
[[nodiscard]] inline float philox_u32_to_float01(uint32_t x) {
  return std::bit_cast<float>((127u << 23) | (x & 0x7fffffu)) - 1.0f;
}
/// 52 random bits (20 from hi, 32 from lo) -> double in [0,1).
[[nodiscard]] inline double philox_u64_to_double01(uint32_t hi, uint32_t lo) {
  const uint64_t man = (static_cast<uint64_t>(hi & 0xfffffu) << 32) | lo;
  return std::bit_cast<double>((uint64_t{1023} << 52) | man) - 1.0;
}
/// 10 random bits (the low bits of x) -> float16 in [0,1). Exact: the value is m / 1024.
[[nodiscard]] inline float16 philox_u16_to_half01(uint32_t x) {
  return float16(static_cast<float>(x & 0x3ffu) * (1.0f / 1024.0f));
}
/// 7 random bits (the low bits of x) -> bfloat16 in [0,1). Exact: the value is m / 128.
[[nodiscard]] inline bfloat16 philox_u16_to_bfloat16_01(uint32_t x) {
  return bfloat16(static_cast<float>(x & 0x7fu) * (1.0f / 128.0f));
}

/// Two uint32 -> two independent standard normal floats (f0 = r sin t, f1 = r cos t).
inline void philox_box_muller(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  float u1 = philox_u32_to_float01(x0);
  if (u1 < 1.0e-7f) u1 = 1.0e-7f;  // keep log() finite
  // TF writes `2.0f * M_PI * u` : the product is formed in double, then rounded to float.
  const float v1 =
      static_cast<float>(2.0 * std::numbers::pi * static_cast<double>(philox_u32_to_float01(x1)));
  const float r = std::sqrt(-2.0f * std::log(u1));  // float overloads, like TF
  *f0 = std::sin(v1) * r;
  *f1 = std::cos(v1) * r;
}
/// Four uint32 -> two independent standard normal doubles.
inline void philox_box_muller(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double* d0, double* d1) {
  double u1 = philox_u64_to_double01(x0, x1);
  if (u1 < 1.0e-7) u1 = 1.0e-7;
  const double v1 = 2.0 * std::numbers::pi * philox_u64_to_double01(x2, x3);
  const double r = std::sqrt(-2.0 * std::log(u1));
  *d0 = std::sin(v1) * r;
  *d1 = std::cos(v1) * r;
}

namespace philox_detail {
template <typename T>
inline constexpr bool is_float_like_v =
    std::is_same_v<T, float> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <typename T>
inline constexpr bool is_real_v = is_float_like_v<T> || std::is_same_v<T, double>;
template <typename T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, float>) {
    return f;
  } else {
    return T(f);  // float16 / bfloat16: round to nearest even
  }
}
}  // namespace philox_detail

// ------------------------------------------------------------------------------------------------
// Distributions. Each maps the stream region of one group to kGroupSize outputs:
//   static constexpr int kGroupSize;          outputs per group
//   static constexpr uint64_t kCounterStride;  blocks between the starts of consecutive groups
//   void generate(const PhiloxKey&, const PhiloxCounter& group_start, T* out, int count) const;
//     writes the first `count` (<= kGroupSize) outputs of the group.

/// Uniform [0,1) for float, double, float16, bfloat16.
template <typename T>
struct PhiloxUniform {
  static_assert(philox_detail::is_real_v<T>,
                "PhiloxUniform<T>: T must be float, double, float16 or bfloat16");
  using value_type = T;
  static constexpr int kGroupSize = std::is_same_v<T, double> ? 2 : 4;
  static constexpr uint64_t kCounterStride = 1;

  void generate(const PhiloxKey& key, const PhiloxCounter& ctr, T* out, int count) const {
    const PhiloxBlock b = philox4x32_10(ctr, key);
    for (int i = 0; i < count; ++i) {
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

/// Standard normal N(0,1) via Box-Muller, for float, double, float16, bfloat16.
template <typename T>
struct PhiloxNormal {
  static_assert(philox_detail::is_real_v<T>, "PhiloxNormal<T>: T must be float, double, float16 or bfloat16");
  using value_type = T;
  static constexpr int kGroupSize = std::is_same_v<T, double> ? 2 : 4;
  static constexpr uint64_t kCounterStride = 1;

  void generate(const PhiloxKey& key, const PhiloxCounter& ctr, T* out, int count) const {
    const PhiloxBlock b = philox4x32_10(ctr, key);
    if constexpr (std::is_same_v<T, double>) {
      double d[2];
      philox_box_muller(b[0], b[1], b[2], b[3], &d[0], &d[1]);
      for (int i = 0; i < count; ++i) out[i] = d[i];
    } else {
      float f[4];
      philox_box_muller(b[0], b[1], &f[0], &f[1]);
      philox_box_muller(b[2], b[3], &f[2], &f[3]);
      for (int i = 0; i < count; ++i) out[i] = philox_detail::from_float<T>(f[i]);
    }
  }
};

/// Standard normal truncated to (-2, 2): Box-Muller pairs are drawn from consecutive words of the
/// group's sub-stream and values with |x| >= 2 are rejected (the next pair is drawn), so results are
/// in the open interval (-2, 2) and deterministic per group.
template <typename T>
struct PhiloxTruncatedNormal {
  static_assert(philox_detail::is_real_v<T>,
                "PhiloxTruncatedNormal<T>: T must be float, double, float16 or bfloat16");
  using value_type = T;
  static constexpr int kGroupSize = std::is_same_v<T, double> ? 2 : 4;
  /// 256 reserved uint32 per output (TF's kReservedSamplesPerOutput), 4 uint32 per block.
  static constexpr uint64_t kReservedWordsPerOutput = 256;
  static constexpr uint64_t kCounterStride = kGroupSize * kReservedWordsPerOutput / 4;

  void generate(const PhiloxKey& key, const PhiloxCounter& ctr, T* out, int count) const {
    PhiloxStream s(key, ctr);
    T res[kGroupSize];
    int n = 0;
    while (true) {
      if constexpr (std::is_same_v<T, double>) {
        const uint32_t x0 = s.next_u32(), x1 = s.next_u32(), x2 = s.next_u32(), x3 = s.next_u32();
        double d[2];
        philox_box_muller(x0, x1, x2, x3, &d[0], &d[1]);
        for (double v : d) {
          if (std::fabs(v) < 2.0) {
            res[n++] = v;
            if (n == kGroupSize) goto done;
          }
        }
      } else {
        const uint32_t x0 = s.next_u32(), x1 = s.next_u32();
        float f[2];
        philox_box_muller(x0, x1, &f[0], &f[1]);
        for (float v : f) {
          if (std::fabs(v) < 2.0f) {
            res[n++] = philox_detail::from_float<T>(v);
            if (n == kGroupSize) goto done;
          }
        }
      }
    }
  done:
    for (int i = 0; i < count; ++i) out[i] = res[i];
  }
};

/// Uniform integers in [lo, hi) for int32_t / int64_t: lo + (bits mod (hi - lo)). Requires lo < hi.
template <typename T>
struct PhiloxUniformInt {
  static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>,
                "PhiloxUniformInt<T>: int32 or int64");
  using value_type = T;
  using U = std::make_unsigned_t<T>;
  static constexpr int kGroupSize = std::is_same_v<T, int64_t> ? 2 : 4;
  static constexpr uint64_t kCounterStride = 1;

  PhiloxUniformInt(T lo, T hi) : lo_(lo), range_(static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo))) {
    assert(lo < hi && "PhiloxUniformInt needs lo < hi");
  }

  void generate(const PhiloxKey& key, const PhiloxCounter& ctr, T* out, int count) const {
    const PhiloxBlock b = philox4x32_10(ctr, key);
    for (int i = 0; i < count; ++i) {
      U bits;
      if constexpr (std::is_same_v<T, int64_t>) {
        bits = static_cast<U>(b[2 * i]) | (static_cast<U>(b[2 * i + 1]) << 32);
      } else {
        bits = b[i];
      }
      // Modular arithmetic in the unsigned type; the result is in [lo, hi) so it converts exactly.
      out[i] = static_cast<T>(static_cast<U>(static_cast<U>(lo_) + bits % range_));
    }
  }

  T lo() const { return lo_; }
  U range() const { return range_; }

 private:
  T lo_;
  U range_;
};

/// Raw random bits over the whole range of int32/uint32 (one word each) or int64/uint64 (two words,
/// low word first), like TF's UniformFullIntDistribution (stateless_random_uniform_full_int).
template <typename T>
struct PhiloxFullInt {
  static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, uint64_t>,
                "PhiloxFullInt<T>: T must be a 32- or 64-bit integer");
  using value_type = T;
  static constexpr int kGroupSize = sizeof(T) == 8 ? 2 : 4;
  static constexpr uint64_t kCounterStride = 1;

  void generate(const PhiloxKey& key, const PhiloxCounter& ctr, T* out, int count) const {
    const PhiloxBlock b = philox4x32_10(ctr, key);
    for (int i = 0; i < count; ++i) {
      if constexpr (sizeof(T) == 8) {
        out[i] =
            static_cast<T>(static_cast<uint64_t>(b[2 * i]) | (static_cast<uint64_t>(b[2 * i + 1]) << 32));
      } else {
        out[i] = static_cast<T>(b[i]);
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------
// Filling buffers. Output element e belongs to group e / kGroupSize; group g is generated from
// counter start + g * kCounterStride. Filling any partition of [0, num_groups) in any order or in
// parallel gives the same buffer as one serial fill.

/// Number of groups covering n outputs.
template <class Dist>
[[nodiscard]] constexpr int64_t philox_num_groups(int64_t n) {
  return (n + Dist::kGroupSize - 1) / Dist::kGroupSize;
}

/// Number of counter values (blocks) a fill of n outputs may touch, measured from the start counter:
/// num_groups * kCounterStride. A caller chaining fills on one stream without TF's reservation rule
/// can advance by this much to keep regions disjoint. (For truncated normal this is the reserved
/// region; rejection running past it needs >1020 rejections out of 1024 draws: never in practice, and
/// still deterministic.)
template <class Dist>
[[nodiscard]] constexpr uint64_t philox_blocks_for(int64_t n) {
  return static_cast<uint64_t>(philox_num_groups<Dist>(n)) * Dist::kCounterStride;
}

/// Fills the outputs of groups [group_begin, group_end) of an n-element buffer `out` (the full
/// buffer's base pointer; only the group's elements are written).
template <class Dist, typename T = typename Dist::value_type>
void philox_fill_groups(const Dist& dist, const PhiloxState& start, T* out, int64_t n, int64_t group_begin,
                        int64_t group_end) {
  constexpr int G = Dist::kGroupSize;
  if (group_end > philox_num_groups<Dist>(n)) group_end = philox_num_groups<Dist>(n);
  if (group_begin >= group_end) return;
  PhiloxCounter ctr = philox_skip(start.counter, static_cast<uint64_t>(group_begin) * Dist::kCounterStride);
  for (int64_t g = group_begin; g < group_end; ++g) {
    const int64_t offset = g * G;
    const int count = static_cast<int>(n - offset < G ? n - offset : G);
    dist.generate(start.key, ctr, out + offset, count);
    ctr = philox_skip(ctr, Dist::kCounterStride);
  }
}

/// Serial fill of n outputs.
template <class Dist, typename T = typename Dist::value_type>
void philox_fill(const Dist& dist, const PhiloxState& start, T* out, int64_t n) {
  philox_fill_groups(dist, start, out, n, 0, philox_num_groups<Dist>(n));
}

/// Parallel fill: `parallel_for(num_groups, fn)` must call fn(begin, end) over a partition of
/// [0, num_groups) (any partition, any order, any threads). The result equals philox_fill.
template <class Dist, class ParallelFor, typename T = typename Dist::value_type>
void philox_fill_parallel(const Dist& dist, const PhiloxState& start, T* out, int64_t n,
                          ParallelFor&& parallel_for) {
  const int64_t groups = philox_num_groups<Dist>(n);
  if (groups == 0) return;
  std::forward<ParallelFor>(parallel_for)(groups, [&dist, &start, out, n](int64_t begin, int64_t end) {
    philox_fill_groups(dist, start, out, n, begin, end);
  });
}

// Convenience serial fills.
template <typename T>
void fill_uniform(const PhiloxState& start, T* out, int64_t n) {
  philox_fill(PhiloxUniform<T>{}, start, out, n);
}
template <typename T>
void fill_normal(const PhiloxState& start, T* out, int64_t n) {
  philox_fill(PhiloxNormal<T>{}, start, out, n);
}
template <typename T>
void fill_truncated_normal(const PhiloxState& start, T* out, int64_t n) {
  philox_fill(PhiloxTruncatedNormal<T>{}, start, out, n);
}
/// Uniform integers in [lo, hi); requires lo < hi.
template <typename T>
void fill_uniform_int(const PhiloxState& start, T* out, int64_t n, T lo, T hi) {
  philox_fill(PhiloxUniformInt<T>(lo, hi), start, out, n);
}

}  // namespace ember::kernels

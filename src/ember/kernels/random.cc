#include "ember/kernels/random.h"

#include <algorithm>
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

}  // namespace ember::kernels

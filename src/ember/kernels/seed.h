// TensorFlow 2 random-seed semantics: global seed + op seed -> (seed, seed2) -> Philox key/counter.
//
// ------------------------------------------------------------------------------------------------
// The rules (tensorflow/python/framework/random_seed.py `get_seed`, python/eager/context.py;
// checked against TF 2.21 `tf.compat.v1.random.get_seed`):
//
//   MAXINT32 = 2^31 - 1, DEFAULT_GRAPH_SEED = 87654321, truncate(s) = s mod MAXINT32 (Python modulo,
//   so the result is in [0, MAXINT32) even for negative s).
//
//   global seed set,  op seed set   -> (truncate(global), truncate(op))
//   global seed set,  op seed None  -> (truncate(global), truncate(op')) where op' is drawn from an
//                                      internal sequence that set_seed() restarts:
//                                        eager:  op' = py_rng.randint(0, MAXINT32), with
//                                                py_rng = Python random.Random(global) created by
//                                                set_seed (CPython MT19937, seeded by |global|);
//                                                e.g. set_seed(1) gives 577090037, 271041745,
//                                                1095513148, ...
//                                        graph / tf.function: op' = 0, 1, 2, ... per graph, and a
//                                                tf.function's graph takes the global seed current
//                                                when it is traced (so every traced function sees
//                                                the same sequence).
//   global seed None, op seed set   -> (DEFAULT_GRAPH_SEED, truncate(op))
//   global seed None, op seed None  -> (None, None): the kernel seeds itself from the OS, i.e.
//                                      nondeterministic. Represented here as (0, 0). If op
//                                      determinism is enabled this is an error instead.
//   Finally (0, 0) coming from real seeds is replaced by (0, MAXINT32), because the C++ kernels read
//   (0, 0) as "nondeterministic" (e.g. set_seed(0) with op seed 0, or set_seed(MAXINT32)).
//
// Stateful ops in eager mode (tf.random.uniform / normal / truncated_normal, uniform int, ...):
//   The (seed, seed2) pair becomes the kernel's attributes. Eager TF caches one kernel instance per
//   (op type, attributes: dtype, seed, seed2, ...) and each instance owns a Philox stream:
//       key     = seed  (low word, high word)
//       counter = {0, 0, low(seed2), high(seed2)}
//   and every execution of size N reserves N * 256 blocks of that stream (TF's
//   ReserveRandomOutputs(N, 256)), i.e. the k-th call starts at counter + (sum of earlier N) * 256.
//   Consequences (all verified against TF 2.21):
//     tf.random.set_seed(1); a = tf.random.uniform([2], seed=5); b = tf.random.uniform([2], seed=5)
//       -> a != b (same kernel, counter moved by 512), but calling set_seed(1) again, or re-running
//          the program, reproduces a then b: set_seed clears the kernel cache, resetting counters.
//     The shape is an input, not an attribute, so uniform([2], seed=5) and uniform([3], seed=5)
//       share a stream (so do different minval/maxval for float uniform, applied after the kernel);
//       a different op type (normal vs uniform) or dtype (float32 vs float64) gets its own stream.
//     With op seed None each call gets a fresh op seed from the sequence above, so it gets a fresh
//       stream starting at offset 0.
//     Inside a tf.function every random op node has its own kernel, hence its own stream, which
//       persists across calls of the function (foo() -> (A1, A1), then (A2, A2)); use a per-node
//       kernel id for that.
//   SeedState::stateful_call() keeps exactly this state: a map (kernel id, seed, seed2) -> stream
//   offset, cleared by set_seed()/unset_seed().
//
// Stateless ops (tf.random.stateless_uniform(shape, seed=[s0, s1]) etc., Philox / "auto_select" on
//   CPU): no state at all. The seed pair is scrambled by one Philox evaluation
//   (StatelessRandomGetKeyCounter / GenerateKey in TF):
//       m = philox4x32_10(counter = {lo(s0), hi(s0), lo(s1), hi(s1)}, key = {0x3ec8f720, 0x02461e29})
//       key = {m[0], m[1]},  counter = {0, 0, m[2], m[3]}
//   where s0, s1 are sign-extended to 64 bits (int32 and int64 seed tensors behave the same). The
//   op then fills from that (key, counter) with the distributions of philox.h, starting at group 0.
// ------------------------------------------------------------------------------------------------
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "ember/kernels/philox.h"

namespace ember::kernels {

inline constexpr int64_t kMaxInt32Seed = 2147483647;      // TF's _MAXINT32 (2^31 - 1)
inline constexpr int64_t kDefaultGraphSeed = 87654321;    // TF's DEFAULT_GRAPH_SEED
inline constexpr int64_t kStatefulBlocksPerOutput = 256;  // TF's ReserveRandomOutputs multiplier

/// TF's _truncate_seed: Python `seed % (2^31 - 1)`, always in [0, 2^31 - 1).
[[nodiscard]] constexpr int64_t truncate_seed(int64_t seed) {
  const int64_t r = seed % kMaxInt32Seed;
  return r < 0 ? r + kMaxInt32Seed : r;
}

/// The (seed, seed2) attribute pair of a random op. (0, 0) means "no seed": nondeterministic.
struct SeedPair {
  int64_t seed = 0;
  int64_t seed2 = 0;
  [[nodiscard]] constexpr bool nondeterministic() const { return seed == 0 && seed2 == 0; }
  friend constexpr bool operator==(const SeedPair&, const SeedPair&) = default;
};

/// Philox stream of a stateful kernel with attributes (seed, seed2): key = seed, counter words 2..3
/// = seed2 (TF's PhiloxRandom(seed_lo, seed_hi)). Not meaningful for (0, 0).
[[nodiscard]] constexpr PhiloxState philox_state_from_seeds(int64_t seed, int64_t seed2) {
  const auto s = static_cast<uint64_t>(seed), s2 = static_cast<uint64_t>(seed2);
  return PhiloxState{{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)},
                     {0u, 0u, static_cast<uint32_t>(s2), static_cast<uint32_t>(s2 >> 32)}};
}
[[nodiscard]] constexpr PhiloxState philox_state_from_seeds(const SeedPair& p) {
  return philox_state_from_seeds(p.seed, p.seed2);
}

inline constexpr PhiloxKey kStatelessScrambleKey = {0x3ec8f720u, 0x02461e29u};

/// Stateless ops: seed=[s0, s1] -> the (key, counter) to fill from. Pure function, see header comment.
[[nodiscard]] constexpr PhiloxState stateless_philox_state(int64_t s0, int64_t s1) {
  const auto a = static_cast<uint64_t>(s0), b = static_cast<uint64_t>(s1);
  const PhiloxBlock m = philox4x32_10({static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32),
                                       static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)},
                                      kStatelessScrambleKey);
  return PhiloxState{{m[0], m[1]}, {0u, 0u, m[2], m[3]}};
}

/// A small stable id for the stream map: FNV-1a of the op type, mixed with a dtype tag (and any other
/// attribute that makes TF create a distinct kernel). Eager ops of the same type and dtype with the
/// same (seed, seed2) share a stream; graph executors should pass a per-node id instead.
[[nodiscard]] constexpr uint64_t random_kernel_id(std::string_view op_type, uint64_t dtype_tag = 0) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : op_type) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; ++i) {
    h ^= (dtype_tag >> (8 * i)) & 0xffu;
    h *= 0x100000001b3ull;
  }
  return h;
}

/// CPython's `random.Random(n).randint(0, 2**31 - 1)` sequence for an integer seed n: MT19937 seeded
/// with init_by_array over the 32-bit words of |n| (little-endian, at least one word), randint via
/// getrandbits(32) with rejection of values >= 2^31. This is where eager TF gets op seeds from when
/// only the global seed is set.
class PyRandomOpSeeds {
 public:
  explicit PyRandomOpSeeds(int64_t seed = 0) { reseed(seed); }

  void reseed(int64_t seed) {
    const uint64_t mag = seed < 0 ? 0 - static_cast<uint64_t>(seed) : static_cast<uint64_t>(seed);
    const uint32_t key[2] = {static_cast<uint32_t>(mag), static_cast<uint32_t>(mag >> 32)};
    init_by_array(key, (mag >> 32) != 0 ? 2 : 1);
  }

  /// Python randint(0, 2^31 - 1): uniform on [0, 2^31).
  int64_t next() {
    uint32_t r;
    do r = genrand_u32();
    while (r >= 0x80000000u);
    return r;
  }

 private:
  static constexpr int N = 624, M = 397;

  void init_genrand(uint32_t s) {
    mt_[0] = s;
    for (int i = 1; i < N; ++i)
      mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    mti_ = N;
  }
  void init_by_array(const uint32_t* key, int len) {
    init_genrand(19650218u);
    int i = 1, j = 0;
    for (int k = (N > len ? N : len); k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
      ++i;
      ++j;
      if (i >= N) {
        mt_[0] = mt_[N - 1];
        i = 1;
      }
      if (j >= len) j = 0;
    }
    for (int k = N - 1; k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
      ++i;
      if (i >= N) {
        mt_[0] = mt_[N - 1];
        i = 1;
      }
    }
    mt_[0] = 0x80000000u;
    mti_ = N;
  }
  uint32_t genrand_u32() {
    if (mti_ >= N) {
      for (int k = 0; k < N; ++k) {
        const uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % N] & 0x7fffffffu);
        mt_[k] = mt_[(k + M) % N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
      }
      mti_ = 0;
    }
    uint32_t y = mt_[mti_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  std::array<uint32_t, N> mt_{};
  int mti_ = N;
};

/// Seed state of a graph (or traced function): its graph-level seed (copied from the global seed when
/// the function is traced) and the counter that supplies op seeds when the op has none.
class GraphSeedState {
 public:
  explicit GraphSeedState(std::optional<int64_t> graph_seed = std::nullopt) : seed_(graph_seed) {}

  std::optional<int64_t> graph_seed() const { return seed_; }

  /// tf.random.get_seed inside this graph (not thread-safe; graphs are built by one thread).
  SeedPair get_seed(std::optional<int64_t> op_seed, bool op_determinism = false) {
    if (seed_) {
      const int64_t op = op_seed ? *op_seed : next_op_seed_++;
      return fix_zero({truncate_seed(*seed_), truncate_seed(op)});
    }
    if (op_seed) return fix_zero({kDefaultGraphSeed, truncate_seed(*op_seed)});
    if (op_determinism) throw_determinism_error();
    return {};
  }

  static constexpr SeedPair fix_zero(SeedPair p) {
    return (p.seed == 0 && p.seed2 == 0) ? SeedPair{0, kMaxInt32Seed} : p;
  }
  [[noreturn]] static void throw_determinism_error() {
    throw std::runtime_error(
        "Random ops require a seed to be set when determinism is enabled. Please set a seed before running "
        "the op, e.g. by calling tf.random.set_seed(1).");
  }

 private:
  std::optional<int64_t> seed_;
  int64_t next_op_seed_ = 0;
};

/// Process-wide eager seed state (TF's eager context seed + the stateful kernels' counters).
/// All methods are thread-safe.
class SeedState {
 public:
  SeedState() = default;
  SeedState(const SeedState&) = delete;
  SeedState& operator=(const SeedState&) = delete;

  /// The instance the runtime uses (like TF's global eager context).
  static SeedState& global() {
    static SeedState state;
    return state;
  }

  /// tf.random.set_seed(seed): sets the global seed, restarts the op-seed sequence and resets every
  /// stateful kernel stream.
  void set_seed(int64_t seed) {
    std::lock_guard<std::mutex> lock(mu_);
    global_seed_ = seed;
    op_seeds_.reseed(seed);
    streams_.clear();
    ++generation_;
  }

  /// tf.random.set_seed(None): back to nondeterministic; also resets the kernel streams.
  void unset_seed() {
    std::lock_guard<std::mutex> lock(mu_);
    global_seed_.reset();
    streams_.clear();
    ++generation_;
  }

  std::optional<int64_t> global_seed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return global_seed_;
  }

  /// Incremented by every set_seed/unset_seed (lets callers invalidate caches keyed on seeds).
  uint64_t generation() const {
    std::lock_guard<std::mutex> lock(mu_);
    return generation_;
  }

  /// tf.config.experimental.enable_op_determinism(): unseeded random ops become an error.
  void set_op_determinism(bool enabled) {
    std::lock_guard<std::mutex> lock(mu_);
    op_determinism_ = enabled;
  }
  bool op_determinism() const {
    std::lock_guard<std::mutex> lock(mu_);
    return op_determinism_;
  }

  /// tf.random.get_seed(op_seed) in eager mode. Consumes one op seed from the sequence when the
  /// global seed is set and op_seed is empty. Throws std::runtime_error for (None, None) when op
  /// determinism is enabled.
  SeedPair get_seed(std::optional<int64_t> op_seed) {
    std::lock_guard<std::mutex> lock(mu_);
    if (global_seed_) {
      const int64_t op = op_seed ? *op_seed : op_seeds_.next();
      return GraphSeedState::fix_zero({truncate_seed(*global_seed_), truncate_seed(op)});
    }
    if (op_seed) return GraphSeedState::fix_zero({kDefaultGraphSeed, truncate_seed(*op_seed)});
    if (op_determinism_) GraphSeedState::throw_determinism_error();
    return {};
  }

  /// Seed state for a function being traced now: its graph seed is the current global seed.
  GraphSeedState new_graph_seed_state() const { return GraphSeedState(global_seed()); }

  /// One execution of a stateful random kernel producing `num_outputs` values: returns the Philox
  /// (key, counter) to fill from (group 0 at that counter, see philox.h) and advances the kernel's
  /// stream by num_outputs * 256 blocks, like TF. The stream of (kernel_id, seeds) starts at
  /// philox_state_from_seeds(seeds); for (0, 0) it starts at a random key and counter (from
  /// std::random_device), as TF's kernels seed themselves from the OS. set_seed/unset_seed reset all
  /// streams.
  PhiloxState stateful_call(uint64_t kernel_id, const SeedPair& seeds, int64_t num_outputs) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_tuple(kernel_id, seeds.seed, seeds.seed2);
    auto it = streams_.find(key);
    if (it == streams_.end()) {
      PhiloxState start;
      if (seeds.nondeterministic()) {
        std::random_device rd;
        start = philox_state_from_seeds(random_nonzero64(rd), random_nonzero64(rd));
      } else {
        start = philox_state_from_seeds(seeds);
      }
      it = streams_.emplace(key, start).first;
    }
    const PhiloxState out = it->second;
    it->second = philox_skip(it->second, static_cast<uint64_t>(num_outputs) * kStatefulBlocksPerOutput);
    return out;
  }

  /// Like stateful_call, but the stream advances by `blocks` (TF's ReserveSamples128, used by the kernels
  /// that do not reserve 256 blocks per output: RandomShuffle, Multinomial's per-sample counts).
  PhiloxState stateful_call_blocks(uint64_t kernel_id, const SeedPair& seeds, uint64_t blocks) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_tuple(kernel_id, seeds.seed, seeds.seed2);
    auto it = streams_.find(key);
    if (it == streams_.end()) {
      PhiloxState start;
      if (seeds.nondeterministic()) {
        std::random_device rd;
        start = philox_state_from_seeds(random_nonzero64(rd), random_nonzero64(rd));
      } else {
        start = philox_state_from_seeds(seeds);
      }
      it = streams_.emplace(key, start).first;
    }
    const PhiloxState out = it->second;
    it->second = philox_skip(it->second, blocks);
    return out;
  }

  /// Convenience: get_seed(op_seed) followed by stateful_call, i.e. one eager call of a stateful
  /// random op, e.g. tf.random.uniform(shape, seed=op_seed, dtype=float32) ->
  ///   eager_stateful_call(random_kernel_id("RandomUniform", dtype), op_seed, num_elements(shape)).
  PhiloxState eager_stateful_call(uint64_t kernel_id, std::optional<int64_t> op_seed, int64_t num_outputs) {
    const SeedPair seeds = get_seed(op_seed);
    return stateful_call(kernel_id, seeds, num_outputs);
  }

  /// Number of live kernel streams (for tests / diagnostics).
  size_t num_streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_.size();
  }

 private:
  static int64_t random_nonzero64(std::random_device& rd) {
    const uint64_t v = (static_cast<uint64_t>(rd()) << 32) | rd();
    return static_cast<int64_t>(v | 1u);  // never (0, 0)
  }

  mutable std::mutex mu_;
  std::optional<int64_t> global_seed_;
  PyRandomOpSeeds op_seeds_;
  bool op_determinism_ = false;
  uint64_t generation_ = 0;
  std::map<std::tuple<uint64_t, int64_t, int64_t>, PhiloxState> streams_;
};

}  // namespace ember::kernels

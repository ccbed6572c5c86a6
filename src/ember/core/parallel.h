// Intra-op parallelism. ember has one thread pool, OpenMP's, shared with oneDNN (two pools on two cores
// lose several times over to spinning workers: architecture.md §9). Work below a grain runs inline on the
// caller, and every threshold that decides whether work goes parallel is here (Note [Parallel grain]);
// docs/threads.md describes the policy as a whole.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember {

// Note [Parallel grain]
// A parallel region costs more than its hand-off when anything else runs on the machine: a woken worker
// waits for a core, and the region's end waits for the slowest thread, so a region of a few microseconds
// becomes one of milliseconds when the worker was descheduled (measured on the 2-core Zen 4: a 64x64 fused
// chain went from 15 us to 0.6-2 ms per call beside a second busy process, an LSTM step from 18 to 385 ms).
// Measured on this machine while other processes kept it busy, two threads never beat one below ~0.5 ms
// of work (tanh over 1M floats: 416 us on one thread, 445 on two; a 64x784x256 product 229 vs 257 us);
// alone, two threads win from a few tens of microseconds. So work goes parallel only from ~50-100 us:
// solo, large work still uses every core; beside others, the small and medium work of a step (an LSTM's
// cells, a 64x64 function) stays on the caller and cannot wait for anyone. Costs are in the kernels'
// cost units ("cycles"; measured ~0.05 ns each for tanh, ~0.15 for a memory-bound add).

/// parallel_for runs inline below this much work in total (cost units): ~50 us of tanh, ~150 us of add.
inline constexpr int64_t kParallelMinCycles = int64_t{1} << 20;
/// Each thread of a parallel_for gets at least this much work (cost units).
inline constexpr int64_t kParallelCyclesPerThread = int64_t{1} << 19;
/// A matrix product (oneDNN primitive or dnnl_sgemm) with fewer multiply-adds than this runs on the
/// calling thread: 4M multiply-adds is ~80 us at the single-core sgemm rate (~50 G multiply-adds/s).
inline constexpr int64_t kParallelMinMatMulMacs = int64_t{1} << 22;
/// Executor inter-op parallelism (runtime/executor.cc): a plan runs on several threads only when its work
/// off the critical path is at least this many ns and its mid-sized nodes (between the two sizes below)
/// add up to as much; nodes above the large size already use every core through intra-op parallelism.
inline constexpr double kInterOpMinParallelNs = 50e3;
inline constexpr double kInterOpMediumNodeNs = 2e3;
inline constexpr double kInterOpLargeNodeNs = 30e3;

/// Number of threads kernels may use.
int intra_op_threads();
void set_intra_op_threads(int n);
/// Number of threads a graph function's independent nodes may run on (0 = one per core). The executor's
/// workers are OpenMP threads too, and kernels they run stay on their thread: the two never nest.
int inter_op_threads();
void set_inter_op_threads(int n);

/// Threads worth using for `cycles` of work started from this thread: 1 below the grain or inside a
/// parallel region, else up to intra_op_threads(). The one rule for work handed to a library's own OpenMP
/// regions (oneDNN); parallel_for applies it itself.
int threads_for_cycles(int64_t cycles);
/// As threads_for_cycles, for a matrix product of `macs` multiply-adds.
int threads_for_matmul(int64_t macs);

/// Parallel regions started in this process by parallel_for, and those handed to oneDNN with more than
/// one thread by threads_for_matmul (a counter for tests: work below the grain must not move it).
int64_t parallel_regions_started();

/// Calls fn(begin, end) over [0, n) in contiguous chunks. `cost_per_item` is a rough count of cycles per
/// item; below kParallelMinCycles of total work the loop runs inline on the caller.
template <typename Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn);

namespace internal {
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
void parallel_for_impl(int64_t n, int64_t cost_per_item, RangeFn fn, void* ctx);
// n * cost, saturating: a product past int64 is simply "large".
inline int64_t total_cycles(int64_t n, int64_t cost) {
  int64_t total;
  return __builtin_mul_overflow(n, cost, &total) ? INT64_MAX : total;
}
}  // namespace internal

template <typename Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn) {
  if (n <= 0) return;
  if (n == 1 || internal::total_cycles(n, cost_per_item) < kParallelMinCycles) {
    fn(int64_t{0}, n);
    return;
  }
  internal::parallel_for_impl(
      n, cost_per_item,
      [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(b, e); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace ember

// Intra-op parallelism. ember has one thread pool, OpenMP's, shared with oneDNN (two pools on two cores
// lose several times over to spinning workers: architecture.md §9). Work below a grain runs inline on the
// caller, and every threshold that decides whether work goes parallel is here (Note [Parallel grain]);
// docs/threads.md describes the policy as a whole.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember {

// Note [Parallel grain]
// A parallel region pays for waking its workers, and its end waits for the slowest one. Measured on the
// 2-core Zen 4 (docs/threads.md has the table), two threads against one with the default short OpenMP
// spin: tanh over 16k floats (7 us) 1.5x, add over 64k (8 us) 1.3x, reduce_sum over 64k 0.7x and over
// 256k (14 us) 1.4x, a 64x16x256 product (262k multiply-adds, 6 us) 0.95x, 64x64x256 (1M, 20 us) 1.5x.
// So work goes parallel from where two threads win ~1.4x alone: ~256k cost units (the kernels' "cycles":
// ~0.05 ns each for tanh, ~0.12 for a memory-bound add) and 1M multiply-adds. A 64x64 fused chain stays
// on the caller. Beside other busy processes even large work loses on two threads (tanh over 1M floats:
// 416 us on one, 445 on two while the machine was busy), which is not a grain but a count: see Note [Cores
// others leave free] in parallel.cc.

/// parallel_for runs inline below this much work in total (cost units).
inline constexpr int64_t kParallelMinCycles = int64_t{1} << 18;
/// Each thread of a parallel_for gets at least this much work (cost units).
inline constexpr int64_t kParallelCyclesPerThread = int64_t{1} << 17;
/// A matrix product (oneDNN primitive or dnnl_sgemm), convolution or pooling with fewer multiply-adds
/// than this runs on the calling thread.
inline constexpr int64_t kParallelMinMatMulMacs = int64_t{1} << 20;
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
/// parallel region, else up to intra_op_threads() and the cores other processes leave free (Note [Cores
/// others leave free] in parallel.cc). The one rule for work handed to a library's own OpenMP
/// regions (oneDNN); parallel_for applies it itself.
int threads_for_cycles(int64_t cycles);
/// As threads_for_cycles, for a matrix product of `macs` multiply-adds.
int threads_for_matmul(int64_t macs);

/// Cores other processes have left free lately (measured every 100 ms; all of them until measured).
int cores_free_for_parallel_work();

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
/// Tests: pretend other processes keep `cores` cores busy (a negative value measures again).
void force_other_processes_load(double cores);
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

#include "ember/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

namespace ember {
namespace {
std::atomic<int> g_threads{0};
std::atomic<int> g_inter_op_threads{0};
std::atomic<int64_t> g_regions{0};
// OpenMP's thread count as the process started (OMP_NUM_THREADS or one per core), read once: kernels that
// hand small work to oneDNN set OpenMP's count to 1 for it, which must not become everyone's default.
const int g_default_threads = omp_get_max_threads();
}  // namespace

int inter_op_threads() {
  int n = g_inter_op_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_num_procs();
}

void set_inter_op_threads(int n) { g_inter_op_threads.store(n, std::memory_order_relaxed); }

int intra_op_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : g_default_threads;
}

void set_intra_op_threads(int n) {
  g_threads.store(n, std::memory_order_relaxed);
  if (n > 0) omp_set_num_threads(n);
}

int threads_for_cycles(int64_t cycles) {
  if (cycles < kParallelMinCycles || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<int64_t>(cycles / kParallelCyclesPerThread, 1, intra_op_threads()));
}

int threads_for_matmul(int64_t macs) {
  if (macs < kParallelMinMatMulMacs || omp_in_parallel()) return 1;
  const int threads = intra_op_threads();
  if (threads > 1) g_regions.fetch_add(1, std::memory_order_relaxed);  // oneDNN's region, started next
  return threads;
}

int64_t parallel_regions_started() { return g_regions.load(std::memory_order_relaxed); }

namespace internal {
// Note [Claimed pieces]
// With a fixed split, a region ends when its slowest thread has done its share, and beside another busy
// process that thread may not get a core for a scheduler slice (milliseconds). So the range is cut into a
// few pieces per thread (each at least half of kParallelCyclesPerThread) that threads take in turn: a
// descheduled worker delays the region only by the time it takes to show up and find nothing left, the
// caller having done its share meanwhile. Pieces stay contiguous ranges, which every caller expects.
void parallel_for_impl(int64_t n, int64_t cost_per_item, RangeFn fn, void* ctx) {
  int threads = static_cast<int>(std::min<int64_t>(threads_for_cycles(total_cycles(n, cost_per_item)), n));
  if (threads <= 1) {
    fn(ctx, 0, n);
    return;
  }
  g_regions.fetch_add(1, std::memory_order_relaxed);
  const int64_t per_piece = kParallelCyclesPerThread / 2;
  const int64_t pieces = std::clamp<int64_t>(total_cycles(n, cost_per_item) / per_piece, threads,
                                             std::min<int64_t>(n, 4 * int64_t{threads}));
  const int64_t chunk = (n + pieces - 1) / pieces;
  std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(threads)
  {
    for (int64_t p = next.fetch_add(1, std::memory_order_relaxed); p * chunk < n;
         p = next.fetch_add(1, std::memory_order_relaxed))
      fn(ctx, p * chunk, std::min(n, (p + 1) * chunk));
  }
}
}  // namespace internal

}  // namespace ember

#include "ember/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

namespace ember {
namespace {
std::atomic<int> g_threads{0};
std::atomic<int> g_inter_op_threads{0};
}  // namespace

int inter_op_threads() {
  int n = g_inter_op_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_num_procs();
}

void set_inter_op_threads(int n) { g_inter_op_threads.store(n, std::memory_order_relaxed); }

int intra_op_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

void set_intra_op_threads(int n) {
  g_threads.store(n, std::memory_order_relaxed);
  if (n > 0) omp_set_num_threads(n);
}

namespace internal {
void parallel_for_impl(int64_t n, int64_t cost_per_item, RangeFn fn, void* ctx) {
  int64_t max_by_work = std::max<int64_t>(1, n * cost_per_item / 32768);
  int threads = static_cast<int>(std::min<int64_t>({intra_op_threads(), max_by_work, n}));
  if (threads <= 1 || omp_in_parallel()) {
    fn(ctx, 0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) fn(ctx, b, e);
  }
}
}  // namespace internal

}  // namespace ember

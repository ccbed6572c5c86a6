#include "ember/core/float_env.h"

#include <omp.h>

#include <atomic>

namespace ember {

// Note [Where denormals flush]
// TensorFlow sets FTZ and DAZ in every thread that runs its kernels (its executor and thread pools hold a
// scoped guard), so ember sets them where its kernels run, at a cost a tiny op does not show:
// - On the calling thread, scoped: run_kernel (every eager op, trace-time and graph constant folding) and
//   ExecPlan::run (every function call, so its instructions each pay only an MXCSR read in run_kernel or
//   nothing at all). The caller's own bits come back afterwards: NumPy on that thread keeps subnormals.
// - On OpenMP's workers: ember treats libgomp's pool as its own (docs/threads.md), so its workers flush
//   between regions. A thread libgomp creates copies its creator's MXCSR, so threads made for a region
//   that a kernel started are born flushing. Inside parallel_for's and the executor's regions a worker
//   takes the caller's bits (a parallel_for outside any kernel, such as a conversion from NumPy, keeps
//   subnormals on every thread alike) and flushes again at the end (RegionDenormalFlags).
// - oneDNN's regions (matrix products, convolutions, pooling) run on the same workers but ember has no
//   hook inside them, so before one goes parallel flush_denormals_on_pool makes sure the team it will
//   get flushes: one extra region per larger team size, the first time only.
// LLVM's libomp (the clang builds) copies the primary thread's MXCSR into the team at every region
// (KMP_INHERIT_FP_CONTROL), so there a worker has the caller's bits in any region, oneDNN's included.
// A pool thread that another OpenMP user in the process created and that ember never ran a region on
// before oneDNN uses it is the gap left: the count below cannot see threads libgomp replaced.
namespace {
std::atomic<int> g_pool_threads_flushing{1};  // the caller is thread 0: its bits are its own scope's
}  // namespace

void flush_denormals_on_pool(int threads) {
#if EMBER_HAS_MXCSR
  if (threads <= g_pool_threads_flushing.load(std::memory_order_acquire)) return;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() != 0) set_denormal_flags(kFlushDenormals);
  }
  int known = g_pool_threads_flushing.load(std::memory_order_relaxed);
  while (known < threads && !g_pool_threads_flushing.compare_exchange_weak(known, threads)) {
  }
#else
  (void)threads;
#endif
}

}  // namespace ember

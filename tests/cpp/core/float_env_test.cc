// The denormal mode ember's kernels run under (core/float_env.h, Note [Where denormals flush]): scoped on the
// caller, the caller's bits for the workers of ember's parallel regions, flushing workers between regions,
// and a kernel run through run_kernel sees FTZ/DAZ while its caller's bits come back afterwards.
#include "ember/core/float_env.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ops/execute.h"

namespace ember {
namespace {

// Computed at run time: the compiler must not fold the product (it would keep the subnormal).
float times_one(float x) {
  volatile float v = x, one = 1.0f;
  return v * one;
}

constexpr float kTiny = 1e-40f;  // a float32 subnormal

#if EMBER_HAS_MXCSR

class FloatEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = denormal_flags();
    set_denormal_flags(0);  // NumPy's and C's default: subnormals kept
    saved_threads_ = intra_op_threads();
    set_intra_op_threads(2);
    internal::force_other_processes_load(0);  // both cores count as free: parallel_for goes parallel
  }
  void TearDown() override {
    internal::force_other_processes_load(-1);
    set_intra_op_threads(saved_threads_);
    set_denormal_flags(saved_);
  }
  uint32_t saved_ = 0;
  int saved_threads_ = 0;
};

TEST_F(FloatEnvTest, ScopedGuardFlushesAndRestoresTheCallersBits) {
  EXPECT_EQ(times_one(kTiny), kTiny);
  {
    ScopedFlushDenormals flush;
    EXPECT_EQ(denormal_flags(), kFlushDenormals);
    EXPECT_EQ(times_one(kTiny), 0.0f);
    {
      ScopedFlushDenormals nested;
      EXPECT_EQ(times_one(kTiny), 0.0f);
    }
    EXPECT_EQ(denormal_flags(), kFlushDenormals);  // the nested guard found the bits set and left them
  }
  EXPECT_EQ(denormal_flags(), 0u);
  EXPECT_EQ(times_one(kTiny), kTiny);

  set_denormal_flags(kFlushDenormals);  // a caller that flushes already keeps flushing
  { ScopedFlushDenormals flush; }
  EXPECT_EQ(denormal_flags(), kFlushDenormals);
}

TEST_F(FloatEnvTest, OnlyTheTwoBitsChange) {
  const uint32_t before = _mm_getcsr();
  {
    ScopedFlushDenormals flush;
    EXPECT_EQ(_mm_getcsr() & ~kFlushDenormals, before & ~kFlushDenormals);  // rounding, exception masks
  }
  EXPECT_EQ(_mm_getcsr(), before);
}

// Every piece of a parallel_for, on whichever thread it ran, computes under the caller's bits; what each
// thread saw is recorded per piece.
// Pieces are claimed in turn (Note [Claimed pieces]), so on a loaded machine the caller may take them all
// before a worker gets a core: the caller sleeps after each of its pieces, and the region is run again
// until a worker took part.
std::vector<float> products_per_piece(int64_t pieces) {
  std::vector<float> results(static_cast<size_t>(pieces), -1.0f);
  std::atomic<int> workers_used{0};
  for (int attempt = 0; attempt < 50 && workers_used.load() == 0; ++attempt) {
    parallel_for(pieces, kParallelCyclesPerThread, [&](int64_t begin, int64_t end) {
      const bool worker = omp_get_thread_num() != 0;
      if (worker) workers_used.fetch_add(1);
      for (int64_t i = begin; i < end; ++i) results[static_cast<size_t>(i)] = times_one(kTiny);
      if (!worker) std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
  }
  EXPECT_GT(workers_used.load(), 0) << "the region never reached a worker";
  return results;
}

TEST_F(FloatEnvTest, ParallelForWorkersTakeTheCallersBits) {
  {
    ScopedFlushDenormals flush;
    for (float r : products_per_piece(64)) EXPECT_EQ(r, 0.0f);
  }
  for (float r : products_per_piece(64)) EXPECT_EQ(r, kTiny);  // outside any kernel: kept everywhere
}

TEST_F(FloatEnvTest, PoolWorkersFlushBetweenRegions) {
  products_per_piece(64);  // a region whose caller kept subnormals
  flush_denormals_on_pool(2);
  std::vector<uint32_t> flags(2, 0xffffffffu);
  {
    ScopedFlushDenormals kernel;  // oneDNN starts its regions inside a kernel, under run_kernel's guard
#pragma omp parallel num_threads(2)
    flags[static_cast<size_t>(omp_get_thread_num())] = denormal_flags();
  }
  EXPECT_EQ(flags[0], kFlushDenormals);
  // A worker, as oneDNN's regions find it: libgomp's keeps its own bits, flushing since the last region
  // ended; LLVM's libomp copies the caller's into the team (Note [Where denormals flush]).
  EXPECT_EQ(flags[1], kFlushDenormals);
  EXPECT_EQ(denormal_flags(), 0u);
}

std::atomic<uint32_t> g_kernel_flags{0xffffffffu};
Status record_flags(KernelContext&) {
  g_kernel_flags.store(denormal_flags());
  return Status::OK();
}
Status fails_after_recording(KernelContext&) {
  g_kernel_flags.store(denormal_flags());
  return invalid_argument("refused");
}
Status no_outputs(InferContext&) { return Status::OK(); }

TEST_F(FloatEnvTest, RunKernelFlushesForTheKernelOnly) {
  for (KernelFn kernel : {&record_flags, &fails_after_recording}) {
    OpDef op;
    op.name = "RecordsDenormalFlags";
    op.shape_fn = &no_outputs;
    op.dispatch_input = -1;
    for (KernelFn& k : op.kernels) k = kernel;
    OutputList outputs;
    g_kernel_flags.store(0xffffffffu);
    (void)run_kernel(op, {}, {}, outputs);
    EXPECT_EQ(g_kernel_flags.load(), kFlushDenormals);
    EXPECT_EQ(denormal_flags(), 0u);  // restored, error or not
  }
}

#else  // no MXCSR: nothing is set, subnormals are kept

TEST(FloatEnv, DoesNothingOffX86) {
  ScopedFlushDenormals flush;
  EXPECT_EQ(denormal_flags(), 0u);
  EXPECT_EQ(times_one(kTiny), kTiny);
}

#endif

}  // namespace
}  // namespace ember

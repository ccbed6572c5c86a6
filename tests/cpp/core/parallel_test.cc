// The thread policy of core/parallel.h: work below the grain stays on the caller, work above it is cut
// into pieces that cover the range once, and the thresholds for handing work to oneDNN.
#include "ember/core/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ember {
namespace {

class ParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = intra_op_threads();
    set_intra_op_threads(2);
    internal::force_other_processes_load(0);  // a quiet machine, whatever this one is doing
  }
  void TearDown() override {
    internal::force_other_processes_load(-1);
    set_intra_op_threads(saved_);
  }
  int saved_ = 0;
};

TEST_F(ParallelTest, WorkBelowTheGrainRunsInlineOnTheCaller) {
  const int64_t regions = parallel_regions_started();
  const auto caller = std::this_thread::get_id();
  // Just below the grain: one call over the whole range, on this thread, no region.
  const int64_t n = 4096, cost = kParallelMinCycles / n - 1;
  std::vector<std::pair<int64_t, int64_t>> calls;
  parallel_for(n, cost, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(omp_get_num_threads(), 1);
    calls.emplace_back(b, e);
  });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(int64_t{0}, n));
  EXPECT_EQ(parallel_regions_started(), regions);
}

TEST_F(ParallelTest, WorkAboveTheGrainGoesParallelAndCoversTheRangeOnce) {
  const int64_t regions = parallel_regions_started();
  const int64_t n = 1000;
  const int64_t cost = 4 * kParallelCyclesPerThread / n + 1;  // enough for two threads and a few pieces
  std::vector<int> hits(n, 0);
  std::mutex mu;
  int team = 0;
  parallel_for(n, cost, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    team = std::max(team, omp_get_num_threads());
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << i;
  EXPECT_EQ(parallel_regions_started(), regions + 1);
  EXPECT_EQ(team, 2);
}

TEST_F(ParallelTest, ThreadCountsFollowTheGrain) {
  EXPECT_EQ(threads_for_cycles(kParallelMinCycles - 1), 1);
  EXPECT_EQ(threads_for_cycles(kParallelMinCycles * 8), 2);
  EXPECT_EQ(threads_for_matmul(kParallelMinMatMulMacs - 1), 1);
  // A 64x16x256 product (6 us: two threads do not win) stays on the caller.
  EXPECT_EQ(threads_for_matmul(int64_t{64} * 16 * 256), 1);
  EXPECT_EQ(threads_for_matmul(kParallelMinMatMulMacs), 2);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    inside = threads_for_matmul(kParallelMinMatMulMacs * 8) + threads_for_cycles(kParallelMinCycles * 8);
  }
  EXPECT_EQ(inside, 2);  // nested work stays on its thread
}

TEST_F(ParallelTest, ParallelWorkUsesOnlyTheCoresOthersLeaveFree) {
  const int64_t large = kParallelMinCycles * 8, large_product = kParallelMinMatMulMacs * 8;
  // Other processes busy on all cores but one (on the 2-core machine, one other busy process).
  internal::force_other_processes_load(omp_get_num_procs() - 1.0);
  EXPECT_EQ(threads_for_cycles(large), 1);
  EXPECT_EQ(threads_for_matmul(large_product), 1);
  EXPECT_EQ(cores_free_for_parallel_work(), 1);
  const int64_t regions = parallel_regions_started();
  std::vector<int> hits(1000, 0);
  parallel_for(1000, large, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(parallel_regions_started(), regions);
  for (int h : hits) ASSERT_EQ(h, 1);
  internal::force_other_processes_load(0.3);  // a little background work leaves both cores usable
  EXPECT_EQ(threads_for_cycles(large), 2);
  EXPECT_EQ(threads_for_matmul(large_product), 2);
}

TEST_F(ParallelTest, ASingleThreadedLibraryCallDoesNotChangeTheDefault) {
  set_intra_op_threads(0);  // the default: OpenMP's count when the process started
  const int before = intra_op_threads();
  omp_set_num_threads(1);  // what a small product does before calling oneDNN
  EXPECT_EQ(intra_op_threads(), before);
  omp_set_num_threads(before);
}

}  // namespace
}  // namespace ember

// Arena planning: buffers live at the same time never share bytes, dead ones are reused.
#include "ember/runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace ember {
namespace {

bool lifetimes_overlap(const ArenaRequest& a, const ArenaRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

void expect_valid(const std::vector<ArenaRequest>& requests, const ArenaPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0);
    EXPECT_LE(plan.offsets[i] + requests[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (!lifetimes_overlap(requests[i], requests[j])) continue;
      bool apart = plan.offsets[i] + requests[i].bytes <= plan.offsets[j] ||
                   plan.offsets[j] + requests[j].bytes <= plan.offsets[i];
      EXPECT_TRUE(apart) << "requests " << i << " and " << j << " are live together and share bytes";
    }
  }
}

TEST(MemoryPlan, AChainNeedsTwoBuffers) {
  // v0 -> v1 -> ... -> v9: each value is read by the next producer, so two blocks alternate.
  std::vector<ArenaRequest> requests;
  for (int i = 0; i < 10; ++i) requests.push_back({4096, i, i + 1});
  ArenaPlan plan = plan_arena(requests);
  expect_valid(requests, plan);
  EXPECT_EQ(plan.arena_bytes, 2 * 4096);
}

TEST(MemoryPlan, LiveTogetherMeansApart) {
  std::vector<ArenaRequest> requests = {{100, 0, 5}, {200, 1, 2}, {50, 3, 4}, {300, 6, 7}};
  ArenaPlan plan = plan_arena(requests);
  expect_valid(requests, plan);
  // Sizes round to 128, 256, 64 and 320 bytes. The 320 and 256 byte buffers are never live together, so
  // both start at 0; the 128 byte one lives beside the 256 byte one; the 64 byte one reuses the start.
  EXPECT_EQ(plan.offsets[3], 0);
  EXPECT_EQ(plan.offsets[1], 0);
  EXPECT_EQ(plan.offsets[0], 256);
  EXPECT_EQ(plan.offsets[2], 0);
  EXPECT_EQ(plan.arena_bytes, 384);
}

TEST(MemoryPlan, SmallBuffersFillGapsLeftByLargeOnes) {
  // Two large buffers with a dead one between them in address space, then a small one that fits there.
  std::vector<ArenaRequest> requests = {{1024, 0, 10}, {1024, 0, 2}, {1024, 0, 10}, {512, 5, 6}};
  ArenaPlan plan = plan_arena(requests);
  expect_valid(requests, plan);
  EXPECT_EQ(plan.arena_bytes, 3 * 1024);
  EXPECT_EQ(plan.offsets[3], plan.offsets[1]);
}

TEST(MemoryPlan, RandomRequestsNeverShareLiveBytes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<ArenaRequest> requests;
    int count = 1 + static_cast<int>(rng() % 40);
    int64_t total = 0;
    for (int i = 0; i < count; ++i) {
      int32_t first = static_cast<int32_t>(rng() % 50);
      int32_t last = first + static_cast<int32_t>(rng() % 10);
      int64_t bytes = 1 + static_cast<int64_t>(rng() % 5000);
      requests.push_back({bytes, first, last});
      total += (bytes + 63) / 64 * 64;
    }
    ArenaPlan plan = plan_arena(requests);
    expect_valid(requests, plan);
    EXPECT_LE(plan.arena_bytes, total);
  }
}

}  // namespace
}  // namespace ember

// The Gloo communicator with its ranks as threads of one process (the worker processes' tests are
// tests/python/test_multi_worker*.py): results of each collective, and failures that end in a clear Status
// within the timeout instead of a hang.
#include "ember/distribute/communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

namespace ember::distribute {
namespace {

std::string fresh_store(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("ember-communicator-test-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Runs fn(rank, communicator) on `size` threads, each joined to one group.
void run_group(int size, const char* name, double timeout,
               const std::function<void(int, Communicator&)>& fn) {
  const std::string store = fresh_store(name);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      CommunicatorOptions o;
      o.rank = rank;
      o.size = size;
      o.store_path = store;
      o.timeout_seconds = timeout;
      auto c = create_communicator(o);
      ASSERT_TRUE(c.ok()) << c.status().message();
      fn(rank, **c);
    });
  }
  for (auto& t : threads) t.join();
  std::filesystem::remove_all(store);
}

TEST(Communicator, AllReduceSumsMaxesAndKeepsTheInput) {
  if (!have_collective_library()) GTEST_SKIP() << "built without Gloo";
  run_group(3, "allreduce", 30, [](int rank, Communicator& c) {
    std::vector<float> in = {1.0f * rank, 2.0f, -1.0f * rank}, out(3);
    ASSERT_TRUE(c.all_reduce(in.data(), out.data(), 3, DType::kFloat32, ReduceOp::kSum, 1, 0).ok());
    EXPECT_EQ(out, (std::vector<float>{3, 6, -3}));
    EXPECT_EQ(in[1], 2.0f);
    std::vector<int64_t> v = {rank, -rank};
    ASSERT_TRUE(c.all_reduce(v.data(), v.data(), 2, DType::kInt64, ReduceOp::kMax, 2, 0).ok());
    EXPECT_EQ(v, (std::vector<int64_t>{2, 0}));
  });
}

TEST(Communicator, BroadcastAndAllGather) {
  if (!have_collective_library()) GTEST_SKIP() << "built without Gloo";
  run_group(2, "bcast", 30, [](int rank, Communicator& c) {
    std::vector<int32_t> data = {rank == 1 ? 7 : 0, rank == 1 ? 8 : 0};
    ASSERT_TRUE(c.broadcast(data.data(), 8, /*root=*/1, 3, 0).ok());
    EXPECT_EQ(data, (std::vector<int32_t>{7, 8}));
    int32_t mine = 10 + rank;
    std::vector<int32_t> all(2);
    ASSERT_TRUE(c.all_gather(&mine, all.data(), 4, 4, 0).ok());
    EXPECT_EQ(all, (std::vector<int32_t>{10, 11}));
    ASSERT_TRUE(c.barrier(5, 0).ok());
  });
}

TEST(Communicator, APeerThatNeverComesIsDeadlineExceededThenTheGroupIsBroken) {
  if (!have_collective_library()) GTEST_SKIP() << "built without Gloo";
  run_group(2, "timeout", 30, [](int rank, Communicator& c) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // misses rank 0's all-reduce
      return;
    }
    float x = 1;
    auto start = std::chrono::steady_clock::now();
    Status s = c.all_reduce(&x, &x, 1, DType::kFloat32, ReduceOp::kSum, 9, /*timeout=*/0.5);
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.message();
    EXPECT_NE(s.message().find("all-reduce on rank 0 of 2 timed out"), std::string::npos) << s.message();
    EXPECT_LT(waited, 2.0);
    Status again = c.barrier(10, 0.5);
    EXPECT_EQ(again.code(), Code::kFailedPrecondition);
    EXPECT_NE(again.message().find("the group failed earlier"), std::string::npos) << again.message();
  });
}

TEST(Communicator, DifferentSizesAreInvalidArgumentOnEveryRankAndTheGroupGoesOn) {
  if (!have_collective_library()) GTEST_SKIP() << "built without Gloo";
  run_group(2, "mismatch", 30, [](int rank, Communicator& c) {
    std::vector<float> x(4 + rank, 1.0f);
    Status s = c.all_reduce(x.data(), x.data(), static_cast<int64_t>(x.size()), DType::kFloat32,
                            ReduceOp::kSum, 11, 0);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("same size and dtype"), std::string::npos) << s.message();
    float one = 1;
    ASSERT_TRUE(c.all_reduce(&one, &one, 1, DType::kFloat32, ReduceOp::kSum, 12, 0).ok());
    EXPECT_EQ(one, 2.0f);
  });
}

TEST(Communicator, BadOptionsAreInvalidArgument) {
  CommunicatorOptions o;
  o.rank = 2;
  o.size = 2;
  o.store_path = "/tmp";
  auto c = create_communicator(o);
  EXPECT_FALSE(c.ok());
  if (!have_collective_library()) return;
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("0 <= rank < size, got rank 2 and size 2"), std::string::npos);
}

TEST(Communicator, ARankThatNeverJoinsTimesOutTheRendezvous) {
  if (!have_collective_library()) GTEST_SKIP() << "built without Gloo";
  CommunicatorOptions o;
  o.rank = 0;
  o.size = 2;
  o.store_path = fresh_store("rendezvous");
  o.timeout_seconds = 0.5;
  auto c = create_communicator(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kDeadlineExceeded) << c.status().message();
  EXPECT_NE(c.status().message().find("could not join its group"), std::string::npos);
  std::filesystem::remove_all(o.store_path);
}

TEST(Communicator, MergeOpNames) {
  EXPECT_EQ(*parse_merge_op("Add"), ReduceOp::kSum);
  EXPECT_EQ(*parse_merge_op("Max"), ReduceOp::kMax);
  EXPECT_FALSE(parse_merge_op("Sum").ok());
}

}  // namespace
}  // namespace ember::distribute

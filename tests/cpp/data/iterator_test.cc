// The C++ iterators of tf.data (src/ember/data/iterator.h). The DataConcurrency tests run under the TSan
// build (scripts/sanitize.sh runs *Concurrency*) as well as normally.
#include "ember/data/iterator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ember::data {
namespace {

TensorRef int64_vector(std::vector<int64_t> values) {
  auto t = TensorImpl::allocate(DType::kInt64, Shape({static_cast<int64_t>(values.size())}));
  EXPECT_TRUE(t.ok());
  std::copy(values.begin(), values.end(), (*t)->mutable_data<int64_t>());
  return std::move(t).value();
}

TensorRef scalar(int64_t v) {
  auto t = TensorImpl::allocate(DType::kInt64, Shape());
  EXPECT_TRUE(t.ok());
  (*t)->mutable_data<int64_t>()[0] = v;
  return std::move(t).value();
}

int64_t value_of(const TensorRef& t) { return t->data<int64_t>()[0]; }

// Counts 0, 1, 2, ... up to `n` (or for ever when n < 0).
IteratorPtr counter(int64_t n) {
  auto next = std::make_shared<int64_t>(0);
  return make_source([next, n](Element& out) -> StatusOr<bool> {
    if (n >= 0 && *next >= n) return false;
    out = {scalar((*next)++)};
    return true;
  });
}

// Doubles; the work varies by element so that workers finish out of order.
MapFn doubling(std::atomic<int>* calls = nullptr) {
  return [calls](const Element& in, Element& out) -> Status {
    int64_t v = value_of(in[0]);
    if (calls != nullptr) ++*calls;
    if (v % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    out = {scalar(2 * v)};
    return Status::OK();
  };
}

std::vector<int64_t> drain(Iterator& it) {
  std::vector<int64_t> out;
  Element e;
  for (;;) {
    StatusOr<bool> more = it.next(e);
    EXPECT_TRUE(more.ok()) << more.status().to_string();
    if (!more.ok() || !*more) return out;
    out.push_back(value_of(e[0]));
  }
}

TEST(DataIterator, SlicesAreRowViews) {
  auto it = make_slices({int64_vector({4, 5, 6})});
  ASSERT_TRUE(it.ok());
  EXPECT_EQ(drain(**it), (std::vector<int64_t>{4, 5, 6}));
}

TEST(DataIterator, SlicesCheckTheirComponents) {
  auto mismatched = make_slices({int64_vector({1, 2}), int64_vector({1, 2, 3})});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("from_tensor_slices"), std::string::npos);
  EXPECT_FALSE(make_slices({scalar(1)}).ok());
  EXPECT_FALSE(make_slices({}).ok());
}

TEST(DataIterator, BatchStacksAndKeepsOrDropsTheRemainder) {
  for (bool drop : {false, true}) {
    auto it = make_batch(counter(7), 3, drop);
    Element e;
    std::vector<int64_t> sizes;
    while (*it->next(e)) {
      sizes.push_back(e[0]->shape().dim(0));
      EXPECT_EQ(e[0]->data<int64_t>()[0], 3 * static_cast<int64_t>(sizes.size() - 1));
    }
    EXPECT_EQ(sizes, drop ? (std::vector<int64_t>{3, 3}) : (std::vector<int64_t>{3, 3, 1}));
  }
}

TEST(DataIterator, BatchOfDifferingShapesIsInvalidArgument) {
  auto rows = std::make_shared<int>(0);
  auto it = make_batch(make_source([rows](Element& out) -> StatusOr<bool> {
                         if (*rows == 2) return false;
                         out = {int64_vector(std::vector<int64_t>(static_cast<size_t>(++*rows), 1))};
                         return true;
                       }),
                       2, false);
  Element e;
  StatusOr<bool> r = it->next(e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Cannot batch tensors with different shapes in component 0"),
            std::string::npos);
}

TEST(DataIterator, SequentialMapRunsOnTheCaller) {
  auto it = make_map(counter(5), doubling(), 0, "map");
  EXPECT_EQ(drain(*it), (std::vector<int64_t>{0, 2, 4, 6, 8}));
}

TEST(DataIterator, AnErrorFailsOnlyItsElementAndNamesTheMap) {
  MapFn odd_fails = [](const Element& in, Element& out) -> Status {
    if (value_of(in[0]) % 2 == 1) return invalid_argument("odd");
    out = {in[0]};
    return Status::OK();
  };
  for (int threads : {0, 3}) {
    auto it = make_map(counter(4), odd_fails, threads, "Dataset.map(f)");
    Element e;
    ASSERT_TRUE(*it->next(e));
    StatusOr<bool> r = it->next(e);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), "Dataset.map(f): odd");
    ASSERT_TRUE(*it->next(e));
    EXPECT_EQ(value_of(e[0]), 2);
  }
}

TEST(DataConcurrency, ParallelMapKeepsTheInputOrder) {
  for (int threads : {1, 2, 4, 8, 16}) {
    auto it = make_prefetch(make_map(counter(2000), doubling(), threads, "map"), 4);
    std::vector<int64_t> got = drain(*it);
    ASSERT_EQ(got.size(), 2000u);
    for (int64_t i = 0; i < 2000; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], 2 * i) << threads;
  }
}

TEST(DataConcurrency, ChainedParallelMapsAndBatches) {
  auto it = make_prefetch(
      make_batch(make_map(make_map(counter(999), doubling(), 4, "a"), doubling(), 3, "b"), 10, false), 2);
  Element e;
  int64_t expect = 0;
  while (*it->next(e)) {
    for (int64_t i = 0; i < e[0]->shape().dim(0); ++i) EXPECT_EQ(e[0]->data<int64_t>()[i], 4 * expect++);
  }
  EXPECT_EQ(expect, 999);
}

TEST(DataConcurrency, AbandonedIteratorsStopTheirThreads) {
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> calls{0};
    {
      auto it = make_prefetch(make_map(counter(-1), doubling(&calls), 8, "map"), 16);
      Element e;
      for (int i = 0; i < round % 5; ++i) ASSERT_TRUE(*it->next(e));
    }  // destroyed mid-stream (or before the first element): joins its threads
    int after = calls.load();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    EXPECT_EQ(calls.load(), after);  // nothing runs any more
  }
}

TEST(DataConcurrency, EndIsSeenOnceByEveryLayer) {
  auto it = make_prefetch(make_map(counter(3), doubling(), 4, "map"), 2);
  EXPECT_EQ(drain(*it), (std::vector<int64_t>{0, 2, 4}));
  Element e;
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(*it->next(e));
}

TEST(DataConcurrency, InputErrorsKeepTheirPlace) {
  auto n = std::make_shared<int64_t>(0);
  auto it = make_map(make_source([n](Element& out) -> StatusOr<bool> {
                       int64_t v = (*n)++;
                       if (v == 5) return false;
                       if (v == 2) return make_error(Code::kDataLoss, "corrupt record");
                       out = {scalar(v)};
                       return true;
                     }),
                     doubling(), 4, "map");
  Element e;
  std::vector<std::string> seen;
  for (;;) {
    StatusOr<bool> r = it->next(e);
    if (r.ok() && !*r) break;
    seen.push_back(r.ok() ? std::to_string(value_of(e[0])) : r.status().message());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "2", "corrupt record", "6", "8"}));
}

}  // namespace
}  // namespace ember::data

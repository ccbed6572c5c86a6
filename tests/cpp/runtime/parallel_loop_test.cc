#include "ember/runtime/parallel_loop.h"

#include <gtest/gtest.h>

#include <vector>

#include "ember/api/control_flow.h"
#include "ember/api/linalg.h"
#include "ember/ember.h"

namespace ember {
namespace {

// A map over the rows of x as map_fn builds it (C++'s while_loop passes parallel_iterations = 10): a counter,
// the rows written into an array one per iteration, each row's work from the counter and invariants only.
std::vector<Tensor> map_rows(const Tensor& x, const Tensor& w) {
  const int64_t rows = x.shape().dim(0), cols = w.shape().dim(1);
  return while_loop([&](const std::vector<Tensor>& v) { return v[0] < Tensor(static_cast<int32_t>(rows)); },
                    [&](const std::vector<Tensor>& v) {
                      Tensor row = tanh(matmul(reshape(gather(x, v[0]), {1, -1}), w));
                      Tensor written = call_op1("InplaceUpdate", {v[1], reshape(v[0], {1}), row});
                      return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), written};
                    },
                    {Tensor(int32_t{0}), zeros({rows, cols})});
}

Tensor data(int64_t rows, int64_t cols, float scale) {
  std::vector<float> values;
  for (int64_t i = 0; i < rows * cols; ++i) values.push_back(scale * static_cast<float>((i * 37) % 23 - 11));
  return Tensor::from_vector(values, Shape({rows, cols}));
}

TEST(ParallelLoop, AMapOverRowsOverlapsWithEachRowsValues) {
  const Tensor x = data(24, 16, 0.05f), w = data(16, 16, 0.03f);
  auto f = function([](const Tensor& x, const Tensor& w) { return map_rows(x, w)[1]; });
  ParallelLoop::reset_counters();
  const std::vector<float> got = f(x, w).to_vector<float>();
  EXPECT_EQ(ParallelLoop::iterations_run(), 24);
  EXPECT_EQ(ParallelLoop::max_in_flight(), 10);
  for (int64_t r = 0; r < 24; ++r) {
    const std::vector<float> want =
        tanh(matmul(reshape(gather(x, Tensor(static_cast<int32_t>(r))), {1, -1}), w)).to_vector<float>();
    for (int64_t c = 0; c < 16; ++c) EXPECT_NEAR(got[r * 16 + c], want[c], 1e-6f) << r << "," << c;
  }
}

TEST(ParallelLoop, ACarriedStateStaysSequential) {
  // h = tanh(h @ w + x[i]) carries the work from one iteration to the next (an RNN): nothing overlaps.
  const Tensor x = data(12, 16, 0.05f), w = data(16, 16, 0.03f);
  auto f = function([](const Tensor& x, const Tensor& w) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{12}); },
                      [&](const std::vector<Tensor>& v) {
                        Tensor h = tanh(matmul(v[1], w) + reshape(gather(x, v[0]), {1, -1}));
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), h};
                      },
                      {Tensor(int32_t{0}), zeros({1, 16})})[1];
  });
  ParallelLoop::reset_counters();
  f(x, w);
  EXPECT_EQ(ParallelLoop::iterations_run(), 0);
}

}  // namespace
}  // namespace ember

// Eight threads use one process's shared state at once: a staged function and its plan cache, variables
// updated and read, tapes differentiating functions (gradient pairs built concurrently), variables created
// and dropped (the resource registry). Run by the TSan build (scripts/sanitize.sh) as well as normally.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ember/ember.h"

namespace ember {
namespace {

constexpr int kThreads = 8;

TEST(Concurrency, EightThreadsShareFunctionsVariablesAndTapes) {
  Variable counter(Tensor(0.0f), "counter");
  Variable weights(Tensor({1.0f, 2.0f, 3.0f}), "weights");
  auto staged = function([&](const Tensor& x) { return reduce_sum(x * weights.read() + 1.0f); });
  auto bump = function([&](const Tensor& x) {
    counter.assign_add(x);
    return counter.read();
  });
  const int kIterations = 200;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Tensor x({1.0f * t, 2.0f, 3.0f});
        for (int i = 0; i < kIterations; ++i) {
          // A fresh function per iteration on some threads: the callee cache and gradient pairs churn.
          if (i % 20 == t % 20) {
            auto own = function([&](const Tensor& a) { return reduce_sum(a * a); });
            GradientTape tape;
            tape.watch(x);
            Tensor y = own(x);
            tape.stop();
            auto g = tape.gradient(y, {x})[0].to_vector<float>();
            if (g[0] != 2.0f * t || g[1] != 4.0f) ++wrong;
          }
          float want = 1.0f * t + 4.0f + 9.0f + 3.0f;
          if (staged(x).item<float>() != want) ++wrong;
          GradientTape tape;
          Tensor loss = staged(x);
          tape.stop();
          auto dw = tape.gradient(loss, std::vector<Variable>{weights})[0].to_vector<float>();
          if (dw[0] != 1.0f * t || dw[1] != 2.0f || dw[2] != 3.0f) ++wrong;
          bump(Tensor(1.0f));
          Variable scratch(Tensor(static_cast<float>(i)), "scratch");
          if (scratch.read().item<float>() != static_cast<float>(i)) ++wrong;
        }
      } catch (const std::exception&) {
        ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  // assign_add is one read-modify-write step: no update is lost.
  EXPECT_EQ(counter.read().item<float>(), static_cast<float>(kThreads * kIterations));
}

}  // namespace
}  // namespace ember

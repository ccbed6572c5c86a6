#include "ember/runtime/fast_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "ember/api/control_flow.h"
#include "ember/api/linalg.h"
#include "ember/api/random.h"
#include "ember/ember.h"
#include "ember/jit/jit.h"
#include "ember/ops/graph_ops.h"

namespace ember {
namespace {

// Every test runs on each tier of the fast path: with the JIT off (the node loop) and in its synchronous
// mode, where a qualifying step's native loop is compiled when its fast form is built, so that it runs
// from the first call (Note [Native loops] in jit/loop_codegen.cc).
class FastLoopTiers : public testing::TestWithParam<jit::Mode> {
 protected:
  void SetUp() override {
    jit::install();
    previous_ = jit::mode();
    jit::set_mode(GetParam());
  }
  void TearDown() override { jit::set_mode(previous_); }
  static bool native() { return jit::available() && GetParam() == jit::Mode::kSync; }

 private:
  jit::Mode previous_ = jit::Mode::kAsync;
};

INSTANTIATE_TEST_SUITE_P(Tier, FastLoopTiers, testing::Values(jit::Mode::kOff, jit::Mode::kSync),
                         [](const testing::TestParamInfo<jit::Mode>& info) {
                           return info.param == jit::Mode::kOff ? std::string("NodeLoop")
                                                                : std::string("NativeLoop");
                         });

// A loop's results on the fast path and on the normal one, how many iterations ran fast, and how many of
// those natively.
struct BothPaths {
  std::vector<Tensor> fast, normal;
  int64_t fast_iterations = 0;
  int64_t native_iterations = 0;
};

template <typename Call>
BothPaths run_both(Call&& call) {
  BothPaths out;
  set_fast_loops_enabled(true);
  const int64_t before = FastLoop::iterations_run(), native_before = FastLoop::native_iterations_run();
  out.fast = call();
  out.fast_iterations = FastLoop::iterations_run() - before;
  out.native_iterations = FastLoop::native_iterations_run() - native_before;
  set_fast_loops_enabled(false);
  out.normal = call();
  set_fast_loops_enabled(true);
  return out;
}

// Whether the fast iterations ran on the tier the test runs (every step of these tests has a native loop).
void expect_tier(const BothPaths& both, bool native) {
  EXPECT_EQ(both.native_iterations, native ? both.fast_iterations : 0);
}

void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].dtype(), b[i].dtype()) << "value " << i;
    EXPECT_EQ(a[i].shape(), b[i].shape()) << "value " << i;
    ASSERT_EQ(a[i].impl()->nbytes(), b[i].impl()->nbytes());
    EXPECT_EQ(std::memcmp(a[i].impl()->raw_data(), b[i].impl()->raw_data(), a[i].impl()->nbytes()), 0)
        << "value " << i;
  }
}

Tensor one_of(DType dtype) { return cast(Tensor(1.f), dtype); }

TEST_P(FastLoopTiers, TheBenchLoopRunsFastWithTheNormalPathsBits) {
  auto f = function([](const Tensor& n, const Tensor& x) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] * 0.999f + 0.5f};
                      },
                      {Tensor(int32_t{0}), x});
  });
  for (int32_t n : {0, 1, 2, 1000}) {
    auto both = run_both([&] { return f(Tensor(n), Tensor(1.f)); });
    expect_same_bits(both.fast, both.normal);
    expect_tier(both, native());
    EXPECT_EQ(both.fast[0].item<int32_t>(), n);
    // The condition before the first iteration runs on its own; every iteration is the step's.
    EXPECT_EQ(both.fast_iterations, n) << "n = " << n;
  }
}

TEST_P(FastLoopTiers, ThreadsRunOneFastLoopAtOnce) {
  // Each run has its own values; the step, its kernels and its prepared programs are shared.
  auto f = function([](const Tensor& n, const Tensor& x) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] * 0.999f + 0.5f};
                      },
                      {Tensor(int32_t{0}), x})[1];
  });
  std::vector<float> want;
  for (int t = 0; t < 4; ++t)
    want.push_back(f(Tensor(int32_t{300 + t}), Tensor(static_cast<float>(t))).item<float>());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 25; ++r)
        if (f(Tensor(int32_t{300 + t}), Tensor(static_cast<float>(t))).item<float>() != want[t]) ++mismatches;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(FastLoopTiers, EveryLoopVariableDtype) {
  for (DType dtype : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kFloat16,
                      DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    auto f = function([dtype](const Tensor& n, const Tensor& x) {
      return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                        [dtype](const std::vector<Tensor>& v) {
                          return std::vector<Tensor>{v[0] + one_of(dtype), v[1] * v[1] - v[0]};
                        },
                        {cast(Tensor(0.f), dtype), x});
    });
    auto both = run_both([&] { return f(cast(Tensor(7.f), dtype), cast(Tensor(2.f), dtype)); });
    expect_same_bits(both.fast, both.normal);
    expect_tier(both, native());
    EXPECT_EQ(both.fast_iterations, 7) << dtype_name(dtype);
  }
}

TEST_P(FastLoopTiers, BoolLoopVariableAsTheCondition) {
  // The condition is a loop variable itself: it flips after three iterations.
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0]; },
                      [](const std::vector<Tensor>& v) {
                        Tensor next = v[1] + Tensor(1.f);
                        return std::vector<Tensor>{call_op1("Less", {next, Tensor(3.f)}), next};
                      },
                      {Tensor(true), x});
  });
  auto both = run_both([&] { return f(Tensor(0.f)); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast[1].item<float>(), 3.f);
  EXPECT_EQ(both.fast_iterations, 3);
}

TEST_P(FastLoopTiers, NaNsComeOutBitForBit) {
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{5}); },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] * v[1] - Tensor(1e30f)};
                      },
                      {Tensor(int32_t{0}), x});
  });
  for (float start : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(), 1e20f}) {
    auto both = run_both([&] { return f(Tensor(start)); });
    expect_same_bits(both.fast, both.normal);
    expect_tier(both, native());
    EXPECT_EQ(both.fast_iterations, 5);
  }
}

TEST_P(FastLoopTiers, SwappedVariablesAndSmallVectors) {
  // The body swaps two variables (each new value is the other's old one) on vectors of four.
  auto f = function([](const Tensor& a, const Tensor& b) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{5}); },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[2], v[1] + v[2]};
                      },
                      {Tensor(int32_t{0}), a, b});
  });
  auto both = run_both([&] { return f(Tensor({1.f, 2.f, 3.f, 4.f}), Tensor({0.5f, 0.f, -1.f, 8.f})); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast_iterations, 5);
  EXPECT_EQ(both.fast[1].to_vector<float>(), (std::vector<float>{5.5f, 6.f, 4.f, 52.f}));
}

TEST_P(FastLoopTiers, AConditionThatIsAnOldLoopVariable) {
  // The body swaps two bools and the condition reads the first: after the swap it is the second's old
  // value, which the new values' copies overwrite, so it is read before them. One iteration, as in
  // TensorFlow.
  auto f = function([](const Tensor& a, const Tensor& b) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0]; },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[1], v[0], v[2] + Tensor(int32_t{1})};
                      },
                      {a, b, Tensor(int32_t{0})});
  });
  auto both = run_both([&] { return f(Tensor(true), Tensor(false)); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast[2].item<int32_t>(), 1);
  EXPECT_EQ(both.fast_iterations, 1);
}

TEST_P(FastLoopTiers, TranscendentalsComparisonsAndBroadcastScalars) {
  // Vectors of eight float and half values through sin, exp and tanh (the interpreter's own loops on
  // either tier), scalars broadcast into them, a float comparison as the condition, and a bool variable.
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kFloat64}) {
    auto f = function([dtype](const Tensor& x, const Tensor& s) {
      return while_loop(
          [](const std::vector<Tensor>& v) {
            return call_op1("Less", {v[1], cast(Tensor(6.f), v[1].dtype())});
          },
          [](const std::vector<Tensor>& v) {
            const Tensor& x = v[0];
            Tensor t = v[1] + cast(Tensor(1.f), v[1].dtype());
            Tensor next = sin(x) * v[2] + exp(v[2] * cast(Tensor(0.1f), x.dtype())) - tanh(x * t);
            Tensor flag = call_op1("LogicalNot", {v[3]});
            return std::vector<Tensor>{next, t, v[2] * cast(Tensor(0.75f), x.dtype()), flag};
          },
          {x, cast(Tensor(0.f), dtype), s, Tensor(false)});
    });
    const Tensor x = cast(Tensor({0.5f, -1.f, 3.f, 1e5f, -2e4f, 0.f, 7.f, -0.25f}), dtype);
    auto both = run_both([&] { return f(x, cast(Tensor(1.5f), dtype)); });
    expect_same_bits(both.fast, both.normal);
    expect_tier(both, native());
    EXPECT_EQ(both.fast_iterations, 6) << dtype_name(dtype);
    EXPECT_EQ(both.fast[3].item<bool>(), false);
  }
}

TEST_P(FastLoopTiers, CapturedScalarsAndNestedLoops) {
  const Tensor scale(0.5f);  // an eager tensor: a captured value of the step
  auto f = function([&](const Tensor& n, const Tensor& x) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                      [&](const std::vector<Tensor>& v) {
                        // The inner loop runs fast; the outer body holds a While, so it does not.
                        auto inner = while_loop(
                            [&](const std::vector<Tensor>& w) { return w[0] < v[0]; },
                            [&](const std::vector<Tensor>& w) {
                              return std::vector<Tensor>{w[0] + Tensor(int32_t{1}), w[1] * scale + v[1]};
                            },
                            {Tensor(int32_t{0}), v[1]});
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), inner[1]};
                      },
                      {Tensor(int32_t{0}), x});
  });
  auto both = run_both([&] { return f(Tensor(int32_t{6}), Tensor(1.f)); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast_iterations, 0 + 1 + 2 + 3 + 4 + 5);  // the inner loops' iterations only
}

TEST_P(FastLoopTiers, MaximumIterationsStillBound) {
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(100.f); },
                      [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + Tensor(1.f)}; },
                      {x}, 3);
  });
  auto both = run_both([&] { return f(Tensor(0.f)); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast[0].item<float>(), 3.f);
}

TEST_P(FastLoopTiers, StepsThatDoNotQualifyRunOnTheNormalPath) {
  // A matmul, a growing shape and a stateful op each keep the loop on its normal path.
  auto matmul_loop = function([](const Tensor& m) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{4}); },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), matmul(v[1], v[1])};
                      },
                      {Tensor(int32_t{0}), m});
  });
  auto both = run_both([&] { return matmul_loop(Tensor::from_vector<float>({1, 1, 0, 1}, Shape{2, 2})); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast_iterations, 0);
  EXPECT_EQ(both.fast[1].to_vector<float>(), (std::vector<float>{1, 16, 0, 1}));

  auto growing = function([](const Tensor& x) {
    return while_loop(
        [](const std::vector<Tensor>& v) {
          return call_op1("Less", {size(v[0]), Tensor(8)});
        },
        [](const std::vector<Tensor>& v) {
          return std::vector<Tensor>{concat({v[0], v[0]}, 0)};
        },
        {x}, std::nullopt, {Shape{-1}});
  });
  both = run_both([&] { return growing(Tensor({1.f})); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast_iterations, 0);
  EXPECT_EQ(both.fast[0].shape(), (Shape{8}));

  auto random = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{3}); },
                      [](const std::vector<Tensor>& v) {
                        Tensor noise = random_uniform(Shape{});
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] + noise};
                      },
                      {Tensor(int32_t{0}), x});
  });
  const int64_t before = FastLoop::iterations_run();
  Tensor out = random(Tensor(0.f))[1];
  EXPECT_EQ(FastLoop::iterations_run(), before);
  EXPECT_GE(out.item<float>(), 0.f);
  EXPECT_LT(out.item<float>(), 3.f);
}

TEST_P(FastLoopTiers, AFailingIterationReportsAsTheNormalPathDoes) {
  // Integer FloorDiv by zero fails in the fourth iteration (i == 3): the fast path (either tier) hands that
  // iteration back, and the normal path's error, node and iteration included, is what the caller sees.
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{10}); },
                      [](const std::vector<Tensor>& v) {
                        Tensor q = call_op1("FloorDiv", {v[1], Tensor(int32_t{3}) - v[0]});
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] + q};
                      },
                      {Tensor(int32_t{0}), x});
  });
  std::string messages[2];
  for (int fast = 0; fast < 2; ++fast) {
    set_fast_loops_enabled(fast == 1);
    const int64_t before = FastLoop::iterations_run(), native_before = FastLoop::native_iterations_run();
    try {
      f(Tensor(int32_t{12}));
      ADD_FAILURE() << "no error";
    } catch (const StatusError& e) {
      messages[fast] = e.what();
    }
    EXPECT_EQ(FastLoop::iterations_run() - before, fast == 1 ? 3 : 0);
    EXPECT_EQ(FastLoop::native_iterations_run() - native_before, fast == 1 && native() ? 3 : 0);
  }
  set_fast_loops_enabled(true);
  EXPECT_NE(messages[0].find("iteration 3"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0], messages[1]);
}

TEST_P(FastLoopTiers, IntegerDivisionAndPowersThatSucceedAndOneThatFails) {
  // FloorDiv, FloorMod and Pow of int32 vectors (the kernels check the divisor and the exponent first);
  // then an exponent that turns negative in the third iteration (i == 2).
  auto f = function([](const Tensor& x, const Tensor& d) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{6}); },
                      [&](const std::vector<Tensor>& v) {
                        Tensor i = v[0] + Tensor(int32_t{1});
                        Tensor y = call_op1("FloorMod", {v[1] * Tensor(int32_t{7}) + Tensor(int32_t{3}), d}) +
                                   call_op1("FloorDiv", {call_op1("Pow", {v[1], Tensor(int32_t{2})}), i});
                        return std::vector<Tensor>{i, y};
                      },
                      {Tensor(int32_t{0}), x});
  });
  const Tensor x = Tensor::from_vector<int32_t>({-9, 4, 17, 0}, Shape{4});
  auto both = run_both([&] { return f(x, Tensor::from_vector<int32_t>({5, -3, 11, 2}, Shape{4})); });
  expect_same_bits(both.fast, both.normal);
  expect_tier(both, native());
  EXPECT_EQ(both.fast_iterations, 6);

  auto negative = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < Tensor(int32_t{6}); },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}),
                                                   call_op1("Pow", {v[1], Tensor(int32_t{1}) - v[0]})};
                      },
                      {Tensor(int32_t{0}), x});
  });
  std::string messages[2];
  for (int fast = 0; fast < 2; ++fast) {
    set_fast_loops_enabled(fast == 1);
    const int64_t native_before = FastLoop::native_iterations_run();
    try {
      negative(Tensor(int32_t{3}));
      ADD_FAILURE() << "no error";
    } catch (const StatusError& e) {
      messages[fast] = e.what();
    }
    EXPECT_EQ(FastLoop::native_iterations_run() - native_before, fast == 1 && native() ? 2 : 0);
  }
  set_fast_loops_enabled(true);
  EXPECT_NE(messages[0].find("negative integer powers"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0], messages[1]);
}

TEST_P(FastLoopTiers, TheIterationCapEndsAnEndlessLoopOnEitherPath) {
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] > Tensor(0.f); },
                      [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + Tensor(1.f)}; },
                      {x});
  });
  set_max_loop_iterations(50);
  std::string messages[2];
  for (int fast = 0; fast < 2; ++fast) {
    set_fast_loops_enabled(fast == 1);
    try {
      f(Tensor(1.f));
      ADD_FAILURE() << "no error";
    } catch (const StatusError& e) {
      EXPECT_EQ(e.status().code(), Code::kResourceExhausted);
      messages[fast] = e.what();
    }
  }
  set_fast_loops_enabled(true);
  set_max_loop_iterations(0);
  EXPECT_EQ(messages[0], messages[1]);
}

TEST(FastLoop, TheNodeLoopRunsUntilTheNativeLoopIsCompiled) {
  jit::install();
  const jit::Mode previous = jit::mode();
  jit::set_mode(jit::Mode::kAsync);
  auto f = function([](const Tensor& n, const Tensor& x) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] * 0.999f + 0.5f};
                      },
                      {Tensor(int32_t{0}), x});
  });
  std::vector<Tensor> first;
  {
    jit::HoldCompiles hold;  // the compile thread is starved: the loop waits in the queue
    const int64_t fast = FastLoop::iterations_run(), native = FastLoop::native_iterations_run();
    first = f(Tensor(100), Tensor(1.f));
    EXPECT_EQ(FastLoop::iterations_run() - fast, 100);
    EXPECT_EQ(FastLoop::native_iterations_run(), native);
  }
  jit::wait_for_pending();
  const int64_t native = FastLoop::native_iterations_run();
  std::vector<Tensor> second = f(Tensor(100), Tensor(1.f));
  EXPECT_EQ(FastLoop::native_iterations_run() - native, jit::available() ? 100 : 0);  // none without LLVM
  expect_same_bits(first, second);
  jit::set_mode(previous);
}

}  // namespace
}  // namespace ember

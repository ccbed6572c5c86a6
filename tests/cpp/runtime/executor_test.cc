// The execution plan: buffer reuse, in-place writes, parallel runs, argument checks and errors.
#include "ember/runtime/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <thread>

#include "../passes/pass_testing.h"
#include "ember/core/parallel.h"

namespace ember {
namespace {

using testing::run_compiled;
using testing::run_graph;
using testing::trace_function;

std::vector<float> iota(int n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale;
  return v;
}

TEST(Executor, ElementwiseChainWritesInPlaceAndLeavesArgumentsAlone) {
  auto fn = trace_function({Shape({1024})}, [](std::vector<Tensor>& x) {
    Tensor a = exp(x[0] * 0.001f);  // a fresh buffer ...
    Tensor b = a + 1.0f;            // ... that the following ops reuse
    return std::vector<Tensor>{sqrt(b * b)};
  });
  passes::OptimizerOptions options;
  options.elementwise_fusion = false;
  CompiledFunction compiled(fn, options);
  // Every op of the chain may reuse a dying input; for x * 0.001 the run declines, as the caller holds x.
  EXPECT_EQ(compiled.in_place_candidates(), 5);
  options.memory_optimization = false;
  EXPECT_EQ(CompiledFunction(fn, options).in_place_candidates(), 0);
  Tensor x = Tensor::from_vector<float>(iota(1024));
  std::vector<float> before = x.to_vector<float>();
  TensorImpl* args[] = {x.impl()};
  OutputList results;
  ASSERT_TRUE(compiled.run(args, results).ok());
  EXPECT_EQ(x.to_vector<float>(), before);  // the argument's buffer was never written
  auto out = Tensor(results[0]).to_vector<float>();
  for (int i = 0; i < 1024; ++i) EXPECT_NEAR(out[i], std::exp(i * 0.001f) + 1.0f, 1e-4f);
  // A second run gives the same values (buffers from the first are gone or reused safely).
  OutputList again;
  ASSERT_TRUE(compiled.run(args, again).ok());
  EXPECT_EQ(Tensor(again[0]).to_vector<float>(), out);
  EXPECT_EQ(Tensor(results[0]).to_vector<float>(), out);  // the first result was not overwritten
}

// A dynamic-size TensorArray pads its buffer by 0 rows on most writes (python/ember/ops/tensor_array_ops.py):
// Pad may take over its dying input's buffer, which it then leaves as it is, and pads into a fresh one.
TEST(Executor, PadByNothingTakesOverItsDyingInput) {
  auto fn = trace_function(
      {TensorSpec{DType::kFloat32, Shape({kUnknownDim})}, TensorSpec{DType::kInt32, Shape({1, 2})}},
      [](std::vector<Tensor>& x) {
        Tensor a = x[0] * 2.0f;  // a fresh buffer, dying at the Pad
        return std::vector<Tensor>{call_op1("Pad", {a, x[1]})};
      });
  passes::OptimizerOptions options;
  options.elementwise_fusion = false;
  CompiledFunction compiled(fn, options);
  EXPECT_EQ(compiled.in_place_candidates(), 2);  // the Mul and the Pad
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, Shape({4}));
  const std::vector<std::pair<std::vector<int32_t>, std::vector<float>>> cases = {
      {{0, 0}, {2, 4, 6, 8}}, {{0, 2}, {2, 4, 6, 8, 0, 0}}, {{1, 1}, {0, 2, 4, 6, 8, 0}}};
  for (const auto& [p, want] : cases) {
    Tensor paddings = Tensor::from_vector<int32_t>(p, Shape({1, 2}));
    TensorImpl* args[] = {x.impl(), paddings.impl()};
    OutputList results;
    ASSERT_TRUE(compiled.run(args, results).ok());
    EXPECT_EQ(Tensor(results[0]).to_vector<float>(), want);
  }
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Executor, ReturnedIntermediatesAreNotOverwritten) {
  auto fn = trace_function({Shape({4})}, [](std::vector<Tensor>& x) {
    Tensor a = x[0] + 1.0f;
    Tensor b = a * 2.0f;  // a is also a result: b must not write over it
    return std::vector<Tensor>{a, b};
  });
  auto out = run_graph(fn, {Tensor::from_vector<float>({1, 2, 3, 4})}, /*optimize=*/true);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{4, 6, 8, 10}));
}

// Two independent chains of medium-sized products (too small for intra-op parallelism): the parallel path.
std::shared_ptr<FunctionGraph> two_branches() {
  return trace_function({Shape({64, 64}), Shape({64, 64})}, [](std::vector<Tensor>& x) {
    Tensor a = x[0], b = x[1];
    for (int i = 0; i < 12; ++i) {
      a = tanh(matmul(a, x[0]) * 0.01f);
      b = tanh(matmul(b, x[1]) * 0.01f);
    }
    return std::vector<Tensor>{a + b, a};
  });
}

TEST(Executor, IndependentBranchesRunInParallelWithTheSameResult) {
  auto fn = two_branches();
  passes::OptimizerOptions options;
  CompiledFunction compiled(fn, options);
  EXPECT_TRUE(compiled.runs_in_parallel());
  Tensor x = Tensor::from_vector<float>(iota(64 * 64, 1e-4f), Shape({64, 64}));
  Tensor y = Tensor::from_vector<float>(iota(64 * 64, -2e-4f), Shape({64, 64}));
  auto sequential = run_graph(fn, {x, y}, /*optimize=*/false);
  set_inter_op_threads(2);
  for (int run = 0; run < 20; ++run) {
    TensorImpl* args[] = {x.impl(), y.impl()};
    OutputList results;
    ASSERT_TRUE(compiled.run(args, results).ok());
    auto got0 = Tensor(results[0]).to_vector<float>(), want0 = sequential[0].to_vector<float>();
    for (size_t i = 0; i < got0.size(); ++i) ASSERT_NEAR(got0[i], want0[i], 1e-5f);
  }
  set_inter_op_threads(0);
}

TEST(Executor, LargeProductsStaySequentialAndUseIntraOpThreads) {
  auto fn = trace_function({Shape({256, 256}), Shape({256, 256})}, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], x[0]) + matmul(x[1], x[1])};
  });
  EXPECT_FALSE(CompiledFunction(fn).runs_in_parallel());
}

TEST(Executor, ConcurrentCallsOfOneFunction) {
  auto fn = two_branches();
  CompiledFunction compiled(fn);
  Tensor x = Tensor::from_vector<float>(iota(64 * 64, 1e-4f), Shape({64, 64}));
  Tensor y = Tensor::from_vector<float>(iota(64 * 64, -2e-4f), Shape({64, 64}));
  auto want = run_graph(fn, {x, y}, /*optimize=*/false)[0].to_vector<float>();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int run = 0; run < 5; ++run) {
        TensorImpl* args[] = {x.impl(), y.impl()};
        OutputList results;
        if (!compiled.run(args, results).ok()) ++mismatches;
        auto got = Tensor(results[0]).to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i)
          if (std::abs(got[i] - want[i]) > 1e-5f) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// A chain of products: every intermediate lives in the arena, which holds only the few live at once.
TEST(Executor, AnArenaHoldsTheIntermediatesOfAChain) {
  auto fn = trace_function({Shape({32, 32})}, [](std::vector<Tensor>& x) {
    Tensor a = x[0];
    for (int i = 0; i < 10; ++i) a = tanh(matmul(a, x[0]) * 0.05f);
    return std::vector<Tensor>{a};
  });
  CompiledFunction compiled(fn);
  const int64_t value_bytes = 32 * 32 * 4;
  EXPECT_GE(compiled.arena_slots(), 10);
  EXPECT_LE(compiled.arena_bytes(), 3 * value_bytes);
  passes::OptimizerOptions no_reuse;
  no_reuse.memory_optimization = false;
  EXPECT_EQ(CompiledFunction(fn, no_reuse).arena_bytes(), 0);

  Tensor x = Tensor::from_vector<float>(iota(32 * 32, 1e-3f), Shape({32, 32}));
  Tensor y = Tensor::from_vector<float>(iota(32 * 32, -2e-3f), Shape({32, 32}));
  auto want_x = run_graph(fn, {x}, /*optimize=*/false)[0].to_vector<float>();
  auto want_y = run_graph(fn, {y}, /*optimize=*/false)[0].to_vector<float>();
  auto first = run_compiled(compiled, {x});
  auto second = run_compiled(compiled, {y});
  EXPECT_EQ(first[0].to_vector<float>(), want_x);  // the second call's arena use left it alone
  EXPECT_EQ(second[0].to_vector<float>(), want_y);
  EXPECT_EQ(run_compiled(compiled, {x})[0].to_vector<float>(), want_x);
}

// A value read by a view (Reshape) or returned stays out of the arena, so later values cannot overwrite
// what the caller gets.
TEST(Executor, ViewsAndResultsKeepBuffersOfTheirOwn) {
  auto fn = trace_function({Shape({16, 16})}, [](std::vector<Tensor>& x) {
    Tensor a = matmul(x[0], x[0]);
    Tensor viewed = reshape(a, {256});
    Tensor b = matmul(x[0] * 2.0f, x[0]);
    Tensor c = matmul(b, x[0]);
    return std::vector<Tensor>{viewed, c, b};
  });
  CompiledFunction compiled(fn);
  Tensor x = Tensor::from_vector<float>(iota(256, 1e-2f), Shape({16, 16}));
  Tensor y = Tensor::from_vector<float>(iota(256, -3e-2f), Shape({16, 16}));
  auto want_x = run_graph(fn, {x}, /*optimize=*/false);
  auto want_y = run_graph(fn, {y}, /*optimize=*/false);
  auto first = run_compiled(compiled, {x});
  auto second = run_compiled(compiled, {y});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(first[r].to_vector<float>(), want_x[r].to_vector<float>()) << "result " << r;
    EXPECT_EQ(second[r].to_vector<float>(), want_y[r].to_vector<float>()) << "result " << r;
  }
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

// A plan's cached run state, and the arena in it, go with the plan.
TEST(Executor, DestroyedPlansGiveBackTheirArenas) {
  auto fn = trace_function({Shape({512, 512})}, [](std::vector<Tensor>& x) {
    Tensor a = exp(x[0]) * 2.0f;
    return std::vector<Tensor>{reduce_sum(matmul(a, a))};
  });
  Tensor x = Tensor::from_vector<float>(std::vector<float>(512 * 512, 0.001f), Shape({512, 512}));
  {
    CompiledFunction warm(fn);
    ASSERT_GE(warm.arena_bytes(), 512 * 512 * 4);
    run_compiled(warm, {x});
  }
  const int64_t before = resident_bytes();
  for (int i = 0; i < 40; ++i) {
    CompiledFunction compiled(fn);
    run_compiled(compiled, {x});
  }
  EXPECT_LT(resident_bytes() - before, 16 << 20);  // 40 leaked arenas would be 80 MiB
}

// An arena too large to keep between calls is taken afresh each call, with the same values.
TEST(Executor, LargeArenasAreTakenAfreshEachCall) {
  auto fn = trace_function({Shape({1024, 1024})}, [](std::vector<Tensor>& x) {
    Tensor a = matmul(x[0], x[0]) * 0.001f;
    Tensor b = matmul(tanh(a), x[0]);
    return std::vector<Tensor>{reduce_sum(b, {1})};
  });
  CompiledFunction compiled(fn);
  ASSERT_GT(compiled.arena_bytes(), 4 << 20);
  Tensor x = Tensor::from_vector<float>(iota(1024 * 1024, 1e-6f), Shape({1024, 1024}));
  auto want = run_graph(fn, {x}, /*optimize=*/false)[0].to_vector<float>();
  for (int call = 0; call < 3; ++call) {
    auto got = run_compiled(compiled, {x})[0].to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-3f * (1 + std::abs(want[i])));
  }
}

// Parallel runs allocate from the freelists (arena lifetimes are sequential positions) and agree.
TEST(Executor, ParallelRunsOfAPlannedFunctionAgreeWithSequentialOnes) {
  auto fn = two_branches();
  CompiledFunction compiled(fn);
  ASSERT_TRUE(compiled.runs_in_parallel());
  EXPECT_GT(compiled.arena_slots(), 0);
  Tensor x = Tensor::from_vector<float>(iota(64 * 64, 1e-4f), Shape({64, 64}));
  Tensor y = Tensor::from_vector<float>(iota(64 * 64, -2e-4f), Shape({64, 64}));
  set_inter_op_threads(1);
  auto sequential = run_compiled(compiled, {x, y});
  set_inter_op_threads(2);
  auto parallel = run_compiled(compiled, {x, y});
  set_inter_op_threads(1);
  auto sequential_again = run_compiled(compiled, {x, y});
  set_inter_op_threads(0);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(parallel[r].to_vector<float>(), sequential[r].to_vector<float>());
    EXPECT_EQ(sequential_again[r].to_vector<float>(), sequential[r].to_vector<float>());
  }
}

TEST(Executor, WrongArgumentShapeIsAClearError) {
  auto fn =
      trace_function({Shape({3})}, [](std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * 2.0f}; });
  CompiledFunction compiled(fn);
  Tensor wrong = Tensor::from_vector<float>({1, 2});
  TensorImpl* args[] = {wrong.impl()};
  OutputList results;
  Status s = compiled.run(args, results);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("must be float32[3], got float32[2]"), std::string::npos) << s.message();
}

TEST(Executor, KernelErrorsNameTheNode) {
  // With an unknown dimension the plan runs the shape function each call, which rejects a bad size.
  auto fn = trace_function({Shape({-1})}, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{reshape(x[0] * 2.0f, {2, 2})};
  });
  CompiledFunction compiled(fn);
  Tensor good = Tensor::from_vector<float>({1, 2, 3, 4});
  TensorImpl* args[] = {good.impl()};
  OutputList results;
  ASSERT_TRUE(compiled.run(args, results).ok());
  EXPECT_EQ(Tensor(results[0]).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  Tensor bad = Tensor::from_vector<float>({1, 2, 3});
  TensorImpl* bad_args[] = {bad.impl()};
  Status s = compiled.run(bad_args, results);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("Reshape", 0), 0u) << s.message();
}

TEST(Executor, UnknownDimsWriteInPlaceWhenTheShapesAgree) {
  // Unfused, so every op runs on its own with shapes resolved per call (Note [Unknown dimensions]).
  auto fn = trace_function({Shape({-1, 4}), Shape({4})}, [](std::vector<Tensor>& x) {
    Tensor a = exp(x[0] * 0.01f);
    Tensor b = a + x[1];  // [?,4] + [4]: in place over a
    return std::vector<Tensor>{relu(b - 1.0f), b * x[0]};
  });
  passes::OptimizerOptions options;
  options.elementwise_fusion = false;
  CompiledFunction compiled(fn, options);
  EXPECT_GE(compiled.in_place_candidates(), 3);
  EXPECT_EQ(compiled.arena_bytes(), 0);  // sizes are unknown when the plan is compiled
  Tensor bias = Tensor::from_vector<float>({0.5f, -0.5f, 1.0f, 2.0f});
  for (int64_t batch : {3, 0, 1, 5, 3}) {
    Tensor x = Tensor::from_vector<float>(iota(static_cast<int>(batch * 4), 0.25f), Shape({batch, 4}));
    std::vector<float> before = x.to_vector<float>();
    auto results = run_compiled(compiled, {x, bias});
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(x.to_vector<float>(), before);  // the caller's argument is never written over
    ASSERT_EQ(results[0].shape(), Shape({batch, 4}));
    ASSERT_EQ(results[1].shape(), Shape({batch, 4}));
    auto r0 = results[0].to_vector<float>(), r1 = results[1].to_vector<float>();
    auto bv = bias.to_vector<float>();
    for (int64_t i = 0; i < batch * 4; ++i) {
      float b = std::exp(before[i] * 0.01f) + bv[i % 4];
      EXPECT_NEAR(r0[i], std::max(b - 1.0f, 0.0f), 1e-5f) << i;
      EXPECT_NEAR(r1[i], b * before[i], 1e-4f) << i;
    }
  }
  // A broadcast that fails at run time is the op's own error.
  Tensor x = Tensor::from_vector<float>(iota(6), Shape({2, 3}));
  auto bad_fn = trace_function({Shape({-1, -1}), Shape({-1})},
                               [](std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + v[1]}; });
  CompiledFunction bad(bad_fn, options);
  TensorImpl* args[] = {x.impl(), bias.impl()};
  OutputList results;
  Status s = bad.run(args, results);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Add"), std::string::npos) << s.message();
}

TEST(Executor, AnUnknownBatchDoesNotMakeLargeNodesLookCheap) {
  // Six independent chains of four 64x64 products: large nodes at batch 512, better run in a row with
  // intra-op threads. Traced with a None batch the plan must decide the same (it once counted an output
  // of unknown size as small, and ran such graphs on the inter-op threads).
  auto body = [](std::vector<Tensor>& x) {
    std::vector<Tensor> out;
    for (int b = 0; b < 6; ++b) {
      Tensor h = x[0] * static_cast<float>(b + 1);  // distinct chains: nothing for CSE or merging to share
      for (int k = 0; k < 4; ++k) h = matmul(h, x[1]);
      out.push_back(h);
    }
    return out;
  };
  CompiledFunction fixed(trace_function({Shape({512, 64}), Shape({64, 64})}, body));
  CompiledFunction unknown(trace_function({Shape({-1, 64}), Shape({64, 64})}, body));
  EXPECT_FALSE(fixed.runs_in_parallel());
  EXPECT_EQ(unknown.runs_in_parallel(), fixed.runs_in_parallel());
}

TEST(Executor, ValueTooLargeToPlanIsAnErrorNotAnArenaSlot) {
  // 2^31 x 2^31 float32 is 2^64 bytes, which wraps to 0 in int64 arithmetic (3037000500^2 elements, which
  // wrapped to a plausible 581 MB, is now refused when the shape is made): the memory plan gave such a value
  // an arena slot of the wrapped size, the kernels wrote past it and the call returned 0. Such values stay
  // out of the arena, so the allocation reports them when their node runs.
  constexpr int64_t n = int64_t{1} << 31;
  auto fn = trace_function({Shape({})}, [](std::vector<Tensor>& x) {
    return std::vector<Tensor>{reduce_sum(tanh(broadcast_to(x[0], {n, n}) * x[0]) * 2.0f)};
  });
  for (bool fusion : {true, false}) {
    passes::OptimizerOptions options;
    options.elementwise_fusion = fusion;
    CompiledFunction compiled(fn, options);
    EXPECT_LT(compiled.arena_bytes(), int64_t{1} << 40);
    Tensor x = Tensor::from_vector<float>({1.0f}, Shape({}));
    TensorImpl* args[] = {x.impl()};
    OutputList results;
    Status s = compiled.run(args, results);
    EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
  }
}

}  // namespace
}  // namespace ember

#include "ember/api/control_flow.h"

#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

bool graph_has(const FunctionGraph& fn, const std::string& op) {
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i)
    if (fn.graph.node(i).op->name == op) return true;
  return false;
}

TEST(CppControlFlow, CondEagerlyRunsOneBranch) {
  int else_runs = 0;
  auto out = cond(
      Tensor(true), [] { return std::vector<Tensor>{Tensor(1.f)}; },
      [&] {
        ++else_runs;
        return std::vector<Tensor>{Tensor(2.f)};
      });
  EXPECT_EQ(out[0].item<float>(), 1.f);
  EXPECT_EQ(else_runs, 0);
}

TEST(CppControlFlow, StagedCondIsAnIfOverCapturedTensors) {
  // The seed's f(x, y): 1 when y == 0, else x / y, with y known only when f runs.
  auto f = function([](const Tensor& x, const Tensor& y) {
    return cond(
        call_op1("Equal", {y, Tensor(0.f)}), [] { return std::vector<Tensor>{Tensor(1.f)}; },
        [&] { return std::vector<Tensor>{x / y}; })[0];
  });
  EXPECT_EQ(f(Tensor(3.f), Tensor(0.f)).item<float>(), 1.f);
  EXPECT_EQ(f(Tensor(3.f), Tensor(2.f)).item<float>(), 1.5f);
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_TRUE(graph_has(f.graph(Tensor(3.f), Tensor(2.f)), "StatelessIf"));
}

TEST(CppControlFlow, StagedWhileRunsATripCountKnownAtRunTime) {
  auto f = function([](const Tensor& n, const Tensor& x) {
    auto out = while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                          [](const std::vector<Tensor>& v) {
                            return std::vector<Tensor>{v[0] + Tensor(int32_t{1}), v[1] * 2.f};
                          },
                          {Tensor(int32_t{0}), x});
    return out[1];
  });
  EXPECT_EQ(f(Tensor(int32_t{10}), Tensor(1.f)).item<float>(), 1024.f);
  EXPECT_EQ(f(Tensor(int32_t{0}), Tensor(3.f)).item<float>(), 3.f);
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_TRUE(graph_has(f.graph(Tensor(int32_t{1}), Tensor(1.f)), "StatelessWhile"));
}

TEST(CppControlFlow, WhileWithMaximumIterationsAndShapeInvariants) {
  auto grow = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{concat({v[0], v[0]}, 0)}; };
  auto small = [](const std::vector<Tensor>& v) {
    return call_op1("Less", {size(v[0]), Tensor(int32_t{100})});
  };
  auto f = function([&](const Tensor& x) { return while_loop(small, grow, {x}, 3, {Shape{-1}})[0]; });
  EXPECT_EQ(f(Tensor({1.f})).shape(), (Shape{8}));  // three doublings, not seven
  auto g = function([&](const Tensor& x) { return while_loop(small, grow, {x})[0]; });
  EXPECT_THROW(g(Tensor({1.f})), StatusError);  // the shape changes without an invariant
  EXPECT_EQ(while_loop(small, grow, {Tensor({1.f})}, std::nullopt, {Shape{-1}})[0].shape(), (Shape{128}));
}

TEST(CppControlFlow, SwitchCaseRunsTheLastBranchOutOfRange) {
  std::vector<Branch> branches = {[] { return std::vector<Tensor>{Tensor(10)}; },
                                  [] { return std::vector<Tensor>{Tensor(20)}; }};
  auto f = function([&](const Tensor& i) { return switch_case(i, branches)[0]; });
  EXPECT_EQ(f(Tensor(int32_t{0})).item<int32_t>(), 10);
  EXPECT_EQ(f(Tensor(int32_t{1})).item<int32_t>(), 20);
  EXPECT_EQ(f(Tensor(int32_t{7})).item<int32_t>(), 20);
  EXPECT_EQ(switch_case(Tensor(int32_t{-1}), branches)[0].item<int32_t>(), 20);
}

TEST(CppControlFlow, BranchesMayReturnOuterTensorsUnchanged) {
  auto f = function([](const Tensor& x, const Tensor& y) {
    return cond(
        x > y, [&] { return std::vector<Tensor>{x}; }, [&] { return std::vector<Tensor>{y}; })[0];
  });
  EXPECT_EQ(f(Tensor(3.f), Tensor(7.f)).item<float>(), 7.f);
  EXPECT_EQ(f(Tensor(9.f), Tensor(7.f)).item<float>(), 9.f);
}

TEST(CppControlFlow, MismatchedBranchesAreAnError) {
  auto f = function([](const Tensor& x) {
    return cond(
        x > Tensor(0.f), [&] { return std::vector<Tensor>{x}; },
        [&] { return std::vector<Tensor>{cast(x, DType::kInt32)}; })[0];
  });
  EXPECT_THROW(f(Tensor(1.f)), StatusError);
}

}  // namespace
}  // namespace ember

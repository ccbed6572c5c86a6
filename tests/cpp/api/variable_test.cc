#include "ember/api/variable.h"

#include <gtest/gtest.h>

#include <thread>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(CppVariable, ReadAssignAndUseInExpressions) {
  Variable v(Tensor({1.f, 2.f}), "v");
  EXPECT_EQ(v.read().to_vector<float>(), (std::vector<float>{1, 2}));
  v.assign(Tensor({3.f, 4.f})).assign_add(Tensor({1.f, 1.f}));
  EXPECT_EQ((Tensor(v) * 2.0f).to_vector<float>(), (std::vector<float>{8, 10}));
  EXPECT_THROW(v.assign(Tensor({1.f, 2.f, 3.f})), StatusError);  // wrong shape
}

TEST(CppVariable, StagedFunctionsReadAndWriteInProgramOrder) {
  Variable a(Tensor(1.0f), "a"), b(Tensor(2.0f), "b");
  auto f = function([&](const Tensor& x, const Tensor& y) {
    a.assign(y * b.read());
    b.assign_add(x * a.read());
    return a.read() + b.read();
  });
  EXPECT_EQ(f(Tensor(2.0f), Tensor(3.0f)).item<float>(), 20.0f);
  EXPECT_EQ(a.read().item<float>(), 6.0f);
  EXPECT_EQ(b.read().item<float>(), 14.0f);
  EXPECT_EQ(f(Tensor(2.0f), Tensor(3.0f)).item<float>(), 140.0f);  // a = 3 * 14, b = 14 + 2 * 42
}

TEST(CppVariable, DeletedVariableIsAClearError) {
  auto v = std::make_unique<Variable>(Tensor(1.0f), "short_lived");
  auto f = function([&](const Tensor& x) { return x + v->read(); });
  EXPECT_EQ(f(Tensor(1.0f)).item<float>(), 2.0f);
  v.reset();
  try {
    f(Tensor(1.0f));
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_NE(std::string(e.what()).find("'short_lived' has been deleted"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(CppVariable, ConcurrentAssignAddLosesNoUpdate) {
  Variable total(Tensor(0.0f), "total");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) total.assign_add(Tensor(1.0f));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(total.read().item<float>(), 4000.0f);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// tf.Variable(..., shape=[None]): assignments may change the length, updates need the current shape.
TEST(CppVariable, PartiallyKnownShapeTakesEveryValueItAdmits) {
  Variable v(Tensor({1.f, 2.f, 3.f}), Shape{kUnknownDim}, "lengths");
  EXPECT_EQ(v.shape(), Shape{kUnknownDim});
  v.assign(Tensor({4.f, 5.f}));
  EXPECT_EQ(v.read().shape(), Shape{2});
  v.assign_add(Tensor({1.f, 1.f}));
  EXPECT_EQ(v.read().to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(v.shape(), Shape{kUnknownDim});                            // the declared shape stays
  EXPECT_THROW(v.assign(Tensor(1.f)), StatusError);                    // another rank
  EXPECT_THROW(v.assign_add(Tensor({1.f, 1.f, 1.f})), StatusError);    // not the current shape
  EXPECT_EQ(v.read().to_vector<float>(), (std::vector<float>{5, 6}));  // failed writes change nothing

  Variable any(Tensor(1.f), Shape::unknown_rank(), "any_rank");
  any.assign(Tensor({1.f, 2.f}));
  EXPECT_EQ(any.read().shape(), Shape{2});
}

TEST(CppVariable, DeclaredShapeMustAdmitTheInitialValue) {
  try {
    Variable v(Tensor({1.f, 2.f}), Shape{3}, "mismatch");
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_NE(std::string(e.what()).find("initial value's shape [2] is not compatible with the declared "
                                         "shape [3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Variable(Tensor({1.f, 2.f}), Shape{kUnknownDim, kUnknownDim}), StatusError);
}

TEST(CppVariable, OneTraceReadsEveryLength) {
  Variable v(Tensor({1.f, 2.f}), Shape{kUnknownDim}, "v");
  auto f = function([&](const Tensor& scale) { return v.read() * scale; });
  EXPECT_EQ(f(Tensor(2.f)).to_vector<float>(), (std::vector<float>{2, 4}));
  v.assign(Tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(f(Tensor(2.f)).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(f.tracing_count(), 1);
  const FunctionGraph& traced = f.graph(Tensor(2.f));
  EXPECT_EQ(traced.graph.spec(traced.results[0]).shape, Shape{kUnknownDim});

  Variable any(Tensor(1.f), Shape::unknown_rank(), "any_rank");
  auto g = function([&](const Tensor& scale) { return any.read() * scale; });
  any.assign(Tensor({1.f, 2.f}));
  EXPECT_EQ(g(Tensor(3.f)).to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_FALSE(g.graph(Tensor(3.f)).graph.spec(g.graph(Tensor(3.f)).results[0]).shape.rank_known());
}

TEST(CppVariable, StagedAssignChangesTheLength) {
  Variable v(Tensor({1.f}), Shape{kUnknownDim}, "v");
  auto set = function([&](const Tensor& x) {
    v.assign(x);
    return reduce_sum(v.read());
  });
  EXPECT_EQ(set(Tensor({1.f, 2.f, 3.f})).item<float>(), 6.0f);
  EXPECT_EQ(v.read().shape(), Shape{3});
  EXPECT_THROW(set(Tensor(1.f)), StatusError);  // a scalar does not fit [?]: refused while tracing
}

}  // namespace
}  // namespace ember

// Gradient rules of the element-wise math ops, AddN and Cast (ops/math.cc): each against central finite
// differences in float64 at points where the op is smooth, binary ops under every broadcasting pattern,
// and direct checks where finite differences do not apply (ties, x <= 0 in Pow, dtype changes).
#include <gtest/gtest.h>

#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/kernels/elementwise.h"
#include "ember/ops/registry.h"
#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/grad_trace_check.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::rule_grads;
using testing::values;

// n values in [lo, hi) with shape `dims`.
TensorRef uniform(std::vector<int64_t> dims, double lo, double hi, unsigned seed = 7) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return make_tensor(dims, random_values(n, lo, hi, seed));
}

// Values spread over [-2, 2] but at least 0.1 away from each of `kinks`.
TensorRef away_from(std::vector<int64_t> dims, std::vector<double> kinks, double lo = -2, double hi = 2) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v = random_values(n, lo, hi, 11);
  for (double& x : v)
    for (double k : kinks)
      if (std::abs(x - k) < 0.1) x = k + (x < k ? -0.15 : 0.15);
  return make_tensor(dims, v);
}

// Where each differentiable element-wise op is checked: an interval for each input, and the points the op
// has kinks at (inputs are kept 0.1 away from them). The tests below run over the rows of
// kernels/elementwise_ops.h and fail for a differentiable row without a domain here: adding an op means
// adding its domain.
struct Domain {
  const char* op;
  double lo, hi;               // x
  double y_lo = -2, y_hi = 2;  // y (binary ops)
  std::vector<double> kinks = {};
};

const Domain kDomains[] = {
    {"Neg", -2, 2},
    {"Exp", -2, 2},
    {"Log", 0.2, 3},
    {"Log1p", -0.7, 2},
    {"Expm1", -2, 2},
    {"Sqrt", 0.2, 3},
    {"Rsqrt", 0.2, 3},
    {"Square", -2, 2},
    {"Reciprocal", 0.2, 3},
    {"Sin", -3, 3},
    {"Cos", -3, 3},
    {"Tan", -1.2, 1.2},
    {"Tanh", -2, 2},
    {"Sigmoid", -4, 4},
    {"Softplus", -4, 4},
    {"Erf", -2, 2},
    {"Erfc", -2, 2},
    {"Abs", -2, 2, -2, 2, {0}},
    {"Relu", -2, 2, -2, 2, {0}},
    {"Elu", -2, 2, -2, 2, {0}},
    {"Sign", -2, 2, -2, 2, {0}},
    {"Relu6", -2, 8, -2, 2, {0, 6}},
    {"Add", -2, 2},
    {"Sub", -2, 2},
    {"Mul", -2, 2},
    {"SquaredDifference", -2, 2},
    {"Maximum", -2, 2},
    {"Minimum", -2, 2},
    {"RealDiv", -2, 2, 0.5, 2},
    {"Pow", 0.3, 2},
    // FloorMod jumps wherever x / y is an integer: checked at chosen points (FloorModAwayFromJumps).
    {"FloorMod", 0, 0},
    {"Asin", -0.8, 0.8},
    {"Acos", -0.8, 0.8},
    {"Atan", -2, 2},
    {"Asinh", -2, 2},
    {"Acosh", 1.2, 3},
    {"Atanh", -0.8, 0.8},
    {"Lgamma", 0.3, 3},
    {"Digamma", 0.3, 3},
    {"Erfinv", -0.8, 0.8},
    {"Sinh", -2, 2},
    {"Cosh", -2, 2},
    {"Atan2", 0.5, 2, -2, 2},
    // Polygamma's order is an integer (no gradient, and NaN between integers): PolygammaGradient.
    {"Polygamma", 0, 0},
    // Away from the zero that masks the other operand (there the gradient jumps).
    {"DivNoNan", -2, 2, 0.5, 2},
    {"MulNoNan", -2, 2, 0.5, 2},
    {"Xlogy", 0.5, 2, 0.3, 3},
    {"Xdivy", 0.5, 2, 0.5, 2},
    {"Xlog1py", 0.5, 2, -0.5, 2},
};

const Domain* domain_of(std::string_view op) {
  for (const Domain& d : kDomains)
    if (op == d.op) return &d;
  return nullptr;
}

TensorRef sample(const Domain& d, std::vector<int64_t> dims, unsigned seed = 7) {
  if (d.kinks.empty()) return uniform(dims, d.lo, d.hi, seed);
  return away_from(dims, d.kinks, d.lo, d.hi);
}

// The rows of kernels/elementwise_ops.h that have a gradient rule, as (op, domain).
std::vector<std::pair<const char*, const Domain*>> differentiable_rows(bool unary) {
  std::vector<std::pair<const char*, const Domain*>> rows;
  auto add = [&](const kernels::ElementwiseInfo& info) {
    if (op_def(info.op_name).grad != nullptr) rows.emplace_back(info.op_name, domain_of(info.op_name));
  };
  if (unary) {
    for (const auto& info : kernels::kUnaryInfo) add(info);
  } else {
    for (const auto& info : kernels::kBinaryInfo) add(info);
  }
  return rows;
}

TEST(MathGrad, EveryDifferentiableElementwiseOpHasATestDomain) {
  for (bool unary : {true, false})
    for (const auto& [op, domain] : differentiable_rows(unary)) EXPECT_NE(domain, nullptr) << op;
}

TEST(MathGrad, UnaryOps) {
  for (const auto& [op, domain] : differentiable_rows(true)) {
    SCOPED_TRACE(op);
    ASSERT_NE(domain, nullptr);
    EXPECT_GRADIENT_OK(op, {sample(*domain, {3, 4})}, {});
    if (domain->kinks.empty()) {
      EXPECT_GRADIENT_OK(op, {uniform({}, domain->lo, domain->hi, 3)}, {});
    }
  }
  EXPECT_GRADIENT_OK("Reciprocal", {uniform({2, 3}, -3, -0.2)}, {});
}

TEST(MathGrad, KinksTakeTensorFlowsSide) {
  auto x = make_tensor({5}, {-1, 0, 3, 6, 7});
  auto dy = make_tensor({5}, {1, 1, 1, 1, 1});
  EXPECT_EQ(values(rule_grads("Relu", {x}, {}, {dy})[0]), (std::vector<double>{0, 0, 1, 1, 1}));
  EXPECT_EQ(values(rule_grads("Relu6", {x}, {}, {dy})[0]), (std::vector<double>{0, 0, 1, 0, 0}));
  EXPECT_EQ(values(rule_grads("Abs", {x}, {}, {dy})[0]), (std::vector<double>{-1, 0, 1, 1, 1}));
  EXPECT_EQ(values(rule_grads("Sign", {x}, {}, {dy})[0]), (std::vector<double>{0, 0, 0, 0, 0}));
}

// Shape pairs covering equal shapes, a trailing vector, two-sided broadcasting, a scalar on either side
// and a lower-rank operand with size-1 dims.
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBroadcastPairs = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{2, 3}, {}}, {{4, 1, 3}, {2, 1}},
};

TEST(MathGrad, BinaryOpsBroadcast) {
  for (const auto& [op, domain] : differentiable_rows(false)) {
    SCOPED_TRACE(op);
    ASSERT_NE(domain, nullptr);
    if (std::string_view(op) == "FloorMod" || std::string_view(op) == "Polygamma") continue;
    for (const auto& [xs, ys] : kBroadcastPairs) {
      // Distinct seeds: Maximum's and Minimum's operands never tie.
      EXPECT_GRADIENT_OK(
          op, {uniform(xs, domain->lo, domain->hi, 5), uniform(ys, domain->y_lo, domain->y_hi, 6)}, {});
    }
  }
  for (const auto& [xs, ys] : kBroadcastPairs)
    EXPECT_GRADIENT_OK("RealDiv", {uniform(xs, -2, 2, 3), uniform(ys, -2, -0.5, 4)}, {});
}

// d/dx polygamma(n, x) = polygamma(n + 1, x); the integer order gets no gradient.
TEST(MathGrad, PolygammaGradient) {
  auto n = make_tensor({3}, {0, 1, 2});
  auto x = make_tensor({3}, {1, 1, 2.5});
  auto dy = make_tensor({3}, {1, 1, 1});
  auto g = rule_grads("Polygamma", {n, x}, {}, {dy});
  EXPECT_FALSE(g[0]);
  const std::vector<double> dx = values(g[1]);
  EXPECT_NEAR(dx[0], 1.6449340668482264, 1e-13);   // polygamma(1, 1) = pi^2 / 6
  EXPECT_NEAR(dx[1], -2.4041138063191885, 1e-13);  // polygamma(2, 1) = -2 zeta(3)
  const double h = 1e-6;  // polygamma(2, x) against a central difference of polygamma(1, x)
  auto fd = [&](double at) {
    auto hi = values(
        testing::run_op(op_def("Polygamma"), {make_tensor({}, {1}), make_tensor({}, {at + h})}, {})[0]);
    auto lo = values(
        testing::run_op(op_def("Polygamma"), {make_tensor({}, {1}), make_tensor({}, {at - h})}, {})[0]);
    return (hi[0] - lo[0]) / (2 * h);
  };
  EXPECT_NEAR(values(rule_grads("Polygamma", {make_tensor({}, {1}), make_tensor({}, {2.5})}, {},
                                {make_tensor({}, {1})})[1])[0],
              fd(2.5), 1e-6);
}

// Where x <= 0 the y-gradient is taken as 0 (and stays finite); the x-gradient is y * x^(y - 1).
TEST(MathGrad, PowAtNonPositiveBase) {
  auto x = make_tensor({3}, {0, -2, 2});
  auto y = make_tensor({3}, {2, 3, 0.5});
  auto dy = make_tensor({3}, {1, 1, 1});
  auto g = rule_grads("Pow", {x, y}, {}, {dy});
  EXPECT_EQ(values(g[0])[0], 0.0);
  EXPECT_DOUBLE_EQ(values(g[0])[1], 12.0);
  EXPECT_DOUBLE_EQ(values(g[0])[2], 0.5 / std::sqrt(2.0));
  EXPECT_EQ(values(g[1])[0], 0.0);
  EXPECT_EQ(values(g[1])[1], 0.0);
  EXPECT_DOUBLE_EQ(values(g[1])[2], std::sqrt(2.0) * std::log(2.0));
}

TEST(MathGrad, MaximumMinimumTiesGoToX) {
  auto x = make_tensor({3}, {1, 2, 3});
  auto y = make_tensor({3}, {1, 5, 0});
  auto dy = make_tensor({3}, {10, 20, 30});
  auto gmax = rule_grads("Maximum", {x, y}, {}, {dy});
  EXPECT_EQ(values(gmax[0]), (std::vector<double>{10, 0, 30}));
  EXPECT_EQ(values(gmax[1]), (std::vector<double>{0, 20, 0}));
  auto gmin = rule_grads("Minimum", {x, y}, {}, {dy});
  EXPECT_EQ(values(gmin[0]), (std::vector<double>{10, 20, 0}));
  EXPECT_EQ(values(gmin[1]), (std::vector<double>{0, 0, 30}));
}

TEST(MathGrad, FloorModAwayFromJumps) {
  // x / y stays 0.2 or more away from an integer, where floor(x / y) is locally constant.
  auto x = make_tensor({2, 3}, {5.5, -5.5, 7.3, 1.3, -2.9, 4.1});
  auto y = make_tensor({2, 3}, {2, 2, -3, 1.1, 1.25, -1.7});
  EXPECT_GRADIENT_OK("FloorMod", {x, y}, {});
  EXPECT_GRADIENT_OK("FloorMod", {x, make_tensor({}, {2.2})}, {});
}

TEST(MathGrad, AddNSendsTheGradientToEveryInput) {
  EXPECT_GRADIENT_OK("AddN", {uniform({2, 3}, -1, 1, 1)}, {});
  EXPECT_GRADIENT_OK("AddN",
                     {uniform({2, 3}, -1, 1, 1), uniform({2, 3}, -1, 1, 2), uniform({2, 3}, -1, 1, 3)}, {});
}

TEST(MathGrad, CastBetweenFloatsCastsBack) {
  auto x = make_tensor({2}, {1.5, -2.25});
  AttrList to_f32;
  to_f32.push_back(DType::kFloat32);
  auto g = rule_grads("Cast", {x}, to_f32, {make_tensor({2}, {3, 4}, DType::kFloat32)});
  ASSERT_TRUE(g[0]);
  EXPECT_EQ(values(g[0]), (std::vector<double>{3, 4}));
  AttrList to_f64;
  to_f64.push_back(DType::kFloat64);
  EXPECT_GRADIENT_OK("Cast", {x}, to_f64);
}

TEST(MathGrad, CastThroughIntegersHasNoGradient) {
  AttrList to_i32;
  to_i32.push_back(DType::kInt32);
  auto g =
      rule_grads("Cast", {make_tensor({2}, {1.5, 2})}, to_i32, {make_tensor({2}, {1, 1}, DType::kInt32)});
  EXPECT_FALSE(g[0]);
  AttrList to_f64;
  to_f64.push_back(DType::kFloat64);
  g = rule_grads("Cast", {make_tensor({2}, {1, 2}, DType::kInt32)}, to_f64, {make_tensor({2}, {1, 1})});
  EXPECT_FALSE(g[0]);
}

// The rules emit ops in the dtype they receive, so 16-bit and 32-bit floats work too.
TEST(MathGrad, LowerPrecisionFloats) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    auto x = make_tensor({2}, {0.5, 2}, d);
    auto y = make_tensor({}, {2}, d);
    auto dy = make_tensor({2}, {1, 1}, d);
    auto g = rule_grads("Pow", {x, y}, {}, {dy});
    ASSERT_EQ(g[0]->dtype(), d);
    ASSERT_EQ(g[1]->dtype(), d);
    EXPECT_EQ(g[1]->shape(), Shape());
    AttrList attrs;
    attrs.push_back(DType::kFloat64);
    auto gc = rule_grads("Cast", {x}, attrs, {make_tensor({2}, {1, 1})});
    EXPECT_EQ(gc[0]->dtype(), d);
    EXPECT_EQ(rule_grads("Tanh", {x}, {}, {dy})[0]->dtype(), d);
  }
}

// ---- Second order: each rule recorded on a tape and differentiated again.

TEST(MathSecondOrder, UnaryOps) {
  for (const auto& [op, domain] : differentiable_rows(true)) {
    SCOPED_TRACE(op);
    ASSERT_NE(domain, nullptr);
    EXPECT_SECOND_ORDER_OK(op, {sample(*domain, {3, 4})}, {});
  }
}

TEST(MathSecondOrder, BinaryOps) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
      {{2, 3}, {2, 3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}};
  for (const auto& [xs, ys] : pairs) {
    for (const auto& [op, domain] : differentiable_rows(false)) {
      SCOPED_TRACE(op);
      if (std::string_view(op) == "FloorMod" || std::string_view(op) == "Polygamma") continue;
      EXPECT_SECOND_ORDER_OK(
          op, {uniform(xs, domain->lo, domain->hi, 5), uniform(ys, domain->y_lo, domain->y_hi, 6)}, {});
    }
  }
  EXPECT_SECOND_ORDER_OK("FloorMod", {make_tensor({3}, {5.5, -5.5, 7.3}), make_tensor({3}, {2, 2, -3})}, {});
  EXPECT_SECOND_ORDER_OK("AddN", {uniform({2, 3}, -1, 1, 1), uniform({2, 3}, -1, 1, 2)}, {});
  AttrList to_f64;
  to_f64.push_back(DType::kFloat64);
  EXPECT_SECOND_ORDER_OK("Cast", {uniform({2}, -1, 1)}, to_f64);
}

// ---- While tracing: every op a rule emits becomes a graph node, and the compiled graph gives the
// eager rule's result.

TEST(MathTracedGrad, EveryRule) {
  for (const auto& [op, domain] : differentiable_rows(true)) {
    SCOPED_TRACE(op);
    ASSERT_NE(domain, nullptr);
    EXPECT_TRACED_GRADIENT_OK(op, {sample(*domain, {2, 3})}, {});
  }
  for (const auto& [op, domain] : differentiable_rows(false)) {
    SCOPED_TRACE(op);
    EXPECT_TRACED_GRADIENT_OK(op, {uniform({2, 1}, 0.5, 2, 1), uniform({3}, 0.5, 2, 2)}, {});
  }
  EXPECT_TRACED_GRADIENT_OK("AddN", {uniform({2, 3}, -1, 1, 1), uniform({2, 3}, -1, 1, 2)}, {});
  AttrList to_f32;
  to_f32.push_back(DType::kFloat32);
  EXPECT_TRACED_GRADIENT_OK("Cast", {uniform({2, 3}, -1, 1)}, to_f32);
}

// The ops TensorFlow does not differentiate either (piecewise constant, bool-valued or integer bit ops).
TEST(MathGrad, NotDifferentiableOpsAreMarked) {
  constexpr const char* kNotDifferentiableRows[] = {
      "Floor",     "Ceil",      "Round",        "FloorDiv",   "LogicalNot", "LogicalAnd",
      "LogicalOr", "IsNan",     "IsFinite",     "Equal",      "NotEqual",   "Less",
      "LessEqual", "Greater",   "GreaterEqual", "BitwiseAnd", "BitwiseOr",  "BitwiseXor",
      "Invert",    "LeftShift", "RightShift",   "Rint"};
  for (const char* name : kNotDifferentiableRows) {
    const OpDef& op = op_def(name);
    EXPECT_TRUE(op.has_flag(kNotDifferentiable)) << name;
    EXPECT_EQ(op.grad, nullptr) << name;
  }
  EXPECT_EQ(differentiable_rows(true).size() + differentiable_rows(false).size() +
                std::size(kNotDifferentiableRows),
            std::size(kernels::kUnaryInfo) + std::size(kernels::kBinaryInfo));
}

}  // namespace
}  // namespace ember

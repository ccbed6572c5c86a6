// The special-function ops of src/ember/ops/special_functions.cc: shape functions in the mini-language,
// a few values against their definitions, and the gradient rules against central finite differences (away
// from the poles). tests/python/test_special_functions.py compares them with TensorFlow, SciPy and mpmath.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::run_op;

TEST(SpecialFunctionShapes, BroadcastingAndBetainc) {
  INFER_OK("Igamma", "[2,1,3];[4,1]", {}, "[2,4,3]");
  INFER_OK("Zeta", "[3]:float64;[]:float64", {}, "[3]:float64");
  INFER_OK("BesselJ0", "[2,?]", {}, "[2,?]");
  // Betainc: one shape, or scalars (TensorFlow's rule), unknown dims filled from the others.
  INFER_OK("Betainc", "[2,3];[];[2,3]", {}, "[2,3]");
  INFER_OK("Betainc", "[];[];[]", {}, "[]");
  INFER_OK("Betainc", "[?,3];[2,?];[]", {}, "[2,3]");
  INFER_ERROR("Betainc", "[2,3];[3];[2,3]", {}, "a, b and x must have the same shape or be scalars");
  INFER_ERROR("IgammaGradA", "[2];[3]", {}, "");
}

double scalar_of(const char* op, std::vector<double> args) {
  std::vector<TensorRef> inputs;
  for (double a : args) inputs.push_back(make_tensor({}, {a}));
  return testing::values(run_op(op_def(op), inputs, {})[0])[0];
}

TEST(SpecialFunctionValues, Definitions) {
  constexpr double kPi = std::numbers::pi;
  EXPECT_NEAR(scalar_of("Igamma", {1, 2}), 1 - std::exp(-2.0), 1e-15);  // P(1, x) = 1 - e^-x
  EXPECT_NEAR(scalar_of("Igammac", {1, 2}), std::exp(-2.0), 1e-16);
  EXPECT_NEAR(scalar_of("Betainc", {2, 3, 0.5}), 11.0 / 16, 1e-15);
  EXPECT_NEAR(scalar_of("Zeta", {2, 1}), kPi * kPi / 6, 1e-15);
  EXPECT_NEAR(scalar_of("Spence", {2}), -kPi * kPi / 12, 1e-15);  // Li2(-1)
  EXPECT_NEAR(scalar_of("Spence", {0.5}), kPi * kPi / 12 - std::log(2.0) * std::log(2.0) / 2, 1e-15);
  EXPECT_NEAR(scalar_of("Ndtri", {0.975}), 1.959963984540054, 1e-14);
  EXPECT_NEAR(scalar_of("FresnelCos", {1e9}), 0.5, 1e-9);
  EXPECT_EQ(scalar_of("BesselK0", {0}), INFINITY);  // TensorFlow's edges
  EXPECT_EQ(scalar_of("BesselY1", {-1}), -INFINITY);
  EXPECT_TRUE(std::isnan(scalar_of("Expint", {-1})));
  EXPECT_EQ(scalar_of("Igamma", {NAN, 0}), 0);
  // d/da P(a, x) against a central difference of Igamma.
  const double h = 1e-6;
  EXPECT_NEAR(scalar_of("IgammaGradA", {1, 1}),
              (scalar_of("Igamma", {1 + h, 1}) - scalar_of("Igamma", {1 - h, 1})) / (2 * h), 1e-8);
}

TEST(SpecialFunctionGrad, FiniteDifferences) {
  auto grid = [](double lo, double hi) {
    std::vector<double> v;
    for (int i = 0; i < 6; ++i) v.push_back(lo + (hi - lo) * i / 5);
    return make_tensor({2, 3}, v);
  };
  for (const char* op : {"BesselI0", "BesselI0e", "BesselI1", "BesselI1e", "BesselJ0", "BesselJ1", "Dawsn",
                         "FresnelCos", "FresnelSin"}) {
    SCOPED_TRACE(op);
    EXPECT_GRADIENT_OK(op, {grid(-3, 2.7)}, {});
  }
  for (const char* op :
       {"BesselY0", "BesselY1", "BesselK0", "BesselK0e", "BesselK1", "BesselK1e", "Expint", "Spence"}) {
    SCOPED_TRACE(op);
    EXPECT_GRADIENT_OK(op, {grid(0.3, 3.1)}, {});
  }
  EXPECT_GRADIENT_OK("Ndtri", {grid(0.05, 0.9)}, {});
  EXPECT_GRADIENT_OK("Igamma", {grid(0.5, 3), make_tensor({3}, {0.4, 1.3, 2.2})}, {});
  EXPECT_GRADIENT_OK("Igammac", {make_tensor({2, 1}, {0.7, 2.5}), grid(0.3, 4)}, {});
}

}  // namespace
}  // namespace ember

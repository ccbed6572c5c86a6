#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

TEST(MathShapes, Broadcast) {
  INFER_OK("Add", "[2,3];[3]", {}, "[2,3]");
  INFER_OK("Add", "[2,?];[1,3]", {}, "[2,3]");
  INFER_OK("Add", "?;[3]", {}, "<unknown>");
  INFER_OK("Less", "[4,1];[1,5]", {}, "[4,5]:bool");
  INFER_ERROR("Add", "[2,3];[4]", {}, "not broadcastable");
  INFER_ERROR("Add", "[2]:float32;[2]:int32", {}, "does not promote");
  INFER_ERROR("Exp", "[2]:int32", {}, "must have a dtype in");
}

TEST(MathKernels, BroadcastAddMatchesLoop) {
  std::vector<float> a(4 * 5), b(5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 100.0f * static_cast<float>(i);
  Tensor out = Tensor::from_vector(a, {4, 5}) + Tensor::from_vector(b, {5});
  auto v = out.to_vector<float>();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) EXPECT_EQ(v[r * 5 + c], a[r * 5 + c] + b[c]);
  Tensor outer = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3, 1}) *
                 Tensor::from_vector(std::vector<float>{10, 20}, {1, 2});
  EXPECT_EQ(outer.to_vector<float>(), (std::vector<float>{10, 20, 20, 40, 30, 60}));
}

TEST(MathKernels, LargeParallelAddIsExact) {
  const int64_t n = 1 << 20;
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1000), b[i] = 1.0f;
  auto v = (Tensor::from_vector(a) + Tensor::from_vector(b)).to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) EXPECT_EQ(v[i], a[i] + 1.0f);
}

TEST(MathKernels, IntegerSemantics) {
  Tensor a = Tensor::from_vector(std::vector<int32_t>{-7, 7, -7, 7});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{2, 2, -2, -2});
  EXPECT_EQ(floordiv(a, b).to_vector<int32_t>(), (std::vector<int32_t>{-4, 3, 3, -4}));
  EXPECT_EQ(floormod(a, b).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, -1, -1}));
  EXPECT_THROW(floordiv(a, Tensor::from_vector(std::vector<int32_t>{1, 0, 1, 1})), StatusError);
  EXPECT_EQ(divide(a, b).dtype(), DType::kFloat64);
}

TEST(MathKernels, HalfTypesComputeInFloat) {
  Tensor h = cast(Tensor({0.5f, 1.5f, -2.0f}), DType::kFloat16);
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  auto v = cast(exp(h), DType::kFloat32).to_vector<float>();
  EXPECT_NEAR(v[0], std::exp(0.5f), 2e-3);
  Tensor bf = cast(Tensor({3.0f}), DType::kBFloat16);
  EXPECT_EQ(cast(bf * bf, DType::kFloat32).item<float>(), 9.0f);
}

}  // namespace
}  // namespace ember

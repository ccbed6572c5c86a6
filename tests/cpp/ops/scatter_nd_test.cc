// Shape functions (in the mini-language) and finite-difference gradients of the N-d index, segment and
// selection ops: ops/scatter_nd.cc and ops/sort.cc. Values are compared with TensorFlow in
// tests/python/test_registry_vs_tensorflow.py and test_indexing_ops.py.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::int32_scalar;
using testing::make_tensor;
using testing::random_tensor;
using Dims = std::vector<int64_t>;

TensorRef ints(Dims dims, const std::vector<double>& values) {
  return make_tensor(std::move(dims), values, DType::kInt32);
}

TEST(ScatterNdShape, GatherNd) {
  INFER_OK("GatherNd", "[4,3,5];[2,2]:int32", {}, "[2,5]");
  INFER_OK("GatherNd", "[4,3,5];[7,1,3]:int64", {}, "[7,1]");
  INFER_OK("GatherNd", "[?,3,5];[?,2]:int32", {}, "[?,5]");
  INFER_OK("GatherNd", "[4,3];[2,?]:int32", {}, "<unknown>");
  INFER_ERROR("GatherNd", "[4,3];[2,3]:int32", {}, "index depth");
  INFER_ERROR("GatherNd", "[4,3];[]:int32", {}, "at least 1-D");
}

TEST(ScatterNdShape, ScatterNdAndTensorScatter) {
  INFER_OK("ScatterNd", "[3,1]:int32;[3,2];=[5,2]", {}, "[5,2]");
  INFER_OK("ScatterNd", "[?,1]:int32;[?,2];=[?,2]", {}, "[?,2]");
  INFER_ERROR("ScatterNd", "[3,1]:int32;[3,3];=[5,2]", {}, "expected updates of shape [3,2]");
  INFER_OK("TensorScatterUpdate", "[5,2];[3,1]:int32;[3,2]", {}, "[5,2]");
  INFER_OK("TensorScatterMax", "[?,?];[?,2]:int32;[?]", {}, "[?,?]");
  INFER_ERROR("TensorScatterAdd", "[5,2];[3,2]:int32;[3,2]", {}, "expected updates of shape [3]");
}

TEST(ScatterNdShape, SegmentsAndSelection) {
  INFER_OK("UnsortedSegmentMax", "[5,2];[5]:int32;=4", {}, "[4,2]");
  INFER_ERROR("UnsortedSegmentProd", "[5,2];[4]:int32;=4", {}, "must be a prefix");
  INFER_OK("SegmentSum", "[5,2];[5]:int32", {}, "[?,2]");
  INFER_ERROR("SegmentMax", "[5,2];[4]:int32", {}, "same size as dimension 0");
  INFER_ERROR("SegmentMean", "[5,2];[5,1]:int32", {}, "should be a vector");
  INFER_OK("TopKV2", "[4,7];=3", {}, "[4,3];[4,3]:int32");
  INFER_OK("TopKV2", "[?,?];[]:int32", {}, "[?,?];[?,?]:int32");
  INFER_ERROR("TopKV2", "[4,2];=3", {}, "at least k columns");
  INFER_OK("InTopKV2", "[?,5];[3]:int32;=1", {}, "[3]:bool");
  // ApproxTopK's attributes: k, reduction_dimension, recall_target, is_max_k, reduction_input_size_override,
  // aggregate_to_topk.
  const auto approx = [](int64_t k, int64_t axis, bool max_k) {
    return std::vector<AttrValue>{k, axis, 0.95, max_k, int64_t{-1}, true};
  };
  INFER_OK("ApproxTopK", "[4,7]", approx(3, -1, true), "[4,3];[4,3]:int32");
  INFER_OK("ApproxTopK", "[4,?]", approx(2, 0, false), "[2,?];[2,?]:int32");
  INFER_ERROR("ApproxTopK", "[4,2]", approx(3, -1, true), "at least k");
  INFER_ERROR("ApproxTopK", "[4,2]", approx(1, 2, true), "reduction_dimension");
  INFER_OK("LowerBound", "[2,5];[2,3]", {}, "[2,3]:int32");
  INFER_ERROR("UpperBound", "[2,5];[3,3]", {}, "same number of rows");
  INFER_OK("Unique", "[6]", {}, "[?];[6]:int32");
  INFER_OK("UniqueWithCounts", "[?]:float64", {}, "[?]:float64;[?]:int32;[?]:int32");
}

TEST(ScatterNdShape, ReverseAndRoll) {
  INFER_OK("ReverseV2", "[2,?,4];=[1]", {}, "[2,?,4]");
  INFER_ERROR("ReverseV2", "[2,3];=[2]", {}, "axis");
  INFER_ERROR("ReverseV2", "[2,3];=[1,-1]", {}, "more than once");
  INFER_OK("Roll", "[2,3];=[1,2];=[0,0]", {}, "[2,3]");
  INFER_ERROR("Roll", "[2,3];=[1,2];=[0]", {}, "one length");
}

TEST(ScatterNdGrad, FiniteDifferences) {
  EXPECT_GRADIENT_OK("GatherNd", {random_tensor({4, 3, 2}), ints({3, 2}, {1, 2, 0, 0, 1, 2})}, {});
  EXPECT_GRADIENT_OK("ScatterNd",
                     {ints({3, 1}, {1, 3, 1}), random_tensor({3, 2}), testing::int32_vector({5, 2})}, {});
  for (const char* op : {"TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin",
                         "TensorScatterMax"})
    EXPECT_GRADIENT_OK(op, {random_tensor({4, 2}, 1), ints({2, 1}, {2, 0}), random_tensor({2, 2}, 2)}, {})
        << op;
  for (const char* op : {"UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"})
    EXPECT_GRADIENT_OK(op, {random_tensor({5, 2}, 3), ints({5}, {1, 0, 1, -1, 3}), int32_scalar(4)}, {})
        << op;
  for (const char* op : {"SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"})
    EXPECT_GRADIENT_OK(op, {random_tensor({5, 2}, 8), ints({5}, {0, 0, 2, 2, 3})}, {}) << op;
  EXPECT_GRADIENT_OK("TopKV2", {random_tensor({3, 6}, 4), int32_scalar(2)}, {});
  EXPECT_GRADIENT_OK("TopKV2", {random_tensor({7}, 5), int32_scalar(7)}, {});
  EXPECT_GRADIENT_OK("ReverseV2", {random_tensor({2, 3, 4}, 6), testing::int32_vector({0, 2})}, {});
  EXPECT_GRADIENT_OK(
      "Roll", {random_tensor({2, 3, 4}, 7), testing::int32_vector({1, -5}), testing::int32_vector({2, 1})},
      {});
}

}  // namespace
}  // namespace ember

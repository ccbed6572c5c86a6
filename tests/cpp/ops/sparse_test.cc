// Shape functions (in the mini-language), SparseAdd/SparseAddGrad/SparseReshape values and
// finite-difference gradients of the sparse and counting kernels: ops/sparse.cc and ops/bincount.cc. Values
// are compared with TensorFlow in tests/python/test_registry_vs_tensorflow.py and
// tests/python/test_sparse.py.
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

TensorRef int64s(Dims dims, const std::vector<double>& values) {
  return make_tensor(std::move(dims), values, DType::kInt64);
}

std::vector<AttrValue> adjoints(bool a, bool b) { return {AttrValue(a), AttrValue(b)}; }

AttrList adjoint_attrs(bool a, bool b) {
  AttrList attrs;
  attrs.push_back(a);
  attrs.push_back(b);
  return attrs;
}

TEST(SparseShape, SparseTensorDenseMatMul) {
  INFER_OK("SparseTensorDenseMatMul", "[5,2]:int64;[5];=[3,4]:int64;[4,6]", adjoints(false, false), "[3,6]");
  INFER_OK("SparseTensorDenseMatMul", "[5,2]:int64;[5];=[3,4]:int64;[3,6]", adjoints(true, false), "[4,6]");
  INFER_OK("SparseTensorDenseMatMul", "[5,2]:int64;[5];=[3,4]:int64;[6,4]", adjoints(false, true), "[3,6]");
  INFER_OK("SparseTensorDenseMatMul", "[?,2]:int64;[?];[2]:int64;[?,?]", adjoints(false, false), "[?,?]");
  INFER_ERROR("SparseTensorDenseMatMul", "[5,2]:int64;[5];=[3,4]:int64;[5,6]", adjoints(false, false),
              "inner dimension");
  INFER_ERROR("SparseTensorDenseMatMul", "[5,3]:int64;[5];[2]:int64;[4,6]", adjoints(false, false),
              "[nnz, 2]");
  INFER_ERROR("SparseTensorDenseMatMul", "[5,2]:int64;[4];[2]:int64;[4,6]", adjoints(false, false), "5 rows");
}

TEST(SparseShape, SparseToDense) {
  INFER_OK("SparseToDense", "[3,2]:int64;=[4,5];[3];[]", {AttrValue(true)}, "[4,5]");
  INFER_OK("SparseToDense", "[3]:int32;=[7];[]:float64;[]:float64", {AttrValue(true)}, "[7]:float64");
  INFER_ERROR("SparseToDense", "[3,2]:int64;=[4,5];[3,1];[]", {AttrValue(true)}, "scalar or a vector");
  INFER_ERROR("SparseToDense", "[3,2]:int64;=[4,5];[3];[1]", {AttrValue(true)},
              "default_value must be a scalar");
}

TEST(SparseShape, Counting) {
  INFER_OK("Bincount", "[7]:int32;=5;[0]", {}, "[5]");
  INFER_OK("Bincount", "[?]:int32;[]:int32;[?]:float64", {}, "[?]:float64");
  INFER_ERROR("Bincount", "[7]:int32;=-1;[0]", {}, "non-negative");
  INFER_OK("DenseBincount", "[2,7]:int32;=5;[0]", {AttrValue(false)}, "[2,5]");
  INFER_OK("DenseBincount", "[7]:int32;=5;[0]:int64", {AttrValue(true)}, "[5]:int64");
  INFER_ERROR("DenseBincount", "[2,2,7]:int32;=5;[0]", {AttrValue(false)}, "1-D or 2-D");
  INFER_OK("HistogramFixedWidth", "[9];[2];=4", {AttrValue(DType::kInt32)}, "[4]:int32");
  INFER_OK("HistogramFixedWidth", "[9]:int64;[2]:int64;=4", {AttrValue(DType::kInt64)}, "[4]:int64");
  INFER_ERROR("HistogramFixedWidth", "[9];[3];=4", {AttrValue(DType::kInt32)}, "2 elements");
  INFER_ERROR("HistogramFixedWidth", "[9];[2];=0", {AttrValue(DType::kInt32)}, "positive");
}

TEST(SparseShape, SparseAddAndReshape) {
  INFER_OK("SparseAdd", "[3,2]:int64;[3];[2]:int64;[4,2]:int64;[4];[2]:int64;[]", {},
           "[?,2]:int64;[?];[2]:int64");
  INFER_ERROR("SparseAdd", "[3,2]:int64;[3];[2]:int64;[4,2]:int64;[4];[2]:int64;[1]", {},
              "thresh must be a scalar");
  INFER_OK("SparseAddGrad", "[5];[3,2]:int64;[4,2]:int64;[5,2]:int64", {}, "[3];[4]");
  INFER_OK("SparseReshape", "[3,2]:int64;[2]:int64;[3]:int64", {}, "[3,3]:int64;[3]:int64");
  INFER_ERROR("SparseReshape", "[3]:int64;[2]:int64;[3]:int64", {}, "should be a matrix");
}

TEST(SparseShape, SparseReduceSum) {
  INFER_OK("SparseReduceSum", "[3,3]:int64;[3];=[2,3,4]:int64;=[1]", {AttrValue(false)}, "[2,4]");
  INFER_OK("SparseReduceSum", "[3,3]:int64;[3];=[2,3,4]:int64;=[-1,0]", {AttrValue(true)}, "[1,3,1]");
  INFER_OK("SparseReduceSum", "[3,3]:int64;[3]:float64;=[2,3,4]:int64;[1]:int32", {AttrValue(true)},
           "[?,?,?]:float64");
  INFER_OK("SparseReduceSum", "[3,3]:int64;[3];=[2,3,4]:int64;[1]:int32", {AttrValue(false)}, "<unknown>");
  INFER_ERROR("SparseReduceSum", "[3,2]:int64;[3];=[-2,3]:int64;=[1]", {AttrValue(false)},
              "must not be negative");
  INFER_ERROR("SparseReduceSum", "[3,3]:int64;[3];=[2,3,4]:int64;=[3]", {AttrValue(false)},
              "Invalid reduction dimension 3, for input with 3 dimensions");
}

TEST(SparseValues, SparseAddMergesInRowMajorOrder) {
  // a = {[0,1]: 1, [1,0]: 2, [2,2]: -3}, b = {[0,0]: 5, [1,0]: 4, [2,2]: 3}: [2,2] sums to 0 and is dropped
  // by thresh 0.5; the gradient gives each operand entry the sum's gradient (0 for the dropped one).
  const TensorRef a_idx = int64s({3, 2}, {0, 1, 1, 0, 2, 2}), b_idx = int64s({3, 2}, {0, 0, 1, 0, 2, 2});
  const TensorRef shape = int64s({2}, {3, 3});
  OutputList out = testing::run_op(op_def("SparseAdd"),
                                   {a_idx, make_tensor({3}, {1, 2, -3}), shape, b_idx,
                                    make_tensor({3}, {5, 4, 3}), shape, make_tensor({}, {0.5})},
                                   {});
  ASSERT_EQ(out[0]->shape().to_string(), "[3,2]");
  const std::vector<int64_t> want_idx = {0, 0, 0, 1, 1, 0};
  const std::vector<double> want_values = {5, 1, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0]->data<int64_t>()[i], want_idx[i]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[1]->data<double>()[i], want_values[i]);
  OutputList grads =
      testing::run_op(op_def("SparseAddGrad"), {make_tensor({3}, {10, 20, 30}), a_idx, b_idx, out[0]}, {});
  const std::vector<double> want_a = {20, 30, 0}, want_b = {10, 30, 0};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(grads[0]->data<double>()[i], want_a[i]);
    EXPECT_EQ(grads[1]->data<double>()[i], want_b[i]);
  }
}

TEST(SparseValues, SparseReshapeKeepsRowMajorPositions) {
  OutputList out =
      testing::run_op(op_def("SparseReshape"),
                      {int64s({2, 2}, {0, 2, 1, 1}), int64s({2}, {2, 3}), int64s({3}, {3, -1, 1})}, {});
  ASSERT_EQ(out[0]->shape().to_string(), "[2,3]");
  const std::vector<int64_t> want = {1, 0, 0, 2, 0, 0}, want_shape = {3, 2, 1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0]->data<int64_t>()[i], want[i]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[1]->data<int64_t>()[i], want_shape[i]);
}

TEST(SparseGrad, FiniteDifferences) {
  const TensorRef indices = int64s({4, 2}, {0, 1, 1, 0, 2, 2, 2, 0});
  const TensorRef shape = int64s({2}, {3, 3});
  for (bool adjoint_a : {false, true})
    for (bool adjoint_b : {false, true})
      EXPECT_GRADIENT_OK("SparseTensorDenseMatMul",
                         {indices, random_tensor({4}, 2), shape,
                          adjoint_b ? random_tensor({2, 3}, 3) : random_tensor({3, 2}, 3)},
                         adjoint_attrs(adjoint_a, adjoint_b))
          << adjoint_a << adjoint_b;
  const TensorRef a_idx = int64s({2, 2}, {0, 1, 1, 0}), b_idx = int64s({2, 2}, {0, 1, 2, 2});
  EXPECT_GRADIENT_OK(
      "SparseAdd",
      {a_idx, random_tensor({2}, 8), shape, b_idx, random_tensor({2}, 9), shape, make_tensor({}, {0})}, {});
  for (bool keep : {false, true})
    EXPECT_GRADIENT_OK(
        "SparseReduceSum",
        {int64s({3, 2}, {0, 1, 1, 0, 1, 2}), random_tensor({3}, 10), shape, testing::int32_vector({-1})},
        {AttrValue(keep)})
        << keep;
  const TensorRef sorted = int64s({3, 2}, {0, 1, 1, 0, 2, 2});
  EXPECT_GRADIENT_OK("SparseToDense",
                     {sorted, int64s({2}, {3, 4}), random_tensor({3}, 4), random_tensor({}, 5)},
                     {AttrValue(true)});
  EXPECT_GRADIENT_OK("SparseToDense",
                     {sorted, int64s({2}, {3, 4}), random_tensor({}, 6), random_tensor({}, 7)},
                     {AttrValue(true)});
}

}  // namespace
}  // namespace ember

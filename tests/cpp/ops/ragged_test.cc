// Shape function and finite-difference gradients of RaggedTensorToTensor and its adjoint
// RaggedTensorToTensorGrad (ops/ragged.cc), with both partition layouts (Note [Row partitions]). Values are
// compared with TensorFlow's RaggedTensor.to_tensor in tests/python/test_ragged.py and with its raw op in
// tests/python/test_registry_vs_tensorflow.py and test_saved_model_text_vectorization.py.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_tensor;
using Dims = std::vector<int64_t>;

TensorRef int64s(Dims dims, const std::vector<double>& values) {
  return make_tensor(std::move(dims), values, DType::kInt64);
}

TEST(RaggedShape, RaggedTensorToTensor) {
  INFER_OK("RaggedTensorToTensor", "=-1;[5];[];[4]:int64", {}, "[3,?]");
  INFER_OK("RaggedTensorToTensor", "=[-1,7,-1];[5,2];[];[4]:int64", {}, "[3,7,2]");
  INFER_OK("RaggedTensorToTensor", "=[2,-1,-1];[5];[];[4]:int64;[?]:int64", {}, "[2,?,?]");
  INFER_ERROR("RaggedTensorToTensor", "=[2,-1];[5,2];[];[4]:int64", {}, "must have 3 elements");
  INFER_ERROR("RaggedTensorToTensor", "=[-1,-1,3];[5,2];[];[4]:int64", {}, "inner dimension");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[1,1];[4]:int64", {}, "broadcast");
  INFER_OK("RaggedTensorToTensorGrad", "[3,4];[5];[4]:int64", {}, "[5]");
}

TEST(RaggedShape, FirstDimSizeAndValueRowids) {
  const std::string rowids = "FIRST_DIM_SIZE,VALUE_ROWIDS";
  INFER_OK("RaggedTensorToTensor", "=-1;[5];[];=4:int64;[5]:int64", {rowids}, "[4,?]");
  INFER_OK("RaggedTensorToTensor", "=-1;[5,2];[];[]:int64;[5]:int64", {rowids}, "[?,?,2]");
  INFER_OK("RaggedTensorToTensor", "=-1;[5];[];=2:int64;[3]:int64;[6]:int64",
           {std::string("FIRST_DIM_SIZE,VALUE_ROWIDS,ROW_SPLITS")}, "[2,?,?]");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[];[4]:int64;[5]:int64", {rowids}, "must be a scalar");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[];[4]:int64", {std::string("ROW_LENGTHS")}, "cannot handle");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[];[4]:int64", {std::string("ROWSPLITS")},
              "unknown row partition");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[];[5]:int64", {std::string("VALUE_ROWIDS")},
              "FIRST_DIM_SIZE before");
  INFER_ERROR("RaggedTensorToTensor", "=-1;[5];[];[4]:int64", {rowids}, "2 partitions");
}

TEST(RaggedGrad, FiniteDifferences) {
  const TensorRef splits = int64s({4}, {0, 2, 2, 5});
  EXPECT_GRADIENT_OK("RaggedTensorToTensor",
                     {int64s({2}, {-1, -1}), random_tensor({5}, 1), random_tensor({}, 2), splits}, {});
  // Cut to 2 rows of 2: values past the shape get no gradient, the default gets the padding's.
  EXPECT_GRADIENT_OK("RaggedTensorToTensor",
                     {int64s({2}, {2, 2}), random_tensor({5}, 3), random_tensor({}, 4), splits}, {});
  EXPECT_GRADIENT_OK("RaggedTensorToTensor",
                     {int64s({3}, {-1, -1, -1}), random_tensor({5, 2}, 5), random_tensor({2}, 6), splits},
                     {});
  EXPECT_GRADIENT_OK("RaggedTensorToTensor",
                     {int64s({3}, {-1, -1, -1}), random_tensor({4}, 7), random_tensor({}, 8),
                      int64s({3}, {0, 2, 3}), int64s({4}, {0, 1, 3, 4})},
                     {});
  EXPECT_GRADIENT_OK("RaggedTensorToTensorGrad", {random_tensor({3, 3}, 9), random_tensor({5}, 10), splits},
                     {});
  // The same rows as `splits`, as FIRST_DIM_SIZE and VALUE_ROWIDS (row 1 empty).
  const std::string rowids = "FIRST_DIM_SIZE,VALUE_ROWIDS";
  EXPECT_GRADIENT_OK("RaggedTensorToTensor",
                     {int64s({2}, {-1, 2}), random_tensor({5}, 11), random_tensor({}, 12), int64s({}, {3}),
                      int64s({5}, {0, 0, 2, 2, 2})},
                     {rowids});
  EXPECT_GRADIENT_OK(
      "RaggedTensorToTensorGrad",
      {random_tensor({3, 3}, 13), random_tensor({5}, 14), int64s({}, {3}), int64s({5}, {0, 0, 2, 2, 2})},
      {rowids});
}

}  // namespace
}  // namespace ember

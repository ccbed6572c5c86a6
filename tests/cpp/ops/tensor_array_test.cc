// InplaceUpdate (ops/tensor_array.cc), the write of a dense TensorArray: its shape function in the INFER_*
// mini-language, its kernel's index checks, and its gradient against finite differences.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_values;

TEST(TensorArrayOps, InplaceUpdateShapes) {
  INFER_OK("InplaceUpdate", "[5,3];[1]:int32;[1,3]", {}, "[5,3]");
  INFER_OK("InplaceUpdate", "[?,3];[?]:int32;[?,3]", {}, "[?,3]");
  INFER_ERROR("InplaceUpdate", "[5,3];[1,1]:int32;[1,3]", {}, "vector of row indices");
  INFER_ERROR("InplaceUpdate", "[5,3];[1]:int32;[1,4]", {}, "shape of x's");
  INFER_ERROR("InplaceUpdate", "[5,3];[2]:int32;[1,3]", {}, "2 indices but v has 1 rows");
  INFER_ERROR("InplaceUpdate", "[];[1]:int32;[1]", {}, "must not be a scalar");
}

TEST(TensorArrayOps, InplaceUpdateGradient) {
  TensorRef x = make_tensor({4, 3}, random_values(12, -1, 1, 1));
  TensorRef v = make_tensor({2, 3}, random_values(6, -1, 1, 2));
  TensorRef i = make_tensor({2}, {3, 1}, DType::kInt32);
  EXPECT_GRADIENT_OK("InplaceUpdate", {x, i, v}, {});
}

}  // namespace
}  // namespace ember

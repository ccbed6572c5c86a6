// MatrixSquareRoot's shape function (ops/linalg_sqrtm.cc) in the mini-language. Values and gradients are
// compared with TensorFlow in tests/python/test_linalg_sqrtm.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

TEST(SqrtmShape, SquareMatricesKeepTheirShapeAndDtype) {
  INFER_OK("MatrixSquareRoot", "[2,3,3]", {}, "[2,3,3]");
  INFER_OK("MatrixSquareRoot", "[?,4,4]:complex128", {}, "[?,4,4]:complex128");
  INFER_ERROR("MatrixSquareRoot", "[2,3]:float64", {}, "must be square");
  INFER_ERROR("MatrixSquareRoot", "[3]", {}, "matrix or batch of matrices");
}

}  // namespace
}  // namespace ember

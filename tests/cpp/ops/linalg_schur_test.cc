// The shape functions of MatrixSquareRoot and MatrixLogarithm (ops/linalg_schur.cc) in the mini-language.
// Values and gradients are compared with TensorFlow in tests/python/test_linalg_schur.py.
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

TEST(LogmShape, ComplexSquareMatricesKeepTheirShape) {
  INFER_OK("MatrixLogarithm", "[2,3,3]:complex64", {}, "[2,3,3]:complex64");
  INFER_OK("MatrixLogarithm", "?:complex128", {}, "<unknown>:complex128");
  INFER_ERROR("MatrixLogarithm", "[2,3]:complex64", {}, "must be square");
}

}  // namespace
}  // namespace ember

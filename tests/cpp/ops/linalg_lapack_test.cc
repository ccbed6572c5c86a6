// The LAPACK ops' shape functions (ops/linalg_lapack.cc) in the mini-language for complex inputs: every
// output keeps the complex dtype, as TensorFlow's ops (Svd's and SelfAdjointEigV2's real values too; the
// Python functions take the real part of Svd's s). Values and gradients are compared with
// TensorFlow in tests/python/test_linalg.py and test_linalg_complex.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> Flags(bool a, bool b) { return {AttrValue(a), AttrValue(b)}; }

TEST(LapackShapes, SvdOfComplexKeepsTheDtype) {
  INFER_OK("Svd", "[2,5,3]:complex64", Flags(true, false),
           "[2,3]:complex64;[2,5,3]:complex64;[2,3,3]:complex64");
  INFER_OK("Svd", "[4,6]:complex128", Flags(true, true), "[4]:complex128;[4,4]:complex128;[6,6]:complex128");
  INFER_OK("Svd", "[3,3]:complex64", Flags(false, false), "[3]:complex64;[0]:complex64;[0]:complex64");
  INFER_OK("Svd", "?:complex128", Flags(true, false),
           "<unknown>:complex128;<unknown>:complex128;<unknown>:complex128");
  INFER_OK("Svd", "[2,5,3]:float64", Flags(true, false), "[2,3]:float64;[2,5,3]:float64;[2,3,3]:float64");
}

TEST(LapackShapes, ComplexOutputsKeepTheInputDtype) {
  INFER_OK("SelfAdjointEigV2", "[2,3,3]:complex64", {AttrValue(true)}, "[2,3]:complex64;[2,3,3]:complex64");
  INFER_OK("LogMatrixDeterminant", "[2,3,3]:complex128", {}, "[2]:complex128;[2]:complex128");
  INFER_OK("MatrixDeterminant", "[?,3,3]:complex64", {}, "[?]:complex64");
  INFER_OK("Qr", "[5,3]:complex64", {AttrValue(false)}, "[5,3]:complex64;[3,3]:complex64");
  INFER_OK("MatrixSolve", "[2,3,3]:complex64;[2,3,1]:complex64", {AttrValue(true)}, "[2,3,1]:complex64");
}

TEST(LapackShapes, ComplexNonSquareInputsAreRefused) {
  INFER_ERROR("Cholesky", "[2,3]:complex64", {}, "must be square");
  INFER_ERROR("MatrixInverse", "[?,2,3]:complex128", {AttrValue(false)}, "must be square");
}

}  // namespace
}  // namespace ember

// TridiagonalSolve's shape function (ops/linalg_tridiagonal.cc) in the mini-language. Values and gradients
// are compared with TensorFlow in tests/python/test_linalg_tridiagonal.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> Pivoting() { return {AttrValue(true), AttrValue(false)}; }

TEST(TridiagonalSolveShape, TheResultHasTheRhsShape) {
  INFER_OK("TridiagonalSolve", "[2,3,5];[2,5,4]", Pivoting(), "[2,5,4]");
  INFER_OK("TridiagonalSolve", "[?,3,?]:complex64;[2,5,1]:complex64", Pivoting(), "[2,5,1]:complex64");
  INFER_ERROR("TridiagonalSolve", "[2,4,5];[2,5,4]", Pivoting(), "expected diagonals [..., 3, M]");
  INFER_ERROR("TridiagonalSolve", "[2,3,5];[3,5,4]", Pivoting(), "the same batch dims");
  INFER_ERROR("TridiagonalSolve", "[3,5];[4,1]", Pivoting(), "rhs [..., M, K]");
}

}  // namespace
}  // namespace ember

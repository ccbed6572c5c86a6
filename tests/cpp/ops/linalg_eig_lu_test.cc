// Eig's and Lu's shape functions (ops/linalg_eig_lu.cc) in the mini-language: Eig's outputs take Tout, which
// must be the complex type of the input's precision; Lu's permutation takes output_idx_type. Values and
// gradients are compared with TensorFlow in tests/python/test_linalg_eig_lu.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> EigAttrs(bool compute_v, DType tout) {
  return {AttrValue(compute_v), AttrValue(tout)};
}

TEST(EigShape, ComplexOutputsOfTheInputsPrecision) {
  INFER_OK("Eig", "[2,3,3]:float32", EigAttrs(true, DType::kComplex64), "[2,3]:complex64;[2,3,3]:complex64");
  INFER_OK("Eig", "[4,4]:complex128", EigAttrs(false, DType::kComplex128), "[4]:complex128;[0]:complex128");
  INFER_OK("Eig", "[?,?,?]:float64", EigAttrs(true, DType::kComplex128),
           "[?,?]:complex128;[?,?,?]:complex128");
  INFER_OK("Eig", "?:float64", EigAttrs(true, DType::kComplex128),
           "<unknown>:complex128;<unknown>:complex128");
}

TEST(EigShape, RefusesNonSquareInputsAndAMismatchedTout) {
  INFER_ERROR("Eig", "[2,3]:float32", EigAttrs(true, DType::kComplex64), "must be square");
  INFER_ERROR("Eig", "[3]:float32", EigAttrs(true, DType::kComplex64), "matrix or batch of matrices");
  INFER_ERROR("Eig", "[2,2]:float64", EigAttrs(true, DType::kComplex64), "Tout must be complex128");
}

TEST(LuShape, PermutationTakesTheIndexType) {
  INFER_OK("Lu", "[2,3,3]:float32", {AttrValue(DType::kInt32)}, "[2,3,3];[2,3]:int32");
  INFER_OK("Lu", "[?,4,4]:complex64", {AttrValue(DType::kInt64)}, "[?,4,4]:complex64;[?,4]:int64");
  INFER_OK("Lu", "?:float64", {AttrValue(DType::kInt32)}, "<unknown>:float64;<unknown>:int32");
  INFER_ERROR("Lu", "[2,3]:float64", {AttrValue(DType::kInt32)}, "must be square");
  INFER_ERROR("Lu", "[2,2]:float64", {AttrValue(DType::kFloat32)}, "output_idx_type must be int32 or int64");
}

}  // namespace
}  // namespace ember

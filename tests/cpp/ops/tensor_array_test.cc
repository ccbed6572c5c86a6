// InplaceUpdate (ops/tensor_array.cc), the write of a dense TensorArray: its shape function in the INFER_*
// mini-language, its kernel's index checks, and its gradient against finite differences; the shape
// functions of TensorFlow's TensorList ops on dense lists, and the gradients of Gather/Scatter/Concat/Split.
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

// TensorLists as dense tensors: a list's shape says nothing (a variant's would not either); an element's and
// a stack's come from the element_shape operand (-1: unknown dim, the scalar -1: unknown rank).
TEST(TensorArrayOps, TensorListShapes) {
  const AttrValue f32(DType::kFloat32);
  INFER_OK("TensorListReserve", "=[2,-1];=3", {f32}, "<unknown>");
  INFER_OK("TensorListSetItem", "?;[]:int32;[2]", (std::vector<AttrValue>{f32, AttrValue(false)}),
           "<unknown>");
  INFER_OK("TensorListGetItem", "?;[]:int32;=[2,-1]", {f32}, "[2,?]");
  INFER_OK("TensorListGetItem", "?;[]:int32;=-1", {f32}, "<unknown>");
  INFER_OK("TensorListStack", "?;=[3]", (std::vector<AttrValue>{f32, AttrValue(int64_t{-1})}), "[?,3]");
  INFER_OK("TensorListStack", "?;=[3]", (std::vector<AttrValue>{f32, AttrValue(int64_t{4})}), "[4,3]");
  INFER_OK("TensorListLength", "?", {}, "[]:int32");
  INFER_OK("TensorListPopBack", "?;=[2]", {f32}, "<unknown>;[2]");
}

// Gather, Scatter, Concat and Split (Note [Gathering and splitting dense lists]).
TEST(TensorArrayOps, TensorListGatherScatterConcatSplitShapes) {
  const AttrValue f32(DType::kFloat32);
  INFER_OK("TensorListGather", "?;[2]:int32;=[3,-1]", {f32}, "[2,3,?]");
  INFER_OK("TensorListGather", "?;[?]:int32;=-1", {f32}, "<unknown>");
  INFER_OK("TensorListScatter", "[2,3];[2]:int32;=[3]", {}, "<unknown>");
  INFER_OK("TensorListScatterV2", "[2,3];[2]:int32;=[3];=5", {}, "<unknown>");
  INFER_OK("TensorListScatterIntoExistingList", "?;[2,3];[2]:int32", {f32}, "<unknown>");
  INFER_OK("TensorListScatterIntoExistingList", "[?,3];[2,3];[2]:int32", {f32}, "[?,3]");
  INFER_OK("TensorListScatterIntoExistingList", "[5,?];[2,3];[2]:int32", {f32}, "[5,3]");
  INFER_OK("TensorListConcatV2", "?;=[-1,4];[0]:int64", {f32}, "[?,4];[?]:int64");
  INFER_OK("TensorListConcatV2", "?;=-1;[0]:int64", {f32}, "<unknown>;[?]:int64");
  INFER_OK("TensorListConcat", "?", (std::vector<AttrValue>{f32, AttrValue(std::vector<int64_t>{2, 5})}),
           "[?,5];[?]:int64");
  INFER_OK("TensorListSplit", "[6,2];=[-1,2];[3]:int64", {}, "[?,?,2]");
  INFER_OK("TensorListSplit", "?;=[-1,2];[3]:int64", {}, "<unknown>");
}

// Each gradient is TensorFlow's (float64 lists), written in list ops; with distinct indices it is the true
// derivative.
TEST(TensorArrayOps, TensorListGatherScatterConcatSplitGradients) {
  const AttrValue f64(DType::kFloat64);
  TensorRef list = make_tensor({4, 3}, random_values(12, -1, 1, 3));
  TensorRef element = make_tensor({1}, {3}, DType::kInt32);
  TensorRef indices = make_tensor({2}, {3, 0}, DType::kInt32);
  EXPECT_GRADIENT_OK("TensorListGather", {list, indices, element}, {f64});
  TensorRef rows = make_tensor({2, 3}, random_values(6, -1, 1, 4));
  EXPECT_GRADIENT_OK("TensorListScatter", {rows, indices, element}, {});
  EXPECT_GRADIENT_OK("TensorListScatterV2", {rows, indices, element, make_tensor({}, {6}, DType::kInt32)},
                     {});
  EXPECT_GRADIENT_OK("TensorListScatterIntoExistingList", {list, rows, indices}, {f64});
  TensorRef unknown = make_tensor({}, {-1}, DType::kInt32);
  TensorRef no_lengths = make_tensor({0}, {}, DType::kInt64);
  EXPECT_GRADIENT_OK("TensorListConcatV2", {list, unknown, no_lengths}, {f64});
  EXPECT_GRADIENT_OK("TensorListSplit", {list, unknown, make_tensor({2}, {2, 2}, DType::kInt64)}, {});
}

}  // namespace
}  // namespace ember

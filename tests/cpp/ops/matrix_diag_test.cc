// MatrixDiagV3, MatrixDiagPartV3 and MatrixSetDiagV3 (ops/matrix_diag.cc): shape functions in the
// mini-language, the layout of a band for each alignment, and gradients against finite differences.
// Values are compared with TensorFlow for every band and alignment in tests/python/test_matrix_diag.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_tensor;
using testing::run_op;

std::vector<AttrValue> align(const std::string& a = "RIGHT_LEFT") { return {AttrValue(a)}; }

AttrList align_attrs(const std::string& a = "RIGHT_LEFT") {
  AttrList attrs;
  attrs.push_back(a);
  return attrs;
}

TensorRef int32s(std::vector<int64_t> dims, const std::vector<double>& values) {
  return make_tensor(std::move(dims), values, DType::kInt32);
}

TEST(MatrixDiagShapes, DiagPart) {
  INFER_OK("MatrixDiagPartV3", "[2,3,4];=0;[]", align(), "[2,3]");
  INFER_OK("MatrixDiagPartV3", "[2,3,4];=[-1,1];[]", align(), "[2,3,3]");
  INFER_OK("MatrixDiagPartV3", "[3,4];=[1,3];[]", align(), "[3,3]");
  INFER_OK("MatrixDiagPartV3", "[?,3,4];=2;[]", align(), "[?,2]");
  INFER_OK("MatrixDiagPartV3", "[3,?];=0;[]", align(), "[?]");
  INFER_OK("MatrixDiagPartV3", "[3,4];[]:int32;[]", align(), "<unknown>");
  INFER_ERROR("MatrixDiagPartV3", "[4];=0;[]", align(), "at least 2-dim");
  INFER_ERROR("MatrixDiagPartV3", "[3,4];=[2,1];[]", align(),
              "must not be larger than upper_diag_index: 2 > 1");
  INFER_ERROR("MatrixDiagPartV3", "[3,4];=4;[]", align(), "out of bound: 4. It must be between -3 and 4");
  INFER_ERROR("MatrixDiagPartV3", "[3,4];=0;[]", align("UP_DOWN"), "align must be one of");
}

TEST(MatrixDiagShapes, Diag) {
  INFER_OK("MatrixDiagV3", "[2,3];=0;=-1;=-1;[]", align(), "[2,3,3]");
  INFER_OK("MatrixDiagV3", "[2,3];=1;=-1;=-1;[]", align(), "[2,4,4]");
  INFER_OK("MatrixDiagV3", "[4];=1;=5;=-1;[]", align(), "[5,5]");
  INFER_OK("MatrixDiagV3", "[2,3];=[0,1];=3;=4;[]", align(), "[3,4]");
  INFER_OK("MatrixDiagV3", "[2,3];=0;[]:int32;=-1;[]", align(), "[2,?,?]");
  INFER_ERROR("MatrixDiagV3", "[];=0;=-1;=-1;[]", align(), "at least 1-dim");
  INFER_ERROR("MatrixDiagV3", "[3,3];=[0,1];=-1;=-1;[]", align(), "number of diagonals");
  INFER_ERROR("MatrixDiagV3", "[4];=0;=2;=2;[]", align(), "rows is too small");
  INFER_ERROR("MatrixDiagV3", "[2];=0;=5;=6;[]", align(), "not consistent");
}

TEST(MatrixDiagShapes, SetDiag) {
  INFER_OK("MatrixSetDiagV3", "[2,3,4];[2,3];=0", align(), "[2,3,4]");
  INFER_OK("MatrixSetDiagV3", "[2,3,4];[2,2,3];=[0,1]", align(), "[2,3,4]");
  INFER_OK("MatrixSetDiagV3", "[?,3,4];[?,3];=0", align(), "[?,3,4]");
  INFER_ERROR("MatrixSetDiagV3", "[2,3,4];[2,2];=0", align(), "diagonal must have the shape [2,3]");
  INFER_ERROR("MatrixSetDiagV3", "[3];[3];=0", align(), "at least 2-dim");
}

// diag_part of [[1,2,3],[4,5,6],[7,8,9]] at k = (-1, 1), pad 0: superdiagonal [2,6], main, subdiagonal [4,8],
// each padded to 3 on the side its alignment says.
TEST(MatrixDiagValues, BandAlignments) {
  const TensorRef x = make_tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const TensorRef k = int32s({2}, {-1, 1});
  const TensorRef pad = make_tensor({}, {0});
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"RIGHT_LEFT", {0, 2, 6, 1, 5, 9, 4, 8, 0}},
      {"LEFT_RIGHT", {2, 6, 0, 1, 5, 9, 0, 4, 8}},
      {"LEFT_LEFT", {2, 6, 0, 1, 5, 9, 4, 8, 0}},
      {"RIGHT_RIGHT", {0, 2, 6, 1, 5, 9, 0, 4, 8}},
  };
  for (const auto& [a, want] : cases) {
    OutputList part = run_op(op_def("MatrixDiagPartV3"), {x, k, pad}, align_attrs(a));
    ASSERT_EQ(part[0]->shape().to_string(), "[3,3]");
    for (int i = 0; i < 9; ++i) EXPECT_EQ(part[0]->data<double>()[i], want[i]) << a << " " << i;
    // The diagonals put back (diag of the band, then set_diag into zeros) give the band of x.
    OutputList rebuilt =
        run_op(op_def("MatrixDiagV3"), {part[0], k, int32s({}, {-1}), int32s({}, {-1}), pad}, align_attrs(a));
    OutputList set = run_op(op_def("MatrixSetDiagV3"),
                            {make_tensor({3, 3}, std::vector<double>(9, 0.0)), part[0], k}, align_attrs(a));
    const std::vector<double> band = {1, 2, 0, 4, 5, 6, 0, 8, 9};
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(rebuilt[0]->data<double>()[i], band[i]) << a << " " << i;
      EXPECT_EQ(set[0]->data<double>()[i], band[i]) << a << " " << i;
    }
  }
}

// padding_value gets no gradient (as in TensorFlow), so the bands here have no padding in the result.
TEST(MatrixDiagGrad, FiniteDifferences) {
  for (const char* a : {"RIGHT_LEFT", "LEFT_RIGHT"}) {
    EXPECT_GRADIENT_OK("MatrixDiagPartV3",
                       {random_tensor({2, 3, 4}), int32s({2}, {0, 1}), random_tensor({}, 2)}, align_attrs(a));
    EXPECT_GRADIENT_OK("MatrixDiagV3",
                       {random_tensor({2, 3, 2}), int32s({2}, {-1, 1}), int32s({}, {2}), int32s({}, {2}),
                        random_tensor({}, 3)},
                       align_attrs(a));
    EXPECT_GRADIENT_OK("MatrixSetDiagV3",
                       {random_tensor({2, 3, 4}), random_tensor({2, 2, 3}, 4), int32s({2}, {0, 1})},
                       align_attrs(a));
  }
}

}  // namespace
}  // namespace ember

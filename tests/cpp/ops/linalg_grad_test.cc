// MatMul's gradient rule (ops/linalg.cc) against central finite differences in float64: every
// transpose combination, batched and with broadcast batch dims.
#include <gtest/gtest.h>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/grad_testing.h"
#include "tests/cpp/ops/grad_trace_check.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_values;
using Ints = std::vector<int64_t>;

TensorRef uniform(Ints dims, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return make_tensor(dims, random_values(n, -2, 2, seed));
}

AttrList transposes(bool ta, bool tb) {
  AttrList attrs;
  attrs.push_back(ta);
  attrs.push_back(tb);
  return attrs;
}

// `batch_a`/`batch_b` are the batch dims; A is [..., 3, 4] and B [..., 4, 5] before transposition.
void check_all_transposes(const Ints& batch_a, const Ints& batch_b) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      Ints a = batch_a, b = batch_b;
      a.push_back(ta ? 4 : 3);
      a.push_back(ta ? 3 : 4);
      b.push_back(tb ? 5 : 4);
      b.push_back(tb ? 4 : 5);
      EXPECT_GRADIENT_OK("MatMul", {uniform(a, 1), uniform(b, 2)}, transposes(ta, tb));
    }
  }
}

TEST(LinalgGrad, MatMulEveryTranspose) { check_all_transposes({}, {}); }

TEST(LinalgGrad, BatchMatMul) { check_all_transposes({2}, {2}); }

TEST(LinalgGrad, BroadcastBatchDims) {
  check_all_transposes({2, 1}, {3});     // b broadcasts over a's leading batch dim; a's size-1 dim over b's
  check_all_transposes({}, {2, 3});      // a plain matrix against a batch
  check_all_transposes({2, 3}, {1, 3});  // a size-1 batch dim of b
}

TEST(LinalgGrad, VectorShapedOperands) {
  EXPECT_GRADIENT_OK("MatMul", {uniform({1, 4}, 3), uniform({4, 1}, 4)}, transposes(false, false));
  EXPECT_GRADIENT_OK("MatMul", {uniform({4, 1}, 3), uniform({4, 1}, 4)}, transposes(true, false));
}

TEST(LinalgSecondOrder, MatMul) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      Ints a = {2, 1, ta ? 4 : 3, ta ? 3 : 4}, b = {3, tb ? 2 : 4, tb ? 4 : 2};
      EXPECT_SECOND_ORDER_OK("MatMul", {uniform(a, 1), uniform(b, 2)}, transposes(ta, tb));
    }
  }
}

TEST(LinalgTracedGrad, MatMul) {
  EXPECT_TRACED_GRADIENT_OK("MatMul", {uniform({2, 1, 3, 4}, 1), uniform({3, 5, 4}, 2)},
                            transposes(false, true));
  EXPECT_TRACED_GRADIENT_OK("MatMul", {uniform({4, 3}, 1), uniform({4, 5}, 2)}, transposes(true, false));
}

}  // namespace
}  // namespace ember

// MatMul: shape function in the mini-language, values against a plain triple loop for every dtype,
// transposes, broadcast batch dims, tile edges, large parallel cases and zero-size dims.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ember/ember.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> T(bool ta, bool tb) { return {AttrValue(ta), AttrValue(tb)}; }

TEST(MatMulShapes, Basics) {
  INFER_OK("MatMul", "[2,3];[3,4]", {}, "[2,4]");
  INFER_OK("MatMul", "[3,2];[3,4]", T(true, false), "[2,4]");
  INFER_OK("MatMul", "[2,3];[4,3]", T(false, true), "[2,4]");
  INFER_OK("MatMul", "[3,2];[4,3]", T(true, true), "[2,4]");
  INFER_OK("MatMul", "[2,3]:int64;[3,4]:int64", {}, "[2,4]:int64");
  INFER_OK("MatMul", "[2,3]:bfloat16;[3,4]:bfloat16", {}, "[2,4]:bfloat16");
}

TEST(MatMulShapes, BatchBroadcast) {
  INFER_OK("MatMul", "[5,2,3];[3,4]", {}, "[5,2,4]");
  INFER_OK("MatMul", "[2,3];[5,3,4]", {}, "[5,2,4]");
  INFER_OK("MatMul", "[2,1,2,3];[5,3,4]", {}, "[2,5,2,4]");
  INFER_OK("MatMul", "[1,7,2,3];[6,1,3,4]", {}, "[6,7,2,4]");
  INFER_OK("MatMul", "[0,2,3];[3,4]", {}, "[0,2,4]");
}

TEST(MatMulShapes, UnknownDimsAndRank) {
  INFER_OK("MatMul", "[?,3];[3,?]", {}, "[?,?]");
  INFER_OK("MatMul", "[2,?];[?,5]", {}, "[2,5]");
  INFER_OK("MatMul", "[2,?];[4,5]", {}, "[2,5]");
  INFER_OK("MatMul", "[?,2,3];[4,3,5]", {}, "[4,2,5]");
  INFER_OK("MatMul", "[?,2,3];[1,3,5]", {}, "[?,2,5]");
  INFER_OK("MatMul", "?;[3,4]", {}, "<unknown>");
  INFER_OK("MatMul", "[2,3];?", {}, "<unknown>");
}

TEST(MatMulShapes, Errors) {
  INFER_ERROR("MatMul", "[2,3];[4,5]", {},
              "MatMul: in[0] is [2,3], in[1] is [4,5]; inner dimensions 3 and 4 differ");
  INFER_ERROR("MatMul", "[2,3];[4,5]", T(false, true),
              "MatMul: in[0] is [2,3], in[1] is [4,5] (transposed); inner dimensions 3 and 5 differ");
  INFER_ERROR("MatMul", "[3];[3,4]", {}, "in[0] must have rank >= 2, got rank 1");
  INFER_ERROR("MatMul", "[2,3];[]", {}, "in[1] must have rank >= 2, got rank 0");
  INFER_ERROR("MatMul", "[2,2,3];[3,3,5]", {}, "batch dimensions [2] and [3] are not broadcastable");
  INFER_ERROR("MatMul", "[2,3];[3,4]:float64", {}, "does not promote");
  INFER_ERROR("MatMul", "[2,3]:int8;[3,4]:int8", {}, "must have a dtype in");
  INFER_ERROR("MatMul", "[2,3]:bool;[3,4]:bool", {}, "must have a dtype in");
}

// ---------------------------------------------------------------- values

struct Operand {
  std::vector<int64_t> stored;  // shape as stored (the last two dims swapped when transposed)
  std::vector<double> values;
};

// Reference: a plain triple loop in double (or in wrapping 64-bit integer arithmetic).
std::vector<double> reference(const Operand& a, const Operand& b, bool ta, bool tb, bool integer, int bits,
                              Shape* out_shape, std::vector<double>* abs_sum) {
  Shape sa(a.stored), sb(b.stored);
  int ra = sa.rank(), rb = sb.rank(), r = std::max(ra, rb);
  int64_t m = ta ? sa[ra - 1] : sa[ra - 2], k = ta ? sa[ra - 2] : sa[ra - 1];
  int64_t n = tb ? sb[rb - 2] : sb[rb - 1];
  Shape out;
  for (int i = 0; i < r - 2; ++i) {
    int ia = i - (r - ra), ib = i - (r - rb);
    int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
    out.push_back(da == 1 ? db : da);
  }
  int64_t batch = out.num_elements();
  out.push_back(m);
  out.push_back(n);
  *out_shape = out;
  std::vector<double> c(batch * m * n);
  abs_sum->assign(c.size(), 0);
  for (int64_t ob = 0; ob < batch; ++ob) {
    // Batch index into a and b with broadcasting.
    int64_t rem = ob, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (int d = r - 3; d >= 0; --d) {
      int64_t i = rem % out[d];
      rem /= out[d];
      int da = d - (r - ra), db = d - (r - rb);
      int64_t dim_a = da >= 0 ? sa[da] : 1, dim_b = db >= 0 ? sb[db] : 1;
      ia += (dim_a == 1 ? 0 : i) * stride_a, stride_a *= dim_a;
      ib += (dim_b == 1 ? 0 : i) * stride_b, stride_b *= dim_b;
    }
    const double* pa = a.values.data() + ia * m * k;
    const double* pb = b.values.data() + ib * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, abs = 0;
        uint64_t isum = 0;
        for (int64_t q = 0; q < k; ++q) {
          double x = ta ? pa[q * m + i] : pa[i * k + q];
          double y = tb ? pb[j * k + q] : pb[q * n + j];
          if (integer) {
            isum += static_cast<uint64_t>(static_cast<int64_t>(x)) *
                    static_cast<uint64_t>(static_cast<int64_t>(y));
          } else {
            sum += x * y;
            abs += std::fabs(x * y);
          }
        }
        if (integer) {
          // Wrap like the type.
          sum = bits == 64 ? static_cast<double>(static_cast<int64_t>(isum))
                           : static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(isum)));
        }
        c[(ob * m + i) * n + j] = sum;
        (*abs_sum)[(ob * m + i) * n + j] = abs;
      }
    }
  }
  return c;
}

Tensor make(const std::vector<int64_t>& shape, DType d, std::mt19937& gen, Operand* op) {
  Shape s(shape);
  std::vector<double> v(s.num_elements());
  std::uniform_int_distribution<int> small(-5, 5);
  std::uniform_real_distribution<double> real(-1, 1);
  for (double& x : v) x = is_integer(d) ? small(gen) : real(gen);
  Tensor t = Tensor::from_vector(v, s);
  if (d != DType::kFloat64) t = cast(t, d);
  op->stored = shape;
  op->values = t.to_vector<double>();  // after rounding to d
  return t;
}

void check_matmul(DType d, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, bool ta, bool tb,
                  uint32_t seed) {
  SCOPED_TRACE(internal::str_cat(dtype_name(d), " ", Shape(sa).to_string(), ta ? "^T" : "", " @ ",
                                 Shape(sb).to_string(), tb ? "^T" : ""));
  std::mt19937 gen(seed);
  Operand oa, ob;
  Tensor a = make(sa, d, gen, &oa), b = make(sb, d, gen, &ob);
  Shape want_shape;
  std::vector<double> abs_sum;
  auto want =
      reference(oa, ob, ta, tb, is_integer(d), 8 * static_cast<int>(dtype_size(d)), &want_shape, &abs_sum);
  Tensor c = matmul(a, b, ta, tb);
  ASSERT_EQ(c.dtype(), d);
  ASSERT_EQ(c.shape(), want_shape);
  auto got = c.to_vector<double>();
  // 16-bit floats multiply in float (or oneDNN's f32 accumulation); the output is rounded to the type.
  double acc_eps = d == DType::kFloat64 ? dtype_epsilon(d) : 1.2e-7;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    double tol = (d == DType::kFloat16 ? 6e-8 : 0) + dtype_epsilon(d) * std::fabs(want[i]) +
                 4 * acc_eps * abs_sum[i] * std::sqrt(static_cast<double>(oa.values.size() + 1));
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << "at " << i << ": got " << got[i] << ", want " << want[i] << " (tolerance " << tol
                    << ")";
      ++bad;
    }
  }
}

const DType kTypes[] = {DType::kFloat32, DType::kFloat64, DType::kBFloat16,
                        DType::kFloat16, DType::kInt32,   DType::kInt64};

TEST(MatMulValues, EveryDtypeAndTranspose) {
  struct Case {
    std::vector<int64_t> a, b;  // logical (untransposed) shapes
  };
  const std::vector<Case> cases = {
      {{1, 1}, {1, 1}},          {{2, 3}, {3, 4}},
      {{7, 5}, {5, 13}},         {{65, 17}, {17, 33}},
      {{1, 100}, {100, 1}},      {{100, 1}, {1, 100}},
      {{5, 2, 3}, {3, 4}},       {{2, 3}, {5, 3, 4}},
      {{2, 1, 3, 4}, {5, 4, 6}}, {{1, 7, 2, 3}, {6, 1, 3, 4}},
      {{3, 4, 9}, {3, 9, 2}},    {{40, 50}, {50, 60}},
  };
  uint32_t seed = 1;
  for (DType d : kTypes) {
    for (const Case& c : cases) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          auto sa = c.a, sb = c.b;
          if (ta) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
          if (tb) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
          check_matmul(d, sa, sb, ta, tb, seed++);
        }
      }
    }
  }
}

TEST(MatMulValues, LargeParallel) {
  check_matmul(DType::kFloat32, {300, 200}, {200, 150}, false, false, 1);
  check_matmul(DType::kFloat32, {256, 256}, {256, 256}, true, true, 2);
  check_matmul(DType::kFloat64, {300, 200}, {200, 150}, false, false, 3);
  check_matmul(DType::kFloat64, {200, 300}, {150, 200}, true, true, 4);
  check_matmul(DType::kInt64, {130, 257}, {70, 257}, false, true, 5);
  check_matmul(DType::kInt32, {64, 32, 16}, {64, 16, 32}, false, false, 6);
  check_matmul(DType::kBFloat16, {200, 300}, {300, 100}, false, false, 7);
  check_matmul(DType::kFloat16, {3, 100, 64}, {64, 80}, false, false, 8);
  // Matrix-vector: too few rows to split, so the columns are split across threads.
  check_matmul(DType::kFloat64, {1, 2000}, {2000, 1000}, false, false, 9);
  check_matmul(DType::kFloat32, {1, 2000}, {2000, 1000}, false, false, 10);
}

TEST(MatMulValues, ZeroSizeDims) {
  auto zeros = [](std::vector<int64_t> shape, DType d) {
    Tensor t = Tensor::from_vector(std::vector<float>(Shape(shape).num_elements(), 0.0f), Shape(shape));
    return cast(t, d);
  };
  for (DType d : kTypes) {
    EXPECT_EQ(matmul(zeros({0, 3}, d), zeros({3, 4}, d)).shape(), Shape({0, 4}));
    EXPECT_EQ(matmul(zeros({2, 3}, d), zeros({3, 0}, d)).shape(), Shape({2, 0}));
    EXPECT_EQ(matmul(zeros({0, 2, 3}, d), zeros({3, 4}, d)).shape(), Shape({0, 2, 4}));
    // An empty inner dimension sums nothing: zeros.
    Tensor a = cast(Tensor::from_vector(std::vector<float>{}, {2, 0}), d);
    Tensor b = cast(Tensor::from_vector(std::vector<float>{}, {0, 3}), d);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.shape(), Shape({2, 3}));
    EXPECT_EQ(c.to_vector<double>(), std::vector<double>(6, 0.0));
  }
}

TEST(MatMulValues, IntegersWrap) {
  Tensor a = Tensor::from_vector(std::vector<int32_t>{1 << 30, 1 << 30}, {1, 2});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{4, 4}, {2, 1});
  // 2^32 + 2^32 wraps to 0 in int32, as in TensorFlow.
  EXPECT_EQ(matmul(a, b).item<int32_t>(), 0);
  Tensor a64 = Tensor::from_vector(std::vector<int64_t>{3'000'000'000, 7}, {1, 2});
  Tensor b64 = Tensor::from_vector(std::vector<int64_t>{3, 1}, {2, 1});
  EXPECT_EQ(matmul(a64, b64).item<int64_t>(), 9'000'000'007);
}

TEST(MatMulValues, SpecialFloats) {
  float inf = std::numeric_limits<float>::infinity();
  Tensor a = Tensor::from_vector(std::vector<float>{inf, 1, 2, 3}, {2, 2});
  Tensor b = Tensor::from_vector(std::vector<float>{1, 0, 0, 1}, {2, 2});
  auto c = matmul(a, b).to_vector<float>();
  EXPECT_EQ(c[0], inf);
  EXPECT_TRUE(std::isnan(c[1]));  // inf * 0
  EXPECT_EQ(c[3], 3.0f);
}

TEST(MatMulValues, RuntimeErrorsNameTheOp) {
  Tensor a = Tensor::from_vector(std::vector<float>(6, 1.0f), {2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>(20, 1.0f), {4, 5});
  try {
    matmul(a, b);
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().message(),
              "MatMul: in[0] is [2,3], in[1] is [4,5]; inner dimensions 3 and 4 differ");
  }
  EXPECT_THROW(matmul(a, Tensor::from_vector(std::vector<double>(12, 1.0), {3, 4})), StatusError);
  EXPECT_THROW(matmul(Tensor({1.f, 2.f, 3.f}), a), StatusError);
}

}  // namespace
}  // namespace ember

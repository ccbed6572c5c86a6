// Reductions: shape functions in the mini-language, values against plain reference loops for every dtype
// and many axis patterns (row, column, mixed, empty, large/parallel), and TensorFlow's special cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ember/core/parallel.h"
#include "ember/ember.h"
#include "ember/kernels/reduce.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using Ints = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Attribute lists for INFER_OK/INFER_ERROR (the macros cannot take braces holding commas).
template <typename... Ts>
std::vector<AttrValue> A(Ts... values) {
  return {AttrValue(values)...};
}

// ---------------------------------------------------------------- shape functions

TEST(ReductionShapes, AxesAndKeepdims) {
  INFER_OK("Sum", "[2,3];=[0]", A(), "[3]");
  INFER_OK("Sum", "[2,3];=[1]", A(true), "[2,1]");
  INFER_OK("Sum", "[2,3,4];=[-1,0]", A(), "[3]");
  INFER_OK("Sum", "[2,3,4];=[-1,0]", A(true), "[1,3,1]");
  INFER_OK("Mean", "[2,3];=[0,1]", A(), "[]");
  INFER_OK("Max", "[2,3]:int32;=[]", A(), "[2,3]:int32");  // an empty list reduces nothing
  INFER_OK("Prod", "[];=[]", A(), "[]");
  INFER_OK("Any", "[4,5]:bool;=[1]", A(), "[4]:bool");
  INFER_OK("All", "[4,5]:bool;=[0]", A(true), "[1,5]:bool");
  INFER_OK("ReduceLogSumExp", "[4,5]:float16;=[1]", A(), "[4]:float16");
}

TEST(ReductionShapes, UnknownDimsAndRank) {
  INFER_OK("Sum", "[?,3];=[1]", A(), "[?]");
  INFER_OK("Sum", "[?,3];=[0]", A(), "[3]");
  INFER_OK("Min", "[?,?,5];=[1]", A(true), "[?,1,5]");
  INFER_OK("Sum", "?;=[0]", A(), "<unknown>");
  INFER_OK("Sum", "?;=[0]", A(true), "<unknown>");
  INFER_OK("ArgMax", "?;=1", A(), "<unknown>:int64");
  INFER_OK("ArgMax", "[?,4];=1", A(), "[?]:int64");
  INFER_OK("ArgMax", "[?,4];=0", A(), "[4]:int64");
}

TEST(ReductionShapes, Errors) {
  INFER_ERROR("Sum", "[2,3];=[2]", A(), "Sum: axis 2 is out of range for a tensor of rank 2");
  INFER_ERROR("Sum", "[2,3];=[-3]", A(), "axis -3 is out of range");
  INFER_ERROR("Mean", "[2,3];=[0,-2]", A(), "Mean: axis [0, -2] contains axis 0 twice");
  INFER_ERROR("Max", "[];=[0]", A(), "rank 0");
  INFER_ERROR("Sum", "[2]:bool;=[0]", A(), "must have a dtype in");
  INFER_ERROR("Any", "[2];=[0]", A(), "must have a dtype in {bool}");
  INFER_ERROR("ReduceLogSumExp", "[2]:int32;=[0]", A(), "must have a dtype in");
  INFER_ERROR("Sum", "[2]", A(), "Sum: expected 2 input(s), got 1");  // the axes are an input now
}

TEST(ArgReductionShapes, AxisAndOutputType) {
  INFER_OK("ArgMax", "[2,3];=1", A(), "[2]:int64");
  INFER_OK("ArgMin", "[2,3,4];=-2", A(DType::kInt32), "[2,4]:int32");
  INFER_OK("ArgMax", "[5]:bool;=0", A(), "[]:int64");
  INFER_OK("ArgMax", "[3,0];=0", A(), "[0]:int64");
  INFER_ERROR("ArgMax", "[2,3];=2", A(), "ArgMax: axis 2 is out of range for a tensor of rank 2");
  INFER_ERROR("ArgMax", "[];=0", A(), "rank 0");
  INFER_ERROR("ArgMin", "[2,3];=0", A(DType::kFloat32), "ArgMin: output_type must be int32 or int64");
  INFER_ERROR("ArgMax", "[0,3];=0", A(), "ArgMax: reduction axis 0 is empty in shape [0,3]");
}

// ---------------------------------------------------------------- references

enum class Kind { kSum, kMean, kProd, kMax, kMin, kLogSumExp };

const char* op_name(Kind k) {
  switch (k) {
    case Kind::kSum:
      return "Sum";
    case Kind::kMean:
      return "Mean";
    case Kind::kProd:
      return "Prod";
    case Kind::kMax:
      return "Max";
    case Kind::kMin:
      return "Min";
    case Kind::kLogSumExp:
      return "ReduceLogSumExp";
  }
  return "?";
}

struct Case {
  std::vector<int64_t> shape;
  Ints axes;
};

uint32_t mask_of(const Ints& axes, int rank) {
  uint32_t m = 0;
  for (int64_t a : axes) m |= 1u << (a < 0 ? a + rank : a);
  return m;
}

// For every input element, the index of the output it reduces into (walked with an odometer).
std::vector<int64_t> output_index(const Shape& shape, uint32_t mask, int64_t* n_out) {
  const int rank = shape.rank();
  int64_t out_stride[kMaxRank] = {};
  *n_out = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if ((mask >> d) & 1u) continue;
    out_stride[d] = *n_out;
    *n_out *= shape.dim(d);
  }
  std::vector<int64_t> idx(std::max<int64_t>(shape.num_elements(), 0));
  int64_t counter[kMaxRank] = {}, o = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = o;
    for (int d = rank - 1; d >= 0; --d) {
      o += out_stride[d];
      if (++counter[d] < shape.dim(d)) break;
      o -= out_stride[d] * counter[d];
      counter[d] = 0;
    }
  }
  return idx;
}

struct Reference {
  std::vector<double> value;
  std::vector<double> abs_sum;  // scale for tolerances
};

Reference reference(Kind kind, bool integer, const std::vector<double>& x, const Shape& shape,
                    uint32_t mask) {
  int64_t n_out;
  auto idx = output_index(shape, mask, &n_out);
  int64_t count = n_out == 0 ? 0 : static_cast<int64_t>(x.size()) / n_out;
  Reference r;
  double init = kind == Kind::kProd                              ? 1
                : kind == Kind::kMax || kind == Kind::kLogSumExp ? -kInf
                : kind == Kind::kMin                             ? kInf
                                                                 : 0;
  r.value.assign(n_out, init);
  r.abs_sum.assign(n_out, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    double& v = r.value[idx[i]];
    r.abs_sum[idx[i]] += std::fabs(x[i]);
    switch (kind) {
      case Kind::kSum:
      case Kind::kMean:
        v += x[i];
        break;
      case Kind::kProd:
        v *= x[i];
        break;
      case Kind::kMax:
      case Kind::kLogSumExp:
        v = (x[i] > v || std::isnan(x[i])) ? x[i] : v;
        break;
      case Kind::kMin:
        v = (x[i] < v || std::isnan(x[i])) ? x[i] : v;
        break;
    }
  }
  if (kind == Kind::kMean) {
    for (double& v : r.value) v = integer ? (count ? std::trunc(v / count) : 0) : v / count;
    for (double& a : r.abs_sum) a /= std::max<int64_t>(count, 1);
  }
  if (kind == Kind::kLogSumExp) {
    std::vector<double> sum(n_out, 0);
    for (size_t i = 0; i < x.size(); ++i) {
      double m = r.value[idx[i]];
      sum[idx[i]] += std::exp(x[i] - (std::isfinite(m) ? m : 0));
    }
    for (int64_t o = 0; o < n_out; ++o) {
      double m = r.value[o];
      r.value[o] = std::log(sum[o]) + (std::isfinite(m) ? m : 0);
      r.abs_sum[o] = 1 + std::fabs(r.value[o]);
    }
  }
  return r;
}

// Test data: small integers for integer dtypes (sums stay in range), values near 1 for products.
std::vector<double> make_data(Kind kind, DType d, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> x(n);
  std::uniform_int_distribution<int> small(-4, 4);
  std::uniform_real_distribution<double> real(-3, 3);
  for (int64_t i = 0; i < n; ++i) {
    if (kind == Kind::kProd) {
      // Products of many elements must neither overflow nor lose all precision.
      int v = small(gen);
      // Integers: +-powers of two, exact in the double reference even when the type wraps.
      x[i] = is_integer(d) ? (v == 4 ? (d == DType::kUInt8 ? 1 : -1) : (v == -4 ? 2 : 1))
                           : std::exp(real(gen) / 192);
    } else if (is_integer(d)) {
      x[i] = d == DType::kUInt8 ? small(gen) + 4 : small(gen);
    } else {
      x[i] = real(gen);
    }
  }
  return x;
}

Tensor make_tensor(const std::vector<double>& x, const std::vector<int64_t>& shape, DType d) {
  Tensor t = Tensor::from_vector(x, Shape(shape));
  return d == DType::kFloat64 ? t : cast(t, d);
}

void check_reduction(Kind kind, DType d, const Case& c, bool keepdims, uint32_t seed) {
  Shape shape(c.shape);
  // str_cat, not std::string +: GCC 12 warns falsely (-Wrestrict) on long + chains at -O3.
  SCOPED_TRACE(internal::str_cat(op_name(kind), " ", dtype_name(d), " shape ", shape.to_string(), " axes ",
                                 ::testing::PrintToString(c.axes), keepdims ? " keepdims" : ""));
  Tensor x = make_tensor(make_data(kind, d, shape.num_elements(), seed), c.shape, d);
  std::vector<double> xv = x.to_vector<double>();  // the values after rounding to d
  uint32_t mask = mask_of(c.axes, shape.rank());
  Reference ref = reference(kind, is_integer(d), xv, shape, mask);
  if (is_integer(d)) {
    // The empty max/min of an integer type is its lowest/highest value.
    double lowest = 0, highest = 0;
    visit_dtype<kIntTypes>(d, [&]<typename T>() {
      lowest = static_cast<double>(std::numeric_limits<T>::lowest());
      highest = static_cast<double>(std::numeric_limits<T>::max());
    });
    for (double& v : ref.value) v = v == -kInf ? lowest : (v == kInf ? highest : v);
  }
  if (is_integer(d) && dtype_size(d) < 8 && (kind == Kind::kSum || kind == Kind::kProd)) {
    // Integer sums and products wrap like the type (TensorFlow's behaviour too).
    double range = std::ldexp(1.0, 8 * static_cast<int>(dtype_size(d)));
    for (double& v : ref.value) {
      v = std::fmod(v, range);
      if (v < 0) v += range;
      if (d != DType::kUInt8 && v >= range / 2) v -= range;
    }
  }
  Tensor y = call_op1(op_name(kind), {x, Tensor::from_vector(c.axes)}, {keepdims});
  ASSERT_EQ(y.dtype(), d);
  ASSERT_EQ(y.num_elements(), static_cast<int64_t>(ref.value.size()));
  Shape expected;
  for (int i = 0; i < shape.rank(); ++i) {
    if (!((mask >> i) & 1u))
      expected.push_back(shape.dim(i));
    else if (keepdims)
      expected.push_back(1);
  }
  EXPECT_EQ(y.shape(), expected);
  std::vector<double> yv = y.to_vector<double>();
  double eps = dtype_epsilon(d);
  // Accumulation is in float for 16-bit floats, so only the output rounding uses their epsilon.
  double acc_eps = d == DType::kFloat64 ? eps : 1.2e-7;
  int bad = 0;
  for (size_t i = 0; i < yv.size() && bad < 5; ++i) {
    double want = ref.value[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(yv[i])) << "at " << i;
      continue;
    }
    double tol = eps * std::fabs(want) + 8 * acc_eps * ref.abs_sum[i];
    if (kind == Kind::kProd && !is_integer(d))
      tol = std::fabs(want) * (eps + 4 * acc_eps * std::sqrt(xv.size()));
    if (std::isinf(want)) {
      EXPECT_EQ(yv[i], want) << "at " << i;
    } else if (!(std::fabs(yv[i] - want) <= tol)) {
      ADD_FAILURE() << "at " << i << ": got " << yv[i] << ", want " << want << " (tolerance " << tol << ")";
      ++bad;
    }
  }
}

const DType kAllNumeric[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                             DType::kFloat64, DType::kInt8,     DType::kInt16,
                             DType::kInt32,   DType::kInt64,    DType::kUInt8};

const std::vector<Case> kSmallCases = {
    {{7}, {0}},
    {{3, 5}, {0}},
    {{3, 5}, {1}},
    {{3, 5}, {0, 1}},
    {{3, 5}, {-1}},
    {{2, 3, 4}, {1}},
    {{2, 3, 4}, {0, 2}},
    {{2, 3, 4}, {-1, 0}},
    {{2, 3, 4}, {0, 1, 2}},
    {{4, 1, 3}, {1}},
    {{4, 1, 3}, {0}},
    {{2, 3, 4, 5}, {1, 3}},
    {{2, 3, 4, 5}, {0, 2}},
    {{2, 3, 4, 5}, {0, 1}},
    {{2, 3, 4, 5}, {2, 3}},
    {{2, 1, 3, 1, 4}, {0, 1, 3}},
    {{5, 4}, {}},
    {{1, 1}, {0}},
    {{}, {}},
    {{3, 0, 2}, {1}},
    {{3, 0, 2}, {0}},
    {{0}, {0}},
    {{33, 65}, {0}},
    {{65, 33}, {1}},
    {{130, 3}, {0}},
    {{3, 130}, {1}},
};

TEST(ReductionValues, EveryDtypeSmallCases) {
  uint32_t seed = 1;
  for (Kind kind : {Kind::kSum, Kind::kMean, Kind::kProd, Kind::kMax, Kind::kMin}) {
    for (DType d : kAllNumeric) {
      for (const Case& c : kSmallCases) {
        check_reduction(kind, d, c, false, seed++);
        check_reduction(kind, d, c, true, seed++);
      }
    }
  }
}

TEST(ReductionValues, LogSumExpSmallCases) {
  uint32_t seed = 100;
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64})
    for (const Case& c : kSmallCases) check_reduction(Kind::kLogSumExp, d, c, false, seed++);
}

// Large cases exercise the parallel splits: many rows, many columns, few outputs with long reductions
// (the reduction itself is split across threads), and strided middle axes.
const std::vector<Case> kLargeCases = {
    {{1000, 1000}, {0}}, {{1000, 1000}, {1}},        {{1 << 20}, {0}},      {{3, 300000}, {1}},
    {{300000, 3}, {0}},  {{200000, 2}, {0}},         {{2, 200000}, {1}},    {{64, 96, 64}, {0, 2}},
    {{64, 96, 64}, {1}}, {{16, 64, 64, 16}, {1, 3}}, {{4096, 300}, {0, 1}}, {{300, 4096}, {}},
};

TEST(ReductionValues, LargeParallelCases) {
  // Every case runs float32 Sum and int32 Max; the other op/dtype pairs rotate over the cases.
  const std::pair<Kind, DType> extra[] = {
      {Kind::kMean, DType::kFloat16},      {Kind::kMin, DType::kInt8},    {Kind::kProd, DType::kFloat32},
      {Kind::kLogSumExp, DType::kFloat32}, {Kind::kSum, DType::kFloat64}, {Kind::kMax, DType::kBFloat16},
      {Kind::kSum, DType::kInt64},         {Kind::kMean, DType::kUInt8},  {Kind::kLogSumExp, DType::kFloat64},
  };
  uint32_t seed = 1000;
  size_t i = 0;
  for (const Case& c : kLargeCases) {
    check_reduction(Kind::kSum, DType::kFloat32, c, false, seed++);
    check_reduction(Kind::kMax, DType::kInt32, c, false, seed++);
    for (int j = 0; j < 2; ++j, ++i) {
      auto [kind, d] = extra[i % std::size(extra)];
      check_reduction(kind, d, c, i % 2 == 1, seed++);
    }
  }
}

TEST(ReductionValues, SameResultOnOneAndTwoThreads) {
  // The split of a long reduction changes the summation order only within the float tolerance, and
  // integer results must not change at all.
  Tensor x = cast(make_tensor(make_data(Kind::kSum, DType::kInt64, 1 << 20, 7), {1 << 20}, DType::kInt64),
                  DType::kInt64);
  int saved = intra_op_threads();
  set_intra_op_threads(1);
  int64_t one = reduce_sum(x).item<int64_t>();
  set_intra_op_threads(2);
  int64_t two = reduce_sum(x).item<int64_t>();
  set_intra_op_threads(saved);
  EXPECT_EQ(one, two);
}

TEST(ReductionValues, SplitReductionsWithManyThreads) {
  // With more threads than outputs, each output's reduction is split into pieces merged in order:
  // column (few wide columns), row with outer reduced dims between kept ones, and ArgMax pieces.
  int saved = intra_op_threads();
  set_intra_op_threads(8);
  const std::vector<Case> cases = {
      {{100000, 3}, {0}}, {{3, 100000, 2}, {1}}, {{2, 1000, 2, 500}, {1, 3}}, {{1000, 2, 1000}, {0, 2}}};
  uint32_t seed = 77;
  for (const Case& c : cases) {
    check_reduction(Kind::kSum, DType::kFloat32, c, false, seed++);
    check_reduction(Kind::kSum, DType::kInt32, c, false, seed++);
    check_reduction(Kind::kMax, DType::kFloat32, c, true, seed++);
    check_reduction(Kind::kLogSumExp, DType::kFloat64, c, false, seed++);
  }
  std::vector<float> x(3 * 100000 * 2, 1.0f);
  x[(1 * 100000 + 76543) * 2 + 1] = 5.0f;
  x[(1 * 100000 + 99999) * 2 + 1] = 5.0f;  // a later tie in another piece loses
  auto idx = argmax(Tensor::from_vector(x, {3, 100000, 2}), 1).to_vector<int64_t>();
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 0, 0, 76543, 0, 0}));
  set_intra_op_threads(saved);
}

// ---------------------------------------------------------------- special values (TensorFlow's results)

TEST(ReductionSpecial, EmptyReductions) {
  Tensor ef = Tensor::from_vector(std::vector<float>{}, {0});
  EXPECT_EQ(reduce_sum(ef).item<float>(), 0.0f);
  EXPECT_EQ(reduce_prod(ef).item<float>(), 1.0f);
  EXPECT_EQ(reduce_max(ef).item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(reduce_min(ef).item<float>(), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(reduce_mean(ef).item<float>()));
  EXPECT_EQ(reduce_logsumexp(ef).item<float>(), -std::numeric_limits<float>::infinity());
  Tensor ei = Tensor::from_vector(std::vector<int32_t>{}, {0});
  EXPECT_EQ(reduce_max(ei).item<int32_t>(), std::numeric_limits<int32_t>::lowest());
  EXPECT_EQ(reduce_min(ei).item<int32_t>(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(reduce_mean(ei).item<int32_t>(), 0);
  Tensor eu = Tensor::from_vector(std::vector<uint8_t>{}, {0});
  EXPECT_EQ(reduce_min(eu).item<int32_t>(), 255);
  Tensor eb = Tensor::from_vector(std::vector<bool>{}, {0});
  EXPECT_FALSE(reduce_any(eb).item<bool>());
  EXPECT_TRUE(reduce_all(eb).item<bool>());
  EXPECT_EQ(reduce_max(cast(ef, DType::kFloat16)).item<float>(), -std::numeric_limits<float>::infinity());
  // Reducing an empty axis of a non-empty output: one identity per output.
  Tensor e2 = Tensor::from_vector(std::vector<float>{}, {3, 0});
  EXPECT_EQ(reduce_prod(e2, {1}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(reduce_sum(e2, {0}).shape(), Shape({0}));
}

TEST(ReductionSpecial, NaNAndInfinity) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector(std::vector<float>{1, nan, 3});
  EXPECT_TRUE(std::isnan(reduce_max(x).item<float>()));
  EXPECT_TRUE(std::isnan(reduce_min(x).item<float>()));
  EXPECT_TRUE(std::isnan(reduce_sum(x).item<float>()));
  EXPECT_TRUE(std::isnan(reduce_logsumexp(x).item<float>()));
  // NaN in the middle of a long (vectorised, split) row still propagates.
  std::vector<float> big(100000, 1.0f);
  big[54321] = nan;
  EXPECT_TRUE(std::isnan(reduce_max(Tensor::from_vector(big)).item<float>()));
  EXPECT_TRUE(std::isnan(reduce_min(Tensor::from_vector(big), {0}).item<float>()));
  EXPECT_EQ(reduce_logsumexp(Tensor::from_vector(std::vector<float>{-inf, -inf})).item<float>(), -inf);
  EXPECT_EQ(reduce_logsumexp(Tensor::from_vector(std::vector<float>{inf, 1})).item<float>(), inf);
  // Stable where the naive formula overflows.
  EXPECT_NEAR(reduce_logsumexp(Tensor::from_vector(std::vector<float>{1000, 1000})).item<float>(),
              1000 + std::log(2.0f), 1e-3);
  EXPECT_NEAR(reduce_logsumexp(Tensor::from_vector(std::vector<double>{-1000, -1000})).item<double>(),
              -1000 + std::log(2.0), 1e-9);
}

TEST(ReductionSpecial, IntegerSemantics) {
  EXPECT_EQ(reduce_mean(Tensor::from_vector(std::vector<int32_t>{-3, 0})).item<int32_t>(), -1);
  EXPECT_EQ(reduce_mean(Tensor::from_vector(std::vector<int32_t>{7, 0, 0})).item<int32_t>(), 2);
  // Sums wrap like the type (as TensorFlow); the mean divides the exact sum.
  Tensor i8 = Tensor::from_vector(std::vector<int8_t>{100, 100});
  EXPECT_EQ(reduce_sum(i8).item<int32_t>(), -56);
  EXPECT_EQ(reduce_mean(i8).item<int32_t>(), 100);
  EXPECT_EQ(reduce_prod(Tensor::from_vector(std::vector<uint8_t>{16, 17})).item<int32_t>(), (16 * 17) % 256);
  EXPECT_EQ(reduce_max(Tensor::from_vector(std::vector<int64_t>{INT64_MIN, -5, INT64_MIN})).item<int64_t>(),
            -5);
}

TEST(ReductionSpecial, HalfTypesAccumulateInFloat) {
  Tensor h = cast(Tensor::from_vector(std::vector<float>{60000, 60000}), DType::kFloat16);
  EXPECT_EQ(reduce_mean(h).item<float>(), 60000.0f);
  EXPECT_EQ(reduce_sum(h).item<float>(), std::numeric_limits<float>::infinity());  // 120000 overflows f16
  // 4096 ones: a float16 accumulator would stop at 2048.
  Tensor ones = cast(Tensor::from_vector(std::vector<float>(4096, 1.0f)), DType::kBFloat16);
  EXPECT_EQ(reduce_sum(ones).item<float>(), 4096.0f);
}

TEST(ReductionValues, AnyAll) {
  std::mt19937 gen(5);
  for (const Case& c : kSmallCases) {
    Shape shape(c.shape);
    for (double density : {0.0, 0.02, 0.5, 0.98, 1.0}) {
      std::vector<bool> x(shape.num_elements());
      std::vector<double> xd(x.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::bernoulli_distribution(density)(gen), xd[i] = x[i];
      Tensor t = Tensor::from_vector(x, shape);
      uint32_t mask = mask_of(c.axes, shape.rank());
      Reference mx = reference(Kind::kMax, true, xd, shape, mask);
      Reference mn = reference(Kind::kMin, true, xd, shape, mask);
      auto any = call_op1("Any", {t, Tensor::from_vector(c.axes)}, {false}).to_vector<bool>();
      auto all = call_op1("All", {t, Tensor::from_vector(c.axes)}, {true}).to_vector<bool>();
      ASSERT_EQ(any.size(), mx.value.size());
      for (size_t i = 0; i < any.size(); ++i) {
        EXPECT_EQ(any[i], mx.value[i] > 0) << shape.to_string() << " " << i;
        EXPECT_EQ(all[i], !(mn.value[i] < 1)) << shape.to_string() << " " << i;
      }
    }
  }
  std::vector<bool> big(1 << 20, true);
  big[777777] = false;
  EXPECT_FALSE(reduce_all(Tensor::from_vector(big)).item<bool>());
  EXPECT_TRUE(reduce_any(Tensor::from_vector(big)).item<bool>());
}

// ---------------------------------------------------------------- ArgMax / ArgMin

std::vector<int64_t> reference_arg(bool is_max, const std::vector<double>& x, const Shape& shape, int axis) {
  int64_t outer = 1, inner = 1, r = shape.dim(axis);
  for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
  std::vector<int64_t> out(outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      // TensorFlow: start from the worst value at index 0; NaN never compares better, so it is skipped.
      int64_t best = 0;
      double b = is_max ? -INFINITY : INFINITY;
      for (int64_t j = 0; j < r; ++j) {
        double v = x[(o * r + j) * inner + k];
        if (is_max ? v > b : v < b) best = j, b = v;
      }
      out[o * inner + k] = best;
    }
  }
  return out;
}

TEST(ArgReductionValues, EveryDtypeAgainstReference) {
  struct ArgCase {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const std::vector<ArgCase> cases = {
      {{7}, 0},       {{3, 5}, 0},       {{3, 5}, 1},       {{3, 5}, -1},      {{2, 3, 4}, 1},
      {{2, 1, 4}, 1}, {{4, 1, 3}, 0},    {{2, 3, 4, 5}, 2}, {{0, 3}, 1},       {{33, 65}, 0},
      {{65, 33}, 1},  {{200000, 2}, 0},  {{2, 200000}, 1},  {{1000, 1000}, 0}, {{1000, 1000}, 1},
      {{1 << 20}, 0}, {{64, 96, 64}, 1},
  };
  std::mt19937 gen(11);
  for (DType d : kAllNumeric) {
    for (const ArgCase& c : cases) {
      Shape shape(c.shape);
      if (shape.num_elements() > 100000 && d != DType::kFloat32 && d != DType::kInt8) continue;
      // Few distinct values, so ties are common; floats sometimes get NaN.
      std::vector<double> x(shape.num_elements());
      std::uniform_int_distribution<int> v(0, 9);
      for (double& e : x) e = v(gen);
      if (is_floating(d) && x.size() > 10) x[x.size() / 3] = kNaN, x[x.size() / 2] = kNaN;
      Tensor t = make_tensor(x, c.shape, d);
      std::vector<double> xv = t.to_vector<double>();
      int axis = static_cast<int>(c.axis < 0 ? c.axis + shape.rank() : c.axis);
      for (bool is_max : {true, false}) {
        SCOPED_TRACE(internal::str_cat(is_max ? "ArgMax " : "ArgMin ", dtype_name(d), " ", shape.to_string(),
                                       " axis ", c.axis));
        auto want = reference_arg(is_max, xv, shape, axis);
        for (DType out_type : {DType::kInt64, DType::kInt32}) {
          Tensor y = is_max ? argmax(t, c.axis, out_type) : argmin(t, c.axis, out_type);
          ASSERT_EQ(y.dtype(), out_type);
          EXPECT_EQ(y.to_vector<int64_t>(), want);
        }
      }
    }
  }
}

TEST(ArgReductionValues, TiesNaNAndBool) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector(std::vector<float>{1, 3, 3, 0, 0});
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 3);
  Tensor n = Tensor::from_vector(std::vector<float>{1, nan, 3, nan});
  EXPECT_EQ(argmax(n).item<int64_t>(), 2);  // TensorFlow skips NaN (NumPy would say 1)
  EXPECT_EQ(argmin(n).item<int64_t>(), 0);
  Tensor all_nan = Tensor::from_vector(std::vector<float>{nan, nan});
  EXPECT_EQ(argmax(all_nan).item<int64_t>(), 0);
  Tensor b = Tensor::from_vector(std::vector<bool>{false, true, true});
  EXPECT_EQ(argmax(b).item<int64_t>(), 1);
  EXPECT_EQ(argmin(b).item<int64_t>(), 0);
  Tensor ninf = Tensor::from_vector(std::vector<float>(5, -std::numeric_limits<float>::infinity()));
  EXPECT_EQ(argmax(ninf).item<int64_t>(), 0);
  std::vector<int32_t> low(100000, INT32_MIN);
  EXPECT_EQ(argmax(Tensor::from_vector(low)).item<int64_t>(), 0);
  low[70000] = 0;
  EXPECT_EQ(argmax(Tensor::from_vector(low)).item<int64_t>(), 70000);
  EXPECT_EQ(argmin(Tensor::from_vector(low)).item<int64_t>(), 0);
}

TEST(ArgReductionValues, Errors) {
  Tensor e = Tensor::from_vector(std::vector<float>{}, {0, 3});
  try {
    argmax(e, 0);
    FAIL() << "expected an error";
  } catch (const StatusError& err) {
    EXPECT_NE(err.status().message().find("ArgMax: reduction axis 0 is empty in shape [0,3]"),
              std::string::npos)
        << err.what();
  }
  EXPECT_EQ(argmax(e, 1).shape(), Shape({0}));
  EXPECT_THROW(argmax(Tensor(1.0f), 0), StatusError);
  EXPECT_THROW(argmax(e, 1, DType::kInt16), StatusError);
}

// ---------------------------------------------------------------- scans (Cumsum, Cumprod)

TEST(ScanShapes, SameAsInput) {
  INFER_OK("Cumsum", "[2,3];=1", A(), "[2,3]");
  INFER_OK("Cumprod", "[?,3]:int32;=-2", A(true, true), "[?,3]:int32");
  INFER_OK("Cumsum", "?;=5", A(), "<unknown>");
  INFER_ERROR("Cumsum", "[2,3];=2", A(), "Cumsum: axis 2 is out of range for a tensor of rank 2");
  INFER_ERROR("Cumprod", "[];=0", A(), "rank 0");
  INFER_ERROR("Cumsum", "[2]:bool;=0", A(), "must have a dtype in");
}

// Issue 12 item 8: an empty input whose other dim is huge scheduled 2^32 empty work items and spun for hours
// (a hang here times the test out).
TEST(ScanValues, EmptyInputsDoNoWorkOverTheirOtherDims) {
  for (const char* op : {"Cumsum", "Cumprod"})
    for (int64_t axis : {0, 1})
      for (std::vector<int64_t> dims : {std::vector<int64_t>{0, int64_t{1} << 40}, {int64_t{1} << 40, 0}}) {
        Tensor y = call_op1(op, {zeros(dims), Tensor(axis)}, {true, true});
        EXPECT_EQ(y.shape(), Shape(dims)) << op;
      }
}

// A plain reference: walks each line along `axis` in scan order, in double.
std::vector<double> reference_scan(bool prod, const std::vector<double>& x, const Shape& shape, int axis,
                                   bool exclusive, bool reverse) {
  int64_t outer = 1, inner = 1, n = shape.dim(axis);
  for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      double acc = prod ? 1 : 0;
      for (int64_t step = 0; step < n; ++step) {
        int64_t k = reverse ? n - 1 - step : step;
        int64_t at = (o * n + k) * inner + j;
        if (!exclusive) acc = prod ? acc * x[at] : acc + x[at];
        out[at] = acc;
        if (exclusive) acc = prod ? acc * x[at] : acc + x[at];
      }
    }
  }
  return out;
}

void check_scan(bool prod, DType d, const std::vector<int64_t>& dims, int64_t axis, bool exclusive,
                bool reverse, uint32_t seed) {
  Shape shape(dims);
  SCOPED_TRACE(internal::str_cat(prod ? "Cumprod " : "Cumsum ", dtype_name(d), " shape ", shape.to_string(),
                                 " axis ", axis, exclusive ? " exclusive" : "", reverse ? " reverse" : ""));
  Tensor x = make_tensor(make_data(prod ? Kind::kProd : Kind::kSum, d, shape.num_elements(), seed), dims, d);
  std::vector<double> xv = x.to_vector<double>();
  int a = static_cast<int>(axis < 0 ? axis + shape.rank() : axis);
  std::vector<double> want = reference_scan(prod, xv, shape, a, exclusive, reverse);
  if (is_integer(d) && dtype_size(d) < 8) {
    double range = std::ldexp(1.0, 8 * static_cast<int>(dtype_size(d)));
    for (double& v : want) {
      v = std::fmod(v, range);
      if (v < 0) v += range;
      if (d != DType::kUInt8 && v >= range / 2) v -= range;
    }
  }
  Tensor y =
      call_op1(prod ? "Cumprod" : "Cumsum", {x, Tensor(static_cast<int32_t>(axis))}, {exclusive, reverse});
  ASSERT_EQ(y.dtype(), d);
  ASSERT_EQ(y.shape(), shape);
  std::vector<double> yv = y.to_vector<double>();
  // 16-bit floats accumulate in float, so only the output rounding uses their epsilon.
  const double eps = dtype_epsilon(d), acc_eps = d == DType::kFloat64 ? eps : 1.2e-7;
  int bad = 0;
  for (size_t i = 0; i < yv.size() && bad < 5; ++i) {
    double tol =
        is_integer(d) ? 0 : (eps + shape.dim(a) * 4 * acc_eps) * (std::fabs(want[i]) + (prod ? 0 : 3));
    if (!(std::fabs(yv[i] - want[i]) <= tol)) {
      ADD_FAILURE() << "at " << i << ": got " << yv[i] << ", want " << want[i];
      ++bad;
    }
  }
}

TEST(ScanValues, EveryDtypeAndMode) {
  const std::pair<std::vector<int64_t>, int64_t> cases[] = {
      {{7}, 0},       {{3, 5}, 0},      {{3, 5}, 1},    {{3, 5}, -1},   {{2, 3, 4}, 1},
      {{2, 1, 4}, 1}, {{4, 300, 3}, 1}, {{3, 0, 2}, 1}, {{3, 0, 2}, 0}, {{1}, 0},
  };
  uint32_t seed = 1;
  for (bool prod : {false, true})
    for (DType d : kAllNumeric)
      for (const auto& [dims, axis] : cases)
        for (bool exclusive : {false, true})
          for (bool reverse : {false, true}) check_scan(prod, d, dims, axis, exclusive, reverse, seed++);
}

TEST(ScanValues, LargeParallelCases) {
  for (bool prod : {false, true}) {
    check_scan(prod, DType::kFloat32, {1000, 600}, 0, false, false, 1);
    check_scan(prod, DType::kFloat32, {600, 1000}, 1, true, true, 2);
    check_scan(prod, DType::kFloat64, {1 << 18}, 0, false, true, 3);
    check_scan(prod, DType::kInt32, {50, 40, 300}, 1, true, false, 4);
  }
}

TEST(ScanValues, IntegersWrapLikeTheType) {
  Tensor x = Tensor::from_vector(std::vector<int32_t>{0x40000000, 4, 3});
  EXPECT_EQ(call_op1("Cumprod", {x, Tensor(0)}, {false, false}).to_vector<int32_t>(),
            (std::vector<int32_t>{0x40000000, 0, 0}));
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{200, 100, 1});
  EXPECT_EQ(call_op1("Cumsum", {u, Tensor(0)}, {false, false}).to_vector<uint8_t>(),
            (std::vector<uint8_t>{200, 44, 45}));
}

// ---------------------------------------------------------------- façade

TEST(ReductionApi, NoAxesMeansAll) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(reduce_sum(x).item<float>(), 21.0f);
  EXPECT_EQ(reduce_sum(x).shape(), Shape());
  EXPECT_EQ(reduce_sum(x, {}, true).shape(), Shape({1, 1}));
  EXPECT_EQ(reduce_sum(x, {0}).to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(reduce_mean(x, {-1}, true).to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(reduce_max(x, {1}).to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(reduce_min(x, {0}).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(reduce_prod(x, {1}).to_vector<float>(), (std::vector<float>{6, 120}));
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(argmin(x, 0, DType::kInt32).dtype(), DType::kInt32);
  // The raw op with an empty list reduces nothing.
  EXPECT_EQ(call_op1("Sum", {x, Tensor::from_vector(Ints{})}).shape(), Shape({2, 3}));
  try {
    reduce_sum(x, {0, 2});
    FAIL() << "expected an error";
  } catch (const StatusError& err) {
    EXPECT_NE(err.status().message().find("Sum: axis 2 is out of range for a tensor of rank 2"),
              std::string::npos)
        << err.what();
  }
}

TEST(ReductionApi, IsaIsReported) {
  std::string isa = kernels::reduce_isa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "baseline") << isa;
}

}  // namespace
}  // namespace ember

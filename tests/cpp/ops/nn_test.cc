#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ember.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

const DType kAllFloats[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

std::vector<double> random_values(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

/// A tensor of `dtype` holding `values` rounded to it.
Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return cast(Tensor::from_vector(values, shape), dtype);
}

/// |got - want| <= atol + rtol |want|, with tolerances fitting the dtype's precision.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, DType dtype,
                  const std::string& what) {
  double atol = 1e-12, rtol = 1e-12;
  if (dtype == DType::kFloat32) atol = 1e-6, rtol = 1e-5;
  if (dtype == DType::kFloat16) atol = 1e-3, rtol = 2e-3;
  if (dtype == DType::kBFloat16) atol = 1e-2, rtol = 1.6e-2;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i]))
        << what << " (" << dtype_name(dtype) << ") at element " << i;
  }
}

/// Reference softmax / log-softmax of [outer, len, inner] along the middle axis, in double.
std::vector<double> reference_softmax(const std::vector<double>& x, int64_t outer, int64_t len, int64_t inner,
                                      bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return (o * len + a) * inner + j; };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < len; ++a) m = std::max(m, x[at(a)]);
      double s = 0;
      for (int64_t a = 0; a < len; ++a) s += std::exp(x[at(a)] - m);
      for (int64_t a = 0; a < len; ++a)
        y[at(a)] = log ? x[at(a)] - m - std::log(s) : std::exp(x[at(a)] - m) / s;
    }
  }
  return y;
}

// ---------------------------------------------------------------------------------------------------
// Shape functions

TEST(NnShapes, Softmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    INFER_OK(op, "[2,3]", {}, "[2,3]");
    INFER_OK(op, "[?,3]", {int64_t{0}}, "[?,3]");
    INFER_OK(op, "[5]:float64", {}, "[5]:float64");
    INFER_OK(op, "?", {int64_t{7}}, "<unknown>");
    INFER_ERROR(op, "[]", {}, "at least one dimension");
    INFER_ERROR(op, "[2,3]", {int64_t{2}}, "axis 2 is out of range for a tensor of rank 2");
    INFER_ERROR(op, "[2,3]:int32", {}, "must have a dtype in");
  }
}

TEST(NnShapes, BiasAdd) {
  INFER_OK("BiasAdd", "[2,3];[3]", {}, "[2,3]");
  INFER_OK("BiasAdd", "[2,?];[3]", {}, "[2,3]");
  INFER_OK("BiasAdd", "[2,?];?", {}, "[2,?]");
  INFER_OK("BiasAdd", "?;[3]", {}, "<unknown>");
  INFER_OK("BiasAdd", "[2,4,5,3]:int32;[3]:int32", {std::string("NHWC")}, "[2,4,5,3]:int32");
  INFER_OK("BiasAdd", "[2,3,4,5];[3]", {std::string("NCHW")}, "[2,3,4,5]");
  INFER_OK("BiasAdd", "[2,?,4,5];[3]", {std::string("NCHW")}, "[2,3,4,5]");
  INFER_ERROR("BiasAdd", "[2,4];[3]", {}, "value is [2,4], bias is [3]");
  INFER_ERROR("BiasAdd", "[2,3,4,5];[5]", {std::string("NCHW")}, "dimension 1 for NCHW");
  INFER_ERROR("BiasAdd", "[2];[2]", {}, "at least 2-D, got shape [2]");
  INFER_ERROR("BiasAdd", "[2,3];[1,3]", {}, "bias must be 1-D, got shape [1,3]");
  INFER_ERROR("BiasAdd", "[2,3];[3]", {std::string("NCDHW")}, "data_format must be");
  INFER_ERROR("BiasAdd", "[2,3];[3]:float64", {}, "does not promote");
}

TEST(NnShapes, L2Loss) {
  INFER_OK("L2Loss", "[2,3]", {}, "[]");
  INFER_OK("L2Loss", "?:float16", {}, "[]:float16");
  INFER_ERROR("L2Loss", "[2]:int32", {}, "must have a dtype in");
}

TEST(NnShapes, SigmoidCrossEntropy) {
  INFER_OK("SigmoidCrossEntropyWithLogits", "[2,3];[2,3]", {}, "[2,3]");
  INFER_OK("SigmoidCrossEntropyWithLogits", "[2,?];[?,3]", {}, "[2,3]");
  INFER_OK("SigmoidCrossEntropyWithLogits", "?;[2]", {}, "[2]");
  INFER_ERROR("SigmoidCrossEntropyWithLogits", "[3];[2]", {},
              "logits and labels must have the same shape ([2] vs [3])");
  INFER_ERROR("SigmoidCrossEntropyWithLogits", "[2,1];[2]", {}, "same shape");
}

TEST(NnShapes, SoftmaxCrossEntropy) {
  INFER_OK("SoftmaxCrossEntropyWithLogits", "[4,3];[4,3]", {}, "[4];[4,3]");
  INFER_OK("SoftmaxCrossEntropyWithLogits", "[?,3];[4,?]", {}, "[4];[4,3]");
  INFER_OK("SoftmaxCrossEntropyWithLogits", "?;[4,3]", {}, "[4];[4,3]");
  INFER_OK("SoftmaxCrossEntropyWithLogits", "?;?", {}, "<unknown>;<unknown>");
  INFER_OK("SoftmaxCrossEntropyWithLogits", "[2,5,3]:float64;[2,5,3]:float64", {},
           "[2,5]:float64;[2,5,3]:float64");
  INFER_OK("SoftmaxCrossEntropyWithLogits", "[3];[3]", {}, "[];[3]");
  INFER_ERROR("SoftmaxCrossEntropyWithLogits", "[3,3];[2,3]", {}, "logits is [3,3], labels is [2,3]");
  INFER_ERROR("SoftmaxCrossEntropyWithLogits", "[];[]", {}, "at least one dimension");
}

TEST(NnShapes, SparseSoftmaxCrossEntropy) {
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "[4,3];[4]:int32", {}, "[4];[4,3]");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "[4,3]:float64;[4]:int64", {}, "[4]:float64;[4,3]:float64");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "?;[4]:int32", {}, "[4];[4,?]");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "[?,3];?:int64", {}, "[?];[?,3]");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "[?,3];[5]:int64", {}, "[5];[5,3]");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "?;?:int64", {}, "<unknown>;<unknown>");
  INFER_OK("SparseSoftmaxCrossEntropyWithLogits", "[2,5,3];[2,5]:int32", {}, "[2,5];[2,5,3]");
  INFER_ERROR("SparseSoftmaxCrossEntropyWithLogits", "[4,3];[4,3]:int32", {},
              "logits is [4,3], labels is [4,3]");
  INFER_ERROR("SparseSoftmaxCrossEntropyWithLogits", "[4,3];[5]:int32", {}, "without its last dimension");
  INFER_ERROR("SparseSoftmaxCrossEntropyWithLogits", "[];[]:int32", {}, "at least one dimension");
  INFER_ERROR("SparseSoftmaxCrossEntropyWithLogits", "[4,3];[4]:float32", {}, "must have a dtype in");
}

// ---------------------------------------------------------------------------------------------------
// Softmax and LogSoftmax values

struct SoftmaxCase {
  Shape shape;
  int64_t axis;
  int64_t outer, len, inner;
};

TEST(NnKernels, SoftmaxMatchesReferenceOnEveryAxis) {
  const SoftmaxCase cases[] = {
      {{5, 37}, -1, 5, 37, 1},       // rows, with a tail shorter than the lanes
      {{3, 4, 5}, 1, 3, 4, 5},       // middle axis: strided
      {{3, 4, 5}, 0, 1, 3, 20},      // first axis
      {{7}, 0, 1, 7, 1},             // a single row
      {{2, 3, 1}, 1, 2, 3, 1},       // inner of size 1 after the axis
      {{64, 300}, 1, 64, 300, 1},    // enough work to go parallel
      {{40, 60, 30}, 1, 40, 60, 30}  // strided and parallel
  };
  for (const SoftmaxCase& c : cases) {
    auto values = random_values(c.shape.num_elements(), -8, 8, 1);
    for (DType dtype : kAllFloats) {
      Tensor x = make(values, c.shape, dtype);
      std::vector<double> xr = x.to_vector<double>();
      for (bool log : {false, true}) {
        Tensor y = log ? log_softmax(x, c.axis) : softmax(x, c.axis);
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_EQ(y.shape(), c.shape);
        expect_close(y.to_vector<double>(), reference_softmax(xr, c.outer, c.len, c.inner, log), dtype,
                     std::string(log ? "log_softmax " : "softmax ") + c.shape.to_string() + " axis " +
                         std::to_string(c.axis));
      }
    }
  }
}

TEST(NnKernels, SoftmaxIsStableForHugeLogits) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = make({1e4, 0, -1e4, 1e4}, {2, 2}, dtype);
    auto p = softmax(x).to_vector<double>();
    EXPECT_EQ(p, (std::vector<double>{1, 0, 0, 1}));
    auto lp = log_softmax(x).to_vector<double>();
    EXPECT_EQ(lp, (std::vector<double>{0, -1e4, -2e4, 0}));
    auto even = softmax(make({1e4, 1e4, -1e4, -1e4}, {2, 2}, dtype)).to_vector<double>();
    EXPECT_EQ(even, (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
    // The same along a strided axis.
    auto col = softmax(make({1e4, -1e4, 0, -1e4}, {2, 2}, dtype), 0).to_vector<double>();
    EXPECT_EQ(col, (std::vector<double>{1, 0.5, 0, 0.5}));
  }
}

TEST(NnKernels, SoftmaxPropagatesNaNAndHandlesMinusInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  auto p = softmax(make({0, -inf, std::nan(""), 1}, {2, 2}, DType::kFloat32)).to_vector<double>();
  EXPECT_EQ(p[0], 1.0);
  EXPECT_EQ(p[1], 0.0);
  EXPECT_TRUE(std::isnan(p[2]) && std::isnan(p[3]));
  EXPECT_EQ(softmax(make({}, {0, 3}, DType::kFloat32)).shape(), Shape({0, 3}));
}

TEST(NnKernels, SoftmaxIsIdenticalAcrossThreadCounts) {
  auto values = random_values(256 * 512, -20, 20, 2);
  Tensor x = make(values, {256, 512}, DType::kFloat32);
  Tensor xs = make(values, {16, 512, 16}, DType::kFloat32);
  int saved = intra_op_threads();
  set_intra_op_threads(1);
  auto a = softmax(x).to_vector<float>(), as = log_softmax(xs, 1).to_vector<float>();
  set_intra_op_threads(2);
  auto b = softmax(x).to_vector<float>(), bs = log_softmax(xs, 1).to_vector<float>();
  set_intra_op_threads(saved);
  EXPECT_EQ(a, b);
  EXPECT_EQ(as, bs);
}

TEST(NnKernels, SoftmaxErrors) {
  EXPECT_THROW(softmax(Tensor(1.0f)), StatusError);
  try {
    softmax(make({1, 2}, {2}, DType::kFloat32), 3);
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_NE(std::string(e.what()).find("Softmax: axis 3 is out of range"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------
// BiasAdd, L2Loss

TEST(NnKernels, BiasAddBothLayouts) {
  std::vector<double> v(2 * 3 * 2 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const std::vector<double> bias{100, 200, 300};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kFloat16}) {
    // NHWC: value [2, 2, 2, 3], channel last.
    auto nhwc = bias_add(make(v, {2, 2, 2, 3}, dtype), make(bias, {3}, dtype)).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(nhwc[i], v[i] + bias[i % 3]) << dtype_name(dtype);
    // NCHW: value [2, 3, 2, 2], channel at dimension 1.
    auto nchw = bias_add(make(v, {2, 3, 2, 2}, dtype), make(bias, {3}, dtype), "NCHW").to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(nchw[i], v[i] + bias[(i / 4) % 3]) << dtype_name(dtype);
  }
  // Rank 2 NCHW has its channels at dimension 1, which is also the last.
  auto m =
      bias_add(make({1, 2, 3, 4}, {2, 2}, DType::kFloat32), make({10, 20}, {2}, DType::kFloat32), "NCHW");
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{11, 22, 13, 24}));
}

TEST(NnKernels, BiasAddErrorNamesBothShapes) {
  try {
    bias_add(make(std::vector<double>(8, 0), {2, 4}, DType::kFloat32), make({1, 2, 3}, {3}, DType::kFloat32));
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BiasAdd: bias must have as many elements as the channel dimension"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("value is [2,4], bias is [3]"), std::string::npos) << e.what();
  }
}

TEST(NnKernels, L2Loss) {
  for (DType dtype : kAllFloats) {
    Tensor out = l2_loss(make({1, 2, 3}, {3}, dtype));
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_EQ(out.rank(), 0);
    EXPECT_EQ(out.item<double>(), 7.0) << dtype_name(dtype);
  }
  EXPECT_EQ(l2_loss(make({}, {0, 4}, DType::kFloat32)).item<float>(), 0.0f);
  // Large enough for many blocks on both threads: compared with a double reference, and bit-identical
  // whatever the thread count.
  auto values = random_values(300001, -3, 3, 3);
  Tensor x = make(values, {300001}, DType::kFloat32);
  double want = 0;
  for (double v : x.to_vector<double>()) want += v * v;
  int saved = intra_op_threads();
  set_intra_op_threads(1);
  float one = l2_loss(x).item<float>();
  set_intra_op_threads(2);
  float two = l2_loss(x).item<float>();
  set_intra_op_threads(saved);
  EXPECT_EQ(one, two);
  EXPECT_NEAR(one, want / 2, 1e-6 * want);
}

// ---------------------------------------------------------------------------------------------------
// Cross-entropy losses

double logistic_loss(double x, double z) {
  return std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
}

TEST(NnKernels, SigmoidCrossEntropyMatchesFormula) {
  auto x = random_values(1000, -30, 30, 4), z = random_values(1000, 0, 1, 5);
  for (DType dtype : kAllFloats) {
    Tensor xt = make(x, {10, 100}, dtype), zt = make(z, {10, 100}, dtype);
    auto xr = xt.to_vector<double>(), zr = zt.to_vector<double>();
    std::vector<double> want(xr.size());
    for (size_t i = 0; i < xr.size(); ++i) want[i] = logistic_loss(xr[i], zr[i]);
    Tensor loss = sigmoid_cross_entropy_with_logits(zt, xt);
    EXPECT_EQ(loss.shape(), Shape({10, 100}));
    expect_close(loss.to_vector<double>(), want, dtype, "sigmoid_cross_entropy_with_logits");
  }
  // Huge logits: no overflow, exact answers.
  auto huge = sigmoid_cross_entropy_with_logits(make({1, 0, 0, 1}, {4}, DType::kFloat32),
                                                make({1e4, -1e4, 1e4, -1e4}, {4}, DType::kFloat32));
  EXPECT_EQ(huge.to_vector<float>(), (std::vector<float>{0, 0, 1e4, 1e4}));
}

TEST(NnKernels, SigmoidCrossEntropyShapeError) {
  try {
    sigmoid_cross_entropy_with_logits(make({0, 0, 0}, {3}, DType::kFloat32),
                                      make({0, 0}, {2}, DType::kFloat32));
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_NE(std::string(e.what()).find("logits and labels must have the same shape ([2] vs [3])"),
              std::string::npos)
        << e.what();
  }
}

TEST(NnKernels, SoftmaxCrossEntropyMatchesReference) {
  const int64_t rows = 33, classes = 21;
  auto logits = random_values(rows * classes, -10, 10, 6);
  auto raw = random_values(rows * classes, 0, 1, 7);
  std::vector<double> labels(raw.size());
  for (int64_t r = 0; r < rows; ++r) {  // each row a probability distribution
    double s = 0;
    for (int64_t j = 0; j < classes; ++j) s += raw[r * classes + j];
    for (int64_t j = 0; j < classes; ++j) labels[r * classes + j] = raw[r * classes + j] / s;
  }
  for (DType dtype : kAllFloats) {
    Tensor lt = make(logits, {3, 11, classes}, dtype), zt = make(labels, {3, 11, classes}, dtype);
    auto l = lt.to_vector<double>(), z = zt.to_vector<double>();
    auto lsm = reference_softmax(l, rows, classes, 1, true);
    std::vector<double> want_loss(rows, 0.0), want_backprop(l.size());
    for (int64_t i = 0; i < rows * classes; ++i) {
      want_loss[i / classes] -= z[i] * lsm[i];
      want_backprop[i] = std::exp(lsm[i]) - z[i];
    }
    auto out = call_op("SoftmaxCrossEntropyWithLogits", {lt, zt});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape(), Shape({3, 11}));
    EXPECT_EQ(out[1].shape(), Shape({3, 11, classes}));
    expect_close(out[0].to_vector<double>(), want_loss, dtype, "softmax xent loss");
    expect_close(out[1].to_vector<double>(), want_backprop, dtype, "softmax xent backprop");
    expect_close(softmax_cross_entropy_with_logits(zt, lt).to_vector<double>(), want_loss, dtype, "façade");
  }
}

TEST(NnKernels, SoftmaxCrossEntropyHugeLogits) {
  // TensorFlow gives loss 13000 and backprop [0.8, -0.3, -0.5] here.
  auto out = call_op("SoftmaxCrossEntropyWithLogits", {make({1e4, 0, -1e4}, {1, 3}, DType::kFloat32),
                                                       make({0.2, 0.3, 0.5}, {1, 3}, DType::kFloat32)});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{13000}));
  auto g = out[1].to_vector<float>();
  EXPECT_NEAR(g[0], 0.8f, 1e-6);
  EXPECT_NEAR(g[1], -0.3f, 1e-6);
  EXPECT_NEAR(g[2], -0.5f, 1e-6);
  // No classes: the loss of an empty sum is 0.
  auto empty = call_op("SoftmaxCrossEntropyWithLogits",
                       {make({}, {2, 0}, DType::kFloat32), make({}, {2, 0}, DType::kFloat32)});
  EXPECT_EQ(empty[0].to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(NnKernels, SparseSoftmaxCrossEntropyMatchesReference) {
  const int64_t rows = 40, classes = 13;
  auto logits = random_values(rows * classes, -10, 10, 8);
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = (r * 7) % classes;
  for (DType dtype : kAllFloats) {
    for (DType label_dtype : {DType::kInt32, DType::kInt64}) {
      Tensor lt = make(logits, {4, 10, classes}, dtype);
      Tensor yt = cast(Tensor::from_vector(labels, {4, 10}), label_dtype);
      auto l = lt.to_vector<double>();
      auto lsm = reference_softmax(l, rows, classes, 1, true);
      std::vector<double> want_loss(rows), want_backprop(l.size());
      for (int64_t i = 0; i < rows * classes; ++i) {
        const bool hit = labels[i / classes] == i % classes;
        if (hit) want_loss[i / classes] = -lsm[i];
        want_backprop[i] = std::exp(lsm[i]) - (hit ? 1.0 : 0.0);
      }
      auto out = call_op("SparseSoftmaxCrossEntropyWithLogits", {lt, yt});
      EXPECT_EQ(out[0].shape(), Shape({4, 10}));
      EXPECT_EQ(out[1].shape(), Shape({4, 10, classes}));
      expect_close(out[0].to_vector<double>(), want_loss, dtype, "sparse xent loss");
      expect_close(out[1].to_vector<double>(), want_backprop, dtype, "sparse xent backprop");
      expect_close(sparse_softmax_cross_entropy_with_logits(yt, lt).to_vector<double>(), want_loss, dtype,
                   "façade");
    }
  }
  // Huge logits.
  auto huge =
      sparse_softmax_cross_entropy_with_logits(Tensor::from_vector(std::vector<int32_t>{0, 2}),
                                               make({1e4, 0, -1e4, 1e4, 0, -1e4}, {2, 3}, DType::kFloat32));
  EXPECT_EQ(huge.to_vector<float>(), (std::vector<float>{0, 2e4}));
}

TEST(NnKernels, SparseSoftmaxCrossEntropyRejectsBadLabels) {
  Tensor logits = make(std::vector<double>(9, 0), {3, 3}, DType::kFloat32);
  for (int32_t bad : {5, -1, 3}) {
    try {
      sparse_softmax_cross_entropy_with_logits(Tensor::from_vector(std::vector<int32_t>{0, bad, 1}), logits);
      FAIL() << "expected an error for label " << bad;
    } catch (const StatusError& e) {
      EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
      const std::string want =
          "SparseSoftmaxCrossEntropyWithLogits: Received a label value of " + std::to_string(bad) +
          " which is outside the valid range of [0, 3).  Label values: 0 " + std::to_string(bad) + " 1";
      EXPECT_EQ(e.status().message(), want);
    }
  }
  // int64 labels too.
  EXPECT_THROW(sparse_softmax_cross_entropy_with_logits(
                   Tensor::from_vector(std::vector<int64_t>{0, 1, 1LL << 40}), logits),
               StatusError);
}

}  // namespace
}  // namespace ember

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ember.h"
#include "ember/kernels/seed.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using Ints = std::vector<int64_t>;

/// Attributes for INFER_OK / INFER_ERROR (a braced list would be split at its commas by the macro).
template <typename... A>
std::vector<AttrValue> attrs(A... a) {
  return {AttrValue(a)...};
}

/// Every test starts from, and leaves behind, the default seed state (no global seed, no streams).
class RandomTest : public ::testing::Test {
 protected:
  void SetUp() override { unset_global_seed(); }
  void TearDown() override {
    unset_global_seed();
    set_intra_op_threads(saved_threads_);
  }
  int saved_threads_ = intra_op_threads();
};

Tensor seed_of(int64_t s0, int64_t s1) { return Tensor::from_vector(std::vector<int64_t>{s0, s1}); }

struct Moments {
  double mean = 0, var = 0, min = 1e300, max = -1e300;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x, m.min = std::min(m.min, x), m.max = std::max(m.max, x);
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

// ---------------------------------------------------------------------------------------------------
// Shape functions

TEST(RandomShapes, Stateful) {
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    INFER_OK(op, "=[2,3]", attrs(), "[2,3]");
    INFER_OK(op, "=[]", attrs(), "[]");
    INFER_OK(op, "=[4]", attrs(DType::kFloat64, int64_t{1}, int64_t{2}), "[4]:float64");
    INFER_OK(op, "=[0,5]", attrs(DType::kBFloat16), "[0,5]:bfloat16");
    INFER_ERROR(op, "=[4]", attrs(DType::kInt32), "dtype must be one of");
    INFER_ERROR(op, "=[2,-3]", attrs(), std::string(op) + ": 'shape' [2, -3]: dimension -3 must be >= 0");
  }
  INFER_OK("RandomUniformInt", "=[4]", attrs(int64_t{0}, int64_t{10}), "[4]:int32");
  INFER_OK("RandomUniformInt", "=[4]", attrs(int64_t{0}, int64_t{1} << 40, DType::kInt64), "[4]:int64");
  INFER_OK("RandomUniformInt", "=[0]", attrs(int64_t{3}, int64_t{3}), "[0]:int32");
  INFER_ERROR("RandomUniformInt", "=[2]", attrs(int64_t{3}, int64_t{3}),
              "RandomUniformInt: Need minval < maxval, got 3 >= 3");
  INFER_ERROR("RandomUniformInt", "=[2]", attrs(int64_t{0}, int64_t{1} << 40), "must fit in int32");
  INFER_ERROR("RandomUniformInt", "=[2]", attrs(int64_t{0}, int64_t{4}, DType::kFloat32),
              "dtype must be one of {int32, int64}");
}

TEST(RandomShapes, Stateless) {
  for (const char* op : {"StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"}) {
    INFER_OK(op, "=[2,3];[2]:int64", attrs(), "[2,3]");
    INFER_OK(op, "=[3];[2]:int32", attrs(DType::kFloat16), "[3]:float16");
    INFER_OK(op, "=[3];?:int32", attrs(), "[3]");
    INFER_OK(op, "=[3];[?]:int32", attrs(), "[3]");
    INFER_ERROR(op, "=[3];[3]:int64", attrs(), "seed must have shape [2], got [3]");
    INFER_ERROR(op, "=[3];[1,2]:int64", attrs(), "seed must have shape [2], got [1,2]");
    INFER_ERROR(op, "=[3];[2]:float32", attrs(), "must have a dtype in");
  }
  INFER_OK("StatelessRandomUniformInt", "=[5];[2]:int64", attrs(int64_t{-3}, int64_t{3}, DType::kInt64),
           "[5]:int64");
  INFER_ERROR("StatelessRandomUniformInt", "=[5];[2]:int64", attrs(int64_t{4}, int64_t{3}),
              "Need minval < maxval, got 4 >= 3");
}

// ---------------------------------------------------------------------------------------------------
// The same numbers as TensorFlow 2.21 for the same seeds (values printed by TF's raw ops).

TEST_F(RandomTest, StatefulOpsMatchTensorFlow) {
  auto uniform = [] {
    return call_op1("RandomUniform", {Tensor::from_vector(Ints{6})},
                    {DType::kFloat32, int64_t{1}, int64_t{2}})
        .to_vector<float>();
  };
  EXPECT_EQ(uniform(),
            (std::vector<float>{0.406396746635437f, 0.8575996160507202f, 0.05539584159851074f,
                                0.08587229251861572f, 0.41215360164642334f, 0.036630868911743164f}));
  // The kernel's stream moves on: the second call continues it.
  EXPECT_EQ(uniform(), (std::vector<float>{0.49945497512817383f, 0.06284701824188232f, 0.4600658416748047f,
                                           0.20280075073242188f, 0.0886303186416626f, 0.9726002216339111f}));
  // Another dtype is another kernel with its own stream.
  auto f64 =
      call_op1("RandomUniform", {Tensor::from_vector(Ints{3})}, {DType::kFloat64, int64_t{1}, int64_t{2}})
          .to_vector<double>();
  EXPECT_EQ(f64, (std::vector<double>{0.2511744980841868, 0.44316677020093853, 0.2972296290781924}));

  auto normal = call_op1("RandomStandardNormal", {Tensor::from_vector(Ints{6})},
                         {DType::kFloat32, int64_t{1}, int64_t{2}})
                    .to_vector<float>();
  const std::vector<float> want_normal{-1.0467792749404907f, 0.8397045731544495f, 1.235836386680603f,
                                       2.0637853145599365f,  0.3037427067756653f, 1.2963250875473022f};
  for (size_t i = 0; i < want_normal.size(); ++i) EXPECT_NEAR(normal[i], want_normal[i], 1e-6) << i;

  auto truncated =
      call_op1("TruncatedNormal", {Tensor::from_vector(Ints{6})}, {DType::kFloat32, int64_t{1}, int64_t{2}})
          .to_vector<float>();
  const std::vector<float> want_truncated{-1.0467792749404907f, 0.8397045731544495f,  1.235836386680603f,
                                          0.3037427067756653f,  0.38869091868400574f, 1.236704707145691f};
  for (size_t i = 0; i < want_truncated.size(); ++i) EXPECT_NEAR(truncated[i], want_truncated[i], 1e-6) << i;

  auto i32 = call_op1("RandomUniformInt", {Tensor::from_vector(Ints{6})},
                      {int64_t{-5}, int64_t{10}, DType::kInt32, int64_t{1}, int64_t{2}});
  EXPECT_EQ(i32.to_vector<int32_t>(), (std::vector<int32_t>{9, 0, 7, 9, 6, -4}));
  auto i64 = call_op1("RandomUniformInt", {Tensor::from_vector(Ints{4})},
                      {int64_t{-5}, int64_t{1} << 40, DType::kInt64, int64_t{1}, int64_t{2}});
  EXPECT_EQ(i64.to_vector<int64_t>(),
            (std::vector<int64_t>{910070865905, 950241910848, 355197626878, 1044818814816}));
}

TEST_F(RandomTest, StatelessOpsMatchTensorFlow) {
  auto u = call_op1("StatelessRandomUniform", {Tensor::from_vector(Ints{6}), seed_of(7, 11)}, {})
               .to_vector<float>();
  EXPECT_EQ(u, (std::vector<float>{0.7251373529434204f, 0.07715070247650146f, 0.5419409275054932f,
                                   0.26232099533081055f, 0.5479346513748169f, 0.3882409334182739f}));
  auto n = call_op1("StatelessRandomNormal", {Tensor::from_vector(Ints{6}), seed_of(7, 11)}, {})
               .to_vector<float>();
  const std::vector<float> want_n{0.3736024796962738f,   0.7093726396560669f, 1.103570818901062f,
                                  -0.08560418337583542f, 0.7084914445877075f, -0.8373997807502747f};
  for (size_t i = 0; i < want_n.size(); ++i) EXPECT_NEAR(n[i], want_n[i], 1e-6) << i;
  auto t =
      call_op1("StatelessTruncatedNormal", {Tensor::from_vector(Ints{6}), seed_of(7, 11)}, {DType::kFloat64})
          .to_vector<double>();
  const std::vector<double> want_t{0.5721170971858979,   -0.3409141641154505, -1.4383148326660065,
                                   -0.30746722339271454, -1.061688353490174,  0.37498356468867805};
  for (size_t i = 0; i < want_t.size(); ++i) EXPECT_NEAR(t[i], want_t[i], 1e-12) << i;
  auto k = call_op1("StatelessRandomUniformInt", {Tensor::from_vector(Ints{6}), seed_of(7, 11)},
                    {int64_t{0}, int64_t{100}});
  EXPECT_EQ(k.to_vector<int32_t>(), (std::vector<int32_t>{5, 47, 62, 80, 97, 73}));
  // int32 seeds are sign-extended like int64 ones.
  Tensor seed32 = Tensor::from_vector(std::vector<int32_t>{7, 11});
  EXPECT_EQ(call_op1("StatelessRandomUniform", {Tensor::from_vector(Ints{6}), seed32}, {}).to_vector<float>(),
            u);
  // tf.random.stateless_uniform([6], seed=[7, 11], minval=2., maxval=5.)
  auto scaled = stateless_random_uniform({6}, {7, 11}, DType::kFloat32, 2.0, 5.0).to_vector<float>();
  const std::vector<float> want_scaled{4.175412178039551f,  2.231451988220215f,  3.6258227825164795f,
                                       2.7869629859924316f, 3.6438040733337402f, 3.1647229194641113f};
  for (size_t i = 0; i < want_scaled.size(); ++i) EXPECT_FLOAT_EQ(scaled[i], want_scaled[i]) << i;
}

TEST_F(RandomTest, FacadeFollowsTensorFlowSeedRules) {
  // tf.random.set_seed(1); uniform([4], seed=5) twice; uniform([4]); normal([4], 1, 2); then reset.
  set_global_seed(1);
  const std::vector<float> a{0.19560599327087402f, 0.029860854148864746f, 0.3649308681488037f,
                             0.2561500072479248f};
  EXPECT_EQ(random_uniform({4}, DType::kFloat32, 0, {}, 5).to_vector<float>(), a);
  EXPECT_EQ(random_uniform({4}, DType::kFloat32, 0, {}, 5).to_vector<float>(),
            (std::vector<float>{0.37081360816955566f, 0.14327168464660645f, 0.8326014280319214f,
                                0.16179096698760986f}));
  EXPECT_EQ(random_uniform({4}).to_vector<float>(),
            (std::vector<float>{0.1651308536529541f, 0.9014812707901001f, 0.6309741735458374f,
                                0.4345461130142212f}));
  auto n = random_normal({4}, 1.0, 2.0).to_vector<float>();
  const std::vector<float> want_n{1.806175708770752f, -1.176041603088379f, 0.873809278011322f,
                                  3.6731133460998535f};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(n[i], want_n[i], 1e-5) << i;
  // Setting the seed again replays the sequence.
  set_global_seed(1);
  EXPECT_EQ(random_uniform({4}, DType::kFloat32, 0, {}, 5).to_vector<float>(), a);
  EXPECT_EQ(random_uniform({4}, DType::kInt32, 0, 10, 3).to_vector<int32_t>(),
            (std::vector<int32_t>{7, 2, 9, 4}));
}

// ---------------------------------------------------------------------------------------------------
// Reproducibility rules

TEST_F(RandomTest, GlobalSeedReplaysEverything) {
  auto run = [] {
    std::vector<float> out;
    for (int i = 0; i < 3; ++i) {
      for (float v : random_uniform({5}).to_vector<float>()) out.push_back(v);
      for (float v : random_normal({3}, 0, 1, DType::kFloat32, 42).to_vector<float>()) out.push_back(v);
      for (float v : truncated_normal({3}).to_vector<float>()) out.push_back(v);
    }
    return out;
  };
  set_global_seed(1234);
  auto first = run();
  set_global_seed(1234);
  EXPECT_EQ(run(), first);
  set_global_seed(1235);
  EXPECT_NE(run(), first);
}

TEST_F(RandomTest, SameSeedsGiveFreshNumbersOnEachCall) {
  auto a = random_uniform({8}, DType::kFloat32, 0, {}, 9).to_vector<float>();
  auto b = random_uniform({8}, DType::kFloat32, 0, {}, 9).to_vector<float>();
  EXPECT_NE(a, b);
  // An op seed alone is reproducible across "programs" (stream resets), like TF's default graph seed.
  unset_global_seed();
  EXPECT_EQ(random_uniform({8}, DType::kFloat32, 0, {}, 9).to_vector<float>(), a);
}

TEST_F(RandomTest, UnseededIsNondeterministic) {
  auto a = call_op1("RandomUniform", {Tensor::from_vector(Ints{16})}, {}).to_vector<float>();
  unset_global_seed();  // resets the streams: a (0, 0) stream starts somewhere new
  auto b = call_op1("RandomUniform", {Tensor::from_vector(Ints{16})}, {}).to_vector<float>();
  EXPECT_NE(a, b);
  EXPECT_NE(random_uniform({16}).to_vector<float>(), random_uniform({16}).to_vector<float>());
}

TEST_F(RandomTest, StatelessIgnoresGlobalState) {
  auto a = stateless_random_normal({100}, {3, 4}).to_vector<float>();
  set_global_seed(77);
  (void)random_uniform({10});
  EXPECT_EQ(stateless_random_normal({100}, {3, 4}).to_vector<float>(), a);
  EXPECT_NE(stateless_random_normal({100}, {3, 5}).to_vector<float>(), a);
  EXPECT_NE(stateless_random_normal({100}, {4, 4}).to_vector<float>(), a);
}

TEST_F(RandomTest, SmallShapesArePrefixesOfLargeOnes) {
  // Output element e always comes from Philox group e / group_size, so shape only truncates.
  for (const char* op : {"StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
      auto small = call_op1(op, {Tensor::from_vector(Ints{7}), seed_of(5, 6)}, {dtype}).to_vector<double>();
      auto large =
          call_op1(op, {Tensor::from_vector(Ints{10, 100}), seed_of(5, 6)}, {dtype}).to_vector<double>();
      EXPECT_EQ(small, std::vector<double>(large.begin(), large.begin() + 7))
          << op << " " << dtype_name(dtype);
    }
  }
}

TEST_F(RandomTest, ParallelFillEqualsSerialFill) {
  const Ints shape{1000003};  // not a multiple of any group size
  auto fill_all = [&] {
    std::vector<std::vector<double>> out;
    for (const char* op : {"StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"}) {
      for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
        out.push_back(call_op1(op, {Tensor::from_vector(shape), seed_of(1, 2)}, {dtype}).to_vector<double>());
      }
    }
    out.push_back(call_op1("StatelessRandomUniformInt", {Tensor::from_vector(shape), seed_of(1, 2)},
                           {int64_t{-7}, int64_t{1000}})
                      .to_vector<double>());
    out.push_back(call_op1("StatelessRandomUniformInt", {Tensor::from_vector(shape), seed_of(1, 2)},
                           {int64_t{-7}, int64_t{1} << 50, DType::kInt64})
                      .to_vector<double>());
    set_global_seed(3);
    out.push_back(call_op1("RandomStandardNormal", {Tensor::from_vector(shape)},
                           {DType::kFloat32, int64_t{3}, int64_t{4}})
                      .to_vector<double>());
    return out;
  };
  set_intra_op_threads(1);
  auto serial = fill_all();
  set_intra_op_threads(2);
  auto parallel = fill_all();
  ASSERT_EQ(serial.size(), parallel.size());
  for (size_t i = 0; i < serial.size(); ++i) EXPECT_TRUE(serial[i] == parallel[i]) << "fill #" << i;
}

TEST_F(RandomTest, BatchedKernelsEqualPhiloxReference) {
  // The uniform kernels generate 16 groups per vectorised batch (Note [Batched Philox]); they must give
  // philox.h's bits for every size (partial batches, partial groups) and integer range.
  const kernels::PhiloxState start = kernels::stateless_philox_state(21, 22);
  for (int64_t n : {1, 3, 4, 63, 64, 65, 67, 1000, 4099}) {
    SCOPED_TRACE(n);
    auto check_float = [&]<typename T>(DType dtype) {
      std::vector<T> want(static_cast<size_t>(n));
      kernels::fill_uniform(start, want.data(), n);
      Tensor got =
          call_op1("StatelessRandomUniform", {Tensor::from_vector(Ints{n}), seed_of(21, 22)}, {dtype});
      EXPECT_EQ(std::memcmp(got.impl()->raw_data(), want.data(), n * sizeof(T)), 0) << dtype_name(dtype);
    };
    check_float.operator()<float>(DType::kFloat32);
    check_float.operator()<double>(DType::kFloat64);
    check_float.operator()<float16>(DType::kFloat16);
    check_float.operator()<bfloat16>(DType::kBFloat16);
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 1},
                          {-5, 10},
                          {0, 1000},
                          {INT32_MIN, INT32_MAX},
                          {-1, 2147483647},
                          {7, 1 << 30}}) {
      std::vector<int32_t> want(static_cast<size_t>(n));
      kernels::fill_uniform_int<int32_t>(start, want.data(), n, static_cast<int32_t>(lo),
                                         static_cast<int32_t>(hi));
      Tensor got =
          call_op1("StatelessRandomUniformInt", {Tensor::from_vector(Ints{n}), seed_of(21, 22)}, {lo, hi});
      EXPECT_EQ(got.to_vector<int32_t>(), want) << lo << " " << hi;
    }
    for (auto [lo, hi] :
         {std::pair<int64_t, int64_t>{0, 1}, {-5, 10}, {INT64_MIN, INT64_MAX}, {3, int64_t{1} << 62}}) {
      std::vector<int64_t> want(static_cast<size_t>(n));
      kernels::fill_uniform_int<int64_t>(start, want.data(), n, lo, hi);
      Tensor got = call_op1("StatelessRandomUniformInt", {Tensor::from_vector(Ints{n}), seed_of(21, 22)},
                            {lo, hi, DType::kInt64});
      EXPECT_EQ(got.to_vector<int64_t>(), want) << lo << " " << hi;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Distributions

TEST_F(RandomTest, MomentsAndRanges) {
  const Shape shape({1 << 20});
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    Moments u = moments(stateless_random_uniform(shape, {1, 1}, dtype).to_vector<double>());
    // bfloat16 / float16 hold 7 / 10 random bits: their mean is 0.5 - 2^-bits / 2.
    EXPECT_NEAR(u.mean, 0.5, half ? 5e-3 : 2e-3);
    EXPECT_NEAR(u.var, 1.0 / 12, 2e-3);
    EXPECT_GE(u.min, 0.0);
    EXPECT_LT(u.max, 1.0);

    Moments n = moments(stateless_random_normal(shape, {2, 2}, 0, 1, dtype).to_vector<double>());
    EXPECT_NEAR(n.mean, 0.0, 5e-3);
    EXPECT_NEAR(n.var, 1.0, half ? 2e-2 : 5e-3);

    Moments t = moments(stateless_truncated_normal(shape, {3, 3}, 0, 1, dtype).to_vector<double>());
    EXPECT_NEAR(t.mean, 0.0, 5e-3);
    EXPECT_NEAR(t.var, 0.7737413, half ? 2e-2 : 5e-3);  // variance of N(0,1) truncated to (-2, 2)
    EXPECT_GE(t.min, -2.0);
    EXPECT_LE(t.max, 2.0);
  }
  // Stateful ones, through the façade's scaling.
  Moments n = moments(random_normal({1 << 20}, 3.0, 0.5, DType::kFloat64, 5).to_vector<double>());
  EXPECT_NEAR(n.mean, 3.0, 3e-3);
  EXPECT_NEAR(n.var, 0.25, 3e-3);
  Moments t = moments(truncated_normal({1 << 20}, 5.0, 0.1, DType::kFloat32, 6).to_vector<double>());
  EXPECT_GE(t.min, 4.8 - 1e-6);
  EXPECT_LE(t.max, 5.2 + 1e-6);
  Moments u = moments(random_uniform({1 << 20}, DType::kFloat32, -3.0, 5.0, 7).to_vector<double>());
  EXPECT_NEAR(u.mean, 1.0, 2e-2);
  EXPECT_GE(u.min, -3.0);
  EXPECT_LT(u.max, 5.0);
}

TEST_F(RandomTest, IntegersStayInRangeAndCoverIt) {
  for (DType dtype : {DType::kInt32, DType::kInt64}) {
    auto v = random_uniform({10000}, dtype, -3, 4, 11).to_vector<int64_t>();
    std::set<int64_t> seen(v.begin(), v.end());
    EXPECT_EQ(seen, (std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3})) << dtype_name(dtype);
    auto s = stateless_random_uniform({10000}, {8, 9}, dtype, 100, 103).to_vector<int64_t>();
    EXPECT_EQ(std::set<int64_t>(s.begin(), s.end()), (std::set<int64_t>{100, 101, 102})) << dtype_name(dtype);
  }
  auto wide = random_uniform({1000}, DType::kInt64, -1e15, 1e15, 12).to_vector<int64_t>();
  for (int64_t x : wide) {
    EXPECT_GE(x, -1000000000000000LL);
    EXPECT_LT(x, 1000000000000000LL);
  }
}

TEST_F(RandomTest, Errors) {
  EXPECT_THROW(random_uniform({3}, DType::kInt32, 5, 5), StatusError);
  EXPECT_THROW(random_uniform({3}, DType::kInt32), StatusError);  // integers need maxval
  EXPECT_THROW(random_uniform({3}, DType::kBool), StatusError);
  EXPECT_THROW(
      call_op1("StatelessRandomUniform",
               {Tensor::from_vector(Ints{3}), Tensor::from_vector(std::vector<int64_t>{1, 2, 3})}, {}),
      StatusError);
  try {
    call_op1("RandomUniformInt", {Tensor::from_vector(Ints{2})}, {int64_t{3}, int64_t{3}});
    FAIL() << "expected an error";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().message(), "RandomUniformInt: Need minval < maxval, got 3 >= 3");
  }
  // Zero impossible draws are fine.
  EXPECT_EQ(random_uniform({0}, DType::kInt32, 5, 5).num_elements(), 0);
}

}  // namespace
}  // namespace ember

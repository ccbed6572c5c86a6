// The matmul kernel: which implementation runs, the primitive cache (bounded, thread safe), calls from
// inside a parallel region, and the large-problem paths against a reference.
#include "ember/kernels/matmul.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <cstdio>

#include "ember/core/parallel.h"
#include "ember/ember.h"

namespace ember {
namespace {

Tensor filled(const std::vector<int64_t>& shape, float start) {
  Shape s(shape);
  std::vector<float> v(s.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i % 7) * 0.25f;
  return Tensor::from_vector(v, s);
}

TEST(MatMulKernel, ImplementationPerDtype) {
  Tensor a = filled({128, 128}, 1), b = filled({128, 128}, -1);
  matmul(a, b);
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:tiles");
  matmul(filled({4, 512, 128}, 1), filled({128, 512}, 1));  // a's batch folds into its rows: one sgemm
  EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
  matmul(filled({4, 128, 128}, 1), filled({4, 128, 128}, 1));  // batched: the cached primitive
  std::string f32 = kernels::matmul_last_impl();
  EXPECT_TRUE(f32 != "dnnl_sgemm" && f32.find("ember") == std::string::npos) << f32;
  matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64));
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:blocked");
  matmul(cast(a, DType::kFloat16), cast(b, DType::kFloat16));
  EXPECT_EQ(kernels::matmul_last_impl().rfind("f32 via ", 0), 0u) << kernels::matmul_last_impl();
  matmul(cast(a, DType::kBFloat16), cast(b, DType::kBFloat16));
  std::printf("[ matmul   ] float32 runs on %s, bfloat16 on %s\n", f32.c_str(),
              kernels::matmul_last_impl().c_str());
  // Tiny and narrow problems skip oneDNN.
  matmul(filled({2, 2}, 1), filled({2, 2}, 1));
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:small_gemm");
  matmul(filled({2, 40}, 1), filled({40, 40}, 1));  // too wide for the small loops, too small for sgemm
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:blocked");
}

TEST(MatMulKernel, CacheIsBoundedAndReused) {
  kernels::matmul_cache_clear();
  // Batched operands, so that float32 runs on a primitive (unbatched products go to sgemm), with more
  // than 32 columns (narrower ones go to the small loops).
  Tensor a = filled({2, 32, 40}, 1), b = filled({2, 40, 48}, 2);
  Tensor c1 = matmul(a, b);
  EXPECT_EQ(kernels::matmul_cache_size(), 1u);
  Tensor c2 = matmul(a, b);
  EXPECT_EQ(kernels::matmul_cache_size(), 1u);
  EXPECT_EQ(c1.to_vector<float>(), c2.to_vector<float>());
  matmul(a, b, false, false);
  matmul(filled({2, 40, 32}, 1), b, true, false);  // another transpose: another primitive
  EXPECT_EQ(kernels::matmul_cache_size(), 2u);
  EXPECT_EQ(kernels::matmul_cache_capacity(), 256u);
  // Fill past a small capacity (creating 256 primitives would only make the test slow).
  kernels::set_matmul_cache_capacity(8);
  for (int64_t n = 33; n < 33 + 12; ++n) matmul(filled({2, 16, 16}, 1), filled({2, 16, n}, 1));
  EXPECT_EQ(kernels::matmul_cache_size(), 8u);
  kernels::set_matmul_cache_capacity(3);
  EXPECT_EQ(kernels::matmul_cache_size(), 3u);
  kernels::set_matmul_cache_capacity(256);
  kernels::matmul_cache_clear();
  EXPECT_EQ(kernels::matmul_cache_size(), 0u);
}

TEST(MatMulKernel, CallsFromParallelRegionsAgree) {
  // Several threads share the cache and run primitives at once; oneDNN then runs single-threaded inside
  // each (no nested oversubscription). Every result must equal the one computed alone.
  for (bool batched_b : {false, true}) {  // the tiles, then the primitive
    Tensor a = filled({3, 64, 48}, 0.5f),
           b = batched_b ? filled({3, 48, 80}, -0.5f) : filled({48, 80}, -0.5f);
    std::vector<float> alone = matmul(a, b).to_vector<float>();
    std::vector<std::vector<float>> results(4);
#pragma omp parallel for num_threads(2)
    for (int i = 0; i < 4; ++i) results[i] = matmul(a, b).to_vector<float>();
    for (const auto& r : results) EXPECT_EQ(r, alone);
  }
}

// ---- the small-GEMM loops (kernels/isa/small_gemm_isa.cc)

template <typename T>
Tensor patterned(const std::vector<int64_t>& shape, int seed) {
  Shape s(shape);
  std::vector<T> v(s.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(static_cast<int>((i * 7 + seed * 13) % 19) - 9) / T(8);
  return Tensor::from_vector(v, s);
}

// op(a) @ op(b) in double, from the stored operands.
template <typename T>
std::vector<double> naive(const std::vector<T>& a, const std::vector<T>& b, int64_t M, int64_t N, int64_t K,
                          bool ta, bool tb) {
  std::vector<double> c(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k)
        sum += static_cast<double>(ta ? a[k * M + i] : a[i * K + k]) *
               static_cast<double>(tb ? b[j * K + k] : b[k * N + j]);
      c[i * N + j] = sum;
    }
  return c;
}

template <typename T>
void check_small_products(const std::vector<int64_t>& ns, const std::vector<int64_t>& ks,
                          const std::vector<int64_t>& ms) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t N : ns)
        for (int64_t K : ks)
          for (int64_t M : ms) {
            Tensor a = patterned<T>(ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 1);
            Tensor b = patterned<T>(tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 2);
            std::vector<T> got = matmul(a, b, ta, tb).template to_vector<T>();
            std::vector<double> want = naive(a.to_vector<T>(), b.to_vector<T>(), M, N, K, ta, tb);
            ASSERT_EQ(got.size(), want.size());
            // Inputs are multiples of 1/8 below 1.25: float32 sums of up to 70 terms stay exact or nearly.
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + K))
                  << "M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " at " << i
                  << " (" << kernels::matmul_last_impl() << ")";
          }
}

TEST(MatMulKernel, SmallProductsMatchNaiveFloat32) {
  std::vector<int64_t> ns;
  for (int64_t n = 1; n <= 17; ++n) ns.push_back(n);
  ns.insert(ns.end(), {31, 32, 33});
  check_small_products<float>(ns, {1, 2, 3, 5, 10, 16, 33, 70}, {1, 2, 3, 5, 8, 9, 17, 200, 300});
}

TEST(MatMulKernel, SmallProductsMatchNaiveFloat64) {
  check_small_products<double>({1, 2, 3, 4, 5, 8, 9, 15, 16, 17}, {1, 2, 3, 10, 70}, {1, 3, 8, 9, 200});
}

TEST(MatMulKernel, SmallProductsBatchedAndLongTransposedA) {
  // Batched on both sides, broadcast b, a's batch folded into rows; and transpose_a with K = 1000.
  Tensor a = patterned<float>({3, 4, 10}, 1), b = patterned<float>({3, 10, 6}, 2),
         b1 = patterned<float>({10, 6}, 3);
  for (const Tensor& bb : {b, b1}) {
    std::vector<float> got = matmul(a, bb).to_vector<float>();
    EXPECT_EQ(kernels::matmul_last_impl(), "ember:small_gemm");
    std::vector<float> av = a.to_vector<float>(), bv = bb.to_vector<float>();
    for (int64_t batch = 0; batch < 3; ++batch) {
      std::vector<float> ab(av.begin() + batch * 40, av.begin() + (batch + 1) * 40);
      std::vector<float> bbv =
          bb.shape().rank() == 3 ? std::vector<float>(bv.begin() + batch * 60, bv.begin() + (batch + 1) * 60)
                                 : bv;
      std::vector<double> want = naive(ab, bbv, 4, 6, 10, false, false);
      for (int64_t i = 0; i < 24; ++i) EXPECT_NEAR(got[batch * 24 + i], want[i], 1e-5);
    }
  }
  Tensor x = patterned<float>({1000, 3}, 4), dy = patterned<float>({1000, 5}, 5);
  std::vector<float> got = matmul(x, dy, true, false).to_vector<float>();
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:small_gemm");
  std::vector<double> want = naive(x.to_vector<float>(), dy.to_vector<float>(), 3, 5, 1000, true, false);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3);
}

TEST(MatMulKernel, L2hmcShapesUseSmallGemm) {
  struct Case {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  for (const Case& c : std::vector<Case>{{{200, 3}, {3, 10}, false, false},
                                         {{200, 10}, {10, 2}, false, false},
                                         {{200, 2}, {2, 2}, false, false},
                                         {{200, 2}, {2, 2}, false, true},
                                         {{200, 10}, {10, 10}, false, false},
                                         {{200, 10}, {3, 10}, false, true},
                                         {{200, 3}, {200, 10}, true, false},
                                         {{200, 10}, {200, 2}, true, false}}) {
    matmul(filled(c.a, 1), filled(c.b, 2), c.ta, c.tb);
    EXPECT_EQ(kernels::matmul_last_impl(), "ember:small_gemm");
    matmul(cast(filled(c.a, 1), DType::kFloat64), cast(filled(c.b, 2), DType::kFloat64), c.ta, c.tb);
    EXPECT_EQ(kernels::matmul_last_impl(), "ember:small_gemm");
  }
}

// ---- the register tiles (kernels/isa/matmul_tiles_isa.cc)

// Every row remainder of a tile (8 or more rows: the full tile and 1, 2, 3-4, 5-7 left over), full and
// partial panels of B (in place, and the copied last one, narrower than a vector or not), and a's batch
// dims folded into its rows.
TEST(MatMulKernel, TileProductsMatchNaive) {
  for (int64_t N : {33, 40, 48, 64, 65, 100})
    for (int64_t K : {1, 2, 17, 64, 300})
      for (int64_t M : {8, 9, 10, 11, 12, 13, 15, 16, 31, 33, 100}) {
        Tensor a = patterned<float>({M, K}, 1);
        Tensor b = patterned<float>({K, N}, 2);
        std::vector<float> got = matmul(a, b).to_vector<float>();
        if (M * N * K <= 16 * 16 * 16) continue;  // tiny: the blocked loops
        ASSERT_EQ(kernels::matmul_last_impl(), "ember:tiles") << "M=" << M << " N=" << N << " K=" << K;
        std::vector<double> want = naive(a.to_vector<float>(), b.to_vector<float>(), M, N, K, false, false);
        ASSERT_EQ(got.size(), want.size());
        // Multiples of 1/8 below 1.25: sums of up to 300 products stay exact in float32.
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << "M=" << M << " N=" << N << " K=" << K << " at " << i;
      }
  Tensor a3 = patterned<float>({3, 7, 50}, 5), b2 = patterned<float>({50, 70}, 6);
  std::vector<float> got = matmul(a3, b2).to_vector<float>();
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:tiles");
  std::vector<double> want = naive(a3.to_vector<float>(), b2.to_vector<float>(), 21, 70, 50, false, false);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

// The products of a served MLP and of an LSTM step run on ember's own loops, not on dnnl_sgemm, whose
// first call in a process generates its kernels (30-60 ms: bench/saved_model.py's whole first call).
TEST(MatMulKernel, MlpAndLstmShapesAvoidSgemm) {
  struct Case {
    int64_t M, K, N;
    const char* impl;
  };
  for (const Case& c : std::vector<Case>{{32, 64, 256, "ember:tiles"},
                                         {32, 256, 256, "ember:tiles"},
                                         {32, 256, 10, "ember:small_gemm"},
                                         {32, 192, 512, "ember:tiles"},
                                         {32, 512, 192, "ember:tiles"},
                                         {128, 784, 256, "ember:tiles"}}) {
    matmul(filled({c.M, c.K}, 1), filled({c.K, c.N}, 2));
    EXPECT_EQ(kernels::matmul_last_impl(), c.impl) << c.M << "x" << c.K << "x" << c.N;
  }
  // Left to sgemm, where it is faster: one row, a transposed B, a large product.
  matmul(filled({1, 256}, 1), filled({256, 256}, 2));
  EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
  matmul(filled({32, 512}, 1), filled({192, 512}, 2), false, true);
  EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
  matmul(filled({512, 512}, 1), filled({512, 512}, 2));
  EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
}

// A tile's sum over k runs in one order whatever the thread count: results are bit-identical on one and
// two threads and from inside a parallel region (where the product runs on its caller alone).
TEST(MatMulKernel, TileResultsDoNotDependOnThreads) {
  Tensor a = filled({64, 256}, 0.37f), b = filled({256, 200}, -0.61f);
  int saved = intra_op_threads();
  set_intra_op_threads(1);
  std::vector<float> one = matmul(a, b).to_vector<float>();
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:tiles");
  set_intra_op_threads(2);
  EXPECT_EQ(matmul(a, b).to_vector<float>(), one);
  std::vector<std::vector<float>> nested(4);
#pragma omp parallel for num_threads(2)
  for (int i = 0; i < 4; ++i) nested[i] = matmul(a, b).to_vector<float>();
  for (const auto& r : nested) EXPECT_EQ(r, one);
  set_intra_op_threads(saved);
}

// The large-problem paths (dnnl_sgemm, the cached batched primitive, ember's blocked float64 loops) on one
// and two threads agree with a reference: dnnl_sgemm called directly for float32, the naive loops for
// float64. (Timings live in bench/, where noise does not fail a build.)
TEST(MatMulKernel, LargeProductsMatchReferenceOnEveryThreadCount) {
  const int64_t n = 512;
  Tensor a = filled({n, n}, 0.25f), b = filled({n, n}, -0.5f);
  std::vector<float> want(n * n);
  dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.impl()->data<float>(), n, b.impl()->data<float>(), n, 0.0f,
             want.data(), n);
  Tensor a3 = filled({2, n, n}, 0.25f), b3 = filled({2, n, n}, 0.25f);
  // filled() repeats with period 7, which 262144 is not a multiple of: the two batches differ.
  std::vector<float> want3(2 * n * n);
  for (int64_t batch = 0; batch < 2; ++batch)
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a3.impl()->data<float>() + batch * n * n, n,
               b3.impl()->data<float>() + batch * n * n, n, 0.0f, want3.data() + batch * n * n, n);
  const int64_t m = 96;
  Tensor a64 = patterned<double>({m, m}, 1), b64 = patterned<double>({m, m}, 2);
  std::vector<double> want64 = naive(a64.to_vector<double>(), b64.to_vector<double>(), m, m, m, false, false);
  int saved = intra_op_threads();
  for (int threads : {1, 2}) {
    set_intra_op_threads(threads);
    std::vector<float> got = matmul(a, b).to_vector<float>();
    EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4f * std::abs(want[i]) + 1e-3f)
          << "float32 at " << i << ", " << threads;
    std::vector<float> got3 = matmul(a3, b3).to_vector<float>();
    for (size_t i = 0; i < want3.size(); ++i)
      ASSERT_NEAR(got3[i], want3[i], 1e-4f * std::abs(want3[i]) + 1e-3f)
          << "batched float32 at " << i << " (" << kernels::matmul_last_impl() << "), " << threads;
    std::vector<double> got64 = matmul(a64, b64).to_vector<double>();
    EXPECT_EQ(kernels::matmul_last_impl(), "ember:blocked");
    for (size_t i = 0; i < want64.size(); ++i)
      ASSERT_NEAR(got64[i], want64[i], 1e-12 * (1 + std::abs(want64[i])))
          << "float64 at " << i << ", " << threads;
  }
  set_intra_op_threads(saved);
}

// ---- Fused products (Note [MatMul epilogues]): every activation on every kernel path, against the
// reference product with the bias and activation applied in double.

double activation_reference(const std::string& fused_ops, double x, double alpha) {
  if (fused_ops == "BiasAdd") return x;
  if (fused_ops == "BiasAdd,Relu") return std::max(x, 0.0);
  if (fused_ops == "BiasAdd,Relu6") return std::min(std::max(x, 0.0), 6.0);
  if (fused_ops == "BiasAdd,Elu") return x > 0 ? x : std::expm1(x);
  if (fused_ops == "BiasAdd,LeakyRelu") return x > 0 ? x : alpha * x;
  if (fused_ops == "BiasAdd,Tanh") return std::tanh(x);
  if (fused_ops == "BiasAdd,Sigmoid") return 1 / (1 + std::exp(-x));
  if (fused_ops == "BiasAdd,GeluExact") return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));  // GeluApproximate
}

struct FusedCase {
  std::vector<int64_t> a, b;  // stored shapes
  bool ta, tb;
  DType dtype;
  std::string path;  // matmul_last_impl() after the call ("" for a oneDNN primitive's name, "any")
};

TEST(MatMulKernel, FusedEpiloguesMatchTheReferenceOnEveryPath) {
  const FusedCase cases[] = {
      {{3, 4}, {4, 5}, false, false, DType::kFloat32, "ember:small_gemm"},
      {{40, 20}, {16, 20}, false, true, DType::kFloat32, "ember:small_gemm"},
      {{2, 3, 9}, {9, 7}, false, false, DType::kFloat32, "ember:small_gemm"},
      {{2, 40}, {40, 40}, false, false, DType::kFloat32, "ember:blocked"},
      {{70, 96}, {96, 100}, false, false, DType::kFloat32, "ember:tiles"},
      {{2, 64, 96}, {96, 100}, false, false, DType::kFloat32, "ember:tiles"},
      {{300, 400}, {300, 260}, true, false, DType::kFloat32, ""},    // sgemm's size: the primitive
      {{3, 40, 50}, {3, 60, 50}, false, true, DType::kFloat32, ""},  // batched: the primitive
      {{30, 20}, {30, 12}, true, false, DType::kFloat64, "ember:small_gemm"},
      {{2, 33, 70}, {70, 45}, false, false, DType::kFloat64, "ember:blocked"},
      {{20, 30}, {30, 40}, false, false, DType::kFloat16, "f32 via ember:tiles"},
      {{20, 30}, {30, 40}, false, false, DType::kBFloat16, "any"},  // a primitive, or via float32
  };
  const char* fused_ops[] = {"BiasAdd",         "BiasAdd,Relu",      "BiasAdd,Relu6",
                             "BiasAdd,Elu",     "BiasAdd,LeakyRelu", "BiasAdd,Tanh",
                             "BiasAdd,Sigmoid", "BiasAdd,GeluExact", "BiasAdd,GeluApproximate"};
  for (const FusedCase& c : cases) {
    const int r = static_cast<int>(c.a.size());
    const int64_t M = c.ta ? c.a[r - 1] : c.a[r - 2], K = c.ta ? c.a[r - 2] : c.a[r - 1];
    const int64_t N = c.tb ? c.b[c.b.size() - 2] : c.b.back();
    const Tensor a = cast(patterned<float>(c.a, 1), c.dtype);
    const Tensor b = cast(patterned<float>(c.b, 2), c.dtype);
    const Tensor bias = cast(patterned<float>({N}, 3), c.dtype);
    const std::vector<double> av = cast(a, DType::kFloat64).to_vector<double>();
    const std::vector<double> bv = cast(b, DType::kFloat64).to_vector<double>();
    const std::vector<double> biasv = cast(bias, DType::kFloat64).to_vector<double>();
    const int64_t batch = static_cast<int64_t>(av.size()) / (M * K);
    const bool b_batched = c.b.size() > 2;
    // Half precision keeps ~3 digits, bfloat16 ~2; float32 and float64 sums of up to 400 terms.
    const double tolerance = c.dtype == DType::kBFloat16 ? 3e-2 : c.dtype == DType::kFloat16 ? 4e-3 : 1e-4;
    for (const char* ops : fused_ops) {
      const Tensor got = call_op1("_FusedMatMul", {a, b, bias},
                                  {AttrValue(c.ta), AttrValue(c.tb), AttrValue(int64_t{1}),
                                   AttrValue(std::string(ops)), AttrValue(0.0), AttrValue(0.3)});
      const std::string impl = kernels::matmul_last_impl();
      if (c.path.empty()) {
        EXPECT_TRUE(impl.find("ember") == std::string::npos && impl != "dnnl_sgemm") << impl;
      } else if (c.path != "any") {
        EXPECT_EQ(impl, c.path) << ops;
      }
      const std::vector<double> out = cast(got, DType::kFloat64).to_vector<double>();
      ASSERT_EQ(static_cast<int64_t>(out.size()), batch * M * N);
      for (int64_t ob = 0; ob < batch; ++ob) {
        const std::vector<double> ab(av.begin() + ob * M * K, av.begin() + (ob + 1) * M * K);
        const std::vector<double> bb =
            b_batched ? std::vector<double>(bv.begin() + ob * K * N, bv.begin() + (ob + 1) * K * N) : bv;
        const std::vector<double> product = naive(ab, bb, M, N, K, c.ta, c.tb);
        for (int64_t i = 0; i < M * N; ++i) {
          const double want = activation_reference(ops, product[i] + biasv[i % N], 0.3);
          ASSERT_NEAR(out[ob * M * N + i], want, tolerance * (1 + std::abs(want)))
              << ops << " " << dtype_name(c.dtype) << " M=" << M << " N=" << N << " K=" << K << " on " << impl
              << " at " << ob << "," << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember

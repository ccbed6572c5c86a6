// The matmul kernel: which implementation runs, the primitive cache (bounded, thread safe), calls from
// inside a parallel region, and a printed (never asserted) timing against dnnl_sgemm.
#include "ember/kernels/matmul.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <chrono>
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
  EXPECT_EQ(kernels::matmul_last_impl(), "dnnl_sgemm");
  matmul(filled({4, 128, 128}, 1), b);  // a's batch folds into its rows: still one sgemm
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
  // Tiny problems skip oneDNN.
  matmul(filled({2, 2}, 1), filled({2, 2}, 1));
  EXPECT_EQ(kernels::matmul_last_impl(), "ember:blocked");
}

TEST(MatMulKernel, CacheIsBoundedAndReused) {
  kernels::matmul_cache_clear();
  // Batched operands, so that float32 runs on a primitive (unbatched products go to sgemm).
  Tensor a = filled({2, 32, 40}, 1), b = filled({2, 40, 24}, 2);
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
  for (int64_t n = 17; n < 17 + 12; ++n) matmul(filled({2, 16, 16}, 1), filled({2, 16, n}, 1));
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
  for (bool batched_b : {false, true}) {  // sgemm, then the primitive
    Tensor a = filled({3, 64, 48}, 0.5f),
           b = batched_b ? filled({3, 48, 80}, -0.5f) : filled({48, 80}, -0.5f);
    std::vector<float> alone = matmul(a, b).to_vector<float>();
    std::vector<std::vector<float>> results(4);
#pragma omp parallel for num_threads(2)
    for (int i = 0; i < 4; ++i) results[i] = matmul(a, b).to_vector<float>();
    for (const auto& r : results) EXPECT_EQ(r, alone);
  }
}

double gflops(int64_t m, int64_t n, int64_t k, double seconds) { return 2.0 * m * n * k / seconds / 1e9; }

template <typename F>
double best_seconds(F&& f, int reps) {
  f();  // warm up (JIT, caches, page faults)
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Printed only: timings on a shared machine are too noisy to assert on.
TEST(MatMulKernel, PrintsGflopsAgainstSgemm) {
  const int64_t n = 1024;
  Tensor a = filled({n, n}, 0.25f), b = filled({n, n}, -0.25f);
  std::vector<float> c(n * n);
  const float* pa = a.impl()->data<float>();
  const float* pb = b.impl()->data<float>();
  int saved = intra_op_threads();
  for (int threads : {1, 2}) {
    set_intra_op_threads(threads);
    double ours = best_seconds([&] { matmul(a, b); }, 5);
    double sgemm =
        best_seconds([&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, pa, n, pb, n, 0.0f, c.data(), n); }, 5);
    // Through the cached primitive: a batch of two such products (batched on both sides).
    Tensor a3 = filled({2, n, n}, 0.25f), b3 = filled({2, n, n}, -0.25f);
    double primitive = best_seconds([&] { matmul(a3, b3); }, 5);
    std::printf(
        "[ matmul   ] float32 1024^3, %d thread(s): ember %.1f GFLOP/s, dnnl_sgemm %.1f GFLOP/s (%.0f%%); "
        "batched on the primitive %.1f GFLOP/s\n",
        threads, gflops(n, n, n, ours), gflops(n, n, n, sgemm), 100.0 * sgemm / ours,
        gflops(2 * n, n, n, primitive));
    Tensor a64 = cast(filled({512, 512}, 0.25f), DType::kFloat64);
    double f64 = best_seconds([&] { matmul(a64, a64); }, 3);
    std::printf("[ matmul   ] float64 512^3 (ember blocked), %d thread(s): %.1f GFLOP/s\n", threads,
                gflops(512, 512, 512, f64));
  }
  set_intra_op_threads(saved);
}

}  // namespace
}  // namespace ember

// Native baselines the Python bench compares ember against: a plain C++ loop adding two float arrays
// (one thread and all threads) and oneDNN's own sgemm. Prints one JSON object.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double seconds_best_of(int repeats, auto&& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main() {
  const int64_t n = 16 << 20;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  float* __restrict pa = a.data();
  float* __restrict pb = b.data();
  float* __restrict pc = c.data();
  auto add_1t = [&] {
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
  };
  auto add_mt = [&] {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
  };
  add_1t();
  add_mt();
  double bytes = 3.0 * n * sizeof(float);
  double gbs_1t = bytes / seconds_best_of(20, add_1t) / 1e9;
  double gbs_mt = bytes / seconds_best_of(20, add_mt) / 1e9;

  const int64_t m = 1024;
  std::vector<float> x(m * m, 0.5f), y(m * m, 0.25f), z(m * m);
  auto gemm = [&] { dnnl_sgemm('N', 'N', m, m, m, 1.0f, x.data(), m, y.data(), m, 0.0f, z.data(), m); };
  gemm();
  double gflops = 2.0 * m * m * m / seconds_best_of(10, gemm) / 1e9;
  std::printf(
      "{\"add_loop_1thread_gbs\": %.2f, \"add_loop_allthreads_gbs\": %.2f, \"dnnl_sgemm_gflops\": %.2f, "
      "\"threads\": %d}\n",
      gbs_1t, gbs_mt, gflops, omp_get_max_threads());
  return 0;
}

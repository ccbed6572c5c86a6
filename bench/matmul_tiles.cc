// ember's register tiles (kernels/matmul_tiles.h) against a warm dnnl_sgemm on the float32 products they
// take, on one and two threads, plus the cost of sgemm's first call in this process. Prints one line per
// shape: the best time of each over many repeats, and which implementation ember's matmul ran.
//
//   bench_matmul_tiles [repeats]
//
// Shapes: bench/saved_model.py's MLP (batch 32: 64-256-256-10), bench/autodiff.py's MLP (784-256-256-10,
// batch 128) with its gradients, bench/control_flow.py's LSTM step (batch 32, input 64, hidden 128: the
// gates' [32,192]x[192,512] and the backward products), and a few square ones at the edges of the range.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ember.h"
#include "ember/kernels/matmul.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename F>
double best_of(int repeats, F&& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = now();
    fn();
    best = std::min(best, now() - t0);
  }
  return best;
}

ember::Tensor filled(int64_t rows, int64_t cols, float start) {
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i % 13) * 0.0625f;
  return ember::Tensor::from_vector(v, ember::Shape({rows, cols}));
}

struct Case {
  const char* what;
  int64_t M, K, N;
  bool ta, tb;
};

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 200;
  // sgemm's one-time set-up, as the first matmul of a process pays it.
  {
    ember::Tensor a = filled(32, 256, 0.5f), b = filled(256, 256, -0.5f);
    std::vector<float> c(32 * 256);
    const double t0 = now();
    dnnl_sgemm('N', 'N', 32, 256, 256, 1.0f, a.impl()->data<float>(), 256, b.impl()->data<float>(), 256, 0.0f,
               c.data(), 256);
    std::printf("first dnnl_sgemm of the process: %.2f ms\n", 1e3 * (now() - t0));
  }
  const std::vector<Case> cases = {
      {"saved_model MLP 1", 32, 64, 256, false, false},
      {"saved_model MLP 2", 32, 256, 256, false, false},
      {"saved_model MLP 3", 32, 256, 10, false, false},
      {"autodiff MLP 1", 128, 784, 256, false, false},
      {"autodiff MLP 2", 128, 256, 256, false, false},
      {"autodiff MLP 3", 128, 256, 10, false, false},
      {"autodiff dx 3", 128, 10, 256, false, true},
      {"autodiff dx 2", 128, 256, 256, false, true},
      {"autodiff dW 1", 784, 128, 256, true, false},
      {"autodiff dW 2", 256, 128, 256, true, false},
      {"LSTM gates", 32, 192, 512, false, false},
      {"LSTM x part", 32, 64, 512, false, false},
      {"LSTM h part", 32, 128, 512, false, false},
      {"LSTM dh (W^T)", 32, 512, 192, false, true},
      {"LSTM dh (hoisted)", 32, 512, 192, false, false},
      {"LSTM dW", 192, 32, 512, true, false},
      {"batch 1", 1, 256, 256, false, false},
      {"batch 8", 8, 256, 256, false, false},
      {"square 64", 64, 64, 64, false, false},
      {"square 128", 128, 128, 128, false, false},
      {"square 256", 256, 256, 256, false, false},
      {"square 512", 512, 512, 512, false, false},
      {"tall 1024x256x64", 1024, 256, 64, false, false},
  };
  std::printf("%-20s %5s %5s %5s %2s %2s | %3s %10s %10s %6s  %s\n", "shape", "M", "K", "N", "ta", "tb",
              "thr", "ember us", "sgemm us", "ratio", "ember impl");
  const int saved = ember::intra_op_threads();
  for (const Case& cs : cases) {
    ember::Tensor a = cs.ta ? filled(cs.K, cs.M, 0.25f) : filled(cs.M, cs.K, 0.25f);
    ember::Tensor b = cs.tb ? filled(cs.N, cs.K, -0.5f) : filled(cs.K, cs.N, -0.5f);
    auto out = ember::TensorImpl::allocate(ember::DType::kFloat32, ember::Shape({cs.M, cs.N}));
    if (!out.ok()) return 1;
    std::vector<float> c(cs.M * cs.N);
    for (int threads : {1, 2}) {
      ember::set_intra_op_threads(threads);
      auto run_ember = [&] {
        ember::Status s = ember::kernels::matmul(*a.impl(), *b.impl(), cs.ta, cs.tb, **out);
        if (!s.ok()) std::abort();
      };
      auto run_sgemm = [&] {
        omp_set_num_threads(ember::threads_for_matmul(cs.M * cs.N * cs.K));
        dnnl_sgemm(cs.ta ? 'T' : 'N', cs.tb ? 'T' : 'N', cs.M, cs.N, cs.K, 1.0f, a.impl()->data<float>(),
                   cs.ta ? cs.M : cs.K, b.impl()->data<float>(), cs.tb ? cs.K : cs.N, 0.0f, c.data(), cs.N);
      };
      run_ember(), run_sgemm();
      std::string impl = ember::kernels::matmul_last_impl();
      // Interleaved rounds, so that a busy spell of the machine hits both.
      double te = 1e30, ts = 1e30;
      for (int round = 0; round < 5; ++round) {
        te = std::min(te, best_of(repeats / 5 + 1, run_ember));
        ts = std::min(ts, best_of(repeats / 5 + 1, run_sgemm));
      }
      std::printf("%-20s %5lld %5lld %5lld %2d %2d | %3d %10.2f %10.2f %6.2f  %s\n", cs.what,
                  static_cast<long long>(cs.M), static_cast<long long>(cs.K), static_cast<long long>(cs.N),
                  cs.ta, cs.tb, threads, 1e6 * te, 1e6 * ts, te / ts, impl.c_str());
    }
  }
  ember::set_intra_op_threads(saved);
  return 0;
}

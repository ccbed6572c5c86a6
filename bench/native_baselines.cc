// Native baselines the Python bench compares ember against: a plain C++ loop adding two float arrays
// (one thread and all threads), oneDNN's own sgemm, bench/executor.py's 100-op element-wise chain
// fused by hand with ember's own float math, bench/fusion.py's 100-op arithmetic chain as one C++ loop,
// and oneDNN's own convolution primitives (bench/conv.py's problem). Prints one JSON object.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

// vmath.h opens no namespace of its own (see its header comment); the bench target has no include path
// into src/, hence the relative path.
namespace bench_vmath {
#include "../src/ember/kernels/vmath.h"
}  // namespace bench_vmath

namespace {

// EMBER_BENCH_CLOCK=cpu (bench/fusion.py --cpu-time): the process's CPU time instead of wall time, for a
// loaded machine, where wall time mostly measures the wait for a core (one thread only: threads add up).
double now_seconds() {
  static const bool cpu = [] {
    const char* clock = std::getenv("EMBER_BENCH_CLOCK");
    return clock != nullptr && std::strcmp(clock, "cpu") == 0;
  }();
  if (cpu) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double seconds_best_of(int repeats, auto&& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = now_seconds();
    fn();
    best = std::min(best, now_seconds() - t0);
  }
  return best;
}

// Note [Hand-fused chain]
// elementwise_chain() of bench/executor.py (keep the two in step), fused as well as a fusing compiler could
// do it: one pass over the data in tiles that stay in L1, a few ops at a time as one vectorised loop over the
// tile, using the very math functions ember's kernels use. No op is folded into another or reassociated (only
// a multiply and the add after it may be contracted into an FMA), so this is the same computation, and its
// time bounds what any fusion of it can reach on this machine: ember's fused function can be at most eager /
// this faster than ember eager.
constexpr int kChainSize = 1 << 20;
constexpr int kChainRounds = 10;
constexpr int kMaxTile = 1024;

// The scalars of round i: computed in double, then rounded to T, as a Python float becomes a float32 scalar.
template <typename T>
struct ChainRound {
  T scale, shift, post;
  explicit ChainRound(int i) {
    const double c = 0.1 * i / kChainRounds;
    scale = static_cast<T>(0.9 - c);
    shift = static_cast<T>(0.25 + c);
    post = static_cast<T>(0.5 + c);
  }
};

void chain_hand_fused(const float* x, const float* y, float* out, int64_t n, int64_t tile) {
  const int64_t tiles = (n + tile - 1) / tile;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t off = t * tile;
    const int64_t count = std::min(tile, n - off);
    const float* __restrict xt = x + off;
    const float* __restrict yt = y + off;
    alignas(64) float v[kMaxTile];
    // One loop per transcendental, the cheap ops riding on a neighbouring loop (a round's leading multiply
    // and add on the previous round's tail): a loop per op took ~1.8x as long, two transcendentals in one
    // loop ~1.2x (register spills; float sin reduces in double). sin takes vmath's array form, where vmath
    // puts its per-block fast path; for tanh and exp the array form is this very loop.
    const float scale0 = ChainRound<float>(0).scale;
    for (int64_t j = 0; j < count; ++j) v[j] = xt[j] * scale0 + yt[j];
    for (int i = 0; i < kChainRounds; ++i) {
      const ChainRound<float> k(i);
      bench_vmath::vsin(v, v, count);
      for (int64_t j = 0; j < count; ++j) v[j] = bench_vmath::vtanh(v[j] - k.shift);
      for (int64_t j = 0; j < count; ++j) v[j] = bench_vmath::vexp(v[j]);
      if (i + 1 == kChainRounds) {
        for (int64_t j = 0; j < count; ++j) out[off + j] = (std::max(v[j] * yt[j], yt[j]) - yt[j]) * k.post;
        break;
      }
      const float next_scale = ChainRound<float>(i + 1).scale;
      for (int64_t j = 0; j < count; ++j) {
        v[j] = (std::max(v[j] * yt[j], yt[j]) - yt[j]) * k.post * next_scale + yt[j];
      }
    }
  }
}

double chain_reference(double x, double y) {
  double v = x;
  for (int i = 0; i < kChainRounds; ++i) {
    const ChainRound<double> k(i);
    v = std::exp(std::tanh(std::sin(v * k.scale + y) - k.shift));
    v = (std::max(v * y, y) - y) * k.post;
  }
  return v;
}

struct ChainResult {
  int runs = 0;  // per tile size; ms is the best of them over all tile sizes
  double ms = 1e30;
  int64_t tile = 0;
  double max_rel_err = 0;  // over all tile sizes, as bench/executor.py measures it: |out - ref| / (1 + |ref|)
};

ChainResult chain_fused_ideal(int repeats) {
  // The distributions of make_inputs() in bench/executor.py (not its very draws).
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::normal_distribution<double> normal;
  std::vector<float> x(kChainSize), y(kChainSize), out(kChainSize);
  for (float& v : x) v = uniform(rng);
  for (float& v : y) v = static_cast<float>(std::clamp(normal(rng), -2.0, 2.0));
  std::vector<double> ref(kChainSize);
  for (int j = 0; j < kChainSize; ++j) ref[j] = chain_reference(x[j], y[j]);

  ChainResult result;
  result.runs = repeats;
  for (int64_t tile : {64, 256, 1024}) {
    auto run = [&] { chain_hand_fused(x.data(), y.data(), out.data(), kChainSize, tile); };
    run();
    const double ms = seconds_best_of(repeats, run) * 1e3;
    if (ms < result.ms) {
      result.ms = ms;
      result.tile = tile;
    }
    // Checked after the timing runs, so the timed work is the work whose result is checked.
    for (int j = 0; j < kChainSize; ++j) {
      const double err = std::abs(out[j] - ref[j]) / (1.0 + std::abs(ref[j]));
      if (err > result.max_rel_err || std::isnan(err)) result.max_rel_err = err;  // a NaN sticks
    }
  }
  return result;
}

// Note [Arithmetic chain loop]
// arithmetic_chain() of bench/fusion.py (keep the two in step): 100 cheap ops (10 rounds of multiply, add,
// subtract, maximum, multiply, minimum, subtract, multiply, add, abs) written as one loop over the data,
// each element in registers throughout: what a hand-written C++ program does, and so the bound
// bench/fusion.py holds ember's native kernels to (issue 20: within 1.15x). The scalars are float32, as
// Python floats become; GCC may contract a multiply and the add after it.
void arith_chain_loop(const float* __restrict x, const float* __restrict y, float* __restrict out,
                      int64_t n) {
  float scale[kChainRounds], shift[kChainRounds], post[kChainRounds];
  for (int i = 0; i < kChainRounds; ++i) {
    const double c = 0.1 * i / kChainRounds;
    scale[i] = static_cast<float>(0.9 - c);
    shift[i] = static_cast<float>(0.25 + c);
    post[i] = static_cast<float>(0.5 + c);
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j) {
    float v = x[j];
    const float yj = y[j], xj = x[j];
#pragma GCC unroll 10
    for (int i = 0; i < kChainRounds; ++i) {
      v = v * scale[i];
      v = v + yj;
      v = v - shift[i];
      v = std::max(v, yj);
      v = v * post[i];
      v = std::min(v, 2.0f);
      v = v - yj;
      v = v * 0.75f;
      v = v + xj;
      v = std::abs(v);
    }
    out[j] = v;
  }
}

// Best of `repeats` on all threads and on one, in ms.
std::pair<double, double> arith_chain_ms(int repeats) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(kChainSize), y(kChainSize), out(kChainSize);
  for (float& v : x) v = uniform(rng);
  for (float& v : y) v = 2 * uniform(rng);
  auto run = [&] { arith_chain_loop(x.data(), y.data(), out.data(), kChainSize); };
  run();
  const double all = seconds_best_of(repeats, run) * 1e3;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = seconds_best_of(repeats, run) * 1e3;
  omp_set_num_threads(threads);
  return {all, one};
}

// Note [oneDNN convolution baseline]
// bench/conv.py's convolution (3x3, 64 -> 64, 56x56, batch 32, SAME, float32) called on oneDNN directly, the
// way a user of oneDNN who owns the layouts would: every memory descriptor is `any`, so the primitives run
// on the blocked layouts they choose (nChw16c on AVX-512), with the data already in them; no reorder is
// timed. Forward training, backward data and backward weights, each the best of `repeats` runs, all threads.
struct ConvBaseline {
  double fwd_ms = 0, bwd_data_ms = 0, bwd_weights_ms = 0;
  // CPU time of the process (all threads) per call, best of the runs: steadier than wall time on a busy
  // machine, and equal to it on one thread with the machine to itself.
  double fwd_cpu_ms = 0, bwd_data_cpu_ms = 0, bwd_weights_cpu_ms = 0;
  std::string fwd_impl, bwd_data_impl, bwd_weights_impl;
};

ConvBaseline conv_baseline(int repeats) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::dim n = 32, c = 64, k = 64, h = 56, w = 56;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const memory::desc x_any({n, c, h, w}, memory::data_type::f32, tag::any);
  const memory::desc w_any({k, c, 3, 3}, memory::data_type::f32, tag::any);
  const memory::desc y_any({n, k, h, w}, memory::data_type::f32, tag::any);
  const memory::dims strides{1, 1}, pad{1, 1};
  const auto algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, x_any, w_any, y_any, strides,
                                      pad, pad),
      eng);
  dnnl::convolution_backward_data::primitive_desc bwd_data(
      dnnl::convolution_backward_data::desc(algo, x_any, w_any, y_any, strides, pad, pad), eng, fwd);
  dnnl::convolution_backward_weights::primitive_desc bwd_weights(
      dnnl::convolution_backward_weights::desc(algo, x_any, w_any, y_any, strides, pad, pad), eng, fwd);

  auto filled = [&](const memory::desc& d, float scale) {
    memory m(d, eng);
    float* p = static_cast<float*>(m.get_data_handle());
    std::mt19937 rng(static_cast<unsigned>(d.get_size()));
    std::uniform_real_distribution<float> u(-scale, scale);
    for (size_t i = 0; i < d.get_size() / sizeof(float); ++i) p[i] = u(rng);
    return m;
  };
  memory x = filled(fwd.src_desc(), 1.0f), wt = filled(fwd.weights_desc(), 0.05f), y(fwd.dst_desc(), eng);
  memory dy = filled(bwd_data.diff_dst_desc(), 1.0f), dx(bwd_data.diff_src_desc(), eng);
  memory x_bw = filled(bwd_weights.src_desc(), 1.0f), dy_bw = filled(bwd_weights.diff_dst_desc(), 1.0f);
  memory dw(bwd_weights.diff_weights_desc(), eng);
  memory w_bd = filled(bwd_data.weights_desc(), 0.05f);
  dnnl::convolution_forward f(fwd);
  dnnl::convolution_backward_data bd(bwd_data);
  dnnl::convolution_backward_weights bw(bwd_weights);
  auto cpu_ms = [&](auto&& call) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const std::clock_t t0 = std::clock();
      call();
      stream.wait();
      best = std::min(best, static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC);
    }
    return best * 1e3;
  };
  auto time_ms = [&](auto&& call) {
    call();
    return seconds_best_of(repeats,
                           [&] {
                             call();
                             stream.wait();
                           }) *
           1e3;
  };
  ConvBaseline r;
  r.fwd_ms = time_ms([&] {
    f.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_DST, y}});
  });
  r.bwd_data_ms = time_ms([&] {
    bd.execute(stream, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w_bd}, {DNNL_ARG_DIFF_SRC, dx}});
  });
  r.bwd_weights_ms = time_ms([&] {
    bw.execute(stream, {{DNNL_ARG_SRC, x_bw}, {DNNL_ARG_DIFF_DST, dy_bw}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
  });
  r.fwd_cpu_ms = cpu_ms([&] {
    f.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_DST, y}});
  });
  r.bwd_data_cpu_ms = cpu_ms([&] {
    bd.execute(stream, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w_bd}, {DNNL_ARG_DIFF_SRC, dx}});
  });
  r.bwd_weights_cpu_ms = cpu_ms([&] {
    bw.execute(stream, {{DNNL_ARG_SRC, x_bw}, {DNNL_ARG_DIFF_DST, dy_bw}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
  });
  r.fwd_impl = fwd.impl_info_str();
  r.bwd_data_impl = bwd_data.impl_info_str();
  r.bwd_weights_impl = bwd_weights.impl_info_str();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--conv") == 0) {
    // bench/conv.py asks for the convolution alone: the rest takes tens of seconds.
    const ConvBaseline conv = conv_baseline(20);
    std::printf(
        "{\"conv_fwd_ms\": %.4f, \"conv_bwd_data_ms\": %.4f, \"conv_bwd_weights_ms\": %.4f, \"threads\": %d, "
        "\"conv_fwd_cpu_ms\": %.4f, \"conv_bwd_data_cpu_ms\": %.4f, \"conv_bwd_weights_cpu_ms\": %.4f, "
        "\"conv_fwd_impl\": \"%s\", \"conv_bwd_data_impl\": \"%s\", \"conv_bwd_weights_impl\": \"%s\"}\n",
        conv.fwd_ms, conv.bwd_data_ms, conv.bwd_weights_ms, omp_get_max_threads(), conv.fwd_cpu_ms,
        conv.bwd_data_cpu_ms, conv.bwd_weights_cpu_ms, conv.fwd_impl.c_str(), conv.bwd_data_impl.c_str(),
        conv.bwd_weights_impl.c_str());
    return 0;
  }
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

  const ChainResult chain = chain_fused_ideal(30);
  char chain_err[32] = "NaN";  // JSON has no inf or nan; Python's json reads NaN
  if (std::isfinite(chain.max_rel_err)) std::snprintf(chain_err, sizeof chain_err, "%.3e", chain.max_rel_err);
  const auto [arith_all_ms, arith_1t_ms] = arith_chain_ms(30);
  std::printf(
      "{\"add_loop_1thread_gbs\": %.2f, \"add_loop_allthreads_gbs\": %.2f, \"dnnl_sgemm_gflops\": %.2f, "
      "\"threads\": %d, \"chain_fused_ideal_ms\": %.4f, \"chain_fused_ideal_runs\": %d, "
      "\"chain_fused_ideal_tile\": %lld, \"chain_fused_ideal_max_rel_err\": %s, "
      "\"arith_chain_loop_ms\": %.4f, \"arith_chain_loop_1thread_ms\": %.4f}\n",
      gbs_1t, gbs_mt, gflops, omp_get_max_threads(), chain.ms, chain.runs, static_cast<long long>(chain.tile),
      chain_err, arith_all_ms, arith_1t_ms);
  return 0;
}

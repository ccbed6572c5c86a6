// Load + first call of a SavedModel from C++ (issue 16: "from C++, under 5 ms for the MLP"). Prints one JSON
// object: `cold_ms`, the first load_saved_model + first serving_default call of this process (what a
// freshly started server pays, one-time initialisation of ember included), and `warm_ms`, the best of
// `repeats` more loads + first calls of new models in the same process. bench/saved_model_cpp.py writes
// the model with TensorFlow, runs this in fresh processes and compares with TensorFlow's load.
//
//   bench_saved_model_cpp MODEL_DIR [repeats] [batch] [prewarm]
// (a None dimension of an input takes `batch`; with `prewarm`, one 256x256 matmul runs before the clock
// starts, so that cold_ms leaves out oneDNN's one-time sgemm set-up, which any first matmul of a process
// pays). `cold_cpu_ms` is the CPU time the process spent on the cold load + call, all its threads: on a
// loaded machine the wall time also holds the waits for a core, this does not.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace {

struct Times {
  double total_ms, load_ms;  // load: load_saved_model alone; the rest is the signature and the first call
  double cpu_ms;             // the process's CPU time over total_ms
};

double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Times load_and_call(const std::string& dir, int64_t batch) {
  const double cpu_start = process_cpu_ms();
  auto start = std::chrono::steady_clock::now();
  ember::SavedModel model = ember::load_saved_model(dir);
  auto loaded = std::chrono::steady_clock::now();
  ember::SavedModel::Signature sig = model.signature("serving_default");
  std::map<std::string, ember::Tensor> inputs;
  for (const ember::SignatureTensor& spec : sig.inputs()) {
    std::vector<int64_t> dims;
    for (int64_t d : spec.shape) dims.push_back(d < 0 ? batch : d);
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    inputs.emplace(spec.key, ember::Tensor::from_vector<float>(std::vector<float>(count, 0.5f),
                                                               ember::Shape(std::span<const int64_t>(dims))));
  }
  auto outputs = sig(inputs);
  auto end = std::chrono::steady_clock::now();
  const double cpu_end = process_cpu_ms();
  if (outputs.empty()) std::abort();
  return {std::chrono::duration<double, std::milli>(end - start).count(),
          std::chrono::duration<double, std::milli>(loaded - start).count(), cpu_end - cpu_start};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [repeats] [batch]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 32;
  if (argc > 4 && std::string(argv[4]) == "prewarm") {
    ember::Tensor a = ember::Tensor::from_vector<float>(std::vector<float>(256 * 256, 1.f), {256, 256});
    if (ember::matmul(a, a).num_elements() != 256 * 256) std::abort();
  }
  try {
    const Times cold_times = load_and_call(argv[1], batch);
    const double cold = cold_times.total_ms;
    std::vector<double> warm;
    for (int i = 0; i < repeats; ++i) warm.push_back(load_and_call(argv[1], batch).total_ms);
    std::sort(warm.begin(), warm.end());
    std::printf(
        "{\"cold_ms\": %.3f, \"cold_load_ms\": %.3f, \"cold_cpu_ms\": %.3f, \"warm_ms\": %.3f, "
        "\"warm_median_ms\": %.3f}\n",
        cold, cold_times.load_ms, cold_times.cpu_ms, warm.empty() ? cold : warm.front(),
        warm.empty() ? cold : warm[warm.size() / 2]);
  } catch (const ember::StatusError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

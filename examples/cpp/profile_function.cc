// Profiling a staged function: time every node of one call, write the timeline as Chrome-trace JSON (open
// it in chrome://tracing or https://ui.perfetto.dev) and print the slowest ops.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/ember.h"

int main() {
  using ember::Tensor;
  auto mlp = ember::function(
      [](const Tensor& x, const Tensor& w1, const Tensor& w2) {
        Tensor h = ember::tanh(ember::matmul(x, w1));
        return ember::reduce_sum(ember::square(ember::matmul(h, w2)));
      },
      "mlp");
  Tensor x = ember::random_normal({256, 128}, 0.0, 1.0, ember::DType::kFloat32, 1);
  Tensor w1 = ember::random_normal({128, 256}, 0.0, 0.1, ember::DType::kFloat32, 2);
  Tensor w2 = ember::random_normal({256, 64}, 0.0, 0.1, ember::DType::kFloat32, 3);
  mlp(x, w1, w2);  // trace outside the profile

  ember::profiler::Profile profile = ember::profiler::profile([&] { mlp(x, w1, w2); });

  std::filesystem::path path = std::filesystem::temp_directory_path() / "ember_profile_function.trace.json";
  ember::profiler::save_chrome_trace(profile, path.string());
  std::printf("%s\nwrote %zu events to %s\n", profile.summary_table(5).c_str(), profile.events.size(),
              path.c_str());

  // Every op of the graph ran once and is on the timeline.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  bool ok = text.str().find("\"traceEvents\"") != std::string::npos && !profile.events.empty() &&
            profile.by_op().front().total_ns >= profile.by_op().back().total_ns;
  for (const char* op : {"MatMul", "Tanh", "Square", "Sum"}) {
    bool found = false;
    for (const auto& e : profile.events) found |= e.op == op;
    if (!found) std::printf("missing %s\n", op);
    ok &= found;
  }
  std::filesystem::remove(path);
  ember::config::shutdown();  // stop the background compiler before exit
  return ok ? 0 : 1;
}

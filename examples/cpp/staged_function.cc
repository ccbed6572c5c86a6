// Eager and staged execution in one C++ program: the same code runs op by op, or is traced once into a
// graph by ember::function and then replayed from the cache without running the C++ body again.
#include <chrono>
#include <cstdio>

#include "ember/ember.h"

int main() {
  using ember::Tensor;
  auto step = [](const Tensor& x, const Tensor& w) {
    // A small MLP layer with a residual connection.
    return x + ember::tanh(ember::matmul(x, w)) * 0.5f;
  };
  int traces = 0;
  auto staged = ember::function(
      [&](const Tensor& x, const Tensor& w) {
        ++traces;
        return step(step(x, w), w);
      },
      "two_layers");

  Tensor x = ember::random_normal({64, 32}, 0.0, 1.0, ember::DType::kFloat32, 1);
  Tensor w = ember::random_normal({32, 32}, 0.0, 0.2, ember::DType::kFloat32, 2);
  Tensor eager = step(step(x, w), w);
  Tensor graph = staged(x, w);
  float diff = ember::reduce_max(ember::abs(eager - graph)).item<float>();
  std::printf("eager vs staged max difference: %g\n", diff);

  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) graph = staged(x, w);
  auto t1 = std::chrono::steady_clock::now();
  std::printf("1000 staged calls: %.2f ms, traced %d time(s)\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(), traces);
  std::printf("%s", staged.graph(x, w).graph.to_text().c_str());
  ember::config::shutdown();  // stop the background compiler before exit
  return diff < 1e-6f && traces == 1 ? 0 : 1;
}

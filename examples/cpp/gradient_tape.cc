// Fits y = 3x - 1 with ember::GradientTape: the loss's gradient with respect to two variables, computed in
// C++ with no Python, first eagerly and then with the whole training step staged as one graph function.
#include <cstdio>

#include "ember/ember.h"

int main() {
  using namespace ember;
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {8, 1});
  Tensor y = x * 3.0f - 1.0f;
  Variable w(Tensor::from_vector<float>({0.f}, {1, 1}), "w");
  Variable b(Tensor(0.0f), "b");

  auto train_step = [&](const Tensor& inputs, const Tensor& targets) {
    GradientTape tape;
    Tensor loss = reduce_mean(square(matmul(inputs, w.read()) + b.read() - targets));
    tape.stop();
    std::vector<Tensor> grads = tape.gradient(loss, std::vector<Variable>{w, b});
    w.assign_sub(grads[0] * 0.02f);
    b.assign_sub(grads[1] * 0.02f);
    return loss;
  };
  for (int step = 0; step < 300; ++step) {
    Tensor loss = train_step(x, y);
    if (step % 100 == 0) std::printf("eager step %d: loss %.4f\n", step, loss.item<float>());
  }
  auto staged_step = function(train_step, "train_step");  // traced once, then replayed
  Tensor loss;
  for (int step = 0; step < 1500; ++step) loss = staged_step(x, y);
  std::printf("staged: loss %.6f, w %.3f, b %.3f\n", loss.item<float>(), w.read().to_vector<float>()[0],
              b.read().item<float>());
  ember::config::shutdown();  // stop the background compiler before exit
  return 0;
}

// Eager training from C++ with no Python in the process: a softmax classifier on generated 2-D blobs,
// fitted by hand-written gradient descent with ember ops. Prints the loss as it falls and the accuracy.
#include <cstdio>

#include "ember/ember.h"

int main() {
  using ember::Tensor;
  ember::set_global_seed(7);
  const int64_t n = 600, classes = 3;

  // Three Gaussian blobs centred at (0, 2), (-2, -1), (2, -1).
  Tensor labels = ember::random_uniform({n}, ember::DType::kInt32, 0, classes);
  Tensor centres = Tensor::from_vector<float>({0, 2, -2, -1, 2, -1}, {3, 2});
  Tensor x = ember::gather(centres, labels) + ember::random_normal({n, 2}, 0.0, 0.6);
  Tensor one_hot = ember::one_hot(labels, classes);

  Tensor w = ember::zeros({2, classes});
  Tensor b = ember::zeros({classes});
  const float learning_rate = 0.5f;
  Tensor loss;
  for (int step = 0; step <= 200; ++step) {
    Tensor logits = ember::matmul(x, w) + b;
    loss = ember::reduce_mean(ember::sparse_softmax_cross_entropy_with_logits(labels, logits));
    // d loss / d logits = (softmax - one_hot) / n.
    Tensor d_logits = (ember::softmax(logits) - one_hot) / static_cast<float>(n);
    w = w - learning_rate * ember::matmul(x, d_logits, /*transpose_a=*/true);
    b = b - learning_rate * ember::reduce_sum(d_logits, {0});
    if (step % 40 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<float>());
  }
  Tensor predicted = ember::argmax(ember::matmul(x, w) + b, 1, ember::DType::kInt32);
  float accuracy =
      ember::reduce_mean(ember::cast(ember::equal(predicted, labels), ember::DType::kFloat32)).item<float>();
  std::printf("training accuracy %.3f\n", accuracy);
  ember::config::shutdown();  // stop the background compiler before exit
  return accuracy > 0.9f ? 0 : 1;
}

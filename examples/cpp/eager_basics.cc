// Eager ember from C++: tensors, operators and ops run immediately, no Python involved.
#include <iostream>

#include "ember/ember.h"

int main() {
  using ember::Tensor;
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor y = x * x + 1.0f;
  std::cout << "x * x + 1 = " << y.to_string() << "\n";
  Tensor s = ember::sigmoid(Tensor({-1.f, 0.f, 1.f}));
  std::cout << "sigmoid = " << s.to_string() << "\n";
  try {
    Tensor bad = Tensor::from_vector<float>({1, 2, 3}) + Tensor::from_vector<float>({1, 2});
  } catch (const ember::StatusError& e) {
    std::cout << "caught: " << e.what() << "\n";
  }
  ember::config::shutdown();  // stop the background compiler before exit
  return 0;
}

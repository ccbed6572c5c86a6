// ember::GradientTape: automatic differentiation from C++ (architecture.md §7), the same tape the Python
// ember.GradientTape drives. It records from construction until stop() (or destruction):
//
//   ember::Variable w(ember::Tensor::from_vector<float>({0.5f, -0.5f}, {2, 1}));
//   ember::GradientTape tape;                       // trainable variables are watched when read
//   ember::Tensor loss = ember::reduce_sum(ember::square(ember::matmul(x, w.read()) - y));
//   tape.stop();
//   ember::Tensor dw = tape.gradient(loss, {w})[0];
//   w.assign_sub(dw * 0.1f);
//
// Tapes nest (an outer tape records the inner one's gradient: higher order), work inside ember::function
// traces, and differentiate through staged functions called while they record.
#pragma once

#include <memory>
#include <vector>

#include "ember/api/tensor.h"
#include "ember/api/variable.h"

namespace ember {
namespace autodiff {
class Tape;
}

class GradientTape {
 public:
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void watch(const Tensor& t);
  void watch(const Variable& v);
  /// Stops recording (leaving TensorFlow's `with` block); the tape can still compute gradients.
  void stop();

  /// d(target)/d(source) per source; an undefined Tensor where the target does not depend on it.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const Tensor& output_gradient = Tensor());
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources,
                               const Tensor& output_gradient = Tensor());

 private:
  std::unique_ptr<autodiff::Tape> tape_;
};

}  // namespace ember

#include "ember/api/gradient_tape.h"

#include "ember/autodiff/tape.h"

namespace ember {
namespace {

std::vector<Tensor> run_gradient(autodiff::Tape& tape, const Tensor& target,
                                 const std::vector<autodiff::GradSource>& sources,
                                 const Tensor& output_gradient) {
  if (!target.defined())
    throw StatusError(invalid_argument("GradientTape.gradient: the target is undefined"));
  TensorImpl* targets[] = {target.impl()};
  TensorImpl* grads[] = {output_gradient.defined() ? output_gradient.impl() : nullptr};
  auto result = tape.gradient(targets, grads, sources);
  if (!result.ok()) throw StatusError(result.status());
  std::vector<Tensor> out;
  for (TensorRef& g : *result) out.push_back(g ? Tensor(std::move(g)) : Tensor());
  return out;
}

}  // namespace

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables) {
  auto tape = autodiff::Tape::create(persistent, watch_accessed_variables);
  if (!tape.ok()) throw StatusError(tape.status());
  tape_ = std::move(tape).value();
  Status pushed = tape_->push();
  if (!pushed.ok()) throw StatusError(pushed);
}

GradientTape::~GradientTape() = default;

void GradientTape::watch(const Tensor& t) {
  if (!t.defined()) throw StatusError(invalid_argument("GradientTape.watch: the tensor is undefined"));
  tape_->watch(t.impl());
}

void GradientTape::watch(const Variable& v) { tape_->watch_variable(v.id()); }

void GradientTape::stop() { tape_->pop(); }

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const Tensor& output_gradient) {
  std::vector<autodiff::GradSource> srcs;
  for (const Tensor& s : sources) {
    if (!s.defined()) throw StatusError(invalid_argument("GradientTape.gradient: a source is undefined"));
    srcs.push_back(autodiff::GradSource{s.impl(), 0});
  }
  return run_gradient(*tape_, target, srcs, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable>& sources,
                                           const Tensor& output_gradient) {
  std::vector<autodiff::GradSource> srcs;
  for (const Variable& v : sources) srcs.push_back(autodiff::GradSource{nullptr, v.id()});
  return run_gradient(*tape_, target, srcs, output_gradient);
}

}  // namespace ember

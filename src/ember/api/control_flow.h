// Control flow from C++, as TensorFlow's tf.cond / tf.switch_case / tf.while_loop: eagerly the chosen
// branch or the loop runs as C++; inside ember::function (or any trace) each branch, condition and body is
// traced into a library function and one If / Case / While op (or its stateless form) calls them.
//
//   auto f = ember::function([](const ember::Tensor& n) {
//     auto out = ember::while_loop([&](const auto& v) { return less(v[0], n); },
//                                  [](const auto& v) { return std::vector<ember::Tensor>{v[0] + 1, v[1]
//                                  * 2.f}; }, {ember::Tensor(int32_t{0}), ember::Tensor(1.f)});
//     return out[1];                               // 2^n, with n known only when f runs
//   });
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ember/api/tensor.h"

namespace ember {

using Branch = std::function<std::vector<Tensor>()>;
using LoopCondition = std::function<Tensor(const std::vector<Tensor>&)>;
using LoopBody = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// then_fn() when `pred` (a bool scalar) is true, else else_fn(). Both branches must return tensors of the
/// same count and dtypes (checked while tracing).
std::vector<Tensor> cond(const Tensor& pred, const Branch& then_fn, const Branch& else_fn);

/// branches[index]() for an int32 scalar `index`; an index out of range runs the last branch.
std::vector<Tensor> switch_case(const Tensor& index, const std::vector<Branch>& branches);

/// Repeats loop_vars = body(loop_vars) while cond(loop_vars) holds (at most `maximum_iterations` times).
/// `shape_invariants` (one per loop variable, or empty) lets a variable's shape change across iterations.
std::vector<Tensor> while_loop(const LoopCondition& cond, const LoopBody& body, std::vector<Tensor> loop_vars,
                               std::optional<int64_t> maximum_iterations = std::nullopt,
                               const std::vector<Shape>& shape_invariants = {});

}  // namespace ember

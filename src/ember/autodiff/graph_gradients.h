// Symbolic gradients of values a trace has already built: TensorFlow's tf.gradients inside a function
// (graph_gradients.cc). Unlike a GradientTape, nothing needs to have been recording while the values were
// computed.
#pragma once

#include <span>
#include <vector>

#include "ember/autodiff/tape.h"

namespace ember::autodiff {

/// d(sum of ys)/d(x) for each x, as nodes added to the current trace; a null entry where x is
/// unconnected. ys, xs and stops are symbolic tensors of the current trace; a variable source (`x` null)
/// stands for every read of it in the trace. `grad_ys` is empty or one per y (null = ones). Values in
/// `stops` are treated as constants. Fails outside a trace and for tensors of another graph. Nothing on the
/// path runs again: stateful nodes, calls and control flow with effects keep running once.
StatusOr<std::vector<TensorRef>> graph_gradients(std::span<TensorImpl* const> ys,
                                                 std::span<TensorImpl* const> grad_ys,
                                                 std::span<const GradSource> xs,
                                                 std::span<TensorImpl* const> stops);

}  // namespace ember::autodiff

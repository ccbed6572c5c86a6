// Shape specialization: a function traced with unknown dimensions (a Keras step over a None batch, a
// serving signature) re-inferred for the shapes of one call, so that the optimizer and the executor see
// static shapes (whole fusion groups, the memory plan, prepared kernels) while the traced graph, and what
// Python saw while tracing, keep their unknown dimensions (Note [Shape specialization] in executor.cc).
#pragma once

#include <memory>
#include <span>

#include "ember/core/shape.h"
#include "ember/core/status.h"
#include "ember/graph/graph.h"

namespace ember {

/// A copy of `fn` whose call arguments have `arg_shapes` (each compatible with its placeholder's spec) and
/// whose every node's outputs are re-inferred from them in graph order, through shape operands computed in
/// the graph (tf.shape(x)[0] and what is built from it) as tracing infers them. Fails (the caller keeps
/// the general graph) where a shape function rejects the shapes, an inferred dim contradicts the traced one,
/// or the graph is not in topological order.
StatusOr<std::shared_ptr<FunctionGraph>> specialize_shapes(const FunctionGraph& fn,
                                                           std::span<const Shape> arg_shapes);

}  // namespace ember

// What tracing (and GraphDef import) can tell of an int tensor's value without running the graph: the
// constant-value propagation TensorFlow's shape refiner does, so that a shape computed from tf.shape(x)
// keeps what is known of it ([?, 3] stays [?, 3] through Shape, StridedSlice, Pack, ConcatV2, Cast and
// integer arithmetic). Int matrices too, for Pad's paddings (Note [Matrix partial values]).
#pragma once

#include "ember/graph/graph.h"

namespace ember {

/// What is known of the value of `v` (an int32/int64 tensor of rank 0, 1 or 2); PartialValue::unknown()
/// when nothing is, or when `v` is of another kind.
PartialValue partial_value(const Graph& graph, ValueRef v);

}  // namespace ember

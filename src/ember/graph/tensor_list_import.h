// TensorFlow's TensorLists in a GraphDef being imported (not a public header): gives every DT_VARIANT list
// handle the dtype of its elements, so that ember carries each list as a dense tensor of that dtype (Note
// [TensorLists as dense tensors] in ops/tensor_array.cc).
#pragma once

#include "ember/core/status.h"
#include "ember/graph.pb.h"

namespace ember::graph_def_internal {

/// Rewrites, in place, the DT_VARIANT arguments and results of `gd`'s library functions that hold
/// TensorLists to their element dtype (with an unknown shape), following each list through Identity,
/// While/If/Case and calls to the element_dtype of a TensorList op. Variants that are not lists are left
/// as they are (the import then refuses them as before).
Status type_tensor_lists(proto::GraphDef& gd);

}  // namespace ember::graph_def_internal

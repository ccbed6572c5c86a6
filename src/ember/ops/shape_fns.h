// Shape functions shared by several op families.
#pragma once

#include "ember/ops/op_def.h"

namespace ember {

/// Output 0 has input 0's dtype and shape.
Status same_as_input_shape(InferContext& ctx);
/// Output 0 is bool with input 0's shape.
Status bool_like_input_shape(InferContext& ctx);
/// Output 0 has input 0's dtype and the broadcast of inputs 0 and 1.
Status broadcast_binary_shape(InferContext& ctx);
/// Like broadcast_binary_shape but the output is bool (comparisons).
Status broadcast_compare_shape(InferContext& ctx);

}  // namespace ember

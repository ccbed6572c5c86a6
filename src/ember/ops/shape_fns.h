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

/// A fused contraction's bias (_FusedConv2D, _FusedMatMul): 1-D with one value per output channel, where
/// both are known (`channels` may be kUnknownDim); `channel` names one in the error ("output channel").
Status check_bias(const OpDef* op, const Shape& bias, int64_t channels, const char* channel);

/// "[1,2,3]" for error messages.
std::string list_str(const std::vector<int64_t>& values);
/// Product of dims [begin, end) of a fully defined shape.
int64_t product(const Shape& shape, int begin, int end);
/// Allocates output i of a kKernelAllocates op on the device of its first input (CPU if none).
Status allocate_output(KernelContext& ctx, int i, DType dtype, const Shape& shape);

}  // namespace ember

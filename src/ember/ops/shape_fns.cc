#include "ember/ops/shape_fns.h"

#include "ember/core/device.h"

namespace ember {

Status same_as_input_shape(InferContext& ctx) {
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status bool_like_input_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kBool, ctx.inputs[0].shape});
  return Status::OK();
}

Status broadcast_binary_shape(InferContext& ctx) {
  auto shape = broadcast_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *shape});
  return Status::OK();
}

Status broadcast_compare_shape(InferContext& ctx) {
  auto shape = broadcast_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{DType::kBool, *shape});
  return Status::OK();
}

Status check_bias(const OpDef* op, const Shape& bias, int64_t channels, const char* channel) {
  if (bias.rank_known() &&
      (bias.rank() != 1 || (bias.dim(0) >= 0 && channels >= 0 && bias.dim(0) != channels)))
    return invalid_argument(op->name, ": bias must be 1-D with one value per ", channel, " (", channels,
                            "), got shape ", bias.to_string());
  return Status::OK();
}

std::string list_str(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

int64_t product(const Shape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= shape.dim(i);
  return n;
}

Status allocate_output(KernelContext& ctx, int i, DType dtype, const Shape& shape) {
  auto t = TensorImpl::allocate(dtype, shape, current_device());
  if (!t.ok()) return t.status();
  ctx.outputs[i] = std::move(t).value();
  return Status::OK();
}

}  // namespace ember

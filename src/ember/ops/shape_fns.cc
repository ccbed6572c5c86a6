#include "ember/ops/shape_fns.h"

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

}  // namespace ember

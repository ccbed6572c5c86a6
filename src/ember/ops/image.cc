// Image ops with TensorFlow's names, operands and attributes: ResizeBilinear, ResizeNearestNeighbor and their
// gradient ops, and ImageProjectiveTransformV3 (the warp under Keras' RandomRotation, RandomZoom and
// RandomTranslation), here; CropAndResize and non-max suppression in ops/image_boxes.cc, ScaleAndTranslate in
// ops/image_scale_translate.cc, ResizeBicubic and ResizeArea in ops/image_bicubic_area.cc. tf.image's flips,
// contrast and dtype conversion are compositions in python/ember/image.py. Kernels: kernels/image.h.
#include "ember/kernels/image.h"

#include <string>

#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/image_common.h"
#include "ember/ops/registry.h"

namespace ember {

void register_image_box_ops(OpRegistry& r);  // CropAndResize and non-max suppression (ops/image_boxes.cc)
void register_scale_and_translate_ops(OpRegistry& r);  // ops/image_scale_translate.cc
void register_bicubic_area_ops(OpRegistry& r);  // ResizeBicubic(Grad), ResizeArea: ops/image_bicubic_area.cc

namespace image_ops {

Status check_images(const OpDef* op, const char* what, const Shape& s) {
  if (s.rank_known() && s.rank() != 4)
    return invalid_argument(op->name, ": ", what, " must be 4-D [batch, height, width, channels], got shape ",
                            s.to_string());
  return Status::OK();
}

Status check_conventions(const InferContext& ctx) {
  if (ctx.attr_bool(0) && ctx.attr_bool(1))
    return invalid_argument(ctx.op->name, ": align_corners and half_pixel_centers cannot both be true");
  return Status::OK();
}

Status push_resized(InferContext& ctx, int size, DType dtype) {
  StatusOr<Shape> given = ctx.shape_operand(size);
  EMBER_RETURN_IF_ERROR(given.status());
  const Shape& s = given.value();
  int64_t h = kUnknownDim, w = kUnknownDim;
  if (s.rank_known()) {
    if (s.rank() != 2)
      return invalid_argument(ctx.op->name, ": size must have 2 elements (new_height, new_width), got ",
                              s.to_string());
    h = s.dim(0), w = s.dim(1);
    if (h == 0 || w == 0 || h < kUnknownDim || w < kUnknownDim)
      return invalid_argument(ctx.op->name, ": the output size must be positive, got ", s.to_string());
  }
  const Shape& images = ctx.inputs[0].shape;
  ctx.outputs.push_back(TensorSpec{dtype, Shape{images.rank_known() ? images.dim(0) : kUnknownDim, h, w,
                                                images.rank_known() ? images.dim(3) : kUnknownDim}});
  return Status::OK();
}

Status check_grads_match(const OpDef* op, const Shape& grads, const Shape& image) {
  if (grads.rank_known() && image.rank_known())
    for (int i : {0, 3})
      if (grads.dim(i) >= 0 && image.dim(i) >= 0 && grads.dim(i) != image.dim(i))
        return invalid_argument(op->name,
                                ": grads and original_image must have the same batch and channels, got ",
                                grads.to_string(), " and ", image.to_string());
  return Status::OK();
}

Status check_positive_size(const OpDef* op, const Shape& images) {
  if (images.dim(1) <= 0 || images.dim(2) <= 0)
    return invalid_argument(op->name, ": the input image must have positive height and width, got ",
                            images.to_string());
  return Status::OK();
}

AttrList same_attrs(const GradContext& c) {
  AttrList attrs;
  for (const AttrValue& a : c.attrs) attrs.push_back(a);
  return attrs;
}

GradTensor spatial_size(const GradTensor& x) {
  const Shape& s = x.shape();
  if (s.rank_known() && s.dim(1) >= 0 && s.dim(2) >= 0)
    return gradient::int_vector(std::vector<int64_t>{s.dim(1), s.dim(2)});
  return gradient::stack_ints({gradient::dims_product(x, 1, 2), gradient::dims_product(x, 2, 3)});
}

}  // namespace image_ops

namespace {

constexpr DTypeSet kImageTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

kernels::ResizeParams params(const AttrReader& a) { return {a.attr_bool(0), a.attr_bool(1)}; }

using image_ops::check_images;
using image_ops::same_attrs;
using image_ops::spatial_size;

// ResizeBilinear(images, size) -> float32; ResizeNearestNeighbor(images, size) -> images' dtype;
// ResizeNearestNeighborGrad(grads, size) -> grads' dtype, shaped [batch, size, channels].
Status resize_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(image_ops::check_conventions(ctx));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, ctx.op->name == "ResizeNearestNeighborGrad" ? "grads" : "images",
                                     ctx.inputs[0].shape));
  return image_ops::push_resized(ctx, 1,
                                 ctx.op->name == "ResizeBilinear" ? DType::kFloat32 : ctx.inputs[0].dtype);
}

// ResizeBilinearGrad(grads, original_image) -> original_image's shape and dtype.
Status bilinear_grad_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(image_ops::check_conventions(ctx));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "grads", ctx.inputs[0].shape));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "original_image", ctx.inputs[1].shape));
  const Shape& g = ctx.inputs[0].shape;
  const Shape& img = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(image_ops::check_grads_match(ctx.op, g, img));
  ctx.outputs.push_back(ctx.inputs[1]);
  return Status::OK();
}

Status bilinear_kernel(KernelContext& ctx) {
  return kernels::resize_bilinear(params(ctx), ctx.input(0), ctx.output(0));
}
Status bilinear_grad_kernel(KernelContext& ctx) {
  const Shape& g = ctx.input(0).shape();
  const Shape& img = ctx.input(1).shape();
  EMBER_RETURN_IF_ERROR(image_ops::check_grads_match(ctx.op, g, img));
  return kernels::resize_bilinear_grad(params(ctx), ctx.input(0), ctx.output(0));
}
Status nearest_kernel(KernelContext& ctx) {
  return kernels::resize_nearest(params(ctx), ctx.input(0), ctx.output(0));
}
Status nearest_grad_kernel(KernelContext& ctx) {
  return kernels::resize_nearest_grad(params(ctx), ctx.input(0), ctx.output(0));
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

void bilinear_grad(GradContext& c) {
  c.set(0, emit1("ResizeBilinearGrad", {c.grad(), c.input(0)}, same_attrs(c)));
}
// Linear in grads: its transpose is the resize itself, back to grads' size (and dtype: ResizeBilinear gives
// float32).
void bilinear_grad_grad(GradContext& c) {
  const GradTensor g = emit1("ResizeBilinear", {c.grad(), spatial_size(c.input(0))}, same_attrs(c));
  c.set(0, g.dtype() == c.input(0).dtype() ? g : cast(g, c.input(0).dtype()));
}
void nearest_grad(GradContext& c) {
  c.set(0, emit1("ResizeNearestNeighborGrad", {c.grad(), spatial_size(c.input(0))}, same_attrs(c)));
}
void nearest_grad_grad(GradContext& c) {
  c.set(0, emit1("ResizeNearestNeighbor", {c.grad(), spatial_size(c.input(0))}, same_attrs(c)));
}

// ---- ImageProjectiveTransformV3(images, transforms, output_shape, fill_value; interpolation, fill_mode)

constexpr DTypeSet kTransformTypes =
    kFloatTypes | dtype_bit(DType::kUInt8) | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);

Status projective_params(const OpDef* op, const AttrReader& a, kernels::ProjectiveParams* p) {
  const std::string& interpolation = a.attr_string(0);
  const std::string& fill_mode = a.attr_string(1);
  if (interpolation != "NEAREST" && interpolation != "BILINEAR")
    return invalid_argument(op->name, ": interpolation must be NEAREST or BILINEAR, got '", interpolation,
                            "'");
  p->bilinear = interpolation == "BILINEAR";
  if (fill_mode == "REFLECT")
    p->fill_mode = kernels::FillMode::kReflect;
  else if (fill_mode == "WRAP")
    p->fill_mode = kernels::FillMode::kWrap;
  else if (fill_mode == "CONSTANT")
    p->fill_mode = kernels::FillMode::kConstant;
  else if (fill_mode == "NEAREST")
    p->fill_mode = kernels::FillMode::kNearest;
  else
    return invalid_argument(op->name, ": fill_mode must be REFLECT, WRAP, CONSTANT or NEAREST, got '",
                            fill_mode, "'");
  return Status::OK();
}

Status check_transforms(const OpDef* op, const Shape& images, const Shape& transforms) {
  if (!transforms.rank_known()) return Status::OK();
  const bool batch_ok =
      transforms.rank() == 2 && (transforms.dim(0) < 0 || transforms.dim(0) == 1 || !images.rank_known() ||
                                 images.dim(0) < 0 || transforms.dim(0) == images.dim(0));
  if (!batch_ok || (transforms.dim(1) >= 0 && transforms.dim(1) != 8))
    return invalid_argument(op->name, ": transforms must be [num_images, 8] or [1, 8] for images of shape ",
                            images.to_string(), ", got shape ", transforms.to_string());
  return Status::OK();
}

Status projective_shape(InferContext& ctx) {
  kernels::ProjectiveParams params;
  EMBER_RETURN_IF_ERROR(projective_params(ctx.op, ctx, &params));
  const Shape& images = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "images", images));
  EMBER_RETURN_IF_ERROR(check_transforms(ctx.op, images, ctx.inputs[1].shape));
  const Shape& fill = ctx.inputs[3].shape;
  if (fill.rank_known() && fill.rank() != 0)
    return invalid_argument(ctx.op->name, ": fill_value must be a scalar, got shape ", fill.to_string());
  StatusOr<Shape> size = ctx.shape_operand(2);
  EMBER_RETURN_IF_ERROR(size.status());
  int64_t h = kUnknownDim, w = kUnknownDim;
  if (size.value().rank_known()) {
    if (size.value().rank() != 2)
      return invalid_argument(ctx.op->name, ": output_shape must have 2 elements (height, width), got ",
                              size.value().to_string());
    h = size.value().dim(0), w = size.value().dim(1);
    if (h == 0 || w == 0 || h < kUnknownDim || w < kUnknownDim)
      return invalid_argument(ctx.op->name, ": output dimensions must be positive, got ",
                              size.value().to_string());
  }
  ctx.outputs.push_back(
      TensorSpec{ctx.inputs[0].dtype, Shape{images.rank_known() ? images.dim(0) : kUnknownDim, h, w,
                                            images.rank_known() ? images.dim(3) : kUnknownDim}});
  return Status::OK();
}

Status projective_kernel(KernelContext& ctx) {
  kernels::ProjectiveParams params;
  EMBER_RETURN_IF_ERROR(projective_params(ctx.op, ctx, &params));
  const TensorImpl& transforms = ctx.input(1);
  EMBER_RETURN_IF_ERROR(check_transforms(ctx.op, ctx.input(0).shape(), transforms.shape()));
  params.fill_value = ctx.input(3).data<float>()[0];
  return kernels::image_projective_transform(params, ctx.input(0), transforms, ctx.output(0));
}

// TensorFlow's rule (image_ops.py), which is not the exact adjoint of the warp: the output gradient warped
// back by the inverse transforms, filled with 0. The transforms and the other operands get none.
GradTensor inverse_transforms(const GradTensor& transforms) {
  const GradTensor rows = reshape(transforms, {-1, 8});
  const GradTensor ones = ones_like(emit1(
      "Slice", {rows, int_vector(std::vector<int64_t>{0, 0}), int_vector(std::vector<int64_t>{-1, 1})}));
  const GradTensor matrices = reshape(emit1("ConcatV2", {rows, ones, scalar(1, DType::kInt32)}), {-1, 3, 3});
  const GradTensor flat = reshape(emit1("MatrixInverse", {matrices}, {AttrValue(false)}), {-1, 9});
  const GradTensor last =
      emit1("Slice", {flat, int_vector(std::vector<int64_t>{0, 8}), int_vector(std::vector<int64_t>{-1, 1})});
  return emit1("Slice", {flat / last, int_vector(std::vector<int64_t>{0, 0}),
                         int_vector(std::vector<int64_t>{-1, 8})});
}

void projective_grad(GradContext& c) {
  c.set(0, emit1("ImageProjectiveTransformV3",
                 {c.grad(), inverse_transforms(c.input(1)), spatial_size(c.input(0)),
                  scalar(0.0, DType::kFloat32)},
                 same_attrs(c)));
}

void resize_attrs(OpBuilder& b) {
  b.attr("align_corners", AttrType::kBool, false).attr("half_pixel_centers", AttrType::kBool, false);
}

}  // namespace

void register_image_ops(OpRegistry& r) {
  register_image_box_ops(r);
  register_scale_and_translate_ops(r);
  register_bicubic_area_ops(r);
  OpBuilder bilinear("ResizeBilinear");
  bilinear
      .doc(
          "Bilinear resize of NHWC images to size [new_height, new_width], as float32. "
          "resize_bilinear([[[[0.], [2.]]]], [1, 4], half_pixel_centers=True) == [[[[0.], [0.5], [1.5], "
          "[2.]]]]")
      .input("images")
      .input_shape_like("size")
      .output("resized_images")
      .type_var(kImageTypes);
  resize_attrs(bilinear);
  bilinear.shape(&resize_shape).kernel(kImageTypes, &bilinear_kernel).grad(&bilinear_grad);
  bilinear.batching(BatchingRule::kFallback).done(r);

  OpBuilder bilinear_g("ResizeBilinearGrad");
  bilinear_g
      .doc(
          "The gradient of ResizeBilinear: grads (the resized shape; float32 in TensorFlow, float64 too in "
          "ember) "
          "spread back onto original_image's shape and dtype.")
      .input("grads", 1)
      .input("original_image")
      .output("output")
      .type_var(kImageTypes)
      .type_var(kImageTypes, 1)
      .dispatch_on_input(1);
  resize_attrs(bilinear_g);
  bilinear_g.shape(&bilinear_grad_shape).kernel(kImageTypes, &bilinear_grad_kernel).grad(&bilinear_grad_grad);
  bilinear_g.batching(BatchingRule::kFallback).done(r);

  OpBuilder nearest("ResizeNearestNeighbor");
  nearest
      .doc(
          "Nearest-neighbour resize of NHWC images to size [new_height, new_width]. "
          "resize_nearest_neighbor([[[[1.], [2.]]]], [1, 4]) == [[[[1.], [1.], [2.], [2.]]]]")
      .input("images")
      .input_shape_like("size")
      .output("resized_images")
      .type_var(kImageTypes);
  resize_attrs(nearest);
  nearest.shape(&resize_shape).kernel(kImageTypes, &nearest_kernel).grad(&nearest_grad);
  nearest.batching(BatchingRule::kFallback).done(r);

  OpBuilder nearest_g("ResizeNearestNeighborGrad");
  nearest_g
      .doc(
          "The gradient of ResizeNearestNeighbor: each element of grads added at the input element it "
          "copied; "
          "size is the original [height, width].")
      .input("grads")
      .input_shape_like("size")
      .output("output")
      .type_var(kImageTypes);
  resize_attrs(nearest_g);
  nearest_g.shape(&resize_shape).kernel(kImageTypes, &nearest_grad_kernel).grad(&nearest_grad_grad);
  nearest_g.batching(BatchingRule::kFallback).done(r);

  OpBuilder("ImageProjectiveTransformV3")
      .doc(
          "Warps NHWC images: output point (x, y) samples the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y "
          "+ "
          "b2) / k), k = c0 x + c1 y + 1, for each transform row [a0, a1, a2, b0, b1, b2, c0, c1]; points "
          "outside "
          "are filled per fill_mode. image_projective_transform_v3([[[[1.], [2.]]]], [[1., 0., 1., 0., 1., "
          "0., 0., "
          "0.]], [1, 2], 0., 'NEAREST', 'CONSTANT') == [[[[2.], [0.]]]]")
      .input("images")
      .input_fixed("transforms", dtype_bit(DType::kFloat32))
      .input_shape_like("output_shape")
      .input_fixed("fill_value", dtype_bit(DType::kFloat32))
      .output("transformed_images")
      .type_var(kTransformTypes)
      .attr("interpolation", AttrType::kString)
      .attr("fill_mode", AttrType::kString, std::string("CONSTANT"))
      .shape(&projective_shape)
      .kernel(kTransformTypes, &projective_kernel)
      .grad(&projective_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

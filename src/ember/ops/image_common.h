// What the image op files (ops/image.cc, image_bicubic_area.cc, image_scale_translate.cc) share: TensorFlow's
// checks of NHWC images and attributes, the resized output shape, and the pieces of their gradient rules.
// Defined in ops/image.cc; included by those files only.
#pragma once

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember::image_ops {

/// The image dtypes of TensorFlow's resize and crop kernels (its real types but uint16, which ember lacks).
inline constexpr DTypeSet kRealImageTypes =
    dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16) | dtype_bit(DType::kFloat32) |
    dtype_bit(DType::kFloat64) | dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) |
    dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) | dtype_bit(DType::kUInt8);

/// `what` (an operand of op) must be 4-D [batch, height, width, channels] where its rank is known.
Status check_images(const OpDef* op, const char* what, const Shape& s);
/// Attributes 0 and 1 are align_corners and half_pixel_centers, which cannot both be set.
Status check_conventions(const InferContext& ctx);
/// Pushes the output spec of dtype `dtype`: input 0's batch and channels, the [height, width] of shape-like
/// input `size` (2 positive elements; unknown where tracing does not know them).
Status push_resized(InferContext& ctx, int size, DType dtype);
/// A gradient op's grads and original_image must agree in batch and channels (where known).
Status check_grads_match(const OpDef* op, const Shape& grads, const Shape& image);
/// A kernel's input image must have positive height and width.
Status check_positive_size(const OpDef* op, const Shape& images);

/// The forward op's attributes, for the gradient ops that take the same ones.
AttrList same_attrs(const GradContext& c);
/// [height, width] of an NHWC tensor as an int32 vector (read at run time where unknown while tracing).
GradTensor spatial_size(const GradTensor& x);

}  // namespace ember::image_ops

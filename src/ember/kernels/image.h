// Kernels of the image ops (ops/image.cc): nearest-neighbour and bilinear resizing of NHWC images and
// their gradients, with TensorFlow's coordinate conventions (align_corners, half_pixel_centers), and
// ImageProjectiveTransformV3's projective warp.
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

struct ResizeParams {
  bool align_corners = false, half_pixel_centers = false;
};

/// out [N, oh, ow, C] (float32) from images [N, ih, iw, C] (float32 or float64).
Status resize_bilinear(const ResizeParams& p, const TensorImpl& images, TensorImpl& out);
/// dx [N, ih, iw, C] (the original image's dtype) from grads [N, oh, ow, C] (float32, or float64).
Status resize_bilinear_grad(const ResizeParams& p, const TensorImpl& grads, TensorImpl& dx);
/// out [N, oh, ow, C] in the images' dtype.
Status resize_nearest(const ResizeParams& p, const TensorImpl& images, TensorImpl& out);
/// dx [N, ih, iw, C]: each output element's gradient added at the input element it copied.
Status resize_nearest_grad(const ResizeParams& p, const TensorImpl& grads, TensorImpl& dx);

/// How ImageProjectiveTransformV3 reads points outside the input (TensorFlow's fill_mode, scipy's modes).
enum class FillMode { kReflect, kWrap, kConstant, kNearest };

struct ProjectiveParams {
  bool bilinear = false;  // else nearest
  FillMode fill_mode = FillMode::kConstant;
  float fill_value = 0;
};

/// out [N, oh, ow, C] (the images' dtype: uint8, int32, int64, float16, bfloat16, float32, float64) from
/// images [N, ih, iw, C] and transforms [N or 1, 8] (float32): output point (x, y) samples the input at
/// ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, computed in float as TensorFlow.
Status image_projective_transform(const ProjectiveParams& p, const TensorImpl& images,
                                  const TensorImpl& transforms, TensorImpl& out);

}  // namespace ember::kernels

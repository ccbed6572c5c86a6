// Kernels of the image resize ops (ops/image.cc): nearest-neighbour and bilinear resizing of NHWC images and
// their gradients, with TensorFlow's coordinate conventions (align_corners, half_pixel_centers).
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

}  // namespace ember::kernels

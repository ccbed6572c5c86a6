// Kernels of the convolution ops (ops/nn_conv.cc): forward, backward data and backward filter of a
// grouped N-d convolution (1-3 spatial dims) in TensorFlow's layouts — activations NHWC/NDHWC (channels
// last) or NCHW/NCDHW (channels first), filters [k..., in_channels / groups, out_channels] (TensorFlow's
// HWIO; a depthwise filter [k..., C, multiplier] is the same layout with groups = C).
//
// float32 runs on oneDNN convolution primitives (Note [oneDNN convolutions] in conv.cc), created once per
// geometry and kept in a bounded LRU cache. float64 (which oneDNN has no kernels for on CPUs) and any
// float32 problem oneDNN declines run on ember's direct loops, parallel over the output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/kernels/fused_activation.h"

namespace ember::kernels {

/// Everything that fixes a convolution: sizes, the spatial attributes per dim and the layout. Spatial arrays
/// hold `nd` entries (the rest are 1 or 0).
struct ConvGeometry {
  int nd = 2;  // spatial dims: 1, 2 or 3
  bool channels_last = true;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_before[3] = {0, 0, 0}, pad_after[3] = {0, 0, 0};
};

/// y = conv(x, w). Shapes and dtypes match the geometry (checked by the shape function).
Status conv_forward(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, TensorImpl& y);
/// What a fused convolution adds and applies to conv(x, w): a bias [out_channels], optionally a residual of
/// y's shape and layout, then an activation (`alpha` is LeakyRelu's slope).
struct ConvEpilogue {
  const TensorImpl* bias = nullptr;
  const TensorImpl* residual = nullptr;  // null: none
  FusedActivation activation = FusedActivation::kNone;
  double alpha = 0.2;
};
/// y = activation(conv(x, w) + bias [+ residual]). float32 runs as one oneDNN primitive with the bias
/// argument, a binary add post-op and an eltwise post-op; float64 (and what oneDNN declines) adds them after
/// the convolution, in one pass over y.
Status conv_forward_fused(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w,
                          const ConvEpilogue& epilogue, TensorImpl& y);
/// dx = the gradient of conv(x, w) w.r.t. x given dy (TensorFlow's Conv2DBackpropInput).
Status conv_backward_data(const ConvGeometry& g, const TensorImpl& w, const TensorImpl& dy, TensorImpl& dx);
/// dw = the gradient of conv(x, w) w.r.t. w given dy (TensorFlow's Conv2DBackpropFilter).
Status conv_backward_filter(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& dy, TensorImpl& dw);

/// The oneDNN primitive cache shared by the convolution and pooling kernels (a bounded LRU; 128 entries
/// by default).
size_t conv_cache_size();
void set_conv_cache_capacity(size_t capacity);
void conv_cache_clear();
/// The implementation the last convolution or pooling call on this thread used: a oneDNN implementation
/// name ("brg_conv_fwd:avx512_core", "jit:avx2", ...) or "ember:direct". For tests and profiling.
std::string conv_last_impl();

}  // namespace ember::kernels

// Kernels of the normalization ops (ops/nn_norm.cc): TensorFlow's fused batch normalization (training and
// inference, forward and gradient) and local response normalization. A tensor is seen as [N, C, S] (channels
// first) or [N, S, C] (channels last), S the product of the spatial dims; per-channel sums accumulate in
// double, over a fixed split of the work, so results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

struct BatchNormShape {
  int64_t batch = 0, channels = 0, spatial = 1;
  bool channels_last = true;
};

/// Training: the batch's per-channel mean and biased variance normalise x; y = (x - mean) * rsqrt(var + eps)
/// * scale + offset. Writes y, saved_mean and saved_var (the batch statistics).
/// Inference: mean and var are given (saved_mean/saved_var then receive copies of them).
Status batch_norm_forward(const BatchNormShape& s, const TensorImpl& x, const TensorImpl& scale,
                          const TensorImpl& offset, const TensorImpl* mean, const TensorImpl* var,
                          double epsilon, bool training, TensorImpl& y, TensorImpl& saved_mean,
                          TensorImpl& saved_var);

/// The gradients of batch_norm_forward w.r.t. x, scale and offset; mean/var are the saved statistics
/// (training) or the population ones (inference).
Status batch_norm_backward(const BatchNormShape& s, const TensorImpl& dy, const TensorImpl& x,
                           const TensorImpl& scale, const TensorImpl& mean, const TensorImpl& var,
                           double epsilon, bool training, TensorImpl& dx, TensorImpl& dscale,
                           TensorImpl& doffset);

struct LrnParams {
  int64_t depth_radius = 5;
  double bias = 1, alpha = 1, beta = 0.5;
};

/// y[..., c] = x[..., c] / (bias + alpha * sum(x[..., c - r .. c + r]^2))^beta over the last (channel) dim.
Status lrn(const LrnParams& p, const TensorImpl& x, TensorImpl& y);
/// The gradient of lrn: dx given dy, x and y.
Status lrn_grad(const LrnParams& p, const TensorImpl& dy, const TensorImpl& x, const TensorImpl& y,
                TensorImpl& dx);

}  // namespace ember::kernels

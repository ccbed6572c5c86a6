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
/// With `relu`, y = relu(...) in the same pass (_FusedBatchNormEx; NaN stays NaN, as ember's Relu).
Status batch_norm_forward(const BatchNormShape& s, const TensorImpl& x, const TensorImpl& scale,
                          const TensorImpl& offset, const TensorImpl* mean, const TensorImpl* var,
                          double epsilon, bool training, TensorImpl& y, TensorImpl& saved_mean,
                          TensorImpl& saved_var, bool relu = false);

/// The gradients of batch_norm_forward w.r.t. x, scale and offset; mean/var are the saved statistics
/// (training) or the population ones (inference). With `relu_output` (the output of a Relu after the batch
/// norm), dy counts only where relu_output > 0: ReluGrad(dy, relu_output) folded into the same passes
/// (_FusedBatchNormGradEx).
Status batch_norm_backward(const BatchNormShape& s, const TensorImpl& dy, const TensorImpl& x,
                           const TensorImpl& scale, const TensorImpl& mean, const TensorImpl& var,
                           double epsilon, bool training, TensorImpl& dx, TensorImpl& dscale,
                           TensorImpl& doffset, const TensorImpl* relu_output = nullptr);

/// The float32 channels-last row loops (kernels/isa/batch_norm_isa.cc, one copy per ISA): `rows` rows of C
/// contiguous channels each, against per-channel vectors of C. Internal to kernels/.
struct BatchNormTables {
  /// sum[c] += x - pivot[c], sq[c] += (x - pivot[c])^2 over the rows.
  void (*sum_shifted_f32)(const float* x, int64_t rows, int64_t C, const float* pivot, float* sum,
                          float* sq) = nullptr;
  /// sum_dy[c] += dy, sum_dy_xc[c] += dy * (x - mean[c]) over the rows.
  void (*sum_grad_f32)(const float* x, const float* dy, int64_t rows, int64_t C, const float* mean,
                       float* sum_dy, float* sum_dy_xc) = nullptr;
  /// y = x * k[c] + shift[c].
  void (*scale_rows_f32)(const float* x, float* y, int64_t rows, int64_t C, const float* k,
                         const float* shift) = nullptr;
  /// dx = k[c] * (dy - mean_dy[c] - (x - mean[c]) * proj[c]).
  void (*grad_rows_f32)(const float* x, const float* dy, float* dx, int64_t rows, int64_t C, const float* k,
                        const float* mean_dy, const float* mean, const float* proj) = nullptr;
  /// y = relu(y) (NaN stays NaN), over n elements.
  void (*relu_rows_f32)(float* y, int64_t n) = nullptr;
  /// out = y > 0 ? dy : 0 (ReluGrad), over n elements.
  void (*mask_rows_f32)(const float* dy, const float* y, float* out, int64_t n) = nullptr;
};
const BatchNormTables& batch_norm_tables();

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

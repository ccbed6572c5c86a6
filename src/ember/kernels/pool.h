// Kernels of the pooling ops (ops/nn_pool.cc): max and average pooling over 1-3 spatial dims in TensorFlow's
// layouts (channels last or first), their gradients and the max-pool gradient's own gradient. float32
// forward pooling runs on oneDNN pooling primitives (cached as the convolutions',
// kernels/onednn_primitive.h); float64 and the gradients run on ember's direct loops, parallel over (batch,
// channel) planes.
//
// Max pooling picks, in each window, the first maximum in row-major window order (as TensorFlow's CPU
// kernels, so the gradient goes to the same element on ties); padding never wins. Average pooling divides
// by the number of window elements inside the input (TensorFlow's SAME padding excludes the padding).
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

struct PoolGeometry {
  int nd = 2;
  bool channels_last = true;
  int64_t batch = 0, channels = 0;
  int64_t in[3] = {1, 1, 1}, window[3] = {1, 1, 1}, out[3] = {1, 1, 1}, stride[3] = {1, 1, 1};
  int64_t pad_before[3] = {0, 0, 0}, pad_after[3] = {0, 0, 0};
};

Status max_pool(const PoolGeometry& g, const TensorImpl& x, TensorImpl& y);
Status avg_pool(const PoolGeometry& g, const TensorImpl& x, TensorImpl& y);
/// dx: dy of each window added to its maximum's element of x.
Status max_pool_grad(const PoolGeometry& g, const TensorImpl& x, const TensorImpl& dy, TensorImpl& dx);
/// dx: dy of each window spread evenly over its elements inside the input.
Status avg_pool_grad(const PoolGeometry& g, const TensorImpl& dy, TensorImpl& dx);
/// out (shaped as the pooled output): the element of `gx` (shaped as x) at each window's maximum of x.
Status max_pool_grad_grad(const PoolGeometry& g, const TensorImpl& x, const TensorImpl& gx, TensorImpl& out);

}  // namespace ember::kernels

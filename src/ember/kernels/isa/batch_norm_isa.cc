// The channels-last row loops of batch norm (kernels/batch_norm.cc, Note [Batch-norm loops]): each reads or
// writes rows of C contiguous channels against per-channel vectors. Compiled three times (baseline, avx2,
// avx512) like elementwise_isa.cc; batch_norm.cc picks the copy matching elementwise_isa(). The loops are
// element-wise along the channels (no reduction inside a row), so GCC vectorises them without
// -ffast-math, and the order of every sum is the code's, the same on each ISA.
#include <cstdint>

#include "ember/kernels/batch_norm.h"

namespace ember::kernels::EMBER_ISA {
namespace {

void sum_shifted(const float* __restrict x, int64_t rows, int64_t C, const float* __restrict pivot,
                 float* __restrict sum, float* __restrict sq) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * C;
    for (int64_t c = 0; c < C; ++c) {
      const float d = xr[c] - pivot[c];
      sum[c] += d;
      sq[c] += d * d;
    }
  }
}

void sum_grad(const float* __restrict x, const float* __restrict dy, int64_t rows, int64_t C,
              const float* __restrict mean, float* __restrict sum_dy, float* __restrict sum_dy_xc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * C;
    const float* __restrict dyr = dy + r * C;
    for (int64_t c = 0; c < C; ++c) {
      sum_dy[c] += dyr[c];
      sum_dy_xc[c] += dyr[c] * (xr[c] - mean[c]);
    }
  }
}

void scale_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t C,
                const float* __restrict k, const float* __restrict shift) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * C;
    float* __restrict yr = y + r * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * k[c] + shift[c];
  }
}

void grad_rows(const float* __restrict x, const float* __restrict dy, float* __restrict dx, int64_t rows,
               int64_t C, const float* __restrict k, const float* __restrict mean_dy,
               const float* __restrict mean, const float* __restrict proj) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * C;
    const float* __restrict dyr = dy + r * C;
    float* __restrict dxr = dx + r * C;
    for (int64_t c = 0; c < C; ++c) dxr[c] = k[c] * (dyr[c] - mean_dy[c] - (xr[c] - mean[c]) * proj[c]);
  }
}

}  // namespace

// Note [Batch norm fused with Relu] in batch_norm.cc: ember's Relu (NaN stays NaN) and ReluGrad's mask, as
// selects GCC vectorises here (batch_norm.cc is built at -O2 for the baseline ISA, where these loops stayed
// scalar with a branch per element: 10x slower than the batch norm itself).
void relu_rows(float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = y[i];
    y[i] = v > 0.0f || v != v ? v : 0.0f;
  }
}

void mask_rows(const float* __restrict dy, const float* __restrict y, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void fill_batch_norm_tables(BatchNormTables& t) {
  t.sum_shifted_f32 = &sum_shifted;
  t.sum_grad_f32 = &sum_grad;
  t.scale_rows_f32 = &scale_rows;
  t.grad_rows_f32 = &grad_rows;
  t.relu_rows_f32 = &relu_rows;
  t.mask_rows_f32 = &mask_rows;
}

}  // namespace ember::kernels::EMBER_ISA

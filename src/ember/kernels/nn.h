// Kernels of the nn ops (ops/nn.cc): softmax and log-softmax along any axis, the cross-entropy losses,
// BiasAdd and L2Loss. Everything is computed in float (float, float16, bfloat16) or double (float64),
// numerically stable by shifting each row by its maximum. Rows are split over the intra-op pool; the
// per-row hot loops (max, exp-and-sum, scaling) come from kernels/isa/nn_isa.cc, compiled per ISA.
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

/// Row loops compiled once per ISA (kernels/isa/nn_isa.cc). Rows are `n` contiguous elements.
struct NnTables {
  /// y = softmax(x) or log_softmax(x) (log) of one row; x and y do not overlap.
  void (*softmax_row_f32)(const float* x, float* y, int64_t n, bool log) = nullptr;
  void (*softmax_row_f64)(const double* x, double* y, int64_t n, bool log) = nullptr;
  /// Softmax along the rows of a [len, w] slab whose rows start xs (ys) elements apart, i.e. over a
  /// non-innermost axis, vectorised along w. mx and sm are w elements of scratch.
  void (*softmax_slab_f32)(const float* x, int64_t xs, float* y, int64_t ys, int64_t len, int64_t w, bool log,
                           float* mx, float* sm) = nullptr;
  void (*softmax_slab_f64)(const double* x, int64_t xs, double* y, int64_t ys, int64_t len, int64_t w,
                           bool log, double* mx, double* sm) = nullptr;
  float (*max_f32)(const float* x, int64_t n) = nullptr;
  double (*max_f64)(const double* x, int64_t n) = nullptr;
  /// out[i] = exp(x[i] - shift); returns the sum of out. `shift` is the row max, so every exponent is <= 0.
  float (*exp_shift_sum_f32)(const float* x, float shift, float* out, int64_t n) = nullptr;
  double (*exp_shift_sum_f64)(const double* x, double shift, double* out, int64_t n) = nullptr;
  /// sum(x^2) accumulated in double.
  double (*sum_squares_f32)(const float* x, int64_t n) = nullptr;
  double (*sum_squares_f64)(const double* x, int64_t n) = nullptr;
};

/// The tables for the best ISA this CPU supports (same choice as elementwise_isa()).
const NnTables& nn_tables();

/// Softmax (or log-softmax when `log`) of `in` along `axis` (already normalised to [0, rank)) into
/// `out`, which has in's shape and dtype. float16/bfloat16/float32/float64.
Status softmax(const TensorImpl& in, int axis, bool log, TensorImpl& out);

/// value + bias along the channel dimension: the last one (NHWC) or dimension 1 (NCHW). bias is 1-D
/// with that dimension's size (checked by the shape function).
Status bias_add(const TensorImpl& value, const TensorImpl& bias, bool channels_first, TensorImpl& out);

/// out (a scalar) = sum(t^2) / 2, accumulated in double in fixed-size blocks so the result does not
/// depend on the number of threads.
Status l2_loss(const TensorImpl& t, TensorImpl& out);

/// out = max(x, 0) - x * z + log(1 + exp(-|x|)) with x = logits, z = labels (same shape).
Status sigmoid_cross_entropy(const TensorImpl& labels, const TensorImpl& logits, TensorImpl& out);

/// Rows are the last axis of `logits` [..., classes]; `labels` has logits' shape.
/// loss[r] = sum_j labels[r,j] * (logsumexp(logits[r]) - logits[r,j]); backprop = softmax - labels.
Status softmax_cross_entropy(const TensorImpl& logits, const TensorImpl& labels, TensorImpl& loss,
                             TensorImpl& backprop);

/// `labels` (int32/int64, logits' shape without the last axis) index the classes. A label outside
/// [0, classes) is an InvalidArgument naming it; nothing is computed then.
/// loss[r] = logsumexp(logits[r]) - logits[r, labels[r]]; backprop = softmax - one_hot(labels).
Status sparse_softmax_cross_entropy(const TensorImpl& logits, const TensorImpl& labels, TensorImpl& loss,
                                    TensorImpl& backprop);

}  // namespace ember::kernels

// A whole LSTM sequence forward and backward in one kernel each (TensorFlow's BlockLSTMV2 and
// BlockLSTMGradV2, gate layout i, f, c, o as Keras's): the input's share of every step is one GEMM over all
// steps, each step is one [batch, cell] @ [cell, 4 * cell] GEMM and one pass over the gates, and the
// backward pass leaves the weight, bias and input gradients to GEMMs over all steps at the end, so the only
// per-step work is the chain that cannot be batched. float32 only (TensorFlow's CPU kernels also take half).
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

/// BlockLSTMV2's operands after the op has checked their shapes: x [T, B, I], cs_prev and h_prev [B, C],
/// w [I + C, 4C], wci, wcf, wco [C], b [4C]; the first `steps` steps run, the rest of the outputs are zero.
struct LstmOperands {
  const TensorImpl* x;
  const TensorImpl* cs_prev;
  const TensorImpl* h_prev;
  const TensorImpl* w;
  const TensorImpl* wci;
  const TensorImpl* wcf;
  const TensorImpl* wco;
  const TensorImpl* b;
  int64_t steps;
  bool peephole;
};

/// The gate loops of one step over `rows` rows of C units, compiled per ISA (kernels/isa/lstm_isa.cc).
struct LstmTables {
  /// z = xp + rec + bias (the input's and the state's shares, each [rows, 4C]) -> the seven forward outputs.
  using Forward = void (*)(const float* xp, const float* rec, const float* bias, const float* cs_prev,
                           const float* wci, const float* wcf, const float* wco, float clip, int64_t rows,
                           int64_t C, float* i, float* cs, float* f, float* o, float* ci, float* co,
                           float* h);
  /// The gates' pre-activation gradients `dgates` [rows, 4C] from the saved gates and the arriving
  /// gradients; dcs_carry is updated in place; the peephole gradients are accumulated.
  using Backward = void (*)(const float* i, const float* cs, const float* f, const float* o, const float* ci,
                            const float* co, const float* cs_prev, const float* h_grad, const float* cs_grad,
                            const float* dh_carry, float* dcs_carry, const float* wci, const float* wcf,
                            const float* wco, int64_t rows, int64_t C, float* dgates, float* wci_grad,
                            float* wcf_grad, float* wco_grad);
  Forward forward = nullptr, forward_peephole = nullptr;
  Backward backward = nullptr, backward_peephole = nullptr;
};

const LstmTables& lstm_tables();

/// Writes i, cs, f, o, ci, co, h, each [T, B, C] (`out` holds the seven in that order). cell_clip > 0
/// clips the cell state to [-cell_clip, cell_clip].
Status lstm_forward(const LstmOperands& in, float cell_clip, TensorImpl* const out[7]);

/// From the forward's seven outputs `fwd` (i, cs, f, o, ci, co, h) and the gradients arriving at cs and h,
/// writes x_grad, cs_prev_grad, h_prev_grad, w_grad, wci_grad, wcf_grad, wco_grad, b_grad (`out`).
Status lstm_backward(const LstmOperands& in, const TensorImpl* const fwd[7], const TensorImpl& cs_grad,
                     const TensorImpl& h_grad, TensorImpl* const out[8]);

}  // namespace ember::kernels

// The per-step gate loops of the LSTM kernels (kernels/lstm.cc, Note [One kernel for an LSTM sequence]).
// Compiled three times (baseline, avx2, avx512) like elementwise_isa.cc, with vmath.h's sigmoid and tanh,
// so the loops vectorise along the cell units; kernels/lstm.cc picks the copy matching elementwise_isa().
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ember/kernels/lstm.h"

namespace ember::kernels::EMBER_ISA {

#include "ember/kernels/vmath.h"  // NOLINT: deliberately inside the ISA namespace (see its header)

namespace {

// One forward step over B rows: z = xp (the input's share, bias included) + rec (h_prev @ w_h).
template <bool kPeephole>
void forward_rows(const float* __restrict xp, const float* __restrict rec, const float* __restrict bias,
                  const float* __restrict cs_prev, const float* __restrict wci, const float* __restrict wcf,
                  const float* __restrict wco, float clip, int64_t rows, int64_t C, float* __restrict i_out,
                  float* __restrict cs_out, float* __restrict f_out, float* __restrict o_out,
                  float* __restrict ci_out, float* __restrict co_out, float* __restrict h_out) {
  const int64_t G = 4 * C;
  for (int64_t r = 0; r < rows; ++r) {
    const float* zx = xp + r * G;
    const float* zr = rec + r * G;
    const float* cp = cs_prev + r * C;
    const int64_t o = r * C;
    for (int64_t j = 0; j < C; ++j) {
      // TensorFlow's order: the two products' sum, then the bias.
      float zi = (zx[j] + zr[j]) + bias[j], zf = (zx[C + j] + zr[C + j]) + bias[C + j];
      const float zc = (zx[2 * C + j] + zr[2 * C + j]) + bias[2 * C + j];
      float zo = (zx[3 * C + j] + zr[3 * C + j]) + bias[3 * C + j];
      if constexpr (kPeephole) {
        zi += cp[j] * wci[j];
        zf += cp[j] * wcf[j];
      }
      const float i = vsigmoid(zi), f = vsigmoid(zf), ci = vtanh(zc);
      float cs = ci * i + cp[j] * f;
      const float clipped = std::min(std::max(cs, -clip), clip);
      cs = clip > 0.0f ? clipped : cs;
      if constexpr (kPeephole) zo += cs * wco[j];
      const float og = vsigmoid(zo), co = vtanh(cs);
      i_out[o + j] = i;
      f_out[o + j] = f;
      ci_out[o + j] = ci;
      cs_out[o + j] = cs;
      o_out[o + j] = og;
      co_out[o + j] = co;
      h_out[o + j] = og * co;
    }
  }
}

// One backward step over B rows (TensorFlow's LSTMBlockCellBprop): reads the gates the forward saved and
// the gradients arriving at this step's h and cs (each plus what the later step handed back in dh / dcs),
// writes the gates' pre-activation gradients and hands dcs on (dcs is updated in place).
template <bool kPeephole>
void backward_rows(const float* __restrict i_in, const float* __restrict cs_in, const float* __restrict f_in,
                   const float* __restrict o_in, const float* __restrict ci_in, const float* __restrict co_in,
                   const float* __restrict cs_prev, const float* __restrict h_grad,
                   const float* __restrict cs_grad, const float* __restrict dh_carry,
                   float* __restrict dcs_carry, const float* __restrict wci, const float* __restrict wcf,
                   const float* __restrict wco, int64_t rows, int64_t C, float* __restrict dgates,
                   float* __restrict wci_grad, float* __restrict wcf_grad, float* __restrict wco_grad) {
  const int64_t G = 4 * C;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * C;
    float* dz = dgates + r * G;
    for (int64_t j = 0; j < C; ++j) {
      const float i = i_in[o + j], f = f_in[o + j], og = o_in[o + j], ci = ci_in[o + j], co = co_in[o + j];
      const float cp = cs_prev[o + j];
      const float dh = h_grad[o + j] + dh_carry[o + j];
      const float d_o = og * (1.0f - og) * dh * co;
      float dcs = (1.0f - co * co) * dh * og + (cs_grad[o + j] + dcs_carry[o + j]);
      if constexpr (kPeephole) dcs += d_o * wco[j];
      const float dci = (1.0f - ci * ci) * dcs * i;
      const float df = f * (1.0f - f) * dcs * cp;
      const float di = i * (1.0f - i) * dcs * ci;
      dz[j] = di;
      dz[C + j] = df;
      dz[2 * C + j] = dci;
      dz[3 * C + j] = d_o;
      float next = dcs * f;
      if constexpr (kPeephole) {
        next += di * wci[j] + df * wcf[j];
        wci_grad[j] += di * cp;
        wcf_grad[j] += df * cp;
        wco_grad[j] += d_o * cs_in[o + j];
      }
      dcs_carry[o + j] = next;
    }
  }
}

}  // namespace

void fill_lstm_tables(LstmTables& t) {
  t.forward = &forward_rows<false>;
  t.forward_peephole = &forward_rows<true>;
  t.backward = &backward_rows<false>;
  t.backward_peephole = &backward_rows<true>;
}

}  // namespace ember::kernels::EMBER_ISA

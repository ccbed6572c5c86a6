// Note [One kernel for an LSTM sequence]
// Keras's LSTM written as ember ops ran ~10 nodes a step forward and ~8 backward (split, concat, the gate
// arithmetic in fused groups, stacks of the saved gates), which cost about a third of a fit step beside the
// matmuls. Here a step is one GEMM (kernels::matmul, so the same routine as a MatMul node) and one pass over
// the [B, C] gates that reads each operand once; the saved gates are the op's outputs, written in place.
// The gate loops are compiled per ISA (kernels/isa/lstm_isa.cc) with vmath.h's polynomials, as the
// element-wise ops'.
#include "ember/kernels/lstm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ember/kernels/elementwise.h"
#include "ember/kernels/matmul.h"

namespace ember::kernels {
namespace baseline {
void fill_lstm_tables(LstmTables& t);
}
namespace avx2 {
void fill_lstm_tables(LstmTables& t);
}
namespace avx512 {
void fill_lstm_tables(LstmTables& t);
}

const LstmTables& lstm_tables() {
  static const LstmTables tables = [] {
    LstmTables t;
    const std::string_view isa = elementwise_isa();  // one ISA decision for the whole library
    if (isa == "avx512") {
      avx512::fill_lstm_tables(t);
    } else if (isa == "avx2") {
      avx2::fill_lstm_tables(t);
    } else {
      baseline::fill_lstm_tables(t);
    }
    return t;
  }();
  return tables;
}

namespace {

StatusOr<TensorRef> scratch(const Shape& shape) { return TensorImpl::allocate(DType::kFloat32, shape); }

size_t floats(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

}  // namespace

Status lstm_forward(const LstmOperands& in, float cell_clip, TensorImpl* const out[7]) {
  const int64_t T = in.x->shape().dim(0), B = in.x->shape().dim(1), I = in.x->shape().dim(2);
  const int64_t C = in.cs_prev->shape().dim(1), G = 4 * C, n = in.steps;
  for (int k = 0; k < 7; ++k)  // steps past seq_len_max are zero, as TensorFlow's
    std::memset(out[k]->mutable_data<float>() + n * B * C, 0, floats((T - n) * B * C));
  if (n == 0 || B == 0 || C == 0) return Status::OK();
  // The input's share of every step at once, with the bias: xp = x @ w_x + b.
  auto xp = scratch(Shape{n * B, G});
  if (!xp.ok()) return xp.status();
  const TensorRef x_rows = TensorImpl::view(*in.x, Shape{n * B, I});
  const TensorRef w_x = TensorImpl::view(*in.w, Shape{I, G});
  const TensorRef w_h = TensorImpl::view(*in.w, Shape{C, G}, floats(I * G));
  EMBER_RETURN_IF_ERROR(matmul(*x_rows, *w_x, false, false, **xp));
  float* xpd = (*xp)->mutable_data<float>();
  const float* bias = in.b->data<float>();
  for (int64_t r = 0; r < n * B; ++r)
    for (int64_t j = 0; j < G; ++j) xpd[r * G + j] += bias[j];
  auto rec = scratch(Shape{B, G});
  if (!rec.ok()) return rec.status();
  float* o[7];
  for (int k = 0; k < 7; ++k) o[k] = out[k]->mutable_data<float>();
  const int64_t step = B * C;
  for (int64_t t = 0; t < n; ++t) {
    const TensorRef h_prev = t == 0 ? TensorImpl::view(*in.h_prev, Shape{B, C})
                                    : TensorImpl::view(*out[6], Shape{B, C}, floats((t - 1) * step));
    EMBER_RETURN_IF_ERROR(matmul(*h_prev, *w_h, false, false, **rec));
    const float* cs_prev = t == 0 ? in.cs_prev->data<float>() : o[1] + (t - 1) * step;
    auto run = in.peephole ? lstm_tables().forward_peephole : lstm_tables().forward;
    run(xpd + t * B * G, (*rec)->data<float>(), cs_prev, in.wci->data<float>(), in.wcf->data<float>(),
        in.wco->data<float>(), cell_clip, B, C, o[0] + t * step, o[1] + t * step, o[2] + t * step,
        o[3] + t * step, o[4] + t * step, o[5] + t * step, o[6] + t * step);
  }
  return Status::OK();
}

Status lstm_backward(const LstmOperands& in, const TensorImpl* const fwd[7], const TensorImpl& cs_grad,
                     const TensorImpl& h_grad, TensorImpl* const out[8]) {
  const int64_t T = in.x->shape().dim(0), B = in.x->shape().dim(1), I = in.x->shape().dim(2);
  const int64_t C = in.cs_prev->shape().dim(1), G = 4 * C, n = in.steps, step = B * C;
  float* x_grad = out[0]->mutable_data<float>();
  float* dcs = out[1]->mutable_data<float>();  // handed from step to step, cs_prev_grad at the end
  float* dh = out[2]->mutable_data<float>();   // likewise, h_prev_grad at the end
  std::memset(x_grad + n * B * I, 0, floats((T - n) * B * I));
  std::memset(dcs, 0, floats(step));
  std::memset(dh, 0, floats(step));
  for (int k = 3; k < 8; ++k) std::memset(out[k]->mutable_raw_data(), 0, out[k]->nbytes());
  if (n == 0 || B == 0 || C == 0) {
    std::memset(x_grad, 0, floats(n * B * I));
    return Status::OK();
  }
  auto dgates = scratch(Shape{n * B, G});
  if (!dgates.ok()) return dgates.status();
  float* dz = (*dgates)->mutable_data<float>();
  const float* g[7];
  for (int k = 0; k < 7; ++k) g[k] = fwd[k]->data<float>();
  const TensorRef w_x = TensorImpl::view(*in.w, Shape{I, G});
  const TensorRef w_h = TensorImpl::view(*in.w, Shape{C, G}, floats(I * G));
  // w_h transposed once: dz @ w_h^T as a plain product runs at the forward's speed (a transposed operand
  // took 1.6x as long at [32, 512] x [512, 128]), and it is the one product every step waits for.
  auto w_h_t = scratch(Shape{G, C});
  if (!w_h_t.ok()) return w_h_t.status();
  const float* wh = w_h->data<float>();
  float* wht = (*w_h_t)->mutable_data<float>();
  for (int64_t r = 0; r < C; ++r)
    for (int64_t j = 0; j < G; ++j) wht[j * C + r] = wh[r * G + j];
  auto dh_next = scratch(Shape{B, C});
  if (!dh_next.ok()) return dh_next.status();
  for (int64_t t = n - 1; t >= 0; --t) {
    const int64_t at = t * step;
    const float* cs_prev = t == 0 ? in.cs_prev->data<float>() : g[1] + at - step;
    auto run = in.peephole ? lstm_tables().backward_peephole : lstm_tables().backward;
    run(g[0] + at, g[1] + at, g[2] + at, g[3] + at, g[4] + at, g[5] + at, cs_prev, h_grad.data<float>() + at,
        cs_grad.data<float>() + at, dh, dcs, in.wci->data<float>(), in.wcf->data<float>(),
        in.wco->data<float>(), B, C, dz + t * B * G, out[4]->mutable_data<float>(),
        out[5]->mutable_data<float>(), out[6]->mutable_data<float>());
    // The chain that cannot be batched: the gradient reaching h at step t - 1.
    const TensorRef dz_t = TensorImpl::view(**dgates, Shape{B, G}, floats(t * B * G));
    EMBER_RETURN_IF_ERROR(matmul(*dz_t, **w_h_t, false, false, **dh_next));
    std::memcpy(dh, (*dh_next)->data<float>(), floats(step));
  }
  // Everything else is a product over all steps at once.
  const TensorRef dz_all = TensorImpl::view(**dgates, Shape{n * B, G});
  const TensorRef x_rows = TensorImpl::view(*in.x, Shape{n * B, I});
  const TensorRef x_grad_rows = TensorImpl::view(*out[0], Shape{n * B, I});
  EMBER_RETURN_IF_ERROR(matmul(*dz_all, *w_x, false, true, *x_grad_rows));
  const TensorRef w_grad_x = TensorImpl::view(*out[3], Shape{I, G});
  EMBER_RETURN_IF_ERROR(matmul(*x_rows, *dz_all, true, false, *w_grad_x));
  auto h_prev_rows = scratch(Shape{n * B, C});  // h_prev then h[0 .. n - 2]: each step's recurrent input
  if (!h_prev_rows.ok()) return h_prev_rows.status();
  float* hp = (*h_prev_rows)->mutable_data<float>();
  std::memcpy(hp, in.h_prev->data<float>(), floats(step));
  std::memcpy(hp + step, g[6], floats((n - 1) * step));
  const TensorRef w_grad_h = TensorImpl::view(*out[3], Shape{C, G}, floats(I * G));
  EMBER_RETURN_IF_ERROR(matmul(**h_prev_rows, *dz_all, true, false, *w_grad_h));
  float* b_grad = out[7]->mutable_data<float>();
  for (int64_t r = 0; r < n * B; ++r)
    for (int64_t j = 0; j < G; ++j) b_grad[j] += dz[r * G + j];
  return Status::OK();
}

}  // namespace ember::kernels

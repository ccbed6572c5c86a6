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
#include <vector>

#include "ember/core/parallel.h"
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

// Note [Rows of the batch run apart]
// An LSTM's batch rows never meet: row r of step t needs only row r of step t - 1. So the steps run per
// block of rows, each block through all the steps on its own, and the blocks go to parallel_for: on two
// cores the chain of small products that every step waits for splits in two with no barrier between steps
// (a thread that the machine deschedules delays nothing: the other takes the next block). The blocks are
// fixed (kRowsPerBlock rows), whatever the threads, so the products, and the bits, are the same on one
// thread and on several; a [16, 128] x [128, 512] product takes half of a [32, ...] one (ember's tiles),
// so one thread loses nothing either. The products over all steps (weights' gradients) come after, on
// every thread.
constexpr int64_t kRowsPerBlock = 16;

// Calls fn(first row, rows) for each block of rows, in parallel when `cost` (per block) is worth it;
// returns the first error (by block).
template <typename Fn>
Status for_row_blocks(int64_t B, int64_t cost, Fn&& fn) {
  const int64_t blocks = (B + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<Status> status(static_cast<size_t>(blocks));
  parallel_for(blocks, cost, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t r0 = k * kRowsPerBlock;
      status[k] = fn(r0, std::min(kRowsPerBlock, B - r0));
    }
  });
  for (Status& s : status) EMBER_RETURN_IF_ERROR(s);
  return Status::OK();
}

}  // namespace

Status lstm_forward(const LstmOperands& in, float cell_clip, TensorImpl* const out[7]) {
  const int64_t T = in.x->shape().dim(0), B = in.x->shape().dim(1), I = in.x->shape().dim(2);
  const int64_t C = in.cs_prev->shape().dim(1), G = 4 * C, n = in.steps;
  for (int k = 0; k < 7; ++k)  // steps past seq_len_max are zero, as TensorFlow's
    std::memset(out[k]->mutable_data<float>() + n * B * C, 0, floats((T - n) * B * C));
  if (n == 0 || B == 0 || C == 0) return Status::OK();
  // The input's share of every step at once: xp = x @ w_x.
  auto xp = scratch(Shape{n * B, G});
  if (!xp.ok()) return xp.status();
  const TensorRef x_rows = TensorImpl::view(*in.x, Shape{n * B, I});
  const TensorRef w_x = TensorImpl::view(*in.w, Shape{I, G});
  const TensorRef w_h = TensorImpl::view(*in.w, Shape{C, G}, floats(I * G));
  EMBER_RETURN_IF_ERROR(matmul(*x_rows, *w_x, false, false, **xp));
  const float* xpd = (*xp)->data<float>();
  float* o[7];
  for (int k = 0; k < 7; ++k) o[k] = out[k]->mutable_data<float>();
  const auto run = in.peephole ? lstm_tables().forward_peephole : lstm_tables().forward;
  // Note [Rows of the batch run apart]: each block of rows runs every step on its own.
  return for_row_blocks(B, n * kRowsPerBlock * G * C, [&](int64_t r0, int64_t rows) -> Status {
    auto rec = scratch(Shape{rows, G});
    if (!rec.ok()) return rec.status();
    for (int64_t t = 0; t < n; ++t) {
      const int64_t at = (t * B + r0) * C, before = at - B * C;
      const TensorRef h_prev = t == 0 ? TensorImpl::view(*in.h_prev, Shape{rows, C}, floats(r0 * C))
                                      : TensorImpl::view(*out[6], Shape{rows, C}, floats(before));
      EMBER_RETURN_IF_ERROR(matmul(*h_prev, *w_h, false, false, **rec));
      const float* cs_prev = t == 0 ? in.cs_prev->data<float>() + r0 * C : o[1] + before;
      run(xpd + (t * B + r0) * G, (*rec)->data<float>(), in.b->data<float>(), cs_prev, in.wci->data<float>(),
          in.wcf->data<float>(), in.wco->data<float>(), cell_clip, rows, C, o[0] + at, o[1] + at, o[2] + at,
          o[3] + at, o[4] + at, o[5] + at, o[6] + at);
    }
    return Status::OK();
  });
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
  const auto run = in.peephole ? lstm_tables().backward_peephole : lstm_tables().backward;
  // Each block of rows sums its own peephole gradients, added in block order below, so the bits do not
  // depend on the thread count.
  const int64_t blocks = (B + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<float> peephole_grads(in.peephole ? static_cast<size_t>(blocks * 3 * C) : 0, 0.0f);
  EMBER_RETURN_IF_ERROR(for_row_blocks(B, n * kRowsPerBlock * G * C, [&](int64_t r0, int64_t rows) -> Status {
    auto dh_next = scratch(Shape{rows, C});
    if (!dh_next.ok()) return dh_next.status();
    float* pg = in.peephole ? peephole_grads.data() + (r0 / kRowsPerBlock) * 3 * C : nullptr;
    for (int64_t t = n - 1; t >= 0; --t) {
      const int64_t at = (t * B + r0) * C;
      const float* cs_prev = t == 0 ? in.cs_prev->data<float>() + r0 * C : g[1] + at - B * C;
      float* dz_t = dz + (t * B + r0) * G;
      run(g[0] + at, g[1] + at, g[2] + at, g[3] + at, g[4] + at, g[5] + at, cs_prev,
          h_grad.data<float>() + at, cs_grad.data<float>() + at, dh + r0 * C, dcs + r0 * C,
          in.wci->data<float>(), in.wcf->data<float>(), in.wco->data<float>(), rows, C, dz_t, pg,
          pg ? pg + C : nullptr, pg ? pg + 2 * C : nullptr);
      // The chain that cannot be batched: the gradient reaching h at step t - 1.
      const TensorRef dz_rows = TensorImpl::view(**dgates, Shape{rows, G}, floats((t * B + r0) * G));
      EMBER_RETURN_IF_ERROR(matmul(*dz_rows, **w_h_t, false, false, **dh_next));
      std::memcpy(dh + r0 * C, (*dh_next)->data<float>(), floats(rows * C));
    }
    return Status::OK();
  }));
  for (int64_t k = 0; k < blocks && in.peephole; ++k)
    for (int p = 0; p < 3; ++p)
      for (int64_t j = 0; j < C; ++j)
        out[4 + p]->mutable_data<float>()[j] += peephole_grads[(k * 3 + p) * C + j];
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

// Batched matrix multiplication with NumPy broadcasting of the batch dims (TensorFlow's BatchMatMulV2):
//   out[..., M, N] = op(a)[..., M, K] @ op(b)[..., K, N],  op = identity or transpose of the last two dims.
//
// float32 and bfloat16 run on a oneDNN matmul primitive, created once per (dims, transposes, dtype,
// threads) and kept in a bounded, thread-safe LRU cache; transposes and broadcast batch dims are expressed
// as strides, so nothing is copied. An unbatched float32 product goes to dnnl_sgemm instead (faster
// there; see Note [sgemm for unbatched float32] in matmul.cc), unless it is small or mid-sized: those run
// on ember's own loops (kernels/small_gemm.h, kernels/matmul_tiles.h), which need no run-time code
// generation and give the same bits on any thread count (Note [Register tiles]). float16 (no oneDNN kernel on
// CPUs without AVX512-FP16) and bfloat16 where oneDNN would only offer its reference kernel convert to
// float32 around the float32 primitive. float64, int32 and int64 (and tiny float problems, where a primitive
// call costs more than the arithmetic) use ember's own register-blocked loops, parallel over batches and row
// blocks. Integer products wrap like the type.
//
// oneDNN runs on OpenMP, ember's one pool: it is called with intra_op_threads() threads from the caller's
// thread, never from inside a parallel_for.
#pragma once

#include <cstddef>
#include <string>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/kernels/fused_activation.h"

namespace ember::kernels {

/// `out` must already have the broadcast shape [batch..., M, N]; `a` and `b` share a dtype with it.
Status matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b, TensorImpl& out);

/// What a fused product (TensorFlow's _FusedMatMul) does to each output block before it leaves the cache:
/// add a bias along the last dim, then an activation (Note [MatMul epilogues] in matmul.cc).
struct MatMulEpilogue {
  const TensorImpl* bias = nullptr;  // [N], out's dtype
  FusedActivation activation = FusedActivation::kNone;
  double leakyrelu_alpha = 0.2;
};

/// activation(op(a) @ op(b) + bias), float dtypes only; `epilogue.bias` is required.
Status matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b,
              const MatMulEpilogue& epilogue, TensorImpl& out);

/// The oneDNN primitive cache, a bounded LRU: its size, capacity (256 by default; shrinking evicts the
/// least recently used), and a way to empty it.
size_t matmul_cache_size();
size_t matmul_cache_capacity();
void set_matmul_cache_capacity(size_t capacity);
void matmul_cache_clear();

/// Which implementation the last matmul on this thread used: "dnnl_sgemm", a oneDNN primitive's
/// implementation name such as "brg:avx512_core" (prefixed "f32 via " when converted), "ember:small_gemm",
/// "ember:tiles" or "ember:blocked". For tests and profiling.
std::string matmul_last_impl();

}  // namespace ember::kernels

// Matrix products with few output columns, C[M, N] = op(A)[M, K] @ op(B)[K, N] for N up to 32 (float32)
// or 16 (float64): the layers of small MLPs such as L2HMC's ([200,3]x[3,10], [200,10]x[10,2]) and their
// gradients. A library GEMM spends more on its call than on such a product; here each output row is one
// or two vector registers, out[i, :] = sum_k A[i, k] * B[k, :] (a broadcast and an FMA per k), several
// rows (or, when M is small, several partial sums over k) at a time to hide the FMA latency.
//
// The loops live in kernels/isa/small_gemm_isa.cc, compiled per ISA; matmul.cc picks the table at run
// time and decides which products go here (Note [Small GEMM] in matmul.cc).
#pragma once

#include <cstdint>

namespace ember::kernels {

template <typename T>
struct SmallGemm {
  const T* a = nullptr;
  int64_t a_si = 0, a_sk = 0;  // element (i, k) of op(A) is a[i * a_si + k * a_sk]
  const T* b = nullptr;        // stored [K, N], or [N, K] when tb
  bool tb = false;
  T* c = nullptr;  // [M, N], dense
  int64_t M = 0, N = 0, K = 0;
};

struct SmallGemmTables {
  /// Compute rows [row_begin, row_end) of C; false (nothing written) when this ISA's loops do not cover
  /// the shape: N beyond the limit, or a transposed B too long to pack on the stack.
  bool (*f32)(const SmallGemm<float>& g, int64_t row_begin, int64_t row_end) = nullptr;
  bool (*f64)(const SmallGemm<double>& g, int64_t row_begin, int64_t row_end) = nullptr;
};

}  // namespace ember::kernels

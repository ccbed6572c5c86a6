// What the LAPACK-backed linalg ops share (linalg_lapack.cc, linalg_eig_lu.cc): element-type traits for
// the s/d/c/z routines, the checks and batch arithmetic of [..., M, M] inputs, the per-dtype kernel table,
// and the matrix helpers their gradient rules are written with. Included only by those files.
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember::linalg {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

constexpr DTypeSet kLapackTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) | kComplexTypes;

template <typename T>
struct RealOf {
  using type = T;
};
template <typename R>
struct RealOf<std::complex<R>> {
  using type = R;
};
template <typename T>
using Real = typename RealOf<T>::type;
template <typename T>
constexpr bool kIsComplex = !std::is_same_v<T, Real<T>>;

template <typename T>
T conj_if_complex(T x) {
  if constexpr (kIsComplex<T>)
    return std::conj(x);
  else
    return x;
}

// Each call of a LAPACK routine runs on the caller's thread (Note [LAPACK threads]).
void single_threaded_lapack();

// The leading (batch) dims of a [..., M, N] shape.
Shape batch_of(const Shape& s);
// [..., N] for a [..., M, N] shape (eigenvalues, pivots): one vector per matrix; unknown rank stays unknown.
Shape vector_per_matrix(const Shape& s);
// The input must be [..., M, M]; unknown dims pass.
Status check_square(const std::string& op, const Shape& s, const char* what = "input");
// LAPACK's sizes are 32-bit.
Status check_size(const std::string& op, int64_t n);

// Rows of the matrix and the number of matrices of a [..., n, n] tensor.
struct Batch {
  int64_t n = 0, count = 0;
};
StatusOr<Batch> batch_of_square(const std::string& op, const TensorImpl& t);

// The kernels of one op for float32, float64, complex64 and complex128: K<T>::run.
template <template <typename> class K>
void lapack_kernels(OpBuilder& b) {
  b.kernel(DType::kFloat32, &K<float>::run)
      .kernel(DType::kFloat64, &K<double>::run)
      .kernel(DType::kComplex64, &K<cfloat>::run)
      .kernel(DType::kComplex128, &K<cdouble>::run);
}

// ---- for the gradient rules (Note [Complex linalg gradients] in linalg_lapack.cc)
GradTensor transpose_last(const GradTensor& x);
bool complex_grad(const GradTensor& x);
GradTensor conj(const GradTensor& x);
GradTensor adjoint(const GradTensor& x);
GradTensor matmul_adjoint(const GradTensor& a, const GradTensor& b, bool adjoint_a, bool adjoint_b);
// MatrixBandPart(x, lo, up).
GradTensor band(const GradTensor& x, int64_t lo, int64_t up);
// The [..., n, n] matrices with diagonal d [..., n].
GradTensor diag_of(const GradTensor& d);

}  // namespace ember::linalg

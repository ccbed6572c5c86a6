// The general (non-symmetric) eigen decomposition Eig and the LU factorization Lu, through LAPACK's geev
// and getrf (docs/linalg.md). Both work on the last two dims and loop over the batch, for float32, float64,
// complex64 and complex128. lu_solve, lu_reconstruct and lu_matrix_inverse are composed of Lu's outputs in
// Python, as TensorFlow's. Registered from register_linalg_ops (linalg.cc).
#include <algorithm>
#include <complex>
#include <cstring>
#include <vector>

#include "ember/ops/linalg_lapack.h"

using ember::linalg::cdouble;
using ember::linalg::cfloat;

extern "C" {
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
            float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork,
            int* info);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr,
            double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr, double* work,
            const int* lwork, int* info);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, cfloat* a, const int* lda, cfloat* w,
            cfloat* vl, const int* ldvl, cfloat* vr, const int* ldvr, cfloat* work, const int* lwork,
            float* rwork, int* info);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, cdouble* a, const int* lda, cdouble* w,
            cdouble* vl, const int* ldvl, cdouble* vr, const int* ldvr, cdouble* work, const int* lwork,
            double* rwork, int* info);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void cgetrf_(const int* m, const int* n, cfloat* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, cdouble* a, const int* lda, int* ipiv, int* info);
}

namespace ember {
namespace {

using namespace linalg;  // NOLINT(google-build-using-namespace): the shared LAPACK helpers

void getrf(int n, float* a, int* ipiv, int* info) { sgetrf_(&n, &n, a, &n, ipiv, info); }
void getrf(int n, double* a, int* ipiv, int* info) { dgetrf_(&n, &n, a, &n, ipiv, info); }
void getrf(int n, cfloat* a, int* ipiv, int* info) { cgetrf_(&n, &n, a, &n, ipiv, info); }
void getrf(int n, cdouble* a, int* ipiv, int* info) { zgetrf_(&n, &n, a, &n, ipiv, info); }

// Eigenvalues w and right eigenvectors (columns of the column-major vr; jobvr 'N': none) of the column-major
// matrix a, as complex numbers for every input type. The real routines return a conjugate pair of
// eigenvalues as wr +- i wi and its vectors as the two columns (re, im) that the pair shares; `unpack_real`
// expands them.
template <typename R>
using RealGeev = void (*)(const char*, const char*, const int*, R*, const int*, R*, R*, R*, const int*, R*,
                          const int*, R*, const int*, int*);

template <typename R>
int real_geev(RealGeev<R> routine, char jobvr, int n, R* a, std::complex<R>* w, std::complex<R>* v) {
  std::vector<R> wr(n), wi(n), vr(jobvr == 'V' ? static_cast<size_t>(n) * n : 1);
  const char jobvl = 'N';
  const int ldv = jobvr == 'V' ? n : 1, one = 1;
  int info = 0, lwork = -1;
  R work_size = 0;
  routine(&jobvl, &jobvr, &n, a, &n, wr.data(), wi.data(), nullptr, &one, vr.data(), &ldv, &work_size, &lwork,
          &info);
  lwork = std::max(1, static_cast<int>(work_size));
  std::vector<R> work(lwork);
  routine(&jobvl, &jobvr, &n, a, &n, wr.data(), wi.data(), nullptr, &one, vr.data(), &ldv, work.data(),
          &lwork, &info);
  if (info != 0) return info;
  for (int j = 0; j < n; ++j) {
    w[j] = {wr[j], wi[j]};
    if (jobvr != 'V') continue;
    if (wi[j] == 0) {
      for (int i = 0; i < n; ++i) v[i + j * n] = vr[i + j * n];
    } else if (wi[j] > 0 && j + 1 < n) {  // columns j, j+1 hold re and im of the pair's first vector
      for (int i = 0; i < n; ++i) {
        v[i + j * n] = {vr[i + j * n], vr[i + (j + 1) * n]};
        v[i + (j + 1) * n] = std::conj(v[i + j * n]);
      }
    }
  }
  return 0;
}

template <typename C>
using ComplexGeev = void (*)(const char*, const char*, const int*, C*, const int*, C*, C*, const int*, C*,
                             const int*, C*, const int*, Real<C>*, int*);

template <typename C>
int complex_geev(ComplexGeev<C> routine, char jobvr, int n, C* a, C* w, C* v) {
  std::vector<Real<C>> rwork(2 * static_cast<size_t>(n));
  const char jobvl = 'N';
  const int ldv = jobvr == 'V' ? n : 1, one = 1;
  C unused_v = 0;
  C* vr = jobvr == 'V' ? v : &unused_v;
  int info = 0, lwork = -1;
  C work_size = 0;
  routine(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldv, &work_size, &lwork, rwork.data(), &info);
  lwork = std::max(1, static_cast<int>(std::real(work_size)));
  std::vector<C> work(lwork);
  routine(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldv, work.data(), &lwork, rwork.data(), &info);
  return info;
}

int geev(char jobvr, int n, float* a, cfloat* w, cfloat* v) {
  return real_geev<float>(&sgeev_, jobvr, n, a, w, v);
}
int geev(char jobvr, int n, double* a, cdouble* w, cdouble* v) {
  return real_geev<double>(&dgeev_, jobvr, n, a, w, v);
}
int geev(char jobvr, int n, cfloat* a, cfloat* w, cfloat* v) {
  return complex_geev<cfloat>(&cgeev_, jobvr, n, a, w, v);
}
int geev(char jobvr, int n, cdouble* a, cdouble* w, cdouble* v) {
  return complex_geev<cdouble>(&zgeev_, jobvr, n, a, w, v);
}

// ---- Eig(input [..., N, N]; compute_v, Tout) -> e [..., N], v [..., N, N] (compute_v) or [0], complex

DType complex_of(DType t) {
  return t == DType::kFloat64 || t == DType::kComplex128 ? DType::kComplex128 : DType::kComplex64;
}

Status eig_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_square("Eig", s));
  const DType in = ctx.inputs[0].dtype, out = ctx.attr_dtype(1);
  if (out != complex_of(in))
    return invalid_argument("Eig: Tout must be ", dtype_name(complex_of(in)), " for a ", dtype_name(in),
                            " input, got ", dtype_name(out));
  ctx.outputs.push_back(TensorSpec{out, vector_per_matrix(s)});
  ctx.outputs.push_back(TensorSpec{out, ctx.attr_bool(0) ? s : Shape({0})});
  return Status::OK();
}

template <typename T>
Status eig_kernel(KernelContext& ctx) {
  using C = std::complex<Real<T>>;
  auto b_or = batch_of_square("Eig", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const bool want_v = ctx.attr_bool(0);
  const int n = static_cast<int>(b.n);
  std::vector<T> a(b.n * b.n);
  std::vector<C> v(want_v ? b.n * b.n : 0);
  for (int64_t m = 0; m < b.count; ++m) {
    // A column-major copy of the row-major matrix (Note [Row-major into LAPACK]), so geev's right
    // eigenvectors are A's.
    const T* src = ctx.input(0).data<T>() + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const T x = src[i * n + j];
        if (!std::isfinite(std::real(x)) || !std::isfinite(std::imag(x)))
          return invalid_argument("Eig: matrix ", m,
                                  " holds a NaN or an infinity; the eigen decomposition is not defined");
        a[i + j * n] = x;
      }
    C* e = ctx.output(0).mutable_data<C>() + m * b.n;
    if (geev(want_v ? 'V' : 'N', n, a.data(), e, v.data()) != 0)
      return invalid_argument("Eig: the eigen decomposition of matrix ", m, " did not converge");
    if (!want_v) continue;
    C* out = ctx.output(1).mutable_data<C>() + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) out[i * n + j] = v[i + j * n];
  }
  return Status::OK();
}

// ---- Lu(input [..., M, M]; output_idx_type) -> lu [..., M, M], p [..., M]: input[p] = L U, L unit lower
// triangular (below lu's diagonal), U upper triangular (on and above it)

Status lu_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_square("Lu", s));
  const DType idx = ctx.attr_dtype(0);
  if (idx != DType::kInt32 && idx != DType::kInt64)
    return invalid_argument("Lu: output_idx_type must be int32 or int64, got ", dtype_name(idx));
  ctx.outputs.push_back(ctx.inputs[0]);
  ctx.outputs.push_back(TensorSpec{idx, vector_per_matrix(s)});
  return Status::OK();
}

template <typename T, typename Index>
Status lu_batch(KernelContext& ctx, const Batch& b) {
  const int n = static_cast<int>(b.n);
  std::vector<T> a(b.n * b.n);
  std::vector<int> ipiv(n);
  std::vector<Index> perm(n);
  for (int64_t m = 0; m < b.count; ++m) {
    // getrf pivots rows of the column-major matrix it is given: a column-major copy, so they are A's rows.
    const T* src = ctx.input(0).data<T>() + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a[i + j * n] = src[i * n + j];
    int info = 0;
    getrf(n, a.data(), ipiv.data(), &info);
    // As TensorFlow's kernel: a zero pivot (a singular matrix) is an error.
    if (info > 0) return invalid_argument("Lu: Input is not invertible (matrix ", m, " is singular)");
    T* lu = ctx.output(0).mutable_data<T>() + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) lu[i * n + j] = a[i + j * n];
    // getrf swapped row i with row ipiv[i] - 1, in order; the same swaps of 0..n-1 say where each row of
    // L U came from.
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int i = 0; i < n; ++i) std::swap(perm[i], perm[ipiv[i] - 1]);
    std::copy(perm.begin(), perm.end(), ctx.output(1).mutable_data<Index>() + m * b.n);
  }
  return Status::OK();
}

template <typename T>
Status lu_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square("Lu", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  if (ctx.output(1).dtype() == DType::kInt64) return lu_batch<T, int64_t>(ctx, *b_or);
  return lu_batch<T, int32_t>(ctx, *b_or);
}

// ---- gradients (TensorFlow's linalg_grad.py)

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// TensorFlow's _SafeReciprocal: x / (x^2 + 1e-20), 0 where x is 0.
GradTensor safe_reciprocal(const GradTensor& x) { return x / (x * x + 1e-20); }

// A = V diag(e) V^-1 with distinct eigenvalues (TensorFlow's rule, after Boeddeker et al. eq. 4.77): with
// F_ij = conj(1 / (e_j - e_i)) off the diagonal, dA = V^-H (diag(de) + F o (V^H dV - V^H V diag(Re diag(V^H
// dV)))) V^H, solved as V^H X = (...) V^H; a real input takes the real part.
void eig_grad(GradContext& c) {
  const GradTensor a = c.input(0), e = c.output(0);
  const GradTensor de = c.grad(0) ? c.grad(0) : zeros_like(e);
  GradTensor v = c.output(1), dv = c.grad(1);
  GradTensor mid = diag_of(de);
  if (!c.attr_bool(0)) {
    // Eigenvalues only (eigvals): the rule needs the vectors, recomputed; none of their gradient flows.
    v = emit("Eig", {a}, {AttrValue(true), AttrValue(e.dtype())})[1];
    dv = GradTensor();
  }
  const GradTensor vh = adjoint(v);
  if (dv) {
    const GradTensor diff = expand_dims(e, -2) - expand_dims(e, -1);
    const GradTensor f = conj(safe_reciprocal(diff));  // 0 on the diagonal, where diff is 0
    const GradTensor vdv = matmul(vh, dv, false, false);
    const GradTensor real_diag = band(cast(unary("Real", vdv), vdv.dtype()), 0, 0);
    mid = mid + f * (vdv - matmul(matmul(vh, v, false, false), real_diag, false, false));
  }
  GradTensor da = emit1("MatrixSolve", {vh, matmul(mid, vh, false, false)}, {AttrValue(false)});
  if (!is_complex(a.dtype())) da = unary("Real", da);
  c.set(0, da);
}

template <typename T>
struct EigK {
  static Status run(KernelContext& ctx) { return eig_kernel<T>(ctx); }
};
template <typename T>
struct LuK {
  static Status run(KernelContext& ctx) { return lu_kernel<T>(ctx); }
};

}  // namespace

void register_eig_lu_ops(OpRegistry& r) {
  single_threaded_lapack();
  {
    OpBuilder b("Eig");
    b.doc(
         "Complex eigenvalues and eigenvectors (unit columns) of each square matrix, A v = e v. "
         "eig([[2., 0.], [0., 3.]]).e == [2.+0.j, 3.+0.j]")
        .input("input")
        .output("e")
        .output("v")
        .type_var(kLapackTypes)
        .attr("compute_v", AttrType::kBool, true)
        .attr("Tout", AttrType::kDType, DType::kComplex64)
        .shape(&eig_shape)
        .grad(&eig_grad)
        .batching(BatchingRule::kFallback);
    lapack_kernels<EigK>(b);
    b.done(r);
  }
  {
    OpBuilder b("Lu");
    b.doc(
         "LU factorization with partial pivoting of each square matrix: input[p] = L U, packed in lu. "
         "lu([[1., 2.], [3., 4.]]) == ([[3., 4.], [1/3, 2/3]], [1, 0])")
        .input("input")
        .output("lu")
        .output("p")
        .type_var(kLapackTypes)
        .attr("output_idx_type", AttrType::kDType, DType::kInt32)
        .shape(&lu_shape)
        // TensorFlow 2.21 registers no gradient for Lu (its tape raises LookupError); here it gives none.
        // lu_reconstruct, lu_solve and lu_matrix_inverse differentiate in their other inputs, and a function
        // of the matrix differentiates through solve or inv.
        .flags(kNotDifferentiable)
        .batching(BatchingRule::kFallback);
    lapack_kernels<LuK>(b);
    b.done(r);
  }
}

}  // namespace ember

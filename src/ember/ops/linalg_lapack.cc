// Matrix factorizations and solves through LAPACK (docs/linalg.md): MatrixInverse, MatrixDeterminant,
// LogMatrixDeterminant, Cholesky, MatrixSolve, MatrixTriangularSolve, SelfAdjointEigV2, Qr, Svd, plus
// MatrixBandPart (which their gradients need). Every op works on the last two dims and loops over the
// leading (batch) dims, for float32, float64, complex64 and complex128 (LAPACK's s/d/c/z routines).
// Registered from register_linalg_ops (linalg.cc).
//
// Note [Row-major into LAPACK]: LAPACK reads column-major storage, so ember's row-major matrix A reaches it
// as A^T. Each kernel picks the routine argument that makes that transpose cancel (inv(A^T) = inv(A)^T,
// det(A^T) = det(A), the Cholesky factor of a symmetric A from uplo='U', ...) instead of copying. For
// complex matrices A^T is not the adjoint A^H: a Hermitian A reaches LAPACK as conj(A), so the kernels
// conjugate where an adjoint is asked for or where conj(A)'s factors differ from A's (eigenvectors).
#include "ember/ops/linalg_lapack.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

using ember::linalg::cdouble;
using ember::linalg::cfloat;

extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetri_(const int* n, float* a, const int* lda, const int* ipiv, float* work, const int* lwork,
             int* info);
void dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork,
             int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void strsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const float* alpha, const float* a, const int* lda, float* b, const int* ldb);
void dtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const double* alpha, const double* a, const int* lda, double* b, const int* ldb);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork,
             int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
             int* info);
// The complex routines (c: complex64, z: complex128); std::complex has Fortran's COMPLEX layout.
void cgetrf_(const int* m, const int* n, cfloat* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, cdouble* a, const int* lda, int* ipiv, int* info);
void cgetri_(const int* n, cfloat* a, const int* lda, const int* ipiv, cfloat* work, const int* lwork,
             int* info);
void zgetri_(const int* n, cdouble* a, const int* lda, const int* ipiv, cdouble* work, const int* lwork,
             int* info);
void cgetrs_(const char* trans, const int* n, const int* nrhs, const cfloat* a, const int* lda,
             const int* ipiv, cfloat* b, const int* ldb, int* info);
void zgetrs_(const char* trans, const int* n, const int* nrhs, const cdouble* a, const int* lda,
             const int* ipiv, cdouble* b, const int* ldb, int* info);
void cpotrf_(const char* uplo, const int* n, cfloat* a, const int* lda, int* info);
void zpotrf_(const char* uplo, const int* n, cdouble* a, const int* lda, int* info);
void ctrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const cfloat* alpha, const cfloat* a, const int* lda, cfloat* b, const int* ldb);
void ztrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const cdouble* alpha, const cdouble* a, const int* lda, cdouble* b, const int* ldb);
void cheevd_(const char* jobz, const char* uplo, const int* n, cfloat* a, const int* lda, float* w,
             cfloat* work, const int* lwork, float* rwork, const int* lrwork, int* iwork, const int* liwork,
             int* info);
void zheevd_(const char* jobz, const char* uplo, const int* n, cdouble* a, const int* lda, double* w,
             cdouble* work, const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork,
             int* info);
void cgeqrf_(const int* m, const int* n, cfloat* a, const int* lda, cfloat* tau, cfloat* work,
             const int* lwork, int* info);
void zgeqrf_(const int* m, const int* n, cdouble* a, const int* lda, cdouble* tau, cdouble* work,
             const int* lwork, int* info);
void cungqr_(const int* m, const int* n, const int* k, cfloat* a, const int* lda, const cfloat* tau,
             cfloat* work, const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, cdouble* a, const int* lda, const cdouble* tau,
             cdouble* work, const int* lwork, int* info);
void cgesdd_(const char* jobz, const int* m, const int* n, cfloat* a, const int* lda, float* s, cfloat* u,
             const int* ldu, cfloat* vt, const int* ldvt, cfloat* work, const int* lwork, float* rwork,
             int* iwork, int* info);
void zgesdd_(const char* jobz, const int* m, const int* n, cdouble* a, const int* lda, double* s, cdouble* u,
             const int* ldu, cdouble* vt, const int* ldvt, cdouble* work, const int* lwork, double* rwork,
             int* iwork, int* info);
}

namespace ember {
namespace linalg {

// Note [LAPACK threads]: where Debian's alternatives make liblapack.so.3 OpenBLAS's, its own thread pool
// would compete with ember's OpenMP workers (measured: 4x256x256 inverses 8 ms single-threaded, 45 ms with
// two OpenBLAS threads on a busy 2-core machine; docs/linalg.md). So each call runs on the caller's thread,
// unless OPENBLAS_NUM_THREADS says otherwise. Reference LAPACK has no such symbol and nothing happens.
void single_threaded_lapack() {
  static const bool done = [] {
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return true;
    void* lapack = dlopen("liblapack.so.3", RTLD_LAZY | RTLD_NOLOAD);
    if (lapack == nullptr) return true;
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(lapack, "openblas_set_num_threads"))) set(1);
    dlclose(lapack);
    return true;
  }();
  (void)done;
}

Shape batch_of(const Shape& s) {
  Shape out;
  for (int i = 0; i < s.rank() - 2; ++i) out.push_back(s.dim(i));
  return out;
}

Shape vector_per_matrix(const Shape& s) {
  if (!s.rank_known()) return Shape::unknown_rank();
  Shape out = batch_of(s);
  out.push_back(s.dim(s.rank() - 1));
  return out;
}

Status check_square(const std::string& op, const Shape& s, const char* what) {
  if (!s.rank_known()) return Status::OK();
  if (s.rank() < 2)
    return invalid_argument(op, ": ", what, " must be a matrix or batch of matrices [..., M, M], got shape ",
                            s.to_string());
  const int64_t r = s.dim(s.rank() - 2), c = s.dim(s.rank() - 1);
  if (r >= 0 && c >= 0 && r != c)
    return invalid_argument(op, ": ", what, " must be square [..., M, M], got shape ", s.to_string());
  return Status::OK();
}

Status check_size(const std::string& op, int64_t n) {
  if (n > std::numeric_limits<int>::max())
    return invalid_argument(op, ": matrices of ", n, " rows exceed LAPACK's 32-bit sizes");
  return Status::OK();
}

StatusOr<Batch> batch_of_square(const std::string& op, const TensorImpl& t) {
  EMBER_RETURN_IF_ERROR(check_square(op, t.shape()));
  Batch b;
  b.n = t.shape().dim(t.rank() - 1);
  b.count = b.n == 0 ? 0 : t.num_elements() / (b.n * b.n);
  EMBER_RETURN_IF_ERROR(check_size(op, b.n));
  return b;
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

GradTensor transpose_last(const GradTensor& x) {
  if (!x.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, "linalg gradient: needs the rank of its input"));
  std::vector<int64_t> perm;
  for (int i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
  return transpose(x, perm);
}

bool complex_grad(const GradTensor& x) { return is_complex(x.dtype()); }
GradTensor conj(const GradTensor& x) { return complex_grad(x) ? unary("Conj", x) : x; }
GradTensor adjoint(const GradTensor& x) { return conj(transpose_last(x)); }
GradTensor matmul_adjoint(const GradTensor& a, const GradTensor& b, bool adjoint_a, bool adjoint_b) {
  return matmul(adjoint_a ? conj(a) : a, adjoint_b ? conj(b) : b, adjoint_a, adjoint_b);
}

GradTensor band(const GradTensor& x, int64_t lo, int64_t up) {
  return emit1("MatrixBandPart", {x, scalar(static_cast<double>(lo), DType::kInt64),
                                  scalar(static_cast<double>(up), DType::kInt64)});
}

GradTensor diag_of(const GradTensor& d) {
  return band(expand_dims(d, -1) * expand_dims(ones_like(d), -2), 0, 0);
}

}  // namespace linalg

namespace {

using namespace linalg;  // NOLINT(google-build-using-namespace): the shared LAPACK helpers

template <typename T>
T nan_of() {
  const Real<T> nan = std::numeric_limits<Real<T>>::quiet_NaN();
  if constexpr (kIsComplex<T>)
    return T(nan, nan);
  else
    return nan;
}
template <typename T>
bool is_finite(T x) {
  return std::isfinite(std::real(x)) && std::isfinite(std::imag(x));
}
// BLAS's 'C' (conjugate transpose) is 'T' for real matrices.
template <typename T>
constexpr char kAdjointOp = kIsComplex<T> ? 'C' : 'T';

// One overload set per routine so the kernels are written once as templates; each routine's s/d/c/z
// version is picked by the element type.
#define EMBER_LAPACK_OVERLOADS(T, p)                                                              \
  void getrf(int n, T* a, int* ipiv, int* info) { p##getrf_(&n, &n, a, &n, ipiv, info); }         \
  void getri(int n, T* a, const int* ipiv, T* work, int lwork, int* info) {                       \
    p##getri_(&n, a, &n, ipiv, work, &lwork, info);                                               \
  }                                                                                               \
  void getrs(char trans, int n, int nrhs, const T* a, const int* ipiv, T* b, int* info) {         \
    p##getrs_(&trans, &n, &nrhs, a, &n, ipiv, b, &n, info);                                       \
  }                                                                                               \
  void potrf(char uplo, int n, T* a, int* info) { p##potrf_(&uplo, &n, a, &n, info); }            \
  void trsm(char side, char uplo, char trans, int m, int n, const T* a, int lda, T* b, int ldb) { \
    const T one = 1;                                                                              \
    const char diag = 'N';                                                                        \
    p##trsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb);                        \
  }                                                                                               \
  void geqrf(int m, int n, T* a, T* tau, T* work, int lwork, int* info) {                         \
    p##geqrf_(&m, &n, a, &m, tau, work, &lwork, info);                                            \
  }
EMBER_LAPACK_OVERLOADS(float, s)
EMBER_LAPACK_OVERLOADS(double, d)
EMBER_LAPACK_OVERLOADS(cfloat, c)
EMBER_LAPACK_OVERLOADS(cdouble, z)
#undef EMBER_LAPACK_OVERLOADS

// Q from geqrf's reflectors: orthogonal (orgqr) for real matrices, unitary (ungqr) for complex ones.
void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, cfloat* a, const cfloat* tau, cfloat* work, int lwork, int* info) {
  cungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, cdouble* a, const cdouble* tau, cdouble* work, int lwork, int* info) {
  zungqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}

// Eigen decomposition of a symmetric (syevd) or Hermitian (heevd) matrix from its column-major upper
// triangle; eigenvalues `w` are real. The complex routines (here and gesdd's) take an extra real workspace
// `rwork`, which the real overloads ignore.
void syevd(char jobz, int n, float* a, float* w, float* work, int lwork, float*, int, int* iwork, int liwork,
           int* info) {
  const char uplo = 'U';
  ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
void syevd(char jobz, int n, double* a, double* w, double* work, int lwork, double*, int, int* iwork,
           int liwork, int* info) {
  const char uplo = 'U';
  dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
void syevd(char jobz, int n, cfloat* a, float* w, cfloat* work, int lwork, float* rwork, int lrwork,
           int* iwork, int liwork, int* info) {
  const char uplo = 'U';
  cheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info);
}
void syevd(char jobz, int n, cdouble* a, double* w, cdouble* work, int lwork, double* rwork, int lrwork,
           int* iwork, int liwork, int* info) {
  const char uplo = 'U';
  zheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info);
}

void gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt, float* work,
           int lwork, float*, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt,
           double* work, int lwork, double*, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void gesdd(char jobz, int m, int n, cfloat* a, float* s, cfloat* u, int ldu, cfloat* vt, int ldvt,
           cfloat* work, int lwork, float* rwork, int* iwork, int* info) {
  cgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info);
}
void gesdd(char jobz, int m, int n, cdouble* a, double* s, cdouble* u, int ldu, cdouble* vt, int ldvt,
           cdouble* work, int lwork, double* rwork, int* iwork, int* info) {
  zgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info);
}

// ---- one square input, output of the same shape: MatrixInverse, Cholesky

Status square_same_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_square(ctx.op->name, ctx.inputs[0].shape));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

template <typename T>
Status inverse_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square("MatrixInverse", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const bool adjoint = ctx.attr_bool(0);
  const int n = static_cast<int>(b.n);
  const T* in = ctx.input(0).data<T>();
  T* out = ctx.output(0).mutable_data<T>();
  std::vector<int> ipiv(n);
  std::vector<T> work(std::max(1, n * 64));
  std::vector<T> scratch(adjoint ? b.n * b.n : 0);
  for (int64_t m = 0; m < b.count; ++m) {
    T* a = out + m * b.n * b.n;
    // Note [Row-major into LAPACK]: inverting the buffer as it is yields inv(A); the adjoint form wants
    // inv(A)^H, which is the inverse of the conjugate-transposed copy.
    const T* src = in + m * b.n * b.n;
    if (adjoint) {
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) a[j * n + i] = conj_if_complex(src[i * n + j]);
    } else {
      std::memcpy(a, src, sizeof(T) * b.n * b.n);
    }
    int info = 0;
    getrf(n, a, ipiv.data(), &info);
    if (info > 0)
      return invalid_argument("MatrixInverse: Input is not invertible (matrix ", m, " is singular)");
    getri(n, a, ipiv.data(), work.data(), static_cast<int>(work.size()), &info);
    if (info != 0) return invalid_argument("MatrixInverse: Input is not invertible (matrix ", m, ")");
  }
  return Status::OK();
}

template <typename T>
Status cholesky_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square("Cholesky", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const int n = static_cast<int>(b.n);
  const T* in = ctx.input(0).data<T>();
  T* out = ctx.output(0).mutable_data<T>();
  for (int64_t m = 0; m < b.count; ++m) {
    T* a = out + m * b.n * b.n;
    // As TensorFlow, only the lower triangle is read: mirror it (conjugated: A is Hermitian) so LAPACK's
    // upper triangle (our lower one, Note [Row-major into LAPACK]) holds it. LAPACK then factors the
    // column-major view, A^T = conj(A) = U^H U, whose U read row-major is L with A = L L^H.
    const T* src = in + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) {
        a[i * n + j] = src[i * n + j];
        a[j * n + i] = conj_if_complex(src[i * n + j]);
      }
    int info = 0;
    potrf('U', n, a, &info);
    // As TensorFlow 2.21's CPU kernel: a matrix that is not positive definite gives NaN in the lower
    // triangle rather than an error, so one bad matrix of a batch does not fail the others.
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (j > i)
          a[i * n + j] = 0;
        else if (info != 0)
          a[i * n + j] = nan_of<T>();
  }
  return Status::OK();
}

// ---- MatrixDeterminant, LogMatrixDeterminant: [..., M, M] -> [...]

Status det_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_square(ctx.op->name, s));
  const Shape out = s.rank_known() ? batch_of(s) : Shape::unknown_rank();
  for (size_t i = 0; i < ctx.op->outputs.size(); ++i)
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// Sign and log|det| of one matrix from its LU factors; a singular matrix gives sign 0 and log -inf. The sign
// of a complex determinant is det / |det|, the product of the pivots' d / |d|.
template <typename T>
void lu_slogdet(int n, T* a, int* ipiv, T* sign, Real<T>* logabs) {
  int info = 0;
  getrf(n, a, ipiv, &info);
  T s = 1;
  Real<T> l = 0;
  for (int i = 0; i < n; ++i) {
    const T d = a[i * n + i];
    if (d == T(0)) {
      s = 0;
      l = -std::numeric_limits<Real<T>>::infinity();
      break;
    }
    if constexpr (kIsComplex<T>)
      s *= d / std::abs(d);
    else if (d < 0)
      s = -s;
    if (ipiv[i] != i + 1) s = -s;
    l += std::log(std::abs(d));
  }
  *sign = s;
  *logabs = l;
}

template <typename T, bool kLog>
Status det_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square(ctx.op->name, ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const int n = static_cast<int>(b.n);
  const int64_t count = ctx.output(0).num_elements();
  const T* in = ctx.input(0).data<T>();
  std::vector<T> a(b.n * b.n);
  std::vector<int> ipiv(n);
  for (int64_t m = 0; m < count; ++m) {
    T sign = 1;  // the determinant of a 0x0 matrix is 1
    Real<T> logabs = 0;
    if (n > 0) {
      std::memcpy(a.data(), in + m * b.n * b.n, sizeof(T) * b.n * b.n);
      lu_slogdet(n, a.data(), ipiv.data(), &sign, &logabs);
    }
    if constexpr (kLog) {
      ctx.output(0).mutable_data<T>()[m] = sign;
      ctx.output(1).mutable_data<T>()[m] = logabs;
    } else {
      ctx.output(0).mutable_data<T>()[m] = sign * T(std::exp(logabs));
    }
  }
  return Status::OK();
}

// ---- MatrixSolve(matrix [..., M, M], rhs [..., M, K]; adjoint), MatrixTriangularSolve(...; lower, adjoint)

Status solve_shape(InferContext& ctx) {
  const std::string& op = ctx.op->name;
  const Shape &a = ctx.inputs[0].shape, &rhs = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_square(op, a, "matrix"));
  if (rhs.rank_known() && rhs.rank() < 2)
    return invalid_argument(op, ": rhs must be [..., M, K], got shape ", rhs.to_string());
  if (!a.rank_known() || !rhs.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, rhs.rank_known() ? rhs : Shape::unknown_rank()});
    return Status::OK();
  }
  const int64_t m = a.dim(a.rank() - 1), rm = rhs.dim(rhs.rank() - 2);
  if (m >= 0 && rm >= 0 && m != rm)
    return invalid_argument(op, ": matrix is ", a.to_string(), " but rhs is ", rhs.to_string(),
                            "; their rows must match");
  // MatrixSolve wants equal batch dims, as TensorFlow's; MatrixTriangularSolve broadcasts them.
  bool same = a.rank() == rhs.rank();
  for (int i = 0; same && i < a.rank() - 2; ++i)
    same = a.dim(i) < 0 || rhs.dim(i) < 0 || a.dim(i) == rhs.dim(i);
  auto batch = broadcast_shapes(batch_of(a), batch_of(rhs));
  if (!batch.ok() || (op == "MatrixSolve" && !same))
    return invalid_argument(op, ": the batch dims of matrix ", a.to_string(), " and rhs ", rhs.to_string(),
                            op == "MatrixSolve" ? " must be equal" : " do not broadcast");
  Shape out = *batch;
  out.push_back(m >= 0 ? m : rm);
  out.push_back(rhs.dim(rhs.rank() - 1));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// For output batch index `i`, the index of the operand's matrix when its batch dims broadcast to `out`'s.
int64_t broadcast_index(const Shape& operand, const Shape& out, int64_t i) {
  const int ob = out.rank() - 2, pb = operand.rank() - 2;
  int64_t index = 0, stride = 1;
  for (int d = ob - 1; d >= 0; --d) {
    const int64_t od = out.dim(d);
    const int64_t coord = i % od;
    i /= od;
    const int pd = d - (ob - pb);
    if (pd >= 0) {
      const int64_t size = operand.dim(pd);
      if (size != 1) index += coord * stride;
      stride *= size;
    }
  }
  return index;
}

template <typename T, bool kTriangular>
Status solve_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &am = ctx.input(0), &bm = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  auto ab_or = batch_of_square(op, am);
  if (!ab_or.ok()) return ab_or.status();
  const Batch ab = *ab_or;
  (void)ab;
  const Shape& os = out.shape();
  const int n = static_cast<int>(os.dim(os.rank() - 2)), k = static_cast<int>(os.dim(os.rank() - 1));
  EMBER_RETURN_IF_ERROR(check_size(op, static_cast<int64_t>(n) * k));
  if (out.num_elements() == 0) return Status::OK();
  const int64_t count = out.num_elements() / (static_cast<int64_t>(n) * k);
  const bool lower = kTriangular ? ctx.attr_bool(0) : false;
  const bool adjoint = ctx.attr_bool(kTriangular ? 1 : 0);
  const T* a_data = am.data<T>();
  const T* b_data = bm.data<T>();
  T* x = out.mutable_data<T>();
  const int64_t nn = static_cast<int64_t>(n) * n, nk = static_cast<int64_t>(n) * k;
  std::vector<T> lu(kTriangular ? 0 : nn);
  std::vector<int> ipiv(kTriangular ? 0 : n);
  for (int64_t m = 0; m < count; ++m) {
    const T* a = a_data + broadcast_index(am.shape(), os, m) * nn;
    T* xm = x + m * nk;
    std::memcpy(xm, b_data + broadcast_index(bm.shape(), os, m) * nk, sizeof(T) * nk);
    // Note [Row-major into LAPACK]: the row-major [n, k] rhs is a column-major [k, n] matrix B^T, and
    // A X = B is X^T A^T = B^T, a right-side solve with the column-major view of A (which is A^T) itself.
    // So A X = B solves with op = 'N' against A^T, and the adjoint A^H X = B (X^T conj(A) = B^T) with
    // op = 'C'.
    if constexpr (kTriangular) {
      // A lower-triangular A is upper-triangular in LAPACK's view.
      trsm('R', lower ? 'U' : 'L', adjoint ? kAdjointOp<T> : 'N', k, n, a, n, xm, k);
    } else {
      std::memcpy(lu.data(), a, sizeof(T) * nn);
      int info = 0;
      getrf(n, lu.data(), ipiv.data(), &info);
      if (info > 0) return invalid_argument("MatrixSolve: Input matrix is not invertible (matrix ", m, ")");
      // getrs solves on the left only: transpose X^T into a column-major [n, k] buffer and back.
      std::vector<T> cm(nk);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < k; ++j) cm[j * n + i] = xm[i * k + j];
      // LU holds A^T's factors: solving A X = B is a transposed solve with them. The adjoint A^H X = B is
      // A^T conj(X) = conj(B), a plain solve of the conjugates.
      const bool conjugate = kIsComplex<T> && adjoint;
      if (conjugate)
        for (T& v : cm) v = conj_if_complex(v);
      getrs(adjoint ? 'N' : 'T', n, k, lu.data(), ipiv.data(), cm.data(), &info);
      if (conjugate)
        for (T& v : cm) v = conj_if_complex(v);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < k; ++j) xm[i * k + j] = cm[j * n + i];
    }
  }
  return Status::OK();
}

// ---- MatrixBandPart(input, num_lower, num_upper): zeroes elements outside the band; negative = keep all.

Status band_part_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  if (s.rank_known() && s.rank() < 2)
    return invalid_argument("MatrixBandPart: input must be at least 2-D, got shape ", s.to_string());
  for (int i = 1; i <= 2; ++i)
    if (ctx.inputs[i].shape.rank_known() && ctx.inputs[i].shape.rank() != 0)
      return invalid_argument("MatrixBandPart: ", i == 1 ? "num_lower" : "num_upper",
                              " must be a scalar, got shape ", ctx.inputs[i].shape.to_string());
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

// Any dtype: elements are copied or zeroed as bytes (all-zero bytes are 0, 0.0 and false alike).
Status band_part_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  if (in.rank() < 2)
    return invalid_argument("MatrixBandPart: input must be at least 2-D, got shape ", in.shape().to_string());
  if (ctx.input(1).rank() != 0 || ctx.input(2).rank() != 0)
    return invalid_argument("MatrixBandPart: num_lower and num_upper must be scalars");
  const int64_t rows = in.shape().dim(in.rank() - 2), cols = in.shape().dim(in.rank() - 1);
  const int64_t lo = ctx.int_values(1)[0], up = ctx.int_values(2)[0];
  if (lo > rows) return invalid_argument("MatrixBandPart: num_lower must be <= ", rows, ", got ", lo);
  if (up > cols) return invalid_argument("MatrixBandPart: num_upper must be <= ", cols, ", got ", up);
  const size_t size = dtype_size(in.dtype());
  const auto* x = static_cast<const char*>(in.raw_data());
  auto* y = static_cast<char*>(ctx.output(0).mutable_raw_data());
  const int64_t per = rows * cols, count = per == 0 ? 0 : in.num_elements() / per;
  for (int64_t m = 0; m < count; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t e = static_cast<size_t>(m * per + i * cols + j) * size;
        if ((lo < 0 || i - j <= lo) && (up < 0 || j - i <= up))
          std::memcpy(y + e, x + e, size);
        else
          std::memset(y + e, 0, size);
      }
  return Status::OK();
}

// ---- SelfAdjointEigV2(input; compute_v) -> e [..., M] ascending, v [..., M, M] (columns; [0] without v)

// LAPACK's iterative routines (gesdd, syevd) may never return on a NaN or an infinity, so the kernels look
// for them first (found by the op fuzzer: an Svd of a 3x3 float32 with an infinity hung).
template <typename T>
bool all_finite(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!is_finite(p[i])) return false;
  return true;
}

Status eigh_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_square("SelfAdjointEigV2", s));
  const DType dt = ctx.inputs[0].dtype;
  ctx.outputs.push_back(TensorSpec{dt, vector_per_matrix(s)});
  ctx.outputs.push_back(TensorSpec{dt, ctx.attr_bool(0) ? s : Shape({0})});
  return Status::OK();
}

template <typename T>
Status eigh_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square("SelfAdjointEigV2", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const bool want_v = ctx.attr_bool(0);
  const int n = static_cast<int>(b.n);
  const char jobz = want_v ? 'V' : 'N';
  std::vector<T> a(b.n * b.n);
  // The eigenvalues are real; the output has the input's dtype (complex for a Hermitian input, as
  // TensorFlow's).
  std::vector<Real<T>> w(b.n);
  T work_size = 0;
  Real<T> rwork_size = 0;
  int iwork_size = 0, info = 0;
  if (b.count > 0)
    syevd(jobz, n, a.data(), w.data(), &work_size, -1, &rwork_size, -1, &iwork_size, -1, &info);
  std::vector<T> work(std::max<int64_t>(1, static_cast<int64_t>(std::real(work_size))));
  std::vector<Real<T>> rwork(std::max<int64_t>(1, static_cast<int64_t>(rwork_size)));
  std::vector<int> iwork(std::max(1, iwork_size));
  for (int64_t m = 0; m < b.count; ++m) {
    // The row-major lower triangle that TensorFlow reads is LAPACK's upper one; the column-major view is
    // A^T = conj(A), whose eigenvectors are the conjugates of A's.
    std::memcpy(a.data(), ctx.input(0).data<T>() + m * b.n * b.n, sizeof(T) * b.n * b.n);
    if (!all_finite(a.data(), b.n * b.n))  // TensorFlow's CPU kernel fails on these too
      return invalid_argument("SelfAdjointEigV2: matrix ", m,
                              " holds a NaN or an infinity; the eigen "
                              "decomposition is not defined");
    syevd(jobz, n, a.data(), w.data(), work.data(), static_cast<int>(work.size()), rwork.data(),
          static_cast<int>(rwork.size()), iwork.data(), static_cast<int>(iwork.size()), &info);
    if (info != 0)
      return invalid_argument("SelfAdjointEigV2: the eigen decomposition of matrix ", m, " did not converge");
    std::copy(w.begin(), w.end(), ctx.output(0).mutable_data<T>() + m * b.n);
    if (want_v) {
      T* v = ctx.output(1).mutable_data<T>() + m * b.n * b.n;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) v[i * n + j] = conj_if_complex(a[j * n + i]);
    }
  }
  return Status::OK();
}

// ---- Qr(input [..., M, N]; full_matrices) -> q [..., M, K], r [..., K, N]; K = full ? M : min(M, N)

Status matrix_rank_check(const std::string& op, const Shape& s) {
  if (s.rank_known() && s.rank() < 2)
    return invalid_argument(op, ": input must be a matrix or batch of matrices [..., M, N], got shape ",
                            s.to_string());
  return Status::OK();
}

int64_t min_dim(int64_t a, int64_t b) { return a < 0 || b < 0 ? kUnknownDim : std::min(a, b); }

Status qr_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(matrix_rank_check("Qr", s));
  const DType dt = ctx.inputs[0].dtype;
  if (!s.rank_known()) {
    ctx.outputs.push_back(TensorSpec{dt, Shape::unknown_rank()});
    ctx.outputs.push_back(TensorSpec{dt, Shape::unknown_rank()});
    return Status::OK();
  }
  const int64_t m = s.dim(s.rank() - 2), n = s.dim(s.rank() - 1);
  const int64_t k = ctx.attr_bool(0) ? m : min_dim(m, n);
  Shape q = batch_of(s), r = batch_of(s);
  q.push_back(m);
  q.push_back(k);
  r.push_back(k);
  r.push_back(n);
  ctx.outputs.push_back(TensorSpec{dt, q});
  ctx.outputs.push_back(TensorSpec{dt, r});
  return Status::OK();
}

template <typename T>
Status qr_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const int64_t m64 = in.shape().dim(in.rank() - 2), n64 = in.shape().dim(in.rank() - 1);
  EMBER_RETURN_IF_ERROR(check_size("Qr", m64 * std::max<int64_t>(m64, n64)));
  const int m = static_cast<int>(m64), n = static_cast<int>(n64), p = std::min(m, n);
  const int k = ctx.attr_bool(0) ? m : p;
  const int64_t count = m64 * n64 == 0 ? 0 : in.num_elements() / (m64 * n64);
  std::vector<T> a(static_cast<size_t>(m) * std::max(n, k)), tau(std::max(1, p));
  std::vector<T> work(std::max(1, 64 * std::max(m, n)));
  TensorImpl& q_out = ctx.output(0);
  if (count == 0 && q_out.num_elements() > 0) {
    // An empty matrix (N = 0) with full_matrices: Q is the identity, as TensorFlow gives (found by the op
    // fuzzer: Q held whatever its buffer did).
    T* q = q_out.mutable_data<T>();
    std::fill_n(q, q_out.num_elements(), T(0));
    for (int64_t b = 0; b < q_out.num_elements() / (m64 * k); ++b)
      for (int i = 0; i < std::min(m, k); ++i) q[b * m64 * k + static_cast<int64_t>(i) * k + i] = T(1);
  }
  for (int64_t b = 0; b < count; ++b) {
    const T* src = in.data<T>() + b * m64 * n64;
    std::fill(a.begin(), a.end(), T(0));
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) a[static_cast<size_t>(j) * m + i] = src[i * n + j];
    int info = 0;
    geqrf(m, n, a.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
    T* r = ctx.output(1).mutable_data<T>() + b * k * n64;
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < n; ++j) r[i * n + j] = j >= i ? a[static_cast<size_t>(j) * m + i] : T(0);
    if (k > 0) orgqr(m, k, p, a.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
    if (info != 0) return invalid_argument("Qr: LAPACK failed on matrix ", b, " (info ", info, ")");
    T* q = ctx.output(0).mutable_data<T>() + b * m64 * k;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < k; ++j) q[i * k + j] = a[static_cast<size_t>(j) * m + i];
  }
  return Status::OK();
}

// ---- Svd(input [..., M, N]; compute_uv, full_matrices) -> s [..., P], u [..., M, M or P], v [..., N, N or
// P]

Status svd_shape(InferContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(matrix_rank_check("Svd", s));
  const DType dt = ctx.inputs[0].dtype;
  const bool uv = ctx.attr_bool(0), full = ctx.attr_bool(1);
  if (!s.rank_known()) {
    for (int i = 0; i < 3; ++i)
      ctx.outputs.push_back(TensorSpec{dt, i == 0 || uv ? Shape::unknown_rank() : Shape({0})});
    return Status::OK();
  }
  const int64_t m = s.dim(s.rank() - 2), n = s.dim(s.rank() - 1), p = min_dim(m, n);
  Shape sv = batch_of(s), u = batch_of(s), v = batch_of(s);
  sv.push_back(p);
  u.push_back(m);
  u.push_back(full ? m : p);
  v.push_back(n);
  v.push_back(full ? n : p);
  ctx.outputs.push_back(TensorSpec{dt, sv});
  ctx.outputs.push_back(TensorSpec{dt, uv ? u : Shape({0})});
  ctx.outputs.push_back(TensorSpec{dt, uv ? v : Shape({0})});
  return Status::OK();
}

template <typename T>
Status svd_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const bool uv = ctx.attr_bool(0), full = ctx.attr_bool(1);
  const int64_t m64 = in.shape().dim(in.rank() - 2), n64 = in.shape().dim(in.rank() - 1);
  EMBER_RETURN_IF_ERROR(check_size("Svd", std::max(m64, n64) * std::max(m64, n64)));
  const int m = static_cast<int>(m64), n = static_cast<int>(n64), p = std::min(m, n);
  const int64_t count = m64 * n64 == 0 ? 0 : in.num_elements() / (m64 * n64);
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  const int ucols = full ? m : p, vrows = full ? n : p;
  std::vector<T> a(static_cast<size_t>(m) * n), u(uv ? static_cast<size_t>(m) * ucols : 1),
      vt(uv ? static_cast<size_t>(vrows) * n : 1);
  std::vector<int> iwork(std::max(1, 8 * p));
  // The complex routines' real workspace, LAPACK 3.7's bound for every jobz.
  const int big = std::max(m, n);
  std::vector<Real<T>> rwork(
      kIsComplex<T> ? std::max<int64_t>(1, static_cast<int64_t>(p) * std::max(5 * p + 7, 2 * big + 2 * p + 1))
                    : 1);
  const int ldu = std::max(1, m), ldvt = std::max(1, vrows);
  // The singular values are real; the output has the input's dtype (TensorFlow's Svd op; tf.linalg.svd
  // takes their real part).
  std::vector<Real<T>> sv(std::max(1, p));
  T work_size = 0;
  int info = 0;
  if (count > 0)
    gesdd(jobz, m, n, a.data(), sv.data(), u.data(), ldu, vt.data(), ldvt, &work_size, -1, rwork.data(),
          iwork.data(), &info);
  std::vector<T> work(std::max<int64_t>(1, static_cast<int64_t>(std::real(work_size))));
  if (count == 0 && uv && full) {
    // An empty matrix's full U and V are identities (as TensorFlow gives), not whatever the buffers held.
    for (int o = 1; o <= 2; ++o) {
      TensorImpl& out = ctx.output(o);
      const int64_t side = o == 1 ? m64 : n64;
      if (out.num_elements() == 0) continue;
      T* d = out.mutable_data<T>();
      std::fill_n(d, out.num_elements(), T(0));
      for (int64_t k = 0; k < out.num_elements() / (side * side); ++k)
        for (int64_t i = 0; i < side; ++i) d[k * side * side + i * side + i] = T(1);
    }
  }
  for (int64_t b = 0; b < count; ++b) {
    const T* src = in.data<T>() + b * m64 * n64;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) a[static_cast<size_t>(j) * m + i] = src[i * n + j];
    T* s = ctx.output(0).mutable_data<T>() + b * p;
    if (!all_finite(src, m64 * n64)) {  // the decomposition of such a matrix is NaN throughout
      const T nan = nan_of<T>();
      std::fill(s, s + p, nan);
      if (uv) {
        std::fill_n(ctx.output(1).mutable_data<T>() + b * m64 * ucols, m64 * ucols, nan);
        std::fill_n(ctx.output(2).mutable_data<T>() + b * n64 * vrows, n64 * vrows, nan);
      }
      continue;
    }
    gesdd(jobz, m, n, a.data(), sv.data(), u.data(), ldu, vt.data(), ldvt, work.data(),
          static_cast<int>(work.size()), rwork.data(), iwork.data(), &info);
    if (info != 0) return invalid_argument("Svd: the decomposition of matrix ", b, " did not converge");
    std::copy(sv.begin(), sv.begin() + p, s);
    if (!uv) continue;
    T* uo = ctx.output(1).mutable_data<T>() + b * m64 * ucols;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < ucols; ++j) uo[i * ucols + j] = u[static_cast<size_t>(j) * m + i];
    // V = VT^H: VT's column-major buffer, conjugated, is V's row-major one.
    T* vo = ctx.output(2).mutable_data<T>() + b * n64 * vrows;
    for (int64_t i = 0; i < static_cast<int64_t>(n) * vrows; ++i) vo[i] = conj_if_complex(vt[i]);
  }
  return Status::OK();
}

// ---- gradients (as TensorFlow's linalg_grad.py defines them)

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// Note [Complex linalg gradients]: TensorFlow's rules (linalg_grad.py) are written with adjoints (conjugate
// transposes), which are transposes for real matrices; so each rule here is the real one with `adjoint`
// for every transpose and `matmul_adjoint` for every product of transposes, and one rule serves both. Only
// Qr and Svd add terms of their own for complex inputs (the phase freedom of their factors).

GradTensor as_matrix_scale(const GradTensor& s) { return expand_dims(expand_dims(s, -1), -1); }

// C = inv(A): dA = -C^H dC C^H; with adjoint, C = inv(A)^H and dA = -C dC^H C.
void inverse_grad(GradContext& c) {
  const GradTensor ainv = c.output(0), dy = c.grad();
  if (c.attr_bool(0))
    c.set(0, -matmul(matmul_adjoint(ainv, dy, false, true), ainv, false, false));
  else
    c.set(0, -matmul_adjoint(matmul_adjoint(ainv, dy, true, false), ainv, false, true));
}

// d det(A) = det(A) inv(A)^H (for complex A TensorFlow's rule does not conjugate det(A)).
void det_grad(GradContext& c) {
  const GradTensor a = c.input(0), det = c.output(0), dy = c.grad();
  const GradTensor inv_t = emit1("MatrixInverse", {a}, {AttrValue(true)});
  c.set(0, as_matrix_scale(dy * det) * inv_t);
}

// d log|det(A)| = inv(A)^H; the sign is piecewise constant.
void slogdet_grad(GradContext& c) {
  const GradTensor a = c.input(0), dy = c.grad(1);
  if (!dy) return;
  const GradTensor inv_t = emit1("MatrixInverse", {a}, {AttrValue(true)});
  c.set(0, as_matrix_scale(dy) * inv_t);
}

// X = op(A)^-1 B: dB = op(A)^-H dX and dA = -dB X^H (or -X dB^H for the adjoint), reduced over broadcast
// batch dims; a triangular A keeps only its triangle.
template <bool kTriangular>
void solve_grad(GradContext& c) {
  const GradTensor a = c.input(0), b = c.input(1), x = c.output(0), dy = c.grad();
  const bool lower = kTriangular ? c.attr_bool(0) : false;
  const bool adjoint = c.attr_bool(kTriangular ? 1 : 0);
  GradTensor db = kTriangular
                      ? emit1("MatrixTriangularSolve", {a, dy}, {AttrValue(lower), AttrValue(!adjoint)})
                      : emit1("MatrixSolve", {a, dy}, {AttrValue(!adjoint)});
  GradTensor da = adjoint ? -matmul_adjoint(x, db, false, true) : -matmul_adjoint(db, x, false, true);
  if (kTriangular) da = lower ? band(da, -1, 0) : band(da, 0, -1);
  c.set(0, reduce_to(da, a));
  c.set(1, reduce_to(db, b));
}

// A = L L^H: dA = sym(L^-H Phi(L^H dL) L^-1), Phi taking the lower triangle with the diagonal halved.
void cholesky_grad(GradContext& c) {
  const GradTensor l = c.output(0), dl = c.grad();
  const GradTensor middle = matmul_adjoint(l, dl, true, false);
  const GradTensor phi = band(middle, -1, 0) - band(middle, 0, 0) * 0.5;
  // L^-H Phi, then (L^-H (L^-H Phi)^H)^H = L^-H Phi L^-1.
  const GradTensor left = emit1("MatrixTriangularSolve", {l, phi}, {AttrValue(true), AttrValue(true)});
  const GradTensor g =
      adjoint(emit1("MatrixTriangularSolve", {l, adjoint(left)}, {AttrValue(true), AttrValue(true)}));
  c.set(0, (g + adjoint(g)) * 0.5);
}

// A = V diag(e) V^H: dA = V (diag(de) + F o (V^H dV)) V^H with F_ij = 1 / (e_j - e_i) off the diagonal, then
// folded onto the lower triangle TensorFlow reads (diagonal halved after adding the transpose).
void eigh_grad(GradContext& c) {
  const GradTensor e = c.output(0), de = c.grad(0);
  GradTensor v = c.output(1), dv = c.grad(1);
  if (!c.attr_bool(0)) {
    // Eigenvalues only (eigvalsh): the rule needs the vectors, recomputed; none of their gradient flows.
    v = emit("SelfAdjointEigV2", {c.input(0)}, {AttrValue(true)})[1];
    dv = GradTensor();
  }
  GradTensor inner;
  if (dv) {
    const GradTensor diff = expand_dims(e, -2) - expand_dims(e, -1);
    const GradTensor ident = band(ones_like(v), 0, 0);
    // diff / (diff^2 + I) is 1 / diff off the diagonal and 0 on it, without an inf to mask.
    const GradTensor f = diff / (diff * diff + ident);
    inner = f * matmul_adjoint(v, dv, true, false);
  }
  if (de) inner = inner ? inner + diag_of(de) : diag_of(de);
  if (!inner) return;
  GradTensor g = matmul(v, matmul_adjoint(inner, v, false, true), false, false);
  g = band(g + adjoint(g), -1, 0);
  c.set(0, g - band(g, 0, 0) * 0.5);
}

// A = Q R for M >= N with the reduced Q (TensorFlow's rule; a wide or full-matrices QR has none there). For
// complex A, TensorFlow adds a term for the imaginary part of diag(R dR^H - dQ^H Q), which the real rule
// would leave out (R's diagonal is real, so that phase is not free).
void qr_grad(GradContext& c) {
  const GradTensor a = c.input(0), q = c.output(0), r = c.output(1);
  const Shape& as = a.shape();
  const int64_t m = as.dim(as.rank() - 2), n = as.dim(as.rank() - 1);
  if (c.attr_bool(0) && m != n)
    check_ok(make_error(Code::kUnimplemented,
                        "Qr: no gradient for full_matrices=True unless the matrix is square"));
  // With unknown dims a wide matrix is caught at run time: its R is not square for the triangular solves.
  if (m >= 0 && n >= 0 && m < n)
    check_ok(
        make_error(Code::kUnimplemented, "Qr: no gradient for a wide matrix (M < N), got ", as.to_string()));
  const GradTensor dq = c.grad(0) ? c.grad(0) : zeros_like(q);
  const GradTensor dr = c.grad(1) ? c.grad(1) : zeros_like(r);
  const GradTensor qdq = matmul_adjoint(q, dq, true, false);
  const GradTensor rdr = matmul_adjoint(r, dr, false, true);
  const GradTensor tril = band(qdq - adjoint(qdq) + rdr - adjoint(rdr), -1, 0);
  // X R^-H, as (R^-1 X^H)^H.
  auto solve_right = [&](const GradTensor& x) {
    return adjoint(emit1("MatrixTriangularSolve", {r, adjoint(x)}, {AttrValue(false), AttrValue(false)}));
  };
  const GradTensor left = matmul(q, dr + solve_right(tril), false, false);
  const GradTensor right = solve_right(dq - matmul(q, qdq, false, false));
  GradTensor da = left + right;
  if (complex_grad(a)) {
    const GradTensor diag = band(rdr - adjoint(qdq), 0, 0);
    const GradTensor imaginary_diag = diag - cast(unary("Real", diag), a.dtype());
    da = da + solve_right(matmul_adjoint(q, imaginary_diag, false, true));
  }
  c.set(0, da);
}

// A = U diag(s) V^H (TensorFlow's rule, on the reduced factors): with F_ij = 1 / (s_j^2 - s_i^2) off the
// diagonal, dA = U (diag(ds) + (F o U^H dU + its adjoint) S + S (F o V^H dV + its adjoint)) V^H, plus
// U S^-1 (dV^H - dV^H V V^H) when M < N; a tall matrix is handled as its adjoint. For complex A (whose s
// holds real values in A's dtype), TensorFlow adds U S^-1 (L^H - L) V^H / 2 with L = I o (V^H dV).
void svd_grad(GradContext& c) {
  const GradTensor a = c.input(0);
  const Shape& as = a.shape();
  if (!as.rank_known())
    check_ok(make_error(Code::kUnimplemented, "Svd: the gradient needs the rank of the input"));
  const GradTensor ds = c.grad(0);
  const int64_t m = as.dim(as.rank() - 2), n = as.dim(as.rank() - 1);
  const bool uv = c.attr_bool(0);
  if (!uv) {
    // Only s was computed: its gradient U diag(ds) V^H needs the vectors, recomputed.
    auto outs = emit("Svd", {a}, {AttrValue(true), AttrValue(false)});
    c.set(0, matmul_adjoint(outs[1] * expand_dims(ds, -2), outs[2], false, true));
    return;
  }
  if (c.attr_bool(1) && (m != n || m < 0))
    check_ok(make_error(Code::kUnimplemented,
                        "Svd: no gradient for full_matrices=True with a non-square matrix, got ",
                        as.to_string()));
  auto oriented = [&](bool tall) {
    const GradTensor s = c.output(0);
    const GradTensor u = tall ? c.output(2) : c.output(1), v = tall ? c.output(1) : c.output(2);
    const GradTensor du = tall ? c.grad(2) : c.grad(1), dv = tall ? c.grad(1) : c.grad(2);
    const GradTensor s2 = s * s;
    const GradTensor diff = expand_dims(s2, -2) - expand_dims(s2, -1);
    const GradTensor f = diff / (diff * diff + diag_of(ones_like(s)));
    const GradTensor vdv = matmul_adjoint(v, dv, true, false);
    const GradTensor fu = f * matmul_adjoint(u, du, true, false), fv = f * vdv;
    const GradTensor s_row = expand_dims(s, -2), s_col = expand_dims(s, -1);
    GradTensor inner = diag_of(ds) + (fu + adjoint(fu)) * s_row + s_col * (fv + adjoint(fv));
    if (complex_grad(a)) {
      const GradTensor l = band(vdv, 0, 0);
      inner = inner + (adjoint(l) - l) / s_col * 0.5;
    }
    GradTensor g = matmul(u, matmul_adjoint(inner, v, false, true), false, false);
    if (m != n || m < 0) {  // zero for a square matrix, where V V^H = I
      const GradTensor dvh = adjoint(dv);
      const GradTensor rest = dvh - matmul_adjoint(matmul(dvh, v, false, false), v, false, true);
      g = g + matmul(u / s_row, rest, false, false);
    }
    return tall ? adjoint(g) : g;
  };
  if (m >= 0 && n >= 0) {
    c.set(0, oriented(m > n));
    return;
  }
  // Dims unknown while tracing: both orientations are well-formed; the run-time shape picks one.
  const int r = as.rank();
  const GradTensor is_tall = compare("Greater", dims_product(a, r - 2, r - 1), dims_product(a, r - 1, r));
  c.set(0, select(is_tall, oriented(true), oriented(false)));
}

void band_part_grad(GradContext& c) { c.set(0, emit1("MatrixBandPart", {c.grad(), c.input(1), c.input(2)})); }

template <typename T>
struct Inverse {
  static Status run(KernelContext& ctx) { return inverse_kernel<T>(ctx); }
};
template <typename T>
struct Chol {
  static Status run(KernelContext& ctx) { return cholesky_kernel<T>(ctx); }
};
template <typename T>
struct Det {
  static Status run(KernelContext& ctx) { return det_kernel<T, false>(ctx); }
};
template <typename T>
struct LogDet {
  static Status run(KernelContext& ctx) { return det_kernel<T, true>(ctx); }
};
template <typename T>
struct Solve {
  static Status run(KernelContext& ctx) { return solve_kernel<T, false>(ctx); }
};
template <typename T>
struct Eigh {
  static Status run(KernelContext& ctx) { return eigh_kernel<T>(ctx); }
};
template <typename T>
struct QrK {
  static Status run(KernelContext& ctx) { return qr_kernel<T>(ctx); }
};
template <typename T>
struct SvdK {
  static Status run(KernelContext& ctx) { return svd_kernel<T>(ctx); }
};
template <typename T>
struct TriSolve {
  static Status run(KernelContext& ctx) { return solve_kernel<T, true>(ctx); }
};

}  // namespace

void register_lapack_ops(OpRegistry& r) {
  single_threaded_lapack();
  {
    OpBuilder b("MatrixInverse");
    b.doc(
         "Inverse of each square matrix; singular raises. inv([[2., 0.], [0., 4.]]) == [[.5, 0.], [0., .25]]")
        .input("input")
        .output("output")
        .type_var(kLapackTypes)
        .attr("adjoint", AttrType::kBool, false)
        .shape(&square_same_shape)
        .grad(&inverse_grad)
        .batching(BatchingRule::kFallback);
    lapack_kernels<Inverse>(b);
    b.done(r);
  }
  {
    OpBuilder b("Cholesky");
    b.doc(
         "Lower Cholesky factor L of each symmetric positive definite matrix (A = L L^T). cholesky([[4.]]) "
         "== [[2.]]")
        .input("input")
        .output("output")
        .type_var(kLapackTypes)
        .shape(&square_same_shape)
        .grad(&cholesky_grad)
        .batching(BatchingRule::kElementwise);
    lapack_kernels<Chol>(b);
    b.done(r);
  }
  {
    OpBuilder b("MatrixDeterminant");
    b.doc("Determinant of each square matrix. det([[1., 2.], [3., 4.]]) == -2.")
        .input("input")
        .output("output")
        .type_var(kLapackTypes)
        .shape(&det_shape)
        .grad(&det_grad)
        .batching(BatchingRule::kElementwise);
    lapack_kernels<Det>(b);
    b.done(r);
  }
  {
    OpBuilder b("LogMatrixDeterminant");
    b.doc("Sign and log of the absolute determinant of each square matrix. slogdet([[-2.]]) == (-1., log 2)")
        .input("input")
        .output("sign")
        .output("log_abs_determinant")
        .type_var(kLapackTypes)
        .shape(&det_shape)
        .grad(&slogdet_grad)
        .batching(BatchingRule::kElementwise);
    lapack_kernels<LogDet>(b);
    b.done(r);
  }
  {
    OpBuilder b("MatrixSolve");
    b.doc("X with A X = B (adjoint: A^T X = B) for each matrix of the batch. solve([[2.]], [[4.]]) == [[2.]]")
        .input("matrix")
        .input("rhs")
        .output("output")
        .type_var(kLapackTypes)
        .attr("adjoint", AttrType::kBool, false)
        .shape(&solve_shape)
        .grad(&solve_grad<false>)
        .batching(BatchingRule::kFallback);
    lapack_kernels<Solve>(b);
    b.done(r);
  }
  {
    OpBuilder b("MatrixTriangularSolve");
    b.doc(
         "X with A X = B for triangular A (lower or upper; adjoint: A^T X = B); batch dims broadcast. "
         "triangular_solve([[2.]], [[4.]]) == [[2.]]")
        .input("matrix")
        .input("rhs")
        .output("output")
        .type_var(kLapackTypes)
        .attr("lower", AttrType::kBool, true)
        .attr("adjoint", AttrType::kBool, false)
        .shape(&solve_shape)
        .grad(&solve_grad<true>)
        .batching(BatchingRule::kFallback);
    lapack_kernels<TriSolve>(b);
    b.done(r);
  }
  {
    OpBuilder b("SelfAdjointEigV2");
    b.doc(
         "Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix, from its lower "
         "triangle. "
         "eigh([[2., 0.], [0., 1.]]) == ([1., 2.], [[0., 1.], [1., 0.]])")
        .input("input")
        .output("e")
        .output("v")
        .type_var(kLapackTypes)
        .attr("compute_v", AttrType::kBool, true)
        .shape(&eigh_shape)
        .grad(&eigh_grad)
        .batching(BatchingRule::kFallback);
    lapack_kernels<Eigh>(b);
    b.done(r);
  }
  {
    OpBuilder b("Qr");
    b.doc(
         "QR factorization of each matrix: orthonormal columns Q and upper-triangular R. "
         "qr([[3.], [4.]]) == ([[-.6], [-.8]], [[-5.]])")
        .input("input")
        .output("q")
        .output("r")
        .type_var(kLapackTypes)
        .attr("full_matrices", AttrType::kBool, false)
        .shape(&qr_shape)
        .grad(&qr_grad)
        .batching(BatchingRule::kFallback);
    lapack_kernels<QrK>(b);
    b.done(r);
  }
  {
    OpBuilder b("Svd");
    b.doc(
         "Singular values (descending) and vectors of each matrix: A = U diag(s) V^T. "
         "svd([[3., 0.], [0., 4.]]).s == [4., 3.]")
        .input("input")
        .output("s")
        .output("u")
        .output("v")
        .type_var(kLapackTypes)
        .attr("compute_uv", AttrType::kBool, true)
        .attr("full_matrices", AttrType::kBool, false)
        .shape(&svd_shape)
        .grad(&svd_grad)
        .batching(BatchingRule::kFallback);
    lapack_kernels<SvdK>(b);
    b.done(r);
  }
  {
    OpBuilder b("MatrixBandPart");
    b.doc(
         "Zeroes each matrix outside a band of num_lower sub- and num_upper super-diagonals (negative: all). "
         "band_part([[1., 2.], [3., 4.]], 0, -1) == [[1., 2.], [0., 4.]]")
        .input("input")
        .input_fixed("num_lower", kIndexTypes)
        .input_fixed("num_upper", kIndexTypes)
        .output("band")
        .type_var(kAllTypesAndComplex)
        .shape(&band_part_shape)
        .grad(&band_part_grad)
        .batching(BatchingRule::kFallback);
    b.kernel(kAllTypesAndComplex, &band_part_kernel);
    b.done(r);
  }
}

}  // namespace ember

// Matrix functions from the complex Schur form A = Q T Q^H (LAPACK gees), f(A) = Q f(T) Q^H with f(T) upper
// triangular (docs/linalg.md): MatrixSquareRoot (tf.linalg.sqrtm; the root by the column recurrence of Björck
// and Hammarling) and MatrixLogarithm (tf.linalg.logm, complex only as TensorFlow's; inverse scaling and
// squaring: square roots until T is near I, then Gauss-Legendre quadrature of log(I + X)). Registered from
// register_linalg_ops (linalg.cc).
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "ember/ops/linalg_lapack.h"

using ember::linalg::cdouble;
using ember::linalg::cfloat;

extern "C" {
using CSelect = int (*)(const cfloat*);
using ZSelect = int (*)(const cdouble*);
void cgees_(const char* jobvs, const char* sort, CSelect select, const int* n, cfloat* a, const int* lda,
            int* sdim, cfloat* w, cfloat* vs, const int* ldvs, cfloat* work, const int* lwork, float* rwork,
            int* bwork, int* info);
void zgees_(const char* jobvs, const char* sort, ZSelect select, const int* n, cdouble* a, const int* lda,
            int* sdim, cdouble* w, cdouble* vs, const int* ldvs, cdouble* work, const int* lwork,
            double* rwork, int* bwork, int* info);
}

namespace ember {
namespace {

using namespace linalg;  // NOLINT(google-build-using-namespace): the shared LAPACK helpers

void gees(int n, cfloat* a, cfloat* w, cfloat* vs, cfloat* work, int lwork, float* rwork, int* info) {
  const char jobvs = 'V', sort = 'N';
  int sdim = 0, bwork = 0;
  cgees_(&jobvs, &sort, nullptr, &n, a, &n, &sdim, w, vs, &n, work, &lwork, rwork, &bwork, info);
}
void gees(int n, cdouble* a, cdouble* w, cdouble* vs, cdouble* work, int lwork, double* rwork, int* info) {
  const char jobvs = 'V', sort = 'N';
  int sdim = 0, bwork = 0;
  zgees_(&jobvs, &sort, nullptr, &n, a, &n, &sdim, w, vs, &n, work, &lwork, rwork, &bwork, info);
}

// The complex Schur form of the column-major matrix `t`: T overwrites it, Q goes to `q`, the eigenvalues
// (T's diagonal) to `w`. False where it did not converge.
template <typename C>
bool schur(int n, C* t, std::vector<C>& q, std::vector<C>& w) {
  C work_size = 0;
  std::vector<Real<C>> rwork(n);
  int info = 0;
  gees(n, t, w.data(), q.data(), &work_size, -1, rwork.data(), &info);
  std::vector<C> work(std::max(1, static_cast<int>(std::real(work_size))));
  gees(n, t, w.data(), q.data(), work.data(), static_cast<int>(work.size()), rwork.data(), &info);
  return info == 0;
}

// The upper triangular R with R^2 = T, column by column: r_jj = sqrt(t_jj), then upwards
// r_ij = (t_ij - sum_{i<k<j} r_ik r_kj) / (r_ii + r_jj). Column-major, R may not alias T.
template <typename C>
void triangular_sqrt(int n, const C* t, C* r) {
  std::fill(r, r + static_cast<size_t>(n) * n, C(0));
  for (int j = 0; j < n; ++j) {
    r[j + j * n] = std::sqrt(t[j + j * n]);
    for (int i = j - 1; i >= 0; --i) {
      C s = t[i + j * n];
      for (int k = i + 1; k < j; ++k) s -= r[i + k * n] * r[k + j * n];
      r[i + j * n] = s / (r[i + i * n] + r[j + j * n]);
    }
  }
}

// out = Q F Q^H for upper triangular F (column-major).
template <typename C>
void unitary_similarity(int n, const std::vector<C>& q, const C* f, C* out) {
  std::vector<C> qf(static_cast<size_t>(n) * n, C(0));
  for (int j = 0; j < n; ++j)
    for (int k = 0; k <= j; ++k)
      for (int i = 0; i < n; ++i) qf[i + j * n] += q[i + k * n] * f[k + j * n];
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      C s = 0;
      for (int k = 0; k < n; ++k) s += qf[i + k * n] * std::conj(q[j + k * n]);
      out[i + j * n] = s;
    }
}

// The principal square root of one column-major matrix `t` (overwritten with it), as a complex matrix.
template <typename C>
bool complex_sqrtm(int n, C* t, std::vector<C>& q, std::vector<C>& r, std::vector<C>& w) {
  if (!schur(n, t, q, w)) return false;
  triangular_sqrt(n, t, r.data());
  unitary_similarity(n, q, r.data(), t);
  return true;
}

// The principal logarithm of one column-major complex matrix `t` (overwritten with it). Inverse scaling and
// squaring: T^(1/2^s) by repeated triangular square roots until its distance from I is at most 1/4 (in
// the 1-norm), then log(I + X) = integral_0^1 X (I + u X)^-1 du by 8-point Gauss-Legendre quadrature (exact
// to far below rounding there), times 2^s. A singular matrix has no logarithm: NaN, as TensorFlow's.
template <typename C>
bool complex_logm(int n, C* t, std::vector<C>& q, std::vector<C>& w) {
  using R = Real<C>;
  if (!schur(n, t, q, w)) return false;
  for (const C& e : w)
    if (e == C(0)) return false;
  const size_t size = static_cast<size_t>(n) * n;
  std::vector<C> x(t, t + size), root(size);
  auto distance_from_identity = [&] {
    R norm = 0;
    for (int j = 0; j < n; ++j) {
      R column = 0;
      for (int i = 0; i <= j; ++i) column += std::abs(x[i + j * n] - C(i == j ? 1 : 0));
      norm = std::max(norm, column);
    }
    return norm;
  };
  int squarings = 0;
  while (distance_from_identity() > R(0.25) && squarings < 64) {
    triangular_sqrt(n, x.data(), root.data());
    x.swap(root);
    ++squarings;
  }
  for (int i = 0; i < n; ++i) x[i + i * n] -= C(1);  // X = T^(1/2^s) - I
  // Gauss-Legendre nodes and weights on [-1, 1], mapped to [0, 1].
  static constexpr double kNodes[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267,
                                       0.9602898564975363};
  static constexpr double kWeights[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745,
                                         0.1012285362903763};
  std::vector<C> log(size, C(0)), y(size);
  for (int node = 0; node < 8; ++node) {
    const double sign = node < 4 ? -1.0 : 1.0;
    const R u = static_cast<R>((1.0 + sign * kNodes[node % 4]) / 2),
            weight = static_cast<R>(kWeights[node % 4] / 2);
    // Y = (I + u X)^-1 X, upper triangular: back substitution column by column.
    for (int c = 0; c < n; ++c)
      for (int i = n - 1; i >= 0; --i) {
        C s = i <= c ? x[i + c * n] : C(0);
        for (int k = i + 1; k <= c; ++k) s -= u * x[i + k * n] * y[k + c * n];
        y[i + c * n] = s / (C(1) + u * x[i + i * n]);
      }
    for (size_t k = 0; k < size; ++k) log[k] += weight * y[k];
  }
  const R scale = std::ldexp(R(1), squarings);
  for (C& v : log) v *= scale;
  unitary_similarity(n, q, log.data(), t);
  return true;
}

template <typename T>
Status sqrtm_kernel(KernelContext& ctx) {
  using C = std::complex<Real<T>>;
  auto b_or = batch_of_square("MatrixSquareRoot", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const int n = static_cast<int>(b.n);
  std::vector<C> a(b.n * b.n), q(b.n * b.n), r(b.n * b.n), w(b.n);
  for (int64_t m = 0; m < b.count; ++m) {
    const T* src = ctx.input(0).data<T>() + m * b.n * b.n;
    T* out = ctx.output(0).mutable_data<T>() + m * b.n * b.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a[i + j * n] = src[i * n + j];
    bool finite = true;
    for (const C& x : a) finite = finite && std::isfinite(x.real()) && std::isfinite(x.imag());
    if (!finite || !complex_sqrtm(n, a.data(), q, r, w)) {
      std::fill(out, out + b.n * b.n, T(std::numeric_limits<Real<T>>::quiet_NaN()));
      continue;
    }
    bool real_root = true;
    if constexpr (!kIsComplex<T>) {
      // As TensorFlow's (Eigen's real Schur form): a real matrix with a negative real eigenvalue has no real
      // principal square root, and the whole result is NaN. A real eigenvalue may carry a rounding-sized
      // imaginary part in the complex Schur form.
      Real<T> scale = 0;
      for (const C& e : w) scale = std::max(scale, std::abs(e));
      const Real<T> tiny = 64 * std::numeric_limits<Real<T>>::epsilon() * scale;
      for (const C& e : w) real_root = real_root && !(e.real() < 0 && std::abs(e.imag()) <= tiny);
    }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if constexpr (kIsComplex<T>)
          out[i * n + j] = a[i + j * n];
        else
          out[i * n + j] = real_root ? a[i + j * n].real() : std::numeric_limits<T>::quiet_NaN();
      }
  }
  return Status::OK();
}

template <typename C>
Status logm_kernel(KernelContext& ctx) {
  auto b_or = batch_of_square("MatrixLogarithm", ctx.input(0));
  if (!b_or.ok()) return b_or.status();
  const Batch b = *b_or;
  const int n = static_cast<int>(b.n);
  std::vector<C> a(b.n * b.n), q(b.n * b.n), w(b.n);
  for (int64_t m = 0; m < b.count; ++m) {
    const C* src = ctx.input(0).data<C>() + m * b.n * b.n;
    C* out = ctx.output(0).mutable_data<C>() + m * b.n * b.n;
    bool finite = true;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        a[i + j * n] = src[i * n + j];
        finite = finite && std::isfinite(a[i + j * n].real()) && std::isfinite(a[i + j * n].imag());
      }
    if (!finite || !complex_logm(n, a.data(), q, w)) {
      const Real<C> nan = std::numeric_limits<Real<C>>::quiet_NaN();
      std::fill(out, out + b.n * b.n, C(nan, nan));
      continue;
    }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) out[i * n + j] = a[i + j * n];
  }
  return Status::OK();
}

Status schur_function_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_square(ctx.op->name, ctx.inputs[0].shape));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// The Kronecker products of two batches of [n, n] matrices flattened to [b, n, n]: [b, n*n, n*n].
GradTensor kronecker(const GradTensor& x, const GradTensor& y, const GradTensor& n) {
  const GradTensor minus_one = scalar(-1, n.dtype()), one = scalar(1, n.dtype());
  const GradTensor xs = reshape_to(x, stack_ints({minus_one, n, one, n, one}));
  const GradTensor ys = reshape_to(y, stack_ints({minus_one, one, n, one, n}));
  return reshape_to(xs * ys, stack_ints({minus_one, n * n, n * n}));
}

// TensorFlow's rule: X = sqrtm(A) gives X dX + dX X = dA, so dA solves the Sylvester equation
// X^T D + D X^T = dX, written as the n^2 x n^2 system (I kron X^T + X kron I) vec(D^T) = vec(dX^T) and solved
// with MatrixSolve (transposes, not adjoints, for complex matrices, as TensorFlow's).
void sqrtm_grad(GradContext& c) {
  const GradTensor x = c.output(0), dx = c.grad();
  if (!x.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, "MatrixSquareRoot: the gradient needs the rank of its input"));
  const int rank = x.rank();
  const GradTensor n = dims_product(x, rank - 1, rank);
  const GradTensor minus_one = scalar(-1, n.dtype());
  const GradTensor flat = reshape_to(x, stack_ints({minus_one, n, n}));
  const GradTensor identity = band(ones_like(flat), 0, 0);
  const GradTensor system = kronecker(identity, transpose_last(flat), n) + kronecker(flat, identity, n);
  const GradTensor rhs = reshape_to(transpose_last(reshape_to(dx, stack_ints({minus_one, n, n}))),
                                    stack_ints({minus_one, n * n, scalar(1, n.dtype())}));
  const GradTensor solved = emit1("MatrixSolve", {system, rhs}, {AttrValue(false)});
  c.set(0, reshape_like(transpose_last(reshape_to(solved, stack_ints({minus_one, n, n}))), x));
}

template <typename T>
struct SqrtmK {
  static Status run(KernelContext& ctx) { return sqrtm_kernel<T>(ctx); }
};

}  // namespace

void register_schur_function_ops(OpRegistry& r) {
  single_threaded_lapack();
  OpBuilder b("MatrixSquareRoot");
  b.doc(
       "Principal square root of each square matrix (X X = A). sqrtm([[4., 0.], [0., 9.]]) == [[2., 0.], "
       "[0., 3.]]")
      .input("input")
      .output("output")
      .type_var(kLapackTypes)
      .shape(&schur_function_shape)
      .grad(&sqrtm_grad)
      .batching(BatchingRule::kElementwise);
  lapack_kernels<SqrtmK>(b);
  b.done(r);
  OpBuilder("MatrixLogarithm")
      .doc(
          "Principal logarithm of each square complex matrix (expm(X) = A); singular: NaN. "
          "logm([[1.+0.j, 0.], [0., 1.]]) == 0")
      .input("input")
      .output("output")
      .type_var(kComplexTypes)
      .shape(&schur_function_shape)
      // TensorFlow 2.21 registers no gradient for MatrixLogarithm (its tape raises LookupError).
      .flags(kNotDifferentiable)
      .kernel(DType::kComplex64, &logm_kernel<cfloat>)
      .kernel(DType::kComplex128, &logm_kernel<cdouble>)
      .batching(BatchingRule::kElementwise)
      .done(r);
}

}  // namespace ember

// TridiagonalSolve (tf.linalg.tridiagonal_solve): X with A X = B for tridiagonal A given by its three
// diagonals in TensorFlow's compact form [..., 3, M] (superdiagonal, whose last entry is unused; diagonal;
// subdiagonal, whose first entry is unused). Partial pivoting runs LAPACK's gtsv; without it the Thomas
// algorithm, as TensorFlow's. Registered from register_linalg_ops (linalg.cc).
#include <complex>
#include <limits>
#include <vector>

#include "ember/ops/linalg_lapack.h"

using ember::linalg::cdouble;
using ember::linalg::cfloat;

extern "C" {
void sgtsv_(const int* n, const int* nrhs, float* dl, float* d, float* du, float* b, const int* ldb,
            int* info);
void dgtsv_(const int* n, const int* nrhs, double* dl, double* d, double* du, double* b, const int* ldb,
            int* info);
void cgtsv_(const int* n, const int* nrhs, cfloat* dl, cfloat* d, cfloat* du, cfloat* b, const int* ldb,
            int* info);
void zgtsv_(const int* n, const int* nrhs, cdouble* dl, cdouble* d, cdouble* du, cdouble* b, const int* ldb,
            int* info);
}

namespace ember {
namespace {

using namespace linalg;  // NOLINT(google-build-using-namespace): the shared LAPACK helpers

void gtsv(int n, int nrhs, float* dl, float* d, float* du, float* b, int* info) {
  sgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
}
void gtsv(int n, int nrhs, double* dl, double* d, double* du, double* b, int* info) {
  dgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
}
void gtsv(int n, int nrhs, cfloat* dl, cfloat* d, cfloat* du, cfloat* b, int* info) {
  cgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
}
void gtsv(int n, int nrhs, cdouble* dl, cdouble* d, cdouble* du, cdouble* b, int* info) {
  zgtsv_(&n, &nrhs, dl, d, du, b, &n, info);
}

// diagonals [..., 3, M], rhs [..., M, K] with equal batch dims -> [..., M, K].
Status tridiagonal_shape(InferContext& ctx) {
  const Shape &diags = ctx.inputs[0].shape, &rhs = ctx.inputs[1].shape;
  if (diags.rank_known() && rhs.rank_known()) {
    const int r = diags.rank();
    bool ok = r >= 2 && rhs.rank() == r && (diags.dim(r - 2) < 0 || diags.dim(r - 2) == 3) &&
              (diags.dim(r - 1) < 0 || rhs.dim(r - 2) < 0 || diags.dim(r - 1) == rhs.dim(r - 2));
    for (int d = 0; ok && d < r - 2; ++d)
      ok = diags.dim(d) < 0 || rhs.dim(d) < 0 || diags.dim(d) == rhs.dim(d);
    if (!ok)
      return invalid_argument(
          "TridiagonalSolve: expected diagonals [..., 3, M] and rhs [..., M, K] with the same "
          "batch dims, got ",
          diags.to_string(), " and ", rhs.to_string());
  }
  ctx.outputs.push_back(ctx.inputs[1]);
  return Status::OK();
}

template <typename T>
Status tridiagonal_kernel(KernelContext& ctx) {
  const TensorImpl &diags = ctx.input(0), &rhs = ctx.input(1);
  const int r = diags.rank();
  if (r < 2 || rhs.rank() != r || diags.shape().dim(r - 2) != 3 ||
      diags.shape().dim(r - 1) != rhs.shape().dim(r - 2))
    return invalid_argument("TridiagonalSolve: expected diagonals [..., 3, M] and rhs [..., M, K], got ",
                            diags.shape().to_string(), " and ", rhs.shape().to_string());
  const int64_t m = rhs.shape().dim(r - 2), k = rhs.shape().dim(r - 1);
  EMBER_RETURN_IF_ERROR(check_size("TridiagonalSolve", m * std::max<int64_t>(k, 1)));
  const int64_t count = m * k == 0 ? 0 : rhs.num_elements() / (m * k);
  const bool pivoting = ctx.attr_bool(0), perturb = ctx.attr_bool(1);
  const int n = static_cast<int>(m), nrhs = static_cast<int>(k);
  std::vector<T> dl(m), d(m), du(m), b(m * k);
  for (int64_t batch = 0; batch < count; ++batch) {
    const T* diag = diags.data<T>() + batch * 3 * m;
    const T* src = rhs.data<T>() + batch * m * k;
    T* out = ctx.output(0).mutable_data<T>() + batch * m * k;
    for (int64_t i = 0; i < m; ++i) {
      du[i] = diag[i];
      d[i] = diag[m + i];
      dl[i] = diag[2 * m + i];
    }
    bool singular = false;
    if (pivoting) {
      // gtsv wants the sub- and superdiagonal as their M - 1 entries: dl from index 1, du from 0.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) b[i + j * m] = src[i * k + j];
      int info = 0;
      gtsv(n, nrhs, dl.data() + 1, d.data(), du.data(), b.data(), &info);
      singular = info > 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) out[i * k + j] = b[i + j * m];
    } else {
      // Thomas algorithm: forward elimination without row exchanges, then back substitution (a zero pivot
      // gives inf/NaN, as TensorFlow's).
      std::vector<T> c(m);
      for (int64_t j = 0; j < m * k; ++j) out[j] = src[j];
      for (int64_t i = 0; i < m; ++i) {
        const T pivot = i == 0 ? d[0] : d[i] - dl[i] * c[i - 1];
        singular = singular || pivot == T(0);
        c[i] = i + 1 < m ? du[i] / pivot : T(0);
        for (int64_t j = 0; j < k; ++j)
          out[i * k + j] = (out[i * k + j] - (i == 0 ? T(0) : dl[i] * out[(i - 1) * k + j])) / pivot;
      }
      for (int64_t i = m - 2; i >= 0; --i)
        for (int64_t j = 0; j < k; ++j) out[i * k + j] -= c[i] * out[(i + 1) * k + j];
    }
    if (singular && perturb)
      return make_error(Code::kUnimplemented, "TridiagonalSolve: matrix ", batch,
                        " is singular; perturb_singular's perturbed pivots are not implemented in ember");
    if (singular && pivoting)  // as TensorFlow's: NaN for a singular matrix, no error
      for (int64_t j = 0; j < m * k; ++j) out[j] = T(std::numeric_limits<Real<T>>::quiet_NaN());
  }
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// x shifted by one along `axis` (negative, from the end) with zeros filling the gap: towards index 0 (row i
// then holds row i + 1) or away from it.
GradTensor shift(const GradTensor& x, int axis, bool towards_zero) {
  const int rank = x.rank(), a = rank + axis;
  std::vector<int64_t> pad(2 * rank, 0), begin(rank, 0);
  pad[2 * a + (towards_zero ? 1 : 0)] = 1;
  if (towards_zero) begin[a] = 1;
  const GradTensor paddings = reshape(cast(int_vector(pad), DType::kInt32), {rank, 2});
  const GradTensor padded = emit1("Pad", {x, paddings});
  return emit1("Slice", {padded, cast(int_vector(begin), DType::kInt32), shape_of(x)});
}

// The [3, 1] column selecting row `row` of a [..., 3, M] tensor by broadcasting.
GradTensor row_mask(int row, DType dtype) {
  std::vector<int64_t> mask(3, 0);
  mask[row] = 1;
  return reshape(cast(int_vector(mask), dtype), {3, 1});
}

// TensorFlow's rule: with A^T in compact form (A^T's superdiagonal is A's subdiagonal shifted towards 0,
// its subdiagonal A's superdiagonal shifted away), dB = TridiagonalSolve(A^T, dX) and dA's three diagonals
// are those of -dB X^T: sum_k dB[i, k] X[i + 1, k], sum_k dB[i, k] X[i, k], sum_k dB[i, k] X[i - 1, k]
// (transposes, not adjoints, for complex matrices, as TensorFlow's).
void tridiagonal_grad(GradContext& c) {
  const GradTensor diags = c.input(0), x = c.output(0), dx = c.grad();
  if (!diags.shape().rank_known() || !x.shape().rank_known())
    check_ok(
        make_error(Code::kUnimplemented, "TridiagonalSolve: the gradient needs the ranks of its inputs"));
  const DType dt = diags.dtype();
  const int64_t row_axis = diags.rank() - 2;
  const GradTensor rows_axis = cast(int_vector(std::vector<int64_t>{row_axis}), DType::kInt32);
  const GradTensor left = emit1("ReverseV2", {shift(diags, -1, true), rows_axis});
  const GradTensor right = emit1("ReverseV2", {shift(diags, -1, false), rows_axis});
  const GradTensor transposed = left * row_mask(0, dt) + diags * row_mask(1, dt) + right * row_mask(2, dt);
  const GradTensor db =
      emit1("TridiagonalSolve", {transposed, dx}, {AttrValue(c.attr_bool(0)), AttrValue(c.attr_bool(1))});
  auto diagonal = [&](const GradTensor& y) { return expand_dims(sum(db * y, {-1}, false), -2); };
  const GradTensor ddiags = diagonal(shift(x, -2, true)) * row_mask(0, dt) + diagonal(x) * row_mask(1, dt) +
                            diagonal(shift(x, -2, false)) * row_mask(2, dt);
  c.set(0, -ddiags);
  c.set(1, db);
}

template <typename T>
struct TridiagonalK {
  static Status run(KernelContext& ctx) { return tridiagonal_kernel<T>(ctx); }
};

}  // namespace

void register_tridiagonal_solve_op(OpRegistry& r) {
  single_threaded_lapack();
  OpBuilder b("TridiagonalSolve");
  b.doc(
       "X with A X = rhs for tridiagonal A given as diagonals [..., 3, M] (super, main, sub). "
       "tridiagonal_solve([[1., 0.], [2., 4.], [0., 1.]], [[2.], [4.]]) == [[1.], [1.]]")
      .input("diagonals")
      .input("rhs")
      .output("output")
      .type_var(kLapackTypes)
      .attr("partial_pivoting", AttrType::kBool, true)
      .attr("perturb_singular", AttrType::kBool, false)
      .shape(&tridiagonal_shape)
      .grad(&tridiagonal_grad)
      .batching(BatchingRule::kFallback);
  lapack_kernels<TridiagonalK>(b);
  b.done(r);
}

}  // namespace ember

// The complex matrix product through CBLAS (Debian's libblas.so.3 is OpenBLAS when libopenblas-dev is
// installed: cgemm/zgemm, multithreaded inside).
#include <cblas.h>

#include <algorithm>
#include <complex>
#include <vector>

#include "ember/kernels/complex.h"

namespace ember::kernels {
namespace {

// For each output batch, the index of the operand matrix it reads (broadcast dims contribute 0).
std::vector<int64_t> batch_index(const Shape& operand, const Shape& out) {
  const int nd = out.rank(), lead = nd - operand.rank();
  int64_t batch = 1;
  for (int d = 0; d < nd - 2; ++d) batch *= out.dim(d);
  std::vector<int64_t> map(batch);
  for (int64_t ob = 0; ob < batch; ++ob) {
    int64_t rem = ob, idx = 0, stride = 1;
    for (int d = nd - 3; d >= 0; --d) {
      const int64_t i = rem % out.dim(d);
      rem /= out.dim(d);
      const int od = d - lead;
      const int64_t dim = od >= 0 ? operand.dim(od) : 1;
      idx += (dim == 1 ? 0 : i) * stride;
      stride *= dim;
    }
    map[ob] = idx;
  }
  return map;
}

template <typename C>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const C* a, int64_t lda, const C* b, int64_t ldb,
          C* c) {
  const C one(1), zero(0);
  const CBLAS_TRANSPOSE op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<C, complex64>)
    cblas_cgemm(CblasRowMajor, op_a, op_b, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  else
    cblas_zgemm(CblasRowMajor, op_a, op_b, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
}

template <typename C>
void run(const TensorImpl& a, const TensorImpl& b, bool ta, bool tb, TensorImpl& out) {
  const int ra = a.rank(), rb = b.rank(), ro = out.rank();
  const int64_t a_rows = a.shape().dim(ra - 2), a_cols = a.shape().dim(ra - 1);
  const int64_t b_rows = b.shape().dim(rb - 2), b_cols = b.shape().dim(rb - 1);
  const int64_t m = out.shape().dim(ro - 2), n = out.shape().dim(ro - 1), k = ta ? a_rows : a_cols;
  const std::vector<int64_t> ia = batch_index(a.shape(), out.shape()),
                             ib = batch_index(b.shape(), out.shape());
  const C* pa = a.data<C>();
  const C* pb = b.data<C>();
  C* po = out.mutable_data<C>();
  for (size_t i = 0; i < ia.size(); ++i)
    gemm<C>(ta, tb, m, n, k, pa + ia[i] * a_rows * a_cols, a_cols, pb + ib[i] * b_rows * b_cols, b_cols,
            po + static_cast<int64_t>(i) * m * n);
}

}  // namespace

Status complex_matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b,
                      TensorImpl& out) {
  if (out.num_elements() == 0) return Status::OK();
  const int64_t k = transpose_a ? a.shape().dim(a.rank() - 2) : a.shape().dim(a.rank() - 1);
  if (k == 0) {
    std::fill_n(static_cast<char*>(out.mutable_raw_data()), out.nbytes(), 0);  // an empty sum is zero
    return Status::OK();
  }
  if (a.dtype() == DType::kComplex64)
    run<complex64>(a, b, transpose_a, transpose_b, out);
  else
    run<complex128>(a, b, transpose_a, transpose_b, out);
  return Status::OK();
}

}  // namespace ember::kernels

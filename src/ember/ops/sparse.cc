// Kernels of tf.sparse that TensorFlow runs as ops of their own: SparseTensorDenseMatMul
// (tf.sparse.sparse_dense_matmul), SparseToDense (tf.sparse.to_dense), SparseAdd with its gradient op
// SparseAddGrad (tf.sparse.add of two SparseTensors) and SparseReshape (tf.sparse.reshape). A SparseTensor
// is its indices (int64 [nnz, rank]), values ([nnz]) and dense shape (int64 [rank]); the Python package
// (python/ember/sparse/) passes these components. The other tf.sparse functions are composed there of
// registry ops (docs/composite.md). Registered from register_array_index_ops (array_index.cc).
#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kMatMulTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

// ---- SparseTensorDenseMatMul(a_indices [nnz, 2], a_values [nnz], a_shape [2], b [k, n];
//      adjoint_a, adjoint_b) = op(A) @ op(B), A the sparse matrix.

Status sparse_matmul_shape(InferContext& ctx) {
  const Shape &indices = ctx.inputs[0].shape, &values = ctx.inputs[1].shape, &a_shape = ctx.inputs[2].shape;
  const Shape& b = ctx.inputs[3].shape;
  const bool adjoint_a = ctx.attr_bool(0), adjoint_b = ctx.attr_bool(1);
  if (indices.rank_known() && (indices.rank() != 2 || (indices.dim(1) >= 0 && indices.dim(1) != 2)))
    return invalid_argument("SparseTensorDenseMatMul: a_indices must be a matrix [nnz, 2], got ",
                            indices.to_string());
  if (values.rank_known() && values.rank() != 1)
    return invalid_argument("SparseTensorDenseMatMul: a_values must be a vector, got ", values.to_string());
  if (indices.rank_known() && values.rank_known() && indices.dim(0) >= 0 && values.dim(0) >= 0 &&
      indices.dim(0) != values.dim(0))
    return invalid_argument("SparseTensorDenseMatMul: a_indices has ", indices.dim(0), " rows but a_values ",
                            values.dim(0), " elements");
  if (a_shape.rank_known() && (a_shape.rank() != 1 || (a_shape.dim(0) >= 0 && a_shape.dim(0) != 2)))
    return invalid_argument("SparseTensorDenseMatMul: a_shape must be a vector of 2 elements, got shape ",
                            a_shape.to_string());
  if (b.rank_known() && b.rank() != 2)
    return invalid_argument("SparseTensorDenseMatMul: b must be a matrix, got ", b.to_string());
  int64_t rows = kUnknownDim, inner = kUnknownDim;
  if (const TensorImpl* s = ctx.constant(2); s != nullptr && s->num_elements() == 2) {
    rows = kernels::load_index(s->raw_data(), s->dtype(), adjoint_a ? 1 : 0);
    inner = kernels::load_index(s->raw_data(), s->dtype(), adjoint_a ? 0 : 1);
    if (rows < 0 || inner < 0)
      return invalid_argument("SparseTensorDenseMatMul: a_shape must not be negative, got [",
                              adjoint_a ? inner : rows, ", ", adjoint_a ? rows : inner, "]");
  }
  const int64_t b_inner = b.rank_known() ? b.dim(adjoint_b ? 1 : 0) : kUnknownDim;
  const int64_t cols = b.rank_known() ? b.dim(adjoint_b ? 0 : 1) : kUnknownDim;
  if (inner >= 0 && b_inner >= 0 && inner != b_inner)
    return invalid_argument(
        "SparseTensorDenseMatMul: Cannot multiply A and B because inner dimension does not "
        "match: ",
        inner, " vs. ", b_inner);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, Shape({rows, cols})});
  return Status::OK();
}

Status sparse_matmul_kernel(KernelContext& ctx) {
  const TensorImpl &indices = ctx.input(0), &values = ctx.input(1), &a_shape = ctx.input(2),
                   &b = ctx.input(3);
  const bool adjoint_a = ctx.attr_bool(0), adjoint_b = ctx.attr_bool(1);
  const std::string& op = ctx.op->name;
  if (indices.rank() != 2 || indices.shape().dim(1) != 2 || values.rank() != 1 ||
      values.shape().dim(0) != indices.shape().dim(0) || a_shape.num_elements() != 2 || b.rank() != 2)
    return invalid_argument(op,
                            ": expected a_indices [nnz, 2], a_values [nnz], a_shape [2] and b [k, n], got ",
                            indices.shape().to_string(), ", ", values.shape().to_string(), ", ",
                            a_shape.shape().to_string(), " and ", b.shape().to_string());
  const int64_t m = kernels::load_index(a_shape.raw_data(), a_shape.dtype(), adjoint_a ? 1 : 0);
  const int64_t k = kernels::load_index(a_shape.raw_data(), a_shape.dtype(), adjoint_a ? 0 : 1);
  if (m < 0 || k < 0) return invalid_argument(op, ": a_shape must not be negative, got ", m, "x", k);
  const int64_t bk = b.shape().dim(adjoint_b ? 1 : 0), n = b.shape().dim(adjoint_b ? 0 : 1);
  if (k != bk)
    return invalid_argument(op, ": Cannot multiply A and B because inner dimension does not match: ", k,
                            " vs. ", bk);
  TensorImpl& out = ctx.output(0);
  if (out.shape().dim(0) != m || out.shape().dim(1) != n)
    return invalid_argument(op, ": a_shape ", m, "x", k, " gives a result of ", m,
                            " rows, but the output is ", out.shape().to_string());
  const int64_t nnz = indices.shape().dim(0);
  Status status = Status::OK();
  visit_dtype<kMatMulTypes>(values.dtype(), [&]<typename T>() {
    T* o = out.mutable_data<T>();
    std::fill(o, o + m * n, T(0));
    const T* v = values.data<T>();
    const T* bd = b.data<T>();
    for (int64_t e = 0; e < nnz; ++e) {
      int64_t r = kernels::load_index(indices.raw_data(), indices.dtype(), 2 * e);
      int64_t c = kernels::load_index(indices.raw_data(), indices.dtype(), 2 * e + 1);
      if (adjoint_a) std::swap(r, c);
      if (r < 0 || r >= m) {
        status = invalid_argument(op, ": m (", r, ") from index[", e, ",", adjoint_a ? 1 : 0,
                                  "] out of bounds (>=", m, ")");
        return;
      }
      if (c < 0 || c >= k) {
        status = invalid_argument(op, ": k (", c, ") from index[", e, ",", adjoint_a ? 0 : 1,
                                  "] out of bounds (>=", k, ")");
        return;
      }
      T* row = o + r * n;
      const T a = v[e];
      if (adjoint_b) {
        for (int64_t j = 0; j < n; ++j) row[j] += a * bd[j * bk + c];
      } else {
        const T* brow = bd + c * n;
        for (int64_t j = 0; j < n; ++j) row[j] += a * brow[j];
      }
    }
  });
  return status;
}

// ---- SparseToDense(sparse_indices, output_shape, sparse_values, default_value; validate_indices):
// default_value everywhere but at the indices. sparse_indices is [n, rank], [n] (rank 1) or a scalar; the
// values a vector of n or a scalar for all.

Status sparse_to_dense_shape(InferContext& ctx) {
  const Shape &indices = ctx.inputs[0].shape, &values = ctx.inputs[2].shape, &def = ctx.inputs[3].shape;
  if (indices.rank_known() && indices.rank() > 2)
    return invalid_argument("SparseToDense: sparse_indices must be 0-D, 1-D or 2-D, got ",
                            indices.to_string());
  if (values.rank_known() && values.rank() > 1)
    return invalid_argument("SparseToDense: sparse_values must be a scalar or a vector, got ",
                            values.to_string());
  if (def.rank_known() && def.rank() != 0)
    return invalid_argument("SparseToDense: default_value must be a scalar, got ", def.to_string());
  auto shape = ctx.shape_operand(1);
  if (!shape.ok()) return shape.status();
  for (int d = 0; shape->rank_known() && d < shape->rank(); ++d)
    if (shape->dim(d) < kUnknownDim)
      return invalid_argument("SparseToDense: output_shape must not have negative dims, got ",
                              shape->to_string());
  ctx.outputs.push_back(TensorSpec{ctx.inputs[2].dtype, *shape});
  return Status::OK();
}

std::string index_text(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "]";
}

Status sparse_to_dense_kernel(KernelContext& ctx) {
  const TensorImpl &indices = ctx.input(0), &values = ctx.input(2), &def = ctx.input(3);
  const bool validate = ctx.attr_bool(0);
  TensorImpl& out = ctx.output(0);
  const Shape& shape = out.shape();
  const int rank = shape.rank();
  const int64_t n = indices.rank() == 0 ? 1 : indices.shape().dim(0);
  const int64_t depth = indices.rank() == 2 ? indices.shape().dim(1) : 1;
  if (depth != rank)
    return invalid_argument("SparseToDense: sparse_indices has ", depth,
                            " columns but output_shape has rank ", rank);
  if (values.rank() == 1 && values.shape().dim(0) != n)
    return invalid_argument("SparseToDense: sparse_values has ", values.shape().dim(0),
                            " elements, expected one per index (", n, ")");
  if (def.num_elements() != 1)
    return invalid_argument("SparseToDense: default_value must be a scalar, got ", def.shape().to_string());
  // Strings are std::string objects, assigned; every other dtype is copied as bytes.
  const bool is_string = out.dtype() == DType::kString;
  const size_t size = dtype_size(out.dtype());
  char* o = static_cast<char*>(out.mutable_raw_data());
  const auto copy_element = [&](int64_t dst, const TensorImpl& from, int64_t src) {
    if (is_string)
      out.mutable_data<std::string>()[dst] = from.data<std::string>()[src];
    else
      std::memcpy(o + dst * size, static_cast<const char*>(from.raw_data()) + src * size, size);
  };
  for (int64_t i = 0; i < out.num_elements(); ++i) copy_element(i, def, 0);
  std::vector<int64_t> index(static_cast<size_t>(rank)), previous;
  std::vector<int64_t> shape_dims(shape.dims().begin(), shape.dims().end());
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < rank; ++d) {
      index[d] = kernels::load_index(indices.raw_data(), indices.dtype(), e * depth + d);
      inside = inside && index[d] >= 0 && index[d] < shape.dim(d);
      offset = offset * shape.dim(d) + index[d];
    }
    if (!inside)
      return invalid_argument("SparseToDense: indices[", e, "] = ", index_text(index),
                              " is out of bounds: need 0 <= index < ", index_text(shape_dims));
    if (validate && e > 0) {
      if (index == previous)
        return invalid_argument("SparseToDense: indices[", e, "] = ", index_text(index), " is repeated");
      if (index < previous)
        return invalid_argument(
            "SparseToDense: indices[", e, "] = ", index_text(index),
            " is out of order. Many sparse ops require sorted indices. Use `tf.sparse.reorder` "
            "to create a correctly ordered copy.");
    }
    previous = index;
    copy_element(offset, values, values.rank() == 1 ? e : 0);
  }
  return Status::OK();
}

// ---- SparseAdd(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh) -> (sum_indices,
// sum_values, sum_shape): both operands' entries merged in row-major order (each operand's must already be
// in that order, as TensorFlow assumes); at an index both have, the values add, and a sum whose magnitude is
// below thresh is dropped.

// TensorFlow's kernels' dtypes.
constexpr DTypeSet kSparseAddRealTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) |
                                         dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) |
                                         dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
constexpr DTypeSet kSparseAddTypes = kSparseAddRealTypes | kComplexTypes;
constexpr DTypeSet kRealTypes = kSparseAddRealTypes;

// Checks the components of one SparseTensor operand and returns its number of entries.
StatusOr<int64_t> check_sparse_operand(const std::string& op, const char* which, const TensorImpl& indices,
                                       const TensorImpl* values, const TensorImpl& shape) {
  if (indices.rank() != 2)
    return invalid_argument(op, ": Input indices should be a matrix but received shape: ",
                            indices.shape().to_string(), " (", which, ")");
  if (shape.rank() != 1)
    return invalid_argument(op, ": Input shape should be a vector but received shape: ",
                            shape.shape().to_string(), " (", which, ")");
  if (indices.shape().dim(1) != shape.shape().dim(0))
    return invalid_argument(op, ": the indices of ", which, " have ", indices.shape().dim(1),
                            " columns but its shape has ", shape.shape().dim(0), " dims");
  if (values != nullptr && (values->rank() != 1 || values->shape().dim(0) != indices.shape().dim(0)))
    return invalid_argument(op, ": Expected ", indices.shape().dim(0), " non-empty input values (", which,
                            "), got shape ", values->shape().to_string());
  return indices.shape().dim(0);
}

// -1, 0 or 1: row i of `a` against row j of `b` (both int64 [n, rank]) in row-major order.
int compare_rows(const int64_t* a, int64_t i, const int64_t* b, int64_t j, int64_t rank) {
  for (int64_t d = 0; d < rank; ++d) {
    if (a[i * rank + d] != b[j * rank + d]) return a[i * rank + d] < b[j * rank + d] ? -1 : 1;
  }
  return 0;
}

template <typename T>
double magnitude(const T& v) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return std::abs(v);
  } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return std::abs(static_cast<double>(static_cast<float>(v)));
  } else {
    return std::abs(static_cast<double>(v));
  }
}

Status sparse_add_shape(InferContext& ctx) {
  const Shape &a_indices = ctx.inputs[0].shape, &thresh = ctx.inputs[6].shape;
  if (thresh.rank_known() && thresh.rank() != 0)
    return invalid_argument("SparseAdd: thresh must be a scalar, got shape ", thresh.to_string());
  const int64_t rank = a_indices.rank_known() && a_indices.rank() == 2 ? a_indices.dim(1) : kUnknownDim;
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape({kUnknownDim, rank})});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, Shape({kUnknownDim})});
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape({rank})});
  return Status::OK();
}

Status sparse_add_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &a_indices = ctx.input(0), &a_values = ctx.input(1), &a_shape = ctx.input(2);
  const TensorImpl &b_indices = ctx.input(3), &b_values = ctx.input(4), &b_shape = ctx.input(5);
  auto na = check_sparse_operand(op, "a", a_indices, &a_values, a_shape);
  if (!na.ok()) return na.status();
  auto nb = check_sparse_operand(op, "b", b_indices, &b_values, b_shape);
  if (!nb.ok()) return nb.status();
  const int64_t rank = a_shape.num_elements();
  const int64_t *sa = a_shape.data<int64_t>(), *sb = b_shape.data<int64_t>();
  if (b_shape.num_elements() != rank || !std::equal(sa, sa + rank, sb)) {
    std::vector<int64_t> va(sa, sa + rank), vb(sb, sb + b_shape.num_elements());
    return invalid_argument(op, ": Operands do not have the same ranks or shapes: ", index_text(va), " and ",
                            index_text(vb));
  }
  if (ctx.input(6).num_elements() != 1)
    return invalid_argument(op, ": thresh must be a scalar, got shape ", ctx.input(6).shape().to_string());
  double thresh = 0;
  visit_dtype<kRealTypes>(ctx.input(6).dtype(), [&]<typename R>() {
    const R t = ctx.input(6).data<R>()[0];
    thresh = static_cast<double>(t);
  });
  const int64_t *ai = a_indices.data<int64_t>(), *bi = b_indices.data<int64_t>();
  // Which operand rows the result takes: (a row or -1, b row or -1).
  std::vector<std::pair<int64_t, int64_t>> picks;
  picks.reserve(static_cast<size_t>(*na + *nb));
  visit_dtype<kSparseAddTypes>(a_values.dtype(), [&]<typename T>() {
    const T *av = a_values.data<T>(), *bv = b_values.data<T>();
    int64_t i = 0, j = 0;
    while (i < *na || j < *nb) {
      const int c = i == *na ? 1 : j == *nb ? -1 : compare_rows(ai, i, bi, j, rank);
      if (c < 0) {
        picks.emplace_back(i++, -1);
      } else if (c > 0) {
        picks.emplace_back(-1, j++);
      } else {
        if (thresh <= magnitude(T(av[i] + bv[j]))) picks.emplace_back(i, j);
        ++i;
        ++j;
      }
    }
  });
  const int64_t n = static_cast<int64_t>(picks.size());
  auto indices = TensorImpl::allocate(DType::kInt64, Shape({n, rank}));
  auto values = TensorImpl::allocate(a_values.dtype(), Shape({n}));
  auto shape = TensorImpl::allocate(DType::kInt64, Shape({rank}));
  for (auto* t : {&indices, &values, &shape})
    if (!t->ok()) return t->status();
  int64_t* out_indices = (*indices)->mutable_data<int64_t>();
  visit_dtype<kSparseAddTypes>(a_values.dtype(), [&]<typename T>() {
    const T *av = a_values.data<T>(), *bv = b_values.data<T>();
    T* out = (*values)->mutable_data<T>();
    for (int64_t e = 0; e < n; ++e) {
      const auto [i, j] = picks[static_cast<size_t>(e)];
      const int64_t* row = i >= 0 ? ai + i * rank : bi + j * rank;
      std::copy(row, row + rank, out_indices + e * rank);
      out[e] = i >= 0 && j >= 0 ? T(av[i] + bv[j]) : i >= 0 ? av[i] : bv[j];
    }
  });
  std::copy(sa, sa + rank, (*shape)->mutable_data<int64_t>());
  ctx.outputs[0] = std::move(*indices);
  ctx.outputs[1] = std::move(*values);
  ctx.outputs[2] = std::move(*shape);
  return Status::OK();
}

// ---- SparseAddGrad(backprop_val_grad, a_indices, b_indices, sum_indices) -> (a_val_grad, b_val_grad):
// each operand entry takes the gradient of the result entry at its index, or 0 where its sum was dropped.

Status sparse_add_grad_shape(InferContext& ctx) {
  for (int i = 1; i < 4; ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() != 2)
      return invalid_argument("SparseAddGrad: ", ctx.op->inputs[i].name, " must be a matrix, got ",
                              s.to_string());
  }
  const DType dtype = ctx.inputs[0].dtype;
  auto rows = [&](int i) {
    return ctx.inputs[i].shape.rank_known() ? ctx.inputs[i].shape.dim(0) : kUnknownDim;
  };
  ctx.outputs.push_back(TensorSpec{dtype, Shape({rows(1)})});
  ctx.outputs.push_back(TensorSpec{dtype, Shape({rows(2)})});
  return Status::OK();
}

Status sparse_add_grad_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &dy = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2), &sum = ctx.input(3);
  if (a.rank() != 2 || b.rank() != 2 || sum.rank() != 2 || dy.rank() != 1)
    return invalid_argument(op, ": expected a vector gradient and matrix indices, got ",
                            dy.shape().to_string(), ", ", a.shape().to_string(), ", ", b.shape().to_string(),
                            ", ", sum.shape().to_string());
  const int64_t rank = a.shape().dim(1), na = a.shape().dim(0), nb = b.shape().dim(0),
                ns = sum.shape().dim(0);
  if (b.shape().dim(1) != rank || sum.shape().dim(1) != rank)
    return invalid_argument(op, ": the indices have different ranks: ", a.shape().to_string(), ", ",
                            b.shape().to_string(), ", ", sum.shape().to_string());
  if (dy.shape().dim(0) != ns)
    return invalid_argument(op, ": backprop_val_grad has ", dy.shape().dim(0), " values but sum_indices has ",
                            ns, " rows");
  const int64_t *ai = a.data<int64_t>(), *bi = b.data<int64_t>(), *si = sum.data<int64_t>();
  const size_t elem = dtype_size(dy.dtype());
  char *da = static_cast<char*>(ctx.output(0).mutable_raw_data()),
       *db = static_cast<char*>(ctx.output(1).mutable_raw_data());
  const char* g = static_cast<const char*>(dy.raw_data());
  std::memset(da, 0, static_cast<size_t>(na) * elem);
  std::memset(db, 0, static_cast<size_t>(nb) * elem);
  int64_t i = 0, j = 0, k = 0;
  while ((i < na || j < nb) && k < ns) {
    const int c = i == na ? 1 : j == nb ? -1 : compare_rows(ai, i, bi, j, rank);
    const bool hit = c <= 0 ? compare_rows(ai, i, si, k, rank) == 0 : compare_rows(bi, j, si, k, rank) == 0;
    if (hit) {
      if (c <= 0) std::memcpy(da + i * elem, g + k * elem, elem);
      if (c >= 0) std::memcpy(db + j * elem, g + k * elem, elem);
      ++k;
    }
    if (c <= 0) ++i;
    if (c >= 0) ++j;
  }
  return Status::OK();
}

// ---- SparseReshape(input_indices, input_shape, new_shape) -> (output_indices, output_shape): the same
// entries in a tensor of new_shape (one -1 is inferred), their row-major positions kept.

Status sparse_reshape_shape(InferContext& ctx) {
  const Shape &indices = ctx.inputs[0].shape, &new_shape = ctx.inputs[2].shape;
  if (indices.rank_known() && indices.rank() != 2)
    return invalid_argument("SparseReshape: Input indices should be a matrix but received shape ",
                            indices.to_string());
  if (new_shape.rank_known() && new_shape.rank() != 1)
    return invalid_argument("SparseReshape: Target shape should be a vector but received shape ",
                            new_shape.to_string());
  const int64_t rank = new_shape.rank_known() ? new_shape.dim(0) : kUnknownDim;
  ctx.outputs.push_back(
      TensorSpec{DType::kInt64, Shape({indices.rank_known() ? indices.dim(0) : kUnknownDim, rank})});
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape({rank})});
  return Status::OK();
}

Status sparse_reshape_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &indices = ctx.input(0), &in_shape = ctx.input(1), &target = ctx.input(2);
  auto n = check_sparse_operand(op, "input", indices, nullptr, in_shape);
  if (!n.ok()) return n.status();
  if (target.rank() != 1)
    return invalid_argument(op, ": Target shape should be a vector but received shape ",
                            target.shape().to_string());
  const int64_t in_rank = in_shape.num_elements(), out_rank = target.num_elements();
  const int64_t* dims = in_shape.data<int64_t>();
  int64_t dense = 1;
  for (int64_t d = 0; d < in_rank; ++d)
    if (dims[d] < 0 || !checked_mul(dense, dims[d], &dense))
      return invalid_argument(op, ": the input shape ", index_text({dims, dims + in_rank}), " is not valid");
  std::vector<int64_t> out_dims(target.data<int64_t>(), target.data<int64_t>() + out_rank);
  int64_t unknown = -1, known = 1;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (out_dims[d] == -1) {
      if (unknown >= 0)
        return invalid_argument(op, ": only one output dimension may be -1, not both ", unknown, " and ", d);
      unknown = d;
    } else if (out_dims[d] < 0) {
      return invalid_argument(op, ": size ", d, " must be non-negative, not ", out_dims[d]);
    } else if (!checked_mul(known, out_dims[d], &known)) {
      return invalid_argument(op, ": the requested shape ", index_text(out_dims), " is too large");
    }
  }
  if (unknown >= 0) {
    if (known == 0 || dense % known != 0)
      return invalid_argument(op, ": Input to reshape is a SparseTensor with ", dense,
                              " dense values, but the requested shape requires a multiple of ", known);
    out_dims[unknown] = dense / known;
  } else if (known != dense) {
    return invalid_argument(op, ": Input to reshape is a tensor with ", dense,
                            " dense values, but the requested shape has ", known);
  }
  auto out_indices = TensorImpl::allocate(DType::kInt64, Shape({*n, out_rank}));
  auto out_shape = TensorImpl::allocate(DType::kInt64, Shape({out_rank}));
  if (!out_indices.ok()) return out_indices.status();
  if (!out_shape.ok()) return out_shape.status();
  const int64_t* in = indices.data<int64_t>();
  int64_t* out = (*out_indices)->mutable_data<int64_t>();
  for (int64_t e = 0; e < *n; ++e) {
    int64_t linear = 0;
    for (int64_t d = 0; d < in_rank; ++d) {
      const int64_t v = in[e * in_rank + d];
      if (v < 0 || v >= dims[d])
        return invalid_argument(op, ": index ", index_text({in + e * in_rank, in + (e + 1) * in_rank}),
                                " is out of bounds of the shape ", index_text({dims, dims + in_rank}));
      linear = linear * dims[d] + v;
    }
    for (int64_t d = out_rank - 1; d >= 0; --d) {
      out[e * out_rank + d] = out_dims[d] > 0 ? linear % out_dims[d] : 0;
      linear = out_dims[d] > 0 ? linear / out_dims[d] : 0;
    }
  }
  std::copy(out_dims.begin(), out_dims.end(), (*out_shape)->mutable_data<int64_t>());
  ctx.outputs[0] = std::move(*out_indices);
  ctx.outputs[1] = std::move(*out_shape);
  return Status::OK();
}

// ---- SparseReduceSum(input_indices, input_values, input_shape, reduction_axes; keep_dims): the dense sum
// of a SparseTensor over the axes (negative ones count from the end, repeats count once, none: no
// reduction); entries at one index add.

// The axes operand as a mask over `rank` dims; an error names a bad axis as TensorFlow does.
StatusOr<std::vector<bool>> reduced_axes(const std::string& op, std::span<const int64_t> axes, int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return invalid_argument(op, ": Invalid reduction dimension ", a, ", for input with ", rank,
                              " dimensions.");
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return reduced;
}

Status sparse_reduce_sum_shape(InferContext& ctx) {
  const bool keep_dims = ctx.attr_bool(0);
  const PartialValue shape = ctx.value_of(2), axes = ctx.value_of(3);
  const DType dtype = ctx.inputs[1].dtype;
  if (!shape.length_known || !axes.fully_known()) {
    // Without the axes only keep_dims tells the rank (the input's); the dims may all have become 1.
    Shape out = Shape::unknown_rank();
    if (keep_dims && shape.length_known && shape.values.size() <= static_cast<size_t>(kMaxRank)) {
      out = Shape();
      for (size_t d = 0; d < shape.values.size(); ++d) out.push_back(kUnknownDim);
    }
    ctx.outputs.push_back(TensorSpec{dtype, out});
    return Status::OK();
  }
  const int64_t rank = static_cast<int64_t>(shape.values.size());
  if (rank > kMaxRank)
    return invalid_argument(ctx.op->name, ": input_shape has ", rank, " dims; at most ", kMaxRank);
  auto reduced = reduced_axes(ctx.op->name, axes.values, rank);
  if (!reduced.ok()) return reduced.status();
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = shape.values[static_cast<size_t>(d)];
    if (dim != PartialValue::kUnknown && dim < 0)
      return invalid_argument(ctx.op->name, ": input_shape must not be negative, got dim ", d, " = ", dim);
    if ((*reduced)[static_cast<size_t>(d)]) {
      if (keep_dims) out.push_back(1);
    } else {
      out.push_back(dim == PartialValue::kUnknown || dim < 0 ? kUnknownDim : dim);
    }
  }
  ctx.outputs.push_back(TensorSpec{dtype, out});
  return Status::OK();
}

template <typename T>
void accumulate(T& into, const T& v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    into = T(static_cast<float>(into) + static_cast<float>(v));
  } else {
    into = T(into + v);
  }
}

Status sparse_reduce_sum_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &indices = ctx.input(0), &values = ctx.input(1), &shape = ctx.input(2);
  auto n = check_sparse_operand(op, "input", indices, &values, shape);
  if (!n.ok()) return n.status();
  const int64_t rank = shape.num_elements();
  const std::vector<int64_t> axes = ctx.int_values(3);
  auto reduced = reduced_axes(op, axes, rank);
  if (!reduced.ok()) return reduced.status();
  const int64_t* dims = shape.data<int64_t>();
  const int64_t* idx = indices.data<int64_t>();
  TensorImpl& out = ctx.output(0);
  Status status = Status::OK();
  visit_dtype<kNumericAndComplexTypes>(values.dtype(), [&]<typename T>() {
    T* o = out.mutable_data<T>();
    std::fill(o, o + out.num_elements(), T(0));
    const T* v = values.data<T>();
    for (int64_t e = 0; e < *n && status.ok(); ++e) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t i = idx[e * rank + d];
        if (i < 0 || i >= dims[d]) {
          status = invalid_argument(op, ": indices[", e,
                                    "] = ", index_text({idx + e * rank, idx + (e + 1) * rank}),
                                    " is out of bounds of the shape ", index_text({dims, dims + rank}));
          return;
        }
        if (!(*reduced)[static_cast<size_t>(d)]) at = at * dims[d] + i;
      }
      accumulate(o[at], v[e]);
    }
  });
  return status;
}

// ---- Gradients

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// out = op(A) @ op(B). d a_values[e] = sum_j dy[r, j] * op(B)[c, j] (r, c: the entry's place in op(A));
// d B = op(A)^T @ dy, transposed back when adjoint_b.
void sparse_matmul_grad(GradContext& c) {
  const bool adjoint_a = c.attr_bool(0), adjoint_b = c.attr_bool(1);
  const GradTensor indices = c.input(0), b = c.input(3), dy = c.grad();
  const GradTensor rows =
      emit1("GatherV2", {indices, scalar(adjoint_a ? 1 : 0, DType::kInt32), scalar(1, DType::kInt32)});
  const GradTensor cols =
      emit1("GatherV2", {indices, scalar(adjoint_a ? 0 : 1, DType::kInt32), scalar(1, DType::kInt32)});
  const GradTensor op_b = adjoint_b ? transpose(b, {1, 0}) : b;
  const GradTensor dy_rows = emit1("GatherV2", {dy, rows, scalar(0, DType::kInt32)});
  const GradTensor b_rows = emit1("GatherV2", {op_b, cols, scalar(0, DType::kInt32)});
  c.set(1, sum(dy_rows * b_rows, {1}, false));
  AttrList attrs;
  attrs.push_back(!adjoint_a);
  attrs.push_back(false);
  GradTensor db = emit1("SparseTensorDenseMatMul", {indices, c.input(1), c.input(2), dy}, std::move(attrs));
  c.set(3, adjoint_b ? transpose(db, {1, 0}) : db);
}

// d sparse_values = dy at the indices; d default_value = the rest of dy.
void sparse_to_dense_grad(GradContext& c) {
  const GradTensor dy = c.grad(), indices = c.input(0), values = c.input(2);
  GradTensor at = emit1("GatherNd", {dy, indices.rank() == 2 ? indices : reshape(indices, {-1, 1})});
  const GradTensor at_total = sum(at, {0}, false);
  c.set(2, values.rank() == 0 ? at_total : at);
  c.set(3, sum(reshape(dy, {-1}), {0}, false) - at_total);  // dy's rank may be unknown while tracing
}

// TensorFlow's: each value takes dy at its index with the reduced axes at 0, dy seen with those axes kept
// as 1. The axes may be a value computed in the graph: which dims they reduce is worked out at run time.
void sparse_reduce_sum_grad(GradContext& c) {
  const GradTensor indices = c.input(0), shape = c.input(2);
  const GradTensor rank = unary("Size", shape);
  const int64_t flat[] = {-1}, last[] = {1};
  GradTensor axes = reshape_to(c.input(3), int_vector(flat));
  axes = binary("FloorMod", axes + rank, binary("Maximum", rank, scalar(1, DType::kInt32)));
  const GradTensor positions = emit1("Range", {scalar(0, DType::kInt32), rank, scalar(1, DType::kInt32)});
  AttrList no_keep;
  no_keep.push_back(false);
  const GradTensor reduced =
      cast(emit1("Any", {compare("Equal", expand_dims(positions, 1), expand_dims(axes, 0)), int_vector(last)},
                 std::move(no_keep)),
           DType::kInt64);
  const GradTensor keep = scalar(1, DType::kInt64) - reduced;
  c.set(1, emit1("GatherNd", {reshape_to(c.grad(), shape * keep + reduced), indices * keep}));
}

// TensorFlow's: SparseAddGrad routes d sum_values to the operands' values; indices, shapes and thresh get
// none.
void sparse_add_grad(GradContext& c) {
  auto grads = emit("SparseAddGrad", {c.grad(1), c.input(0), c.input(3), c.output(0)});
  c.set(1, grads[0]);
  c.set(4, grads[1]);
}

}  // namespace

void register_sparse_ops(OpRegistry& r) {
  OpBuilder("SparseTensorDenseMatMul")
      .doc(
          "A @ B for a sparse matrix A given as (indices, values, shape) and a dense B; adjoint_a/adjoint_b "
          "transpose them. sparse_tensor_dense_matmul([[0, 1]], [2.], [1, 2], [[1.], [3.]]) == [[6.]]")
      .input_fixed("a_indices", kIndexTypes)
      .input("a_values")
      .input_fixed("a_shape", dtype_bit(DType::kInt64))
      .input("b")
      .output("product")
      .type_var(kMatMulTypes)
      .attr("adjoint_a", AttrType::kBool, false)
      .attr("adjoint_b", AttrType::kBool, false)
      .shape(&sparse_matmul_shape)
      .kernel(kMatMulTypes, &sparse_matmul_kernel)
      .dispatch_on_input(1)
      .grad(&sparse_matmul_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseToDense")
      .doc(
          "A dense tensor of output_shape holding sparse_values at sparse_indices and default_value "
          "elsewhere. "
          "sparse_to_dense([[1]], [3], [5.], 0.) == [0., 5., 0.]")
      .input_fixed("sparse_indices", kIndexTypes)
      .input_shape_like("output_shape")
      .input("sparse_values")
      .input("default_value")
      .output("dense")
      .type_var(kAllTypesAndString)
      .attr("validate_indices", AttrType::kBool, true)
      .shape(&sparse_to_dense_shape)
      .kernel(kAllTypesAndString, &sparse_to_dense_kernel)
      .dispatch_on_input(2)
      .grad(&sparse_to_dense_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  const DTypeSet int64_only = dtype_bit(DType::kInt64);
  OpBuilder("SparseAdd")
      .doc(
          "The sum of two SparseTensors (indices, values, shape) of one shape, entries in row-major order; "
          "sums below thresh in magnitude are dropped. "
          "sparse_add([[0]], [1.], [2], [[0], [1]], [2., 3.], [2], 0.) == ([[0], [1]], [3., 3.], [2])")
      .input_fixed("a_indices", int64_only)
      .input("a_values")
      .input_fixed("a_shape", int64_only)
      .input_fixed("b_indices", int64_only)
      .input("b_values")
      .input_fixed("b_shape", int64_only)
      .input("thresh", 1)
      .output("sum_indices")
      .output("sum_values")
      .output("sum_shape")
      .type_var(kSparseAddTypes)
      .type_var(kRealTypes, 1)
      .flags(kKernelAllocates)
      .shape(&sparse_add_shape)
      .kernel(kSparseAddTypes, &sparse_add_kernel)
      .dispatch_on_input(1)
      .grad(&sparse_add_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseAddGrad")
      .doc(
          "SparseAdd's gradient: each operand value takes the gradient of the sum entry at its index (0 "
          "where the sum was dropped). sparse_add_grad([5.], [[0]], [[0]], [[0]]) == ([5.], [5.])")
      .input("backprop_val_grad")
      .input_fixed("a_indices", int64_only)
      .input_fixed("b_indices", int64_only)
      .input_fixed("sum_indices", int64_only)
      .output("a_val_grad")
      .output("b_val_grad")
      .type_var(kSparseAddTypes)
      .flags(kNotDifferentiable)
      .shape(&sparse_add_grad_shape)
      .kernel(kSparseAddTypes, &sparse_add_grad_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseReduceSum")
      .doc(
          "The dense sum of a SparseTensor (indices, values, shape) over reduction_axes. "
          "sparse_reduce_sum([[0, 1], [1, 0]], [1., 2.], [2, 2], [1]) == [1., 2.]")
      .input_fixed("input_indices", int64_only)
      .input("input_values")
      .input_fixed("input_shape", int64_only)
      .input_fixed("reduction_axes", dtype_bit(DType::kInt32))
      .output("output")
      .type_var(kNumericAndComplexTypes)
      .attr("keep_dims", AttrType::kBool, false)
      .shape(&sparse_reduce_sum_shape)
      .kernel(kNumericAndComplexTypes, &sparse_reduce_sum_kernel)
      .grad(&sparse_reduce_sum_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseReshape")
      .doc(
          "A SparseTensor's indices and shape for new_shape (one -1 inferred), row-major positions kept. "
          "sparse_reshape([[1, 0]], [2, 2], [4]) == ([[2]], [4])")
      .input_fixed("input_indices", int64_only)
      .input_fixed("input_shape", int64_only)
      .input_fixed("new_shape", int64_only)
      .output("output_indices")
      .output("output_shape")
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&sparse_reshape_shape)
      .kernel(int64_only, &sparse_reshape_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

// Kernels of tf.sparse that TensorFlow runs as ops of their own: SparseTensorDenseMatMul
// (tf.sparse.sparse_dense_matmul) and SparseToDense (tf.sparse.to_dense). A SparseTensor is its indices
// (int64 [nnz, rank]), values ([nnz]) and dense shape (int64 [rank]); the Python package
// (python/ember/sparse/) passes these components. The other tf.sparse functions are composed there of
// registry ops (docs/composite.md). Registered from register_array_index_ops (array_index.cc).
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
}

}  // namespace ember

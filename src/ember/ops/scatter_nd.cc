// N-d indexing: GatherNd (tf.gather_nd) and the scatters that are its adjoints: ScatterNd (tf.scatter_nd)
// and TensorScatterUpdate/Add/Sub/Min/Max (tf.tensor_scatter_nd_*). The last dim of `indices` is the index
// depth d: each index tuple names a slice of the indexed tensor, its dims after the first d. The variable
// forms (ResourceScatterNd*, and ResourceScatter* along the first dim) write into a variable's value in
// place. Registered from register_array_index_ops (array_index.cc); kernels in kernels/index_nd.h.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/resource.h"
#include "ember/kernels/array.h"
#include "ember/kernels/index_nd.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using kernels::ScatterMode;

// ---- Shapes. `indexed` is the tensor the tuples index (params, or the scatter's result).

// The result of GatherNd (indices[:-1] + params[d:]); unknown rank when d is unknown.
Status gather_nd_shape(InferContext& ctx) {
  const Shape &params = ctx.inputs[0].shape, &indices = ctx.inputs[1].shape;
  if (indices.rank_known() && indices.rank() == 0)
    return invalid_argument("GatherNd: indices must be at least 1-D, got a scalar");
  if (!params.rank_known() || !indices.rank_known() || indices.dim(indices.rank() - 1) < 0) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const int64_t depth = indices.dim(indices.rank() - 1);
  if (depth > params.rank())
    return invalid_argument("GatherNd: the index depth (indices' last dim, ", depth,
                            ") must be at most params' rank; params ", params.to_string(), ", indices ",
                            indices.to_string());
  if (indices.rank() - 1 + params.rank() - depth > kMaxRank)
    return invalid_argument("GatherNd: the result would have more than ", kMaxRank, " dimensions");
  Shape out;
  for (int d = 0; d < indices.rank() - 1; ++d) out.push_back(indices.dim(d));
  for (int d = static_cast<int>(depth); d < params.rank(); ++d) out.push_back(params.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// updates must be indices[:-1] + indexed[d:] (dims unknown while tracing pass).
Status check_updates(const char* op, const Shape& indexed, const Shape& indices, const Shape& updates) {
  if (indices.rank_known() && indices.rank() == 0)
    return invalid_argument(op, ": indices must be at least 1-D, got a scalar");
  if (!indexed.rank_known() || !indices.rank_known() || !updates.rank_known() ||
      indices.dim(indices.rank() - 1) < 0)
    return Status::OK();
  const int64_t depth = indices.dim(indices.rank() - 1);
  if (depth > indexed.rank())
    return invalid_argument(op, ": the index depth (indices' last dim, ", depth,
                            ") must be at most the rank of the shape ", indexed.to_string());
  const int want_rank = indices.rank() - 1 + indexed.rank() - static_cast<int>(depth);
  if (want_rank > kMaxRank)  // no updates tensor can have that shape (Shape holds kMaxRank dims)
    return invalid_argument(op, ": indices ", indices.to_string(), " into shape ", indexed.to_string(),
                            " need updates of rank ", want_rank, ", more than ember's ", kMaxRank,
                            " dims; got ", updates.to_string());
  Shape want;
  for (int d = 0; d < indices.rank() - 1; ++d) want.push_back(indices.dim(d));
  for (int d = static_cast<int>(depth); d < indexed.rank(); ++d) want.push_back(indexed.dim(d));
  bool ok = want.rank() == updates.rank();
  for (int d = 0; ok && d < want.rank(); ++d)
    ok = want.dim(d) < 0 || updates.dim(d) < 0 || want.dim(d) == updates.dim(d);
  if (!ok)
    return invalid_argument(op, ": expected updates of shape ", want.to_string(), " (indices ",
                            indices.to_string(), " into shape ", indexed.to_string(), "), got ",
                            updates.to_string());
  return Status::OK();
}

Status scatter_nd_shape(InferContext& ctx) {
  auto shape = ctx.shape_operand(2);
  if (!shape.ok()) return shape.status();
  for (int d = 0; shape->rank_known() && d < shape->rank(); ++d)
    if (shape->dim(d) < kUnknownDim)
      return invalid_argument("ScatterNd: shape must not have negative dims, got ", shape->to_string());
  EMBER_RETURN_IF_ERROR(check_updates("ScatterNd", *shape, ctx.inputs[0].shape, ctx.inputs[1].shape));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, *shape});
  return Status::OK();
}

Status tensor_scatter_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(
      check_updates(ctx.op->name.c_str(), ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

// ---- Kernels

// TensorFlow's message names the tuple: "indices[1] = [5, 0] does not index into param shape [3,2]".
Status bad_index(const std::string& op, const TensorImpl& indices, int64_t row, const Shape& indexed,
                 const char* what) {
  const int64_t depth = indices.shape().dim(indices.rank() - 1);
  std::vector<int64_t> tuple, position;
  for (int64_t k = 0; k < depth; ++k)
    tuple.push_back(kernels::load_index(indices.raw_data(), indices.dtype(), row * depth + k));
  int64_t rem = row;
  for (int d = indices.rank() - 2; d >= 0; --d) {
    position.insert(position.begin(), rem % indices.shape().dim(d));
    rem /= indices.shape().dim(d);
  }
  std::string where = list_str(position);
  return invalid_argument(op, ": indices", where, " = ", list_str(tuple), " does not index into ", what, " ",
                          indexed.to_string());
}

// The collapsed form: n tuples of depth d into indexed's first d dims, slices of `slice` elements.
struct NdPlan {
  int64_t n = 0, slice = 1;
  int depth = 0;
  std::vector<int64_t> dims, offsets;
};

Status plan_nd(const std::string& op, const Shape& indexed, const TensorImpl& indices, const char* what,
               NdPlan* plan) {
  if (indices.rank() == 0) return invalid_argument(op, ": indices must be at least 1-D, got a scalar");
  const int64_t depth = indices.shape().dim(indices.rank() - 1);
  if (depth > indexed.rank())
    return invalid_argument(op, ": the index depth (indices' last dim, ", depth,
                            ") must be at most the rank of ", what, " ", indexed.to_string());
  plan->depth = static_cast<int>(depth);
  plan->n = product(indices.shape(), 0, indices.rank() - 1);
  plan->slice = product(indexed, plan->depth, indexed.rank());
  for (int d = 0; d < plan->depth; ++d) plan->dims.push_back(indexed.dim(d));
  plan->offsets.resize(static_cast<size_t>(plan->n));
  const int64_t bad = kernels::index_nd_offsets(indices.raw_data(), indices.dtype(), plan->n, plan->depth,
                                                plan->dims.data(), plan->offsets.data());
  if (bad >= 0) return bad_index(op, indices, bad, indexed, what);
  return Status::OK();
}

Status gather_nd_kernel(KernelContext& ctx) {
  const TensorImpl &params = ctx.input(0), &indices = ctx.input(1);
  NdPlan plan;
  EMBER_RETURN_IF_ERROR(plan_nd("GatherNd", params.shape(), indices, "param shape", &plan));
  if (ctx.output(0).num_elements() == 0) return Status::OK();
  kernels::gather_nd(params.raw_data(), plan.offsets.data(), plan.n, plan.slice, dtype_size(params.dtype()),
                     ctx.output(0).mutable_raw_data());
  return Status::OK();
}

Status check_updates_run(const std::string& op, const Shape& indexed, const TensorImpl& indices,
                         const TensorImpl& updates) {
  return check_updates(op.c_str(), indexed, indices.shape(), updates.shape());
}

Status scatter_nd_kernel(KernelContext& ctx) {
  const TensorImpl &indices = ctx.input(0), &updates = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  EMBER_RETURN_IF_ERROR(check_updates_run("ScatterNd", out.shape(), indices, updates));
  NdPlan plan;
  EMBER_RETURN_IF_ERROR(plan_nd("ScatterNd", out.shape(), indices, "shape", &plan));
  std::memset(out.mutable_raw_data(), 0, out.nbytes());
  if (out.num_elements() == 0) return Status::OK();
  kernels::scatter_nd(plan.offsets.data(), plan.n, plan.slice, updates.raw_data(), updates.dtype(),
                      ScatterMode::kAdd, out.mutable_raw_data());
  return Status::OK();
}

template <ScatterMode kMode>
Status tensor_scatter_kernel(KernelContext& ctx) {
  const TensorImpl &tensor = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  TensorImpl& out = ctx.output(0);
  EMBER_RETURN_IF_ERROR(check_updates_run(ctx.op->name, tensor.shape(), indices, updates));
  NdPlan plan;
  EMBER_RETURN_IF_ERROR(plan_nd(ctx.op->name, tensor.shape(), indices, "shape", &plan));
  if (out.num_elements() == 0) return Status::OK();
  // The executor may hand tensor's own dying buffer over as the output (kOverwritesInput0).
  if (out.mutable_raw_data() != tensor.raw_data())
    std::memcpy(out.mutable_raw_data(), tensor.raw_data(), out.nbytes());
  kernels::scatter_nd(plan.offsets.data(), plan.n, plan.slice, updates.raw_data(), updates.dtype(), kMode,
                      out.mutable_raw_data());
  return Status::OK();
}

// ---- ResourceScatterNd{Update,Add,Sub,Min,Max}(indices, updates) and ResourceScatter{Update,Add,Sub,Mul,
// Div,Min,Max}(indices, updates): the scatters into the variable named by attribute 0 (Variable.scatter_*).
// The first-dim forms take plain row indices: updates are indices.shape + value.shape[1:], or a scalar
// applied to every named row.

// Note [In-place variable updates]
// A scatter writes into the variable's own buffer when the variable holds the only reference to its value
// and to the buffer (no reader kept a value sharing it, the assigned tensor is held nowhere else);
// otherwise it copies the value once, and the copy is the variable's alone from then on. Readers keep the
// values they read (tensors are immutable), and a run of scatters into a large variable costs the updates,
// not the variable's size. The check and the write happen under the variable's lock (VariableResource::
// update), as reads take it too.
StatusOr<TensorRef> writable_value(const TensorRef& current) {
  if (current->refcount() == 1 && current->buffer()->refcount() == 1 && !current->buffer()->external())
    return current;
  auto copy = TensorImpl::allocate(current->dtype(), current->shape(), current->device());
  if (!copy.ok()) return copy.status();
  if (current->nbytes() > 0)
    std::memcpy(copy.value()->mutable_raw_data(), current->raw_data(), current->nbytes());
  return copy;
}

template <bool kNd>
Status resource_scatter_shape(InferContext& ctx) {
  const std::string& op = ctx.op->name;
  auto variable = ResourceManager::global().find(ctx.attr_int(0), op.c_str());
  if (!variable.ok()) return variable.status();
  const VariableResource& v = *variable.value();
  const TensorSpec &indices = ctx.inputs[0], &updates = ctx.inputs[1];
  if (updates.dtype != v.dtype())
    return invalid_argument(op, ": variable '", v.name(), "' has dtype ", dtype_name(v.dtype()),
                            " but the updates have dtype ", dtype_name(updates.dtype));
  if constexpr (kNd) return check_updates(op.c_str(), v.shape(), indices.shape, updates.shape);
  if (v.shape().rank_known() && v.shape().rank() == 0)
    return invalid_argument(op, ": variable '", v.name(), "' must be at least 1-D, got a scalar");
  return Status::OK();  // no outputs
}

// TensorFlow's wording for the first-dim forms.
Status check_row_updates(const std::string& op, const Shape& value, const Shape& indices,
                         const Shape& updates) {
  if (value.rank() == 0) return invalid_argument(op, ": the variable must be at least 1-D, got a scalar");
  if (updates.rank() == 0) return Status::OK();
  if (indices.rank() + value.rank() - 1 > kMaxRank)  // the shape below would not fit in a Shape
    return invalid_argument(op, ": indices.shape ", indices.to_string(), " with params.shape ",
                            value.to_string(), " need updates of rank ", indices.rank() + value.rank() - 1,
                            ", more than ember's ", kMaxRank, " dims; got updates.shape ",
                            updates.to_string());
  Shape want = indices;
  for (int d = 1; d < value.rank(); ++d) want.push_back(value.dim(d));
  if (want != updates)
    return invalid_argument(op,
                            ": must have updates.shape = indices.shape + params.shape[1:] or updates.shape ",
                            "= [], got updates.shape ", updates.to_string(), ", indices.shape ",
                            indices.to_string(), ", params.shape ", value.to_string());
  return Status::OK();
}

template <typename T>
bool has_zero(const TensorImpl& t) {
  const T* p = t.data<T>();
  return std::any_of(p, p + t.num_elements(), [](T x) { return x == T(0); });
}

template <ScatterMode kMode, bool kNd>
Status resource_scatter_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  auto variable = ResourceManager::global().find(ctx.attr_int(0), op.c_str());
  if (!variable.ok()) return variable.status();
  VariableResource& v = *variable.value();
  const TensorImpl &indices = ctx.input(0), &updates = ctx.input(1);
  if (updates.dtype() != v.dtype())
    return invalid_argument(op, ": variable '", v.name(), "' has dtype ", dtype_name(v.dtype()),
                            " but the updates have dtype ", dtype_name(updates.dtype()));
  if constexpr (kMode == ScatterMode::kDiv) {
    bool zero = false;  // TensorFlow refuses a zero divisor of any dtype, floats included
    visit_dtype<kNumericTypes>(updates.dtype(), [&]<typename T>() { zero = has_zero<T>(updates); });
    if (zero) return invalid_argument(op, ": updates must not contain 0 (a division by zero)");
  }
  return v.update([&](const TensorRef& current) -> StatusOr<TensorRef> {
    const Shape& shape = current->shape();
    std::vector<int64_t> offsets;
    int64_t slice = 1;
    if constexpr (kNd) {
      EMBER_RETURN_IF_ERROR(check_updates(op.c_str(), shape, indices.shape(), updates.shape()));
      NdPlan plan;
      EMBER_RETURN_IF_ERROR(plan_nd(op, shape, indices, "shape", &plan));
      offsets = std::move(plan.offsets);
      slice = plan.slice;
    } else {
      EMBER_RETURN_IF_ERROR(check_row_updates(op, shape, indices.shape(), updates.shape()));
      slice = product(shape, 1, shape.rank());
      offsets.resize(static_cast<size_t>(indices.num_elements()));
      for (int64_t j = 0; j < indices.num_elements(); ++j) {
        offsets[j] = kernels::load_index(indices.raw_data(), indices.dtype(), j);
        if (offsets[j] < 0 || offsets[j] >= shape.dim(0))
          return invalid_argument(op, ": indices[", j, "] = ", offsets[j], " is not in [0, ", shape.dim(0),
                                  ")");
      }
    }
    auto target = writable_value(current);
    if (!target.ok() || offsets.empty() || slice == 0) return target;
    const void* rows = updates.raw_data();
    std::vector<char> broadcast;  // a scalar update applied to every named row
    if (updates.rank() == 0 && !kNd) {
      const size_t size = dtype_size(updates.dtype());
      broadcast.resize(offsets.size() * static_cast<size_t>(slice) * size);
      for (size_t k = 0; k < broadcast.size(); k += size) std::memcpy(broadcast.data() + k, rows, size);
      rows = broadcast.data();
    }
    kernels::scatter_nd(offsets.data(), static_cast<int64_t>(offsets.size()), slice, rows, updates.dtype(),
                        kMode, target.value()->mutable_raw_data());
    return target;
  });
}

// ---- UnsortedSegmentMax/Min/Prod(data, segment_ids, num_segments): UnsortedSegmentSum's shape
// (array_index.cc) with another reduction; a segment no row names holds the reduction's identity. Negative
// ids drop rows.

Status segment_reduce_shape(InferContext& ctx) {
  const Shape &data = ctx.inputs[0].shape, &ids = ctx.inputs[1].shape;
  const Shape& num_spec = ctx.inputs[2].shape;
  const std::string& op = ctx.op->name;
  if (num_spec.rank_known() && num_spec.rank() != 0)
    return invalid_argument(op, ": num_segments must be a scalar, got shape ", num_spec.to_string());
  const PartialValue num_value = ctx.value_of(2);
  const int64_t num = num_value.fully_known() ? num_value.values[0] : kUnknownDim;
  if (num_value.fully_known() && num < 0)
    return invalid_argument(op, ": num_segments must be >= 0, got ", num);
  if (!data.rank_known() || !ids.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  bool ok = ids.rank() <= data.rank();
  for (int d = 0; ok && d < ids.rank(); ++d)
    ok = ids.dim(d) < 0 || data.dim(d) < 0 || ids.dim(d) == data.dim(d);
  if (!ok)
    return invalid_argument(op, ": segment_ids' shape ", ids.to_string(),
                            " must be a prefix of data's shape ", data.to_string());
  Shape out({num});
  for (int d = ids.rank(); d < data.rank(); ++d) out.push_back(data.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

template <ScatterMode kMode>
Status segment_reduce_kernel(KernelContext& ctx) {
  const TensorImpl &data = ctx.input(0), &ids = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  const int64_t num = out.shape().dim(0), n = ids.num_elements();
  const int64_t inner = product(data.shape(), ids.rank(), data.rank());
  std::vector<int64_t> offsets;
  std::vector<int64_t> rows;
  offsets.reserve(static_cast<size_t>(n));
  rows.reserve(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t id = kernels::load_index(ids.raw_data(), ids.dtype(), j);
    if (id >= num)
      return invalid_argument(ctx.op->name, ": segment_ids[", j, "] = ", id, " is out of range [0, ", num,
                              ")");
    if (id < 0) continue;
    offsets.push_back(id);
    rows.push_back(j);
  }
  kernels::fill_identity(out.dtype(), kMode, out.num_elements(), out.mutable_raw_data());
  if (out.num_elements() == 0) return Status::OK();
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(data.dtype());
  const char* src = static_cast<const char*>(data.raw_data());
  // Rows with negative ids are left out; when none are, the data is already the packed updates.
  std::vector<char> packed;
  if (static_cast<int64_t>(rows.size()) != n) {
    packed.resize(rows.size() * row_bytes);
    for (size_t k = 0; k < rows.size(); ++k)
      std::memcpy(packed.data() + k * row_bytes, src + rows[k] * row_bytes, row_bytes);
    src = packed.data();
  }
  kernels::scatter_nd(offsets.data(), static_cast<int64_t>(offsets.size()), inner, src, data.dtype(), kMode,
                      out.mutable_raw_data());
  return Status::OK();
}

// ---- SegmentSum/Mean/Max/Min/Prod(data, segment_ids): the sorted forms. ids is a vector over data's rows,
// sorted and non-negative (checked, as TensorFlow's CPU kernels); the result has the last id + 1 rows, and an
// empty segment holds 0 (1 for Prod), unlike the unsorted forms.

Status sorted_segment_shape(InferContext& ctx) {
  const Shape &data = ctx.inputs[0].shape, &ids = ctx.inputs[1].shape;
  const std::string& op = ctx.op->name;
  if (ids.rank_known() && ids.rank() != 1)
    return invalid_argument(op, ": segment_ids should be a vector, got shape ", ids.to_string());
  if (data.rank_known() && data.rank() == 0)
    return invalid_argument(op, ": data must be at least 1-D, got a scalar");
  if (data.rank_known() && ids.rank_known() && data.dim(0) >= 0 && ids.dim(0) >= 0 &&
      data.dim(0) != ids.dim(0))
    return invalid_argument(op, ": segment_ids should be the same size as dimension 0 of data, got ",
                            ids.dim(0), " and ", data.to_string());
  Shape out = data;
  if (out.rank_known()) out.set_dim(0, kUnknownDim);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

template <ScatterMode kMode, bool kMean>
Status sorted_segment_kernel(KernelContext& ctx) {
  const TensorImpl &data = ctx.input(0), &ids = ctx.input(1);
  const std::string& op = ctx.op->name;
  if (ids.rank() != 1 || data.rank() == 0 || ids.shape().dim(0) != data.shape().dim(0))
    return invalid_argument(op, ": segment_ids should be a vector the size of dimension 0 of data, got ",
                            ids.shape().to_string(), " and ", data.shape().to_string());
  const int64_t n = ids.num_elements();
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    offsets[j] = kernels::load_index(ids.raw_data(), ids.dtype(), j);
    if (offsets[j] < 0)
      return invalid_argument(op, ": segment ids must be >= 0, got segment_ids[", j, "] = ", offsets[j]);
    if (j > 0 && offsets[j] < offsets[j - 1])
      return invalid_argument(op, ": segment ids are not increasing: segment_ids[", j, "] = ", offsets[j],
                              " follows ", offsets[j - 1]);
  }
  const int64_t num = n == 0 ? 0 : offsets[n - 1] + 1;
  Shape shape = data.shape();
  shape.set_dim(0, num);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, data.dtype(), shape));
  TensorImpl& out = ctx.output(0);
  const int64_t inner = product(data.shape(), 1, data.rank());
  // Empty segments hold 0 (Prod: 1): the rows are filled so, then every non-empty one is reset to the
  // reduction's identity before its rows are applied.
  kernels::fill_identity(out.dtype(), kMode == ScatterMode::kMul ? kMode : ScatterMode::kAdd,
                         out.num_elements(), out.mutable_raw_data());
  if (out.num_elements() == 0) return Status::OK();
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(data.dtype());
  if (kMode == ScatterMode::kMin || kMode == ScatterMode::kMax) {
    char* base = static_cast<char*>(out.mutable_raw_data());
    for (int64_t j = 0; j < n; ++j)
      if (j == 0 || offsets[j] != offsets[j - 1])
        std::memcpy(base + offsets[j] * row_bytes, static_cast<const char*>(data.raw_data()) + j * row_bytes,
                    row_bytes);
  }
  kernels::scatter_nd(offsets.data(), n, inner, data.raw_data(), data.dtype(), kMode, out.mutable_raw_data());
  if constexpr (kMean) {
    visit_dtype<kNumericAndComplexTypes>(out.dtype(), [&]<typename T>() {
      T* o = out.mutable_data<T>();
      for (int64_t j = 0, start = 0; j <= n; ++j) {
        if (j < n && offsets[j] == offsets[start]) continue;
        const int64_t count = j - start;
        T* row = o + offsets[start] * inner;
        for (int64_t i = 0; i < inner; ++i) {
          if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
            row[i] = T(static_cast<float>(row[i]) / static_cast<float>(count));
          } else {
            row[i] = static_cast<T>(row[i] / static_cast<T>(count));
          }
        }
        start = j;
      }
    });
  }
  return Status::OK();
}

// ---- Gradients: each op's adjoint is the other kind (gathers scatter dy back, scatters gather it).

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

void gather_nd_grad(GradContext& c) {
  c.set(0, emit1("ScatterNd", {c.input(1), c.grad(), shape_of(c.input(0))}));
}

void scatter_nd_grad(GradContext& c) { c.set(1, emit1("GatherNd", {c.grad(), c.input(0)})); }

// Overwritten elements of tensor get no gradient; with duplicate indices every update gets dy (as TF).
void tensor_scatter_update_grad(GradContext& c) {
  c.set(0, emit1("TensorScatterUpdate", {c.grad(), c.input(1), zeros_like(c.input(2))}));
  c.set(2, emit1("GatherNd", {c.grad(), c.input(1)}));
}

void tensor_scatter_add_grad(GradContext& c) {
  c.set(0, c.grad());
  c.set(2, emit1("GatherNd", {c.grad(), c.input(1)}));
}

void tensor_scatter_sub_grad(GradContext& c) {
  c.set(0, c.grad());
  c.set(2, -emit1("GatherNd", {c.grad(), c.input(1)}));
}

// TensorFlow's rule: dy is shared equally among the candidates (tensor's element and every update) equal
// to the result.
void tensor_scatter_min_max_grad(GradContext& c) {
  const GradTensor x = c.input(0), indices = c.input(1), y = c.input(2), out = c.output(0), dy = c.grad();
  const GradTensor x_won = mask(compare("Equal", x, out), dy.dtype());
  const GradTensor y_out = emit1("GatherNd", {out, indices});
  const GradTensor y_won = mask(compare("Equal", y, y_out), dy.dtype());
  const GradTensor winners = x_won + emit1("ScatterNd", {indices, y_won, shape_of(x)});
  const GradTensor share = dy / winners;
  c.set(0, share * x_won);
  c.set(2, emit1("GatherNd", {share, indices}) * y_won);
}

// The ids with negative ones made 0 (their rows are masked out by the callers), and the mask of kept rows
// shaped to broadcast against data.
void segment_rows(GradContext& c, GradTensor* ids, GradTensor* kept) {
  const GradTensor raw = c.input(1);
  if (!raw.shape().rank_known() || !c.input(0).shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, c.op->name, ": the gradient needs the ranks of its inputs"));
  const GradTensor zero = scalar(0, raw.dtype());
  *ids = binary("Maximum", raw, zero);
  *kept = compare("GreaterEqual", raw, zero);
  for (int d = raw.rank(); d < c.input(0).rank(); ++d) *kept = expand_dims(*kept, -1);
}

GradTensor gather_rows(const GradTensor& x, const GradTensor& ids) {
  return emit1("GatherV2", {x, ids, scalar(0, DType::kInt32)});
}

// TensorFlow's rule: dy is shared equally by the rows equal to their segment's result.
void segment_min_max_grad(GradContext& c) {
  const GradTensor data = c.input(0), out = c.output(0), dy = c.grad();
  GradTensor ids, kept;
  segment_rows(c, &ids, &kept);
  const GradTensor zero = scalar(0, dy.dtype());
  const GradTensor chosen =
      select(kept, mask(compare("Equal", data, gather_rows(out, ids)), dy.dtype()), zero);
  const GradTensor count = emit1("UnsortedSegmentSum", {chosen, c.input(1), c.input(2)});
  c.set(0, chosen * gather_rows(dy / binary("Maximum", count, scalar(1, dy.dtype())), ids));
}

// Counts of rows (per segment) are kept in a real dtype: Greater and Maximum are not declared for complex.
DType count_dtype(DType d) { return is_complex(d) ? real_dtype(d) : d; }

// d prod / d x_j is the product of the segment's other rows: the result over x_j where x_j != 0; where x_j
// is the segment's only zero, the product of its non-zero rows; where the segment has two zeros, 0. For
// complex data TensorFlow does not conjugate it (dy times the product of the others), nor does ember.
void segment_prod_grad(GradContext& c) {
  const GradTensor data = c.input(0), out = c.output(0), dy = c.grad();
  GradTensor ids, kept;
  segment_rows(c, &ids, &kept);
  const GradTensor zero = scalar(0, dy.dtype()), one = scalar(1, dy.dtype());
  const GradTensor is_zero = compare("Equal", data, zero);
  const DType counts = count_dtype(dy.dtype());
  const GradTensor zeros = emit1("UnsortedSegmentSum", {mask(is_zero, counts), c.input(1), c.input(2)});
  const GradTensor non_zero = select(is_zero, one, data);
  const GradTensor non_zero_prod = emit1("UnsortedSegmentProd", {non_zero, c.input(1), c.input(2)});
  const GradTensor others =
      select(is_zero, gather_rows(non_zero_prod, ids), gather_rows(out, ids) / non_zero);
  const GradTensor dy_rows = gather_rows(select(compare("Greater", zeros, scalar(1, counts)), zero, dy), ids);
  c.set(0, select(kept, dy_rows * others, zero));
}

GradTensor sorted_segment_count(const GradTensor& ids, const GradTensor& num, DType dtype) {
  return emit1("UnsortedSegmentSum", {ones_like(cast(ids, dtype)), ids, num});
}

// The count (or any [num] vector) shaped [num, 1, ...] to broadcast against data-shaped rows.
GradTensor per_row(GradTensor v, int rank) {
  for (int d = 1; d < rank; ++d) v = expand_dims(v, -1);
  return v;
}

void sorted_segment_grad(GradContext& c) {
  const GradTensor data = c.input(0), ids = c.input(1), out = c.output(0), dy = c.grad();
  if (!data.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, c.op->name, ": the gradient needs the rank of data"));
  const int rank = data.rank();
  const GradTensor num = dims_product(out, 0, 1);
  const std::string& op = c.op->name;
  if (op == "SegmentSum") return c.set(0, gather_rows(dy, ids));
  const GradTensor one = scalar(1, dy.dtype());
  const DType counts = count_dtype(dy.dtype());
  const GradTensor count_one = scalar(1, counts);
  if (op == "SegmentMean") {
    const GradTensor count = per_row(sorted_segment_count(ids, num, counts), rank);
    return c.set(0, gather_rows(dy / cast(binary("Maximum", count, count_one), dy.dtype()), ids));
  }
  if (op == "SegmentProd") {  // segment_prod_grad's rule, unconjugated for complex as TensorFlow's
    const GradTensor zero = scalar(0, dy.dtype());
    const GradTensor is_zero = compare("Equal", data, zero);
    const GradTensor zeros = emit1("UnsortedSegmentSum", {mask(is_zero, counts), ids, num});
    const GradTensor non_zero = select(is_zero, one, data);
    const GradTensor non_zero_prod = emit1("UnsortedSegmentProd", {non_zero, ids, num});
    const GradTensor others =
        select(is_zero, gather_rows(non_zero_prod, ids), gather_rows(out, ids) / non_zero);
    return c.set(0, gather_rows(select(compare("Greater", zeros, count_one), zero, dy), ids) * others);
  }
  const GradTensor chosen = mask(compare("Equal", data, gather_rows(out, ids)), dy.dtype());
  const GradTensor winners = emit1("UnsortedSegmentSum", {chosen, ids, num});
  c.set(0, chosen * gather_rows(dy / binary("Maximum", winners, one), ids));
}

}  // namespace

static void register_resource_scatter_ops(OpRegistry& r) {
  struct ResourceRow {
    const char* name;
    KernelFn kernel;
    ShapeFn shape;
    DTypeSet types;
    const char* doc;
  };
  const ResourceRow rows[] = {
      {"ResourceScatterNdUpdate", &resource_scatter_kernel<ScatterMode::kUpdate, true>,
       &resource_scatter_shape<true>, kAllTypes,
       "Sets the variable's slices at the index tuples to updates. v.scatter_nd_update([[1]], [5.])"},
      {"ResourceScatterNdAdd", &resource_scatter_kernel<ScatterMode::kAdd, true>,
       &resource_scatter_shape<true>, kNumericTypes,
       "Adds updates to the variable's slices at the index tuples. v.scatter_nd_add([[1]], [5.])"},
      {"ResourceScatterNdSub", &resource_scatter_kernel<ScatterMode::kSub, true>,
       &resource_scatter_shape<true>, kNumericTypes,
       "Subtracts updates from the variable's slices at the index tuples. v.scatter_nd_sub([[1]], [5.])"},
      {"ResourceScatterNdMin", &resource_scatter_kernel<ScatterMode::kMin, true>,
       &resource_scatter_shape<true>, kNumericTypes,
       "The minimum of the variable's slices at the index tuples and updates. v.scatter_nd_min([[1]], [5.])"},
      {"ResourceScatterNdMax", &resource_scatter_kernel<ScatterMode::kMax, true>,
       &resource_scatter_shape<true>, kNumericTypes,
       "The maximum of the variable's slices at the index tuples and updates. v.scatter_nd_max([[1]], [5.])"},
      {"ResourceScatterUpdate", &resource_scatter_kernel<ScatterMode::kUpdate, false>,
       &resource_scatter_shape<false>, kAllTypes,
       "Sets the variable's rows at indices to updates. v.scatter_update(tf.IndexedSlices([5.], [1]))"},
      {"ResourceScatterAdd", &resource_scatter_kernel<ScatterMode::kAdd, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "Adds updates to the variable's rows at indices. v.scatter_add(tf.IndexedSlices([5.], [1]))"},
      {"ResourceScatterSub", &resource_scatter_kernel<ScatterMode::kSub, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "Subtracts updates from the variable's rows at indices. v.scatter_sub(tf.IndexedSlices([5.], [1]))"},
      {"ResourceScatterMul", &resource_scatter_kernel<ScatterMode::kMul, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "Multiplies the variable's rows at indices by updates. v.scatter_mul(tf.IndexedSlices([5.], [1]))"},
      {"ResourceScatterDiv", &resource_scatter_kernel<ScatterMode::kDiv, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "Divides the variable's rows at indices by updates. v.scatter_div(tf.IndexedSlices([5.], [1]))"},
      {"ResourceScatterMin", &resource_scatter_kernel<ScatterMode::kMin, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "The minimum of the variable's rows at indices and updates. v.scatter_min(tf.IndexedSlices([5.], "
       "[1]))"},
      {"ResourceScatterMax", &resource_scatter_kernel<ScatterMode::kMax, false>,
       &resource_scatter_shape<false>, kNumericTypes,
       "The maximum of the variable's rows at indices and updates. v.scatter_max(tf.IndexedSlices([5.], "
       "[1]))"},
  };
  for (const ResourceRow& row : rows) {
    OpBuilder(row.name)
        .doc(row.doc)
        .input_fixed("indices", kIndexTypes)
        .input("updates")
        .type_var(row.types)
        .attr("resource", AttrType::kInt)
        .dispatch_on_input(1)
        .flags(kStateful | kReadsResource | kWritesResource | kNotDifferentiable)
        .shape(row.shape)
        .kernel(row.types, row.kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
}

void register_scatter_nd_ops(OpRegistry& r) {
  OpBuilder("GatherNd")
      .doc(
          "Slices of params at the index tuples in indices' last dim. gather_nd([[1, 2], [3, 4]], [[1, 0], "
          "[0, 1]]) == [3, 2]")
      .input("params")
      .input_fixed("indices", kIndexTypes)
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&gather_nd_shape)
      .kernel(kAllTypesAndComplex, &gather_nd_kernel)
      .grad(&gather_nd_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ScatterNd")
      .doc(
          "Zeros of `shape` with updates added at the index tuples (duplicates sum). scatter_nd([[1], [3]], "
          "[9, 8], [4]) == [0, 9, 0, 8]")
      .input_fixed("indices", kIndexTypes)
      .input("updates")
      .input_shape_like("shape")
      .output("output")
      .type_var(kNumericAndComplexTypes)  // complex: GatherNd's gradient
      .dispatch_on_input(1)
      .shape(&scatter_nd_shape)
      .kernel(kNumericAndComplexTypes, &scatter_nd_kernel)
      .grad(&scatter_nd_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  struct Row {
    const char* name;
    KernelFn kernel;
    GradFn grad;
    DTypeSet types;
    const char* doc;
  };
  const Row rows[] = {
      {"TensorScatterUpdate", &tensor_scatter_kernel<ScatterMode::kUpdate>, &tensor_scatter_update_grad,
       kAllTypes,
       "tensor with the slices at the index tuples replaced by updates (the last duplicate wins). "
       "tensor_scatter_nd_update([1, 2, 3], [[0], [2]], [7, 9]) == [7, 2, 9]"},
      {"TensorScatterAdd", &tensor_scatter_kernel<ScatterMode::kAdd>, &tensor_scatter_add_grad, kNumericTypes,
       "tensor with updates added at the index tuples. tensor_scatter_nd_add([1, 2, 3], [[0], [0]], [1, 1]) "
       "== [3, 2, 3]"},
      {"TensorScatterSub", &tensor_scatter_kernel<ScatterMode::kSub>, &tensor_scatter_sub_grad, kNumericTypes,
       "tensor with updates subtracted at the index tuples. tensor_scatter_nd_sub([1, 2], [[1]], [5]) == "
       "[1, -3]"},
      {"TensorScatterMin", &tensor_scatter_kernel<ScatterMode::kMin>, &tensor_scatter_min_max_grad,
       kNumericTypes,
       "tensor with the minimum of it and updates at the index tuples. tensor_scatter_nd_min([1, 5], [[1]], "
       "[3]) == [1, 3]"},
      {"TensorScatterMax", &tensor_scatter_kernel<ScatterMode::kMax>, &tensor_scatter_min_max_grad,
       kNumericTypes,
       "tensor with the maximum of it and updates at the index tuples. tensor_scatter_nd_max([1, 5], [[0]], "
       "[3]) == [3, 5]"},
  };
  const Row segment_rows[] = {
      {"UnsortedSegmentMax", &segment_reduce_kernel<ScatterMode::kMax>, &segment_min_max_grad, kNumericTypes,
       "The maximum of data's rows per segment id (an empty segment: the dtype's lowest value). "
       "unsorted_segment_max([1, 5, 3], [0, 0, 1], 2) == [5, 3]"},
      {"UnsortedSegmentMin", &segment_reduce_kernel<ScatterMode::kMin>, &segment_min_max_grad, kNumericTypes,
       "The minimum of data's rows per segment id (an empty segment: the dtype's largest value). "
       "unsorted_segment_min([1, 5, 3], [0, 0, 1], 2) == [1, 3]"},
      {"UnsortedSegmentProd", &segment_reduce_kernel<ScatterMode::kMul>, &segment_prod_grad,
       kNumericAndComplexTypes,
       "The product of data's rows per segment id (an empty segment: 1). unsorted_segment_prod([2, 5, 3], "
       "[0, "
       "0, 1], 2) == [10, 3]"},
  };
  const Row sorted_rows[] = {
      {"SegmentSum", &sorted_segment_kernel<ScatterMode::kAdd, false>, &sorted_segment_grad,
       kNumericAndComplexTypes,
       "Sums of data's rows per sorted segment id; last id + 1 rows. segment_sum([1, 2, 3], [0, 0, 2]) == "
       "[3, 0, "
       "3]"},
      {"SegmentMean", &sorted_segment_kernel<ScatterMode::kAdd, true>, &sorted_segment_grad,
       kNumericAndComplexTypes,
       "Means of data's rows per sorted segment id (an empty segment: 0). segment_mean([1, 3, 5], [0, 0, 1]) "
       "== "
       "[2, 5]"},
      {"SegmentMax", &sorted_segment_kernel<ScatterMode::kMax, false>, &sorted_segment_grad, kNumericTypes,
       "Maxima of data's rows per sorted segment id (an empty segment: 0). segment_max([1, 3, 5], [0, 0, 1]) "
       "== "
       "[3, 5]"},
      {"SegmentMin", &sorted_segment_kernel<ScatterMode::kMin, false>, &sorted_segment_grad, kNumericTypes,
       "Minima of data's rows per sorted segment id (an empty segment: 0). segment_min([1, 3, 5], [0, 0, 1]) "
       "== "
       "[1, 5]"},
      {"SegmentProd", &sorted_segment_kernel<ScatterMode::kMul, false>, &sorted_segment_grad,
       kNumericAndComplexTypes,
       "Products of data's rows per sorted segment id (an empty segment: 1). segment_prod([2, 3, 5], [0, 0, "
       "1]) "
       "== [6, 5]"},
  };
  for (const Row& row : sorted_rows) {
    OpBuilder(row.name)
        .doc(row.doc)
        .input("data")
        .input_fixed("segment_ids", kIndexTypes)
        .output("output")
        .type_var(row.types)
        .flags(kKernelAllocates)
        .shape(&sorted_segment_shape)
        .kernel(row.types, row.kernel)
        .grad(row.grad)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  for (const Row& row : segment_rows) {
    OpBuilder(row.name)
        .doc(row.doc)
        .input("data")
        .input_fixed("segment_ids", kIndexTypes)
        .input_shape_like("num_segments")
        .output("output")
        .type_var(row.types)
        .shape(&segment_reduce_shape)
        .kernel(row.types, row.kernel)
        .grad(row.grad)
        .batching(BatchingRule::kCustom)
        .done(r);
  }
  for (const Row& row : rows) {
    OpBuilder(row.name)
        .doc(row.doc)
        .input("tensor")
        .input_fixed("indices", kIndexTypes)
        .input("updates")
        .output("output")
        .type_var(row.types)
        .flags(kOverwritesInput0)
        .shape(&tensor_scatter_shape)
        .kernel(row.types, row.kernel)
        .grad(row.grad)
        .batching(BatchingRule::kCustom)
        .done(r);
  }
  register_resource_scatter_ops(r);
}

}  // namespace ember

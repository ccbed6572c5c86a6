// tf.sets' ops: SetSize, DenseToDenseSetOperation, DenseToSparseSetOperation and
// SparseToSparseSetOperation. Each operand is a dense tensor or a SparseTensor (indices, values, shape) of
// rank >= 2; every position of its dimensions but the last (a "group") holds the set of the values in that
// row. A set operation gives, per group, the sorted distinct result values as a SparseTensor whose last
// dimension is the longest result; SetSize gives each group's count. None is differentiable (TensorFlow
// registers no gradients for them). Python: python/ember/sets.py.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// TensorFlow also takes uint16, a dtype ember does not have.
constexpr DTypeSet kSetTypes = dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) | dtype_bit(DType::kInt32) |
                               dtype_bit(DType::kInt64) | dtype_bit(DType::kUInt8) |
                               dtype_bit(DType::kString);

enum SetAttr { kSetOperation, kValidateIndices };
enum class SetOp { kAMinusB, kBMinusA, kIntersection, kUnion };

StatusOr<SetOp> parse_set_operation(const std::string& op, const std::string& name) {
  if (name == "a-b") return SetOp::kAMinusB;
  if (name == "b-a") return SetOp::kBMinusA;
  if (name == "intersection") return SetOp::kIntersection;
  if (name == "union") return SetOp::kUnion;
  return invalid_argument(op, ": Invalid set_operation ", name,
                          ". Expected one of \"a-b\", \"b-a\", \"intersection\", \"union\"");
}

std::string dims_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The values of each group, keyed by the group's row-major position among all groups, so that walking the
// map visits groups in the order TensorFlow emits them.
template <typename T>
struct SetOperand {
  std::vector<int64_t> group_shape;
  std::map<int64_t, std::set<T>> groups;
};

Status check_rank(const std::string& op, std::span<const int64_t> shape) {
  if (shape.size() < 2)
    return invalid_argument(op, ": Shape ", dims_text(shape), " has rank ", shape.size(), " < 2");
  return Status::OK();
}

template <typename T>
StatusOr<SetOperand<T>> read_dense(const std::string& op, const TensorImpl& t) {
  const std::span<const int64_t> dims = t.shape().dims();
  EMBER_RETURN_IF_ERROR(check_rank(op, dims));
  SetOperand<T> out;
  out.group_shape.assign(dims.begin(), dims.end() - 1);
  const int64_t width = dims.back(), rows = width == 0 ? 0 : t.num_elements() / width;
  const T* v = t.data<T>();
  for (int64_t g = 0; g < rows; ++g) out.groups[g].insert(v + g * width, v + (g + 1) * width);
  return out;
}

// TensorFlow's SparseTensor checks with validate_indices: each index in bounds, in row-major order, not
// repeated. Without them the group dims are still bounds-checked, as they address the output.
template <typename T>
StatusOr<SetOperand<T>> read_sparse(const std::string& op, const TensorImpl& indices,
                                    const TensorImpl& values, const TensorImpl& shape, bool validate) {
  if (shape.rank() != 1)
    return invalid_argument(op, ": set shape must be a vector, got shape ", shape.shape().to_string());
  const int64_t rank = shape.num_elements();
  const int64_t* dims = shape.data<int64_t>();
  EMBER_RETURN_IF_ERROR(check_rank(op, std::span<const int64_t>(dims, static_cast<size_t>(rank))));
  for (int64_t d = 0; d < rank; ++d)
    if (dims[d] < 0)
      return invalid_argument(op, ": set shape must not have negative dims, got ",
                              dims_text(std::span<const int64_t>(dims, static_cast<size_t>(rank))));
  if (indices.rank() != 2)
    return invalid_argument(op, ": set indices must be a matrix, got shape ", indices.shape().to_string());
  if (indices.shape().dim(1) != rank)
    return invalid_argument(op, ": Order length must be SparseTensor rank: indices have ",
                            indices.shape().dim(1), " columns but the shape has ", rank, " dims");
  const int64_t n = indices.shape().dim(0);
  if (values.rank() != 1 || values.shape().dim(0) != n)
    return invalid_argument(op, ": indices and values rows (indexing dimension) must match. (indices = ", n,
                            ", values = ", values.rank() == 1 ? values.shape().dim(0) : values.num_elements(),
                            ")");
  // Rows are keyed by their row-major position, which must fit an int64.
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (dims[d] != 0 && rows > std::numeric_limits<int64_t>::max() / dims[d])
      return invalid_argument(op, ": set shape ",
                              dims_text(std::span<const int64_t>(dims, static_cast<size_t>(rank))),
                              " has more rows than an int64 counts");
    else
      rows *= dims[d];
  SetOperand<T> out;
  out.group_shape.assign(dims, dims + rank - 1);
  const int64_t* ix = indices.data<int64_t>();
  const T* v = values.data<T>();
  const std::string shape_text = dims_text(std::span<const int64_t>(dims, static_cast<size_t>(rank)));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* row = ix + i * rank;
    const std::span<const int64_t> where(row, static_cast<size_t>(rank));
    if (validate) {
      for (int64_t d = 0; d < rank; ++d)
        if (row[d] < 0 || row[d] >= dims[d])
          return invalid_argument(op, ": indices[", i, "] = ", dims_text(where),
                                  " is out of bounds: need 0 <= index < ", shape_text);
      if (i > 0) {
        const int64_t* prev = row - rank;
        const int c = std::lexicographical_compare(row, row + rank, prev, prev + rank)   ? -1
                      : std::lexicographical_compare(prev, prev + rank, row, row + rank) ? 1
                                                                                         : 0;
        if (c == 0) return invalid_argument(op, ": indices[", i, "] = ", dims_text(where), " is repeated");
        if (c < 0)
          return invalid_argument(op, ": indices[", i, "] = ", dims_text(where),
                                  " is out of order. Many sparse ops require sorted indices. Use "
                                  "`tf.sparse.reorder` to create a correctly ordered copy.");
      }
    }
    int64_t group = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      if (row[d] < 0 || row[d] >= dims[d])
        return invalid_argument(op, ": indices[", i, ", ", d, "] expected in [0, ", dims[d], "), got ",
                                row[d]);
      group = group * dims[d] + row[d];
    }
    out.groups[group].insert(v[i]);
  }
  return out;
}

// The positions of group `g` of `group_shape`, row-major.
void group_index(int64_t g, const std::vector<int64_t>& group_shape, int64_t* out) {
  for (size_t d = group_shape.size(); d-- > 0;) {
    out[d] = g % group_shape[d];
    g /= group_shape[d];
  }
}

template <typename T>
std::vector<T> combine(SetOp kind, const std::set<T>& a, const std::set<T>& b) {
  std::vector<T> out;
  auto to = std::back_inserter(out);
  switch (kind) {
    case SetOp::kAMinusB:
      std::set_difference(a.begin(), a.end(), b.begin(), b.end(), to);
      break;
    case SetOp::kBMinusA:
      std::set_difference(b.begin(), b.end(), a.begin(), a.end(), to);
      break;
    case SetOp::kIntersection:
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), to);
      break;
    case SetOp::kUnion:
      std::set_union(a.begin(), a.end(), b.begin(), b.end(), to);
      break;
  }
  return out;
}

template <typename T>
Status write_set_operation(KernelContext& ctx, SetOp kind, DType dtype, const SetOperand<T>& a,
                           const SetOperand<T>& b) {
  const std::string& op = ctx.op->name;
  if (a.group_shape != b.group_shape)
    return invalid_argument(op, ": Mismatched shapes ", dims_text(a.group_shape), " vs ",
                            dims_text(b.group_shape), " (the operands' dimensions but the last)");
  const std::set<T> none;
  std::vector<std::pair<int64_t, std::vector<T>>> results;
  auto a_it = a.groups.begin(), b_it = b.groups.begin();
  while (a_it != a.groups.end() || b_it != b.groups.end()) {
    const int64_t g = b_it == b.groups.end()   ? a_it->first
                      : a_it == a.groups.end() ? b_it->first
                                               : std::min(a_it->first, b_it->first);
    const bool in_a = a_it != a.groups.end() && a_it->first == g;
    const bool in_b = b_it != b.groups.end() && b_it->first == g;
    std::vector<T> values = combine(kind, in_a ? a_it->second : none, in_b ? b_it->second : none);
    if (!values.empty()) results.emplace_back(g, std::move(values));
    if (in_a) ++a_it;
    if (in_b) ++b_it;
  }
  int64_t total = 0, widest = 0;
  for (const auto& [g, values] : results) {
    total += static_cast<int64_t>(values.size());
    widest = std::max(widest, static_cast<int64_t>(values.size()));
  }
  const int64_t rank = static_cast<int64_t>(a.group_shape.size()) + 1;
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt64, Shape({total, rank})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, dtype, Shape({total})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2, DType::kInt64, Shape({rank})));
  int64_t* indices = ctx.output(0).mutable_data<int64_t>();
  T* out = ctx.output(1).mutable_data<T>();
  int64_t* shape = ctx.output(2).mutable_data<int64_t>();
  std::copy(a.group_shape.begin(), a.group_shape.end(), shape);
  shape[rank - 1] = widest;
  for (const auto& [g, values] : results) {
    for (size_t k = 0; k < values.size(); ++k) {
      group_index(g, a.group_shape, indices);
      indices[rank - 1] = static_cast<int64_t>(k);
      indices += rank;
      *out++ = values[k];
    }
  }
  return Status::OK();
}

// Inputs: each operand is one dense tensor or three (indices, values, shape); `dense_a`/`dense_b` say which.
template <bool kDenseA, bool kDenseB>
Status set_operation_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  auto kind = parse_set_operation(op, ctx.attr_string(kSetOperation));
  if (!kind.ok()) return kind.status();
  const bool validate = ctx.attr_bool(kValidateIndices);
  const int b_first = kDenseA ? 1 : 3;
  const DType dtype = ctx.input(kDenseA ? 0 : 1).dtype();
  Status status = Status::OK();
  visit_dtype<kSetTypes>(dtype, [&]<typename T>() {
    auto a = kDenseA ? read_dense<T>(op, ctx.input(0))
                     : read_sparse<T>(op, ctx.input(0), ctx.input(1), ctx.input(2), validate);
    if (!a.ok()) {
      status = a.status();
      return;
    }
    auto b = kDenseB ? read_dense<T>(op, ctx.input(b_first))
                     : read_sparse<T>(op, ctx.input(b_first), ctx.input(b_first + 1), ctx.input(b_first + 2),
                                      validate);
    if (!b.ok()) {
      status = b.status();
      return;
    }
    status = write_set_operation(ctx, *kind, dtype, *a, *b);
  });
  return status;
}

// The rank an operand gives its result: a dense operand's, or the length of a sparse operand's shape.
int64_t operand_rank(const InferContext& ctx, int first, bool dense) {
  if (dense) return ctx.inputs[first].shape.rank_known() ? ctx.inputs[first].shape.rank() : kUnknownDim;
  const Shape& shape = ctx.inputs[first + 2].shape;
  if (shape.rank_known() && shape.rank() == 1 && shape.dim(0) >= 0) return shape.dim(0);
  const Shape& indices = ctx.inputs[first].shape;
  return indices.rank_known() && indices.rank() == 2 ? indices.dim(1) : kUnknownDim;
}

template <bool kDenseA, bool kDenseB>
Status set_operation_shape(InferContext& ctx) {
  const std::string& op = ctx.op->name;
  auto kind = parse_set_operation(op, ctx.attr_string(kSetOperation));
  if (!kind.ok()) return kind.status();
  const int b_first = kDenseA ? 1 : 3;
  const int64_t rank_a = operand_rank(ctx, 0, kDenseA), rank_b = operand_rank(ctx, b_first, kDenseB);
  for (const auto& [first, dense] : {std::pair{0, kDenseA}, std::pair{b_first, kDenseB}}) {
    const int64_t rank = operand_rank(ctx, first, dense);
    if (rank < 0 || rank >= 2) continue;
    if (dense)  // TensorFlow's words, the dims as the shape is known
      return invalid_argument(op, ": Shape ", ctx.inputs[first].shape.to_string(), " has rank ", rank,
                              " < 2");
    return invalid_argument(op, ": Invalid rank ", rank, " of a sparse operand (need >= 2)");
  }
  if (rank_a >= 0 && rank_b >= 0 && rank_a != rank_b)
    return invalid_argument(op, ": Mismatched shapes: the operands have ranks ", rank_a, " and ", rank_b);
  const int64_t rank = rank_a >= 0 ? rank_a : rank_b;
  ctx.outputs.push_back({DType::kInt64, Shape({kUnknownDim, rank})});
  ctx.outputs.push_back({ctx.inputs[kDenseA ? 0 : 1].dtype, Shape({kUnknownDim})});
  ctx.outputs.push_back({DType::kInt64, Shape({rank})});
  return Status::OK();
}

Status set_size_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const bool validate = ctx.attr_bool(0);
  Status status = Status::OK();
  visit_dtype<kSetTypes>(ctx.input(1).dtype(), [&]<typename T>() {
    auto a = read_sparse<T>(op, ctx.input(0), ctx.input(1), ctx.input(2), validate);
    if (!a.ok()) {
      status = a.status();
      return;
    }
    status = allocate_output(ctx, 0, DType::kInt32, Shape(std::span<const int64_t>(a->group_shape)));
    if (!status.ok()) return;
    int32_t* out = ctx.output(0).mutable_data<int32_t>();
    std::fill(out, out + ctx.output(0).num_elements(), 0);
    for (const auto& [g, members] : a->groups) out[g] = static_cast<int32_t>(members.size());
  });
  return status;
}

Status set_size_shape(InferContext& ctx) {
  const Shape& shape = ctx.inputs[2].shape;
  if (shape.rank_known() && shape.rank() != 1)
    return invalid_argument("SetSize: set_shape must be a vector, got shape ", shape.to_string());
  if (!shape.rank_known() || shape.dim(0) < 0) {
    ctx.outputs.push_back({DType::kInt32, Shape::unknown_rank()});
    return Status::OK();
  }
  if (shape.dim(0) < 2) return invalid_argument("SetSize: Invalid rank ", shape.dim(0), " (need >= 2)");
  std::vector<int64_t> dims(static_cast<size_t>(shape.dim(0) - 1), kUnknownDim);
  ctx.outputs.push_back({DType::kInt32, Shape(std::span<const int64_t>(dims))});
  return Status::OK();
}

}  // namespace

void register_set_ops(OpRegistry& r) {
  const DTypeSet int64_only = dtype_bit(DType::kInt64);
  OpBuilder("SetSize")
      .doc(
          "The number of distinct values in each row (all dimensions but the last) of a SparseTensor "
          "(indices, values, shape). set_size([[0, 0], [0, 1]], [3, 3], [1, 2]) == [1]")
      .input_fixed("set_indices", int64_only)
      .input("set_values")
      .input_fixed("set_shape", int64_only)
      .output("size")
      .type_var(kSetTypes)
      .attr("validate_indices", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&set_size_shape)
      .kernel(kSetTypes, &set_size_kernel)
      .dispatch_on_input(1)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DenseToDenseSetOperation")
      .doc(
          "Per row (all dimensions but the last), the sorted distinct values of set_operation (\"a-b\", "
          "\"b-a\", \"intersection\", \"union\") of set1's and set2's row, as a SparseTensor. "
          "dense_to_dense_set_operation([[1, 2]], [[2, 3]], \"union\") == ([[0, 0], [0, 1], [0, 2]], "
          "[1, 2, 3], [1, 3])")
      .input("set1")
      .input("set2")
      .output("result_indices")
      .output("result_values")
      .output("result_shape")
      .type_var(kSetTypes)
      .attr("set_operation", AttrType::kString)
      .attr("validate_indices", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&set_operation_shape<true, true>)
      .kernel(kSetTypes, &set_operation_kernel<true, true>)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DenseToSparseSetOperation")
      .doc(
          "DenseToDenseSetOperation with set2 a SparseTensor (indices, values, shape). "
          "dense_to_sparse_set_operation([[1, 2]], [[0, 0]], [2], [1, 1], \"a-b\") == ([[0, 0]], [1], [1, "
          "1])")
      .input("set1")
      .input_fixed("set2_indices", int64_only)
      .input("set2_values")
      .input_fixed("set2_shape", int64_only)
      .output("result_indices")
      .output("result_values")
      .output("result_shape")
      .type_var(kSetTypes)
      .attr("set_operation", AttrType::kString)
      .attr("validate_indices", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&set_operation_shape<true, false>)
      .kernel(kSetTypes, &set_operation_kernel<true, false>)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseToSparseSetOperation")
      .doc(
          "DenseToDenseSetOperation with both sets SparseTensors (indices, values, shape). "
          "sparse_to_sparse_set_operation([[0, 0]], [1], [1, 1], [[0, 0]], [1], [1, 1], \"intersection\") == "
          "([[0, 0]], [1], [1, 1])")
      .input_fixed("set1_indices", int64_only)
      .input("set1_values")
      .input_fixed("set1_shape", int64_only)
      .input_fixed("set2_indices", int64_only)
      .input("set2_values")
      .input_fixed("set2_shape", int64_only)
      .output("result_indices")
      .output("result_values")
      .output("result_shape")
      .type_var(kSetTypes)
      .attr("set_operation", AttrType::kString)
      .attr("validate_indices", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&set_operation_shape<false, false>)
      .kernel(kSetTypes, &set_operation_kernel<false, false>)
      .dispatch_on_input(1)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

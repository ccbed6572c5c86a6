// RaggedTensorToTensor (RaggedTensor.to_tensor) and its adjoint RaggedTensorToTensorGrad. A RaggedTensor
// reaches these ops as its flat values and one row_splits vector per ragged dimension, outermost first
// (python/ember/ragged/, docs/composite.md). TensorFlow's op also takes row partitions of other kinds
// (row_partition_types: VALUE_ROWIDS, FIRST_DIM_SIZE); ember's takes row splits only, the form ember's
// RaggedTensor keeps. Registered from register_array_index_ops (array_index.cc).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// ---- Shapes: [nrows, longest row of each ragged dimension..., values' inner dims], where `shape` (a vector,
// -1 or a scalar -1 for unknown) does not give a dim.

Status to_tensor_shape(InferContext& ctx) {
  const int n = static_cast<int>(ctx.inputs.size()) - 3;
  const Shape& values = ctx.inputs[1].shape;
  const Shape& def = ctx.inputs[2].shape;
  if (n < 1) return invalid_argument("RaggedTensorToTensor: expected at least one row_splits tensor");
  if (values.rank_known() && values.rank() == 0)
    return invalid_argument("RaggedTensorToTensor: values must have rank >= 1, got a scalar");
  for (int k = 0; k < n; ++k) {
    const Shape& s = ctx.inputs[3 + k].shape;
    if (s.rank_known() && s.rank() != 1)
      return invalid_argument("RaggedTensorToTensor: row_partition_tensors[", k, "] must be a vector, got ",
                              s.to_string());
  }
  if (!values.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const int rank = 1 + n + values.rank() - 1;
  if (def.rank_known() && def.rank() > values.rank() - 1)
    return invalid_argument("RaggedTensorToTensor: default_value of shape ", def.to_string(),
                            " must broadcast to the values' inner shape");
  Shape out;
  const Shape& first = ctx.inputs[3].shape;
  out.push_back(first.rank_known() && first.dim(0) > 0 ? first.dim(0) - 1 : kUnknownDim);
  for (int k = 0; k < n; ++k) out.push_back(kUnknownDim);
  for (int d = 1; d < values.rank(); ++d) out.push_back(values.dim(d));
  const PartialValue given = ctx.value_of(0);
  if (given.length_known && !given.scalar) {
    if (static_cast<int>(given.values.size()) != rank)
      return invalid_argument("RaggedTensorToTensor: shape must have ", rank, " elements, got ",
                              given.values.size());
    for (int d = 0; d < rank; ++d) {
      const int64_t v = given.values[d];
      if (v == PartialValue::kUnknown || v < 0) continue;
      if (d > n && out.dim(d) >= 0 && out.dim(d) != v)
        return invalid_argument("RaggedTensorToTensor: shape[", d, "] = ", v,
                                " differs from the values' inner ", "dimension ", out.dim(d));
      out.set_dim(d, v);
    }
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, out});
  return Status::OK();
}

// Where each value's inner slice lands in the dense result (in inner slices, -1: cut off by `dims`), walking
// the row splits outermost first; validates the splits with TensorFlow's rules.
Status value_offsets(const std::string& op, std::span<TensorImpl* const> splits, int64_t nvals,
                     const std::vector<int64_t>& dims, std::vector<int64_t>* offsets) {
  const int n = static_cast<int>(splits.size());
  std::vector<int64_t> stride(static_cast<size_t>(n) + 1, 1);
  for (int k = n - 1; k >= 0; --k) stride[k] = stride[k + 1] * dims[k + 1];
  const int64_t nrows = splits[0]->num_elements() - 1;
  std::vector<int64_t> base(static_cast<size_t>(std::max<int64_t>(nrows, 0)));
  for (int64_t r = 0; r < nrows; ++r) base[r] = r < dims[0] ? r * stride[0] : -1;
  for (int k = 0; k < n; ++k) {
    const TensorImpl& s = *splits[k];
    const int64_t rows = s.num_elements() - 1;
    if (rows < 0) return invalid_argument(op, ": row_partition_tensors[", k, "] must not be empty");
    if (rows != static_cast<int64_t>(base.size()))
      return invalid_argument(op, ": row_partition_tensors[", k, "] has ", rows + 1, " elements, expected ",
                              base.size() + 1, " (one more than the rows it splits)");
    const int64_t children = k + 1 < n ? splits[k + 1]->num_elements() - 1 : nvals;
    std::vector<int64_t> next(static_cast<size_t>(std::max<int64_t>(children, 0)), -1);
    int64_t previous = kernels::load_index(s.raw_data(), s.dtype(), 0);
    if (previous != 0)
      return invalid_argument(op, ": row_partition_tensors[", k, "] must start with 0, got ", previous);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t limit = kernels::load_index(s.raw_data(), s.dtype(), r + 1);
      if (limit < previous || limit > children)
        return invalid_argument(op, ": row_partition_tensors[", k, "] must be sorted and at most ", children,
                                ", got ", limit, " after ", previous, " at position ", r + 1);
      for (int64_t j = previous; j < limit; ++j) {
        const int64_t c = j - previous;
        next[j] = base[r] >= 0 && c < dims[k + 1] ? base[r] + c * stride[k + 1] : -1;
      }
      previous = limit;
    }
    if (previous != children)
      return invalid_argument(op, ": row_partition_tensors[", k, "] must end with ", children,
                              " (the number of values it splits), got ", previous);
    base = std::move(next);
  }
  *offsets = std::move(base);
  return Status::OK();
}

// Copies value slots between `values` (slot j) and `dense` (slot offsets[j]): to the dense places when
// `scatter`, else back from them (0 for a value cut off). One memcpy per run of values whose places follow
// each other (a row's values are contiguous in both).
void copy_runs(const std::vector<int64_t>& offsets, size_t slot_bytes, bool scatter, const char* from,
               char* to) {
  const size_t n = offsets.size();
  for (size_t j = 0; j < n;) {
    if (offsets[j] < 0) {
      if (!scatter) std::memset(to + j * slot_bytes, 0, slot_bytes);
      ++j;
      continue;
    }
    size_t end = j + 1;
    while (end < n && offsets[end] == offsets[end - 1] + 1) ++end;
    const size_t bytes = (end - j) * slot_bytes;
    if (scatter) {
      std::memcpy(to + offsets[j] * slot_bytes, from + j * slot_bytes, bytes);
    } else {
      std::memcpy(to + j * slot_bytes, from + offsets[j] * slot_bytes, bytes);
    }
    j = end;
  }
}

Status to_tensor_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &values = ctx.input(1), &def = ctx.input(2);
  const int n = static_cast<int>(ctx.inputs.size()) - 3;
  if (values.rank() == 0) return invalid_argument(op, ": values must have rank >= 1, got a scalar");
  const int64_t inner = product(values.shape(), 1, values.rank());
  // The result's dims: `shape` where it gives them, else the row count and each level's longest row.
  const int rank = n + values.rank();
  std::vector<int64_t> given = ctx.int_values(0);
  if (ctx.input(0).rank() == 0) given.assign(static_cast<size_t>(rank), -1);
  if (static_cast<int>(given.size()) != rank)
    return invalid_argument(op, ": shape must have ", rank, " elements, got ", given.size());
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int k = 0; k < n; ++k) {
    const TensorImpl& s = *ctx.inputs[3 + k];
    if (s.rank() != 1 || s.num_elements() == 0)
      return invalid_argument(op, ": row_partition_tensors[", k, "] must be a non-empty vector, got ",
                              s.shape().to_string());
    if (k == 0) dims[0] = s.num_elements() - 1;
    int64_t longest = 0;
    for (int64_t r = 0; r + 1 < s.num_elements(); ++r)
      longest = std::max(longest, kernels::load_index(s.raw_data(), s.dtype(), r + 1) -
                                      kernels::load_index(s.raw_data(), s.dtype(), r));
    dims[k + 1] = longest;
  }
  for (int d = 0; d < rank; ++d) {
    if (d > n) {
      dims[d] = values.shape().dim(d - n);
      if (given[d] >= 0 && given[d] != dims[d])
        return invalid_argument(op, ": shape[", d, "] = ", given[d],
                                " differs from the values' inner dimension ", dims[d]);
    } else if (given[d] >= 0) {
      dims[d] = given[d];
    } else if (given[d] != -1) {
      return invalid_argument(op, ": shape[", d, "] = ", given[d], " must be -1 (the longest) or >= 0");
    }
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, values.dtype(), Shape(dims)));
  TensorImpl& out = ctx.output(0);
  std::vector<int64_t> offsets;
  EMBER_RETURN_IF_ERROR(value_offsets(op, ctx.inputs.subspan(3), values.shape().dim(0), dims, &offsets));
  // The default broadcast to one inner slice, then copied to every slot.
  const size_t size = dtype_size(values.dtype());
  const int def_rank = def.rank(), inner_rank = values.rank() - 1;
  if (def_rank > inner_rank)
    return invalid_argument(op, ": default_value of shape ", def.shape().to_string(), " has more dims than ",
                            "the values' inner shape");
  for (int d = 0; d < def_rank; ++d) {
    const int64_t dd = def.shape().dim(d), vd = values.shape().dim(1 + inner_rank - def_rank + d);
    if (dd != 1 && dd != vd)
      return invalid_argument(op, ": default_value of shape ", def.shape().to_string(),
                              " does not broadcast to the values' inner shape");
  }
  std::vector<char> slot(static_cast<size_t>(inner) * size);
  for (int64_t i = 0; i < inner; ++i) {
    int64_t rem = i, src = 0, src_stride = 1;
    for (int d = inner_rank - 1; d >= 0; --d) {
      const int64_t vd = values.shape().dim(1 + d);
      const int64_t coord = rem % vd;
      rem /= vd;
      const int dd = d - (inner_rank - def_rank);
      if (dd >= 0) {
        const int64_t dim = def.shape().dim(dd);
        src += (dim == 1 ? 0 : coord) * src_stride;
        src_stride *= dim;
      }
    }
    std::memcpy(slot.data() + i * size, static_cast<const char*>(def.raw_data()) + src * size, size);
  }
  char* o = static_cast<char*>(out.mutable_raw_data());
  const int64_t slots = inner > 0 ? out.num_elements() / inner : 0;
  const size_t slot_bytes = slot.size();
  // The default into the first slot, then the filled prefix doubled: a few large copies, not one per slot.
  if (slots > 0) {
    std::memcpy(o, slot.data(), slot_bytes);
    for (int64_t filled = 1; filled < slots;) {
      const int64_t n = std::min(filled, slots - filled);
      std::memcpy(o + filled * slot_bytes, o, static_cast<size_t>(n) * slot_bytes);
      filled += n;
    }
  }
  copy_runs(offsets, slot_bytes, /*scatter=*/true, static_cast<const char*>(values.raw_data()), o);
  return Status::OK();
}

// ---- RaggedTensorToTensorGrad(grad, values, row splits...): grad at each value's place in the dense result
// (0 for a value cut off), shaped like values: the adjoint of RaggedTensorToTensor w.r.t. values.

Status to_tensor_grad_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, ctx.inputs[1].shape});
  return Status::OK();
}

Status to_tensor_grad_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &dy = ctx.input(0), &values = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  const int n = static_cast<int>(ctx.inputs.size()) - 2;
  const int64_t inner = product(values.shape(), 1, values.rank());
  if (dy.rank() != n + values.rank() || product(dy.shape(), n + 1, dy.rank()) != inner)
    return invalid_argument(op, ": grad ", dy.shape().to_string(), " does not fit values ",
                            values.shape().to_string(), " under ", n, " ragged dimensions");
  std::vector<int64_t> offsets;
  EMBER_RETURN_IF_ERROR(
      value_offsets(op, ctx.inputs.subspan(2), values.shape().dim(0), dy.shape().dim_vector(), &offsets));
  const size_t slot_bytes = static_cast<size_t>(inner) * dtype_size(dy.dtype());
  copy_runs(offsets, slot_bytes, /*scatter=*/false, static_cast<const char*>(dy.raw_data()),
            static_cast<char*>(out.mutable_raw_data()));
  return Status::OK();
}

// ---- Gradients: the two ops are each other's adjoint w.r.t. the values; the default takes the rest of dy.

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

std::vector<GradTensor> splits_of(const GradContext& c, int first) {
  std::vector<GradTensor> splits;
  for (int i = first; i < c.num_inputs(); ++i) splits.push_back(c.input(i));
  return splits;
}

void to_tensor_grad(GradContext& c) {
  std::vector<GradTensor> inputs = {c.grad(), c.input(1)};
  for (GradTensor& s : splits_of(c, 3)) inputs.push_back(s);
  const GradTensor dvalues = emit("RaggedTensorToTensorGrad", std::span<const GradTensor>(inputs), {})[0];
  c.set(1, dvalues);
  // Every slot no value filled holds the default: dy summed over the slots, less the values' part.
  const GradTensor dy = c.grad(), def = c.input(2);
  const int n = c.num_inputs() - 3;
  std::vector<int64_t> outer(static_cast<size_t>(n) + 1);
  for (size_t d = 0; d < outer.size(); ++d) outer[d] = static_cast<int64_t>(d);
  const GradTensor per_slot = sum(dy, outer, false) - sum(dvalues, {0}, false);
  c.set(2, reduce_to(per_slot, def));
}

void to_tensor_grad_grad(GradContext& c) {
  // d/d grad of RaggedTensorToTensorGrad: scatter the incoming gradient back with zeros elsewhere.
  std::vector<GradTensor> inputs = {shape_of(c.input(0)), c.grad(), scalar(0, c.grad().dtype())};
  for (GradTensor& s : splits_of(c, 2)) inputs.push_back(s);
  c.set(0, emit("RaggedTensorToTensor", std::span<const GradTensor>(inputs), {})[0]);
}

}  // namespace

void register_ragged_ops(OpRegistry& r) {
  OpBuilder("RaggedTensorToTensor")
      .doc(
          "The dense tensor of a RaggedTensor given as flat values and its row splits (outermost first): "
          "rows "
          "padded with default_value to the longest row, or cut/padded to `shape` (-1: the longest). "
          "ragged_tensor_to_tensor(-1, [1, 2, 3], 0, [0, 2, 3]) == [[1, 2], [3, 0]]")
      .input_shape_like("shape")
      .input("values")
      .input("default_value")
      .input_list("row_partition_tensors", 1)
      .output("result")
      .type_var(kAllTypes)
      .type_var(kIndexTypes, 1)
      .flags(kKernelAllocates)
      .shape(&to_tensor_shape)
      .kernel(kAllTypes, &to_tensor_kernel)
      .dispatch_on_input(1)
      .grad(&to_tensor_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RaggedTensorToTensorGrad")
      .doc(
          "The adjoint of RaggedTensorToTensor w.r.t. its values: grad at each value's place (0 where cut "
          "off). ragged_tensor_to_tensor_grad([[1, 2], [3, 4]], [0, 0, 0], [0, 2, 3]) == [1, 2, 3]")
      .input("grad")
      .input("values")
      .input_list("row_partition_tensors", 1)
      .output("values_grad")
      .type_var(kAllTypes)
      .type_var(kIndexTypes, 1)
      .shape(&to_tensor_grad_shape)
      .kernel(kAllTypes, &to_tensor_grad_kernel)
      .grad(&to_tensor_grad_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

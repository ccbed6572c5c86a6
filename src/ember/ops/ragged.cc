// RaggedTensorToTensor (RaggedTensor.to_tensor) and its adjoint RaggedTensorToTensorGrad. A RaggedTensor
// reaches these ops as its flat values and one row partition per ragged dimension, outermost first
// (python/ember/ragged/, docs/composite.md), of the kinds TensorFlow's op takes: ROW_SPLITS (the form ember's
// RaggedTensor keeps), or FIRST_DIM_SIZE (a scalar row count) followed by VALUE_ROWIDS (each child's row).
// Both ops turn every partition into row splits first (Note [Row partitions]). Registered from
// register_array_index_ops (array_index.cc).
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

// Note [Row partitions]
// TensorFlow's RaggedTensorToTensor names the kind of each partition tensor in `row_partition_types` (a
// list of strings; ember's attribute joins them with commas, "" meaning ROW_SPLITS for every tensor, the
// form ember's own RaggedTensor writes). Its kernel handles two layouts, and so does ember's:
//  - ROW_SPLITS per ragged dimension: rows = splits' length - 1, children = the last split;
//  - FIRST_DIM_SIZE (a scalar, the number of rows), then VALUE_ROWIDS (one row index per child, sorted) or
//    ROW_SPLITS per ragged dimension: a VALUE_ROWIDS level has as many rows as the level above has children
//    (FIRST_DIM_SIZE for the first), so trailing empty rows are kept.
// ROW_LENGTHS, ROW_STARTS and ROW_LIMITS are valid names TensorFlow's kernel refuses ("Cannot handle type"),
// as ember's does. Each level becomes row splits, checked against the level above and the values, and the
// rest of the op works on splits alone.

enum class Partition { kRowSplits, kValueRowids, kFirstDimSize };

// The kinds of `count` partition tensors from the attribute (Note [Row partitions]).
StatusOr<std::vector<Partition>> partition_types(const std::string& op, const std::string& joined,
                                                 int count) {
  std::vector<Partition> types;
  if (joined.empty()) return std::vector<Partition>(static_cast<size_t>(count), Partition::kRowSplits);
  size_t begin = 0;
  while (begin <= joined.size()) {
    size_t end = joined.find(',', begin);
    if (end == std::string::npos) end = joined.size();
    const std::string name = joined.substr(begin, end - begin);
    if (name == "ROW_SPLITS") {
      types.push_back(Partition::kRowSplits);
    } else if (name == "VALUE_ROWIDS") {
      types.push_back(Partition::kValueRowids);
    } else if (name == "FIRST_DIM_SIZE") {
      types.push_back(Partition::kFirstDimSize);
    } else if (name == "ROW_LENGTHS" || name == "ROW_STARTS" || name == "ROW_LIMITS") {
      return invalid_argument(op, ": cannot handle row partition type ", name,
                              " (TensorFlow's kernel takes ROW_SPLITS, or FIRST_DIM_SIZE then VALUE_ROWIDS)");
    } else {
      return invalid_argument(op, ": unknown row partition type '", name,
                              "'; expected ROW_SPLITS, VALUE_ROWIDS or FIRST_DIM_SIZE");
    }
    begin = end + 1;
  }
  if (static_cast<int>(types.size()) != count)
    return invalid_argument(op, ": row_partition_types names ", types.size(), " partitions (", joined,
                            "), but ", count, " row_partition_tensors are given");
  for (size_t k = 0; k < types.size(); ++k) {
    if (types[k] == Partition::kFirstDimSize && k != 0)
      return invalid_argument(op, ": FIRST_DIM_SIZE must be the first row partition, got it at position ", k);
    if (types[k] == Partition::kValueRowids && k == 0)
      return invalid_argument(op, ": VALUE_ROWIDS needs a FIRST_DIM_SIZE before it (the number of rows)");
  }
  if (types[0] == Partition::kFirstDimSize && types.size() < 2)
    return invalid_argument(op, ": FIRST_DIM_SIZE must be followed by a partition of a ragged dimension");
  return types;
}

int first_partition_attr(const OpDef& op) { return op.attr_index("row_partition_types"); }

// ---- Shapes: [nrows, longest row of each ragged dimension..., values' inner dims], where `shape` (a vector,
// -1 or a scalar -1 for unknown) does not give a dim.

Status to_tensor_shape(InferContext& ctx) {
  const int n = static_cast<int>(ctx.inputs.size()) - 3;
  const Shape& values = ctx.inputs[1].shape;
  const Shape& def = ctx.inputs[2].shape;
  if (n < 1) return invalid_argument("RaggedTensorToTensor: expected at least one row partition tensor");
  auto types_or = partition_types("RaggedTensorToTensor", ctx.attr_string(first_partition_attr(*ctx.op)), n);
  if (!types_or.ok()) return types_or.status();
  const bool first_dim_size = (*types_or)[0] == Partition::kFirstDimSize;
  const int ragged = first_dim_size ? n - 1 : n;
  if (values.rank_known() && values.rank() == 0)
    return invalid_argument("RaggedTensorToTensor: values must have rank >= 1, got a scalar");
  for (int k = 0; k < n; ++k) {
    const Shape& s = ctx.inputs[3 + k].shape;
    const int expected = first_dim_size && k == 0 ? 0 : 1;
    if (s.rank_known() && s.rank() != expected)
      return invalid_argument("RaggedTensorToTensor: row_partition_tensors[", k, "] must be a ",
                              expected == 0 ? "scalar (FIRST_DIM_SIZE)" : "vector", ", got ", s.to_string());
  }
  if (!values.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const int rank = 1 + ragged + values.rank() - 1;
  if (rank > kMaxRank)
    return invalid_argument("RaggedTensorToTensor: ", ragged, " ragged dims over values of shape ",
                            values.to_string(), " make a tensor of rank ", rank, ", more than ember's ",
                            kMaxRank, " dims");
  if (def.rank_known() && def.rank() > values.rank() - 1)
    return invalid_argument("RaggedTensorToTensor: default_value of shape ", def.to_string(),
                            " must broadcast to the values' inner shape");
  Shape out;
  if (first_dim_size) {
    const PartialValue rows = ctx.value_of(3);
    out.push_back(rows.fully_known() && rows.values.size() == 1 ? rows.values[0] : kUnknownDim);
  } else {
    const Shape& first = ctx.inputs[3].shape;
    out.push_back(first.rank_known() && first.dim(0) > 0 ? first.dim(0) - 1 : kUnknownDim);
  }
  for (int k = 0; k < ragged; ++k) out.push_back(kUnknownDim);
  for (int d = 1; d < values.rank(); ++d) out.push_back(values.dim(d));
  const PartialValue given = ctx.value_of(0);
  if (given.length_known && !given.scalar) {
    if (static_cast<int>(given.values.size()) != rank)
      return invalid_argument("RaggedTensorToTensor: shape must have ", rank, " elements, got ",
                              given.values.size());
    for (int d = 0; d < rank; ++d) {
      const int64_t v = given.values[d];
      if (v == PartialValue::kUnknown || v < 0) continue;
      if (d > ragged && out.dim(d) >= 0 && out.dim(d) != v)
        return invalid_argument("RaggedTensorToTensor: shape[", d, "] = ", v,
                                " differs from the values' inner ", "dimension ", out.dim(d));
      out.set_dim(d, v);
    }
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, out});
  return Status::OK();
}

// The row splits of every ragged dimension, outermost first (int64 vectors), from the partition tensors
// (Note [Row partitions]), each level checked against the one above and the `nvals` values with
// TensorFlow's rules. A level is allocated where the allocator's cap applies: FIRST_DIM_SIZE, a scalar, or a
// split's value may ask for any number of rows.
using RowSplits = std::vector<TensorRef>;

Status row_splits_of(const std::string& op, const std::string& joined,
                     std::span<TensorImpl* const> partitions, int64_t nvals, RowSplits* splits) {
  const int n = static_cast<int>(partitions.size());
  if (n < 1) return invalid_argument(op, ": expected at least one row partition tensor");
  auto types_or = partition_types(op, joined, n);
  if (!types_or.ok()) return types_or.status();
  const std::vector<Partition>& types = *types_or;
  int64_t rows = -1;  // the rows of the next level: the children of the level above (-1: from its splits)
  int first = 0;
  if (types[0] == Partition::kFirstDimSize) {
    const TensorImpl& size = *partitions[0];
    if (size.num_elements() != 1)
      return invalid_argument(op, ": row_partition_tensors[0] (FIRST_DIM_SIZE) must be a scalar, got ",
                              size.shape().to_string());
    rows = kernels::load_index(size.raw_data(), size.dtype(), 0);
    if (rows < 0) return invalid_argument(op, ": FIRST_DIM_SIZE must be non-negative, got ", rows);
    first = 1;
  }
  splits->clear();
  for (int k = first; k < n; ++k) {
    const TensorImpl& t = *partitions[k];
    if (t.rank() != 1)
      return invalid_argument(op, ": row_partition_tensors[", k, "] must be a vector, got ",
                              t.shape().to_string());
    const int64_t len = t.num_elements();
    auto at = [&](int64_t i) { return kernels::load_index(t.raw_data(), t.dtype(), i); };
    const bool row_splits = types[k] == Partition::kRowSplits;
    if (row_splits && len == 0)
      return invalid_argument(op, ": row_partition_tensors[", k, "] must not be empty");
    if (row_splits && rows >= 0 && len - 1 != rows)
      return invalid_argument(op, ": row_partition_tensors[", k, "] has ", len, " elements, expected ",
                              rows + 1, " (one more than the rows it splits)");
    const int64_t size = row_splits ? len : rows + 1;  // VALUE_ROWIDS: `rows` is known (FIRST_DIM_SIZE first)
    auto allocated = TensorImpl::allocate(DType::kInt64, Shape({size}));
    if (!allocated.ok())
      return allocated.status().with_prefix(op + ": the row splits of row_partition_tensors[" +
                                            std::to_string(k) + "] (" + std::to_string(size) + "): ");
    int64_t* level = (*allocated)->mutable_data<int64_t>();
    if (row_splits) {
      for (int64_t i = 0; i < len; ++i) level[i] = at(i);
      if (level[0] != 0)
        return invalid_argument(op, ": row_partition_tensors[", k, "] must start with 0, got ", level[0]);
      for (int64_t i = 1; i < len; ++i)
        if (level[i] < level[i - 1])
          return invalid_argument(op, ": row_partition_tensors[", k, "] must be sorted, got ", level[i],
                                  " after ", level[i - 1], " at position ", i);
    } else {
      std::fill(level, level + size, 0);
      int64_t previous = 0;
      for (int64_t i = 0; i < len; ++i) {
        const int64_t row = at(i);
        if (row < previous || row >= rows)
          return invalid_argument(op, ": row_partition_tensors[", k,
                                  "] (VALUE_ROWIDS) must be sorted and in [0, ", rows, "), got ", row,
                                  " at position ", i, previous > row ? " after " : "",
                                  previous > row ? std::to_string(previous) : std::string());
        ++level[row + 1];
        previous = row;
      }
      for (int64_t r = 0; r < rows; ++r) level[r + 1] += level[r];
    }
    rows = level[size - 1];
    splits->push_back(std::move(allocated).value());
  }
  if (rows != nvals)
    return invalid_argument(op, ": the innermost row partition has ", rows, " children, but values has ",
                            nvals, " rows");
  return Status::OK();
}

// Where each value's inner slice lands in the dense result (in inner slices, -1: cut off by `dims`), walking
// the (checked) row splits outermost first.
void value_offsets(const RowSplits& splits, const std::vector<int64_t>& dims, std::vector<int64_t>* offsets) {
  const int n = static_cast<int>(splits.size());
  std::vector<int64_t> stride(static_cast<size_t>(n) + 1, 1);
  for (int k = n - 1; k >= 0; --k) stride[k] = stride[k + 1] * dims[k + 1];
  const int64_t nrows = splits[0]->num_elements() - 1;
  std::vector<int64_t> base(static_cast<size_t>(nrows));
  for (int64_t r = 0; r < nrows; ++r) base[r] = r < dims[0] ? r * stride[0] : -1;
  for (int k = 0; k < n; ++k) {
    const int64_t* s = splits[k]->data<int64_t>();
    const int64_t rows = splits[k]->num_elements() - 1;
    std::vector<int64_t> next(static_cast<size_t>(s[rows]), -1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = s[r]; j < s[r + 1]; ++j) {
        const int64_t c = j - s[r];
        next[j] = base[r] >= 0 && c < dims[k + 1] ? base[r] + c * stride[k + 1] : -1;
      }
    base = std::move(next);
  }
  *offsets = std::move(base);
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
  if (values.rank() == 0) return invalid_argument(op, ": values must have rank >= 1, got a scalar");
  RowSplits splits;
  EMBER_RETURN_IF_ERROR(row_splits_of(op, ctx.attr_string(first_partition_attr(*ctx.op)),
                                      ctx.inputs.subspan(3), values.shape().dim(0), &splits));
  const int n = static_cast<int>(splits.size());
  const int64_t inner = product(values.shape(), 1, values.rank());
  // The result's dims: `shape` where it gives them, else the row count and each level's longest row.
  const int rank = n + values.rank();
  std::vector<int64_t> given = ctx.int_values(0);
  if (ctx.input(0).rank() == 0) given.assign(static_cast<size_t>(rank), -1);
  if (static_cast<int>(given.size()) != rank)
    return invalid_argument(op, ": shape must have ", rank, " elements, got ", given.size());
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  dims[0] = splits[0]->num_elements() - 1;
  for (int k = 0; k < n; ++k) {
    const int64_t* s = splits[k]->data<int64_t>();
    int64_t longest = 0;
    for (int64_t r = 0; r + 1 < splits[k]->num_elements(); ++r) longest = std::max(longest, s[r + 1] - s[r]);
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
  value_offsets(splits, dims, &offsets);
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
  RowSplits splits;
  EMBER_RETURN_IF_ERROR(row_splits_of(op, ctx.attr_string(first_partition_attr(*ctx.op)),
                                      ctx.inputs.subspan(2), values.shape().dim(0), &splits));
  const int n = static_cast<int>(splits.size());
  const int64_t inner = product(values.shape(), 1, values.rank());
  if (dy.rank() != n + values.rank() || product(dy.shape(), n + 1, dy.rank()) != inner)
    return invalid_argument(op, ": grad ", dy.shape().to_string(), " does not fit values ",
                            values.shape().to_string(), " under ", n, " ragged dimensions");
  std::vector<int64_t> offsets;
  value_offsets(splits, dy.shape().dim_vector(), &offsets);
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

// The partition kinds, passed on to the adjoint as they came.
AttrList partition_attr(const GradContext& c) {
  return AttrList{AttrValue(c.attr_string(first_partition_attr(*c.op)))};
}

void to_tensor_grad(GradContext& c) {
  std::vector<GradTensor> inputs = {c.grad(), c.input(1)};
  for (GradTensor& s : splits_of(c, 3)) inputs.push_back(s);
  const GradTensor dvalues =
      emit("RaggedTensorToTensorGrad", std::span<const GradTensor>(inputs), partition_attr(c))[0];
  c.set(1, dvalues);
  // Every slot no value filled holds the default: dy summed over the slots, less the values' part.
  const GradTensor dy = c.grad(), def = c.input(2);
  const bool first_dim_size = c.attr_string(first_partition_attr(*c.op)).starts_with("FIRST_DIM_SIZE");
  const int ragged = c.num_inputs() - 3 - (first_dim_size ? 1 : 0);
  std::vector<int64_t> outer(static_cast<size_t>(ragged) + 1);
  for (size_t d = 0; d < outer.size(); ++d) outer[d] = static_cast<int64_t>(d);
  const GradTensor per_slot = sum(dy, outer, false) - sum(dvalues, {0}, false);
  c.set(2, reduce_to(per_slot, def));
}

void to_tensor_grad_grad(GradContext& c) {
  // d/d grad of RaggedTensorToTensorGrad: scatter the incoming gradient back with zeros elsewhere.
  std::vector<GradTensor> inputs = {shape_of(c.input(0)), c.grad(), scalar(0, c.grad().dtype())};
  for (GradTensor& s : splits_of(c, 2)) inputs.push_back(s);
  c.set(0, emit("RaggedTensorToTensor", std::span<const GradTensor>(inputs), partition_attr(c))[0]);
}

}  // namespace

void register_ragged_ops(OpRegistry& r) {
  OpBuilder("RaggedTensorToTensor")
      .doc(
          "The dense tensor of a RaggedTensor given as flat values and its row partitions (outermost first, "
          "of the kinds row_partition_types names, Note [Row partitions]): rows padded with default_value "
          "to the longest row, or cut/padded to `shape` (-1: the longest). "
          "ragged_tensor_to_tensor(-1, [1, 2, 3], 0, [0, 2, 3]) == [[1, 2], [3, 0]]")
      .input_shape_like("shape")
      .input("values")
      .input("default_value")
      .input_list("row_partition_tensors", 1)
      .output("result")
      .type_var(kAllTypes)
      .type_var(kIndexTypes, 1)
      .attr("row_partition_types", AttrType::kString, std::string())
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
      .attr("row_partition_types", AttrType::kString, std::string())
      .shape(&to_tensor_grad_shape)
      .kernel(kAllTypes, &to_tensor_grad_kernel)
      .grad(&to_tensor_grad_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

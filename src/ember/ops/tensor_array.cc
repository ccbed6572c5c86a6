// InplaceUpdate: TensorFlow's raw op of that name, the write of a dense TensorArray (python/ember/ops/
// tensor_array_ops.py, Note [Two representations of a TensorArray]): x with rows i replaced by the rows of v.
// One copy of x and one of each written row, where a SelectV2 over a broadcast mask walked every element.
//
// And TensorFlow's TensorList ops, so GraphDefs holding a tf.TensorArray import (Note [TensorLists as dense
// tensors]), with gradients for Gather/Scatter/Concat/Split (Note [Gathering and splitting dense lists]).
#include "ember/ops/tensor_array.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

std::atomic<int64_t> g_list_bytes_copied{0};

Status inplace_update_shape(InferContext& ctx) {
  const Shape &x = ctx.inputs[0].shape, &i = ctx.inputs[1].shape, &v = ctx.inputs[2].shape;
  if (i.rank_known() && i.rank() != 1)
    return invalid_argument("InplaceUpdate: i must be a vector of row indices, got shape ", i.to_string());
  if (x.rank_known() && x.rank() == 0) return invalid_argument("InplaceUpdate: x must not be a scalar");
  if (x.rank_known() && v.rank_known()) {
    if (v.rank() != x.rank())
      return invalid_argument("InplaceUpdate: v must have the rank of x (", x.to_string(), "), got ",
                              v.to_string());
    for (int d = 1; d < x.rank(); ++d)
      if (x.dim(d) >= 0 && v.dim(d) >= 0 && x.dim(d) != v.dim(d))
        return invalid_argument("InplaceUpdate: the rows of v (", v.to_string(),
                                ") must have the shape of x's (", x.to_string(), ")");
  }
  if (i.rank_known() && v.rank_known() && v.rank() > 0 && i.dim(0) >= 0 && v.dim(0) >= 0 &&
      i.dim(0) != v.dim(0))
    return invalid_argument("InplaceUpdate: i has ", i.dim(0), " indices but v has ", v.dim(0), " rows");
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status inplace_update_kernel(KernelContext& ctx) {
  const TensorImpl &x = ctx.input(0), &i = ctx.input(1), &v = ctx.input(2);
  if (x.rank() == 0) return invalid_argument("InplaceUpdate: x must not be a scalar");
  if (i.rank() != 1)
    return invalid_argument("InplaceUpdate: i must be a vector of row indices, got shape ",
                            i.shape().to_string());
  if (v.rank() != x.rank() || v.shape().dim(0) != i.shape().dim(0))
    return invalid_argument("InplaceUpdate: v must be [", i.shape().dim(0), "] + the row shape of x (",
                            x.shape().to_string(), "), got ", v.shape().to_string());
  for (int d = 1; d < x.rank(); ++d)
    if (v.shape().dim(d) != x.shape().dim(d))
      return invalid_argument("InplaceUpdate: the rows of v (", v.shape().to_string(),
                              ") must have the shape of x's (", x.shape().to_string(), ")");
  const int64_t rows = x.shape().dim(0);
  const size_t row_bytes =
      static_cast<size_t>(x.num_elements() / std::max<int64_t>(rows, 1)) * dtype_size(x.dtype());
  TensorImpl& out = ctx.output(0);
  const int32_t* index = i.data<int32_t>();
  for (int64_t k = 0; k < i.shape().dim(0); ++k)
    if (index[k] < 0 || index[k] >= rows)
      return invalid_argument("InplaceUpdate: i[", k, "] = ", index[k], " is not in [0, ", rows, ")");
  if (out.num_elements() == 0) return Status::OK();
  // The executor may hand x's own buffer over as the output (x dies here): then only the rows move.
  if (out.mutable_raw_data() != x.raw_data()) {
    const size_t bytes = static_cast<size_t>(x.num_elements()) * dtype_size(x.dtype());
    std::memcpy(out.mutable_raw_data(), x.raw_data(), bytes);
    g_list_bytes_copied.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  }
  char* dst = static_cast<char*>(out.mutable_raw_data());
  const char* src = static_cast<const char*>(v.raw_data());
  for (int64_t k = 0; k < i.shape().dim(0); ++k)
    std::memcpy(dst + static_cast<size_t>(index[k]) * row_bytes, src + static_cast<size_t>(k) * row_bytes,
                row_bytes);
  return Status::OK();
}

// The written rows take their gradient from dy; x's gradient is dy with those rows zeroed.
void inplace_update_grad(GradContext& c) {
  using namespace gradient;
  GradTensor dy = c.grad();
  c.set(0, emit1("InplaceUpdate", {dy, c.input(1), zeros_like(c.input(2))}));
  c.set(2, emit1("GatherV2", {dy, c.input(1), scalar(0, DType::kInt32)}));
}

// Note [TensorLists as dense tensors]
// TensorFlow's TensorArray in a tf.function is a TensorList: a DT_VARIANT handle made by TensorListReserve
// (or FromTensor), written by TensorListSetItem and read by GetItem/Stack. ember has no variant dtype; an
// imported GraphDef carries each list as one dense tensor of its element dtype whose first dimension is the
// list's length (graph/tensor_list_import.cc gives the handles their element dtypes). A list whose element
// shape is not known yet holds rows of zero elements ([n, 0]): the first write adopts the written shape
// (there is nothing to keep), and reading such an element gives zeros of the element_shape operand, as
// TensorFlow's uninitialized elements do. Shape functions give a handle an unknown rank, as a variant's
// shape says nothing of its elements. Writes copy the list (O(n)). ember's own TensorArray writes single
// elements in place with InplaceUpdate, and uses Gather/ScatterIntoExistingList/ConcatV2/Split for its
// gather/scatter/concat/split of a dense array, as TensorFlow's graph TensorArray does; those four families
// have TensorFlow's gradients. The element ops (Reserve ... ElementShape) have none: an imported graph runs
// forward (TensorFlow's own gradient ops are what a GraphDef of a training step holds).

// The element_shape operand: a vector with -1 for unknown dims, or the scalar -1 (unknown rank).
StatusOr<Shape> element_shape_operand(const KernelContext& ctx, int i) {
  const TensorImpl& t = ctx.input(i);
  const std::string& op = ctx.op->name;
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return invalid_argument(op, ": element_shape must be int32 or int64, got ", dtype_name(t.dtype()));
  if (t.rank() > 1)
    return invalid_argument(op, ": element_shape must be a vector or the scalar -1, got shape ",
                            t.shape().to_string());
  std::vector<int64_t> v = ctx.int_values(i);
  if (t.rank() == 0) {
    if (v[0] != -1)
      return invalid_argument(op, ": a scalar element_shape must be -1 (unknown rank), got ", v[0]);
    return Shape::unknown_rank();
  }
  if (static_cast<int64_t>(v.size()) + 1 > kMaxRank)
    return invalid_argument(op, ": element_shape has ", v.size(), " dims; at most ", kMaxRank - 1);
  Shape out;
  for (int64_t d : v) {
    if (d < -1) return invalid_argument(op, ": element_shape has the dimension ", d);
    out.push_back(d < 0 ? kUnknownDim : d);
  }
  return out;
}

Shape element_shape_spec(const InferContext& ctx, int i) {
  PartialValue v = ctx.value_of(i);
  if (v.scalar) return Shape::unknown_rank();
  return v.as_shape();
}

// A shape without its first dimension.
Shape row_shape_of(const Shape& shape) {
  std::vector<int64_t> dims(shape.dims().begin() + 1, shape.dims().end());
  return Shape(std::span<const int64_t>(dims));
}

Shape row_shape(const TensorImpl& list) { return row_shape_of(list.shape()); }

// What a list of element_dtype `d` is stored as: strings run the int64 kernels on keys, whose zero is the
// empty string (Note [String kernels of array ops] in strings_array.cc).
DType storage_dtype(DType d) { return d == DType::kString ? DType::kInt64 : d; }

int64_t row_elements(const TensorImpl& list) {
  int64_t n = 1;
  for (int d = 1; d < list.rank(); ++d) n *= list.shape().dim(d);
  return n;
}

// A list handle must be a tensor of rank >= 1 whose first dim is the length.
Status check_list(const KernelContext& ctx, int i) {
  if (ctx.input(i).rank() == 0)
    return invalid_argument(ctx.op->name,
                            ": the list (a dense tensor in ember) must have rank >= 1, got a "
                            "scalar");
  return Status::OK();
}

// A list of `rows` elements of `element` (zero-element rows when it is not fully known), all zeros.
StatusOr<TensorRef> zero_list(DType dtype, int64_t rows, const Shape& element) {
  Shape shape{rows};
  if (element.fully_defined()) {
    for (int64_t d : element.dims()) shape.push_back(d);
  } else {
    shape.push_back(0);
  }
  auto t = TensorImpl::allocate(dtype, shape);
  if (!t.ok()) return t.status();
  if ((*t)->num_elements() > 0)
    std::memset((*t)->mutable_raw_data(), 0, static_cast<size_t>((*t)->num_elements()) * dtype_size(dtype));
  return t;
}

Status check_element(const KernelContext& ctx, const Shape& element, const Shape& want) {
  if (!want.rank_known()) return Status::OK();
  bool ok = element.rank() == want.rank();
  for (int d = 0; ok && d < want.rank(); ++d) ok = want.dim(d) < 0 || want.dim(d) == element.dim(d);
  if (!ok)
    return invalid_argument(ctx.op->name, ": the element has shape ", element.to_string(),
                            ", incompatible with the list's element shape ", want.to_string());
  return Status::OK();
}

// Note [Lists growing in place]
// An element write (SetItem, PushBack) makes a new list. Where the list dies at the write and nothing else
// holds its buffer, the executor hands it over (reusable_input0; a loop variable pushed onto in a While body
// is such a list from the second iteration, Note [Loop variables handed to the body] in control_flow.cc) and
// the write goes into that buffer: a SetItem inside the list writes its row there, a write past the end takes
// a view of more rows of the buffer when it has room. A list that grows gets a buffer with room for twice its
// rows, as the While's Accumulator grows its stacks, so n pushes onto a dying list copy O(n) rows in all, not
// O(n^2). A list someone else still reads is copied as before. Strings keep exact buffers.

// `list` with `rows` rows of `element`'s shape: its rows kept when they have that shape (uninitialized
// rows are zero-element and adopt it), zeros after them (Note [Lists growing in place]).
StatusOr<TensorRef> resized(const KernelContext& ctx, const TensorImpl& list, int64_t rows,
                            const Shape& element) {
  const bool adopt = row_elements(list) == 0 && row_shape(list) != element;
  if (!adopt && row_shape(list) != element)
    return invalid_argument(ctx.op->name, ": the element has shape ", element.to_string(),
                            " but the list holds elements of shape ", row_shape(list).to_string());
  if (!element.fully_defined()) return zero_list(list.dtype(), rows, element);
  const int64_t n = list.shape().dim(0);
  const size_t row_bytes = static_cast<size_t>(element.num_elements()) * dtype_size(list.dtype());
  const bool growable = list.dtype() != DType::kString;
  auto rows_of = [&](int64_t count) {
    Shape shape{count};
    for (int64_t d : element.dims()) shape.push_back(d);
    return shape;
  };
  auto zero_rows = [&](TensorImpl& t, int64_t from) {
    if (rows > from && row_bytes > 0)
      std::memset(static_cast<char*>(t.mutable_raw_data()) + static_cast<size_t>(from) * row_bytes, 0,
                  static_cast<size_t>(rows - from) * row_bytes);
  };
  if (ctx.reusable_input0 && !adopt && growable) {
    if (rows == n) return ctx.reusable_input0;
    if (list.byte_offset() + static_cast<size_t>(rows) * row_bytes <= list.buffer()->size()) {
      TensorRef out = TensorImpl::view(list, rows_of(rows));
      zero_rows(*out, n);
      return out;
    }
  }
  const int64_t capacity = growable && rows > n ? std::max(rows, 2 * n) : rows;
  auto buffer = TensorImpl::allocate(list.dtype(), rows_of(capacity));
  if (!buffer.ok()) return buffer.status();
  TensorRef out = capacity == rows ? std::move(buffer).value() : TensorImpl::view(**buffer, rows_of(rows));
  const int64_t keep = adopt ? 0 : std::min(rows, n);
  if (keep > 0 && row_bytes > 0) {
    std::memcpy(out->mutable_raw_data(), list.raw_data(), static_cast<size_t>(keep) * row_bytes);
    g_list_bytes_copied.fetch_add(static_cast<int64_t>(keep * row_bytes), std::memory_order_relaxed);
  }
  zero_rows(*out, keep);
  return out;
}

void write_row(TensorImpl& list, int64_t index, const TensorImpl& item) {
  const size_t row_bytes = static_cast<size_t>(item.num_elements()) * dtype_size(item.dtype());
  if (row_bytes == 0) return;
  std::memcpy(static_cast<char*>(list.mutable_raw_data()) + static_cast<size_t>(index) * row_bytes,
              item.raw_data(), row_bytes);
}

int64_t scalar_int(const KernelContext& ctx, int i) { return ctx.int_values(i)[0]; }

Status check_scalar_int(const KernelContext& ctx, int i, std::string_view what) {
  const TensorImpl& t = ctx.input(i);
  if ((t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64) || t.rank() != 0)
    return invalid_argument(ctx.op->name, ": ", what, " must be an int scalar, got ", dtype_name(t.dtype()),
                            " of shape ", t.shape().to_string());
  return Status::OK();
}

Status list_handle_shape(InferContext& ctx) {
  // A new list has the dtype its attribute names; any other op passes its input list's on.
  const bool makes_list = ctx.op->name == "TensorListReserve" || ctx.op->name == "EmptyTensorList";
  const DType dtype = makes_list ? ctx.attr_dtype(0) : ctx.inputs[0].dtype;
  ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
  return Status::OK();
}

Status check_dtype(const KernelContext& ctx, DType got) {
  const int a = ctx.op->attr_index("element_dtype");
  if (a >= 0 && storage_dtype(ctx.attr_dtype(a)) != storage_dtype(got))
    return invalid_argument(ctx.op->name, ": element_dtype is ", dtype_name(ctx.attr_dtype(a)),
                            " but the list holds ", dtype_name(got));
  return Status::OK();
}

Status reserve_kernel(KernelContext& ctx) {
  auto element = element_shape_operand(ctx, 0);
  if (!element.ok()) return element.status();
  EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 1, "num_elements"));
  const int64_t n = scalar_int(ctx, 1);
  if (n < 0) return invalid_argument("TensorListReserve: num_elements must be >= 0, got ", n);
  auto out = zero_list(storage_dtype(ctx.attr_dtype(0)), n, *element);
  if (!out.ok()) return out.status();
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

Status empty_list_kernel(KernelContext& ctx) {
  auto element = element_shape_operand(ctx, 0);
  if (!element.ok()) return element.status();
  EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 1, "max_num_elements"));
  auto out = zero_list(storage_dtype(ctx.attr_dtype(0)), 0, *element);
  if (!out.ok()) return out.status();
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

Status from_tensor_kernel(KernelContext& ctx) {
  const TensorImpl& t = ctx.input(0);
  if (t.rank() == 0)
    return invalid_argument("TensorListFromTensor: the tensor must have rank >= 1, got a scalar");
  auto element = element_shape_operand(ctx, 1);
  if (!element.ok()) return element.status();
  EMBER_RETURN_IF_ERROR(check_element(ctx, row_shape(t), *element));
  ctx.outputs[0] = TensorImpl::view(t, t.shape());
  return Status::OK();
}

Status get_item_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, ctx.input(0).dtype()));
  EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 1, "index"));
  const TensorImpl& list = ctx.input(0);
  const int64_t index = scalar_int(ctx, 1), n = list.shape().dim(0);
  if (index < 0 || index >= n)
    return invalid_argument("TensorListGetItem: Trying to access element ", index, " in a list with ", n,
                            " elements.");
  auto element = element_shape_operand(ctx, 2);
  if (!element.ok()) return element.status();
  Shape shape = row_shape(list);
  if (row_elements(list) == 0 && shape != *element) {  // never written: zeros of the element shape
    if (!element->fully_defined())
      return invalid_argument("TensorListGetItem: element ", index,
                              " was never written and the element shape ", element->to_string(),
                              " is not fully known");
    shape = *element;
  } else {
    EMBER_RETURN_IF_ERROR(check_element(ctx, shape, *element));
  }
  const size_t row_bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(list.dtype());
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, list.dtype(), shape));
  if (row_bytes == 0) return Status::OK();
  if (row_elements(list) == 0) {
    std::memset(ctx.output(0).mutable_raw_data(), 0, row_bytes);
  } else {
    std::memcpy(ctx.output(0).mutable_raw_data(),
                static_cast<const char*>(list.raw_data()) + static_cast<size_t>(index) * row_bytes,
                row_bytes);
  }
  return Status::OK();
}

Status set_item_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl &list = ctx.input(0), &item = ctx.input(2);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  if (item.dtype() != list.dtype())
    return invalid_argument("TensorListSetItem: the list holds ", dtype_name(list.dtype()), ", the item is ",
                            dtype_name(item.dtype()));
  EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 1, "index"));
  const int64_t index = scalar_int(ctx, 1), n = list.shape().dim(0);
  const bool resize = ctx.attr_bool(1);
  if (index < 0 || (index >= n && !resize))
    return invalid_argument("TensorListSetItem: Trying to modify element ", index, " in a list with ", n,
                            " elements.");
  if (index == INT64_MAX)  // the list would need index + 1 elements
    return invalid_argument("TensorListSetItem: index ", index, " is past the largest list");
  if (item.rank() + 1 > kMaxRank)
    return invalid_argument("TensorListSetItem: the item has rank ", item.rank(), "; at most ", kMaxRank - 1);
  auto out = resized(ctx, list, std::max(n, index + 1), item.shape());
  if (!out.ok()) return out.status();
  write_row(**out, index, item);
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

Status push_back_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl &list = ctx.input(0), &item = ctx.input(1);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  if (item.dtype() != list.dtype())
    return invalid_argument("TensorListPushBack: the list holds ", dtype_name(list.dtype()), ", the item is ",
                            dtype_name(item.dtype()));
  if (item.rank() + 1 > kMaxRank)
    return invalid_argument("TensorListPushBack: the item has rank ", item.rank(), "; at most ",
                            kMaxRank - 1);
  const int64_t n = list.shape().dim(0);
  auto out = resized(ctx, list, n + 1, item.shape());
  if (!out.ok()) return out.status();
  write_row(**out, n, item);
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

Status pop_back_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl& list = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  const int64_t n = list.shape().dim(0);
  if (n == 0) return invalid_argument("TensorListPopBack: Trying to pop from an empty list.");
  auto element = element_shape_operand(ctx, 1);
  if (!element.ok()) return element.status();
  Shape rest = list.shape();
  rest.set_dim(0, n - 1);
  ctx.outputs[0] = TensorImpl::view(list, rest);
  Shape shape = row_shape(list);
  const bool unwritten = row_elements(list) == 0 && shape != *element;
  if (unwritten) {
    if (!element->fully_defined())
      return invalid_argument("TensorListPopBack: the last element was never written and the element shape ",
                              element->to_string(), " is not fully known");
    shape = *element;
  } else {
    EMBER_RETURN_IF_ERROR(check_element(ctx, shape, *element));
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, list.dtype(), shape));
  const size_t row_bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(list.dtype());
  if (row_bytes == 0) return Status::OK();
  if (unwritten) {
    std::memset(ctx.output(1).mutable_raw_data(), 0, row_bytes);
  } else {
    std::memcpy(ctx.output(1).mutable_raw_data(),
                static_cast<const char*>(list.raw_data()) + static_cast<size_t>(n - 1) * row_bytes,
                row_bytes);
  }
  return Status::OK();
}

Status stack_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl& list = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  auto element = element_shape_operand(ctx, 1);
  if (!element.ok()) return element.status();
  const int64_t n = list.shape().dim(0), want = ctx.attr_int(1);
  if (want >= 0 && want != n)
    return invalid_argument("TensorListStack: Operation expected a list with ", want,
                            " elements but got a list with ", n, " elements.");
  if (row_elements(list) == 0 && row_shape(list) != *element) {  // nothing written
    if (!element->fully_defined())
      return invalid_argument(
          "TensorListStack: Tried to stack elements of a list none of which was written "
          "(or an empty list) with non-fully-defined element_shape: ",
          element->to_string());
    auto out = zero_list(list.dtype(), n, *element);
    if (!out.ok()) return out.status();
    ctx.outputs[0] = std::move(out).value();
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(check_element(ctx, row_shape(list), *element));
  ctx.outputs[0] = TensorImpl::view(list, list.shape());
  return Status::OK();
}

Status length_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const int64_t n = ctx.input(0).shape().dim(0);
  if (n > INT32_MAX) return invalid_argument("TensorListLength: ", n, " elements do not fit int32");
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt32, Shape()));
  *ctx.output(0).mutable_data<int32_t>() = static_cast<int32_t>(n);
  return Status::OK();
}

Status element_shape_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl& list = ctx.input(0);
  const DType dtype = ctx.attr_dtype(0);
  if (dtype != DType::kInt32 && dtype != DType::kInt64)
    return invalid_argument("TensorListElementShape: shape_type must be int32 or int64");
  std::vector<int64_t> dims;
  Shape out_shape;
  if (row_elements(list) == 0 && list.rank() == 2 && list.shape().dim(1) == 0) {
    dims.push_back(-1);  // not written yet: unknown, as TensorFlow's list without an element shape
  } else {
    for (int d = 1; d < list.rank(); ++d) dims.push_back(list.shape().dim(d));
    out_shape.push_back(static_cast<int64_t>(dims.size()));
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, dtype, out_shape));
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dtype == DType::kInt32) {
      ctx.output(0).mutable_data<int32_t>()[k] = static_cast<int32_t>(dims[k]);
    } else {
      ctx.output(0).mutable_data<int64_t>()[k] = dims[k];
    }
  }
  return Status::OK();
}

Status item_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, element_shape_spec(ctx, 2)});
  return Status::OK();
}

Status stack_shape(InferContext& ctx) {
  Shape element = element_shape_spec(ctx, 1);
  Shape out{ctx.attr_int(1) >= 0 ? ctx.attr_int(1) : kUnknownDim};
  if (!element.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  for (int64_t d : element.dims()) out.push_back(d);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status pop_back_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, element_shape_spec(ctx, 1)});
  return Status::OK();
}

Status length_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kInt32, Shape()});
  return Status::OK();
}

Status element_shape_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), Shape::unknown_rank()});
  return Status::OK();
}

// ---- Gather, Scatter, Concat, Split (Note [Gathering and splitting dense lists])

// Note [Gathering and splitting dense lists]
// These ops move whole rows of the dense list, so each is one pass over what it reads or writes. A dense
// list holds elements of one shape, so TensorListSplit takes equal lengths only: pieces its element_shape
// refuses are InvalidArgument (as TensorFlow's), others of different lengths Unimplemented, naming the
// lengths (TensorFlow's lists may hold them; a TensorArray split by run-time lengths and an imported split
// that is only read back never reach this op: Note [Splitting into pieces of different lengths] in
// tensor_array_ops.py, Note [Splitting imported lists into pieces of different lengths] in
// graph/tensor_list_import.cc). TensorListConcat's lengths are all the element's first dimension. Their
// gradients are TensorFlow's (list_grad's): Gather's scatters dy into a zero list of the input's length,
// Scatter's gathers the rows it wrote, Concat's splits dy by the forward's lengths and Split's concatenates
// dlist; like TensorFlow's, Gather's gradient keeps one row per index where indices repeat
// (ScatterIntoExistingList overwrites), so duplicate indices get the last write, not a sum. Strings run the
// int64 kernels on keys (Note [String kernels of array ops]): storage_dtype maps an element_dtype of string
// to int64, whose zero is the key of the empty string.

Status check_indices(const KernelContext& ctx, int i) {
  const TensorImpl& t = ctx.input(i);
  if (t.dtype() != DType::kInt32 || t.rank() != 1)
    return invalid_argument(ctx.op->name, ": indices must be an int32 vector, got ", dtype_name(t.dtype()),
                            " of shape ", t.shape().to_string());
  return Status::OK();
}

// The shape [rows] + element, or an error when it has too many dims.
StatusOr<Shape> with_rows(const KernelContext& ctx, int64_t rows, const Shape& element) {
  if (element.rank() + 1 > kMaxRank)
    return invalid_argument(ctx.op->name, ": the element has rank ", element.rank(), "; at most ",
                            kMaxRank - 1);
  Shape out{rows};
  for (int64_t d : element.dims()) out.push_back(d);
  return out;
}

// Copies row k of `src` to row index[k] of `dst` (both of rows of `row_bytes`).
void copy_rows(TensorImpl& dst, const TensorImpl& src, const std::vector<int64_t>& index, size_t row_bytes) {
  if (row_bytes == 0) return;
  char* to = static_cast<char*>(dst.mutable_raw_data());
  const char* from = static_cast<const char*>(src.raw_data());
  for (size_t k = 0; k < index.size(); ++k)
    std::memcpy(to + static_cast<size_t>(index[k]) * row_bytes, from + k * row_bytes, row_bytes);
}

Status gather_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl& list = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  EMBER_RETURN_IF_ERROR(check_indices(ctx, 1));
  auto element = element_shape_operand(ctx, 2);
  if (!element.ok()) return element.status();
  const std::vector<int64_t> index = ctx.int_values(1);
  const int64_t n = list.shape().dim(0);
  for (int64_t i : index)
    if (i < 0 || i >= n)
      return invalid_argument("TensorListGather: Trying to access element ", i, " in a list with ", n,
                              " elements.");
  Shape shape = row_shape(list);
  const bool unwritten = row_elements(list) == 0 && shape != *element;
  if (unwritten) {  // nothing written: zeros of the element shape
    if (!element->fully_defined())
      return invalid_argument("TensorListGather: the list was never written and the element shape ",
                              element->to_string(), " is not fully known");
    shape = *element;
  } else {
    EMBER_RETURN_IF_ERROR(check_element(ctx, shape, *element));
  }
  auto out_shape = with_rows(ctx, static_cast<int64_t>(index.size()), shape);
  if (!out_shape.ok()) return out_shape.status();
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, list.dtype(), *out_shape));
  const size_t row_bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(list.dtype());
  if (row_bytes == 0 || index.empty()) return Status::OK();
  char* to = static_cast<char*>(ctx.output(0).mutable_raw_data());
  if (unwritten) {
    std::memset(to, 0, row_bytes * index.size());
    return Status::OK();
  }
  const char* from = static_cast<const char*>(list.raw_data());
  for (size_t k = 0; k < index.size(); ++k)
    std::memcpy(to + k * row_bytes, from + static_cast<size_t>(index[k]) * row_bytes, row_bytes);
  return Status::OK();
}

// The rows of `tensor` to scatter and their indices, checked against each other.
Status check_scatter(const KernelContext& ctx, int tensor_input, int indices_input) {
  const TensorImpl& t = ctx.input(tensor_input);
  if (t.rank() == 0)
    return invalid_argument(ctx.op->name, ": the tensor must have rank >= 1 (a row per index), got a scalar");
  EMBER_RETURN_IF_ERROR(check_indices(ctx, indices_input));
  const int64_t count = ctx.input(indices_input).shape().dim(0);
  if (t.shape().dim(0) != count)
    return invalid_argument(ctx.op->name, ": Invalid number of rows in input tensor. Expected: ", count,
                            " Actual: ", t.shape().dim(0));
  return Status::OK();
}

// Scatter and ScatterV2: a new list of num_elements (-1: the largest index + 1) holding tensor's rows.
Status scatter_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scatter(ctx, 0, 1));
  const TensorImpl& tensor = ctx.input(0);
  auto element = element_shape_operand(ctx, 2);
  if (!element.ok()) return element.status();
  const Shape rows = row_shape(tensor);
  EMBER_RETURN_IF_ERROR(check_element(ctx, rows, *element));
  const std::vector<int64_t> index = ctx.int_values(1);
  int64_t highest = -1;
  for (int64_t i : index) {
    if (i < 0) return invalid_argument(ctx.op->name, ": Indices must all be non-negative, got ", i);
    highest = std::max(highest, i);
  }
  int64_t n = highest + 1;
  if (ctx.inputs.size() > 3) {  // V2's num_elements
    EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 3, "num_elements"));
    const int64_t want = scalar_int(ctx, 3);
    if (want < -1) return invalid_argument(ctx.op->name, ": num_elements must be >= -1, got ", want);
    if (want >= 0) {
      if (highest >= want)
        return invalid_argument(ctx.op->name, ": Trying to scatter to index ", highest, " in a list with ",
                                want, " elements.");
      n = want;
    }
  }
  // An empty scatter writes nothing: the list keeps the element shape unknown unless it is given.
  const Shape& list_element = index.empty() ? *element : rows;
  auto out = zero_list(tensor.dtype(), n, list_element);
  if (!out.ok()) return out.status();
  copy_rows(**out, tensor, index, static_cast<size_t>(rows.num_elements()) * dtype_size(tensor.dtype()));
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

// The list with the tensor's rows written, as a shape: the list's, or [n] + the rows' when the list was never
// written (zero-element rows of another shape) and the tensor has rows. An error when neither fits.
StatusOr<Shape> scatter_into_existing_result(std::string_view op, const Shape& list, const Shape& tensor) {
  if (list.rank() == 0)
    return invalid_argument(op, ": the list (a dense tensor in ember) must have rank >= 1, got a scalar");
  if (tensor.rank() == 0)
    return invalid_argument(op, ": the tensor must have rank >= 1 (a row per index), got a scalar");
  const Shape rows = row_shape_of(tensor), list_rows = row_shape_of(list);
  if (tensor.dim(0) == 0 || rows == list_rows) return list;
  if (list_rows.num_elements() != 0)
    return invalid_argument(op, ": the element has shape ", rows.to_string(),
                            " but the list holds elements of shape ", list_rows.to_string());
  Shape out{list.dim(0)};
  for (int64_t d : rows.dims()) out.push_back(d);
  return out;
}

// Note [Scattering in place]: the output is allocated from the shape function (the list's shape), and the
// op is kOverwritesInput0, so where the list dies here (a TensorArray loop variable scattered in the body)
// the executor hands its buffer over and only the written rows move; otherwise the list is copied first.
Status scatter_into_existing_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl &list = ctx.input(0), &tensor = ctx.input(1);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  if (tensor.dtype() != list.dtype())
    return invalid_argument("TensorListScatterIntoExistingList: the list holds ", dtype_name(list.dtype()),
                            ", the tensor is ", dtype_name(tensor.dtype()));
  EMBER_RETURN_IF_ERROR(check_scatter(ctx, 1, 2));
  const std::vector<int64_t> index = ctx.int_values(2);
  const int64_t n = list.shape().dim(0);
  for (int64_t i : index)
    if (i < 0 || i >= n)
      return invalid_argument("TensorListScatterIntoExistingList: Trying to modify element ", i,
                              " in a list with ", n, " elements.");
  auto want = scatter_into_existing_result(ctx.op->name, list.shape(), tensor.shape());
  if (!want.ok()) return want.status();
  TensorImpl& out = ctx.output(0);
  if (out.shape() != *want)
    return make_error(Code::kInternal, "TensorListScatterIntoExistingList: the output was allocated as ",
                      out.shape().to_string(), ", expected ", want->to_string());
  const bool adopt = *want != list.shape();
  const size_t list_bytes = static_cast<size_t>(out.num_elements()) * dtype_size(out.dtype());
  if (list_bytes > 0 && out.mutable_raw_data() != list.raw_data()) {
    if (adopt) {
      std::memset(out.mutable_raw_data(), 0, list_bytes);
    } else {
      std::memcpy(out.mutable_raw_data(), list.raw_data(), list_bytes);
    }
  }
  const Shape rows = row_shape(tensor);
  copy_rows(out, tensor, index, static_cast<size_t>(rows.num_elements()) * dtype_size(tensor.dtype()));
  return Status::OK();
}

// Concat and ConcatV2: the elements joined along their first dimension, and each one's length (int64).
// `element` is the element shape the caller was given; `leading` (V2) the lengths of elements never
// written when element's first dimension is unknown.
Status concat(KernelContext& ctx, const Shape& element, const std::vector<int64_t>* leading) {
  EMBER_RETURN_IF_ERROR(check_list(ctx, 0));
  const TensorImpl& list = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_dtype(ctx, list.dtype()));
  const std::string& op = ctx.op->name;
  const int64_t n = list.shape().dim(0);
  const bool unwritten = row_elements(list) == 0 && row_shape(list) != element;
  if (element.rank_known() && element.rank() == 0)
    return invalid_argument(op, ": Concat requires elements to be at least vectors, got element shape []");
  Shape shape = row_shape(list);
  std::vector<int64_t> lengths;
  if (unwritten && leading == nullptr && n > 0)  // TensorFlow's v1 refuses too
    return invalid_argument(op,
                            ": Concating lists with uninitialized tensors is not supported in this "
                            "version of TensorListConcat; TensorListConcatV2 takes leading_dims");
  if (unwritten) {
    // Zeros: the element shape past its first dimension must be known, the first comes from it or from
    // leading_dims.
    if (!element.rank_known())
      return invalid_argument(op, ": the list was never written and its element shape has unknown rank");
    for (int d = 1; d < element.rank(); ++d)
      if (element.dim(d) < 0)
        return invalid_argument(op, ": the list was never written and the element shape ",
                                element.to_string(), " is not fully known past its first dimension");
    if (element.dim(0) >= 0) {
      lengths.assign(static_cast<size_t>(n), element.dim(0));
    } else {
      const int64_t given = leading == nullptr ? 0 : static_cast<int64_t>(leading->size());
      if (given != n)
        return invalid_argument(op, ": the list has ", n,
                                " elements never written, whose first dimension "
                                "is unknown; leading_dims gives ",
                                given, " lengths");
      if (leading != nullptr) lengths = *leading;  // TensorListConcat (no leading_dims) of an empty list
    }
    shape = element;
  } else {
    if (shape.rank() == 0)
      return invalid_argument(op, ": Concat saw a scalar shape at index 0 but requires at least vectors.");
    EMBER_RETURN_IF_ERROR(check_element(ctx, shape, element));
    lengths.assign(static_cast<size_t>(n), shape.dim(0));
  }
  int64_t total = 0;
  for (int64_t l : lengths) {
    if (l < 0) return invalid_argument(op, ": leading_dims holds the negative length ", l);
    total += l;
  }
  Shape out_shape{total};
  for (int d = 1; d < shape.rank(); ++d) out_shape.push_back(shape.dim(d));
  if (unwritten) {
    auto zeros = zero_list(list.dtype(), total, row_shape_of(out_shape));
    if (!zeros.ok()) return zeros.status();
    ctx.outputs[0] = std::move(zeros).value();
  } else {
    ctx.outputs[0] = TensorImpl::view(list, out_shape);
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, DType::kInt64, Shape{n}));
  std::copy(lengths.begin(), lengths.end(), ctx.output(1).mutable_data<int64_t>());
  return Status::OK();
}

Status concat_kernel(KernelContext& ctx) {
  // The element_shape attribute; an empty one is an unknown rank (a scalar element cannot be concatenated,
  // and graph/tensor_list_import.cc writes TensorFlow's unknown-rank shape so).
  const std::vector<int64_t>& dims = ctx.attr_ints(1);
  Shape element = Shape::unknown_rank();
  if (!dims.empty()) {
    if (static_cast<int64_t>(dims.size()) + 1 > kMaxRank)
      return invalid_argument("TensorListConcat: element_shape has ", dims.size(), " dims; at most ",
                              kMaxRank - 1);
    element = Shape();
    for (int64_t d : dims) element.push_back(d < 0 ? kUnknownDim : d);
  }
  return concat(ctx, element, nullptr);
}

Status concat_v2_kernel(KernelContext& ctx) {
  auto element = element_shape_operand(ctx, 1);
  if (!element.ok()) return element.status();
  const TensorImpl& leading = ctx.input(2);
  if (leading.dtype() != DType::kInt64 || leading.rank() != 1)
    return invalid_argument("TensorListConcatV2: leading_dims must be an int64 vector, got ",
                            dtype_name(leading.dtype()), " of shape ", leading.shape().to_string());
  const std::vector<int64_t> lengths = ctx.int_values(2);
  return concat(ctx, *element, &lengths);
}

Status split_kernel(KernelContext& ctx) {
  const TensorImpl& tensor = ctx.input(0);
  if (tensor.rank() == 0)
    return invalid_argument("TensorListSplit: Tensor must be at least a vector, but saw shape: []");
  auto element = element_shape_operand(ctx, 1);
  if (!element.ok()) return element.status();
  const TensorImpl& lengths_t = ctx.input(2);
  if (lengths_t.dtype() != DType::kInt64 || lengths_t.rank() != 1)
    return invalid_argument("TensorListSplit: lengths must be an int64 vector, got ",
                            dtype_name(lengths_t.dtype()), " of shape ", lengths_t.shape().to_string());
  const std::vector<int64_t> lengths = ctx.int_values(2);
  int64_t total = 0;
  for (int64_t l : lengths) {
    if (l < 0) return invalid_argument("TensorListSplit: Invalid value in lengths: ", l);
    total += l;
  }
  if (total != tensor.shape().dim(0))
    return invalid_argument(
        "TensorListSplit: Expected sum of lengths to be equal to values.shape[0], but sum "
        "of lengths is ",
        total, " and value's leading dim is ", tensor.shape().dim(0));
  const int64_t n = static_cast<int64_t>(lengths.size());
  if (element->rank_known() && element->rank() == 0)
    return invalid_argument("TensorListSplit: element_shape must be at least a vector, got []");
  auto piece_shape = [&](int64_t length) {
    Shape piece{length};
    for (int d = 1; d < tensor.rank(); ++d) piece.push_back(tensor.shape().dim(d));
    return piece;
  };
  // Pieces the element_shape refuses are the caller's error (InvalidArgument, as TensorFlow's); pieces it
  // allows but of different lengths are ember's limit.
  for (int64_t l : lengths) EMBER_RETURN_IF_ERROR(check_element(ctx, piece_shape(l), *element));
  for (int64_t l : lengths)
    if (l != lengths[0])
      return make_error(Code::kUnimplemented,
                        "TensorListSplit: ember's lists are dense, so every element must have the same "
                        "shape; the lengths ",
                        list_str(lengths), " differ");
  const Shape piece = piece_shape(n > 0 ? lengths[0] : 0);
  auto shape = with_rows(ctx, n, piece);
  if (!shape.ok()) return shape.status();
  ctx.outputs[0] = TensorImpl::view(tensor, *shape);
  return Status::OK();
}

Status gather_shape(InferContext& ctx) {
  const Shape element = element_shape_spec(ctx, 2);
  const Shape& indices = ctx.inputs[1].shape;
  if (!element.rank_known() || element.rank() + 1 > kMaxRank) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  Shape out{indices.rank_known() && indices.rank() == 1 ? indices.dim(0) : kUnknownDim};
  for (int64_t d : element.dims()) out.push_back(d);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// Note [Scattering in place]; while tracing, the list's dims where the tensor's rows do not decide them.
Status scatter_into_existing_shape(InferContext& ctx) {
  const Shape &list = ctx.inputs[0].shape, &t = ctx.inputs[1].shape;
  if (list.fully_defined() && t.fully_defined()) {
    auto out = scatter_into_existing_result(ctx.op->name, list, t);
    if (!out.ok()) return out.status();
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
    return Status::OK();
  }
  if (!list.rank_known() || !t.rank_known() || list.rank() != t.rank() || list.rank() == 0) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  Shape out{list.dim(0)};
  for (int d = 1; d < list.rank(); ++d) {
    const int64_t a = list.dim(d), b = t.dim(d);
    out.push_back(a > 0 || a == b ? a : (a < 0 && b > 0 ? b : kUnknownDim));
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// [pieces, piece length, the tensor's other dims].
Status split_shape(InferContext& ctx) {
  const Shape& t = ctx.inputs[0].shape;
  if (!t.rank_known() || t.rank() == 0 || t.rank() + 1 > kMaxRank) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  Shape out{kUnknownDim, kUnknownDim};
  for (int d = 1; d < t.rank(); ++d) out.push_back(t.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status concat_shape(InferContext& ctx) {
  Shape element = Shape::unknown_rank();
  if (ctx.op->name == "TensorListConcat") {
    const std::vector<int64_t>& dims = ctx.attr_ints(1);
    if (!dims.empty() && static_cast<int64_t>(dims.size()) < kMaxRank) {
      element = Shape();
      for (int64_t d : dims) element.push_back(d < 0 ? kUnknownDim : d);
    }
  } else {
    element = element_shape_spec(ctx, 1);
  }
  Shape out = Shape::unknown_rank();
  if (element.rank_known() && element.rank() > 0) {
    out = Shape{kUnknownDim};
    for (int d = 1; d < element.rank(); ++d) out.push_back(element.dim(d));
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape{kUnknownDim}});
  return Status::OK();
}

// Gradients (Note [Gathering and splitting dense lists]).

// x's shape past its first dimension, an int32 vector computed in the graph.
GradTensor element_shape_of(const GradTensor& x) {
  using namespace gradient;
  const std::vector<int64_t> one{1}, rest{-1};
  return emit1("Slice", {shape_of(x), int_vector(one), int_vector(rest)});
}

void gather_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor list = c.input(0);
  const DType dtype = list.dtype();
  GradTensor element = emit1("TensorListElementShape", {list}, {AttrValue(DType::kInt32)});
  GradTensor zeros =
      emit1("TensorListReserve", {element, emit1("TensorListLength", {list})}, {AttrValue(dtype)});
  c.set(0, emit1("TensorListScatterIntoExistingList", {zeros, c.grad(), c.input(1)}, {AttrValue(dtype)}));
}

void scatter_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor tensor = c.input(0);
  c.set(0, emit1("TensorListGather", {c.grad(), c.input(1), element_shape_of(tensor)},
                 {AttrValue(tensor.dtype())}));
}

void scatter_into_existing_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor tensor = c.input(1);
  const DType dtype = tensor.dtype();
  c.set(1, emit1("TensorListGather", {c.grad(), c.input(2), element_shape_of(tensor)}, {AttrValue(dtype)}));
  c.set(0, emit1("TensorListScatterIntoExistingList", {c.grad(), zeros_like(tensor), c.input(2)},
                 {AttrValue(dtype)}));
}

void concat_grad(GradContext& c) {
  using namespace gradient;
  GradTensor element = emit1("TensorListElementShape", {c.input(0)}, {AttrValue(DType::kInt32)});
  c.set(0, emit1("TensorListSplit", {c.grad(0), element, c.output(1)}));
}

void split_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor tensor = c.input(0);
  const std::vector<int64_t> unknown{-1};
  const GradTensor parts[] = {int_vector(unknown), element_shape_of(tensor), scalar(0, DType::kInt32)};
  GradTensor element = emit("ConcatV2", std::span<const GradTensor>(parts), {})[0];
  c.set(0, emit("TensorListConcatV2", {c.grad(), element, c.input(2)}, {AttrValue(tensor.dtype())})[0]);
}

constexpr uint32_t kListFlags = kKernelAllocates | kNotDifferentiable;
}  // namespace

int64_t tensor_list_bytes_copied() { return g_list_bytes_copied.load(std::memory_order_relaxed); }

void register_tensor_array_ops(OpRegistry& r) {
  OpBuilder("InplaceUpdate")
      .doc(
          "x with the rows i (int32) replaced by the rows of v. InplaceUpdate([[1, 2], [3, 4]], [1], [[9, "
          "9]]) "
          "== [[1, 2], [9, 9]]")
      .input("x")
      .input_fixed("i", dtype_bit(DType::kInt32))
      .input("v")
      .output("y")
      .type_var(kAllTypes)
      .flags(kOverwritesInput0)
      .shape(&inplace_update_shape)
      .kernel(kAllTypes, &inplace_update_kernel)
      .grad(&inplace_update_grad)
      .batching(BatchingRule::kFallback)
      .done(r);

  // TensorFlow's TensorList ops on dense lists: Note [TensorLists as dense tensors].
  const DTypeSet kShapeTypes = dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
  OpBuilder("TensorListReserve")
      .doc(
          "A list of num_elements unwritten elements (zeros). TensorListReserve([2], 3) -> [[0, 0], [0, 0], "
          "[0, 0]]")
      .input_shape_like("element_shape")
      .input_fixed("num_elements", kShapeTypes)
      .output("handle")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .dispatch_on_output()
      .flags(kListFlags)
      .shape(&list_handle_shape)
      .kernel(kAllTypes, &reserve_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EmptyTensorList")
      .doc("An empty list. EmptyTensorList([2], -1) -> a [0, 2] list")
      .input_shape_like("element_shape")
      .input_fixed("max_num_elements", kShapeTypes)
      .output("handle")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .dispatch_on_output()
      .flags(kListFlags)
      .shape(&list_handle_shape)
      .kernel(kAllTypes, &empty_list_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListFromTensor")
      .doc(
          "The list of tensor's rows. TensorListFromTensor([[1, 2], [3, 4]], [2]) -> a list of [1, 2], [3, "
          "4]")
      .input("tensor")
      .input_shape_like("element_shape")
      .output("output_handle")
      .type_var(kAllTypes)
      .flags(kListFlags)
      .shape(&list_handle_shape)
      .kernel(kAllTypes, &from_tensor_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListGetItem")
      .doc(
          "Element index of the list (zeros if never written). TensorListGetItem([[1, 2], [3, 4]], 1, [2]) "
          "== [3, 4]")
      .input("input_handle")
      .input_fixed("index", kShapeTypes)
      .input_shape_like("element_shape")
      .output("item")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kListFlags)
      .shape(&item_shape)
      .kernel(kAllTypes, &get_item_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListSetItem")
      .doc(
          "The list with element index replaced (grown first if resize_if_index_out_of_bounds). "
          "TensorListSetItem([[1, 2]], 0, [5, 6]) -> [[5, 6]]")
      .input("input_handle")
      .input_fixed("index", kShapeTypes)
      .input("item")
      .output("output_handle")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .attr("resize_if_index_out_of_bounds", AttrType::kBool, false)
      .flags(kListFlags | kOverwritesInput0)  // Note [Lists growing in place]
      .shape(&list_handle_shape)
      .kernel(kAllTypes, &set_item_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListPushBack")
      .doc("The list with tensor appended. TensorListPushBack([[1, 2]], [3, 4]) -> [[1, 2], [3, 4]]")
      .input("input_handle")
      .input("tensor")
      .output("output_handle")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kListFlags | kOverwritesInput0)  // Note [Lists growing in place]
      .shape(&list_handle_shape)
      .kernel(kAllTypes, &push_back_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListPopBack")
      .doc(
          "The list without its last element, and that element. TensorListPopBack([[1, 2], [3, 4]], [2]) -> "
          "([[1, 2]], [3, 4])")
      .input("input_handle")
      .input_shape_like("element_shape")
      .output("output_handle")
      .output("tensor")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kListFlags)
      .shape(&pop_back_shape)
      .kernel(kAllTypes, &pop_back_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListStack")
      .doc(
          "The elements stacked into one tensor. TensorListStack(a list of [1, 2], [3, 4], [2]) == [[1, 2], "
          "[3, 4]]")
      .input("input_handle")
      .input_shape_like("element_shape")
      .output("tensor")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .attr("num_elements", AttrType::kInt, int64_t{-1})
      .flags(kListFlags)
      .shape(&stack_shape)
      .kernel(kAllTypes, &stack_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListLength")
      .doc("The number of elements, int32. TensorListLength(a list of 3 elements) == 3")
      .input("input_handle")
      .output("length")
      .type_var(kAllTypes)
      .flags(kListFlags)
      .shape(&length_shape)
      .kernel(kAllTypes, &length_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListElementShape")
      .doc(
          "The element shape (-1 before the first write). TensorListElementShape(a list of [2, 3] elements) "
          "== "
          "[2, 3]")
      .input("input_handle")
      .output("element_shape")
      .type_var(kAllTypes)
      .attr("shape_type", AttrType::kDType, DType::kInt32)
      .flags(kListFlags)
      .shape(&element_shape_shape)
      .kernel(kAllTypes, &element_shape_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  // Gather, Scatter, Concat, Split: Note [Gathering and splitting dense lists].
  constexpr uint32_t kMovesRows = kKernelAllocates;
  const DTypeSet kInt32Only = dtype_bit(DType::kInt32), kInt64Only = dtype_bit(DType::kInt64);
  OpBuilder("TensorListGather")
      .doc(
          "The elements at indices, stacked. TensorListGather(a list of [1, 2], [3, 4], [1, 0], [2]) == [[3, "
          "4], "
          "[1, 2]]")
      .input("input_handle")
      .input_fixed("indices", kInt32Only)
      .input_shape_like("element_shape")
      .output("values")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kMovesRows)
      .shape(&gather_shape)
      .kernel(kAllTypes, &gather_kernel)
      .grad(&gather_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  // TensorListScatterV2 is TensorListScatter with one more operand, num_elements.
  for (const bool v2 : {false, true}) {
    OpBuilder b(v2 ? "TensorListScatterV2" : "TensorListScatter");
    b.doc(
         v2 ? "TensorListScatter into a list of num_elements (-1: max(indices) + 1). "
              "TensorListScatterV2([[1, "
              "2]], [1], [2], 3) -> a list of [0, 0], [1, 2], [0, 0]"
            : "A list of max(indices) + 1 elements with tensor's row k at indices[k]. TensorListScatter([[1, "
              "2], [3, 4]], [1, 0], [2]) -> a list of [3, 4], [1, 2]")
        .input("tensor")
        .input_fixed("indices", kInt32Only)
        .input_shape_like("element_shape");
    if (v2) b.input_fixed("num_elements", kInt32Only);
    b.output("output_handle")
        .type_var(kAllTypes)
        .flags(kMovesRows)
        .shape(&list_handle_shape)
        .kernel(kAllTypes, &scatter_kernel)
        .grad(&scatter_grad)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("TensorListScatterIntoExistingList")
      .doc(
          "The list with tensor's row k at indices[k]. TensorListScatterIntoExistingList([[1, 2], [3, 4]], "
          "[[9, 9]], [1]) -> [[1, 2], [9, 9]]")
      .input("input_handle")
      .input("tensor")
      .input_fixed("indices", kInt32Only)
      .output("output_handle")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kOverwritesInput0)
      .shape(&scatter_into_existing_shape)
      .kernel(kAllTypes, &scatter_into_existing_kernel)
      .grad(&scatter_into_existing_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListConcat")
      .doc(
          "The elements joined along their first dimension, and their lengths (int64); element_shape ([] for "
          "an unknown rank) shapes a list never written. TensorListConcat([[1, 2], [3, 4]]) == ([1, 2, 3, "
          "4], [2, 2])")
      .input("input_handle")
      .output("tensor")
      .output("lengths")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .flags(kMovesRows)
      .shape(&concat_shape)
      .kernel(kAllTypes, &concat_kernel)
      .grad(&concat_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListConcatV2")
      .doc(
          "TensorListConcat with the element shape an operand and leading_dims the lengths of elements never "
          "written. TensorListConcatV2([[1, 2], [3, 4]], [-1], []) == ([1, 2, 3, 4], [2, 2])")
      .input("input_handle")
      .input_shape_like("element_shape")
      .input_fixed("leading_dims", kInt64Only)
      .output("tensor")
      .output("lengths")
      .type_var(kAllTypes)
      .attr("element_dtype", AttrType::kDType)
      .flags(kMovesRows)
      .shape(&concat_shape)
      .kernel(kAllTypes, &concat_v2_kernel)
      .grad(&concat_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TensorListSplit")
      .doc(
          "The list of consecutive pieces of tensor with the given lengths (int64; equal in ember). "
          "TensorListSplit([1, 2, 3, 4], [-1], [2, 2]) -> a list of [1, 2], [3, 4]")
      .input("tensor")
      .input_shape_like("element_shape")
      .input_fixed("lengths", kInt64Only)
      .output("output_handle")
      .type_var(kAllTypes)
      .flags(kMovesRows)
      .shape(&split_shape)
      .kernel(kAllTypes, &split_kernel)
      .grad(&split_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

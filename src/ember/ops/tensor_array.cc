// InplaceUpdate: TensorFlow's raw op of that name, the write of a dense TensorArray (python/ember/ops/
// tensor_array_ops.py, Note [Two representations of a TensorArray]): x with rows i replaced by the rows of v.
// One copy of x and one of each written row, where a SelectV2 over a broadcast mask walked every element.
//
// And TensorFlow's TensorList ops, so GraphDefs holding a tf.TensorArray import (Note [TensorLists as dense
// tensors]).
#include <algorithm>
#include <cstring>

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

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
  if (out.mutable_raw_data() != x.raw_data())
    std::memcpy(out.mutable_raw_data(), x.raw_data(),
                static_cast<size_t>(x.num_elements()) * dtype_size(x.dtype()));
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
// shape says nothing of its elements. Writes copy the list (O(n)); these ops exist for imported graphs,
// which ember's own TensorArray (dense, in place) never produces. No gradients: an imported graph runs
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

Shape row_shape(const TensorImpl& list) {
  std::vector<int64_t> dims(list.shape().dims().begin() + 1, list.shape().dims().end());
  return Shape(std::span<const int64_t>(dims));
}

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

// `list` with `rows` rows of `element`'s shape: its rows copied when they have that shape (uninitialized
// rows are zero-element and adopt it), zeros after them.
StatusOr<TensorRef> resized(const KernelContext& ctx, const TensorImpl& list, int64_t rows,
                            const Shape& element) {
  const bool adopt = row_elements(list) == 0 && row_shape(list) != element;
  if (!adopt && row_shape(list) != element)
    return invalid_argument(ctx.op->name, ": the element has shape ", element.to_string(),
                            " but the list holds elements of shape ", row_shape(list).to_string());
  auto out = zero_list(list.dtype(), rows, element);
  if (!out.ok()) return out.status();
  if (!element.fully_defined()) return out;
  const size_t row_bytes = static_cast<size_t>(element.num_elements()) * dtype_size(list.dtype());
  const int64_t keep = std::min(rows, list.shape().dim(0));
  if (!adopt && keep > 0 && row_bytes > 0)
    std::memcpy((*out)->mutable_raw_data(), list.raw_data(), static_cast<size_t>(keep) * row_bytes);
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
  if (a >= 0 && ctx.attr_dtype(a) != got)
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
  auto out = zero_list(ctx.attr_dtype(0), n, *element);
  if (!out.ok()) return out.status();
  ctx.outputs[0] = std::move(out).value();
  return Status::OK();
}

Status empty_list_kernel(KernelContext& ctx) {
  auto element = element_shape_operand(ctx, 0);
  if (!element.ok()) return element.status();
  EMBER_RETURN_IF_ERROR(check_scalar_int(ctx, 1, "max_num_elements"));
  auto out = zero_list(ctx.attr_dtype(0), 0, *element);
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

constexpr uint32_t kListFlags = kKernelAllocates | kNotDifferentiable;
}  // namespace

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
      .flags(kListFlags)
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
      .flags(kListFlags)
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
}

}  // namespace ember

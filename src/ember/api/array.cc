#include "ember/api/array.h"

#include <cstring>
#include <string>

#include "ember/kernels/array.h"

namespace ember {
namespace {

using Ints = std::vector<int64_t>;

// A scalar of any dtype (the Tensor constructors cover only float32, int32 and bool).
Tensor scalar_of(DType dtype, double value) {
  auto t = TensorImpl::allocate(dtype, Shape());
  if (!t.ok()) throw StatusError(t.status());
  const kernels::ScalarBits bits = kernels::encode_scalar(dtype, value);
  std::memcpy(t.value()->mutable_raw_data(), bits.data(), dtype_size(dtype));
  return Tensor(std::move(t).value());
}

}  // namespace

namespace {
// Shape-like operands (shapes, permutations, axes, multiples) are int64 tensors, as in TensorFlow's ops.
Tensor ints(const Ints& values) { return Tensor::from_vector(values); }
}  // namespace

Tensor reshape(const Tensor& x, const Ints& shape) { return call_op1("Reshape", {x, ints(shape)}); }
Tensor reshape(const Tensor& x, const Tensor& shape) { return call_op1("Reshape", {x, shape}); }

Tensor transpose(const Tensor& x, const Ints& perm) {
  if (!perm.empty() || x.rank() == 0) return call_op1("Transpose", {x, ints(perm)});
  Ints reversed;
  for (int i = x.rank() - 1; i >= 0; --i) reversed.push_back(i);
  return call_op1("Transpose", {x, ints(reversed)});
}

Tensor expand_dims(const Tensor& x, int64_t axis) { return call_op1("ExpandDims", {x, Tensor(axis)}); }
Tensor squeeze(const Tensor& x, const Ints& axis) { return call_op1("Squeeze", {x}, {axis}); }
Tensor identity(const Tensor& x) { return call_op1("Identity", {x}); }

Tensor concat(const std::vector<Tensor>& values, int64_t axis) {
  std::vector<Tensor> operands = values;  // values..., axis: TensorFlow's signature
  operands.push_back(Tensor(axis));
  return call_op("ConcatV2", operands, {})[0];
}
Tensor stack(const std::vector<Tensor>& values, int64_t axis) { return call_op("Pack", values, {axis})[0]; }
std::vector<Tensor> unstack(const Tensor& x, int64_t axis) {
  return call_op("Unpack", {x}, {int64_t{-1}, axis});
}

std::vector<Tensor> split(const Tensor& x, const Ints& size_splits, int64_t axis) {
  return call_op("SplitV", {x, ints(size_splits), Tensor(axis)});
}

std::vector<Tensor> split(const Tensor& x, int64_t num_splits, int64_t axis) {
  int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (num_splits <= 0 || a < 0 || a >= x.rank() || x.shape().dim(static_cast<int>(a)) % num_splits != 0)
    throw StatusError(invalid_argument("split: cannot split shape ", x.shape().to_string(), " into ",
                                       num_splits, " equal pieces along axis ", axis));
  return split(x, Ints(static_cast<size_t>(num_splits), x.shape().dim(static_cast<int>(a)) / num_splits),
               axis);
}

Tensor slice(const Tensor& x, const Ints& begin, const Ints& size) {
  return call_op1("Slice", {x, ints(begin), ints(size)});
}

Tensor strided_slice(const Tensor& x, const Ints& begin, const Ints& end, const Ints& strides,
                     int64_t begin_mask, int64_t end_mask, int64_t ellipsis_mask, int64_t new_axis_mask,
                     int64_t shrink_axis_mask) {
  Ints s = strides.empty() ? Ints(begin.size(), 1) : strides;
  return call_op1("StridedSlice", {x, ints(begin), ints(end), ints(s)},
                  {begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask});
}

Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis, int64_t batch_dims) {
  return call_op1("GatherV2", {params, indices, Tensor(axis)}, {batch_dims});
}

Tensor tile(const Tensor& x, const Ints& multiples) { return call_op1("Tile", {x, ints(multiples)}); }

Tensor pad(const Tensor& x, const std::vector<std::array<int64_t, 2>>& paddings, std::string_view mode,
           double constant_value) {
  Ints flat;
  for (const auto& p : paddings) flat.insert(flat.end(), p.begin(), p.end());
  const Tensor matrix = Tensor::from_vector(flat, Shape{static_cast<int64_t>(paddings.size()), 2});
  return call_op1("Pad", {x, matrix}, {constant_value, std::string(mode)});
}

Tensor broadcast_to(const Tensor& x, const Ints& shape) { return call_op1("BroadcastTo", {x, ints(shape)}); }
Tensor broadcast_to(const Tensor& x, const Tensor& shape) { return call_op1("BroadcastTo", {x, shape}); }

Tensor shape(const Tensor& x, DType out_type) { return call_op1("Shape", {x}, {out_type}); }
Tensor size(const Tensor& x, DType out_type) { return call_op1("Size", {x}, {out_type}); }
Tensor rank(const Tensor& x) { return call_op1("Rank", {x}); }

Tensor where(const Tensor& condition) { return call_op1("Where", {condition}); }
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  return call_op1("SelectV2", {condition, x, y});
}

Tensor fill(const Ints& dims, const Tensor& value) { return call_op1("Fill", {ints(dims), value}); }
Tensor fill(const Tensor& dims, const Tensor& value) { return call_op1("Fill", {dims, value}); }
Tensor zeros(const Ints& shape, DType dtype) { return fill(shape, scalar_of(dtype, 0.0)); }
Tensor ones(const Ints& shape, DType dtype) { return fill(shape, scalar_of(dtype, 1.0)); }
Tensor zeros_like(const Tensor& x) { return call_op1("ZerosLike", {x}); }
Tensor ones_like(const Tensor& x) { return call_op1("OnesLike", {x}); }

Tensor eye(int64_t num_rows, int64_t num_columns, const Ints& batch_shape, DType dtype) {
  return call_op1("Eye", {}, {num_rows, num_columns, batch_shape, dtype});
}

Tensor range(double start, double limit, double delta, DType dtype) {
  // The bounds become scalars of `dtype`; one that does not fit would wrap silently (as TensorFlow's
  // convert_to_tensor does not let it).
  if (dtype == DType::kInt32 || dtype == DType::kInt64) {
    const double lo = dtype == DType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
    const double hi = dtype == DType::kInt32 ? 2147483648.0 : 9223372036854775808.0;
    const char* const names[] = {"start", "limit", "delta"};
    const double values[] = {start, limit, delta};
    for (int i = 0; i < 3; ++i)
      if (!(values[i] >= lo && values[i] < hi))
        throw StatusError(invalid_argument("range: ", names[i], " ", values[i], " must be representable in ",
                                           dtype_name(dtype)));
  }
  return call_op1("Range", {scalar_of(dtype, start), scalar_of(dtype, limit), scalar_of(dtype, delta)});
}

Tensor linspace(const Tensor& start, const Tensor& stop, int64_t num) {
  return call_op1("LinSpace", {start, stop, Tensor(num)});
}

Tensor one_hot(const Tensor& indices, int64_t depth, double on_value, double off_value, int64_t axis,
               DType dtype) {
  return call_op1("OneHot", {indices, Tensor(depth), scalar_of(dtype, on_value), scalar_of(dtype, off_value)},
                  {axis});
}

Tensor clip_by_value(const Tensor& t, const Tensor& clip_value_min, const Tensor& clip_value_max) {
  return call_op1("ClipByValue", {t, clip_value_min, clip_value_max});
}

}  // namespace ember

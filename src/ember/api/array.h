// C++ façade: array ops (shapes, joining and splitting, indexing, creation) with TensorFlow's names.
// Shape-like arguments (shapes, axes, perms, multiples) are std::vector<int64_t>, passed to the ops as int
// tensors; reshape, broadcast_to and fill also take a Tensor computed at run time. Every function throws
// ember::StatusError on bad input.
#pragma once

#include <array>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "ember/api/tensor.h"

namespace ember {

/// Same elements, new shape (a view); one dim may be -1.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
/// Reshape to a shape computed at run time (an int32/int64 vector, e.g. from ember::shape).
Tensor reshape(const Tensor& x, const Tensor& shape);
// A braced list ({2, 3}) converts to both std::vector<int64_t> and Tensor (its initializer_list<float>
// constructor), so without these exact matches reshape(x, {2, 3}) would be ambiguous. Same below.
inline Tensor reshape(const Tensor& x, std::initializer_list<int64_t> shape) {
  return reshape(x, std::vector<int64_t>(shape));
}
/// Permutes axes; an empty perm reverses them (tf.transpose's default).
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm = {});
Tensor expand_dims(const Tensor& x, int64_t axis);
/// Removes the listed size-1 axes, or all of them when `axis` is empty.
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axis = {});
Tensor identity(const Tensor& x);

Tensor concat(const std::vector<Tensor>& values, int64_t axis);
Tensor stack(const std::vector<Tensor>& values, int64_t axis = 0);
std::vector<Tensor> unstack(const Tensor& x, int64_t axis = 0);
/// Splits into pieces of the given sizes along `axis` (one size may be -1).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& size_splits, int64_t axis = 0);
/// Splits into `num_splits` equal pieces (the dim must divide evenly).
std::vector<Tensor> split(const Tensor& x, int64_t num_splits, int64_t axis = 0);

/// The block at `begin` of `size` (-1: to the end of that dim).
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);
/// x[begin:end:strides] with TensorFlow's masks (bit i applies to entry i).
Tensor strided_slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides = {}, int64_t begin_mask = 0, int64_t end_mask = 0,
                     int64_t ellipsis_mask = 0, int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0);
Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis = 0, int64_t batch_dims = 0);

Tensor tile(const Tensor& x, const std::vector<int64_t>& multiples);
/// Pads with (before, after) per dim; mode "CONSTANT", "REFLECT" or "SYMMETRIC".
Tensor pad(const Tensor& x, const std::vector<std::array<int64_t, 2>>& paddings,
           std::string_view mode = "CONSTANT", double constant_value = 0.0);
Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape);
Tensor broadcast_to(const Tensor& x, const Tensor& shape);
inline Tensor broadcast_to(const Tensor& x, std::initializer_list<int64_t> shape) {
  return broadcast_to(x, std::vector<int64_t>(shape));
}

Tensor shape(const Tensor& x, DType out_type = DType::kInt32);
Tensor size(const Tensor& x, DType out_type = DType::kInt32);
Tensor rank(const Tensor& x);

/// int64 coordinates [num_true, rank] of the non-zero elements.
Tensor where(const Tensor& condition);
/// condition ? x : y element-wise, all three broadcast.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);

/// A tensor of `dims` filled with the scalar `value` (its dtype).
Tensor fill(const std::vector<int64_t>& dims, const Tensor& value);
Tensor fill(const Tensor& dims, const Tensor& value);
inline Tensor fill(std::initializer_list<int64_t> dims, const Tensor& value) {
  return fill(std::vector<int64_t>(dims), value);
}
Tensor zeros(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor ones(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
/// Identity matrices; num_columns -1 means square.
Tensor eye(int64_t num_rows, int64_t num_columns = -1, const std::vector<int64_t>& batch_shape = {},
           DType dtype = DType::kFloat32);
/// start, start + delta, ... excluding limit.
Tensor range(double start, double limit, double delta = 1.0, DType dtype = DType::kFloat32);
Tensor linspace(const Tensor& start, const Tensor& stop, int64_t num);
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value = 1.0, double off_value = 0.0,
               int64_t axis = -1, DType dtype = DType::kFloat32);
/// Clips t to [clip_value_min, clip_value_max]; the bounds broadcast to t's shape.
Tensor clip_by_value(const Tensor& t, const Tensor& clip_value_min, const Tensor& clip_value_max);

}  // namespace ember

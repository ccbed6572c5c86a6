// C++ façade: reductions, with tf.math's names.
//
// `axes` lists the axes to reduce (negative ones count from the end). An EMPTY `axes` means every axis,
// like TensorFlow's axis=None: reduce_sum(x) is the sum of all elements. (The underlying ops reduce
// nothing for an empty list, as tf.raw_ops.Sum does; call_op("Sum", {x}, {std::vector<int64_t>{}})
// reaches that.) `keepdims` keeps reduced axes with size 1.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/api/tensor.h"

namespace ember {

/// Sum over `axes` (empty: all). 16-bit floats accumulate in float; integers wrap like their type.
Tensor reduce_sum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Mean over `axes` (empty: all). Integer means divide truncating toward zero; an empty float mean is NaN.
Tensor reduce_mean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Product over `axes` (empty: all); the empty product is 1.
Tensor reduce_prod(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Maximum over `axes` (empty: all); NaN propagates; the empty max is -inf (the lowest integer).
Tensor reduce_max(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Minimum over `axes` (empty: all); NaN propagates; the empty min is inf (the highest integer).
Tensor reduce_min(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Logical or of a bool tensor over `axes` (empty: all).
Tensor reduce_any(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// Logical and of a bool tensor over `axes` (empty: all).
Tensor reduce_all(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
/// log(sum(exp(x))) over `axes` (empty: all), computed as log(sum(exp(x - m))) + m with m the maximum.
Tensor reduce_logsumexp(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);

/// Index of the first maximum along `axis` (NaN counts as the maximum); output_type int32 or int64.
Tensor argmax(const Tensor& x, int64_t axis = 0, DType output_type = DType::kInt64);
/// Index of the first minimum along `axis` (NaN counts as the minimum); output_type int32 or int64.
Tensor argmin(const Tensor& x, int64_t axis = 0, DType output_type = DType::kInt64);

}  // namespace ember

// C++ façade: element-wise math ops and operators.
#pragma once

#include "ember/api/tensor.h"
#include "ember/kernels/elementwise_ops.h"

namespace ember {

// One function per row of kernels/elementwise_ops.h, named by its `api` column: negative(x), add(x, y), ...
#define EMBER_UNARY_API(Enum, Op, api, ...) \
  inline Tensor api(const Tensor& x) { return call_op1(#Op, {x}); }
#define EMBER_BINARY_API(Enum, Op, api, ...) \
  inline Tensor api(const Tensor& x, const Tensor& y) { return call_op1(#Op, {x, y}); }
EMBER_UNARY_OPS(EMBER_UNARY_API)
EMBER_BINARY_OPS(EMBER_BINARY_API)
#undef EMBER_BINARY_API
#undef EMBER_UNARY_API

inline Tensor cast(const Tensor& x, DType dtype) { return call_op1("Cast", {x}, {dtype}); }
/// True division; integer inputs are converted to floating point first, as tf.math.truediv does.
Tensor divide(const Tensor& x, const Tensor& y);
Tensor add_n(const std::vector<Tensor>& inputs);

/// Python scalars adopt the other operand's dtype (TensorFlow's rule); these helpers do the same for
/// C++ literals on either side of an operator.
Tensor adopt_dtype(const Tensor& scalar_or_tensor, const Tensor& other);

inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(adopt_dtype(a, b), adopt_dtype(b, a));
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return subtract(adopt_dtype(a, b), adopt_dtype(b, a));
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return multiply(adopt_dtype(a, b), adopt_dtype(b, a));
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return divide(adopt_dtype(a, b), adopt_dtype(b, a));
}
inline Tensor operator-(const Tensor& a) { return negative(a); }
inline Tensor operator<(const Tensor& a, const Tensor& b) {
  return less(adopt_dtype(a, b), adopt_dtype(b, a));
}
inline Tensor operator>(const Tensor& a, const Tensor& b) {
  return greater(adopt_dtype(a, b), adopt_dtype(b, a));
}

}  // namespace ember

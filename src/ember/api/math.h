// C++ façade: element-wise math ops and operators.
#pragma once

#include "ember/api/tensor.h"

namespace ember {

#define EMBER_UNARY_API(fn, Op) \
  inline Tensor fn(const Tensor& x) { return call_op1(Op, {x}); }
EMBER_UNARY_API(negative, "Neg")
EMBER_UNARY_API(abs, "Abs")
EMBER_UNARY_API(sign, "Sign")
EMBER_UNARY_API(exp, "Exp")
EMBER_UNARY_API(log, "Log")
EMBER_UNARY_API(log1p, "Log1p")
EMBER_UNARY_API(expm1, "Expm1")
EMBER_UNARY_API(sqrt, "Sqrt")
EMBER_UNARY_API(rsqrt, "Rsqrt")
EMBER_UNARY_API(square, "Square")
EMBER_UNARY_API(reciprocal, "Reciprocal")
EMBER_UNARY_API(sin, "Sin")
EMBER_UNARY_API(cos, "Cos")
EMBER_UNARY_API(tanh, "Tanh")
EMBER_UNARY_API(sigmoid, "Sigmoid")
EMBER_UNARY_API(relu, "Relu")
EMBER_UNARY_API(relu6, "Relu6")
EMBER_UNARY_API(elu, "Elu")
EMBER_UNARY_API(softplus, "Softplus")
EMBER_UNARY_API(erf, "Erf")
EMBER_UNARY_API(floor, "Floor")
EMBER_UNARY_API(ceil, "Ceil")
EMBER_UNARY_API(round, "Round")
EMBER_UNARY_API(logical_not, "LogicalNot")
EMBER_UNARY_API(is_nan, "IsNan")
EMBER_UNARY_API(is_finite, "IsFinite")
#undef EMBER_UNARY_API

#define EMBER_BINARY_API(fn, Op) \
  inline Tensor fn(const Tensor& x, const Tensor& y) { return call_op1(Op, {x, y}); }
EMBER_BINARY_API(add, "Add")
EMBER_BINARY_API(subtract, "Sub")
EMBER_BINARY_API(multiply, "Mul")
EMBER_BINARY_API(floordiv, "FloorDiv")
EMBER_BINARY_API(floormod, "FloorMod")
EMBER_BINARY_API(pow, "Pow")
EMBER_BINARY_API(maximum, "Maximum")
EMBER_BINARY_API(minimum, "Minimum")
EMBER_BINARY_API(squared_difference, "SquaredDifference")
EMBER_BINARY_API(equal, "Equal")
EMBER_BINARY_API(not_equal, "NotEqual")
EMBER_BINARY_API(less, "Less")
EMBER_BINARY_API(less_equal, "LessEqual")
EMBER_BINARY_API(greater, "Greater")
EMBER_BINARY_API(greater_equal, "GreaterEqual")
EMBER_BINARY_API(logical_and, "LogicalAnd")
EMBER_BINARY_API(logical_or, "LogicalOr")
#undef EMBER_BINARY_API

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

#include "ember/api/math.h"

namespace ember {

Tensor divide(const Tensor& x, const Tensor& y) {
  if (is_integer(x.dtype()) && x.dtype() == y.dtype()) {
    // tf.math.truediv: 8/16-bit integers divide in float32, 32/64-bit in float64.
    DType f = dtype_size(x.dtype()) <= 2 ? DType::kFloat32 : DType::kFloat64;
    return call_op1("RealDiv", {cast(x, f), cast(y, f)});
  }
  return call_op1("RealDiv", {x, y});
}

Tensor add_n(const std::vector<Tensor>& inputs) { return call_op("AddN", inputs, {})[0]; }

Tensor adopt_dtype(const Tensor& t, const Tensor& other) {
  // A rank-0 literal of a different dtype than a tensor operand takes the tensor's dtype.
  if (t.rank() == 0 && other.rank() > 0 && t.dtype() != other.dtype()) return cast(t, other.dtype());
  return t;
}

}  // namespace ember

// C++ façade: linear algebra.
#pragma once

#include "ember/api/tensor.h"

namespace ember {

/// Matrix product of the last two dims, op(a) @ op(b) with op a transpose when asked; the batch dims
/// (all but the last two, rank >= 2 each) broadcast as in NumPy. float16/bfloat16/float32/float64,
/// int32, int64. matmul(a [2,1,3,4], b [5,4,6]) has shape [2,5,3,6].
inline Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false) {
  return call_op1("MatMul", {a, b}, {AttrValue(transpose_a), AttrValue(transpose_b)});
}

}  // namespace ember

// 16-bit floating tensors (float16, bfloat16) computed in float32 by kernels that have float32 loops only:
// widen the operands once, run the float32 path, round each result element once (Note [16-bit convolutions]
// in conv.cc, Note [16-bit batch norm] in batch_norm.cc).
#pragma once

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

/// Whether `dtype` is float16 or bfloat16.
bool is_16bit_float(DType dtype);

/// A float32 copy of `src` (float16 or bfloat16), converted in parallel.
StatusOr<TensorRef> widen_to_float32(const TensorImpl& src);

/// dst (float16 or bfloat16, src's shape) = src (float32), each element rounded to nearest even once.
void narrow_from_float32(const TensorImpl& src, TensorImpl& dst);

}  // namespace ember::kernels

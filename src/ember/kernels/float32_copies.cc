#include "ember/kernels/float32_copies.h"

#include "ember/core/half.h"
#include "ember/core/parallel.h"

namespace ember::kernels {
namespace {

template <typename Half>
void widen(const TensorImpl& src, TensorImpl& dst) {
  const Half* s = src.data<Half>();
  float* d = dst.mutable_data<float>();
  parallel_for(src.num_elements(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) d[i] = static_cast<float>(s[i]);
  });
}

template <typename Half>
void narrow(const TensorImpl& src, TensorImpl& dst) {
  const float* s = src.data<float>();
  Half* d = dst.mutable_data<Half>();
  parallel_for(src.num_elements(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) d[i] = Half(s[i]);
  });
}

}  // namespace

bool is_16bit_float(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

StatusOr<TensorRef> widen_to_float32(const TensorImpl& src) {
  auto wide = TensorImpl::allocate(DType::kFloat32, src.shape());
  EMBER_RETURN_IF_ERROR(wide.status());
  if (src.dtype() == DType::kFloat16)
    widen<float16>(src, **wide);
  else
    widen<bfloat16>(src, **wide);
  return wide;
}

void narrow_from_float32(const TensorImpl& src, TensorImpl& dst) {
  if (dst.dtype() == DType::kFloat16)
    narrow<float16>(src, dst);
  else
    narrow<bfloat16>(src, dst);
}

}  // namespace ember::kernels

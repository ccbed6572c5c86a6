// The type kernels compute in: 16-bit floats load into float and round back on store, as TensorFlow's
// CPU kernels do; every other type computes in itself.
#pragma once

#include <type_traits>

#include "ember/core/half.h"

namespace ember::kernels {

template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<float16> {
  using type = float;
};
template <>
struct compute_type<bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

}  // namespace ember::kernels

// The type integer kernels add and multiply in: the unsigned type of the same width, so that overflow wraps
// modulo 2^bits as TensorFlow's kernels do in practice, without signed overflow (undefined in C++); floating
// point types compute in themselves. Used by the matmul's blocked loops and the direct convolution loops.
#pragma once

#include <cstdint>

namespace ember::kernels {

template <typename T>
struct arith_type {
  using type = T;
};
template <>
struct arith_type<int32_t> {
  using type = uint32_t;
};
template <>
struct arith_type<int64_t> {
  using type = uint64_t;
};
template <typename T>
using Arith = typename arith_type<T>::type;

}  // namespace ember::kernels

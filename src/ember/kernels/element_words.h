// Kernels that only move data work on machine words of the element's size, so one instantiation per
// width serves every dtype (and keeps compile time down).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels {

typedef uint8_t __attribute__((may_alias)) W1;
typedef uint16_t __attribute__((may_alias)) W2;
typedef uint32_t __attribute__((may_alias)) W4;
typedef uint64_t __attribute__((may_alias)) W8;
/// complex128's element: moved as a whole, never computed on.
struct __attribute__((may_alias)) W16 {
  uint64_t lo, hi;
};

/// Calls fn.template operator()<W>() with W the word of `elem_size` bytes (1, 2, 4 or 8).
template <typename Fn>
void visit_width(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1:
      fn.template operator()<W1>();
      break;
    case 2:
      fn.template operator()<W2>();
      break;
    case 4:
      fn.template operator()<W4>();
      break;
    default:
      fn.template operator()<W8>();
      break;
  }
}

/// The same for kernels that only move elements (copies, transposes, fills, selects), which also see
/// 16-byte complex128 elements: W16 for those.
template <typename Fn>
void visit_move_width(size_t elem_size, Fn&& fn) {
  if (elem_size == 16)
    fn.template operator()<W16>();
  else
    visit_width(elem_size, fn);
}

}  // namespace ember::kernels

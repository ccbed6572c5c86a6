// Kernels that add values back to where a gather or a mirror padding read them: UnsortedSegmentSum (the
// adjoint of GatherV2) and MirrorPadGrad (of Pad's REFLECT and SYMMETRIC modes). Unlike the rest of the
// array kernels they add, so they look at the dtype. See array.h.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/array.h"

namespace ember::kernels {
namespace {

// 16-bit floats accumulate in float: adding many small terms in half precision loses most of them.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// Integers wrap in two's complement, as TensorFlow's kernels do. int32/int64 add in their unsigned type:
// signed overflow is undefined behaviour (narrower ones promote to int, whose sum cannot overflow).
template <typename A>
inline void add_to(A& sum, A x) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<decltype(sum + x)>;
    sum = static_cast<A>(static_cast<U>(sum) + static_cast<U>(x));
  } else {
    sum = static_cast<A>(sum + x);
  }
}

}  // namespace

// ---- UnsortedSegmentSum

int64_t unsorted_segment_sum(const void* data, DType dtype, const void* ids_v, DType id_dtype, int64_t n,
                             int64_t inner, int64_t num_segments, void* out) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    ids[j] = load_index(ids_v, id_dtype, j);
    if (ids[j] >= num_segments) return j;
  }
  visit_dtype<kNumericAndComplexTypes>(dtype, [&]<typename T>() {
    using A = Acc<T>;
    const T* x = static_cast<const T*>(data);
    T* o = static_cast<T*>(out);
    const int64_t size = num_segments * inner;
    std::vector<A> scratch;
    A* acc;
    if constexpr (std::is_same_v<A, T>) {
      acc = o;
    } else {
      scratch.resize(static_cast<size_t>(size));
      acc = scratch.data();
    }
    std::fill(acc, acc + size, A(0));
    // Threads own disjoint column ranges and walk the rows in order: no atomics, and the same sums
    // whatever the thread count.
    parallel_for(inner, n + 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = 0; j < n; ++j) {
        if (ids[j] < 0) continue;
        A* row = acc + ids[j] * inner;
        const T* src = x + j * inner;
        for (int64_t i = begin; i < end; ++i) add_to(row[i], static_cast<A>(src[i]));
      }
    });
    if constexpr (!std::is_same_v<A, T>) {
      for (int64_t k = 0; k < size; ++k) o[k] = static_cast<T>(acc[k]);
    }
  });
  return -1;
}

// ---- MirrorPadGrad
//
// Mirror padding is separable: padded element (p0, p1, ...) is input element (m0(p0), m1(p1), ...), so its
// adjoint folds one dim at a time, each fold summing rows of the dim onto the row they were copied from.

namespace {

// The input index that padded index p (in [0, left + n + right)) copies.
int64_t mirror_source(int64_t p, int64_t left, int64_t n, int64_t shift) {
  if (p < left) return left - p - shift;
  if (p >= left + n) return n - 2 + shift - (p - left - n);
  return p - left;
}

}  // namespace

void mirror_pad_grad(const void* dy, DType dtype, std::span<const int64_t> dy_dims,
                     std::span<const int64_t> paddings, bool symmetric, void* out) {
  const int rank = static_cast<int>(dy_dims.size());
  const int64_t shift = symmetric ? 1 : 0;
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    using A = Acc<T>;
    int64_t dims[kMaxRank];
    int64_t total = 1;
    for (int d = 0; d < rank; ++d) total *= (dims[d] = dy_dims[d]);
    const T* src = static_cast<const T*>(dy);
    std::vector<A> cur(static_cast<size_t>(total)), next;
    for (int64_t k = 0; k < total; ++k) cur[k] = static_cast<A>(src[k]);
    for (int d = 0; d < rank; ++d) {
      const int64_t left = paddings[2 * d], right = paddings[2 * d + 1];
      if (left == 0 && right == 0) continue;
      const int64_t padded = dims[d], n = padded - left - right;
      int64_t outer = 1, inner = 1;
      for (int k = 0; k < d; ++k) outer *= dims[k];
      for (int k = d + 1; k < rank; ++k) inner *= dims[k];
      next.assign(static_cast<size_t>(outer * n * inner), A(0));
      parallel_for(outer, padded * inner + 1, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          for (int64_t p = 0; p < padded; ++p) {
            A* row = next.data() + (o * n + mirror_source(p, left, n, shift)) * inner;
            const A* from = cur.data() + (o * padded + p) * inner;
            for (int64_t i = 0; i < inner; ++i) add_to(row[i], from[i]);
          }
        }
      });
      cur.swap(next);
      dims[d] = n;
    }
    T* o = static_cast<T*>(out);
    for (size_t k = 0; k < cur.size(); ++k) o[k] = static_cast<T>(cur[k]);
  });
}

}  // namespace ember::kernels

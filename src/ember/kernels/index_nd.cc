// See index_nd.h.
#include "ember/kernels/index_nd.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/kernels/array.h"

namespace ember::kernels {

int64_t index_nd_offsets(const void* indices, DType index_dtype, int64_t n, int depth, const int64_t* dims,
                         int64_t* offsets) {
  for (int64_t j = 0; j < n; ++j) {
    int64_t offset = 0;
    for (int k = 0; k < depth; ++k) {
      const int64_t v = load_index(indices, index_dtype, j * depth + k);
      if (v < 0 || v >= dims[k]) return j;
      offset = offset * dims[k] + v;
    }
    offsets[j] = offset;
  }
  return -1;
}

void gather_nd(const void* params, const int64_t* offsets, int64_t n, int64_t slice, size_t elem_size,
               void* out) {
  const size_t row = static_cast<size_t>(slice) * elem_size;
  const char* src = static_cast<const char*>(params);
  char* dst = static_cast<char*>(out);
  parallel_for(n, static_cast<int64_t>(row / 16 + 1), [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) std::memcpy(dst + j * row, src + offsets[j] * row, row);
  });
}

namespace {

// Integers wrap as TensorFlow's kernels do; signed ones add in their unsigned type (no undefined overflow).
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) >= sizeof(int)) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}

template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) >= sizeof(int)) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}

template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) >= sizeof(int)) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

template <typename T>
void apply(ScatterMode mode, T* dst, const T* src, int64_t b, int64_t e) {
  switch (mode) {
    case ScatterMode::kUpdate:
      std::copy(src + b, src + e, dst + b);
      break;
    case ScatterMode::kAdd:
      for (int64_t i = b; i < e; ++i) dst[i] = wrap_add(dst[i], src[i]);
      break;
    case ScatterMode::kSub:
      for (int64_t i = b; i < e; ++i) dst[i] = wrap_sub(dst[i], src[i]);
      break;
    case ScatterMode::kMin:
      for (int64_t i = b; i < e; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
      break;
    case ScatterMode::kMax:
      for (int64_t i = b; i < e; ++i) dst[i] = dst[i] < src[i] ? src[i] : dst[i];
      break;
    case ScatterMode::kMul:
      for (int64_t i = b; i < e; ++i) dst[i] = wrap_mul(dst[i], src[i]);
      break;
    case ScatterMode::kDiv:  // divisors are checked non-zero by the caller (ResourceScatterDiv)
      for (int64_t i = b; i < e; ++i) {
        if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
          // The lowest value over -1 overflows (a SIGFPE on x86): it wraps, as ember's FloorDiv does
          if (src[i] == T(-1)) {
            dst[i] = wrap_sub(T(0), dst[i]);
            continue;
          }
        }
        dst[i] = static_cast<T>(dst[i] / src[i]);
      }
      break;
  }
}

}  // namespace

void scatter_nd(const int64_t* offsets, int64_t n, int64_t slice, const void* updates, DType dtype,
                ScatterMode mode, void* out) {
  visit_dtype<kAllTypesAndComplex>(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      // Only kUpdate is declared for bool.
      const bool* u = static_cast<const bool*>(updates);
      bool* o = static_cast<bool*>(out);
      for (int64_t j = 0; j < n; ++j) std::copy(u + j * slice, u + (j + 1) * slice, o + offsets[j] * slice);
    } else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
      // Complex values are declared for sums and products only (ScatterNd, the sorted segment sums and
      // products, UnsortedSegmentProd); `apply`'s min and max have no meaning there.
      EMBER_DCHECK(mode == ScatterMode::kAdd || mode == ScatterMode::kMul);
      const T* u = static_cast<const T*>(updates);
      T* o = static_cast<T*>(out);
      const bool add = mode == ScatterMode::kAdd;
      parallel_for(slice, n + 1, [&](int64_t b, int64_t e) {
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = b; i < e; ++i) {
            T& dst = o[offsets[j] * slice + i];
            dst = add ? dst + u[j * slice + i] : dst * u[j * slice + i];
          }
      });
    } else {
      const T* u = static_cast<const T*>(updates);
      T* o = static_cast<T*>(out);
      // Threads own disjoint column ranges of every slice and walk the updates in order.
      parallel_for(slice, n + 1, [&](int64_t b, int64_t e) {
        for (int64_t j = 0; j < n; ++j) apply(mode, o + offsets[j] * slice, u + j * slice, b, e);
      });
    }
  });
}

void fill_identity(DType dtype, ScatterMode mode, int64_t n, void* out) {
  if (is_complex(dtype)) {  // sums and products only (see scatter_nd)
    EMBER_DCHECK(mode == ScatterMode::kAdd || mode == ScatterMode::kMul);
    visit_dtype<kComplexTypes>(dtype, [&]<typename T>() {
      std::fill(static_cast<T*>(out), static_cast<T*>(out) + n, T(mode == ScatterMode::kMul ? 1 : 0));
    });
    return;
  }
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    // TensorFlow's empty min/max segments hold the finite extremes (numeric_limits' max and lowest).
    double highest;
    if constexpr (std::is_same_v<T, float16>) {
      highest = 65504.0;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      highest = 3.3895313892515355e38;
    } else {
      highest = static_cast<double>(std::numeric_limits<T>::max());
    }
    double lowest;
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      lowest = -highest;
    } else {
      lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    }
    auto as_t = [](double x) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        return T(static_cast<float>(x));
      } else {
        return static_cast<T>(x);
      }
    };
    T v = as_t(0);
    if (mode == ScatterMode::kMul) v = as_t(1);
    if (mode == ScatterMode::kMin) v = as_t(highest);
    if (mode == ScatterMode::kMax) v = as_t(lowest);
    if constexpr (std::is_same_v<T, int64_t>) {
      if (mode == ScatterMode::kMin) v = std::numeric_limits<int64_t>::max();
      if (mode == ScatterMode::kMax) v = std::numeric_limits<int64_t>::lowest();
    }
    std::fill(static_cast<T*>(out), static_cast<T*>(out) + n, v);
  });
}

}  // namespace ember::kernels

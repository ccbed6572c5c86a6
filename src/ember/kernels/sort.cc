// See sort.h.
#include "ember/kernels/sort.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/parallel.h"

namespace ember::kernels {
namespace {

// 16-bit floats compare as float.
template <typename T>
using Cmp = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// a ranks above b in Note [Sort order] (values only; ties are broken by index by the callers).
template <typename C>
inline bool greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return a_nan && !b_nan;
  }
  return a > b;
}

template <typename I>
inline void store_index(void* out, int64_t i, int64_t v) {
  static_cast<I*>(out)[i] = static_cast<I>(v);
}

// Scratch reused across the rows one thread handles (an allocation per row cost more than the selection).
template <typename C>
struct RowScratch {
  std::vector<C> best;
  std::vector<int64_t> at;
  std::vector<std::pair<C, int64_t>> pairs;
};

// The k largest of a short selection: a sorted buffer that a new element enters only when it beats the
// last one (strictly: an equal later element ranks below). Most elements fail the first comparison; only
// those and NaNs take the full order.
template <typename T, typename I>
void top_k_small(const T* x, int64_t n, int64_t k, T* values, I* indices, RowScratch<Cmp<T>>& scratch) {
  using C = Cmp<T>;
  scratch.best.resize(static_cast<size_t>(k));
  scratch.at.resize(static_cast<size_t>(k));
  C* best = scratch.best.data();
  int64_t* at = scratch.at.data();
  int64_t filled = 0;
  for (int64_t j = 0; j < n; ++j) {
    const C v = static_cast<C>(x[j]);
    if (filled == k) {
      if (!(v > best[k - 1]) && v == v) continue;
      if (!greater(v, best[k - 1])) continue;
    }
    int64_t p = filled < k ? filled++ : k - 1;
    while (p > 0 && greater(v, best[p - 1])) {
      best[p] = best[p - 1];
      at[p] = at[p - 1];
      --p;
    }
    best[p] = v;
    at[p] = j;
  }
  for (int64_t i = 0; i < k; ++i) {
    values[i] = x[at[i]];
    indices[i] = static_cast<I>(at[i]);
  }
}

// Any k: (value, index) pairs partitioned at the k-th (nth_element) and the first k sorted, under the total
// order of Note [Sort order].
template <typename T, typename I>
void top_k_compare(const T* x, int64_t n, int64_t k, T* values, I* indices, RowScratch<Cmp<T>>& scratch) {
  using C = Cmp<T>;
  auto& pairs = scratch.pairs;
  pairs.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) pairs[j] = {static_cast<C>(x[j]), j};
  auto before = [](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
    if (greater(a.first, b.first)) return true;
    if (greater(b.first, a.first)) return false;
    return a.second < b.second;
  };
  if (k < n) std::nth_element(pairs.begin(), pairs.begin() + (k - 1), pairs.end(), before);
  std::sort(pairs.begin(), pairs.begin() + k, before);
  for (int64_t i = 0; i < k; ++i) {
    values[i] = x[pairs[i].second];
    indices[i] = static_cast<I>(pairs[i].second);
  }
}

// The descending key of a 4-byte value as an unsigned integer whose ascending order is Note [Sort order]
// (NaNs made one NaN, -0 made +0 so that they tie).
template <typename T>
inline uint32_t descending_key(T v) {
  uint32_t u;
  if constexpr (std::is_same_v<T, float>) {
    if (v != v) v = std::numeric_limits<float>::quiet_NaN();
    if (v == 0.0f) v = 0.0f;
    u = std::bit_cast<uint32_t>(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  } else {
    u = static_cast<uint32_t>(v) ^ 0x80000000u;
  }
  return ~u;
}

// Note [Radix sort]: a full sort of one long row of 4-byte values. Records are (key << 32 | index), sorted
// by the key's 32 bits in three stable passes of 11-bit digits, each pass split over `chunks` contiguous
// ranges (a histogram per range, prefix sums over digits then ranges, a stable scatter per range), so the
// result is the same for any number of threads. A stable sort of records made in index order keeps equal
// keys in index order.
template <typename T, typename I>
void radix_sort_row(const T* x, int64_t n, T* values, I* indices, int chunks) {
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  std::vector<uint64_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  const int64_t per = (n + chunks - 1) / chunks;
  auto each_chunk = [&](auto&& fn) {
    parallel_for(chunks, int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) fn(static_cast<int>(c), c * per, std::min(n, (c + 1) * per));
    });
  };
  each_chunk([&](int, int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j)
      a[j] = (static_cast<uint64_t>(descending_key(x[j])) << 32) | uint64_t(j);
  });
  std::vector<int64_t> hist(static_cast<size_t>(chunks) * kBuckets);
  for (int shift = 32; shift < 64; shift += kBits) {
    std::fill(hist.begin(), hist.end(), 0);
    each_chunk([&](int c, int64_t lo, int64_t hi) {
      int64_t* h = hist.data() + static_cast<size_t>(c) * kBuckets;
      for (int64_t j = lo; j < hi; ++j) ++h[(a[j] >> shift) & (kBuckets - 1)];
    });
    // A digit shared by every record orders nothing: skip the pass.
    bool one_digit = false;
    for (int d = 0; d < kBuckets && !one_digit; ++d) {
      int64_t total = 0;
      for (int c = 0; c < chunks; ++c) total += hist[static_cast<size_t>(c) * kBuckets + d];
      one_digit = total == n;
    }
    if (one_digit) continue;
    int64_t running = 0;
    for (int d = 0; d < kBuckets; ++d)
      for (int c = 0; c < chunks; ++c) {
        int64_t& h = hist[static_cast<size_t>(c) * kBuckets + d];
        const int64_t count = h;
        h = running;
        running += count;
      }
    each_chunk([&](int c, int64_t lo, int64_t hi) {
      int64_t* off = hist.data() + static_cast<size_t>(c) * kBuckets;
      for (int64_t j = lo; j < hi; ++j) b[off[(a[j] >> shift) & (kBuckets - 1)]++] = a[j];
    });
    a.swap(b);
  }
  each_chunk([&](int, int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const int64_t i = static_cast<int64_t>(a[j] & 0xffffffffu);
      values[j] = x[i];
      indices[j] = static_cast<I>(i);
    }
  });
}

template <typename T, typename I>
void top_k_row(const T* x, int64_t n, int64_t k, T* values, I* indices, int threads,
               RowScratch<Cmp<T>>& scratch) {
  if (k == 0) return;
  constexpr bool kRadix = sizeof(T) == 4 && (std::is_same_v<T, float> || std::is_same_v<T, int32_t>);
  if constexpr (kRadix) {
    if (k == n && n >= 4096 && n < (int64_t{1} << 32)) {
      const int chunks = static_cast<int>(std::clamp<int64_t>(n / 65536, 1, threads));
      return radix_sort_row(x, n, values, indices, chunks);
    }
  }
  if (k <= 16 && k * 4 <= n) return top_k_small(x, n, k, values, indices, scratch);
  top_k_compare(x, n, k, values, indices, scratch);
}

}  // namespace

void top_k(const void* in, DType dtype, int64_t rows, int64_t n, int64_t k, void* values, void* indices,
           DType index_dtype) {
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    auto run = [&]<typename I>() {
      const T* x = static_cast<const T*>(in);
      T* v = static_cast<T*>(values);
      I* ix = static_cast<I*>(indices);
      RowScratch<Cmp<T>> scratch;
      if (rows == 1) return top_k_row(x, n, k, v, ix, intra_op_threads(), scratch);
      parallel_for(rows, n * 4 + 1, [&](int64_t lo, int64_t hi) {
        RowScratch<Cmp<T>> local;
        for (int64_t r = lo; r < hi; ++r) top_k_row(x + r * n, n, k, v + r * k, ix + r * k, 1, local);
      });
    };
    if (index_dtype == DType::kInt64)
      run.template operator()<int64_t>();
    else
      run.template operator()<int32_t>();
  });
}

void search_sorted(const void* sorted, const void* values, DType dtype, int64_t rows, int64_t n, int64_t m,
                   bool upper, void* out, DType out_dtype) {
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    using C = Cmp<T>;
    const T* s = static_cast<const T*>(sorted);
    const T* v = static_cast<const T*>(values);
    parallel_for(rows * m, 20, [&](int64_t lo, int64_t hi) {
      for (int64_t q = lo; q < hi; ++q) {
        const T* row = s + (q / m) * n;
        const C value = static_cast<C>(v[q]);
        // Plain < as TensorFlow's std::lower_bound: a binary search stays in bounds whatever NaN does.
        int64_t first = 0, count = n;
        while (count > 0) {
          const int64_t step = count / 2, mid = first + step;
          const C e = static_cast<C>(row[mid]);
          if (upper ? !(value < e) : (e < value)) {
            first = mid + 1;
            count -= step + 1;
          } else {
            count = step;
          }
        }
        if (out_dtype == DType::kInt64)
          store_index<int64_t>(out, q, first);
        else
          store_index<int32_t>(out, q, first);
      }
    });
  });
}

int64_t unique(const void* x, DType dtype, int64_t n, void* idx, DType idx_dtype, int64_t* first,
               int64_t* counts) {
  int64_t distinct = 0;
  visit_dtype(dtype, [&]<typename T>() {
    using C = Cmp<T>;
    const T* v = static_cast<const T*>(x);
    // Keys compare with ==, as TensorFlow's: -0 and +0 are one element, and each NaN is its own.
    std::unordered_map<C, int64_t> seen;
    seen.reserve(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      auto [it, added] = seen.try_emplace(static_cast<C>(v[j]), distinct);
      if (added) {
        first[distinct] = j;
        counts[distinct] = 0;
        ++distinct;
      }
      ++counts[it->second];
      if (idx_dtype == DType::kInt64)
        store_index<int64_t>(idx, j, it->second);
      else
        store_index<int32_t>(idx, j, it->second);
    }
  });
  return distinct;
}

}  // namespace ember::kernels

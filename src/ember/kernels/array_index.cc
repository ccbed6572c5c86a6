// Kernels of the indexing and value-producing array ops: GatherV2, Where, SelectV2, ClipByValue,
// OneHot, Range and LinSpace. See array.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/kernels/array.h"

namespace ember::kernels {
namespace {

typedef uint8_t __attribute__((may_alias)) W1;
typedef uint16_t __attribute__((may_alias)) W2;
typedef uint32_t __attribute__((may_alias)) W4;
typedef uint64_t __attribute__((may_alias)) W8;

template <typename Fn>
void visit_width(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1: fn.template operator()<W1>(); break;
    case 2: fn.template operator()<W2>(); break;
    case 4: fn.template operator()<W4>(); break;
    default: fn.template operator()<W8>(); break;
  }
}

template <typename Fn>
void visit_index_type(DType d, Fn&& fn) {
  switch (d) {
    case DType::kInt32: fn.template operator()<int32_t>(); break;
    case DType::kInt64: fn.template operator()<int64_t>(); break;
    default: fn.template operator()<uint8_t>(); break;
  }
}

// 16-bit floats compare and compute in float.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

/// Calls fn(row, offsets) for each row of a broadcast walk, where offsets[k] is operand k's element offset
/// of the row's first element; the output is dense with rows of walk.dims[rank - 1] elements.
template <typename Fn>
void for_each_row(const BroadcastWalk& w, int64_t cost_per_element, Fn&& fn) {
  if (w.rank == 0) {
    int64_t zero[3] = {0, 0, 0};
    fn(int64_t{0}, zero);
    return;
  }
  const int last = w.rank - 1;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= w.dims[d];
  parallel_for(rows, w.dims[last] * cost_per_element + 8, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t off[3] = {0, 0, 0}, rem = row;
      for (int d = last - 1; d >= 0; --d) {
        int64_t i = rem % w.dims[d];
        rem /= w.dims[d];
        for (int k = 0; k < w.num_operands; ++k) off[k] += i * w.strides[k][d];
      }
      fn(row, off);
    }
  });
}

}  // namespace

// ---- GatherV2

int64_t gather(const void* params, const void* indices, DType index_dtype, void* out, size_t elem, int64_t batch,
               int64_t outer, int64_t axis_dim, int64_t n, int64_t inner) {
  int64_t bad = -1;
  visit_index_type(index_dtype, [&]<typename I>() {
    const I* idx = static_cast<const I*>(indices);
    for (int64_t i = 0; i < batch * n; ++i) {
      int64_t v = static_cast<int64_t>(idx[i]);
      if (v < 0 || v >= axis_dim) {
        bad = i;
        return;
      }
    }
    const char* src = static_cast<const char*>(params);
    char* dst = static_cast<char*>(out);
    const size_t row = static_cast<size_t>(inner) * elem;
    auto body = [&]<size_t kRow>(int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        int64_t j = k % n, bo = k / n, b = bo / outer;
        int64_t v = static_cast<int64_t>(idx[b * n + j]);
        const char* s = src + (bo * axis_dim + v) * static_cast<int64_t>(row);
        if constexpr (kRow > 0) std::memcpy(dst + k * static_cast<int64_t>(kRow), s, kRow);
        else std::memcpy(dst + k * static_cast<int64_t>(row), s, row);
      }
    };
    parallel_for(batch * outer * n, static_cast<int64_t>(row) / 8 + 4, [&](int64_t begin, int64_t end) {
      switch (row) {
        case 1: body.template operator()<1>(begin, end); break;
        case 2: body.template operator()<2>(begin, end); break;
        case 4: body.template operator()<4>(begin, end); break;
        case 8: body.template operator()<8>(begin, end); break;
        default: body.template operator()<0>(begin, end); break;
      }
    });
  });
  return bad;
}

// ---- Where

namespace {
// The bits that make an element non-zero: for floats everything but the sign, so -0.0 counts as zero.
uint64_t nonzero_mask(DType d) {
  switch (d) {
    case DType::kFloat16:
    case DType::kBFloat16: return 0x7fffu;
    case DType::kFloat32: return 0x7fffffffu;
    case DType::kFloat64: return 0x7fffffffffffffffull;
    default: return ~uint64_t{0};
  }
}
}  // namespace

int64_t count_nonzero(const void* data, DType dtype, int64_t n) {
  int64_t count = 0;
  visit_width(dtype_size(dtype), [&]<typename W>() {
    const W* p = static_cast<const W*>(data);
    const W mask = static_cast<W>(nonzero_mask(dtype));
    for (int64_t i = 0; i < n; ++i) count += (p[i] & mask) != 0;
  });
  return count;
}

void nonzero_coordinates(const void* data, DType dtype, const Shape& shape, int64_t* out) {
  const int rank = shape.rank();
  const int64_t n = shape.num_elements();
  visit_width(dtype_size(dtype), [&]<typename W>() {
    const W* p = static_cast<const W*>(data);
    const W mask = static_cast<W>(nonzero_mask(dtype));
    int64_t idx[kMaxRank] = {};
    for (int64_t i = 0; i < n; ++i) {
      if ((p[i] & mask) != 0) {
        for (int d = 0; d < rank; ++d) *out++ = idx[d];
      }
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape.dim(d)) break;
        idx[d] = 0;
      }
    }
  });
}

// ---- broadcasting walks: SelectV2, ClipByValue

BroadcastWalk plan_broadcast_walk(const Shape& out, std::span<const Shape> operands) {
  const int rank = out.rank();
  const int k = static_cast<int>(operands.size());
  int64_t strides[3][kMaxRank];
  for (int o = 0; o < k; ++o) {
    const Shape& s = operands[o];
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      int si = i - (rank - s.rank());
      int64_t d = si >= 0 ? s.dim(si) : 1;
      strides[o][i] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  BroadcastWalk w;
  w.num_operands = k;
  for (int i = 0; i < rank; ++i) {
    int64_t d = out.dim(i);
    if (d == 1) continue;
    if (w.rank > 0) {
      int j = w.rank - 1;
      bool mergeable = true;
      for (int o = 0; o < k; ++o) {
        bool both_broadcast = strides[o][i] == 0 && w.strides[o][j] == 0;
        bool continuous = strides[o][i] != 0 && w.strides[o][j] == strides[o][i] * d;
        mergeable &= both_broadcast || continuous;
      }
      if (mergeable) {
        w.dims[j] *= d;
        for (int o = 0; o < k; ++o) w.strides[o][j] = strides[o][i];
        continue;
      }
    }
    w.dims[w.rank] = d;
    for (int o = 0; o < k; ++o) w.strides[o][w.rank] = strides[o][i];
    ++w.rank;
  }
  return w;
}

void select(const bool* cond, const void* t, const void* e, void* out, size_t elem, const BroadcastWalk& w) {
  const int64_t inner = w.rank == 0 ? 1 : w.dims[w.rank - 1];
  const int64_t sc = w.rank == 0 ? 0 : w.strides[0][w.rank - 1];
  const int64_t st = w.rank == 0 ? 0 : w.strides[1][w.rank - 1];
  const int64_t se = w.rank == 0 ? 0 : w.strides[2][w.rank - 1];
  visit_width(elem, [&]<typename W>() {
    const W* tp = static_cast<const W*>(t);
    const W* ep = static_cast<const W*>(e);
    W* op = static_cast<W*>(out);
    for_each_row(w, 1, [&](int64_t row, const int64_t* off) {
      const bool* c = cond + off[0];
      const W* a = tp + off[1];
      const W* b = ep + off[2];
      W* o = op + row * inner;
      if (sc == 1 && st == 1 && se == 1) {
        for (int64_t i = 0; i < inner; ++i) o[i] = c[i] ? a[i] : b[i];
      } else {
        for (int64_t i = 0; i < inner; ++i) o[i] = c[i * sc] ? a[i * st] : b[i * se];
      }
    });
  });
}

void clip_by_value(const void* t, const void* lo, const void* hi, void* out, DType dtype, const BroadcastWalk& w) {
  const int64_t inner = w.rank == 0 ? 1 : w.dims[w.rank - 1];
  const int64_t st = w.rank == 0 ? 0 : w.strides[0][w.rank - 1];
  const int64_t sl = w.rank == 0 ? 0 : w.strides[1][w.rank - 1];
  const int64_t sh = w.rank == 0 ? 0 : w.strides[2][w.rank - 1];
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    using C = Compute<T>;
    const T* tp = static_cast<const T*>(t);
    const T* lp = static_cast<const T*>(lo);
    const T* hp = static_cast<const T*>(hi);
    T* op = static_cast<T*>(out);
    // Written so that a NaN in t compares false everywhere and passes through, as in TensorFlow.
    auto clip = [](C x, C l, C h) {
      C v = h < x ? h : x;
      return v < l ? l : v;
    };
    for_each_row(w, 2, [&](int64_t row, const int64_t* off) {
      const T* a = tp + off[0];
      const T* l = lp + off[1];
      const T* h = hp + off[2];
      T* o = op + row * inner;
      if (sl == 0 && sh == 0 && st == 1) {
        const C lv = static_cast<C>(l[0]), hv = static_cast<C>(h[0]);
        for (int64_t i = 0; i < inner; ++i) o[i] = static_cast<T>(clip(static_cast<C>(a[i]), lv, hv));
      } else {
        for (int64_t i = 0; i < inner; ++i)
          o[i] = static_cast<T>(clip(static_cast<C>(a[i * st]), static_cast<C>(l[i * sl]), static_cast<C>(h[i * sh])));
      }
    });
  });
}

// ---- OneHot

void one_hot(const void* indices, DType index_dtype, int64_t outer, int64_t depth, int64_t inner, const void* on,
             const void* off, size_t elem, void* out) {
  fill(out, outer * depth * inner, elem, off);
  visit_index_type(index_dtype, [&]<typename I>() {
    const I* idx = static_cast<const I*>(indices);
    char* dst = static_cast<char*>(out);
    const int64_t ielem = static_cast<int64_t>(elem);
    parallel_for(outer, inner + 4, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = static_cast<int64_t>(idx[o * inner + i]);
          if (v >= 0 && v < depth) std::memcpy(dst + ((o * depth + v) * inner + i) * ielem, on, elem);
        }
      }
    });
  });
}

// ---- Range, LinSpace

StatusOr<int64_t> range_size(DType dtype, double start_d, double limit_d, double delta_d) {
  StatusOr<int64_t> result = int64_t{0};
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    using C = Compute<T>;
    // The bounds are first converted to dtype, as tf.range casts its arguments.
    C start = static_cast<C>(static_cast<T>(start_d)), limit = static_cast<C>(static_cast<T>(limit_d));
    C delta = static_cast<C>(static_cast<T>(delta_d));
    if (delta == C(0)) {
      result = invalid_argument("delta must not be 0 (start ", start_d, ", limit ", limit_d, ")");
      return;
    }
    if (delta > C(0) ? start >= limit : start <= limit) return;  // empty, like Python's range
    if constexpr (std::is_integral_v<T>) {
      // In int64 so that limit - start cannot overflow the narrower types.
      int64_t span = static_cast<int64_t>(limit) - static_cast<int64_t>(start);
      int64_t step = static_cast<int64_t>(delta);
      span = span < 0 ? -span : span;
      step = step < 0 ? -step : step;
      result = (span + step - 1) / step;
    } else {
      C size = std::ceil(std::abs((limit - start) / delta));
      if (!(size <= C(int64_t{1} << 50))) {
        result = invalid_argument("the range from ", start_d, " to ", limit_d, " by ", delta_d,
                                  " has too many (or a non-finite number of) elements");
        return;
      }
      result = static_cast<int64_t>(size);
    }
  });
  return result;
}

void range(DType dtype, double start_d, double delta_d, int64_t size, void* out) {
  visit_dtype<kNumericTypes>(dtype, [&]<typename T>() {
    // Accumulated in T (rounding after every step) to give TensorFlow's exact values.
    T* o = static_cast<T*>(out);
    T val = static_cast<T>(start_d);
    const T delta = static_cast<T>(delta_d);
    for (int64_t i = 0; i < size; ++i) {
      o[i] = val;
      val = static_cast<T>(static_cast<Compute<T>>(val) + static_cast<Compute<T>>(delta));
    }
  });
}

void linspace(DType dtype, const void* start_p, const void* stop_p, int64_t num, void* out) {
  visit_dtype<kFloatTypes>(dtype, [&]<typename T>() {
    using C = Compute<T>;
    const C start = static_cast<C>(*static_cast<const T*>(start_p));
    const C stop = static_cast<C>(*static_cast<const T*>(stop_p));
    T* o = static_cast<T*>(out);
    if (num == 1) {
      o[0] = static_cast<T>(start);
      return;
    }
    const C step = (stop - start) / static_cast<C>(num - 1);
    for (int64_t i = 0; i < num - 1; ++i) o[i] = static_cast<T>(start + step * static_cast<C>(i));
    o[num - 1] = static_cast<T>(stop);
  });
}

}  // namespace ember::kernels

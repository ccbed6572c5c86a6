// Data-movement kernels of the array ops: strided copies, transposes, concat/split and fills. Every loop
// is instantiated once per element width; see array.h.
#include "ember/kernels/array.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ember/core/parallel.h"
#include "ember/kernels/element_words.h"

namespace ember::kernels {
namespace {

constexpr size_t kParallelCopyBytes = size_t{1} << 20;

template <typename W>
void copy_run(const char* src, char* dst, int64_t n, int64_t src_stride, int64_t dst_stride) {
  const W* s = reinterpret_cast<const W*>(src);
  W* d = reinterpret_cast<W*>(dst);
  if (dst_stride == 1) {
    if (src_stride == 0) {
      const W v = *s;
      for (int64_t i = 0; i < n; ++i) d[i] = v;
    } else if (src_stride == -1) {
      for (int64_t i = 0; i < n; ++i) d[i] = s[-i];
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = s[i * src_stride];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * dst_stride] = s[i * src_stride];
  }
}

// Drops size-1 dims and merges neighbours whose strides are continuous in both source and destination.
StridedCopy collapse(const StridedCopy& c) {
  StridedCopy r;
  for (int i = 0; i < c.rank; ++i) {
    int64_t d = c.dims[i];
    if (d == 1) continue;
    if (r.rank > 0) {
      int j = r.rank - 1;
      if (r.src_strides[j] == c.src_strides[i] * d && r.dst_strides[j] == c.dst_strides[i] * d) {
        r.dims[j] *= d;
        r.src_strides[j] = c.src_strides[i];
        r.dst_strides[j] = c.dst_strides[i];
        continue;
      }
    }
    r.dims[r.rank] = d;
    r.src_strides[r.rank] = c.src_strides[i];
    r.dst_strides[r.rank] = c.dst_strides[i];
    ++r.rank;
  }
  return r;
}

}  // namespace

void dense_strides(int rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= dims[i];
  }
}

bool is_contiguous_source(const StridedCopy& copy) {
  for (int i = 0; i < copy.rank; ++i)
    if (copy.dims[i] == 0) return true;
  StridedCopy c = collapse(copy);
  return c.rank == 0 || (c.rank == 1 && c.src_strides[0] == 1 && c.dst_strides[0] == 1);
}

void parallel_memcpy(void* dst, const void* src, size_t nbytes) {
  if (nbytes < kParallelCopyBytes) {
    if (nbytes) std::memcpy(dst, src, nbytes);
    return;
  }
  constexpr int64_t kChunk = 64 << 10;
  int64_t chunks = static_cast<int64_t>((nbytes + kChunk - 1) / kChunk);
  parallel_for(chunks, kChunk / 8, [&](int64_t b, int64_t e) {
    size_t lo = static_cast<size_t>(b * kChunk), hi = std::min(nbytes, static_cast<size_t>(e * kChunk));
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
  });
}

void strided_copy(const void* src_v, void* dst_v, size_t elem, const StridedCopy& copy) {
  for (int i = 0; i < copy.rank; ++i)
    if (copy.dims[i] == 0) return;
  const char* src = static_cast<const char*>(src_v);
  char* dst = static_cast<char*>(dst_v);
  StridedCopy c = collapse(copy);
  if (c.rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  if (c.rank == 1 && c.src_strides[0] == 1 && c.dst_strides[0] == 1) {
    parallel_memcpy(dst, src, static_cast<size_t>(c.dims[0]) * elem);
    return;
  }
  const int last = c.rank - 1;
  const int64_t n = c.dims[last], ss = c.src_strides[last], ds = c.dst_strides[last];
  const bool contiguous = ss == 1 && ds == 1;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= c.dims[d];
  const int64_t row_cost = (contiguous ? n * static_cast<int64_t>(elem) / 8 : n * 2) + 16;
  const int64_t ielem = static_cast<int64_t>(elem);
  parallel_for(rows, row_cost, [&](int64_t begin, int64_t end) {
    int64_t idx[kMaxCopyRank] = {};
    int64_t so = 0, dof = 0, rem = begin;
    for (int d = last - 1; d >= 0; --d) {
      idx[d] = rem % c.dims[d];
      rem /= c.dims[d];
      so += idx[d] * c.src_strides[d];
      dof += idx[d] * c.dst_strides[d];
    }
    visit_move_width(elem, [&]<typename W>() {
      for (int64_t row = begin; row < end; ++row) {
        if (contiguous) {
          std::memcpy(dst + dof * ielem, src + so * ielem, static_cast<size_t>(n) * elem);
        } else {
          copy_run<W>(src + so * ielem, dst + dof * ielem, n, ss, ds);
        }
        for (int d = last - 1; d >= 0; --d) {
          so += c.src_strides[d];
          dof += c.dst_strides[d];
          if (++idx[d] < c.dims[d]) break;
          so -= c.src_strides[d] * c.dims[d];
          dof -= c.dst_strides[d] * c.dims[d];
          idx[d] = 0;
        }
      }
    });
  });
}

// ---- transpose

namespace {

// dst[a * dst_stride + b] = src[a + b * src_stride] for a < na, b < nb: one cache-sized tile.
template <typename W>
void transpose_tile(const char* src_v, char* dst_v, int64_t na, int64_t nb, int64_t src_stride,
                    int64_t dst_stride) {
  const W* src = reinterpret_cast<const W*>(src_v);
  W* dst = reinterpret_cast<W*>(dst_v);
  // 4x4 register blocks: each source row segment is read once into registers and written as a column.
  int64_t a = 0;
  for (; a + 4 <= na; a += 4) {
    W* d0 = dst + a * dst_stride;
    W* d1 = d0 + dst_stride;
    W* d2 = d1 + dst_stride;
    W* d3 = d2 + dst_stride;
    for (int64_t b = 0; b < nb; ++b) {
      const W* s = src + a + b * src_stride;
      W v0 = s[0], v1 = s[1], v2 = s[2], v3 = s[3];
      d0[b] = v0;
      d1[b] = v1;
      d2[b] = v2;
      d3[b] = v3;
    }
  }
  for (; a < na; ++a) {
    W* d = dst + a * dst_stride;
    for (int64_t b = 0; b < nb; ++b) d[b] = src[a + b * src_stride];
  }
}

}  // namespace

void transpose(const void* src_v, void* dst_v, size_t elem, std::span<const int64_t> in_dims,
               std::span<const int> perm) {
  const int rank = static_cast<int>(in_dims.size());
  int64_t total = 1;
  for (int64_t d : in_dims) total *= d;
  if (total == 0) return;

  // 1. Drop size-1 dims.
  int new_index[kMaxRank];
  int64_t d1[kMaxRank];
  int r1 = 0;
  for (int i = 0; i < rank; ++i) {
    new_index[i] = in_dims[i] == 1 ? -1 : r1;
    if (in_dims[i] != 1) d1[r1++] = in_dims[i];
  }
  int p1[kMaxRank];
  int k = 0;
  for (int i = 0; i < rank; ++i)
    if (new_index[perm[i]] >= 0) p1[k++] = new_index[perm[i]];

  // 2. Merge runs of input dims that stay adjacent and in order in the output. Groups are numbered in
  // output order; each group's position among the groups sorted by input order is its collapsed input dim.
  int group_first[kMaxRank], group_len[kMaxRank], groups = 0;
  for (int j = 0; j < r1; ++j) {
    if (j > 0 && p1[j] == p1[j - 1] + 1) {
      ++group_len[groups - 1];
    } else {
      group_first[groups] = p1[j];
      group_len[groups] = 1;
      ++groups;
    }
  }
  // Groups in input order give the collapsed input dims; their output order gives the collapsed perm.
  int order[kMaxRank];
  for (int g = 0; g < groups; ++g) order[g] = g;
  std::sort(order, order + groups, [&](int x, int y) { return group_first[x] < group_first[y]; });
  int64_t dims[kMaxRank];  // collapsed input dims
  int p[kMaxRank];         // collapsed perm: output dim g is input dim p[g]
  for (int i = 0; i < groups; ++i) {
    const int g = order[i];
    p[g] = i;
    dims[i] = 1;
    for (int t = 0; t < group_len[g]; ++t) dims[i] *= d1[group_first[g] + t];
  }
  const int r = groups;

  if (r <= 1) {
    parallel_memcpy(dst_v, src_v, static_cast<size_t>(total) * elem);
    return;
  }
  int64_t in_strides[kMaxRank], out_dims[kMaxRank], out_strides[kMaxRank];
  dense_strides(r, dims, in_strides);
  for (int j = 0; j < r; ++j) out_dims[j] = dims[p[j]];
  dense_strides(r, out_dims, out_strides);

  if (p[r - 1] == r - 1) {
    // The innermost dim stays innermost: rows of it are moved whole.
    StridedCopy c;
    c.rank = r;
    for (int j = 0; j < r; ++j) {
      c.dims[j] = out_dims[j];
      c.src_strides[j] = in_strides[p[j]];
      c.dst_strides[j] = out_strides[j];
    }
    strided_copy(src_v, dst_v, elem, c);
    return;
  }

  // A 2-D plane: the input's innermost dim (contiguous in the source) lands at output position q; the
  // output's innermost dim comes from input dim p[r-1] with source stride S. Every other dim is looped
  // over outside the plane.
  int q = 0;
  while (p[q] != r - 1) ++q;
  const int64_t na = out_dims[q], nb = out_dims[r - 1];
  const int64_t src_stride_b = in_strides[p[r - 1]], dst_stride_a = out_strides[q];
  int outer_rank = 0;
  int64_t outer_dims[kMaxRank], outer_src[kMaxRank], outer_dst[kMaxRank];
  for (int j = 0; j < r - 1; ++j) {
    if (j == q) continue;
    outer_dims[outer_rank] = out_dims[j];
    outer_src[outer_rank] = in_strides[p[j]];
    outer_dst[outer_rank] = out_strides[j];
    ++outer_rank;
  }
  int64_t outer = 1;
  for (int j = 0; j < outer_rank; ++j) outer *= outer_dims[j];

  const int64_t tile = std::max<int64_t>(16, 256 / static_cast<int64_t>(elem));
  const int64_t bands = (na + tile - 1) / tile;
  const char* src = static_cast<const char*>(src_v);
  char* dst = static_cast<char*>(dst_v);
  const int64_t ielem = static_cast<int64_t>(elem);
  parallel_for(outer * bands, tile * nb * 2, [&](int64_t begin, int64_t end) {
    visit_move_width(elem, [&]<typename W>() {
      for (int64_t item = begin; item < end; ++item) {
        int64_t o = item / bands, band = item % bands;
        int64_t so = 0, dof = 0;
        for (int j = outer_rank - 1; j >= 0; --j) {
          int64_t i = o % outer_dims[j];
          o /= outer_dims[j];
          so += i * outer_src[j];
          dof += i * outer_dst[j];
        }
        int64_t a0 = band * tile, a1 = std::min(na, a0 + tile);
        for (int64_t b0 = 0; b0 < nb; b0 += tile) {
          int64_t b1 = std::min(nb, b0 + tile);
          transpose_tile<W>(src + (so + a0 + b0 * src_stride_b) * ielem,
                            dst + (dof + a0 * dst_stride_a + b0) * ielem, a1 - a0, b1 - b0, src_stride_b,
                            dst_stride_a);
        }
      }
    });
  });
}

// ---- fill, concat, split

void fill(void* dst_v, int64_t n, size_t elem, const void* value) {
  if (n <= 0) return;
  const unsigned char* bytes = static_cast<const unsigned char*>(value);
  bool uniform = true;
  for (size_t i = 1; i < elem; ++i) uniform &= bytes[i] == bytes[0];
  if (uniform) {
    char* dst = static_cast<char*>(dst_v);
    size_t nbytes = static_cast<size_t>(n) * elem;
    constexpr int64_t kChunk = 64 << 10;
    parallel_for(
        static_cast<int64_t>((nbytes + kChunk - 1) / kChunk), kChunk / 16, [&](int64_t b, int64_t e) {
          size_t lo = static_cast<size_t>(b * kChunk), hi = std::min(nbytes, static_cast<size_t>(e * kChunk));
          std::memset(dst + lo, bytes[0], hi - lo);
        });
    return;
  }
  visit_move_width(elem, [&]<typename W>() {
    W v;
    std::memcpy(&v, value, sizeof(W));
    W* dst = static_cast<W*>(dst_v);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = v;
    });
  });
}

// Copies rows [b, e) of n bytes (k <= n <= 2k) with two fixed-size moves each, which may overlap: inline,
// where a memcpy call would cost more than a row of a few elements.
template <size_t k>
void copy_short_rows(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n, int64_t b,
                     int64_t e) {
  for (int64_t row = b; row < e; ++row) {
    const char* s = src + row * src_stride;
    char* d = dst + row * dst_stride;
    char head[k], tail[k];
    std::memcpy(head, s, k);
    std::memcpy(tail, s + n - k, k);
    std::memcpy(d, head, k);
    std::memcpy(d + n - k, tail, k);
  }
}
constexpr int64_t kShortRowBytes = 64;

// Rows of w <= kShortRowBytes bytes, strided on both sides.
void copy_rows_short(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t w, int64_t b,
                     int64_t e) {
  if (w >= 32)
    copy_short_rows<32>(dst, dst_stride, src, src_stride, w, b, e);
  else if (w >= 16)
    copy_short_rows<16>(dst, dst_stride, src, src_stride, w, b, e);
  else if (w >= 8)
    copy_short_rows<8>(dst, dst_stride, src, src_stride, w, b, e);
  else if (w >= 4)
    copy_short_rows<4>(dst, dst_stride, src, src_stride, w, b, e);
  else if (w >= 2)
    copy_short_rows<2>(dst, dst_stride, src, src_stride, w, b, e);
  else if (w == 1)
    copy_short_rows<1>(dst, dst_stride, src, src_stride, w, b, e);
}

void concat(std::span<const void* const> srcs, std::span<const int64_t> widths, int64_t outer, void* dst_v) {
  char* dst = static_cast<char*>(dst_v);
  int64_t total = 0, widest = 0;
  for (int64_t w : widths) total += w, widest = std::max(widest, w);
  if (outer > 1 && widest <= kShortRowBytes) {
    // Short rows (L2HMC joins [200,2] and [200,1] float32): one input at a time, row by row.
    const int64_t cost = 4 * static_cast<int64_t>(srcs.size()) + total / 16;
    parallel_for(outer, cost, [&](int64_t b, int64_t e) {
      int64_t off = 0;
      for (size_t i = 0; i < srcs.size(); ++i) {
        copy_rows_short(dst + off, total, static_cast<const char*>(srcs[i]), widths[i], widths[i], b, e);
        off += widths[i];
      }
    });
    return;
  }
  if (outer == 1) {
    int64_t off = 0;
    for (size_t i = 0; i < srcs.size(); ++i) {
      parallel_memcpy(dst + off, srcs[i], static_cast<size_t>(widths[i]));
      off += widths[i];
    }
    return;
  }
  parallel_for(outer, total / 8 + 8 * static_cast<int64_t>(srcs.size()), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      char* out = dst + row * total;
      for (size_t i = 0; i < srcs.size(); ++i) {
        std::memcpy(out, static_cast<const char*>(srcs[i]) + row * widths[i], static_cast<size_t>(widths[i]));
        out += widths[i];
      }
    }
  });
}

void split(const void* src_v, std::span<void* const> dsts, std::span<const int64_t> widths, int64_t outer) {
  const char* src = static_cast<const char*>(src_v);
  int64_t total = 0;
  int64_t widest = 0;
  for (int64_t w : widths) total += w, widest = std::max(widest, w);
  if (outer > 1 && widest <= kShortRowBytes) {
    // Short rows (merged narrow products split back into their heads): one output at a time.
    const int64_t cost = 4 * static_cast<int64_t>(dsts.size()) + total / 16;
    parallel_for(outer, cost, [&](int64_t b, int64_t e) {
      int64_t off = 0;
      for (size_t i = 0; i < dsts.size(); ++i) {
        copy_rows_short(static_cast<char*>(dsts[i]), widths[i], src + off, total, widths[i], b, e);
        off += widths[i];
      }
    });
    return;
  }
  parallel_for(outer, total / 8 + 8 * static_cast<int64_t>(dsts.size()), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const char* in = src + row * total;
      for (size_t i = 0; i < dsts.size(); ++i) {
        std::memcpy(static_cast<char*>(dsts[i]) + row * widths[i], in, static_cast<size_t>(widths[i]));
        in += widths[i];
      }
    }
  });
}

// ---- scalars

ScalarBits encode_scalar(DType d, double value) {
  ScalarBits bits;
  visit_dtype<kAllTypesAndComplex>(d, [&]<typename T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = value != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      // Through int64, so -1 becomes 255 for uint8 as tf.cast does; values beyond int64 clamp and NaN is 0
      // (converting those directly would be undefined).
      constexpr double kLimit = 9223372036854775808.0;  // 2^63
      int64_t wide;
      if (std::isnan(value))
        wide = 0;
      else if (value >= kLimit)
        wide = std::numeric_limits<int64_t>::max();
      else if (value < -kLimit)
        wide = std::numeric_limits<int64_t>::min();
      else
        wide = static_cast<int64_t>(value);
      v = static_cast<T>(wide);
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      v = T(static_cast<float>(value));
    } else {
      v = static_cast<T>(value);
    }
    static_assert(sizeof(T) <= sizeof(bits.words));
    std::memcpy(bits.words, &v, sizeof(T));
  });
  return bits;
}

int64_t load_index(const void* indices, DType index_dtype, int64_t i) {
  switch (index_dtype) {
    case DType::kInt32:
      return static_cast<const int32_t*>(indices)[i];
    case DType::kInt64:
      return static_cast<const int64_t*>(indices)[i];
    case DType::kUInt8:
      return static_cast<const uint8_t*>(indices)[i];
    case DType::kInt16:
      return static_cast<const int16_t*>(indices)[i];
    case DType::kInt8:
      return static_cast<const int8_t*>(indices)[i];
    default:
      return -1;
  }
}

}  // namespace ember::kernels

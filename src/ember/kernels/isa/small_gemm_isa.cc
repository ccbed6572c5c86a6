// Loops of the small matrix products (kernels/small_gemm.h; driver and routing: kernels/matmul.cc).
// Compiled three times with EMBER_ISA set to baseline, avx2 and avx512. Written with GCC vector
// extensions: an output row of N elements lives in NV vectors of W lanes, and each step over k is a
// broadcast of A[i, k] times the vectors of B's row k, added into the row's accumulators (contracted to
// FMAs). The lanes past N compute garbage that is never stored.
//
// B's rows are loaded whole, W * NV lanes at a time, straight from B when that stays inside B (reading
// into the next row is harmless); the last few rows, and all of a transposed B, are first copied into a
// zero-padded stack buffer. Rows of A are read through (row, k) strides, which covers transpose_a.
//
// Everything has internal linkage and no std:: algorithm is instantiated (see reduce_isa.cc for why).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ember/kernels/small_gemm.h"

namespace ember::kernels::EMBER_ISA {
namespace {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

constexpr int kMaxVecs = 4;            // vectors per output row
constexpr int64_t kMaxRowBytes = 128;  // N * sizeof(T): 32 floats or 16 doubles
constexpr int64_t kPackBytes = 16 << 10;

template <typename T, int W>
struct VecOf {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};
template <typename T, int W>
using Vec = typename VecOf<T, W>::type;

template <typename V, typename T>
inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

// Stores the first n (1 <= n <= W) lanes of v.
template <typename T, int W>
inline void store(T* p, Vec<T, W> v, int64_t n) {
  if (n == W) {
    std::memcpy(p, &v, sizeof(v));
    return;
  }
#if defined(__AVX512F__)
  if constexpr (sizeof(v) == 64 && sizeof(T) == 4) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), reinterpret_cast<__m512>(v));
    return;
  } else if constexpr (sizeof(v) == 64 && sizeof(T) == 8) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1), reinterpret_cast<__m512d>(v));
    return;
  } else if constexpr (sizeof(v) == 32 && sizeof(T) == 4) {
    _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << n) - 1), reinterpret_cast<__m256>(v));
    return;
  } else if constexpr (sizeof(v) == 32 && sizeof(T) == 8) {
    _mm256_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1), reinterpret_cast<__m256d>(v));
    return;
  }
#elif defined(__AVX2__)
  if constexpr (sizeof(v) == 32 && sizeof(T) == 4) {
    __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(p, mask, reinterpret_cast<__m256>(v));
    return;
  } else if constexpr (sizeof(v) == 32 && sizeof(T) == 8) {
    __m256i mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
    _mm256_maskstore_pd(p, mask, reinterpret_cast<__m256d>(v));
    return;
  }
#endif
  for (int64_t j = 0; j < n; ++j) p[j] = v[j];
}

// Loads the first n (1 <= n <= W) elements at p; the other lanes are zero.
template <typename T, int W>
inline Vec<T, W> load_partial(const T* p, int64_t n) {
  using V = Vec<T, W>;
  if (n == W) return load<V>(p);
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && sizeof(T) == 4) {
    return reinterpret_cast<V>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p));
  } else if constexpr (sizeof(V) == 64 && sizeof(T) == 8) {
    return reinterpret_cast<V>(_mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << n) - 1), p));
  } else if constexpr (sizeof(V) == 32 && sizeof(T) == 4) {
    return reinterpret_cast<V>(_mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), p));
  } else if constexpr (sizeof(V) == 32 && sizeof(T) == 8) {
    return reinterpret_cast<V>(_mm256_maskz_loadu_pd(static_cast<__mmask8>((1u << n) - 1), p));
  }
#endif
  V v = {};
  for (int64_t j = 0; j < n; ++j) v[j] = p[j];
  return v;
}

// Rows k0 <= k < k1 of B are at b + (k - k0) * ldb.
template <typename T>
struct Segment {
  const T* b;
  int64_t ldb, k0, k1;
};

// Rows [i0, i1) of C, R rows at a time, each with P partial sums over k (interleaved): R * P independent
// accumulator chains per vector hide the FMA latency. With kClamp, a block past i1 recomputes the last
// row instead. Rows of C up to c_end belong to this call.
template <typename T, int W, int NV, int R, int P, bool kClamp>
void rows_loop(const SmallGemm<T>& g, int64_t i0, int64_t i1, const T* c_end, const Segment<T>* segs,
               int nsegs) {
  using V = Vec<T, W>;
  const int64_t ask = g.a_sk;
  for (int64_t i = i0; i < i1; i += R) {
    const T* arow[R];
    for (int r = 0; r < R; ++r) arow[r] = g.a + (!kClamp || i + r < i1 ? i + r : i1 - 1) * g.a_si;
    V acc[P][R][NV] = {};
    for (int s = 0; s < nsegs; ++s) {
      const Segment<T>& sg = segs[s];
      const T* bk = sg.b;
      int64_t k = sg.k0;
      for (; k + P <= sg.k1; k += P) {
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {
          V bv[NV];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) bv[v] = load<V>(bk + v * W);
          const int64_t off = (k + p) * ask;
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const T av = arow[r][off];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[p][r][v] += av * bv[v];
          }
          bk += sg.ldb;
        }
      }
      for (; k < sg.k1; ++k) {
        V bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = load<V>(bk + v * W);
        const int64_t off = k * ask;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const T av = arow[r][off];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[0][r][v] += av * bv[v];
        }
        bk += sg.ldb;
      }
    }
#pragma GCC unroll 8
    for (int p = 1; p < P; ++p)
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[0][r][v] += acc[p][r][v];
    // Constant indices only (a guard rather than a loop bound), so that acc stays in registers. A row's
    // last vector is stored whole while that stays inside rows [i0, i1): the lanes past N land on the
    // next rows, which are stored after it. Only the last few rows need a partial store.
    const int64_t rows = i1 - i;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if (kClamp && r >= rows) break;
      T* crow = g.c + (i + r) * g.N;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const int64_t left = g.N - v * W;
        if (left >= W || crow + v * W + W <= c_end)
          std::memcpy(crow + v * W, &acc[0][r][v], sizeof(V));
        else
          store<T, W>(crow + v * W, acc[0][r][v], left);
      }
    }
  }
}

// Accumulator chains wanted per step: 8 single-vector rows keep two FMA pipes of latency 4 busy; wider
// rows bring their own independent vectors.
template <int NV>
constexpr int kChains = NV == 1 ? 8 : (NV == 2 ? 4 : 2);

// Whole blocks of R rows first; the rest of the rows, and products with fewer rows than R, take a
// smaller R and spend the remaining chains on partial sums over k, so that a 3-row product with a long
// K (a transpose_a gradient) still runs kChains chains. A block of fewer rows than R (only when fewer
// than R rows remain, more than R / 2) recomputes its last row in the missing ones.
template <typename T, int W, int NV, int R>
void pick_rows(const SmallGemm<T>& g, int64_t i0, int64_t i1, const T* c_end, const Segment<T>* segs,
               int nsegs) {
  constexpr int P = kChains<NV> / R;
  const int64_t m = i1 - i0;
  if constexpr (R == 1) {
    rows_loop<T, W, NV, 1, P, false>(g, i0, i1, c_end, segs, nsegs);
  } else if (m >= R) {
    const int64_t full = i0 + m / R * R;
    rows_loop<T, W, NV, R, P, false>(g, i0, full, c_end, segs, nsegs);
    if (full < i1) pick_rows<T, W, NV, R / 2>(g, full, i1, c_end, segs, nsegs);
  } else if (m > R / 2) {
    rows_loop<T, W, NV, R, P, true>(g, i0, i1, c_end, segs, nsegs);
  } else {
    pick_rows<T, W, NV, R / 2>(g, i0, i1, c_end, segs, nsegs);
  }
}

template <typename T, int W, int NV>
bool with_vectors(const SmallGemm<T>& g, int64_t i0, int64_t i1) {
  constexpr int64_t L = W * NV;  // lanes per row of B as loaded
  constexpr int64_t kPackElems = kPackBytes / static_cast<int64_t>(sizeof(T));
  const int64_t N = g.N, K = g.K;
  if (g.tb && K * L > kPackElems) return false;
  if (i0 >= i1) return true;
  alignas(64) T buf[kPackElems];
  Segment<T> segs[2];
  int nsegs = 0;
  if (g.tb) {
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) buf[k * L + j] = g.b[j * K + k];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = N; j < L; ++j) buf[k * L + j] = T(0);
    segs[nsegs++] = Segment<T>{buf, L, 0, K};
  } else if (K * L <= kPackElems) {
    // A zero-padded copy: one loop over k and aligned loads, for about one load and store per row.
    for (int64_t k = 0; k < K; ++k)
      for (int v = 0; v < NV; ++v) {
        const int64_t left = N - v * W;
        const Vec<T, W> x =
            left <= 0 ? Vec<T, W>{} : load_partial<T, W>(g.b + k * N + v * W, left < W ? left : W);
        std::memcpy(buf + k * L + v * W, &x, sizeof(x));
      }
    segs[nsegs++] = Segment<T>{buf, L, 0, K};
  } else {
    // Row k can be loaded in place while k * N + L <= K * N; at most L rows follow.
    const int64_t in_place = K * N >= L ? (K * N - L) / N + 1 : 0;
    if (in_place > 0) segs[nsegs++] = Segment<T>{g.b, N, 0, in_place};
    if (in_place < K) {
      for (int64_t k = in_place; k < K; ++k) {
        T* dst = buf + (k - in_place) * L;
        for (int64_t j = 0; j < N; ++j) dst[j] = g.b[k * N + j];
        for (int64_t j = N; j < L; ++j) dst[j] = T(0);
      }
      segs[nsegs++] = Segment<T>{buf, L, in_place, K};
    }
  }
  pick_rows<T, W, NV, kChains<NV>>(g, i0, i1, g.c + i1 * N, segs, nsegs);
  return true;
}

template <typename T>
bool small_gemm(const SmallGemm<T>& g, int64_t i0, int64_t i1) {
  constexpr int W = kVecBytes / static_cast<int>(sizeof(T));
  if (g.N < 1 || g.N * static_cast<int64_t>(sizeof(T)) > kMaxRowBytes || g.N > kMaxVecs * W) return false;
  if constexpr (kVecBytes == 64) {
    // Half-width vectors for narrow rows: Zen 4 issues two 256-bit FMAs per cycle but one 512-bit.
    if (g.N <= W / 2) return with_vectors<T, W / 2, 1>(g, i0, i1);
  }
  switch ((g.N + W - 1) / W) {
    case 1:
      return with_vectors<T, W, 1>(g, i0, i1);
    case 2:
      return with_vectors<T, W, 2>(g, i0, i1);
    case 3:
      return with_vectors<T, W, 3>(g, i0, i1);
    default:
      return with_vectors<T, W, 4>(g, i0, i1);
  }
}

}  // namespace

void fill_small_gemm_tables(SmallGemmTables& t) {
  t.f32 = &small_gemm<float>;
  t.f64 = &small_gemm<double>;
}

}  // namespace ember::kernels::EMBER_ISA

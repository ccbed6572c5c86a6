// Register tiles of the mid-size float32 products (kernels/matmul_tiles.h; routing and packing:
// kernels/matmul.cc). Compiled three times with EMBER_ISA set to baseline, avx2 and avx512. Written with
// GCC vector extensions: a tile is R rows of C times NV vectors of W columns, accumulated in R * NV
// registers; each step over k loads NV vectors of B's row k and multiplies them by R broadcasts of A's
// column k, contracted to FMAs. A tile with few registers of its own (a product of one or two
// rows) adds P partial sums over k, so that enough independent chains hide the FMA latency.
//
// Everything has internal linkage and no std:: algorithm is instantiated (see reduce_isa.cc for why).
#include <cstdint>
#include <cstring>

#include "ember/kernels/matmul_tiles.h"

namespace ember::kernels::EMBER_ISA {
namespace {

// MR x (2 vectors): 16 zmm accumulators of 32 available; 12 of the 16 ymm/xmm registers otherwise.
#if defined(__AVX512F__)
constexpr int kW = 16;
constexpr int kMR = 8;
#elif defined(__AVX2__)
constexpr int kW = 8;
constexpr int kMR = 6;
#else
constexpr int kW = 4;
constexpr int kMR = 6;
#endif
constexpr int kNR = 2 * kW;
constexpr int kMinChains = 8;

typedef float V __attribute__((vector_size(kW * sizeof(float))));

inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

// Rows [0, rows) and columns [0, cols) of the R x (NV * kW) tile whose A has row r at a + r * lda and
// whose B panel has row k at bp + k * ldb; C's row r at c + r * ldc.
template <int R, int NV>
void tile(const float* a, int64_t lda, const float* bp, int64_t ldb, int64_t K, float* c, int64_t ldc,
          int64_t rows, int64_t cols) {
  constexpr int P = R * NV >= kMinChains ? 1 : kMinChains / (R * NV);
  // Rows past the block's last are read again from the last (computed, never stored).
  const float* arow[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) arow[r] = a + (r < rows ? r : rows - 1) * lda;
  V acc[P][R][NV] = {};
  int64_t k = 0;
  for (; k + P <= K; k += P) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      V bv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) bv[v] = load(bp + v * kW);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const float av = arow[r][k + p];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[p][r][v] += av * bv[v];
      }
      bp += ldb;
    }
  }
  for (; k < K; ++k) {
    V bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = load(bp + v * kW);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float av = arow[r][k];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[0][r][v] += av * bv[v];
    }
    bp += ldb;
  }
#pragma GCC unroll 8
  for (int p = 1; p < P; ++p)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[0][r][v] += acc[p][r][v];
        // Constant indices only (a guard rather than a loop bound), so that acc stays in registers.
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float* crow = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const int64_t left = cols - v * kW;
      if (left >= kW) {
        std::memcpy(crow + v * kW, &acc[0][r][v], sizeof(V));
      } else if (left > 0) {
        float lanes[kW];
        std::memcpy(lanes, &acc[0][r][v], sizeof(V));
        for (int64_t j = 0; j < left; ++j) crow[v * kW + j] = lanes[j];
      }
    }
  }
}

// A row block with fewer rows than kMR (the last one) takes the smallest tile that covers them.
template <int NV>
void tile_rows(const float* a, int64_t lda, const float* bp, int64_t ldb, int64_t K, float* c, int64_t ldc,
               int64_t rows, int64_t cols) {
  if (rows > 4)
    tile<kMR, NV>(a, lda, bp, ldb, K, c, ldc, rows, cols);
  else if (rows > 2)
    tile<4, NV>(a, lda, bp, ldb, K, c, ldc, rows, cols);
  else if (rows == 2)
    tile<2, NV>(a, lda, bp, ldb, K, c, ldc, rows, cols);
  else
    tile<1, NV>(a, lda, bp, ldb, K, c, ldc, rows, cols);
}

void run_tiles(const TileGemm& g, int64_t begin, int64_t end) {
  const int64_t row_tiles = (g.M + kMR - 1) / kMR;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t panel = t / row_tiles, rt = t % row_tiles;
    const int64_t j = panel * kNR, i = rt * kMR;
    const int64_t cols = g.N - j < kNR ? g.N - j : kNR, rows = g.M - i < kMR ? g.M - i : kMR;
    const float* bp = g.b + j;
    int64_t ldb = g.ldb;
    if (panel >= g.in_place_panels) bp = g.b_rest + (panel - g.in_place_panels) * g.K * kNR, ldb = kNR;
    const float* a = g.a + i * g.K;
    float* c = g.c + i * g.N + j;
    if (cols > kW)
      tile_rows<2>(a, g.K, bp, ldb, g.K, c, g.N, rows, cols);
    else
      tile_rows<1>(a, g.K, bp, ldb, g.K, c, g.N, rows, cols);
  }
}

}  // namespace

void fill_matmul_tile_tables(TileGemmTable& t) {
  t.tile_rows = kMR;
  t.panel_width = kNR;
  t.f32 = &run_tiles;
}

}  // namespace ember::kernels::EMBER_ISA

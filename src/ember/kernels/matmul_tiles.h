// Mid-size float32 matrix products, C[M, N] = op(A)[M, K] @ op(B)[K, N], on ember's own register tiles:
// the layers of MLPs and RNN cells ([32,64]x[64,256], [32,256]x[256,256], an LSTM's [32,192]x[192,512]).
// dnnl_sgemm is as fast on them once warm, but its first call in a process generates its kernels (30-60
// ms, all of a served MLP's first call); these loops are compiled ahead of time, so a cold process pays
// nothing, and each output element is one sum over k in order, whatever the thread count.
//
// A is read in place, a broadcast of one element per row and k; B too, a panel of NR = two vectors of
// columns per tile, except the last, partial panel, which the caller copies zero padded ([k][NR]). Each
// MR x NR tile of C is accumulated in registers over all of K (Note [Register tiles] in matmul.cc says
// which products come here).
//
// The loops live in kernels/isa/matmul_tiles_isa.cc, compiled per ISA; matmul.cc picks the table at run
// time.
#pragma once

#include <cstdint>

namespace ember::kernels {

struct TileGemm {
  const float* a = nullptr;  // [M, K], dense
  const float* b = nullptr;  // row k of panel p's columns at b + k * ldb + p * NR, p < in_place_panels
  int64_t ldb = 0;
  int64_t in_place_panels = 0;
  const float* b_rest = nullptr;  // panels from in_place_panels on: [panel - in_place_panels][K][NR]
  float* c = nullptr;             // [M, N], dense
  int64_t M = 0, N = 0, K = 0;
};

struct TileGemmTable {
  int tile_rows = 0;    // MR
  int panel_width = 0;  // NR
  /// Computes tiles [begin, end) of C. Tiles are numbered panel-major: tile t covers columns of panel
  /// t / row_tiles and rows of block t % row_tiles, row_tiles = ceil(M / MR), so that consecutive tiles
  /// reuse a panel of B from L1.
  void (*f32)(const TileGemm& g, int64_t begin, int64_t end) = nullptr;
};

}  // namespace ember::kernels

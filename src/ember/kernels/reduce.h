// Reduction kernels (Sum, Mean, Prod, Max, Min, Any, All, LogSumExp) and arg-reductions (ArgMax, ArgMin).
//
// The driver (reduce.cc) drops size-1 dims and merges neighbouring dims that are both reduced or both
// kept, so every reduction becomes an alternation of kept and reduced groups. The innermost two groups
// are handed to a loop from kernels/isa/reduce_isa.cc (compiled per ISA, chosen at run time):
//   - innermost group reduced ("row" reduction, e.g. sum over the last axis): each output reduces a
//     contiguous run with several independent accumulators so that the compiler vectorises it;
//   - innermost group kept ("column" reduction, e.g. sum over axis 0): a vector of accumulators, one per
//     output, is combined with one contiguous input row after another.
// Outer groups are walked with strides (no transposition). Work is split over outputs with parallel_for;
// when there are too few outputs to keep the threads busy (a full reduction, a sum over axis 0 of a
// [N, 2] tensor), the reduction itself is split and the partial accumulators are merged in order.
#pragma once

#include <cstdint>

#include "ember/core/dtype.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

enum class ReduceOp : uint8_t { kSum, kMean, kProd, kMax, kMin, kAny, kAll, kLogSumExp, kCount };

/// Reduces `in` over the axes whose bit is set in `axis_mask` (bit i = axis i, already normalised).
/// `out` holds the kept dims in order (with or without size-1 placeholders); only its element count and
/// dtype (that of `in`) matter. Accumulation: float for 16-bit floats, 64-bit (wrapping) for integers,
/// so Mean of integers is the exact sum divided by the count, truncated toward zero.
Status reduce(ReduceOp op, const TensorImpl& in, uint32_t axis_mask, TensorImpl& out);

/// out = index of the first maximum (or minimum) of `in` along `axis`; NaN counts as the extreme value
/// (the first NaN wins, as NumPy). `out` is int32 or int64; the axis must not be empty.
Status arg_reduce(bool is_max, const TensorImpl& in, int axis, TensorImpl& out);

/// "avx512", "avx2" or "baseline": the loops the reductions run on.
const char* reduce_isa();

// ---- Loop tables filled by kernels/isa/reduce_isa.cc. The accumulator type ("acc") depends on the op
// and dtype; the driver only knows its size.

/// acc[j] = combine(acc[j], reduce over i < n of in[j * stride + i]), for j < rows (row reduction), or
/// acc[i] = combine(acc[i], in[r * stride + i]) for r < rows, i < n (column reduction). Strides are in
/// elements. The shifted variants (LogSumExp's second pass) add exp(in - shift) with one shift per acc.
using ReduceLoop = void (*)(const void* in, int64_t rows, int64_t stride, int64_t n, void* acc);
using ShiftedLoop = void (*)(const void* in, int64_t rows, int64_t stride, int64_t n, const void* shift,
                             void* acc);

struct ReduceLoops {
  uint32_t acc_size = 0;                         // bytes per accumulator
  void (*init)(void* acc, int64_t n) = nullptr;  // acc[i] = identity
  ReduceLoop row = nullptr;
  ReduceLoop col = nullptr;
  void (*merge)(void* acc, const void* other, int64_t n) = nullptr;  // acc[i] = combine(acc[i], other[i])
  /// out[i] = result from acc[i], `count` being the number of reduced elements (Mean divides by it).
  void (*finalize)(const void* acc, int64_t n, int64_t count, void* out) = nullptr;
  // kLogSumExp only; its first pass is kMax, whose acc type is the same.
  void (*prepare_shift)(void* shift, int64_t n) = nullptr;  // non-finite maxima shift by 0 instead
  ShiftedLoop row_shifted = nullptr;
  ShiftedLoop col_shifted = nullptr;
  void (*finalize_shifted)(const void* acc, const void* shift, int64_t n, void* out) = nullptr;
};

/// Arg-reduction loops. `best` holds values in the compute type (float for 16-bit floats, else T) and
/// `index` the int64 index of each; `r_base` is the index of the first row/element passed.
/// row: for j < rows, scans in[j * stride + i], i < n, updating best[j], index[j].
/// col: for r < rows, i < n, compares in[r * stride + i] with best[i], index[i].
/// A candidate replaces the current best only if strictly better, so ties keep the first index.
using ArgLoop = void (*)(const void* in, int64_t rows, int64_t stride, int64_t n, int64_t r_base, void* best,
                         int64_t* index);
struct ArgLoops {
  uint32_t best_size = 0;
  void (*init)(void* best, int64_t* index, int64_t n) = nullptr;
  ArgLoop row = nullptr;
  ArgLoop col = nullptr;
  /// best/index = better of (best/index, other/other_index); `other` covers later indices.
  void (*merge)(void* best, int64_t* index, const void* other, const int64_t* other_index,
                int64_t n) = nullptr;
};

struct ReduceTables {
  ReduceLoops reduce[static_cast<int>(ReduceOp::kCount)][kNumDTypes];
  ArgLoops arg[2][kNumDTypes];  // [0] = ArgMin, [1] = ArgMax
};

/// The tables for the best ISA this CPU supports.
const ReduceTables& reduce_tables();

}  // namespace ember::kernels

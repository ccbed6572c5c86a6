// Kernels of the array ops (ops/array*.cc): data movement written over element SIZE, not dtype, so that
// one instantiation per byte width (1, 2, 4, 8) serves every dtype and the build stays small. Most ops
// reduce to one of three primitives:
//   - strided_copy: out[i...] = in[offset + sum i_d * stride_d] with any strides (negative: reversed
//     slices; zero: broadcasting and tiling), used by Slice, StridedSlice, Tile, BroadcastTo and Pad;
//   - transpose: a cache-blocked permutation of axes;
//   - concat/split of [outer, width] byte rows.
// Only the few ops that compare or compute values (ClipByValue, Range, LinSpace, Where on floats) look at
// the dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ember/core/dtype.h"
#include "ember/core/shape.h"
#include "ember/core/status.h"

namespace ember::kernels {

/// Tile expands each dim into (multiple, dim), so copies may see twice kMaxRank dims.
inline constexpr int kMaxCopyRank = 2 * kMaxRank;

/// A rectangular walk over `rank` dims; strides are in elements and may be zero or negative.
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxCopyRank] = {};
  int64_t src_strides[kMaxCopyRank] = {};
  int64_t dst_strides[kMaxCopyRank] = {};
};

/// Copies dst[sum i_d * dst_strides[d]] = src[sum i_d * src_strides[d]] for every index of `dims`.
/// `src` and `dst` point at the element of index 0; the regions written must not overlap the ones read.
void strided_copy(const void* src, void* dst, size_t elem_size, const StridedCopy& copy);
/// Row-major (dense) strides in elements for `dims`.
void dense_strides(int rank, const int64_t* dims, int64_t* strides);
/// True when the source elements of a copy into a dense destination form one ascending contiguous run,
/// i.e. the result could be a view of the source.
bool is_contiguous_source(const StridedCopy& copy);

/// out = in with its axes permuted: out.dim(i) == in.dim(perm[i]). `perm` must be a permutation.
void transpose(const void* src, void* dst, size_t elem_size, std::span<const int64_t> in_dims,
               std::span<const int> perm);

/// Multi-threaded memcpy for large blocks.
void parallel_memcpy(void* dst, const void* src, size_t nbytes);
/// Writes `n` copies of the `elem_size`-byte `value`.
void fill(void* dst, int64_t n, size_t elem_size, const void* value);

/// dst is [outer, sum(widths)] bytes; input i is [outer, widths[i]] bytes.
void concat(std::span<const void* const> srcs, std::span<const int64_t> widths, int64_t outer, void* dst);
/// The inverse of concat: src is [outer, sum(widths)] bytes.
void split(const void* src, std::span<void* const> dsts, std::span<const int64_t> widths, int64_t outer);

/// One element of any dtype as bytes: 16 of them, for complex128.
struct ScalarBits {
  alignas(16) uint64_t words[2] = {0, 0};
  const void* data() const { return words; }
};

/// The bytes of `value` converted to dtype `d` (integers truncate toward zero and wrap like a C++ cast
/// from int64; bool is value != 0; complex gets imaginary part 0), in the low dtype_size(d) bytes.
ScalarBits encode_scalar(DType d, double value);

/// Reads index i of an int32/int64/uint8 index tensor as int64.
int64_t load_index(const void* indices, DType index_dtype, int64_t i);

/// GatherV2 on shapes collapsed to params [batch, outer, axis_dim, inner] and indices [batch, n]: out
/// is [batch, outer, n, inner]. Returns the flat position of the first index outside [0, axis_dim),
/// or -1 when all are valid (nothing is written then).
int64_t gather(const void* params, const void* indices, DType index_dtype, void* out, size_t elem_size,
               int64_t batch, int64_t outer, int64_t axis_dim, int64_t n, int64_t inner);

/// UnsortedSegmentSum on data collapsed to [n, inner] and segment ids [n] (int32/int64): out is
/// [num_segments, inner], zeroed, then out[ids[j]] += data[j] for every row with ids[j] >= 0. Sums run
/// in row order (16-bit floats accumulate in float), so results do not depend on the thread count.
/// Returns the first position whose id is >= num_segments (nothing is written then), or -1.
int64_t unsorted_segment_sum(const void* data, DType dtype, const void* ids, DType id_dtype, int64_t n,
                             int64_t inner, int64_t num_segments, void* out);

/// MirrorPadGrad: `out` (dy's dims less the paddings) gets each element of `dy` added at the element
/// that REFLECT (or SYMMETRIC when `symmetric`) padding copied it from. Numeric dtypes.
void mirror_pad_grad(const void* dy, DType dtype, std::span<const int64_t> dy_dims,
                     std::span<const int64_t> paddings, bool symmetric, void* out);

/// Where: the number of non-zero elements (for floats -0.0 is zero and NaN is non-zero).
int64_t count_nonzero(const void* data, DType dtype, int64_t n);
/// Writes the row-major coordinates ([count, rank] int64) of each non-zero element.
void nonzero_coordinates(const void* data, DType dtype, const Shape& shape, int64_t* out);

/// Dims and element strides of up to three operands broadcast to one output shape, with size-1 dims
/// dropped and dims that are contiguous in every operand merged (a stride of 0 means broadcast).
struct BroadcastWalk {
  int rank = 0;
  int num_operands = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
};
BroadcastWalk plan_broadcast_walk(const Shape& out, std::span<const Shape> operands);

/// SelectV2: out = cond ? t : e, where out has the broadcast shape of the three.
void select(const bool* cond, const void* t, const void* e, void* out, size_t elem_size,
            const BroadcastWalk& walk);
/// ClipByValue: out = max(min(t, hi), lo) (NaN in t stays NaN); out has t's shape.
void clip_by_value(const void* t, const void* lo, const void* hi, void* out, DType dtype,
                   const BroadcastWalk& walk);

/// OneHot on indices collapsed to [outer, inner], out [outer, depth, inner]; indices outside
/// [0, depth) give all-`off` rows.
void one_hot(const void* indices, DType index_dtype, int64_t outer, int64_t depth, int64_t inner,
             const void* on, const void* off, size_t elem_size, void* out);

/// Range: out[i] = start + i * delta accumulated in dtype as TensorFlow does.
void range(DType dtype, double start, double delta, int64_t size, void* out);
/// The number of elements of Range (TensorFlow's rule, computed in dtype); 0 when delta points away
/// from limit.
StatusOr<int64_t> range_size(DType dtype, double start, double limit, double delta);
/// LinSpace: num values from start to stop inclusive (the last one exactly stop).
void linspace(DType dtype, const void* start, const void* stop, int64_t num, void* out);

}  // namespace ember::kernels

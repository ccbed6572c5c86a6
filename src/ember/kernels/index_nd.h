// Kernels of the N-d index ops (ops/scatter_nd.cc): GatherNd reads slices of a tensor at index tuples and the
// ScatterNd family writes, adds or takes the min/max of updates into them. Shapes arrive collapsed: the
// indexed tensor is [dims[0], ..., dims[depth-1], slice] and the indices are [n, depth].
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/core/dtype.h"

namespace ember::kernels {

/// The row offset (in slices) of each index tuple into `offsets` [n]; returns the first tuple with an
/// element outside [0, dims[k]), or -1 when all are in range.
int64_t index_nd_offsets(const void* indices, DType index_dtype, int64_t n, int depth, const int64_t* dims,
                         int64_t* offsets);

/// out[j] = params[offsets[j]] for slices of `slice` elements of `elem_size` bytes.
void gather_nd(const void* params, const int64_t* offsets, int64_t n, int64_t slice, size_t elem_size,
               void* out);

enum class ScatterMode : uint8_t { kUpdate, kAdd, kSub, kMin, kMax, kMul, kDiv };

/// Applies updates[j] to out[offsets[j]] row by row in order (the last of duplicate updates wins for
/// kUpdate; sums run in order, so results do not depend on the thread count). `out` holds the base values.
void scatter_nd(const int64_t* offsets, int64_t n, int64_t slice, const void* updates, DType dtype,
                ScatterMode mode, void* out);

/// Fills `out` [n] with the identity of `mode` (kMin: the dtype's largest value, kMax: its lowest, kMul: 1,
/// else 0): what an UnsortedSegmentMin/Max/Prod segment that no row names holds, as in TensorFlow.
void fill_identity(DType dtype, ScatterMode mode, int64_t n, void* out);

}  // namespace ember::kernels

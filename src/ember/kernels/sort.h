// Sorting and selection kernels (ops/sort.cc): TopKV2 (which tf.sort and tf.argsort use, as in TensorFlow),
// binary search (LowerBound/UpperBound) and Unique.
//
// Note [Sort order]: every kernel here orders by one strict total order: larger values first, NaN above
// +inf (all NaNs equal), and equal values by lower index. So a full top_k is a stable descending sort and
// comparison-based std algorithms never see an inconsistent comparator (NaN with < is not a strict weak
// order, and std::sort may then read out of bounds).
#pragma once

#include <cstdint>

#include "ember/core/dtype.h"

namespace ember::kernels {

/// For each of `rows` rows of `n` elements of `in`, the `k` largest, in descending order (Note [Sort
/// order]): values [rows, k] of the input's dtype and indices [rows, k] of `index_dtype` (int32 or int64).
/// Rows run in parallel; a single long full sort of 4-byte values is a parallel radix sort.
void top_k(const void* in, DType dtype, int64_t rows, int64_t n, int64_t k, void* values, void* indices,
           DType index_dtype);

/// For each of `rows` rows: for each of the m values, the first position in the row's n sorted elements
/// whose element is >= the value (`upper`: > the value), written as `out_dtype` (int32 or int64).
void search_sorted(const void* sorted, const void* values, DType dtype, int64_t rows, int64_t n, int64_t m,
                   bool upper, void* out, DType out_dtype);

/// The distinct elements of x [n] in the order of first appearance. Returns their count; `idx` [n] (as
/// `idx_dtype`) gets each element's position among them, `first` [n] the index in x of each distinct
/// element (its first appearance) and `counts` [n] how often it appears (both valid up to the count).
int64_t unique(const void* x, DType dtype, int64_t n, void* idx, DType idx_dtype, int64_t* first,
               int64_t* counts);

}  // namespace ember::kernels

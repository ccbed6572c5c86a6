// Kernels for complex numbers that are not element-wise: the matrix product through CBLAS (OpenBLAS's
// cgemm/zgemm; oneDNN has no complex) and the FFTs through FFTW (kernels/fft.cc, docs/complex.md).
#pragma once

#include <cstdint>
#include <span>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

/// out = op(a) op(b) over the last two dims with broadcast batch dims (op = transpose or not), for
/// complex64 or complex128 operands; out is allocated with the broadcast shape.
Status complex_matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b,
                      TensorImpl& out);

/// The complex-to-complex DFT over the last `rank` (1 to 3) dims of `in` (complex64 or complex128) into
/// `out` of the same shape and dtype; `inverse` computes the inverse scaled by 1 / (product of the dims).
Status fft(const TensorImpl& in, int rank, bool inverse, TensorImpl& out);

/// The real-to-complex DFT over the last `rank` dims with lengths `fft_length`: `in` (float32/float64)
/// is cropped or zero-padded to them, `out` (complex64/complex128) has the last dim fft_length[-1]/2 + 1.
Status rfft(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out);

/// The inverse of rfft: `in` (complex) is cropped or zero-padded to [fft_length[:-1], fft_length[-1]/2 + 1]
/// in its last `rank` dims; `out` (real) has the last dims `fft_length`; scaled by 1 / prod(fft_length).
Status irfft(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out);

/// How many FFTW plans the cache holds (tests: a second call of one shape plans nothing new).
size_t fft_plan_cache_size();

}  // namespace ember::kernels

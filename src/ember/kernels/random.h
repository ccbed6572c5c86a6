// Kernels of the random ops (ops/random.cc): fill a tensor from a Philox stream (kernels/philox.h).
// Output group g (4 floats, 2 doubles, ...) always comes from counter start + g * stride, so a fill is
// split over the intra-op pool by groups and gives the same bits for every thread count; TensorFlow's
// CPU kernels lay their streams out the same way, so equal (key, counter) give TensorFlow's numbers.
#pragma once

#include <cstdint>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/kernels/philox.h"

namespace ember::kernels {

enum class RandomDistribution : uint8_t {
  kUniform,          // [0, 1)
  kNormal,           // N(0, 1)
  kTruncatedNormal,  // N(0, 1) restricted to (-2, 2) by rejection
};

/// Fills `out` (float16, bfloat16, float32 or float64) with draws from the stream starting at `start`.
Status fill_random(RandomDistribution dist, const PhiloxState& start, TensorImpl& out);

/// Fills `out` (int32 or int64) with integers uniform in [lo, hi); lo < hi and both must fit the dtype.
Status fill_random_int(const PhiloxState& start, int64_t lo, int64_t hi, TensorImpl& out);

/// Fills `out` (int32 or int64) with raw random bits over the dtype's whole range (TF's
/// UniformFullIntDistribution: one word per int32, two words, low first, per int64).
Status fill_random_full_int(const PhiloxState& start, TensorImpl& out);

/// Gamma(alpha, 1) draws, TensorFlow's RandomGamma layout: out[s * num_alphas + a] for sample s of
/// alpha a, each from its own sub-stream start + 256 * (a * samples_per_alpha + s) (Marsaglia-Tsang on
/// double normals and uniforms; exponential for alpha == 1). `alpha` and `out` share a float dtype.
Status fill_gamma(const PhiloxState& start, const TensorImpl& alpha, int64_t samples_per_alpha,
                  TensorImpl& out);

/// Poisson(rate) draws in the same layout (Knuth below rate 10, Hormann's transformed rejection above),
/// computed in double; `out` is any float or int32/int64 dtype.
Status fill_poisson(const PhiloxState& start, const TensorImpl& rate, int64_t samples_per_rate,
                    TensorImpl& out);

/// Binomial(counts, probs) draws, TensorFlow's RandomBinomial layout: out[s * num_batches + b] for sample s
/// of (counts[b], probs[b]) (counts and probs already broadcast to one shape). Inversion from sub-stream
/// start + 42 * output index when the mean is below 10, Hormann's BTRS from start + 256 * index above.
Status fill_binomial(const PhiloxState& start, const TensorImpl& counts, const TensorImpl& probs,
                     int64_t samples_per_batch, TensorImpl& out);

}  // namespace ember::kernels

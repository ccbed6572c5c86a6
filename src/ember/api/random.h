// C++ façade: random numbers with TensorFlow 2's seed rules, so a C++ program is reproducible the way a
// TF program is:
//
//   ember::set_global_seed(1);                              // tf.random.set_seed(1)
//   ember::Tensor a = ember::random_uniform({2, 3});        // op seed drawn from the global seed
//   ember::Tensor b = ember::random_normal({4}, 0.0, 1.0, ember::DType::kFloat32, /*seed=*/7);
//   ember::set_global_seed(1);                              // replays: a, b come out again
//   ember::Tensor c = ember::stateless_random_uniform({3}, {1, 2});   // no state at all
//
// Rules (kernels/seed.h): with neither a global nor an op seed the numbers are nondeterministic; an op
// seed alone uses TF's default graph seed; repeated calls with the same seeds continue one stream.
#pragma once

#include <array>
#include <optional>

#include "ember/api/tensor.h"

namespace ember {

/// tf.random.set_seed(seed): sets the global seed and restarts every random stream.
void set_global_seed(int64_t seed);
/// tf.random.set_seed(None): back to nondeterministic numbers for ops without a seed.
void unset_global_seed();

/// Uniform in [minval, maxval). Floats: maxval defaults to 1. Integers (int32, int64): maxval is
/// required, minval < maxval, and both are taken as whole numbers (exact up to 2^53).
Tensor random_uniform(const Shape& shape, DType dtype = DType::kFloat32, double minval = 0,
                      std::optional<double> maxval = {}, std::optional<int64_t> seed = {});
/// Normal with the given mean and standard deviation.
Tensor random_normal(const Shape& shape, double mean = 0, double stddev = 1, DType dtype = DType::kFloat32,
                     std::optional<int64_t> seed = {});
/// Normal with the given mean and standard deviation, redrawn beyond two standard deviations.
Tensor truncated_normal(const Shape& shape, double mean = 0, double stddev = 1, DType dtype = DType::kFloat32,
                        std::optional<int64_t> seed = {});

/// Stateless versions: a pure function of (shape, seed, dtype, parameters).
Tensor stateless_random_uniform(const Shape& shape, std::array<int64_t, 2> seed,
                                DType dtype = DType::kFloat32, double minval = 0,
                                std::optional<double> maxval = {});
Tensor stateless_random_normal(const Shape& shape, std::array<int64_t, 2> seed, double mean = 0,
                               double stddev = 1, DType dtype = DType::kFloat32);
Tensor stateless_truncated_normal(const Shape& shape, std::array<int64_t, 2> seed, double mean = 0,
                                  double stddev = 1, DType dtype = DType::kFloat32);

}  // namespace ember

#include "ember/api/random.h"

#include <stdexcept>

#include "ember/api/math.h"
#include "ember/kernels/seed.h"

namespace ember {
namespace {

using kernels::SeedPair;
using kernels::SeedState;

/// tf.random.get_seed(op_seed) against the process-wide seed state.
SeedPair get_seed(std::optional<int64_t> op_seed) {
  try {
    return SeedState::global().get_seed(op_seed);
  } catch (const std::runtime_error& e) {  // op determinism is on and no seed was given
    throw StatusError(make_error(Code::kFailedPrecondition, e.what()));
  }
}

// The `shape` operand of a random op, an int64 vector.
Tensor shape_operand(const Shape& shape) {
  if (!shape.fully_defined())
    throw StatusError(invalid_argument("random: shape ", shape.to_string(), " must be fully defined"));
  return Tensor::from_vector(shape.dim_vector());
}

/// A scalar of `dtype` holding v (converted from double directly, not through float32).
Tensor scalar(double v, DType dtype) {
  return cast(Tensor::from_vector(std::vector<double>{v}, Shape()), dtype);
}

/// minval + rnd * (maxval - minval), computed in dtype like tf.random.uniform; skipped for [0, 1).
Tensor scale_uniform(const Tensor& rnd, double minval, double maxval) {
  if (minval == 0 && maxval == 1) return rnd;
  const DType d = rnd.dtype();
  return add(multiply(rnd, subtract(scalar(maxval, d), scalar(minval, d))), scalar(minval, d));
}

/// rnd * stddev + mean, like tf.random.normal.
Tensor scale_normal(const Tensor& rnd, double mean, double stddev) {
  const DType d = rnd.dtype();
  return add(multiply(rnd, scalar(stddev, d)), scalar(mean, d));
}

void check_int_bounds(DType dtype, std::optional<double> maxval) {
  if (!maxval)
    throw StatusError(
        invalid_argument("random_uniform: maxval must be given for integer dtype ", dtype_name(dtype)));
}

Tensor seed_tensor(std::array<int64_t, 2> seed) {
  return Tensor::from_vector(std::vector<int64_t>{seed[0], seed[1]}, Shape({2}));
}

}  // namespace

void set_global_seed(int64_t seed) { SeedState::global().set_seed(seed); }
void unset_global_seed() { SeedState::global().unset_seed(); }

Tensor random_uniform(const Shape& shape, DType dtype, double minval, std::optional<double> maxval,
                      std::optional<int64_t> seed) {
  if (is_integer(dtype)) {
    check_int_bounds(dtype, maxval);
    const SeedPair s = get_seed(seed);
    return call_op1("RandomUniformInt", {shape_operand(shape)},
                    {static_cast<int64_t>(minval), static_cast<int64_t>(*maxval), dtype, s.seed, s.seed2});
  }
  const SeedPair s = get_seed(seed);
  Tensor rnd = call_op1("RandomUniform", {shape_operand(shape)}, {dtype, s.seed, s.seed2});
  return scale_uniform(rnd, minval, maxval.value_or(1.0));
}

Tensor random_normal(const Shape& shape, double mean, double stddev, DType dtype,
                     std::optional<int64_t> seed) {
  const SeedPair s = get_seed(seed);
  return scale_normal(call_op1("RandomStandardNormal", {shape_operand(shape)}, {dtype, s.seed, s.seed2}),
                      mean, stddev);
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype,
                        std::optional<int64_t> seed) {
  const SeedPair s = get_seed(seed);
  return scale_normal(call_op1("TruncatedNormal", {shape_operand(shape)}, {dtype, s.seed, s.seed2}), mean,
                      stddev);
}

Tensor stateless_random_uniform(const Shape& shape, std::array<int64_t, 2> seed, DType dtype, double minval,
                                std::optional<double> maxval) {
  if (is_integer(dtype)) {
    check_int_bounds(dtype, maxval);
    return call_op1("StatelessRandomUniformInt", {shape_operand(shape), seed_tensor(seed)},
                    {static_cast<int64_t>(minval), static_cast<int64_t>(*maxval), dtype});
  }
  Tensor rnd = call_op1("StatelessRandomUniform", {shape_operand(shape), seed_tensor(seed)}, {dtype});
  return scale_uniform(rnd, minval, maxval.value_or(1.0));
}

Tensor stateless_random_normal(const Shape& shape, std::array<int64_t, 2> seed, double mean, double stddev,
                               DType dtype) {
  return scale_normal(call_op1("StatelessRandomNormal", {shape_operand(shape), seed_tensor(seed)}, {dtype}),
                      mean, stddev);
}

Tensor stateless_truncated_normal(const Shape& shape, std::array<int64_t, 2> seed, double mean, double stddev,
                                  DType dtype) {
  return scale_normal(
      call_op1("StatelessTruncatedNormal", {shape_operand(shape), seed_tensor(seed)}, {dtype}), mean, stddev);
}

}  // namespace ember

// Helpers for the array op value tests: tensors of any dtype built from small integers, and read back as
// int64 so one expectation serves every dtype.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ember/ember.h"

namespace ember::testing {

using Ints = std::vector<int64_t>;

/// 0, 1, 2, ... in `shape`, converted to `dtype` (bool: i % 2).
inline Tensor iota(const Ints& shape, DType dtype = DType::kFloat32) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  if (dtype == DType::kBool)
    for (auto& x : v) x %= 2;
  Tensor t = Tensor::from_vector(v, Shape(shape));
  return dtype == DType::kInt32 ? t : cast(t, dtype);
}

/// A tensor of `dtype` holding `values` (small integers).
inline Tensor ints_as(const std::vector<int32_t>& values, const Ints& shape, DType dtype) {
  Tensor t = Tensor::from_vector(values, Shape(shape));
  return dtype == DType::kInt32 ? t : cast(t, dtype);
}

/// The elements of any dtype as int64 (floats through double; an iota past float16's range holds inf,
/// which has no int64 value, so non-finite values map to sentinels instead of undefined behaviour).
inline std::vector<int64_t> values(const Tensor& t) {
  if (!is_floating(t.dtype())) return t.to_vector<int64_t>();
  Tensor wide = t.dtype() == DType::kFloat16 || t.dtype() == DType::kBFloat16 ? cast(t, DType::kFloat64) : t;
  std::vector<int64_t> out;
  for (double v : wide.to_vector<double>()) {
    if (std::isnan(v)) {
      out.push_back(std::numeric_limits<int64_t>::min());
    } else if (std::isinf(v)) {
      out.push_back(v > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min() + 1);
    } else {
      out.push_back(static_cast<int64_t>(v));
    }
  }
  return out;
}

/// Element i of `t`, whose shape is `shape`, at a multi-index (row-major).
inline int64_t flat_index(const Ints& shape, const Ints& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

/// Expects `fn` to throw a StatusError whose message contains `substring`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& substring) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << substring;
  } catch (const StatusError& e) {
    EXPECT_NE(e.status().message().find(substring), std::string::npos) << e.status().message();
  }
}

inline const std::vector<DType>& data_dtypes() {
  static const std::vector<DType> kTypes = {DType::kFloat32,  DType::kInt32,   DType::kFloat16,
                                            DType::kBFloat16, DType::kFloat64, DType::kInt64,
                                            DType::kInt8,     DType::kUInt8,   DType::kInt16};
  return kTypes;
}

}  // namespace ember::testing

// Element types. A DType is a small enum so that tables indexed by it (kernels per dtype, promotion,
// names) stay dense; `dtype_traits` maps it to the C++ storage type.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/half.h"

namespace ember {

enum class DType : uint8_t {
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kComplex64,   // std::complex<float>
  kComplex128,  // std::complex<double>
  // Variable-length byte strings: each element is a std::string constructed in its buffer (Note [String
  // tensors] in core/tensor_impl.cc). Not in kAllTypes: an op takes strings only where it declares them.
  kString,
};
inline constexpr int kNumDTypes = static_cast<int>(DType::kString) + 1;

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

/// A set of dtypes as a bitmask, used by op signatures ("T in {float32, float64}").
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType d) { return 1u << static_cast<int>(d); }
inline constexpr DTypeSet kFloatTypes = dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16) |
                                        dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
inline constexpr DTypeSet kSignedIntTypes =
    dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
inline constexpr DTypeSet kIntTypes = kSignedIntTypes | dtype_bit(DType::kUInt8);
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kSignedNumericTypes = kFloatTypes | kSignedIntTypes;
inline constexpr DTypeSet kIndexTypes = dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
inline constexpr DTypeSet kBoolType = dtype_bit(DType::kBool);
inline constexpr DTypeSet kComplexTypes = dtype_bit(DType::kComplex64) | dtype_bit(DType::kComplex128);
/// The real types: what `visit_dtype` visits unless told otherwise, and what most ops are declared for.
/// Complex dtypes are opted into op by op (`kAllTypes | kComplexTypes`, docs/complex.md): an op declared for
/// them has a kernel that handles them, and code that switches on dtype never meets them by surprise.
inline constexpr DTypeSet kAllTypes = kNumericTypes | kBoolType;
inline constexpr DTypeSet kStringType = dtype_bit(DType::kString);
/// Every real dtype and strings: for ops that only move elements (Identity, Reshape, ConcatV2, ...).
inline constexpr DTypeSet kAllTypesAndString = kAllTypes | kStringType;
/// Every dtype, complex included: for ops that only move bytes (reshape, transpose, concat, gather, ...).
inline constexpr DTypeSet kAllTypesAndComplex = kAllTypes | kComplexTypes;
/// Floats and complex: TensorFlow's {half, bfloat16, float, double, complex64, complex128}.
inline constexpr DTypeSet kFloatAndComplexTypes = kFloatTypes | kComplexTypes;
/// TensorFlow's "numbertype" for the ops that accept complex (Add, Mul, Sum, MatMul, ...).
inline constexpr DTypeSet kNumericAndComplexTypes = kNumericTypes | kComplexTypes;

constexpr bool dtype_in(DType d, DTypeSet set) { return (set & dtype_bit(d)) != 0; }
constexpr bool is_floating(DType d) { return dtype_in(d, kFloatTypes); }
constexpr bool is_integer(DType d) { return dtype_in(d, kIntTypes); }
constexpr bool is_string(DType d) { return d == DType::kString; }
constexpr bool is_complex(DType d) { return dtype_in(d, kComplexTypes); }
/// The dtype of a complex dtype's real and imaginary parts (float32 for complex64); `d` itself otherwise.
constexpr DType real_dtype(DType d) {
  return d == DType::kComplex64 ? DType::kFloat32 : d == DType::kComplex128 ? DType::kFloat64 : d;
}
/// The complex dtype with parts of float dtype `d` (complex64 for float32, complex128 for float64).
constexpr DType complex_dtype(DType d) {
  return d == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
}

size_t dtype_size(DType d);
/// Machine epsilon of a floating dtype (the gap between 1 and the next value); 0 for other dtypes.
double dtype_epsilon(DType d);
/// TensorFlow's name: "float32", "int64", "bool", ...
std::string_view dtype_name(DType d);
/// Parses a TensorFlow dtype name; returns false if unknown.
bool dtype_from_name(std::string_view name, DType* out);

template <typename T>
struct dtype_of;
template <DType D>
struct dtype_traits;

#define EMBER_DTYPE_MAP(D, T)                \
  template <>                                \
  struct dtype_of<T> {                       \
    static constexpr DType value = DType::D; \
  };                                         \
  template <>                                \
  struct dtype_traits<DType::D> {            \
    using type = T;                          \
  };
EMBER_DTYPE_MAP(kFloat16, float16)
EMBER_DTYPE_MAP(kBFloat16, bfloat16)
EMBER_DTYPE_MAP(kFloat32, float)
EMBER_DTYPE_MAP(kFloat64, double)
EMBER_DTYPE_MAP(kInt8, int8_t)
EMBER_DTYPE_MAP(kInt16, int16_t)
EMBER_DTYPE_MAP(kInt32, int32_t)
EMBER_DTYPE_MAP(kInt64, int64_t)
EMBER_DTYPE_MAP(kUInt8, uint8_t)
EMBER_DTYPE_MAP(kBool, bool)
EMBER_DTYPE_MAP(kComplex64, complex64)
EMBER_DTYPE_MAP(kComplex128, complex128)
EMBER_DTYPE_MAP(kString, std::string)
#undef EMBER_DTYPE_MAP

template <DType D>
using ctype_t = typename dtype_traits<D>::type;

/// Calls `fn.template operator()<T>()` with T the C++ type of `d`, restricted to the dtypes in `set`;
/// returns false if `d` is not in `set`.
template <DTypeSet kSet = kAllTypes, typename Fn>
bool visit_dtype(DType d, Fn&& fn) {
#define EMBER_VISIT_CASE(D)                            \
  case DType::D:                                       \
    if constexpr ((kSet & dtype_bit(DType::D)) != 0) { \
      fn.template operator()<ctype_t<DType::D>>();     \
      return true;                                     \
    } else {                                           \
      return false;                                    \
    }
  switch (d) {
    EMBER_VISIT_CASE(kFloat16)
    EMBER_VISIT_CASE(kBFloat16)
    EMBER_VISIT_CASE(kFloat32)
    EMBER_VISIT_CASE(kFloat64)
    EMBER_VISIT_CASE(kInt8)
    EMBER_VISIT_CASE(kInt16)
    EMBER_VISIT_CASE(kInt32)
    EMBER_VISIT_CASE(kInt64)
    EMBER_VISIT_CASE(kUInt8)
    EMBER_VISIT_CASE(kBool)
    EMBER_VISIT_CASE(kComplex64)
    EMBER_VISIT_CASE(kComplex128)
    EMBER_VISIT_CASE(kString)
  }
#undef EMBER_VISIT_CASE
  return false;
}

}  // namespace ember

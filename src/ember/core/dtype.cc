#include "ember/core/dtype.h"

#include <iterator>

namespace ember {
namespace {
// Indexed by DType: a missing entry would read as "" or size 0, so the lengths are checked.
constexpr std::string_view kNames[] = {"float16",   "bfloat16",   "float32", "float64", "int8",
                                       "int16",     "int32",      "int64",   "uint8",   "bool",
                                       "complex64", "complex128", "string"};
constexpr size_t kSizes[] = {
    2, 2, 4, 8, 1, 2, 4, 8, 1, 1, sizeof(complex64), sizeof(complex128), sizeof(std::string)};
static_assert(std::size(kNames) == kNumDTypes && std::size(kSizes) == kNumDTypes);
}  // namespace

size_t dtype_size(DType d) { return kSizes[static_cast<int>(d)]; }
std::string_view dtype_name(DType d) { return kNames[static_cast<int>(d)]; }

double dtype_epsilon(DType d) {
  switch (d) {
    case DType::kFloat16:
      return 1.0 / 1024;  // 2^-10
    case DType::kBFloat16:
      return 1.0 / 128;  // 2^-7
    case DType::kFloat32:
    case DType::kComplex64:
      return 1.1920928955078125e-7;  // 2^-23
    case DType::kFloat64:
    case DType::kComplex128:
      return 2.220446049250313e-16;  // 2^-52
    default:
      return 0;
  }
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kNames[i] == name) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  if (name == "half") return (*out = DType::kFloat16, true);
  if (name == "float") return (*out = DType::kFloat32, true);
  if (name == "double") return (*out = DType::kFloat64, true);
  return false;
}

}  // namespace ember

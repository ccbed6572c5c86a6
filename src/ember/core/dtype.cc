#include "ember/core/dtype.h"

namespace ember {
namespace {
constexpr std::string_view kNames[kNumDTypes] = {"float16", "bfloat16", "float32", "float64", "int8",
                                                 "int16",   "int32",    "int64",   "uint8",   "bool", "complex64", "complex128"};
constexpr size_t kSizes[kNumDTypes] = {2, 2, 4, 8, 1, 2, 4, 8, 1, 1, 8, 16};
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

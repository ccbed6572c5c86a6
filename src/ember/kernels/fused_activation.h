// The activations a fused contraction (_FusedMatMul, _FusedConv2D, _FusedConv3D,
// _FusedDepthwiseConv2dNative) applies after its bias, shared by the matmul and convolution kernels: their
// names in TensorFlow's fused_ops lists, their oneDNN eltwise post-ops, and their math where oneDNN does not
// run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace dnnl {
struct post_ops;
}

namespace ember::kernels {

enum class FusedActivation : uint8_t {
  kNone,
  kRelu,
  kRelu6,
  kElu,
  kLeakyRelu,
  kTanh,
  kSigmoid,
  kSwish,            // x * sigmoid(x) (TensorFlow's _MklSwish)
  kGeluExact,        // x * erfc(-x / sqrt(2)) / 2
  kGeluApproximate,  // x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2
};

/// The activation TensorFlow's fused_ops lists call `name` ("" for none); false when none is.
bool fused_activation_named(std::string_view name, FusedActivation* activation);

/// Appends the activation's oneDNN eltwise post-op (nothing for kNone); `alpha` is LeakyRelu's slope.
void append_post_op(FusedActivation activation, float alpha, dnnl::post_ops& ops);

/// The activation of one value, where oneDNN does not run. LeakyRelu's `alpha` is a float attribute, as
/// TensorFlow's: float64 uses the float32 slope too.
template <typename T>
T activate(FusedActivation activation, T v, double alpha) {
  constexpr T kRsqrt2 = T(0.70710678118654752440), kSqrt2OverPi = T(0.79788456080286535588);
  switch (activation) {
    case FusedActivation::kNone:
      return v;
    case FusedActivation::kRelu:
      return v > 0 ? v : T(0);
    case FusedActivation::kRelu6:
      return std::min(std::max(v, T(0)), T(6));
    case FusedActivation::kElu:
      return v > 0 ? v : std::expm1(v);
    case FusedActivation::kLeakyRelu:
      return v > 0 ? v : v * static_cast<T>(static_cast<float>(alpha));
    case FusedActivation::kTanh:
      return std::tanh(v);
    case FusedActivation::kSigmoid:
      return T(1) / (T(1) + std::exp(-v));
    case FusedActivation::kSwish:
      return v / (T(1) + std::exp(-v));
    case FusedActivation::kGeluExact:
      return T(0.5) * v * std::erfc(-v * kRsqrt2);
    case FusedActivation::kGeluApproximate:
      return T(0.5) * v * (T(1) + std::tanh(kSqrt2OverPi * (v + T(0.044715) * v * v * v)));
  }
  return v;
}

}  // namespace ember::kernels

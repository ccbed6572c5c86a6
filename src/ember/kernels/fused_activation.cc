#include "ember/kernels/fused_activation.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <utility>

namespace ember::kernels {

bool fused_activation_named(std::string_view name, FusedActivation* activation) {
  static constexpr std::pair<std::string_view, FusedActivation> kNames[] = {
      {"", FusedActivation::kNone},
      {"Relu", FusedActivation::kRelu},
      {"Relu6", FusedActivation::kRelu6},
      {"Elu", FusedActivation::kElu},
      {"LeakyRelu", FusedActivation::kLeakyRelu},
      {"Tanh", FusedActivation::kTanh},
      {"Sigmoid", FusedActivation::kSigmoid},
      {"_MklSwish", FusedActivation::kSwish},
      {"GeluExact", FusedActivation::kGeluExact},
      {"GeluApproximate", FusedActivation::kGeluApproximate},
  };
  for (const auto& [known, value] : kNames)
    if (name == known) return *activation = value, true;
  return false;
}

void append_post_op(FusedActivation activation, float alpha, dnnl::post_ops& ops) {
  using dnnl::algorithm;
  switch (activation) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    case FusedActivation::kRelu6:
      return ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 6.0f);
    case FusedActivation::kElu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_elu, 1.0f, 0.0f);
    case FusedActivation::kLeakyRelu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_relu, alpha, 0.0f);
    case FusedActivation::kTanh:
      return ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
    case FusedActivation::kSigmoid:
      return ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
    case FusedActivation::kSwish:
      return ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);  // x * sigmoid(1 * x)
    case FusedActivation::kGeluExact:
      return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case FusedActivation::kGeluApproximate:
      return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  }
}

}  // namespace ember::kernels

// Ops that exist for autodiff: StopGradient (the value passes, gradients do not).
#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

Status stop_gradient_kernel(KernelContext& ctx) {
  ctx.outputs[0] = TensorImpl::view(ctx.input(0), ctx.input(0).shape());
  return Status::OK();
}

}  // namespace

void register_gradient_ops(OpRegistry& r) {
  OpBuilder("StopGradient")
      .doc("The input, through which no gradient flows. stop_gradient([1., 2.]) == [1., 2.]")
      .input("input")
      .output("output")
      .type_var(kAllTypes)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&same_as_input_shape)
      .kernel(kAllTypes, &stop_gradient_kernel)
      .done(r);
}

}  // namespace ember

// Variable reads and writes. The variable is named by attribute 0, its resource id (core/resource.h);
// the tracer orders ops on one variable by program order from the kReadsResource/kWritesResource flags.
#include "ember/core/resource.h"
#include "ember/kernels/elementwise.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

// ReadVariableOp attrs: resource, dtype, shape, unknown_rank: the variable's declared shape (so shape
// inference needs no lookup), which may leave dimensions or the rank unknown (core/resource.h).
Status read_shape(InferContext& ctx) {
  if (ctx.attr_bool(3)) {
    ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(1), Shape::unknown_rank()});
    return Status::OK();
  }
  auto shape = Shape::from_dims(ctx.attr_ints(2), /*allow_unknown=*/true);
  if (!shape.ok()) return shape.status().with_prefix("ReadVariableOp: shape: ");
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(1), *shape});
  return Status::OK();
}

Status read_kernel(KernelContext& ctx) {
  auto variable = ResourceManager::global().find(ctx.attr_int(0), "ReadVariableOp");
  if (!variable.ok()) return variable.status();
  ctx.outputs[0] = variable.value()->read();  // no copy: the value is immutable
  return Status::OK();
}

// TensorFlow's wording: an assigned value must fit the variable's shape, an update must equal it.
Status shape_mismatch(const OpDef& op, const VariableResource& v, const Shape& variable_shape,
                      const Shape& value_shape) {
  if (op.name == "AssignVariableOp")
    return invalid_argument(op.name, ": trying to assign a value of shape ", value_shape.to_string(),
                            " to variable '", v.name(), "' of shape ", variable_shape.to_string());
  return invalid_argument(op.name, ": cannot update variable '", v.name(), "' with shape ",
                          variable_shape.to_string(), " using a tensor of shape ", value_shape.to_string(),
                          "; the shapes must be equal");
}

Status assign_shape(InferContext& ctx) {
  const TensorSpec& value = ctx.inputs[0];
  auto variable = ResourceManager::global().find(ctx.attr_int(0), ctx.op->name.c_str());
  if (!variable.ok()) return variable.status();
  const VariableResource& v = *variable.value();
  if (value.dtype != v.dtype())
    return invalid_argument(ctx.op->name, ": variable '", v.name(), "' has dtype ", dtype_name(v.dtype()),
                            " but the value has dtype ", dtype_name(value.dtype));
  if (!value.shape.is_compatible_with(v.shape())) return shape_mismatch(*ctx.op, v, v.shape(), value.shape);
  return Status::OK();  // no outputs
}

// An assignment may change the value's shape within the declared one (a variable of shape [?] takes any
// length); an update (add, subtract) needs a delta of exactly the current value's shape, as TensorFlow's.
template <int kMode>  // 0: assign, 1: add, 2: subtract
Status assign_kernel(KernelContext& ctx) {
  auto variable = ResourceManager::global().find(ctx.attr_int(0), ctx.op->name.c_str());
  if (!variable.ok()) return variable.status();
  VariableResource& v = *variable.value();
  if (!v.shape().is_compatible_with(ctx.input(0).shape()))
    return shape_mismatch(*ctx.op, v, v.shape(), ctx.input(0).shape());
  if constexpr (kMode == 0) {
    v.write(TensorRef(ctx.inputs[0]));
  } else {
    auto op = kMode == 1 ? kernels::BinaryOp::kAdd : kernels::BinaryOp::kSub;
    return v.update([&](const TensorRef& current) -> StatusOr<TensorRef> {
      if (current->shape() != ctx.input(0).shape())
        return shape_mismatch(*ctx.op, v, current->shape(), ctx.input(0).shape());
      auto updated = TensorImpl::allocate(v.dtype(), current->shape(), current->device());
      if (!updated.ok()) return updated.status();
      EMBER_RETURN_IF_ERROR(kernels::run_binary(op, *current, ctx.input(0), *updated.value()));
      return std::move(updated).value();
    });
  }
  return Status::OK();
}

}  // namespace

void register_state_ops(OpRegistry& r) {
  OpBuilder("ReadVariableOp")
      .doc("The current value of a variable (no copy). ReadVariableOp(resource=v.id) == v.numpy()")
      .output("value")
      .type_var(kAllTypesAndComplex)
      .attr("resource", AttrType::kInt)
      .attr("dtype", AttrType::kDType)
      .attr("shape", AttrType::kInts)
      .attr("unknown_rank", AttrType::kBool, false)
      .dispatch_on_output()
      .flags(kStateful | kReadsResource | kKernelAllocates)
      .shape(&read_shape)
      .kernel(kAllTypesAndComplex, &read_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  struct Assign {
    const char* name;
    DTypeSet types;
    KernelFn kernel;
    const char* doc;
  };
  const Assign assigns[] = {
      {"AssignVariableOp", kAllTypesAndComplex, &assign_kernel<0>,
       "Sets a variable's value. v.assign([1., 2.])"},
      {"AssignAddVariableOp", kNumericTypes, &assign_kernel<1>,
       "Adds to a variable's value. v.assign_add(1.)"},
      {"AssignSubVariableOp", kNumericTypes, &assign_kernel<2>,
       "Subtracts from a variable's value. v.assign_sub(1.)"},
  };
  for (const Assign& a : assigns) {
    OpBuilder(a.name)
        .doc(a.doc)
        .input("value")
        .type_var(a.types)
        .attr("resource", AttrType::kInt)
        .flags(kStateful | kWritesResource | kNotDifferentiable)
        .shape(&assign_shape)
        .kernel(a.types, a.kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
}

}  // namespace ember

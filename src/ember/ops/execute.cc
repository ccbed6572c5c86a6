#include "ember/ops/execute.h"

#include <cxxabi.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "ember/core/device.h"
#include "ember/core/float_env.h"

namespace ember {
namespace {

bool attr_matches(AttrType type, const AttrValue& v) {
  switch (type) {
    case AttrType::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat:
      return std::holds_alternative<double>(v);
    case AttrType::kBool:
      return std::holds_alternative<bool>(v);
    case AttrType::kDType:
      return std::holds_alternative<DType>(v);
    case AttrType::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kString:
      return std::holds_alternative<std::string>(v);
    case AttrType::kTensor:
      return std::holds_alternative<TensorRef>(v);
    case AttrType::kDTypes:
      return std::holds_alternative<std::vector<DType>>(v);
    case AttrType::kShapes:
      return std::holds_alternative<std::vector<Shape>>(v);
  }
  return false;
}

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kDType:
      return "dtype";
    case AttrType::kInts:
      return "list of ints";
    case AttrType::kString:
      return "string";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kDTypes:
      return "list of dtypes";
    case AttrType::kShapes:
      return "list of shapes";
  }
  return "?";
}

std::string set_names(DTypeSet set) {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (set & (1u << i)) {
      if (!s.empty()) s += ", ";
      s += dtype_name(static_cast<DType>(i));
    }
  }
  return "{" + s + "}";
}

Status check_inputs(const OpDef& op, std::span<const TensorSpec> inputs) {
  size_t declared = op.inputs.size();
  bool variadic = op.has_flag(kVariadicInput);
  size_t minimum = declared - (op.has_flag(kVariadicMayBeEmpty) ? 1 : 0);
  if (variadic ? inputs.size() < minimum : inputs.size() != declared)
    return invalid_argument(op.name, ": expected ", variadic ? "at least " : "", declared, " input(s), got ",
                            inputs.size());
  if (op.has_flag(kPairedLists) && inputs.size() % 2 != 0)
    return invalid_argument(op.name, ": its lists '", op.inputs[0].name, "' and '", op.inputs[1].name,
                            "' must have the same length, got ", inputs.size(), " inputs in all");
  int var_source[2] = {-1, -1};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArgDef& arg = op.arg_of(i, inputs.size());
    DType d = inputs[i].dtype;
    if (arg.type.type_var < 0) {
      if (!dtype_in(d, arg.type.allowed))
        return invalid_argument(op.name, ": input '", arg.name, "' must have a dtype in ",
                                set_names(arg.type.allowed), ", got ", dtype_name(d));
      continue;
    }
    int var = arg.type.type_var;
    if (var_source[var] < 0) {
      if (!dtype_in(d, op.type_vars[var]))
        return invalid_argument(op.name, ": input '", arg.name, "' must have a dtype in ",
                                set_names(op.type_vars[var]), ", got ", dtype_name(d));
      var_source[var] = static_cast<int>(i);
    } else if (inputs[var_source[var]].dtype != d) {
      const ArgDef& first = op.arg_of(static_cast<size_t>(var_source[var]), inputs.size());
      return invalid_argument(op.name, ": input #", i, " ('", arg.name, "') has dtype ", dtype_name(d),
                              " but input #", var_source[var], " ('", first.name, "') has dtype ",
                              dtype_name(inputs[var_source[var]].dtype),
                              "; they must match (ember, like TensorFlow, does not promote dtypes)");
    }
  }
  return Status::OK();
}

}  // namespace

// Note [No exception escapes an op]
// Shape functions and kernels report the user's mistakes as Status, but the standard library can still
// throw: a vector sized from an attribute (std::length_error), a temporary buffer the machine cannot hold
// (std::bad_alloc). An exception crossing the C API would abort the process, so the op boundary turns it
// into the error TensorFlow raises for it. (Inside a parallel_for region an exception cannot be caught
// here; kernels size their temporaries before entering one.) The one thing that is no error is the forced
// unwind of a thread that Python ends at interpreter exit inside a py_function kernel: swallowing it
// aborts the process, so it goes on (Note [Threads at interpreter exit] in src/python/py_gil.h).
Status exception_status(const OpDef& op, const char* stage) {
  try {
    throw;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, op.name, ": out of memory while ", stage);
  } catch (const std::length_error& e) {
    return make_error(Code::kResourceExhausted, op.name, ": a buffer too large while ", stage, " (", e.what(),
                      ")");
  } catch (const std::exception& e) {
    return make_error(Code::kInternal, op.name, ": unexpected exception while ", stage, ": ", e.what());
  } catch (...) {
    return make_error(Code::kInternal, op.name, ": unexpected exception while ", stage);
  }
}

Status complete_attrs(const OpDef& op, AttrList& attrs) {
  if (attrs.size() > op.attrs.size())
    return invalid_argument(op.name, ": expected at most ", op.attrs.size(), " attribute(s), got ",
                            attrs.size());
  for (size_t i = attrs.size(); i < op.attrs.size(); ++i) {
    if (!op.attrs[i].has_default)
      return invalid_argument(op.name, ": missing required attribute '", op.attrs[i].name, "'");
    attrs.push_back(op.attrs[i].default_value);
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (!attr_matches(op.attrs[i].type, attrs[i]))
      return invalid_argument(op.name, ": attribute '", op.attrs[i].name, "' must be a ",
                              attr_type_name(op.attrs[i].type));
  }
  return Status::OK();
}

Status infer_op(const OpDef& op, std::span<const TensorSpec> inputs,
                std::span<const TensorImpl* const> constants, std::span<const AttrValue> attrs,
                SmallVector<TensorSpec, 2>& outputs, std::span<const PartialValue* const> partial_values) {
  EMBER_RETURN_IF_ERROR(check_inputs(op, inputs));
  InferContext ctx;
  ctx.op = &op;
  ctx.inputs = inputs;
  ctx.constants = constants;
  ctx.partial_values = partial_values;
  ctx.attrs = attrs;
  Status s = guard_exceptions(op, "inferring its output shapes", [&] { return op.shape_fn(ctx); });
  // Every output shape, whatever shape function computed it, must keep its element count (and so every
  // partial product a kernel takes of it) inside int64.
  for (size_t i = 0; s.ok() && i < ctx.outputs.size(); ++i) {
    s = check_shape_size(ctx.outputs[i].shape);
    if (!s.ok()) s = s.with_prefix("output #" + std::to_string(i) + ": ");
  }
  if (!s.ok()) {
    // Shape functions may already name the op; avoid "Add: Add: ...".
    if (s.message().rfind(op.name + ":", 0) == 0) return s;
    return op_error(op, s);
  }
  outputs = std::move(ctx.outputs);
  return Status::OK();
}

namespace {
thread_local OpInterceptor* t_interceptor = nullptr;
thread_local OpRecorder* t_recorder = nullptr;
}  // namespace

OpRecorder* current_recorder() { return t_recorder; }
OpRecorder* set_current_recorder(OpRecorder* recorder) {
  OpRecorder* previous = t_recorder;
  t_recorder = recorder;
  return previous;
}

OpInterceptor* current_interceptor() { return t_interceptor; }
OpInterceptor* set_current_interceptor(OpInterceptor* interceptor) {
  OpInterceptor* previous = t_interceptor;
  t_interceptor = interceptor;
  return previous;
}

Status execute_op(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                  OutputList& outputs) {
  if (t_recorder != nullptr) [[unlikely]]
    return t_recorder->execute(op, inputs, attrs, outputs);
  if (t_interceptor != nullptr) return t_interceptor->intercept(op, inputs, attrs, outputs);
  return run_kernel(op, inputs, attrs, outputs);
}

Status execute_op_unrecorded(const OpDef& op, std::span<TensorImpl* const> inputs,
                             std::span<const AttrValue> attrs, OutputList& outputs) {
  if (t_interceptor != nullptr) return t_interceptor->intercept(op, inputs, attrs, outputs);
  return run_kernel(op, inputs, attrs, outputs);
}

Status run_kernel(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                  OutputList& outputs) {
  if (const Status* placement = current_placement_error()) [[unlikely]]
    return make_error(placement->code(), placement->message(), " [Op:", op.name, "]");
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Shape, Size, Rank, ZerosLike... need only the spec, which a symbolic tensor with a known shape has.
    if (inputs[i]->is_symbolic() && !(op.has_flag(kReadsOnlyShape) && inputs[i]->shape().fully_defined()))
      return make_error(Code::kFailedPrecondition, op.name, ": input #", i,
                        " is a symbolic tensor of an ember.function graph, used outside the function that "
                        "created it; return it from the function instead");
  }
  SmallVector<TensorSpec, 4> specs;
  SmallVector<const TensorImpl*, 4> constants;
  for (TensorImpl* t : inputs) {
    specs.push_back(TensorSpec{t->dtype(), t->shape()});
    constants.push_back(t);
  }
  SmallVector<TensorSpec, 2> out_specs;
  EMBER_RETURN_IF_ERROR(
      infer_op(op, {specs.data(), specs.size()}, {constants.data(), constants.size()}, attrs, out_specs));

  DType kernel_dtype = op.dispatch_input >= 0 ? inputs[op.dispatch_input]->dtype()
                       : out_specs.empty()    ? DType::kFloat32
                                              : out_specs[0].dtype;
  KernelFn kernel = op.kernels[static_cast<int>(kernel_dtype)];
  if (kernel == nullptr)
    return make_error(Code::kUnimplemented, op.name, ": no kernel for dtype ", dtype_name(kernel_dtype));

  outputs.clear();
  if (!op.has_flag(kKernelAllocates)) {
    for (const TensorSpec& spec : out_specs) {
      auto t = TensorImpl::allocate(spec.dtype, spec.shape, current_device());
      if (!t.ok()) return op_error(op, t.status());
      outputs.push_back(std::move(t).value());
    }
  } else {
    outputs.resize(out_specs.size());
  }
  KernelContext kctx;
  kctx.op = &op;
  kctx.inputs = inputs;
  kctx.attrs = attrs;
  kctx.output_specs = {out_specs.data(), out_specs.size()};
  kctx.outputs = {outputs.data(), outputs.size()};
  Status s = guard_exceptions(op, "running its kernel", [&] {
    ScopedFlushDenormals flush;  // as TensorFlow's kernels run: Note [Where denormals flush] (float_env.cc)
    return kernel(kctx);
  });
  if (!s.ok()) {
    outputs.clear();
    if (s.message().rfind(op.name + ":", 0) == 0) return s;
    return op_error(op, s);
  }
  return Status::OK();
}

}  // namespace ember

// Eager execution of one op (architecture.md §3): dtype check, shape function, allocation, kernel.
// Tracing (a later layer) reuses `infer_op` on specs and adds a node instead of calling `execute_op`.
#pragma once

#include <span>

#include "ember/ops/op_def.h"

namespace ember {

using OutputList = SmallVector<TensorRef, 2>;
using AttrList = SmallVector<AttrValue, 4>;

/// Checks input count and dtypes against the signature and runs the shape function. `constants` are the
/// inputs whose values are known (null elsewhere); `partial_values` what is known of the others' values
/// (InferContext::partial_values).
Status infer_op(const OpDef& op, std::span<const TensorSpec> inputs,
                std::span<const TensorImpl* const> constants, std::span<const AttrValue> attrs,
                SmallVector<TensorSpec, 2>& outputs,
                std::span<const PartialValue* const> partial_values = {});

/// Runs `op`: eagerly, or — while a trace is active on this thread — by handing it to the tracer, which
/// adds a graph node (architecture.md §0.4). `attrs` holds every attribute in declaration order.
Status execute_op(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                  OutputList& outputs);

/// Runs `op`'s kernel on concrete inputs, never intercepted (the executor and constant folding use it).
Status run_kernel(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                  OutputList& outputs);

/// Implemented by the trace layer: receives every op called on this thread while installed.
class OpInterceptor {
 public:
  virtual ~OpInterceptor() = default;
  virtual Status intercept(const OpDef& op, std::span<TensorImpl* const> inputs,
                           std::span<const AttrValue> attrs, OutputList& outputs) = 0;
};
/// The interceptor of this thread (null when ops run eagerly).
OpInterceptor* current_interceptor();
/// Installs `interceptor` for this thread and returns the previous one.
OpInterceptor* set_current_interceptor(OpInterceptor* interceptor);

/// Implemented by the autodiff layer: while a GradientTape records on this thread, execute_op hands every
/// op to it, so it can record the op (and run a function call's forward-with-intermediates variant).
class OpRecorder {
 public:
  virtual ~OpRecorder() = default;
  virtual Status execute(const OpDef& op, std::span<TensorImpl* const> inputs,
                         std::span<const AttrValue> attrs, OutputList& outputs) = 0;
};
OpRecorder* current_recorder();
/// Installs `recorder` for this thread and returns the previous one.
OpRecorder* set_current_recorder(OpRecorder* recorder);

/// execute_op minus the tape: the trace interceptor or the kernel (what the recorder itself calls).
Status execute_op_unrecorded(const OpDef& op, std::span<TensorImpl* const> inputs,
                             std::span<const AttrValue> attrs, OutputList& outputs);

/// Fills trailing attributes from their defaults; fails naming the first missing required one or an
/// attribute whose type differs from the declaration.
Status complete_attrs(const OpDef& op, AttrList& attrs);

/// "Add" -> "Add: " context for errors.
/// The error for a C++ exception that reached the op boundary (rethrown inside; call only from a catch).
Status exception_status(const OpDef& op, const char* stage);

/// Runs `body` (a shape function or kernel of `op`), turning any C++ exception into an error Status:
/// see Note [No exception escapes an op] in execute.cc.
template <typename Body>
Status guard_exceptions(const OpDef& op, const char* stage, Body&& body) {
  try {
    return body();
  } catch (...) {
    return exception_status(op, stage);
  }
}

inline Status op_error(const OpDef& op, Status s) { return s.with_prefix(op.name + ": "); }

}  // namespace ember

// Ops that exist for graphs: Placeholder (a function argument), Const (a value embedded in a graph),
// PartitionedCall (one function calling another) and the functional control-flow ops (If, While, Case and
// their stateless forms, ops/control_flow.cc), whose attributes name functions of the library. Their shape
// functions and kernels need the function library and executor, which live in higher layers; those install
// these hooks when first used.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/ops/execute.h"
#include "ember/ops/op_def.h"

namespace ember {

struct FunctionCallHooks {
  /// Output specs of calling function `name` with inputs of these specs.
  Status (*infer)(const std::string& name, std::span<const TensorSpec> inputs,
                  SmallVector<TensorSpec, 2>& outputs) = nullptr;
  /// Runs function `name` on concrete inputs.
  Status (*run)(const std::string& name, std::span<TensorImpl* const> inputs,
                std::span<TensorRef> outputs) = nullptr;
  /// Looks function `name` up once for many calls (a loop body): an opaque handle for run_resolved, or an
  /// error naming the function.
  StatusOr<std::shared_ptr<const void>> (*resolve)(const std::string& name) = nullptr;
  Status (*run_resolved)(const void* function, std::span<TensorImpl* const> inputs,
                         SmallVector<TensorRef, 2>& outputs) = nullptr;
  /// One function for a loop iteration after the first: body, then the condition on the body's results;
  /// it returns the body's results (the new loop variables first) followed by the condition's value (Note
  /// [Loop steps] in executor.cc).
  StatusOr<std::shared_ptr<const void>> (*resolve_loop_step)(const std::string& cond,
                                                             const std::string& body) = nullptr;
  /// As run_resolved, taking the caller's references to the inputs (they are null afterwards): an input
  /// that nothing else holds may then be written over inside the function (a loop's carried TensorArray,
  /// Note [Loop variables handed to the body] in control_flow.cc). `destinations` (one per result, or
  /// fewer; null entries for none) are tensors the function may write results into instead of new ones: a
  /// result whose producer writes preallocated outputs of that dtype and shape is written there (a loop's
  /// stack rows, Note [Stacking in place] in control_flow.cc); any other result comes back as usual.
  Status (*run_resolved_owned)(const void* function, std::span<TensorRef> inputs,
                               SmallVector<TensorRef, 2>& outputs,
                               std::span<const TensorRef> destinations) = nullptr;
};
void set_function_call_hooks(FunctionCallHooks hooks);
const FunctionCallHooks& function_call_hooks();

/// The library functions a node of `op` with `attrs` calls: PartitionedCall's f, If's branches, While's cond
/// and body, Case's branches (empty for every other op). Whoever walks a graph into its callees (automatic
/// control dependencies, variable collection, GraphDef export) goes through this one list.
std::vector<std::string> called_functions(const OpDef& op, std::span<const AttrValue> attrs);

/// Whether `op` calls library functions (called_functions is non-empty for its nodes).
bool calls_functions(const OpDef& op);

/// A cap on the iterations of one While (0, the default: none). A valid program may loop for ever, as in
/// TensorFlow; fuzzers, which build such programs, set a cap so a loop ends as ResourceExhausted.
void set_max_loop_iterations(int64_t iterations);
int64_t max_loop_iterations();

/// The attributes of a Placeholder node standing for a value of `dtype` and `shape` (an unknown rank
/// included): what tracing, the optimizer and the loop runtime give every argument node they add.
AttrList placeholder_attrs(DType dtype, const Shape& shape);

/// Case's branch names are one attribute, joined by commas (library names never hold one).
std::vector<std::string> split_branch_names(const std::string& joined);

}  // namespace ember

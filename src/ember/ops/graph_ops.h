// Ops that exist for graphs: Placeholder (a function argument), Const (a value embedded in a graph) and
// PartitionedCall (one function calling another). PartitionedCall's shape function and kernel need the
// function library and executor, which live in higher layers; they install these hooks when first used.
#pragma once

#include <string>

#include "ember/ops/op_def.h"

namespace ember {

struct FunctionCallHooks {
  /// Output specs of calling function `name` with inputs of these specs.
  Status (*infer)(const std::string& name, std::span<const TensorSpec> inputs,
                  SmallVector<TensorSpec, 2>& outputs) = nullptr;
  /// Runs function `name` on concrete inputs.
  Status (*run)(const std::string& name, std::span<TensorImpl* const> inputs,
                std::span<TensorRef> outputs) = nullptr;
};
void set_function_call_hooks(FunctionCallHooks hooks);

}  // namespace ember

// Runs function graphs. This is the straightforward executor of the graph-functions milestone: nodes run
// in topological order on the calling thread, after pruning what neither a result nor a control output
// needs. The optimizing, parallel runtime (architecture.md §6) replaces it behind the same interface.
#pragma once

#include <memory>

#include "ember/graph/graph.h"

namespace ember {

/// A function graph ready to run: the graph plus the order of the nodes a call must execute.
class CompiledFunction {
 public:
  explicit CompiledFunction(std::shared_ptr<const FunctionGraph> fn);

  const FunctionGraph& function() const { return *fn_; }
  std::shared_ptr<const FunctionGraph> shared_function() const { return fn_; }
  /// Runs with the user arguments (captured values are appended here). Fails naming the node, its op and
  /// the user's source line.
  Status run(std::span<TensorImpl* const> args, OutputList& results) const;

 private:
  std::shared_ptr<const FunctionGraph> fn_;
  std::vector<int32_t> order_;  // nodes to execute, topologically ordered
};

/// Carves a new function out of `fn`: `inputs` become its arguments (any tensors of the graph, fed by the
/// caller) and `outputs` its results; only what the outputs need remains (TensorFlow's prune /
/// NewGraphFunction). Names are tensor names ("Square:0").
StatusOr<std::shared_ptr<FunctionGraph>> prune_function(const FunctionGraph& fn,
                                                        const std::vector<std::string>& inputs,
                                                        const std::vector<std::string>& outputs);

/// Makes PartitionedCall nodes runnable (idempotent; called by everything that creates functions).
void install_function_runtime();

}  // namespace ember

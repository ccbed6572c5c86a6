// Runs function graphs (architecture.md §6). A CompiledFunction optimizes its traced graph once
// (passes/optimizer.h, with the options current at instantiation) and compiles the result into an
// execution plan: instructions in topological order with input slots, kernel pointers, release lists,
// successor lists and pending counts. Small plans run inline on the caller's thread with no atomics;
// plans with enough independent work run their nodes concurrently on the inter-op threads.
#pragma once

#include <memory>
#include <vector>

#include "ember/graph/graph.h"
#include "ember/passes/pass.h"

namespace ember {

class ExecPlan;

/// A function graph ready to run.
class CompiledFunction {
 public:
  /// Optimizes with the process-wide options (ember.config.optimizer).
  explicit CompiledFunction(std::shared_ptr<const FunctionGraph> fn);
  CompiledFunction(std::shared_ptr<const FunctionGraph> fn, const passes::OptimizerOptions& options);
  /// `partition`: whether to place the nodes and, when they use several devices, cut the function into
  /// one partition per device that run concurrently (runtime/partition.h). False runs it all here.
  CompiledFunction(std::shared_ptr<const FunctionGraph> fn, const passes::OptimizerOptions& options,
                   bool partition);
  ~CompiledFunction();
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  /// The traced graph (what autodiff and the graph API read).
  const FunctionGraph& function() const { return *fn_; }
  const std::shared_ptr<const FunctionGraph>& shared_function() const { return fn_; }
  /// The graph the plan runs.
  const FunctionGraph& optimized_function() const { return *optimized_; }
  /// Whether calls run independent nodes concurrently (decided from the plan's estimated costs, or
  /// several devices' partitions).
  bool runs_in_parallel() const;
  /// The partitions' functions, one per device (empty for a function placed on one device).
  std::vector<std::shared_ptr<const FunctionGraph>> partitions() const;
  /// Nodes that may write their result over an input that dies there (memory_optimization).
  int in_place_candidates() const;
  /// The arena of the memory plan (0 when nothing is planned) and how many values live in it.
  int64_t arena_bytes() const;
  int32_t arena_slots() const;

  /// Runs with the user arguments (captured values are appended here). Fails naming the node, its op and
  /// the user's source line, or with the internal error of an optimizer pass that broke the graph.
  Status run(std::span<TensorImpl* const> args, OutputList& results) const;
  /// run, taking over the references in `owned` (one per argument) instead of adding its own, so that an
  /// argument nothing else holds may be written over in place. A result whose producer writes
  /// preallocated outputs is written into `destinations[i]` (when given, of its dtype and static shape)
  /// instead of a new tensor, and returned as that tensor.
  Status run_owned(std::span<TensorRef> owned, OutputList& results,
                   std::span<const TensorRef> destinations = {}) const;

 private:
  struct MultiDevice;
  struct Specializations;
  Status run_multi_device(std::span<TensorImpl* const> args, OutputList& results) const;
  // The plan specialized for these arguments' shapes, if there is (or now is) one (Note [Shape
  // specialization] in executor.cc).
  const CompiledFunction* specialized_for(std::span<TensorImpl* const> args) const;

  std::shared_ptr<const FunctionGraph> fn_;
  std::shared_ptr<const FunctionGraph> optimized_;
  std::unique_ptr<ExecPlan> plan_;
  Status status_;                                     // not OK when optimization failed
  std::unique_ptr<MultiDevice> multi_;                // set when the nodes sit on several devices
  std::unique_ptr<Specializations> specializations_;  // set when an argument has unknown dims
  passes::OptimizerOptions options_;
  bool on_other_device_ = false;  // every node on one device other than CPU:0: `device_`
  Device device_;
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

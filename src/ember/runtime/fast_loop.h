// Fast loops (Note [Fast loops] in fast_loop.cc): a While whose step, once optimized, is nothing but
// stateless element-wise ops (fused groups included) on small values of fixed shapes runs all its
// iterations in one loop over those ops' kernels, with every value in a buffer allocated once per loop,
// instead of one plan run per iteration.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ember/graph/graph.h"
#include "ember/jit/native_loop.h"
#include "ember/kernels/elementwise.h"
#include "ember/ops/loop_fast_path.h"

namespace ember {

class FastLoop {
 public:
  /// Values of at most this many elements qualify (the step is latency-bound below it).
  static constexpr int64_t kMaxElements = 64;

  /// The fast form of an optimized loop step (loop variables in, the new loop variables and then the
  /// condition out), or null when some node or value does not qualify. A step whose every node is an
  /// element-wise table row or a fused program also asks the JIT for its native loop (Note [Fast loops]).
  static std::shared_ptr<const FastLoop> build(const FunctionGraph& step);

  /// Runs iterations from `vars` as FastLoopRunner describes: natively once the JIT has compiled the
  /// loop, else on the node loop.
  FastLoopProgress run(std::span<TensorRef> vars, int64_t max_iterations) const;

  /// How many nodes one iteration runs.
  int num_kernels() const { return static_cast<int>(nodes_.size()); }
  /// Iterations run on fast paths in this process (tests check that a loop took one), and those of them
  /// run by native loops.
  static int64_t iterations_run();
  static int64_t native_iterations_run();
  /// Whether the JIT was asked for this loop's native code (the step qualifies).
  bool wants_native() const { return native_ != nullptr; }

 private:
  // Where a value comes from: a loop variable, a fixed tensor (a constant or a captured value), or output
  // `output` of node `node` (an index into nodes_).
  struct Value {
    int32_t var = -1;
    TensorImpl* fixed = nullptr;
    int32_t node = -1, output = 0;
  };
  struct StepNode {
    const Node* node = nullptr;
    KernelFn kernel = nullptr;
    std::shared_ptr<const void> prepared;
    // A row of the element-wise tables whose kernel would hand its operands whole to one loop: that loop,
    // called directly (Note [Fast loops]).
    kernels::UnaryLoop unary = nullptr;
    kernels::BinaryLoop binary = nullptr;
    bool fused = false;  // a prepared FusedElementwise: its native kernel is called directly once compiled
    std::vector<int32_t> inputs;  // value ids
    int32_t first_value = 0;      // the value id of output 0
  };

  // The loop as the JIT compiles it (jit/native_loop.h), or none when a node runs a generic kernel.
  std::optional<jit::LoopProgram> native_program(std::vector<const void*>& fixed_data) const;
  FastLoopProgress run_native(std::span<TensorRef> vars, int64_t max_iterations) const;

  const FunctionGraph* step_ = nullptr;
  std::vector<Value> values_;
  std::vector<StepNode> nodes_;
  std::vector<int32_t> next_vars_;  // per loop variable: the value id of its next value
  int32_t condition_ = -1;          // the value id of the condition
  std::vector<TensorSpec> var_specs_;
  std::vector<TensorRef> fixed_;  // keeps the fixed tensors alive
  std::shared_ptr<jit::NativeLoopSlot> native_;
  std::vector<const void*> native_fixed_;  // the native loop's fixed values, in its order
};

}  // namespace ember

// The gradient pair of a graph function (function_gradient.cc): its forward-with-intermediates function
// and its backward functions. Shared with control_flow_gradient.cc, which differentiates If, Case and While
// through the pairs of their branches and loop bodies.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/autodiff/tape_internal.h"
#include "ember/graph/graph.h"
#include "ember/trace/trace_context.h"

namespace ember::autodiff::internal {

// One backward function of a pair: its graph, the forward intermediates it reads (positions among the
// pair's intermediates) and which of its results is the gradient of each edge.
struct BackwardFunction {
  std::shared_ptr<FunctionGraph> graph;
  std::string name;
  std::vector<int> reads;        // intermediates passed after the gradient arguments
  std::vector<int> edge_result;  // per edge: index of B's result, or -1 (unconnected)
};

// The forward values some backward function reads, keyed by their place in the forward graph (a replay of
// the same function builds the same graph, so keys from a later replay name the same values). A Shape the
// backward asked for is added to the forward graph after the replayed nodes (Note [Shapes of enclosing
// values] in trace/trace_context.cc), in whatever order a backward needs them, so it is keyed by what it
// reads: the value and the dtype it is computed in.
struct Intermediates {
  std::vector<TensorRef> tensors;
  std::vector<std::pair<int32_t, int32_t>> keys;

  static std::pair<int32_t, int32_t> key_of(const TensorRef& t) {
    const auto* fn = static_cast<const FunctionGraph*>(t->graph());
    const Node& n = fn->graph.node(t->graph_node());
    if (n.op->name == "Shape" && n.inputs.size() == 1) {
      const ValueRef in = n.inputs[0];
      const auto out_type = static_cast<int32_t>(std::get<DType>(n.attrs[0]));
      return {-2 - in.node, in.output * 256 + out_type};
    }
    return {t->graph_node(), t->graph_output()};
  }

  // The position of `t`; a new one is appended only when `may_add`, else -1.
  int index(const TensorRef& t, bool may_add) {
    std::pair<int32_t, int32_t> key = key_of(t);
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return static_cast<int>(i);
    if (!may_add) return -1;
    keys.push_back(key);
    tensors.push_back(t);
    return static_cast<int>(tensors.size() - 1);
  }
};

// Which output gradients a backward function takes: one flag per forward output (results, then
// intermediates); an output without a gradient gets no backward ops at all (as in TensorFlow), so an
// unused output whose gradient rule is infinite at its value (sqrt at 0) cannot poison the others.
using OutputMask = std::vector<bool>;

// Leaves whatever trace was active on this thread for the build and comes back to it after.
struct TracePause {
  TraceContext* token = TraceContext::pause();
  ~TracePause() { TraceContext::resume(token); }
};

struct GradientPair final : Backward {
  std::weak_ptr<const FunctionGraph> function;  // F, to replay for backward functions built later
  std::string function_name;                    // F's, for errors
  std::string needs;                            // which of F's arguments need gradients
  std::shared_ptr<FunctionGraph> forward;
  std::string forward_name;
  size_t num_results = 0;
  std::vector<bool> output_differentiable;  // per forward output: results, then intermediates
  std::vector<int> edge_inputs;             // call argument of each input edge
  std::vector<int64_t> edge_variables;      // variable of each variable edge (after the input edges)
  Intermediates intermediates;

  std::mutex mu;
  // By mask of the outputs whose gradients arrived; null where a replay could not build one (the
  // all-outputs function then runs with zeros for the missing gradients).
  std::map<OutputMask, std::shared_ptr<const BackwardFunction>> by_mask;
  std::shared_ptr<const BackwardFunction> all_results, all_outputs;
  static constexpr size_t kMaxMasks = 64;

  // The backward function for `mask`: built on first use by replaying F once more.
  std::shared_ptr<const BackwardFunction> backward_for(const OutputMask& mask);
  // backward_for's function, or the all-results / all-outputs one where it cannot be built; `mask` is
  // updated to the outputs the returned function takes.
  std::shared_ptr<const BackwardFunction> backward_or_fallback(OutputMask& mask);
  std::shared_ptr<const BackwardFunction> build_variant(const OutputMask& mask);

  void backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                SmallVector<TensorRef, 4>& edge_grads) override;
  std::string describe() const override { return "the gradient function of '" + function_name + "'"; }
};

/// Builds F's pair for the arguments flagged '1' in `needs`. Pauses tapes and traces while it builds.
StatusOr<std::shared_ptr<GradientPair>> build_pair(const std::shared_ptr<const FunctionGraph>& fn,
                                                   const std::string& needs);

/// Appends `t`'s spec to `node`'s edge specs, against which backprop checks the gradient of that edge.
inline void add_edge_spec(TapeNode* node, const TensorImpl* t) {
  node->edge_specs.push_back(TensorSpec{t->dtype(), t->shape()});
}

/// Which call arguments need gradients ('1' per argument): differentiable ones some recording tape watches
/// (their tapes' bits are added to `mask`).
std::string needs_of(std::span<TensorImpl* const> inputs, uint32_t active, uint32_t& mask);

/// Which recording tapes watch each of `variables` (their bits are added to `mask`).
std::unordered_map<int64_t, uint32_t> masks_of_variables(const std::vector<int64_t>& variables,
                                                         uint32_t& mask);

/// tf.gradients through call `node` of `caller`, a node traced while nothing recorded: rewrites it to call
/// the forward function of its callee's pair and records it on the recording tapes (Note [Differentiating a
/// call already traced] in function_gradient.cc). Returns the call's results linked to the recorded node.
StatusOr<OutputList> record_traced_call(FunctionGraph& caller, int32_t node,
                                        std::span<TensorImpl* const> inputs);

/// tf.gradients through If, Case or While `node` of `caller`, traced while nothing recorded: rewritten in
/// place to run its forward branches (forward loop) and recorded, as record_traced_call does for a call
/// (control_flow_gradient.cc). The effects of its functions then still happen once.
StatusOr<OutputList> record_traced_control_flow(FunctionGraph& caller, int32_t node,
                                                std::span<TensorImpl* const> inputs);

/// Appends the variables F reads, or any function it calls reads (each once).
void collect_variables(const FunctionGraph& fn, std::vector<int64_t>& out, int depth);

}  // namespace ember::autodiff::internal

// Graph optimization passes (architecture.md §5): each rewrites a FunctionGraph in place, is its own tested
// unit, and can be switched off through OptimizerOptions (Python: ember.config.optimizer). The driver
// (optimizer.h) runs them when a concrete function is instantiated.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ember/graph/graph.h"

namespace ember::passes {

/// Which passes run. The names are TensorFlow's `tf.config.optimizer` keys where TensorFlow has one.
struct OptimizerOptions {
  bool pruning = true;                      // TF: disable_model_pruning (inverted)
  bool common_subgraph_elimination = true;  // CSE of stateless nodes
  bool constant_folding = true;             // TF: constant_folding
  bool arithmetic_optimization = true;      // TF: arithmetic_optimization (x*1, x+0, double transpose, ...)
  bool function_inlining = true;            // TF: function_optimization
  bool elementwise_fusion = true;           // chains and DAGs of element-wise ops become one tiled kernel
  bool sibling_matmul_merging = true;       // narrow products sharing a left operand become one
  bool loop_optimization = true;            // TF: loop_optimization (loop-invariant code leaves While bodies)
  bool remapping = true;                    // TF: remapping (Conv2D/MatMul + bias + activation: one op)
  bool memory_optimization = true;          // TF: memory_optimization (buffer reuse, in-place writes)
  bool disable_meta_optimizer = false;      // TF: turns every pass off
  int64_t constant_folding_max_bytes = 10 << 20;  // folded results larger than this stay computed
  int max_rounds = 4;                             // the driver's fixed-point bound

  bool enabled(bool pass_flag) const { return pass_flag && !disable_meta_optimizer; }
};

/// The process-wide options new function instantiations read (thread-safe copies).
OptimizerOptions optimizer_options();
void set_optimizer_options(const OptimizerOptions& options);

/// What a node a pass adds takes from the node it replaces or derives from: the user's source line (for
/// errors) and the device asked for and assigned, so that a rewrite never moves work off a device.
struct NodeOrigin {
  SourceLocation location;
  std::string requested_device, assigned_device;

  /// All of `n`'s (a copy: `n` may sit in the node array that adding a node reallocates).
  static NodeOrigin of(const Node& n) { return {n.location, n.requested_device, n.assigned_device}; }
  /// A node of a callee's body copied into the caller (an inlined call, a node hoisted out of a loop
  /// body): it keeps a device asked for in the body, else runs where `call` was asked to (TensorFlow's
  /// rule), and is assigned where `call` is.
  static NodeOrigin inlined(const Node& inner, const Node& call) {
    return {inner.location, inner.requested_device.empty() ? call.requested_device : inner.requested_device,
            call.assigned_device};
  }
};

/// Whether `a` and `b` were asked to run, and run, on the same device: a pass joins nodes into one only
/// then, since the joined node has one device.
inline bool same_device(const Node& a, const Node& b) {
  return a.requested_device == b.requested_device && a.assigned_device == b.assigned_device;
}

/// Edits a FunctionGraph: passes mutate nodes in place, forward values and append nodes, then `finish()`
/// applies the forwarding, drops what no result, control output or stateful node needs (when pruning),
/// and re-sorts the graph topologically, so an appended node may replace an earlier one.
class GraphEditor {
 public:
  explicit GraphEditor(FunctionGraph& fn) : fn_(fn) {}

  FunctionGraph& function() { return fn_; }
  Graph& graph() { return fn_.graph; }

  /// Every data use of `from` (node inputs, function results) reads `to` instead once finish() runs;
  /// `resolve` follows the forwarding already recorded. Control edges on from's node stay.
  void forward(ValueRef from, ValueRef to);
  ValueRef resolve(ValueRef v) const;
  bool forwarded(ValueRef v) const { return resolve(v) != v; }
  /// Replaces node `from` by node `to` (same outputs): data uses and control edges move to `to`, and
  /// `from` is removed even when pruning is off.
  void replace_node(int32_t from, int32_t to);
  /// Removes `node` (its outputs must be forwarded and control edges on it redirected by the caller).
  void remove_node(int32_t node) { removed_nodes_.push_back(node); }

  /// Appends a node (its inputs are resolved first) with `origin`'s source line and devices.
  int32_t add_node(const OpDef& op, std::span<const ValueRef> inputs, AttrList attrs,
                   SmallVector<TensorSpec, 2> outputs, NodeOrigin origin, std::string_view name = {});

  /// Appends a Const node holding `values` as an int64 tensor of `shape` (a shape-like operand).
  StatusOr<ValueRef> add_int_constant(std::span<const int64_t> values, const Shape& shape, NodeOrigin origin);

  /// For each value, the nodes that read it (data inputs), after resolving; rebuilt on each call.
  std::vector<std::vector<int32_t>> consumers_by_node() const;

  /// Applies the edits. With `prune`, nodes that feed no result, control output or stateful node are
  /// removed (arguments always stay). Fails with an internal error when the edits made a cycle; the
  /// function is then left half-edited and must be discarded.
  Status finish(bool prune);

 private:
  FunctionGraph& fn_;
  std::unordered_map<int64_t, ValueRef> forward_;
  std::unordered_map<int32_t, int32_t> replaced_nodes_;
  std::vector<int32_t> removed_nodes_;
};

/// The passes. Each returns the number of rewrites it made (0: nothing to do), or an internal error when
/// its edits broke the graph (a bug; the function must then be discarded).
StatusOr<int> prune(FunctionGraph& fn);
StatusOr<int> eliminate_common_subgraphs(FunctionGraph& fn);
StatusOr<int> fold_constants(FunctionGraph& fn, int64_t max_bytes);
StatusOr<int> simplify_arithmetic(FunctionGraph& fn);
StatusOr<int> inline_function_calls(FunctionGraph& fn);
StatusOr<int> fuse_elementwise(FunctionGraph& fn);
StatusOr<int> merge_sibling_matmuls(FunctionGraph& fn);
/// Conv2D/Conv3D -> bias add [-> activation] chains become _FusedConv2D/_FusedConv3D nodes (Note [Matching a
/// conv chain] in fuse_conv.cc). Counts the chains fused.
StatusOr<int> fuse_conv(FunctionGraph& fn);
/// MatMul -> bias add [-> activation] chains become _FusedMatMul nodes (Note [Matching a MatMul chain] in
/// fuse_matmul.cc). Counts the chains fused.
StatusOr<int> fuse_matmul(FunctionGraph& fn);
/// FusedBatchNormV3 -> Relu becomes _FusedBatchNormEx, FusedBatchNormGradV3(ReluGrad(dy, v), ...)
/// _FusedBatchNormGradEx (Note [Matching a batch norm and its Relu] in fuse_batch_norm.cc). Counts both.
StatusOr<int> fuse_batch_norm(FunctionGraph& fn);
/// SelectV2(Greater(x, 0), dy, 0) becomes ReluGrad(dy, x) (Note [Relu gradients as ReluGrad] in
/// fuse_conv.cc). Counts the selects rewritten.
StatusOr<int> remap_relu_gradients(FunctionGraph& fn);
/// If/Case nodes with a Const predicate or index become a PartitionedCall of the branch taken.
StatusOr<int> fold_constant_predicates(FunctionGraph& fn);
/// Moves what While bodies compute from loop-invariant values into the caller (Note [Hoisting out of a
/// loop] in control_flow.cc). Counts the nodes moved.
StatusOr<int> hoist_loop_invariants(FunctionGraph& fn);
/// Sorts the graph so that nodes flagged kScheduleEarly come right after the nodes they need
/// (schedule.cc). Returns 0: it reorders, it does not rewrite.
StatusOr<int> schedule_early_nodes(FunctionGraph& fn);

}  // namespace ember::passes

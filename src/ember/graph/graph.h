// The graph IR: a flat array of nodes in topological order (a node's inputs always come earlier), each
// an op from the registry with attributes, data inputs as (node, output), control inputs, the inferred
// spec of each output and the user's source location. A FunctionGraph adds named, typed arguments
// (Placeholder nodes) and results; the FunctionLibrary names functions so a Call node can run another.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/ops/execute.h"
#include "ember/ops/op_def.h"

namespace ember {

struct SourceLocation {
  std::string file;
  int line = 0;
  std::string function;
  bool known() const { return line > 0; }
  /// "model.py:42" (or "" when unknown).
  std::string to_string() const;
};

struct ValueRef {
  int32_t node = -1;
  int32_t output = 0;
  bool operator==(const ValueRef&) const = default;
};

struct Node {
  const OpDef* op = nullptr;
  std::string name;  // unique in its graph: "Square", "Square_1"
  SmallVector<ValueRef, 4> inputs;
  std::vector<int32_t> control_inputs;
  AttrList attrs;
  SmallVector<TensorSpec, 2> outputs;
  SourceLocation location;
  // The device the user asked for (a tf.device scope while tracing, NodeDef.device on import), as a
  // canonical partial name ("/device:CPU:1"); empty when none. The placer (runtime/placer.h) decides
  // `assigned_device` (a full name) when a function is instantiated; GraphDef export writes it if set.
  std::string requested_device;
  std::string assigned_device;
};

class Graph {
 public:
  /// Appends a node; inputs must refer to existing nodes. `name` is made unique ("Square" → "Square_1").
  int32_t add_node(const OpDef& op, std::span<const ValueRef> inputs, AttrList attrs,
                   SmallVector<TensorSpec, 2> outputs, SourceLocation location, std::string_view name = {});
  void add_control_input(int32_t node, int32_t dependency);

  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  const Node& node(int32_t i) const { return nodes_[i]; }
  Node& mutable_node(int32_t i) { return nodes_[i]; }
  const TensorSpec& spec(ValueRef v) const { return nodes_[v.node].outputs[v.output]; }
  /// The node named `name`, or -1.
  int32_t find(std::string_view name) const;
  /// Parses "Square:0" (or "Square", meaning output 0) into a ValueRef; fails naming what is missing.
  StatusOr<ValueRef> parse_tensor_name(std::string_view tensor_name) const;
  /// "Square:0".
  std::string tensor_name(ValueRef v) const;

  /// A readable listing, one node a line:
  ///   %2 = Square(%1:0) {T=float32} -> [2]:float32   # model.py:3
  std::string to_text() const;

 private:
  std::string unique_name(std::string_view base);
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::unordered_map<std::string, int32_t> name_counts_;
};

/// How a concrete value was computed while tracing: an op run at once because its operands were all
/// concrete (constant folding in TraceContext::intercept).
struct FoldRecord {
  const OpDef* op = nullptr;
  AttrList attrs;
  SmallVector<TensorRef, 4> inputs;
  SmallVector<TensorRef, 2> outputs;
};

/// A graph with arguments and results: what a traced function or a carved subgraph is.
struct FunctionGraph {
  std::string name;
  Graph graph;
  // Placeholder nodes in call order: the user's arguments, then `lifted_captures.size()` arguments that
  // receive tensors of the enclosing trace, then `captured_values.size()` that capture eager tensors.
  std::vector<int32_t> args;
  std::vector<ValueRef> results;
  std::vector<int32_t> control_outputs;    // stateful nodes that must run even if no result uses them
  std::vector<TensorRef> lifted_captures;  // symbolic tensors of the enclosing graph, passed by the caller
  std::vector<TensorRef> captured_values;  // eager values appended to every call
  // Functions this one calls (PartitionedCall nodes name them), kept alive as long as this one is.
  std::vector<std::shared_ptr<const FunctionGraph>> callees;
  // A custom gradient used in the body while no tape recorded: the nodes [first_node, end_node) are what
  // the decorated function traced. To differentiate the function, autodiff replays the body and, at this
  // region, calls `replay` on the region's inputs instead — it reruns the decorated function while the
  // replay's tape records, so its gradient function is recorded with values of the replay.
  struct CustomGradientRegion {
    int32_t first_node = 0, end_node = 0;
    std::vector<ValueRef> inputs, outputs;
    std::string name;  // the decorated function, for errors
    std::function<StatusOr<std::vector<TensorRef>>(std::span<TensorImpl* const>)> replay;
  };
  std::vector<CustomGradientRegion> custom_gradient_regions;
  // The folds (by each output) that computed a Const node's value from a concrete argument: a captured
  // value, or a concrete value of the enclosing trace lifted into a branch or body. Differentiating with
  // respect to that argument replays them on it (Note [Folded values of concrete arguments] in
  // trace/trace_context.cc). Empty for most functions.
  std::unordered_map<const TensorImpl*, std::shared_ptr<const FoldRecord>> folds;
  // Concrete values from outside that only folds read (no argument stands for them): a gradient with
  // respect to one adds it as an argument of the forward function.
  std::vector<TensorRef> fold_sources;

  /// Arguments a caller passes: the user's plus the lifted captures.
  int num_call_args() const { return static_cast<int>(args.size() - captured_values.size()); }
  int num_user_args() const { return num_call_args() - static_cast<int>(lifted_captures.size()); }
};

/// A process-wide registry of function graphs by name, so Call nodes can name their callee. It holds
/// them weakly: a function lives while its owner (a Python ConcreteFunction, a C++ ember::function, or a
/// function that calls it) does.
class FunctionLibrary {
 public:
  static FunctionLibrary& global();
  /// Adds `fn` under a unique name derived from fn->name and returns the name.
  std::string add(std::shared_ptr<const FunctionGraph> fn);
  std::shared_ptr<const FunctionGraph> find(const std::string& name) const;
  void remove(const std::string& name);

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::weak_ptr<const FunctionGraph>> functions_;
  int64_t counter_ = 0;
};

/// "MatMul: ..." becomes "MatMul (created at model.py:42): ...", so an error points at the user's line;
/// `node_name` is added when it differs from the op's name ("MatMul 'dense/MatMul' (created at ...)").
Status with_source_context(const OpDef& op, std::string_view node_name, const SourceLocation& location,
                           const Status& status);

/// "{transpose_a=false, axis=[0,1]}" for a node's attributes.
std::string format_attrs(const OpDef& op, const AttrList& attrs);

}  // namespace ember

// What the pattern-matching passes (remapping: fuse_conv.cc, fuse_matmul.cc, fuse_batch_norm.cc) ask of
// a graph before they rewrite it: which nodes read a value, whether a node is free of control edges,
// whether it is a function result, which activation may join a chain; and the rewrite of a contraction
// -> bias add -> activation chain into one fused node, which conv and MatMul fusion share.
#pragma once

#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "ember/graph/graph.h"

namespace ember::passes {

/// A floating Const (float16, bfloat16, float32, float64) holding one zero (a scalar, or any shape with one
/// element).
bool is_zero_constant(const Graph& g, ValueRef v);

/// Same dtype and one fully defined shape (nothing broadcasts between them).
bool fully_defined_same(const TensorSpec& a, const TensorSpec& b);

/// Who reads output 0 of each node ((reader, input index) pairs, one per read), which nodes have or are
/// control edges, and which output-0 values are function results. A snapshot: build it before editing.
class NodeUses {
 public:
  explicit NodeUses(const FunctionGraph& fn);
  const std::vector<std::pair<int32_t, int>>& readers(int32_t n) const { return readers_[n]; }
  /// No control inputs on the node and no node waits on it, so rewriting it loses no ordering.
  bool plain(int32_t n) const;
  bool is_result(int32_t n) const;
  /// The one node reading n's output 0 (several reads by that node count once), when n is no result.
  bool only_reader(int32_t n, int32_t* reader) const;

 private:
  const Graph& g_;
  std::vector<std::vector<std::pair<int32_t, int>>> readers_;
  std::vector<int32_t> control_source_, result_;
};

/// An activation that may be fused onto the op computing `pre` (a node's output 0): `node` reads `pre`
/// as its only data reader but for Greater(pre, 0)s and ReluGrad(dy, pre)s, which hold the same values
/// read from relu(pre) and are `moved_readers` ((node, input) pairs), allowed only when `node` is a Relu
/// (Note [Matching a conv chain] in fuse_conv.cc). `node` is -1 when there is none: `pre` is a result, has
/// another reader, or no reader named in `activations`.
struct FusibleActivation {
  int32_t node = -1;
  std::vector<std::pair<int32_t, int>> moved_readers;
};
FusibleActivation fusible_activation(const Graph& g, const NodeUses& uses, int32_t pre,
                                     std::span<const char* const> activations);

/// An element-wise expression of one value x written as several ops (tf.nn.silu's x * sigmoid(x),
/// tf.nn.gelu's chains): an op of operands, x itself, or a Const holding one number (within 1e-6 relative of
/// `value`). Mul, Add and AddV2 match their operands in either order; Add also matches AddV2.
struct Expr {
  enum Kind { kOp, kX, kConst } kind = kX;
  const char* op = nullptr;
  double value = 0;
  std::vector<Expr> operands;
};
Expr expr_x();
Expr expr_const(double value);
Expr expr_op(const char* op, std::vector<Expr> operands);

/// The node computing `e` of `pre` (a node's output 0) when the expression's ops read `pre` and each other
/// only: every reader of `pre` and of each inner node belongs to the expression, no inner node is a result,
/// none has control edges, and the result has `pre`'s dtype and shape. -1 otherwise. The root is looked for
/// among the nodes at most `e`'s depth below `pre`.
int32_t fusible_expression(const Graph& g, const NodeUses& uses, int32_t pre, const Expr& e);

/// A contraction (Conv2D, MatMul) -> bias add [-> residual add] [-> activation] chain that a remapping pass
/// fuses.
struct BiasChain {
  int32_t contraction = -1, bias_node = -1, activation = -1;  // activation -1: none
  int32_t residual_node = -1;  // an Add of the sum and `residual`, of the sum's shape; -1: none
  ValueRef bias, residual;
  std::string activation_name;  // the fused op's name of an expression activation ("" for a single op)
  std::vector<std::pair<int32_t, int>> moved_readers;  // from FusibleActivation
};

/// The activation's name ("" for none: its op, or activation_name) and LeakyRelu's alpha (0.2 otherwise).
std::string chain_activation(const Graph& g, const BiasChain& chain);
double chain_leakyrelu_alpha(const Graph& g, const BiasChain& chain);

/// Finds the chains `match` accepts (it sees the graph before any edit), then replaces each by one node
/// of `fused_op`: inputs the contraction's two, the bias and the residual if any, attributes `attrs(chain)`,
/// the contraction's location and devices. The readers of the chain's last node and the moved readers read
/// it; the replaced nodes are left for pruning. Returns the number of chains fused.
StatusOr<int> fuse_bias_chains(FunctionGraph& fn, const OpDef& fused_op,
                               const std::function<bool(int32_t, BiasChain*)>& match,
                               const std::function<AttrList(const BiasChain&)>& attrs);

}  // namespace ember::passes

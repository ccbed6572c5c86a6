// What the pattern-matching passes (remapping: fuse_conv.cc, fuse_batch_norm.cc) ask of a graph before
// they rewrite it: which nodes read a value, whether a node is free of control edges, whether it is a
// function result.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "ember/graph/graph.h"

namespace ember::passes {

/// A float32 or float64 Const holding one zero (a scalar, or any shape with one element).
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

}  // namespace ember::passes

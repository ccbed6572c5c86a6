// What the pattern-matching passes (remapping: fuse_conv.cc, fuse_batch_norm.cc) ask of a graph before
// they rewrite it: which nodes read a value, whether a node is free of control edges, whether it is a
// function result.
#pragma once

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

}  // namespace ember::passes

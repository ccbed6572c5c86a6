// Element-wise fusion (architecture.md §5, §6): maximal connected groups of element-wise nodes that share
// one output shape and dtype (the group's domain) become one FusedElementwise node, whose program computes
// every member tile by tile (kernels/fused_elementwise.h). Chains and DAGs both fuse (x * y + sin(x)), and
// a member's inputs from outside the group may broadcast to the domain.
//
// Note [Fusion must not create a cycle]
// Contracting a group into one node is legal only if the group is convex: no path leaves it and comes back
// in through a node outside it (a = exp(x); b = MatMul(a, w); c = a + b: fusing exp and add would make the
// fused node both feed and consume the MatMul). Groups grow in topological order, and before a node joins
// or two groups merge we check, by a backward search from the group's outside producers, that none of
// them is reachable from the group. Each group convex on its own does not suffice, though: with
// a1 -> b1 and b2 -> a2, where b1 and b2 meet only downstream (b1 -> b3 <- b2), groups {a1, a2} and
// {b1, b2, b3} are each convex, yet contracted they feed each other. So the contracted graph is checked
// as a whole, and groups on a cycle are dissolved until it is acyclic (drop_groups_on_cycles).
//
// Note [Absorbed reductions]
// A Sum, Mean, Prod, Max or Min of a group's value over the domain's trailing dims (every axis, the last
// one, ...) with constant axes joins the group, which becomes a FusedReduction node: the reduced value is
// then never written to memory (kernels/fused_elementwise.h, Note [Fused reductions]). reduce_sum(x * y + z)
// reads its three inputs once; a softmax's exp(x - max) both leaves the group (for the division) and is
// summed in the same pass. A group takes one reduction, the first in graph order; it may then be a single
// element-wise op (reduce_sum(x * y)). The reduction reads only the group and a Const, and nothing that
// reads the reduction can be in the group (its producer would have been reachable from the group when it
// joined), so the group stays convex; the contracted-graph check below counts the reduction as part of its
// group. Only groups of static shapes absorb one. EMBER_FUSE_REDUCTIONS=0 turns this off (benchmarks).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "ember/kernels/fused_elementwise.h"
#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;

int64_t value_key(ValueRef v) {
  return (static_cast<int64_t>(v.node) << 32) | static_cast<uint32_t>(v.output);
}

// Whether a node can be computed inside a fused program: an element-wise op with a tile function whose
// inputs and output share the dtype, with an output of known rank (unknown dims are resolved when the
// fused node runs: Note [Fusion over unknown dimensions] in kernels/fused_elementwise.cc), and no control
// edges (a fused node would have to carry them for every member).
bool fusible(const Graph& g, int32_t n, const std::vector<bool>& in_control_edge) {
  const Node& node = g.node(n);
  const OpDef& op = *node.op;
  if (!op.has_flag(kElementwise) || op.has_flag(kStateful) || in_control_edge[n]) return false;
  if (!node.control_inputs.empty() || node.outputs.size() != 1) return false;
  const TensorSpec& out = node.outputs[0];
  if (!out.shape.rank_known()) return false;
  for (ValueRef in : node.inputs)
    if (g.spec(in).dtype != out.dtype) return false;
  if (op.tile_unary >= 0)
    return node.inputs.size() == 1 && kernels::fusible_unary(static_cast<UnaryOp>(op.tile_unary), out.dtype);
  if (op.tile_binary >= 0)
    return node.inputs.size() == 2 &&
           kernels::fusible_binary(static_cast<BinaryOp>(op.tile_binary), out.dtype);
  return false;
}

// The reduction op of a Sum, Mean, Prod, Max or Min node, if it is one.
std::optional<kernels::ReduceOp> reduce_op_of(const Node& node) {
  static const std::pair<const char*, kernels::ReduceOp> kOps[] = {{"Sum", kernels::ReduceOp::kSum},
                                                                   {"Mean", kernels::ReduceOp::kMean},
                                                                   {"Prod", kernels::ReduceOp::kProd},
                                                                   {"Max", kernels::ReduceOp::kMax},
                                                                   {"Min", kernels::ReduceOp::kMin}};
  for (const auto& [name, op] : kOps)
    if (node.op->name == name) return op;
  return std::nullopt;
}

// How many trailing dims of a rank-`rank` value the Const axes `v` reduce, or 0 when they are not a
// constant naming exactly the last k >= 1 axes (each once).
int trailing_axes(const Graph& g, ValueRef v, int rank) {
  const Node& node = g.node(v.node);
  if (node.op->name != "Const" || node.attrs.empty() || !std::holds_alternative<TensorRef>(node.attrs[0]))
    return 0;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  if (t.rank() > 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) return 0;
  std::vector<int64_t> axes = PartialValue::from_tensor(t).values;
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return 0;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  const int k = static_cast<int>(axes.size());
  if (k == 0 || std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return 0;
  return axes.front() == rank - k ? k : 0;
}

class GroupBuilder {
 public:
  explicit GroupBuilder(const Graph& g) : g_(g), group_of_(g.num_nodes(), -1), visited_(g.num_nodes(), 0) {}

  int32_t group_of(int32_t n) const { return group_of_[n]; }
  const std::vector<std::vector<int32_t>>& groups() const { return groups_; }

  /// Adds reduction node r, which reads a value of group gid (Note [Absorbed reductions]).
  void absorb(int32_t gid, int32_t r) {
    group_of_[r] = gid;
    auto& members = groups_[gid];
    members.insert(std::upper_bound(members.begin(), members.end(), r), r);
  }

  /// Adds fusible node v: it joins a producer's group (then merges every other producer group it can) or
  /// starts its own.
  void add(int32_t v) {
    const TensorSpec& domain = g_.node(v).outputs[0];
    const bool dynamic = !domain.shape.fully_defined();
    std::vector<int32_t> candidates;
    for (ValueRef in : g_.node(v).inputs) {
      int32_t gid = group_of_[in.node];
      if (gid < 0 || std::find(candidates.begin(), candidates.end(), gid) != candidates.end()) continue;
      const Node& member = g_.node(groups_[gid].front());
      const TensorSpec& other = member.outputs[0];
      if (other.dtype == domain.dtype && other.shape == domain.shape && same_device(member, g_.node(v)) &&
          (!dynamic || keeps_the_groups_shape(v, gid)))
        candidates.push_back(gid);
    }
    // Two groups of unknown dims are not known to share one run-time shape: they are not merged.
    if (dynamic && candidates.size() > 1) candidates.resize(1);
    int32_t mine = -1;
    for (int32_t gid : candidates) {
      if (can_join(gid, v)) {
        mine = gid;
        break;
      }
    }
    if (mine < 0) {
      group_of_[v] = static_cast<int32_t>(groups_.size());
      groups_.push_back({v});
      return;
    }
    group_of_[v] = mine;
    groups_[mine].push_back(v);
    for (int32_t gid : candidates)
      if (gid != mine && stays_convex(mine, gid)) merge(mine, gid);
  }

 private:
  // Note [One run-time shape per group]
  // With unknown dims, equal specs do not mean equal shapes: min(a, b) and a - c are both [?,?] and may be
  // [4,2] and [4,4] when they run. A group's members must share one run-time shape (the fused program's
  // domain), so v joins group gid only if its result has the shape of its operand in the group: each
  // operand from outside the group is 1 (or absent) along every dim the domain does not know, so it cannot
  // widen the result. (With static specs, equal specs are equal shapes.)
  bool keeps_the_groups_shape(int32_t v, int32_t gid) const {
    const Shape& domain = g_.node(v).outputs[0].shape;
    for (ValueRef in : g_.node(v).inputs) {
      if (group_of_[in.node] == gid) continue;
      const Shape& s = g_.spec(in).shape;
      if (!s.rank_known() || s.rank() > domain.rank()) return false;
      for (int i = 0; i < s.rank(); ++i) {
        const int64_t d = domain.dim(domain.rank() - s.rank() + i);
        if (d < 0 && s.dim(i) != 1) return false;
      }
    }
    return true;
  }

  // v (later than every member of group gid) may join it unless one of v's producers outside the group is
  // reachable from the group: the group itself is already convex.
  bool can_join(int32_t gid, int32_t v) {
    std::vector<int32_t> starts;
    for (ValueRef in : g_.node(v).inputs)
      if (group_of_[in.node] != gid) starts.push_back(in.node);
    return !reaches_back(starts, gid, -1);
  }

  // Whether groups a and b together are convex: no producer outside them is reachable from them.
  bool stays_convex(int32_t a, int32_t b) {
    std::vector<int32_t> starts;
    for (int32_t gid : {a, b})
      for (int32_t m : groups_[gid]) {
        for (ValueRef in : g_.node(m).inputs)
          if (group_of_[in.node] != a && group_of_[in.node] != b) starts.push_back(in.node);
      }
    return !reaches_back(starts, a, b);
  }

  // A backward search from `starts` over data and control edges: does it reach a member of group a or b?
  // Nodes before the groups' first member cannot be reached from them, so the search stops there.
  bool reaches_back(const std::vector<int32_t>& starts, int32_t a, int32_t b) {
    int32_t first = groups_[a].front();
    if (b >= 0) first = std::min(first, groups_[b].front());
    ++stamp_;
    std::vector<int32_t> stack;
    for (int32_t s : starts) stack.push_back(s);
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      if (n < first || visited_[n] == stamp_) continue;
      visited_[n] = stamp_;
      if (group_of_[n] == a || (b >= 0 && group_of_[n] == b)) return true;
      for (ValueRef in : g_.node(n).inputs) stack.push_back(in.node);
      for (int32_t c : g_.node(n).control_inputs) stack.push_back(c);
    }
    return false;
  }

  void merge(int32_t into, int32_t from) {
    for (int32_t m : groups_[from]) group_of_[m] = into;
    auto& members = groups_[into];
    members.insert(members.end(), groups_[from].begin(), groups_[from].end());
    std::sort(members.begin(), members.end());
    groups_[from].clear();
  }

  const Graph& g_;
  std::vector<int32_t> group_of_;
  std::vector<std::vector<int32_t>> groups_;  // members in topological (index) order; emptied when merged
  std::vector<uint32_t> visited_;
  uint32_t stamp_ = 0;
};

// A reduction a group absorbs (Note [Absorbed reductions]): the node and the trailing dims it reduces.
struct Absorbed {
  int32_t node = -1;
  int dims = 0;
};

// Whether node r may join group gid as its reduction: a reduction of one of the group's values over its
// trailing dims with constant axes, in a dtype with a loop, the group's shapes all static.
int absorbable(const Graph& g, int32_t r, const GroupBuilder& groups,
               const std::vector<bool>& in_control_edge) {
  const Node& node = g.node(r);
  const auto op = reduce_op_of(node);
  if (!op || in_control_edge[r] || !node.control_inputs.empty() || node.inputs.size() != 2) return 0;
  const int32_t gid = groups.group_of(node.inputs[0].node);
  if (gid < 0 || !same_device(node, g.node(groups.groups()[gid].front()))) return 0;
  const TensorSpec& domain = g.spec(node.inputs[0]);
  if (!domain.shape.fully_defined() || domain.shape.rank() < 1 || domain.dtype == DType::kBool) return 0;
  if (kernels::reduce_tables().reduce[static_cast<int>(*op)][static_cast<int>(domain.dtype)].row == nullptr)
    return 0;
  for (int32_t m : groups.groups()[gid])
    for (ValueRef in : g.node(m).inputs)
      if (!g.spec(in).shape.fully_defined()) return 0;
  return trailing_axes(g, node.inputs[1], domain.shape.rank());
}

// Replaces one group by a FusedElementwise node (a FusedReduction one with an absorbed reduction): outside
// values the members read become its inputs, and every member value read outside the group (or returned)
// becomes one of its outputs, followed by the reduction's.
void fuse_group(GraphEditor& editor, const std::vector<int32_t>& members, int32_t gid, Absorbed reduction,
                const GroupBuilder& groups, const std::vector<std::vector<int32_t>>& consumers,
                const std::vector<bool>& is_result) {
  const Graph& g = editor.graph();
  std::vector<ValueRef> inputs;
  std::unordered_map<int64_t, int64_t> id_of;  // value key -> program value id
  for (int32_t m : members) {
    if (m == reduction.node) continue;  // its axes are a constant of the node
    for (ValueRef in : g.node(m).inputs)
      if (groups.group_of(in.node) != gid &&
          id_of.emplace(value_key(in), static_cast<int64_t>(inputs.size())).second)
        inputs.push_back(in);
  }

  const int num_inputs = static_cast<int>(inputs.size());
  std::vector<int64_t> code, results;
  std::vector<int32_t> escaping;  // members whose value leaves the group, in output order
  for (int32_t m : members) {
    if (m == reduction.node) continue;
    const Node& node = g.node(m);
    int64_t a = id_of.at(value_key(node.inputs[0]));
    int64_t id = node.op->tile_unary >= 0
                     ? kernels::append_unary(code, num_inputs, static_cast<UnaryOp>(node.op->tile_unary), a)
                     : kernels::append_binary(code, num_inputs, static_cast<BinaryOp>(node.op->tile_binary),
                                              a, id_of.at(value_key(node.inputs[1])));
    id_of[value_key(ValueRef{m, 0})] = id;
    bool used_outside = is_result[m];
    for (int32_t c : consumers[m]) used_outside |= groups.group_of(c) != gid;
    if (used_outside) {
      results.push_back(id);
      escaping.push_back(m);
    }
  }

  const Node& last = g.node(members.back());
  const TensorSpec domain = reduction.node >= 0 ? g.spec(g.node(reduction.node).inputs[0]) : last.outputs[0];
  AttrList attrs;
  attrs.push_back(std::move(code));
  attrs.push_back(std::move(results));
  attrs.push_back(domain.shape.dim_vector());
  SmallVector<TensorSpec, 2> outputs;
  for (size_t k = 0; k < escaping.size(); ++k) outputs.push_back(domain);
  if (reduction.node >= 0) {
    const Node& r = g.node(reduction.node);
    attrs.push_back(std::vector<int64_t>{static_cast<int64_t>(*reduce_op_of(r)),
                                         id_of.at(value_key(r.inputs[0])), reduction.dims,
                                         r.attrs.empty() ? 0 : std::get<bool>(r.attrs[0])});
    outputs.push_back(r.outputs[0]);
  }
  std::string name = "fused/" + g.node(members.front()).op->name;
  NodeOrigin origin = NodeOrigin::of(last);
  int32_t fused = editor.add_node(op_def(reduction.node >= 0 ? "FusedReduction" : "FusedElementwise"), inputs,
                                  std::move(attrs), std::move(outputs), std::move(origin), name);
  for (size_t k = 0; k < escaping.size(); ++k)
    editor.forward(ValueRef{escaping[k], 0}, ValueRef{fused, static_cast<int32_t>(k)});
  if (reduction.node >= 0)
    editor.forward(ValueRef{reduction.node, 0}, ValueRef{fused, static_cast<int32_t>(escaping.size())});
}

// Contracts every fusing group to one vertex and dissolves groups that lie on a cycle of the contracted
// graph, one at a time (the latest first), until none does.
void drop_groups_on_cycles(const Graph& g, const GroupBuilder& groups, std::vector<bool>& fusing) {
  const int32_t n = g.num_nodes();
  for (;;) {
    // Vertex of each node: its group when the group fuses, else its own.
    std::vector<int32_t> vertex(n);
    for (int32_t i = 0; i < n; ++i) {
      int32_t gid = groups.group_of(i);
      vertex[i] = gid >= 0 && fusing[gid] ? n + gid : i;
    }
    const int32_t num_vertices = n + static_cast<int32_t>(fusing.size());
    std::vector<std::vector<int32_t>> successors(num_vertices);
    std::vector<int32_t> indegree(num_vertices, 0);
    auto add_edge = [&](int32_t from, int32_t to) {
      if (from == to) return;
      successors[from].push_back(to);
      ++indegree[to];
    };
    for (int32_t i = 0; i < n; ++i) {
      for (ValueRef in : g.node(i).inputs) add_edge(vertex[in.node], vertex[i]);
      for (int32_t c : g.node(i).control_inputs) add_edge(vertex[c], vertex[i]);
    }
    std::vector<bool> used(num_vertices, false);
    for (int32_t i = 0; i < n; ++i) used[vertex[i]] = true;
    std::vector<int32_t> ready;
    for (int32_t v = 0; v < num_vertices; ++v)
      if (used[v] && indegree[v] == 0) ready.push_back(v);
    std::vector<bool> done(num_vertices, false);
    while (!ready.empty()) {
      int32_t v = ready.back();
      ready.pop_back();
      done[v] = true;
      for (int32_t s : successors[v])
        if (--indegree[s] == 0) ready.push_back(s);
    }
    int32_t victim = -1;
    for (int32_t gid = static_cast<int32_t>(fusing.size()) - 1; gid >= 0 && victim < 0; --gid)
      if (fusing[gid] && !done[n + gid]) victim = gid;
    if (victim < 0) return;
    fusing[victim] = false;
  }
}

}  // namespace

StatusOr<int> fuse_elementwise(FunctionGraph& fn) {
  GraphEditor editor(fn);
  const Graph& g = fn.graph;
  const int32_t n = g.num_nodes();

  std::vector<bool> in_control_edge(n, false), is_result(n, false);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t c : g.node(i).control_inputs) in_control_edge[c] = true;
  for (int32_t c : fn.control_outputs) in_control_edge[c] = true;
  for (ValueRef r : fn.results) is_result[r.node] = true;

  GroupBuilder groups(g);
  for (int32_t v = 0; v < n; ++v)
    if (fusible(g, v, in_control_edge)) groups.add(v);

  // Each group absorbs its first reduction in graph order (Note [Absorbed reductions]).
  std::vector<Absorbed> reductions(groups.groups().size());
  const char* env = std::getenv("EMBER_FUSE_REDUCTIONS");
  if (env == nullptr || std::strcmp(env, "0") != 0) {
    for (int32_t r = 0; r < n; ++r) {
      if (groups.group_of(r) >= 0) continue;
      const int dims = absorbable(g, r, groups, in_control_edge);
      if (dims == 0) continue;
      const int32_t gid = groups.group_of(g.node(r).inputs[0].node);
      if (reductions[gid].node >= 0) continue;
      reductions[gid] = {r, dims};
      groups.absorb(gid, r);
    }
  }

  const auto consumers = editor.consumers_by_node();
  int fused = 0;
  const auto& all = groups.groups();
  std::vector<bool> fusing(all.size());
  for (size_t gid = 0; gid < all.size(); ++gid) fusing[gid] = all[gid].size() >= 2;
  drop_groups_on_cycles(g, groups, fusing);
  for (size_t gid = 0; gid < all.size(); ++gid) {
    if (!fusing[gid]) continue;
    fuse_group(editor, all[gid], static_cast<int32_t>(gid), reductions[gid], groups, consumers, is_result);
    ++fused;
  }
  if (fused > 0) EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return fused;
}

}  // namespace ember::passes

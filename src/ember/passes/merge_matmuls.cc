// Sibling MatMul merging: products that share their left operand, a @ w1, a @ w2, ..., become one product
// with the right operands side by side, a @ [w1 w2 ...], split afterwards. Narrow products (a network's
// heads of width 2) cost nearly as much as one of their combined width, so the split pays for itself
// there; wide ones are left alone.
//
// Note [Dependent siblings]
// The merged product waits for every sibling's right operand, and every sibling's consumers wait for the
// merged product. So when one sibling feeds another's right operand (x @ (x @ x); x @ w and
// x @ (w + f(x @ w)); v.assign(x @ a) then x @ v, ordered by a control edge), merging them would make the
// product wait for itself. A group only takes siblings that do not reach one another over data and
// control edges. Groups merged earlier in the same pass act as one node each (their members' consumers
// all wait for all their inputs), so reachability is searched with each earlier group contracted: two
// groups that are each fine alone can otherwise close a cycle between them.
#include <map>
#include <string>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {
constexpr int64_t kMaxMergedWidth = 32;  // the small-GEMM kernel's reach (kernels/small_gemm.h)

bool mergeable(const Graph& g, const Node& node) {
  if (node.op->name != "MatMul" || !node.control_inputs.empty()) return false;
  if (std::get<bool>(node.attrs[1])) return false;  // transpose_b: the columns are not side by side
  const Shape& b = g.spec(node.inputs[1]).shape;
  const Shape& out = node.outputs[0].shape;
  // A batched left operand is fine (the product's last dim is still the columns of b); a batched right
  // operand is not side by side with the others along one axis.
  return b.fully_defined() && out.fully_defined() && b.rank() == 2 && out.rank() >= 2 &&
         b.dim(1) < kMaxMergedWidth;
}

// Forward reachability over data and control edges, with the groups merged so far contracted
// (Note [Dependent siblings]).
class Reachability {
 public:
  explicit Reachability(const Graph& g) : consumers_(g.num_nodes()), group_of_(g.num_nodes(), -1) {
    for (int32_t n = 0; n < g.num_nodes(); ++n) {
      for (ValueRef in : g.node(n).inputs) consumers_[in.node].push_back(n);
      for (int32_t c : g.node(n).control_inputs) consumers_[c].push_back(n);
    }
  }

  /// Whether a path of at least one edge leads from any of `from` to any of `to`.
  bool reaches(const std::vector<int32_t>& from, const std::vector<int32_t>& to) {
    std::vector<uint8_t> target(consumers_.size(), 0), seen(consumers_.size(), 0);
    for (int32_t t : to) target[t] = 1;
    std::vector<int32_t> stack;
    auto visit = [&](int32_t n) {
      // Entering a contracted group enters all of it: its members' consumers wait for all its inputs.
      if (group_of_[n] < 0) {
        if (!seen[n]) seen[n] = 1, stack.push_back(n);
        return;
      }
      for (int32_t m : groups_[group_of_[n]])
        if (!seen[m]) seen[m] = 1, stack.push_back(m);
    };
    for (int32_t f : from)
      for (int32_t c : consumers_[f]) visit(c);
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      if (target[n]) return true;
      for (int32_t c : consumers_[n]) visit(c);
    }
    return false;
  }

  /// Records that `members` now run as one node.
  void contract(const std::vector<int32_t>& members) {
    for (int32_t m : members) group_of_[m] = static_cast<int32_t>(groups_.size());
    groups_.push_back(members);
  }

 private:
  std::vector<std::vector<int32_t>> consumers_;
  std::vector<int32_t> group_of_;
  std::vector<std::vector<int32_t>> groups_;
};
}  // namespace

StatusOr<int> merge_sibling_matmuls(FunctionGraph& fn) {
  static const OpDef& concat = op_def("ConcatV2");
  static const OpDef& matmul = op_def("MatMul");
  static const OpDef& split = op_def("SplitV");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  // Siblings: same left operand, transpose_a, dtype, output rank and devices (the merged product has one).
  std::map<std::tuple<int32_t, int32_t, bool, int, int, std::string, std::string>, std::vector<int32_t>>
      siblings;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    if (!mergeable(g, node)) continue;
    siblings[{node.inputs[0].node, node.inputs[0].output, std::get<bool>(node.attrs[0]),
              static_cast<int>(node.outputs[0].dtype), node.outputs[0].shape.rank(), node.requested_device,
              node.assigned_device}]
        .push_back(n);
  }
  int merged = 0;
  Reachability reach(g);
  for (auto& [key, group] : siblings) {
    if (group.size() < 2) continue;
    // Take siblings in order while the combined width stays narrow and none depends on another.
    std::vector<int32_t> members;
    int64_t width = 0;
    for (int32_t n : group) {
      int64_t w = g.spec(g.node(n).inputs[1]).shape.dim(1);
      if (width + w > kMaxMergedWidth) continue;
      if (!members.empty() && (reach.reaches({n}, members) || reach.reaches(members, {n}))) continue;
      members.push_back(n);
      width += w;
    }
    if (members.size() < 2) continue;
    reach.contract(members);
    const Node first = g.node(members.front());
    const NodeOrigin origin = NodeOrigin::of(first);  // the siblings share its devices
    SmallVector<ValueRef, 4> rights;
    std::vector<int64_t> widths;
    for (int32_t n : members) {
      rights.push_back(g.node(n).inputs[1]);
      widths.push_back(g.spec(g.node(n).inputs[1]).shape.dim(1));
    }
    const TensorSpec right = g.spec(rights[0]);  // a copy: adding nodes may move the specs
    // The weights join along their columns; ConcatV2's axis is its last input, a constant here.
    const int64_t columns[] = {1};
    auto concat_axis = editor.add_int_constant(columns, Shape(), origin);
    if (!concat_axis.ok()) return concat_axis.status();
    rights.push_back(*concat_axis);
    SmallVector<TensorSpec, 2> concat_spec;
    concat_spec.push_back(TensorSpec{right.dtype, Shape({right.shape.dim(0), width})});
    int32_t weights = editor.add_node(concat, {rights.data(), rights.size()}, AttrList{},
                                      std::move(concat_spec), origin, first.name + "/merged_weights");
    // The product keeps the siblings' batch dims and rows; only its columns widen.
    Shape out = first.outputs[0].shape;
    const int last = out.rank() - 1;
    out.set_dim(last, width);
    SmallVector<TensorSpec, 2> product_spec;
    product_spec.push_back(TensorSpec{first.outputs[0].dtype, out});
    ValueRef product_inputs[] = {first.inputs[0], ValueRef{weights, 0}};
    int32_t product = editor.add_node(matmul, product_inputs, first.attrs, std::move(product_spec), origin,
                                      first.name + "/merged");
    // SplitV's size_splits and axis are int operands: constants here.
    const int64_t axis_value[] = {last};
    auto sizes = editor.add_int_constant(widths, Shape{static_cast<int64_t>(widths.size())}, origin);
    auto axis = editor.add_int_constant(axis_value, Shape(), origin);
    if (!sizes.ok()) return sizes.status();
    if (!axis.ok()) return axis.status();
    SmallVector<TensorSpec, 2> split_specs;
    for (int32_t n : members) split_specs.push_back(g.node(n).outputs[0]);
    ValueRef split_input[] = {ValueRef{product, 0}, *sizes, *axis};
    int32_t parts = editor.add_node(split, split_input, AttrList{}, std::move(split_specs), origin,
                                    first.name + "/split");
    for (size_t k = 0; k < members.size(); ++k)
      editor.forward(ValueRef{members[k], 0}, ValueRef{parts, static_cast<int32_t>(k)});
    merged += static_cast<int>(members.size()) - 1;
  }
  // The replaced products are left for pruning.
  if (merged > 0) EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return merged;
}

}  // namespace ember::passes

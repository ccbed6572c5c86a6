#include <algorithm>
#include <mutex>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {
int64_t value_key(ValueRef v) {
  return (static_cast<int64_t>(v.node) << 32) | static_cast<uint32_t>(v.output);
}

std::mutex& options_mutex() {
  static std::mutex mu;
  return mu;
}
OptimizerOptions& stored_options() {
  static OptimizerOptions options;
  return options;
}
}  // namespace

OptimizerOptions optimizer_options() {
  std::lock_guard<std::mutex> lock(options_mutex());
  return stored_options();
}

void set_optimizer_options(const OptimizerOptions& options) {
  std::lock_guard<std::mutex> lock(options_mutex());
  stored_options() = options;
}

void GraphEditor::forward(ValueRef from, ValueRef to) {
  to = resolve(to);
  if (from == to) return;
  forward_[value_key(from)] = to;
}

void GraphEditor::replace_node(int32_t from, int32_t to) {
  for (int32_t k = 0; k < static_cast<int32_t>(fn_.graph.node(from).outputs.size()); ++k)
    forward(ValueRef{from, k}, ValueRef{to, k});
  replaced_nodes_[from] = to;
}

ValueRef GraphEditor::resolve(ValueRef v) const {
  for (;;) {
    auto it = forward_.find(value_key(v));
    if (it == forward_.end()) return v;
    v = it->second;
  }
}

int32_t GraphEditor::add_node(const OpDef& op, std::span<const ValueRef> inputs, AttrList attrs,
                              SmallVector<TensorSpec, 2> outputs, NodeOrigin origin, std::string_view name) {
  SmallVector<ValueRef, 4> resolved;
  for (ValueRef v : inputs) resolved.push_back(resolve(v));
  const int32_t added = fn_.graph.add_node(op, {resolved.data(), resolved.size()}, std::move(attrs),
                                           std::move(outputs), std::move(origin.location), name);
  Node& node = fn_.graph.mutable_node(added);
  node.requested_device = std::move(origin.requested_device);
  node.assigned_device = std::move(origin.assigned_device);
  return added;
}

StatusOr<ValueRef> GraphEditor::add_int_constant(std::span<const int64_t> values, const Shape& shape,
                                                 NodeOrigin origin) {
  auto t = TensorImpl::allocate(DType::kInt64, shape);
  if (!t.ok()) return t.status();
  std::copy(values.begin(), values.end(), t.value()->mutable_data<int64_t>());
  SmallVector<TensorSpec, 2> spec;
  spec.push_back(TensorSpec{DType::kInt64, shape});
  AttrList attrs;
  attrs.push_back(std::move(t).value());
  static const OpDef& constant = op_def("Const");
  return ValueRef{add_node(constant, {}, std::move(attrs), std::move(spec), std::move(origin)), 0};
}

std::vector<std::vector<int32_t>> GraphEditor::consumers_by_node() const {
  const Graph& g = fn_.graph;
  std::vector<std::vector<int32_t>> consumers(g.num_nodes());
  for (int32_t n = 0; n < g.num_nodes(); ++n)
    for (ValueRef in : g.node(n).inputs) {
      ValueRef r = resolve(in);
      auto& list = consumers[r.node];
      if (list.empty() || list.back() != n) list.push_back(n);
    }
  return consumers;
}

Status GraphEditor::finish(bool prune) {
  Graph& g = fn_.graph;
  const int32_t n = g.num_nodes();
  for (int32_t i = 0; i < n; ++i)
    for (ValueRef& in : g.mutable_node(i).inputs) in = resolve(in);
  for (ValueRef& r : fn_.results) r = resolve(r);
  forward_.clear();
  auto resolve_node = [&](int32_t i) {
    for (auto it = replaced_nodes_.find(i); it != replaced_nodes_.end(); it = replaced_nodes_.find(i))
      i = it->second;
    return i;
  };
  if (!replaced_nodes_.empty()) {
    for (int32_t i = 0; i < n; ++i) {
      auto& deps = g.mutable_node(i).control_inputs;
      std::vector<int32_t> resolved;
      for (int32_t c : deps) {
        int32_t r = resolve_node(c);
        if (r != i && std::find(resolved.begin(), resolved.end(), r) == resolved.end()) resolved.push_back(r);
      }
      deps = std::move(resolved);
    }
    for (int32_t& c : fn_.control_outputs) c = resolve_node(c);
  }

  std::vector<bool> keep(n, !prune);
  for (auto [from, to] : replaced_nodes_) keep[from] = false;
  for (int32_t r : removed_nodes_) keep[r] = false;
  replaced_nodes_.clear();
  removed_nodes_.clear();
  if (prune) {
    std::vector<int32_t> stack;
    for (ValueRef r : fn_.results) stack.push_back(r.node);
    for (int32_t c : fn_.control_outputs) stack.push_back(c);
    for (int32_t a : fn_.args) stack.push_back(a);
    for (int32_t i = 0; i < n; ++i)
      if (g.node(i).op->has_flag(kStateful)) stack.push_back(i);
    while (!stack.empty()) {
      int32_t i = stack.back();
      stack.pop_back();
      if (keep[i]) continue;
      keep[i] = true;
      for (ValueRef in : g.node(i).inputs) stack.push_back(in.node);
      for (int32_t c : g.node(i).control_inputs) stack.push_back(c);
    }
  }

  // Depth-first post-order by original index keeps the order close to the trace's while honouring edges
  // that forwarding pointed at later nodes. Nodes flagged kScheduleEarly are visited first, so each comes
  // right after what it needs (passes/schedule.cc).
  std::vector<int32_t> roots;
  roots.reserve(n);
  for (int32_t i = 0; i < n; ++i)
    if (g.node(i).op->has_flag(kScheduleEarly)) roots.push_back(i);
  for (int32_t i = 0; i < n; ++i) roots.push_back(i);
  std::vector<int32_t> order;
  order.reserve(n);
  std::vector<uint8_t> state(n, 0);                // 0 new, 1 on the stack, 2 emitted
  std::vector<std::pair<int32_t, int32_t>> stack;  // (node, next dependency to visit)
  auto num_deps = [&](int32_t i) {
    return static_cast<int32_t>(g.node(i).inputs.size() + g.node(i).control_inputs.size());
  };
  auto dep = [&](int32_t i, int32_t k) {
    const Node& node = g.node(i);
    int32_t ni = static_cast<int32_t>(node.inputs.size());
    return k < ni ? node.inputs[k].node : node.control_inputs[k - ni];
  };
  for (int32_t root : roots) {
    if (!keep[root] || state[root] != 0) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [i, k] = stack.back();
      if (k < num_deps(i)) {
        int32_t d = dep(i, k++);
        // A cycle is a pass's bug (it forwarded a value into its own producer); the edited copy is
        // discarded by the caller, so failing here keeps the bug from becoming a crash or a hang.
        if (state[d] == 1)
          return make_error(Code::kInternal, "graph optimizer produced a cycle through node '",
                            g.node(d).name, "' (", g.node(d).op->name, ") in function ", fn_.name);
        if (state[d] == 0) {
          state[d] = 1;
          stack.push_back({d, 0});
        }
        continue;
      }
      state[i] = 2;
      order.push_back(i);
      stack.pop_back();
    }
  }

  bool unchanged = static_cast<int32_t>(order.size()) == n;
  for (int32_t k = 0; unchanged && k < n; ++k) unchanged = order[k] == k;
  if (unchanged) return Status::OK();

  Graph out;
  std::vector<int32_t> remap(n, -1);
  for (int32_t i : order) {
    Node& node = g.mutable_node(i);
    SmallVector<ValueRef, 4> inputs;
    for (ValueRef in : node.inputs) inputs.push_back(ValueRef{remap[in.node], in.output});
    int32_t copy = out.add_node(*node.op, {inputs.data(), inputs.size()}, std::move(node.attrs),
                                std::move(node.outputs), std::move(node.location), node.name);
    out.mutable_node(copy).requested_device = std::move(node.requested_device);
    out.mutable_node(copy).assigned_device = std::move(node.assigned_device);
    for (int32_t c : node.control_inputs) out.add_control_input(copy, remap[c]);
    remap[i] = copy;
  }
  for (int32_t& a : fn_.args) a = remap[a];
  for (ValueRef& r : fn_.results) r.node = remap[r.node];
  std::vector<int32_t> control_outputs;
  for (int32_t c : fn_.control_outputs)
    if (remap[c] >= 0) control_outputs.push_back(remap[c]);
  fn_.control_outputs = std::move(control_outputs);
  fn_.graph = std::move(out);
  return Status::OK();
}

}  // namespace ember::passes

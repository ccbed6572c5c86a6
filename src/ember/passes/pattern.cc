#include "ember/passes/pattern.h"

#include <algorithm>
#include <cmath>

#include "ember/core/half.h"
#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {

bool is_zero_constant(const Graph& g, ValueRef v) {
  const Node& node = g.node(v.node);
  if (node.op->name != "Const") return false;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  if (t.num_elements() != 1) return false;
  if (t.dtype() == DType::kFloat32) return t.data<float>()[0] == 0.0f;
  if (t.dtype() == DType::kFloat64) return t.data<double>()[0] == 0.0;
  if (t.dtype() == DType::kFloat16) return static_cast<float>(t.data<float16>()[0]) == 0.0f;
  if (t.dtype() == DType::kBFloat16) return static_cast<float>(t.data<bfloat16>()[0]) == 0.0f;
  return false;
}

bool fully_defined_same(const TensorSpec& a, const TensorSpec& b) {
  return a.dtype == b.dtype && a.shape.fully_defined() && a.shape == b.shape;
}

NodeUses::NodeUses(const FunctionGraph& fn) : g_(fn.graph), readers_(fn.graph.num_nodes()) {
  for (int32_t n = 0; n < g_.num_nodes(); ++n) {
    const Node& node = g_.node(n);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i].output == 0) readers_[node.inputs[i].node].push_back({n, static_cast<int>(i)});
    for (int32_t c : node.control_inputs) control_source_.push_back(c);
  }
  for (ValueRef r : fn.results)
    if (r.output == 0) result_.push_back(r.node);
  std::sort(control_source_.begin(), control_source_.end());
  std::sort(result_.begin(), result_.end());
}

bool NodeUses::plain(int32_t n) const {
  return g_.node(n).control_inputs.empty() &&
         !std::binary_search(control_source_.begin(), control_source_.end(), n);
}

bool NodeUses::is_result(int32_t n) const { return std::binary_search(result_.begin(), result_.end(), n); }

bool NodeUses::only_reader(int32_t n, int32_t* reader) const {
  if (is_result(n) || readers_[n].empty()) return false;
  for (const auto& [r, input] : readers_[n])
    if (r != readers_[n][0].first) return false;
  *reader = readers_[n][0].first;
  return true;
}

FusibleActivation fusible_activation(const Graph& g, const NodeUses& uses, int32_t pre,
                                     std::span<const char* const> activations) {
  if (uses.is_result(pre)) return {};
  FusibleActivation found;
  for (const auto& [c, input] : uses.readers(pre)) {
    const Node& reader = g.node(c);
    const bool named = std::any_of(activations.begin(), activations.end(),
                                   [&](const char* a) { return reader.op->name == a; });
    if (named && input == 0 && uses.plain(c) && (found.node < 0 || found.node == c)) {
      found.node = c;
    } else if (reader.op->name == "Greater" && input == 0 && reader.inputs[1].node != pre &&
               is_zero_constant(g, reader.inputs[1])) {
      found.moved_readers.push_back({c, 0});
    } else if (reader.op->name == "ReluGrad" && input == 1 && reader.inputs[0].node != pre) {
      found.moved_readers.push_back({c, 1});  // relu_grad(dy, relu(pre)) == relu_grad(dy, pre)
    } else {
      return {};  // another reader keeps the pre-activation
    }
  }
  if (found.node < 0) return {};
  if (!found.moved_readers.empty() && g.node(found.node).op->name != "Relu") return {};
  return found;
}

Expr expr_x() { return Expr{}; }
Expr expr_const(double value) { return Expr{Expr::kConst, nullptr, value, {}}; }
Expr expr_op(const char* op, std::vector<Expr> operands) {
  return Expr{Expr::kOp, op, 0, std::move(operands)};
}

namespace {

int depth(const Expr& e) {
  int d = 0;
  for (const Expr& o : e.operands) d = std::max(d, depth(o));
  return e.kind == Expr::kOp ? d + 1 : 0;
}

bool constant_near(const Graph& g, ValueRef v, double value) {
  const Node& node = g.node(v.node);
  if (node.op->name != "Const") return false;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  if (t.num_elements() != 1) return false;
  double got;
  if (t.dtype() == DType::kFloat32)
    got = t.data<float>()[0];
  else if (t.dtype() == DType::kFloat64)
    got = t.data<double>()[0];
  else
    return false;
  return std::abs(got - value) <= 1e-6 * std::abs(value);
}

// Matches `e` at v (output 0 of an op node), collecting the op nodes it covers into `nodes`.
bool match_at(const Graph& g, ValueRef v, const Expr& e, int32_t pre, std::vector<int32_t>* nodes) {
  if (e.kind == Expr::kX) return v.node == pre && v.output == 0;
  if (e.kind == Expr::kConst) return constant_near(g, v, e.value);
  const Node& node = g.node(v.node);
  const bool same_op = node.op->name == e.op || (std::string_view(e.op) == "Add" && node.op->name == "AddV2");
  if (v.output != 0 || !same_op || node.inputs.size() != e.operands.size()) return false;
  const size_t mark = nodes->size();
  auto operands_match = [&](bool swapped) {
    nodes->resize(mark);
    for (size_t i = 0; i < e.operands.size(); ++i) {
      const size_t k = swapped ? e.operands.size() - 1 - i : i;
      if (!match_at(g, node.inputs[k], e.operands[i], pre, nodes)) return false;
    }
    return true;
  };
  const bool commutative = e.operands.size() == 2 &&
                           (node.op->name == "Mul" || node.op->name == "Add" || node.op->name == "AddV2");
  if (!operands_match(false) && !(commutative && operands_match(true))) return false;
  nodes->push_back(v.node);
  return true;
}

}  // namespace

int32_t fusible_expression(const Graph& g, const NodeUses& uses, int32_t pre, const Expr& e) {
  if (uses.is_result(pre)) return -1;
  // The nodes at most depth(e) reader steps below pre, the candidates for the expression's root.
  std::vector<int32_t> frontier = {pre}, below;
  for (int step = depth(e); step > 0; --step) {
    std::vector<int32_t> next;
    for (int32_t n : frontier)
      for (const auto& [reader, input] : uses.readers(n))
        if (std::find(below.begin(), below.end(), reader) == below.end())
          next.push_back(reader), below.push_back(reader);
    frontier = std::move(next);
  }
  for (int32_t root : below) {
    std::vector<int32_t> nodes;
    if (!match_at(g, ValueRef{root, 0}, e, pre, &nodes)) continue;
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    auto inside = [&](int32_t n) { return std::binary_search(nodes.begin(), nodes.end(), n); };
    auto read_inside = [&](int32_t n) {
      return std::all_of(uses.readers(n).begin(), uses.readers(n).end(),
                         [&](const auto& r) { return inside(r.first); });
    };
    // A constant of higher rank would broadcast the result past the pre-activation's shape.
    const TensorSpec &in = g.node(pre).outputs[0], &out = g.node(root).outputs[0];
    bool ok = read_inside(pre) && in.dtype == out.dtype && in.shape == out.shape;
    for (int32_t n : nodes) {
      ok = ok && uses.plain(n) && g.node(n).outputs.size() == 1;
      if (n != root) ok = ok && !uses.is_result(n) && read_inside(n);
    }
    if (ok) return root;
  }
  return -1;
}

std::string chain_activation(const Graph& g, const BiasChain& chain) {
  if (chain.activation < 0) return std::string();
  return chain.activation_name.empty() ? g.node(chain.activation).op->name : chain.activation_name;
}

double chain_leakyrelu_alpha(const Graph& g, const BiasChain& chain) {
  if (chain_activation(g, chain) != "LeakyRelu") return 0.2;
  const Node& act = g.node(chain.activation);
  return std::get<double>(act.attrs[act.op->attr_index("alpha")]);
}

StatusOr<int> fuse_bias_chains(FunctionGraph& fn, const OpDef& fused_op,
                               const std::function<bool(int32_t, BiasChain*)>& match,
                               const std::function<AttrList(const BiasChain&)>& attrs) {
  Graph& g = fn.graph;
  std::vector<BiasChain> chains;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    BiasChain chain;
    if (match(n, &chain)) chains.push_back(std::move(chain));
  }
  if (chains.empty()) return 0;
  GraphEditor editor(fn);
  for (const BiasChain& chain : chains) {
    const Node contraction = g.node(chain.contraction);  // a copy: adding nodes may move the nodes
    const int32_t last = chain.activation >= 0      ? chain.activation
                         : chain.residual_node >= 0 ? chain.residual_node
                                                    : chain.bias_node;
    SmallVector<TensorSpec, 2> outputs;
    outputs.push_back(g.node(last).outputs[0]);
    std::vector<ValueRef> inputs = {contraction.inputs[0], contraction.inputs[1], chain.bias};
    if (chain.residual_node >= 0) inputs.push_back(chain.residual);
    const int32_t fused = editor.add_node(fused_op, inputs, attrs(chain), std::move(outputs),
                                          NodeOrigin::of(contraction), contraction.name + "/fused");
    editor.forward(ValueRef{last, 0}, ValueRef{fused, 0});
    for (const auto& [reader, input] : chain.moved_readers)
      g.mutable_node(reader).inputs[input] = ValueRef{fused, 0};
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return static_cast<int>(chains.size());
}

}  // namespace ember::passes

#include "ember/passes/pattern.h"

#include <algorithm>

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

std::string chain_activation(const Graph& g, const BiasChain& chain) {
  return chain.activation >= 0 ? g.node(chain.activation).op->name : std::string();
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
    const int32_t last = chain.activation >= 0 ? chain.activation : chain.bias_node;
    SmallVector<TensorSpec, 2> outputs;
    outputs.push_back(g.node(last).outputs[0]);
    const ValueRef inputs[] = {contraction.inputs[0], contraction.inputs[1], chain.bias};
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

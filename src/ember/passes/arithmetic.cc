// Arithmetic simplification: rewrites that remove work without changing a value — x*1, 1*x, x/1, x+0,
// 0+x, x-0, -(-x), double transposes, chained reshapes, reshapes and casts to what the value already is,
// and identities (Identity, StopGradient: an optimized graph is never differentiated; the tape replays
// the traced graph).

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {

bool same_spec(const TensorSpec& a, const TensorSpec& b) {
  return a.dtype == b.dtype && a.shape.fully_defined() && a.shape == b.shape;
}

// A constant whose every element equals `value` (exactly).
bool is_splat(const Graph& g, ValueRef v, double value) {
  const Node& node = g.node(v.node);
  if (node.op->name != "Const") return false;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  bool all = true;
  // Complex constants are not visited (kAllTypes): never a splat, so x * c keeps its multiply.
  const bool visited = visit_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_arithmetic_v<T>) {
      const T* p = t.data<T>();
      for (int64_t i = 0; i < t.num_elements() && all; ++i) all = static_cast<double>(p[i]) == value;
    } else {
      all = false;
    }
  });
  return visited && all && t.num_elements() > 0;
}

std::vector<int64_t> compose(const std::vector<int64_t>& first, const std::vector<int64_t>& second) {
  // transpose(transpose(x, first), second)[i] takes axis first[second[i]] of x.
  std::vector<int64_t> perm(second.size());
  for (size_t i = 0; i < second.size(); ++i) perm[i] = first[second[i]];
  return perm;
}

// Transpose accepts negative entries (counted from the end).
std::vector<int64_t> normalized_perm(std::vector<int64_t> perm) {
  const int64_t rank = static_cast<int64_t>(perm.size());
  for (int64_t& p : perm)
    if (p < 0) p += rank;
  return perm;
}

// The values of a Const int vector (a shape-like operand), or false when `v` is not one.
bool constant_ints(const Graph& g, ValueRef v, std::vector<int64_t>* out) {
  const Node& node = g.node(v.node);
  if (node.op->name != "Const") return false;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  if (t.rank() != 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) return false;
  *out = PartialValue::from_tensor(t).values;
  return true;
}

bool is_identity_perm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

StatusOr<int> simplify_arithmetic(FunctionGraph& fn) {
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  int rewrites = 0;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    Node& node = g.mutable_node(n);
    for (ValueRef& in : node.inputs) in = editor.resolve(in);
    if (!node.control_inputs.empty() || node.op->has_flag(kStateful)) continue;
    const std::string& op = node.op->name;
    const TensorSpec& out = node.outputs.empty() ? TensorSpec{} : node.outputs[0];
    ValueRef replacement{-1, 0};
    auto input_is = [&](int i, double value) { return is_splat(g, node.inputs[i], value); };
    auto keeps_spec = [&](int i) { return same_spec(g.spec(node.inputs[i]), out); };
    if (op == "Mul") {
      if (input_is(1, 1.0) && keeps_spec(0))
        replacement = node.inputs[0];
      else if (input_is(0, 1.0) && keeps_spec(1))
        replacement = node.inputs[1];
    } else if (op == "Add" || op == "AddV2") {
      if (input_is(1, 0.0) && keeps_spec(0))
        replacement = node.inputs[0];
      else if (input_is(0, 0.0) && keeps_spec(1))
        replacement = node.inputs[1];
    } else if (op == "Sub") {
      if (input_is(1, 0.0) && keeps_spec(0)) replacement = node.inputs[0];
    } else if (op == "RealDiv") {
      if (input_is(1, 1.0) && keeps_spec(0)) replacement = node.inputs[0];
    } else if (op == "Identity" || op == "StopGradient") {
      replacement = node.inputs[0];
    } else if (op == "Cast") {
      if (keeps_spec(0)) replacement = node.inputs[0];
    } else if (op == "Neg") {
      const Node& producer = g.node(node.inputs[0].node);
      if (producer.op->name == "Neg" && producer.control_inputs.empty()) replacement = producer.inputs[0];
    } else if (op == "Reshape") {
      if (keeps_spec(0)) {
        replacement = node.inputs[0];
      } else {
        const Node& producer = g.node(node.inputs[0].node);
        if (producer.op == node.op && producer.control_inputs.empty()) {
          // reshape(reshape(x, a), b) == reshape(x, b): read x directly.
          node.inputs[0] = producer.inputs[0];
          ++rewrites;
          if (same_spec(g.spec(node.inputs[0]), out)) replacement = node.inputs[0];
        }
      }
    } else if (op == "Transpose") {
      std::vector<int64_t> perm, first;
      if (!constant_ints(g, node.inputs[1], &perm)) continue;
      perm = normalized_perm(std::move(perm));
      const Node& producer = g.node(node.inputs[0].node);
      if (is_identity_perm(perm)) {
        replacement = node.inputs[0];
      } else if (producer.op == node.op && producer.control_inputs.empty() &&
                 constant_ints(g, producer.inputs[1], &first) && first.size() == perm.size()) {
        std::vector<int64_t> combined = compose(normalized_perm(std::move(first)), perm);
        const ValueRef source = producer.inputs[0];
        if (is_identity_perm(combined)) {
          replacement = source;
        } else {
          auto perm_node = editor.add_int_constant(combined, Shape{static_cast<int64_t>(combined.size())},
                                                   NodeOrigin::of(g.node(n)));
          if (!perm_node.ok()) continue;
          Node& transpose = g.mutable_node(n);  // add_node may have moved the node array
          transpose.inputs[0] = source;
          transpose.inputs[1] = *perm_node;
          ++rewrites;
        }
      }
    }
    if (replacement.node < 0) continue;
    editor.forward(ValueRef{n, 0}, replacement);
    ++rewrites;
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return rewrites;
}

}  // namespace ember::passes

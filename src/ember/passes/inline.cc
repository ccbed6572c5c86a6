// Inlining: a PartitionedCall is replaced by a copy of its callee's body, so the other passes (CSE, folding,
// fusion) see across the call and the executor runs one flat plan. The call's control dependencies carry
// over: the callee's stateful nodes wait for what the call waited for, and whatever waited for the call
// waits for them.
#include <algorithm>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
StatusOr<int> inline_function_calls(FunctionGraph& fn) {
  static const OpDef& call_op = op_def("PartitionedCall");
  static const OpDef& const_op = op_def("Const");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  int inlined = 0;
  const int32_t original = g.num_nodes();
  for (int32_t n = 0; n < original; ++n) {
    if (g.node(n).op != &call_op) continue;
    const Node call = g.node(n);  // a copy: adding nodes reallocates the node array
    auto callee = FunctionLibrary::global().find(std::get<std::string>(call.attrs[0]));
    if (callee == nullptr || static_cast<int>(call.inputs.size()) != callee->num_call_args()) continue;
    const Graph& body = callee->graph;
    std::vector<SmallVector<ValueRef, 2>> mapped(body.num_nodes());
    std::vector<int32_t> copy_of(body.num_nodes(), -1);
    std::vector<bool> is_arg(body.num_nodes(), false);
    for (size_t a = 0; a < callee->args.size(); ++a) {
      int32_t arg = callee->args[a];
      is_arg[arg] = true;
      if (static_cast<int>(a) < callee->num_call_args()) {
        mapped[arg].push_back(editor.resolve(call.inputs[a]));
      } else {
        const TensorRef& value = callee->captured_values[a - callee->num_call_args()];
        AttrList attrs;
        attrs.push_back(value);
        SmallVector<TensorSpec, 2> spec;
        spec.push_back(body.node(arg).outputs[0]);
        int32_t c =
            editor.add_node(const_op, {}, std::move(attrs), std::move(spec),
                            NodeOrigin::inlined(body.node(arg), call), call.name + "/" + body.node(arg).name);
        mapped[arg].push_back(ValueRef{c, 0});
      }
    }
    std::vector<int32_t> stateful;
    for (int32_t b = 0; b < body.num_nodes(); ++b) {
      if (is_arg[b]) continue;
      const Node& inner = body.node(b);
      SmallVector<ValueRef, 4> inputs;
      for (ValueRef in : inner.inputs) inputs.push_back(mapped[in.node][in.output]);
      int32_t copy = editor.add_node(*inner.op, {inputs.data(), inputs.size()}, inner.attrs, inner.outputs,
                                     NodeOrigin::inlined(inner, call), call.name + "/" + inner.name);
      for (int32_t c : inner.control_inputs)
        if (!is_arg[c]) g.add_control_input(copy, copy_of[c]);
      // Only side effects need ordering: the callee's stateful nodes wait for what the call waited for.
      if (inner.op->has_flag(kStateful))
        for (int32_t c : call.control_inputs) g.add_control_input(copy, c);
      if (inner.op->has_flag(kStateful)) stateful.push_back(copy);
      copy_of[b] = copy;
      for (int32_t k = 0; k < static_cast<int32_t>(inner.outputs.size()); ++k)
        mapped[b].push_back(ValueRef{copy, k});
    }
    for (int32_t c : callee->control_outputs)
      if (!is_arg[c]) fn.control_outputs.push_back(copy_of[c]);
    for (int32_t k = 0; k < static_cast<int32_t>(callee->results.size()); ++k) {
      ValueRef r = callee->results[k];
      editor.forward(ValueRef{n, k}, mapped[r.node][r.output]);
    }
    // Whatever was ordered after the call is ordered after the callee's side effects, or — when it has
    // none — after what the call itself waited for, so a chain through the call stays a chain.
    const std::vector<int32_t>& successors_wait_for = stateful.empty() ? call.control_inputs : stateful;
    for (int32_t m = 0; m < g.num_nodes(); ++m) {
      auto& deps = g.mutable_node(m).control_inputs;
      auto it = std::find(deps.begin(), deps.end(), n);
      if (it == deps.end()) continue;
      deps.erase(it);
      for (int32_t s : successors_wait_for) g.add_control_input(m, s);
    }
    std::erase(fn.control_outputs, n);
    editor.remove_node(n);
    ++inlined;
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return inlined;
}

}  // namespace ember::passes

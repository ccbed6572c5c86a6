// Constant folding: a stateless node whose inputs are all constants runs once, here, and becomes a Const
// node (results larger than the cap stay computed, so a graph does not balloon with big literals). The
// tracer already folds what is constant while tracing; this catches what inlining, CSE and arithmetic
// simplification expose.
#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {
bool is_const(const Node& node) { return node.op->name == "Const"; }
}  // namespace

StatusOr<int> fold_constants(FunctionGraph& fn, int64_t max_bytes) {
  static const OpDef& const_op = op_def("Const");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  int folded = 0;
  const int32_t original = g.num_nodes();
  for (int32_t n = 0; n < original; ++n) {
    const Node& node = g.node(n);
    if (node.op->has_flag(kStateful) || is_const(node) || node.inputs.empty() || !node.control_inputs.empty())
      continue;
    bool all_constant = true;
    for (ValueRef in : node.inputs) all_constant = all_constant && is_const(g.node(editor.resolve(in).node));
    if (!all_constant) continue;
    int64_t bytes = 0;
    for (const TensorSpec& spec : node.outputs) {
      if (!spec.shape.fully_defined())
        bytes = max_bytes + 1;
      else
        bytes += spec.shape.num_elements() * dtype_size(spec.dtype);
    }
    if (bytes > max_bytes) continue;
    SmallVector<TensorImpl*, 4> inputs;
    for (ValueRef in : node.inputs) {
      ValueRef r = editor.resolve(in);
      inputs.push_back(std::get<TensorRef>(g.node(r.node).attrs[0]).get());
    }
    OutputList outputs;
    // A kernel that fails on these constants (a division by a zero integer, a bad index) fails at run time
    // with the user's line, as without folding.
    if (!run_kernel(*node.op, {inputs.data(), inputs.size()}, {node.attrs.data(), node.attrs.size()}, outputs)
             .ok())
      continue;
    const NodeOrigin origin = NodeOrigin::of(node);  // a folded value stays on the node's device
    std::string name = node.name;
    for (int32_t k = 0; k < static_cast<int32_t>(outputs.size()); ++k) {
      AttrList attrs;
      SmallVector<TensorSpec, 2> spec;
      spec.push_back(TensorSpec{outputs[k]->dtype(), outputs[k]->shape()});
      attrs.push_back(std::move(outputs[k]));
      int32_t c = editor.add_node(const_op, {}, std::move(attrs), std::move(spec), origin, name + "/folded");
      if (outputs.size() == 1)
        editor.replace_node(n, c);
      else
        editor.forward(ValueRef{n, k}, ValueRef{c, 0});
    }
    ++folded;
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return folded;
}

}  // namespace ember::passes

#include "ember/graph/specialize.h"

#include <vector>

#include "ember/graph/partial_value.h"
#include "ember/ops/execute.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

// The more specific of two compatible shapes, dim by dim; false where they contradict each other.
bool merge_shapes(const Shape& traced, const Shape& inferred, Shape& out) {
  if (!inferred.rank_known()) {
    out = traced;
    return true;
  }
  if (!traced.rank_known()) {
    out = inferred;
    return true;
  }
  if (traced.rank() != inferred.rank()) return false;
  std::vector<int64_t> dims(static_cast<size_t>(traced.rank()));
  for (int i = 0; i < traced.rank(); ++i) {
    const int64_t a = traced.dim(i), b = inferred.dim(i);
    if (a >= 0 && b >= 0 && a != b) return false;
    dims[static_cast<size_t>(i)] = a >= 0 ? a : b;
  }
  out = Shape(std::span<const int64_t>(dims));
  return true;
}

}  // namespace

StatusOr<std::shared_ptr<FunctionGraph>> specialize_shapes(const FunctionGraph& fn,
                                                           std::span<const Shape> arg_shapes) {
  static const OpDef& const_op = op_def("Const");
  static const OpDef& placeholder_op = op_def("Placeholder");
  auto out = std::make_shared<FunctionGraph>(fn);
  Graph& g = out->graph;
  const int32_t n = g.num_nodes();
  std::vector<bool> is_arg(static_cast<size_t>(n), false);
  for (size_t i = 0; i < out->args.size(); ++i) {
    const int32_t a = out->args[i];
    is_arg[static_cast<size_t>(a)] = true;
    if (i >= arg_shapes.size()) continue;
    Node& node = g.mutable_node(a);
    TensorSpec& spec = node.outputs[0];
    Shape merged;
    if (!merge_shapes(spec.shape, arg_shapes[i], merged))
      return invalid_argument("specialize: argument ", i, " is ", spec.shape.to_string(), ", not ",
                              arg_shapes[i].to_string());
    spec.shape = merged;
    if (node.op == &placeholder_op) node.attrs = placeholder_attrs(spec.dtype, merged);
  }
  for (int32_t i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (is_arg[static_cast<size_t>(i)] || node.op == &const_op || node.op == &placeholder_op) continue;
    const OpDef& op = *node.op;
    SmallVector<TensorSpec, 4> specs;
    SmallVector<const TensorImpl*, 4> constants;
    std::vector<PartialValue> partials(node.inputs.size());
    SmallVector<const PartialValue*, 4> partial_of;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueRef in = node.inputs[k];
      if (in.node >= i) return make_error(Code::kFailedPrecondition, "specialize: the graph is not in order");
      const Node& source = g.node(in.node);
      specs.push_back(source.outputs[static_cast<size_t>(in.output)]);
      constants.push_back(source.op == &const_op ? std::get<TensorRef>(source.attrs[0]).get() : nullptr);
      const bool shape_like = !op.inputs.empty() && op.arg_of(k, node.inputs.size()).shape_like;
      if (shape_like && constants.back() == nullptr) partials[k] = partial_value(g, in);
      partial_of.push_back(shape_like && constants.back() == nullptr ? &partials[k] : nullptr);
    }
    SmallVector<TensorSpec, 2> inferred;
    EMBER_RETURN_IF_ERROR(infer_op(op, {specs.data(), specs.size()}, {constants.data(), constants.size()},
                                   {node.attrs.data(), node.attrs.size()}, inferred,
                                   {partial_of.data(), partial_of.size()}));
    if (inferred.size() != node.outputs.size())
      return make_error(Code::kFailedPrecondition, "specialize: ", node.name, " gives ", inferred.size(),
                        " outputs where the graph has ", node.outputs.size());
    Node& mutable_node = g.mutable_node(i);
    for (size_t o = 0; o < inferred.size(); ++o) {
      TensorSpec& spec = mutable_node.outputs[o];
      Shape merged;
      if (inferred[o].dtype != spec.dtype || !merge_shapes(spec.shape, inferred[o].shape, merged))
        return make_error(Code::kFailedPrecondition, "specialize: ", node.name, " (", op.name, ") output ", o,
                          " was traced as ", dtype_name(spec.dtype), spec.shape.to_string(), ", inferred ",
                          dtype_name(inferred[o].dtype), inferred[o].shape.to_string());
      spec.shape = merged;
    }
  }
  return out;
}

}  // namespace ember

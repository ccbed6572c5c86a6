// Batch-norm fusion (TensorFlow's "remapping" option, as conv fusion): FusedBatchNormV3 -> Relu becomes one
// _FusedBatchNormEx node, and FusedBatchNormGradV3(ReluGrad(dy, v), ...) one _FusedBatchNormGradEx(dy, ...,
// v), each running as the batch norm's own passes (Note [Batch norm fused with Relu] in
// kernels/batch_norm.cc).
//
// Note [Matching a batch norm and its Relu]
// The pass runs on optimized functions, after autodiff, so a training step's forward and backward are one
// graph (as Note [Matching a conv chain] in fuse_conv.cc).
// - Forward: y = FusedBatchNormV3(...)[0] is fused with the Relu reading it when every other reader of y is
//   the Relu's gradient, Greater(y, 0) or ReluGrad(dy, y) (before or after Note [Relu gradients as
//   ReluGrad]): those move onto the fused output, since y > 0 exactly when relu(y) > 0 (NaN included: both
//   false). y must be no function result, and neither node may have a control edge. The statistics outputs
//   keep all their readers.
// - Backward: FusedBatchNormGradV3(ReluGrad(dy, v), x, ...) is fused whatever v is (the fused kernel masks
//   dy by v > 0, as ReluGrad does), when the ReluGrad's output is read by that gradient op alone, is no
//   result, and dy, v and the ReluGrad's output have one fully defined shape (nothing broadcasts).
// The forward runs first, so the backward sees the moved ReluGrads reading the fused output.
#include <algorithm>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"
#include "ember/passes/pattern.h"

namespace ember::passes {
namespace {

struct Forward {
  int32_t batch_norm = -1, relu = -1;
  std::vector<std::pair<int32_t, int>> moved_readers;  // (node, input) to read the fused output
};

bool match_forward(const Graph& g, const NodeUses& uses, int32_t n, Forward* f) {
  const Node& bn = g.node(n);
  if (bn.op->name != "FusedBatchNormV3" || !uses.plain(n) || uses.is_result(n)) return false;
  for (const auto& [reader, input] : uses.readers(n)) {
    const Node& r = g.node(reader);
    if (r.op->name == "Relu" && input == 0 && (f->relu < 0 || f->relu == reader) && uses.plain(reader)) {
      f->relu = reader;
    } else if (r.op->name == "Greater" && input == 0 && r.inputs[1].node != n &&
               is_zero_constant(g, r.inputs[1])) {
      f->moved_readers.push_back({reader, 0});
    } else if (r.op->name == "ReluGrad" && input == 1 && r.inputs[0].node != n) {
      f->moved_readers.push_back({reader, 1});
    } else {
      return false;
    }
  }
  if (f->relu < 0 || !same_device(bn, g.node(f->relu))) return false;
  f->batch_norm = n;
  return true;
}

StatusOr<int> fuse_forward(FunctionGraph& fn) {
  static const OpDef& fused_op = op_def("_FusedBatchNormEx");
  Graph& g = fn.graph;
  std::vector<Forward> found;
  {
    const NodeUses uses(fn);
    for (int32_t n = 0; n < g.num_nodes(); ++n) {
      Forward f;
      if (match_forward(g, uses, n, &f)) found.push_back(std::move(f));
    }
  }
  if (found.empty()) return 0;
  GraphEditor editor(fn);
  for (const Forward& f : found) {
    const Node bn = g.node(f.batch_norm);  // a copy: adding nodes may move the nodes
    AttrList attrs = bn.attrs;
    attrs.push_back(std::string("Relu"));
    SmallVector<TensorSpec, 2> outputs = bn.outputs;
    outputs[0] = g.node(f.relu).outputs[0];
    const std::span<const ValueRef> inputs(bn.inputs.data(), bn.inputs.size());
    const int32_t fused = editor.add_node(fused_op, inputs, std::move(attrs), std::move(outputs),
                                          NodeOrigin::of(bn), bn.name + "/fused");
    editor.forward(ValueRef{f.relu, 0}, ValueRef{fused, 0});
    for (int32_t i = 1; i < static_cast<int32_t>(bn.outputs.size()); ++i)
      editor.forward(ValueRef{f.batch_norm, i}, ValueRef{fused, i});
    for (const auto& [reader, input] : f.moved_readers)
      g.mutable_node(reader).inputs[input] = ValueRef{fused, 0};
  }
  // The replaced nodes are left for pruning.
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return static_cast<int>(found.size());
}

StatusOr<int> fuse_backward(FunctionGraph& fn) {
  static const OpDef& fused_op = op_def("_FusedBatchNormGradEx");
  Graph& g = fn.graph;
  std::vector<int32_t> found;
  {
    const NodeUses uses(fn);
    for (int32_t n = 0; n < g.num_nodes(); ++n) {
      const Node& grad = g.node(n);
      if (grad.op->name != "FusedBatchNormGradV3" || !uses.plain(n)) continue;
      const int32_t r = grad.inputs[0].node;
      const Node& relu_grad = g.node(r);
      if (relu_grad.op->name != "ReluGrad" || grad.inputs[0].output != 0 || !uses.plain(r) ||
          uses.is_result(r) || uses.readers(r).size() != 1 || !same_device(grad, relu_grad))
        continue;
      const TensorSpec& out = relu_grad.outputs[0];
      if (!fully_defined_same(g.spec(relu_grad.inputs[0]), out) ||
          !fully_defined_same(g.spec(relu_grad.inputs[1]), out) ||
          !fully_defined_same(g.spec(grad.inputs[1]), out))
        continue;
      found.push_back(n);
    }
  }
  if (found.empty()) return 0;
  GraphEditor editor(fn);
  for (int32_t n : found) {
    const Node grad = g.node(n);  // a copy: adding nodes may move the nodes
    const Node& relu_grad = g.node(grad.inputs[0].node);
    const ValueRef inputs[] = {relu_grad.inputs[0], grad.inputs[1], grad.inputs[2],     grad.inputs[3],
                               grad.inputs[4],      grad.inputs[5], relu_grad.inputs[1]};
    AttrList attrs = grad.attrs;
    attrs.push_back(std::string("Relu"));
    const int32_t fused = editor.add_node(fused_op, inputs, std::move(attrs), grad.outputs,
                                          NodeOrigin::of(grad), grad.name + "/fused");
    for (int32_t i = 0; i < static_cast<int32_t>(grad.outputs.size()); ++i)
      editor.forward(ValueRef{n, i}, ValueRef{fused, i});
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return static_cast<int>(found.size());
}

}  // namespace

StatusOr<int> fuse_batch_norm(FunctionGraph& fn) {
  StatusOr<int> forward = fuse_forward(fn);
  EMBER_RETURN_IF_ERROR(forward.status());
  StatusOr<int> backward = fuse_backward(fn);
  EMBER_RETURN_IF_ERROR(backward.status());
  return *forward + *backward;
}

}  // namespace ember::passes

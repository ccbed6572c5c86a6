// Conv fusion (TensorFlow's "remapping" option): Conv2D, Conv3D or DepthwiseConv2dNative -> bias add [->
// residual add] [-> activation] becomes one _FusedConv2D, _FusedConv3D or _FusedDepthwiseConv2dNative node,
// which runs as one oneDNN primitive with the bias and post-ops (Note [Fused convolutions] in
// kernels/conv.cc).
//
// Note [Matching a conv chain]
// The pass runs on optimized functions, i.e. after autodiff: a training step's graph holds the forward and
// the backward together. A link of the chain is fused only when nothing else reads the value it replaces:
// - the convolution's output feeds the bias add alone (Conv2D's gradients read its input and filter, not
//   its output);
// - the sum feeds the residual add alone (an Add/AddV2 of the sum and another value of its shape, Note
//   [Shortcuts of an unknown batch]: the ResNet block's shortcut; Add's gradient reads no operand, so
//   training steps fuse it), when there is one;
// - the pre-activation (the sum, or the residual add's result) feeds the activation alone, with one
//   exception: ember's Relu gradient reads the pre-activation as Greater(pre, 0), and pre > 0 exactly when
//   relu(pre) > 0 (NaN included: both false), so such a Greater (or the ReluGrad(dy, pre) it becomes, Note
//   [Relu gradients as ReluGrad]) is moved onto the activation's output and the fusion goes ahead. Any other
//   reader (Relu6's, Elu's, swish's or Gelu's gradient, a user's op, a function result) keeps the
//   pre-activation, and the chain is then fused without its activation. Tanh's and Sigmoid's gradients read
//   their output, so training steps fuse those;
// - no node of the chain has a control input or is one, so no ordering is lost.
// The bias is a BiasAdd with the convolution's data format, or an Add/AddV2 of a 1-D [out_channels] value
// to a channels-last convolution whose output shape is the sum's (so the add broadcasts along channels
// only). BiasAdd's data_format is "NHWC" or "NCHW" for 5-D values too, so "NHWC" matches NDHWC.
// A depthwise convolution fuses the same way (its output channels c * multiplier + m are those the bias
// indexes), into _FusedDepthwiseConv2dNative, except with EXPLICIT padding, which TensorFlow's op lacks.
// Only float32 is fused: that is where oneDNN runs (float64 has the plain loops either way).
//
// Note [Shortcuts of an unknown batch]
// A residual fuses only when nothing broadcasts in its Add, at every run: the shortcut and the sum must have
// one shape. Static shapes say so when fully defined. A Keras model traced with an unknown batch has
// [?, h, w, c] on both sides, and at run time one side could be [1, h, w, c] and broadcast; so an unknown
// first dim is accepted only when both values carry the batch of one value through ops that keep their input
// 0's first dim (convolutions, bias adds, activations, pooling, batch norm, Identity) or a binary op's
// operand of the output's rank when the other's is lower (Keras' bias Add): in a ResNet block the shortcut
// and the second convolution's sum (whose batch is its convolution's input's) both carry the block input's
// batch.
//
// Note [Expression activations]
// ember has no Swish or Gelu op, and neither has TensorFlow's graph: tf.nn.silu writes x * sigmoid(x),
// tf.nn.gelu 0.5 * x * erfc(-x * (1 / sqrt(2))) or 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 *
// pow(x, 3)))), as element-wise ops, in ember (python/ember/ops/nn_ops.py) as in TensorFlow 2.21; earlier
// TensorFlow versions wrote the exact form 0.5 * x * (1 + erf(x / sqrt(2))). The pass matches those trees
// (passes/pattern.h's Expr, constants to 1e-6) and fuses them as _MklSwish, GeluExact and GeluApproximate,
// TensorFlow's names for them in fused_ops lists, when their ops read the pre-activation and each other only.
// Their gradients read the pre-activation, so they fuse in inference graphs only.
//
// Note [Relu gradients as ReluGrad]
// ember's Relu gradient is SelectV2(Greater(x, 0), dy, 0): two passes and a bool tensor in between. The same
// pass (remapping) rewrites that pattern to ReluGrad(dy, x), TensorFlow's one-pass op, which gives the same
// values (x > 0 is false for NaN in both). Only when the select's output has dy's shape (the zero is a
// scalar or a splat of it), so nothing broadcasts but the zero.
#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"
#include "ember/passes/pattern.h"

namespace ember::passes {
namespace {

// Activations written as several ops (Note [Expression activations]), with the fused op's name for each.
const std::vector<std::pair<const char*, Expr>>& expression_activations() {
  static const auto* kExpressions = [] {
    const Expr x = expr_x();
    const Expr half_x = expr_op("Mul", {expr_const(0.5), x});
    // TensorFlow 2.21's exact form: 0.5 * x * erfc(-x * (1 / sqrt(2))).
    Expr exact = expr_op(
        "Mul", {half_x, expr_op("Erfc", {expr_op("Mul", {expr_op("Neg", {x}), expr_const(M_SQRT1_2)})})});
    // The form earlier TensorFlow versions wrote (and SavedModels from them hold): 0.5 * x * (1 + erf(x /
    // sqrt(2))).
    Expr exact_erf = expr_op(
        "Mul", {half_x, expr_op("Add", {expr_const(1),
                                        expr_op("Erf", {expr_op("RealDiv", {x, expr_const(M_SQRT2)})})})});
    // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3))))
    Expr cube = expr_op("Mul", {expr_const(0.044715), expr_op("Pow", {x, expr_const(3)})});
    Expr inner = expr_op("Mul", {expr_const(std::sqrt(2 / M_PI)), expr_op("Add", {x, cube})});
    Expr approximate = expr_op("Mul", {half_x, expr_op("Add", {expr_const(1), expr_op("Tanh", {inner})})});
    return new std::vector<std::pair<const char*, Expr>>{
        {"_MklSwish", expr_op("Mul", {x, expr_op("Sigmoid", {x})})},
        {"GeluExact", std::move(exact)},
        {"GeluExact", std::move(exact_erf)},
        {"GeluApproximate", std::move(approximate)}};
  }();
  return *kExpressions;
}

class Matcher {
 public:
  explicit Matcher(const FunctionGraph& fn) : g_(fn.graph), uses_(fn) {}

  bool match(int32_t n, BiasChain* chain) const {
    const Node& conv = g_.node(n);
    const bool depthwise = conv.op->name == "DepthwiseConv2dNative";
    const int rank = conv.op->name == "Conv2D" || depthwise ? 4 : conv.op->name == "Conv3D" ? 5 : 0;
    if (rank == 0 || !uses_.plain(n) || conv.outputs[0].dtype != DType::kFloat32) return false;
    // TensorFlow's _FusedDepthwiseConv2dNative has no explicit paddings: ember's fused node must export.
    if (depthwise && std::get<std::string>(conv.attrs[conv.op->attr_index("padding")]) == "EXPLICIT")
      return false;
    if (!conv.outputs[0].shape.rank_known() || conv.outputs[0].shape.rank() != rank) return false;
    const bool channels_last =
        std::get<std::string>(conv.attrs[conv.op->attr_index("data_format")]).back() == 'C';
    const int64_t channels = conv.outputs[0].shape.dim(channels_last ? rank - 1 : 1);
    // The convolution feeds the bias add alone.
    if (!uses_.only_reader(n, &chain->bias_node)) return false;
    const Node& add = g_.node(chain->bias_node);
    if (!uses_.plain(chain->bias_node) || add.inputs.size() != 2 || !same_device(conv, add)) return false;
    if (add.op->name == "BiasAdd") {
      if (add.inputs[0].node != n) return false;
      const std::string& format = std::get<std::string>(add.attrs[add.op->attr_index("data_format")]);
      if ((format == "NHWC") != channels_last) return false;
      chain->bias = add.inputs[1];
    } else if (add.op->name == "Add" || add.op->name == "AddV2") {
      if (!channels_last || channels < 0) return false;
      const int other = add.inputs[0].node == n ? 1 : 0;
      if (add.inputs[1 - other].node != n || add.inputs[other].node == n) return false;
      chain->bias = add.inputs[other];
      if (!(add.outputs[0].shape == conv.outputs[0].shape)) return false;
    } else {
      return false;
    }
    const TensorSpec& bias = g_.spec(chain->bias);
    if (bias.dtype != DType::kFloat32 || !bias.shape.rank_known() || bias.shape.rank() != 1 ||
        bias.shape.dim(0) != channels || channels < 0)
      return false;
    chain->contraction = n;
    int32_t pre = chain->bias_node;
    if (match_residual(conv, chain)) pre = chain->residual_node;
    // The activation, when the sum feeds one (and Greater(sum, 0)s that can move onto it) alone.
    static constexpr const char* kActivations[] = {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"};
    FusibleActivation activation = fusible_activation(g_, uses_, pre, kActivations);
    if (activation.node >= 0 && same_device(conv, g_.node(activation.node))) {
      chain->activation = activation.node;
      chain->moved_readers = std::move(activation.moved_readers);
      return true;
    }
    for (const auto& [name, expression] : expression_activations()) {
      const int32_t root = fusible_expression(g_, uses_, pre, expression);
      if (root >= 0 && same_device(conv, g_.node(root))) {
        chain->activation = root;
        chain->activation_name = name;
        break;
      }
    }
    return true;
  }

 private:
  // Whether a and b have one dtype and one shape whenever the graph runs (Note [Shortcuts of an unknown
  // batch]): equal static shapes, every dim known but the first, and that one either known or the batch
  // of one value that a and b_batch (whose first dim is b's) carry through batch-preserving ops.
  bool same_shape_at_run_time(ValueRef a, ValueRef b, ValueRef b_batch) const {
    const TensorSpec &sa = g_.spec(a), &sb = g_.spec(b);
    if (sa.dtype != sb.dtype || !sa.shape.rank_known() || !(sa.shape == sb.shape) || sa.shape.rank() == 0)
      return false;
    for (int d = 1; d < sa.shape.rank(); ++d)
      if (sa.shape.dim(d) < 0) return false;
    return sa.shape.dim(0) >= 0 || batch_source(a) == batch_source(b_batch);
  }

  // The value whose first dim v's first dim is: v, followed back through ops whose output 0 keeps an input's
  // first dim: input 0 of the ops below (the batch of an activation), and the operand of a binary op whose
  // other operand has a lower rank (a bias added or scaled along trailing dims, as Keras writes it).
  ValueRef batch_source(ValueRef v) const {
    static constexpr std::string_view kKeepBatch[] = {"Conv2D",
                                                      "Conv3D",
                                                      "DepthwiseConv2dNative",
                                                      "_FusedConv2D",
                                                      "_FusedConv3D",
                                                      "BiasAdd",
                                                      "Relu",
                                                      "Relu6",
                                                      "Elu",
                                                      "LeakyRelu",
                                                      "Tanh",
                                                      "Sigmoid",
                                                      "Identity",
                                                      "MaxPool",
                                                      "AvgPool",
                                                      "MaxPool3D",
                                                      "AvgPool3D",
                                                      "FusedBatchNormV3",
                                                      "_FusedBatchNormEx",
                                                      "_FusedDepthwiseConv2dNative"};
    static constexpr std::string_view kBinary[] = {"Add", "AddV2", "Sub", "Mul", "RealDiv"};
    auto in = [](std::span<const std::string_view> names, const std::string& name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    for (int steps = 0; steps < 10000 && v.output == 0; ++steps) {
      const Node& node = g_.node(v.node);
      if (node.inputs.empty()) break;
      if (in(kKeepBatch, node.op->name)) {
        v = node.inputs[0];
        continue;
      }
      if (!in(kBinary, node.op->name) || node.inputs.size() != 2) break;
      const Shape &s0 = g_.spec(node.inputs[0]).shape, &s1 = g_.spec(node.inputs[1]).shape;
      const int rank = node.outputs[0].shape.rank_known() ? node.outputs[0].shape.rank() : -1;
      if (!s0.rank_known() || !s1.rank_known() || rank < 0) break;
      if (s0.rank() == rank && s1.rank() < rank)
        v = node.inputs[0];
      else if (s1.rank() == rank && s0.rank() < rank)
        v = node.inputs[1];
      else
        break;
    }
    return v;
  }

  // The sum feeding alone an Add of another value of its own shape (Note [Shortcuts of an unknown batch]): a
  // residual.
  bool match_residual(const Node& conv, BiasChain* chain) const {
    int32_t add_node = -1;
    if (!uses_.only_reader(chain->bias_node, &add_node) || !uses_.plain(add_node)) return false;
    const Node& add = g_.node(add_node);
    if ((add.op->name != "Add" && add.op->name != "AddV2") || !same_device(conv, add)) return false;
    const int other = add.inputs[0].node == chain->bias_node ? 1 : 0;
    if (add.inputs[1 - other].node != chain->bias_node || add.inputs[other].node == chain->bias_node)
      return false;
    const TensorSpec& sum = g_.node(chain->bias_node).outputs[0];
    if (!same_shape_at_run_time(add.inputs[other], ValueRef{chain->bias_node, 0}, conv.inputs[0]) ||
        !(add.outputs[0].shape == sum.shape))
      return false;
    chain->residual_node = add_node;
    chain->residual = add.inputs[other];
    return true;
  }

 private:
  const Graph& g_;
  const NodeUses uses_;
};

}  // namespace

// SelectV2(Greater(x, 0), dy, 0) -> ReluGrad(dy, x) (Note [Relu gradients as ReluGrad]).
StatusOr<int> remap_relu_gradients(FunctionGraph& fn) {
  static const OpDef& relu_grad = op_def("ReluGrad");
  Graph& g = fn.graph;
  std::vector<std::pair<int32_t, std::pair<ValueRef, ValueRef>>> found;  // select, (dy, x)
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    const Node& select = g.node(n);
    if (select.op->name != "SelectV2" || !select.control_inputs.empty()) continue;
    const Node& greater = g.node(select.inputs[0].node);
    if (greater.op->name != "Greater" || !is_zero_constant(g, greater.inputs[1])) continue;
    const ValueRef x = greater.inputs[0], dy = select.inputs[1];
    if (!is_zero_constant(g, select.inputs[2])) continue;
    const TensorSpec& out = select.outputs[0];
    if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) continue;
    if (!fully_defined_same(g.spec(dy), out) || !fully_defined_same(g.spec(x), out)) continue;
    found.push_back({n, {dy, x}});
  }
  if (found.empty()) return 0;
  GraphEditor editor(fn);
  for (const auto& [n, operands] : found) {
    const Node select = g.node(n);  // a copy: adding nodes may move the nodes
    const ValueRef inputs[] = {operands.first, operands.second};
    SmallVector<TensorSpec, 2> outputs;
    outputs.push_back(select.outputs[0]);
    const int32_t grad = editor.add_node(relu_grad, inputs, AttrList{}, std::move(outputs),
                                         NodeOrigin::of(select), select.name + "/relu_grad");
    editor.forward(ValueRef{n, 0}, ValueRef{grad, 0});
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return static_cast<int>(found.size());
}

StatusOr<int> fuse_conv(FunctionGraph& fn) {
  int fused = 0;
  for (const char* conv : {"Conv2D", "Conv3D", "DepthwiseConv2dNative"}) {
    const OpDef& fused_op = op_def(std::string("_Fused") + conv);
    const Matcher matcher(fn);  // over the graph as the previous round left it
    auto count = fuse_bias_chains(
        fn, fused_op,
        [&](int32_t n, BiasChain* chain) {
          return fn.graph.node(n).op->name == conv && matcher.match(n, chain);
        },
        [&](const BiasChain& chain) {
          AttrList attrs = fn.graph.node(chain.contraction).attrs;  // the convolution's, then ours
          attrs.push_back(chain_activation(fn.graph, chain));
          attrs.push_back(chain_leakyrelu_alpha(fn.graph, chain));
          return attrs;
        });
    if (!count.ok()) return count.status();
    fused += *count;
  }
  return fused;
}

}  // namespace ember::passes

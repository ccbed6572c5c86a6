// Conv fusion (TensorFlow's "remapping" option): Conv2D, Conv3D or DepthwiseConv2dNative -> bias add [->
// activation] becomes one _FusedConv2D, _FusedConv3D or _FusedDepthwiseConv2dNative node, which runs as one
// oneDNN primitive with the bias and a post-op (Note [Fused convolutions] in kernels/conv.cc).
//
// Note [Matching a conv chain]
// The pass runs on optimized functions, i.e. after autodiff: a training step's graph holds the forward and
// the backward together. A link of the chain is fused only when nothing else reads the value it replaces:
// - the convolution's output feeds the bias add alone (Conv2D's gradients read its input and filter, not
//   its output);
// - the bias add's output feeds the activation alone, with one exception: ember's Relu gradient reads the
//   pre-activation as Greater(pre, 0), and pre > 0 exactly when relu(pre) > 0 (NaN included: both false),
//   so such a Greater (or the ReluGrad(dy, pre) it becomes, Note [Relu gradients as ReluGrad]) is moved
//   onto the activation's output and the fusion goes ahead. Any other reader
//   (Relu6's or Elu's gradient, a user's op, a function result) keeps the bias add's output, and the chain
//   is then fused without its activation;
// - no node of the chain has a control input or is one, so no ordering is lost.
// The bias is a BiasAdd with the convolution's data format, or an Add/AddV2 of a 1-D [out_channels] value
// to a channels-last convolution whose output shape is the sum's (so the add broadcasts along channels
// only). BiasAdd's data_format is "NHWC" or "NCHW" for 5-D values too, so "NHWC" matches NDHWC.
// A depthwise convolution fuses the same way (its output channels c * multiplier + m are those the bias
// indexes), into _FusedDepthwiseConv2dNative, except with EXPLICIT padding, which TensorFlow's op lacks.
// Only float32 is fused: that is where oneDNN runs (float64 has the plain loops either way).
//
// Note [Relu gradients as ReluGrad]
// ember's Relu gradient is SelectV2(Greater(x, 0), dy, 0): two passes and a bool tensor in between. The same
// pass (remapping) rewrites that pattern to ReluGrad(dy, x), TensorFlow's one-pass op, which gives the same
// values (x > 0 is false for NaN in both). Only when the select's output has dy's shape (the zero is a
// scalar or a splat of it), so nothing broadcasts but the zero.
#include <algorithm>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"
#include "ember/passes/pattern.h"

namespace ember::passes {
namespace {

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
    // The activation, when the sum feeds one (and Greater(sum, 0)s that can move onto it) alone.
    static constexpr const char* kActivations[] = {"Relu", "Relu6", "Elu", "LeakyRelu"};
    FusibleActivation activation = fusible_activation(g_, uses_, chain->bias_node, kActivations);
    if (activation.node >= 0 && same_device(conv, g_.node(activation.node))) {
      chain->activation = activation.node;
      chain->moved_readers = std::move(activation.moved_readers);
    }
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

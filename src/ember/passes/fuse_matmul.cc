// MatMul fusion (TensorFlow's "remapping" option): MatMul -> bias add [-> activation] becomes one
// _FusedMatMul node, whose kernel adds the bias and applies the activation to each block of the product
// while it is in cache (Note [MatMul epilogues] in kernels/matmul.cc).
//
// Note [Matching a MatMul chain]
// The rules of a conv chain (Note [Matching a conv chain] in fuse_conv.cc), for a product:
// - the MatMul's output feeds the bias add alone (its gradients read its operands, not its output), and
//   is no function result;
// - the bias is a BiasAdd of the product (data_format NHWC, or any format on a 2-D product: both name the
//   last dim there), or an Add/AddV2 of the product and a 1-D [N] value whose result has the product's
//   shape, so the add only broadcasts the bias over rows (and batches);
// - the activation (Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid) is fused when it is the sum's only reader,
//   Relu's gradient readers excepted (they move onto the fused output); any other reader of the sum (Elu's
//   gradient, a user's op, a function result) keeps it, and only the bias is fused. Tanh's and Sigmoid's
//   gradients read their output, so training steps fuse those;
// - operands, bias and product share one dtype (float16, bfloat16, float32 or float64) and the nodes of a
//   chain the requested device; none has a control input or is one.
// The swish and Gelu chains that conv fusion matches (Note [Expression activations] in fuse_conv.cc) are not
// matched here yet; an activation that is not fused is left to the element-wise fusion, which runs after this
// pass.
//
// Not fused: an addend of the product's full shape, as an LSTM cell's MatMul(h, U) + xW_t (oneDNN's sum
// post-op could take it; TensorFlow's remapper does not fuse it either, and the element-wise fusion
// already puts the add into the gates' fused group). EMBER_FUSE_MATMUL=0 turns this pass off (for
// measurements); the `remapping` option turns it off with the other remapping passes.
#include <cstdlib>
#include <cstring>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"
#include "ember/passes/pattern.h"

namespace ember::passes {
namespace {

bool fusible_dtype(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16;
}

class Matcher {
 public:
  explicit Matcher(const FunctionGraph& fn) : g_(fn.graph), uses_(fn) {}

  bool match(int32_t n, BiasChain* chain) const {
    const Node& matmul = g_.node(n);
    if (matmul.op->name != "MatMul" || !uses_.plain(n)) return false;
    const TensorSpec& product = matmul.outputs[0];
    if (!fusible_dtype(product.dtype) || !product.shape.rank_known()) return false;
    const int64_t columns = product.shape.dim(product.shape.rank() - 1);
    if (columns < 0 || !uses_.only_reader(n, &chain->bias_node)) return false;
    const Node& add = g_.node(chain->bias_node);
    if (!uses_.plain(chain->bias_node) || add.inputs.size() != 2 || !same_device(matmul, add)) return false;
    if (add.op->name == "BiasAdd") {
      if (add.inputs[0].node != n || add.inputs[1].node == n) return false;
      const std::string& format = std::get<std::string>(add.attrs[add.op->attr_index("data_format")]);
      if (format != "NHWC" && product.shape.rank() != 2) return false;
      chain->bias = add.inputs[1];
    } else if (add.op->name == "Add" || add.op->name == "AddV2") {
      const int other = add.inputs[0].node == n ? 1 : 0;
      if (add.inputs[1 - other].node != n || add.inputs[other].node == n) return false;
      chain->bias = add.inputs[other];
      if (!(add.outputs[0].shape == product.shape)) return false;
    } else {
      return false;
    }
    const TensorSpec& bias = g_.spec(chain->bias);
    if (bias.dtype != product.dtype || !bias.shape.rank_known() || bias.shape.rank() != 1 ||
        bias.shape.dim(0) != columns)
      return false;
    chain->contraction = n;
    static constexpr const char* kActivations[] = {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"};
    FusibleActivation activation = fusible_activation(g_, uses_, chain->bias_node, kActivations);
    if (activation.node >= 0 && same_device(matmul, g_.node(activation.node))) {
      chain->activation = activation.node;
      chain->moved_readers = std::move(activation.moved_readers);
    }
    return true;
  }

 private:
  const Graph& g_;
  const NodeUses uses_;
};

bool disabled_by_environment() {
  const char* env = std::getenv("EMBER_FUSE_MATMUL");
  return env != nullptr && (std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0);
}

}  // namespace

StatusOr<int> fuse_matmul(FunctionGraph& fn) {
  static const OpDef& fused_op = op_def("_FusedMatMul");
  static const bool disabled = disabled_by_environment();
  if (disabled) return 0;
  const Matcher matcher(fn);
  return fuse_bias_chains(
      fn, fused_op, [&](int32_t n, BiasChain* chain) { return matcher.match(n, chain); },
      [&](const BiasChain& chain) {
        const std::string activation = chain_activation(fn.graph, chain);
        AttrList attrs = fn.graph.node(chain.contraction).attrs;  // transpose_a, transpose_b
        attrs.push_back(int64_t{1});                              // num_args
        attrs.push_back(activation.empty() ? "BiasAdd" : "BiasAdd," + activation);  // fused_ops
        attrs.push_back(0.0);                                                       // epsilon
        attrs.push_back(chain_leakyrelu_alpha(fn.graph, chain));
        return attrs;
      });
}

}  // namespace ember::passes

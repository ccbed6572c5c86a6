// TensorFlow's fused contraction nodes to ember's and back (fused_import.h).
//
// Note [TensorFlow's fused nodes]
// Grappler's remapper (and so every frozen or optimized graph people deploy) writes
//   _FusedConv2D | _FusedConv3D | _FusedDepthwiseConv2dNative | _FusedMatMul (input, filter, args...)
// with `fused_ops` one of: BiasAdd (args: bias) or FusedBatchNorm (args: scale, offset, mean, variance; an
// inference batch norm with `epsilon`), then optionally Add (one more arg: a residual of the output's shape,
// written by TensorFlow's oneDNN builds), then optionally an activation (Relu, Relu6, Elu, LeakyRelu with
// `leakyrelu_alpha`, Tanh, Sigmoid, _MklSwish = x * sigmoid(x), GeluExact, GeluApproximate).
// ember's _FusedConv2D/_FusedConv3D/_FusedDepthwiseConv2dNative hold BiasAdd, optionally Add (args [bias,
// residual], as TensorFlow's), and any one of those activations in an `activation` string, for float32 and
// float64; ember's _FusedMatMul holds TensorFlow's BiasAdd lists without Add (its `fused_ops` joined with
// commas, graph_def.cc). A node those ops take is
// mapped onto them; any other list ember knows becomes the plain ops it stands for, in one chain that ends in
// an Identity named as the node, so that its readers (by "node" in a graph, by "node:output:0" in a function
// body, where the Identity's output arg replaces the fused op's) find the same value. The chain computes the
// same values as TensorFlow computes the fused op (ember's kernels fuse nothing there, each op rounds once).
#include "ember/graph/fused_import.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/graph/graph_def_ops.h"
#include "ember/ops/registry.h"

namespace ember::graph_def_internal {
namespace {

using NodeList = google::protobuf::RepeatedPtrField<proto::NodeDef>;

// The contraction each fused op of TensorFlow's stands for.
constexpr std::pair<std::string_view, std::string_view> kContractions[] = {
    {"_FusedConv2D", "Conv2D"},
    {"_FusedConv3D", "Conv3D"},
    {"_FusedDepthwiseConv2dNative", "DepthwiseConv2dNative"},
    {"_FusedMatMul", "MatMul"}};

// The activations a chain may end in: every one is an activation of ember's fused convolutions;
// _FusedMatMul's lack _MklSwish.
constexpr std::string_view kActivations[] = {"Relu",    "Relu6",     "Elu",       "LeakyRelu",      "Tanh",
                                             "Sigmoid", "_MklSwish", "GeluExact", "GeluApproximate"};

// Attributes of the fused op that the plain contraction does not have.
constexpr std::string_view kFusionAttrs[] = {"fused_ops", "num_args",        "TArgs",         "num_host_args",
                                             "epsilon",   "leakyrelu_alpha", "filter_format", "padding_list"};

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
  for (std::string_view s : list)
    if (s == name) return true;
  return false;
}

std::string_view contraction_of(std::string_view fused_op) {
  for (const auto& [fused, plain] : kContractions)
    if (fused == fused_op) return plain;
  return {};
}

// What a fused_ops list says: the leading op, whether a residual Add follows, the activation ("" none).
struct Fusion {
  std::string lead, activation;
  bool add = false;
  int args() const { return (lead == "FusedBatchNorm" ? 4 : 1) + (add ? 1 : 0); }
};

std::vector<std::string> fused_ops_of(const proto::NodeDef& n) {
  std::vector<std::string> ops;
  auto it = n.attr().find("fused_ops");
  if (it == n.attr().end()) return ops;
  if (it->second.has_list()) return {it->second.list().s().begin(), it->second.list().s().end()};
  const std::string& joined = it->second.s();  // ember's own _FusedMatMul spelling
  for (size_t begin = 0; begin < joined.size();) {
    const size_t end = std::min(joined.find(',', begin), joined.size());
    ops.push_back(joined.substr(begin, end - begin));
    begin = end + 1;
  }
  return ops;
}

std::string joined(const std::vector<std::string>& ops) {
  std::string out;
  for (const std::string& op : ops) out += (out.empty() ? "" : ",") + op;
  return out;
}

// Parses `ops` for a node of `fused_op`; false when ember cannot run that list.
bool parse_fusion(std::string_view fused_op, const std::vector<std::string>& ops, Fusion& f) {
  size_t k = 0;
  if (k < ops.size() && (ops[k] == "BiasAdd" || (ops[k] == "FusedBatchNorm" && fused_op != "_FusedMatMul")))
    f.lead = ops[k++];
  else
    return false;
  if (k < ops.size() && ops[k] == "Add") f.add = true, ++k;
  if (k < ops.size()) {
    if (!contains(kActivations, ops[k])) return false;
    f.activation = ops[k++];
  }
  return k == ops.size();
}

proto::DataType type_attr(const proto::NodeDef& n) {
  auto it = n.attr().find("T");
  return it == n.attr().end() ? proto::DT_FLOAT : it->second.type();
}

bool channels_last(const proto::NodeDef& n) {
  auto it = n.attr().find("data_format");
  return it == n.attr().end() || it->second.s().empty() || it->second.s().back() == 'C';
}

// Builds the chain replacing one fused node in a graph (in_function false) or a function body.
class ChainWriter {
 public:
  ChainWriter(NodeList& nodes, std::unordered_set<std::string>& names, const proto::NodeDef& fused,
              bool in_function)
      : nodes_(nodes), names_(names), fused_(fused), in_function_(in_function) {}

  // A new node `tf_op` named <fused>/<suffix> reading `inputs`; returns how its readers name its output 0.
  std::string add(std::string_view tf_op, std::string_view suffix, std::vector<std::string> inputs,
                  proto::NodeDef** out = nullptr) {
    std::string name = fused_.name() + "/" + std::string(suffix);
    while (names_.count(name)) name += "_";
    names_.insert(name);
    proto::NodeDef* n = nodes_.Add();
    n->set_name(name);
    n->set_op(std::string(tf_op));
    n->set_device(fused_.device());
    for (std::string& in : inputs) n->add_input(std::move(in));
    (*n->mutable_attr())["T"].set_type(type_attr(fused_));
    if (out != nullptr) *out = n;
    return reference(tf_op, name);
  }

  std::string reference(std::string_view tf_op, const std::string& name) const {
    if (!in_function_) return name;
    const OpDef* op = OpRegistry::global().find(graph_def_ops::ember_op_type(tf_op));
    return name + ":" + (op == nullptr ? "output" : graph_def_ops::tf_output_arg(*op, 0).first) + ":0";
  }

 private:
  NodeList& nodes_;
  std::unordered_set<std::string>& names_;
  const proto::NodeDef& fused_;
  const bool in_function_;
};

// Replaces nodes[index] by its chain of plain ops (Note [TensorFlow's fused nodes]).
void expand(NodeList& nodes, int index, const Fusion& f, std::unordered_set<std::string>& names,
            bool in_function) {
  const proto::NodeDef fused = nodes.Get(index);  // a copy: adding nodes may move it
  ChainWriter chain(nodes, names, fused, in_function);
  std::vector<std::string> data, control;
  for (const std::string& in : fused.input()) (!in.empty() && in[0] == '^' ? control : data).push_back(in);
  const std::string_view contraction_op = contraction_of(fused.op());
  proto::NodeDef* contraction = nullptr;
  std::string value = chain.add(contraction_op, "contraction", {data[0], data[1]}, &contraction);
  for (const auto& [attr, value_of] : fused.attr())
    if (!contains(kFusionAttrs, attr)) (*contraction->mutable_attr())[attr] = value_of;
  for (const std::string& c : control) contraction->add_input(c);
  const bool is_conv = contraction_op != "MatMul";
  size_t arg = 2;
  if (f.lead == "BiasAdd") {
    proto::NodeDef* bias = nullptr;
    value = chain.add("BiasAdd", "bias_add", {value, data[arg++]}, &bias);
    if (is_conv) (*bias->mutable_attr())["data_format"].set_s(channels_last(fused) ? "NHWC" : "NCHW");
  } else {
    proto::NodeDef* norm = nullptr;
    value = chain.add("FusedBatchNormV3", "batch_norm",
                      {value, data[arg], data[arg + 1], data[arg + 2], data[arg + 3]}, &norm);
    arg += 4;
    auto& attrs = *norm->mutable_attr();
    attrs["U"].set_type(type_attr(fused));
    attrs["is_training"].set_b(false);
    auto eps = fused.attr().find("epsilon");
    attrs["epsilon"].set_f(eps == fused.attr().end() ? 0.0001f : eps->second.f());
    auto format = fused.attr().find("data_format");
    if (format != fused.attr().end())
      attrs["data_format"] = format->second;
    else if (contraction_op == "Conv3D")
      attrs["data_format"].set_s("NDHWC");  // _FusedConv3D's default
  }
  if (f.add) value = chain.add("AddV2", "add", {value, data[arg++]});
  if (f.activation == "_MklSwish") {
    const std::string sigmoid = chain.add("Sigmoid", "sigmoid", {value});
    value = chain.add("Mul", "swish", {value, sigmoid});
  } else if (!f.activation.empty()) {
    proto::NodeDef* act = nullptr;
    value = chain.add(f.activation, "activation", {value}, &act);
    if (f.activation == "LeakyRelu") {
      auto alpha = fused.attr().find("leakyrelu_alpha");
      (*act->mutable_attr())["alpha"].set_f(alpha == fused.attr().end() ? 0.2f : alpha->second.f());
    }
  }
  // The chain's end takes the fused node's place and name.
  proto::NodeDef& end = *nodes.Mutable(index);
  end.Clear();
  end.set_name(fused.name());
  end.set_op("Identity");
  end.set_device(fused.device());
  end.add_input(value);
  (*end.mutable_attr())["T"].set_type(type_attr(fused));
}

Status rewrite(NodeList& nodes, std::vector<std::string>* expanded_in_function, std::string_view where) {
  std::unordered_set<std::string> names;
  for (const proto::NodeDef& n : nodes) names.insert(n.name());
  const int count = nodes.size();
  for (int i = 0; i < count; ++i) {
    proto::NodeDef& n = *nodes.Mutable(i);
    if (contraction_of(n.op()).empty() || n.attr().count("fused_ops") == 0) continue;
    const std::vector<std::string> ops = fused_ops_of(n);
    Fusion f;
    if (!parse_fusion(n.op(), ops, f))
      return invalid_argument(
          where, "node '", n.name(), "' (", n.op(), "): fused_ops [", joined(ops),
          "] is not one ember runs: BiasAdd", n.op() == "_FusedMatMul" ? "" : " or FusedBatchNorm",
          ", then optionally Add, then optionally one of Relu, Relu6, Elu, LeakyRelu, Tanh, "
          "Sigmoid, _MklSwish, GeluExact, GeluApproximate",
          n.op() == "_FusedMatMul" ? " (the Gelus without Add)" : "");
    auto num_args = n.attr().find("num_args");
    const int64_t args = num_args == n.attr().end() ? -1 : num_args->second.i();
    int data_inputs = 0;
    for (const std::string& in : n.input()) data_inputs += in.empty() || in[0] != '^';
    auto host_args = n.attr().find("num_host_args");
    if (args != f.args() || data_inputs != 2 + args ||
        (host_args != n.attr().end() && host_args->second.i() != 0))
      return invalid_argument(where, "node '", n.name(), "' (", n.op(), "): fused_ops [", joined(ops),
                              "] takes ", f.args(), " args after its 2 operands, got num_args ", args,
                              " and ", data_inputs, " inputs");
    if (auto format = n.attr().find("filter_format");
        format != n.attr().end() && !format->second.s().empty() && format->second.s() != "HWIO")
      return invalid_argument(where, "node '", n.name(), "' (", n.op(), "): filter_format must be HWIO, got ",
                              format->second.s());
    const proto::DataType t = type_attr(n);
    const bool ember_dtype = t == proto::DT_FLOAT || t == proto::DT_DOUBLE;
    if (n.op() == "_FusedMatMul" && f.lead == "BiasAdd" && !f.add && f.activation != "_MklSwish") {
      continue;  // ember's _FusedMatMul runs it as it is
    }
    if (n.op() != "_FusedMatMul" && ember_dtype &&
        f.lead == "BiasAdd") {  // ember's fused convolution runs it
      auto padding_list = n.attr().find("padding_list");
      if (padding_list == n.attr().end() || padding_list->second.list().i_size() == 0) {
        for (std::string_view attr : kFusionAttrs)
          if (attr != "leakyrelu_alpha") n.mutable_attr()->erase(std::string(attr));
        (*n.mutable_attr())["activation"].set_s(f.activation);
        continue;
      }
    }
    if (f.activation.rfind("Gelu", 0) == 0)  // ember has no plain Gelu op to expand it into
      return invalid_argument(
          where, "node '", n.name(), "' (", n.op(), "): fused_ops [", joined(ops), "] in ",
          proto::DataType_Name(t),
          ": ember runs a Gelu only inside its fused ops (BiasAdd, then for a convolution "
          "optionally Add, in float or double)");
    if (expanded_in_function != nullptr) expanded_in_function->push_back(n.name());
    expand(nodes, i, f, names, expanded_in_function != nullptr);
  }
  return Status::OK();
}

// In a function body a reader names "node:product:0" (or another output arg of the fused op): the
// Identity that now holds the node's name calls its output "output".
void rename_references(proto::FunctionDef& f, const std::vector<std::string>& expanded) {
  if (expanded.empty()) return;
  const std::unordered_set<std::string> names(expanded.begin(), expanded.end());
  auto fix = [&](std::string& input) {
    const size_t colon = input.find(':');
    if (colon == std::string::npos || input.empty() || input[0] == '^' ||
        names.count(input.substr(0, colon)) == 0)
      return;
    input = input.substr(0, colon) + ":output:0";
  };
  for (proto::NodeDef& n : *f.mutable_node_def()) {
    if (names.count(n.name()) > 0) continue;  // the Identity itself reads the chain
    for (std::string& input : *n.mutable_input()) fix(input);
  }
  for (auto& [name, value] : *f.mutable_ret()) fix(value);
}

void write_fusions(NodeList& nodes) {
  for (proto::NodeDef& n : nodes) {
    if (contraction_of(n.op()).empty() || n.op() == "_FusedMatMul") continue;
    auto activation = n.attr().find("activation");
    if (activation == n.attr().end()) continue;
    int args = 0;  // the bias, and a residual if any
    for (const std::string& in : n.input()) args += in.empty() || in[0] != '^';
    args -= 2;
    auto& attrs = *n.mutable_attr();
    proto::AttrValue::ListValue* ops = attrs["fused_ops"].mutable_list();
    ops->add_s("BiasAdd");
    if (args == 2) ops->add_s("Add");
    if (!activation->second.s().empty()) ops->add_s(activation->second.s());
    attrs.erase("activation");
    attrs.erase("N");  // ember's length of args is TensorFlow's num_args
    attrs["num_args"].set_i(args);
    if (n.op() == "_FusedConv2D")
      for (int k = 0; k < args; ++k) attrs["TArgs"].mutable_list()->add_type(type_attr(n));
    // TensorFlow's _FusedDepthwiseConv2dNative has no explicit paddings (conv fusion leaves EXPLICIT alone).
    auto explicit_paddings = attrs.find("explicit_paddings");
    if (n.op() == "_FusedDepthwiseConv2dNative" && explicit_paddings != attrs.end() &&
        explicit_paddings->second.list().i_size() == 0)
      attrs.erase(explicit_paddings);
  }
}

}  // namespace

Status rewrite_tensorflow_fusions(proto::GraphDef& gd) {
  EMBER_RETURN_IF_ERROR(rewrite(*gd.mutable_node(), nullptr, "GraphDef: "));
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function()) {
    std::vector<std::string> expanded;
    EMBER_RETURN_IF_ERROR(
        rewrite(*f.mutable_node_def(), &expanded, "GraphDef: function '" + f.signature().name() + "': "));
    rename_references(f, expanded);
  }
  return Status::OK();
}

Status write_tensorflow_fusions(proto::GraphDef& gd) {
  write_fusions(*gd.mutable_node());
  if (!gd.has_library()) return Status::OK();  // an empty library would be written out
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    write_fusions(*f.mutable_node_def());
  return Status::OK();
}

}  // namespace ember::graph_def_internal

// ResourceGather and ResourceGatherNd of TensorFlow's graphs as a read and a gather
// (resource_gather_import.h).
#include "ember/graph/resource_gather_import.h"

#include <string>
#include <unordered_set>
#include <vector>

namespace ember::graph_def_internal {
namespace {

using NodeList = google::protobuf::RepeatedPtrField<proto::NodeDef>;

std::string fresh_name(std::unordered_set<std::string>& names, std::string name) {
  while (names.count(name)) name += "_";
  names.insert(name);
  return name;
}

// Readers in a function body name an output "node:arg:index"; in a graph, "node".
std::string reference(const std::string& node, const char* output_arg, bool in_function) {
  return in_function ? node + ":" + output_arg + ":0" : node;
}

void rewrite(NodeList& nodes, bool in_function) {
  std::unordered_set<std::string> names;
  for (const proto::NodeDef& n : nodes) names.insert(n.name());
  const int count = nodes.size();
  for (int i = 0; i < count; ++i) {
    proto::NodeDef& n = nodes[i];
    const bool nd = n.op() == "ResourceGatherNd";
    if ((n.op() != "ResourceGather" && !nd) || n.input_size() < 2) continue;
    std::vector<std::string> control;
    for (const std::string& in : n.input())
      if (!in.empty() && in[0] == '^') control.push_back(in);
    const std::string resource = n.input(0), indices = n.input(1);
    auto& attrs = *n.mutable_attr();
    const proto::DataType dtype = attrs.count("dtype") ? attrs["dtype"].type() : proto::DT_FLOAT;
    const int64_t batch_dims = attrs.count("batch_dims") ? attrs["batch_dims"].i() : 0;

    proto::NodeDef read;
    read.set_name(fresh_name(names, n.name() + "/_read"));
    read.set_op("ReadVariableOp");
    read.set_device(n.device());
    read.add_input(resource);
    for (const std::string& c : control) read.add_input(c);  // the read is what waits for earlier writes
    (*read.mutable_attr())["dtype"].set_type(dtype);

    n.clear_input();
    n.add_input(reference(read.name(), "value", in_function));
    n.add_input(indices);
    attrs.erase("dtype");
    attrs.erase("validate_indices");
    attrs["Tparams"].set_type(dtype);
    proto::NodeDef axis;
    if (nd) {
      n.set_op("GatherNd");
    } else {
      n.set_op("GatherV2");
      axis.set_name(fresh_name(names, n.name() + "/_axis"));
      axis.set_op("Const");
      axis.set_device(n.device());
      (*axis.mutable_attr())["dtype"].set_type(proto::DT_INT32);
      proto::TensorProto& value = *(*axis.mutable_attr())["value"].mutable_tensor();
      value.set_dtype(proto::DT_INT32);
      value.mutable_tensor_shape();
      value.add_int_val(static_cast<int32_t>(batch_dims));
      n.add_input(reference(axis.name(), "output", in_function));
      attrs["Taxis"].set_type(proto::DT_INT32);
      attrs["batch_dims"].set_i(batch_dims);
    }
    *nodes.Add() = std::move(read);
    if (!nd) *nodes.Add() = std::move(axis);
  }
}

}  // namespace

Status rewrite_resource_gathers(proto::GraphDef& gd) {
  rewrite(*gd.mutable_node(), false);
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    rewrite(*f.mutable_node_def(), true);
  return Status::OK();
}

}  // namespace ember::graph_def_internal

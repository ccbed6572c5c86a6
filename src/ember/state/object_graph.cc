#include "ember/state/object_graph.h"

namespace ember {

StatusOr<proto::TrackableObjectGraph> read_object_graph(const BundleReader& reader) {
  if (!reader.contains(kObjectGraphKey))
    return make_error(Code::kNotFound, "checkpoint ", reader.prefix(), ": no object graph (", kObjectGraphKey,
                      "); it was written by a name-based saver");
  StatusOr<std::string> bytes = reader.read_string(kObjectGraphKey);
  if (!bytes.ok()) return bytes.status();
  proto::TrackableObjectGraph graph;
  if (!graph.ParseFromString(*bytes))
    return make_error(Code::kDataLoss, "checkpoint ", reader.prefix(), ": the object graph is not a valid ",
                      "TrackableObjectGraph");
  const int n = graph.nodes_size();
  if (n == 0)
    return make_error(Code::kDataLoss, "checkpoint ", reader.prefix(), ": the object graph has no nodes");
  auto check = [&](int node, int id, const char* what) -> Status {
    if (id >= 0 && id < n) return Status();
    return make_error(Code::kDataLoss, "checkpoint ", reader.prefix(), ": object graph node ", node,
                      " names ", what, " node ", id, ", but there are ", n, " nodes");
  };
  for (int i = 0; i < n; ++i) {
    for (const auto& child : graph.nodes(i).children())
      EMBER_RETURN_IF_ERROR(check(i, child.node_id(), "child"));
    for (const auto& slot : graph.nodes(i).slot_variables()) {
      EMBER_RETURN_IF_ERROR(check(i, slot.original_variable_node_id(), "slot's original variable"));
      EMBER_RETURN_IF_ERROR(check(i, slot.slot_variable_node_id(), "slot variable"));
    }
  }
  return graph;
}

std::vector<std::string> variable_keys(const proto::TrackableObjectGraph& graph) {
  std::vector<std::string> keys(static_cast<size_t>(graph.nodes_size()));
  for (int i = 0; i < graph.nodes_size(); ++i)
    for (const auto& attribute : graph.nodes(i).attributes())
      if (attribute.name() == "VARIABLE_VALUE") keys[i] = attribute.checkpoint_key();
  return keys;
}

}  // namespace ember

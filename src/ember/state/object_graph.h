// The object graph of an object-based checkpoint (TensorFlow's TrackableObjectGraph, stored as the scalar
// string "_CHECKPOINTABLE_OBJECT_GRAPH" of the bundle), read and checked for C++ users that restore by
// object: the SavedModel loader maps its SavedObjectGraph nodes (same ids) to checkpoint keys with it.
//
//   StatusOr<proto::TrackableObjectGraph> graph = read_object_graph(reader);
//   std::vector<std::string> keys = variable_keys(*graph);   // keys[node id] = "" or the bundle key
#pragma once

#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/state/tensor_bundle.h"
#include "ember/trackable_object_graph.pb.h"

namespace ember {

/// The bundle key that holds the object graph.
inline constexpr char kObjectGraphKey[] = "_CHECKPOINTABLE_OBJECT_GRAPH";

/// Parses the object graph of `reader`'s checkpoint and checks that it has nodes and that every child and
/// slot-variable reference names one of them (cycles are allowed: matching visits each node once).
/// NotFound when the checkpoint has none (a name-based TensorFlow 1 checkpoint), DataLoss naming the file
/// for anything malformed.
StatusOr<proto::TrackableObjectGraph> read_object_graph(const BundleReader& reader);

/// For each node id, the checkpoint key of its VARIABLE_VALUE attribute, or "" when it has none.
std::vector<std::string> variable_keys(const proto::TrackableObjectGraph& graph);

}  // namespace ember

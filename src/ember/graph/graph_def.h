// GraphDef export and import: a Graph as a serialized tensorflow.GraphDef (TensorFlow's protobuf wire
// format, written by hand in proto_wire.h, no protobuf library), and back. TensorFlow's tools can read
// what to_graph_def writes (`graph_pb2.GraphDef.FromString(bytes)`), and from_graph_def reads GraphDefs
// whose ops ember registers.
//
//   std::string bytes = to_graph_def(fn.graph);
//   auto imported = from_graph_def(bytes);           // a FunctionGraph: Placeholders are its args
//   auto f = prune_function(**imported, {"x:0"}, {"Square_1:0"});
//
// What travels: node names, op type names (ember's registry names, which are TensorFlow's), data inputs
// ("Square", "Unpack:1"), control inputs ("^Square"), every declared attribute, plus TensorFlow's derived
// attributes ("T", "N", Const's "dtype") for TensorFlow's readers, the GraphDef producer version, and each
// node's source location (GraphDef.debug_info). Output specs are not written: the importer re-infers them.
// See Note [Attributes in a GraphDef] in graph_def.cc for how attribute types map. Not written: a function
// library (a PartitionedCall's callee is found by name in this process's FunctionLibrary, and refused if it
// uses a variable or a captured value, which the bytes were not given) and which
// Placeholders held captured values (they import as ordinary arguments). TensorFlow's AddV2 reads as Add.
// Variables travel as TensorFlow writes them; see Note [Variables in a GraphDef] in graph_def.cc.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ember/core/resource.h"
#include "ember/graph/graph.h"
#include "ember/graph/tensor_proto.h"

namespace ember {

/// The GraphDef producer version ember writes: TensorFlow 2.21's (GRAPH_DEF_VERSION), whose op semantics
/// ember follows.
inline constexpr int kGraphDefProducer = 2474;

/// The variables an imported graph may use, keyed by the name of the resource Placeholder that stands
/// for each in the GraphDef (the node to_graph_def writes for a variable, named after it).
using VariableBindings = std::map<std::string, std::shared_ptr<VariableResource>, std::less<>>;

/// Serializes `graph` as a tensorflow.GraphDef, nodes in the graph's (topological) order.
std::string to_graph_def(const Graph& graph);

/// Parses a serialized tensorflow.GraphDef into a function graph. Nodes may come in any order (they are
/// sorted topologically); attributes are decoded by the types their OpDef declares (missing ones take their
/// defaults); output specs are re-inferred. Placeholders become the function's arguments in order of
/// appearance; there are no results (callers pick outputs by name, e.g. with prune_function).
/// Every resource Placeholder must be bound in `variables`; the graph reaches those variables and no others.
/// Errors: DataLoss for malformed bytes, NotFound for an op ember does not register, InvalidArgument for a
/// graph that does not make sense (dangling or cyclic inputs, bad attributes, an unbound variable, a
/// variable named by numeric id), each naming the node.
StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(std::string_view bytes,
                                                        const VariableBindings& variables = {});

}  // namespace ember

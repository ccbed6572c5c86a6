// GraphDef export and import: a Graph as a serialized tensorflow.GraphDef, and back. The messages are
// protobuf classes generated from proto/ember/*.proto (TensorFlow's field numbers, package ember.proto),
// so TensorFlow reads what to_graph_def writes (`graph_pb2.GraphDef.FromString(bytes)`), and
// from_graph_def reads GraphDefs whose ops ember registers, TensorFlow's included. See docs/graph_def.md.
//
//   std::string bytes = *to_graph_def(fn.graph);
//   auto imported = from_graph_def(bytes);           // a FunctionGraph: Placeholders are its args
//   auto f = prune_function(**imported, {"x:0"}, {"Square_1:0"});
//
// What travels: node names, op type names (TensorFlow's: graph_def_ops.h has where ember's spelling
// differs), data inputs ("Square", "Unpack:1"), control inputs ("^Square"), every declared attribute, plus
// TensorFlow's derived attributes ("T", "N", Const's "dtype", a call's "Tin"/"Tout") for TensorFlow's
// readers, the GraphDef producer version, each node's source location (GraphDef.debug_info), and the
// function library: every function a (Stateful)PartitionedCall calls, directly or through another
// function, as a FunctionDef in TensorFlow's form. Output specs are not written: the importer re-infers
// them. See Note [Attributes in a GraphDef] in graph_def.cc for how attribute types map. Not written:
// which Placeholders held captured values (they import as ordinary arguments; inside a called function,
// captured eager values are Const nodes). Variables travel as TensorFlow writes them; see Note [Variables
// in a GraphDef] in graph_def.cc; a called function gets the variables it uses as trailing DT_RESOURCE
// arguments, as TensorFlow writes captured variables.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ember/core/resource.h"
#include "ember/graph/graph.h"

namespace ember {
class LookupTable;
namespace proto {
class GraphDef;
}  // namespace proto

/// The GraphDef producer version ember writes: TensorFlow 2.21's (GRAPH_DEF_VERSION), whose op semantics
/// ember follows.
inline constexpr int kGraphDefProducer = 2474;

/// The variables an imported graph may use, keyed by the name of the resource Placeholder that stands
/// for each in the GraphDef (the node to_graph_def writes for a variable, named after it).
using VariableBindings = std::map<std::string, std::shared_ptr<VariableResource>, std::less<>>;

/// Binds a lookup table where VariableBindings binds a variable (a DT_RESOURCE Placeholder standing for a
/// captured table): the binding keeps the table alive. Note [Tables in a GraphDef] in graph_def.cc.
std::shared_ptr<VariableResource> table_binding(std::shared_ptr<LookupTable> table);

/// Serializes `graph` as a tensorflow.GraphDef, nodes in the graph's (topological) order, with a library
/// holding every function called. NotFound when a call names a function this process no longer has.
/// `variable_nodes`, when given, receives the resource Placeholder's node name of each variable id (a
/// SavedModel binds those nodes to its saved variables).
StatusOr<std::string> to_graph_def(const Graph& graph,
                                   std::map<int64_t, std::string>* variable_nodes = nullptr);

/// Parses a serialized tensorflow.GraphDef into a function graph. Nodes may come in any order (they are
/// sorted topologically); attributes are decoded by the types their OpDef declares (missing ones take their
/// defaults); output specs are re-inferred. Placeholders become the function's arguments in order of
/// appearance; there are no results (callers pick outputs by name, e.g. with prune_function). Functions of
/// the GraphDef's library that calls reach become functions of this process (the graph's `callees` keep
/// them); a call of a function the library lacks names one of this process, which must not reach state.
/// Every resource Placeholder must be bound in `variables`; the graph reaches those variables and no others.
/// Errors: DataLoss for malformed bytes, NotFound for an op ember does not register, InvalidArgument for a
/// graph that does not make sense (dangling or cyclic inputs, bad attributes, an unbound variable, a
/// variable named by numeric id), each naming the node.
StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(std::string_view bytes,
                                                        const VariableBindings& variables = {});
/// The same for a GraphDef message already in memory (the SavedModel loader's), which it rewrites in place:
/// no serializing and parsing again.
StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(proto::GraphDef&& graph_def,
                                                        const VariableBindings& variables = {});

}  // namespace ember

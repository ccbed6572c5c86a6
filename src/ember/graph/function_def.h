// The function library of a GraphDef, for graph_def.cc (not a public header): ember functions written as
// TensorFlow's FunctionDefs (signature, body nodes naming inputs "node:output_arg:index", `ret`), and a
// GraphDef's library read back into ember functions as calls reach them. It shares with graph_def.cc how
// one node is written and how a list of NodeDefs becomes a graph: a function body is both.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/graph.pb.h"
#include "ember/graph/graph_def.h"

namespace ember::graph_def_internal {

/// Variable id -> the name of the resource Placeholder written for it (Note [Variables in a GraphDef]).
using VariableNodes = std::unordered_map<int64_t, std::string>;

/// One FunctionDef to write: the ember function `name` taking `variables` as trailing DT_RESOURCE arguments
/// (those it uses, or more: TensorFlow's If and Case pass every branch the same arguments, so each branch
/// takes the variables of all of them), returning them too when `pass_through` (a While body returns every
/// loop variable). Written as `exported`: `name` itself when it takes just its own variables.
struct Callee {
  std::string name;
  std::vector<int64_t> variables;
  bool pass_through = false;
  std::string exported;
};

/// What a writer needs beyond the graph: the names of variable Placeholders, the functions called so far
/// (each is written into the library once) and which of them are stateful.
struct ExportState {
  VariableNodes variables;  // in the graph or function being written: its name for each variable
  std::vector<Callee> called;
  std::unordered_map<std::string, std::string> seen;  // key of a Callee -> its exported name
  std::unordered_map<std::string, bool> stateful;
  /// Adds a function to write (once per name, variables and pass_through) and returns its exported name.
  std::string add_callee(const std::string& name, std::vector<int64_t> variables, bool pass_through);
};

// ---- defined in graph_def.cc

bool is_resource_op(const OpDef& op);
/// `text` from the input for an error message: bytes outside printable ASCII as \xNN.
std::string printable(std::string_view text);
/// Writes `n` with its inputs named by `input_name`; a call adds its callee to `state.called`.
void write_node(const Graph& g, const Node& n, const std::function<std::string(ValueRef)>& input_name,
                ExportState& state, proto::NodeDef* out);
class LibraryReader;
/// Builds a function graph from `nodes` (any order); its Placeholders are its arguments in order.
/// `where` prefixes errors ("GraphDef: ").
StatusOr<std::unique_ptr<FunctionGraph>> build_graph(
    const std::vector<const proto::NodeDef*>& nodes,
    const std::unordered_map<std::string, SourceLocation>& locations, const VariableBindings& variables,
    LibraryReader& library, const std::string& where);

// ---- defined in function_def.cc

/// Whether calling the function `name` has effects beyond its results (TensorFlow then calls it with
/// StatefulPartitionedCall, which its pruning keeps). `memo` holds the answers so far.
bool is_stateful_function(const std::string& name, std::unordered_map<std::string, bool>& memo);
/// The variables (resource ids, ascending) the function `name` or one it calls reads or writes: a call
/// passes them as trailing DT_RESOURCE arguments, as TensorFlow passes captured variables.
std::vector<int64_t> function_variables(const std::string& name);
/// The variables of every function in `names` (ascending, each once): what a control-flow node passes all
/// of its functions.
std::vector<int64_t> functions_variables(const std::vector<std::string>& names);
/// The FunctionDef of `callee` (a function of this process's FunctionLibrary), in TensorFlow's form.
Status write_function(const Callee& callee, ExportState& state, proto::FunctionDef& out);

/// Functions called by more than this many nested levels are refused, so that a chain of calls from
/// bytes cannot exhaust the stack.
inline constexpr int kMaxCallDepth = 64;

/// Reads a GraphDef's function library into ember functions, each once, as calls ask for them.
class LibraryReader {
 public:
  explicit LibraryReader(const proto::FunctionDefLibrary& library) {
    for (const proto::FunctionDef& f : library.function()) defs_[f.signature().name()] = &f;  // last wins
  }
  bool has(const std::string& name) const { return defs_.count(name) > 0; }
  /// The ember function for the library's function `name` (not yet registered in FunctionLibrary), its
  /// DT_RESOURCE arguments bound to `variables` (what the call passes for them, in order).
  StatusOr<std::shared_ptr<const FunctionGraph>> function(
      const std::string& name, const std::vector<std::shared_ptr<VariableResource>>& variables);
  /// The variables that function(name, variables) returns as its DT_RESOURCE results, in order (each one
  /// of its arguments, passed through); call function() first.
  const std::vector<std::shared_ptr<VariableResource>>& variable_results(
      const std::string& name, const std::vector<std::shared_ptr<VariableResource>>& variables) const {
    return variable_results_.at(key_of(name, variables));
  }

 private:
  static std::string key_of(const std::string& name,
                            const std::vector<std::shared_ptr<VariableResource>>& variables);

  std::unordered_map<std::string, std::vector<std::shared_ptr<VariableResource>>> variable_results_;
  std::unordered_map<std::string, const proto::FunctionDef*> defs_;
  std::unordered_map<std::string, std::shared_ptr<const FunctionGraph>> done_;  // by name and variables
  std::vector<std::string> in_progress_;
};

}  // namespace ember::graph_def_internal

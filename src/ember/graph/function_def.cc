#include "ember/graph/function_def.h"

#include <algorithm>
#include <deque>
#include <unordered_set>
#include <utility>

#include "ember/core/lookup_table.h"
#include "ember/graph/graph_def_ops.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"

namespace ember::graph_def_internal {
namespace {

namespace ops = graph_def_ops;

proto::DataType tf_type(DType dtype) { return static_cast<proto::DataType>(tf_datatype(dtype)); }

// A FunctionDef argument name from a node name: TensorFlow's rule for arg names is [a-z][a-z0-9_]*.
std::string arg_name_for(const std::string& node_name) {
  std::string name;
  for (char c : node_name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    name.push_back((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '_');
  }
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z')) name = "arg_" + name;
  return name;
}

// "node:output_arg:index" (a FunctionDef's spelling) as "node:number" (a GraphDef's), with the op of each
// body node from `body_nodes`; argument names and "^node" stay as they are.
Status graph_input_name(const std::string& input,
                        const std::unordered_map<std::string, const proto::NodeDef*>& body_nodes,
                        std::string& out) {
  out = input;
  if (input.empty() || input[0] == '^') return Status::OK();
  const size_t first = input.find(':');
  if (first == std::string::npos) return Status::OK();
  const size_t second = input.find(':', first + 1);
  if (second == std::string::npos)
    return invalid_argument("input '", printable(input),
                            "' is not of the form 'argument', 'node:output_arg:index' or '^node'");
  const std::string node = input.substr(0, first);
  const std::string arg = input.substr(first + 1, second - first - 1);
  const std::string digits = input.substr(second + 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return invalid_argument("input '", printable(input), "' has no output index after its second ':'");
  auto body_node = body_nodes.find(node);
  if (body_node == body_nodes.end()) return Status::OK();  // reported when resolved
  const OpDef* op = OpRegistry::global().find(ops::ember_op_type(body_node->second->op()));
  if (op == nullptr) return Status::OK();
  const std::vector<int> list_sizes = ops::output_list_sizes(*op, body_node->second->attr());
  int number = ops::output_number(*op, arg, std::stoi(digits), list_sizes);
  if (number < 0)
    return invalid_argument("input '", printable(input), "': op ", op->name, " has no output '",
                            printable(arg), "' (or not that many)");
  out = node + ":" + std::to_string(number);
  return Status::OK();
}

// Whether `name` is a NoOp of the body, which build_graph leaves out (ember registers no NoOp).
bool is_left_out_noop(const proto::FunctionDef& def, const std::string& name) {
  if (OpRegistry::global().find("NoOp") != nullptr) return false;
  for (const proto::NodeDef& node : def.node_def())
    if (node.name() == name) return node.op() == "NoOp";
  return false;
}

// Whether the body's node `name` creates a table: import evaluates it (Note [Tables in a GraphDef] in
// graph_def.cc), so it is no node of the body and nothing waits for it at run time. TensorFlow's
// functions list such a node among their control outputs.
bool is_table_creator(const proto::FunctionDef& def, const std::string& name) {
  for (const proto::NodeDef& node : def.node_def())
    if (node.name() == name) return is_table_creating_op(node.op());
  return false;
}

// "inner" for "__inference_inner_15": FunctionLibrary::add gives the function its own prefix and number,
// so names do not grow with each export and import.
std::string function_base_name(const std::string& name) {
  std::string_view base = name;
  if (base.starts_with("__inference_")) base.remove_prefix(12);
  const size_t underscore = base.rfind('_');
  if (underscore != std::string_view::npos && underscore > 0 && underscore + 1 < base.size() &&
      base.find_first_not_of("0123456789", underscore + 1) == std::string_view::npos)
    base = base.substr(0, underscore);
  return base.empty() ? name : std::string(base);
}

}  // namespace

// Whether calling the function `name` has effects beyond its results (TensorFlow then calls it with
// StatefulPartitionedCall, which its pruning keeps). `memo` holds the answers so far.
bool is_stateful_function(const std::string& name, std::unordered_map<std::string, bool>& memo) {
  if (auto it = memo.find(name); it != memo.end()) return it->second;
  memo[name] = false;  // a call cycle adds nothing
  auto fn = FunctionLibrary::global().find(name);
  bool stateful = false;
  for (int32_t i = 0; fn && i < fn->graph.num_nodes() && !stateful; ++i) {
    const Node& n = fn->graph.node(i);
    const OpDef& op = *n.op;
    stateful = op.has_flag(kStateful) && op.name != "Placeholder";
    for (const std::string& callee : called_functions(op, n.attrs))
      stateful = stateful || is_stateful_function(callee, memo);
  }
  return memo[name] = stateful;
}

std::vector<int64_t> function_variables(const std::string& name) {
  std::vector<std::string> pending = {name};
  std::unordered_set<std::string> seen;
  std::vector<int64_t> ids;
  while (!pending.empty()) {
    std::string next = std::move(pending.back());
    pending.pop_back();
    if (!seen.insert(next).second) continue;
    auto fn = FunctionLibrary::global().find(next);
    for (int32_t i = 0; fn && i < fn->graph.num_nodes(); ++i) {
      const Node& n = fn->graph.node(i);
      if (is_resource_op(*n.op)) ids.push_back(std::get<int64_t>(n.attrs[0]));
      for (std::string& callee : called_functions(*n.op, n.attrs)) pending.push_back(std::move(callee));
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<int64_t> functions_variables(const std::vector<std::string>& names) {
  std::vector<int64_t> ids;
  for (const std::string& name : names)
    for (int64_t id : function_variables(name)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string ExportState::add_callee(const std::string& name, std::vector<int64_t> ids, bool pass_through) {
  pass_through = pass_through && !ids.empty();
  std::string key = name + (pass_through ? "#through" : "");
  for (int64_t id : ids) key += "#" + std::to_string(id);
  if (auto it = seen.find(key); it != seen.end()) return it->second;
  // A function taking more than its own variables (or returning them) is another FunctionDef, under a name
  // of its own: the plain one may be called elsewhere with its own.
  std::string exported = name;
  if (pass_through || ids != function_variables(name)) exported = name + "_cf" + std::to_string(seen.size());
  seen.emplace(key, exported);
  called.push_back(Callee{name, std::move(ids), pass_through, exported});
  return exported;
}

// The FunctionDef of the function `name` of this process's FunctionLibrary, in TensorFlow's form: the
// Placeholders the caller feeds are input_arg (with their shapes in arg_attr "_output_shapes"), captured
// eager values are Const nodes of the body, nodes name their inputs "node:output_arg:index", and `ret`
// maps output_0, output_1, ... to the results. Calls inside are added to `state.called`.
Status write_function(const Callee& callee, ExportState& state, proto::FunctionDef& out) {
  const std::string& name = callee.name;
  auto fn = FunctionLibrary::global().find(name);
  if (fn == nullptr)
    return make_error(Code::kNotFound, "a call names the function '", name,
                      "', which is not in this process's function library");
  const Graph& g = fn->graph;
  proto::OpDef& sig = *out.mutable_signature();
  sig.set_name(callee.exported);
  sig.set_is_stateful(is_stateful_function(name, state.stateful));
  // Argument Placeholders: the caller's arguments get names; captured values become Const nodes.
  std::unordered_map<int32_t, std::string> arg_names;
  std::unordered_set<int32_t> captured;
  std::unordered_set<std::string> taken;
  for (int32_t i = 0; i < g.num_nodes(); ++i) taken.insert(g.node(i).name);
  for (int k = 0; k < static_cast<int>(fn->args.size()); ++k) {
    const int32_t node = fn->args[k];
    if (k >= fn->num_call_args()) {
      captured.insert(node);
      continue;
    }
    std::string base = arg_name_for(g.node(node).name), arg = base;
    for (int n = 1; taken.count(arg) && arg != g.node(node).name; ++n) arg = base + "_" + std::to_string(n);
    taken.insert(arg);
    arg_names[node] = arg;
    const TensorSpec& spec = g.node(node).outputs[0];
    proto::OpDef::ArgDef* def = sig.add_input_arg();
    def->set_name(arg);
    def->set_type(tf_type(spec.dtype));
    auto& attrs = *(*out.mutable_arg_attr())[k].mutable_attr();
    attrs["_user_specified_name"].set_s(g.node(node).name);
    proto::TensorShapeProto* shape = attrs["_output_shapes"].mutable_list()->add_shape();
    if (spec.shape.rank_known()) {
      to_shape_proto(spec.shape.dims(), false, shape);
    } else {
      to_shape_proto({}, true, shape);
    }
  }
  // The variables it uses, in the body's calls too: trailing DT_RESOURCE arguments, which the body's
  // variable ops (and the calls in it) take in the caller's place.
  VariableNodes resource_args;
  std::vector<std::string> resource_arg_names;
  for (int64_t id : callee.variables) {
    auto variable = ResourceManager::global().find(id, "GraphDef export");
    std::string base = arg_name_for(variable.ok() ? variable.value()->name() : "variable"), arg = base;
    for (int n = 1; taken.count(arg); ++n) arg = base + "_" + std::to_string(n);
    taken.insert(arg);
    resource_args[id] = arg;
    resource_arg_names.push_back(arg);
    proto::OpDef::ArgDef* def = sig.add_input_arg();
    def->set_name(arg);
    def->set_type(proto::DT_RESOURCE);
  }
  VariableNodes caller_variables = std::exchange(state.variables, resource_args);
  auto ref = [&](ValueRef v) -> std::string {
    if (auto it = arg_names.find(v.node); it != arg_names.end()) return it->second;
    const Node& source = g.node(v.node);
    if (captured.count(v.node)) return source.name + ":output:0";
    auto [arg, index] =
        ops::tf_output_arg(*source.op, v.output, ops::output_list_sizes(*source.op, source.attrs));
    return source.name + ":" + arg + ":" + std::to_string(index);
  };
  for (int k = fn->num_call_args(); k < static_cast<int>(fn->args.size()); ++k) {
    const TensorRef& value = fn->captured_values[k - fn->num_call_args()];
    proto::NodeDef* node = out.add_node_def();
    node->set_name(g.node(fn->args[k]).name);
    node->set_op("Const");
    to_tensor_proto(*value, (*node->mutable_attr())["value"].mutable_tensor());
    (*node->mutable_attr())["dtype"].set_type(tf_type(value->dtype()));
  }
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    if (arg_names.count(i) || captured.count(i)) continue;
    proto::NodeDef* node = out.add_node_def();
    write_node(g, g.node(i), ref, state, node);
    // A control edge from an argument orders nothing: arguments are ready before the body runs.
    auto* inputs = node->mutable_input();
    inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                                 [&](const std::string& in) {
                                   if (in.empty() || in[0] != '^') return false;
                                   int32_t c = g.find(std::string_view(in).substr(1));
                                   return arg_names.count(c) > 0 || captured.count(c) > 0;
                                 }),
                  inputs->end());
  }
  for (size_t r = 0; r < fn->results.size(); ++r) {
    const std::string output = "output_" + std::to_string(r);
    proto::OpDef::ArgDef* def = sig.add_output_arg();
    def->set_name(output);
    def->set_type(tf_type(g.spec(fn->results[r]).dtype));
    (*out.mutable_ret())[output] = ref(fn->results[r]);
  }
  if (callee.pass_through) {  // a While body returns its variables, as loop variables
    for (size_t k = 0; k < resource_arg_names.size(); ++k) {
      const std::string output = "output_" + std::to_string(fn->results.size() + k);
      proto::OpDef::ArgDef* def = sig.add_output_arg();
      def->set_name(output);
      def->set_type(proto::DT_RESOURCE);
      (*out.mutable_ret())[output] = resource_arg_names[k];
    }
  }
  for (int32_t c : fn->control_outputs) {
    if (arg_names.count(c) || captured.count(c)) continue;
    sig.add_control_output(g.node(c).name);
    (*out.mutable_control_ret())[g.node(c).name] = g.node(c).name;
  }
  state.variables = std::move(caller_variables);
  return Status::OK();
}

std::string LibraryReader::key_of(const std::string& name,
                                  const std::vector<std::shared_ptr<VariableResource>>& variables) {
  std::string key = name;  // one ember function per set of variables it is called with
  for (const auto& v : variables) key += "#" + std::to_string(v->id());
  return key;
}

StatusOr<std::shared_ptr<const FunctionGraph>> LibraryReader::function(
    const std::string& name, const std::vector<std::shared_ptr<VariableResource>>& variables) {
  const std::string key = key_of(name, variables);
  if (auto it = done_.find(key); it != done_.end()) return it->second;
  const std::string where = "function '" + printable(name) + "': ";
  if (std::find(in_progress_.begin(), in_progress_.end(), name) != in_progress_.end())
    return invalid_argument(where, "calls itself (through ", in_progress_.back(),
                            "); ember does not run recursive functions");
  if (static_cast<int>(in_progress_.size()) >= kMaxCallDepth)
    return invalid_argument(where, "is called ", kMaxCallDepth, " calls deep; at most ", kMaxCallDepth,
                            " nested calls are supported");
  const proto::FunctionDef& def = *defs_.at(name);
  const proto::OpDef& sig = def.signature();
  // Arguments become Placeholders of the body, with the shape TensorFlow records in arg_attr.
  std::deque<proto::NodeDef> owned;
  std::vector<const proto::NodeDef*> nodes;
  VariableBindings bindings;  // DT_RESOURCE arguments: the variables the call passes, in order
  size_t next_variable = 0;
  for (int k = 0; k < sig.input_arg_size(); ++k) {
    const proto::OpDef::ArgDef& arg = sig.input_arg(k);
    if (arg.type() == proto::DT_RESOURCE) {
      if (next_variable == variables.size())
        return invalid_argument(where, "argument '", printable(arg.name()),
                                "' is a variable (DT_RESOURCE), but the call passes only ", variables.size(),
                                " variable(s)");
      bindings[arg.name()] = variables[next_variable++];
      proto::NodeDef& node = owned.emplace_back();
      node.set_name(arg.name());
      node.set_op("Placeholder");
      (*node.mutable_attr())["dtype"].set_type(proto::DT_RESOURCE);
      nodes.push_back(&node);
      continue;
    }
    DType dtype;
    if (!dtype_from_tf_datatype(arg.type(), &dtype))
      return invalid_argument(
          where, "argument '", printable(arg.name()), "' has DataType ", static_cast<int>(arg.type()),
          arg.type_attr().empty() ? ", which ember does not support"
                                  : " set by an attribute; ember reads functions of fixed types");
    proto::NodeDef& node = owned.emplace_back();
    node.set_name(arg.name());
    node.set_op("Placeholder");
    (*node.mutable_attr())["dtype"].set_type(arg.type());
    proto::TensorShapeProto* shape = (*node.mutable_attr())["shape"].mutable_shape();
    shape->set_unknown_rank(true);
    if (auto attrs = def.arg_attr().find(k); attrs != def.arg_attr().end()) {
      auto shapes = attrs->second.attr().find("_output_shapes");
      if (shapes != attrs->second.attr().end() && shapes->second.list().shape_size() == 1)
        *shape = shapes->second.list().shape(0);
    }
    nodes.push_back(&node);
  }
  if (next_variable != variables.size())
    return invalid_argument(where, "the call passes ", variables.size(), " variable(s), but it takes ",
                            next_variable);
  std::unordered_map<std::string, const proto::NodeDef*> body_nodes;
  for (const proto::NodeDef& node : def.node_def()) body_nodes[node.name()] = &node;
  for (const proto::NodeDef& node : def.node_def()) {
    proto::NodeDef& copy = owned.emplace_back(node);
    for (std::string& input : *copy.mutable_input()) {
      std::string translated;
      Status s = graph_input_name(input, body_nodes, translated);
      if (!s.ok()) return s.with_prefix(where + "node '" + printable(node.name()) + "': ");
      input = std::move(translated);
    }
    nodes.push_back(&copy);
  }
  in_progress_.push_back(name);
  auto built = build_graph(nodes, {}, bindings, *this, where);
  in_progress_.pop_back();
  if (!built.ok()) return built.status();
  std::shared_ptr<FunctionGraph> fn = std::move(built).value();
  fn->name = function_base_name(name);
  Graph& g = fn->graph;
  fn->args.clear();
  for (const proto::OpDef::ArgDef& arg : sig.input_arg())
    if (arg.type() != proto::DT_RESOURCE) fn->args.push_back(g.find(arg.name()));
  // Identity nodes of the body by name -> their input, through which a branch returns a variable.
  std::unordered_map<std::string, std::string> identity_input;
  for (const proto::NodeDef& node : def.node_def())
    if (node.op() == "Identity" && node.input_size() >= 1) identity_input[node.name()] = node.input(0);
  std::vector<std::shared_ptr<VariableResource>> returned_variables;
  for (const proto::OpDef::ArgDef& arg : sig.output_arg()) {
    auto ret = def.ret().find(arg.name());
    if (ret == def.ret().end())
      return invalid_argument(where, "output '", printable(arg.name()), "' has no entry in ret");
    if (arg.type() == proto::DT_RESOURCE) {
      // A While body returns the variables it was passed, unchanged, and an If or Case branch may return
      // one (through Identity nodes): ember binds them instead.
      std::string value = ret->second;
      for (int hops = 0; hops < 64 && bindings.count(value) == 0; ++hops) {
        auto node = identity_input.find(value.substr(0, value.find(':')));
        if (node == identity_input.end() || value.find(":output:0") == std::string::npos) break;
        value = node->second;
      }
      if (bindings.count(value) == 0)
        return invalid_argument(where, "output '", printable(arg.name()), "' is a variable ('",
                                printable(ret->second),
                                "'), and not one of the function's DT_RESOURCE arguments returned as it "
                                "came; ember reads only variables passed through");
      returned_variables.push_back(bindings.at(value));
      continue;
    }
    std::string tensor;
    EMBER_RETURN_IF_ERROR(graph_input_name(ret->second, body_nodes, tensor).with_prefix(where));
    auto value = g.parse_tensor_name(tensor);
    if (!value.ok() || tensor.empty() || tensor[0] == '^')
      return invalid_argument(where, "output '", printable(arg.name()), "' is '", printable(ret->second),
                              "', which names no output of the body");
    DType dtype;
    if (!dtype_from_tf_datatype(arg.type(), &dtype) || dtype != g.spec(*value).dtype)
      return invalid_argument(where, "output '", printable(arg.name()), "' is declared ",
                              static_cast<int>(arg.type()), " but its value '", printable(ret->second),
                              "' is ", dtype_name(g.spec(*value).dtype));
    fn->results.push_back(*value);
  }
  for (const auto& entry : def.control_ret()) {
    int32_t node = g.find(entry.second);
    if (node < 0 && is_left_out_noop(def, entry.second)) continue;  // its edges went to its users
    if (node < 0 && is_table_creator(def, entry.second)) continue;
    if (node < 0)
      return invalid_argument(where, "control output '", printable(entry.first), "' names '",
                              printable(entry.second), "', which is no node of the body");
    fn->control_outputs.push_back(node);
  }
  std::sort(fn->control_outputs.begin(), fn->control_outputs.end());
  variable_results_[key] = std::move(returned_variables);
  done_[key] = fn;
  return std::shared_ptr<const FunctionGraph>(std::move(fn));
}

}  // namespace ember::graph_def_internal

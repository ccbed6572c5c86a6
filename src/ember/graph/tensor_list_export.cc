// ember's TensorLists written as TensorFlow's (tensor_list_import.h: write_tensorflow_lists).
//
// Note [Dense lists in TensorFlow's GraphDef]
// ember carries a list as a dense tensor (Note [TensorLists as dense tensors] in ops/tensor_array.cc) and
// writes its list ops over those tensors; TensorFlow's list ops take and make DT_VARIANT handles, so it
// refuses that graph. The rewrite works on one graph or function body at a time: a list a list op makes
// goes on as the variant to the list ops that take it (SetItem after SetItem never leaves list form), a
// dense value entering a list op's list input becomes a TensorListFromTensor, and a list reaching anything
// else (a dense op, a While loop variable, a branch or call argument, a function result) becomes a
// TensorListStack. So While, If, Case and call signatures carry the dense tensors ember carries: the
// boundaries need no rewrite of the functions on either side, and TensorFlow computes the same values
// (at the price of a stack and an unstack where a list crosses one, which TensorFlow's own graphs avoid).
// A FromTensor's element_shape is the tensor's row shape, computed when it runs, so a TensorListStack of
// an empty list still knows its element shape. In the graph (not a function body) the node making a list
// is renamed and its Stack takes its name, so a fetch of "name:0" still gets the dense value.
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/graph/tensor_list_import.h"

namespace ember::graph_def_internal {
namespace {

proto::DataType element_dtype(const proto::NodeDef& n) {
  for (const char* name : {"element_dtype", "T"}) {
    auto it = n.attr().find(name);
    if (it != n.attr().end()) return it->second.type();
  }
  return proto::DT_INVALID;
}

class ScopeWriter {
 public:
  ScopeWriter(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, proto::FunctionDef* function)
      : nodes_(nodes), function_(function) {
    for (const proto::NodeDef& n : nodes) {
      by_name_[n.name()] = &n;
      taken_.insert(n.name());
    }
    if (function != nullptr)
      for (const auto& arg : function->signature().input_arg()) taken_.insert(arg.name());
  }

  Status run() {
    // In the graph a list-making node hands its name to its Stack (see the Note).
    std::unordered_map<std::string, std::string> renamed;
    if (function_ == nullptr) {
      for (proto::NodeDef& n : nodes_)
        if (makes_list(n.op())) renamed[n.name()] = unique(n.name() + "/tensor_list");
    }
    std::deque<proto::NodeDef> added;  // a deque: references to its nodes stay valid as it grows
    added_ = &added;
    for (proto::NodeDef& n : nodes_) {
      for (int k = 0; k < n.input_size(); ++k) {
        const std::string input = n.input(k);
        auto value = resolve_input(input, by_name_);
        if (!value) continue;
        auto producer = by_name_.find(value->first);
        const bool list_value =
            producer != by_name_.end() && makes_list(producer->second->op()) && value->second == 0;
        const bool wants_list = takes_list(n.op()) && k == 0;
        if (list_value && wants_list) {
          if (function_ == nullptr) n.set_input(k, renamed.at(value->first));
        } else if (list_value) {
          n.set_input(k, stacked(*producer->second, renamed));
        } else if (wants_list) {
          n.set_input(k, from_tensor(input, element_dtype(n)));
        } else if (function_ == nullptr && renamed.count(value->first) > 0) {
          n.set_input(k, renamed.at(value->first) + ":" + std::to_string(value->second));  // PopBack's item
        }
      }
    }
    if (function_ != nullptr) {
      for (auto& [name, ret] : *function_->mutable_ret()) {
        auto value = resolve_input(ret, by_name_);
        if (!value || value->second != 0) continue;
        auto producer = by_name_.find(value->first);
        if (producer != by_name_.end() && makes_list(producer->second->op()))
          ret = stacked(*producer->second, renamed);
      }
    }
    for (proto::NodeDef& n : nodes_) {
      auto it = renamed.find(n.name());
      if (it == renamed.end()) continue;
      stacked(n, renamed);  // a fetch of the old name gets the dense value
      n.set_name(it->second);
    }
    for (proto::NodeDef& n : nodes_) {
      if (!is_list_op(n.op())) continue;
      n.mutable_attr()->erase("T");  // ember's type variable; TensorFlow's list ops have element_dtype
      write_concat_shape(n);
    }
    for (proto::NodeDef& n : added) *nodes_.Add() = std::move(n);
    return Status::OK();
  }

 private:
  // TensorListConcat's element_shape: ember's list of ints (empty: unknown rank) as TensorFlow's shape.
  static void write_concat_shape(proto::NodeDef& n) {
    if (n.op() != "TensorListConcat") return;
    auto it = n.mutable_attr()->find("element_shape");
    if (it == n.mutable_attr()->end() || !it->second.has_list()) return;
    const std::vector<int64_t> dims(it->second.list().i().begin(), it->second.list().i().end());
    proto::TensorShapeProto* shape = it->second.mutable_shape();  // clears the list (a oneof)
    if (dims.empty()) shape->set_unknown_rank(true);
    for (int64_t d : dims) shape->add_dim()->set_size(d);
  }

  std::string unique(const std::string& base) { return unique_name(taken_, base); }

  // How an input names output `arg` (index 0) of the node `name`.
  std::string ref(const std::string& name, const char* arg) const {
    return function_ == nullptr ? name : name + ":" + arg + ":0";
  }

  proto::NodeDef& add(const std::string& name, const char* op) {
    proto::NodeDef& n = added_->emplace_back();
    n.set_name(name);
    n.set_op(op);
    return n;
  }

  static void set_type(proto::NodeDef& n, const char* attr, proto::DataType type) {
    (*n.mutable_attr())[attr].set_type(type);
  }

  // An int32 Const holding `values` (a vector, or the scalar values[0] when `scalar`), made once per scope.
  std::string int_const(const std::string& key, const std::vector<int64_t>& values, bool scalar) {
    auto it = consts_.find(key);
    if (it != consts_.end()) return it->second;
    proto::NodeDef& n = add(unique("tensor_list/" + key), "Const");
    make_int_const(n, proto::DT_INT32, values, scalar);
    return consts_[key] = ref(n.name(), "output");
  }

  // The variant of the dense `input`: TensorListFromTensor with the input's row shape as element_shape.
  std::string from_tensor(const std::string& input, proto::DataType dtype) {
    auto it = lists_.find(input);
    if (it != lists_.end()) return it->second;
    const std::string base = unique("tensor_list/from_tensor");
    proto::NodeDef& shape = add(base + "/shape", "Shape");
    shape.add_input(input);
    set_type(shape, "T", dtype);
    set_type(shape, "out_type", proto::DT_INT32);
    const std::string shape_ref = ref(shape.name(), "output");
    const std::string begin = int_const("one", {1}, false), end = int_const("zero", {0}, false);
    proto::NodeDef& rows = add(base + "/rows", "StridedSlice");
    for (const std::string& in : {shape_ref, begin, end, begin}) rows.add_input(in);
    set_type(rows, "T", proto::DT_INT32);
    set_type(rows, "Index", proto::DT_INT32);
    for (const char* mask : {"begin_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
      (*rows.mutable_attr())[mask].set_i(0);
    (*rows.mutable_attr())["end_mask"].set_i(1);
    const std::string rows_ref = ref(rows.name(), "output");
    proto::NodeDef& list = add(base, "TensorListFromTensor");
    list.add_input(input);
    list.add_input(rows_ref);
    set_type(list, "element_dtype", dtype);
    set_type(list, "shape_type", proto::DT_INT32);
    return lists_[input] = ref(list.name(), "output_handle");
  }

  // The dense value of the list `maker` makes: its TensorListStack (made once).
  std::string stacked(const proto::NodeDef& maker,
                      const std::unordered_map<std::string, std::string>& renamed) {
    auto it = stacks_.find(maker.name());
    if (it != stacks_.end()) return it->second;
    const bool in_graph = function_ == nullptr;
    const std::string unknown_shape = int_const("unknown_shape", {-1}, true);
    // In the graph the Stack takes the maker's name (the maker is renamed when run() finishes).
    proto::NodeDef& stack = add(in_graph ? maker.name() : unique(maker.name() + "/stack"), "TensorListStack");
    const auto handle = [&](const proto::NodeDef& n) {
      if (in_graph) return renamed.at(n.name());
      return n.name() + ":" +
             (n.op() == "TensorListReserve" || n.op() == "EmptyTensorList" ? "handle" : "output_handle") +
             ":0";
    };
    stack.add_input(handle(maker));
    stack.add_input(unknown_shape);
    set_type(stack, "element_dtype", element_dtype(maker));
    (*stack.mutable_attr())["num_elements"].set_i(-1);
    return stacks_[maker.name()] = ref(stack.name(), "tensor");
  }

  google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes_;
  proto::FunctionDef* function_;
  std::unordered_map<std::string, const proto::NodeDef*> by_name_;
  std::set<std::string> taken_;
  std::unordered_map<std::string, std::string> consts_, lists_, stacks_;
  std::deque<proto::NodeDef>* added_ = nullptr;
};

// Note [An accumulating While in TensorFlow's GraphDef]
// The forward loop of a While's gradient runs with _accumulate = k (Note [Accumulating While] in
// ops/control_flow.cc): its body returns k values after the loop variables, and the node returns their
// stacks and the trip count after the loop variables' results. TensorFlow's While returns its loop
// variables and nothing else, so such a loop is written as TensorFlow's own gradient writes one: k
// TensorList loop variables (EmptyTensorList) each iteration pushes a value onto (TensorListPushBack) and
// an int32 counter, then a TensorListStack of each list, where ember's stacks were read. The body and
// condition are not rewritten: wrappers (`<name>_accumulating`) call them and do the pushing, so a
// function the library shares stays as it is. The element shape of an empty list is the stack's row
// shape where the While's output_shapes know it (a loop that runs zero times then stacks [0, ...]).
class AccumulatingWhileWriter {
 public:
  explicit AccumulatingWhileWriter(proto::GraphDef& gd) : gd_(gd) {}

  Status run() {
    EMBER_RETURN_IF_ERROR(rewrite_scope(*gd_.mutable_node(), false));
    // Wrappers are appended while the loop walks; they hold no accumulating While.
    const int functions = gd_.library().function_size();
    for (int f = 0; f < functions; ++f)
      EMBER_RETURN_IF_ERROR(
          rewrite_scope(*gd_.mutable_library()->mutable_function(f)->mutable_node_def(), true));
    return Status::OK();
  }

 private:
  static bool is_accumulating_while(const proto::NodeDef& n) {
    if (n.op() != "While" && n.op() != "StatelessWhile") return false;
    auto it = n.attr().find("_accumulate");
    return it != n.attr().end() && it->second.i() >= 0;
  }

  const proto::FunctionDef* function(const std::string& name) const {
    for (const proto::FunctionDef& f : gd_.library().function())
      if (f.signature().name() == name) return &f;
    return nullptr;
  }

  std::string unique_function(const std::string& base) const {
    std::string name = base;
    for (int k = 1; function(name) != nullptr; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  Status rewrite_scope(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, bool in_function) {
    std::set<std::string> taken;
    for (const proto::NodeDef& n : nodes) taken.insert(n.name());
    std::deque<proto::NodeDef> added;  // a deque: references to its nodes stay valid as it grows
    // (While name, output) of a stack -> the input that names its TensorListStack.
    std::map<std::pair<std::string, int>, std::string> stacks;
    auto unique = [&](const std::string& base) {
      std::string name = base;
      for (int k = 1; !taken.insert(name).second; ++k) name = base + "_" + std::to_string(k);
      return name;
    };
    auto ref = [&](const std::string& node, const char* arg, int k) {
      return in_function ? node + ":" + arg + ":" + std::to_string(k)
                         : (k == 0 ? node : node + ":" + std::to_string(k));
    };
    auto int_const = [&](const std::string& base, const std::vector<int64_t>& dims, bool scalar) {
      proto::NodeDef& c = added.emplace_back();
      c.set_name(unique(base));
      make_int_const(c, proto::DT_INT32, dims, scalar);
      return ref(c.name(), "output", 0);
    };
    for (proto::NodeDef& w : nodes) {
      if (!is_accumulating_while(w)) continue;
      const int k = static_cast<int>(w.attr().at("_accumulate").i());
      const auto attr = [&](const char* name) {
        auto it = w.attr().find(name);
        return it == w.attr().end() ? proto::AttrValue() : it->second;
      };
      const proto::FunctionDef* body = function(attr("body").func().name());
      const proto::FunctionDef* cond = function(attr("cond").func().name());
      if (body == nullptr || cond == nullptr)
        return invalid_argument("GraphDef export: the While ", w.name(),
                                " calls functions the library lacks");
      const proto::AttrValue type_attr = attr("T");
      const std::vector<int> types(type_attr.list().type().begin(), type_attr.list().type().end());
      int m = 0;  // loop variables before the variables (DT_RESOURCE) passed last
      while (m < static_cast<int>(types.size()) && types[m] != proto::DT_RESOURCE) ++m;
      const int r = static_cast<int>(types.size()) - m;
      if (body->signature().output_arg_size() != m + k + r)
        return invalid_argument("GraphDef export: the While ", w.name(), " accumulates ", k,
                                " values but its body ", body->signature().name(), " returns ",
                                body->signature().output_arg_size(), " for ", m, " loop variables and ", r,
                                " variables");
      std::vector<int> element_types;
      for (int j = 0; j < k; ++j) element_types.push_back(body->signature().output_arg(m + j).type());
      const proto::AttrValue shapes_attr = attr("output_shapes");
      const auto& shapes = shapes_attr.list().shape();
      // The accumulator lists, a counter, then the variables.
      std::vector<std::string> inputs(w.input().begin(), w.input().end());
      std::vector<std::string> data(inputs.begin(), inputs.begin() + std::min<int>(m + r, inputs.size()));
      std::vector<std::string> controls(inputs.begin() + data.size(), inputs.end());
      std::vector<std::string> new_inputs(data.begin(), data.begin() + m);
      for (int j = 0; j < k; ++j) {
        std::vector<int64_t> element;
        bool known = m + j < shapes.size() && !shapes[m + j].unknown_rank() && shapes[m + j].dim_size() >= 1;
        for (int d = 1; known && d < shapes[m + j].dim_size(); ++d) {
          element.push_back(shapes[m + j].dim(d).size());
          known = element.back() >= 0;
        }
        const std::string shape = known ? int_const(w.name() + "/accumulator_shape", element, false)
                                        : int_const(w.name() + "/accumulator_shape", {-1}, true);
        const std::string unlimited = int_const(w.name() + "/accumulator_size", {-1}, true);
        proto::NodeDef& list = added.emplace_back();
        list.set_name(unique(w.name() + "/accumulator"));
        list.set_op("EmptyTensorList");
        list.add_input(shape);
        list.add_input(unlimited);
        (*list.mutable_attr())["element_dtype"].set_type(static_cast<proto::DataType>(element_types[j]));
        (*list.mutable_attr())["shape_type"].set_type(proto::DT_INT32);
        new_inputs.push_back(ref(list.name(), "handle", 0));
      }
      new_inputs.push_back(int_const(w.name() + "/trip_count", {0}, true));
      for (int j = m; j < m + r && j < static_cast<int>(data.size()); ++j) new_inputs.push_back(data[j]);
      for (const std::string& c : controls) new_inputs.push_back(c);
      w.clear_input();
      for (const std::string& in : new_inputs) w.add_input(in);
      std::vector<int> new_types(types.begin(), types.begin() + m);
      for (int j = 0; j < k; ++j) new_types.push_back(proto::DT_VARIANT);
      new_types.push_back(proto::DT_INT32);
      for (int j = m; j < m + r; ++j) new_types.push_back(types[j]);
      proto::AttrValue::ListValue* t = (*w.mutable_attr())["T"].mutable_list();
      t->clear_type();
      for (int type : new_types) t->add_type(static_cast<proto::DataType>(type));
      proto::AttrValue::ListValue* out_shapes = (*w.mutable_attr())["output_shapes"].mutable_list();
      for (int j = 0; j < k && m + j < out_shapes->shape_size(); ++j)
        out_shapes->mutable_shape(m + j)->Clear();
      w.mutable_attr()->erase("_accumulate");
      (*w.mutable_attr())["body"].mutable_func()->set_name(
          wrap(*body, true, w.op() == "While", m, k, r, element_types));
      (*w.mutable_attr())["cond"].mutable_func()->set_name(
          wrap(*cond, false, w.op() == "While", m, k, r, {}));
      for (int j = 0; j < k; ++j) {
        proto::NodeDef& stack = added.emplace_back();
        stack.set_name(unique(w.name() + "/stack"));
        stack.set_op("TensorListStack");
        stack.add_input(ref(w.name(), "output", m + j));
        stack.add_input(int_const(w.name() + "/unknown_shape", {-1}, true));
        (*stack.mutable_attr())["element_dtype"].set_type(static_cast<proto::DataType>(element_types[j]));
        (*stack.mutable_attr())["num_elements"].set_i(-1);
        stacks[{w.name(), m + j}] = ref(stack.name(), "tensor", 0);
      }
    }
    if (stacks.empty()) return Status::OK();
    std::unordered_map<std::string, const proto::NodeDef*> by_name;
    for (const proto::NodeDef& n : nodes) by_name[n.name()] = &n;
    for (proto::NodeDef& n : nodes)
      for (int i = 0; i < n.input_size(); ++i)
        if (auto v = resolve_input(n.input(i), by_name))
          if (auto it = stacks.find(*v); it != stacks.end()) n.set_input(i, it->second);
    for (proto::NodeDef& n : added) *nodes.Add() = std::move(n);
    return Status::OK();
  }

  // A wrapper of the body (is_body: it pushes the k values the body returns after its m loop
  // variables and counts) or of the condition, taking m loop variables, k lists, the counter and r
  // variables. Made once per function.
  std::string wrap(const proto::FunctionDef& f, bool is_body, bool stateful, int m, int k, int r,
                   const std::vector<int>& element_types) {
    const std::string key = f.signature().name() + (is_body ? "|body" : "|cond");
    if (auto it = wrappers_.find(key); it != wrappers_.end()) return it->second;
    proto::FunctionDef w;
    const std::string name = unique_function(f.signature().name() + "_accumulating");
    w.mutable_signature()->set_name(name);
    std::vector<std::string> args;
    auto add_arg = [&](const std::string& arg, int type) {
      proto::OpDef::ArgDef* a = w.mutable_signature()->add_input_arg();
      a->set_name(arg);
      a->set_type(static_cast<proto::DataType>(type));
      args.push_back(arg);
    };
    for (int j = 0; j < m; ++j) add_arg("loop_var_" + std::to_string(j), f.signature().input_arg(j).type());
    for (int j = 0; j < k; ++j) add_arg("accumulator_" + std::to_string(j), proto::DT_VARIANT);
    add_arg("trip_count", proto::DT_INT32);
    for (int j = 0; j < r; ++j) add_arg("variable_" + std::to_string(j), proto::DT_RESOURCE);
    proto::NodeDef& call = *w.add_node_def();
    call.set_name("call");
    call.set_op(stateful ? "StatefulPartitionedCall" : "PartitionedCall");
    for (int j = 0; j < m; ++j) call.add_input(args[j]);
    for (int j = 0; j < r; ++j) call.add_input(args[m + k + 1 + j]);
    (*call.mutable_attr())["f"].mutable_func()->set_name(f.signature().name());
    for (const auto& a : f.signature().input_arg())
      (*call.mutable_attr())["Tin"].mutable_list()->add_type(a.type());
    for (const auto& a : f.signature().output_arg())
      (*call.mutable_attr())["Tout"].mutable_list()->add_type(a.type());
    auto add_result = [&](int type, const std::string& value) {
      const std::string out = "output_" + std::to_string(w.signature().output_arg_size());
      proto::OpDef::ArgDef* a = w.mutable_signature()->add_output_arg();
      a->set_name(out);
      a->set_type(static_cast<proto::DataType>(type));
      (*w.mutable_ret())[out] = value;
    };
    if (!is_body) {
      add_result(f.signature().output_arg(0).type(), "call:output:0");
    } else {
      for (int j = 0; j < m; ++j)
        add_result(f.signature().output_arg(j).type(), "call:output:" + std::to_string(j));
      for (int j = 0; j < k; ++j) {
        proto::NodeDef& push = *w.add_node_def();
        push.set_name("push_" + std::to_string(j));
        push.set_op("TensorListPushBack");
        push.add_input(args[m + j]);
        push.add_input("call:output:" + std::to_string(m + j));
        (*push.mutable_attr())["element_dtype"].set_type(static_cast<proto::DataType>(element_types[j]));
        add_result(proto::DT_VARIANT, push.name() + ":output_handle:0");
      }
      proto::NodeDef& one = *w.add_node_def();
      one.set_name("one");
      make_int_const(one, proto::DT_INT32, {1}, true);
      proto::NodeDef& next = *w.add_node_def();
      next.set_name("next_trip_count");
      next.set_op("AddV2");
      next.add_input("trip_count");
      next.add_input("one:output:0");
      (*next.mutable_attr())["T"].set_type(proto::DT_INT32);
      add_result(proto::DT_INT32, "next_trip_count:z:0");
      for (int j = 0; j < r; ++j) add_result(proto::DT_RESOURCE, args[m + k + 1 + j]);
    }
    *gd_.mutable_library()->add_function() = std::move(w);
    return wrappers_[key] = name;
  }

  proto::GraphDef& gd_;
  std::unordered_map<std::string, std::string> wrappers_;
};

// Note [InplaceUpdate in TensorFlow's GraphDef]
// ember's InplaceUpdate (a TensorArray's write) is functional: the executor lets it take x's buffer only
// when x dies there. TensorFlow's op of that name writes into x's buffer whatever else reads x, so a graph
// that reads x after writing it (a write's gradient reads dy and zeroes the written rows of dy) races. It is
// written as TensorScatterUpdate(x, ExpandDims(i, 1), v): the same value, and TensorFlow reuses x's buffer
// only when nothing else holds it.
void write_inplace_updates(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes,
                           proto::FunctionDef* function) {
  std::set<std::string> taken;
  for (const proto::NodeDef& n : nodes) taken.insert(n.name());
  std::vector<proto::NodeDef> added;
  std::unordered_map<std::string, std::string> renamed;  // "node:y:0" -> "node:output:0" in a function body
  for (proto::NodeDef& n : nodes) {
    if (n.op() != "InplaceUpdate" || n.input_size() < 3) continue;
    auto unique = [&](const std::string& base) { return unique_name(taken, base); };
    proto::NodeDef& axis = added.emplace_back();
    axis.set_name(unique(n.name() + "/axis"));
    make_int_const(axis, proto::DT_INT32, {1}, true);
    const std::string axis_ref = function == nullptr ? axis.name() : axis.name() + ":output:0";
    proto::NodeDef indices;
    indices.set_name(unique(n.name() + "/indices"));
    indices.set_op("ExpandDims");
    indices.add_input(n.input(1));
    indices.add_input(axis_ref);
    (*indices.mutable_attr())["T"].set_type(proto::DT_INT32);
    (*indices.mutable_attr())["Tdim"].set_type(proto::DT_INT32);
    n.set_op("TensorScatterUpdate");
    n.set_input(1, function == nullptr ? indices.name() : indices.name() + ":output:0");
    (*n.mutable_attr())["Tindices"].set_type(proto::DT_INT32);
    added.push_back(std::move(indices));
    if (function != nullptr) renamed[n.name() + ":y:0"] = n.name() + ":output:0";
  }
  for (proto::NodeDef& n : added) *nodes.Add() = std::move(n);
  if (renamed.empty()) return;
  for (proto::NodeDef& n : nodes)
    for (int k = 0; k < n.input_size(); ++k)
      if (auto it = renamed.find(n.input(k)); it != renamed.end()) n.set_input(k, it->second);
  for (auto& [name, ret] : *function->mutable_ret())
    if (auto it = renamed.find(ret); it != renamed.end()) ret = it->second;
}

bool has_list_ops(const google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes) {
  for (const proto::NodeDef& n : nodes)
    if (is_list_op(n.op())) return true;
  return false;
}

}  // namespace

Status write_tensorflow_lists(proto::GraphDef& gd) {
  if (has_list_ops(gd.node())) EMBER_RETURN_IF_ERROR(ScopeWriter(*gd.mutable_node(), nullptr).run());
  write_inplace_updates(*gd.mutable_node(), nullptr);
  if (!gd.has_library()) return Status::OK();  // (mutable_library() would add an empty one to the bytes)
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function()) {
    if (has_list_ops(f.node_def())) EMBER_RETURN_IF_ERROR(ScopeWriter(*f.mutable_node_def(), &f).run());
    write_inplace_updates(*f.mutable_node_def(), &f);
  }
  return AccumulatingWhileWriter(gd).run();
}

}  // namespace ember::graph_def_internal

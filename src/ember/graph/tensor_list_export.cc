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
    std::vector<proto::NodeDef> added;
    added_ = &added;
    for (proto::NodeDef& n : nodes_) {
      for (int k = 0; k < n.input_size(); ++k) {
        const std::string input = n.input(k);
        auto value = resolve_input(input, by_name_);
        if (!value) continue;
        auto producer = by_name_.find(value->first);
        const bool list_value = producer != by_name_.end() && makes_list(producer->second->op()) &&
                                value->second == 0;
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

  std::string unique(const std::string& base) {
    std::string name = base;
    for (int k = 1; !taken_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

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
  std::string int_const(const std::string& key, std::vector<int32_t> values, bool scalar) {
    auto it = consts_.find(key);
    if (it != consts_.end()) return it->second;
    proto::NodeDef& n = add(unique("tensor_list/" + key), "Const");
    set_type(n, "dtype", proto::DT_INT32);
    proto::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
    t->set_dtype(proto::DT_INT32);
    if (!scalar) t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
    for (int32_t v : values) t->add_int_val(v);
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
  std::string stacked(const proto::NodeDef& maker, const std::unordered_map<std::string, std::string>& renamed) {
    auto it = stacks_.find(maker.name());
    if (it != stacks_.end()) return it->second;
    const bool in_graph = function_ == nullptr;
    const std::string unknown_shape = int_const("unknown_shape", {-1}, true);
    // In the graph the Stack takes the maker's name (the maker is renamed when run() finishes).
    proto::NodeDef& stack = add(in_graph ? maker.name() : unique(maker.name() + "/stack"), "TensorListStack");
    const auto handle = [&](const proto::NodeDef& n) {
      if (in_graph) return renamed.at(n.name());
      return n.name() + ":" + (n.op() == "TensorListReserve" || n.op() == "EmptyTensorList" ? "handle"
                                                                                                : "output_handle") +
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
  std::vector<proto::NodeDef>* added_ = nullptr;
};

bool has_list_ops(const google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes) {
  for (const proto::NodeDef& n : nodes)
    if (is_list_op(n.op())) return true;
  return false;
}

}  // namespace

Status write_tensorflow_lists(proto::GraphDef& gd) {
  if (has_list_ops(gd.node())) EMBER_RETURN_IF_ERROR(ScopeWriter(*gd.mutable_node(), nullptr).run());
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    if (has_list_ops(f.node_def())) EMBER_RETURN_IF_ERROR(ScopeWriter(*f.mutable_node_def(), &f).run());
  return Status::OK();
}

}  // namespace ember::graph_def_internal

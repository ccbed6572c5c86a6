// Element dtypes for the TensorList handles of an imported GraphDef (tensor_list_import.h).
//
// A TensorList travels as a DT_VARIANT: through Identity nodes, While loop variables, If/Case branch
// arguments and results, and function calls. Only the TensorList ops say what it holds (element_dtype).
// Every variant value is a slot (a node output, a function argument or result); slots that must hold the
// same list are joined (union-find), each group takes the element_dtype of the TensorList ops touching it,
// and the library's DT_VARIANT arguments and results are rewritten to it. Nodes' own "T"/"Tin"/"Tout"
// attributes need no rewrite: ember derives those from the values it imports.
#include "ember/graph/tensor_list_import.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/graph/graph_def_ops.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/registry.h"

namespace ember::graph_def_internal {
namespace {

class Slots {
 public:
  int id(const std::string& key) {
    auto [it, added] = ids_.emplace(key, static_cast<int>(parent_.size()));
    if (added) {
      parent_.push_back(it->second);
      dtype_.push_back(-1);
    }
    return it->second;
  }
  int find(int a) {
    while (parent_[a] != a) a = parent_[a] = parent_[parent_[a]];
    return a;
  }
  Status join(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return Status::OK();
    parent_[b] = a;
    return set_dtype(a, dtype_[b]);
  }
  Status set_dtype(int a, int dtype) {
    a = find(a);
    if (dtype < 0 || dtype_[a] == dtype) return Status::OK();
    if (dtype_[a] >= 0)
      return invalid_argument("GraphDef: one TensorList is used with element dtypes ", dtype_[a], " and ",
                              dtype, " (TensorFlow DataType numbers)");
    dtype_[a] = dtype;
    return Status::OK();
  }
  // The element dtype of the slot `key`, or -1.
  int dtype_of(const std::string& key) {
    auto it = ids_.find(key);
    return it == ids_.end() ? -1 : dtype_[find(it->second)];
  }

 private:
  std::unordered_map<std::string, int> ids_;
  std::vector<int> parent_, dtype_;
};

std::string node_slot(const std::string& scope, const std::string& node, int output) {
  return scope + "|" + node + ":" + std::to_string(output);
}
std::string result_slot(const std::string& function, int k) { return function + "|>" + std::to_string(k); }

}  // namespace

bool is_list_op(const std::string& op) { return op.rfind("TensorList", 0) == 0 || op == "EmptyTensorList"; }

bool takes_list(const std::string& op) {
  return is_list_op(op) && op != "TensorListReserve" && op != "EmptyTensorList" &&
         op != "TensorListFromTensor" && op != "TensorListScatter" && op != "TensorListScatterV2" &&
         op != "TensorListSplit";
}

bool makes_list(const std::string& op) {
  return is_list_op(op) && op != "TensorListGetItem" && op != "TensorListStack" && op != "TensorListLength" &&
         op != "TensorListElementShape" && op != "TensorListGather" && op != "TensorListConcat" &&
         op != "TensorListConcatV2";
}

std::string unique_name(std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; !taken.insert(name).second; ++k) name = base + "_" + std::to_string(k);
  return name;
}

void make_int_const(proto::NodeDef& node, proto::DataType type, const std::vector<int64_t>& values,
                    bool scalar) {
  node.set_op("Const");
  (*node.mutable_attr())["dtype"].set_type(type);
  proto::TensorProto* t = (*node.mutable_attr())["value"].mutable_tensor();
  t->set_dtype(type);
  if (!scalar) t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
  for (int64_t v : values) {
    if (type == proto::DT_INT64) {
      t->add_int64_val(v);
    } else {
      t->add_int_val(static_cast<int32_t>(v));
    }
  }
}

std::optional<std::pair<std::string, int>> resolve_input(
    const std::string& input, const std::unordered_map<std::string, const proto::NodeDef*>& nodes) {
  if (input.empty() || input[0] == '^') return std::nullopt;
  auto number = [](const std::string& k) -> std::optional<int> {
    if (k.empty() || k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoi(k);
  };
  const size_t first = input.find(':');
  if (first == std::string::npos) return std::make_pair(input, 0);
  const std::string node = input.substr(0, first);
  const size_t second = input.find(':', first + 1);
  if (second == std::string::npos) {
    auto k = number(input.substr(first + 1));
    if (!k) return std::nullopt;
    return std::make_pair(node, *k);
  }
  auto k = number(input.substr(second + 1));
  auto it = nodes.find(node);
  if (!k || it == nodes.end()) return std::nullopt;
  const OpDef* op = OpRegistry::global().find(graph_def_ops::ember_op_type(it->second->op()));
  if (op == nullptr) return std::nullopt;
  const int output = graph_def_ops::output_number(*op, input.substr(first + 1, second - first - 1), *k);
  if (output < 0) return std::nullopt;
  return std::make_pair(node, output);
}

namespace {

// The slot an input string names in `scope` ("" for the graph, whose inputs are "node" or "node:k"; else a
// function, whose inputs are an argument name or "node:output_arg:k"); empty for a control input or a name
// it cannot resolve.
std::string input_slot(const std::string& scope, const std::string& input,
                       const std::unordered_map<std::string, const proto::NodeDef*>& nodes) {
  auto value = resolve_input(input, nodes);
  return value ? node_slot(scope, value->first, value->second) : "";
}

std::vector<int> attr_types(const proto::NodeDef& node, const std::string& name) {
  std::vector<int> out;
  auto it = node.attr().find(name);
  if (it != node.attr().end())
    for (int t : it->second.list().type()) out.push_back(t);
  return out;
}

std::string func_attr(const proto::NodeDef& node, const std::string& name) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? "" : it->second.func().name();
}

class Typer {
 public:
  explicit Typer(proto::GraphDef& gd) : gd_(gd) {
    for (const proto::FunctionDef& f : gd.library().function()) functions_[f.signature().name()] = &f;
  }

  Status run() {
    std::unordered_map<std::string, const proto::NodeDef*> graph_nodes;
    for (const proto::NodeDef& n : gd_.node()) graph_nodes[n.name()] = &n;
    for (const proto::NodeDef& n : gd_.node()) EMBER_RETURN_IF_ERROR(visit("", n, graph_nodes));
    for (const auto& [name, f] : functions_) {
      std::unordered_map<std::string, const proto::NodeDef*> nodes;
      for (const proto::NodeDef& n : f->node_def()) nodes[n.name()] = &n;
      for (const proto::NodeDef& n : f->node_def()) EMBER_RETURN_IF_ERROR(visit(name, n, nodes));
      const proto::OpDef& sig = f->signature();
      for (int k = 0; k < sig.output_arg_size(); ++k) {
        if (sig.output_arg(k).type() != proto::DT_VARIANT) continue;
        auto ret = f->ret().find(sig.output_arg(k).name());
        if (ret == f->ret().end()) continue;
        std::string value = input_slot(name, ret->second, nodes);
        if (!value.empty()) EMBER_RETURN_IF_ERROR(join(result_slot(name, k), value));
      }
    }
    rewrite();
    return Status::OK();
  }

 private:
  Status join(const std::string& a, const std::string& b) { return slots_.join(slots_.id(a), slots_.id(b)); }

  // Joins argument k of `function` (and its result k when `result`) with `slot`.
  Status join_arg(const std::string& function, int k, const std::string& slot) {
    auto it = functions_.find(function);
    if (it == functions_.end() || slot.empty() || k >= it->second->signature().input_arg_size())
      return Status::OK();
    return join(node_slot(function, it->second->signature().input_arg(k).name(), 0), slot);
  }

  Status visit(const std::string& scope, const proto::NodeDef& n,
               const std::unordered_map<std::string, const proto::NodeDef*>& nodes) {
    const std::string& op = n.op();
    auto in = [&](int k) {
      return k < n.input_size() ? input_slot(scope, n.input(k), nodes) : std::string();
    };
    auto out = [&](int k) { return node_slot(scope, n.name(), k); };
    if (is_list_op(op)) {
      int dtype = -1;
      if (auto it = n.attr().find("element_dtype"); it != n.attr().end()) dtype = it->second.type();
      if (takes_list(op) && !in(0).empty()) {
        int id = slots_.id(in(0));
        EMBER_RETURN_IF_ERROR(slots_.set_dtype(id, dtype));
        if (makes_list(op)) EMBER_RETURN_IF_ERROR(join(in(0), out(0)));
      }
      if (makes_list(op)) EMBER_RETURN_IF_ERROR(slots_.set_dtype(slots_.id(out(0)), dtype));
      return Status::OK();
    }
    if (op == "Identity" || op == "Snapshot") {
      auto t = n.attr().find("T");
      if (t != n.attr().end() && t->second.type() == proto::DT_VARIANT && !in(0).empty())
        return join(in(0), out(0));
      return Status::OK();
    }
    if (op == "While" || op == "StatelessWhile") {
      const std::vector<int> types = attr_types(n, "T");
      const std::string cond = func_attr(n, "cond"), body = func_attr(n, "body");
      for (int k = 0; k < static_cast<int>(types.size()); ++k) {
        if (types[k] != proto::DT_VARIANT || in(k).empty()) continue;
        EMBER_RETURN_IF_ERROR(join(in(k), out(k)));
        EMBER_RETURN_IF_ERROR(join_arg(cond, k, out(k)));
        EMBER_RETURN_IF_ERROR(join_arg(body, k, out(k)));
        EMBER_RETURN_IF_ERROR(join(result_slot(body, k), out(k)));
      }
      return Status::OK();
    }
    std::vector<std::string> callees;
    int first_input = 0;
    if (op == "If" || op == "StatelessIf") {
      callees = {func_attr(n, "then_branch"), func_attr(n, "else_branch")};
      first_input = 1;
    } else if (op == "Case" || op == "StatelessCase") {
      if (auto it = n.attr().find("branches"); it != n.attr().end())
        for (const auto& f : it->second.list().func()) callees.push_back(f.name());
      first_input = 1;
    } else if (op == "PartitionedCall" || op == "StatefulPartitionedCall") {
      callees = {func_attr(n, "f")};
    } else {
      return Status::OK();
    }
    const std::vector<int> tin = attr_types(n, "Tin"), tout = attr_types(n, "Tout");
    for (const std::string& callee : callees) {
      for (int k = 0; k < static_cast<int>(tin.size()); ++k)
        if (tin[k] == proto::DT_VARIANT) EMBER_RETURN_IF_ERROR(join_arg(callee, k, in(first_input + k)));
      for (int k = 0; k < static_cast<int>(tout.size()); ++k)
        if (tout[k] == proto::DT_VARIANT) EMBER_RETURN_IF_ERROR(join(result_slot(callee, k), out(k)));
    }
    return Status::OK();
  }

  void rewrite() {
    for (proto::FunctionDef& f : *gd_.mutable_library()->mutable_function()) {
      const std::string name = f.signature().name();
      proto::OpDef& sig = *f.mutable_signature();
      for (int k = 0; k < sig.input_arg_size(); ++k) {
        proto::OpDef::ArgDef& arg = *sig.mutable_input_arg(k);
        if (arg.type() != proto::DT_VARIANT) continue;
        const int dtype = slots_.dtype_of(node_slot(name, arg.name(), 0));
        if (dtype < 0) continue;
        arg.set_type(static_cast<proto::DataType>(dtype));
        // A variant's recorded shape is a scalar's; the list's dense tensor has a shape of its own.
        auto attrs = f.mutable_arg_attr()->find(k);
        if (attrs != f.mutable_arg_attr()->end()) attrs->second.mutable_attr()->erase("_output_shapes");
      }
      for (int k = 0; k < sig.output_arg_size(); ++k) {
        proto::OpDef::ArgDef& arg = *sig.mutable_output_arg(k);
        if (arg.type() != proto::DT_VARIANT) continue;
        const int dtype = slots_.dtype_of(result_slot(name, k));
        if (dtype >= 0) arg.set_type(static_cast<proto::DataType>(dtype));
      }
    }
  }

  proto::GraphDef& gd_;
  std::unordered_map<std::string, const proto::FunctionDef*> functions_;
  Slots slots_;
};

// Note [Splitting imported lists into pieces of different lengths]
// A dense list holds one element shape, so a TensorListSplit into pieces of different lengths has no dense
// form. It is imported as a ragged array instead: its value (the pieces concatenated) and its lengths, used
// by plain ops, where every use of the list is one of these:
// - a read: TensorListConcat(V2) (the value and the lengths), TensorListGetItem (a StridedSlice from the sum
//   of the lengths before the index), TensorListLength (the number of lengths), TensorListElementShape (the
//   Split's element_shape operand);
// - what TensorFlow's gradient graph of a split does with lists: Identity, ZerosLike, AddN of lists, and
//   lists of holes, a TensorListReserve whose element shape is an ElementShape of such a list (the gradient
//   of a GetItem) written once by TensorListSetItem. A list of holes is its size and its writes: added to a
//   ragged array, each write is added into the rows of its piece (TensorScatterAdd); concatenated by
//   TensorListConcatV2, whose leading_dims give the holes' lengths, it is zeros with its writes added, as
//   TensorFlow fills its uninitialized elements with zeros.
// The lists so connected (a family: Splits, such Reserves, and the lists they flow into) are rewritten
// together and never made, so they run with any lengths and have ember's gradients. A family with another
// use (a While, a call, another list op, a function result, a control input, a second SetItem, a GetItem of
// holes) keeps its dense lists; only the reads of its Splits (through Identity) become plain ops, and the
// dense lists need equal lengths when they run (they are pruned where nothing fetched needs them).
class RaggedSplitRewriter {
 public:
  RaggedSplitRewriter(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, proto::FunctionDef* function)
      : nodes_(nodes), function_(function) {
    for (const proto::NodeDef& n : nodes) taken_.insert(n.name());
  }

  void run() {
    for (const proto::NodeDef& n : nodes_) by_name_[n.name()] = &n;
    find_families();
    if (family_.empty()) return;
    const std::set<int> kept = families_kept();
    // Every decision is taken before a node changes: a changed op would resolve its outputs' names anew.
    std::vector<std::pair<int, RaggedList>> reads;
    for (int i = 0; i < nodes_.size(); ++i) {
      const proto::NodeDef& n = nodes_.Get(i);
      const std::string list = n.input_size() > 0 && is_read(n.op()) ? member(n.input(0)) : "";
      if (list.empty()) continue;
      if (kept.count(find(list)) > 0 && !split_itself(list)) continue;
      reads.emplace_back(i, form(list));
    }
    for (const auto& [name, id] : family_)
      if (kept.count(find(name)) == 0) dropped_.insert(name);
    for (auto& [u, list] : reads) rewrite_read(u, list);
    for (proto::NodeDef& n : nodes_)
      for (int k = 0; k < n.input_size(); ++k)
        if (auto it = outputs_.find(n.input(k)); it != outputs_.end()) n.set_input(k, it->second);
    for (proto::NodeDef& n : added_)
      for (int k = 0; k < n.input_size(); ++k)
        if (auto it = outputs_.find(n.input(k)); it != outputs_.end()) n.set_input(k, it->second);
    if (function_ != nullptr)
      for (auto& [name, ret] : *function_->mutable_ret())
        if (auto it = outputs_.find(ret); it != outputs_.end()) ret = it->second;
    std::vector<proto::NodeDef> kept_nodes;
    for (proto::NodeDef& n : nodes_)
      if (dropped_.count(n.name()) == 0) kept_nodes.push_back(std::move(n));
    for (proto::NodeDef& n : added_) kept_nodes.push_back(std::move(n));
    nodes_.Clear();
    for (proto::NodeDef& n : kept_nodes) *nodes_.Add() = std::move(n);
  }

 private:
  // A list of the family in plain values: a ragged array (`full`: value and lengths) or a list of holes (its
  // size and the (index, item) writes added into it).
  struct RaggedList {
    bool full = false;
    std::string value, lengths, size, element_shape;
    int dtype = proto::DT_FLOAT, shape_type = proto::DT_INT32;
    std::vector<std::pair<std::string, std::string>> writes;
  };

  static bool is_read(const std::string& op) {
    return op == "TensorListConcatV2" || op == "TensorListConcat" || op == "TensorListGetItem" ||
           op == "TensorListLength" || op == "TensorListElementShape";
  }

  // Whether a GetItem names its index (a data input after the list).
  static bool has_index(const proto::NodeDef& n) {
    return n.input_size() >= 2 && !n.input(1).empty() && n.input(1)[0] != '^';
  }

  static int type_attr(const proto::NodeDef& n, const char* name, int otherwise) {
    auto it = n.attr().find(name);
    return it == n.attr().end() ? otherwise : it->second.type();
  }

  // The node named by a data input, or "".
  std::string source(const std::string& input) const {
    auto value = resolve_input(input, by_name_);
    return value && value->second == 0 ? value->first : "";
  }
  // The family list a data input names, or "".
  std::string member(const std::string& input) const {
    const std::string name = source(input);
    return family_.count(name) > 0 ? name : "";
  }

  int find(const std::string& name) {
    int a = family_.at(name);
    while (parent_[a] != a) a = parent_[a] = parent_[parent_[a]];
    return a;
  }
  void unite(const std::string& a, const std::string& b) { parent_[find(b)] = find(a); }
  void add_member(const std::string& name) {
    family_.emplace(name, static_cast<int>(parent_.size()));
    parent_.push_back(static_cast<int>(parent_.size()));
  }

  // The lists a node links into a family (the family lists among its inputs), if it makes a family list.
  std::vector<std::string> linked(const proto::NodeDef& n) const {
    const std::string& op = n.op();
    std::vector<std::string> lists;
    if ((op == "Identity" || op == "ZerosLike" || op == "TensorListSetItem") && n.input_size() > 0) {
      if (std::string list = member(n.input(0)); !list.empty()) lists.push_back(list);
    } else if (op == "AddN") {
      for (const std::string& in : n.input())
        if (std::string list = member(in); !list.empty()) lists.push_back(list);
    } else if (op == "TensorListReserve" && n.input_size() > 0) {
      auto shape = by_name_.find(source(n.input(0)));
      if (shape != by_name_.end() && shape->second->op() == "TensorListElementShape" &&
          shape->second->input_size() > 0)
        if (std::string list = member(shape->second->input(0)); !list.empty()) lists.push_back(list);
    }
    return lists;
  }

  void find_families() {
    for (const proto::NodeDef& n : nodes_)
      if (n.op() == "TensorListSplit" && n.input_size() >= 3) add_member(n.name());
    for (bool grew = !family_.empty(); grew;) {
      grew = false;
      for (const proto::NodeDef& n : nodes_) {
        if (family_.count(n.name()) > 0) continue;
        const std::vector<std::string> lists = linked(n);
        if (lists.empty()) continue;
        add_member(n.name());
        for (const std::string& list : lists) unite(list, n.name());
        grew = true;
      }
    }
  }

  // Whether the family list `name` is a ragged array (else a list of holes).
  bool full(const std::string& name) {
    if (auto it = full_.find(name); it != full_.end()) return it->second;
    const proto::NodeDef& n = *by_name_.at(name);
    bool is_full = n.op() == "TensorListSplit";
    if (n.op() == "AddN") {
      for (const std::string& in : n.input())
        if (std::string list = member(in); !list.empty()) is_full = is_full || full(list);
    } else if (n.op() != "TensorListSplit" && n.op() != "TensorListReserve") {
      is_full = full(member(n.input(0)));
    }
    return full_[name] = is_full;
  }

  // Whether the family list `name` is a Split seen through Identity nodes.
  bool split_itself(const std::string& name) const {
    const proto::NodeDef* n = by_name_.at(name);
    while (n->op() == "Identity") n = by_name_.at(member(n->input(0)));
    return n->op() == "TensorListSplit";
  }

  // The families (by root) with a use the rewrite cannot express: their lists stay dense.
  std::set<int> families_kept() {
    std::set<int> kept;
    auto keep = [&](const std::string& name) { kept.insert(find(name)); };
    for (const proto::NodeDef& n : nodes_) {
      const bool in_family = family_.count(n.name()) > 0;
      for (int k = 0; k < n.input_size(); ++k) {
        const std::string& input = n.input(k);
        if (!input.empty() && input[0] == '^') {
          if (family_.count(input.substr(1)) > 0) keep(input.substr(1));
          continue;
        }
        auto value = resolve_input(input, by_name_);
        if (!value || family_.count(value->first) == 0) {
          if (in_family && n.op() == "AddN") keep(n.name());  // adds a list from elsewhere
          continue;
        }
        const std::string& op = n.op();
        const bool ok = value->second == 0 &&
                        (in_family ? op == "AddN" || (k == 0 && op != "TensorListReserve")
                                   : k == 0 && is_read(op) && (op != "TensorListGetItem" || has_index(n)));
        if (!ok) keep(value->first);
      }
      if (in_family && n.op() == "TensorListSetItem") {
        const std::string list = member(n.input(0));
        const proto::NodeDef* base = by_name_.at(list);
        while (base->op() == "Identity") base = by_name_.at(member(base->input(0)));
        if (base->op() != "TensorListReserve" || n.input_size() < 3) keep(n.name());  // one write per list
      }
      if (!in_family && n.input_size() > 0 && (n.op() == "TensorListGetItem" || n.op() == "TensorListConcat"))
        if (std::string list = member(n.input(0)); !list.empty() && !full(list)) keep(list);
    }
    if (function_ != nullptr)
      for (const auto& [name, ret] : function_->ret())
        if (auto value = resolve_input(ret, by_name_); value && family_.count(value->first) > 0)
          keep(value->first);
    return kept;
  }

  // The plain values of the family list `name`, adding the ops that compute them.
  RaggedList form(const std::string& name) {
    if (auto it = forms_.find(name); it != forms_.end()) return it->second;
    const proto::NodeDef& n = *by_name_.at(name);
    const std::string& op = n.op();
    RaggedList list;
    if (op == "TensorListSplit") {
      list.full = true;
      list.value = n.input(0), list.element_shape = n.input(1), list.lengths = n.input(2);
      list.dtype = type_attr(n, "element_dtype", proto::DT_FLOAT);
      list.shape_type = type_attr(n, "shape_type", proto::DT_INT32);
    } else if (op == "TensorListReserve") {
      list.element_shape = n.input(0), list.size = n.input(1);
      list.dtype = type_attr(n, "element_dtype", proto::DT_FLOAT);
      list.shape_type = type_attr(n, "shape_type", proto::DT_INT32);
    } else if (op == "Identity") {
      list = form(member(n.input(0)));
    } else if (op == "ZerosLike") {
      list = form(member(n.input(0)));
      if (list.full) {
        proto::NodeDef& zeros = add(name + "/value", "ZerosLike", {list.value});
        set_type(zeros, "T", list.dtype);
        list.value = ref(zeros.name(), "ZerosLike");
      }
      list.writes.clear();
    } else if (op == "TensorListSetItem") {
      list = form(member(n.input(0)));
      list.writes.emplace_back(n.input(1), n.input(2));
    } else {  // AddN
      list = add_lists(name, n);
    }
    return forms_[name] = list;
  }

  RaggedList add_lists(const std::string& name, const proto::NodeDef& n) {
    std::vector<RaggedList> terms;
    for (const std::string& in : n.input())
      if (std::string list = member(in); !list.empty()) terms.push_back(form(list));
    RaggedList sum = terms[0];
    std::vector<std::string> values;
    for (const RaggedList& t : terms)
      if (t.full) {
        if (!sum.full) sum = t;
        values.push_back(t.value);
      }
    sum.writes.clear();
    if (values.size() > 1) {
      proto::NodeDef& add_n = add(name + "/value", "AddN", values);
      set_type(add_n, "T", sum.dtype);
      (*add_n.mutable_attr())["N"].set_i(static_cast<int64_t>(values.size()));
      sum.value = ref(add_n.name(), "AddN");
    }
    for (const RaggedList& t : terms)
      if (!t.full) sum.writes.insert(sum.writes.end(), t.writes.begin(), t.writes.end());
    if (!sum.full) return sum;
    for (const auto& [index, item] : sum.writes)
      sum.value = add_piece(name, sum.value, sum.lengths, index, item, sum.dtype);
    sum.writes.clear();
    return sum;
  }

  std::string unique(const std::string& base) { return unique_name(taken_, base); }

  // How an input names output 0 of the node `name` of TensorFlow's type `op`.
  std::string ref(const std::string& name, const std::string& op) const {
    if (function_ == nullptr) return name;
    const OpDef* def = OpRegistry::global().find(graph_def_ops::ember_op_type(op));
    return name + ":" + (def == nullptr ? "output" : graph_def_ops::tf_output_arg(*def, 0).first) + ":0";
  }

  proto::NodeDef& add(const std::string& base, const std::string& op, std::vector<std::string> inputs) {
    proto::NodeDef& n = added_.emplace_back();
    n.set_name(unique(base));
    n.set_op(op);
    for (std::string& in : inputs) n.add_input(std::move(in));
    return n;
  }

  static void set_type(proto::NodeDef& n, const char* attr, int type) {
    (*n.mutable_attr())[attr].set_type(static_cast<proto::DataType>(type));
  }

  std::string int_const(const std::string& base, proto::DataType type, std::vector<int64_t> values,
                        bool scalar) {
    proto::NodeDef& c = add(base, "Const", {});
    make_int_const(c, type, values, scalar);
    return ref(c.name(), "Const");
  }

  // `scalar` as a vector of one int64.
  std::string as_vector(const std::string& base, const std::string& scalar) {
    proto::NodeDef& r =
        add(base, "Reshape", {scalar, int_const(base + "/shape", proto::DT_INT32, {1}, false)});
    set_type(r, "T", proto::DT_INT64);
    set_type(r, "Tshape", proto::DT_INT32);
    return ref(r.name(), "Reshape");
  }

  // The first row and the row past the last of piece `index` (int32) of an array of `lengths` (int64).
  std::pair<std::string, std::string> piece_rows(const std::string& base, const std::string& lengths,
                                                 const std::string& index) {
    const std::string axis = int_const(base + "/axis", proto::DT_INT32, {0}, true);
    proto::NodeDef& starts = add(base + "/starts", "Cumsum", {lengths, axis});
    set_type(starts, "T", proto::DT_INT64);
    set_type(starts, "Tidx", proto::DT_INT32);
    (*starts.mutable_attr())["exclusive"].set_b(true);
    (*starts.mutable_attr())["reverse"].set_b(false);
    auto gather = [&](const std::string& name, const std::string& params) {
      proto::NodeDef& g = add(name, "GatherV2", {params, index, axis});
      set_type(g, "Tparams", proto::DT_INT64);
      set_type(g, "Tindices", proto::DT_INT32);  // TensorFlow's GetItem and SetItem index
      set_type(g, "Taxis", proto::DT_INT32);
      (*g.mutable_attr())["batch_dims"].set_i(0);
      return ref(g.name(), "GatherV2");
    };
    const std::string start = gather(base + "/start", ref(starts.name(), "Cumsum"));
    proto::NodeDef& end = add(base + "/end", "AddV2", {start, gather(base + "/length", lengths)});
    set_type(end, "T", proto::DT_INT64);
    return {start, ref(end.name(), "AddV2")};
  }

  // `value` with `item` added into the rows of piece `index`.
  std::string add_piece(const std::string& base, const std::string& value, const std::string& lengths,
                        const std::string& index, const std::string& item, int dtype) {
    const std::string piece = unique(base + "/piece");
    const auto [start, end] = piece_rows(piece, lengths, index);
    proto::NodeDef& rows =
        add(piece + "/rows", "Range", {start, end, int_const(piece + "/delta", proto::DT_INT64, {1}, true)});
    set_type(rows, "Tidx", proto::DT_INT64);
    proto::NodeDef& indices =
        add(piece + "/indices", "Reshape",
            {ref(rows.name(), "Range"), int_const(piece + "/column", proto::DT_INT32, {-1, 1}, false)});
    set_type(indices, "T", proto::DT_INT64);
    set_type(indices, "Tshape", proto::DT_INT32);
    proto::NodeDef& sum =
        add(piece + "/add", "TensorScatterAdd", {value, ref(indices.name(), "Reshape"), item});
    set_type(sum, "T", dtype);
    set_type(sum, "Tindices", proto::DT_INT64);
    return ref(sum.name(), "TensorScatterAdd");
  }

  // A list of holes concatenated with pieces of `lengths`: zeros with its writes added.
  std::string concat_holes(const std::string& base, const RaggedList& list, const std::string& lengths) {
    const std::string axis = int_const(base + "/axis", proto::DT_INT32, {0}, true);
    proto::NodeDef& total = add(base + "/rows", "Sum", {lengths, axis});
    set_type(total, "T", proto::DT_INT64);
    set_type(total, "Tidx", proto::DT_INT32);
    (*total.mutable_attr())["keep_dims"].set_b(false);
    std::string shape;  // a piece's shape: a written item's, else the list's element shape
    if (!list.writes.empty()) {
      proto::NodeDef& s = add(base + "/item_shape", "Shape", {list.writes[0].second});
      set_type(s, "T", list.dtype);
      set_type(s, "out_type", proto::DT_INT64);
      shape = ref(s.name(), "Shape");
    } else {
      proto::NodeDef& s = add(base + "/element_shape", "Cast", {list.element_shape});
      set_type(s, "SrcT", list.shape_type);
      set_type(s, "DstT", proto::DT_INT64);
      (*s.mutable_attr())["Truncate"].set_b(false);
      shape = ref(s.name(), "Cast");
    }
    proto::NodeDef& tail = add(base + "/row_shape", "Slice",
                               {shape, int_const(base + "/begin", proto::DT_INT32, {1}, false),
                                int_const(base + "/size", proto::DT_INT32, {-1}, false)});
    set_type(tail, "T", proto::DT_INT64);
    set_type(tail, "Index", proto::DT_INT32);
    proto::NodeDef& dims =
        add(base + "/shape", "ConcatV2",
            {as_vector(base + "/rows_vector", ref(total.name(), "Sum")), ref(tail.name(), "Slice"), axis});
    set_type(dims, "T", proto::DT_INT64);
    set_type(dims, "Tidx", proto::DT_INT32);
    (*dims.mutable_attr())["N"].set_i(2);
    proto::NodeDef& zero =
        add(base + "/zero", "Cast", {int_const(base + "/int_zero", proto::DT_INT32, {0}, true)});
    set_type(zero, "SrcT", proto::DT_INT32);
    set_type(zero, "DstT", list.dtype);
    (*zero.mutable_attr())["Truncate"].set_b(false);
    proto::NodeDef& zeros =
        add(base + "/zeros", "Fill", {ref(dims.name(), "ConcatV2"), ref(zero.name(), "Cast")});
    set_type(zeros, "T", list.dtype);
    set_type(zeros, "index_type", proto::DT_INT64);
    std::string value = ref(zeros.name(), "Fill");
    for (const auto& [index, item] : list.writes)
      value = add_piece(base, value, lengths, index, item, list.dtype);
    return value;
  }

  // Turns `n` into `op` over `inputs`, keeping its name and control inputs; its attributes are cleared.
  static void become(proto::NodeDef& n, const std::string& op, const std::vector<std::string>& inputs) {
    std::vector<std::string> controls;
    for (const std::string& in : n.input())
      if (!in.empty() && in[0] == '^') controls.push_back(in);
    n.set_op(op);
    n.clear_input();
    n.clear_attr();
    for (const std::string& in : inputs) n.add_input(in);
    for (const std::string& in : controls) n.add_input(in);
  }

  // Turns the read `nodes_[u]` of `list` into plain ops on its values; notes its renamed outputs (in a
  // function body "concat:lengths:0" becomes the lengths' Identity, "get:item:0" the StridedSlice's, ...).
  void rewrite_read(int u, const RaggedList& list) {
    proto::NodeDef& n = *nodes_.Mutable(u);
    const std::string name = n.name(), op = n.op();
    if (op == "TensorListConcatV2" || op == "TensorListConcat") {
      const std::string lengths = list.full ? list.lengths : n.input(2);
      const std::string value = list.full ? list.value : concat_holes(name, list, lengths);
      proto::NodeDef& joined_lengths = add(name + "/lengths", "Identity", {lengths});
      set_type(joined_lengths, "T", proto::DT_INT64);
      outputs_[name + ":lengths:0"] = outputs_[name + ":1"] = ref(joined_lengths.name(), "Identity");
      outputs_[name + ":tensor:0"] = ref(name, "Identity");
      become(n, "Identity", {value});
      set_type(n, "T", list.dtype);
    } else if (op == "TensorListGetItem") {
      const auto [start, end] = piece_rows(name, list.lengths, n.input(1));
      const std::string begin_v = as_vector(name + "/begin", start);
      const std::string end_v = as_vector(name + "/end_vector", end);
      const std::string stride = int_const(name + "/stride", proto::DT_INT64, {1}, false);
      outputs_[name + ":item:0"] = ref(name, "StridedSlice");
      become(n, "StridedSlice", {list.value, begin_v, end_v, stride});
      set_type(n, "T", list.dtype);
      set_type(n, "Index", proto::DT_INT64);
      for (const char* mask :
           {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
        (*n.mutable_attr())[mask].set_i(0);
    } else if (op == "TensorListLength") {
      outputs_[name + ":length:0"] = ref(name, list.full ? "Size" : "Identity");
      become(n, list.full ? "Size" : "Identity", {list.full ? list.lengths : list.size});
      if (list.full) {
        set_type(n, "T", proto::DT_INT64);
        set_type(n, "out_type", proto::DT_INT32);
      } else {
        set_type(n, "T", proto::DT_INT32);
      }
    } else {  // TensorListElementShape: the list's element_shape operand, in the type asked for
      const int want = type_attr(n, "shape_type", proto::DT_INT32);
      const bool same = want == list.shape_type;
      outputs_[name + ":element_shape:0"] = ref(name, same ? "Identity" : "Cast");
      become(n, same ? "Identity" : "Cast", {list.element_shape});
      if (same) {
        set_type(n, "T", list.shape_type);
      } else {
        set_type(n, "SrcT", list.shape_type);
        set_type(n, "DstT", want);
        (*n.mutable_attr())["Truncate"].set_b(false);
      }
    }
  }

  google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes_;
  proto::FunctionDef* function_;
  std::unordered_map<std::string, const proto::NodeDef*> by_name_;
  std::unordered_map<std::string, int> family_;  // list name -> union-find id
  std::vector<int> parent_;
  std::unordered_map<std::string, bool> full_;
  std::unordered_map<std::string, RaggedList> forms_;
  std::unordered_map<std::string, std::string> outputs_;
  std::set<std::string> taken_, dropped_;
  std::deque<proto::NodeDef> added_;
};

}  // namespace

// TensorListConcat's element_shape attribute is TensorFlow's shape, unknown rank by default; ember's is a
// list of ints where an empty list is the unknown rank (a scalar element cannot be concatenated).
void rewrite_concat_shapes(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes) {
  for (proto::NodeDef& n : nodes) {
    if (n.op() != "TensorListConcat") continue;
    auto it = n.mutable_attr()->find("element_shape");
    if (it == n.mutable_attr()->end() || !it->second.has_shape()) continue;
    const proto::TensorShapeProto shape = it->second.shape();
    proto::AttrValue::ListValue* list = it->second.mutable_list();  // clears the shape (a oneof)
    if (shape.unknown_rank()) continue;
    for (const auto& d : shape.dim()) list->add_i(d.size());
  }
}

Status type_tensor_lists(proto::GraphDef& gd) {
  RaggedSplitRewriter(*gd.mutable_node(), nullptr).run();
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    RaggedSplitRewriter(*f.mutable_node_def(), &f).run();
  rewrite_concat_shapes(*gd.mutable_node());
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    rewrite_concat_shapes(*f.mutable_node_def());
  bool any = false;
  for (const proto::NodeDef& n : gd.node()) any |= is_list_op(n.op());
  for (const proto::FunctionDef& f : gd.library().function())
    for (const proto::NodeDef& n : f.node_def()) any |= is_list_op(n.op());
  if (!any) return Status::OK();
  return Typer(gd).run();
}

}  // namespace ember::graph_def_internal

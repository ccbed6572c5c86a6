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
// form. What TensorFlow programs do with such a list is read it back: TensorListConcat(V2) (the split value
// and its lengths again), TensorListGetItem (one piece), TensorListLength, TensorListElementShape. Each such
// read of a Split's list in the same graph or function body (through Identity nodes) becomes plain ops on
// the split value and its lengths (a concat is the value itself, GetItem a StridedSlice from the sum of the
// lengths before the index, Length the number of lengths, ElementShape the Split's element_shape operand),
// which run with any lengths and have ember's gradients; when nothing else uses the list, it is never made.
// A list that also goes elsewhere (a While, a call, another list op, an AddN of lists in TensorFlow's own
// gradient graph, the Stack ember's export names after it) keeps its dense TensorListSplit for those uses,
// which needs equal lengths when it runs (and is pruned where nothing fetched needs it).
class RaggedSplitRewriter {
 public:
  RaggedSplitRewriter(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, proto::FunctionDef* function)
      : nodes_(nodes), function_(function) {
    for (const proto::NodeDef& n : nodes) taken_.insert(n.name());
  }

  void run() {
    bool changed = false;
    for (int s = 0; s < nodes_.size(); ++s) {
      if (nodes_.Get(s).op() != "TensorListSplit" || nodes_.Get(s).input_size() < 3) continue;
      std::unordered_map<std::string, const proto::NodeDef*> by_name;
      for (const proto::NodeDef& n : nodes_) by_name[n.name()] = &n;
      std::vector<int> reads, identities;
      const bool only_read = collect_reads(nodes_.Get(s).name(), by_name, reads, identities);
      if (reads.empty()) continue;
      rewrite(s, reads);
      if (only_read) {  // the list itself is never needed: dropped by the loop below
        nodes_.Mutable(s)->clear_name();
        for (int i : identities) nodes_.Mutable(i)->clear_name();
      }
      changed = true;
    }
    if (!changed) return;
    std::vector<proto::NodeDef> kept;
    for (proto::NodeDef& n : nodes_)
      if (!n.name().empty()) kept.push_back(std::move(n));
    for (proto::NodeDef& n : added_) kept.push_back(std::move(n));
    nodes_.Clear();
    for (proto::NodeDef& n : kept) *nodes_.Add() = std::move(n);
  }

 private:
  static bool is_read(const std::string& op) {
    return op == "TensorListConcatV2" || op == "TensorListConcat" || op == "TensorListGetItem" ||
           op == "TensorListLength" || op == "TensorListElementShape";
  }

  // Whether a GetItem names its index (a data input after the list).
  static bool has_index(const proto::NodeDef& n) {
    return n.input_size() >= 2 && !n.input(1).empty() && n.input(1)[0] != '^';
  }

  // Fills the nodes that read the list `list` (a node's output 0) and the Identity nodes passing it on (by
  // index); whether nothing else uses it.
  bool collect_reads(const std::string& list,
                     const std::unordered_map<std::string, const proto::NodeDef*>& by_name,
                     std::vector<int>& uses, std::vector<int>& identities) {
    bool only_read = true;
    std::set<std::string> names = {list};
    for (bool grew = true; grew;) {
      grew = false;
      for (int i = 0; i < nodes_.size(); ++i) {
        const proto::NodeDef& n = nodes_.Get(i);
        if (names.count(n.name()) > 0) continue;
        for (int k = 0; k < n.input_size(); ++k) {
          const std::string& input = n.input(k);
          if (!input.empty() && input[0] == '^') {
            if (names.count(input.substr(1)) > 0) only_read = false;  // waits on the list: keep it
            continue;
          }
          auto value = resolve_input(input, by_name);
          if (!value || names.count(value->first) == 0) continue;
          if (value->second != 0) {
            only_read = false;
          } else if (n.op() == "Identity" && k == 0) {
            names.insert(n.name());
            identities.push_back(i);
            grew = true;
          } else if (is_read(n.op()) && k == 0 && (n.op() != "TensorListGetItem" || has_index(n))) {
            if (std::find(uses.begin(), uses.end(), i) == uses.end()) uses.push_back(i);
          } else {
            only_read = false;
          }
        }
      }
    }
    if (function_ != nullptr)
      for (const auto& [name, ret] : function_->ret())
        if (auto value = resolve_input(ret, by_name); value && names.count(value->first) > 0)
          only_read = false;
    return only_read;
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

  // Turns the reads `uses` of the list split by node `s` into plain ops on its value and lengths.
  void rewrite(int s, const std::vector<int>& uses) {
    const proto::NodeDef split = nodes_.Get(s);
    const std::string value = split.input(0), element_shape = split.input(1), lengths = split.input(2);
    int dtype = proto::DT_FLOAT, shape_type = proto::DT_INT32;
    if (auto it = split.attr().find("element_dtype"); it != split.attr().end()) dtype = it->second.type();
    if (auto it = split.attr().find("shape_type"); it != split.attr().end()) shape_type = it->second.type();
    // Output renames in a function body ("concat:lengths:0" -> the lengths' Identity, "get:item:0" -> ...).
    std::unordered_map<std::string, std::string> outputs;
    for (int u : uses) {
      proto::NodeDef& n = *nodes_.Mutable(u);
      const std::string name = n.name(), op = n.op();
      if (op == "TensorListConcatV2" || op == "TensorListConcat") {
        proto::NodeDef& joined_lengths = add(name + "/lengths", "Identity", {lengths});
        set_type(joined_lengths, "T", proto::DT_INT64);
        outputs[name + ":lengths:0"] = outputs[name + ":1"] = ref(joined_lengths.name(), "Identity");
        outputs[name + ":tensor:0"] = ref(name, "Identity");
        become(n, "Identity", {value});
        set_type(n, "T", dtype);
      } else if (op == "TensorListGetItem") {
        const std::string index = n.input(1);
        const int index_type = proto::DT_INT32;  // TensorFlow's GetItem index
        const std::string axis = int_const(name + "/axis", proto::DT_INT32, {0}, true);
        proto::NodeDef& starts = add(name + "/starts", "Cumsum", {lengths, axis});
        set_type(starts, "T", proto::DT_INT64);
        set_type(starts, "Tidx", proto::DT_INT32);
        (*starts.mutable_attr())["exclusive"].set_b(true);
        (*starts.mutable_attr())["reverse"].set_b(false);
        auto gather = [&](const std::string& base, const std::string& params) {
          proto::NodeDef& g = add(base, "GatherV2", {params, index, axis});
          set_type(g, "Tparams", proto::DT_INT64);
          set_type(g, "Tindices", index_type);
          set_type(g, "Taxis", proto::DT_INT32);
          (*g.mutable_attr())["batch_dims"].set_i(0);
          return ref(g.name(), "GatherV2");
        };
        const std::string start = gather(name + "/start", ref(starts.name(), "Cumsum"));
        const std::string length = gather(name + "/length", lengths);
        proto::NodeDef& end = add(name + "/end", "AddV2", {start, length});
        set_type(end, "T", proto::DT_INT64);
        const std::string vector = int_const(name + "/vector", proto::DT_INT32, {1}, false);
        auto as_vector = [&](const std::string& base, const std::string& scalar) {
          proto::NodeDef& r = add(base, "Reshape", {scalar, vector});
          set_type(r, "T", proto::DT_INT64);
          set_type(r, "Tshape", proto::DT_INT32);
          return ref(r.name(), "Reshape");
        };
        const std::string begin_v = as_vector(name + "/begin", start);
        const std::string end_v = as_vector(name + "/end_vector", ref(end.name(), "AddV2"));
        const std::string stride = int_const(name + "/stride", proto::DT_INT64, {1}, false);
        outputs[name + ":item:0"] = ref(name, "StridedSlice");
        become(n, "StridedSlice", {value, begin_v, end_v, stride});
        set_type(n, "T", dtype);
        set_type(n, "Index", proto::DT_INT64);
        for (const char* mask :
             {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
          (*n.mutable_attr())[mask].set_i(0);
      } else if (op == "TensorListLength") {
        outputs[name + ":length:0"] = ref(name, "Size");
        become(n, "Size", {lengths});
        set_type(n, "T", proto::DT_INT64);
        set_type(n, "out_type", proto::DT_INT32);
      } else {  // TensorListElementShape: the Split's element_shape operand, in the type asked for
        int want = proto::DT_INT32;
        if (auto it = n.attr().find("shape_type"); it != n.attr().end()) want = it->second.type();
        outputs[name + ":element_shape:0"] = ref(name, want == shape_type ? "Identity" : "Cast");
        become(n, want == shape_type ? "Identity" : "Cast", {element_shape});
        if (want == shape_type) {
          set_type(n, "T", shape_type);
        } else {
          set_type(n, "SrcT", shape_type);
          set_type(n, "DstT", want);
          (*n.mutable_attr())["Truncate"].set_b(false);
        }
      }
    }
    for (proto::NodeDef& n : nodes_)
      for (int k = 0; k < n.input_size(); ++k)
        if (auto it = outputs.find(n.input(k)); it != outputs.end()) n.set_input(k, it->second);
    for (proto::NodeDef& n : added_)
      for (int k = 0; k < n.input_size(); ++k)
        if (auto it = outputs.find(n.input(k)); it != outputs.end()) n.set_input(k, it->second);
    if (function_ != nullptr)
      for (auto& [name, ret] : *function_->mutable_ret())
        if (auto it = outputs.find(ret); it != outputs.end()) ret = it->second;
  }

  google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes_;
  proto::FunctionDef* function_;
  std::set<std::string> taken_;
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

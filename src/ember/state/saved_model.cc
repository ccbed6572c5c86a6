#include "ember/state/saved_model.h"

#include <google/protobuf/text_format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <fstream>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ember/core/lookup_table.h"
#include "ember/graph/graph_def.h"
#include "ember/graph/tensor_proto.h"
#include "ember/runtime/executor.h"
#include "ember/saved_model.pb.h"
#include "ember/state/object_graph.h"
#include "ember/state/tensor_bundle.h"

namespace ember {

// Note [SavedModel to ember]
// TensorFlow 2 writes a SavedModel's MetaGraphDef GraphDef as a thin top level over its function library:
//   w = VarHandleOp(shared_name="w")                        one per variable
//   serving_default_x = Placeholder(dtype, shape)           one per signature input
//   StatefulPartitionedCall(serving_default_x, w, b; f=__inference_signature_wrapper_34)
// and the SignatureDef names the tensors ("serving_default_x:0" -> "StatefulPartitionedCall:0"). The
// saver's functions (SaveV2, RestoreV2) hang off other nodes that no signature reaches. So the loader takes
// the nodes the signatures' outputs reach, turns each VarHandleOp into the resource Placeholder ember's
// importer binds a variable to (Note [Variables in a GraphDef] in graph/graph_def.cc), imports that
// GraphDef once, and carves one compiled function per signature out of it (prune_function).
// Which checkpoint entry holds a VarHandleOp's value: the SavedObjectGraph lists, for each concrete
// function, the ids of the objects a call passes after the caller's arguments (bound_inputs), so the
// trailing inputs of a call node name the objects of its handles; the checkpoint's own object graph
// (_CHECKPOINTABLE_OBJECT_GRAPH, whose node ids are the SavedObjectGraph's) gives each variable object
// the key of its VARIABLE_VALUE. A handle that no call binds is matched by its shared_name to the one
// SavedVariable of that name. This is the path TensorFlow's own loader follows (by object, not by name),
// so two variables with one name stay apart.
//
// Note [Tables in a SavedModel]
// A lookup table is a table-creating node of the top level (HashTableV2, ...), which the importer binds
// (Note [Tables in a GraphDef] in graph/graph_def.cc), passed to the signature calls like a variable
// handle; the init op (SignatureDef __saved_model_init_op, a NoOp) waits on one call per table that fills
// it (its _initialize function: LookupTableImportV2 of constants, or InitializeTableFromTextFileV2 of an
// asset's path, read from the asset's variable after it is assigned). The loader keeps those calls with
// the signatures' nodes and runs them once, after the import: the asset variables already hold their
// paths (asset_path), so the Assign that feeds them is not needed. A MutableHashTable's entries are in the
// checkpoint under its object's attribute "table" (<key>-keys, <key>-values): the object is the one the
// signature calls bind to its creating node (bound_inputs, as for variables), and the loader imports them
// into the table its shared_name names in the table registry (the one import made; the name carries the
// load's suffix, Note [Tables shared within one load]). A DenseHashTable's
// checkpoint holds its bucket array: imported whole, then its empty and deleted keys removed.
//
// Note [Tables shared within one load]
// TensorFlow's C++ loader runs a SavedModel in a Session of its own, whose resource manager is the
// session's: table-creating nodes naming one shared_name (or, with use_node_name_sharing, one node name)
// share one table within a load, and two loads of one SavedModel never share (checked with two
// tf.compat.v1 Sessions). ember's table registry is one per process, so the loader appends a suffix
// unique to the load, "_load_<n>", to the shared name of every table-creating node, at the top level and
// in the function library, before anything reads it: sharing stays within the load, as a Session's.
// A node with no shared name and no node-name sharing is left alone (the import makes its table). After
// the import the registry hands the load's named tables over to its signatures, which hold them as they
// hold its variables, so a model's tables go with it rather than living until the process ends.

namespace {

constexpr std::string_view kInitOpSignature = "__saved_model_init_op";

bool creates_table(const proto::NodeDef& node) { return is_table_creating_op(node.op()); }

// Note [Tables shared within one load]; the suffix.
std::string scope_table_names_to_load(proto::GraphDef& graph) {
  static std::atomic<int64_t> loads{0};
  const std::string suffix = "_load_" + std::to_string(++loads);
  auto scope = [&](proto::NodeDef& node) {
    if (!creates_table(node)) return;
    auto& attrs = *node.mutable_attr();
    std::string name = attrs.count("shared_name") ? attrs.at("shared_name").s() : "";
    const bool node_name_sharing =
        attrs.count("use_node_name_sharing") && attrs.at("use_node_name_sharing").b();
    if (name.empty() && !node_name_sharing) return;
    if (name.empty()) name = node.name();
    attrs["shared_name"].set_s(name + suffix);
  };
  for (proto::NodeDef& node : *graph.mutable_node()) scope(node);
  for (proto::FunctionDef& function : *graph.mutable_library()->mutable_function())
    for (proto::NodeDef& node : *function.mutable_node_def()) scope(node);
  return suffix;
}

// `text` from the file for an error message: bytes outside printable ASCII as \xNN.
std::string printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text.substr(0, 200)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return text.size() > 200 ? out + "..." : out;
}

std::string node_of(std::string_view input) {
  if (!input.empty() && input[0] == '^') input.remove_prefix(1);
  return std::string(input.substr(0, input.find(':')));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

std::string spec_string(const SignatureTensor& t) {
  std::string out = std::string(dtype_name(t.dtype));
  if (t.unknown_rank) return out + " of any shape";
  out += " [";
  for (size_t i = 0; i < t.shape.size(); ++i)
    out += (i ? ", " : "") + (t.shape[i] < 0 ? std::string("None") : std::to_string(t.shape[i]));
  return out + "]";
}

// What a signature's TensorInfo says, checked: a dense tensor of a dtype ember has, naming a node of
// the graph.
Status read_tensor_info(const std::string& key, const proto::TensorInfo& info,
                        const std::unordered_map<std::string, const proto::NodeDef*>& nodes,
                        SignatureTensor& out) {
  out.key = key;
  if (info.encoding_case() != proto::TensorInfo::kName)
    return make_error(Code::kUnimplemented, "'", key,
                      "' is a sparse or composite tensor; ember loads signatures of dense tensors only");
  out.tensor = info.name();
  if (!dtype_from_tf_datatype(info.dtype(), &out.dtype))
    return invalid_argument("'", key, "' has DataType ", static_cast<int>(info.dtype()),
                            ", which ember has no dtype for");
  EMBER_RETURN_IF_ERROR(
      from_shape_proto(info.tensor_shape(), out.shape, out.unknown_rank).with_prefix("'" + key + "': "));
  if (nodes.count(node_of(out.tensor)) == 0 || out.tensor.empty() || out.tensor[0] == '^')
    return invalid_argument("'", key, "' names the tensor '", printable(out.tensor),
                            "', which is not in the graph");
  return Status::OK();
}

StatusOr<std::string> read_file(const std::string& path, int64_t limit) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return make_error(Code::kNotFound, "'", path, "' does not exist");
  if (!S_ISREG(st.st_mode)) return invalid_argument("'", path, "' is not a regular file");
  if (st.st_size > limit)
    return invalid_argument("'", path, "' is ", st.st_size, " bytes, past the limit of ", limit);
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::kNotFound, "'", path, "' cannot be opened");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size()))
    return make_error(Code::kDataLoss, "'", path, "': read ", in.gcount(), " of ", bytes.size(), " bytes");
  return bytes;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

// ---- LoadedSignature

LoadedSignature::LoadedSignature(std::string name, std::vector<SignatureTensor> inputs,
                                 std::vector<SignatureTensor> outputs,
                                 std::shared_ptr<CompiledFunction> compiled,
                                 std::vector<std::shared_ptr<VariableResource>> variables)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      compiled_(std::move(compiled)),
      variables_(std::move(variables)) {}

LoadedSignature::~LoadedSignature() = default;

StatusOr<std::vector<TensorRef>> LoadedSignature::call(
    const std::map<std::string, TensorRef, std::less<>>& inputs) const {
  const std::string where = "signature '" + name_ + "': ";
  auto expected = [&] {
    std::vector<std::string> list;
    for (const SignatureTensor& t : inputs_) list.push_back("'" + t.key + "' (" + spec_string(t) + ")");
    return join(list);
  };
  for (const auto& entry : inputs) {
    const std::string& key = entry.first;
    bool known =
        std::any_of(inputs_.begin(), inputs_.end(), [&](const SignatureTensor& t) { return t.key == key; });
    if (!known)
      return invalid_argument(where, "got the input '", printable(key),
                              "', which it does not take; its inputs are ", expected());
  }
  std::vector<TensorImpl*> args;
  for (const SignatureTensor& spec : inputs_) {
    auto found = inputs.find(spec.key);
    if (found == inputs.end() || found->second.get() == nullptr)
      return invalid_argument(where, "the input '", spec.key, "' (", spec_string(spec),
                              ") is missing; its inputs are ", expected());
    const TensorImpl& t = *found->second;
    if (t.dtype() != spec.dtype)
      return invalid_argument(where, "the input '", spec.key, "' should be ", spec_string(spec), ", got ",
                              dtype_name(t.dtype()), " ", t.shape().to_string());
    bool shape_ok = spec.unknown_rank || t.shape().rank() == static_cast<int>(spec.shape.size());
    for (size_t d = 0; shape_ok && !spec.unknown_rank && d < spec.shape.size(); ++d)
      shape_ok = spec.shape[d] < 0 || spec.shape[d] == t.shape().dim(static_cast<int>(d));
    if (!shape_ok)
      return invalid_argument(where, "the input '", spec.key, "' should be ", spec_string(spec), ", got ",
                              dtype_name(t.dtype()), " ", t.shape().to_string());
    args.push_back(found->second.get());
  }
  OutputList results;
  EMBER_RETURN_IF_ERROR(compiled_->run({args.data(), args.size()}, results).with_prefix(where));
  std::vector<TensorRef> out;
  for (TensorRef& r : results) out.push_back(std::move(r));
  return out;
}

// ---- Loading

class SavedModelLoader {
 public:
  // The function library is taken out of `meta` when the graph is imported.
  SavedModelLoader(proto::MetaGraphDef& meta, const std::string& prefix, std::string dir, std::string where,
                   std::string table_suffix)
      : meta_(meta),
        graph_(meta.graph_def()),
        library_(meta.mutable_graph_def()->mutable_library()),
        prefix_(prefix),
        dir_(std::move(dir)),
        where_(std::move(where)),
        table_suffix_(std::move(table_suffix)) {}

  Status run(LoadedSavedModel& model);

 private:
  Status read_signatures();
  Status reached_nodes();
  Status bind_handles_to_objects();
  Status restore_variables(LoadedSavedModel& model);
  Status restore_tables();
  Status remove_reserved_keys(const proto::NodeDef& node, LookupTable& table);
  Status open_checkpoint(bool object_based);
  std::string name_based_key(const proto::NodeDef& handle, const std::string& shared_name);
  StatusOr<std::string> asset_path(const proto::NodeDef& handle);

  const proto::MetaGraphDef& meta_;
  const proto::GraphDef& graph_;
  proto::FunctionDefLibrary* library_;
  std::string prefix_;
  std::string dir_;
  std::string where_;
  std::string table_suffix_;  // of this load's tables' shared names (Note [Tables shared within one load])
  std::unordered_map<std::string, const proto::NodeDef*> nodes_;
  struct Signature {
    std::string name;
    std::vector<SignatureTensor> inputs, outputs;
  };
  std::vector<Signature> signatures_;
  std::vector<const proto::NodeDef*> reached_;  // in the GraphDef's order
  std::vector<std::string> init_fetches_;       // the init op's calls (Note [Tables in a SavedModel])
  std::map<std::string, int> handle_object_;    // VarHandleOp node -> SavedObjectGraph node id
  std::map<std::string, int> table_object_;     // MutableHashTableV2 node -> SavedObjectGraph node id
  std::vector<std::string> table_keys_;         // by object id: its "table" attribute's key, or ""
  std::unique_ptr<BundleReader> reader_;
  std::vector<std::string> checkpoint_keys_;  // by object id: its VARIABLE_VALUE key, or ""
  VariableBindings bindings_;
};

Status SavedModelLoader::read_signatures() {
  for (const proto::NodeDef& node : graph_.node()) {
    if (!nodes_.emplace(node.name(), &node).second)
      return invalid_argument(where_, "the graph has two nodes named '", printable(node.name()), "'");
  }
  for (const auto& [name, def] : meta_.signature_def()) {
    if (name == kInitOpSignature) continue;
    Signature sig{name, {}, {}};
    const std::string at = where_ + "signature '" + printable(name) + "': ";
    for (const auto& [key, info] : def.inputs()) {
      EMBER_RETURN_IF_ERROR(
          read_tensor_info(key, info, nodes_, sig.inputs.emplace_back()).with_prefix(at + "input "));
    }
    for (const auto& [key, info] : def.outputs()) {
      EMBER_RETURN_IF_ERROR(
          read_tensor_info(key, info, nodes_, sig.outputs.emplace_back()).with_prefix(at + "output "));
    }
    if (sig.outputs.empty()) return invalid_argument(at, "has no outputs");
    auto by_key = [](const SignatureTensor& a, const SignatureTensor& b) { return a.key < b.key; };
    std::sort(sig.inputs.begin(), sig.inputs.end(), by_key);
    std::sort(sig.outputs.begin(), sig.outputs.end(), by_key);
    signatures_.push_back(std::move(sig));
  }
  std::sort(signatures_.begin(), signatures_.end(),
            [](const Signature& a, const Signature& b) { return a.name < b.name; });
  return Status::OK();
}

// The nodes the signatures' outputs (and inputs) reach through data and control inputs. A name that no
// node has stays an input of what is kept: the importer reports it, naming the node.
Status SavedModelLoader::reached_nodes() {
  std::unordered_set<std::string> seen;
  std::vector<std::string> pending;
  for (const Signature& sig : signatures_) {
    for (const SignatureTensor& t : sig.inputs) pending.push_back(node_of(t.tensor));
    for (const SignatureTensor& t : sig.outputs) pending.push_back(node_of(t.tensor));
  }
  // The init op's calls, found through the NoOps it is made of (Note [Tables in a SavedModel]).
  if (auto init = meta_.signature_def().find(std::string(kInitOpSignature));
      init != meta_.signature_def().end()) {
    std::vector<std::string> waiting;
    std::unordered_set<std::string> visited;
    for (const auto& [key, info] : init->second.outputs()) waiting.push_back(node_of(info.name()));
    while (!waiting.empty()) {
      std::string name = std::move(waiting.back());
      waiting.pop_back();
      auto node = nodes_.find(name);
      if (node == nodes_.end() || !visited.insert(name).second) continue;
      const proto::NodeDef& n = *node->second;
      if (n.op() == "NoOp") {
        for (const std::string& input : n.input()) waiting.push_back(node_of(input));
      } else if (n.op() == "StatefulPartitionedCall" || n.op() == "PartitionedCall") {
        auto tout = n.attr().find("Tout");
        if (tout == n.attr().end() || tout->second.list().type_size() == 0) continue;
        init_fetches_.push_back(name + ":0");
        pending.push_back(name);
      }
    }
  }
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    auto node = nodes_.find(name);
    if (node == nodes_.end() || !seen.insert(name).second) continue;
    for (const std::string& input : node->second->input()) pending.push_back(node_of(input));
  }
  for (const proto::NodeDef& node : graph_.node())
    if (seen.count(node.name())) reached_.push_back(&node);
  return Status::OK();
}

Status SavedModelLoader::bind_handles_to_objects() {
  const proto::SavedObjectGraph& objects = meta_.object_graph_def();
  for (const proto::NodeDef* node : reached_) {
    if (node->op() != "StatefulPartitionedCall" && node->op() != "PartitionedCall") continue;
    auto f = node->attr().find("f");
    if (f == node->attr().end() || !f->second.has_func()) continue;  // the importer reports it
    auto function = objects.concrete_functions().find(f->second.func().name());
    if (function == objects.concrete_functions().end()) continue;
    const auto& bound = function->second.bound_inputs();
    std::vector<std::string> data_inputs;
    for (const std::string& input : node->input())
      if (input.empty() || input[0] != '^') data_inputs.push_back(input);
    if (bound.size() > static_cast<int>(data_inputs.size()))
      return invalid_argument(where_, "node '", node->name(), "' calls '", f->second.func().name(),
                              "', which the object graph says captures ", bound.size(),
                              " object(s), but the call has only ", data_inputs.size(), " input(s)");
    const size_t first = data_inputs.size() - bound.size();
    for (int k = 0; k < bound.size(); ++k) {
      const std::string& input = data_inputs[first + k];
      auto handle = nodes_.find(node_of(input));
      const bool mutable_table =
          handle != nodes_.end() &&
          (handle->second->op() == "MutableHashTableV2" || handle->second->op() == "MutableDenseHashTableV2");
      if (mutable_table && bound[k] >= 0 && bound[k] < objects.nodes_size())
        table_object_.emplace(handle->first, bound[k]);  // Note [Tables in a SavedModel]
      if (handle == nodes_.end() || handle->second->op() != "VarHandleOp") continue;
      if (bound[k] < 0 || bound[k] >= objects.nodes_size())
        return invalid_argument(where_, "the object graph binds node '", node->name(), "' input ", first + k,
                                " to object ", bound[k], ", but it has ", objects.nodes_size(), " objects");
      auto [it, added] = handle_object_.emplace(handle->first, bound[k]);
      if (!added && it->second != bound[k])
        return invalid_argument(where_, "the object graph binds the variable node '", handle->first,
                                "' to two objects, ", it->second, " and ", bound[k]);
    }
  }
  return Status::OK();
}

Status SavedModelLoader::open_checkpoint(bool object_based) {
  if (reader_ != nullptr) return Status::OK();
  if (prefix_.empty())
    return make_error(Code::kNotFound, where_,
                      "the graph uses variables, but there is no variables checkpoint");
  auto reader = BundleReader::open(prefix_);
  if (!reader.ok()) return reader.status().with_prefix(where_ + "variables: ");
  reader_ = std::make_unique<BundleReader>(std::move(reader).value());
  if (!object_based) return Status::OK();
  auto graph = read_object_graph(*reader_);
  if (!graph.ok()) return graph.status().with_prefix(where_ + "variables: ");
  checkpoint_keys_ = variable_keys(*graph);
  table_keys_.assign(static_cast<size_t>(graph->nodes_size()), std::string());
  for (int i = 0; i < graph->nodes_size(); ++i)
    for (const auto& attribute : graph->nodes(i).attributes())
      if (attribute.name() == "table") table_keys_[i] = attribute.checkpoint_key();
  return Status::OK();
}

std::string SavedModelLoader::name_based_key(const proto::NodeDef& handle, const std::string& shared_name) {
  // The saver's restore graph says which entry feeds the variable: AssignVariableOp(handle,
  // Identity*(RestoreV2:k)) with RestoreV2's tensor_names[k]. TensorFlow 1's Saver names each entry after
  // its variable, so that is the answer when no restore graph mentions this handle.
  for (const proto::NodeDef& assign : graph_.node()) {
    if (assign.op() != "AssignVariableOp" || assign.input_size() < 2 ||
        node_of(assign.input(0)) != handle.name())
      continue;
    std::string value = assign.input(1);
    for (int hops = 0; hops < 64; ++hops) {
      auto node = nodes_.find(node_of(value));
      if (node == nodes_.end()) break;
      if (node->second->op() == "Identity" && node->second->input_size() >= 1) {
        value = node->second->input(0);
        continue;
      }
      if (node->second->op() != "RestoreV2" || node->second->input_size() < 2) break;
      int output = 0;
      if (auto colon = value.rfind(':'); colon != std::string::npos) {
        const std::string digits = value.substr(colon + 1);
        if (digits.empty() || digits.size() > 9 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
          break;
        output = std::stoi(digits);
      }
      auto names = nodes_.find(node_of(node->second->input(1)));
      if (names == nodes_.end() || names->second->op() != "Const") break;
      auto tensor = names->second->attr().find("value");
      if (tensor == names->second->attr().end() || output >= tensor->second.tensor().string_val_size()) break;
      return tensor->second.tensor().string_val(output);
    }
  }
  return shared_name;
}

// Note [Assets]
// TensorFlow 2 passes an Asset's path to the functions that read it through a string variable of the
// top-level graph: VarHandleOp "Variable", assigned by the init op from a Placeholder that the
// MetaGraphDef's asset_file_def names (tensor_info "asset_path_initializer:0", file name "vocab.txt"), and
// read (ReadVariableOp) into the call. TensorFlow's C++ loader feeds that Placeholder the path of the copy
// in <dir>/assets/; here the variable is created holding that path. A file name that would leave assets/
// is an error.
StatusOr<std::string> SavedModelLoader::asset_path(const proto::NodeDef& handle) {
  for (const proto::NodeDef& assign : graph_.node()) {
    if (assign.op() != "AssignVariableOp" || assign.input_size() < 2 ||
        node_of(assign.input(0)) != handle.name())
      continue;
    const std::string source = node_of(assign.input(1));
    for (const proto::AssetFileDef& asset : meta_.asset_file_def()) {
      if (node_of(asset.tensor_info().name()) != source) continue;
      const std::string& file = asset.filename();
      bool plain = !file.empty() && file[0] != '/';
      for (size_t start = 0; plain && start <= file.size();) {
        size_t end = std::min(file.find_first_of("/\\", start), file.size());
        const std::string part = file.substr(start, end - start);
        plain = !part.empty() && part != "." && part != "..";
        start = end + 1;
      }
      if (!plain)
        return invalid_argument(where_, "asset file name '", printable(file),
                                "' is not a plain name inside assets/");
      return dir_ + "/assets/" + file;
    }
  }
  return std::string();
}

Status SavedModelLoader::restore_variables(LoadedSavedModel& model) {
  const proto::SavedObjectGraph& objects = meta_.object_graph_def();
  // A TensorFlow 1 SavedModel has no object graph: its checkpoint is name-based, keyed as its saver says.
  const bool object_based = objects.nodes_size() > 0;
  std::map<int, std::shared_ptr<VariableResource>> by_object;
  std::map<std::string, std::shared_ptr<VariableResource>> by_key;
  for (const proto::NodeDef* node : reached_) {
    if (node->op() != "VarHandleOp") continue;
    const std::string at = where_ + "variable '" + node->name() + "': ";
    std::string shared_name = node->name();
    if (auto s = node->attr().find("shared_name"); s != node->attr().end() && !s->second.s().empty())
      shared_name = s->second.s();
    int object = -1;
    std::string key;
    if (!object_based) {
      key = name_based_key(*node, shared_name);
    } else if (auto bound = handle_object_.find(node->name()); bound != handle_object_.end()) {
      object = bound->second;
    } else {  // no call binds it: an asset's path, or the one SavedVariable of its name
      auto asset = asset_path(*node);
      if (!asset.ok()) return asset.status();
      if (!asset->empty()) {
        auto path = TensorImpl::allocate(DType::kString, Shape{});
        if (!path.ok()) return path.status();
        (*path)->mutable_data<std::string>()[0] = *asset;
        auto variable = ResourceManager::global().create_variable(shared_name, std::move(path).value());
        bindings_[node->name()] = variable;
        model.variables_[node->name()] = variable;
        continue;
      }
      for (int i = 0; i < objects.nodes_size(); ++i) {
        const proto::SavedObject& o = objects.nodes(i);
        if (o.kind_case() != proto::SavedObject::kVariable || o.variable().name() != shared_name) continue;
        if (object >= 0)
          return invalid_argument(at, "objects ", object, " and ", i, " are both variables named '",
                                  printable(shared_name), "' and no call says which this node is");
        object = i;
      }
      if (object < 0)
        return invalid_argument(at,
                                "no object of the object graph is this variable (no call binds it and "
                                "no SavedVariable is named '",
                                printable(shared_name), "')");
    }
    if (object_based && objects.nodes(object).kind_case() != proto::SavedObject::kVariable)
      return invalid_argument(at, "the object graph binds it to object ", object,
                              ", which is not a variable");
    std::shared_ptr<VariableResource>& variable = object_based ? by_object[object] : by_key[key];
    if (variable == nullptr) {
      EMBER_RETURN_IF_ERROR(open_checkpoint(object_based));
      if (object_based) {
        if (object >= static_cast<int>(checkpoint_keys_.size()))
          return invalid_argument(at, "it is object ", object, ", but the checkpoint's object graph has ",
                                  checkpoint_keys_.size(), " objects");
        key = checkpoint_keys_[object];
        if (key.empty())
          return make_error(Code::kNotFound, at, "the checkpoint has no value for object ", object);
      }
      auto value = reader_->read(key);
      if (!value.ok()) return value.status().with_prefix(at);
      DType dtype;
      auto dtype_attr = node->attr().find("dtype");
      if (dtype_attr == node->attr().end() || !dtype_from_tf_datatype(dtype_attr->second.type(), &dtype))
        return invalid_argument(at, "its VarHandleOp has no dtype ember has");
      if ((*value)->dtype() != dtype)
        return invalid_argument(at, "the graph says ", dtype_name(dtype), ", the checkpoint's '", key,
                                "' holds ", dtype_name((*value)->dtype()));
      // The variable keeps the graph's shape, which may leave dimensions unknown (tf.Variable(...,
      // shape=[None])): the functions that read it were traced for that shape.
      Shape declared = (*value)->shape();
      if (auto shape_attr = node->attr().find("shape"); shape_attr != node->attr().end()) {
        std::vector<int64_t> dims;
        bool unknown_rank = false;
        EMBER_RETURN_IF_ERROR(
            from_shape_proto(shape_attr->second.shape(), dims, unknown_rank).with_prefix(at + "shape: "));
        const Shape& got = (*value)->shape();
        bool ok = unknown_rank || got.rank() == static_cast<int>(dims.size());
        for (size_t d = 0; ok && !unknown_rank && d < dims.size(); ++d)
          ok = dims[d] < 0 || dims[d] == got.dim(static_cast<int>(d));
        if (!ok)
          return invalid_argument(at, "the graph says shape ", Shape(dims).to_string(),
                                  ", the checkpoint's '", key, "' holds ", got.to_string());
        declared = unknown_rank ? Shape::unknown_rank() : Shape(dims);
      }
      auto created =
          ResourceManager::global().create_variable(shared_name, std::move(value).value(), declared);
      if (!created.ok()) return created.status().with_prefix(at);
      variable = std::move(created).value();
    }
    bindings_[node->name()] = variable;
    model.variables_[node->name()] = variable;
  }
  return Status::OK();
}

// Note [Tables in a SavedModel]: a MutableHashTable's checkpointed entries, into the table import made.
Status SavedModelLoader::restore_tables() {
  for (const auto& [name, object] : table_object_) {
    const proto::NodeDef& node = *nodes_.at(name);
    const std::string at = where_ + "table '" + name + "': ";
    if (prefix_.empty()) continue;  // no checkpoint: the table starts empty
    EMBER_RETURN_IF_ERROR(open_checkpoint(/*object_based=*/true));
    const std::string key = object < static_cast<int>(table_keys_.size()) ? table_keys_[object] : "";
    if (key.empty()) continue;  // saved without its entries (checkpoint=False)
    auto attr = [&](const char* a) { return node.attr().count(a) ? &node.attr().at(a) : nullptr; };
    DType key_dtype, value_dtype;
    if (attr("key_dtype") == nullptr || attr("value_dtype") == nullptr ||
        !dtype_from_tf_datatype(attr("key_dtype")->type(), &key_dtype) ||
        !dtype_from_tf_datatype(attr("value_dtype")->type(), &value_dtype))
      return invalid_argument(at, "its key_dtype or value_dtype is missing or not a dtype ember has");
    std::string shared_name = attr("shared_name") ? attr("shared_name")->s() : "";
    if (shared_name.empty() && attr("use_node_name_sharing") && attr("use_node_name_sharing")->b())
      shared_name = name;
    if (shared_name.empty())
      return make_error(Code::kUnimplemented, at,
                        "a MutableHashTable with no shared_name: its checkpointed "
                        "entries cannot be matched to the table the import made");
    auto table = LookupTableRegistry::global().create_for_op(node.op().c_str(),
                                                             attr("container") ? attr("container")->s() : "",
                                                             shared_name, key_dtype, value_dtype,
                                                             /*is_mutable=*/true);
    if (!table.ok()) return table.status().with_prefix(at);
    auto keys = reader_->read(key + "-keys");
    if (!keys.ok()) return keys.status().with_prefix(at);
    auto values = reader_->read(key + "-values");
    if (!values.ok()) return values.status().with_prefix(at);
    EMBER_RETURN_IF_ERROR(
        (*table)->check_dtypes("LookupTableImportV2", (*keys)->dtype(), (*values)->dtype()).with_prefix(at));
    EMBER_RETURN_IF_ERROR((*table)->import_entries("LookupTableImportV2", **keys, **values).with_prefix(at));
    if (node.op() == "MutableDenseHashTableV2")
      EMBER_RETURN_IF_ERROR(remove_reserved_keys(node, **table).with_prefix(at));
  }
  return Status::OK();
}

// A dense table's checkpoint is its bucket array (docs/lookup.md): the free and removed buckets hold its
// empty and deleted keys, the Consts its creating node takes, which are then no entries.
Status SavedModelLoader::remove_reserved_keys(const proto::NodeDef& node, LookupTable& table) {
  for (int k = 0; k < 2 && k < node.input_size(); ++k) {
    auto key_node = nodes_.find(node_of(node.input(k)));
    if (key_node == nodes_.end() || key_node->second->op() != "Const" ||
        !key_node->second->attr().count("value"))
      return invalid_argument("its ", k == 0 ? "empty" : "deleted", "_key input '", node.input(k),
                              "' is not a Const of the graph");
    TensorRef key;
    EMBER_RETURN_IF_ERROR(from_tensor_proto(key_node->second->attr().at("value").tensor(), key));
    EMBER_RETURN_IF_ERROR(table.remove("LookupTableRemoveV2", *key));
  }
  return Status::OK();
}

Status SavedModelLoader::run(LoadedSavedModel& model) {
  EMBER_RETURN_IF_ERROR(read_signatures());
  EMBER_RETURN_IF_ERROR(reached_nodes());
  EMBER_RETURN_IF_ERROR(bind_handles_to_objects());
  EMBER_RETURN_IF_ERROR(restore_variables(model));

  // The reached nodes, each VarHandleOp as a resource Placeholder (Note [SavedModel to ember]).
  proto::GraphDef graph;
  *graph.mutable_versions() = graph_.versions();
  graph.mutable_library()->Swap(library_);  // graph_ has no further use for it
  // The assignments of asset paths, which asset_path did already (Note [Tables in a SavedModel]).
  std::unordered_set<std::string> asset_assigns;
  for (const proto::NodeDef* node : reached_)
    if (node->op() == "AssignVariableOp" && node->input_size() >= 2)
      for (const proto::AssetFileDef& asset : meta_.asset_file_def())
        if (node_of(asset.tensor_info().name()) == node_of(node->input(1)))
          asset_assigns.insert(node->name());
  for (const proto::NodeDef* node : reached_) {
    if (asset_assigns.count(node->name())) continue;
    proto::NodeDef* out = graph.add_node();
    if (node->op() != "VarHandleOp") {
      *out = *node;
      auto* inputs = out->mutable_input();
      for (int k = inputs->size() - 1; k >= 0; --k)
        if ((*inputs)[k].starts_with('^') && asset_assigns.count((*inputs)[k].substr(1)))
          inputs->erase(inputs->begin() + k);
      continue;
    }
    out->set_name(node->name());
    out->set_op("Placeholder");
    (*out->mutable_attr())["dtype"].set_type(proto::DT_RESOURCE);
  }
  auto imported = from_graph_def(std::move(graph), bindings_);
  if (!imported.ok()) return imported.status().with_prefix(where_);
  if (!init_fetches_.empty()) {  // fills the tables (Note [Tables in a SavedModel])
    const std::string at = where_ + "the init op (" + std::string(kInitOpSignature) + "): ";
    auto init = prune_function(**imported, {}, init_fetches_);
    if (!init.ok()) return init.status().with_prefix(at);
    OutputList ignored;
    EMBER_RETURN_IF_ERROR(CompiledFunction(std::move(init).value()).run({}, ignored).with_prefix(at));
  }
  EMBER_RETURN_IF_ERROR(restore_tables());

  std::vector<std::shared_ptr<VariableResource>> variables;
  for (const auto& [name, v] : model.variables_) variables.push_back(v);
  // The signatures own the load's tables, as they own its variables: they go with the last of them.
  for (auto& table : LookupTableRegistry::global().release_shared(table_suffix_))
    variables.push_back(table_binding(std::move(table)));
  for (Signature& sig : signatures_) {
    std::vector<std::string> inputs, outputs;
    for (const SignatureTensor& t : sig.inputs) inputs.push_back(t.tensor);
    for (const SignatureTensor& t : sig.outputs) outputs.push_back(t.tensor);
    auto pruned = prune_function(**imported, inputs, outputs);
    if (!pruned.ok()) return pruned.status().with_prefix(where_ + "signature '" + sig.name + "': ");
    auto compiled = std::make_shared<CompiledFunction>(std::move(pruned).value());
    model.signatures_[sig.name] = std::make_shared<LoadedSignature>(
        sig.name, std::move(sig.inputs), std::move(sig.outputs), std::move(compiled), variables);
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<LoadedSavedModel>> LoadedSavedModel::load_from_bytes(
    std::string_view saved_model_pb, const std::string& variables_prefix,
    const std::vector<std::string>& tags, const std::string& dir) {
  proto::SavedModel saved;
  if (saved_model_pb.size() > static_cast<size_t>(kMaxSavedModelProtoBytes) ||
      !saved.ParseFromArray(saved_model_pb.data(), static_cast<int>(saved_model_pb.size())))
    return make_error(
        Code::kDataLoss, "SavedModel '", dir,
        "': saved_model.pb is not a serialized SavedModel (protobuf could not parse it: truncated or "
        "corrupt data, or a string that is not UTF-8)");
  return load_from_message(saved, variables_prefix, tags, dir);
}

StatusOr<std::shared_ptr<LoadedSavedModel>> LoadedSavedModel::load_from_text(
    std::string_view saved_model_pbtxt, const std::string& variables_prefix,
    const std::vector<std::string>& tags, const std::string& dir) {
  proto::SavedModel saved;
  if (saved_model_pbtxt.size() > static_cast<size_t>(kMaxSavedModelProtoBytes) ||
      !google::protobuf::TextFormat::ParseFromString(std::string(saved_model_pbtxt), &saved))
    return make_error(Code::kDataLoss, "SavedModel '", dir,
                      "': saved_model.pbtxt is not a SavedModel in protobuf's text format (truncated or "
                      "corrupt text, or a field SavedModel does not have)");
  return load_from_message(saved, variables_prefix, tags, dir);
}

StatusOr<std::shared_ptr<LoadedSavedModel>> LoadedSavedModel::load_from_message(
    proto::SavedModel& saved, const std::string& variables_prefix, const std::vector<std::string>& tags,
    const std::string& dir) {
  install_function_runtime();  // the signatures are StatefulPartitionedCalls
  const std::string where = "SavedModel '" + dir + "': ";
  const std::set<std::string> wanted(tags.begin(), tags.end());
  proto::MetaGraphDef* meta = nullptr;
  std::vector<std::string> available;
  for (proto::MetaGraphDef& m : *saved.mutable_meta_graphs()) {
    const auto& have = m.meta_info_def().tags();
    if (std::set<std::string>(have.begin(), have.end()) == wanted && meta == nullptr) meta = &m;
    std::vector<std::string> list(have.begin(), have.end());
    available.push_back("{" + join(list) + "}");
  }
  if (meta == nullptr)
    return make_error(Code::kNotFound, where, "no MetaGraphDef has the tags {",
                      join(std::vector<std::string>(wanted.begin(), wanted.end())), "}; it has ",
                      join(available));
  auto model = std::shared_ptr<LoadedSavedModel>(new LoadedSavedModel());
  model->dir_ = dir;
  const std::string table_suffix = scope_table_names_to_load(*meta->mutable_graph_def());
  SavedModelLoader loader(*meta, variables_prefix, dir, where, table_suffix);
  EMBER_RETURN_IF_ERROR(loader.run(*model));
  return model;
}

StatusOr<std::shared_ptr<LoadedSavedModel>> LoadedSavedModel::load(const std::string& dir,
                                                                   const std::vector<std::string>& tags) {
  if (!file_exists(dir))
    return make_error(Code::kNotFound, "SavedModel '", dir, "': the directory does not exist");
  const std::string prefix = dir + "/variables/variables";
  const std::string variables = bundle_exists(prefix) ? prefix : "";
  // As TensorFlow's loader: the binary saved_model.pb, else the text saved_model.pbtxt.
  const std::string pb = dir + "/saved_model.pb", pbtxt = dir + "/saved_model.pbtxt";
  const bool text = !file_exists(pb) && file_exists(pbtxt);
  auto bytes = read_file(text ? pbtxt : pb, kMaxSavedModelProtoBytes);
  if (!bytes.ok()) return bytes.status().with_prefix("SavedModel '" + dir + "': ");
  return text ? load_from_text(*bytes, variables, tags, dir) : load_from_bytes(*bytes, variables, tags, dir);
}

std::vector<std::string> LoadedSavedModel::signature_names() const {
  std::vector<std::string> names;
  for (const auto& [name, sig] : signatures_) names.push_back(name);
  return names;
}

StatusOr<std::shared_ptr<const LoadedSignature>> LoadedSavedModel::signature(std::string_view name) const {
  auto found = signatures_.find(name);
  if (found == signatures_.end())
    return make_error(Code::kNotFound, "SavedModel '", dir_, "' has no signature '", printable(name),
                      "'; its signatures are ", join(signature_names()));
  return found->second;
}

}  // namespace ember

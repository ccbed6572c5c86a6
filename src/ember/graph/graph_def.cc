#include "ember/graph/graph_def.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ember/core/device.h"
#include "ember/core/lookup_table.h"
#include "ember/graph.pb.h"
#include "ember/graph/assert_import.h"
#include "ember/graph/function_def.h"
#include "ember/graph/fused_import.h"
#include "ember/graph/graph_def_ops.h"
#include "ember/graph/partial_value.h"
#include "ember/graph/resource_gather_import.h"
#include "ember/graph/tensor_list_import.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/py_func.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

namespace ops = graph_def_ops;
using AttrMap = graph_def_ops::AttrMap;
using namespace graph_def_internal;  // NOLINT: the pieces shared with function_def.cc

// Note [Variables in a GraphDef]
// Inside ember, ReadVariableOp and the Assign*VariableOp ops name their variable by attribute 0, a
// process-wide resource id. Such an id must never come from bytes: a GraphDef from a file could then read
// or overwrite any live variable of the process. So a GraphDef carries variables as TensorFlow 2 writes
// captured ones: each variable is a Placeholder of dtype DT_RESOURCE (scalar shape, named after the
// variable, its name also in `_user_specified_name`), and the ops take it as input 0, with no `resource`
// (or ReadVariableOp `shape`) attribute. Importing binds each resource Placeholder by node name to a
// variable the caller hands over (VariableBindings; Python: import_graph_def's input_map), as TensorFlow
// binds a captured resource by feeding its handle; ids, dtype and shape then come from that variable. An
// unbound resource Placeholder, a resource op whose input 0 is not one, a resource feeding any other op
// than a call, or a numeric `resource` attribute are InvalidArgument naming the node. A called function
// takes the variables it uses as trailing DT_RESOURCE arguments, which each call passes on from its own
// (function_def.cc), so a function in the library reaches only what its caller was given.

// Note [Tables in a GraphDef]
// TensorFlow's table ops take their table as input 0, a DT_RESOURCE: a resource Placeholder (a captured
// table, bound at import as a variable is: VariableBindings holds table_binding(table) under its name) or
// the output of a table-creating node, HashTableV2, MutableHashTableV2 or MutableDenseHashTableV2 (ops/
// lookup.cc's Note [Table-creating ops]), possibly through Identity nodes and calls. Import evaluates each
// creating node once, when it is reached in topological order: the table registry makes the table or, by
// `shared_name` (the node's name when `use_node_name_sharing` is set and the name is empty), finds the one
// already shared (core/lookup_table.h's Note [Tables an op creates]), and the node is bound to it exactly
// as a resource Placeholder is bound to a variable. So the table ops reading it get the table's id as
// their `resource` attribute, and a call passing it binds the callee's DT_RESOURCE argument to it. The
// creating node itself does not enter ember's graph (nor do the Consts only it read).

// Note [Attributes in a GraphDef]
// An ember attribute is written as the AttrValue member of its declared type: kInt -> i, kFloat -> f,
// kBool -> b, kDType -> type (TensorFlow's DataType), kInts -> list { i }, kString -> s, kTensor -> tensor
// (a TensorProto with raw little-endian tensor_content), kDTypes -> list { type }, kShapes -> list { shape }
// (TensorShapeProtos, unknown_rank or -1 dims where not known). TensorFlow's f is a float32, so a float
// attribute keeps float32 precision through a round trip. Two things keep TensorFlow's spelling:
//  - ember spells TensorFlow's shape-typed attribute as two, `shape` (ints, -1 for an unknown dimension)
//    and `unknown_rank` (bool). An op declaring both (Placeholder) is written with one `shape` attribute,
//    a TensorShapeProto, and read back into the two.
//  - TensorFlow's readers expect attributes that ember derives from the inputs: "T" (the dtype of type
//    variable 0), "N" (the length of a variadic input list) and Const's "dtype". They are written, and
//    ignored when read, as is any attribute the OpDef does not declare ("_class", "_output_shapes", ...).
// Reading is lenient where TensorFlow's writers differ: kInts also accepts a shape, kString a function
// name (func) or a list of strings (joined with commas: TensorFlow's list(string) attributes ember holds
// as one string; graph_def_ops writes them back as lists: is_joined_string_list's, and
// RaggedTensorToTensor's row_partition_types), and kTensor the typed value fields (float_val, int_val, ...),
// where the last value repeats
// to fill the shape. TensorFlow's list(float) attributes ember holds as kTensor attributes, 1-D tensors
// (graph_def_ops' is_float_list: Bucketize's boundaries); they are written as list { f } and a kTensor
// attribute reads a list { f } as a float32 vector.

struct ShapeAttrs {
  int shape = -1;
  int unknown_rank = -1;
};

ShapeAttrs shape_attrs(const OpDef& op) {
  int s = op.attr_index("shape"), u = op.attr_index("unknown_rank");
  if (s < 0 || u < 0 || op.attrs[s].type != AttrType::kInts || op.attrs[u].type != AttrType::kBool) return {};
  return {s, u};
}

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "an int (AttrValue.i)";
    case AttrType::kFloat:
      return "a float (AttrValue.f)";
    case AttrType::kBool:
      return "a bool (AttrValue.b)";
    case AttrType::kDType:
      return "a dtype (AttrValue.type)";
    case AttrType::kInts:
      return "a list of ints (AttrValue.list.i)";
    case AttrType::kString:
      return "a string (AttrValue.s)";
    case AttrType::kTensor:
      return "a tensor (AttrValue.tensor)";
    case AttrType::kDTypes:
      return "a list of dtypes (AttrValue.list.type)";
    case AttrType::kShapes:
      return "a list of shapes (AttrValue.list.shape)";
  }
  return "?";
}

const char* attr_member_name(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kList:
      return "list";
    case proto::AttrValue::kS:
      return "s";
    case proto::AttrValue::kI:
      return "i";
    case proto::AttrValue::kF:
      return "f";
    case proto::AttrValue::kB:
      return "b";
    case proto::AttrValue::kType:
      return "type";
    case proto::AttrValue::kShape:
      return "shape";
    case proto::AttrValue::kTensor:
      return "tensor";
    case proto::AttrValue::kPlaceholder:
      return "placeholder";
    case proto::AttrValue::kFunc:
      return "func";
    case proto::AttrValue::VALUE_NOT_SET:
      return "nothing";
  }
  return "an unknown member";
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code_point;
    if ((lead & 0xe0) == 0xc0) {
      length = 2, code_point = lead & 0x1f;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, code_point = lead & 0x0f;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, code_point = lead & 0x07;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3f);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter is an overlong form
    if (code_point < kSmallest[length] || code_point > 0x10ffff ||
        (code_point >= 0xd800 && code_point <= 0xdfff))
      return false;
    i += length;
  }
  return true;
}

// ---- writing

proto::DataType tf_type(DType dtype) { return static_cast<proto::DataType>(tf_datatype(dtype)); }

void write_attr_value(AttrType type, const AttrValue& value, proto::AttrValue* out) {
  switch (type) {
    case AttrType::kInt:
      return out->set_i(std::get<int64_t>(value));
    case AttrType::kFloat:
      return out->set_f(static_cast<float>(std::get<double>(value)));
    case AttrType::kBool:
      return out->set_b(std::get<bool>(value));
    case AttrType::kDType:
      return out->set_type(tf_type(std::get<DType>(value)));
    case AttrType::kInts:
      for (int64_t i : std::get<std::vector<int64_t>>(value)) out->mutable_list()->add_i(i);
      out->mutable_list();  // an empty list is still a list
      return;
    case AttrType::kString:
      return out->set_s(std::get<std::string>(value));
    case AttrType::kTensor:
      return to_tensor_proto(*std::get<TensorRef>(value), out->mutable_tensor());
    case AttrType::kDTypes:
      out->mutable_list();
      for (DType d : std::get<std::vector<DType>>(value)) out->mutable_list()->add_type(tf_type(d));
      return;
    case AttrType::kShapes:
      out->mutable_list();
      for (const Shape& shape : std::get<std::vector<Shape>>(value))
        to_shape_proto(shape.dims(), !shape.rank_known(), out->mutable_list()->add_shape());
      return;
  }
}

// Every attribute of `n`: the declared ones and TensorFlow's derived ones.
void write_node_attrs(const Graph& g, const Node& n, AttrMap& attrs) {
  const OpDef& op = *n.op;
  const ShapeAttrs shape = shape_attrs(op);
  for (size_t i = 0; i < n.attrs.size() && i < op.attrs.size(); ++i) {
    const int k = static_cast<int>(i);
    if (k == shape.unknown_rank) continue;
    if (op.attrs[i].name == kPyFuncCallableAttr) continue;  // means nothing outside this process
    if (is_resource_op(op) && (k == 0 || op.attrs[i].name == "shape")) continue;  // the variable's
    if (k == shape.shape) {
      bool unknown_rank = std::get<bool>(n.attrs[shape.unknown_rank]);
      const auto& dims = std::get<std::vector<int64_t>>(n.attrs[k]);
      to_shape_proto(unknown_rank ? std::span<const int64_t>() : std::span<const int64_t>(dims), unknown_rank,
                     attrs[op.attrs[i].name].mutable_shape());
      continue;
    }
    if (ops::is_float_list(op, op.attrs[i].name)) {
      proto::AttrValue::ListValue* list = attrs[op.attrs[i].name].mutable_list();
      const TensorImpl& floats = *std::get<TensorRef>(n.attrs[i]);
      visit_dtype<kNumericTypes>(floats.dtype(), [&]<typename T>() {
        for (int64_t j = 0; j < floats.num_elements(); ++j)
          list->add_f(static_cast<float>(static_cast<double>(floats.data<T>()[j])));
      });
      continue;
    }
    if (ops::is_joined_string_list(op, op.attrs[i].name)) {
      proto::AttrValue::ListValue* list = attrs[op.attrs[i].name].mutable_list();
      const std::string& joined = std::get<std::string>(n.attrs[i]);
      for (size_t begin = 0; begin < joined.size();) {
        const size_t end = std::min(joined.find(',', begin), joined.size());
        list->add_s(joined.substr(begin, end - begin));
        begin = end + 1;
      }
      continue;
    }
    write_attr_value(op.attrs[i].type, n.attrs[i], &attrs[op.attrs[i].name]);
  }
  std::vector<DType> inputs, outputs;
  for (ValueRef v : n.inputs) inputs.push_back(g.spec(v).dtype);
  for (const TensorSpec& spec : n.outputs) outputs.push_back(spec.dtype);
  ops::add_derived_attrs(op, inputs, outputs, n.attrs, attrs);
  if (op.name == "Assert") {  // its data's types (write_tensorflow_asserts adds the text's)
    proto::AttrValue::ListValue* list = attrs["T"].mutable_list();
    for (size_t i = 1; i < inputs.size(); ++i) list->add_type(tf_type(inputs[i]));
  }
}

// A node name from a variable's name: characters TensorFlow does not allow in node names become '_'.
std::string node_name_for_variable(const std::string& variable) {
  std::string name = variable.empty() ? "variable" : variable;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              (i > 0 && (c == '_' || c == '-' || c == '/' || c == '>'));
    if (!ok) name[i] = i == 0 ? 'v' : '_';
  }
  return name;
}

// Writes one resource Placeholder per variable the graph uses, before the nodes, and returns their names.
VariableNodes write_variable_placeholders(const Graph& g, proto::GraphDef& out) {
  VariableNodes names;
  std::unordered_map<std::string, int> taken;
  for (int32_t i = 0; i < g.num_nodes(); ++i) taken.emplace(g.node(i).name, 0);
  std::vector<int64_t> ids;  // the graph's variables, and those of the functions it calls
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (is_resource_op(*n.op)) ids.push_back(std::get<int64_t>(n.attrs[0]));
    for (int64_t id : functions_variables(called_functions(*n.op, n.attrs))) ids.push_back(id);
  }
  for (int64_t id : ids) {
    if (names.count(id)) continue;
    auto variable = ResourceManager::global().find(id, "GraphDef export");
    const std::string variable_name = variable.ok() ? variable.value()->name() : "variable";
    const std::string base = node_name_for_variable(variable_name);
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
    taken.emplace(name, 0);
    names.emplace(id, name);
    proto::NodeDef* node = out.add_node();
    node->set_name(name);
    node->set_op("Placeholder");
    auto& attrs = *node->mutable_attr();
    attrs["_user_specified_name"].set_s(variable_name);
    attrs["dtype"].set_type(proto::DT_RESOURCE);
    attrs["shape"].mutable_shape();
  }
  return names;
}

// Each node's source location as a one-frame stack trace keyed by node name.
void write_debug_info(const Graph& g, proto::GraphDebugInfo& out) {
  std::unordered_map<std::string, int32_t> file_index;
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (!n.location.known()) continue;
    auto [it, added] = file_index.emplace(n.location.file, out.files_size());
    if (added) out.add_files(n.location.file);
    proto::GraphDebugInfo::FileLineCol* frame = (*out.mutable_traces())[n.name].add_file_line_cols();
    if (it->second != 0) frame->set_file_index(it->second);
    frame->set_line(n.location.line);
    if (!n.location.function.empty()) frame->set_func(n.location.function);
  }
}

// Serializes with map entries in key order, so equal graphs give equal bytes.
std::string serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// ---- reading

// Whether `members` (the size of one repeated member of the list) accounts for all the list holds.
bool only_list_member(const proto::AttrValue::ListValue& list, int members) {
  const int all = list.s_size() + list.i_size() + list.f_size() + list.b_size() + list.type_size() +
                  list.shape_size() + list.tensor_size() + list.func_size();
  return all == members;
}

// Decodes one attribute by its declared type. `unknown_rank` is set when a kInts attribute came as a shape
// of unknown rank (Note [Attributes in a GraphDef]).
Status decode_attr(const AttrDef& def, const proto::AttrValue& m, AttrValue& out, bool& unknown_rank) {
  auto mismatch = [&] {
    return invalid_argument("should be ", attr_type_name(def.type), ", got AttrValue.", attr_member_name(m));
  };
  switch (def.type) {
    case AttrType::kInt:
      if (!m.has_i()) return mismatch();
      out = m.i();
      return Status::OK();
    case AttrType::kFloat:
      if (!m.has_f()) return mismatch();
      out = static_cast<double>(m.f());
      return Status::OK();
    case AttrType::kBool:
      if (!m.has_b()) return mismatch();
      out = m.b();
      return Status::OK();
    case AttrType::kDType: {
      if (!m.has_type()) return mismatch();
      DType dtype;
      if (!dtype_from_tf_datatype(m.type(), &dtype))
        return invalid_argument("DataType ", static_cast<int>(m.type()), " is not one ember supports");
      out = dtype;
      return Status::OK();
    }
    case AttrType::kInts: {
      std::vector<int64_t> ints;
      if (m.has_shape()) {
        EMBER_RETURN_IF_ERROR(from_shape_proto(m.shape(), ints, unknown_rank));
      } else if (m.has_list()) {
        const auto& list = m.list();
        if (list.s_size() || list.f_size() || list.b_size() || list.type_size() || list.shape_size() ||
            list.tensor_size() || list.func_size())
          return invalid_argument("should be ", attr_type_name(AttrType::kInts),
                                  ", got a list of other values");
        ints.assign(list.i().begin(), list.i().end());
      } else if (m.value_case() != proto::AttrValue::VALUE_NOT_SET) {  // nothing set: an empty list
        return mismatch();
      }
      out = std::move(ints);
      return Status::OK();
    }
    case AttrType::kString:
      if (m.has_func()) {  // TensorFlow's PartitionedCall names its function with a NameAttrList
        out = m.func().name();
        return Status::OK();
      }
      if (m.has_list() && m.list().func_size() > 0) {  // Case's branches: ember joins them with commas
        std::string joined;
        for (const proto::NameAttrList& f : m.list().func()) {
          if (f.name().empty() || f.name().find(',') != std::string::npos)
            return invalid_argument("names the function '", printable(f.name()),
                                    "'; a function name is not empty and holds no ','");
          joined += (joined.empty() ? "" : ",") + f.name();
        }
        out = std::move(joined);
        return Status::OK();
      }
      if (m.has_list() && m.list().s_size() > 0 && only_list_member(m.list(), m.list().s_size())) {
        // A list(string) (_FusedMatMul's fused_ops, RaggedTensorToTensor's row_partition_types): joined.
        std::string joined;
        for (const std::string& item : m.list().s()) {
          if (item.empty() || item.find(',') != std::string::npos || !is_valid_utf8(item))
            return invalid_argument("holds the string '", printable(item),
                                    "'; each string of the list is non-empty UTF-8 text without ','");
          joined += (joined.empty() ? "" : ",") + item;
        }
        out = std::move(joined);
        return Status::OK();
      }
      if (!m.has_s()) return mismatch();
      if (!is_valid_utf8(m.s()))  // AttrValue.s is bytes; ember's string attributes are text
        return invalid_argument("is not valid UTF-8 text");
      out = m.s();
      return Status::OK();
    case AttrType::kTensor: {
      if (m.has_list() && only_list_member(m.list(), m.list().f_size())) {  // a list(float): is_float_list
        auto floats = TensorImpl::allocate(DType::kFloat32, Shape({m.list().f_size()}));
        EMBER_RETURN_IF_ERROR(floats.status());
        std::copy(m.list().f().begin(), m.list().f().end(), (*floats)->mutable_data<float>());
        out = std::move(floats).value();
        return Status::OK();
      }
      if (!m.has_tensor()) return mismatch();
      TensorRef t;
      EMBER_RETURN_IF_ERROR(from_tensor_proto(m.tensor(), t));
      out = std::move(t);
      return Status::OK();
    }
    case AttrType::kDTypes: {
      if (m.value_case() == proto::AttrValue::VALUE_NOT_SET) {  // nothing set: an empty list
        out = std::vector<DType>{};
        return Status::OK();
      }
      if (!m.has_list() || !only_list_member(m.list(), m.list().type_size())) return mismatch();
      std::vector<DType> types;
      for (int type : m.list().type()) {
        DType dtype;
        if (!dtype_from_tf_datatype(type, &dtype))
          return invalid_argument("DataType ", type, " is not one ember supports");
        types.push_back(dtype);
      }
      out = std::move(types);
      return Status::OK();
    }
    case AttrType::kShapes: {
      if (m.value_case() == proto::AttrValue::VALUE_NOT_SET) {
        out = std::vector<Shape>{};
        return Status::OK();
      }
      if (!m.has_list() || !only_list_member(m.list(), m.list().shape_size())) return mismatch();
      std::vector<Shape> shapes;
      for (const proto::TensorShapeProto& proto_shape : m.list().shape()) {
        std::vector<int64_t> dims;
        bool shape_unknown_rank = false;
        EMBER_RETURN_IF_ERROR(from_shape_proto(proto_shape, dims, shape_unknown_rank));
        shapes.push_back(shape_unknown_rank ? Shape::unknown_rank() : Shape(dims));
      }
      out = std::move(shapes);
      return Status::OK();
    }
  }
  return mismatch();
}

// `variable` is the bound variable of a resource op: its id, shape and (unless given) dtype fill the
// attributes that describe it (Note [Variables in a GraphDef]).
Status decode_attrs(const OpDef& op, const proto::NodeDef& node, const VariableResource* variable,
                    AttrList& attrs) {
  const ShapeAttrs shape = shape_attrs(op);
  bool unknown_rank = false;
  for (size_t k = 0; k < op.attrs.size(); ++k) {
    const AttrDef& def = op.attrs[k];
    auto found = node.attr().find(def.name);
    const proto::AttrValue* entry = found == node.attr().end() ? nullptr : &found->second;
    if (variable != nullptr) {
      if (k == 0) {
        if (entry != nullptr)
          return invalid_argument("attribute '", def.name,
                                  "': a GraphDef names a variable by a bound resource input, never by a "
                                  "numeric id");
        attrs.push_back(variable->id());
        continue;
      }
      if (def.name == "shape" && def.type == AttrType::kInts) {
        attrs.push_back(variable->shape().dim_vector());
        continue;
      }
      if (def.name == "unknown_rank" && def.type == AttrType::kBool && entry == nullptr) {
        attrs.push_back(!variable->shape().rank_known());
        continue;
      }
      if (def.name == "dtype" && def.type == AttrType::kDType && entry == nullptr) {
        attrs.push_back(variable->dtype());
        continue;
      }
    }
    if (entry == nullptr) {
      if (!def.has_default)
        return invalid_argument("lacks the required attribute '", def.name, "' (", attr_type_name(def.type),
                                ")");
      attrs.push_back(def.default_value);
      continue;
    }
    AttrValue value;
    bool this_unknown_rank = false;
    Status s = decode_attr(def, *entry, value, this_unknown_rank);
    if (!s.ok()) return s.with_prefix("attribute '" + def.name + "': ");
    if (this_unknown_rank) {
      if (static_cast<int>(k) != shape.shape)
        return invalid_argument("attribute '", def.name,
                                "': a shape of unknown rank cannot be a list of ints");
      unknown_rank = true;
    }
    attrs.push_back(std::move(value));
  }
  if (unknown_rank) attrs[shape.unknown_rank] = true;
  if (shape.shape >= 0) {  // a shape given as a list of ints is checked as a TensorShapeProto is
    Status s = check_shape_size(std::get<std::vector<int64_t>>(attrs[shape.shape]));
    if (!s.ok()) return s.with_prefix("attribute '" + op.attrs[shape.shape].name + "': ");
  }
  if (variable != nullptr) {
    const int d = op.attr_index("dtype");
    if (d >= 0 && op.attrs[d].type == AttrType::kDType && std::get<DType>(attrs[d]) != variable->dtype())
      return invalid_argument("attribute 'dtype' is ", dtype_name(std::get<DType>(attrs[d])),
                              ", but the bound variable '", variable->name(), "' has dtype ",
                              dtype_name(variable->dtype()));
  }
  return Status::OK();
}

// Why a GraphDef may not call the function `name` of this process's FunctionLibrary, or "" if it may. A
// GraphDef carries no function library (yet), so a PartitionedCall names a live function; one that
// (through any callee) uses a variable or a captured value would let bytes reach state they were not
// given (Note [Variables in a GraphDef]).
std::string unreachable_state(const std::string& name) {
  std::vector<std::shared_ptr<const FunctionGraph>> pending;
  std::vector<const FunctionGraph*> seen;
  if (auto fn = FunctionLibrary::global().find(name)) pending.push_back(std::move(fn));
  while (!pending.empty()) {
    std::shared_ptr<const FunctionGraph> fn = std::move(pending.back());
    pending.pop_back();
    if (std::find(seen.begin(), seen.end(), fn.get()) != seen.end()) continue;
    seen.push_back(fn.get());
    if (!fn->captured_values.empty()) return "captures values of this process";
    for (int32_t i = 0; i < fn->graph.num_nodes(); ++i) {
      const Node& n = fn->graph.node(i);
      if (is_resource_op(*n.op)) return "uses a variable";
      for (const std::string& name : called_functions(*n.op, n.attrs))
        if (auto callee = FunctionLibrary::global().find(name)) pending.push_back(std::move(callee));
    }
    for (const auto& callee : fn->callees)
      if (callee) pending.push_back(callee);
  }
  return "";
}

// Puts the names of the functions a control-flow node or call calls back into its attributes, in
// called_functions() order (after import gave each its name in this process).
void set_called_functions(const OpDef& op, const std::vector<std::string>& names, AttrList& attrs) {
  if (op.name == "Case" || op.name == "StatelessCase") {
    std::string joined;
    for (const std::string& name : names) joined += (joined.empty() ? "" : ",") + name;
    attrs[op.attr_index("branches")] = std::move(joined);
    return;
  }
  size_t k = 0;
  for (std::string_view attr : {"f", "then_branch", "else_branch", "cond", "body"}) {
    const int index = op.attr_index(attr);
    if (index >= 0 && k < names.size()) attrs[index] = names[k++];
  }
}

// A control-flow node of TensorFlow's passing variables (DT_RESOURCE in its "Tin" or "T"): ember passes
// them to the functions by binding, not as values, so its results that are variables (a While's loop
// variables, what an If or Case branch returns) are no results of ember's node: the importer binds them
// (Note [Variables a control-flow node returns]). `map` gets the GraphDef's output number -> ember's (-1
// for a variable), empty when every result is a value.
Status variable_outputs(const OpDef& op, const proto::NodeDef& node, std::vector<int32_t>& map) {
  auto types = node.attr().find(ops::is_while(op) ? "T" : "Tout");
  if (types == node.attr().end()) {
    if (ops::is_while(op)) return invalid_argument("passes variables but has no attribute 'T'");
    return Status::OK();
  }
  int32_t next = 0;
  bool any = false;
  for (int t : types->second.list().type()) {
    map.push_back(t == proto::DT_RESOURCE ? -1 : next++);
    any |= t == proto::DT_RESOURCE;
  }
  if (!any) map.clear();
  return Status::OK();
}

// TensorFlow's rule for node names: [A-Za-z0-9.][A-Za-z0-9_.\-/>]*
bool valid_node_name(std::string_view name) {
  if (name.empty()) return false;
  auto ok = [](char c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.') return true;
    return !first && (c == '_' || c == '-' || c == '/' || c == '>');
  };
  if (!ok(name[0], true)) return false;
  for (char c : name.substr(1))
    if (!ok(c, false)) return false;
  return true;
}

struct InputRef {
  int node = -1;
  int32_t output = 0;
  bool control = false;
};

Status resolve_input(std::string_view input, const std::unordered_map<std::string_view, int>& by_name,
                     InputRef& ref) {
  std::string_view name = input;
  ref = InputRef{};
  if (!name.empty() && name[0] == '^') {
    ref.control = true;
    name.remove_prefix(1);
  } else if (auto colon = name.rfind(':'); colon != std::string_view::npos) {
    std::string_view digits = name.substr(colon + 1);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return invalid_argument("input '", printable(input),
                              "' is not of the form 'name', 'name:index' or '^name'");
    ref.output = std::stoi(std::string(digits));
    name = name.substr(0, colon);
  }
  auto it = by_name.find(name);
  if (it == by_name.end())
    return invalid_argument("input '", printable(input), "' names no node in the GraphDef");
  ref.node = it->second;
  return Status::OK();
}

// Kahn's algorithm, taking the earliest ready node first so a sorted GraphDef keeps its order.
Status topological_order(const std::vector<const proto::NodeDef*>& nodes,
                         const std::vector<std::vector<InputRef>>& inputs, std::vector<int>& order) {
  const int n = static_cast<int>(nodes.size());
  std::vector<std::vector<int>> users(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    for (const InputRef& in : inputs[i]) {
      users[in.node].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) == n) return Status::OK();
  // Every node left waits on another node left; following those inputs must come back around.
  int start = 0;
  while (pending[start] == 0) ++start;
  std::vector<int> path;
  std::vector<int> position(n, -1);
  int at = start;
  while (position[at] < 0) {
    position[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (const InputRef& in : inputs[at]) {
      if (pending[in.node] > 0) {
        at = in.node;
        break;
      }
    }
  }
  std::string cycle;
  for (size_t k = position[at]; k < path.size(); ++k) cycle += nodes[path[k]]->name() + " <- ";
  cycle += nodes[at]->name();
  return invalid_argument("the inputs of node '", nodes[at]->name(), "' form a cycle: ", cycle,
                          " (read 'a <- b' as 'a takes an input from b')");
}

bool creates_table(const OpDef& op) { return is_table_creating_op(op.name); }

// The table a creating node makes or shares (Note [Tables in a GraphDef]), bound as a resource.
StatusOr<std::shared_ptr<VariableResource>> table_for_node(const OpDef& op, const std::string& node_name,
                                                           const AttrList& attrs) {
  const std::string& container = std::get<std::string>(attrs[0]);
  std::string shared_name = std::get<std::string>(attrs[1]);
  if (shared_name.empty() && std::get<bool>(attrs[2])) shared_name = node_name;
  const int value_shape = op.attr_index("value_shape");
  if (value_shape >= 0 && !std::get<std::vector<int64_t>>(attrs[value_shape]).empty())
    return make_error(Code::kUnimplemented, "ember's tables hold scalar values; value_shape must be []");
  auto table = LookupTableRegistry::global().create_for_op(
      op.name.c_str(), container, shared_name, std::get<DType>(attrs[3]), std::get<DType>(attrs[4]),
      /*is_mutable=*/op.name != "HashTableV2");
  if (!table.ok()) return table.status();
  return table_binding(std::move(table).value());
}

// A Placeholder of dtype DT_RESOURCE: a variable the graph was exported with.
bool is_resource_placeholder(const proto::NodeDef& node) {
  if (node.op() != "Placeholder") return false;
  auto dtype = node.attr().find("dtype");
  return dtype != node.attr().end() && dtype->second.has_type() && dtype->second.type() == proto::DT_RESOURCE;
}

}  // namespace

namespace graph_def_internal {

bool is_resource_op(const OpDef& op) { return op.has_flag(kReadsResource) || op.has_flag(kWritesResource); }

// `text` from the input for an error message: bytes outside printable ASCII as \xNN, so the message stays
// valid UTF-8 whatever the bytes were.
std::string printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

void write_node(const Graph& g, const Node& n, const std::function<std::string(ValueRef)>& input_name,
                ExportState& state, proto::NodeDef* out) {
  out->set_name(n.name);
  if (!n.assigned_device.empty() || !n.requested_device.empty())
    out->set_device(n.assigned_device.empty() ? n.requested_device : n.assigned_device);
  const std::vector<std::string> callees = called_functions(*n.op, n.attrs);
  bool stateful_call = false;
  // The variables the callees use, passed last as DT_RESOURCE inputs: a call passes its callee's; a
  // control-flow node passes the union to every function it calls, as TensorFlow's If, Case and While do.
  std::vector<int64_t> call_variables = functions_variables(callees);
  std::vector<std::string> exported;
  for (size_t k = 0; k < callees.size(); ++k) {
    stateful_call = stateful_call || is_stateful_function(callees[k], state.stateful);
    // A While's body returns every loop variable (the variables too); its condition returns one value.
    const bool body = ops::is_while(*n.op) && k == 1;
    exported.push_back(state.add_callee(
        callees[k], ops::is_call(*n.op) ? function_variables(callees[k]) : call_variables, body));
  }
  out->set_op(ops::tf_op_type(*n.op, stateful_call));
  if (is_resource_op(*n.op)) out->add_input(state.variables.at(std::get<int64_t>(n.attrs[0])));
  for (ValueRef v : n.inputs) out->add_input(input_name(v));
  for (int64_t id : call_variables) out->add_input(state.variables.at(id));
  for (int32_t c : n.control_inputs) out->add_input("^" + g.node(c).name);
  write_node_attrs(g, n, *out->mutable_attr());
  if (ops::is_control_flow(*n.op)) {
    std::vector<TensorSpec> inputs;
    for (ValueRef v : n.inputs) inputs.push_back(g.spec(v));
    ops::add_control_flow_attrs(*n.op, inputs, {n.outputs.data(), n.outputs.size()}, exported,
                                call_variables.size(), *out->mutable_attr());
    return;
  }
  for (size_t k = 0; k < call_variables.size(); ++k)
    (*out->mutable_attr())["Tin"].mutable_list()->add_type(proto::DT_RESOURCE);
}

// TensorFlow's NoOp only gathers control edges (a function's side effects, for the nodes that must run
// after them), and ember registers no such op: each NoOp is left out and those waiting on it wait on what
// it waited on. `owned` holds the rewritten NodeDefs.
std::vector<const proto::NodeDef*> without_noops(const std::vector<const proto::NodeDef*>& nodes,
                                                 std::deque<proto::NodeDef>& owned) {
  if (OpRegistry::global().find("NoOp") != nullptr) return nodes;
  std::unordered_map<std::string, const proto::NodeDef*> noops;
  for (const proto::NodeDef* node : nodes)
    if (node->op() == "NoOp") noops[node->name()] = node;
  if (noops.empty()) return nodes;
  std::vector<const proto::NodeDef*> out;
  for (const proto::NodeDef* node : nodes) {
    if (noops.count(node->name())) continue;
    bool waits_on_noop = false;
    for (const std::string& input : node->input())
      waits_on_noop |= input.size() > 1 && input[0] == '^' && noops.count(input.substr(1)) > 0;
    if (!waits_on_noop) {
      out.push_back(node);
      continue;
    }
    proto::NodeDef& copy = owned.emplace_back(*node);
    copy.clear_input();
    std::unordered_set<std::string> seen;  // NoOps expanded (a cycle of them ends here)
    std::vector<std::string> pending(node->input().rbegin(), node->input().rend());
    while (!pending.empty()) {
      std::string input = std::move(pending.back());
      pending.pop_back();
      auto noop = input.size() > 1 && input[0] == '^' ? noops.find(input.substr(1)) : noops.end();
      if (noop == noops.end()) {
        copy.add_input(std::move(input));
      } else if (seen.insert(noop->first).second) {
        for (auto it = noop->second->input().rbegin(); it != noop->second->input().rend(); ++it)
          pending.push_back(*it);
      }
    }
    out.push_back(&copy);
  }
  return out;
}

StatusOr<std::unique_ptr<FunctionGraph>> build_graph(
    const std::vector<const proto::NodeDef*>& all_nodes,
    const std::unordered_map<std::string, SourceLocation>& locations, const VariableBindings& variables,
    LibraryReader& library, const std::string& kWhere) {
  std::deque<proto::NodeDef> owned;
  const std::vector<const proto::NodeDef*> nodes = without_noops(all_nodes, owned);
  const int n = static_cast<int>(nodes.size());
  std::unordered_map<std::string_view, int> by_name;
  std::vector<const OpDef*> ops(n);
  std::vector<const VariableResource*> bound(n, nullptr);  // for resource Placeholders (and Identity of one)
  std::vector<std::shared_ptr<VariableResource>> bound_variables(n);
  // Note [Variables a control-flow node returns]: a While returns the variables it passes through, and an
  // If or Case may return one its branches were passed; ember's node has no such results, so they are
  // bound here, by (node, output), to the variable itself. Branches returning different variables would
  // choose a variable at run time, which ember's variable ops (a variable per node) cannot.
  std::map<std::pair<int, int32_t>, std::shared_ptr<VariableResource>> bound_outputs;
  auto variable_of = [&](const InputRef& in) -> std::shared_ptr<VariableResource> {
    if (in.control) return nullptr;
    if (bound[in.node] != nullptr) return in.output == 0 ? bound_variables[in.node] : nullptr;
    auto it = bound_outputs.find({in.node, in.output});
    return it == bound_outputs.end() ? nullptr : it->second;
  };
  for (int i = 0; i < n; ++i) {
    const proto::NodeDef& node = *nodes[i];
    if (!valid_node_name(node.name()))
      return invalid_argument(kWhere, "node #", i, " has the name '", printable(node.name()),
                              "'; node names must match [A-Za-z0-9.][A-Za-z0-9_.\\-/>]*");
    auto [it, added] = by_name.emplace(node.name(), i);
    if (!added)
      return invalid_argument(kWhere, "nodes #", it->second, " and #", i, " are both named '", node.name(),
                              "'");
    if (is_resource_placeholder(node)) {
      auto variable = variables.find(node.name());
      if (variable == variables.end() || variable->second == nullptr)
        return invalid_argument(
            kWhere, "node '", node.name(),
            "' is a resource Placeholder (a variable the graph was exported with), and no "
            "variable is bound to it; bind one to the name '",
            node.name(), "' at import (Python: import_graph_def(graph_def, input_map={'", node.name(),
            ":0': variable}))");
      if (node.input_size() > 0)
        return invalid_argument(kWhere, "node '", node.name(),
                                "' is a resource Placeholder, which takes no inputs");
      bound[i] = variable->second.get();
      bound_variables[i] = variable->second;
      continue;
    }
    ops[i] = OpRegistry::global().find(ops::ember_op_type(node.op()));
    if (ops[i] == nullptr)
      return make_error(Code::kNotFound, kWhere, "node '", node.name(), "' has op '", printable(node.op()),
                        "', which ember does not register");
  }
  std::vector<std::vector<InputRef>> inputs(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& input : nodes[i]->input()) {
      InputRef ref;
      Status s = resolve_input(input, by_name, ref);
      if (!s.ok()) return s.with_prefix(kWhere + "node '" + nodes[i]->name() + "': ");
      inputs[i].push_back(ref);
    }
  }
  std::vector<int> order;
  EMBER_RETURN_IF_ERROR(topological_order(nodes, inputs, order).with_prefix(kWhere));

  auto fn = std::make_unique<FunctionGraph>();
  fn->name = "imported";
  Graph& g = fn->graph;
  const OpDef& const_op = op_def("Const");
  const OpDef& placeholder_op = op_def("Placeholder");
  std::vector<int32_t> index(n, -1);  // GraphDef position -> node in g
  // GraphDef output number -> ember's, for control-flow nodes whose DT_RESOURCE results (variables passed
  // through a While) ember leaves out; -1 for those. Empty: the same numbers.
  std::vector<std::vector<int32_t>> output_map(n);
  for (int i : order) {
    const proto::NodeDef& node = *nodes[i];
    if (bound[i] != nullptr) continue;  // a variable: no node of its own
    const OpDef& op = *ops[i];
    const std::string where = kWhere + "node '" + node.name() + "' (op " + op.name + "): ";
    if (creates_table(op)) {  // Note [Tables in a GraphDef]
      AttrList attrs;
      EMBER_RETURN_IF_ERROR(decode_attrs(op, node, nullptr, attrs).with_prefix(where));
      auto binding = table_for_node(op, node.name(), attrs);
      if (!binding.ok()) return binding.status().with_prefix(where);
      bound[i] = binding->get();
      bound_variables[i] = std::move(binding).value();
      continue;
    }
    if (op.name == "Identity" && !inputs[i].empty()) {
      if (auto v = variable_of(inputs[i][0])) {  // another name for the variable
        bound[i] = v.get();
        bound_variables[i] = std::move(v);
        continue;
      }
    }
    // A resource op's input 0 is its variable (Note [Variables in a GraphDef]).
    const VariableResource* variable = nullptr;
    size_t first_input = 0;
    if (is_resource_op(op)) {
      const InputRef* in = inputs[i].empty() ? nullptr : &inputs[i][0];
      std::shared_ptr<VariableResource> v = in == nullptr ? nullptr : variable_of(*in);
      if (v == nullptr)
        return invalid_argument(
            where, "input 0 should be a variable (a resource Placeholder bound at import), got ",
            in == nullptr ? std::string("no input") : "'" + printable(node.input(0)) + "'");
      variable = v.get();
      first_input = 1;
    }
    AttrList attrs;
    EMBER_RETURN_IF_ERROR(decode_attrs(op, node, variable, attrs).with_prefix(where));
    if (calls_functions(op)) {
      std::vector<std::shared_ptr<VariableResource>> call_variables;  // its DT_RESOURCE arguments
      for (const InputRef& in : inputs[i])
        if (auto v = variable_of(in)) call_variables.push_back(std::move(v));
      std::vector<std::string> callees = called_functions(op, attrs);
      std::vector<std::string> library_callees;
      for (std::string& callee : callees) {
        if (!call_variables.empty() && !library.has(callee))
          return invalid_argument(where, "passes variables to the function '", printable(callee),
                                  "', which is not in the GraphDef's library");
        if (library.has(callee)) {
          auto fn_or = library.function(callee, call_variables);
          if (!fn_or.ok()) return fn_or.status().with_prefix(where);
          library_callees.push_back(callee);
          callee = FunctionLibrary::global().add(*fn_or);
          fn->callees.push_back(std::move(fn_or).value());
        } else if (std::string why = unreachable_state(callee); !why.empty()) {
          return invalid_argument(
              where, "calls the function '", callee, "' of this process, which ", why,
              "; a GraphDef reaches only the variables bound at import, so it cannot call it");
        }
      }
      set_called_functions(op, callees, attrs);
      if (!call_variables.empty() && ops::is_control_flow(op)) {
        Status s = variable_outputs(op, node, output_map[i]);
        if (!s.ok()) return s.with_prefix(where);
        // Bind each variable result (Note [Variables a control-flow node returns]).
        size_t r = 0;
        for (size_t k = 0; k < output_map[i].size(); ++k) {
          if (output_map[i][k] >= 0) continue;
          std::shared_ptr<VariableResource> v;
          if (ops::is_while(op)) {
            v = r < call_variables.size() ? call_variables[r] : nullptr;  // loop variable r passes through
          } else {
            for (const std::string& callee : library_callees) {
              const auto& returned = library.variable_results(callee, call_variables);
              std::shared_ptr<VariableResource> b = r < returned.size() ? returned[r] : nullptr;
              if (b == nullptr)
                return invalid_argument(where, "returns a variable (DT_RESOURCE) as output ", k, ", but '",
                                        printable(callee), "' returns no variable there");
              if (v != nullptr && v != b)
                return invalid_argument(where, "returns the variable '", v->name(), "' (id ", v->id(),
                                        ") from one branch and '", b->name(), "' (id ", b->id(),
                                        ") from another (output ", k,
                                        "); ember binds variables at import and cannot choose one at run "
                                        "time");
              v = std::move(b);
            }
          }
          if (v == nullptr)
            return invalid_argument(where, "returns a variable (DT_RESOURCE) as output ", k,
                                    " that is none of the variables it is passed");
          bound_outputs[{i, static_cast<int32_t>(k)}] = std::move(v);
          ++r;
        }
      }
    }
    SmallVector<ValueRef, 4> values;
    SmallVector<TensorSpec, 4> specs;
    SmallVector<const TensorImpl*, 4> constants;
    for (size_t k = first_input; k < inputs[i].size(); ++k) {
      const InputRef& in = inputs[i][k];
      std::shared_ptr<VariableResource> in_variable = variable_of(in);
      if (in.control || (in_variable != nullptr && calls_functions(op))) continue;
      if (in_variable != nullptr)
        return invalid_argument(where, "input '", printable(node.input(k)), "' is the variable '",
                                in_variable->name(),
                                "'; only a variable op (ReadVariableOp, AssignVariableOp, ...) takes a "
                                "variable, as its input 0");
      const Node& source = g.node(index[in.node]);
      int32_t output = in.output;
      if (!output_map[in.node].empty()) {  // a control-flow node that passed variables through
        output = in.output < static_cast<int32_t>(output_map[in.node].size()) ? output_map[in.node][in.output]
                                                                              : INT32_MAX;
        if (output < 0)
          return invalid_argument(where, "input '", printable(node.input(k)),
                                  "' is a variable passed through a loop; only the loop's other results "
                                  "are values");
      }
      if (output >= static_cast<int32_t>(source.outputs.size()))
        return invalid_argument(where, "input '", node.input(k), "' asks for output ", in.output, ", but '",
                                source.name, "' (op ", source.op->name, ") has ", source.outputs.size(),
                                " output(s)");
      values.push_back(ValueRef{index[in.node], output});
      specs.push_back(source.outputs[output]);
      constants.push_back(source.op == &const_op ? std::get<TensorRef>(source.attrs[0]).get() : nullptr);
    }
    // Shape operands computed in the graph (Shape -> StridedSlice -> Pack -> Reshape, as TensorFlow
    // writes a dynamic reshape): what is known of them, as while tracing.
    std::vector<PartialValue> partials(values.size());
    SmallVector<const PartialValue*, 4> partial_of;
    for (size_t k = 0; k < values.size(); ++k) {
      const bool shape_like = !op.inputs.empty() && op.arg_of(k, values.size()).shape_like;
      if (shape_like && constants[k] == nullptr) partials[k] = partial_value(g, values[k]);
      partial_of.push_back(shape_like && constants[k] == nullptr ? &partials[k] : nullptr);
    }
    SmallVector<TensorSpec, 2> outputs;
    Status s = infer_op(op, {specs.data(), specs.size()}, {constants.data(), constants.size()},
                        {attrs.data(), attrs.size()}, outputs, {partial_of.data(), partial_of.size()});
    if (!s.ok()) return s.with_prefix(where);
    auto loc = locations.find(node.name());
    int32_t id = g.add_node(op, {values.data(), values.size()}, std::move(attrs), std::move(outputs),
                            loc == locations.end() ? SourceLocation{} : loc->second, node.name());
    EMBER_DCHECK(g.node(id).name == node.name());
    if (!node.device().empty()) {
      auto device = DeviceSpec::parse(node.device());
      if (!device.ok()) return device.status().with_prefix(where);
      g.mutable_node(id).requested_device = device->to_string();
    }
    for (const InputRef& in : inputs[i])  // an edge from a variable orders nothing: it is always ready
      if (in.control && bound[in.node] == nullptr) g.add_control_input(id, index[in.node]);
    index[i] = id;
  }
  for (int i = 0; i < n; ++i)
    if (ops[i] == &placeholder_op) fn->args.push_back(index[i]);
  return fn;
}

}  // namespace graph_def_internal

// Note [Tables in a GraphDef]: a bound table travels through import as a variable does (a resource
// Placeholder, Identity, call arguments, control-flow results) and is used only for its id and name, so it
// is bound as a VariableResource standing for it: the table's id (above every variable's, Note [Table
// ids]), its name, and an int64 scalar value that nothing reads. The stand-in owns the table.
std::shared_ptr<VariableResource> table_binding(std::shared_ptr<LookupTable> table) {
  auto id_value = TensorImpl::allocate(DType::kInt64, Shape());
  EMBER_DCHECK(id_value.ok());
  (*id_value)->mutable_data<int64_t>()[0] = table->id();
  auto* stand_in = new VariableResource(table->id(), table->name(), std::move(id_value).value(), Shape());
  return std::shared_ptr<VariableResource>(stand_in,
                                           [table = std::move(table)](VariableResource* v) { delete v; });
}

namespace {

// Source locations by node name, from GraphDebugInfo's `traces` map (the last frame is the line that
// created the node).
std::unordered_map<std::string, SourceLocation> read_debug_info(const proto::GraphDebugInfo& info) {
  std::unordered_map<std::string, SourceLocation> locations;
  for (const auto& [name, trace] : info.traces()) {
    if (trace.file_line_cols_size() == 0) continue;
    const auto& frame = trace.file_line_cols(trace.file_line_cols_size() - 1);
    if (frame.line() <= 0 || frame.file_index() < 0 || frame.file_index() >= info.files_size()) continue;
    if (!is_valid_utf8(frame.func())) continue;
    locations[name] = SourceLocation{info.files(frame.file_index()), frame.line(), frame.func()};
  }
  return locations;
}

// Keeps libprotobuf's log lines about bad input (invalid UTF-8 in a string field, ...) off stderr: a
// failed parse is reported as a Status. Its fatal messages still print.
void quiet_protobuf_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
          if (level >= google::protobuf::LOGLEVEL_FATAL)
            std::fprintf(stderr, "[libprotobuf %s:%d] %s\n", file, line, message.c_str());
        });
  });
}

}  // namespace

StatusOr<std::string> to_graph_def(const Graph& graph, std::map<int64_t, std::string>* variable_nodes) {
  proto::GraphDef gd;
  ExportState state;
  state.variables = write_variable_placeholders(graph, gd);
  if (variable_nodes != nullptr) variable_nodes->insert(state.variables.begin(), state.variables.end());
  bool any_location = false;
  auto input_name = [&](ValueRef v) {
    const std::string& name = graph.node(v.node).name;
    return v.output == 0 ? name : name + ":" + std::to_string(v.output);
  };
  for (int32_t i = 0; i < graph.num_nodes(); ++i) {
    const Node& n = graph.node(i);
    any_location |= n.location.known();
    write_node(graph, n, input_name, state, gd.add_node());
  }
  // Every function called, from the graph or from a function written before it, each once.
  for (size_t k = 0; k < state.called.size(); ++k) {
    const Callee callee = state.called[k];  // a copy: write_function may grow state.called
    Status s = write_function(callee, state, *gd.mutable_library()->add_function());
    if (!s.ok()) return s.with_prefix("GraphDef export: ");
  }
  gd.mutable_versions()->set_producer(kGraphDefProducer);
  if (any_location) write_debug_info(graph, *gd.mutable_debug_info());
  EMBER_RETURN_IF_ERROR(graph_def_internal::write_tensorflow_asserts(gd));
  EMBER_RETURN_IF_ERROR(graph_def_internal::write_tensorflow_fusions(gd));
  EMBER_RETURN_IF_ERROR(graph_def_internal::write_tensorflow_lists(gd));
  return serialize(gd);
}

StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(std::string_view bytes,
                                                        const VariableBindings& variables) {
  quiet_protobuf_logs();
  proto::GraphDef gd;
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return make_error(Code::kDataLoss, "GraphDef: ", bytes.size(), " bytes is past protobuf's 2 GiB limit");
  if (!gd.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return make_error(Code::kDataLoss,
                      "GraphDef: the bytes are not a serialized GraphDef (protobuf could not parse them: "
                      "truncated or corrupt data, or a string that is not UTF-8)");
  return from_graph_def(std::move(gd), variables);
}

StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(proto::GraphDef&& gd,
                                                        const VariableBindings& variables) {
  EMBER_RETURN_IF_ERROR(graph_def_internal::type_tensor_lists(gd));
  EMBER_RETURN_IF_ERROR(graph_def_internal::rewrite_tensorflow_asserts(gd));
  EMBER_RETURN_IF_ERROR(graph_def_internal::rewrite_tensorflow_fusions(gd));
  EMBER_RETURN_IF_ERROR(graph_def_internal::rewrite_resource_gathers(gd));
  std::vector<const proto::NodeDef*> nodes;
  for (const proto::NodeDef& node : gd.node()) nodes.push_back(&node);
  LibraryReader library(gd.library());
  return build_graph(nodes, read_debug_info(gd.debug_info()), variables, library, "GraphDef: ");
}

}  // namespace ember

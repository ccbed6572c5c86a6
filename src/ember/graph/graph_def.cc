#include "ember/graph/graph_def.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

#include "ember/graph/proto_wire.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

using proto::Field;
using proto::Reader;
using proto::WireType;
using proto::Writer;

// Field numbers of TensorFlow's protos (tensorflow/core/framework/*.proto).
namespace pb {
namespace graph {
constexpr int kNode = 1, kVersions = 4, kDebugInfo = 5;
}
namespace node {
constexpr int kName = 1, kOp = 2, kInput = 3, kAttr = 5;
}
namespace map_entry {
constexpr int kKey = 1, kValue = 2;
}
namespace attr {  // AttrValue's oneof `value`
constexpr int kList = 1, kS = 2, kI = 3, kF = 4, kB = 5, kType = 6, kShape = 7, kTensor = 8, kFunc = 10;
}
namespace list {  // AttrValue.ListValue
constexpr int kI = 3;
}
namespace name_attr_list {
constexpr int kName = 1;
}
namespace versions {
constexpr int kProducer = 1;
}
namespace debug_info {  // GraphDebugInfo, its StackTrace and FileLineCol
constexpr int kFiles = 1, kTraces = 2, kFileLineCols = 1, kFileIndex = 1, kLine = 2, kFunc = 4;
}
}  // namespace pb

constexpr int kDtResource = 20;  // TensorFlow's DT_RESOURCE

// Note [Variables in a GraphDef]
// Inside ember, ReadVariableOp and the Assign*VariableOp ops name their variable by attribute 0, a
// process-wide resource id. Such an id must never come from bytes: a GraphDef from a file could then read
// or overwrite any live variable of the process. So a GraphDef carries variables as TensorFlow 2 writes
// captured ones: each variable is a Placeholder of dtype DT_RESOURCE (scalar shape, named after the
// variable, its name also in `_user_specified_name`), and the ops take it as input 0, with no `resource`
// (or ReadVariableOp `shape`) attribute. Importing binds each resource Placeholder by node name to a
// variable the caller hands over (VariableBindings; Python: import_graph_def's input_map), as TensorFlow
// binds a captured resource by feeding its handle; ids, dtype and shape then come from that variable. An
// unbound resource Placeholder, a resource op whose input 0 is not one, a resource feeding any other op,
// or a numeric `resource` attribute are InvalidArgument naming the node.

bool is_resource_op(const OpDef& op) { return op.has_flag(kReadsResource) || op.has_flag(kWritesResource); }

// Note [Attributes in a GraphDef]
// An ember attribute is written as the AttrValue member of its declared type: kInt -> i, kFloat -> f,
// kBool -> b, kDType -> type (TensorFlow's DataType), kInts -> list { i }, kString -> s, kTensor -> tensor
// (a TensorProto with raw little-endian tensor_content). TensorFlow's f is a float32, so a float attribute
// keeps float32 precision through a round trip. Two things keep TensorFlow's spelling:
//  - ember spells TensorFlow's shape-typed attribute as two, `shape` (ints, -1 for an unknown dimension)
//    and `unknown_rank` (bool). An op declaring both (Placeholder) is written with one `shape` attribute,
//    a TensorShapeProto, and read back into the two.
//  - TensorFlow's readers expect attributes that ember derives from the inputs: "T" (the dtype of type
//    variable 0), "N" (the length of a variadic input list) and Const's "dtype". They are written, and
//    ignored when read, as is any attribute the OpDef does not declare ("_class", "_output_shapes", ...).
// Reading is lenient where TensorFlow's writers differ: kInts also accepts a shape, kString a function
// name (func), and kTensor the typed value fields (float_val, int_val, ...), where the last value repeats
// to fill the shape.

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
  }
  return "?";
}

const char* attr_member_name(uint32_t number) {
  static const char* const kNames[] = {"nothing", "list",  "s",      "i",           "f",   "b",
                                       "type",    "shape", "tensor", "placeholder", "func"};
  return number < std::size(kNames) ? kNames[number] : "an unknown member";
}

// ---- writing

void write_attr_value(Writer& w, AttrType type, const AttrValue& value) {
  switch (type) {
    case AttrType::kInt:
      return w.write_int(pb::attr::kI, std::get<int64_t>(value));
    case AttrType::kFloat:
      return w.write_float(pb::attr::kF, static_cast<float>(std::get<double>(value)));
    case AttrType::kBool:
      return w.write_bool(pb::attr::kB, std::get<bool>(value));
    case AttrType::kDType:
      return w.write_int(pb::attr::kType, tf_datatype(std::get<DType>(value)));
    case AttrType::kInts:
      return w.write_message(pb::attr::kList, [&](Writer& list) {
        list.write_packed_ints(pb::list::kI, std::get<std::vector<int64_t>>(value));
      });
    case AttrType::kString:
      return w.write_bytes(pb::attr::kS, std::get<std::string>(value));
    case AttrType::kTensor:
      return w.write_message(pb::attr::kTensor,
                             [&](Writer& t) { write_tensor_proto(t, *std::get<TensorRef>(value)); });
  }
}

// (name, serialized AttrValue) for every attribute of `n`: the declared ones and TensorFlow's derived ones.
std::vector<std::pair<std::string, std::string>> node_attrs(const Graph& g, const Node& n) {
  const OpDef& op = *n.op;
  std::vector<std::pair<std::string, std::string>> attrs;
  auto add = [&](std::string name, auto&& fill) {
    Writer value;
    fill(value);
    attrs.emplace_back(std::move(name), value.take());
  };
  const ShapeAttrs shape = shape_attrs(op);
  for (size_t i = 0; i < n.attrs.size() && i < op.attrs.size(); ++i) {
    const int k = static_cast<int>(i);
    if (k == shape.unknown_rank) continue;
    if (is_resource_op(op) && (k == 0 || op.attrs[i].name == "shape")) continue;  // the variable's
    if (k == shape.shape) {
      bool unknown_rank = std::get<bool>(n.attrs[shape.unknown_rank]);
      const auto& dims = std::get<std::vector<int64_t>>(n.attrs[k]);
      add(op.attrs[i].name, [&](Writer& w) {
        w.write_message(pb::attr::kShape, [&](Writer& s) {
          write_shape_proto(s, unknown_rank ? std::span<const int64_t>() : std::span<const int64_t>(dims),
                            unknown_rank);
        });
      });
      continue;
    }
    add(op.attrs[i].name, [&](Writer& w) { write_attr_value(w, op.attrs[i].type, n.attrs[i]); });
  }
  // TensorFlow's derived attributes (Note [Attributes in a GraphDef]).
  const size_t declared = op.inputs.size();
  if (op.attr_index("T") < 0) {
    for (size_t i = 0; i < n.inputs.size() && declared > 0; ++i) {
      if (op.inputs[std::min(i, declared - 1)].type.type_var != 0) continue;
      DType dtype = g.spec(n.inputs[i]).dtype;
      // TensorFlow's variable ops name the value's type "dtype" (and refuse a "T").
      add(is_resource_op(op) ? "dtype" : "T",
          [&](Writer& w) { w.write_int(pb::attr::kType, tf_datatype(dtype)); });
      break;
    }
  }
  if (op.has_flag(kVariadicInput) && !op.has_flag(kVariadicMayBeEmpty) && op.attr_index("N") < 0) {
    int64_t count = static_cast<int64_t>(n.inputs.size()) - static_cast<int64_t>(declared - 1);
    add("N", [&](Writer& w) { w.write_int(pb::attr::kI, count); });
  }
  if (op.attr_index("dtype") < 0) {
    for (size_t i = 0; i < n.attrs.size() && i < op.attrs.size(); ++i) {
      if (op.attrs[i].type != AttrType::kTensor) continue;
      DType dtype = std::get<TensorRef>(n.attrs[i])->dtype();
      add("dtype", [&](Writer& w) { w.write_int(pb::attr::kType, tf_datatype(dtype)); });
      break;
    }
  }
  std::sort(attrs.begin(), attrs.end());  // as TensorFlow's deterministic serialization orders map keys
  return attrs;
}

std::string input_name(const Graph& g, ValueRef v) {
  const std::string& name = g.node(v.node).name;
  return v.output == 0 ? name : name + ":" + std::to_string(v.output);
}

// Variable id -> the name of the resource Placeholder written for it (Note [Variables in a GraphDef]).
using VariableNodes = std::unordered_map<int64_t, std::string>;

void write_node(Writer& w, const Graph& g, const Node& n, const VariableNodes& variables) {
  w.write_bytes(pb::node::kName, n.name);
  w.write_bytes(pb::node::kOp, n.op->name);
  if (is_resource_op(*n.op)) w.write_bytes(pb::node::kInput, variables.at(std::get<int64_t>(n.attrs[0])));
  for (ValueRef v : n.inputs) w.write_bytes(pb::node::kInput, input_name(g, v));
  for (int32_t c : n.control_inputs) w.write_bytes(pb::node::kInput, "^" + g.node(c).name);
  for (const auto& attr : node_attrs(g, n)) {  // not a structured binding: clang 14 cannot capture one
    w.write_message(pb::node::kAttr, [&](Writer& entry) {
      entry.write_bytes(pb::map_entry::kKey, attr.first);
      entry.write_bytes(pb::map_entry::kValue, attr.second);
    });
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
VariableNodes write_variable_placeholders(Writer& w, const Graph& g) {
  VariableNodes names;
  std::unordered_map<std::string, int> taken;
  for (int32_t i = 0; i < g.num_nodes(); ++i) taken.emplace(g.node(i).name, 0);
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (!is_resource_op(*n.op)) continue;
    const int64_t id = std::get<int64_t>(n.attrs[0]);
    if (names.count(id)) continue;
    auto variable = ResourceManager::global().find(id, n.op->name.c_str());
    const std::string variable_name = variable.ok() ? variable.value()->name() : "variable";
    const std::string base = node_name_for_variable(variable_name);
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
    taken.emplace(name, 0);
    names.emplace(id, name);
    w.write_message(pb::graph::kNode, [&](Writer& node) {
      node.write_bytes(pb::node::kName, name);
      node.write_bytes(pb::node::kOp, "Placeholder");
      auto attr = [&](std::string_view key, auto&& fill) {
        node.write_message(pb::node::kAttr, [&](Writer& entry) {
          entry.write_bytes(pb::map_entry::kKey, key);
          entry.write_message(pb::map_entry::kValue, fill);
        });
      };
      attr("_user_specified_name", [&](Writer& v) { v.write_bytes(pb::attr::kS, variable_name); });
      attr("dtype", [](Writer& v) { v.write_int(pb::attr::kType, kDtResource); });
      attr("shape", [](Writer& v) { v.write_message(pb::attr::kShape, [](Writer&) {}); });
    });
  }
  return names;
}

// Each node's source location as a one-frame stack trace keyed by node name.
void write_debug_info(Writer& w, const Graph& g) {
  std::vector<std::string> files;
  std::unordered_map<std::string, int64_t> file_index;
  std::vector<int64_t> node_file(g.num_nodes(), -1);
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const SourceLocation& loc = g.node(i).location;
    if (!loc.known()) continue;
    auto [it, added] = file_index.emplace(loc.file, static_cast<int64_t>(files.size()));
    if (added) files.push_back(loc.file);
    node_file[i] = it->second;
  }
  for (const std::string& file : files) w.write_bytes(pb::debug_info::kFiles, file);
  std::vector<int32_t> by_name;  // map entries in key order, as deterministic protobuf writers do
  for (int32_t i = 0; i < g.num_nodes(); ++i)
    if (node_file[i] >= 0) by_name.push_back(i);
  std::sort(by_name.begin(), by_name.end(),
            [&](int32_t a, int32_t b) { return g.node(a).name < g.node(b).name; });
  for (int32_t i : by_name) {
    const Node& n = g.node(i);
    w.write_message(pb::debug_info::kTraces, [&](Writer& entry) {
      entry.write_bytes(pb::map_entry::kKey, n.name);
      entry.write_message(pb::map_entry::kValue, [&](Writer& trace) {
        trace.write_message(pb::debug_info::kFileLineCols, [&](Writer& frame) {
          if (node_file[i] != 0) frame.write_int(pb::debug_info::kFileIndex, node_file[i]);
          frame.write_int(pb::debug_info::kLine, n.location.line);
          if (!n.location.function.empty()) frame.write_bytes(pb::debug_info::kFunc, n.location.function);
        });
      });
    });
  }
}

// ---- reading

struct AttrEntry {
  std::string_view name;
  Field value;  // the AttrValue message
};

struct NodeEntry {
  std::string_view name, op;
  std::vector<std::string_view> inputs;
  std::vector<AttrEntry> attrs;
};

struct Frame {
  int64_t file_index = 0;
  int64_t line = 0;
  std::string_view function;
};

Status parse_map_entry(const Field& entry, std::string_view what, std::string_view& key, Field& value) {
  EMBER_RETURN_IF_ERROR(proto::expect(entry, WireType::kLengthDelimited, what));
  value = Field{};
  value.wire_type = WireType::kLengthDelimited;
  value.bytes_offset = entry.bytes_offset;
  Reader r(entry);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == pb::map_entry::kKey) {
      EMBER_RETURN_IF_ERROR(proto::read_string(f, std::string(what) + " key", key));
    } else if (f.number == pb::map_entry::kValue) {
      EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kLengthDelimited, std::string(what) + " value"));
      value = f;
    }
  }
  return Status::OK();
}

Status parse_node(const Field& field, NodeEntry& node) {
  EMBER_RETURN_IF_ERROR(proto::expect(field, WireType::kLengthDelimited, "GraphDef.node"));
  Reader r(field);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case pb::node::kName:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, "NodeDef.name", node.name));
        break;
      case pb::node::kOp:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, "NodeDef.op", node.op));
        break;
      case pb::node::kInput:
        EMBER_RETURN_IF_ERROR(proto::read_string(f, "NodeDef.input", node.inputs.emplace_back()));
        break;
      case pb::node::kAttr: {
        AttrEntry entry;
        EMBER_RETURN_IF_ERROR(parse_map_entry(f, "NodeDef.attr", entry.name, entry.value));
        node.attrs.push_back(entry);
        break;
      }
      default:  // device, experimental_debug_info, ...: not used
        break;
    }
  }
  return Status::OK();
}

Status parse_frame(const Field& trace, Frame& frame) {
  EMBER_RETURN_IF_ERROR(proto::expect(trace, WireType::kLengthDelimited, "GraphDebugInfo.StackTrace"));
  Reader r(trace);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number != pb::debug_info::kFileLineCols) continue;
    EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kLengthDelimited, "StackTrace.file_line_cols"));
    frame = Frame{};  // the last frame is the line that created the node
    Reader fr(f);
    Field g;
    while (!fr.done()) {
      EMBER_RETURN_IF_ERROR(fr.next(g));
      if (g.number == pb::debug_info::kFileIndex) {
        EMBER_RETURN_IF_ERROR(proto::expect(g, WireType::kVarint, "FileLineCol.file_index"));
        frame.file_index = g.as_int32();
      } else if (g.number == pb::debug_info::kLine) {
        EMBER_RETURN_IF_ERROR(proto::expect(g, WireType::kVarint, "FileLineCol.line"));
        frame.line = g.as_int32();
      } else if (g.number == pb::debug_info::kFunc) {
        EMBER_RETURN_IF_ERROR(proto::read_string(g, "FileLineCol.func", frame.function));
      }
    }
  }
  return Status::OK();
}

// Source locations by node name, from GraphDebugInfo's `traces` map.
Status parse_debug_info(const Field& field, std::unordered_map<std::string_view, SourceLocation>& locations) {
  EMBER_RETURN_IF_ERROR(proto::expect(field, WireType::kLengthDelimited, "GraphDef.debug_info"));
  std::vector<std::string_view> files;
  std::vector<std::pair<std::string_view, Frame>> frames;
  Reader r(field);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == pb::debug_info::kFiles) {
      EMBER_RETURN_IF_ERROR(proto::read_string(f, "GraphDebugInfo.files", files.emplace_back()));
    } else if (f.number == pb::debug_info::kTraces) {
      std::string_view name;
      Field trace;
      EMBER_RETURN_IF_ERROR(parse_map_entry(f, "GraphDebugInfo.traces", name, trace));
      Frame frame;
      EMBER_RETURN_IF_ERROR(parse_frame(trace, frame));
      frames.emplace_back(name, frame);
    }
  }
  for (const auto& [name, frame] : frames) {
    if (frame.line <= 0 || frame.file_index < 0 || frame.file_index >= static_cast<int64_t>(files.size()))
      continue;
    locations[name] = SourceLocation{std::string(files[frame.file_index]), static_cast<int>(frame.line),
                                     std::string(frame.function)};
  }
  return Status::OK();
}

// The member of an AttrValue's oneof that is set (the last one, as protobuf merges); number 0 if none.
Status attr_member(const Field& attr_value, Field& member) {
  member = Field{};
  Reader r(attr_value);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number >= pb::attr::kList && f.number <= pb::attr::kFunc) member = f;
  }
  return Status::OK();
}

Status decode_ints(const Field& list, std::vector<int64_t>& out) {
  EMBER_RETURN_IF_ERROR(proto::expect(list, WireType::kLengthDelimited, "AttrValue.list"));
  Reader r(list);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == pb::list::kI) {
      EMBER_RETURN_IF_ERROR(proto::read_repeated_ints(f, "AttrValue.ListValue.i", out));
    } else if (f.wire_type != WireType::kLengthDelimited || !f.bytes.empty()) {
      return invalid_argument("should be ", attr_type_name(AttrType::kInts), ", got a list of other values");
    }
  }
  return Status::OK();
}

// Decodes one attribute by its declared type. `unknown_rank` is set when a kInts attribute came as a shape
// of unknown rank (Note [Attributes in a GraphDef]).
Status decode_attr(const AttrDef& def, const Field& attr_value, AttrValue& out, bool& unknown_rank) {
  Field m;
  EMBER_RETURN_IF_ERROR(attr_member(attr_value, m));
  auto mismatch = [&] {
    return invalid_argument("should be ", attr_type_name(def.type), ", got AttrValue.",
                            attr_member_name(m.number));
  };
  auto expect_wire = [&](WireType t) {
    return proto::expect(m, t, std::string("AttrValue.") + attr_member_name(m.number));
  };
  switch (def.type) {
    case AttrType::kInt:
      if (m.number != pb::attr::kI) return mismatch();
      EMBER_RETURN_IF_ERROR(expect_wire(WireType::kVarint));
      out = m.as_int64();
      return Status::OK();
    case AttrType::kFloat:
      if (m.number != pb::attr::kF) return mismatch();
      EMBER_RETURN_IF_ERROR(expect_wire(WireType::kFixed32));
      out = static_cast<double>(m.as_float());
      return Status::OK();
    case AttrType::kBool:
      if (m.number != pb::attr::kB) return mismatch();
      EMBER_RETURN_IF_ERROR(expect_wire(WireType::kVarint));
      out = m.as_bool();
      return Status::OK();
    case AttrType::kDType: {
      if (m.number != pb::attr::kType) return mismatch();
      EMBER_RETURN_IF_ERROR(expect_wire(WireType::kVarint));
      DType dtype;
      if (!dtype_from_tf_datatype(m.as_int32(), &dtype))
        return invalid_argument("DataType ", m.as_int32(), " is not one ember supports");
      out = dtype;
      return Status::OK();
    }
    case AttrType::kInts: {
      std::vector<int64_t> ints;
      if (m.number == pb::attr::kShape) {
        EMBER_RETURN_IF_ERROR(read_shape_proto(m, ints, unknown_rank));
      } else if (m.number == pb::attr::kList) {
        EMBER_RETURN_IF_ERROR(decode_ints(m, ints));
      } else if (m.number != 0) {  // an AttrValue with nothing set: an empty list
        return mismatch();
      }
      out = std::move(ints);
      return Status::OK();
    }
    case AttrType::kString:
      if (m.number ==
          pb::attr::kFunc) {  // TensorFlow's PartitionedCall names its function with a NameAttrList
        EMBER_RETURN_IF_ERROR(expect_wire(WireType::kLengthDelimited));
        std::string name;
        Reader r(m);
        Field f;
        while (!r.done()) {
          EMBER_RETURN_IF_ERROR(r.next(f));
          if (f.number != pb::name_attr_list::kName) continue;
          std::string_view text;
          EMBER_RETURN_IF_ERROR(proto::read_string(f, "NameAttrList.name", text));
          name = text;
        }
        out = std::move(name);
        return Status::OK();
      }
      if (m.number != pb::attr::kS) return mismatch();
      EMBER_RETURN_IF_ERROR(expect_wire(WireType::kLengthDelimited));
      if (!proto::is_valid_utf8(m.bytes))  // AttrValue.s is bytes; ember's string attributes are text
        return invalid_argument("is not valid UTF-8 text");
      out = std::string(m.bytes);
      return Status::OK();
    case AttrType::kTensor: {
      if (m.number != pb::attr::kTensor) return mismatch();
      TensorRef t;
      EMBER_RETURN_IF_ERROR(read_tensor_proto(m, t));
      out = std::move(t);
      return Status::OK();
    }
  }
  return mismatch();
}

// `variable` is the bound variable of a resource op: its id, shape and (unless given) dtype fill the
// attributes that describe it (Note [Variables in a GraphDef]).
Status decode_attrs(const OpDef& op, const NodeEntry& node, const VariableResource* variable,
                    AttrList& attrs) {
  const ShapeAttrs shape = shape_attrs(op);
  bool unknown_rank = false;
  for (size_t k = 0; k < op.attrs.size(); ++k) {
    const AttrDef& def = op.attrs[k];
    const AttrEntry* entry = nullptr;
    for (const AttrEntry& e : node.attrs)
      if (e.name == def.name) entry = &e;  // a map key given twice: the last wins
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
    Status s = decode_attr(def, entry->value, value, this_unknown_rank);
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
      if (n.op->name == "PartitionedCall" && !n.attrs.empty())
        if (auto callee = FunctionLibrary::global().find(std::get<std::string>(n.attrs[0])))
          pending.push_back(std::move(callee));
    }
    for (const auto& callee : fn->callees)
      if (callee) pending.push_back(callee);
  }
  return "";
}

// A Placeholder of dtype DT_RESOURCE: a variable the graph was exported with.
bool is_resource_placeholder(const NodeEntry& node) {
  if (node.op != "Placeholder") return false;
  const AttrEntry* dtype = nullptr;
  for (const AttrEntry& e : node.attrs)
    if (e.name == "dtype") dtype = &e;
  Field m;
  if (dtype == nullptr || !attr_member(dtype->value, m).ok()) return false;
  return m.number == pb::attr::kType && m.wire_type == WireType::kVarint && m.as_int64() == kDtResource;
}

// TensorFlow's names for ops ember registers under a simpler one (op_def.h: "AddV2" is spelled "Add").
std::string_view tf_op_alias(std::string_view op) { return op == "AddV2" ? std::string_view("Add") : op; }

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
Status topological_order(const std::vector<NodeEntry>& nodes,
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
  for (size_t k = position[at]; k < path.size(); ++k) cycle += std::string(nodes[path[k]].name) + " <- ";
  cycle += std::string(nodes[at].name);
  return invalid_argument("the inputs of node '", nodes[at].name, "' form a cycle: ", cycle,
                          " (read 'a <- b' as 'a takes an input from b')");
}

}  // namespace

std::string to_graph_def(const Graph& graph) {
  Writer w;
  bool any_location = false;
  const VariableNodes variables = write_variable_placeholders(w, graph);
  for (int32_t i = 0; i < graph.num_nodes(); ++i) {
    const Node& n = graph.node(i);
    any_location |= n.location.known();
    w.write_message(pb::graph::kNode, [&](Writer& node) { write_node(node, graph, n, variables); });
  }
  w.write_message(pb::graph::kVersions,
                  [](Writer& v) { v.write_int(pb::versions::kProducer, kGraphDefProducer); });
  if (any_location) w.write_message(pb::graph::kDebugInfo, [&](Writer& d) { write_debug_info(d, graph); });
  return w.take();
}

StatusOr<std::unique_ptr<FunctionGraph>> from_graph_def(std::string_view bytes,
                                                        const VariableBindings& variables) {
  const std::string kWhere = "GraphDef: ";
  std::vector<NodeEntry> nodes;
  std::unordered_map<std::string_view, SourceLocation> locations;
  Reader r(bytes);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f).with_prefix(kWhere));
    if (f.number == pb::graph::kNode) {
      nodes.emplace_back();
      Status s = parse_node(f, nodes.back());
      if (!s.ok()) return s.with_prefix(kWhere + "node #" + std::to_string(nodes.size() - 1) + ": ");
    } else if (f.number == pb::graph::kDebugInfo) {
      EMBER_RETURN_IF_ERROR(parse_debug_info(f, locations).with_prefix(kWhere));
    }  // versions, library and the deprecated version: not needed to rebuild the graph
  }

  const int n = static_cast<int>(nodes.size());
  std::unordered_map<std::string_view, int> by_name;
  std::vector<const OpDef*> ops(n);
  std::vector<const VariableResource*> bound(n, nullptr);  // for resource Placeholders
  for (int i = 0; i < n; ++i) {
    const NodeEntry& node = nodes[i];
    if (!valid_node_name(node.name))
      return invalid_argument(kWhere, "node #", i, " has the name '", printable(node.name),
                              "'; node names must match [A-Za-z0-9.][A-Za-z0-9_.\\-/>]*");
    auto [it, added] = by_name.emplace(node.name, i);
    if (!added)
      return invalid_argument(kWhere, "nodes #", it->second, " and #", i, " are both named '", node.name,
                              "'");
    if (is_resource_placeholder(node)) {
      auto variable = variables.find(node.name);
      if (variable == variables.end() || variable->second == nullptr)
        return invalid_argument(
            kWhere, "node '", node.name,
            "' is a resource Placeholder (a variable the graph was exported with), and no "
            "variable is bound to it; bind one to the name '",
            node.name, "' at import (Python: import_graph_def(graph_def, input_map={'", node.name,
            ":0': variable}))");
      if (!node.inputs.empty())
        return invalid_argument(kWhere, "node '", node.name,
                                "' is a resource Placeholder, which takes no inputs");
      bound[i] = variable->second.get();
      continue;
    }
    ops[i] = OpRegistry::global().find(tf_op_alias(node.op));
    if (ops[i] == nullptr)
      return make_error(Code::kNotFound, kWhere, "node '", node.name, "' has op '", printable(node.op),
                        "', which ember does not register");
  }
  std::vector<std::vector<InputRef>> inputs(n);
  for (int i = 0; i < n; ++i) {
    for (std::string_view input : nodes[i].inputs) {
      InputRef ref;
      Status s = resolve_input(input, by_name, ref);
      if (!s.ok()) return s.with_prefix(kWhere + "node '" + std::string(nodes[i].name) + "': ");
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
  const OpDef& call_op = op_def("PartitionedCall");
  std::vector<int32_t> index(n, -1);  // GraphDef position -> node in g
  for (int i : order) {
    const NodeEntry& node = nodes[i];
    if (bound[i] != nullptr) continue;  // a variable: no node of its own
    const OpDef& op = *ops[i];
    const std::string where = kWhere + "node '" + std::string(node.name) + "' (op " + op.name + "): ";
    // A resource op's input 0 is its variable (Note [Variables in a GraphDef]).
    const VariableResource* variable = nullptr;
    size_t first_input = 0;
    if (is_resource_op(op)) {
      const InputRef* in = inputs[i].empty() ? nullptr : &inputs[i][0];
      if (in == nullptr || in->control || bound[in->node] == nullptr || in->output != 0)
        return invalid_argument(
            where, "input 0 should be a variable (a resource Placeholder bound at import), got ",
            in == nullptr ? std::string("no input") : "'" + printable(node.inputs[0]) + "'");
      variable = bound[in->node];
      first_input = 1;
    }
    AttrList attrs;
    EMBER_RETURN_IF_ERROR(decode_attrs(op, node, variable, attrs).with_prefix(where));
    if (&op == &call_op) {
      const std::string& callee = std::get<std::string>(attrs[0]);
      if (std::string why = unreachable_state(callee); !why.empty())
        return invalid_argument(
            where, "calls the function '", callee, "' of this process, which ", why,
            "; a GraphDef reaches only the variables bound at import, so it cannot call it");
    }
    SmallVector<ValueRef, 4> values;
    SmallVector<TensorSpec, 4> specs;
    SmallVector<const TensorImpl*, 4> constants;
    for (size_t k = first_input; k < inputs[i].size(); ++k) {
      const InputRef& in = inputs[i][k];
      if (in.control) continue;
      if (bound[in.node] != nullptr)
        return invalid_argument(where, "input '", printable(node.inputs[k]), "' is the variable '",
                                bound[in.node]->name(),
                                "'; only a variable op (ReadVariableOp, AssignVariableOp, ...) takes a "
                                "variable, as its input 0");
      const Node& source = g.node(index[in.node]);
      if (in.output >= static_cast<int32_t>(source.outputs.size()))
        return invalid_argument(where, "input '", node.inputs[k], "' asks for output ", in.output, ", but '",
                                source.name, "' (op ", source.op->name, ") has ", source.outputs.size(),
                                " output(s)");
      values.push_back(ValueRef{index[in.node], in.output});
      specs.push_back(source.outputs[in.output]);
      constants.push_back(source.op == &const_op ? std::get<TensorRef>(source.attrs[0]).get() : nullptr);
    }
    SmallVector<TensorSpec, 2> outputs;
    Status s = infer_op(op, {specs.data(), specs.size()}, {constants.data(), constants.size()},
                        {attrs.data(), attrs.size()}, outputs);
    if (!s.ok()) return s.with_prefix(where);
    auto loc = locations.find(node.name);
    int32_t id = g.add_node(op, {values.data(), values.size()}, std::move(attrs), std::move(outputs),
                            loc == locations.end() ? SourceLocation{} : loc->second, node.name);
    EMBER_DCHECK(g.node(id).name == node.name);
    for (const InputRef& in : inputs[i])  // an edge from a variable orders nothing: it is always ready
      if (in.control && bound[in.node] == nullptr) g.add_control_input(id, index[in.node]);
    index[i] = id;
  }
  for (int i = 0; i < n; ++i)
    if (ops[i] == &placeholder_op) fn->args.push_back(index[i]);
  return fn;
}

}  // namespace ember

// TensorFlow's Assert layout to ember's and back (assert_import.h). TensorFlow prints "assertion failed: "
// and then each datum in brackets, separated by spaces: a string "[x:]", a tensor "[1 -2]"; ember's Assert
// prints its template with each slot (\x1f) replaced by the next tensor in that same form.
#include "ember/graph/assert_import.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember::graph_def_internal {
namespace {

constexpr char kSlot = '\x1f';

std::string node_of(const std::string& input) {
  const size_t colon = input.find(':');
  return input[0] == '^' ? input.substr(1, colon - 1) : input.substr(0, colon);
}

// The text of a scalar DT_STRING Const, or false.
bool string_constant(const proto::NodeDef& node, std::string& text) {
  if (node.op() != "Const") return false;
  auto value = node.attr().find("value");
  if (value == node.attr().end() || !value->second.has_tensor()) return false;
  const proto::TensorProto& t = value->second.tensor();
  if (t.dtype() != proto::DT_STRING || t.string_val_size() != 1 || t.tensor_shape().dim_size() != 0)
    return false;
  text = t.string_val(0);
  for (char& c : text)
    if (c == kSlot) c = '?';  // the template's slot marker cannot be text
  return true;
}

void rewrite(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes) {
  std::unordered_map<std::string, const proto::NodeDef*> by_name;
  for (const proto::NodeDef& n : nodes) by_name[n.name()] = &n;
  for (proto::NodeDef& n : nodes) {
    if (n.op() != "Assert" || n.input_size() < 1 || n.attr().count("template") > 0) continue;
    std::string templ;
    std::vector<std::string> data;
    std::vector<std::string> control;
    bool first = true;
    for (int k = 1; k < n.input_size(); ++k) {
      const std::string& input = n.input(k);
      if (!input.empty() && input[0] == '^') {
        control.push_back(input);
        continue;
      }
      if (!first) templ += ' ';
      first = false;
      std::string text;
      auto source = by_name.find(node_of(input));
      if (source != by_name.end() && string_constant(*source->second, text)) {
        templ += "[" + text + "]";
      } else {
        templ += kSlot;
        data.push_back(input);
      }
    }
    const std::string condition = n.input(0);
    n.clear_input();
    n.add_input(condition);
    for (const std::string& d : data) n.add_input(d);
    for (const std::string& c : control) n.add_input(c);
    (*n.mutable_attr())["template"].set_s(templ);
    n.mutable_attr()->erase("T");
  }
  // String constants nothing reads (any more: TensorFlow also leaves unread copies of an Assert's strings
  // beside the If that guards it) go: ember could not import them, and they compute nothing.
  std::unordered_set<std::string> read;
  for (const proto::NodeDef& n : nodes)
    for (const std::string& input : n.input()) read.insert(node_of(input));
  for (int k = nodes.size() - 1; k >= 0; --k) {
    std::string text;
    if (string_constant(nodes.Get(k), text) && read.count(nodes.Get(k).name()) == 0)
      nodes.DeleteSubrange(k, 1);
  }
}

// The text of an ember template's stretch between two slots as TensorFlow's string data: "[x:] [y]" ->
// "x:", "y" (how debugging.Assert writes text: each piece in brackets, pieces separated by spaces).
std::vector<std::string> text_pieces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::vector<std::string> pieces;
  if (text.empty()) return pieces;
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return {std::string(text)};
  text = text.substr(1, text.size() - 2);
  for (size_t at = text.find("] ["); at != std::string_view::npos; at = text.find("] [")) {
    pieces.emplace_back(text.substr(0, at));
    text.remove_prefix(at + 3);
  }
  pieces.emplace_back(text);
  return pieces;
}

void write_asserts(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, bool in_function) {
  std::unordered_set<std::string> names;
  for (const proto::NodeDef& n : nodes) names.insert(n.name());
  const int count = nodes.size();
  for (int i = 0; i < count; ++i) {
    proto::NodeDef& n = *nodes.Mutable(i);
    auto templ_attr = n.attr().find("template");
    if (n.op() != "Assert" || templ_attr == n.attr().end() || n.input_size() < 1) continue;
    const std::string templ = templ_attr->second.s();
    std::vector<std::string> data, control;
    for (int k = 1; k < n.input_size(); ++k) (n.input(k)[0] == '^' ? control : data).push_back(n.input(k));
    std::vector<proto::DataType> data_types;
    if (auto t = n.attr().find("T"); t != n.attr().end())
      for (int type : t->second.list().type()) data_types.push_back(static_cast<proto::DataType>(type));
    std::vector<std::string> inputs;
    std::vector<proto::DataType> types;
    std::vector<proto::NodeDef> constants;
    size_t next = 0, start = 0;
    auto add_text = [&](std::string_view text) {
      for (std::string& piece : text_pieces(text)) {
        std::string name = n.name() + "/data_" + std::to_string(inputs.size());
        while (names.count(name)) name += "_";
        names.insert(name);
        proto::NodeDef& c = constants.emplace_back();
        c.set_name(name);
        c.set_op("Const");
        (*c.mutable_attr())["dtype"].set_type(proto::DT_STRING);
        proto::TensorProto* t = (*c.mutable_attr())["value"].mutable_tensor();
        t->set_dtype(proto::DT_STRING);
        t->mutable_tensor_shape();
        t->add_string_val(std::move(piece));
        inputs.push_back(in_function ? name + ":output:0" : name);
        types.push_back(proto::DT_STRING);
      }
    };
    for (size_t at = templ.find(kSlot); at != std::string::npos; at = templ.find(kSlot, start)) {
      add_text(std::string_view(templ).substr(start, at - start));
      if (next < data.size()) {
        inputs.push_back(data[next]);
        types.push_back(next < data_types.size() ? data_types[next] : proto::DT_FLOAT);
        ++next;
      }
      start = at + 1;
    }
    add_text(std::string_view(templ).substr(start));
    const std::string condition = n.input(0);
    n.clear_input();
    n.add_input(condition);
    for (const std::string& in : inputs) n.add_input(in);
    for (const std::string& c : control) n.add_input(c);
    n.mutable_attr()->erase("template");
    proto::AttrValue& t = (*n.mutable_attr())["T"];
    t.mutable_list()->clear_type();
    for (proto::DataType type : types) t.mutable_list()->add_type(type);
    for (proto::NodeDef& c : constants) *nodes.Add() = std::move(c);
  }
}

}  // namespace

Status write_tensorflow_asserts(proto::GraphDef& gd) {
  write_asserts(*gd.mutable_node(), false);
  if (!gd.has_library()) return Status::OK();  // an empty library would be written out
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function())
    write_asserts(*f.mutable_node_def(), true);
  return Status::OK();
}

Status rewrite_tensorflow_asserts(proto::GraphDef& gd) {
  rewrite(*gd.mutable_node());
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function()) rewrite(*f.mutable_node_def());
  return Status::OK();
}

}  // namespace ember::graph_def_internal

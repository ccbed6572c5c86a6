// TensorFlow's Assert layout to ember's (assert_import.h). TensorFlow prints "assertion failed: " and
// then each datum in brackets, separated by spaces: a string "[x:]", a tensor "[1 -2]"; ember's Assert
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

}  // namespace

Status rewrite_tensorflow_asserts(proto::GraphDef& gd) {
  rewrite(*gd.mutable_node());
  for (proto::FunctionDef& f : *gd.mutable_library()->mutable_function()) rewrite(*f.mutable_node_def());
  return Status::OK();
}

}  // namespace ember::graph_def_internal

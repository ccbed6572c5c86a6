#include "ember/graph/graph.h"

#include <sstream>

namespace ember {

std::string SourceLocation::to_string() const {
  if (!known()) return "";
  auto slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(line);
}

Status with_source_context(const OpDef& op, std::string_view node_name, const SourceLocation& location,
                           const Status& status) {
  if (status.ok()) return status;
  std::string label = op.name;
  if (!node_name.empty() && node_name != op.name) label += " '" + std::string(node_name) + "'";
  if (location.known()) label += " (created at " + location.to_string() + ")";
  std::string prefix = op.name + ":";
  const std::string& msg = status.message();
  std::string body = msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : " " + msg;
  return Status(status.code(), label + ":" + body);
}

std::string Graph::unique_name(std::string_view base) {
  std::string name(base);
  if (!by_name_.count(name)) return name;
  int& count = name_counts_[name];
  std::string candidate;
  do {
    candidate = name + "_" + std::to_string(++count);
  } while (by_name_.count(candidate));
  return candidate;
}

int32_t Graph::add_node(const OpDef& op, std::span<const ValueRef> inputs, AttrList attrs,
                        SmallVector<TensorSpec, 2> outputs, SourceLocation location, std::string_view name) {
  Node node;
  node.op = &op;
  node.name = unique_name(name.empty() ? std::string_view(op.name) : name);
  for (ValueRef v : inputs) {
    EMBER_DCHECK(v.node >= 0 && v.node < num_nodes());
    node.inputs.push_back(v);
  }
  node.attrs = std::move(attrs);
  node.outputs = std::move(outputs);
  node.location = std::move(location);
  int32_t index = num_nodes();
  by_name_.emplace(node.name, index);
  nodes_.push_back(std::move(node));
  return index;
}

void Graph::add_control_input(int32_t node, int32_t dependency) {
  auto& deps = nodes_[node].control_inputs;
  for (int32_t d : deps)
    if (d == dependency) return;
  deps.push_back(dependency);
}

int32_t Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

StatusOr<ValueRef> Graph::parse_tensor_name(std::string_view tensor_name) const {
  std::string_view op_name = tensor_name;
  int32_t output = 0;
  auto colon = tensor_name.rfind(':');
  if (colon != std::string_view::npos) {
    op_name = tensor_name.substr(0, colon);
    std::string digits(tensor_name.substr(colon + 1));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      return invalid_argument("'", tensor_name, "' is not a tensor name of the form 'op_name:output_index'");
    output = std::stoi(digits);
  }
  int32_t node = find(op_name);
  if (node < 0) return make_error(Code::kNotFound, "the graph has no operation named '", op_name, "'");
  if (output >= static_cast<int32_t>(nodes_[node].outputs.size()))
    return make_error(Code::kNotFound, "operation '", op_name, "' has ", nodes_[node].outputs.size(),
                      " output(s); there is no output ", output);
  return ValueRef{node, output};
}

std::string Graph::tensor_name(ValueRef v) const {
  return nodes_[v.node].name + ":" + std::to_string(v.output);
}

std::string format_attrs(const OpDef& op, const AttrList& attrs) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < attrs.size() && i < op.attrs.size(); ++i) {
    if (i) os << ", ";
    os << op.attrs[i].name << "=";
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool>) {
            os << (v ? "true" : "false");
          } else if constexpr (std::is_same_v<V, DType>) {
            os << dtype_name(v);
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            os << "[";
            for (size_t k = 0; k < v.size(); ++k) os << (k ? "," : "") << v[k];
            os << "]";
          } else if constexpr (std::is_same_v<V, std::string>) {
            os << '"' << v << '"';
          } else if constexpr (std::is_same_v<V, TensorRef>) {
            os << "<" << dtype_name(v->dtype()) << v->shape().to_string() << ">";
          } else if constexpr (std::is_same_v<V, std::vector<DType>>) {
            os << "[";
            for (size_t k = 0; k < v.size(); ++k) os << (k ? "," : "") << dtype_name(v[k]);
            os << "]";
          } else if constexpr (std::is_same_v<V, std::vector<Shape>>) {
            os << "[";
            for (size_t k = 0; k < v.size(); ++k) os << (k ? "," : "") << v[k].to_string();
            os << "]";
          } else {
            os << v;
          }
        },
        attrs[i]);
  }
  os << "}";
  return os.str();
}

std::string Graph::to_text() const {
  std::ostringstream os;
  for (int32_t i = 0; i < num_nodes(); ++i) {
    const Node& n = nodes_[i];
    os << n.name << " = " << n.op->name << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << tensor_name(n.inputs[k]);
    for (size_t k = 0; k < n.control_inputs.size(); ++k)
      os << (k || !n.inputs.empty() ? ", " : "") << "^" << nodes_[n.control_inputs[k]].name;
    os << ")";
    if (!n.attrs.empty()) os << " " << format_attrs(*n.op, n.attrs);
    os << " -> ";
    for (size_t k = 0; k < n.outputs.size(); ++k)
      os << (k ? ", " : "") << dtype_name(n.outputs[k].dtype) << n.outputs[k].shape.to_string();
    if (!n.assigned_device.empty())
      os << " @" << n.assigned_device;
    else if (!n.requested_device.empty())
      os << " @" << n.requested_device;
    if (n.location.known()) os << "  # " << n.location.to_string();
    os << "\n";
  }
  return os.str();
}

FunctionLibrary& FunctionLibrary::global() {
  static FunctionLibrary* library = new FunctionLibrary;
  return *library;
}

std::string FunctionLibrary::add(std::shared_ptr<const FunctionGraph> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string name = "__inference_" + fn->name + "_" + std::to_string(++counter_);
  if (functions_.size() > 1024 && (counter_ & 1023) == 0) {
    std::erase_if(functions_, [](const auto& entry) { return entry.second.expired(); });
  }
  functions_.emplace(name, fn);
  return name;
}

std::shared_ptr<const FunctionGraph> FunctionLibrary::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second.lock();
}

void FunctionLibrary::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  functions_.erase(name);
}

}  // namespace ember

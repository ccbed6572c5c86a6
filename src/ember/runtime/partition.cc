#include "ember/runtime/partition.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include "ember/core/resource.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

bool uses_variable(const OpDef& op, const Node& n) {
  return (op.has_flag(kReadsResource) || op.has_flag(kWritesResource)) && !n.attrs.empty() &&
         std::holds_alternative<int64_t>(n.attrs[0]);
}

bool follows_input(std::string_view op) { return op == "Shape" || op == "Size" || op == "Rank"; }

std::string device_suffix(Device d) {
  return std::string(d.type == DeviceType::kCPU ? "CPU_" : "GPU_") + std::to_string(d.index);
}

}  // namespace

StatusOr<std::vector<Device>> place_function(const FunctionGraph& fn, bool soft) {
  const Graph& g = fn.graph;
  const int n = g.num_nodes();
  std::vector<Device> device(n);
  std::vector<bool> placed(n, false);
  // 1. Colocation with variables, then requested devices.
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (uses_variable(*node.op, node)) {
      auto v = ResourceManager::global().find(std::get<int64_t>(node.attrs[0]), node.op->name.c_str());
      if (v.ok()) {
        device[i] = (*v)->device();
        placed[i] = true;
        continue;
      }  // a deleted variable: the op reports it when it runs
    }
    if (node.requested_device.empty()) continue;
    auto spec = DeviceSpec::parse(node.requested_device);
    StatusOr<Device> d = spec.ok() ? resolve_device(*spec, soft) : spec.status();
    if (!d.ok()) return with_source_context(*node.op, node.name, node.location, d.status());
    device[i] = *d;
    placed[i] = true;
  }
  // 2. Metadata ops with their input; other nodes that have inputs on the default device (CPU:0).
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (placed[i] || (node.inputs.empty() && node.control_inputs.empty())) continue;
    if (follows_input(node.op->name) && !node.inputs.empty() && node.inputs[0].node < i)
      device[i] = device[node.inputs[0].node];
    placed[i] = true;
  }
  // 3. Nodes without inputs (arguments, constants) with their consumers when those agree.
  std::vector<int> consumer_device(n, -2);  // -2: none seen, -1: several devices, else an index
  auto note = [&](int producer, Device d) {
    const int k = static_cast<int>(d.type) * 65536 + d.index;
    int& c = consumer_device[producer];
    c = c == -2 ? k : (c == k ? c : -1);
  };
  for (int i = 0; i < n; ++i) {
    for (ValueRef v : g.node(i).inputs) note(v.node, device[i]);
  }
  for (int i = 0; i < n; ++i) {
    if (placed[i]) continue;
    const int c = consumer_device[i];
    if (c >= 0) device[i] = Device{static_cast<DeviceType>(c / 65536), c % 65536};
    placed[i] = true;
  }
  return device;
}

StatusOr<PartitionedFunction> partition_function(const FunctionGraph& fn,
                                                 const std::vector<Device>& devices) {
  const Graph& g = fn.graph;
  const int n = g.num_nodes();
  PartitionedFunction out;
  std::map<std::pair<int, int>, int> part_of_device;  // (type, index) -> partition
  auto partition_for = [&](Device d) {
    auto [it, added] = part_of_device.emplace(std::make_pair(static_cast<int>(d.type), d.index),
                                              static_cast<int>(out.partitions.size()));
    if (added) {
      Partition p;
      p.device = d;
      p.function = std::make_shared<FunctionGraph>();
      p.function->name = fn.name + "_" + device_suffix(d);
      p.function->callees = fn.callees;
      out.partitions.push_back(std::move(p));
    }
    return it->second;
  };
  std::vector<int> part(n);
  for (int i = 0; i < n; ++i) part[i] = partition_for(devices[i]);
  const int parts = static_cast<int>(out.partitions.size());

  for (int i = 0; i < n; ++i) {
    for (ValueRef v : g.node(i).inputs)
      if (v.node >= i)
        return make_error(Code::kInternal, "partition: the graph of '", fn.name,
                          "' is not in topological order");
    for (int32_t c : g.node(i).control_inputs)
      if (c >= i)
        return make_error(Code::kInternal, "partition: the graph of '", fn.name,
                          "' is not in topological order");
  }
  // What each node must send, and where: (output, partition) for data, -1 as the output for a control token.
  std::vector<std::vector<std::pair<int, int>>> outgoing(n);
  for (int i = 0; i < n; ++i) {
    auto add = [&](int producer, int output) {
      auto& list = outgoing[producer];
      const std::pair<int, int> entry{output, part[i]};
      if (part[producer] != part[i] && std::find(list.begin(), list.end(), entry) == list.end())
        list.push_back(entry);
    };
    for (ValueRef v : g.node(i).inputs) add(v.node, v.output);
    for (int32_t c : g.node(i).control_inputs) add(c, -1);
  }

  std::vector<int32_t> copy(n, -1);                       // node -> its copy in its partition
  std::vector<int32_t> last_comm(parts, -1);              // Note [Send/receive order]
  std::map<std::tuple<int, int, int>, int64_t> keys;      // (node, output or -1, partition) -> rendezvous key
  std::map<std::tuple<int, int, int>, int32_t> received;  // the same -> its _Recv, once made
  std::vector<std::vector<int32_t>> sends(parts);
  const OpDef& send_op = op_def("_Send");
  const OpDef& recv_op = op_def("_Recv");
  const OpDef& const_op = op_def("Const");
  auto chain = [&](int p, int32_t node) {
    if (last_comm[p] >= 0) out.partitions[p].function->graph.add_control_input(node, last_comm[p]);
    last_comm[p] = node;
  };
  auto comm_attrs = [&](int64_t key, const std::string& what, int from, int to) {
    AttrList attrs;
    attrs.push_back(key);
    attrs.push_back(what);
    attrs.push_back(full_device_name(out.partitions[from].device));
    attrs.push_back(full_device_name(out.partitions[to].device));
    return attrs;
  };
  auto what_of = [&](int node, int output) {
    return g.node(node).name + (output < 0 ? std::string("_token") : "_" + std::to_string(output));
  };
  // A value's _Send goes right after its producer and its _Recv right before its first consumer, so
  // neither side waits longer than the data does (Note [Send/receive order] holds: a send always comes
  // before its receive in the walk).
  auto make_sends = [&](int i) -> Status {
    const int from = part[i];
    Graph& src = out.partitions[from].function->graph;
    for (auto [output, to] : outgoing[i]) {
      const int64_t key = out.num_keys++;
      keys[{i, output, to}] = key;
      ValueRef value{copy[i], output};
      if (output < 0) {  // a scalar sent once `i` has run: the _Send waits for it (a plan folds a Const)
        auto zero = TensorImpl::allocate(DType::kInt32, Shape());
        if (!zero.ok()) return zero.status();
        zero.value()->mutable_data<int32_t>()[0] = 0;
        AttrList attrs;
        attrs.push_back(std::move(zero).value());
        SmallVector<TensorSpec, 2> specs;
        specs.push_back(TensorSpec{DType::kInt32, Shape()});
        value = ValueRef{
            src.add_node(const_op, {}, std::move(attrs), std::move(specs), {}, what_of(i, output)), 0};
      }
      const int32_t send = src.add_node(send_op, {&value, 1}, comm_attrs(key, what_of(i, output), from, to),
                                        {}, {}, "_send_" + what_of(i, output));
      if (output < 0) src.add_control_input(send, copy[i]);
      chain(from, send);
      sends[from].push_back(send);
    }
    return Status::OK();
  };
  auto recv_of = [&](int producer, int output, int to) {
    auto [it, added] = received.emplace(std::make_tuple(producer, output, to), -1);
    if (added) {
      const TensorSpec spec =
          output < 0 ? TensorSpec{DType::kInt32, Shape()} : g.spec(ValueRef{producer, output});
      AttrList attrs =
          comm_attrs(keys.at({producer, output, to}), what_of(producer, output), part[producer], to);
      attrs.push_back(spec.dtype);
      attrs.push_back(spec.shape.rank_known() ? spec.shape.dim_vector() : std::vector<int64_t>{});
      SmallVector<TensorSpec, 2> specs;
      specs.push_back(spec);
      it->second = out.partitions[to].function->graph.add_node(
          recv_op, {}, std::move(attrs), std::move(specs), {}, "_recv_" + what_of(producer, output));
      chain(to, it->second);
    }
    return it->second;
  };

  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    const int p = part[i];
    SmallVector<ValueRef, 4> inputs;
    for (ValueRef v : node.inputs)
      inputs.push_back(part[v.node] == p ? ValueRef{copy[v.node], v.output}
                                         : ValueRef{recv_of(v.node, v.output, p), 0});
    std::vector<int32_t> controls;
    for (int32_t c : node.control_inputs) controls.push_back(part[c] == p ? copy[c] : recv_of(c, -1, p));
    Graph& dst = out.partitions[p].function->graph;
    copy[i] = dst.add_node(*node.op, {inputs.data(), inputs.size()}, node.attrs, node.outputs, node.location,
                           node.name);
    Node& added = dst.mutable_node(copy[i]);
    added.requested_device = node.requested_device;
    added.assigned_device = full_device_name(devices[i]);
    for (int32_t c : controls) dst.add_control_input(copy[i], c);
    EMBER_RETURN_IF_ERROR(make_sends(i));
  }

  // Arguments: each partition's call arguments in the original order, then its captured values.
  const int call_args = fn.num_call_args();
  for (size_t a = 0; a < fn.args.size(); ++a) {
    const int p = part[fn.args[a]];
    FunctionGraph& f = *out.partitions[p].function;
    f.args.push_back(copy[fn.args[a]]);
    if (static_cast<int>(a) < call_args)
      out.partitions[p].call_args.push_back(static_cast<int>(a));
    else
      f.captured_values.push_back(fn.captured_values[a - call_args]);
  }
  for (ValueRef r : fn.results) {
    FunctionGraph& f = *out.partitions[part[r.node]].function;
    out.results.emplace_back(part[r.node], static_cast<int>(f.results.size()));
    f.results.push_back(ValueRef{copy[r.node], r.output});
  }
  for (int32_t c : fn.control_outputs) out.partitions[part[c]].function->control_outputs.push_back(copy[c]);
  for (int p = 0; p < parts; ++p)
    for (int32_t s : sends[p]) out.partitions[p].function->control_outputs.push_back(s);
  return out;
}

}  // namespace ember

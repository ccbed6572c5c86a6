#include "ember/runtime/executor.h"

#include <mutex>
#include <unordered_map>

#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

std::vector<int32_t> needed_nodes(const Graph& g, const std::vector<ValueRef>& results,
                                  const std::vector<int32_t>& control_outputs,
                                  const std::vector<bool>& is_fed) {
  std::vector<bool> needed(g.num_nodes(), false);
  std::vector<int32_t> stack;
  for (ValueRef r : results) stack.push_back(r.node);
  for (int32_t c : control_outputs) stack.push_back(c);
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    if (needed[n]) continue;
    needed[n] = true;
    if (is_fed[n]) continue;
    for (ValueRef in : g.node(n).inputs) stack.push_back(in.node);
    for (int32_t c : g.node(n).control_inputs) stack.push_back(c);
  }
  std::vector<int32_t> order;
  for (int32_t i = 0; i < g.num_nodes(); ++i)
    if (needed[i]) order.push_back(i);
  return order;
}

Status infer_call(const std::string& name, std::span<const TensorSpec> inputs,
                  SmallVector<TensorSpec, 2>& outputs) {
  auto fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return make_error(Code::kNotFound, "PartitionedCall: no function named '", name, "'");
  if (static_cast<int>(inputs.size()) != fn->num_call_args())
    return invalid_argument("PartitionedCall: function '", name, "' takes ", fn->num_call_args(),
                            " argument(s), got ", inputs.size());
  for (ValueRef r : fn->results) outputs.push_back(fn->graph.spec(r));
  return Status::OK();
}

// Plans of called functions, so a PartitionedCall does not recompute its callee's node order each run.
// Keyed by the callee; an entry whose function is gone is replaced.
std::shared_ptr<const CompiledFunction> compiled_callee(std::shared_ptr<const FunctionGraph> fn) {
  struct Entry {
    std::weak_ptr<const FunctionGraph> fn;
    std::shared_ptr<const CompiledFunction> compiled;
  };
  static std::mutex mu;
  static std::unordered_map<const FunctionGraph*, Entry> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(fn.get());
  if (it != cache.end() && it->second.fn.lock() == fn) return it->second.compiled;
  if (cache.size() >= 1024) std::erase_if(cache, [](const auto& e) { return e.second.fn.expired(); });
  auto compiled = std::make_shared<const CompiledFunction>(fn);
  cache[fn.get()] = Entry{fn, compiled};
  return compiled;
}

Status run_call(const std::string& name, std::span<TensorImpl* const> inputs, std::span<TensorRef> outputs) {
  auto fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return make_error(Code::kNotFound, "PartitionedCall: no function named '", name, "'");
  OutputList results;
  EMBER_RETURN_IF_ERROR(compiled_callee(std::move(fn))->run(inputs, results));
  for (size_t i = 0; i < outputs.size() && i < results.size(); ++i) outputs[i] = std::move(results[i]);
  return Status::OK();
}

struct InstallAtStartup {
  InstallAtStartup() { install_function_runtime(); }
} install_at_startup;

}  // namespace

void install_function_runtime() { set_function_call_hooks(FunctionCallHooks{&infer_call, &run_call}); }

CompiledFunction::CompiledFunction(std::shared_ptr<const FunctionGraph> fn) : fn_(std::move(fn)) {
  std::vector<bool> is_fed(fn_->graph.num_nodes(), false);
  for (int32_t a : fn_->args) is_fed[a] = true;
  order_ = needed_nodes(fn_->graph, fn_->results, fn_->control_outputs, is_fed);
}

Status CompiledFunction::run(std::span<TensorImpl* const> args, OutputList& results) const {
  const FunctionGraph& fn = *fn_;
  const Graph& g = fn.graph;
  size_t expected = static_cast<size_t>(fn.num_call_args());
  if (args.size() != expected)
    return invalid_argument("function ", fn.name, " takes ", expected, " argument(s), got ", args.size());
  std::vector<SmallVector<TensorRef, 2>> values(g.num_nodes());
  for (size_t i = 0; i < fn.args.size(); ++i) {
    TensorImpl* value = i < args.size() ? args[i] : fn.captured_values[i - args.size()].get();
    const TensorSpec& spec = g.node(fn.args[i]).outputs[0];
    if (value->dtype() != spec.dtype)
      return invalid_argument("function ", fn.name, ": argument ", i, " ('", g.node(fn.args[i]).name,
                              "') must be ", dtype_name(spec.dtype), ", got ", dtype_name(value->dtype()));
    values[fn.args[i]].push_back(TensorRef(value));
  }
  SmallVector<TensorImpl*, 4> inputs;
  OutputList outputs;
  for (int32_t n : order_) {
    if (!values[n].empty()) continue;  // an argument
    const Node& node = g.node(n);
    inputs.clear();
    for (ValueRef in : node.inputs) inputs.push_back(values[in.node][in.output].get());
    Status s =
        run_kernel(*node.op, {inputs.data(), inputs.size()}, {node.attrs.data(), node.attrs.size()}, outputs);
    if (!s.ok()) return with_source_context(*node.op, node.name, node.location, s);
    for (TensorRef& r : outputs) values[n].push_back(std::move(r));
  }
  results.clear();
  for (ValueRef r : fn.results) results.push_back(values[r.node][r.output]);
  return Status::OK();
}

StatusOr<std::shared_ptr<FunctionGraph>> prune_function(const FunctionGraph& fn,
                                                        const std::vector<std::string>& inputs,
                                                        const std::vector<std::string>& outputs) {
  const Graph& g = fn.graph;
  std::vector<ValueRef> feeds, fetches;
  for (const std::string& name : inputs) {
    auto v = g.parse_tensor_name(name);
    if (!v.ok()) return v.status().with_prefix("prune: input: ");
    feeds.push_back(*v);
  }
  for (const std::string& name : outputs) {
    auto v = g.parse_tensor_name(name);
    if (!v.ok()) return v.status().with_prefix("prune: output: ");
    fetches.push_back(*v);
  }
  // Walk back from the fetches, stopping at fed tensors.
  auto out = std::make_shared<FunctionGraph>();
  out->name = fn.name + "_pruned";
  std::vector<bool> needed(g.num_nodes(), false);
  std::unordered_map<int64_t, int32_t> fed_index;  // (node << 32 | output) -> new placeholder
  auto key = [](ValueRef v) {
    return (static_cast<int64_t>(v.node) << 32) | static_cast<uint32_t>(v.output);
  };
  std::vector<int32_t> stack;
  for (ValueRef f : fetches) stack.push_back(f.node);
  std::vector<bool> is_fed_value_only(g.num_nodes(), false);
  for (ValueRef f : feeds) is_fed_value_only[f.node] = true;
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    if (needed[n]) continue;
    needed[n] = true;
    for (ValueRef in : g.node(n).inputs) {
      bool fed = false;
      for (ValueRef f : feeds) fed |= (f == in);
      if (!fed) stack.push_back(in.node);
    }
    for (int32_t c : g.node(n).control_inputs) stack.push_back(c);
  }
  // New graph: feeds first (as placeholders), then needed nodes in order with inputs remapped.
  std::vector<SmallVector<ValueRef, 2>> remap(g.num_nodes());
  const OpDef& placeholder = op_def("Placeholder");
  for (ValueRef f : feeds) {
    const TensorSpec& spec = g.spec(f);
    AttrList attrs;
    attrs.push_back(spec.dtype);
    attrs.push_back(spec.shape.rank_known() ? spec.shape.dim_vector() : std::vector<int64_t>{});
    attrs.push_back(!spec.shape.rank_known());
    SmallVector<TensorSpec, 2> specs;
    specs.push_back(spec);
    int32_t node =
        out->graph.add_node(placeholder, {}, std::move(attrs), std::move(specs), {}, "Placeholder");
    out->args.push_back(node);
    fed_index[key(f)] = node;
  }
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    if (!needed[n]) continue;
    const Node& node = g.node(n);
    int arg_index = -1;
    for (size_t a = 0; a < fn.args.size(); ++a)
      if (fn.args[a] == n) arg_index = static_cast<int>(a);
    if (arg_index >= fn.num_user_args() && arg_index < fn.num_call_args()) {
      return invalid_argument("prune: the outputs depend on '", node.name,
                              "', a tensor of an enclosing function; carve that function instead");
    }
    if (arg_index >= fn.num_call_args()) {
      // A captured value stays captured in the carved function.
      int32_t copy = out->graph.add_node(*node.op, {}, node.attrs, node.outputs, node.location, node.name);
      out->args.push_back(copy);
      out->captured_values.push_back(fn.captured_values[arg_index - fn.num_call_args()]);
      remap[n].push_back(ValueRef{copy, 0});
      continue;
    }
    if (arg_index >= 0) {
      return invalid_argument("prune: the outputs depend on argument '", node.name,
                              "', which is not among the inputs");
    }
    SmallVector<ValueRef, 4> ins;
    for (ValueRef in : node.inputs) {
      auto it = fed_index.find(key(in));
      ins.push_back(it != fed_index.end() ? ValueRef{it->second, 0} : remap[in.node][in.output]);
    }
    int32_t copy = out->graph.add_node(*node.op, {ins.data(), ins.size()}, node.attrs, node.outputs,
                                       node.location, node.name);
    for (int32_t c : node.control_inputs)
      if (!remap[c].empty()) out->graph.add_control_input(copy, remap[c][0].node);
    for (int32_t k = 0; k < static_cast<int32_t>(node.outputs.size()); ++k)
      remap[n].push_back(ValueRef{copy, k});
  }
  for (ValueRef f : fetches) {
    auto it = fed_index.find(key(f));
    out->results.push_back(it != fed_index.end() ? ValueRef{it->second, 0} : remap[f.node][f.output]);
  }
  return out;
}

}  // namespace ember

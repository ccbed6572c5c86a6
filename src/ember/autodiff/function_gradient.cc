// Graph functions under a tape (architecture.md §7). For a function F and the set of its arguments that
// need gradients, we build once:
//   forward  F'  = F's body replayed through a trace while a private tape records it; its results are F's
//                  results followed by the intermediates the gradient needs;
//   backward B   = the private tape's backprop traced into a graph (nested inside F''s trace, so every
//                  forward value it reads is lifted into an argument: exactly the intermediates F' returns).
// A call while a tape records runs F' and records one node whose backward calls B. Calls of other functions
// inside F go through the same path while F is replayed, so gradients flow through nested functions; B is
// itself called through execute_op, so a tape recording the backward pass gives higher-order gradients.
#include <mutex>
#include <unordered_map>

#include "ember/autodiff/tape_internal.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember::autodiff::internal {
namespace {

// One backward function of a pair: its graph, the forward intermediates it reads (positions among the
// pair's intermediates) and which of its results is the gradient of each edge.
struct BackwardFunction {
  std::shared_ptr<FunctionGraph> graph;
  std::string name;
  bool takes_intermediate_grads = false;
  std::vector<int> reads;        // intermediates passed after the gradient arguments
  std::vector<int> edge_result;  // per edge: index of B's result, or -1 (unconnected)
};

struct GradientPair final : Backward {
  std::shared_ptr<FunctionGraph> forward;
  std::string forward_name;
  size_t num_results = 0;
  std::vector<bool> output_differentiable;  // per forward output: results, then intermediates
  std::vector<int> edge_inputs;             // call argument of each input edge
  std::vector<int64_t> edge_variables;      // variable of each variable edge (after the input edges)
  // `first` takes the results' gradients; `full` also those of the intermediates, which arrive only when
  // an outer tape differentiates the backward pass (higher order).
  BackwardFunction first, full;

  void backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                SmallVector<TensorRef, 4>& edge_grads) override {
    bool intermediate_grads = false;
    for (size_t j = num_results; j < output_grads.size(); ++j)
      intermediate_grads |= output_grads[j] != nullptr;
    const BackwardFunction& b = intermediate_grads ? full : first;
    SmallVector<TensorRef, 8> args;
    size_t grad_count = intermediate_grads ? output_grads.size() : num_results;
    for (size_t j = 0; j < grad_count; ++j) {
      if (!output_differentiable[j]) continue;
      TensorRef g(output_grads[j]);
      if (!g) g = gradient::zeros_like(GradTensor(node.outputs[j])).release();
      args.push_back(std::move(g));
    }
    // Intermediates are passed linked to the call node, so an outer tape sees the backward pass depend on
    // them (and through them on the call's inputs).
    for (int p : b.reads) args.push_back(relinked_output(node, static_cast<int32_t>(num_results + p)));
    SmallVector<TensorImpl*, 8> arg_ptrs;
    for (const TensorRef& a : args) arg_ptrs.push_back(a.get());
    AttrList attrs;
    attrs.push_back(b.name);
    OutputList outs;
    Status s = execute_op(op_def("PartitionedCall"), {arg_ptrs.data(), arg_ptrs.size()},
                          {attrs.data(), attrs.size()}, outs);
    if (!s.ok()) throw StatusError(s);
    for (size_t e = 0; e < b.edge_result.size() && e < edge_grads.size(); ++e)
      if (b.edge_result[e] >= 0) edge_grads[e] = outs[b.edge_result[e]];
  }
};

struct FunctionEntry {
  std::weak_ptr<const FunctionGraph> fn;
  std::vector<int64_t> variables;                                        // read by F or anything it calls
  std::unordered_map<std::string, std::shared_ptr<GradientPair>> pairs;  // by needs-gradient mask
};

std::mutex g_mu;
// By library name. Never destroyed: graphs hold tensors, which must not be freed during static destruction
// (after the thread-local allocator caches are gone).
auto& g_entries = *new std::unordered_map<std::string, std::shared_ptr<FunctionEntry>>();

void collect_variables(const FunctionGraph& fn, std::vector<int64_t>& out, int depth) {
  if (depth > 64) return;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op->name == "ReadVariableOp") {
      int64_t id = std::get<int64_t>(n.attrs[0]);
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    } else if (n.op->name == "PartitionedCall") {
      if (auto callee = FunctionLibrary::global().find(std::get<std::string>(n.attrs[0])))
        collect_variables(*callee, out, depth + 1);
    }
  }
}

std::shared_ptr<FunctionEntry> entry_for(const std::string& name,
                                         const std::shared_ptr<const FunctionGraph>& fn) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_entries.find(name);
  if (it != g_entries.end() && it->second->fn.lock() == fn) return it->second;
  if (g_entries.size() >= 1024)
    std::erase_if(g_entries, [](const auto& e) { return e.second->fn.expired(); });
  auto entry = std::make_shared<FunctionEntry>();
  entry->fn = fn;
  collect_variables(*fn, entry->variables, 0);
  g_entries[name] = entry;
  return entry;
}

// Leaves whatever trace was active on this thread for the build and comes back to it after.
struct TracePause {
  TraceContext* token = TraceContext::pause();
  ~TracePause() { TraceContext::resume(token); }
};

StatusOr<std::shared_ptr<GradientPair>> build_pair(const FunctionGraph& fn, const std::string& needs) {
  TracePause trace_pause;
  RecordingPause tapes_pause;
  auto tape_or = Tape::create(/*persistent=*/true, /*watch_accessed_variables=*/false);
  if (!tape_or.ok()) return tape_or.status();
  std::unique_ptr<Tape> tape = std::move(tape_or).value();
  tape->set_watch_all_variables();

  auto pair = std::make_shared<GradientPair>();
  pair->forward = std::make_shared<FunctionGraph>();
  pair->forward->name = fn.name + "_forward";
  SourceLocation location;
  auto provider = [&location] { return location; };

  TraceContext forward_trace(pair->forward.get());
  forward_trace.set_location_provider(provider);
  forward_trace.enter();
  tape->push();
  const Graph& g = fn.graph;
  std::vector<SmallVector<TensorRef, 2>> values(g.num_nodes());
  std::vector<TensorRef> arg_tensors;
  for (size_t k = 0; k < fn.args.size(); ++k) {
    const Node& n = g.node(fn.args[k]);
    TensorRef t = forward_trace.add_argument(n.outputs[0].dtype, n.outputs[0].shape, n.name);
    if (k < needs.size() && needs[k] == '1') tape->watch(t.get());
    values[fn.args[k]].push_back(t);
    arg_tensors.push_back(std::move(t));
  }
  // A Const node's value joins the replay as a constant local to it; false for any other node.
  auto take_constant = [&](int32_t i) {
    const Node& n = g.node(i);
    if (n.op->name != "Const") return false;
    const TensorRef& v = std::get<TensorRef>(n.attrs[0]);
    forward_trace.note_local_constant(v.get());
    values[i].push_back(v);
    return true;
  };
  size_t next_region = 0;
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    if (next_region < fn.custom_gradient_regions.size() &&
        fn.custom_gradient_regions[next_region].first_node == i) {
      // Rerun the custom-gradient function on the replay's values (its gradient function is recorded on
      // the tape then); only the region's outputs are visible to the nodes after it.
      const auto& region = fn.custom_gradient_regions[next_region++];
      // Constants first used inside the function were added among its nodes: they hold no computation of
      // it, so they keep their values (for the region's inputs and for later readers alike).
      for (int32_t k = region.first_node; k < region.end_node; ++k) {
        if (values[k].empty()) take_constant(k);
      }
      SmallVector<TensorImpl*, 4> inputs;
      for (ValueRef v : region.inputs) {
        if (values[v.node].size() <= static_cast<size_t>(v.output) || !values[v.node][v.output])
          return make_error(Code::kUnimplemented, "custom_gradient ", region.name,
                            ": an input is computed inside the function itself");
        inputs.push_back(values[v.node][v.output].get());
      }
      auto outs = region.replay({inputs.data(), inputs.size()});
      if (!outs.ok()) return outs.status().with_prefix("custom_gradient " + region.name + ": ");
      if (outs->size() != region.outputs.size())
        return make_error(Code::kInternal, "custom_gradient ", region.name, ": the replay returned ",
                          outs->size(), " tensors, the trace ", region.outputs.size());
      for (int32_t k = region.first_node; k < region.end_node; ++k)
        if (values[k].empty()) values[k].resize(g.node(k).outputs.size());
      for (size_t k = 0; k < region.outputs.size(); ++k) {
        ValueRef o = region.outputs[k];
        if (values[o.node].size() <= static_cast<size_t>(o.output)) values[o.node].resize(o.output + 1);
        values[o.node][o.output] = (*outs)[k];
      }
      i = region.end_node - 1;
      continue;
    }
    if (!values[i].empty()) continue;
    const Node& n = g.node(i);
    location = n.location;
    if (take_constant(i)) continue;
    SmallVector<TensorImpl*, 4> inputs;
    for (ValueRef v : n.inputs) {
      TensorImpl* t =
          values[v.node].size() > static_cast<size_t>(v.output) ? values[v.node][v.output].get() : nullptr;
      if (t == nullptr)
        return make_error(Code::kUnimplemented, n.op->name, " '", n.name,
                          "' reads a value computed inside a custom_gradient function that the function "
                          "did not return; return it to differentiate ",
                          fn.name);
      inputs.push_back(t);
    }
    OutputList outs;
    Status s = execute_op(*n.op, {inputs.data(), inputs.size()}, {n.attrs.data(), n.attrs.size()}, outs);
    if (!s.ok()) return with_source_context(*n.op, n.name, n.location, s);
    values[i] = std::move(outs);
  }
  std::vector<TensorRef> results;
  for (ValueRef r : fn.results) {
    if (values[r.node].size() <= static_cast<size_t>(r.output) || !values[r.node][r.output])
      return make_error(Code::kUnimplemented, fn.name,
                        ": a result is a value computed inside a custom_gradient function that the function "
                        "did not return");
    results.push_back(values[r.node][r.output]);
  }
  location = SourceLocation{};
  pair->num_results = results.size();

  std::vector<GradSource> sources;
  for (size_t k = 0; k < needs.size(); ++k) {
    if (needs[k] != '1') continue;
    pair->edge_inputs.push_back(static_cast<int>(k));
    sources.push_back(GradSource{arg_tensors[k].get(), 0});
  }
  for (int64_t id : tape->watched_variables()) {
    pair->edge_variables.push_back(id);
    sources.push_back(GradSource{nullptr, id});
  }

  // Intermediates: forward values some backward function reads, keyed by their place in the forward graph.
  std::vector<TensorRef> intermediates;
  std::vector<std::pair<int32_t, int32_t>> intermediate_keys;
  auto intermediate_index = [&](const TensorRef& t) {
    std::pair<int32_t, int32_t> key{t->graph_node(), t->graph_output()};
    for (size_t i = 0; i < intermediate_keys.size(); ++i)
      if (intermediate_keys[i] == key) return static_cast<int>(i);
    intermediate_keys.push_back(key);
    intermediates.push_back(t);
    return static_cast<int>(intermediates.size() - 1);
  };
  auto build_backward = [&](bool with_intermediate_grads, BackwardFunction& out) -> Status {
    out = BackwardFunction{};
    out.takes_intermediate_grads = with_intermediate_grads;
    out.graph = std::make_shared<FunctionGraph>();
    out.graph->name = fn.name + "_backward";
    TraceContext backward_trace(out.graph.get());
    backward_trace.set_location_provider(provider);
    backward_trace.enter();
    std::vector<TensorRef> grad_args, targets_kept;
    SmallVector<TensorImpl*, 4> targets, target_grads;
    auto add_target = [&](const TensorRef& t) {
      if (!is_differentiable_dtype(t->dtype())) return;
      grad_args.push_back(backward_trace.add_argument(t->dtype(), t->shape(), "grad"));
      targets_kept.push_back(t);
      targets.push_back(t.get());
      target_grads.push_back(grad_args.back().get());
    };
    for (const TensorRef& r : results) add_target(r);
    size_t known = intermediates.size();
    if (with_intermediate_grads)
      for (size_t i = 0; i < known; ++i) add_target(intermediates[i]);
    tape->allow_reuse();
    auto grads = tape->gradient({targets.data(), targets.size()}, {target_grads.data(), target_grads.size()},
                                {sources.data(), sources.size()});
    if (!grads.ok()) return grads.status().with_prefix(fn.name + " (building its gradient function): ");
    for (const TensorRef& grad : *grads) {
      if (!grad) {
        out.edge_result.push_back(-1);
        continue;
      }
      auto v = backward_trace.value_of(grad.get());
      if (!v.ok()) return v.status();
      out.edge_result.push_back(static_cast<int>(out.graph->results.size()));
      out.graph->results.push_back(*v);
    }
    backward_trace.seal();
    backward_trace.exit();
    for (const TensorRef& t : out.graph->lifted_captures) out.reads.push_back(intermediate_index(t));
    out.graph->lifted_captures.clear();  // passed explicitly by GradientPair::backward
    return Status::OK();
  };
  EMBER_RETURN_IF_ERROR(build_backward(false, pair->first));
  // The full backward reads intermediates of its own; repeat until it needs no new ones (bounded).
  for (int round = 0; round < 8; ++round) {
    size_t before = intermediates.size();
    EMBER_RETURN_IF_ERROR(build_backward(true, pair->full));
    if (intermediates.size() == before) break;
  }

  FunctionGraph& fwd = *pair->forward;
  for (const TensorRef& r : results) {
    auto v = forward_trace.value_of(r.get());
    if (!v.ok()) return v.status();
    fwd.results.push_back(*v);
    pair->output_differentiable.push_back(is_differentiable_dtype(r->dtype()));
  }
  for (const TensorRef& t : intermediates) {
    auto v = forward_trace.value_of(t.get());
    if (!v.ok()) return v.status();
    fwd.results.push_back(*v);
    pair->output_differentiable.push_back(is_differentiable_dtype(t->dtype()));
  }
  tape->pop();
  forward_trace.seal();
  forward_trace.exit();
  // F's own captured values sit among F''s leading arguments, in the same place as in F.
  fwd.captured_values.insert(fwd.captured_values.begin(), fn.captured_values.begin(),
                             fn.captured_values.end());
  pair->forward_name = FunctionLibrary::global().add(pair->forward);
  pair->first.name = FunctionLibrary::global().add(pair->first.graph);
  pair->full.name = FunctionLibrary::global().add(pair->full.graph);
  return pair;
}

}  // namespace

Status execute_function_call(const OpDef& op, std::span<TensorImpl* const> inputs,
                             std::span<const AttrValue> attrs, OutputList& outputs) {
  const std::string& name = std::get<std::string>(attrs[0]);
  std::shared_ptr<const FunctionGraph> fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return execute_op_unrecorded(op, inputs, attrs, outputs);
  uint32_t active = active_mask();
  uint32_t mask = 0;
  std::string needs(inputs.size(), '0');
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorImpl* t = inputs[i];
    uint32_t m = t->tape_mask() & active;
    if (m != 0 && t->grad_node() != nullptr && is_differentiable_dtype(t->dtype())) {
      needs[i] = '1';
      mask |= m;
    }
  }
  std::shared_ptr<FunctionEntry> entry = entry_for(name, fn);
  std::unordered_map<int64_t, uint32_t> variable_masks;
  for (int64_t id : entry->variables) {
    uint32_t m = variable_mask(id);
    variable_masks[id] = m;
    mask |= m;
  }
  if (mask == 0) return execute_op_unrecorded(op, inputs, attrs, outputs);

  std::shared_ptr<GradientPair> pair;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = entry->pairs.find(needs);
    if (it != entry->pairs.end()) pair = it->second;
  }
  if (pair == nullptr) {
    auto built = build_pair(*fn, needs);
    if (!built.ok()) return built.status();
    pair = std::move(built).value();
    std::lock_guard<std::mutex> lock(g_mu);
    entry->pairs[needs] = pair;
  }
  AttrList forward_attrs;
  forward_attrs.push_back(pair->forward_name);
  OutputList all;
  EMBER_RETURN_IF_ERROR(execute_op_unrecorded(op, inputs, {forward_attrs.data(), forward_attrs.size()}, all));
  auto* node = new TapeNode();
  node->backward = pair;
  node->mask = mask;
  node->serial = next_serial();
  for (int k : pair->edge_inputs) node->edges.push_back(input_edge(inputs[k], active));
  for (int64_t id : pair->edge_variables) {
    auto it = variable_masks.find(id);
    node->edges.push_back(variable_edge(id, it != variable_masks.end() ? it->second : 0));
  }
  link_outputs(node, {all.data(), all.size()});
  outputs.clear();
  for (size_t i = 0; i < pair->num_results; ++i) outputs.push_back(std::move(all[i]));
  return Status::OK();
}

}  // namespace ember::autodiff::internal

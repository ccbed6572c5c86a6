// Graph functions under a tape (architecture.md §7). For a function F and the set of its arguments that
// need gradients, we build once:
//   forward  F'  = F's body replayed through a trace while a private tape records it; its results are F's
//                  results followed by the intermediates the gradient needs;
//   backward B   = the private tape's backprop traced into a graph (nested inside F''s trace, so every
//                  forward value it reads is lifted into an argument: exactly the intermediates F' returns).
// A call while a tape records runs F' and records one node whose backward calls B. Calls of other functions
// inside F go through the same path while F is replayed, so gradients flow through nested functions; B is
// itself called through execute_op, so a tape recording the backward pass gives higher-order gradients.
#include "ember/autodiff/function_gradient.h"

#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ember/core/device.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember::autodiff::internal {
namespace {

// F's body replayed while a private tape records it, into a fresh forward graph whose trace stays entered
// while the replay lives (backward traces nested in it lift forward values into arguments).
struct Replay {
  std::shared_ptr<FunctionGraph> forward = std::make_shared<FunctionGraph>();
  SourceLocation location;  // of the node being replayed, read by the traces' location provider
  std::unique_ptr<TraceContext> trace;
  std::unique_ptr<Tape> tape;
  std::vector<TensorRef> arg_tensors, results;
  std::vector<GradSource> sources;
  std::vector<int> edge_inputs;         // call argument of each input edge
  std::vector<int64_t> edge_variables;  // variable of each variable edge (after the input edges)
  // The replayed values by their place in the forward graph: a later replay finds the tensors the tape
  // linked for intermediates chosen by the first one.
  std::map<std::pair<int32_t, int32_t>, TensorRef> by_key;
  // F's fold sources that need gradients, in order: F' takes each as a captured value after F's own.
  std::vector<TensorRef> fold_source_values;

  ~Replay() {
    if (tape) tape->pop();
    if (trace) trace->exit();
  }
  TraceContext::LocationProvider provider() {
    return [this] { return location; };
  }
};

// Runs again the folds of `fn` that computed `root` (Note [Folded values of concrete arguments] in
// trace/trace_context.cc), on `sources`' tensors in place of the concrete values they stand for; `root`
// itself when no source is among what it was folded from. `done` keeps what was run, across calls.
StatusOr<TensorRef> replay_folds(const FunctionGraph& fn, TensorImpl* root,
                                 const std::unordered_map<const TensorImpl*, TensorRef>& sources,
                                 std::unordered_map<const TensorImpl*, TensorRef>& done) {
  auto ready = [&](TensorImpl* t) -> std::optional<TensorRef> {
    if (auto it = sources.find(t); it != sources.end()) return it->second;
    if (auto it = done.find(t); it != done.end()) return it->second;
    if (!fn.folds.count(t)) return TensorRef(t);
    return std::nullopt;
  };
  // A fold chain is as long as the Python loop that made it: the walk keeps its own stack.
  std::vector<TensorImpl*> stack{root};
  while (!stack.empty()) {
    TensorImpl* t = stack.back();
    if (done.count(t)) {
      stack.pop_back();
      continue;
    }
    const FoldRecord& fold = *fn.folds.at(t);
    SmallVector<TensorRef, 4> held;
    bool pending = false, changed = false;
    for (const TensorRef& in : fold.inputs) {
      auto r = ready(in.get());
      if (!r) {
        stack.push_back(in.get());
        pending = true;
        continue;
      }
      changed |= r->get() != in.get();
      held.push_back(std::move(*r));
    }
    if (pending) continue;
    stack.pop_back();
    if (!changed) {
      for (const TensorRef& out : fold.outputs)
        if (out) done[out.get()] = out;
      continue;
    }
    SmallVector<TensorImpl*, 4> inputs;
    for (const TensorRef& h : held) inputs.push_back(h.get());
    OutputList outs;
    Status s =
        execute_op(*fold.op, {inputs.data(), inputs.size()}, {fold.attrs.data(), fold.attrs.size()}, outs);
    if (!s.ok()) return s.with_prefix(fn.name + ": replaying a folded " + fold.op->name + ": ");
    for (size_t o = 0; o < fold.outputs.size() && o < outs.size(); ++o)
      if (fold.outputs[o]) done[fold.outputs[o].get()] = outs[o];
  }
  if (auto r = ready(root)) return *r;
  return make_error(Code::kInternal, fn.name, ": a folded value was not replayed");
}

StatusOr<std::unique_ptr<Replay>> replay_function(const FunctionGraph& fn, const std::string& needs) {
  auto tape_or = Tape::create(/*persistent=*/true, /*watch_accessed_variables=*/false);
  if (!tape_or.ok()) return tape_or.status();
  auto r = std::make_unique<Replay>();
  r->tape = std::move(tape_or).value();
  r->tape->set_watch_all_variables();
  r->tape->set_check_custom_gradients();
  r->forward->name = fn.name + "_forward";
  r->trace = std::make_unique<TraceContext>(r->forward.get());
  r->trace->set_location_provider(r->provider());
  r->trace->enter();
  EMBER_RETURN_IF_ERROR(r->tape->push());
  TraceContext& forward_trace = *r->trace;
  Tape* tape = r->tape.get();
  const Graph& g = fn.graph;
  std::vector<SmallVector<TensorRef, 2>> values(g.num_nodes());
  for (size_t k = 0; k < fn.args.size(); ++k) {
    const Node& n = g.node(fn.args[k]);
    TensorRef t = forward_trace.add_argument(n.outputs[0].dtype, n.outputs[0].shape, n.name);
    if (k < needs.size() && needs[k] == '1') tape->watch(t.get());
    values[fn.args[k]].push_back(t);
    r->arg_tensors.push_back(std::move(t));
  }
  // The concrete values (captured, lifted or only folded from) whose arguments need gradients: Const nodes
  // folded from them are computed from the arguments again (Note [Folded values of concrete arguments]).
  std::unordered_map<const TensorImpl*, TensorRef> concrete_sources;
  auto needed = [&](size_t k) { return k < needs.size() && needs[k] == '1'; };
  const size_t first_captured = static_cast<size_t>(fn.num_call_args());
  for (size_t c = 0; c < fn.captured_values.size(); ++c)
    if (needed(first_captured + c))
      concrete_sources[fn.captured_values[c].get()] = r->arg_tensors[first_captured + c];
  const size_t first_lifted = static_cast<size_t>(fn.num_user_args());
  for (size_t l = 0; l < fn.lifted_captures.size(); ++l) {
    const TensorRef& value = fn.lifted_captures[l];
    if (value && !value->is_symbolic() && needed(first_lifted + l))
      concrete_sources[value.get()] = r->arg_tensors[first_lifted + l];
  }
  for (size_t f = 0; f < fn.fold_sources.size(); ++f) {
    const size_t k = fn.args.size() + f;
    if (!needed(k)) continue;
    const TensorRef& value = fn.fold_sources[f];
    TensorRef t = forward_trace.add_argument(value->dtype(), value->shape(), "fold_source");
    tape->watch(t.get());
    concrete_sources[value.get()] = t;
    r->fold_source_values.push_back(value);
    r->edge_inputs.push_back(static_cast<int>(k));
    r->sources.push_back(GradSource{t.get(), 0});
    r->arg_tensors.push_back(std::move(t));
  }
  std::unordered_map<const TensorImpl*, TensorRef> replayed_folds;
  // A Const node's value joins the replay as a constant local to it (or, folded from a source above, is
  // computed again from it); false for any other node.
  Status fold_status = Status::OK();
  auto take_constant = [&](int32_t i) {
    const Node& n = g.node(i);
    if (n.op->name != "Const") return false;
    const TensorRef& v = std::get<TensorRef>(n.attrs[0]);
    if (!concrete_sources.empty() && fn.folds.count(v.get())) {
      auto replayed = replay_folds(fn, v.get(), concrete_sources, replayed_folds);
      if (!replayed.ok()) {
        fold_status = replayed.status();
        return true;
      }
      if (replayed->get() != v.get()) {
        values[i].push_back(std::move(replayed).value());
        return true;
      }
    }
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
    r->location = n.location;
    if (take_constant(i)) {
      EMBER_RETURN_IF_ERROR(fold_status);
      continue;
    }
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
    RequestedDeviceScope device(n.requested_device);  // the forward keeps the nodes' devices
    Status s = execute_op(*n.op, {inputs.data(), inputs.size()}, {n.attrs.data(), n.attrs.size()}, outs);
    if (!s.ok()) return with_source_context(*n.op, n.name, n.location, s);
    values[i] = std::move(outs);
  }
  for (ValueRef result : fn.results) {
    if (values[result.node].size() <= static_cast<size_t>(result.output) ||
        !values[result.node][result.output])
      return make_error(Code::kUnimplemented, fn.name,
                        ": a result is a value computed inside a custom_gradient function that the function "
                        "did not return");
    r->results.push_back(values[result.node][result.output]);
  }
  r->location = SourceLocation{};
  for (const auto& node_values : values)
    for (const TensorRef& t : node_values)
      if (t && t->is_symbolic() && t->graph() == r->forward.get())
        r->by_key.emplace(Intermediates::key_of(t), t);
  // Edges in argument order: F's arguments, then the fold sources (added with their arguments above).
  std::vector<int> fold_edges = std::move(r->edge_inputs);
  std::vector<GradSource> fold_grad_sources = std::move(r->sources);
  r->edge_inputs.clear();
  r->sources.clear();
  for (size_t k = 0; k < needs.size() && k < fn.args.size(); ++k) {
    if (needs[k] != '1') continue;
    r->edge_inputs.push_back(static_cast<int>(k));
    r->sources.push_back(GradSource{r->arg_tensors[k].get(), 0});
  }
  r->edge_inputs.insert(r->edge_inputs.end(), fold_edges.begin(), fold_edges.end());
  r->sources.insert(r->sources.end(), fold_grad_sources.begin(), fold_grad_sources.end());
  for (int64_t id : tape->watched_variables()) {
    r->edge_variables.push_back(id);
    r->sources.push_back(GradSource{nullptr, id});
  }
  return r;
}

// Traces the replay's backprop for the outputs `mask` selects into a backward function. Forward values it
// reads become intermediates; a value not among them yet is added when `may_add` (while the forward
// function is still being built), else the build fails with NotFound.
Status build_backward(Replay& replay, const OutputMask& mask, Intermediates& intermediates, bool may_add,
                      BackwardFunction& out, const std::string& fn_name) {
  out = BackwardFunction{};
  out.graph = std::make_shared<FunctionGraph>();
  out.graph->name = fn_name + "_backward";
  TraceContext backward_trace(out.graph.get());
  backward_trace.set_location_provider(replay.provider());
  backward_trace.enter();
  std::vector<TensorRef> grad_args;
  SmallVector<TensorImpl*, 4> targets, target_grads;
  const size_t num_results = replay.results.size();
  for (size_t j = 0; j < mask.size(); ++j) {
    if (!mask[j]) continue;
    TensorRef t;
    if (j < num_results) {
      t = replay.results[j];
    } else if (may_add) {
      t = intermediates.tensors[j - num_results];
    } else {
      auto it = replay.by_key.find(intermediates.keys[j - num_results]);
      if (it == replay.by_key.end())
        return make_error(Code::kNotFound, fn_name, ": an intermediate is not a replayed value");
      t = it->second;
    }
    grad_args.push_back(backward_trace.add_argument(t->dtype(), t->shape(), "grad"));
    targets.push_back(t.get());
    target_grads.push_back(grad_args.back().get());
  }
  replay.tape->allow_reuse();
  // The private tape must not record the backward pass it traces: nothing differentiates those values, and
  // recording a control-flow op builds its gradient functions at once, so recording the backward If of an If
  // would build the third derivative's, and so on without end.
  replay.tape->pause();
  auto grads =
      replay.tape->gradient({targets.data(), targets.size()}, {target_grads.data(), target_grads.size()},
                            {replay.sources.data(), replay.sources.size()});
  replay.tape->resume();
  if (!grads.ok()) return grads.status().with_prefix(fn_name + " (building its gradient function): ");
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
  for (const TensorRef& t : out.graph->lifted_captures) {
    int index = intermediates.index(t, may_add);
    if (index < 0) return make_error(Code::kNotFound, fn_name, ": the gradient reads a new forward value");
    out.reads.push_back(index);
  }
  out.graph->lifted_captures.clear();  // passed explicitly by GradientPair::backward
  out.name = FunctionLibrary::global().add(out.graph);
  return Status::OK();
}

}  // namespace

std::shared_ptr<const BackwardFunction> GradientPair::backward_for(const OutputMask& mask) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_mask.find(mask);
  if (it != by_mask.end()) return it->second;
  std::shared_ptr<const BackwardFunction> built;
  if (by_mask.size() < kMaxMasks) built = build_variant(mask);
  by_mask.emplace(mask, built);
  return built;
}

std::shared_ptr<const BackwardFunction> GradientPair::backward_or_fallback(OutputMask& mask) {
  std::shared_ptr<const BackwardFunction> b = backward_for(mask);
  if (b != nullptr) return b;
  // The function over every output, with zeros where no gradient arrived.
  bool intermediate_grads = false;
  for (size_t j = num_results; j < mask.size(); ++j) intermediate_grads |= mask[j];
  size_t count = intermediate_grads ? mask.size() : num_results;
  for (size_t j = 0; j < mask.size(); ++j) mask[j] = j < count && output_differentiable[j];
  return intermediate_grads ? all_outputs : all_results;
}

std::shared_ptr<const BackwardFunction> GradientPair::build_variant(const OutputMask& mask) {
  std::shared_ptr<const FunctionGraph> fn = function.lock();
  if (fn == nullptr) return nullptr;
  TracePause trace_pause;
  RecordingPause tapes_pause;
  auto replay = replay_function(*fn, needs);
  if (!replay.ok() || (*replay)->results.size() != num_results) return nullptr;
  auto out = std::make_shared<BackwardFunction>();
  if (!build_backward(**replay, mask, intermediates, /*may_add=*/false, *out, fn->name).ok()) return nullptr;
  return out;
}

void GradientPair::backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                            SmallVector<TensorRef, 4>& edge_grads) {
  OutputMask mask(output_differentiable.size(), false);
  bool any = false;
  for (size_t j = 0; j < mask.size() && j < output_grads.size(); ++j) {
    mask[j] = output_differentiable[j] && output_grads[j] != nullptr;
    any |= mask[j];
  }
  if (!any) return;
  std::shared_ptr<const BackwardFunction> b = backward_or_fallback(mask);
  SmallVector<TensorRef, 8> args;
  for (size_t j = 0; j < mask.size(); ++j) {
    if (!mask[j]) continue;
    TensorRef g(output_grads[j]);
    if (!g) g = gradient::zeros_like(GradTensor(node.outputs[j])).release();
    args.push_back(std::move(g));
  }
  // Intermediates are passed linked to the call node, so an outer tape sees the backward pass depend on
  // them (and through them on the call's inputs).
  for (int p : b->reads) args.push_back(relinked_output(node, static_cast<int32_t>(num_results + p)));
  SmallVector<TensorImpl*, 8> arg_ptrs;
  for (const TensorRef& a : args) arg_ptrs.push_back(a.get());
  AttrList attrs;
  attrs.push_back(b->name);
  OutputList outs;
  Status s = execute_op(op_def("PartitionedCall"), {arg_ptrs.data(), arg_ptrs.size()},
                        {attrs.data(), attrs.size()}, outs);
  if (!s.ok()) throw StatusError(s);
  for (size_t e = 0; e < b->edge_result.size() && e < edge_grads.size(); ++e)
    if (b->edge_result[e] >= 0) edge_grads[e] = outs[b->edge_result[e]];
}

namespace {

struct FunctionEntry {
  std::weak_ptr<const FunctionGraph> fn;
  std::vector<int64_t> variables;                                        // read by F or anything it calls
  std::unordered_map<std::string, std::shared_ptr<GradientPair>> pairs;  // by needs-gradient mask
  // Floating values that functions F calls read by value (captured, or folded from): no edge of F's call
  // carries their gradients, so a tape watching one is refused rather than given a partial gradient.
  std::vector<std::pair<TensorRef, std::string>> nested_by_value;  // with the function reading it
};

std::mutex g_mu;
// By library name. Never destroyed: graphs hold tensors, which must not be freed during static destruction
// (after the thread-local allocator caches are gone).
auto& g_entries = *new std::unordered_map<std::string, std::shared_ptr<FunctionEntry>>();

}  // namespace

void collect_variables(const FunctionGraph& fn, std::vector<int64_t>& out, int depth) {
  if (depth > 64) return;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op->name == "ReadVariableOp") {
      int64_t id = std::get<int64_t>(n.attrs[0]);
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    } else {
      for (const std::string& name : called_functions(*n.op, n.attrs))
        if (auto callee = FunctionLibrary::global().find(name)) collect_variables(*callee, out, depth + 1);
    }
  }
}

namespace {

std::shared_ptr<FunctionEntry> entry_for(const std::string& name,
                                         const std::shared_ptr<const FunctionGraph>& fn) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_entries.find(name);
  if (it != g_entries.end() && it->second->fn.lock() == fn) return it->second;
  // Entries of dead functions go in sweeps whose interval grows with the live entries (amortised O(1)).
  static size_t sweep_at = 64;
  if (g_entries.size() >= sweep_at) {
    std::erase_if(g_entries, [](const auto& e) { return e.second->fn.expired(); });
    sweep_at = std::max<size_t>(64, 2 * g_entries.size());
  }
  auto entry = std::make_shared<FunctionEntry>();
  entry->fn = fn;
  collect_variables(*fn, entry->variables, 0);
  std::unordered_set<const FunctionGraph*> seen{fn.get()};
  std::vector<std::shared_ptr<const FunctionGraph>> pending(fn->callees.begin(), fn->callees.end());
  while (!pending.empty()) {
    std::shared_ptr<const FunctionGraph> callee = std::move(pending.back());
    pending.pop_back();
    if (callee == nullptr || !seen.insert(callee.get()).second) continue;
    for (const auto* values : {&callee->captured_values, &callee->fold_sources})
      for (const TensorRef& v : *values)
        if (is_floating(v->dtype()) || is_complex(v->dtype()))
          entry->nested_by_value.emplace_back(v, callee->name);
    pending.insert(pending.end(), callee->callees.begin(), callee->callees.end());
  }
  g_entries[name] = entry;
  return entry;
}

}  // namespace

StatusOr<std::shared_ptr<GradientPair>> build_pair(const std::shared_ptr<const FunctionGraph>& fn,
                                                   const std::string& needs) {
  TracePause trace_pause;
  RecordingPause tapes_pause;
  auto replay_or = replay_function(*fn, needs);
  if (!replay_or.ok()) return replay_or.status();
  Replay& replay = **replay_or;
  auto pair = std::make_shared<GradientPair>();
  pair->function = fn;
  pair->function_name = fn->name;
  pair->needs = needs;
  pair->num_results = replay.results.size();
  pair->edge_inputs = replay.edge_inputs;
  pair->edge_variables = replay.edge_variables;

  // The backward functions for every result's gradient, and (higher order) every output's.
  const size_t num_results = replay.results.size();
  auto first = std::make_shared<BackwardFunction>(), full = std::make_shared<BackwardFunction>();
  OutputMask results_mask(num_results);
  for (size_t j = 0; j < num_results; ++j)
    results_mask[j] = is_differentiable_dtype(replay.results[j]->dtype());
  EMBER_RETURN_IF_ERROR(
      build_backward(replay, results_mask, pair->intermediates, /*may_add=*/true, *first, fn->name));
  // The full backward reads intermediates of its own; repeat until it needs no new ones (bounded).
  for (int round = 0; round < 8; ++round) {
    size_t before = pair->intermediates.tensors.size();
    OutputMask all = results_mask;
    for (const TensorRef& t : pair->intermediates.tensors) all.push_back(is_differentiable_dtype(t->dtype()));
    EMBER_RETURN_IF_ERROR(
        build_backward(replay, all, pair->intermediates, /*may_add=*/true, *full, fn->name));
    if (pair->intermediates.tensors.size() == before) break;
  }

  pair->forward = replay.forward;
  FunctionGraph& fwd = *pair->forward;
  for (const TensorRef& r : replay.results) {
    auto v = replay.trace->value_of(r.get());
    if (!v.ok()) return v.status();
    fwd.results.push_back(*v);
    pair->output_differentiable.push_back(is_differentiable_dtype(r->dtype()));
  }
  for (const TensorRef& t : pair->intermediates.tensors) {
    auto v = replay.trace->value_of(t.get());
    if (!v.ok()) return v.status();
    fwd.results.push_back(*v);
    pair->output_differentiable.push_back(is_differentiable_dtype(t->dtype()));
  }
  replay.trace->seal();
  // F's own captured values sit among F''s leading arguments, in the same place as in F.
  // and the fold sources that need gradients follow them (no caller passes either).
  fwd.captured_values.insert(fwd.captured_values.begin(), replay.fold_source_values.begin(),
                             replay.fold_source_values.end());
  fwd.captured_values.insert(fwd.captured_values.begin(), fn->captured_values.begin(),
                             fn->captured_values.end());
  pair->forward_name = FunctionLibrary::global().add(pair->forward);
  // Masks as backward() computes them: over every forward output.
  OutputMask first_mask(pair->output_differentiable.size(), false), full_mask = pair->output_differentiable;
  for (size_t j = 0; j < num_results; ++j) first_mask[j] = pair->output_differentiable[j];
  pair->all_results = first;
  pair->all_outputs = full;
  pair->by_mask.emplace(first_mask, first);
  pair->by_mask.emplace(full_mask, full);
  return pair;
}

// Which call arguments need gradients: differentiable ones some recording tape watches.
std::string needs_of(std::span<TensorImpl* const> inputs, uint32_t active, uint32_t& mask) {
  std::string needs(inputs.size(), '0');
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorImpl* t = inputs[i];
    uint32_t m = recording_mask(t) & active;
    if (m != 0 && t->grad_node() != nullptr && is_differentiable_dtype(t->dtype())) {
      needs[i] = '1';
      mask |= m;
    }
  }
  return needs;
}

// Which recording tapes watch each of `variables` (their bits are added to `mask`).
std::unordered_map<int64_t, uint32_t> masks_of_variables(const std::vector<int64_t>& variables,
                                                         uint32_t& mask) {
  std::unordered_map<int64_t, uint32_t> masks;
  for (int64_t id : variables) {
    uint32_t m = variable_mask(id);
    masks[id] = m;
    mask |= m;
  }
  return masks;
}

namespace {

// The pair of F for the call arguments that need gradients; null (and `mask` 0) when no recording tape
// watches an argument or a variable F reads.
StatusOr<std::shared_ptr<GradientPair>> pair_for_call(const std::string& name,
                                                      const std::shared_ptr<const FunctionGraph>& fn,
                                                      std::span<TensorImpl* const> inputs, uint32_t& mask,
                                                      std::unordered_map<int64_t, uint32_t>& variable_masks) {
  std::string needs = needs_of(inputs, active_mask(), mask);
  std::shared_ptr<FunctionEntry> entry = entry_for(name, fn);
  for (const auto& [value, reader] : entry->nested_by_value)
    if ((recording_mask(value.get()) & active_mask()) != 0)
      return make_error(
          Code::kUnimplemented, "the gradient of ", fn->name, " with respect to a watched ",
          dtype_name(value->dtype()), value->shape().to_string(), " tensor is not computed: ", reader,
          ", a function it calls, reads that tensor by value (a nested ember.function capturing "
          "it, or a constant folded from it), so no edge carries its gradient out; pass the "
          "tensor to the nested function as an argument");
  variable_masks = masks_of_variables(entry->variables, mask);
  if (mask == 0) return std::shared_ptr<GradientPair>();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = entry->pairs.find(needs);
    if (it != entry->pairs.end()) return it->second;
  }
  auto built = build_pair(fn, needs);
  if (!built.ok()) return built.status();
  std::lock_guard<std::mutex> lock(g_mu);
  entry->pairs[needs] = *built;
  return built;
}

// Records the call of `pair`'s forward function whose outputs (F's results, then the intermediates) are
// `all`: one node whose backward is F's; `all` is linked to it.
void record_call(const std::shared_ptr<GradientPair>& pair, std::span<TensorImpl* const> inputs,
                 uint32_t mask, const std::unordered_map<int64_t, uint32_t>& variable_masks,
                 OutputList& all) {
  const uint32_t active = active_mask();
  auto* node = new TapeNode();
  node->backward = pair;
  node->mask = mask;
  node->serial = next_serial();
  for (int k : pair->edge_inputs) {
    node->edges.push_back(input_edge(inputs[k], active));
    add_edge_spec(node, inputs[k]);
  }
  for (int64_t id : pair->edge_variables) {
    auto it = variable_masks.find(id);
    node->edges.push_back(variable_edge(id, it != variable_masks.end() ? it->second : 0));
  }
  link_outputs(node, {all.data(), all.size()});
}

}  // namespace

Status execute_function_call(const OpDef& op, std::span<TensorImpl* const> inputs,
                             std::span<const AttrValue> attrs, OutputList& outputs) {
  const std::string& name = std::get<std::string>(attrs[0]);
  std::shared_ptr<const FunctionGraph> fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return execute_op_unrecorded(op, inputs, attrs, outputs);
  // A tape may watch a value F captured or folded from (TensorFlow's graph reads it like an argument): the
  // node's edges reach it too (Note [Folded values of concrete arguments] in trace/trace_context.cc).
  SmallVector<TensorImpl*, 8> edge_inputs;
  for (TensorImpl* t : inputs) edge_inputs.push_back(t);
  if (static_cast<int>(inputs.size()) == fn->num_call_args()) {
    for (const TensorRef& t : fn->captured_values) edge_inputs.push_back(t.get());
    for (const TensorRef& t : fn->fold_sources) edge_inputs.push_back(t.get());
  }
  uint32_t mask = 0;
  std::unordered_map<int64_t, uint32_t> variable_masks;
  auto pair = pair_for_call(name, fn, {edge_inputs.data(), edge_inputs.size()}, mask, variable_masks);
  if (!pair.ok()) return pair.status();
  if (*pair == nullptr) return execute_op_unrecorded(op, inputs, attrs, outputs);
  AttrList forward_attrs;
  forward_attrs.push_back((*pair)->forward_name);
  OutputList all;
  EMBER_RETURN_IF_ERROR(execute_op_unrecorded(op, inputs, {forward_attrs.data(), forward_attrs.size()}, all));
  record_call(*pair, {edge_inputs.data(), edge_inputs.size()}, mask, variable_masks, all);
  outputs.clear();
  for (size_t i = 0; i < (*pair)->num_results; ++i) outputs.push_back(std::move(all[i]));
  return Status::OK();
}

// Note [Differentiating a call already traced]
// tf.gradients meets a call node the trace built while nothing recorded. Running the forward function as a
// second call would repeat the callee's effects (an assignment, a random draw) and read its variables out
// of program order, so the node itself is rewritten, as TensorFlow rewrites a function call op when a
// gradient first needs its intermediates: it calls F''s forward function, whose outputs are F's results
// followed by the intermediates, so existing readers of the results are unchanged. A second tf.gradients
// through the same node rewrites it again from the forward function it calls by then, whose results are a
// prefix of the new forward's outputs.
StatusOr<OutputList> record_traced_call(FunctionGraph& caller, int32_t node,
                                        std::span<TensorImpl* const> inputs) {
  const Node& call = caller.graph.node(node);
  const std::string name = std::get<std::string>(call.attrs[0]);
  auto symbolic_outputs = [&caller, node] {
    OutputList outs;
    const Node& n = caller.graph.node(node);
    for (int32_t o = 0; o < static_cast<int32_t>(n.outputs.size()); ++o)
      outs.push_back(TensorImpl::symbolic(n.outputs[o].dtype, n.outputs[o].shape, &caller, node, o));
    return outs;
  };
  std::shared_ptr<const FunctionGraph> fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return make_error(Code::kNotFound, "tf.gradients: the function ", name, " is gone");
  uint32_t mask = 0;
  std::unordered_map<int64_t, uint32_t> variable_masks;
  auto pair = pair_for_call(name, fn, inputs, mask, variable_masks);
  if (!pair.ok()) return pair.status();
  if (*pair == nullptr) return symbolic_outputs();
  const FunctionGraph& forward = *(*pair)->forward;
  Node& rewritten = caller.graph.mutable_node(node);
  rewritten.attrs[0] = (*pair)->forward_name;
  for (size_t k = rewritten.outputs.size(); k < forward.results.size(); ++k) {
    ValueRef r = forward.results[k];
    rewritten.outputs.push_back(forward.graph.node(r.node).outputs[r.output]);
  }
  caller.callees.push_back((*pair)->forward);
  OutputList all = symbolic_outputs();
  record_call(*pair, inputs, mask, variable_masks, all);
  all.resize((*pair)->num_results);
  return all;
}

}  // namespace ember::autodiff::internal

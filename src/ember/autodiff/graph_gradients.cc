// tf.gradients inside a trace. Note [Gradients of recorded nodes]: the nodes on a path from a source to a
// target are recorded, after the fact, on a private tape that watches the sources, and the tape's backprop
// adds the gradient nodes to the trace: the same gradient rules as everywhere else, so the result can be
// differentiated again (tf.hessians, an enclosing tape). Nothing runs a second time, so stateful nodes
// (a py_function, CheckNumerics, reads after an assignment) are differentiated where they stand, as
// TensorFlow differentiates them. Three kinds of node need more than their op's gradient rule:
//  - a call: rewritten in place to return the intermediates its gradient reads (Note [Differentiating a
//    call already traced] in function_gradient.cc);
//  - a custom_gradient region: the decorated function records one node over the region whose backward is
//    the grad_fn kept when it was traced (ember/backprop.py), in place of the region's own nodes;
//  - If and Case: rewritten in place like a call, to run their forward branches (control_flow_gradient.cc);
//  - While: one whose functions have no effects runs once more as its forward loop (the trace keeps both;
//    the optimizer drops the unused one). One with effects (an assignment, a print, a random draw) is
//    rewritten in place to its forward loop, like If, so the effects still happen once per iteration; its
//    reads of variables stay in the body (its node keeps its inputs).
#include "ember/autodiff/graph_gradients.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ember/autodiff/function_gradient.h"
#include "ember/autodiff/tape_internal.h"
#include "ember/core/device.h"
#include "ember/graph/function_def.h"
#include "ember/ops/execute.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember::autodiff {

StatusOr<std::vector<TensorRef>> graph_gradients(std::span<TensorImpl* const> ys,
                                                 std::span<TensorImpl* const> grad_ys,
                                                 std::span<const GradSource> xs,
                                                 std::span<TensorImpl* const> stops) {
  TraceContext* trace = TraceContext::current();
  if (trace == nullptr)
    return make_error(Code::kFailedPrecondition,
                      "tf.gradients is not supported when eager execution is enabled. Use tf.GradientTape "
                      "instead.");
  FunctionGraph& fn = trace->function();
  const Graph& g = fn.graph;
  // Every tensor as one of this trace: an eager one (a constant made inside the function) is the Const
  // node or captured argument it became when ops read it. A tensor of an enclosing trace is refused.
  std::vector<TensorRef> own;
  auto own_tensor = [&](TensorImpl* t, const char* what) -> StatusOr<TensorImpl*> {
    if (t->is_symbolic() && t->graph() != &fn)
      return invalid_argument("tf.gradients: every ", what,
                              " must be a tensor of the function being traced; got a tensor of another "
                              "(enclosing) graph");
    if (t->is_symbolic()) return t;
    auto lifted = trace->lift(t);
    if (!lifted.ok()) return lifted.status();
    own.push_back(std::move(lifted).value());
    return own.back().get();
  };
  std::vector<TensorImpl*> targets_in, stops_in;
  for (TensorImpl* y : ys) {
    auto t = own_tensor(y, "ys tensor");
    if (!t.ok()) return t.status();
    targets_in.push_back(*t);
  }
  for (TensorImpl* s : stops) {
    auto t = own_tensor(s, "stop_gradients tensor");
    if (!t.ok()) return t.status();
    stops_in.push_back(*t);
  }

  // Lifting adds Const nodes (a constant no op of the graph read yet), so the nodes are counted after every
  // operand is this trace's: the bookkeeping below is sized by that count.
  std::vector<TensorImpl*> own_xs(xs.size(), nullptr);
  for (size_t k = 0; k < xs.size(); ++k) {
    if (xs[k].tensor == nullptr) continue;
    auto x = own_tensor(xs[k].tensor, "xs tensor");
    if (!x.ok()) return x.status();
    own_xs[k] = *x;
  }
  const int32_t num_nodes = g.num_nodes();  // replayed nodes are added after these

  using Key = std::pair<int32_t, int32_t>;
  auto key_of = [](const TensorImpl* t) { return Key{t->graph_node(), t->graph_output()}; };
  auto key_of_value = [](ValueRef v) { return Key{v.node, v.output}; };
  // The tensor standing for each graph value during the replay: the caller's for sources, replayed
  // outputs for nodes on the path, a fresh symbolic tensor (unrecorded) for the rest.
  std::map<Key, TensorRef> value;
  std::vector<bool> reached(num_nodes, false);  // depends on a source, not through a stop
  std::map<Key, bool> is_stop;
  for (TensorImpl* s : stops_in) is_stop[key_of(s)] = true;

  auto tape_or = Tape::create(/*persistent=*/false, /*watch_accessed_variables=*/false);
  if (!tape_or.ok()) return tape_or.status();
  std::unique_ptr<Tape> tape = std::move(tape_or).value();
  std::vector<GradSource> sources;
  std::vector<std::vector<size_t>> source_slots(xs.size());  // per x, its entries in `sources`
  std::map<Key, bool> is_source;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (own_xs[k] != nullptr) {
      const Key key = key_of(own_xs[k]);
      value.emplace(key, TensorRef(own_xs[k]));
      is_source[key] = true;
      source_slots[k].push_back(sources.size());
      sources.push_back(GradSource{value[key].get(), 0});
      continue;
    }
    // A variable: each of its reads in this trace is a source, and so is the variable itself, for reads in
    // calls and custom_gradient functions (their backward gives the variable's gradient); its gradient
    // sums over them.
    source_slots[k].push_back(sources.size());
    sources.push_back(GradSource{nullptr, xs[k].variable_id});
    for (int32_t i = 0; i < num_nodes; ++i) {
      const Node& n = g.node(i);
      if (n.op->name != "ReadVariableOp" || std::get<int64_t>(n.attrs[0]) != xs[k].variable_id) continue;
      const Key key{i, 0};
      auto [it, added] = value.emplace(key, nullptr);
      if (added) it->second = TensorImpl::symbolic(n.outputs[0].dtype, n.outputs[0].shape, &fn, i, 0);
      is_source[key] = true;
      source_slots[k].push_back(sources.size());
      sources.push_back(GradSource{it->second.get(), 0});
    }
  }
  // Note [Gradients through folded constants]
  // Ops whose operands are all concrete ran while tracing (TraceContext::intercept), so a value computed
  // from a constant source (c = tf.constant(2.0); y = c * 3.0) is a constant of the graph with no edge from
  // the source. The trace remembers each such fold; a Const node whose tensor a fold chain derives from a
  // concrete source counts as reached, and the replay runs that chain again on the source's symbolic
  // tensor, which adds its ops to the graph and records them on the tape as TensorFlow's unfolded graph has
  // them.
  std::unordered_map<const TensorImpl*, TensorImpl*> concrete_source;  // the caller's tensor -> its value
  for (size_t k = 0; k < xs.size(); ++k)
    if (own_xs[k] != nullptr && !xs[k].tensor->is_symbolic())
      concrete_source[xs[k].tensor] = value[key_of(own_xs[k])].get();
  std::unordered_set<const TensorImpl*> concrete_stops;
  for (TensorImpl* s : stops)
    if (!s->is_symbolic()) concrete_stops.insert(s);
  // Both walks below keep their own stack: a fold chain is as long as the Python loop that made it (tens of
  // thousands of ops), too deep for the thread's stack.
  std::unordered_map<const TensorImpl*, bool> derived_memo;
  auto derived_known = [&](const TensorImpl* t) -> std::optional<bool> {
    if (concrete_source.count(t)) return true;  // a stopped source too: only what flows past it stops
    if (concrete_stops.count(t)) return false;
    if (auto it = derived_memo.find(t); it != derived_memo.end()) return it->second;
    if (concrete_source.empty() || trace->fold_of(t) == nullptr) return false;
    return std::nullopt;
  };
  auto derived = [&](const TensorImpl* root) -> bool {
    if (auto known = derived_known(root)) return *known;
    std::vector<const TensorImpl*> stack{root};
    while (!stack.empty()) {
      const TensorImpl* t = stack.back();
      if (derived_memo.count(t)) {
        stack.pop_back();
        continue;
      }
      bool pending = false, result = false;
      for (const TensorRef& in : trace->fold_of(t)->inputs) {
        auto known = derived_known(in.get());
        if (!known) {
          stack.push_back(in.get());
          pending = true;
        } else {
          result = result || *known;
        }
      }
      if (pending) continue;
      derived_memo[t] = result;
      stack.pop_back();
    }
    return derived_memo.at(root);
  };
  // A function an op calls may read a constant of this trace by value, as a captured value, not as an
  // input of the op: no edge carries its gradient out, so a source it derives from would get a partial
  // gradient (or None) where TensorFlow gives the whole one. Refused. Branches and loop bodies take such
  // floating constants as inputs (Note [Folded values of concrete arguments] in trace_context.cc); a nested
  // ember.function still captures them by value.
  auto refuse_derived_captures = [&](const OpDef& op, std::span<const AttrValue> attrs) -> Status {
    std::unordered_set<const FunctionGraph*> seen;
    std::vector<std::shared_ptr<const FunctionGraph>> pending;
    for (const std::string& callee : called_functions(op, attrs))
      if (auto f = FunctionLibrary::global().find(callee)) pending.push_back(std::move(f));
    while (!pending.empty()) {
      std::shared_ptr<const FunctionGraph> f = std::move(pending.back());
      pending.pop_back();
      if (!seen.insert(f.get()).second) continue;
      // Values the function folded from are read by value too (FunctionGraph::fold_sources).
      std::vector<const TensorImpl*> by_value;
      for (const TensorRef& captured : f->captured_values) by_value.push_back(captured.get());
      for (const TensorRef& source : f->fold_sources) by_value.push_back(source.get());
      for (const TensorImpl* captured : by_value)
        if (derived(captured))
          return make_error(
              Code::kUnimplemented, "tf.gradients: a constant made inside the function (or a ",
              "value computed from one) that is among xs, or computed from one, is read inside ", f->name,
              ", which captures it by value, so its gradient through that branch or loop ",
              "body is not computed; make it an argument of the function or a tf.Variable");
      for (const auto& callee : f->callees) pending.push_back(callee);
    }
    return Status::OK();
  };
  const OpDef& const_op_def = op_def("Const");
  auto derived_constant = [&](int32_t i) -> const TensorImpl* {
    const Node& n = g.node(i);
    if (n.op != &const_op_def || concrete_source.empty() || n.attrs.empty()) return nullptr;
    const auto* held = std::get_if<TensorRef>(&n.attrs[0]);
    if (held == nullptr || concrete_source.count(held->get()) || !derived(held->get())) return nullptr;
    return held->get();
  };
  std::unordered_map<const TensorImpl*, TensorRef> replayed_folds;
  auto replayed_value = [&](TensorImpl* t) -> std::optional<TensorRef> {
    if (auto src = concrete_source.find(t); src != concrete_source.end()) return TensorRef(src->second);
    if (!derived(t)) return TensorRef(t);
    if (auto done = replayed_folds.find(t); done != replayed_folds.end()) return done->second;
    return std::nullopt;
  };
  auto replay_fold = [&](TensorImpl* root) -> StatusOr<TensorRef> {
    if (auto ready = replayed_value(root)) return *ready;
    std::vector<TensorImpl*> stack{root};
    while (!stack.empty()) {
      TensorImpl* t = stack.back();
      if (replayed_folds.count(t)) {
        stack.pop_back();
        continue;
      }
      const TraceContext::Fold* fold = trace->fold_of(t);
      SmallVector<TensorRef, 4> held;
      bool pending = false;
      for (const TensorRef& in : fold->inputs) {
        auto ready = replayed_value(in.get());
        if (!ready) {
          stack.push_back(in.get());
          pending = true;
        } else {
          held.push_back(std::move(*ready));
        }
      }
      if (pending) continue;
      SmallVector<TensorImpl*, 4> inputs;
      for (const TensorRef& h : held) inputs.push_back(h.get());
      if (calls_functions(*fold->op))
        EMBER_RETURN_IF_ERROR(refuse_derived_captures(*fold->op, {fold->attrs.data(), fold->attrs.size()}));
      OutputList outs;
      EMBER_RETURN_IF_ERROR(execute_op(*fold->op, {inputs.data(), inputs.size()},
                                       {fold->attrs.data(), fold->attrs.size()}, outs));
      for (size_t o = 0; o < outs.size() && o < fold->outputs.size(); ++o)
        if (fold->outputs[o]) replayed_folds[fold->outputs[o].get()] = outs[o];
      stack.pop_back();
    }
    return replayed_folds.at(root);
  };

  // Which nodes depend on a source: node indices are a topological order.
  auto carries = [&](ValueRef v) {
    const Key key{v.node, v.output};
    // A stopped source still has its own gradient (TensorFlow stops only what flows past it).
    if (is_stop.count(key) && !is_source.count(key)) return false;
    return is_source.count(key) != 0 || (v.node < num_nodes && reached[v.node]);
  };
  // A call or control-flow op whose functions read a variable source depends on it too.
  std::vector<int64_t> variable_sources;
  for (const GradSource& s : xs)
    if (s.tensor == nullptr) variable_sources.push_back(s.variable_id);
  auto reads_variable_source = [&](const Node& n) {
    if (variable_sources.empty() || !calls_functions(*n.op)) return false;
    std::vector<int64_t> read;
    for (const std::string& callee : called_functions(*n.op, n.attrs))
      if (auto f = FunctionLibrary::global().find(callee)) internal::collect_variables(*f, read, 0);
    for (int64_t id : read)
      if (std::find(variable_sources.begin(), variable_sources.end(), id) != variable_sources.end())
        return true;
    return false;
  };
  for (int32_t i = 0; i < num_nodes; ++i) {
    for (ValueRef v : g.node(i).inputs)
      if (carries(v)) reached[i] = true;
    if (!reached[i] && reads_variable_source(g.node(i))) reached[i] = true;
    if (!reached[i] && !is_stop.count(Key{i, 0}) && derived_constant(i) != nullptr) reached[i] = true;
  }
  // Which of those lead to a target.
  std::vector<bool> needed(num_nodes, false);
  for (TensorImpl* y : targets_in) needed[y->graph_node()] = true;
  for (int32_t i = num_nodes - 1; i >= 0; --i) {
    if (!needed[i]) continue;
    for (ValueRef v : g.node(i).inputs) needed[v.node] = true;
  }
  if (!concrete_source.empty()) {
    for (int32_t i = 0; i < num_nodes; ++i) {
      const Node& n = g.node(i);
      if (needed[i] && calls_functions(*n.op))
        EMBER_RETURN_IF_ERROR(refuse_derived_captures(*n.op, {n.attrs.data(), n.attrs.size()}));
    }
  }
  auto in_custom_gradient_region = [&](int32_t i) -> const FunctionGraph::CustomGradientRegion* {
    for (const auto& region : fn.custom_gradient_regions)
      if (i >= region.first_node && i < region.end_node) return &region;
    return nullptr;
  };
  auto tensor_of = [&](ValueRef v) -> TensorImpl* {
    auto [it, added] = value.emplace(Key{v.node, v.output}, nullptr);
    if (added) {
      const TensorSpec& spec = g.node(v.node).outputs[v.output];
      it->second = TensorImpl::symbolic(spec.dtype, spec.shape, &fn, v.node, v.output);
    }
    return it->second.get();
  };

  // A While is flagged stateful whatever its body does; one whose functions have no effects may run
  // twice.
  auto is_while = [](const OpDef& op) { return op.name == "While" || op.name == "StatelessWhile"; };
  std::unordered_map<std::string, bool> stateful_memo;
  auto calls_only_stateless_functions = [&](const OpDef& op, std::span<const AttrValue> attrs) {
    for (const std::string& callee : called_functions(op, attrs))
      if (graph_def_internal::is_stateful_function(callee, stateful_memo)) return false;
    return true;
  };
  // The values a custom_gradient region returns, as its replay recorded them.
  auto record_region = [&](const FunctionGraph::CustomGradientRegion& region) -> Status {
    SmallVector<TensorImpl*, 4> inputs;
    for (ValueRef v : region.inputs) inputs.push_back(tensor_of(v));
    auto outs = region.replay({inputs.data(), inputs.size()});
    if (!outs.ok()) return outs.status().with_prefix("tf.gradients: custom_gradient " + region.name + ": ");
    if (outs->size() != region.outputs.size())
      return make_error(Code::kInternal, "tf.gradients: custom_gradient ", region.name, " gave ",
                        outs->size(), " tensors for ", region.outputs.size(), " outputs");
    for (size_t k = 0; k < region.outputs.size(); ++k) {
      const Key key = key_of_value(region.outputs[k]);
      if (!is_stop.count(key)) value[key] = (*outs)[k];
    }
    return Status::OK();
  };

  const OpDef& call_op = op_def("PartitionedCall");
  // Record the path on a tape watching the sources (Note [Gradients of recorded nodes]).
  EMBER_RETURN_IF_ERROR(tape->push());
  for (const GradSource& s : sources) {
    if (s.tensor != nullptr)
      tape->watch(s.tensor);
    else
      tape->watch_variable(s.variable_id);
  }
  Status replayed = Status::OK();
  // A source folded from another (c and c * 3.0 both sources) is replayed from it first, and its gradient
  // is taken at the replayed tensor, so the other's gradient flows through it as in TensorFlow's graph.
  for (size_t k = 0; k < xs.size() && replayed.ok(); ++k) {
    if (own_xs[k] == nullptr || xs[k].tensor->is_symbolic()) continue;
    const TraceContext::Fold* fold = trace->fold_of(xs[k].tensor);
    if (fold == nullptr || concrete_stops.count(xs[k].tensor)) continue;
    bool from_other_source = false;
    for (const TensorRef& in : fold->inputs) from_other_source = from_other_source || derived(in.get());
    if (!from_other_source) continue;
    TensorImpl* old_value = concrete_source[xs[k].tensor];
    concrete_source.erase(xs[k].tensor);
    auto r = replay_fold(xs[k].tensor);
    if (!r.ok()) {
      replayed = r.status();
      break;
    }
    concrete_source[xs[k].tensor] = r->get();
    value[key_of(own_xs[k])] = *r;
    for (GradSource& s : sources)
      if (s.tensor == old_value) s.tensor = r->get();
  }
  for (int32_t i = 0; i < num_nodes && replayed.ok(); ++i) {
    if (!reached[i] || !needed[i]) continue;
    if (is_source.count(Key{i, 0}) && g.node(i).op->name == "ReadVariableOp") continue;
    if (const TensorImpl* folded = derived_constant(i)) {
      auto r = replay_fold(const_cast<TensorImpl*>(folded));
      if (!r.ok()) {
        replayed = r.status();
        break;
      }
      value[Key{i, 0}] = std::move(r).value();
      continue;
    }
    if (const auto* region = in_custom_gradient_region(i)) {
      replayed = record_region(*region);
      i = region->end_node - 1;
      continue;
    }
    // Copied: recording may add nodes to the graph, which may move the one being read.
    const Node& n = g.node(i);
    const OpDef& op = *n.op;
    const AttrList attrs = n.attrs;
    const std::string device = n.requested_device;
    const std::string name = n.name;
    const int32_t num_outputs = static_cast<int32_t>(n.outputs.size());
    SmallVector<TensorImpl*, 4> inputs;
    for (ValueRef v : n.inputs) inputs.push_back(tensor_of(v));
    OutputList outs;
    if (&op == &call_op) {
      auto recorded = internal::record_traced_call(fn, i, {inputs.data(), inputs.size()});
      if (recorded.ok())
        outs = std::move(recorded).value();
      else
        replayed = recorded.status();
    } else if (calls_functions(op) && (!is_while(op) || !calls_only_stateless_functions(op, attrs))) {
      auto recorded = internal::record_traced_control_flow(fn, i, {inputs.data(), inputs.size()});
      if (recorded.ok())
        outs = std::move(recorded).value();
      else
        replayed = recorded.status();
    } else if (calls_functions(op)) {
      RequestedDeviceScope scope(device);
      replayed = execute_op(op, {inputs.data(), inputs.size()}, {attrs.data(), attrs.size()}, outs);
    } else {
      for (int32_t o = 0; o < num_outputs; ++o) {
        const TensorSpec& spec = n.outputs[o];
        outs.push_back(TensorImpl::symbolic(spec.dtype, spec.shape, &fn, i, o));
      }
      internal::record_op(op, {inputs.data(), inputs.size()}, {attrs.data(), attrs.size()}, outs);
    }
    if (!replayed.ok()) {
      replayed = replayed.with_prefix("tf.gradients: differentiating " + op.name + " '" + name + "': ");
      break;
    }
    for (int32_t o = 0; o < num_outputs && o < static_cast<int32_t>(outs.size()); ++o) {
      if (is_stop.count(Key{i, o})) continue;  // read as it was: no gradient flows through it
      value[Key{i, o}] = outs[o];
    }
  }
  tape->pop();
  if (!replayed.ok()) return replayed;

  SmallVector<TensorImpl*, 4> targets;
  for (TensorImpl* y : targets_in) targets.push_back(tensor_of(ValueRef{y->graph_node(), y->graph_output()}));
  auto grads = tape->gradient({targets.data(), targets.size()}, grad_ys, {sources.data(), sources.size()});
  if (!grads.ok()) return grads.status();
  // Per x: its gradient, or the sum over a variable's reads.
  std::vector<TensorRef> result(xs.size());
  const OpDef* add = OpRegistry::global().find("Add");
  EMBER_DCHECK(add != nullptr);
  for (size_t k = 0; k < xs.size(); ++k) {
    for (size_t slot : source_slots[k]) {
      TensorRef& g_slot = (*grads)[slot];
      if (!g_slot) continue;
      if (!result[k]) {
        result[k] = g_slot;
        continue;
      }
      TensorImpl* operands[] = {result[k].get(), g_slot.get()};
      OutputList sum;
      EMBER_RETURN_IF_ERROR(execute_op(*add, operands, {}, sum));
      result[k] = sum[0];
    }
  }
  return result;
}

}  // namespace ember::autodiff

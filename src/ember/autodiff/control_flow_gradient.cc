// Gradients through the functional control-flow ops If, Case and While (and their stateless forms) while a
// tape records them (architecture.md §7, §10). Each op becomes one tape node whose backward is again one
// control-flow op, run through execute_op, so an outer tape records the backward pass the same way and
// gradients of any order follow.
//
// If / Case: every branch gets its gradient pair (function_gradient.cc) for the same arguments. The op runs
// wrapper branches that all return the same list: the results, then every branch's intermediates, where a
// branch returns zeros for the others' (their static shapes with unknown dims as 0, so the joined output
// spec stays valid). The backward is an If (Case) on the same predicate (index) over wrapper backward
// branches that call their branch's backward function and return a gradient for every edge: the input
// edges, then the union of the variables any branch reads (zeros where a branch has none).
//
// While: the body's pair gives F' (results + intermediates). The loop runs F' as its body with
// _accumulate (Note [Accumulating While] in ops/control_flow.cc), returning each intermediate stacked over
// the iterations and the trip count n. The backward is a While over a counter from n down to 0 whose body
// reads iteration i's intermediates from the stacks (views, Note [Reading a stack in the backward loop]),
// calls the body's backward function and carries the loop variables' gradients; variable gradients are
// summed in extra loop variables. The forward loop never runs again, so trip counts known only at run time
// work. Lifted captures are loop variables the body passes through, so their gradients are summed over the
// iterations by the same recurrence, and so are variables the loop only reads (Note [Variables read in a
// differentiated loop]).
#include <unordered_map>

#include "ember/autodiff/function_gradient.h"
#include "ember/core/resource.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"

namespace ember::autodiff::internal {
namespace {

using gradient::emit;
using gradient::emit1;
using gradient::operator+;
using gradient::operator-;

TensorSpec spec_of(const FunctionGraph& fn, ValueRef v) { return fn.graph.node(v.node).outputs[v.output]; }

TensorSpec arg_spec(const FunctionGraph& fn, size_t k) { return fn.graph.node(fn.args[k]).outputs[0]; }

Shape join_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return Shape::unknown_rank();
  Shape out = a;
  for (int i = 0; i < a.rank(); ++i)
    if (a.dim(i) != b.dim(i)) out.set_dim(i, kUnknownDim);
  return out;
}

// Traces `body` on arguments of `specs` into a new library function. Throwing StatusError inside `body`
// fails the build.
using TraceBody = std::function<std::vector<TensorRef>(const std::vector<TensorRef>& args)>;
StatusOr<std::shared_ptr<FunctionGraph>> trace_function(const std::string& name,
                                                        std::span<const TensorSpec> specs,
                                                        const TraceBody& body) {
  TracePause trace_pause;
  RecordingPause tapes_pause;
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = name;
  TraceContext trace(fn.get());
  trace.enter();
  std::vector<TensorRef> args;
  for (size_t i = 0; i < specs.size(); ++i)
    args.push_back(trace.add_argument(specs[i].dtype, specs[i].shape, "arg"));
  Status status;
  try {
    std::vector<TensorRef> results = body(args);
    for (const TensorRef& r : results) {
      auto v = trace.value_of(r.get());
      if (!v.ok()) {
        status = v.status();
        break;
      }
      fn->results.push_back(*v);
    }
  } catch (const StatusError& e) {
    status = e.status();
  }
  if (status.ok()) trace.seal();
  trace.exit();
  if (!status.ok()) return status.with_prefix(name + ": ");
  return fn;
}

std::vector<TensorRef> call_function(const std::string& name, std::span<const TensorRef> inputs) {
  std::vector<GradTensor> in(inputs.begin(), inputs.end());
  AttrList attrs;
  attrs.push_back(name);
  auto outs = emit("PartitionedCall", std::span<const GradTensor>(in), std::move(attrs));
  std::vector<TensorRef> result;
  for (GradTensor& g : outs) result.push_back(g.release());
  return result;
}

// Zeros fitting a static spec: unknown dims become 0 and an unknown rank a scalar (a value that is never
// read, it only has to fit the spec the op's output joins).
TensorRef zeros_of(const TensorSpec& spec) {
  std::vector<int64_t> dims = spec.shape.rank_known() ? spec.shape.dim_vector() : std::vector<int64_t>{};
  for (int64_t& d : dims) d = std::max<int64_t>(d, 0);
  return emit1("Fill", {gradient::int_vector(dims), gradient::scalar(0, spec.dtype)}).release();
}

// A variable's zero gradient. Its declared shape may leave dimensions unknown (tf.Variable(..., shape=
// [None])), and then the zeros take the shape of its value when they run, as a gradient flowing in would.
TensorRef variable_zeros(int64_t id, const std::string& what) {
  auto resource = ResourceManager::global().find(id, what.c_str());
  if (!resource.ok()) throw StatusError(resource.status());
  const VariableResource& v = **resource;
  if (v.shape().fully_defined()) return zeros_of(TensorSpec{v.dtype(), v.shape()});
  AttrList read = {id, v.dtype(), v.shape().dim_vector(), !v.shape().rank_known()};
  return gradient::zeros_like(GradTensor(emit1("ReadVariableOp", {}, std::move(read)).release())).release();
}

std::vector<TensorRef> run_op(const OpDef& op, std::span<const TensorRef> inputs, AttrList attrs) {
  std::vector<GradTensor> in(inputs.begin(), inputs.end());
  auto outs = emit(op.name, std::span<const GradTensor>(in), std::move(attrs));
  std::vector<TensorRef> result;
  for (GradTensor& g : outs) result.push_back(g.release());
  return result;
}

// Builds (once per key) what a control-flow op's gradient needs; entries die with the tape nodes and
// gradient graphs that use them.
template <typename T>
class Cache {
 public:
  std::shared_ptr<T> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.lock();
  }
  void put(const std::string& key, const std::shared_ptr<T>& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= sweep_at_) {
      std::erase_if(entries_, [](const auto& e) { return e.second.expired(); });
      sweep_at_ = std::max<size_t>(64, 2 * entries_.size());
    }
    entries_[key] = value;
  }

 private:
  std::mutex mu_;
  size_t sweep_at_ = 64;
  std::unordered_map<std::string, std::weak_ptr<T>> entries_;
};

bool is_case_op(const OpDef& op) { return op.name == "Case" || op.name == "StatelessCase"; }
bool is_while_op(const OpDef& op) { return op.name == "While" || op.name == "StatelessWhile"; }

// Note [Loop variables that need gradients]
// The gradient of loop variable i at one iteration sums, over the body's results j that depend on i, the
// gradient of result j (that is, of variable j at the next iteration). So the backward loop carries the
// gradients of the smallest set N of loop variables with: i in N when the tape watches input i, when body
// result i depends on a watched variable, or when it depends on an argument in N. A sequence the body only
// indexes (an RNN's input, passed through unchanged) is outside N unless it is watched itself: its
// gradient, a full-size tensor per iteration, is not summed for nothing.
std::string loop_needs(const FunctionGraph& body, const std::string& watched,
                       const std::unordered_map<int64_t, uint32_t>& variable_masks,
                       std::span<TensorImpl* const> inputs) {
  const Graph& g = body.graph;
  const size_t n = watched.size();
  // Per node: the arguments (first n) it depends on, and (bit n) whether it reads a watched variable.
  std::vector<std::vector<bool>> deps(g.num_nodes(), std::vector<bool>(n + 1, false));
  for (size_t k = 0; k < body.args.size() && k < n; ++k) deps[body.args[k]][k] = true;
  auto watched_variable = [&](int64_t id) {
    auto it = variable_masks.find(id);
    return it != variable_masks.end() && it->second != 0;
  };
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    for (ValueRef in : node.inputs)
      for (size_t b = 0; b <= n; ++b)
        if (deps[in.node][b]) deps[i][b] = true;
    if (node.op->has_flag(kReadsResource) && watched_variable(std::get<int64_t>(node.attrs[0])))
      deps[i][n] = true;
    if (calls_functions(*node.op)) {
      std::vector<int64_t> read;
      for (const std::string& name : called_functions(*node.op, node.attrs))
        if (auto callee = FunctionLibrary::global().find(name)) collect_variables(*callee, read, 0);
      for (int64_t id : read)
        if (watched_variable(id)) deps[i][n] = true;
    }
  }
  std::string needs(n, '0');
  for (size_t k = 0; k < n; ++k)
    if (watched[k] == '1') needs[k] = '1';
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t j = 0; j < n && j < body.results.size(); ++j) {
      if (needs[j] == '1' || !is_differentiable_dtype(inputs[j]->dtype())) continue;
      const std::vector<bool>& d = deps[body.results[j].node];
      bool needed = d[n];
      for (size_t k = 0; k < n && !needed; ++k) needed = d[k] && needs[k] == '1';
      if (needed) {
        needs[j] = '1';
        changed = true;
      }
    }
  }
  return needs;
}

// ---- If and Case

// The backward branches for one set of output gradients.
struct BranchBackward {
  std::vector<int> grad_outputs;  // node outputs whose gradients the backward op takes
  std::vector<int> read_outputs;  // node outputs (intermediates) it reads
  std::vector<std::shared_ptr<FunctionGraph>> functions;
  std::vector<std::string> names;
};

struct BranchGradient final : Backward {
  const OpDef* op = nullptr;
  bool is_case = false;
  std::vector<std::shared_ptr<const FunctionGraph>> branches;
  std::vector<std::shared_ptr<GradientPair>> pairs;
  size_t num_results = 0;
  std::vector<size_t> offsets;           // per branch: its first intermediate among the node's outputs
  std::vector<TensorSpec> output_specs;  // per node output (results joined over the branches)
  std::vector<bool> output_differentiable;
  std::vector<TensorSpec> input_specs;      // the op's inputs after the predicate (index)
  std::vector<int> edge_inputs;             // among those inputs
  std::vector<int64_t> edge_variables;      // the union over the branches
  std::vector<std::vector<int>> pair_edge;  // per branch and edge: the pair's edge, or -1
  std::vector<std::shared_ptr<FunctionGraph>> forward_functions;
  std::vector<std::string> forward_names;

  std::mutex mu;
  std::map<OutputMask, std::shared_ptr<const BranchBackward>> by_mask;

  AttrList branch_attrs(const std::vector<std::string>& names) const {
    AttrList attrs;
    if (is_case) {
      std::string joined;
      for (size_t b = 0; b < names.size(); ++b) joined += (b ? "," : "") + names[b];
      attrs.push_back(joined);
    } else {
      attrs.push_back(names[0]);
      attrs.push_back(names[1]);
    }
    return attrs;
  }

  StatusOr<std::shared_ptr<const BranchBackward>> backward_functions(const OutputMask& mask);
  void backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                SmallVector<TensorRef, 4>& edge_grads) override;
  std::string describe() const override {
    std::string text = "the gradient of " + op->name + " over branches";
    for (const auto& fn : branches) text += " '" + fn->name + "'";
    return text;
  }
};

StatusOr<std::shared_ptr<BranchGradient>> build_branch_gradient(
    const OpDef& op, std::vector<std::shared_ptr<const FunctionGraph>> branches, const std::string& needs,
    std::span<TensorImpl* const> inputs) {
  auto g = std::make_shared<BranchGradient>();
  g->op = &op;
  g->is_case = is_case_op(op);
  g->branches = std::move(branches);
  for (const auto& fn : g->branches) {
    if (static_cast<size_t>(fn->num_call_args()) != inputs.size())
      return invalid_argument(op.name, ": branch '", fn->name, "' takes ", fn->num_call_args(),
                              " argument(s), the op passes ", inputs.size());
    auto pair = build_pair(fn, needs);
    if (!pair.ok()) return pair.status();
    g->pairs.push_back(std::move(pair).value());
  }
  for (TensorImpl* t : inputs) g->input_specs.push_back(TensorSpec{t->dtype(), t->shape()});
  const GradientPair& first = *g->pairs[0];
  g->num_results = first.num_results;
  g->edge_inputs = first.edge_inputs;
  for (size_t j = 0; j < g->num_results; ++j) {
    TensorSpec spec = spec_of(*first.forward, first.forward->results[j]);
    for (const auto& pair : g->pairs) {
      if (pair->num_results != g->num_results)
        return invalid_argument(op.name, ": the branches return different numbers of values");
      spec.shape = join_shapes(spec.shape, spec_of(*pair->forward, pair->forward->results[j]).shape);
    }
    g->output_specs.push_back(spec);
    g->output_differentiable.push_back(first.output_differentiable[j]);
  }
  for (const auto& pair : g->pairs) {
    g->offsets.push_back(g->output_specs.size());
    for (size_t p = 0; p < pair->intermediates.tensors.size(); ++p) {
      g->output_specs.push_back(spec_of(*pair->forward, pair->forward->results[pair->num_results + p]));
      g->output_differentiable.push_back(pair->output_differentiable[pair->num_results + p]);
    }
    for (int64_t id : pair->edge_variables)
      if (std::find(g->edge_variables.begin(), g->edge_variables.end(), id) == g->edge_variables.end())
        g->edge_variables.push_back(id);
  }
  const size_t num_input_edges = g->edge_inputs.size();
  for (const auto& pair : g->pairs) {
    std::vector<int> edges;
    for (size_t e = 0; e < num_input_edges; ++e) edges.push_back(static_cast<int>(e));
    for (int64_t id : g->edge_variables) {
      auto it = std::find(pair->edge_variables.begin(), pair->edge_variables.end(), id);
      edges.push_back(it == pair->edge_variables.end()
                          ? -1
                          : static_cast<int>(num_input_edges + (it - pair->edge_variables.begin())));
    }
    g->pair_edge.push_back(std::move(edges));
  }
  for (size_t b = 0; b < g->pairs.size(); ++b) {
    BranchGradient* self = g.get();
    auto fn = trace_function(g->branches[b]->name + "_cf_forward", g->input_specs,
                             [self, b](const std::vector<TensorRef>& args) {
                               const GradientPair& pair = *self->pairs[b];
                               std::vector<TensorRef> outs = call_function(pair.forward_name, args);
                               std::vector<TensorRef> results(outs.begin(), outs.begin() + self->num_results);
                               for (size_t c = 0; c < self->pairs.size(); ++c) {
                                 const GradientPair& other = *self->pairs[c];
                                 for (size_t p = 0; p < other.intermediates.tensors.size(); ++p) {
                                   if (c == b) {
                                     results.push_back(outs[self->num_results + p]);
                                   } else {
                                     results.push_back(zeros_of(self->output_specs[self->offsets[c] + p]));
                                   }
                                 }
                               }
                               return results;
                             });
    if (!fn.ok()) return fn.status();
    g->forward_names.push_back(FunctionLibrary::global().add(*fn));
    g->forward_functions.push_back(std::move(fn).value());
  }
  return g;
}

StatusOr<std::shared_ptr<const BranchBackward>> BranchGradient::backward_functions(const OutputMask& mask) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_mask.find(mask);
  if (it != by_mask.end()) return it->second;
  auto out = std::make_shared<BranchBackward>();
  // Per branch: the backward function and the outputs (pair order) it takes.
  std::vector<std::shared_ptr<const BackwardFunction>> functions(pairs.size());
  std::vector<OutputMask> masks(pairs.size());
  std::vector<bool> grad_needed(output_specs.size(), false), read_needed(output_specs.size(), false);
  auto node_output = [&](size_t b, size_t j) { return j < num_results ? j : offsets[b] + (j - num_results); };
  for (size_t b = 0; b < pairs.size(); ++b) {
    GradientPair& pair = *pairs[b];
    OutputMask m(pair.output_differentiable.size(), false);
    bool any = false;
    for (size_t j = 0; j < m.size(); ++j) {
      m[j] = mask[node_output(b, j)];
      any |= m[j];
    }
    if (!any) continue;
    functions[b] = pair.backward_or_fallback(m);
    if (functions[b] == nullptr)
      return make_error(Code::kInternal, op->name, ": no gradient function for branch '", branches[b]->name,
                        "'");
    masks[b] = m;
    for (size_t j = 0; j < m.size(); ++j)
      if (m[j]) grad_needed[node_output(b, j)] = true;
    for (int p : functions[b]->reads) read_needed[offsets[b] + p] = true;
  }
  for (size_t j = 0; j < output_specs.size(); ++j) {
    if (grad_needed[j]) out->grad_outputs.push_back(static_cast<int>(j));
    if (read_needed[j]) out->read_outputs.push_back(static_cast<int>(j));
  }
  std::vector<TensorSpec> specs;
  for (int j : out->grad_outputs) specs.push_back(output_specs[j]);
  for (int j : out->read_outputs) specs.push_back(output_specs[j]);
  for (int k : edge_inputs) specs.push_back(input_specs[k]);
  for (size_t b = 0; b < pairs.size(); ++b) {
    auto fn =
        trace_function(branches[b]->name + "_cf_backward", specs, [&, b](const std::vector<TensorRef>& args) {
          const size_t num_grads = out->grad_outputs.size(), num_reads = out->read_outputs.size();
          auto grad_arg = [&](size_t node_j) {
            auto at = std::find(out->grad_outputs.begin(), out->grad_outputs.end(), static_cast<int>(node_j));
            return args[at - out->grad_outputs.begin()];
          };
          auto read_arg = [&](size_t node_j) {
            auto at = std::find(out->read_outputs.begin(), out->read_outputs.end(), static_cast<int>(node_j));
            return args[num_grads + (at - out->read_outputs.begin())];
          };
          std::vector<TensorRef> outs;
          const BackwardFunction* f = functions[b].get();
          if (f != nullptr) {
            std::vector<TensorRef> call_args;
            for (size_t j = 0; j < masks[b].size(); ++j)
              if (masks[b][j]) call_args.push_back(grad_arg(node_output(b, j)));
            for (int p : f->reads) call_args.push_back(read_arg(offsets[b] + p));
            outs = call_function(f->name, call_args);
          }
          std::vector<TensorRef> results;
          for (size_t e = 0; e < pair_edge[b].size(); ++e) {
            int k = pair_edge[b][e];
            int r = f != nullptr && k >= 0 ? f->edge_result[k] : -1;
            if (r >= 0) {
              results.push_back(outs[r]);
            } else if (e < edge_inputs.size()) {
              results.push_back(gradient::zeros_like(GradTensor(args[num_grads + num_reads + e])).release());
            } else {
              results.push_back(variable_zeros(edge_variables[e - edge_inputs.size()], op->name));
            }
          }
          return results;
        });
    if (!fn.ok()) return fn.status();
    out->names.push_back(FunctionLibrary::global().add(*fn));
    out->functions.push_back(std::move(fn).value());
  }
  by_mask.emplace(mask, out);
  return std::shared_ptr<const BranchBackward>(out);
}

void BranchGradient::backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                              SmallVector<TensorRef, 4>& edge_grads) {
  OutputMask mask(output_differentiable.size(), false);
  bool any = false;
  for (size_t j = 0; j < mask.size() && j < output_grads.size(); ++j) {
    mask[j] = output_differentiable[j] && output_grads[j] != nullptr;
    any |= mask[j];
  }
  if (!any) return;
  auto functions = backward_functions(mask);
  if (!functions.ok()) throw StatusError(functions.status());
  const BranchBackward& bw = **functions;
  std::vector<TensorRef> args;
  args.push_back(node.inputs[0]);  // the predicate (branch index)
  for (int j : bw.grad_outputs) {
    TensorRef g(output_grads[j]);
    if (!g) g = gradient::zeros_like(GradTensor(node.outputs[j])).release();
    args.push_back(std::move(g));
  }
  // Linked to this node, so an outer tape sees the backward op depend on them (higher order).
  for (int j : bw.read_outputs) args.push_back(relinked_output(node, j));
  for (size_t k = 1; k < node.inputs.size(); ++k) args.push_back(node.inputs[k]);
  std::vector<TensorRef> outs = run_op(*op, args, branch_attrs(bw.names));
  for (size_t e = 0; e < outs.size() && e < edge_grads.size(); ++e) edge_grads[e] = std::move(outs[e]);
}

Cache<BranchGradient>& branch_cache() {
  static auto& cache = *new Cache<BranchGradient>();
  return cache;
}

// The branch gradient of an If or Case over `inputs`; null (and `mask` 0) where no recording tape
// watches an argument or a variable the branches read, or a branch is not a library function.
StatusOr<std::shared_ptr<BranchGradient>> branch_gradient_for(
    const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs, uint32_t& mask,
    std::unordered_map<int64_t, uint32_t>& variable_masks) {
  std::vector<std::string> names;
  if (is_case_op(op)) {
    names = split_branch_names(std::get<std::string>(attrs[0]));
  } else {
    names = {std::get<std::string>(attrs[0]), std::get<std::string>(attrs[1])};
  }
  std::vector<std::shared_ptr<const FunctionGraph>> fns;
  for (const std::string& name : names) {
    auto fn = FunctionLibrary::global().find(name);
    if (fn == nullptr || inputs.empty()) return std::shared_ptr<BranchGradient>();
    fns.push_back(std::move(fn));
  }
  std::span<TensorImpl* const> args = inputs.subspan(1);
  std::string needs = needs_of(args, active_mask(), mask);
  std::vector<int64_t> variables;
  for (const auto& fn : fns) collect_variables(*fn, variables, 0);
  variable_masks = masks_of_variables(variables, mask);
  if (mask == 0) return std::shared_ptr<BranchGradient>();

  std::string key = op.name + "|" + needs;
  for (const std::string& name : names) key += "|" + name;
  for (TensorImpl* t : args) key += "|" + std::string(dtype_name(t->dtype())) + t->shape().to_string();
  std::shared_ptr<BranchGradient> grad = branch_cache().find(key);
  if (grad != nullptr && grad->branches != fns) grad = nullptr;
  if (grad == nullptr) {
    auto built = build_branch_gradient(op, fns, needs, args);
    if (!built.ok()) return built.status();
    grad = std::move(built).value();
    branch_cache().put(key, grad);
  }
  return grad;
}

// Records the If or Case over `grad`'s forward branches whose outputs (the results, then every branch's
// intermediates) are `all`: one node whose backward is again such an op; `all` is linked to it.
void record_branches(const std::shared_ptr<BranchGradient>& grad, std::span<TensorImpl* const> inputs,
                     uint32_t mask, const std::unordered_map<int64_t, uint32_t>& variable_masks,
                     OutputList& all) {
  const uint32_t active = active_mask();
  std::span<TensorImpl* const> args = inputs.subspan(1);
  auto* node = new TapeNode();
  node->backward = grad;
  node->mask = mask;
  node->serial = next_serial();
  node->inputs.push_back(TensorRef(inputs[0]));
  for (int k : grad->edge_inputs) {
    node->inputs.push_back(TensorRef(args[k]));
    node->edges.push_back(input_edge(args[k], active));
    add_edge_spec(node, args[k]);
  }
  for (int64_t id : grad->edge_variables) {
    auto it = variable_masks.find(id);
    node->edges.push_back(variable_edge(id, it != variable_masks.end() ? it->second : 0));
  }
  link_outputs(node, {all.data(), all.size()});
}

Status execute_branches(const OpDef& op, std::span<TensorImpl* const> inputs,
                        std::span<const AttrValue> attrs, OutputList& outputs) {
  uint32_t mask = 0;
  std::unordered_map<int64_t, uint32_t> variable_masks;
  auto grad = branch_gradient_for(op, inputs, attrs, mask, variable_masks);
  if (!grad.ok()) return grad.status();
  if (*grad == nullptr) return execute_op_unrecorded(op, inputs, attrs, outputs);
  AttrList forward_attrs = (*grad)->branch_attrs((*grad)->forward_names);
  OutputList all;
  EMBER_RETURN_IF_ERROR(execute_op_unrecorded(op, inputs, {forward_attrs.data(), forward_attrs.size()}, all));
  record_branches(*grad, inputs, mask, variable_masks, all);
  outputs.clear();
  for (size_t i = 0; i < (*grad)->num_results; ++i) outputs.push_back(std::move(all[i]));
  return Status::OK();
}

// ---- While

// The backward loop for one set of output gradients.
struct LoopBackward {
  std::shared_ptr<const BackwardFunction> function;
  OutputMask mask;               // over F''s outputs: loop results, then intermediates
  std::vector<int> reads;        // intermediates the backward function reads
  std::vector<int> stack_grads;  // pair outputs (all stacked) whose stacks' gradients it takes
  std::shared_ptr<FunctionGraph> cond, body;
  std::string cond_name, body_name;
};

struct LoopGradient final : Backward {
  const OpDef* op = nullptr;
  std::shared_ptr<const FunctionGraph> cond, body;
  std::shared_ptr<GradientPair> pair;
  size_t num_vars = 0;
  // A loop that already accumulates (the forward loop of a gradient, differentiated again) returns
  // `num_accumulated` stacks and its trip count; the gradient's forward loop adds the intermediates'
  // stacks after those: `num_stacked` in all, the body pair's outputs after the loop variables.
  size_t num_accumulated = 0, num_stacked = 0;
  bool returns_trip_count = false;
  std::vector<TensorSpec> var_specs;    // the loop variables (as the body takes them)
  std::vector<TensorSpec> stack_specs;  // per stacked output: [iterations] + its per-iteration spec
  int64_t parallel_iterations = 10;
  // An intermediate that is a loop variable the body passes through unchanged (a lifted capture: the
  // sequence an RNN indexes, say) is the loop's input in every iteration: the backward loop reads that
  // input instead of a stack, which would hold it once per iteration.
  std::vector<int> invariant_input;             // per intermediate: the loop input it equals, or -1
  std::vector<int> stack_of;                    // per pair output after the loop variables: its stack, or -1
  std::shared_ptr<FunctionGraph> forward_body;  // F' less the invariant intermediates (null: F' itself)
  std::string forward_body_name;

  std::mutex mu;
  std::map<OutputMask, std::shared_ptr<const LoopBackward>> by_mask;

  StatusOr<std::shared_ptr<const LoopBackward>> backward_loop(const OutputMask& mask);
  void backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                SmallVector<TensorRef, 4>& edge_grads) override;
  std::string describe() const override {
    return "the gradient of " + op->name + " over body '" + body->name + "'";
  }
};

Shape stacked(const Shape& element) {
  if (!element.rank_known()) return Shape::unknown_rank();
  std::vector<int64_t> dims = {kUnknownDim};
  for (int i = 0; i < element.rank(); ++i) dims.push_back(element.dim(i));
  return Shape(std::span<const int64_t>(dims));
}

StatusOr<std::shared_ptr<const LoopBackward>> LoopGradient::backward_loop(const OutputMask& node_mask) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_mask.find(node_mask);
  if (it != by_mask.end()) return it->second;
  auto out = std::make_shared<LoopBackward>();
  // Every iteration but the last hands gradients to the loop variables that need them (Note [Loop variables
  // that need gradients]), so the body's backward takes those results; intermediates only where their
  // stacks got gradients.
  OutputMask m(pair->output_differentiable.size(), false);
  for (size_t j = 0; j < m.size(); ++j)
    m[j] = pair->output_differentiable[j] && (j < num_vars ? pair->needs[j] == '1' : node_mask[j]);
  out->function = pair->backward_or_fallback(m);
  if (out->function == nullptr)
    return make_error(Code::kInternal, op->name, ": no gradient function for the body '", body->name, "'");
  out->mask = m;
  out->reads = out->function->reads;
  for (size_t j = num_vars; j < m.size(); ++j)
    if (m[j]) out->stack_grads.push_back(static_cast<int>(j));
  // Backward loop variables: counter, the loop variables' gradients (one per input edge), the variables'
  // summed gradients, the stacks read, the stacks' gradients.
  const std::vector<int>& edge_inputs = pair->edge_inputs;
  const size_t d = edge_inputs.size(), v = pair->edge_variables.size();
  std::vector<TensorSpec> specs = {TensorSpec{DType::kInt32, Shape()}};
  for (int k : edge_inputs) specs.push_back(var_specs[k]);
  for (int64_t id : pair->edge_variables) {
    auto resource = ResourceManager::global().find(id, op->name.c_str());
    if (!resource.ok()) return resource.status();
    specs.push_back(TensorSpec{(*resource)->dtype(), (*resource)->shape()});
  }
  for (int p : out->reads) {
    int k = invariant_input[p];
    specs.push_back(k >= 0 ? var_specs[k] : stack_specs[stack_of[num_accumulated + p]]);
  }
  // An invariant intermediate has no stack: it gets a gradient only where the backward function is the
  // all-outputs fallback, and then zeros shaped like the loop input it equals.
  auto invariant_of = [&](int j) {
    return j >= static_cast<int>(num_vars + num_accumulated) ? invariant_input[j - num_vars - num_accumulated]
                                                             : -1;
  };
  for (int j : out->stack_grads) {
    int k = invariant_of(j);
    specs.push_back(k >= 0 ? var_specs[k] : stack_specs[stack_of[j - num_vars]]);
  }
  auto cond_fn = trace_function(body->name + "_grad_cond", specs, [](const std::vector<TensorRef>& args) {
    return std::vector<TensorRef>{
        gradient::compare("Greater", GradTensor(args[0]), gradient::scalar(0, DType::kInt32)).release()};
  });
  if (!cond_fn.ok()) return cond_fn.status();
  const LoopBackward* lb = out.get();
  auto body_fn = trace_function(body->name + "_grad_body", specs, [&](const std::vector<TensorRef>& args) {
    GradTensor i = GradTensor(args[0]) - gradient::scalar(1, DType::kInt32);
    // Note [Reading a stack in the backward loop]: iteration i's value is stack[i], a StridedSlice that
    // shrinks the leading axis. Its rows are contiguous, so the kernel returns a view of the stack (Note
    // [Views] in ops/array.cc): no copy per value and iteration. The view shares the stack's buffer, so no
    // op writes over it in place (the executor reuses a dying input's buffer only when nothing else holds
    // that buffer) and a second backward pass (a persistent tape) reads the stacks intact.
    const GradTensor one = gradient::int_vector(std::vector<int64_t>{1});
    const GradTensor begin = gradient::reshape_to(i, one);
    const GradTensor end = gradient::reshape_to(i + gradient::scalar(1, DType::kInt32), one);
    auto row = [&](const TensorRef& stack) {
      AttrList slice_attrs;
      for (int64_t mask : {0, 0, 0, 0, 1})
        slice_attrs.push_back(mask);  // begin, end, ellipsis, new axis, shrink
      return emit1("StridedSlice", {GradTensor(stack), begin, end, one}, std::move(slice_attrs)).release();
    };
    const size_t reads_at = 1 + d + v, grads_at = reads_at + lb->reads.size();
    std::vector<TensorRef> call_args;
    // Result j of the body is loop variable j: its gradient is that variable's carried gradient.
    for (size_t j = 0; j < num_vars; ++j) {
      if (!lb->mask[j]) continue;
      auto at = std::find(edge_inputs.begin(), edge_inputs.end(), static_cast<int>(j));
      if (at == edge_inputs.end())
        throw StatusError(make_error(Code::kInternal, op->name, ": loop variable ", j, " has no gradient"));
      call_args.push_back(args[1 + (at - edge_inputs.begin())]);
    }
    for (size_t q = 0; q < lb->stack_grads.size(); ++q) {
      if (invariant_of(lb->stack_grads[q]) >= 0) {
        call_args.push_back(args[grads_at + q]);
      } else {
        call_args.push_back(row(args[grads_at + q]));
      }
    }
    for (size_t q = 0; q < lb->reads.size(); ++q) {
      if (invariant_input[lb->reads[q]] >= 0) {
        call_args.push_back(args[reads_at + q]);
      } else {
        call_args.push_back(row(args[reads_at + q]));
      }
    }
    std::vector<TensorRef> grads = call_function(lb->function->name, call_args);
    std::vector<TensorRef> results = {i.release()};
    for (size_t e = 0; e < d; ++e) {
      int r = lb->function->edge_result[e];
      results.push_back(r >= 0 ? grads[r] : gradient::zeros_like(GradTensor(args[1 + e])).release());
    }
    for (size_t e = 0; e < v; ++e) {
      int r = lb->function->edge_result[d + e];
      results.push_back(r >= 0 ? (GradTensor(args[1 + d + e]) + GradTensor(grads[r])).release()
                               : args[1 + d + e]);
    }
    for (size_t q = reads_at; q < args.size(); ++q) results.push_back(args[q]);
    return results;
  });
  if (!body_fn.ok()) return body_fn.status();
  out->cond_name = FunctionLibrary::global().add(*cond_fn);
  out->body_name = FunctionLibrary::global().add(*body_fn);
  out->cond = std::move(cond_fn).value();
  out->body = std::move(body_fn).value();
  by_mask.emplace(node_mask, out);
  return std::shared_ptr<const LoopBackward>(out);
}

void LoopGradient::backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                            SmallVector<TensorRef, 4>& edge_grads) {
  // Node outputs: loop variables, stacks, trip count. The mask is over the pair's outputs.
  auto node_output = [&](size_t j) -> int {
    if (j < num_vars) return static_cast<int>(j);
    int s = stack_of[j - num_vars];
    return s < 0 ? -1 : static_cast<int>(num_vars + s);
  };
  OutputMask mask(pair->output_differentiable.size(), false);
  bool any = false;
  for (size_t j = 0; j < mask.size(); ++j) {
    int o = node_output(j);
    mask[j] = o >= 0 && static_cast<size_t>(o) < output_grads.size() && pair->output_differentiable[j] &&
              output_grads[o] != nullptr;
    any |= mask[j];
  }
  if (!any) return;
  auto loop = backward_loop(mask);
  if (!loop.ok()) throw StatusError(loop.status());
  const LoopBackward& lb = **loop;
  const std::vector<int>& edge_inputs = pair->edge_inputs;
  std::vector<TensorRef> inputs = {TensorRef(node.outputs[num_vars + num_stacked])};
  for (int k : edge_inputs) {
    TensorRef g(output_grads[k]);
    if (!g) g = gradient::zeros_like(GradTensor(node.outputs[k])).release();
    inputs.push_back(std::move(g));
  }
  for (int64_t id : pair->edge_variables) inputs.push_back(variable_zeros(id, op->name));
  for (int p : lb.reads) {
    int k = invariant_input[p];
    inputs.push_back(k >= 0 ? node.inputs[k]
                            : relinked_output(node, node_output(num_vars + num_accumulated + p)));
  }
  for (int j : lb.stack_grads) {
    int o = node_output(j);
    if (o < 0) {
      inputs.push_back(
          gradient::zeros_like(GradTensor(node.inputs[invariant_input[j - num_vars - num_accumulated]]))
              .release());
      continue;
    }
    TensorRef g(output_grads[o]);
    if (!g) g = gradient::zeros_like(GradTensor(node.outputs[o])).release();
    inputs.push_back(std::move(g));
  }
  AttrList attrs;
  attrs.push_back(lb.cond_name);
  attrs.push_back(lb.body_name);
  attrs.push_back(parallel_iterations);
  attrs.push_back(int64_t{-1});
  std::vector<TensorRef> outs = run_op(*op, inputs, std::move(attrs));
  const size_t d = edge_inputs.size();
  for (size_t e = 0; e < d + pair->edge_variables.size() && e < edge_grads.size(); ++e)
    edge_grads[e] = std::move(outs[1 + e]);
}

// Note [Variables read in a differentiated loop]
// A body that reads a variable (a weight matrix captured by an RNN cell) reads the same value in every
// iteration when nothing in the loop writes that variable. Left in the body, the read is an intermediate
// the backward function needs (MatMul's gradient reads both operands), so the forward loop would stack one
// copy of the whole matrix per iteration and the backward loop would copy it back out each iteration. The
// read therefore moves in front of the loop: the variable is read once where the While runs (the tape
// records that read, so the variable's gradient arrives through it), and the value enters the loop as a
// new loop variable the body passes through; Note [Loop variables that need gradients] and the invariant
// intermediates then read it from the loop's input, never stacked. Only loops whose condition and body
// (nested calls included) write none of the hoisted variables qualify: a variable changes only through a
// kWritesResource op, and a read yields the value at that moment (an assignment replaces the variable's
// buffer), so reading before the loop sees the value every iteration would have read. Bodies with custom
// gradient regions keep their reads (a region's replay refers to its nodes).
struct HoistedReads {
  std::weak_ptr<const FunctionGraph> cond_source, body_source;
  std::shared_ptr<const FunctionGraph> cond, body;
  std::string cond_name, body_name;
  std::vector<AttrList> reads;  // per new loop variable: the ReadVariableOp attributes that give its value
};

// Adds to `written` the variables that kWritesResource ops of `fn` and its callees write; false when a
// callee is missing (then nothing can be assumed).
bool collect_written(const FunctionGraph& fn, std::vector<int64_t>& written, int depth) {
  if (depth > 64) return false;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op->has_flag(kWritesResource)) {
      if (n.attrs.empty() || !std::holds_alternative<int64_t>(n.attrs[0])) return false;
      written.push_back(std::get<int64_t>(n.attrs[0]));
    }
    for (const std::string& name : called_functions(*n.op, n.attrs)) {
      auto callee = FunctionLibrary::global().find(name);
      if (callee == nullptr || !collect_written(*callee, written, depth + 1)) return false;
    }
  }
  return true;
}

// The loop with its hoistable reads moved out (Note [Variables read in a differentiated loop]), or null
// when there are none.
StatusOr<std::shared_ptr<const HoistedReads>> hoist_reads(const std::shared_ptr<const FunctionGraph>& cond,
                                                          const std::shared_ptr<const FunctionGraph>& body,
                                                          size_t num_vars) {
  static std::mutex mu;
  static auto& cache = *new std::vector<std::shared_ptr<const HoistedReads>>();
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& h : cache)
      if (h->cond_source.lock() == cond && h->body_source.lock() == body) return h;
  }
  if (!body->custom_gradient_regions.empty() || body->results.size() != num_vars ||
      static_cast<size_t>(body->num_call_args()) != num_vars ||
      static_cast<size_t>(cond->num_call_args()) != num_vars)
    return std::shared_ptr<const HoistedReads>();
  bool reads = false;
  for (int32_t i = 0; i < body->graph.num_nodes() && !reads; ++i)
    reads = body->graph.node(i).op->name == "ReadVariableOp";
  std::vector<int64_t> written;
  if (!reads || !collect_written(*cond, written, 0) || !collect_written(*body, written, 0))
    return std::shared_ptr<const HoistedReads>();
  static const OpDef& placeholder = op_def("Placeholder");
  auto new_body = std::make_shared<FunctionGraph>(*body);
  auto out = std::make_shared<HoistedReads>();
  for (int32_t i = 0; i < new_body->graph.num_nodes(); ++i) {
    Node& n = new_body->graph.mutable_node(i);
    if (n.op->name != "ReadVariableOp" || n.outputs.size() != 1 || n.attrs.empty() ||
        !std::holds_alternative<int64_t>(n.attrs[0]))
      continue;
    const int64_t id = std::get<int64_t>(n.attrs[0]);
    if (std::find(written.begin(), written.end(), id) != written.end()) continue;
    out->reads.push_back(n.attrs);
    // The read becomes an argument in place: a node without inputs keeps the graph's topological order.
    n.op = &placeholder;
    n.inputs.clear();
    n.control_inputs.clear();
    n.attrs = placeholder_attrs(n.outputs[0].dtype, n.outputs[0].shape);
    new_body->args.insert(new_body->args.begin() + new_body->num_call_args(), i);
    new_body->results.push_back(ValueRef{i, 0});
    std::erase(new_body->control_outputs, i);
  }
  if (out->reads.empty()) return std::shared_ptr<const HoistedReads>();
  new_body->name = body->name + "_reads_hoisted";
  auto new_cond = std::make_shared<FunctionGraph>(*cond);
  new_cond->name = cond->name + "_reads_hoisted";
  for (size_t k = num_vars; k < new_body->args.size() - new_body->captured_values.size(); ++k) {
    const TensorSpec& spec = new_body->graph.node(new_body->args[k]).outputs[0];
    SmallVector<TensorSpec, 2> specs;
    specs.push_back(spec);
    int32_t node = new_cond->graph.add_node(placeholder, {}, placeholder_attrs(spec.dtype, spec.shape),
                                            std::move(specs), {}, "hoisted_read");
    new_cond->args.insert(new_cond->args.begin() + new_cond->num_call_args(), node);
  }
  out->cond_source = cond;
  out->body_source = body;
  out->cond_name = FunctionLibrary::global().add(new_cond);
  out->body_name = FunctionLibrary::global().add(new_body);
  out->cond = std::move(new_cond);
  out->body = std::move(new_body);
  std::lock_guard<std::mutex> lock(mu);
  std::erase_if(cache, [](const auto& h) { return h->cond_source.expired() || h->body_source.expired(); });
  cache.push_back(out);
  return std::shared_ptr<const HoistedReads>(out);
}

Cache<LoopGradient>& loop_cache() {
  static auto& cache = *new Cache<LoopGradient>();
  return cache;
}

// A While node a trace built while nothing recorded, for tf.gradients to rewrite in place (rather than run
// the loop a second time, which would repeat its effects).
struct TracedLoop {
  FunctionGraph* caller = nullptr;
  int32_t node = -1;
};

// Runs the loop's forward form (attrs `forward_attrs`) into `all` (the loop variables, the stacks, the trip
// count): as a new op, or, for a traced loop, by rewriting its node to that form and reading its outputs.
Status run_forward_loop(const OpDef& op, std::span<TensorImpl* const> inputs, const AttrList& forward_attrs,
                        const LoopGradient& grad, const TracedLoop* traced, OutputList& all) {
  if (traced == nullptr)
    return execute_op_unrecorded(op, inputs, {forward_attrs.data(), forward_attrs.size()}, all);
  FunctionGraph& caller = *traced->caller;
  if (grad.returns_trip_count) {
    // A loop rewritten before (by an earlier tf.gradients) keeps its stacks as the first of the new ones,
    // but its trip count moves behind the new stacks: the nodes that read it (the earlier gradient's
    // backward loop) follow it.
    const ValueRef old_trip{traced->node, static_cast<int32_t>(grad.num_vars + grad.num_accumulated)};
    const ValueRef new_trip{traced->node, static_cast<int32_t>(grad.num_vars + grad.num_stacked)};
    for (int32_t i = traced->node + 1; i < caller.graph.num_nodes(); ++i)
      for (ValueRef& v : caller.graph.mutable_node(i).inputs)
        if (v == old_trip) v = new_trip;
    for (ValueRef& v : caller.results)
      if (v == old_trip) v = new_trip;
  }
  Node& rewritten = caller.graph.mutable_node(traced->node);
  rewritten.attrs.resize(forward_attrs.size());
  for (size_t k = 0; k < forward_attrs.size(); ++k) rewritten.attrs[k] = forward_attrs[k];
  rewritten.outputs.resize(grad.num_vars);
  for (const TensorSpec& spec : grad.stack_specs) rewritten.outputs.push_back(spec);
  rewritten.outputs.push_back(TensorSpec{DType::kInt32, Shape()});
  caller.callees.push_back(grad.forward_body != nullptr ? grad.forward_body : grad.pair->forward);
  all.clear();
  for (int32_t o = 0; o < static_cast<int32_t>(rewritten.outputs.size()); ++o)
    all.push_back(TensorImpl::symbolic(rewritten.outputs[o].dtype, rewritten.outputs[o].shape, &caller,
                                       traced->node, o));
  return Status::OK();
}

Status execute_loop(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                    OutputList& outputs, const TracedLoop* traced = nullptr) {
  // Where nothing needs the loop's gradient it runs as it is; a traced loop already stands in the trace.
  auto unrecorded = [&]() -> Status {
    if (traced == nullptr) return execute_op_unrecorded(op, inputs, attrs, outputs);
    outputs.clear();
    const Node& n = traced->caller->graph.node(traced->node);
    for (int32_t o = 0; o < static_cast<int32_t>(n.outputs.size()); ++o)
      outputs.push_back(
          TensorImpl::symbolic(n.outputs[o].dtype, n.outputs[o].shape, traced->caller, traced->node, o));
    return Status::OK();
  };
  if (attrs.size() < 4 && traced == nullptr) return unrecorded();
  const int64_t accumulate = attrs.size() < 4 ? -1 : std::get<int64_t>(attrs[3]);
  const std::string& cond_name = std::get<std::string>(attrs[0]);
  const std::string& body_name = std::get<std::string>(attrs[1]);
  auto cond = FunctionLibrary::global().find(cond_name);
  auto body = FunctionLibrary::global().find(body_name);
  if (cond == nullptr || body == nullptr) return unrecorded();
  const uint32_t active = active_mask();
  uint32_t mask = 0;
  const std::string watched = needs_of(inputs, active, mask);
  std::vector<int64_t> variables;
  collect_variables(*cond, variables, 0);
  collect_variables(*body, variables, 0);
  std::unordered_map<int64_t, uint32_t> variable_masks = masks_of_variables(variables, mask);
  if (mask == 0) return unrecorded();
  if (static_cast<size_t>(body->num_call_args()) != inputs.size())
    return unrecorded();  // the kernel reports the mismatch

  // A traced loop keeps its reads: hoisting them would give its node other inputs.
  if (accumulate < 0 && traced == nullptr) {
    auto hoisted = hoist_reads(cond, body, inputs.size());
    if (!hoisted.ok()) return hoisted.status();
    if (const HoistedReads* h = hoisted->get()) {
      // The reads run here, recorded (their gradients reach the variables), and the loop runs the bodies
      // that take them as loop variables; their final values are not outputs of the user's op.
      std::vector<TensorRef> reads;
      for (const AttrList& read_attrs : h->reads)
        reads.push_back(emit1("ReadVariableOp", {}, read_attrs).release());
      std::vector<TensorImpl*> all_inputs(inputs.begin(), inputs.end());
      for (const TensorRef& r : reads) all_inputs.push_back(r.get());
      std::vector<AttrValue> loop_attrs(attrs.begin(), attrs.end());
      loop_attrs[0] = h->cond_name;
      loop_attrs[1] = h->body_name;
      OutputList all;
      EMBER_RETURN_IF_ERROR(execute_loop(op, {all_inputs.data(), all_inputs.size()},
                                         {loop_attrs.data(), loop_attrs.size()}, all));
      outputs.clear();
      for (size_t i = 0; i < inputs.size() && i < all.size(); ++i) outputs.push_back(std::move(all[i]));
      return Status::OK();
    }
  }

  // A loop variable's gradient reaches others through the iterations: the body's pair takes gradients for
  // the closure of the watched ones (Note [Loop variables that need gradients]).
  const std::string needs = loop_needs(*body, watched, variable_masks, inputs);
  std::string key =
      op.name + "|" + cond_name + "|" + body_name + "|" + std::to_string(accumulate) + "|" + needs;
  for (TensorImpl* t : inputs) key += "|" + std::string(dtype_name(t->dtype())) + t->shape().to_string();
  std::shared_ptr<LoopGradient> grad = loop_cache().find(key);
  if (grad != nullptr && (grad->body != body || grad->cond != cond)) grad = nullptr;
  if (grad == nullptr) {
    grad = std::make_shared<LoopGradient>();
    grad->op = &op;
    grad->cond = cond;
    grad->body = body;
    auto pair = build_pair(body, needs);
    if (!pair.ok()) return pair.status();
    grad->pair = std::move(pair).value();
    grad->num_vars = inputs.size();
    grad->returns_trip_count = accumulate >= 0;
    grad->num_accumulated = static_cast<size_t>(std::max<int64_t>(accumulate, 0));
    if (grad->pair->num_results != inputs.size() + grad->num_accumulated)
      return invalid_argument(op.name, ": the body '", body_name, "' returns ", grad->pair->num_results,
                              " value(s) for ", inputs.size(), " loop variable(s) and ",
                              grad->num_accumulated, " accumulated");
    for (size_t k = 0; k < inputs.size(); ++k) grad->var_specs.push_back(arg_spec(*body, k));
    const FunctionGraph& fwd = *grad->pair->forward;
    const size_t n = inputs.size(), num_intermediates = grad->pair->intermediates.tensors.size();
    for (size_t p = 0; p < num_intermediates; ++p) {
      int invariant = -1;
      for (size_t k = 0; k < n && invariant < 0; ++k) {
        ValueRef arg{fwd.args[k], 0};
        if (fwd.results[k] == arg && fwd.results[n + grad->num_accumulated + p] == arg)
          invariant = static_cast<int>(k);
      }
      grad->invariant_input.push_back(invariant);
    }
    std::vector<int> kept;  // F' outputs after the loop variables that the forward loop stacks
    for (size_t j = 0; j < grad->num_accumulated + num_intermediates; ++j) {
      bool invariant = j >= grad->num_accumulated && grad->invariant_input[j - grad->num_accumulated] >= 0;
      grad->stack_of.push_back(invariant ? -1 : static_cast<int>(kept.size()));
      if (invariant) continue;
      kept.push_back(static_cast<int>(j));
      TensorSpec spec = spec_of(fwd, fwd.results[n + j]);
      grad->stack_specs.push_back(TensorSpec{spec.dtype, stacked(spec.shape)});
    }
    grad->num_stacked = kept.size();
    if (kept.size() < grad->num_accumulated + num_intermediates) {
      const std::string& forward_name = grad->pair->forward_name;
      auto fn = trace_function(body->name + "_loop_forward", grad->var_specs,
                               [&](const std::vector<TensorRef>& args) {
                                 std::vector<TensorRef> outs = call_function(forward_name, args);
                                 std::vector<TensorRef> results(outs.begin(), outs.begin() + n);
                                 for (int j : kept) results.push_back(outs[n + j]);
                                 return results;
                               });
      if (!fn.ok()) return fn.status();
      grad->forward_body_name = FunctionLibrary::global().add(*fn);
      grad->forward_body = std::move(fn).value();
    } else {
      grad->forward_body_name = grad->pair->forward_name;
    }
    grad->parallel_iterations = std::get<int64_t>(attrs[2]);
    loop_cache().put(key, grad);
  }
  AttrList forward_attrs;
  forward_attrs.push_back(cond_name);
  forward_attrs.push_back(grad->forward_body_name);
  forward_attrs.push_back(grad->parallel_iterations);
  forward_attrs.push_back(static_cast<int64_t>(grad->num_stacked));
  OutputList all;
  EMBER_RETURN_IF_ERROR(run_forward_loop(op, inputs, forward_attrs, *grad, traced, all));
  auto* node = new TapeNode();
  node->backward = grad;
  node->mask = mask;
  node->serial = next_serial();
  for (TensorImpl* t : inputs) node->inputs.push_back(TensorRef(t));  // invariant intermediates
  for (int k : grad->pair->edge_inputs) {
    node->edges.push_back(input_edge(inputs[k], active));
    add_edge_spec(node, inputs[k]);
  }
  for (int64_t id : grad->pair->edge_variables) {
    auto it = variable_masks.find(id);
    node->edges.push_back(variable_edge(id, it != variable_masks.end() ? it->second : 0));
  }
  link_outputs(node, {all.data(), all.size()});
  outputs.clear();
  for (size_t i = 0; i < grad->num_vars + grad->num_accumulated; ++i) outputs.push_back(std::move(all[i]));
  if (grad->returns_trip_count) outputs.push_back(std::move(all[grad->num_vars + grad->num_stacked]));
  return Status::OK();
}

}  // namespace

// tf.gradients through an If or Case the trace built while nothing recorded: rewritten in place, like a
// call (Note [Differentiating a call already traced] in function_gradient.cc), to run the forward branches,
// whose outputs are the op's results followed by the intermediates; a rewritten op's results are a prefix
// of the outputs of the op rewritten again.
StatusOr<OutputList> record_traced_control_flow(FunctionGraph& caller, int32_t node,
                                                std::span<TensorImpl* const> inputs) {
  const Node& n = caller.graph.node(node);
  const OpDef& op = *n.op;
  if (is_while_op(op)) {
    const AttrList attrs = n.attrs;
    const TracedLoop traced{&caller, node};
    OutputList outputs;
    try {
      EMBER_RETURN_IF_ERROR(execute_loop(op, inputs, {attrs.data(), attrs.size()}, outputs, &traced));
    } catch (const StatusError& e) {
      return e.status();
    }
    return outputs;
  }
  auto symbolic_outputs = [&caller, node] {
    OutputList outs;
    const Node& current = caller.graph.node(node);
    for (int32_t o = 0; o < static_cast<int32_t>(current.outputs.size()); ++o)
      outs.push_back(
          TensorImpl::symbolic(current.outputs[o].dtype, current.outputs[o].shape, &caller, node, o));
    return outs;
  };
  const AttrList attrs = n.attrs;
  uint32_t mask = 0;
  std::unordered_map<int64_t, uint32_t> variable_masks;
  std::shared_ptr<BranchGradient> grad;
  try {
    auto found = branch_gradient_for(op, inputs, {attrs.data(), attrs.size()}, mask, variable_masks);
    if (!found.ok()) return found.status();
    grad = std::move(found).value();
  } catch (const StatusError& e) {
    return e.status();
  }
  if (grad == nullptr) return symbolic_outputs();
  Node& rewritten = caller.graph.mutable_node(node);
  AttrList forward_attrs = grad->branch_attrs(grad->forward_names);
  for (size_t k = 0; k < forward_attrs.size(); ++k) rewritten.attrs[k] = forward_attrs[k];
  for (size_t k = rewritten.outputs.size(); k < grad->output_specs.size(); ++k)
    rewritten.outputs.push_back(grad->output_specs[k]);
  for (const auto& fn : grad->forward_functions) caller.callees.push_back(fn);
  OutputList all = symbolic_outputs();
  record_branches(grad, inputs, mask, variable_masks, all);
  all.resize(grad->num_results);
  return all;
}

Status execute_control_flow(const OpDef& op, std::span<TensorImpl* const> inputs,
                            std::span<const AttrValue> attrs, OutputList& outputs) {
  try {
    if (is_while_op(op)) return execute_loop(op, inputs, attrs, outputs);
    if (is_case_op(op) || op.name == "If" || op.name == "StatelessIf")
      return execute_branches(op, inputs, attrs, outputs);
    return execute_op_unrecorded(op, inputs, attrs, outputs);
  } catch (const StatusError& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, op.name, ": out of memory building its gradient");
  }
}

}  // namespace ember::autodiff::internal

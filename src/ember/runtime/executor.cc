#include "ember/runtime/executor.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "ember/core/device.h"
#include "ember/core/float_env.h"
#include "ember/core/parallel.h"
#include "ember/graph/specialize.h"
#include "ember/kernels/fused_elementwise.h"
#include "ember/ops/execute.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"
#include "ember/ops/send_recv.h"
#include "ember/ops/shape_fns.h"
#include "ember/passes/optimizer.h"
#include "ember/runtime/fast_loop.h"
#include "ember/runtime/memory_plan.h"
#include "ember/runtime/parallel_loop.h"
#include "ember/runtime/partition.h"
#include "ember/runtime/profiler.h"

namespace ember {
namespace {

Status infer_call(const std::string& name, std::span<const TensorSpec> inputs,
                  SmallVector<TensorSpec, 2>& outputs) {
  auto fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return make_error(Code::kNotFound, "PartitionedCall: no function named '", name, "'");
  if (static_cast<int>(inputs.size()) != fn->num_call_args())
    return invalid_argument("PartitionedCall: function '", name, "' takes ", fn->num_call_args(),
                            " argument(s), got ", inputs.size());
  // The caller's graph is built (and the callee may be inlined into it) from these specs alone, so an
  // argument the callee was not traced for must be refused here, as ExecPlan::run refuses it eagerly.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& arg = fn->graph.node(fn->args[i]).outputs[0];
    const Shape& want = arg.shape;
    const Shape& got = inputs[i].shape;
    if (inputs[i].dtype != arg.dtype || !want.is_compatible_with(got))
      return invalid_argument("PartitionedCall: function '", name, "': argument ", i, " must be ",
                              dtype_name(arg.dtype), arg.shape.to_string(), ", got ",
                              dtype_name(inputs[i].dtype), got.to_string());
  }
  for (ValueRef r : fn->results) outputs.push_back(fn->graph.spec(r));
  return Status::OK();
}

// Plans of called functions, so a PartitionedCall does not recompute its callee's node order each run.
// Keyed by the callee, which its plan holds (so the key cannot be reused while the entry lives).
std::shared_ptr<const CompiledFunction> compiled_callee(std::shared_ptr<const FunctionGraph> fn) {
  static std::mutex mu;
  // Leaked on purpose: plans hold tensors (constants), which must not be freed after the thread-local
  // allocator caches are gone at exit.
  static auto& cache =
      *new std::unordered_map<const FunctionGraph*, std::shared_ptr<const CompiledFunction>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(fn.get());
  if (it != cache.end()) return it->second;
  // Dead callees go at once: their plans hold arenas and constants. A callee that only its cached plan
  // keeps alive is dead (the library refers to functions weakly).
  std::erase_if(cache, [](const auto& e) { return e.second->shared_function().use_count() <= 1; });
  auto compiled = std::make_shared<const CompiledFunction>(fn);
  cache[fn.get()] = compiled;
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

StatusOr<std::shared_ptr<const void>> resolve_function(const std::string& name) {
  auto fn = FunctionLibrary::global().find(name);
  if (fn == nullptr) return make_error(Code::kNotFound, "no function named '", name, "'");
  return std::shared_ptr<const void>(compiled_callee(std::move(fn)));
}

Status run_resolved(const void* function, std::span<TensorImpl* const> inputs, OutputList& outputs) {
  const auto* compiled = static_cast<const CompiledFunction*>(function);
  if (!profiler::active()) [[likely]]
    return compiled->run(inputs, outputs);
  // Each loop iteration (a step, Note [Loop steps]) is one span on the timeline, named by its function.
  int64_t start = profiler::now_ns();
  Status s = compiled->run(inputs, outputs);
  profiler::record_span(compiled->function().name, "", start, profiler::now_ns());
  return s;
}

// Note [Loop steps]
// A While runs its condition before the first iteration and then, each iteration, the body and the
// condition on the body's results. The two after the first are one function here, a "step" calling both,
// which the optimizer inlines into one plan: one plan run per iteration instead of two, and CSE and fusion
// see across the body and the condition. Steps are cached by the pair of functions, which they keep alive,
// each with its fast form where it has one (Note [Fast loops] in fast_loop.cc).
// Steps by their (condition, body), and the fast form of each (Note [Fast loops] in fast_loop.cc; null
// where a step does not qualify) by its handle. Leaked on purpose, as compiled_callee's cache.
struct LoopSteps {
  std::mutex mu;
  std::map<std::pair<const FunctionGraph*, const FunctionGraph*>, std::shared_ptr<const CompiledFunction>>
      by_functions;
  std::unordered_map<const void*, std::shared_ptr<const FastLoop>> fast;
  // The overlapped form of each step (Note [Parallel iterations] in parallel_loop.cc), built at its first
  // run with parallel_iterations > 1, by (step, number of accumulated values); null where it does not fit.
  std::map<std::pair<const void*, size_t>, std::shared_ptr<const ParallelLoop>> parallel;
};

LoopSteps& loop_steps() {
  static auto& steps = *new LoopSteps();
  return steps;
}

StatusOr<std::shared_ptr<const void>> resolve_loop_step(const std::string& cond_name,
                                                        const std::string& body_name) {
  auto cond = FunctionLibrary::global().find(cond_name);
  if (cond == nullptr) return make_error(Code::kNotFound, "no function named '", cond_name, "'");
  auto body = FunctionLibrary::global().find(body_name);
  if (body == nullptr) return make_error(Code::kNotFound, "no function named '", body_name, "'");
  LoopSteps& steps = loop_steps();
  auto& cache = steps.by_functions;
  std::lock_guard<std::mutex> lock(steps.mu);
  auto key = std::make_pair(cond.get(), body.get());
  auto it = cache.find(key);
  if (it != cache.end()) return std::shared_ptr<const void>(it->second);
  // A step is dead when its body or condition is: only the step itself holds it (the library refers to
  // functions weakly). The step's own graph is never held elsewhere, so its count says nothing: testing it
  // evicted every live step at each miss, and two loops run in turn (a forward loop and its gradient's)
  // rebuilt and re-optimized both steps on every call, their fused kernels never reaching native code.
  std::erase_if(cache, [&](const auto& e) {
    for (const auto& callee : e.second->function().callees) {
      if (callee.use_count() > 1) continue;
      steps.fast.erase(e.second.get());
      std::erase_if(steps.parallel, [&](const auto& p) { return p.first.first == e.second.get(); });
      return true;
    }
    return false;
  });
  // The body may return more than the loop variables (values an accumulating While stacks): the step
  // returns all of them, and the condition reads the loop variables.
  if (body->results.size() < static_cast<size_t>(body->num_call_args()))
    return invalid_argument("While: the body '", body_name, "' returns ", body->results.size(),
                            " value(s) for ", body->num_call_args(), " loop variable(s)");
  static const OpDef& placeholder = op_def("Placeholder");
  static const OpDef& call = op_def("PartitionedCall");
  auto step = std::make_shared<FunctionGraph>();
  step->name = body->name + "_step";
  SmallVector<ValueRef, 4> args;
  for (int i = 0; i < body->num_call_args(); ++i) {
    const TensorSpec& spec = body->graph.node(body->args[i]).outputs[0];
    AttrList attrs = placeholder_attrs(spec.dtype, spec.shape);
    SmallVector<TensorSpec, 2> specs;
    specs.push_back(spec);
    int32_t node = step->graph.add_node(placeholder, {}, std::move(attrs), std::move(specs), {}, "loop_var");
    step->args.push_back(node);
    args.push_back(ValueRef{node, 0});
  }
  auto add_call = [&](const FunctionGraph& fn, const std::string& name, std::span<const ValueRef> inputs) {
    AttrList attrs;
    attrs.push_back(name);
    SmallVector<TensorSpec, 2> specs;
    for (ValueRef r : fn.results) specs.push_back(fn.graph.spec(r));
    int32_t node = step->graph.add_node(call, inputs, std::move(attrs), std::move(specs), {}, fn.name);
    step->control_outputs.push_back(node);
    return node;
  };
  int32_t body_call = add_call(*body, body_name, {args.data(), args.size()});
  SmallVector<ValueRef, 4> next;
  for (size_t i = 0; i < body->results.size(); ++i)
    next.push_back(ValueRef{body_call, static_cast<int32_t>(i)});
  int32_t cond_call = add_call(*cond, cond_name, {next.data(), static_cast<size_t>(body->num_call_args())});
  step->results.assign(next.begin(), next.end());
  step->results.push_back(ValueRef{cond_call, 0});
  step->callees = {body, cond};
  auto compiled = std::make_shared<const CompiledFunction>(std::move(step));
  cache[key] = compiled;
  steps.fast[compiled.get()] =
      compiled->partitions().empty() ? FastLoop::build(compiled->optimized_function()) : nullptr;
  return std::shared_ptr<const void>(compiled);
}

FastLoopProgress run_fast_loop(const void* step, std::span<TensorRef> vars, int64_t max_iterations) {
  std::shared_ptr<const FastLoop> fast;
  {
    LoopSteps& steps = loop_steps();
    std::lock_guard<std::mutex> lock(steps.mu);
    auto it = steps.fast.find(step);
    if (it != steps.fast.end()) fast = it->second;
  }
  if (fast == nullptr) return FastLoopProgress();
  if (!profiler::active()) [[likely]]
    return fast->run(vars, max_iterations);
  // One span for all the iterations run fast (the normal path records one per iteration).
  const int64_t start = profiler::now_ns();
  const FastLoopProgress progress = fast->run(vars, max_iterations);
  if (progress.iterations > 0)
    profiler::record_span(static_cast<const CompiledFunction*>(step)->function().name + " (fast loop, " +
                              std::to_string(progress.iterations) + " iterations)",
                          "", start, profiler::now_ns());
  return progress;
}

Status run_parallel_loop(const void* step, std::span<TensorRef> vars, size_t accumulate,
                         int64_t parallel_iterations, int64_t max_iterations, const StackIteration& stack,
                         FastLoopProgress& progress) {
  progress = FastLoopProgress();
  const auto* compiled = static_cast<const CompiledFunction*>(step);
  std::shared_ptr<const ParallelLoop> loop;
  {
    LoopSteps& steps = loop_steps();
    std::lock_guard<std::mutex> lock(steps.mu);
    auto key = std::make_pair(step, accumulate);
    auto it = steps.parallel.find(key);
    if (it != steps.parallel.end()) {
      loop = it->second;
    } else {
      if (compiled->partitions().empty())
        loop = ParallelLoop::build(compiled->optimized_function(), vars.size(), accumulate);
      // Kept only while the step itself is cached: the eviction in resolve_loop_step drops a step's entries,
      // and one made afterwards for an evicted step (a running While still holds it) would outlive the step,
      // for a later step at the same address to find.
      if (std::any_of(steps.by_functions.begin(), steps.by_functions.end(),
                      [&](const auto& e) { return e.second.get() == step; }))
        steps.parallel[key] = loop;
    }
  }
  if (loop == nullptr) return Status::OK();
  if (!profiler::active()) [[likely]]
    return loop->run(vars, parallel_iterations, max_iterations, stack, progress);
  const int64_t start = profiler::now_ns();  // one span for the overlapped iterations
  Status s = loop->run(vars, parallel_iterations, max_iterations, stack, progress);
  if (progress.iterations > 0)
    profiler::record_span(compiled->function().name + " (" + std::to_string(progress.iterations) +
                              " iterations, up to " + std::to_string(parallel_iterations) + " in flight)",
                          "", start, profiler::now_ns());
  return s;
}

Status run_resolved_owned(const void* function, std::span<TensorRef> inputs, OutputList& outputs,
                          std::span<const TensorRef> destinations) {
  const auto* compiled = static_cast<const CompiledFunction*>(function);
  if (!profiler::active()) [[likely]]
    return compiled->run_owned(inputs, outputs, destinations);
  int64_t start = profiler::now_ns();  // as run_resolved: one span per loop iteration
  Status s = compiled->run_owned(inputs, outputs, destinations);
  profiler::record_span(compiled->function().name, "", start, profiler::now_ns());
  return s;
}

struct InstallAtStartup {
  InstallAtStartup() { install_function_runtime(); }
} install_at_startup;

}  // namespace

void install_function_runtime() {
  set_function_call_hooks(FunctionCallHooks{&infer_call, &run_call, &resolve_function, &run_resolved,
                                            &resolve_loop_step, &run_resolved_owned});
  set_fast_loop_runner(&run_fast_loop);
  set_parallel_loop_runner(&run_parallel_loop);
}

// ---- The execution plan.

namespace {
// A tensor an instruction reads: a slot filled during the run, or a constant evaluated at compile time.
struct InputRef {
  int32_t slot = -1;
  TensorImpl* constant = nullptr;
};

struct Instruction {
  const Node* node = nullptr;
  KernelFn kernel = nullptr;   // null: run_kernel reports the missing kernel
  bool static_specs = false;   // false: output shapes are resolved each run (Note [Unknown dimensions])
  bool dynamic_fused = false;  // a fused program prepared for unknown dims: its result shapes are its own
  // How a dynamic node's output shape follows from its inputs' shapes, where the op's shape function is
  // one of the element-wise ones (which read nothing else); kInfer runs the shape function. kKernel: the
  // kernel works its output shape out itself from the actual operands, with the same checks as the shape
  // function (a StridedSlice whose bounds are computed: a loop body reading row t of a stack), and the
  // traced spec it is checked against is static.
  enum class ShapeRule : uint8_t {
    kInfer,
    kSameAsInput0,
    kBroadcast,
    kKernel
  } shape_rule = ShapeRule::kInfer;
  bool check_output_shapes = false;      // the kernel allocates outputs whose static spec later nodes rely on
  int8_t in_place_input = -1;            // an input whose buffer output 0 may reuse when this is its last use
  std::shared_ptr<const void> prepared;  // the op's per-node preparation (OpDef::prepare)
  int32_t first_input = 0, num_inputs = 0;
  int32_t first_output_slot = 0, num_outputs = 0;
  int32_t first_release = 0, num_releases = 0;
  int32_t first_successor = 0, num_successors = 0;
  int32_t initial_pending = 0;
  double cost_ns = 0;
};

// Rough cost of a node, to decide whether inter-op parallelism can pay for its hand-offs. An unknown
// dimension counts as kAssumedDim: it is most often a batch, and counting such an output as 1e4 elements made
// a graph traced with a None batch look like many cheap nodes (worth running in parallel) where the same
// graph traced for its batch is a few large ones (better run in a row with intra-op threads).
constexpr double kAssumedDim = 256;

double assumed_elements(const Shape& shape) {
  if (!shape.rank_known()) return 1e4;
  double n = 1;
  for (int64_t d : shape.dims()) n *= d < 0 ? kAssumedDim : static_cast<double>(d);
  return n;
}

double estimate_cost_ns(const Node& node, const Graph& g) {
  double elements = 0;
  for (const TensorSpec& spec : node.outputs) elements += assumed_elements(spec.shape);
  // A fused reduction works over its domain, the broadcast of its inputs, not over its small output.
  if (node.op->name == "FusedReduction")
    for (ValueRef in : node.inputs) elements = std::max(elements, assumed_elements(g.spec(in).shape));
  double cost = 150 + elements * 0.5;
  if ((node.op->name == "MatMul" || node.op->name == "BatchMatMulV2") && node.inputs.size() == 2) {
    const Shape& a = g.spec(node.inputs[0]).shape;
    if (a.rank_known() && a.rank() >= 2) {
      const int64_t inner = a.dim(a.rank() - 1);
      cost += elements * (inner < 0 ? kAssumedDim : static_cast<double>(inner)) / 40.0;
    }
  }
  return cost;
}

bool fully_static(const TensorSpec& spec) { return spec.shape.fully_defined(); }

// Note [Shape specialization]; read once.
bool shape_specialization_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("EMBER_SHAPE_SPECIALIZATION");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

// Arenas up to this size stay with a plan's cached run state between calls (Note [Arena]).
constexpr int64_t kKeptArenaBytes = 4 << 20;
// Values above this stay out of the arena: TensorImpl::allocate reports them (ResourceExhausted) when the
// node runs, and 20,000 arena slots of this size still sum far below int64's range.
constexpr int64_t kMaxPlannedBytes = int64_t{1} << 40;

// The bytes of a static spec, or -1 when they exceed kMaxPlannedBytes (the dims' product may overflow
// int64, so Shape::num_elements cannot be trusted with them).
int64_t planned_bytes(const TensorSpec& spec) {
  __int128 bytes = static_cast<__int128>(dtype_size(spec.dtype));
  for (int64_t d : spec.shape.dims()) {
    bytes *= d;
    if (bytes > kMaxPlannedBytes) return -1;
  }
  return static_cast<int64_t>(bytes);
}
}  // namespace

class ExecPlan {
 public:
  /// `reuse_memory`: release each value after its last reader and let element-wise ops write in place
  /// (off: every value lives until the call ends, as TF's memory_optimization=False).
  ExecPlan(const FunctionGraph& fn, bool reuse_memory);
  ~ExecPlan() { delete cached_state_.exchange(nullptr); }
  Status run(const FunctionGraph& fn, std::span<TensorImpl* const> args, OutputList& results,
             std::span<TensorRef> owned = {}, std::span<const TensorRef> destinations = {});
  bool parallel() const { return parallel_; }
  int in_place_candidates() const {
    int n = 0;
    for (const Instruction& ins : instructions_) n += ins.in_place_input >= 0;
    return n;
  }
  int64_t arena_bytes() const { return arena_bytes_; }
  int32_t arena_slots() const { return static_cast<int32_t>(arena_slots_.size()); }

 private:
  struct RunState {
    std::vector<TensorRef> slots;
    std::unique_ptr<std::atomic<int32_t>[]> pending;
    std::unique_ptr<std::atomic<int32_t>[]> uses;
    // The arena and, per slot it holds, the view a producer writes into (empty where not planned). Kept
    // with the state, so a steady-state sequential call allocates no tensor for them.
    TensorRef arena;
    std::vector<TensorRef> arena_views;
    bool arena_active = false;                // this call's producers write into arena_views
    std::span<const TensorRef> destinations;  // this call's, per result (run_owned)
  };
  Status run_instruction(const FunctionGraph& fn, const Instruction& ins, RunState& state, bool sequential);
  Status run_dynamic(const Instruction& ins, std::span<TensorImpl* const> inputs, RunState& state,
                     bool sequential, OutputList& outputs);
  // The caller's destination for a result slot (run_owned's), when it fits the slot's static spec.
  TensorRef destination_of(int32_t slot, const TensorSpec& spec, const RunState& state) const {
    if (state.destinations.empty()) return TensorRef();
    const int32_t r = result_of_slot_[slot];
    if (r < 0 || static_cast<size_t>(r) >= state.destinations.size()) return TensorRef();
    const TensorRef& d = state.destinations[r];
    if (!d || d->dtype() != spec.dtype || d->shape() != spec.shape) return TensorRef();
    return d;
  }
  // The dying input of an in-place instruction, when its buffer may be written over.
  TensorRef reusable_input(const Instruction& ins, RunState& state, bool sequential) const;
  Status run_sequential(const FunctionGraph& fn, RunState& state);
  Status run_parallel(const FunctionGraph& fn, RunState& state);
  RunState* acquire_state();
  void release_state(RunState* state);
  void plan_arena_slots(const std::vector<int32_t>& last_use);
  bool arena_ready(RunState& state) const;

  std::vector<Instruction> instructions_;
  std::vector<InputRef> inputs_;
  std::vector<int32_t> releases_;
  std::vector<int32_t> successors_;
  std::vector<int32_t> slot_uses_;       // data reads of each slot by instructions
  std::vector<bool> is_result_;          // slots the call returns: never released
  std::vector<int32_t> result_of_slot_;  // the first result a slot is returned as, or -1
  std::vector<int32_t> arg_slots_;       // per fn.args entry, -1 when unused
  std::vector<InputRef> results_;
  std::vector<TensorRef> constants_;
  int32_t num_slots_ = 0;
  struct ArenaSlot {
    int32_t slot;
    int64_t offset;
    const TensorSpec* spec;  // in the optimized graph's nodes
  };
  std::vector<ArenaSlot> arena_slots_;
  int64_t arena_bytes_ = 0;
  bool parallel_ = false;
  bool reuse_memory_ = true;
  std::atomic<RunState*> cached_state_{nullptr};
};

ExecPlan::ExecPlan(const FunctionGraph& fn, bool reuse_memory) : reuse_memory_(reuse_memory) {
  const Graph& g = fn.graph;
  const int32_t n = g.num_nodes();
  std::vector<int32_t> slot_base(n, -1);
  std::vector<TensorImpl*> constant_of(n, nullptr);
  std::vector<int32_t> instruction_of(n, -1);
  std::vector<bool> is_arg(n, false);
  for (int32_t a : fn.args) is_arg[a] = true;

  // Only what a result or a control output needs runs (the optimizer prunes too, but may be off).
  std::vector<bool> needed(n, false);
  {
    std::vector<int32_t> stack;
    for (ValueRef r : fn.results) stack.push_back(r.node);
    for (int32_t c : fn.control_outputs) stack.push_back(c);
    while (!stack.empty()) {
      int32_t i = stack.back();
      stack.pop_back();
      if (needed[i]) continue;
      needed[i] = true;
      if (is_arg[i]) continue;
      for (ValueRef in : g.node(i).inputs) stack.push_back(in.node);
      for (int32_t c : g.node(i).control_inputs) stack.push_back(c);
    }
  }

  auto input_ref = [&](ValueRef v) {
    InputRef ref;
    if (constant_of[v.node] != nullptr)
      ref.constant = constant_of[v.node];
    else
      ref.slot = slot_base[v.node] + v.output;
    return ref;
  };
  for (int32_t i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (!needed[i] && !is_arg[i]) continue;
    if (node.op->name == "Const" && !is_arg[i]) {
      constants_.push_back(std::get<TensorRef>(node.attrs[0]));
      constant_of[i] = constants_.back().get();
      continue;
    }
    slot_base[i] = num_slots_;
    num_slots_ += static_cast<int32_t>(node.outputs.size());
    if (is_arg[i]) continue;
    Instruction ins;
    ins.node = &node;
    ins.num_outputs = static_cast<int32_t>(node.outputs.size());
    ins.first_output_slot = slot_base[i];
    ins.cost_ns = estimate_cost_ns(node, g);
    ins.static_specs = std::all_of(node.outputs.begin(), node.outputs.end(), fully_static);
    ins.first_input = static_cast<int32_t>(inputs_.size());
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const ValueRef in = node.inputs[j];
      inputs_.push_back(input_ref(in));
      ins.static_specs = ins.static_specs && fully_static(g.spec(in));
      // Note [Shape operands computed in the graph]: a shape-like operand that is not a plan constant may
      // have given static output specs through what tracing inferred (a partly known value, BroadcastTo's
      // dims taken from its input); the node then resolves its outputs from the actual values each call,
      // so a value that contradicts the inference is the op's error, never a kernel writing to the wrong
      // shape.
      if (!node.op->inputs.empty() && node.op->arg_of(j, node.inputs.size()).shape_like &&
          constant_of[in.node] == nullptr)
        ins.static_specs = false;
    }
    ins.num_inputs = static_cast<int32_t>(node.inputs.size());
    DType dispatch = node.op->dispatch_input >= 0 && node.op->dispatch_input < ins.num_inputs
                         ? g.spec(node.inputs[node.op->dispatch_input]).dtype
                     : node.outputs.empty() ? DType::kFloat32
                                            : node.outputs[0].dtype;
    ins.kernel = node.op->kernels[static_cast<int>(dispatch)];
    if (ins.kernel == nullptr) ins.static_specs = false;  // run_kernel reports the missing kernel
    ins.check_output_shapes =
        ins.static_specs && node.op->has_flag(kKernelAllocates) && node.op->has_flag(kStateful);
    if (node.outputs.size() == 1 && !node.op->has_flag(kKernelAllocates)) {
      if ((node.op->shape_fn == &same_as_input_shape || node.op->shape_fn == &bool_like_input_shape) &&
          ins.num_inputs >= 1)
        ins.shape_rule = Instruction::ShapeRule::kSameAsInput0;
      else if ((node.op->shape_fn == &broadcast_binary_shape ||
                node.op->shape_fn == &broadcast_compare_shape) &&
               ins.num_inputs == 2)
        ins.shape_rule = Instruction::ShapeRule::kBroadcast;
    }
    if (node.op->name == "StridedSlice" && node.op->has_flag(kKernelAllocates) &&
        std::all_of(node.outputs.begin(), node.outputs.end(), fully_static))
      ins.shape_rule = Instruction::ShapeRule::kKernel;
    // Fused programs are also prepared for unknown dims (they bind each call's shapes on first use);
    // other ops' preparation assumes static shapes.
    const bool fused = node.op->name == "FusedElementwise";
    if ((ins.static_specs || (fused && ins.kernel != nullptr)) && node.op->prepare != nullptr) {
      SmallVector<TensorSpec, 4> input_specs;
      for (ValueRef in : node.inputs) input_specs.push_back(g.spec(in));
      PrepareContext pctx;
      pctx.attrs = {node.attrs.data(), node.attrs.size()};
      pctx.op = node.op;
      pctx.inputs = {input_specs.data(), input_specs.size()};
      pctx.outputs = {node.outputs.data(), node.outputs.size()};
      // A node that cannot be prepared runs unprepared, and its kernel reports the problem with the node.
      auto prepared = node.op->prepare(pctx);
      if (prepared.ok()) ins.prepared = std::move(prepared).value();
      ins.dynamic_fused = fused && !ins.static_specs && ins.prepared != nullptr &&
                          kernels::FusedProgram::is_dynamic(
                              *static_cast<const kernels::PreparedFusedProgram*>(ins.prepared.get()));
    }
    instruction_of[i] = static_cast<int32_t>(instructions_.size());
    instructions_.push_back(ins);
  }

  // Uses and last uses (in plan order) of every slot; results are never released.
  slot_uses_.assign(num_slots_, 0);
  is_result_.assign(num_slots_, false);
  std::vector<int32_t> last_use(num_slots_, -1);
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    const Instruction& ins = instructions_[k];
    for (int32_t j = 0; j < ins.num_inputs; ++j) {
      const InputRef& in = inputs_[ins.first_input + j];
      if (in.slot < 0) continue;
      ++slot_uses_[in.slot];
      last_use[in.slot] = k;
    }
  }
  constexpr int32_t kNeverReleased = 1 << 30;
  result_of_slot_.assign(num_slots_, -1);
  for (ValueRef r : fn.results) {
    InputRef ref = input_ref(r);
    if (ref.slot >= 0) {
      is_result_[ref.slot] = true;
      last_use[ref.slot] = kNeverReleased;
      if (result_of_slot_[ref.slot] < 0) result_of_slot_[ref.slot] = static_cast<int32_t>(results_.size());
    }
    results_.push_back(ref);
  }
  // Release lists: a slot dies after its last reader (or right after its producer when nothing reads it).
  std::vector<std::vector<int32_t>> releases(instructions_.size());
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    const Instruction& ins = instructions_[k];
    for (int32_t o = 0; o < ins.num_outputs; ++o)
      if (last_use[ins.first_output_slot + o] < 0) releases[k].push_back(ins.first_output_slot + o);
  }
  for (int32_t s = 0; s < num_slots_; ++s)
    if (reuse_memory && last_use[s] >= 0 && last_use[s] < kNeverReleased) releases[last_use[s]].push_back(s);
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    Instruction& ins = instructions_[k];
    ins.first_release = static_cast<int32_t>(releases_.size());
    std::sort(releases[k].begin(), releases[k].end());
    releases[k].erase(std::unique(releases[k].begin(), releases[k].end()), releases[k].end());
    releases_.insert(releases_.end(), releases[k].begin(), releases[k].end());
    ins.num_releases = static_cast<int32_t>(releases[k].size());
    // In place: an element-wise op may write its result over an input that dies here and has its spec
    // (with unknown dims, the run checks that the shapes agree).
    const Node& node = *ins.node;
    // An op that overwrites rows of input 0 (InplaceUpdate) may take that input's buffer only.
    const bool overwrites = node.op->has_flag(kOverwritesInput0);
    // A kernel that allocates its own output (a list growing by a row) is handed the dying input instead,
    // whatever its shape (reusable_input0).
    const bool allocates = node.op->has_flag(kKernelAllocates);
    if (reuse_memory && ins.kernel != nullptr && (node.op->has_flag(kElementwise) || overwrites) &&
        (!allocates || overwrites) && ins.num_outputs >= 1) {
      for (int32_t j = 0; j < (overwrites ? 1 : ins.num_inputs) && ins.in_place_input < 0; ++j) {
        const InputRef& in = inputs_[ins.first_input + j];
        const TensorSpec& spec = g.spec(node.inputs[j]);
        // A node resolving its shapes when it runs (Note [Unknown dimensions]) compares the actual shapes
        // there, so specs that only agree once the unknown dims are known still qualify.
        const bool same_shape = spec.shape == node.outputs[0].shape ||
                                (!ins.static_specs && spec.shape.is_compatible_with(node.outputs[0].shape));
        if (in.slot >= 0 && last_use[in.slot] == k && spec.dtype == node.outputs[0].dtype &&
            spec.dtype != DType::kString && (allocates || same_shape))
          ins.in_place_input = static_cast<int8_t>(j);
      }
    }
  }
  for (int32_t a : fn.args) arg_slots_.push_back(slot_base[a]);

  // Dependencies between instructions: data edges from other instructions plus control edges.
  std::vector<std::vector<int32_t>> successors(instructions_.size());
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    const Node& node = *instructions_[k].node;
    std::vector<int32_t> preds;
    for (ValueRef in : node.inputs)
      if (instruction_of[in.node] >= 0) preds.push_back(instruction_of[in.node]);
    for (int32_t c : node.control_inputs)
      if (instruction_of[c] >= 0) preds.push_back(instruction_of[c]);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    instructions_[k].initial_pending = static_cast<int32_t>(preds.size());
    for (int32_t p : preds) successors[p].push_back(k);
  }
  // Parallel runs pay hand-offs; they are worth it only when there is enough work off the critical path.
  double total = 0, critical = 0;
  std::vector<double> finish(instructions_.size(), 0);
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    Instruction& ins = instructions_[k];
    ins.first_successor = static_cast<int32_t>(successors_.size());
    successors_.insert(successors_.end(), successors[k].begin(), successors[k].end());
    ins.num_successors = static_cast<int32_t>(successors[k].size());
    total += ins.cost_ns;
  }
  for (int32_t k = 0; k < static_cast<int32_t>(instructions_.size()); ++k) {
    finish[k] += instructions_[k].cost_ns;
    critical = std::max(critical, finish[k]);
    for (int32_t s : successors[k]) finish[s] = std::max(finish[s], finish[k]);
  }
  // Hand-offs cost about a microsecond, so nodes cheaper than a few microseconds are better run in a row;
  // nodes above ~30 µs already use every core through intra-op parallelism, which a parallel run gives
  // up (its kernels stay on their worker). Inter-op parallelism pays for the nodes in between.
  double medium = 0, large = 0;
  for (const Instruction& ins : instructions_) {
    if (ins.cost_ns >= kInterOpLargeNodeNs)
      large += ins.cost_ns;
    else if (ins.cost_ns >= kInterOpMediumNodeNs)
      medium += ins.cost_ns;
  }
  parallel_ = total - critical >= kInterOpMinParallelNs && medium >= kInterOpMinParallelNs && large < medium;
  if (reuse_memory) plan_arena_slots(last_use);
}

// Note [Arena]
// A slot gets an arena offset when its producer writes into preallocated outputs of a static spec and no
// reader can keep it past the read: readers that create their outputs may return views of it (Reshape,
// Identity, calls) and stateful readers may store it (variable writes), so a slot with such a reader, and a
// result, keeps a buffer of its own. Lifetimes are plan positions, valid only for sequential runs; parallel
// runs allocate these slots from the freelists as before. An element-wise op that writes in place over a
// dying input shares the input's block. Views of the arena are made once per run state and handed out each
// call; a call first checks that nothing holds on to one (see arena_ready). Arenas above kKeptArenaBytes are
// given back after each call, so idle functions hold at most that much each.
void ExecPlan::plan_arena_slots(const std::vector<int32_t>& last_use) {
  const int32_t count = static_cast<int32_t>(instructions_.size());
  std::vector<bool> candidate(num_slots_, false);
  std::vector<int32_t> producer(num_slots_, -1);
  std::vector<int64_t> bytes(num_slots_, 0);
  std::vector<const TensorSpec*> spec_of(num_slots_, nullptr);
  for (int32_t k = 0; k < count; ++k) {
    const Instruction& ins = instructions_[k];
    if (!ins.static_specs || ins.node->op->has_flag(kKernelAllocates)) continue;
    for (int32_t o = 0; o < ins.num_outputs; ++o) {
      const int32_t slot = ins.first_output_slot + o;
      const TensorSpec& spec = ins.node->outputs[o];
      bytes[slot] = planned_bytes(spec);
      producer[slot] = k;
      spec_of[slot] = &spec;
      candidate[slot] = bytes[slot] > 0 && !is_result_[slot] && spec.dtype != DType::kString;
    }
  }
  for (const Instruction& ins : instructions_) {
    const bool may_keep = ins.node->op->has_flag(kKernelAllocates) || ins.node->op->has_flag(kStateful);
    for (int32_t j = 0; j < ins.num_inputs && may_keep; ++j) {
      const InputRef& in = inputs_[ins.first_input + j];
      if (in.slot >= 0) candidate[in.slot] = false;
    }
  }
  // Blocks: a slot, joined with the slot an in-place op writes over it (union-find by the block's root).
  std::vector<int32_t> root(num_slots_);
  for (int32_t s = 0; s < num_slots_; ++s) root[s] = s;
  auto find = [&](int32_t s) {
    while (root[s] != s) s = root[s] = root[root[s]];
    return s;
  };
  for (int32_t k = 0; k < count; ++k) {
    const Instruction& ins = instructions_[k];
    if (ins.in_place_input < 0) continue;
    const int32_t in = inputs_[ins.first_input + ins.in_place_input].slot;
    const int32_t out = ins.first_output_slot;
    if (candidate[in] && candidate[out] && bytes[in] == bytes[out]) root[find(out)] = find(in);
  }
  std::vector<int32_t> request_of(num_slots_, -1);
  std::vector<ArenaRequest> requests;
  for (int32_t s = 0; s < num_slots_; ++s) {
    if (!candidate[s]) continue;
    const int32_t r = find(s);
    if (request_of[r] < 0) {
      request_of[r] = static_cast<int32_t>(requests.size());
      requests.push_back({bytes[r], producer[r], producer[r]});
    }
    ArenaRequest& req = requests[request_of[r]];
    req.first = std::min(req.first, producer[s]);
    req.last = std::max({req.last, producer[s], last_use[s]});
  }
  if (requests.empty() || requests.size() > 20000) return;  // best fit is quadratic in the buffers
  ArenaPlan plan = plan_arena(requests);
  arena_bytes_ = plan.arena_bytes;
  for (int32_t s = 0; s < num_slots_; ++s)
    if (candidate[s]) arena_slots_.push_back({s, plan.offsets[request_of[find(s)]], spec_of[s]});
}

// Whether `state` can hand out its arena views for a sequential call: they exist (made on first use) and
// nothing outside the state holds one, or the arena, from an earlier call. A holder that did would see its
// bytes overwritten, so the state then gets a fresh arena (the holder keeps the old one alive).
bool ExecPlan::arena_ready(RunState& state) const {
  if (arena_bytes_ == 0) return false;
  bool fresh = !state.arena || state.arena->refcount() != 1 ||
               state.arena->buffer()->refcount() != 1 + static_cast<int>(arena_slots_.size());
  for (size_t i = 0; i < arena_slots_.size() && !fresh; ++i)
    fresh = state.arena_views[arena_slots_[i].slot]->refcount() != 1;
  if (!fresh) return true;
  state.arena = TensorRef();
  state.arena_views.assign(num_slots_, TensorRef());
  auto arena = TensorImpl::allocate(DType::kUInt8, Shape({arena_bytes_}));
  if (!arena.ok()) return false;  // the freelists serve the call
  state.arena = std::move(arena).value();
  for (const ArenaSlot& a : arena_slots_)
    state.arena_views[a.slot] =
        TensorImpl::view(*state.arena, a.spec->dtype, a.spec->shape, static_cast<size_t>(a.offset));
  return true;
}

ExecPlan::RunState* ExecPlan::acquire_state() {
  RunState* state = cached_state_.exchange(nullptr, std::memory_order_acquire);
  if (state != nullptr) return state;
  state = new RunState;
  state->slots.resize(num_slots_);
  state->pending.reset(new std::atomic<int32_t>[instructions_.size()]);
  state->uses.reset(new std::atomic<int32_t>[num_slots_]);
  return state;
}

void ExecPlan::release_state(RunState* state) {
  for (TensorRef& t : state->slots) t = TensorRef();
  RunState* expected = nullptr;
  if (!cached_state_.compare_exchange_strong(expected, state, std::memory_order_release)) delete state;
}

Status ExecPlan::run_instruction(const FunctionGraph& fn, const Instruction& ins, RunState& state,
                                 bool sequential) {
  const Node& node = *ins.node;
  SmallVector<TensorImpl*, 4> inputs;
  for (int32_t j = 0; j < ins.num_inputs; ++j) {
    const InputRef& in = inputs_[ins.first_input + j];
    inputs.push_back(in.constant != nullptr ? in.constant : state.slots[in.slot].get());
  }
  const bool profiling = profiler::active();
  const int64_t start = profiling ? profiler::now_ns() : 0;
  OutputList outputs;
  Status s;
  std::span<const AttrValue> attrs{node.attrs.data(), node.attrs.size()};
  if (!ins.static_specs) {
    s = ins.kernel == nullptr ? run_kernel(*node.op, {inputs.data(), inputs.size()}, attrs, outputs)
                              : run_dynamic(ins, {inputs.data(), inputs.size()}, state, sequential, outputs);
  } else {
    if (node.op->has_flag(kKernelAllocates)) {
      outputs.resize(ins.num_outputs);
    } else {
      for (int32_t o = 0; o < ins.num_outputs; ++o) {
        // While the arena is active, exactly the planned slots have a view.
        if (state.arena_active && state.arena_views[ins.first_output_slot + o]) {
          outputs.push_back(state.arena_views[ins.first_output_slot + o]);
          continue;
        }
        if (TensorRef destination = destination_of(ins.first_output_slot + o, node.outputs[o], state)) {
          outputs.push_back(std::move(destination));
          continue;
        }
        if (o == 0 && ins.in_place_input >= 0) {
          if (TensorRef reused = reusable_input(ins, state, sequential)) {
            outputs.push_back(std::move(reused));
            continue;
          }
        }
        auto t = TensorImpl::allocate(node.outputs[o].dtype, node.outputs[o].shape);
        if (!t.ok())
          return with_source_context(*node.op, node.name, node.location, op_error(*node.op, t.status()));
        outputs.push_back(std::move(t).value());
      }
    }
    KernelContext ctx;
    ctx.op = node.op;
    ctx.inputs = {inputs.data(), inputs.size()};
    ctx.attrs = attrs;
    ctx.output_specs = {node.outputs.data(), node.outputs.size()};
    ctx.outputs = {outputs.data(), outputs.size()};
    ctx.prepared = ins.prepared.get();
    if (node.op->has_flag(kKernelAllocates) && ins.in_place_input >= 0)
      ctx.reusable_input0 = reusable_input(ins, state, sequential);
    s = guard_exceptions(*node.op, "running its kernel", [&] { return ins.kernel(ctx); });
    if (!s.ok() && s.message().rfind(node.op->name + ":", 0) != 0) s = op_error(*node.op, s);
  }
  if (!s.ok()) return with_source_context(*node.op, node.name, node.location, s);
  if (ins.check_output_shapes) {
    for (int32_t o = 0; o < ins.num_outputs; ++o)
      if (outputs[o]->shape() != node.outputs[o].shape || outputs[o]->dtype() != node.outputs[o].dtype)
        return with_source_context(
            *node.op, node.name, node.location,
            make_error(Code::kFailedPrecondition, node.op->name, ": output #", o, " is ",
                       dtype_name(outputs[o]->dtype()), outputs[o]->shape().to_string(), " but the function ",
                       fn.name, " was traced for ", dtype_name(node.outputs[o].dtype),
                       node.outputs[o].shape.to_string(), " (a variable changed shape?)"));
  }
  if (profiling) {
    int64_t bytes = 0;
    for (const TensorRef& r : outputs) bytes += r ? static_cast<int64_t>(r->nbytes()) : 0;
    profiler::record({fn.name, &node, start, profiler::now_ns(), bytes});
  }
  for (int32_t o = 0; o < ins.num_outputs && o < static_cast<int32_t>(outputs.size()); ++o)
    state.slots[ins.first_output_slot + o] = std::move(outputs[o]);
  return Status::OK();
}

TensorRef ExecPlan::reusable_input(const Instruction& ins, RunState& state, bool sequential) const {
  // Reuse the dying input's buffer when nothing else (a view, the caller) holds it and ember owns it (an
  // imported DLPack buffer is the producer's).
  const InputRef& in = inputs_[ins.first_input + ins.in_place_input];
  TensorImpl* t = state.slots[in.slot].get();
  bool last = sequential || state.uses[in.slot].load(std::memory_order_acquire) == 1;
  if (last && t->refcount() == 1 && t->buffer()->refcount() == 1 && !t->buffer()->external())
    return state.slots[in.slot];
  return TensorRef();
}

// Note [Unknown dimensions]
// A node whose specs are not all static resolves its output shapes when it runs: a fused program from the
// broadcast of the inputs each result reads (its preparation binds each set of shapes once), any other op
// through its shape function over the actual input specs, which costs about what the kernel's own
// argument checks do. A StridedSlice with static output specs skips its shape function: its kernel plans
// the slice from the same operands with the same checks and allocates (or views) the result itself, so
// the shape function would only repeat that plan (half of a loop body's row reads, about 150 ns each).
// Outputs come from the size-class freelists (an arena needs sizes when the plan is
// compiled), an element-wise op still writes over an input that dies there when the shapes agree, and
// each resolved shape is checked against what the graph was traced for: later nodes with static specs
// rely on it.
Status ExecPlan::run_dynamic(const Instruction& ins, std::span<TensorImpl* const> inputs, RunState& state,
                             bool sequential, OutputList& outputs) {
  const Node& node = *ins.node;
  const OpDef& op = *node.op;
  SmallVector<TensorSpec, 2> specs;
  if (ins.dynamic_fused) {
    SmallVector<Shape, 2> shapes;
    SmallVector<const TensorImpl*, 4> in;
    for (TensorImpl* t : inputs) in.push_back(t);
    EMBER_RETURN_IF_ERROR(kernels::FusedProgram::result_shapes(
        *static_cast<const kernels::PreparedFusedProgram*>(ins.prepared.get()), {in.data(), in.size()},
        shapes));
    for (int32_t o = 0; o < ins.num_outputs; ++o)
      specs.push_back(TensorSpec{node.outputs[o].dtype, shapes[o]});
  } else if (ins.shape_rule == Instruction::ShapeRule::kKernel) {
    // The kernel allocates what its operands give; the check below holds it to the traced spec.
    for (int32_t o = 0; o < ins.num_outputs; ++o) specs.push_back(node.outputs[o]);
  } else if (ins.shape_rule == Instruction::ShapeRule::kSameAsInput0) {
    specs.push_back(TensorSpec{node.outputs[0].dtype, inputs[0]->shape()});
  } else if (Shape out; ins.shape_rule == Instruction::ShapeRule::kBroadcast &&
                        kernels::broadcast_into(inputs[0]->shape(), inputs[1]->shape(), out)) {
    specs.push_back(TensorSpec{node.outputs[0].dtype, out});
  } else {
    // The op's own shape function (also where a broadcast fails: it reports the error in the op's words).
    SmallVector<TensorSpec, 4> in_specs;
    SmallVector<const TensorImpl*, 4> constants;
    for (TensorImpl* t : inputs) {
      in_specs.push_back(TensorSpec{t->dtype(), t->shape()});
      constants.push_back(t);
    }
    std::span<const AttrValue> attrs{node.attrs.data(), node.attrs.size()};
    EMBER_RETURN_IF_ERROR(
        infer_op(op, {in_specs.data(), in_specs.size()}, {constants.data(), constants.size()}, attrs, specs));
    if (static_cast<int32_t>(specs.size()) != ins.num_outputs)
      return make_error(Code::kInternal, op.name, ": the shape function gave ", specs.size(),
                        " outputs where the graph has ", ins.num_outputs);
  }
  outputs.clear();
  if (op.has_flag(kKernelAllocates)) {
    outputs.resize(ins.num_outputs);
  } else {
    for (int32_t o = 0; o < ins.num_outputs; ++o) {
      if (o == 0 && ins.in_place_input >= 0 && inputs[ins.in_place_input]->shape() == specs[0].shape) {
        if (TensorRef reused = reusable_input(ins, state, sequential)) {
          outputs.push_back(std::move(reused));
          continue;
        }
      }
      auto t = TensorImpl::allocate(specs[o].dtype, specs[o].shape, current_device());
      if (!t.ok()) return op_error(op, t.status());
      outputs.push_back(std::move(t).value());
    }
  }
  KernelContext ctx;
  ctx.op = &op;
  ctx.inputs = inputs;
  ctx.attrs = {node.attrs.data(), node.attrs.size()};
  ctx.output_specs = {specs.data(), specs.size()};
  ctx.outputs = {outputs.data(), outputs.size()};
  ctx.prepared = ins.prepared.get();
  if (op.has_flag(kKernelAllocates) && ins.in_place_input >= 0)
    ctx.reusable_input0 = reusable_input(ins, state, sequential);
  Status s = guard_exceptions(op, "running its kernel", [&] { return ins.kernel(ctx); });
  if (!s.ok()) return s.message().rfind(op.name + ":", 0) == 0 ? s : op_error(op, s);
  for (int32_t o = 0; o < ins.num_outputs; ++o) {
    const TensorSpec& traced = node.outputs[o];
    if (outputs[o] &&
        (outputs[o]->dtype() != traced.dtype || !traced.shape.is_compatible_with(outputs[o]->shape())))
      return make_error(Code::kInvalidArgument, op.name, ": output #", o, " is ",
                        dtype_name(outputs[o]->dtype()), outputs[o]->shape().to_string(),
                        " where the graph was traced for ", dtype_name(traced.dtype),
                        traced.shape.to_string());
  }
  return Status::OK();
}

Status ExecPlan::run_sequential(const FunctionGraph& fn, RunState& state) {
  for (const Instruction& ins : instructions_) {
    EMBER_RETURN_IF_ERROR(run_instruction(fn, ins, state, /*sequential=*/true));
    for (int32_t r = 0; r < ins.num_releases; ++r)
      state.slots[releases_[ins.first_release + r]] = TensorRef();
  }
  return Status::OK();
}

// Note [Idle executor workers]
// A worker with nothing ready spins briefly (a successor is often a few microseconds away), then sleeps
// until a node is queued or the run ends. It used to spin with sched_yield for the whole run: beside
// another busy process that kept a core busy doing nothing while the other process waited for it.
constexpr int kIdleSpins = 64;

Status ExecPlan::run_parallel(const FunctionGraph& fn, RunState& state) {
  const int32_t count = static_cast<int32_t>(instructions_.size());
  for (int32_t k = 0; k < count; ++k)
    state.pending[k].store(instructions_[k].initial_pending, std::memory_order_relaxed);
  for (int32_t s = 0; s < num_slots_; ++s) state.uses[s].store(slot_uses_[s], std::memory_order_relaxed);
  std::mutex mu;
  std::condition_variable wake;  // Note [Idle executor workers]
  std::deque<int32_t> ready;
  for (int32_t k = 0; k < count; ++k)
    if (instructions_[k].initial_pending == 0) ready.push_back(k);
  std::atomic<int32_t> completed{0};
  std::atomic<bool> failed{false};
  Status error;
  auto finished = [&] {
    return failed.load(std::memory_order_relaxed) || completed.load(std::memory_order_acquire) >= count;
  };
  int threads = std::max(1, std::min(inter_op_threads(), omp_get_num_procs()));
#pragma omp parallel num_threads(threads)
  {
    RegionDenormalFlags denormals(kFlushDenormals, omp_get_thread_num() != 0);  // run() flushes the caller
    int32_t next = -1;
    int idle_spins = 0;
    while (!finished()) {
      if (next < 0) {
        std::unique_lock<std::mutex> lock(mu);
        if (ready.empty() && ++idle_spins > kIdleSpins)
          wake.wait(lock, [&] { return !ready.empty() || finished(); });
        if (!ready.empty()) {
          next = ready.front();
          ready.pop_front();
        }
      }
      if (next < 0) continue;
      idle_spins = 0;
      const Instruction& ins = instructions_[next];
      Status s = run_instruction(fn, ins, state, /*sequential=*/false);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) error = s;
        wake.notify_all();
        break;
      }
      // Drop what this node read when it was the last reader, and outputs nobody reads.
      for (int32_t j = 0; j < ins.num_inputs && reuse_memory_; ++j) {
        const InputRef& in = inputs_[ins.first_input + j];
        if (in.slot >= 0 && state.uses[in.slot].fetch_sub(1, std::memory_order_acq_rel) == 1 &&
            !is_result_[in.slot])
          state.slots[in.slot] = TensorRef();
      }
      for (int32_t o = 0; o < ins.num_outputs; ++o)
        if (slot_uses_[ins.first_output_slot + o] == 0 && !is_result_[ins.first_output_slot + o])
          state.slots[ins.first_output_slot + o] = TensorRef();
      int32_t keep = -1;
      for (int32_t j = 0; j < ins.num_successors; ++j) {
        int32_t succ = successors_[ins.first_successor + j];
        if (state.pending[succ].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
        if (keep < 0) {
          keep = succ;
        } else {
          std::lock_guard<std::mutex> lock(mu);
          ready.push_back(succ);
          wake.notify_one();
        }
      }
      if (completed.fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
        std::lock_guard<std::mutex> lock(mu);  // a waiter checks `finished` under the lock: none misses this
        wake.notify_all();
      }
      next = keep;
    }
  }
  return failed.load() ? error : Status::OK();
}

Status ExecPlan::run(const FunctionGraph& fn, std::span<TensorImpl* const> args, OutputList& results,
                     std::span<TensorRef> owned, std::span<const TensorRef> destinations) {
  const Graph& g = fn.graph;
  size_t expected = static_cast<size_t>(fn.num_call_args());
  if (args.size() != expected)
    return invalid_argument("function ", fn.name, " takes ", expected, " argument(s), got ", args.size());
  ScopedFlushDenormals flush;  // Note [Where denormals flush]: once per call, not per instruction
  RunState* state = acquire_state();
  for (size_t i = 0; i < fn.args.size(); ++i) {
    TensorImpl* value = i < args.size() ? args[i] : fn.captured_values[i - args.size()].get();
    const TensorSpec& spec = g.node(fn.args[i]).outputs[0];
    bool shape_ok = !spec.shape.rank_known() || spec.shape.rank() == value->shape().rank();
    for (int d = 0; shape_ok && spec.shape.rank_known() && d < spec.shape.rank(); ++d)
      shape_ok = spec.shape.dim(d) < 0 || spec.shape.dim(d) == value->shape().dim(d);
    if (value->dtype() != spec.dtype || !shape_ok) {
      release_state(state);
      return invalid_argument("function ", fn.name, ": argument ", i, " ('", g.node(fn.args[i]).name,
                              "') must be ", dtype_name(spec.dtype), spec.shape.to_string(), ", got ",
                              dtype_name(value->dtype()), value->shape().to_string());
    }
    if (arg_slots_[i] >= 0)
      state->slots[arg_slots_[i]] = i < owned.size() ? std::move(owned[i]) : TensorRef(value);
  }
  // Beside other busy processes a parallel run would wait for descheduled workers (Note [Cores others
  // leave free] in core/parallel.cc): with one core free, the plan runs in order.
  const bool parallel =
      parallel_ && !omp_in_parallel() && inter_op_threads() > 1 && cores_free_for_parallel_work() > 1;
  state->arena_active = !parallel && arena_ready(*state);
  state->destinations = destinations;
  Status s = parallel ? run_parallel(fn, *state) : run_sequential(fn, *state);
  state->destinations = {};
  results.clear();
  if (s.ok())
    for (const InputRef& r : results_)
      results.push_back(r.constant != nullptr ? TensorRef(r.constant) : state->slots[r.slot]);
  if (arena_bytes_ > kKeptArenaBytes) {
    // A large arena goes back to the shared freelists between calls, so idle functions do not each hold
    // one; taking it again next call costs one freelist hit and its views, small beside its values' work.
    state->arena = TensorRef();
    state->arena_views.clear();
  }
  release_state(state);
  return s;
}

CompiledFunction::CompiledFunction(std::shared_ptr<const FunctionGraph> fn)
    : CompiledFunction(std::move(fn), passes::optimizer_options()) {}

// Whether `fn` calls (PartitionedCall, transitively) a function with a node that asks for a device.
static bool calls_functions_with_devices(const FunctionGraph& fn, int depth = 0) {
  static const OpDef& call_op = op_def("PartitionedCall");
  if (depth > 16) return false;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op != &call_op) continue;
    auto callee = FunctionLibrary::global().find(std::get<std::string>(n.attrs[0]));
    if (callee == nullptr) continue;
    for (int32_t k = 0; k < callee->graph.num_nodes(); ++k)
      if (!callee->graph.node(k).requested_device.empty()) return true;
    if (calls_functions_with_devices(*callee, depth + 1)) return true;
  }
  return false;
}

// A function whose nodes sit on several devices: one CompiledFunction per partition, run concurrently
// (Note [Send/receive order] in runtime/partition.h), and the whole function unpartitioned for calls that
// cannot get a thread per partition.
struct CompiledFunction::MultiDevice {
  std::vector<Device> devices;
  std::vector<std::unique_ptr<CompiledFunction>> parts;
  std::vector<std::vector<int>> call_args;
  std::vector<std::pair<int, int>> results;
  int num_keys = 0;
  passes::OptimizerOptions options;
  mutable std::once_flag whole_once;
  mutable std::unique_ptr<CompiledFunction> whole;
};

CompiledFunction::CompiledFunction(std::shared_ptr<const FunctionGraph> fn,
                                   const passes::OptimizerOptions& options)
    : CompiledFunction(std::move(fn), options, /*partition=*/true) {}

CompiledFunction::CompiledFunction(std::shared_ptr<const FunctionGraph> fn,
                                   const passes::OptimizerOptions& options, bool partition)
    : fn_(std::move(fn)) {
  if (partition) {
    // Calls of functions with devices are inlined first, so their nodes are placed and partitioned with
    // the caller's (the optimizer would otherwise inline them into one device's plan).
    std::shared_ptr<const FunctionGraph> to_place = fn_;
    if (options.enabled(options.function_inlining) && calls_functions_with_devices(*fn_)) {
      auto copy = std::make_shared<FunctionGraph>(*fn_);
      for (int round = 0; round < 8; ++round) {
        auto inlined = passes::inline_function_calls(*copy);
        if (!inlined.ok() || *inlined == 0) break;
      }
      to_place = std::move(copy);
    }
    auto placed = place_function(*to_place, soft_device_placement());
    if (!placed.ok()) {  // hard placement on a device that does not exist: every call reports it
      status_ = placed.status();
      optimized_ = fn_;
      return;
    }
    const std::vector<Device>& devices = *placed;
    const bool one_device =
        std::all_of(devices.begin(), devices.end(), [&](Device d) { return d == devices[0]; });
    if (!devices.empty() && one_device && !(devices[0] == Device{})) {
      on_other_device_ = true;
      device_ = devices[0];
    } else if (!one_device) {
      auto partitioned = partition_function(*to_place, devices);
      if (partitioned.ok()) {
        multi_ = std::make_unique<MultiDevice>();
        multi_->options = options;
        multi_->num_keys = partitioned->num_keys;
        multi_->results = partitioned->results;
        for (Partition& p : partitioned->partitions) {
          multi_->devices.push_back(p.device);
          multi_->call_args.push_back(p.call_args);
          multi_->parts.push_back(std::make_unique<CompiledFunction>(std::move(p.function), options, false));
        }
        optimized_ = fn_;
        return;
      }  // a graph the partitioner cannot cut runs on one device
    }
  }
  auto optimized = passes::optimize_function(*fn_, options);
  if (!optimized.ok()) {
    // An optimizer bug: every call reports it, and no plan is built over a graph a pass left broken.
    status_ = optimized.status();
    optimized_ = fn_;
    return;
  }
  optimized_ = std::move(optimized).value();
  plan_ = std::make_unique<ExecPlan>(*optimized_, options.enabled(options.memory_optimization));
  options_ = options;
  if (partition && !on_other_device_ && shape_specialization_enabled()) {
    for (int i = 0; i < fn_->num_call_args(); ++i)
      if (!fn_->graph.node(fn_->args[i]).outputs[0].shape.fully_defined()) {
        specializations_ = std::make_unique<Specializations>();
        break;
      }
  }
}

CompiledFunction::~CompiledFunction() = default;

// Note [Shape specialization]
// A function traced with unknown dims (a Keras train step over a None batch, as tf_keras traces it; a
// serving signature; a loop body reading stacks of a run-time length) is optimized for those unknown dims:
// element-wise groups whose operands are not known to share a run-time shape stay apart, nothing goes in
// the memory arena, kernels are not prepared. Called again and again with the same shapes, it gets a plan
// of its own for them: the traced graph copied, re-inferred for the call's shapes (graph/specialize.h) and
// optimized as if traced for them. The traced graph, and what Python saw while tracing, keep their unknown
// dims. A shape is specialized at its second call (the first may be the only one), at most four per
// function; a function seen with more than 64 signatures (a loop variable growing each iteration) stops
// looking. A graph that cannot be specialized (a shape function rejecting the shapes) keeps its general
// plan and stops looking too, so that its calls never wait on the lock. EMBER_SHAPE_SPECIALIZATION=0 turns it
// off.
struct CompiledFunction::Specializations {
  static constexpr int kMaxPlans = 4;
  static constexpr size_t kMaxSignatures = 64;
  std::atomic<const CompiledFunction*> ready[kMaxPlans] = {};
  std::atomic<int> count{0};
  std::atomic<bool> closed{false};
  std::mutex mu;
  std::vector<std::unique_ptr<CompiledFunction>> plans;
  std::vector<std::pair<std::vector<Shape>, int>> seen;  // signatures without a plan, and their calls
};

const CompiledFunction* CompiledFunction::specialized_for(std::span<TensorImpl* const> args) const {
  Specializations& s = *specializations_;
  const int call_args = fn_->num_call_args();
  if (static_cast<int>(args.size()) < call_args) return nullptr;
  auto matches = [&](const CompiledFunction& c) {
    for (int i = 0; i < call_args; ++i)
      if (c.fn_->graph.node(c.fn_->args[i]).outputs[0].shape != args[i]->shape()) return false;
    return true;
  };
  const int count = s.count.load(std::memory_order_acquire);
  for (int k = 0; k < count; ++k)
    if (const CompiledFunction* c = s.ready[k].load(std::memory_order_acquire); matches(*c)) return c;
  if (s.closed.load(std::memory_order_relaxed)) return nullptr;
  std::vector<Shape> signature;
  for (int i = 0; i < call_args; ++i) signature.push_back(args[i]->shape());
  std::lock_guard<std::mutex> lock(s.mu);
  for (const auto& plan : s.plans)
    if (matches(*plan)) return plan.get();  // made by another thread meanwhile
  auto it = std::find_if(s.seen.begin(), s.seen.end(), [&](const auto& e) { return e.first == signature; });
  if (it == s.seen.end()) {
    if (s.seen.size() >= Specializations::kMaxSignatures)
      s.closed.store(true, std::memory_order_relaxed);
    else
      s.seen.emplace_back(std::move(signature), 1);
    return nullptr;
  }
  if (++it->second != 2) return nullptr;
  // A failure closes the function: its calls would otherwise take the lock for ever, and a graph one shape
  // of which the shape functions reject is unlikely to fare better with the next.
  auto give_up = [&] {
    s.closed.store(true, std::memory_order_relaxed);
    return nullptr;
  };
  auto specialized = specialize_shapes(*fn_, {signature.data(), signature.size()});
  if (!specialized.ok()) return give_up();
  auto plan = std::make_unique<CompiledFunction>(std::move(specialized).value(), options_, false);
  if (!plan->status_.ok() || plan->plan_ == nullptr) return give_up();
  s.seen.erase(it);
  const CompiledFunction* made = plan.get();
  s.plans.push_back(std::move(plan));
  const int k = s.count.load(std::memory_order_relaxed);
  s.ready[k].store(made, std::memory_order_release);
  s.count.store(k + 1, std::memory_order_release);
  if (k + 1 == Specializations::kMaxPlans) s.closed.store(true, std::memory_order_relaxed);
  return made;
}

bool CompiledFunction::runs_in_parallel() const {
  return multi_ != nullptr || (plan_ != nullptr && plan_->parallel());
}

std::vector<std::shared_ptr<const FunctionGraph>> CompiledFunction::partitions() const {
  std::vector<std::shared_ptr<const FunctionGraph>> out;
  if (multi_)
    for (const auto& p : multi_->parts) out.push_back(p->shared_function());
  return out;
}

Status CompiledFunction::run_multi_device(std::span<TensorImpl* const> args, OutputList& results) const {
  const MultiDevice& m = *multi_;
  const int parts = static_cast<int>(m.parts.size());
  auto run_whole = [&]() -> Status {
    std::call_once(m.whole_once,
                   [&] { m.whole = std::make_unique<CompiledFunction>(fn_, m.options, false); });
    return m.whole->run(args, results);
  };
  // Each partition needs a thread of its own for its receives to be met (Note [Send/receive order]):
  // inside another parallel region OpenMP gives a team of one, so such calls run unpartitioned.
  if (omp_in_parallel() || parts > omp_get_thread_limit()) return run_whole();
  Rendezvous rendezvous(m.num_keys);
  std::vector<OutputList> outputs(parts);
  std::vector<Status> statuses(parts);
  std::atomic<bool> short_team{false};
#pragma omp parallel num_threads(parts)
  {
    if (omp_get_num_threads() < parts) {
      short_team.store(true);
    } else {
      const int p = omp_get_thread_num();
      DeviceScope device(m.devices[p]);
      RendezvousScope scope(&rendezvous);
      SmallVector<TensorImpl*, 4> part_args;
      for (int a : m.call_args[p]) part_args.push_back(args[a]);
      statuses[p] = m.parts[p]->run({part_args.data(), part_args.size()}, outputs[p]);
      if (!statuses[p].ok()) rendezvous.abort(statuses[p]);
    }
  }
  if (short_team.load()) return run_whole();
  for (const Status& s : statuses)
    if (!s.ok()) return s;
  results.clear();
  for (auto [p, i] : m.results) results.push_back(outputs[p][i]);
  return Status::OK();
}

int CompiledFunction::in_place_candidates() const { return plan_ ? plan_->in_place_candidates() : 0; }

int64_t CompiledFunction::arena_bytes() const { return plan_ ? plan_->arena_bytes() : 0; }

int32_t CompiledFunction::arena_slots() const { return plan_ ? plan_->arena_slots() : 0; }

Status CompiledFunction::run(std::span<TensorImpl* const> args, OutputList& results) const {
  if (!status_.ok()) return status_;
  if (multi_) [[unlikely]]
    return run_multi_device(args, results);
  if (specializations_ != nullptr)
    if (const CompiledFunction* specialized = specialized_for(args)) return specialized->run(args, results);
  if (on_other_device_) [[unlikely]] {
    DeviceScope device(device_);
    return plan_->run(*optimized_, args, results);
  }
  return plan_->run(*optimized_, args, results);
}

Status CompiledFunction::run_owned(std::span<TensorRef> owned, OutputList& results,
                                   std::span<const TensorRef> destinations) const {
  if (!status_.ok()) return status_;
  if (multi_ || on_other_device_) [[unlikely]] {
    SmallVector<TensorImpl*, 4> args;
    for (const TensorRef& t : owned) args.push_back(t.get());
    return run({args.data(), args.size()}, results);
  }
  SmallVector<TensorImpl*, 4> args;
  for (const TensorRef& t : owned) args.push_back(t.get());
  if (specializations_ != nullptr)
    if (const CompiledFunction* specialized = specialized_for({args.data(), args.size()}))
      return specialized->run_owned(owned, results, destinations);
  return plan_->run(*optimized_, {args.data(), args.size()}, results, owned, destinations);
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
  out->callees = fn.callees;  // its calls name them (an imported graph's library functions live only here)
  std::vector<bool> needed(g.num_nodes(), false);
  std::unordered_map<int64_t, int32_t> fed_index;  // (node << 32 | output) -> new placeholder
  auto key = [](ValueRef v) {
    return (static_cast<int64_t>(v.node) << 32) | static_cast<uint32_t>(v.output);
  };
  std::vector<int32_t> stack;
  for (ValueRef f : fetches)  // a fetch that is fed is its own placeholder: nothing to walk
    if (std::find(feeds.begin(), feeds.end(), f) == feeds.end()) stack.push_back(f.node);
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
  std::vector<int32_t> copied(g.num_nodes(), -1);  // a node's copy (control edges: it may have no outputs)
  const OpDef& placeholder = op_def("Placeholder");
  for (ValueRef f : feeds) {
    const TensorSpec& spec = g.spec(f);
    AttrList attrs = placeholder_attrs(spec.dtype, spec.shape);
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
    copied[n] = copy;
    for (int32_t c : node.control_inputs)
      if (copied[c] >= 0) out->graph.add_control_input(copy, copied[c]);
    // A stateful node the fetches wait for (a variable update before the read that is fetched) must run,
    // as it did in the original: it stays a control output of the carved function.
    if (std::find(fn.control_outputs.begin(), fn.control_outputs.end(), n) != fn.control_outputs.end())
      out->control_outputs.push_back(copy);
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

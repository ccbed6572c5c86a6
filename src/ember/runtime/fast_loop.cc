#include "ember/runtime/fast_loop.h"

#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include "ember/jit/native_loop.h"
#include "ember/kernels/fused_elementwise.h"
#include "ember/ops/op_def.h"

namespace ember {

// Note [Fast loops]
// A scalar loop such as `while i < n: i, x = i + 1, x * 0.999 + 0.5` costs about a microsecond per
// iteration as one plan run of its step (Note [Loop steps] in executor.cc): the run state, the arena
// check, an allocation per value, the result list. The arithmetic is a few nanoseconds. So a step whose
// optimized graph holds only
//   - the loop variables, constants and captured values,
//   - stateless element-wise ops (kElementwise, writing preallocated outputs) and fused element-wise groups
//     (FusedElementwise, which are not kElementwise but are stateless and element-wise),
//   - Identity (an alias of its input) and NoOp,
// every value of a fully defined shape of at most kMaxElements elements, on the CPU, whose results are the
// new loop variables (the same dtypes and shapes as the old: no accumulation, no shape that changes) and
// a scalar bool condition, runs here instead: every value gets a tensor once per loop, each node's kernel
// context is built once, and an iteration runs the nodes in graph order, reads the condition (before the
// copies: it may be a loop variable's old value, in a body that swaps variables), then copies the new loop
// variables over the old (through staging copies where the body swaps them). A node runs as its kernel would:
// an op of the element-wise tables whose kernel would hand its operands whole to one loop (same shapes, or a
// scalar against a tensor: at most kMaxElements elements are one chunk) calls that loop directly; a fused
// group whose native kernel is compiled, and would be called once over the whole domain, calls it directly
// (FusedProgram::native_whole_kernel, read once per loop as a plan reads it once per call); any other node
// calls its kernel, with the preparation the plan makes. Same loops, same programs: the results are the
// normal path's bits, NaNs included. The bench's `i + 1`, `x * 0.999 + 0.5`, `i < n` step is then a
// few direct calls per iteration (about 16 ns).
//
// That node loop is the first tier. A step whose every node calls a table loop directly or is a fused
// group (no node that runs its own kernel: the integer ops that check their operands, broadcasts, ...)
// is also described as a jit::LoopProgram, the fused groups' programs inlined, and the JIT compiles the
// whole loop into one function in the background (Note [Native loops] in jit/loop_codegen.cc): the same
// element functions as native fused kernels, the loop variables in registers, about 2.5 ns an iteration for
// the bench's step. A run reads the slot once: until the code arrives it runs the node loop, afterwards
// the native loop, which stops where the node loop would (the condition false, or the iteration budget)
// with the same bits, or where an integer division by zero (or a negative integer power) would make the
// node loop's kernel fail: that iteration goes to the normal path as on the first tier.
//
// The iteration that fails (a kernel error, an exception) or that would pass the iteration budget (the
// fuzzers' cap) is not completed here: the loop variables are left as that iteration found them and the
// While kernel runs it again on the normal path, which then fails with its usual message (node, op, source
// line, iteration) or ends as ResourceExhausted. With the profiler on, the fast part of a loop is one span
// named by the step function (the normal path records one per iteration).

namespace {

std::atomic<int64_t> fast_iterations{0};
std::atomic<int64_t> native_iterations{0};

bool small_and_static(const TensorSpec& spec) {
  return spec.shape.fully_defined() && spec.shape.num_elements() <= FastLoop::kMaxElements &&
         !is_string(spec.dtype);
}

bool on_host_cpu(const Node& node) {
  const std::string& d = node.assigned_device;
  return d.empty() || (d.size() >= 5 && d.compare(d.size() - 5, 5, "CPU:0") == 0);
}

// The element-wise nodes a fast loop runs with their own kernels.
bool runs_fast(const Node& node) {
  const OpDef& op = *node.op;
  const bool elementwise = op.has_flag(kElementwise) || op.name == "FusedElementwise";
  return elementwise && !op.has_flag(kStateful) && !op.has_flag(kKernelAllocates) &&
         !op.has_flag(kReadsResource) && !op.has_flag(kWritesResource);
}

// A scalar's bytes without a call to memcpy.
inline void copy_bytes(void* to, const void* from, size_t bytes) {
  switch (bytes) {
    case 4: {
      uint32_t v;
      std::memcpy(&v, from, 4);
      std::memcpy(to, &v, 4);
      return;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, from, 8);
      std::memcpy(to, &v, 8);
      return;
    }
    default:
      std::memcpy(to, from, bytes);
  }
}

// The op's row in the element-wise tables, by its TensorFlow name: {unary?, op}, or {false, -1}.
std::pair<bool, int> elementwise_row(const std::string& name) {
  static const auto& rows = *new std::unordered_map<std::string, std::pair<bool, int>>([] {
    std::unordered_map<std::string, std::pair<bool, int>> by_name;
    for (int op = 0; op < static_cast<int>(kernels::UnaryOp::kCount); ++op)
      by_name[kernels::kUnaryInfo[op].op_name] = {true, op};
    for (int op = 0; op < static_cast<int>(kernels::BinaryOp::kCount); ++op)
      by_name[kernels::kBinaryInfo[op].op_name] = {false, op};
    return by_name;
  }());
  auto it = rows.find(name);
  return it == rows.end() ? std::pair<bool, int>{false, -1} : it->second;
}

// The loop kernels::run_unary / run_binary would call for these static shapes, all at once (at most
// kMaxElements elements: one chunk), or none where the kernel does more: the integer ops that check their
// operands, a broadcast that is not a scalar against a tensor, an empty output.
void pick_direct_loop(const Node& node, const Graph& g, kernels::UnaryLoop& unary,
                      kernels::BinaryLoop& binary) {
  const auto [is_unary, op] = elementwise_row(node.op->name);
  // The row registered the op (math.cc), with the row's loop as its tile function.
  if (op < 0 || (is_unary ? node.op->tile_unary : node.op->tile_binary) != op || node.outputs.size() != 1)
    return;
  const int64_t n = node.outputs[0].shape.num_elements();
  if (n == 0) return;
  const auto& tables = kernels::elementwise_tables();
  const DType dtype = g.spec(node.inputs[0]).dtype;
  if (is_unary) {
    if (node.inputs.size() == 1) unary = tables.unary[op][static_cast<int>(dtype)];
    return;
  }
  const auto binary_op = static_cast<kernels::BinaryOp>(op);
  if (node.inputs.size() != 2 || g.spec(node.inputs[1]).dtype != dtype) return;
  if (is_integer(dtype) &&
      (binary_op == kernels::BinaryOp::kFloorDiv || binary_op == kernels::BinaryOp::kFloorMod ||
       binary_op == kernels::BinaryOp::kPow))
    return;
  const kernels::BinaryLoops& loops = tables.binary[op][static_cast<int>(dtype)];
  const int64_t na = g.spec(node.inputs[0]).shape.num_elements();
  const int64_t nb = g.spec(node.inputs[1]).shape.num_elements();
  if (na == nb && na == n)
    binary = loops.vv;
  else if (na == 1 && nb == n)
    binary = loops.sv;
  else if (na == n && nb == 1)
    binary = loops.vs;
}

// An integer FloorDiv, FloorMod or Pow of the element-wise tables on operands a loop takes whole (same
// shapes, or a scalar against a tensor): the node loop runs its kernel, which checks the divisor or
// exponent first; a native loop makes the same check and hands the iteration back where it fails.
bool checked_integer_op(const Node& node, const Graph& g) {
  const auto [is_unary, op] = elementwise_row(node.op->name);
  if (is_unary || op < 0 || node.op->tile_binary != op || node.inputs.size() != 2 || node.outputs.size() != 1)
    return false;
  const auto binary_op = static_cast<kernels::BinaryOp>(op);
  if (binary_op != kernels::BinaryOp::kFloorDiv && binary_op != kernels::BinaryOp::kFloorMod &&
      binary_op != kernels::BinaryOp::kPow)
    return false;
  const DType dtype = g.spec(node.inputs[0]).dtype;
  if (!is_integer(dtype) || g.spec(node.inputs[1]).dtype != dtype) return false;
  const int64_t n = node.outputs[0].shape.num_elements();
  const int64_t na = g.spec(node.inputs[0]).shape.num_elements();
  const int64_t nb = g.spec(node.inputs[1]).shape.num_elements();
  return n > 0 && (na == n || na == 1) && (nb == n || nb == 1);
}

}  // namespace

std::shared_ptr<const FastLoop> FastLoop::build(const FunctionGraph& step) {
  const Graph& g = step.graph;
  const int num_vars = step.num_call_args();
  if (step.results.size() != static_cast<size_t>(num_vars) + 1) return nullptr;
  auto loop = std::make_shared<FastLoop>();
  loop->step_ = &step;
  std::vector<int32_t> first_value(g.num_nodes(), -1);
  auto value_of = [&](ValueRef v) { return first_value[v.node] + v.output; };
  for (size_t k = 0; k < step.args.size(); ++k) {
    const int32_t node = step.args[k];
    first_value[node] = static_cast<int32_t>(loop->values_.size());
    Value value;
    if (static_cast<int>(k) < num_vars) {
      const TensorSpec& spec = g.node(node).outputs[0];
      if (!small_and_static(spec)) return nullptr;
      value.var = static_cast<int32_t>(k);
      loop->var_specs_.push_back(spec);
    } else {
      loop->fixed_.push_back(step.captured_values[k - num_vars]);
      value.fixed = loop->fixed_.back().get();
    }
    loop->values_.push_back(value);
  }
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (first_value[i] >= 0) continue;  // an argument
    for (ValueRef in : node.inputs)
      if (in.node >= i || first_value[in.node] < 0) return nullptr;  // not in graph order
    if (!on_host_cpu(node)) return nullptr;
    const std::string& name = node.op->name;
    if (name == "NoOp") continue;
    if (name == "Const") {
      first_value[i] = static_cast<int32_t>(loop->values_.size());
      loop->fixed_.push_back(std::get<TensorRef>(node.attrs[0]));
      loop->values_.push_back(Value{.fixed = loop->fixed_.back().get()});
      continue;
    }
    if (name == "Identity" && node.inputs.size() == 1) {
      first_value[i] = value_of(node.inputs[0]);
      continue;
    }
    if (!runs_fast(node) || node.inputs.empty()) return nullptr;
    for (const TensorSpec& spec : node.outputs)
      if (!small_and_static(spec)) return nullptr;
    SmallVector<TensorSpec, 4> input_specs;
    for (ValueRef in : node.inputs) {
      if (!small_and_static(g.spec(in))) return nullptr;
      input_specs.push_back(g.spec(in));
    }
    // The kernel the plan picks (ExecPlan's dispatch).
    const OpDef& op = *node.op;
    const int num_inputs = static_cast<int>(node.inputs.size());
    const DType dispatch = op.dispatch_input >= 0 && op.dispatch_input < num_inputs
                               ? g.spec(node.inputs[op.dispatch_input]).dtype
                               : node.outputs[0].dtype;
    StepNode step_node;
    step_node.node = &node;
    step_node.kernel = op.kernels[static_cast<int>(dispatch)];
    if (step_node.kernel == nullptr) return nullptr;
    if (op.prepare != nullptr) {
      PrepareContext pctx;
      pctx.attrs = {node.attrs.data(), node.attrs.size()};
      pctx.op = &op;
      pctx.inputs = {input_specs.data(), input_specs.size()};
      pctx.outputs = {node.outputs.data(), node.outputs.size()};
      auto prepared = op.prepare(pctx);  // as in the plan: unprepared, the kernel works from its inputs
      if (prepared.ok()) step_node.prepared = std::move(prepared).value();
    }
    step_node.fused = name == "FusedElementwise" && step_node.prepared != nullptr;
    pick_direct_loop(node, g, step_node.unary, step_node.binary);
    for (ValueRef in : node.inputs) step_node.inputs.push_back(value_of(in));
    first_value[i] = step_node.first_value = static_cast<int32_t>(loop->values_.size());
    for (size_t o = 0; o < node.outputs.size(); ++o)
      loop->values_.push_back(
          Value{.node = static_cast<int32_t>(loop->nodes_.size()), .output = static_cast<int32_t>(o)});
    loop->nodes_.push_back(std::move(step_node));
  }
  for (int k = 0; k < num_vars; ++k) {
    const ValueRef r = step.results[k];
    const TensorSpec& spec = g.spec(r);
    if (first_value[r.node] < 0 || spec.dtype != loop->var_specs_[k].dtype ||
        spec.shape != loop->var_specs_[k].shape)
      return nullptr;
    loop->next_vars_.push_back(value_of(r));
  }
  const ValueRef cond = step.results.back();
  const TensorSpec& cond_spec = g.spec(cond);
  if (first_value[cond.node] < 0 || cond_spec.dtype != DType::kBool || cond_spec.shape.rank() != 0)
    return nullptr;
  loop->condition_ = value_of(cond);
  if (auto program = loop->native_program(loop->native_fixed_)) {
    loop->native_ = std::make_shared<jit::NativeLoopSlot>();
    jit::request_native_loop(*program, loop->native_);
  }
  return loop;
}

std::optional<jit::LoopProgram> FastLoop::native_program(std::vector<const void*>& fixed_data) const {
  jit::LoopProgram program;
  program.num_vars = static_cast<int>(var_specs_.size());
  std::vector<int32_t> id_of(values_.size(), -1);
  auto add_value = [&](DType dtype, int64_t elements) {
    program.values.push_back(jit::LoopProgram::Value{dtype, elements});
    return static_cast<int32_t>(program.values.size()) - 1;
  };
  for (const TensorSpec& spec : var_specs_) add_value(spec.dtype, spec.shape.num_elements());
  for (size_t v = 0; v < values_.size(); ++v) {
    if (values_[v].var >= 0) id_of[v] = values_[v].var;
    if (values_[v].fixed == nullptr) continue;
    id_of[v] = add_value(values_[v].fixed->dtype(), values_[v].fixed->shape().num_elements());
    fixed_data.push_back(values_[v].fixed->raw_data());
  }
  program.num_fixed = static_cast<int>(fixed_data.size());
  for (const StepNode& step_node : nodes_) {
    const Node& node = *step_node.node;
    const int64_t elements = node.outputs[0].shape.num_elements();
    if (step_node.unary != nullptr || step_node.binary != nullptr || checked_integer_op(node, step_->graph)) {
      jit::LoopProgram::Op op;
      op.opcode = step_node.unary != nullptr ? kernels::FusedOpcode::kUnary : kernels::FusedOpcode::kBinary;
      op.op = elementwise_row(node.op->name).second;
      op.dtype = program.values[id_of[step_node.inputs[0]]].dtype;
      op.a = id_of[step_node.inputs[0]];
      if (op.opcode == kernels::FusedOpcode::kBinary) op.b = id_of[step_node.inputs[1]];
      program.ops.push_back(op);
      id_of[step_node.first_value] = add_value(node.outputs[0].dtype, elements);
      continue;
    }
    if (node.op->name != "FusedElementwise") return std::nullopt;  // a kernel of its own
    // A fused program's instructions, each over the whole domain, its inputs read whole or as scalars.
    const DType dtype = node.outputs[0].dtype;
    auto fused = kernels::FusedProgram::decode(std::get<std::vector<int64_t>>(node.attrs[0]),
                                               static_cast<int>(step_node.inputs.size()),
                                               std::get<std::vector<int64_t>>(node.attrs[1]), dtype);
    if (!fused.ok() || fused->reduction()) return std::nullopt;
    std::vector<int32_t> local;
    for (int32_t in : step_node.inputs) {
      const int64_t in_elements = program.values[id_of[in]].elements;
      if (in_elements != elements && in_elements != 1) return std::nullopt;
      local.push_back(id_of[in]);
    }
    for (const kernels::FusedInstruction& instr : fused->instructions()) {
      program.ops.push_back(
          jit::LoopProgram::Op{instr.opcode, instr.op, dtype, local[instr.a],
                               instr.opcode == kernels::FusedOpcode::kBinary ? local[instr.b] : -1});
      local.push_back(add_value(dtype, elements));
    }
    if (fused->results().size() != node.outputs.size()) return std::nullopt;
    for (size_t r = 0; r < fused->results().size(); ++r) {
      const int32_t id = local[fused->results()[r]];
      if (program.values[id].elements != elements || node.outputs[r].shape.num_elements() != elements)
        return std::nullopt;
      id_of[step_node.first_value + static_cast<int32_t>(r)] = id;
    }
  }
  for (const jit::LoopProgram::Value& value : program.values)
    if (is_complex(value.dtype) || is_string(value.dtype) || value.elements < 1) return std::nullopt;
  for (int32_t v : next_vars_) program.next.push_back(id_of[v]);
  program.condition = id_of[condition_];
  return program;
}

FastLoopProgress FastLoop::run_native(std::span<TensorRef> vars, int64_t max_iterations) const {
  FastLoopProgress progress;
  const size_t num_vars = var_specs_.size();
  const jit::NativeLoopFn fn = native_->get();
  // The loop variables' arrays, copies of the caller's as on the node loop; the native loop reads them
  // once and writes them once.
  std::vector<TensorRef> current(num_vars);
  SmallVector<void*, 4> data;
  for (size_t k = 0; k < num_vars; ++k) {
    auto copy = TensorImpl::allocate(var_specs_[k].dtype, var_specs_[k].shape);
    if (!copy.ok()) return progress;
    current[k] = std::move(copy).value();
    std::memcpy(current[k]->mutable_raw_data(), vars[k]->raw_data(), current[k]->nbytes());
    data.push_back(current[k]->mutable_raw_data());
  }
  uint8_t finished = 0;
  progress.iterations = fn(data.data(), native_fixed_.data(), max_iterations, &finished);
  progress.finished = finished != 0;
  for (size_t k = 0; k < num_vars; ++k) vars[k] = std::move(current[k]);
  fast_iterations.fetch_add(progress.iterations, std::memory_order_relaxed);
  native_iterations.fetch_add(progress.iterations, std::memory_order_relaxed);
  return progress;
}

FastLoopProgress FastLoop::run(std::span<TensorRef> vars, int64_t max_iterations) const {
  FastLoopProgress progress;
  const size_t num_vars = var_specs_.size();
  if (max_iterations <= 0 || vars.size() != num_vars) return progress;
  for (size_t k = 0; k < num_vars; ++k) {
    const TensorSpec& spec = var_specs_[k];
    if (!vars[k] || vars[k]->is_symbolic() || vars[k]->dtype() != spec.dtype ||
        vars[k]->shape() != spec.shape)
      return progress;
  }
  if (native_ != nullptr && native_->get() != nullptr) return run_native(vars, max_iterations);
  // Every value's tensor, allocated once: the loop variables (copies of the caller's, so that the kernels
  // never write to them), then each node's outputs.
  std::vector<TensorRef> current(num_vars), staged(num_vars);
  for (size_t k = 0; k < num_vars; ++k) {
    const TensorSpec& spec = var_specs_[k];
    auto copy = TensorImpl::allocate(spec.dtype, spec.shape);
    auto stage = TensorImpl::allocate(spec.dtype, spec.shape);
    if (!copy.ok() || !stage.ok()) return progress;
    current[k] = std::move(copy).value();
    staged[k] = std::move(stage).value();
    std::memcpy(current[k]->mutable_raw_data(), vars[k]->raw_data(), current[k]->nbytes());
  }
  std::vector<OutputList> outputs(nodes_.size());
  std::vector<TensorImpl*> tensor_of(values_.size(), nullptr);
  for (size_t v = 0; v < values_.size(); ++v) {
    const Value& value = values_[v];
    if (value.var >= 0) {
      tensor_of[v] = current[value.var].get();
    } else if (value.fixed != nullptr) {
      tensor_of[v] = value.fixed;
    } else {
      const TensorSpec& spec = nodes_[value.node].node->outputs[value.output];
      auto t = TensorImpl::allocate(spec.dtype, spec.shape);
      if (!t.ok()) return progress;
      tensor_of[v] = t->get();
      outputs[value.node].push_back(std::move(t).value());
    }
  }
  std::vector<SmallVector<TensorImpl*, 4>> inputs(nodes_.size());
  std::vector<KernelContext> contexts(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const StepNode& step_node = nodes_[n];
    for (int32_t v : step_node.inputs) inputs[n].push_back(tensor_of[v]);
    KernelContext& ctx = contexts[n];
    ctx.op = step_node.node->op;
    ctx.attrs = {step_node.node->attrs.data(), step_node.node->attrs.size()};
    ctx.inputs = {inputs[n].data(), inputs[n].size()};
    ctx.output_specs = {step_node.node->outputs.data(), step_node.node->outputs.size()};
    ctx.outputs = {outputs[n].data(), outputs[n].size()};
    ctx.prepared = step_node.prepared.get();
  }
  // The copies that make the new loop variables current: straight over the old values, unless a new value
  // is another variable's old one (a swap), when all go through the staging copies first.
  struct Copy {
    void* to;
    const void* from;
    size_t bytes;
  };
  bool swaps = false;
  for (size_t k = 0; k < num_vars; ++k) {
    const int32_t var = values_[next_vars_[k]].var;
    swaps = swaps || (var >= 0 && var != static_cast<int32_t>(k));
  }
  std::vector<Copy> copies;
  for (int pass = swaps ? 0 : 1; pass < 2; ++pass) {
    for (size_t k = 0; k < num_vars; ++k) {
      if (values_[next_vars_[k]].var == static_cast<int32_t>(k)) continue;  // returned unchanged
      const void* from = pass == 0 || !swaps ? tensor_of[next_vars_[k]]->raw_data() : staged[k]->raw_data();
      void* to = pass == 0 ? staged[k]->mutable_raw_data() : current[k]->mutable_raw_data();
      copies.push_back(Copy{to, from, current[k]->nbytes()});
    }
  }
  const bool* condition = static_cast<const bool*>(tensor_of[condition_]->raw_data());
  // A failed kernel or an exception ends the fast part; the normal path reruns that iteration and reports.
  // Each node's data pointers, fixed for the whole loop, for the loops and native kernels called directly.
  struct Direct {
    SmallVector<const void*, 4> in;
    SmallVector<void*, 2> out;
    int64_t elements = 0;
    kernels::NativeFusedFn native = nullptr;  // read once per loop, as a plan reads it once per call
  };
  std::vector<Direct> direct(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (TensorImpl* t : inputs[n]) direct[n].in.push_back(t->raw_data());
    for (const TensorRef& t : outputs[n]) direct[n].out.push_back(t->mutable_raw_data());
    direct[n].elements = nodes_[n].node->outputs[0].shape.num_elements();
    if (nodes_[n].fused)
      direct[n].native = kernels::FusedProgram::native_whole_kernel(
          *static_cast<const kernels::PreparedFusedProgram*>(nodes_[n].prepared.get()));
  }
  // The condition is read before the copies: it may be a loop variable's old value (a body that swaps
  // variables), which the copies overwrite.
  bool go_on = false;
  auto iterate = [&] {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      const StepNode& node = nodes_[n];
      const Direct& d = direct[n];
      if (node.binary != nullptr)
        node.binary(d.in[0], d.in[1], d.out[0], d.elements);
      else if (node.unary != nullptr)
        node.unary(d.in[0], d.out[0], d.elements);
      else if (d.native != nullptr)
        d.native(d.in.data(), d.out.data(), d.elements);
      else if (!node.kernel(contexts[n]).ok())
        return false;
    }
    go_on = *condition;
    for (const Copy& c : copies) copy_bytes(c.to, c.from, c.bytes);
    return true;
  };
  try {
    while (progress.iterations < max_iterations && iterate()) {
      ++progress.iterations;
      if (!go_on) {
        progress.finished = true;
        break;
      }
    }
  } catch (abi::__forced_unwind&) {
    throw;  // a thread ended at interpreter exit (Note [No exception escapes an op] in ops/execute.cc)
  } catch (...) {
  }
  for (size_t k = 0; k < num_vars; ++k) vars[k] = std::move(current[k]);
  fast_iterations.fetch_add(progress.iterations, std::memory_order_relaxed);
  return progress;
}

int64_t FastLoop::iterations_run() { return fast_iterations.load(std::memory_order_relaxed); }
int64_t FastLoop::native_iterations_run() { return native_iterations.load(std::memory_order_relaxed); }

}  // namespace ember

// Functional control flow (architecture.md §10): If, While and Case, each in a stateful form and a
// stateless one (TensorFlow's StatelessIf, StatelessWhile, StatelessCase: the branches and body hold no
// stateful op, so the optimizer may fold, deduplicate or prune the node). Their branches, condition and body
// are graph functions of the library, named by string attributes; the kernels run them through the
// function-call hooks (graph_ops.h), so a loop resolves its two functions once and then only runs plans.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "ember/ops/families.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/loop_fast_path.h"
#include "ember/ops/registry.h"
#include "ember/ops/tensor_array.h"

namespace ember {
namespace {

// The most specific spec both branches' results fit (TensorFlow's most_specific_common_supertype).
Shape common_shape(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return Shape::unknown_rank();
  Shape out = a;
  for (int i = 0; i < a.rank(); ++i)
    if (a.dim(i) != b.dim(i)) out.set_dim(i, kUnknownDim);
  return out;
}

// Output specs of calling every function in `names` on `inputs`: they must agree in count and dtypes; the
// shapes are joined.
Status join_branches(const char* op, const std::vector<std::string>& names,
                     std::span<const TensorSpec> inputs, SmallVector<TensorSpec, 2>& outputs) {
  const FunctionCallHooks& hooks = function_call_hooks();
  if (hooks.infer == nullptr) return make_error(Code::kInternal, op, ": no function runtime");
  if (names.empty()) return invalid_argument(op, ": needs at least one branch");
  for (size_t b = 0; b < names.size(); ++b) {
    SmallVector<TensorSpec, 2> specs;
    EMBER_RETURN_IF_ERROR(hooks.infer(names[b], inputs, specs));
    if (b == 0) {
      outputs = std::move(specs);
      continue;
    }
    if (specs.size() != outputs.size())
      return invalid_argument(op, ": branch '", names[b], "' returns ", specs.size(), " value(s), branch '",
                              names[0], "' returns ", outputs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].dtype != outputs[i].dtype)
        return invalid_argument(op, ": output ", i, " is ", dtype_name(outputs[i].dtype), " in branch '",
                                names[0], "' but ", dtype_name(specs[i].dtype), " in branch '", names[b],
                                "'");
      outputs[i].shape = common_shape(outputs[i].shape, specs[i].shape);
    }
  }
  return Status::OK();
}

// TensorFlow's truth value of a predicate tensor: a scalar is true when non-zero; any other tensor is true
// when it has elements.
StatusOr<bool> truth_value(const char* op, const TensorImpl& t) {
  if (t.is_symbolic()) return invalid_argument(op, ": the predicate has no value");
  if (t.shape().rank() != 0) return t.num_elements() > 0;
  bool truth = false;
  visit_dtype(t.dtype(), [&]<typename T>() { truth = static_cast<float>(t.data<T>()[0]) != 0.0f; });
  return truth;
}

Status run_function(const char* op, const std::string& name, std::span<TensorImpl* const> inputs,
                    std::span<TensorRef> outputs) {
  const FunctionCallHooks& hooks = function_call_hooks();
  if (hooks.run == nullptr) return make_error(Code::kInternal, op, ": no function runtime");
  return hooks.run(name, inputs, outputs);
}

// ---- If(cond, input..., then_branch, else_branch)

Status if_shape(InferContext& ctx) {
  std::vector<std::string> names = {ctx.attr_string(0), ctx.attr_string(1)};
  return join_branches(ctx.op->name.c_str(), names, ctx.inputs.subspan(1), ctx.outputs);
}

Status if_kernel(KernelContext& ctx) {
  auto truth = truth_value(ctx.op->name.c_str(), ctx.input(0));
  if (!truth.ok()) return truth.status();
  return run_function(ctx.op->name.c_str(), ctx.attr_string(*truth ? 0 : 1), ctx.inputs.subspan(1),
                      ctx.outputs);
}

// ---- Case(branch_index, input..., branches): an index out of range runs the last branch (the default).

Status case_shape(InferContext& ctx) {
  if (ctx.inputs[0].shape.rank_known() && ctx.inputs[0].shape.rank() != 0)
    return invalid_argument(ctx.op->name, ": branch_index must be a scalar, got shape ",
                            ctx.inputs[0].shape.to_string());
  return join_branches(ctx.op->name.c_str(), split_branch_names(ctx.attr_string(0)), ctx.inputs.subspan(1),
                       ctx.outputs);
}

Status case_kernel(KernelContext& ctx) {
  std::vector<std::string> names = split_branch_names(ctx.attr_string(0));
  if (names.empty()) return invalid_argument(ctx.op->name, ": needs at least one branch");
  const TensorImpl& index_tensor = ctx.input(0);
  if (index_tensor.shape().rank() != 0)
    return invalid_argument(ctx.op->name, ": branch_index must be a scalar, got shape ",
                            index_tensor.shape().to_string());
  int64_t index = index_tensor.data<int32_t>()[0];
  if (index < 0 || index >= static_cast<int64_t>(names.size()))
    index = static_cast<int64_t>(names.size()) - 1;
  return run_function(ctx.op->name.c_str(), names[index], ctx.inputs.subspan(1), ctx.outputs);
}

// ---- While(input..., cond, body, parallel_iterations, _accumulate)
//
// Note [Accumulating While]: with _accumulate = k >= 0 the body returns k values after the loop variables;
// the kernel stacks each iteration's along a new leading axis as they come (Note [Stacking in place]) and
// returns the stacks ([iterations, ...], one output per value) followed by the trip count (an int32
// scalar). The gradient of a
// loop (autodiff/control_flow_gradient.cc) runs the body's forward-with-intermediates function this way, so
// the backward loop reads iteration i's intermediates without running the forward loop again. User graphs
// keep the default -1: the outputs are the loop variables only. The leading underscore makes it an internal
// attribute, which TensorFlow ignores when it imports an exported graph.

// _accumulate, or -1 (off) for an attribute list from a caller that did not complete it.
int64_t accumulate_attr(const AttrReader& ctx) { return ctx.attrs.size() > 3 ? ctx.attr_int(3) : -1; }

// A stacked value's spec: [unknown] + the per-iteration spec.
Shape stacked_shape(const Shape& element) {
  if (!element.rank_known()) return Shape::unknown_rank();
  std::vector<int64_t> dims = {kUnknownDim};
  for (int i = 0; i < element.rank(); ++i) dims.push_back(element.dim(i));
  return Shape(std::span<const int64_t>(dims));
}

Status while_shape(InferContext& ctx) {
  const FunctionCallHooks& hooks = function_call_hooks();
  if (hooks.infer == nullptr) return make_error(Code::kInternal, ctx.op->name, ": no function runtime");
  const int64_t accumulate = std::max<int64_t>(accumulate_attr(ctx), 0);
  const bool accumulating = accumulate_attr(ctx) >= 0;
  SmallVector<TensorSpec, 2> cond_specs;
  EMBER_RETURN_IF_ERROR(hooks.infer(ctx.attr_string(0), ctx.inputs, cond_specs));
  if (cond_specs.size() != 1)
    return invalid_argument(ctx.op->name, ": the condition '", ctx.attr_string(0),
                            "' must return one value, got ", cond_specs.size());
  SmallVector<TensorSpec, 2> body_specs;
  EMBER_RETURN_IF_ERROR(hooks.infer(ctx.attr_string(1), ctx.inputs, body_specs));
  if (body_specs.size() != ctx.inputs.size() + static_cast<size_t>(accumulate))
    return invalid_argument(ctx.op->name, ": the body '", ctx.attr_string(1), "' returns ", body_specs.size(),
                            " value(s) for ", ctx.inputs.size(), " loop variable(s)",
                            accumulate > 0 ? " and " + std::to_string(accumulate) + " accumulated" : "");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (body_specs[i].dtype != ctx.inputs[i].dtype)
      return invalid_argument(ctx.op->name, ": loop variable ", i, " enters the loop as ",
                              dtype_name(ctx.inputs[i].dtype), " but the body returns ",
                              dtype_name(body_specs[i].dtype));
    // Zero iterations return the inputs; any other number, the body's results.
    ctx.outputs.push_back(
        TensorSpec{body_specs[i].dtype, common_shape(ctx.inputs[i].shape, body_specs[i].shape)});
  }
  if (accumulating) {
    for (size_t i = ctx.inputs.size(); i < body_specs.size(); ++i)
      ctx.outputs.push_back(TensorSpec{body_specs[i].dtype, stacked_shape(body_specs[i].shape)});
    ctx.outputs.push_back(TensorSpec{DType::kInt32, Shape()});
  }
  return Status::OK();
}

std::atomic<int64_t> g_stack_bytes_copied{0};

std::mutex& trip_counts_mu() {
  static auto& mu = *new std::mutex();
  return mu;
}

std::unordered_map<const void*, int64_t>& trip_counts() {
  static auto& counts = *new std::unordered_map<const void*, int64_t>();
  return counts;
}

// Note [Stacking in place]: an accumulated value goes into its stack as each iteration produces it, while
// it is still in cache, and the iteration's tensor dies at once (back to the allocator for the next
// iteration) instead of all of them living until the loop ends. The stack grows geometrically from a
// capacity hint: the trip count this loop body had the last time it ran, so a loop that runs the same
// number of iterations every call (an RNN over fixed-length sequences) allocates its stacks once, at the
// right size, and copies each row once. A stack left with spare rows is returned as a view of its first
// rows (the spare capacity is at most what the hint or one doubling added). From the second iteration on
// (the element's shape known), the step is handed each stack's next row as the destination of that value
// (run_resolved_owned), so a producer that writes preallocated outputs (a fused group, a MatMul) writes
// straight into the stack and add() finds the value already in place: no copy at all.
// A gradient's forward loop also stacks values as they enter an iteration (an RNN's h[t-1] and c[t-1], which
// the products' gradients read): the step returns its argument k itself as accumulated value j. There the
// destination that counts is the one of the previous iteration's result k, the new value of loop variable
// k: it is handed row t+1 of stack j, so the loop variable lives in its stack row from the start and
// add() finds it in place. Only rows the stack already has are handed out that way (the last iteration's
// result, for which the loop has no row, is written where its producer likes). Such a row holds a live
// loop variable before it is accumulated, so if the step ever returns something else as value j (it
// never does: it is the same graph every iteration) the stack moves to a new buffer before that row is
// written over.
class Accumulator {
 public:
  // The stack's row `iteration` as a tensor to write the next value into (grown first), or null before the
  // first value fixed the element.
  TensorRef destination(int64_t iteration, int64_t capacity_hint) {
    if (iteration == 0 || row_bytes_ == 0) return TensorRef();
    if (iteration >= capacity_ && !grow(iteration, capacity_hint).ok()) return TensorRef();
    return row_view(iteration);
  }

  // Row `iteration` for the loop variable that enters that iteration and is stacked there, when the stack
  // has that row already (Note [Stacking in place]); null otherwise.
  TensorRef loop_variable_destination(int64_t iteration) const {
    if (iteration == 0 || row_bytes_ == 0 || iteration >= capacity_) return TensorRef();
    return row_view(iteration);
  }

  // Stacks `item` as row `iteration`; `row_in_use` when a tensor that may still be read lives in that row
  // (a loop variable written there, Note [Stacking in place]), so the stack moves before the row is written.
  Status add(const char* op, size_t index, int64_t iteration, int64_t capacity_hint, const TensorImpl& item,
             bool row_in_use = false) {
    if (is_string(item.dtype()))  // the stacks copy bytes; no gradient reads a string
      return make_error(Code::kUnimplemented, op, ": accumulated value ", index, " is a string tensor");
    if (iteration == 0) {
      element_ = item.shape();
      dtype_ = item.dtype();
      row_bytes_ = item.nbytes();
    } else if (!(item.shape() == element_) || item.dtype() != dtype_) {
      return make_error(Code::kUnimplemented, op, ": accumulated value ", index, " has shape ",
                        element_.to_string(), " in iteration 0 but ", item.shape().to_string(),
                        " in iteration ", iteration,
                        "; values whose shape changes across iterations cannot be stacked");
    }
    if (iteration >= capacity_) EMBER_RETURN_IF_ERROR(grow(iteration, capacity_hint));
    char* row = static_cast<char*>(stack_->mutable_raw_data()) + static_cast<size_t>(iteration) * row_bytes_;
    if (item.raw_data() == row) return Status::OK();
    if (row_in_use) {
      EMBER_RETURN_IF_ERROR(move_rows(capacity_, iteration));
      row = static_cast<char*>(stack_->mutable_raw_data()) + static_cast<size_t>(iteration) * row_bytes_;
    }
    std::memcpy(row, item.raw_data(), row_bytes_);
    g_stack_bytes_copied.fetch_add(static_cast<int64_t>(row_bytes_), std::memory_order_relaxed);
    return Status::OK();
  }

  // The stack of `iterations` rows; with none, an empty stack shaped by the body's static spec (unknown dims
  // as 0).
  Status finish(const char* op, size_t index, int64_t iterations, const TensorSpec& spec, TensorRef& out) {
    if (iterations == 0) {
      if (!spec.shape.rank_known())
        return make_error(Code::kUnimplemented, op, ": accumulated value ", index,
                          " has an unknown rank and the loop ran no iteration");
      std::vector<int64_t> dims = spec.shape.dim_vector();
      for (int64_t& d : dims) d = std::max<int64_t>(d, 0);
      element_ = Shape(std::span<const int64_t>(dims));
      dtype_ = spec.dtype;
      auto empty = TensorImpl::allocate(dtype_, stacked(0));
      if (!empty.ok()) return empty.status();
      out = std::move(empty).value();
      return Status::OK();
    }
    out = iterations == capacity_ ? std::move(stack_) : TensorImpl::view(*stack_, stacked(iterations), 0);
    stack_ = TensorRef();
    return Status::OK();
  }

 private:
  Status grow(int64_t iteration, int64_t capacity_hint) {
    return move_rows(std::max<int64_t>({capacity_hint, 2 * capacity_, iteration + 1, 4}), iteration);
  }

  // A new buffer of `capacity` rows for the stack, holding its first `rows` rows.
  Status move_rows(int64_t capacity, int64_t rows) {
    auto moved = TensorImpl::allocate(dtype_, stacked(capacity));
    if (!moved.ok()) return moved.status();
    if (rows > 0) {
      std::memcpy((*moved)->mutable_raw_data(), stack_->raw_data(), static_cast<size_t>(rows) * row_bytes_);
      g_stack_bytes_copied.fetch_add(static_cast<int64_t>(rows * row_bytes_), std::memory_order_relaxed);
    }
    stack_ = std::move(moved).value();
    capacity_ = capacity;
    return Status::OK();
  }

  Shape stacked(int64_t rows) const {
    std::vector<int64_t> dims = {rows};
    for (int i = 0; i < element_.rank(); ++i) dims.push_back(element_.dim(i));
    return Shape(std::span<const int64_t>(dims));
  }

  TensorRef row_view(int64_t iteration) const {
    return TensorImpl::view(*stack_, element_, static_cast<size_t>(iteration) * row_bytes_);
  }

  Shape element_;
  DType dtype_ = DType::kFloat32;
  size_t row_bytes_ = 0;
  int64_t capacity_ = 0;
  TensorRef stack_;
};

// The trip count a loop step last ran for (Note [Stacking in place]); a hint only, so a step handle reused
// by another function after the first died costs at most a wrong first capacity.
int64_t trip_count_hint(const void* step) {
  std::lock_guard<std::mutex> lock(trip_counts_mu());
  auto it = trip_counts().find(step);
  return it == trip_counts().end() ? 0 : it->second;
}

void set_trip_count_hint(const void* step, int64_t iterations) {
  std::lock_guard<std::mutex> lock(trip_counts_mu());
  if (trip_counts().size() > 4096) trip_counts().clear();
  trip_counts()[step] = iterations;
}

constexpr int32_t kUndecided = -1, kNotEntering = -2;

// The loop variable whose entering value `item` is (found by where its data lives), when exactly one is
// (two loop variables may enter as one tensor: then a later iteration decides); kNotEntering when none is.
int32_t entering_var_of(const TensorImpl& item, std::span<const void* const> entering) {
  int32_t found = kNotEntering;
  for (size_t k = 0; k < entering.size(); ++k) {
    if (entering[k] != item.raw_data()) continue;
    if (found != kNotEntering) return kUndecided;
    found = static_cast<int32_t>(k);
  }
  return found;
}

Status while_kernel(KernelContext& ctx) {
  const char* op = ctx.op->name.c_str();
  const FunctionCallHooks& hooks = function_call_hooks();
  if (hooks.resolve == nullptr || hooks.run_resolved == nullptr || hooks.resolve_loop_step == nullptr)
    return make_error(Code::kInternal, op, ": no function runtime");
  const size_t accumulate = static_cast<size_t>(std::max<int64_t>(accumulate_attr(ctx), 0));
  const bool accumulating = accumulate_attr(ctx) >= 0;
  auto cond = hooks.resolve(ctx.attr_string(0));
  if (!cond.ok()) return cond.status().with_prefix(std::string(op) + ": ");
  SmallVector<TensorRef, 2> vars;
  SmallVector<TensorImpl*, 4> args;
  for (TensorImpl* t : ctx.inputs) {
    vars.push_back(TensorRef(t));
    args.push_back(t);
  }
  std::vector<Accumulator> accumulated(accumulate);
  SmallVector<TensorRef, 4> destinations;  // per step result: the stack rows of this iteration's values
  // Per accumulated value, the loop variable it is the entering value of (Note [Stacking in place]).
  std::vector<int32_t> entering_var(accumulate, kUndecided);
  std::vector<const void*> entering(ctx.inputs.size());  // where this iteration's loop variables live
  const void* step_handle = nullptr;
  int64_t capacity_hint = 0;
  SmallVector<TensorRef, 2> results;
  int64_t iteration = 0;
  EMBER_RETURN_IF_ERROR(hooks.run_resolved(cond->get(), {args.data(), args.size()}, results));
  if (results.size() != 1)
    return invalid_argument(op, ": the condition must return one value, got ", results.size());
  auto truth = truth_value(op, *results[0]);
  if (!truth.ok()) return truth.status();
  if (*truth) {
    // Every further iteration is one run of the step: body, then condition (Note [Loop steps]).
    auto step = hooks.resolve_loop_step(ctx.attr_string(0), ctx.attr_string(1));
    if (!step.ok()) return step.status().with_prefix(std::string(op) + ": ");
    if (accumulate > 0) {
      step_handle = step->get();
      capacity_hint = trip_count_hint(step_handle);
    }
    const int64_t cap = max_loop_iterations();
    // Independent iterations overlap, up to parallel_iterations at once (Note [Parallel iterations] in
    // runtime/parallel_loop.cc); only a StatelessWhile, so stateful bodies keep program order. What the
    // overlapped run leaves unfinished (an iteration that fails) continues below.
    const int64_t parallel_iterations = ctx.attrs.size() > 2 ? ctx.attr_int(2) : 1;
    if (parallel_iterations > 1 && ctx.op->name == "StatelessWhile" && parallel_loop_runner() != nullptr) {
      auto stack = [&](int64_t t, std::span<const TensorRef> values) {
        for (size_t j = 0; j < accumulate; ++j)
          EMBER_RETURN_IF_ERROR(accumulated[j].add(op, j, t, capacity_hint, *values[j]));
        return Status::OK();
      };
      FastLoopProgress overlapped;
      Status s = parallel_loop_runner()(step->get(), {vars.data(), vars.size()}, accumulate,
                                        parallel_iterations, cap > 0 ? cap : INT64_MAX, stack, overlapped);
      iteration = overlapped.iterations;
      if (!s.ok()) return s.with_prefix(std::string(op) + ": iteration " + std::to_string(iteration) + ": ");
      if (overlapped.finished) *truth = false;
      for (size_t i = 0; i < vars.size(); ++i) args[i] = vars[i].get();
    }
    // A step of small element-wise work runs its iterations in the runtime's tight loop (Note [Fast loops]
    // in runtime/fast_loop.cc); whatever it leaves unfinished continues below, on the normal path.
    if (*truth && accumulate == 0 && fast_loops_enabled() && fast_loop_runner() != nullptr) {
      const FastLoopProgress fast =
          fast_loop_runner()(step->get(), {vars.data(), vars.size()}, cap > 0 ? cap - iteration : INT64_MAX);
      iteration += fast.iterations;
      if (fast.finished) *truth = false;
      for (size_t i = 0; i < vars.size(); ++i) args[i] = vars[i].get();
    }
    for (; *truth; ++iteration) {
      if (cap > 0 && iteration >= cap)
        return make_error(Code::kResourceExhausted, op, ": more than ", cap,
                          " iterations (the cap set by set_max_loop_iterations)");
      results.clear();
      // Note [Loop variables handed to the body]
      // From the second iteration on, the loop holds the only reference to each loop variable (the previous
      // step's result); handing it over lets the body write over it in place (a TensorArray's
      // InplaceUpdate), so a loop writing one row per iteration costs O(row), not O(array). The first
      // iteration's inputs still belong to the caller, and anything else holding a variable keeps the body
      // from reusing it.
      if (accumulate > 0 && iteration > 0) {
        destinations.resize(vars.size() + accumulate);
        for (size_t i = 0; i < vars.size(); ++i) destinations[i] = TensorRef();
        for (size_t j = 0; j < accumulate; ++j) {
          if (entering_var[j] >= 0) {
            destinations[vars.size() + j] = TensorRef();  // its row may hold the loop variable
            destinations[entering_var[j]] = accumulated[j].loop_variable_destination(iteration + 1);
          } else {
            destinations[vars.size() + j] = accumulated[j].destination(iteration, capacity_hint);
          }
        }
      }
      // Data addresses only: a reference would keep the body from writing over a loop variable in place.
      for (size_t i = 0; i < vars.size(); ++i) entering[i] = vars[i]->raw_data();
      Status s = iteration > 0 && hooks.run_resolved_owned != nullptr
                     ? hooks.run_resolved_owned(step->get(), {vars.data(), vars.size()}, results,
                                                {destinations.data(), destinations.size()})
                     : hooks.run_resolved(step->get(), {args.data(), args.size()}, results);
      if (!s.ok()) return s.with_prefix(std::string(op) + ": iteration " + std::to_string(iteration) + ": ");
      if (results.size() != vars.size() + accumulate + 1)
        return invalid_argument(op, ": the body returned ", results.size() - 1, " value(s) for ", vars.size(),
                                " loop variable(s)",
                                accumulate > 0 ? " and " + std::to_string(accumulate) + " accumulated" : "");
      truth = truth_value(op, *results.back());
      if (!truth.ok()) return truth.status();
      for (size_t i = 0; i < vars.size(); ++i) {
        vars[i] = std::move(results[i]);
        args[i] = vars[i].get();
      }
      for (size_t j = 0; j < accumulate; ++j) {
        const TensorImpl& item = *results[vars.size() + j];
        bool row_in_use = false;
        if (entering_var[j] == kUndecided) {
          entering_var[j] = entering_var_of(item, {entering.data(), entering.size()});
        } else if (entering_var[j] >= 0 && item.raw_data() != entering[entering_var[j]]) {
          row_in_use = true;  // the loop variable's producer may have written the row
          entering_var[j] = kNotEntering;
        }
        EMBER_RETURN_IF_ERROR(accumulated[j].add(op, j, iteration, capacity_hint, item, row_in_use));
      }
    }
  }
  for (size_t i = 0; i < ctx.outputs.size() && i < vars.size(); ++i) ctx.outputs[i] = std::move(vars[i]);
  if (!accumulating) return Status::OK();
  if (ctx.outputs.size() != vars.size() + accumulate + 1)
    return make_error(Code::kInternal, op, ": expected ", vars.size() + accumulate + 1, " outputs");
  for (size_t j = 0; j < accumulate; ++j) {
    TensorSpec spec = vars.size() + j < ctx.output_specs.size() ? ctx.output_specs[vars.size() + j]
                                                                : TensorSpec{DType::kFloat32, Shape()};
    // The output spec is the stacked one: drop its leading axis for the per-iteration spec.
    if (spec.shape.rank_known() && spec.shape.rank() > 0) {
      std::vector<int64_t> dims = spec.shape.dim_vector();
      dims.erase(dims.begin());
      spec.shape = Shape(std::span<const int64_t>(dims));
    }
    EMBER_RETURN_IF_ERROR(accumulated[j].finish(op, j, iteration, spec, ctx.outputs[vars.size() + j]));
  }
  if (step_handle != nullptr) set_trip_count_hint(step_handle, iteration);
  if (iteration > INT32_MAX) return make_error(Code::kOutOfRange, op, ": more than 2^31 iterations");
  auto count = TensorImpl::allocate(DType::kInt32, Shape());
  if (!count.ok()) return count.status();
  *(*count)->mutable_data<int32_t>() = static_cast<int32_t>(iteration);
  ctx.outputs[vars.size() + accumulate] = std::move(count).value();
  return Status::OK();
}

void register_if(OpRegistry& r, const char* name, uint32_t extra_flags, const char* doc) {
  OpBuilder(name)
      .doc(doc)
      .input_fixed("cond", kAllTypes)
      .input_fixed("input", kAllTypesAndComplex | kStringType)
      .output("output")
      .type_var(kAllTypesAndComplex | kStringType)
      .attr("then_branch", AttrType::kString)
      .attr("else_branch", AttrType::kString)
      .dispatch_on_input(0)
      .flags(kVariadicInput | kVariadicMayBeEmpty | kKernelAllocates | extra_flags)
      .shape(&if_shape)
      .kernel(kAllTypes, &if_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

void register_case(OpRegistry& r, const char* name, uint32_t extra_flags, const char* doc) {
  OpBuilder(name)
      .doc(doc)
      .input_fixed("branch_index", dtype_bit(DType::kInt32))
      .input_fixed("input", kAllTypesAndComplex | kStringType)
      .output("output")
      .type_var(kAllTypesAndComplex | kStringType)
      .attr("branches", AttrType::kString)
      .dispatch_on_input(0)
      .flags(kVariadicInput | kVariadicMayBeEmpty | kKernelAllocates | extra_flags)
      .shape(&case_shape)
      .kernel(dtype_bit(DType::kInt32), &case_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

void register_while(OpRegistry& r, const char* name, uint32_t extra_flags, const char* doc) {
  OpBuilder(name)
      .doc(doc)
      .input_fixed("input", kAllTypesAndComplex | kStringType)
      .output("output")
      .type_var(kAllTypesAndComplex | kStringType)
      .attr("cond", AttrType::kString)
      .attr("body", AttrType::kString)
      .attr("parallel_iterations", AttrType::kInt, int64_t{10})
      .attr("_accumulate", AttrType::kInt, int64_t{-1})
      .dispatch_on_output()
      .flags(kVariadicInput | kVariadicMayBeEmpty | kKernelAllocates | extra_flags)
      .shape(&while_shape)
      .kernel(kAllTypesAndComplex | kStringType, &while_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

std::atomic<FastLoopRunner>& installed_fast_loop_runner() {
  static std::atomic<FastLoopRunner> runner{nullptr};
  return runner;
}

std::atomic<ParallelLoopRunner>& installed_parallel_loop_runner() {
  static std::atomic<ParallelLoopRunner> runner{nullptr};
  return runner;
}

std::atomic<bool>& fast_loops_switch() {
  static std::atomic<bool> enabled{[] {
    const char* v = std::getenv("EMBER_FAST_LOOPS");
    return v == nullptr || std::string(v) != "0";
  }()};
  return enabled;
}

}  // namespace

void set_fast_loop_runner(FastLoopRunner runner) { installed_fast_loop_runner().store(runner); }
FastLoopRunner fast_loop_runner() { return installed_fast_loop_runner().load(std::memory_order_relaxed); }
void set_parallel_loop_runner(ParallelLoopRunner runner) { installed_parallel_loop_runner().store(runner); }
ParallelLoopRunner parallel_loop_runner() {
  return installed_parallel_loop_runner().load(std::memory_order_relaxed);
}
void set_fast_loops_enabled(bool enabled) { fast_loops_switch().store(enabled); }
bool fast_loops_enabled() { return fast_loops_switch().load(std::memory_order_relaxed); }
int64_t while_stack_bytes_copied() { return g_stack_bytes_copied.load(std::memory_order_relaxed); }

void register_control_flow_ops(OpRegistry& r) {
  register_if(r, "If", kStateful,
              "Runs then_branch(input...) when cond is true (a non-zero scalar, or a non-empty tensor), else "
              "else_branch(input...); the branches may hold stateful ops. If(True, x, then_branch=\"neg\", "
              "else_branch=\"id\") == -x");
  register_if(r, "StatelessIf", 0,
              "If whose branches hold no stateful op. StatelessIf(False, x, then_branch=\"neg\", "
              "else_branch=\"id\") == x");
  register_case(r, "Case", kStateful,
                "Runs branch number branch_index of branches (comma-separated names) on input...; an index "
                "out of range runs the last. Case(1, x, branches=\"neg,sq\") == x*x");
  register_case(r, "StatelessCase", 0,
                "Case whose branches hold no stateful op. StatelessCase(7, x, branches=\"neg,sq\") == x*x");
  register_while(r, "While", kStateful,
                 "Repeats input = body(input...) while cond(input...) is true; the outputs are the final "
                 "values. While(0, cond=\"lt10\", body=\"plus1\") == 10");
  register_while(r, "StatelessWhile", 0,
                 "While whose condition and body hold no stateful op. StatelessWhile(1., cond=\"lt100\", "
                 "body=\"double\") == 128.");
}

}  // namespace ember

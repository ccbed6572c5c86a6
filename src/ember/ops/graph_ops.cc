// Placeholder, Const and PartitionedCall (see graph_ops.h).
#include "ember/ops/graph_ops.h"

#include <algorithm>
#include <atomic>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

// Installed (idempotently) by every creator of functions, possibly on several threads at once while
// others call: atomic, so installing again is not a data race with a reader.
std::atomic<decltype(FunctionCallHooks::infer)> g_infer_hook{nullptr};
std::atomic<decltype(FunctionCallHooks::run)> g_run_hook{nullptr};
std::atomic<decltype(FunctionCallHooks::resolve)> g_resolve_hook{nullptr};
std::atomic<decltype(FunctionCallHooks::run_resolved)> g_run_resolved_hook{nullptr};
std::atomic<decltype(FunctionCallHooks::resolve_loop_step)> g_resolve_loop_step_hook{nullptr};
std::atomic<decltype(FunctionCallHooks::run_resolved_owned)> g_run_resolved_owned_hook{nullptr};

Status placeholder_shape(InferContext& ctx) {
  if (ctx.attr_bool(2)) {
    ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), Shape::unknown_rank()});
    return Status::OK();
  }
  auto shape = Shape::from_dims(ctx.attr_ints(1), /*allow_unknown=*/true);  // -1: an unknown dimension
  if (!shape.ok()) return shape.status().with_prefix("Placeholder: shape: ");
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), *shape});
  return Status::OK();
}

Status placeholder_kernel(KernelContext& ctx) {
  return invalid_argument("Placeholder: a value must be fed for this argument (it has no value of its own)");
}

Status const_shape(InferContext& ctx) {
  const TensorRef& value = ctx.attr_tensor(0);
  if (!value || value->is_symbolic()) return invalid_argument("Const: the value must be a concrete tensor");
  ctx.outputs.push_back(TensorSpec{value->dtype(), value->shape()});
  return Status::OK();
}

Status const_kernel(KernelContext& ctx) {
  ctx.outputs[0] = std::get<TensorRef>(ctx.attrs[0]);
  return Status::OK();
}

Status call_shape(InferContext& ctx) {
  auto infer = g_infer_hook.load(std::memory_order_acquire);
  if (infer == nullptr) return make_error(Code::kInternal, "PartitionedCall: no function runtime");
  return infer(ctx.attr_string(0), ctx.inputs, ctx.outputs);
}

Status call_kernel(KernelContext& ctx) {
  auto run = g_run_hook.load(std::memory_order_acquire);
  if (run == nullptr) return make_error(Code::kInternal, "PartitionedCall: no function runtime");
  return run(std::get<std::string>(ctx.attrs[0]), ctx.inputs, ctx.outputs);
}

}  // namespace

void set_function_call_hooks(FunctionCallHooks hooks) {
  g_infer_hook.store(hooks.infer, std::memory_order_release);
  g_run_hook.store(hooks.run, std::memory_order_release);
  g_resolve_hook.store(hooks.resolve, std::memory_order_release);
  g_run_resolved_hook.store(hooks.run_resolved, std::memory_order_release);
  g_resolve_loop_step_hook.store(hooks.resolve_loop_step, std::memory_order_release);
  g_run_resolved_owned_hook.store(hooks.run_resolved_owned, std::memory_order_release);
}

const FunctionCallHooks& function_call_hooks() {
  thread_local FunctionCallHooks hooks;
  hooks.infer = g_infer_hook.load(std::memory_order_acquire);
  hooks.run = g_run_hook.load(std::memory_order_acquire);
  hooks.resolve = g_resolve_hook.load(std::memory_order_acquire);
  hooks.run_resolved = g_run_resolved_hook.load(std::memory_order_acquire);
  hooks.resolve_loop_step = g_resolve_loop_step_hook.load(std::memory_order_acquire);
  hooks.run_resolved_owned = g_run_resolved_owned_hook.load(std::memory_order_acquire);
  return hooks;
}

namespace {
std::atomic<int64_t> g_max_loop_iterations{0};
}  // namespace

void set_max_loop_iterations(int64_t iterations) {
  g_max_loop_iterations.store(std::max<int64_t>(iterations, 0), std::memory_order_relaxed);
}
int64_t max_loop_iterations() { return g_max_loop_iterations.load(std::memory_order_relaxed); }

AttrList placeholder_attrs(DType dtype, const Shape& shape) {
  AttrList attrs;
  attrs.push_back(dtype);
  attrs.push_back(shape.rank_known() ? shape.dim_vector() : std::vector<int64_t>{});
  attrs.push_back(!shape.rank_known());
  return attrs;
}

std::vector<std::string> split_branch_names(const std::string& joined) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= joined.size()) {
    size_t comma = joined.find(',', start);
    if (comma == std::string::npos) comma = joined.size();
    if (comma > start) names.push_back(joined.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

bool calls_functions(const OpDef& op) {
  static const std::string_view kCallers[] = {"PartitionedCall", "If",   "StatelessIf",  "While",
                                              "StatelessWhile",  "Case", "StatelessCase"};
  for (std::string_view name : kCallers)
    if (op.name == name) return true;
  return false;
}

std::vector<std::string> called_functions(const OpDef& op, std::span<const AttrValue> attrs) {
  std::vector<std::string> names;
  if (!calls_functions(op)) return names;
  auto string_attr = [&](std::string_view attr) -> const std::string* {
    int i = op.attr_index(attr);
    if (i < 0 || static_cast<size_t>(i) >= attrs.size()) return nullptr;
    return std::get_if<std::string>(&attrs[i]);
  };
  if (op.name == "Case" || op.name == "StatelessCase") {
    if (const std::string* joined = string_attr("branches")) names = split_branch_names(*joined);
    return names;
  }
  for (std::string_view attr : {"f", "then_branch", "else_branch", "cond", "body"})
    if (const std::string* name = string_attr(attr)) names.push_back(*name);
  return names;
}

void register_graph_ops(OpRegistry& r) {
  OpBuilder("Placeholder")
      .doc("A function argument: its value is fed at each call. Placeholder(dtype=float32, shape=[-1, 3])")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("dtype", AttrType::kDType)
      .attr("shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, false)
      .dispatch_on_output()
      .flags(kStateful | kNotDifferentiable)
      .shape(&placeholder_shape)
      .kernel(kAllTypesAndComplex, &placeholder_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Const")
      .doc("A constant value embedded in a graph. Const(value=[1., 2.]) -> [1., 2.]")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("value", AttrType::kTensor)
      .dispatch_on_output()
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&const_shape)
      .kernel(kAllTypesAndComplex, &const_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("PartitionedCall")
      .doc(
          "Calls the graph function named f on args; its results are this op's outputs. "
          "PartitionedCall(x, f=\"__inference_square_1\") == square(x)")
      .input_fixed("args", kAllTypesAndComplex)
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("f", AttrType::kString)
      .dispatch_on_output()
      .flags(kVariadicInput | kVariadicMayBeEmpty | kKernelAllocates | kStateful)
      .shape(&call_shape)
      .kernel(kAllTypesAndComplex, &call_kernel)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember

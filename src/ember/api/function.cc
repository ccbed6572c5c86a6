#include "ember/api/function.h"

#include "ember/autodiff/tape.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"

namespace ember {

StagedFunction::StagedFunction(Body body, std::string name) : body_(std::move(body)), name_(std::move(name)) {
  install_function_runtime();
}

StagedFunction::~StagedFunction() = default;

namespace {
std::string signature_key(const std::vector<Tensor>& args) {
  std::string key;
  for (const Tensor& t : args) {
    key += std::to_string(static_cast<int>(t.dtype())) + t.shape().to_string() + ";";
  }
  // A call made while another function traces must add a call node, not run: a different entry.
  if (TraceContext::current() != nullptr) key += "@trace";
  return key;
}
}  // namespace

std::shared_ptr<CompiledFunction> StagedFunction::lookup_or_trace(const std::vector<Tensor>& args) {
  std::string key = signature_key(args);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = name_;
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    std::vector<Tensor> placeholders;
    for (size_t i = 0; i < args.size(); ++i)
      placeholders.emplace_back(
          ctx.add_argument(args[i].dtype(), args[i].shape(), "arg" + std::to_string(i)));
    std::vector<Tensor> results = body_(placeholders);
    for (const Tensor& r : results) {
      auto v = ctx.value_of(r.impl());
      if (!v.ok()) throw StatusError(v.status());
      fn->results.push_back(*v);
    }
    ctx.seal();
  }
  auto compiled = std::make_shared<CompiledFunction>(fn);
  std::lock_guard<std::mutex> lock(mu_);
  ++tracing_count_;
  cache_.emplace(key, compiled);
  return compiled;
}

std::vector<Tensor> StagedFunction::call(const std::vector<Tensor>& args) {
  for (const Tensor& a : args)
    if (!a.defined()) throw StatusError(invalid_argument("ember::function: an argument is undefined"));
  std::shared_ptr<CompiledFunction> compiled = lookup_or_trace(args);
  if (TraceContext::current() != nullptr || autodiff::recording_active()) {
    // Inside another trace: one PartitionedCall node in that graph. Under a tape: the op path records the
    // call with the function's gradient (architecture.md §7).
    std::string name;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = library_names_.find(&compiled->function());
      if (it == library_names_.end())
        it = library_names_
                 .emplace(&compiled->function(), FunctionLibrary::global().add(compiled->shared_function()))
                 .first;
      name = it->second;
    }
    std::vector<Tensor> call_args = args;
    for (const TensorRef& lifted : compiled->function().lifted_captures) call_args.emplace_back(lifted);
    std::vector<Tensor> outputs = call_op("PartitionedCall", call_args, {AttrValue(name)});
    return outputs;
  }
  if (!compiled->function().lifted_captures.empty())
    throw StatusError(
        make_error(Code::kFailedPrecondition, "ember::function ", name_,
                   ": it uses tensors of the function that traced it, so it can only be called there"));
  SmallVector<TensorImpl*, 4> impls;
  for (const Tensor& a : args) impls.push_back(a.impl());
  OutputList results;
  Status s = compiled->run({impls.data(), impls.size()}, results);
  if (!s.ok()) throw StatusError(s);
  std::vector<Tensor> out;
  for (TensorRef& r : results) out.emplace_back(std::move(r));
  return out;
}

const FunctionGraph& StagedFunction::graph_for(const std::vector<Tensor>& args) {
  return lookup_or_trace(args)->function();
}

}  // namespace ember

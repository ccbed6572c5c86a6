// Staging from C++: ember::function wraps a C++ callable taking and returning tensors. The first call per
// input signature (dtype and shape of each argument) traces the callable into a graph — its ops add nodes
// instead of running — and every later call with that signature runs the cached graph without calling
// the callable again:
//
//   auto f = ember::function([](const ember::Tensor& x) { return x * x + 1.0f; });
//   ember::Tensor y = f(ember::Tensor({1.f, 2.f}));   // traces, then runs
//   ember::Tensor z = f(ember::Tensor({3.f, 4.f}));   // runs the cached graph
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ember/api/tensor.h"
#include "ember/graph/graph.h"

namespace ember {

class CompiledFunction;

/// The untyped core of ember::function: a body over a vector of tensors and a trace cache.
class StagedFunction {
 public:
  using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  StagedFunction(Body body, std::string name);
  ~StagedFunction();

  std::vector<Tensor> call(const std::vector<Tensor>& args);
  /// How many times the body has been traced.
  int tracing_count() const { return tracing_count_; }
  /// The graph traced for these arguments' signature (tracing if needed).
  const FunctionGraph& graph_for(const std::vector<Tensor>& args);

 private:
  std::shared_ptr<CompiledFunction> lookup_or_trace(const std::vector<Tensor>& args);

  Body body_;
  std::string name_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<CompiledFunction>> cache_;
  // Names in the function library, for calls by PartitionedCall (inside traces, under a tape).
  std::unordered_map<const FunctionGraph*, std::string> library_names_;
  int tracing_count_ = 0;
};

namespace internal {
inline std::vector<Tensor> as_results(Tensor t) { return {std::move(t)}; }
inline std::vector<Tensor> as_results(std::vector<Tensor> ts) { return ts; }
template <typename... Ts>
std::vector<Tensor> as_results(std::tuple<Ts...> t) {
  return std::apply([](auto&... xs) { return std::vector<Tensor>{Tensor(xs)...}; }, t);
}
template <typename R>
R from_results(std::vector<Tensor> results) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return std::move(results[0]);
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return results;
  } else {
    return [&]<size_t... I>(std::index_sequence<I...>) { return R(results[I]...); }
    (std::make_index_sequence<std::tuple_size_v<R>>());
  }
}
}  // namespace internal

/// A staged C++ function; see the header comment.
template <typename F>
class Function {
 public:
  Function(F f, std::string name)
      : f_(std::make_shared<F>(std::move(f))),
        core_(std::make_shared<StagedFunction>(make_body(f_), std::move(name))) {}

  template <typename... Args>
  auto operator()(const Args&... args) {
    using R = std::invoke_result_t<F&, const Args&...>;
    return internal::from_results<R>(core_->call({Tensor(args)...}));
  }
  int tracing_count() const { return core_->tracing_count(); }
  template <typename... Args>
  const FunctionGraph& graph(const Args&... args) {
    return core_->graph_for({Tensor(args)...});
  }

 private:
  static StagedFunction::Body make_body(std::shared_ptr<F> f) {
    return [f](const std::vector<Tensor>& args) -> std::vector<Tensor> {
      return call_with(*f, args, std::make_index_sequence<arity<F>::value>());
    };
  }
  template <typename G>
  struct arity : arity<decltype(&G::operator())> {};
  template <typename C, typename R, typename... A>
  struct arity<R (C::*)(A...) const> : std::integral_constant<size_t, sizeof...(A)> {};
  template <typename C, typename R, typename... A>
  struct arity<R (C::*)(A...)> : std::integral_constant<size_t, sizeof...(A)> {};
  template <size_t... I>
  static std::vector<Tensor> call_with(F& f, const std::vector<Tensor>& args, std::index_sequence<I...>) {
    if (args.size() != sizeof...(I))
      throw StatusError(
          invalid_argument("ember::function: expected ", sizeof...(I), " argument(s), got ", args.size()));
    return internal::as_results(f(args[I]...));
  }

  std::shared_ptr<F> f_;
  std::shared_ptr<StagedFunction> core_;
};

/// Stages `f` (a lambda or functor taking `const Tensor&` arguments and returning a Tensor, a
/// std::vector<Tensor> or a std::tuple of Tensors).
template <typename F>
Function<F> function(F f, std::string name = "cpp_function") {
  return Function<F>(std::move(f), std::move(name));
}

}  // namespace ember

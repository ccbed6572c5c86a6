// Tracing (architecture.md §0.4, §5): while a TraceContext is active on a thread, every op called through
// execute_op — from C++ or from Python — adds a node to the context's graph instead of running. Symbolic
// tensors (TensorImpl::symbolic) stand for node outputs. Ops whose inputs are all concrete fold: they run
// at once and their results stay concrete. A concrete tensor that meets a symbolic one becomes a Const
// node if it was made during this trace, or else a captured argument (by value, as TensorFlow does).
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "ember/graph/graph.h"

namespace ember {

class TraceContext : public OpInterceptor {
 public:
  /// Traces into `fn` (which must outlive the context). `parent` is the enclosing trace, if any.
  explicit TraceContext(FunctionGraph* fn);
  ~TraceContext() override;
  TraceContext(const TraceContext&) = delete;
  TraceContext& operator=(const TraceContext&) = delete;

  /// The innermost trace of this thread (null when eager).
  static TraceContext* current();
  /// Suspends tracing on this thread (ops run eagerly) until resume(token): ember.init_scope, used to run
  /// variable initializers once, eagerly, while a function traces.
  static TraceContext* pause();
  static void resume(TraceContext* token);

  /// Makes this the current trace (installs it as the op interceptor) until exit() is called.
  void enter();
  void exit();

  /// Puts the function's arguments in call order (user, lifted, captured). Call once, after the body.
  void seal();

  /// Adds an argument of the function; returns its symbolic tensor.
  TensorRef add_argument(DType dtype, const Shape& shape, std::string_view name);
  /// The graph value of `t` in this trace, adding a Const or capture argument for concrete tensors.
  StatusOr<ValueRef> value_of(TensorImpl* t);
  /// The symbolic tensor of this trace standing for `t`: `t` itself when it is of this trace, else the
  /// argument it is lifted or captured into (control flow passes a loop's captures through its body).
  StatusOr<TensorRef> lift(TensorImpl* t);
  /// Puts the arguments lifted from enclosing traces in the order of `order` (each a tensor of an enclosing
  /// trace), lifting the ones this trace has not used: the branches of one If take the same arguments.
  /// Every tensor lifted so far must be in `order`.
  Status order_lifted(std::span<TensorImpl* const> order);
  /// Marks a concrete tensor created while tracing (ember.constant inside the function) as local to the
  /// trace, so it is embedded as a Const rather than captured.
  void note_local_constant(TensorImpl* t);
  /// A tape linked a fresh alias of concrete `original` in its place (autodiff::link_outputs): the alias is
  /// what the caller gets, so it stands for the same value of this trace, folded from it by an Identity.
  void note_alias(TensorImpl* original, TensorImpl* alias);

  /// Where the op being traced was called from (the Python layer installs a provider that reads the
  /// caller's frame; C++ callers may set one too).
  using LocationProvider = std::function<SourceLocation()>;
  void set_location_provider(LocationProvider provider) { location_provider_ = std::move(provider); }
  /// compat.v1.wrap_function traces TF 1.x code without automatic control dependencies (stateful ops still
  /// always run, as control outputs).
  void set_auto_control_deps(bool enabled) { auto_control_deps_ = enabled; }
  /// A branch, condition or loop body: floating concrete values of enclosing traces (and eager tensors)
  /// it reads become inputs of the op rather than values captured into the body (Note [Folded values of
  /// concrete arguments]).
  void set_lifts_enclosing_constants() { lifts_enclosing_constants_ = true; }

  Status intercept(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                   OutputList& outputs) override;

  /// How a folded constant of this trace was computed: the op that ran while tracing, on concrete inputs
  /// one of which is floating or complex (Note [Gradients through folded constants] in graph_gradients.cc).
  using Fold = FoldRecord;
  /// The fold that made `t`, or null (a constant made by ember.constant, or not of this trace).
  const Fold* fold_of(const TensorImpl* t) const;

  /// A number no other trace of this process has: tells a trace from a later one at the same address.
  uint64_t serial() const { return serial_; }

  FunctionGraph& function() { return *fn_; }
  const std::vector<TensorRef>& captured_values() const { return fn_->captured_values; }

 private:
  TensorRef symbolic_output(int32_t node, int32_t output);
  // Whether concrete `t` is lifted into an argument (rather than captured by value).
  bool lifts(const TensorImpl* t) const;
  // Makes the concrete values that Const nodes were folded from arguments, and keeps those folds in the
  // function (Note [Folded values of concrete arguments]).
  Status keep_folds_of_arguments();
  // The enclosing trace whose graph `t` belongs to, or null.
  TraceContext* owner_of(const TensorImpl* t);

  FunctionGraph* fn_;
  uint64_t serial_;
  TraceContext* parent_ = nullptr;
  OpInterceptor* saved_interceptor_ = nullptr;
  bool entered_ = false;
  LocationProvider location_provider_;
  // Concrete tensors made during the trace (folded results, local constants), kept alive until the end.
  std::unordered_map<const TensorImpl*, TensorRef> local_constants_;
  std::unordered_map<const TensorImpl*, std::shared_ptr<const Fold>> folds_;
  std::unordered_map<const TensorImpl*, int32_t> const_nodes_;
  std::unordered_map<const TensorImpl*, int32_t> capture_nodes_;
  std::vector<int32_t> user_args_, lifted_args_, captured_args_;
  int32_t last_stateful_node_ = -1;
  bool auto_control_deps_ = true;
  bool lifts_enclosing_constants_ = false;
  struct ResourceOrder {
    int32_t last_write = -1;
    std::vector<int32_t> reads_since_write;
  };
  std::unordered_map<int64_t, ResourceOrder> resource_order_;  // by variable resource id
};

/// RAII: enter a trace for a scope.
class TraceScope {
 public:
  explicit TraceScope(TraceContext& ctx) : ctx_(ctx) { ctx_.enter(); }
  ~TraceScope() { ctx_.exit(); }

 private:
  TraceContext& ctx_;
};

}  // namespace ember

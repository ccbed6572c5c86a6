#include "ember/trace/trace_context.h"

#include <algorithm>
#include <atomic>
#include <unordered_set>

#include "ember/core/device.h"
#include "ember/graph/partial_value.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {
thread_local TraceContext* t_current_trace = nullptr;

const OpDef& placeholder_op() {
  static const OpDef& op = op_def("Placeholder");
  return op;
}
const OpDef& const_op() {
  static const OpDef& op = op_def("Const");
  return op;
}

// The variables `fn` reads or writes, through nested calls too.
void collect_resources(const FunctionGraph& fn, std::vector<int64_t>& resources, int depth = 0) {
  if (depth > 64) return;
  for (int32_t i = 0; i < fn.graph.num_nodes(); ++i) {
    const Node& n = fn.graph.node(i);
    if (n.op->has_flag(kReadsResource) || n.op->has_flag(kWritesResource)) {
      int64_t id = std::get<int64_t>(n.attrs[0]);
      if (std::find(resources.begin(), resources.end(), id) == resources.end()) resources.push_back(id);
    } else {
      for (const std::string& name : called_functions(*n.op, n.attrs))
        if (auto callee = FunctionLibrary::global().find(name))
          collect_resources(*callee, resources, depth + 1);
    }
  }
}
}  // namespace

TraceContext::TraceContext(FunctionGraph* fn) : fn_(fn) {
  static std::atomic<uint64_t> next_serial{1};
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
}

TraceContext::~TraceContext() {
  if (entered_) exit();
}

TraceContext* TraceContext::current() { return t_current_trace; }

TraceContext* TraceContext::pause() {
  TraceContext* token = t_current_trace;
  if (token != nullptr) {
    t_current_trace = nullptr;
    set_current_interceptor(nullptr);
  }
  return token;
}

void TraceContext::resume(TraceContext* token) {
  if (token == nullptr) return;
  t_current_trace = token;
  set_current_interceptor(token);
}

void TraceContext::enter() {
  EMBER_DCHECK(!entered_);
  parent_ = t_current_trace;
  t_current_trace = this;
  saved_interceptor_ = set_current_interceptor(this);
  entered_ = true;
}

void TraceContext::exit() {
  EMBER_DCHECK(entered_ && t_current_trace == this);
  // A branch's lifted arguments are ordered across branches before it is sealed: lift its fold sources now.
  if (lifts_enclosing_constants_) (void)keep_folds_of_arguments();
  t_current_trace = parent_;
  set_current_interceptor(saved_interceptor_);
  entered_ = false;
}

TensorRef TraceContext::symbolic_output(int32_t node, int32_t output) {
  const TensorSpec& spec = fn_->graph.node(node).outputs[output];
  return TensorImpl::symbolic(spec.dtype, spec.shape, fn_, node, output);
}

TensorRef TraceContext::add_argument(DType dtype, const Shape& shape, std::string_view name) {
  SmallVector<TensorSpec, 2> specs;
  specs.push_back(TensorSpec{dtype, shape});
  int32_t node = fn_->graph.add_node(placeholder_op(), {}, placeholder_attrs(dtype, shape), std::move(specs),
                                     {}, name.empty() ? std::string_view("Placeholder") : name);
  user_args_.push_back(node);
  fn_->args.push_back(node);
  return symbolic_output(node, 0);
}

void TraceContext::seal() {
  (void)keep_folds_of_arguments();
  fn_->args = user_args_;
  fn_->args.insert(fn_->args.end(), lifted_args_.begin(), lifted_args_.end());
  fn_->args.insert(fn_->args.end(), captured_args_.begin(), captured_args_.end());
}

StatusOr<TensorRef> TraceContext::lift(TensorImpl* t) {
  auto v = value_of(t);
  if (!v.ok()) return v.status();
  return symbolic_output(v->node, v->output);
}

Status TraceContext::order_lifted(std::span<TensorImpl* const> order) {
  for (TensorImpl* t : order) {
    if (t->is_symbolic() ? t->graph() == fn_ : !lifts(t))
      return invalid_argument("order_lifted: a tensor is not of an enclosing trace");
    EMBER_RETURN_IF_ERROR(value_of(t).status());
  }
  if (order.size() != lifted_args_.size())
    return make_error(Code::kInternal, "order_lifted: ", lifted_args_.size(), " lifted argument(s), ",
                      order.size(), " in the order");
  std::vector<int32_t> args;
  std::vector<TensorRef> captures;
  for (TensorImpl* t : order) {
    args.push_back(capture_nodes_.at(t));
    captures.push_back(TensorRef(t));
  }
  lifted_args_ = std::move(args);
  fn_->lifted_captures = std::move(captures);
  return Status::OK();
}

const TraceContext::Fold* TraceContext::fold_of(const TensorImpl* t) const {
  auto it = folds_.find(t);
  return it == folds_.end() ? nullptr : it->second.get();
}

void TraceContext::note_local_constant(TensorImpl* t) { local_constants_.emplace(t, TensorRef(t)); }

void TraceContext::note_alias(TensorImpl* original, TensorImpl* alias) {
  if (original->is_symbolic() || local_constants_.count(original) == 0) return;
  note_local_constant(alias);
  if (folds_.count(original) == 0) return;
  static const OpDef& identity = op_def("Identity");
  auto fold = std::make_shared<Fold>();
  fold->op = &identity;
  fold->inputs.push_back(TensorRef(original));
  fold->outputs.push_back(TensorRef(alias));
  folds_[alias] = std::move(fold);
}

// Note [Folded values of concrete arguments]
// Ops on concrete operands fold while tracing, so a value computed from a tensor the function did not make
// (an eager tensor it captures, or, in a branch or loop body, a constant of the enclosing function) is a
// Const node with no edge from that tensor. TensorFlow's graph has the edge, and a gradient with respect to
// the tensor flows through it. Two things keep the edge here without giving up the folding:
//  - A branch, condition or loop body (set_lifts_enclosing_constants) lifts the floating concrete values
//    it reads from outside into arguments, as it lifts the enclosing traces' symbolic tensors, rather
//    than capturing them by value: the If/Case/While takes them as inputs (the enclosing trace makes them
//    a Const, its own capture, or lifts them again), so a tape or tf.gradients sees the op read them. The
//    values a body folds from them are lifted too (keep_folds_of_arguments, at exit, before the lifted
//    arguments of the branches are put in one order). Integer values stay captured by value: shapes built
//    from them fold inside the body.
//  - Every function keeps the folds that computed a Const node from such a value (FunctionGraph::folds):
//    from an argument standing for it (a lifted value or a captured one), or, when only folds read it, from
//    the value itself (FunctionGraph::fold_sources, which no call passes). When a gradient with respect to
//    one is built, the function's replay runs the fold chain again on the argument (function_gradient.cc),
//    so the forward function computes those values in the graph and the tape records them.
// Without a gradient nothing changes: calls run the folded constants, and no argument is added to an
// outermost function for a value only folds read. An ember.function traced inside another lifts as a
// body does (python/ember/polymorphic_function.py); a concrete function traced outside any trace and called
// inside one still reads such values by value, so a tape watching one (function_gradient.cc) and
// tf.gradients through it (graph_gradients.cc) raise UnimplementedError naming it rather than give a
// partial gradient.
bool TraceContext::lifts(const TensorImpl* t) const {
  return lifts_enclosing_constants_ && parent_ != nullptr && !t->is_symbolic() &&
         (is_floating(t->dtype()) || is_complex(t->dtype())) && local_constants_.count(t) == 0;
}

Status TraceContext::keep_folds_of_arguments() {
  if (folds_.empty()) return Status::OK();
  auto from_outside = [&](const TensorImpl* t) {
    return !t->is_symbolic() && local_constants_.count(t) == 0 && folds_.count(t) == 0 &&
           (is_floating(t->dtype()) || is_complex(t->dtype()));
  };
  // Whether each fold output derives from a value from outside; the walk keeps its own stack (a fold chain
  // is as long as the Python loop that made it).
  std::unordered_map<const TensorImpl*, bool> derived;
  std::vector<TensorImpl*> sources;
  std::unordered_set<const TensorImpl*> seen_sources;
  std::vector<const TensorImpl*> roots;
  for (const auto& [t, node] : const_nodes_)
    if (folds_.count(t)) roots.push_back(t);
  for (const TensorImpl* root : roots) {
    std::vector<const TensorImpl*> stack{root};
    while (!stack.empty()) {
      const TensorImpl* t = stack.back();
      if (derived.count(t)) {
        stack.pop_back();
        continue;
      }
      const Fold& fold = *folds_.at(t);
      bool pending = false, result = false;
      for (const TensorRef& in : fold.inputs) {
        if (from_outside(in.get())) {
          result = true;
          if (seen_sources.insert(in.get()).second) sources.push_back(in.get());
        } else if (auto it = derived.find(in.get()); it != derived.end()) {
          result |= it->second;
        } else if (folds_.count(in.get())) {
          stack.push_back(in.get());
          pending = true;
        }
      }
      if (pending) continue;
      for (const TensorRef& out : fold.outputs)
        if (out) derived[out.get()] = result;
      derived[t] = result;
      if (result)
        for (const TensorRef& out : fold.outputs)
          if (out) fn_->folds.emplace(out.get(), folds_.at(t));
      stack.pop_back();
    }
  }
  for (TensorImpl* source : sources) {
    if (lifts(source) || capture_nodes_.count(source)) {
      EMBER_RETURN_IF_ERROR(value_of(source).status());
      continue;
    }
    bool known = false;
    for (const TensorRef& s : fn_->fold_sources) known |= s.get() == source;
    if (!known) fn_->fold_sources.push_back(TensorRef(source));
  }
  return Status::OK();
}

StatusOr<ValueRef> TraceContext::value_of(TensorImpl* t) {
  if (t->is_symbolic() || lifts(t)) {
    if (t->is_symbolic() && t->graph() == fn_) return ValueRef{t->graph_node(), t->graph_output()};
    bool from_enclosing_trace = !t->is_symbolic();
    for (TraceContext* p = parent_; p != nullptr; p = p->parent_)
      from_enclosing_trace |= (p->fn_ == t->graph());
    if (!from_enclosing_trace)
      return make_error(Code::kInvalidArgument,
                        "a symbolic tensor of another ember.function graph was used in this one; pass it as "
                        "an argument or return it from the function that created it");
    // A tensor of an enclosing trace (or a floating concrete value a branch or body reads: Note [Folded
    // values of concrete arguments]): lifted into an argument that each call passes explicitly.
    auto it = capture_nodes_.find(t);
    if (it != capture_nodes_.end()) return ValueRef{it->second, 0};
    SmallVector<TensorSpec, 2> specs;
    specs.push_back(TensorSpec{t->dtype(), t->shape()});
    int32_t node = fn_->graph.add_node(placeholder_op(), {}, placeholder_attrs(t->dtype(), t->shape()),
                                       std::move(specs), {}, "lifted_capture");
    lifted_args_.push_back(node);
    fn_->args.push_back(node);
    fn_->lifted_captures.push_back(TensorRef(t));
    capture_nodes_.emplace(t, node);
    return ValueRef{node, 0};
  }
  if (local_constants_.count(t)) {
    auto it = const_nodes_.find(t);
    if (it != const_nodes_.end()) return ValueRef{it->second, 0};
    SmallVector<TensorSpec, 2> specs;
    specs.push_back(TensorSpec{t->dtype(), t->shape()});
    AttrList attrs;
    attrs.push_back(TensorRef(t));
    int32_t node = fn_->graph.add_node(const_op(), {}, std::move(attrs), std::move(specs),
                                       location_provider_ ? location_provider_() : SourceLocation{});
    const_nodes_.emplace(t, node);
    return ValueRef{node, 0};
  }
  // An eager tensor from outside the function: captured by value as an extra argument.
  auto it = capture_nodes_.find(t);
  if (it != capture_nodes_.end()) return ValueRef{it->second, 0};
  SmallVector<TensorSpec, 2> specs;
  specs.push_back(TensorSpec{t->dtype(), t->shape()});
  int32_t node = fn_->graph.add_node(placeholder_op(), {}, placeholder_attrs(t->dtype(), t->shape()),
                                     std::move(specs), {}, "capture");
  captured_args_.push_back(node);
  fn_->args.push_back(node);
  fn_->captured_values.push_back(TensorRef(t));
  capture_nodes_.emplace(t, node);
  return ValueRef{node, 0};
}

// Note [Shapes of enclosing values]
// The Shape of a tensor of an enclosing trace is computed in that trace and lifted, rather than lifting the
// tensor: a nested function (a branch, a loop body, a backward function) that reads only a value's shape
// then takes a small int vector instead of the value. This matters most for a While's gradient: the
// backward of BroadcastTo (and of every op that reads only its input's shape) makes the forward loop stack
// the shape per iteration rather than the input, so a loop variable whose shape changes across iterations
// (shape invariants with None) can still be differentiated, and memory is saved. The value is the same
// wherever Shape runs: a lifted tensor is fixed for the whole call of the nested function.
TraceContext* TraceContext::owner_of(const TensorImpl* t) {
  for (TraceContext* p = parent_; p != nullptr; p = p->parent_)
    if (p->fn_ == t->graph()) return p;
  return nullptr;
}

Status TraceContext::intercept(const OpDef& op, std::span<TensorImpl* const> inputs,
                               std::span<const AttrValue> attrs, OutputList& outputs) {
  if (op.name == "Shape" && inputs.size() == 1 && inputs[0]->is_symbolic() && inputs[0]->graph() != fn_) {
    if (TraceContext* owner = owner_of(inputs[0])) return owner->intercept(op, inputs, attrs, outputs);
  }
  bool all_concrete = true;
  bool shapes_known = true;
  for (TensorImpl* t : inputs) {
    all_concrete &= !t->is_symbolic();
    shapes_known &= t->shape().fully_defined();
  }
  // tf.shape(x) of a statically shaped x is a constant while tracing, so tf.reshape(x, [tf.shape(x)[0],
  // -1]) and friends fold instead of needing dynamic shapes.
  if (op.has_flag(kReadsOnlyShape) && shapes_known) all_concrete = true;
  if (all_concrete && !op.has_flag(kStateful)) {
    // Constant folding: run now; the results are constants local to this trace.
    EMBER_RETURN_IF_ERROR(run_kernel(op, inputs, attrs, outputs));
    // An output that is an input handed back (Identity, a loop variable a While passes through) made
    // nothing new: that tensor stays what it was (local or not, with the fold that made it), and no fold
    // reads its own result.
    auto is_input = [&](const TensorImpl* r) {
      return std::find(inputs.begin(), inputs.end(), r) != inputs.end();
    };
    bool differentiable_input = false, new_output = false;
    for (TensorImpl* t : inputs) differentiable_input |= is_floating(t->dtype()) || is_complex(t->dtype());
    for (TensorRef& r : outputs) {
      if (is_input(r.get())) continue;
      note_local_constant(r.get());
      new_output = true;
    }
    if (differentiable_input && new_output && !op.has_flag(kReadsOnlyShape)) {
      auto fold = std::make_shared<Fold>();
      fold->op = &op;
      for (const AttrValue& a : attrs) fold->attrs.push_back(a);
      for (TensorImpl* t : inputs) fold->inputs.push_back(TensorRef(t));
      // A handed-back output is kept as null: its position still says which result of a replay it is.
      for (TensorRef& r : outputs) fold->outputs.push_back(is_input(r.get()) ? TensorRef() : r);
      for (const TensorRef& r : fold->outputs)
        if (r) folds_[r.get()] = fold;
    }
    return Status::OK();
  }
  SmallVector<ValueRef, 4> values;
  SmallVector<TensorSpec, 4> specs;
  SmallVector<const TensorImpl*, 4> constants;
  // What is known of symbolic shape-like operands (Reshape's shape built from tf.shape(x), ...).
  std::vector<PartialValue> partials;
  SmallVector<int, 4> partial_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorImpl* t = inputs[i];
    auto v = value_of(t);
    if (!v.ok()) return op_error(op, v.status());
    values.push_back(*v);
    specs.push_back(TensorSpec{t->dtype(), t->shape()});
    constants.push_back(t->is_symbolic() ? nullptr : t);
    partial_index.push_back(-1);
    if (t->is_symbolic() && !op.inputs.empty() && op.arg_of(i, inputs.size()).shape_like) {
      partial_index.back() = static_cast<int>(partials.size());
      partials.push_back(partial_value(fn_->graph, *v));
    }
  }
  SmallVector<const PartialValue*, 4> partial_of;
  for (int k : partial_index) partial_of.push_back(k < 0 ? nullptr : &partials[k]);
  SmallVector<TensorSpec, 2> out_specs;
  SourceLocation location = location_provider_ ? location_provider_() : SourceLocation{};
  Status s = infer_op(op, {specs.data(), specs.size()}, {constants.data(), constants.size()}, attrs,
                      out_specs, {partial_of.data(), partial_of.size()});
  if (!s.ok()) return with_source_context(op, {}, location, s);
  // The graph keeps its callees alive: the library only knows functions by (weak) name.
  const bool calls = calls_functions(op);
  if (calls) {
    for (const std::string& name : called_functions(op, attrs))
      if (auto callee = FunctionLibrary::global().find(name)) fn_->callees.push_back(std::move(callee));
  }
  AttrList attr_list;
  for (const AttrValue& a : attrs) attr_list.push_back(a);
  int32_t node = fn_->graph.add_node(op, {values.data(), values.size()}, std::move(attr_list),
                                     std::move(out_specs), std::move(location));
  if (const std::string& device = eager_device_scope(); !device.empty())
    fn_->graph.mutable_node(node).requested_device = device;
  if (!auto_control_deps_) {
    if (op.has_flag(kStateful)) fn_->control_outputs.push_back(node);
  } else if (op.has_flag(kReadsResource) || op.has_flag(kWritesResource)) {
    // Automatic control dependencies (architecture.md §5): a write waits for the last write and every
    // read since; a read waits for the last write. Ops on different variables stay unordered.
    ResourceOrder& order = resource_order_[std::get<int64_t>(attrs[0])];
    if (order.last_write >= 0) fn_->graph.add_control_input(node, order.last_write);
    if (op.has_flag(kWritesResource)) {
      for (int32_t read : order.reads_since_write) fn_->graph.add_control_input(node, read);
      order.reads_since_write.clear();
      order.last_write = node;
    } else {
      order.reads_since_write.push_back(node);
    }
    fn_->control_outputs.push_back(node);
  } else if (op.has_flag(kStateful)) {
    if (calls) {
      // A call reads and writes whatever variables its callees (or functions they call) touch: order it
      // like a write of each, so reads and writes around the call keep program order.
      std::vector<int64_t> resources;
      for (const std::string& name : called_functions(op, attrs))
        if (auto callee = FunctionLibrary::global().find(name)) collect_resources(*callee, resources);
      for (int64_t resource : resources) {
        ResourceOrder& order = resource_order_[resource];
        if (order.last_write >= 0) fn_->graph.add_control_input(node, order.last_write);
        for (int32_t read : order.reads_since_write) fn_->graph.add_control_input(node, read);
        order.reads_since_write.clear();
        order.last_write = node;
      }
    }
    // Stateful ops without a resource keep program order among themselves and always run.
    if (last_stateful_node_ >= 0) fn_->graph.add_control_input(node, last_stateful_node_);
    last_stateful_node_ = node;
    fn_->control_outputs.push_back(node);
  }
  outputs.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(fn_->graph.node(node).outputs.size()); ++i)
    outputs.push_back(symbolic_output(node, i));
  return Status::OK();
}

}  // namespace ember

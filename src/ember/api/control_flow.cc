#include "ember/api/control_flow.h"

#include <memory>
#include <unordered_set>

#include "ember/api/math.h"
#include "ember/ops/execute.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"

namespace ember {
namespace {

[[noreturn]] void fail(Status s) { throw StatusError(std::move(s)); }

bool truth(const char* api, const Tensor& pred) {
  if (!pred.defined()) fail(invalid_argument(api, ": the predicate is undefined"));
  if (pred.dtype() != DType::kBool || pred.shape().rank() != 0)
    fail(invalid_argument(api, ": the predicate must be a bool scalar, got ", dtype_name(pred.dtype()),
                          pred.shape().to_string()));
  return pred.item<bool>();
}

// One branch, condition or body traced inside the current trace, before it is sealed (Note [Lifted
// captures of control flow] in python/ember/ops/control_flow_ops.py: the same steps).
struct Traced {
  std::shared_ptr<FunctionGraph> fn = std::make_shared<FunctionGraph>();
  std::unique_ptr<TraceContext> ctx;
  std::vector<Tensor> results;
};

Traced trace(const std::string& name, const std::vector<TensorSpec>& args,
             const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body) {
  Traced t;
  t.fn->name = name;
  t.ctx = std::make_unique<TraceContext>(t.fn.get());
  t.ctx->set_lifts_enclosing_constants();  // Note [Folded values of concrete arguments]
  TraceScope scope(*t.ctx);
  std::vector<Tensor> placeholders;
  for (size_t i = 0; i < args.size(); ++i)
    placeholders.emplace_back(t.ctx->add_argument(args[i].dtype, args[i].shape, "arg" + std::to_string(i)));
  t.results = body(placeholders);
  for (Tensor& r : t.results) {
    if (!r.defined()) fail(invalid_argument(name, ": a result is undefined"));
    // A tensor of an enclosing trace returned unchanged is lifted with the ones the ops read.
    auto lifted = t.ctx->lift(r.impl());
    if (!lifted.ok()) fail(lifted.status());
    r = Tensor(std::move(lifted).value());
  }
  return t;
}

std::vector<TensorImpl*> union_of_lifted(const std::vector<Traced*>& traced) {
  std::vector<TensorImpl*> order;
  std::unordered_set<TensorImpl*> seen;
  for (Traced* t : traced)
    for (const TensorRef& c : t->fn->lifted_captures)
      if (seen.insert(c.get()).second) order.push_back(c.get());
  return order;
}

// Seals `t` with the lifted arguments in `order` and its results (plus `extra`); returns its library name.
std::string finish(Traced& t, const std::vector<TensorImpl*>& order,
                   const std::vector<TensorRef>& extra = {}) {
  Status s = t.ctx->order_lifted({order.data(), order.size()});
  if (!s.ok()) fail(s);
  auto add_result = [&](TensorImpl* impl) {
    auto v = t.ctx->value_of(impl);
    if (!v.ok()) fail(v.status());
    t.fn->results.push_back(*v);
  };
  for (const Tensor& r : t.results) add_result(r.impl());
  for (const TensorRef& r : extra) add_result(r.get());
  t.ctx->seal();
  t.ctx.reset();
  return FunctionLibrary::global().add(t.fn);
}

// Tensor(int64_t) infers int32, as a Python int does; the iteration counter is int64.
Tensor int64_scalar(int64_t v) { return Tensor::from_vector<int64_t>({v}, Shape{}); }

bool stateful(const FunctionGraph& fn) { return !fn.control_outputs.empty(); }

void check_same_outputs(const char* api, const Traced& first, const Traced& other, size_t index) {
  if (first.results.size() != other.results.size())
    fail(invalid_argument(api, ": branch ", index, " returns ", other.results.size(), " tensor(s), branch 0 ",
                          first.results.size()));
  for (size_t i = 0; i < first.results.size(); ++i)
    if (first.results[i].dtype() != other.results[i].dtype())
      fail(invalid_argument(api, ": output ", i, " is ", dtype_name(first.results[i].dtype()),
                            " in branch 0 but ", dtype_name(other.results[i].dtype()), " in branch ", index));
}

std::vector<Tensor> call_branches(const char* api, const char* op, const Tensor& selector,
                                  const std::vector<Branch>& branches,
                                  AttrList attrs_for_names(const std::vector<std::string>&)) {
  std::vector<Traced> traced;
  for (size_t b = 0; b < branches.size(); ++b)
    traced.push_back(trace(std::string(api) + "_branch" + std::to_string(b), {},
                           [&](const std::vector<Tensor>&) { return branches[b](); }));
  for (size_t b = 1; b < traced.size(); ++b) check_same_outputs(api, traced[0], traced[b], b);
  std::vector<Traced*> pointers;
  for (Traced& t : traced) pointers.push_back(&t);
  std::vector<TensorImpl*> order = union_of_lifted(pointers);
  std::vector<std::string> names;
  bool has_state = false;
  std::vector<std::shared_ptr<FunctionGraph>> keep_alive;
  for (Traced& t : traced) {
    keep_alive.push_back(t.fn);
    names.push_back(finish(t, order));
    has_state |= stateful(*t.fn);
  }
  std::vector<Tensor> inputs = {selector};
  for (TensorImpl* t : order) inputs.emplace_back(TensorRef(t));
  AttrList attrs = attrs_for_names(names);
  return call_op(has_state ? op : (std::string("Stateless") + op), inputs, {attrs.begin(), attrs.end()});
}

}  // namespace

std::vector<Tensor> cond(const Tensor& pred, const Branch& then_fn, const Branch& else_fn) {
  if (!then_fn || !else_fn) fail(invalid_argument("cond: both branches are required"));
  if (TraceContext::current() == nullptr) return truth("cond", pred) ? then_fn() : else_fn();
  if (pred.dtype() != DType::kBool || (pred.shape().rank_known() && pred.shape().rank() != 0))
    fail(invalid_argument("cond: the predicate must be a bool scalar, got ", dtype_name(pred.dtype()),
                          pred.shape().to_string()));
  return call_branches("cond", "If", pred, {then_fn, else_fn}, [](const std::vector<std::string>& names) {
    AttrList attrs;
    attrs.push_back(names[0]);
    attrs.push_back(names[1]);
    return attrs;
  });
}

std::vector<Tensor> switch_case(const Tensor& index, const std::vector<Branch>& branches) {
  if (branches.empty()) fail(invalid_argument("switch_case: needs at least one branch"));
  if (index.dtype() != DType::kInt32)
    fail(invalid_argument("switch_case: the index must be int32, got ", dtype_name(index.dtype())));
  if (TraceContext::current() == nullptr) {
    int64_t i = index.item<int32_t>();
    return branches[i < 0 || i >= static_cast<int64_t>(branches.size()) ? branches.size() - 1 : i]();
  }
  return call_branches("switch_case", "Case", index, branches, [](const std::vector<std::string>& names) {
    std::string joined;
    for (const std::string& n : names) joined += (joined.empty() ? "" : ",") + n;
    AttrList attrs;
    attrs.push_back(joined);
    return attrs;
  });
}

std::vector<Tensor> while_loop(const LoopCondition& cond, const LoopBody& body, std::vector<Tensor> loop_vars,
                               std::optional<int64_t> maximum_iterations,
                               const std::vector<Shape>& shape_invariants) {
  if (!cond || !body) fail(invalid_argument("while_loop: cond and body are required"));
  if (loop_vars.empty()) fail(invalid_argument("while_loop: loop_vars must be provided"));
  if (!shape_invariants.empty() && shape_invariants.size() != loop_vars.size())
    fail(invalid_argument("while_loop: ", shape_invariants.size(), " shape invariant(s) for ",
                          loop_vars.size(), " loop variable(s)"));
  for (const Tensor& v : loop_vars)
    if (!v.defined()) fail(invalid_argument("while_loop: a loop variable is undefined"));
  auto check_body = [&](const std::vector<Tensor>& out, const std::vector<Shape>& invariants) {
    if (out.size() != loop_vars.size())
      fail(invalid_argument("while_loop: the body returned ", out.size(), " tensor(s) for ", loop_vars.size(),
                            " loop variable(s)"));
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].defined()) fail(invalid_argument("while_loop: the body returned an undefined tensor"));
      if (out[i].dtype() != loop_vars[i].dtype())
        fail(invalid_argument("while_loop: loop variable ", i, " enters the loop as ",
                              dtype_name(loop_vars[i].dtype()), " but the body returns ",
                              dtype_name(out[i].dtype())));
      const Shape& want = invariants[i];
      const Shape& got = out[i].shape();
      bool fits = !want.rank_known() || (got.rank_known() && got.rank() == want.rank());
      for (int d = 0; fits && want.rank_known() && d < want.rank(); ++d)
        fits = want.dim(d) < 0 || want.dim(d) == got.dim(d);
      if (!fits)
        fail(invalid_argument("while_loop: loop variable ", i, " enters the loop with shape ",
                              want.to_string(), " but has shape ", got.to_string(),
                              " after one iteration; pass shape_invariants to let it change"));
    }
  };
  if (TraceContext::current() == nullptr) {
    std::vector<Shape> invariants;
    for (size_t i = 0; i < loop_vars.size(); ++i)
      invariants.push_back(shape_invariants.empty() ? loop_vars[i].shape() : shape_invariants[i]);
    for (int64_t iteration = 0; !maximum_iterations || iteration < *maximum_iterations; ++iteration) {
      if (!truth("while_loop", cond(loop_vars))) break;
      std::vector<Tensor> out = body(loop_vars);
      check_body(out, invariants);
      loop_vars = std::move(out);
    }
    return loop_vars;
  }
  const bool counted = maximum_iterations.has_value();
  std::vector<TensorSpec> specs;
  std::vector<Shape> invariants;
  if (counted) specs.push_back(TensorSpec{DType::kInt64, Shape{}});
  for (size_t i = 0; i < loop_vars.size(); ++i) {
    Shape shape = shape_invariants.empty() ? loop_vars[i].shape() : shape_invariants[i];
    if (!shape.is_compatible_with(loop_vars[i].shape()))
      fail(invalid_argument("while_loop: the shape invariant ", shape.to_string(), " of loop variable ", i,
                            " does not fit its initial shape ", loop_vars[i].shape().to_string()));
    invariants.push_back(shape);
    specs.push_back(TensorSpec{loop_vars[i].dtype(), shape});
  }
  const size_t skip = counted ? 1 : 0;
  Tensor limit = counted ? int64_scalar(*maximum_iterations) : Tensor();
  Traced cond_traced = trace("while_cond", specs, [&](const std::vector<Tensor>& args) {
    Tensor c = cond({args.begin() + skip, args.end()});
    if (!c.defined() || c.dtype() != DType::kBool || (c.shape().rank_known() && c.shape().rank() != 0))
      fail(invalid_argument("while_loop: cond must return a bool scalar"));
    if (counted) c = call_op1("LogicalAnd", {call_op1("Less", {args[0], limit}), c});
    return std::vector<Tensor>{c};
  });
  Traced body_traced = trace("while_body", specs, [&](const std::vector<Tensor>& args) {
    std::vector<Tensor> out = body({args.begin() + skip, args.end()});
    check_body(out, invariants);
    if (counted) out.insert(out.begin(), args[0] + int64_scalar(1));
    return out;
  });
  std::vector<TensorImpl*> order = union_of_lifted({&cond_traced, &body_traced});
  std::vector<TensorRef> passed_through;
  for (TensorImpl* t : order) {
    auto lifted = body_traced.ctx->lift(t);
    if (!lifted.ok()) fail(lifted.status());
    passed_through.push_back(std::move(lifted).value());
  }
  std::shared_ptr<FunctionGraph> cond_fn = cond_traced.fn, body_fn = body_traced.fn;
  std::string cond_name = finish(cond_traced, order);
  std::string body_name = finish(body_traced, order, passed_through);
  std::vector<Tensor> inputs;
  if (counted) inputs.push_back(int64_scalar(0));
  inputs.insert(inputs.end(), loop_vars.begin(), loop_vars.end());
  for (TensorImpl* t : order) inputs.emplace_back(TensorRef(t));
  const bool has_state = stateful(*cond_fn) || stateful(*body_fn);
  std::vector<Tensor> outs = call_op(has_state ? "While" : "StatelessWhile", inputs,
                                     {AttrValue(cond_name), AttrValue(body_name), AttrValue(int64_t{10})});
  return {outs.begin() + skip, outs.begin() + skip + loop_vars.size()};
}

}  // namespace ember

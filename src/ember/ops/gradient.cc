#include "ember/ops/gradient.h"

#include <algorithm>
#include <unordered_map>

#include "ember/ops/registry.h"

namespace ember::gradient {
namespace {

[[noreturn]] void fail(Status s) { throw StatusError(std::move(s)); }

const OpDef& lookup(std::string_view name) {
  // Rules run often; avoid re-hashing the registry's string map for the handful of ops they use.
  thread_local std::unordered_map<std::string_view, const OpDef*> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  const OpDef& def = op_def(name);
  cache.emplace(def.name, &def);
  return def;
}

SmallVector<GradTensor, 2> run(const OpDef& def, std::span<const GradTensor> inputs, AttrList attrs) {
  SmallVector<TensorImpl*, 4> impls;
  for (const GradTensor& t : inputs) {
    if (!t) fail(make_error(Code::kInternal, def.name, ": a gradient rule passed a null tensor"));
    impls.push_back(t.get());
  }
  Status s = complete_attrs(def, attrs);
  if (!s.ok()) fail(s);
  OutputList outputs;
  s = execute_op(def, {impls.data(), impls.size()}, {attrs.data(), attrs.size()}, outputs);
  if (!s.ok()) fail(s);
  SmallVector<GradTensor, 2> result;
  for (TensorRef& r : outputs) result.push_back(GradTensor(std::move(r)));
  return result;
}

}  // namespace

SmallVector<GradTensor, 2> emit(std::string_view name, std::initializer_list<GradTensor> inputs,
                                AttrList attrs) {
  return run(lookup(name), {inputs.begin(), inputs.size()}, std::move(attrs));
}

SmallVector<GradTensor, 2> emit(std::string_view name, std::span<const GradTensor> inputs, AttrList attrs) {
  return run(lookup(name), inputs, std::move(attrs));
}

GradTensor emit1(std::string_view name, std::initializer_list<GradTensor> inputs, AttrList attrs) {
  return run(lookup(name), {inputs.begin(), inputs.size()}, std::move(attrs))[0];
}

GradTensor scalar(double value, DType dtype) {
  auto t = TensorImpl::allocate(dtype, Shape());
  if (!t.ok()) fail(t.status());
  TensorRef ref = std::move(t).value();
  bool known = visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      *ref->mutable_data<bool>() = value != 0;
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      *ref->mutable_data<T>() = T(static_cast<float>(value));
    } else {
      *ref->mutable_data<T>() = static_cast<T>(value);
    }
  });
  if (!known) fail(make_error(Code::kInternal, "gradient: no scalar of this dtype"));
  AttrList attrs;
  attrs.push_back(std::move(ref));
  return run(lookup("Const"), {}, std::move(attrs))[0];
}

GradTensor constant_like(double value, const GradTensor& like) {
  AttrList attrs;
  attrs.push_back(static_dims(like, "constant_like"));
  return run(lookup("Fill"), std::initializer_list<GradTensor>{scalar(value, like.dtype())},
             std::move(attrs))[0];
}

GradTensor binary(std::string_view name, const GradTensor& x, const GradTensor& y) {
  return emit1(name, {x, y});
}
GradTensor unary(std::string_view name, const GradTensor& x) { return emit1(name, {x}); }

GradTensor operator+(const GradTensor& a, const GradTensor& b) { return binary("Add", a, b); }
GradTensor operator-(const GradTensor& a, const GradTensor& b) { return binary("Sub", a, b); }
GradTensor operator*(const GradTensor& a, const GradTensor& b) { return binary("Mul", a, b); }
GradTensor operator/(const GradTensor& a, const GradTensor& b) { return binary("RealDiv", a, b); }
GradTensor operator-(const GradTensor& a) { return unary("Neg", a); }
GradTensor operator+(const GradTensor& a, double b) { return a + scalar(b, a.dtype()); }
GradTensor operator-(const GradTensor& a, double b) { return a - scalar(b, a.dtype()); }
GradTensor operator*(const GradTensor& a, double b) { return a * scalar(b, a.dtype()); }
GradTensor operator/(const GradTensor& a, double b) { return a / scalar(b, a.dtype()); }
GradTensor operator+(double a, const GradTensor& b) { return scalar(a, b.dtype()) + b; }
GradTensor operator-(double a, const GradTensor& b) { return scalar(a, b.dtype()) - b; }
GradTensor operator*(double a, const GradTensor& b) { return scalar(a, b.dtype()) * b; }
GradTensor operator/(double a, const GradTensor& b) { return scalar(a, b.dtype()) / b; }

GradTensor square(const GradTensor& x) { return unary("Square", x); }
GradTensor sqrt(const GradTensor& x) { return unary("Sqrt", x); }
GradTensor exp(const GradTensor& x) { return unary("Exp", x); }
GradTensor log(const GradTensor& x) { return unary("Log", x); }
GradTensor reciprocal(const GradTensor& x) { return unary("Reciprocal", x); }
GradTensor sign(const GradTensor& x) { return unary("Sign", x); }
GradTensor sigmoid(const GradTensor& x) { return unary("Sigmoid", x); }
GradTensor cast(const GradTensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  AttrList attrs;
  attrs.push_back(dtype);
  return emit1("Cast", {x}, std::move(attrs));
}
GradTensor zeros_like(const GradTensor& x) { return unary("ZerosLike", x); }
GradTensor ones_like(const GradTensor& x) { return unary("OnesLike", x); }
GradTensor compare(std::string_view name, const GradTensor& x, const GradTensor& y) {
  return binary(name, x, y);
}
GradTensor select(const GradTensor& cond, const GradTensor& a, const GradTensor& b) {
  return emit1("SelectV2", {cond, a, b});
}
GradTensor mask(const GradTensor& cond, DType dtype) { return cast(cond, dtype); }

GradTensor add_n(std::span<const GradTensor> xs) {
  if (xs.size() == 1) return xs[0];
  if (xs.size() == 2) return xs[0] + xs[1];
  return run(lookup("AddN"), xs, {})[0];
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> static_dims(const GradTensor& t, std::string_view what) {
  if (!t.shape().fully_defined())
    fail(make_error(Code::kUnimplemented, what, ": the gradient needs a statically known shape, got ",
                    t.shape().to_string(), " (ember does not support dynamic shapes in gradients yet)"));
  return t.shape().dim_vector();
}

void check_ok(const Status& s) {
  if (!s.ok()) fail(s);
}

GradTensor sum(const GradTensor& x, std::vector<int64_t> axes, bool keepdims) {
  AttrList attrs;
  attrs.push_back(std::move(axes));
  attrs.push_back(keepdims);
  return emit1("Sum", {x}, std::move(attrs));
}

GradTensor reduce_to(const GradTensor& g, const GradTensor& like) {
  const Shape& gs = g.shape();
  const Shape& ls = like.shape();
  if (gs == ls && gs.fully_defined()) return g;
  if (!gs.rank_known() || !ls.rank_known())
    fail(make_error(Code::kUnimplemented, "gradient of a broadcast: ranks must be known, got ",
                    gs.to_string(), " and ", ls.to_string()));
  int lead = gs.rank() - ls.rank();
  std::vector<int64_t> leading, inner;
  bool unknown_broadcast = false;
  for (int i = 0; i < lead; ++i) leading.push_back(i);
  for (int i = 0; i < ls.rank(); ++i) {
    int64_t ld = ls.dim(i), gd = gs.dim(lead + i);
    if (ld == 1 && gd != 1) inner.push_back(i);
    unknown_broadcast |= ld < 0 && gd != 1;
  }
  GradTensor r = g;
  if (!leading.empty()) r = sum(r, leading, false);
  if (!inner.empty()) r = sum(r, inner, true);
  if (unknown_broadcast) {
    // Whether `like` was broadcast along a dimension unknown while tracing is only known at run time, and
    // summing it back needs shapes as tensors (the dynamic-shape work). Until then the common case (no
    // broadcast there) is right, and a broadcast fails at run time instead of giving an unreduced
    // gradient: AddN requires the two shapes to be equal.
    GradTensor check[] = {r, zeros_like(like)};
    r = run(lookup("AddN"), check, {})[0];
  }
  return r;
}

GradTensor reshape(const GradTensor& x, std::vector<int64_t> dims) {
  if (x.shape().fully_defined() && x.shape().dim_vector() == dims) return x;
  AttrList attrs;
  attrs.push_back(std::move(dims));
  return emit1("Reshape", {x}, std::move(attrs));
}

GradTensor reshape_like(const GradTensor& x, const GradTensor& like) {
  if (!like.shape().rank_known())
    fail(make_error(Code::kUnimplemented, "gradient: reshape to a tensor of unknown rank"));
  std::vector<int64_t> dims = like.shape().dim_vector();
  int unknown = static_cast<int>(std::count(dims.begin(), dims.end(), kUnknownDim));
  if (unknown > 1) static_dims(like, "reshape");  // throws with a clear message
  return reshape(x, std::move(dims));
}

GradTensor broadcast_to(const GradTensor& x, std::vector<int64_t> dims) {
  if (x.shape().fully_defined() && x.shape().dim_vector() == dims) return x;
  AttrList attrs;
  attrs.push_back(std::move(dims));
  return emit1("BroadcastTo", {x}, std::move(attrs));
}

GradTensor broadcast_like(const GradTensor& x, const GradTensor& like) {
  return broadcast_to(x, static_dims(like, "broadcast"));
}

GradTensor transpose(const GradTensor& x, std::vector<int64_t> perm) {
  AttrList attrs;
  attrs.push_back(std::move(perm));
  return emit1("Transpose", {x}, std::move(attrs));
}

GradTensor matmul(const GradTensor& a, const GradTensor& b, bool transpose_a, bool transpose_b) {
  AttrList attrs;
  attrs.push_back(transpose_a);
  attrs.push_back(transpose_b);
  return emit1("MatMul", {a, b}, std::move(attrs));
}

}  // namespace ember::gradient

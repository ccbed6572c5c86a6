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
  bool known = visit_dtype<kAllTypesAndComplex>(dtype, [&]<typename T>() {
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

GradTensor int_vector(std::span<const int64_t> values) {
  auto t = TensorImpl::allocate(DType::kInt32, Shape{static_cast<int64_t>(values.size())});
  if (!t.ok()) fail(t.status());
  TensorRef ref = std::move(t).value();
  int32_t* p = ref->mutable_data<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < INT32_MIN || values[i] > INT32_MAX)
      fail(make_error(Code::kInvalidArgument, "gradient: a dimension of ", values[i], " does not fit int32"));
    p[i] = static_cast<int32_t>(values[i]);
  }
  AttrList attrs;
  attrs.push_back(std::move(ref));
  return run(lookup("Const"), {}, std::move(attrs))[0];
}

GradTensor shape_of(const GradTensor& x) {
  if (x.shape().fully_defined()) return int_vector(x.shape().dims());
  return emit1("Shape", {x});
}

std::vector<int64_t> known_ints(const GradTensor& t, std::string_view op, std::string_view what) {
  if (t->is_symbolic())
    fail(make_error(Code::kUnimplemented, op, ": the gradient needs '", what,
                    "' to be known while tracing, got a value computed in the graph"));
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    fail(make_error(Code::kInvalidArgument, op, ": '", what, "' must be int32 or int64"));
  return PartialValue::from_tensor(*t.get()).values;
}

GradTensor constant_like(double value, const GradTensor& like) {
  return emit1("Fill", {shape_of(like), scalar(value, like.dtype())});
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
  attrs.push_back(keepdims);
  return emit1("Sum", {x, int_vector(axes)}, std::move(attrs));
}

namespace {
// Whether nothing can have broadcast `like` along its dim i when it was broadcast against `other`: the
// other operand does not reach that dim, or is 1 there, so the result's dim is like's own.
bool not_broadcast_by(const Shape& like, int i, const GradTensor* other) {
  if (other == nullptr || !other->shape().rank_known()) return false;
  const Shape& os = other->shape();
  const int j = i - (like.rank() - os.rank());  // other's aligned dim
  return j < 0 || os.dim(j) == 1;
}

GradTensor reduce_to_impl(const GradTensor& g, const GradTensor& like, const GradTensor* other) {
  const Shape& gs = g.shape();
  const Shape& ls = like.shape();
  if (gs == ls && gs.fully_defined()) return g;
  bool dynamic = !gs.rank_known() || !ls.rank_known();
  if (!dynamic) {
    // Statically decidable unless `like` has an unknown dim where g's is not 1 and the other operand could
    // have broadcast it: whether it was is then only known at run time. (Summing a dim of g that turns out
    // to be 1 changes nothing.)
    const int lead = gs.rank() - ls.rank();
    dynamic = lead < 0;
    for (int i = 0; !dynamic && i < ls.rank(); ++i) {
      const int64_t ld = ls.dim(i), gd = gs.dim(lead + i);
      dynamic = ld < 0 && gd != 1 && !not_broadcast_by(ls, i, other);
    }
  }
  if (dynamic) {
    // The axes along which `like` was broadcast, worked out at run time (TensorFlow's BroadcastGradientArgs).
    GradTensor axes = emit("BroadcastGradientArgs", {shape_of(g), shape_of(like)})[1];
    AttrList attrs;
    attrs.push_back(false);
    return reshape_to(emit1("Sum", {g, axes}, std::move(attrs)), shape_of(like));
  }
  const int lead = gs.rank() - ls.rank();
  std::vector<int64_t> leading, inner;
  for (int i = 0; i < lead; ++i) leading.push_back(i);
  for (int i = 0; i < ls.rank(); ++i)
    if (ls.dim(i) == 1 && gs.dim(lead + i) != 1) inner.push_back(i);
  GradTensor r = g;
  if (!leading.empty()) r = sum(r, leading, false);
  if (!inner.empty()) r = sum(r, inner, true);
  return r;
}
}  // namespace

GradTensor reduce_to(const GradTensor& g, const GradTensor& like) { return reduce_to_impl(g, like, nullptr); }

GradTensor reduce_to(const GradTensor& g, const GradTensor& like, const GradTensor& other) {
  return reduce_to_impl(g, like, &other);
}

GradTensor reshape(const GradTensor& x, std::vector<int64_t> dims) {
  if (x.shape().fully_defined() && x.shape().dim_vector() == dims) return x;
  return emit1("Reshape", {x, int_vector(dims)});
}

GradTensor reshape_to(const GradTensor& x, const GradTensor& shape) { return emit1("Reshape", {x, shape}); }

GradTensor reshape_like(const GradTensor& x, const GradTensor& like) {
  const Shape& ls = like.shape();
  if (ls.rank_known() && std::count(ls.dims().begin(), ls.dims().end(), kUnknownDim) <= 1)
    return reshape(x, ls.dim_vector());  // at most one unknown dim: a constant shape with -1 there
  return reshape_to(x, shape_of(like));
}

GradTensor broadcast_to(const GradTensor& x, std::vector<int64_t> dims) {
  if (x.shape().fully_defined() && x.shape().dim_vector() == dims) return x;
  return emit1("BroadcastTo", {x, int_vector(dims)});
}

GradTensor broadcast_like(const GradTensor& x, const GradTensor& like) {
  if (like.shape().fully_defined()) return broadcast_to(x, like.shape().dim_vector());
  return emit1("BroadcastTo", {x, shape_of(like)});
}

GradTensor expand_dims(const GradTensor& x, int64_t axis) {
  const int64_t a[] = {axis};
  return emit1("ExpandDims", {x, int_vector(a)});
}

GradTensor dims_product(const GradTensor& x, int lo, int hi) {
  int64_t product = 1;
  bool known = true;
  for (int d = lo; d < hi; ++d) {
    known &= x.shape().dim(d) >= 0;
    if (known) product *= x.shape().dim(d);
  }
  if (known) return scalar(static_cast<double>(product), DType::kInt32);
  const int64_t begin[] = {lo}, size[] = {hi - lo}, axis[] = {0};
  GradTensor dims = emit1("Slice", {shape_of(x), int_vector(begin), int_vector(size)});
  return emit1("Prod", {dims, int_vector(axis)});
}

GradTensor stack_ints(std::initializer_list<GradTensor> values) {
  AttrList attrs;
  attrs.push_back(int64_t{0});
  return run(lookup("Pack"), {values.begin(), values.size()}, std::move(attrs))[0];
}

GradTensor transpose(const GradTensor& x, std::vector<int64_t> perm) {
  return emit1("Transpose", {x, int_vector(perm)});
}

GradTensor matmul(const GradTensor& a, const GradTensor& b, bool transpose_a, bool transpose_b) {
  AttrList attrs;
  attrs.push_back(transpose_a);
  attrs.push_back(transpose_b);
  return emit1("MatMul", {a, b}, std::move(attrs));
}

}  // namespace ember::gradient

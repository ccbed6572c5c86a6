// Gradient rules (architecture.md §0.6, §7). Each differentiable op's OpDef::grad receives a GradContext
// and emits ember ops through the helpers below. The helpers call execute_op, so a rule runs eagerly, is
// recorded by an outer GradientTape (higher-order gradients) or — while a trace is active — adds graph
// nodes (the backward half of a graph function). Rules throw StatusError; the tape turns it into a Status.
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>

#include "ember/ops/execute.h"

namespace ember {

/// A tensor handle for writing gradient rules: arithmetic operators emit ops.
class GradTensor {
 public:
  GradTensor() = default;
  GradTensor(TensorImpl* t) : ref_(t) {}  // NOLINT(google-explicit-constructor): rules read naturally
  GradTensor(TensorRef t) : ref_(std::move(t)) {}  // NOLINT(google-explicit-constructor)

  TensorImpl* get() const { return ref_.get(); }
  TensorImpl* operator->() const { return ref_.get(); }
  const TensorRef& ref() const { return ref_; }
  TensorRef release() { return std::move(ref_); }
  explicit operator bool() const { return static_cast<bool>(ref_); }
  DType dtype() const { return ref_->dtype(); }
  const Shape& shape() const { return ref_->shape(); }
  int rank() const { return ref_->rank(); }

 private:
  TensorRef ref_;
};

struct GradContext : AttrReader {
  const OpDef* op = nullptr;
  std::span<TensorImpl* const> inputs;
  std::span<TensorImpl* const> outputs;
  /// One per output, never null: an output that received no gradient gets zeros.
  std::span<TensorImpl* const> output_grads;
  /// One per input, sized by the caller; a rule leaves null where the input gets no gradient.
  SmallVector<TensorRef, 4> input_grads;

  GradTensor input(int i) const { return GradTensor(inputs[i]); }
  GradTensor output(int i) const { return GradTensor(outputs[i]); }
  /// The gradient arriving at output `i` ("dy").
  GradTensor grad(int i = 0) const { return GradTensor(output_grads[i]); }
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  void set(int i, GradTensor g) { input_grads[i] = g.release(); }
};

/// Whether gradients flow through tensors of this dtype (floating point and complex, as in TensorFlow).
inline bool is_differentiable_dtype(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16 ||
         is_complex(d);
}

namespace gradient {

/// Runs op `name` (eagerly or into the active trace) and returns its outputs; throws StatusError.
SmallVector<GradTensor, 2> emit(std::string_view name, std::initializer_list<GradTensor> inputs,
                                AttrList attrs = {});
SmallVector<GradTensor, 2> emit(std::string_view name, std::span<const GradTensor> inputs, AttrList attrs);
/// The single output of op `name`.
GradTensor emit1(std::string_view name, std::initializer_list<GradTensor> inputs, AttrList attrs = {});

/// A 0-d constant of dtype `dtype` (a Const node when tracing).
GradTensor scalar(double value, DType dtype);
/// A constant of `like`'s dtype and shape filled with `value` (its shape taken at run time if unknown).
GradTensor constant_like(double value, const GradTensor& like);
/// An int32 vector constant (a Const node when tracing): shapes, axes and permutations for the ops'
/// shape-like operands.
GradTensor int_vector(std::span<const int64_t> values);
/// x's shape as an int32 vector: a constant when static, else a Shape op evaluated at run time.
GradTensor shape_of(const GradTensor& x);
/// The values of an int operand of the forward op (its axes, ...), which must be known while tracing;
/// throws Unimplemented naming `op` and `what` otherwise.
std::vector<int64_t> known_ints(const GradTensor& t, std::string_view op, std::string_view what);

GradTensor operator+(const GradTensor& a, const GradTensor& b);
GradTensor operator-(const GradTensor& a, const GradTensor& b);
GradTensor operator*(const GradTensor& a, const GradTensor& b);
GradTensor operator/(const GradTensor& a, const GradTensor& b);
GradTensor operator-(const GradTensor& a);
GradTensor operator+(const GradTensor& a, double b);
GradTensor operator-(const GradTensor& a, double b);
GradTensor operator*(const GradTensor& a, double b);
GradTensor operator/(const GradTensor& a, double b);
GradTensor operator+(double a, const GradTensor& b);
GradTensor operator-(double a, const GradTensor& b);
GradTensor operator*(double a, const GradTensor& b);
GradTensor operator/(double a, const GradTensor& b);

GradTensor unary(std::string_view name, const GradTensor& x);
GradTensor binary(std::string_view name, const GradTensor& x, const GradTensor& y);
GradTensor square(const GradTensor& x);
GradTensor sqrt(const GradTensor& x);
GradTensor exp(const GradTensor& x);
GradTensor log(const GradTensor& x);
GradTensor reciprocal(const GradTensor& x);
GradTensor sign(const GradTensor& x);
GradTensor sigmoid(const GradTensor& x);
GradTensor cast(const GradTensor& x, DType dtype);
GradTensor zeros_like(const GradTensor& x);
GradTensor ones_like(const GradTensor& x);
/// Elementwise comparisons (bool results): "Greater", "Less", "Equal", ...
GradTensor compare(std::string_view name, const GradTensor& x, const GradTensor& y);
/// where(cond, a, b) with broadcasting (SelectV2).
GradTensor select(const GradTensor& cond, const GradTensor& a, const GradTensor& b);
/// 1 where cond holds, else 0, in `dtype`.
GradTensor mask(const GradTensor& cond, DType dtype);
GradTensor add_n(std::span<const GradTensor> xs);

GradTensor sum(const GradTensor& x, std::vector<int64_t> axes, bool keepdims);
/// Sums `g` (the gradient of a broadcast result) down to `like`'s shape: the reverse of broadcasting.
GradTensor reduce_to(const GradTensor& g, const GradTensor& like);
/// The same when `like` was broadcast against `other` (a binary op's operands): a dim of `like` unknown
/// while tracing needs no run-time check where `other` cannot have broadcast it.
GradTensor reduce_to(const GradTensor& g, const GradTensor& like, const GradTensor& other);
GradTensor reshape(const GradTensor& x, std::vector<int64_t> dims);
/// Reshapes `x` to the shape held by the int vector `shape`.
GradTensor reshape_to(const GradTensor& x, const GradTensor& shape);
/// Reshapes `x` to `like`'s shape (read at run time where it is not known while tracing).
GradTensor reshape_like(const GradTensor& x, const GradTensor& like);
GradTensor broadcast_to(const GradTensor& x, std::vector<int64_t> dims);
/// Broadcasts `x` to `like`'s shape (read at run time where it is not known while tracing).
GradTensor broadcast_like(const GradTensor& x, const GradTensor& like);
/// Inserts a size-1 axis at `axis`.
GradTensor expand_dims(const GradTensor& x, int64_t axis);
/// The product of x's dims [lo, hi) as an int32 scalar: a constant when they are known, else computed
/// from Shape(x) at run time. x's rank must be known.
GradTensor dims_product(const GradTensor& x, int lo, int hi);
/// int32 scalars (constants or graph values) stacked into one int32 vector, e.g. a shape to reshape to.
GradTensor stack_ints(std::initializer_list<GradTensor> values);
GradTensor transpose(const GradTensor& x, std::vector<int64_t> perm);
GradTensor matmul(const GradTensor& a, const GradTensor& b, bool transpose_a, bool transpose_b);

/// `axes` (possibly negative, possibly empty meaning all) normalised to sorted, non-negative axes of a
/// rank-`rank` tensor.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int rank);
/// `shape`'s dims; throws naming `what` if any is unknown.
std::vector<int64_t> static_dims(const GradTensor& t, std::string_view what);
/// Throws StatusError unless `s` is OK (for rules that reuse an op's own validation).
void check_ok(const Status& s);

// Note [Complex gradients]
// For a real loss L of complex z = x + iy, TensorFlow's gradient is dL/dx + i dL/dy, and its rules for a
// holomorphic f propagate dz = dy * conj(f'(z)). The real rules above compute dy * f'(x) and are linear in
// dy, so for complex inputs the same rule run on conj(dy), its results conjugated, gives TensorFlow's:
// conj(conj(dy) * f'(z)) = dy * conj(f'(z)). Most rows that declare complex dtypes take this path (Add, Sub,
// Mul, RealDiv, Pow, Exp, Log, Sqrt, Sin, Tanh, ...), and so does MatMul. Rows where TensorFlow's complex rule
// is not this one keep their own rule unwrapped: Xdivy, Xlogy, Xlog1py, MulNoNan and SquaredDifference (TF
// does not conjugate their operands) and the inverse trigonometric and hyperbolic functions (which conjugate
// their operand themselves); see conjugates_complex_operands in ops/math.cc. Ops with no holomorphic form
// (ComplexAbs, Real, Imag, Angle, the FFTs) have rules of their own.

/// The rule `kRule` (written for real inputs) made to follow TensorFlow's convention for complex inputs too.
template <GradFn kRule>
void holomorphic_grad(GradContext& c) {
  if (!is_complex(c.input(0).dtype())) return kRule(c);
  GradTensor conj_dy = gradient::unary("Conj", c.grad());
  TensorImpl* output_grads[] = {conj_dy.get()};
  GradContext inner;
  inner.attrs = c.attrs;
  inner.op = c.op;
  inner.inputs = c.inputs;
  inner.outputs = c.outputs;
  inner.output_grads = output_grads;
  inner.input_grads.resize(c.input_grads.size());
  kRule(inner);
  for (size_t i = 0; i < inner.input_grads.size(); ++i)
    if (inner.input_grads[i])
      c.set(static_cast<int>(i), gradient::unary("Conj", GradTensor(std::move(inner.input_grads[i]))));
}

}  // namespace gradient
}  // namespace ember

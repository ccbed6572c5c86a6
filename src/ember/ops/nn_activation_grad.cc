// TensorFlow's activation-gradient ops (ReluGrad, SigmoidGrad, TanhGrad, ...), and LeakyRelu, Selu and
// Softsign. ember's own
// gradient rules are written in ordinary ops, so its graphs never contain these; they are registered so
// that TensorFlow's training graphs (a tf.function holding a GradientTape) import and run, and they carry
// gradients of their own so such a graph can be differentiated again. Each takes two same-shape operands
// (no broadcasting, as TensorFlow's kernels).
#include <cmath>

#include "ember/core/parallel.h"
#include "ember/kernels/compute_type.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using namespace gradient;  // NOLINT(google-build-using-namespace): gradient rules read as math

// SELU's constants (Klambauer et al.), as TensorFlow's kernels use them.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

Status same_shape_binary(InferContext& ctx) {
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  if (!a.is_compatible_with(b))
    return invalid_argument(ctx.op->name, ": both operands must have the same shape, got ", a.to_string(),
                            " and ", b.to_string());
  Shape merged = a.rank_known() ? a : b;
  if (a.rank_known() && b.rank_known())
    for (int d = 0; d < a.rank(); ++d)
      if (a.dim(d) < 0) merged.set_dim(d, b.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, merged});
  return Status::OK();
}

// out[i] = f(a[i], b[i], attr) in the compute type of T, for same-shape a and b.
template <typename F>
Status elementwise_pair(KernelContext& ctx, F f) {
  const TensorImpl& a = ctx.input(0);
  const TensorImpl& b = ctx.input(1);
  if (a.shape() != b.shape())
    return invalid_argument(ctx.op->name, ": both operands must have the same shape, got ",
                            a.shape().to_string(), " and ", b.shape().to_string());
  const double attr = ctx.attrs.empty() ? 0.0 : ctx.attr_float(0);
  TensorImpl& out = ctx.output(0);
  visit_dtype<kFloatTypes>(a.dtype(), [&]<typename T>() {
    using C = kernels::compute_t<T>;
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    T* z = out.mutable_data<T>();
    const C alpha = static_cast<C>(static_cast<float>(attr));  // a float attribute, as TensorFlow's
    parallel_for(a.num_elements(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        z[i] = static_cast<T>(f(static_cast<C>(x[i]), static_cast<C>(y[i]), alpha));
    });
  });
  return Status::OK();
}

#define EMBER_PAIR_KERNEL(Name, expr)                                            \
  Status Name(KernelContext& ctx) {                                              \
    return elementwise_pair(ctx, [](auto a, auto b, auto alpha) -> decltype(a) { \
      (void)alpha;                                                               \
      return expr;                                                               \
    });                                                                          \
  }

// (gradients, features) ops: a is the incoming gradient, b the forward op's input.
EMBER_PAIR_KERNEL(relu_grad_kernel, b > 0 ? a : decltype(a)(0))
EMBER_PAIR_KERNEL(relu6_grad_kernel, b > 0 && b < 6 ? a : decltype(a)(0))
EMBER_PAIR_KERNEL(leaky_relu_grad_kernel, b > 0 ? a : a * alpha)
EMBER_PAIR_KERNEL(softplus_grad_kernel, a / (1 + std::exp(-b)))
EMBER_PAIR_KERNEL(softsign_grad_kernel, a / ((1 + std::abs(b)) * (1 + std::abs(b))))
// (gradients, outputs) ops: b is the forward op's output.
EMBER_PAIR_KERNEL(elu_grad_kernel, b > 0 ? a : a * (b + 1))
EMBER_PAIR_KERNEL(selu_grad_kernel,
                  b > 0 ? a * decltype(a)(kSeluScale) : a * (b + decltype(a)(kSeluScale * kSeluAlpha)))
// (y, dy) ops: a is the forward op's output, b the incoming gradient.
EMBER_PAIR_KERNEL(sigmoid_grad_kernel, b* a*(1 - a))
EMBER_PAIR_KERNEL(tanh_grad_kernel, b*(1 - a * a))
EMBER_PAIR_KERNEL(sqrt_grad_kernel, b* decltype(a)(0.5) / a)
EMBER_PAIR_KERNEL(rsqrt_grad_kernel, b* decltype(a)(-0.5) * a * a * a)
EMBER_PAIR_KERNEL(reciprocal_grad_kernel, -b* a* a)
#undef EMBER_PAIR_KERNEL

// out[i] = f(x[i], attr) in the compute type of T.
template <typename F>
Status elementwise_one(KernelContext& ctx, F f) {
  const TensorImpl& x = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  const double attr = ctx.attrs.empty() ? 0.0 : ctx.attr_float(0);
  visit_dtype<kFloatTypes>(x.dtype(), [&]<typename T>() {
    using C = kernels::compute_t<T>;
    const T* in = x.data<T>();
    T* z = out.mutable_data<T>();
    const C alpha = static_cast<C>(static_cast<float>(attr));  // a float attribute, as TensorFlow's
    parallel_for(x.num_elements(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) z[i] = static_cast<T>(f(static_cast<C>(in[i]), alpha));
    });
  });
  return Status::OK();
}

Status leaky_relu_kernel(KernelContext& ctx) {
  return elementwise_one(ctx, [](auto v, auto alpha) -> decltype(v) { return v > 0 ? v : v * alpha; });
}
Status selu_kernel(KernelContext& ctx) {
  return elementwise_one(ctx, [](auto v, auto) -> decltype(v) {
    using C = decltype(v);
    return v < 0 ? C(kSeluScale * kSeluAlpha) * (std::exp(v) - 1) : C(kSeluScale) * v;
  });
}
Status softsign_kernel(KernelContext& ctx) {
  return elementwise_one(ctx, [](auto v, auto) -> decltype(v) { return v / (1 + std::abs(v)); });
}

void selu_grad(GradContext& c) { c.set(0, emit1("SeluGrad", {c.grad(), c.output(0)})); }
void softsign_grad(GradContext& c) { c.set(0, emit1("SoftsignGrad", {c.grad(), c.input(0)})); }

GradTensor emit_same(const GradContext& c, const char* op, const GradTensor& a, const GradTensor& b) {
  if (c.attrs.empty()) return emit1(op, {a, b});
  return emit1(op, {a, b}, {AttrValue(c.attr_float(0))});
}

// For (gradients, features) ops whose value is piecewise linear in the gradient with a slope set by the
// features: d/dgradients is the same op applied to the incoming gradient; the features get none (the
// slope is constant almost everywhere), as TensorFlow's rules.
void piecewise_grad(GradContext& c) {
  c.set(0, emit_same(c, c.op->name.c_str(), c.grad(), c.input(1)));
  c.set(1, zeros_like(c.input(1)));
}

void leaky_relu_grad(GradContext& c) {
  c.set(0, emit1("LeakyReluGrad", {c.grad(), c.input(0)}, {AttrValue(c.attr_float(0))}));
}

void elu_grad_grad(GradContext& c) {
  const GradTensor g = c.input(0), y = c.input(1);
  c.set(0, emit1("EluGrad", {c.grad(), y}));
  c.set(1, select(compare("Less", y, zeros_like(y)), c.grad() * g, zeros_like(y)));
}

void selu_grad_grad(GradContext& c) {
  const GradTensor g = c.input(0), y = c.input(1);
  c.set(0, emit1("SeluGrad", {c.grad(), y}));
  c.set(1, select(compare("Less", y, zeros_like(y)), c.grad() * g, zeros_like(y)));
}

void softplus_grad_grad(GradContext& c) {
  const GradTensor g = c.input(0), x = c.input(1);
  const GradTensor s = sigmoid(x);
  c.set(0, emit1("SoftplusGrad", {c.grad(), x}));
  c.set(1, c.grad() * g * s * (1.0 - s));
}

void softsign_grad_grad(GradContext& c) {
  const GradTensor g = c.input(0), x = c.input(1);
  const GradTensor d = 1.0 + unary("Abs", x);
  c.set(0, emit1("SoftsignGrad", {c.grad(), x}));
  c.set(1, c.grad() * g * -2.0 * sign(x) / (d * d * d));
}

// (y, dy) ops: f(y) * dy; d/ddy is the same op on the incoming gradient, d/dy is f'(y) * dy * grad.
void sigmoid_grad_grad(GradContext& c) {
  const GradTensor y = c.input(0), dy = c.input(1);
  c.set(0, c.grad() * dy * (1.0 - 2.0 * y));
  c.set(1, emit1("SigmoidGrad", {y, c.grad()}));
}

void tanh_grad_grad(GradContext& c) {
  const GradTensor y = c.input(0), dy = c.input(1);
  c.set(0, c.grad() * dy * -2.0 * y);
  c.set(1, emit1("TanhGrad", {y, c.grad()}));
}

void sqrt_grad_grad(GradContext& c) {
  const GradTensor y = c.input(0), dy = c.input(1);
  c.set(0, -c.grad() * dy * 0.5 / square(y));
  c.set(1, emit1("SqrtGrad", {y, c.grad()}));
}

void rsqrt_grad_grad(GradContext& c) {
  const GradTensor y = c.input(0), dy = c.input(1);
  c.set(0, c.grad() * dy * -1.5 * square(y));
  c.set(1, emit1("RsqrtGrad", {y, c.grad()}));
}

void reciprocal_grad_grad(GradContext& c) {
  const GradTensor y = c.input(0), dy = c.input(1);
  c.set(0, c.grad() * dy * -2.0 * y);
  c.set(1, emit1("ReciprocalGrad", {y, c.grad()}));
}

struct PairOp {
  const char* name;
  const char* first;
  const char* second;
  KernelFn kernel;
  GradFn grad;
  const char* doc;
};

}  // namespace

void register_activation_grad_ops(OpRegistry& r) {
  const PairOp ops[] = {
      {"ReluGrad", "gradients", "features", &relu_grad_kernel, &piecewise_grad,
       "TensorFlow's gradient of Relu: gradients where features > 0, else 0. relu_grad([5.], [1.]) == [5.]"},
      {"Relu6Grad", "gradients", "features", &relu6_grad_kernel, &piecewise_grad,
       "TensorFlow's gradient of Relu6: gradients where 0 < features < 6, else 0. relu6_grad([5.], [7.]) == "
       "[0.]"},
      {"EluGrad", "gradients", "outputs", &elu_grad_kernel, &elu_grad_grad,
       "TensorFlow's gradient of Elu from its outputs: gradients * (outputs + 1) where outputs <= 0. "
       "elu_grad([2.], [-0.5]) == [1.]"},
      {"SeluGrad", "gradients", "outputs", &selu_grad_kernel, &selu_grad_grad,
       "TensorFlow's gradient of Selu from its outputs. selu_grad([1.], [1.]) == [1.0507]"},
      {"SoftplusGrad", "gradients", "features", &softplus_grad_kernel, &softplus_grad_grad,
       "TensorFlow's gradient of Softplus: gradients * sigmoid(features). softplus_grad([2.], [0.]) == [1.]"},
      {"SoftsignGrad", "gradients", "features", &softsign_grad_kernel, &softsign_grad_grad,
       "TensorFlow's gradient of Softsign: gradients / (1 + |features|)^2. softsign_grad([4.], [1.]) == "
       "[1.]"},
      {"SigmoidGrad", "y", "dy", &sigmoid_grad_kernel, &sigmoid_grad_grad,
       "TensorFlow's gradient of Sigmoid from its output y: dy * y * (1 - y). sigmoid_grad([0.5], [4.]) == "
       "[1.]"},
      {"TanhGrad", "y", "dy", &tanh_grad_kernel, &tanh_grad_grad,
       "TensorFlow's gradient of Tanh from its output y: dy * (1 - y^2). tanh_grad([0.5], [4.]) == [3.]"},
      {"SqrtGrad", "y", "dy", &sqrt_grad_kernel, &sqrt_grad_grad,
       "TensorFlow's gradient of Sqrt from its output y: dy * 0.5 / y. sqrt_grad([2.], [4.]) == [1.]"},
      {"RsqrtGrad", "y", "dy", &rsqrt_grad_kernel, &rsqrt_grad_grad,
       "TensorFlow's gradient of Rsqrt from its output y: dy * -0.5 * y^3. rsqrt_grad([1.], [2.]) == [-1.]"},
      {"ReciprocalGrad", "y", "dy", &reciprocal_grad_kernel, &reciprocal_grad_grad,
       "TensorFlow's gradient of Reciprocal from its output y: -dy * y^2. reciprocal_grad([2.], [1.]) == "
       "[-4.]"},
  };
  for (const PairOp& op : ops) {
    OpBuilder(op.name)
        .doc(op.doc)
        .input(op.first)
        .input(op.second)
        .output("backprops")
        .type_var(kFloatTypes)
        .shape(&same_shape_binary)
        .kernel(kFloatTypes, op.kernel)
        .grad(op.grad)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("LeakyReluGrad")
      .doc(
          "TensorFlow's gradient of LeakyRelu: gradients where features > 0, else alpha * gradients. "
          "leaky_relu_grad([2.], [-1.], alpha=0.5) == [1.]")
      .input("gradients")
      .input("features")
      .output("backprops")
      .type_var(kFloatTypes)
      .attr("alpha", AttrType::kFloat, 0.2)
      .shape(&same_shape_binary)
      .kernel(kFloatTypes, &leaky_relu_grad_kernel)
      .grad(&piecewise_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Selu")
      .doc(
          "scale * x where x > 0, else scale * alpha * (exp(x) - 1), with the self-normalising constants "
          "(tf.nn.selu). selu([1.]) == [1.0507]")
      .input("features")
      .output("activations")
      .type_var(kFloatTypes)
      .shape(&same_as_input_shape)
      .kernel(kFloatTypes, &selu_kernel)
      .grad(&selu_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Softsign")
      .doc("x / (1 + |x|) (tf.nn.softsign). softsign([1.]) == [0.5]")
      .input("features")
      .output("activations")
      .type_var(kFloatTypes)
      .shape(&same_as_input_shape)
      .kernel(kFloatTypes, &softsign_kernel)
      .grad(&softsign_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LeakyRelu")
      .doc("x where x > 0, else alpha * x (tf.nn.leaky_relu). leaky_relu([-2., 3.], alpha=0.5) == [-1., 3.]")
      .input("features")
      .output("activations")
      .type_var(kFloatTypes)
      .attr("alpha", AttrType::kFloat, 0.2)
      .shape(&same_as_input_shape)
      .kernel(kFloatTypes, &leaky_relu_kernel)
      .grad(&leaky_relu_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

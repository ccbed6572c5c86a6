// Neural-network ops: Softmax, LogSoftmax, BiasAdd, L2Loss and the cross-entropy losses.
// Kernels: kernels/nn.h.
#include "ember/kernels/nn.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

/// TensorFlow's Merge of two partial shapes that describe the same tensor: unknown parts take the
/// other's value. False when they conflict.
bool merge_shapes(const Shape& a, const Shape& b, Shape* out) {
  if (!a.rank_known()) return *out = b, true;
  if (!b.rank_known()) return *out = a, true;
  if (a.rank() != b.rank()) return false;
  Shape m = a;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) < 0) {
      m.set_dim(i, b.dim(i));
    } else if (b.dim(i) >= 0 && a.dim(i) != b.dim(i)) {
      return false;
    }
  }
  *out = m;
  return true;
}

/// `shape` without its last dimension.
Shape drop_last(const Shape& shape) {
  Shape out;
  for (int i = 0; i + 1 < shape.rank(); ++i) out.push_back(shape.dim(i));
  return out;
}

// ---- Softmax, LogSoftmax: attr axis (int, default -1).

Status softmax_shape(InferContext& ctx) {
  const TensorSpec& logits = ctx.inputs[0];
  if (logits.shape.rank_known()) {
    if (logits.shape.rank() == 0)
      return invalid_argument(ctx.op->name,
                              ": logits must have at least one dimension, got a scalar (shape [])");
    int64_t axis;
    EMBER_RETURN_IF_ERROR(normalize_axis(ctx.attr_int(0), logits.shape.rank(), ctx.op->name.c_str(), &axis));
  }
  ctx.outputs.push_back(logits);
  return Status::OK();
}

template <bool kLog>
Status softmax_kernel(KernelContext& ctx) {
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.attr_int(0), ctx.input(0).rank(), ctx.op->name.c_str(), &axis));
  return kernels::softmax(ctx.input(0), static_cast<int>(axis), kLog, ctx.output(0));
}

// ---- BiasAdd: attr data_format (string, default "NHWC").

const std::string& data_format(std::span<const AttrValue> attrs) { return std::get<std::string>(attrs[0]); }

Status bias_add_shape(InferContext& ctx) {
  const std::string& format = data_format(ctx.attrs);
  if (format != "NHWC" && format != "NCHW")
    return invalid_argument("BiasAdd: data_format must be \"NHWC\" or \"NCHW\", got \"", format, "\"");
  const Shape& value = ctx.inputs[0].shape;
  const Shape& bias = ctx.inputs[1].shape;
  if (bias.rank_known() && bias.rank() != 1)
    return invalid_argument("BiasAdd: bias must be 1-D, got shape ", bias.to_string(), " (value is ",
                            value.to_string(), ")");
  if (!value.rank_known()) {
    ctx.outputs.push_back(ctx.inputs[0]);
    return Status::OK();
  }
  if (value.rank() < 2)
    return invalid_argument("BiasAdd: value must be at least 2-D, got shape ", value.to_string());
  const int channel = format == "NCHW" ? 1 : value.rank() - 1;
  const int64_t value_channels = value.dim(channel);
  const int64_t bias_channels = bias.rank_known() ? bias.dim(0) : kUnknownDim;
  if (value_channels >= 0 && bias_channels >= 0 && value_channels != bias_channels)
    return invalid_argument("BiasAdd: bias must have as many elements as the channel dimension of value (",
                            "dimension ", channel, " for ", format, "); value is ", value.to_string(),
                            ", bias is ", bias.to_string());
  Shape out = value;
  if (value_channels < 0) out.set_dim(channel, bias_channels);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status bias_add_kernel(KernelContext& ctx) {
  return kernels::bias_add(ctx.input(0), ctx.input(1), data_format(ctx.attrs) == "NCHW", ctx.output(0));
}

// ---- BiasAddGrad: BiasAdd's gradient w.r.t. bias, out_backprop summed over all but the channel dimension.

Status bias_add_grad_shape(InferContext& ctx) {
  const std::string& format = data_format(ctx.attrs);
  if (format != "NHWC" && format != "NCHW")
    return invalid_argument("BiasAddGrad: data_format must be \"NHWC\" or \"NCHW\", got \"", format, "\"");
  const Shape& dy = ctx.inputs[0].shape;
  if (dy.rank_known() && dy.rank() < 2)
    return invalid_argument("BiasAddGrad: out_backprop must be at least 2-D, got shape ", dy.to_string());
  const int64_t channels = !dy.rank_known() ? kUnknownDim : dy.dim(format == "NCHW" ? 1 : dy.rank() - 1);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({channels})});
  return Status::OK();
}

Status bias_add_grad_kernel(KernelContext& ctx) {
  const TensorImpl& dy = ctx.input(0);
  if (dy.rank() < 2)
    return invalid_argument("BiasAddGrad: out_backprop must be at least 2-D, got shape ",
                            dy.shape().to_string());
  const int channel = data_format(ctx.attrs) == "NCHW" ? 1 : dy.rank() - 1;
  const int64_t outer = product(dy.shape(), 0, channel), channels = dy.shape().dim(channel);
  const int64_t inner = product(dy.shape(), channel + 1, dy.rank());
  visit_dtype<kNumericTypes>(dy.dtype(), [&]<typename T>() {
    using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    const T* in = dy.data<T>();
    T* out = ctx.output(0).mutable_data<T>();
    parallel_for(channels, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, outer * inner)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t c = begin; c < end; ++c) {
                     Acc total = 0;
                     for (int64_t o = 0; o < outer; ++o) {
                       const T* row = in + (o * channels + c) * inner;
                       for (int64_t i = 0; i < inner; ++i) total += static_cast<Acc>(row[i]);
                     }
                     out[c] = static_cast<T>(total);
                   }
                 });
  });
  return Status::OK();
}

// The gradient spread back over out_backprop's shape: BiasAdd onto zeros.
void bias_add_grad_grad(GradContext& c) {
  c.set(0, gradient::emit1("BiasAdd", {gradient::zeros_like(c.input(0)), c.grad()},
                           {AttrValue(data_format(c.attrs))}));
}

// ---- L2Loss

Status l2_loss_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape()});
  return Status::OK();
}

Status l2_loss_kernel(KernelContext& ctx) { return kernels::l2_loss(ctx.input(0), ctx.output(0)); }

// ---- SigmoidCrossEntropyWithLogits(labels, logits)

Status sigmoid_xent_shape(InferContext& ctx) {
  const Shape& labels = ctx.inputs[0].shape;
  const Shape& logits = ctx.inputs[1].shape;
  Shape merged;
  if (!merge_shapes(logits, labels, &merged))
    return invalid_argument("SigmoidCrossEntropyWithLogits: logits and labels must have the same shape (",
                            logits.to_string(), " vs ", labels.to_string(), ")");
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, merged});
  return Status::OK();
}

Status sigmoid_xent_kernel(KernelContext& ctx) {
  return kernels::sigmoid_cross_entropy(ctx.input(0), ctx.input(1), ctx.output(0));
}

// ---- SoftmaxCrossEntropyWithLogits(features, labels) -> (loss, backprop)

Status softmax_xent_shape(InferContext& ctx) {
  const Shape& logits = ctx.inputs[0].shape;
  const Shape& labels = ctx.inputs[1].shape;
  const DType dtype = ctx.inputs[0].dtype;
  Shape merged;
  if (!merge_shapes(logits, labels, &merged))
    return invalid_argument(
        "SoftmaxCrossEntropyWithLogits: logits and labels must have the same shape; logits is ",
        logits.to_string(), ", labels is ", labels.to_string());
  if (!merged.rank_known()) {
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  if (merged.rank() == 0)
    return invalid_argument("SoftmaxCrossEntropyWithLogits: logits must have at least one dimension (the ",
                            "classes), got shape []");
  ctx.outputs.push_back(TensorSpec{dtype, drop_last(merged)});
  ctx.outputs.push_back(TensorSpec{dtype, merged});
  return Status::OK();
}

Status softmax_xent_kernel(KernelContext& ctx) {
  return kernels::softmax_cross_entropy(ctx.input(0), ctx.input(1), ctx.output(0), ctx.output(1));
}

// ---- SparseSoftmaxCrossEntropyWithLogits(features [..., classes], labels [...]) -> (loss, backprop)

Status sparse_xent_shape(InferContext& ctx) {
  const Shape& logits = ctx.inputs[0].shape;
  const Shape& labels = ctx.inputs[1].shape;
  const DType dtype = ctx.inputs[0].dtype;
  if (logits.rank_known() && logits.rank() == 0)
    return invalid_argument(
        "SparseSoftmaxCrossEntropyWithLogits: logits must have at least one dimension (the ",
        "classes), got shape []");
  if (labels.rank_known() && labels.rank() >= kMaxRank)
    return invalid_argument("SparseSoftmaxCrossEntropyWithLogits: labels have rank ", labels.rank(),
                            "; logits would need rank ", labels.rank() + 1, " > ", kMaxRank);
  Shape batch;
  if (!merge_shapes(logits.rank_known() ? drop_last(logits) : Shape::unknown_rank(), labels, &batch))
    return invalid_argument(
        "SparseSoftmaxCrossEntropyWithLogits: labels must have the shape of logits without ",
        "its last dimension (the classes); logits is ", logits.to_string(), ", labels is ",
        labels.to_string());
  if (!batch.rank_known()) {
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  Shape backprop = batch;
  backprop.push_back(logits.rank_known() ? logits.dim(logits.rank() - 1) : kUnknownDim);
  ctx.outputs.push_back(TensorSpec{dtype, batch});
  ctx.outputs.push_back(TensorSpec{dtype, backprop});
  return Status::OK();
}

Status sparse_xent_kernel(KernelContext& ctx) {
  return kernels::sparse_softmax_cross_entropy(ctx.input(0), ctx.input(1), ctx.output(0), ctx.output(1));
}

// ---- Gradient rules (ops/gradient.h)

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// The Jacobian of softmax s along `axis` applied to v: (v - sum(v * s)) * s.
GradTensor softmax_vjp(const GradTensor& v, const GradTensor& s, int64_t axis) {
  return (v - sum(v * s, {axis}, true)) * s;
}

void softmax_grad(GradContext& c) { c.set(0, softmax_vjp(c.grad(), c.output(0), c.attr_int(0))); }

// d log_softmax = dy - softmax * sum(dy), with softmax = exp(log_softmax).
void log_softmax_grad(GradContext& c) {
  const GradTensor dy = c.grad();
  c.set(0, dy - exp(c.output(0)) * sum(dy, {c.attr_int(0)}, true));
}

// The bias gets dy summed over every dimension but the channel one.
void bias_add_grad(GradContext& c) {
  const GradTensor dy = c.grad();
  c.set(0, dy);
  c.set(1, emit1("BiasAddGrad", {dy}, {AttrValue(data_format(c.attrs))}));
}

void l2_loss_grad(GradContext& c) { c.set(0, c.input(0) * c.grad()); }

// loss = max(x, 0) - x * z + log(1 + exp(-|x|)): d/dx = sigmoid(x) - z, d/dz = -x.
void sigmoid_xent_grad(GradContext& c) {
  const GradTensor z = c.input(0), x = c.input(1), dy = c.grad();
  c.set(0, -(dy * x));
  c.set(1, dy * (sigmoid(x) - z));
}

// Note [Cross-entropy gradients]: both outputs are functions of the logits x: loss = sum(labels) *
// logsumexp(x) - sum(labels * x) and backprop = softmax(x) - labels. The rules rebuild softmax from x
// instead of reusing the saved backprop output, so that the result is itself differentiable in x
// (Hessian-vector products, nested tapes), and they include the gradient arriving at backprop, which is
// zeros unless someone used it:
//   dx = dloss * (sum(labels) * s - labels) + softmax_vjp(dbackprop)
//      = (dloss * sum(labels) + dbackprop - sum(dbackprop * s)) * s - dloss * labels
// TensorFlow uses backprop (s - labels) for the first term, which is the same for labels that are
// distributions; the sum keeps the gradient exact for labels that are not. Sparse labels always sum to 1.
GradTensor xent_logits_grad(GradContext& c, const GradTensor& labels, const GradTensor& s,
                            const GradTensor& dloss, bool labels_sum_to_one) {
  const GradTensor dbackprop = c.grad(1);
  const GradTensor scale = labels_sum_to_one ? dloss : dloss * sum(labels, {-1}, true);
  return (scale + dbackprop - sum(dbackprop * s, {-1}, true)) * s - dloss * labels;
}

GradTensor last_axis_op(std::string_view op, const GradTensor& x) {
  AttrList attrs;
  attrs.push_back(int64_t{-1});
  return emit1(op, {x}, std::move(attrs));
}

GradTensor expand_last(const GradTensor& x) { return expand_dims(x, -1); }

void softmax_xent_grad(GradContext& c) {
  const GradTensor x = c.input(0), labels = c.input(1), dloss = expand_last(c.grad(0));
  c.set(0, xent_logits_grad(c, labels, last_axis_op("Softmax", x), dloss, false));
  c.set(1, -(dloss * last_axis_op("LogSoftmax", x)) - c.grad(1));
}

// As the dense case with labels = one_hot(labels); integer labels get no gradient.
void sparse_xent_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  const int64_t classes = x.shape().rank_known() ? x.shape().dim(x.rank() - 1) : kUnknownDim;
  if (classes < 0) {
    // The number of classes is known at run time only: one_hot as labels == range(classes).
    if (!x.shape().rank_known())
      check_ok(make_error(Code::kUnimplemented,
                          "SparseSoftmaxCrossEntropyWithLogits: the gradient needs the "
                          "rank of the logits"));
    const GradTensor depth = dims_product(x, x.rank() - 1, x.rank());
    const GradTensor classes_range =
        emit1("Range", {scalar(0, DType::kInt32), depth, scalar(1, DType::kInt32)});
    const GradTensor one_hot =
        cast(compare("Equal", expand_last(cast(c.input(1), DType::kInt32)), classes_range), x.dtype());
    c.set(0, xent_logits_grad(c, one_hot, last_axis_op("Softmax", x), expand_last(c.grad(0)), true));
    return;
  }
  const GradTensor one_hot = emit1("OneHot", {c.input(1), scalar(static_cast<double>(classes), DType::kInt32),
                                              scalar(1, x.dtype()), scalar(0, x.dtype())});
  c.set(0, xent_logits_grad(c, one_hot, last_axis_op("Softmax", x), expand_last(c.grad(0)), true));
}

}  // namespace

void register_isotonic_regression_op(OpRegistry& r);  // nn_isotonic.cc

void register_nn_ops(OpRegistry& r) {
  register_isotonic_regression_op(r);
  OpBuilder("Softmax")
      .doc(
          "exp(x) / sum(exp(x)) along `axis` (default -1), shifted by the max so huge logits are safe. "
          "softmax([1., 1.]) == [0.5, 0.5]")
      .input("logits")
      .output("softmax")
      .type_var(kFloatTypes)
      .attr("axis", AttrType::kInt, int64_t{-1})
      .shape(&softmax_shape)
      .kernel(kFloatTypes, &softmax_kernel<false>)
      .grad(&softmax_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("LogSoftmax")
      .doc(
          "x - max - log(sum(exp(x - max))) along `axis` (default -1). "
          "log_softmax([0., 0.]) == [-0.6931472, -0.6931472]")
      .input("logits")
      .output("logsoftmax")
      .type_var(kFloatTypes)
      .attr("axis", AttrType::kInt, int64_t{-1})
      .shape(&softmax_shape)
      .kernel(kFloatTypes, &softmax_kernel<true>)
      .grad(&log_softmax_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("BiasAdd")
      .doc(
          "value + bias along the channel dimension (last for NHWC, 1 for NCHW); bias is 1-D. "
          "bias_add([[1., 2.]], [10., 20.]) == [[11., 22.]]")
      .input("value")
      .input("bias")
      .output("output")
      .type_var(kNumericTypes)
      .attr("data_format", AttrType::kString, std::string("NHWC"))
      .shape(&bias_add_shape)
      .kernel(kNumericTypes, &bias_add_kernel)
      .grad(&bias_add_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("BiasAddGrad")
      .doc(
          "BiasAdd's gradient w.r.t. bias: out_backprop summed over every dimension but the channel one. "
          "bias_add_grad([[1., 2.], [3., 4.]]) == [4., 6.]")
      .input("out_backprop")
      .output("output")
      .type_var(kNumericTypes)
      .attr("data_format", AttrType::kString, std::string("NHWC"))
      .shape(&bias_add_grad_shape)
      .kernel(kNumericTypes, &bias_add_grad_kernel)
      .grad(&bias_add_grad_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("L2Loss")
      .doc("sum(t ** 2) / 2 as a scalar. l2_loss([1., 2., 3.]) == 7.")
      .input("t")
      .output("output")
      .type_var(kFloatTypes)
      .shape(&l2_loss_shape)
      .kernel(kFloatTypes, &l2_loss_kernel)
      .grad(&l2_loss_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("SigmoidCrossEntropyWithLogits")
      .doc(
          "Element-wise max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x, labels z of one shape. "
          "sigmoid_cross_entropy_with_logits(labels=[1.], logits=[0.]) == [0.6931472]")
      .input("labels")
      .input("logits")
      .output("loss")
      .type_var(kFloatTypes)
      .dispatch_on_input(1)
      .shape(&sigmoid_xent_shape)
      .kernel(kFloatTypes, &sigmoid_xent_kernel)
      .grad(&sigmoid_xent_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SoftmaxCrossEntropyWithLogits")
      .doc(
          "Per row of the last axis: loss = -sum(labels * log_softmax(features)), backprop = "
          "softmax(features) - labels. features=[[0., 0.]], labels=[[1., 0.]] -> loss [0.6931472]")
      .input("features")
      .input("labels")
      .output("loss")
      .output("backprop")
      .type_var(kFloatTypes)
      .shape(&softmax_xent_shape)
      .kernel(kFloatTypes, &softmax_xent_kernel)
      .grad(&softmax_xent_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SparseSoftmaxCrossEntropyWithLogits")
      .doc(
          "Per row of the last axis: loss = -log_softmax(features)[label], backprop = softmax(features) - "
          "one_hot(label); labels must be in [0, classes). features=[[0., 0.]], labels=[1] -> loss "
          "[0.6931472]")
      .input("features")
      .input_fixed("labels", kIndexTypes)
      .output("loss")
      .output("backprop")
      .type_var(kFloatTypes)
      .shape(&sparse_xent_shape)
      .kernel(kFloatTypes, &sparse_xent_kernel)
      .grad(&sparse_xent_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

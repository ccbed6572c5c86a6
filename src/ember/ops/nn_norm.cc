// Normalization ops with TensorFlow's names, operands and attributes: FusedBatchNormV3 (training and
// inference) with its gradient op FusedBatchNormGradV3, and LRN with LRNGrad. tf.nn.batch_normalization and
// moments are compositions in Python. Kernels: kernels/batch_norm.h.
#include <cstring>
#include <string>
#include <vector>

#include "ember/kernels/batch_norm.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

constexpr DTypeSet kNormTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
// FusedBatchNormV3's T (x, y): also float16 and bfloat16, whose U (scale, offset, the statistics) is float32
// (Note [16-bit batch norm] in kernels/batch_norm.cc).
constexpr DTypeSet kBatchNormTypes = kNormTypes | dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16);

// ---- FusedBatchNormV3(x, scale, offset, mean, variance) -> (y, batch_mean, batch_variance,
//      reserve_space_1, reserve_space_2, reserve_space_3); attrs epsilon, exponential_avg_factor,
//      data_format, is_training. FusedBatchNormGradV3(y_backprop, x, scale, reserve_space_1, reserve_space_2,
//      reserve_space_3) -> (x_backprop, scale_backprop, offset_backprop, reserve_space_4, reserve_space_5);
//      attrs epsilon, data_format, is_training.
// ---- _FusedBatchNormEx (FusedBatchNormV3's operands, plus attr activation_mode) and _FusedBatchNormGradEx
//      (FusedBatchNormGradV3's operands plus y, the fused op's output; plus activation_mode): a batch norm
//      with its Relu, and their gradient, written by the optimizer's batch-norm fusion
//      (passes/fuse_batch_norm.cc; Note [Batch norm fused with Relu] in kernels/batch_norm.cc).

struct Layout {
  int rank = 4;
  bool channels_last = true;
  int channel_dim(int r) const { return channels_last ? r - 1 : 1; }
};

Status layout_of(const OpDef* op, const std::string& format, Layout* out) {
  if (format == "NHWC" || format == "NCHW" || format == "NDHWC" || format == "NCDHW") {
    out->rank = static_cast<int>(format.size());
    out->channels_last = format.back() == 'C';
    return Status::OK();
  }
  return invalid_argument(
      op->name, ": data_format must be \"NHWC\", \"NCHW\", \"NDHWC\" or \"NCDHW\", got \"", format, "\"");
}

Status check_vector(const OpDef* op, const char* what, const Shape& s, int64_t* channels, bool may_be_empty) {
  if (!s.rank_known()) return Status::OK();
  if (s.rank() != 1) return invalid_argument(op->name, ": ", what, " must be 1-D, got shape ", s.to_string());
  const int64_t d = s.dim(0);
  if (d < 0 || (may_be_empty && d == 0)) return Status::OK();
  if (*channels >= 0 && d != *channels)
    return invalid_argument(op->name, ": ", what, " must have one element per channel (", *channels,
                            "), got shape ", s.to_string());
  *channels = d;
  return Status::OK();
}

int attr(const OpDef* op, const char* name) { return op->attr_index(name); }

bool is_grad(const OpDef* op) {
  return op->name == "FusedBatchNormGradV3" || op->name == "_FusedBatchNormGradEx";
}

// The fused Relu of the _Ex ops (false for the plain ones, which have no activation_mode).
StatusOr<bool> fused_relu(const OpDef* op, const AttrReader& a) {
  const int i = attr(op, "activation_mode");
  if (i < 0) return false;
  const std::string& mode = a.attr_string(i);
  if (mode == "Relu") return true;
  if (mode == "Identity") return false;
  return invalid_argument(op->name, ": activation_mode must be \"Relu\" or \"Identity\", got \"", mode, "\"");
}

Status batch_norm_shape(InferContext& ctx) {
  const bool grad = is_grad(ctx.op);
  EMBER_RETURN_IF_ERROR(fused_relu(ctx.op, ctx).status());
  Layout l;
  EMBER_RETURN_IF_ERROR(layout_of(ctx.op, ctx.attr_string(attr(ctx.op, "data_format")), &l));
  const int x_index = grad ? 1 : 0;
  const Shape& x = ctx.inputs[x_index].shape;
  if (x.rank_known() && x.rank() != l.rank)
    return invalid_argument(ctx.op->name, ": x must be ", l.rank, "-D for data_format ",
                            ctx.attr_string(attr(ctx.op, "data_format")), ", got shape ", x.to_string());
  int64_t channels = x.rank_known() ? x.dim(l.channel_dim(l.rank)) : kUnknownDim;
  if (grad) {
    Shape merged = ctx.inputs[0].shape;
    if (merged.rank_known() && x.rank_known() && !merged.is_compatible_with(x))
      return invalid_argument(ctx.op->name, ": y_backprop and x must have the same shape, got ",
                              merged.to_string(), " and ", x.to_string());
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "scale", ctx.inputs[2].shape, &channels, false));
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "reserve_space_1", ctx.inputs[3].shape, &channels, false));
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "reserve_space_2", ctx.inputs[4].shape, &channels, false));
    if (ctx.inputs.size() > 6) {
      const Shape& y = ctx.inputs[6].shape;
      if (y.rank_known() && x.rank_known() && !y.is_compatible_with(x))
        return invalid_argument(ctx.op->name, ": y and x must have the same shape, got ", y.to_string(),
                                " and ", x.to_string());
    }
  } else {
    const bool may_be_empty = ctx.attr_bool(attr(ctx.op, "is_training")) &&
                              ctx.attr_float(attr(ctx.op, "exponential_avg_factor")) == 1.0;
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "scale", ctx.inputs[1].shape, &channels, false));
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "offset", ctx.inputs[2].shape, &channels, false));
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "mean", ctx.inputs[3].shape, &channels, may_be_empty));
    EMBER_RETURN_IF_ERROR(check_vector(ctx.op, "variance", ctx.inputs[4].shape, &channels, may_be_empty));
  }
  const DType dtype = ctx.inputs[x_index].dtype, stats = ctx.inputs[2].dtype;
  const DType want_stats = dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  if (stats != want_stats)
    return invalid_argument(ctx.op->name, ": scale, offset and the statistics (TensorFlow's U) must be ",
                            dtype_name(want_stats), " for ", dtype_name(dtype), " x, got ",
                            dtype_name(stats));
  Shape y = x.rank_known() ? x : Shape::unknown_rank();
  if (y.rank_known() && channels >= 0) y.set_dim(l.channel_dim(l.rank), channels);
  ctx.outputs.push_back(TensorSpec{dtype, y});
  const int vectors = grad ? 2 : 4;
  for (int i = 0; i < vectors; ++i) ctx.outputs.push_back(TensorSpec{stats, Shape{channels}});
  if (grad) {
    // Unused outputs, shaped as TensorFlow's CPU kernels shape them: [0] for float16 x, scalars otherwise.
    const Shape unused = dtype == DType::kFloat16 ? Shape{0} : Shape();
    ctx.outputs.push_back(TensorSpec{stats, unused});
    ctx.outputs.push_back(TensorSpec{stats, unused});
  } else {
    ctx.outputs.push_back(TensorSpec{stats, Shape{0}});
  }
  return Status::OK();
}

kernels::BatchNormShape norm_shape(const Layout& l, const Shape& x) {
  kernels::BatchNormShape s;
  s.channels_last = l.channels_last;
  s.batch = x.dim(0);
  s.channels = x.dim(l.channel_dim(l.rank));
  for (int i = 1; i < l.rank; ++i)
    if (i != l.channel_dim(l.rank)) s.spatial *= x.dim(i);
  return s;
}

template <typename T>
void running_average(const TensorImpl* old, const TensorImpl& batch, double factor, double correction,
                     TensorImpl& out) {
  const int64_t n = batch.num_elements();
  for (int64_t c = 0; c < n; ++c) {
    const double b = batch.data<T>()[c] * correction;
    out.mutable_data<T>()[c] =
        static_cast<T>(factor == 1.0 ? b : (1 - factor) * old->data<T>()[c] + factor * b);
  }
}

Status batch_norm_kernel(KernelContext& ctx) {
  Layout l;
  EMBER_RETURN_IF_ERROR(layout_of(ctx.op, ctx.attr_string(attr(ctx.op, "data_format")), &l));
  const double eps = ctx.attr_float(attr(ctx.op, "epsilon"));
  const double factor = ctx.attr_float(attr(ctx.op, "exponential_avg_factor"));
  const bool training = ctx.attr_bool(attr(ctx.op, "is_training"));
  StatusOr<bool> relu = fused_relu(ctx.op, ctx);
  EMBER_RETURN_IF_ERROR(relu.status());
  const kernels::BatchNormShape s = norm_shape(l, ctx.input(0).shape());
  const bool given_stats = !training || factor != 1.0;
  if (given_stats && (ctx.input(3).num_elements() != s.channels || ctx.input(4).num_elements() != s.channels))
    return invalid_argument(ctx.op->name, ": mean and variance must have one element per channel (",
                            s.channels, "), got shapes ", ctx.input(3).shape().to_string(), " and ",
                            ctx.input(4).shape().to_string());
  EMBER_RETURN_IF_ERROR(kernels::batch_norm_forward(s, ctx.input(0), ctx.input(1), ctx.input(2),
                                                    &ctx.input(3), &ctx.input(4), eps, training,
                                                    ctx.output(0), ctx.output(3), ctx.output(4), *relu));
  if (!training) {
    std::memcpy(ctx.output(1).mutable_raw_data(), ctx.input(3).raw_data(), ctx.input(3).nbytes());
    std::memcpy(ctx.output(2).mutable_raw_data(), ctx.input(4).raw_data(), ctx.input(4).nbytes());
    return Status::OK();
  }
  // The variance handed on for inference is the unbiased one (Bessel's correction), as TensorFlow's.
  const int64_t count = s.batch * s.spatial;
  const double correction = count > 1 ? static_cast<double>(count) / (count - 1) : 1.0;
  const TensorImpl* old_mean = given_stats ? &ctx.input(3) : nullptr;
  const TensorImpl* old_var = given_stats ? &ctx.input(4) : nullptr;
  if (ctx.input(1).dtype() == DType::kFloat32) {  // the statistics' type, U
    running_average<float>(old_mean, ctx.output(3), factor, 1.0, ctx.output(1));
    running_average<float>(old_var, ctx.output(4), factor, correction, ctx.output(2));
  } else {
    running_average<double>(old_mean, ctx.output(3), factor, 1.0, ctx.output(1));
    running_average<double>(old_var, ctx.output(4), factor, correction, ctx.output(2));
  }
  return Status::OK();
}

Status batch_norm_grad_kernel(KernelContext& ctx) {
  Layout l;
  EMBER_RETURN_IF_ERROR(layout_of(ctx.op, ctx.attr_string(attr(ctx.op, "data_format")), &l));
  const kernels::BatchNormShape s = norm_shape(l, ctx.input(1).shape());
  if (ctx.input(0).shape() != ctx.input(1).shape())
    return invalid_argument(ctx.op->name, ": y_backprop and x must have the same shape, got ",
                            ctx.input(0).shape().to_string(), " and ", ctx.input(1).shape().to_string());
  StatusOr<bool> relu = fused_relu(ctx.op, ctx);
  EMBER_RETURN_IF_ERROR(relu.status());
  const TensorImpl* relu_output = nullptr;
  if (*relu) {
    if (ctx.input(6).shape() != ctx.input(1).shape())
      return invalid_argument(ctx.op->name, ": y and x must have the same shape, got ",
                              ctx.input(6).shape().to_string(), " and ", ctx.input(1).shape().to_string());
    relu_output = &ctx.input(6);
  }
  EMBER_RETURN_IF_ERROR(kernels::batch_norm_backward(
      s, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4),
      ctx.attr_float(attr(ctx.op, "epsilon")), ctx.attr_bool(attr(ctx.op, "is_training")), ctx.output(0),
      ctx.output(1), ctx.output(2), relu_output));
  for (int i = 3; i < 5; ++i) std::memset(ctx.output(i).mutable_raw_data(), 0, ctx.output(i).nbytes());
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// As TensorFlow's: x, scale and offset get FusedBatchNormGradV3 of the gradient arriving at y; mean and
// variance (inputs only for inference or a running average) and the statistics outputs pass no gradient.
void batch_norm_grad(GradContext& c) {
  AttrList attrs;
  attrs.push_back(c.attrs[attr(c.op, "epsilon")]);
  attrs.push_back(c.attrs[attr(c.op, "data_format")]);
  attrs.push_back(c.attrs[attr(c.op, "is_training")]);
  auto g = emit("FusedBatchNormGradV3",
                {c.grad(0), c.input(0), c.input(1), c.output(3), c.output(4), c.output(5)}, std::move(attrs));
  c.set(0, g[0]);
  c.set(1, g[1]);
  c.set(2, g[2]);
}

// Note [Second-order batch norm]
// FusedBatchNormGradV3's gradient is TensorFlow's (_FusedBatchNormGradGradV3): the derivative of its three
// outputs, written per channel, w.r.t. y_backprop (g), x and scale (s); the saved statistics get none. With
// A, B, C the gradients arriving at x_backprop, scale_backprop and offset_backprop, r = rsqrt(var + eps),
// xh = (x - mean) * r, and means taken per channel over the N elements of a channel:
// - inference (mean and var are constants): x_backprop = g s r, scale_backprop = sum(g (x - mean) r), so
//   dg = A s r + B (x - mean) r + C, dx = B g r, ds = r sum(A g).
// - training, where mean and var are x's own (so the gradient w.r.t. x goes through them, as TensorFlow's
//   recomputes them from x): x_backprop = s r centered(g), centered(v) = v - mean(v) - xh mean(v xh), and
//   d(sum_j v_j xh_j)/dx = r centered(v), d r/dx = -r^2 xh / N. Hence
//   dg = s r centered(A) + B xh + C,  ds = r sum(A centered(g)),
//   dx = -s r^2 xh (mean(A (g - mean(g))) - mean(g xh) mean(A xh))
//        + r (B - s r mean(A xh)) centered(g) - s r^2 mean(g xh) centered(A).
// In training the mean and biased variance are recomputed from x, as TensorFlow's rule does, rather than read
// from reserve_space_1/2: the same values when the reserves are x's (always, from FusedBatchNormV3's
// gradient), and TensorFlow's result when an op is given other reserves. tests/python/test_nn_norm.py checks
// the result against finite differences of the first-order gradient and TensorFlow's second-order gradients.
void batch_norm_grad_grad(GradContext& c) {
  Layout l;
  check_ok(layout_of(c.op, c.attr_string(attr(c.op, "data_format")), &l));
  const bool training = c.attr_bool(attr(c.op, "is_training"));
  const double eps = c.attr_float(attr(c.op, "epsilon"));
  const int channel = l.channel_dim(l.rank);
  std::vector<int64_t> axes;
  for (int i = 0; i < l.rank; ++i)
    if (i != channel) axes.push_back(i);
  // A [C] vector made to broadcast against x, and per-channel reductions kept in that broadcastable shape.
  auto per_channel = [&](const GradTensor& v) {
    if (l.channels_last) return v;
    std::vector<int64_t> dims(l.rank, 1);
    dims[1] = -1;
    return reshape(v, dims);
  };
  auto channel_sum = [&](const GradTensor& t) { return sum(t, axes, true); };
  auto channel_mean = [&](const GradTensor& t) {
    AttrList keepdims;
    keepdims.push_back(true);
    return emit1("Mean", {t, int_vector(axes)}, std::move(keepdims));
  };
  auto as_vector = [](const GradTensor& t) { return reshape(t, {-1}); };

  // A 16-bit g and x (T) with float32 scale and statistics (U): the rule computes in U, and the gradients
  // w.r.t. g and x go back to T.
  const DType t = c.input(1).dtype(), u = c.input(2).dtype();
  auto in_u = [&](const GradTensor& v) { return t == u ? v : cast(v, u); };
  auto in_t = [&](const GradTensor& v) { return t == u ? v : cast(v, t); };
  const GradTensor g = in_u(c.input(0)), x = in_u(c.input(1)), s = per_channel(c.input(2));
  const GradTensor x_centered = training ? x - channel_mean(x) : x - per_channel(c.input(3));
  const GradTensor var = training ? channel_mean(square(x_centered)) : per_channel(c.input(4));
  const GradTensor r = unary("Rsqrt", var + eps);
  const GradTensor a = in_u(c.grad(0)), b = per_channel(c.grad(1)), offset_grad = per_channel(c.grad(2));
  if (!training) {
    c.set(0, in_t(a * (s * r) + b * x_centered * r + offset_grad));
    c.set(1, in_t(b * g * r));
    c.set(2, as_vector(channel_sum(a * g) * r));
    return;
  }
  const GradTensor xh = x_centered * r;
  auto centered = [&](const GradTensor& v, const GradTensor& mean_v_xh) {
    return v - channel_mean(v) - xh * mean_v_xh;
  };
  const GradTensor g_xh = channel_mean(g * xh), a_xh = channel_mean(a * xh);
  const GradTensor centered_g = centered(g, g_xh), centered_a = centered(a, a_xh);
  const GradTensor s_r = s * r;
  const GradTensor ag = channel_mean(a * (g - channel_mean(g))) - g_xh * a_xh;
  c.set(0, in_t(s_r * centered_a + b * xh + offset_grad));
  c.set(1, in_t(-(s_r * r) * xh * ag + r * (b - s_r * a_xh) * centered_g - (s_r * r) * g_xh * centered_a));
  c.set(2, as_vector(channel_sum(a * centered_g) * r));
}

// ---- LRN(input) and LRNGrad(input_grads, input_image, output_image); attrs depth_radius, bias, alpha, beta.

kernels::LrnParams lrn_params(const AttrReader& a) {
  kernels::LrnParams p;
  p.depth_radius = a.attr_int(0), p.bias = a.attr_float(1), p.alpha = a.attr_float(2),
  p.beta = a.attr_float(3);
  return p;
}

Status lrn_shape(InferContext& ctx) {
  Shape merged = ctx.inputs[0].shape;
  for (const TensorSpec& in : ctx.inputs) {
    if (in.shape.rank_known() && in.shape.rank() != 4)
      return invalid_argument(ctx.op->name, ": input must be 4-D, got shape ", in.shape.to_string());
    if (merged.rank_known() && in.shape.rank_known() && !merged.is_compatible_with(in.shape))
      return invalid_argument(ctx.op->name, ": the inputs must have the same shape, got ", merged.to_string(),
                              " and ", in.shape.to_string());
  }
  if (ctx.attr_int(0) < 0)
    return invalid_argument(ctx.op->name, ": depth_radius must be >= 0, got ", ctx.attr_int(0));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status lrn_kernel(KernelContext& ctx) { return kernels::lrn(lrn_params(ctx), ctx.input(0), ctx.output(0)); }

Status lrn_grad_kernel(KernelContext& ctx) {
  for (int i = 1; i < 3; ++i)
    if (ctx.input(i).shape() != ctx.input(0).shape())
      return invalid_argument(ctx.op->name, ": the inputs must have the same shape, got ",
                              ctx.input(0).shape().to_string(), " and ", ctx.input(i).shape().to_string());
  return kernels::lrn_grad(lrn_params(ctx), ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0));
}

void lrn_grad(GradContext& c) {
  AttrList attrs;
  for (const AttrValue& a : c.attrs) attrs.push_back(a);
  c.set(0, emit1("LRNGrad", {c.grad(), c.input(0), c.output(0)}, std::move(attrs)));
}

// FusedBatchNormV3's operands, outputs and attributes, which the fused op the optimizer writes shares (its
// extra attribute and, for the gradient, extra operand are added by the caller).
OpBuilder batch_norm_op(const char* name, DTypeSet x_types) {
  OpBuilder b(name);
  b.input("x")
      .input("scale", 1)
      .input("offset", 1)
      .input("mean", 1)
      .input("variance", 1)
      .output("y")
      .output("batch_mean")
      .output("batch_variance")
      .output("reserve_space_1")
      .output("reserve_space_2")
      .output("reserve_space_3")
      .type_var(x_types)
      .type_var(kNormTypes, 1)
      .attr("epsilon", AttrType::kFloat, 0.0001)
      .attr("exponential_avg_factor", AttrType::kFloat, 1.0)
      .attr("data_format", AttrType::kString, std::string("NHWC"))
      .attr("is_training", AttrType::kBool, true);
  return b;
}

OpBuilder batch_norm_grad_op(const char* name, DTypeSet x_types) {
  OpBuilder b(name);
  b.input("y_backprop")
      .input("x")
      .input("scale", 1)
      .input("reserve_space_1", 1)
      .input("reserve_space_2", 1)
      .input("reserve_space_3", 1)
      .output("x_backprop")
      .output("scale_backprop")
      .output("offset_backprop")
      .output("reserve_space_4")
      .output("reserve_space_5")
      .type_var(x_types)
      .type_var(kNormTypes, 1)
      .attr("epsilon", AttrType::kFloat, 0.0001)
      .attr("data_format", AttrType::kString, std::string("NHWC"))
      .attr("is_training", AttrType::kBool, true);
  return b;
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  batch_norm_op("FusedBatchNormV3", kBatchNormTypes)
      .doc(
          "Batch normalization over every dimension but the channel one: training normalises by the batch's "
          "mean "
          "and biased variance and returns them (batch_variance unbiased, blended into mean/variance by "
          "exponential_avg_factor); inference uses mean and variance. y = (x - mean) * rsqrt(var + epsilon) "
          "* "
          "scale + offset. fused_batch_norm([[[[1.], [3.]]]], [1.], [0.], epsilon=0) -> y [[[[-1.], [1.]]]]")
      .shape(&batch_norm_shape)
      .kernel(kBatchNormTypes, &batch_norm_kernel)
      .grad(&batch_norm_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  batch_norm_grad_op("FusedBatchNormGradV3", kBatchNormTypes)
      .doc(
          "The gradients of FusedBatchNormV3 w.r.t. x, scale and offset, from y_backprop and the saved "
          "statistics "
          "(reserve_space_1, reserve_space_2). offset_backprop == sum of y_backprop per channel.")
      .shape(&batch_norm_shape)
      .kernel(kBatchNormTypes, &batch_norm_grad_kernel)
      .grad(&batch_norm_grad_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  // Not differentiable: both only exist in optimized graphs, which autodiff never sees.
  batch_norm_op("_FusedBatchNormEx", kBatchNormTypes)
      .doc(
          "activation(FusedBatchNormV3(x, ...)[0]) with FusedBatchNormV3's other outputs: the optimizer's "
          "batch-norm fusion writes it (TensorFlow's remapper writes an op of this name; ember's has no side "
          "input). activation_mode \"Relu\" or \"Identity\". _FusedBatchNormEx([[[[1.], [3.]]]], [1.], [0.], "
          "[], [], epsilon=0, activation_mode='Relu') -> y [[[[0.], [1.]]]]")
      .attr("activation_mode", AttrType::kString, std::string("Relu"))
      .flags(kNotDifferentiable)
      .shape(&batch_norm_shape)
      .kernel(kBatchNormTypes, &batch_norm_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  batch_norm_grad_op("_FusedBatchNormGradEx", kBatchNormTypes)
      .doc(
          "FusedBatchNormGradV3(ReluGrad(y_backprop, y), x, ...) for activation_mode \"Relu\" (y the fused "
          "forward's output), FusedBatchNormGradV3(y_backprop, x, ...) for \"Identity\": the optimizer's "
          "batch-norm fusion writes it.")
      .input("y")
      .attr("activation_mode", AttrType::kString, std::string("Relu"))
      .flags(kNotDifferentiable)
      .shape(&batch_norm_shape)
      .kernel(kBatchNormTypes, &batch_norm_grad_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LRN")
      .doc(
          "Local response normalization over the last dimension: x / (bias + alpha * sum of x^2 over "
          "channels "
          "c - depth_radius .. c + depth_radius)^beta. lrn([[[[2.]]]], 0, 1., 1., 1.) == [[[[0.4]]]]")
      .input("input")
      .output("output")
      .type_var(kNormTypes)
      .attr("depth_radius", AttrType::kInt, int64_t{5})
      .attr("bias", AttrType::kFloat, 1.0)
      .attr("alpha", AttrType::kFloat, 1.0)
      .attr("beta", AttrType::kFloat, 0.5)
      .shape(&lrn_shape)
      .kernel(kNormTypes, &lrn_kernel)
      .grad(&lrn_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("LRNGrad")
      .doc("The gradient of LRN: input_grads (dy), input_image (x), output_image (LRN(x)) -> dx.")
      .input("input_grads")
      .input("input_image")
      .input("output_image")
      .output("output")
      .type_var(kNormTypes)
      .attr("depth_radius", AttrType::kInt, int64_t{5})
      .attr("bias", AttrType::kFloat, 1.0)
      .attr("alpha", AttrType::kFloat, 1.0)
      .attr("beta", AttrType::kFloat, 0.5)
      .flags(kNotDifferentiable)
      .shape(&lrn_shape)
      .kernel(kNormTypes, &lrn_grad_kernel)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember

// CumulativeLogsumexp (tf.math.cumulative_logsumexp): log(cumsum(exp(x))) along an axis, scanned as a running
// log-add-exp so that no exp over- or underflows. Registered from register_array_index_ops (array_index.cc).
#include <cmath>
#include <limits>

#include "ember/core/parallel.h"
#include "ember/kernels/compute_type.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

Status axis_of(const std::string& op, const Shape& axis_shape, std::optional<int64_t> value, int rank,
               int64_t* axis) {
  if (axis_shape.rank_known() && axis_shape.rank() != 0)
    return invalid_argument(op, ": axis must be a scalar, got shape ", axis_shape.to_string());
  if (!value) return Status::OK();
  return normalize_axis(*value, rank, op.c_str(), axis);
}

Status logsumexp_shape(InferContext& ctx) {
  const PartialValue v = ctx.value_of(1);
  const Shape& x = ctx.inputs[0].shape;
  int64_t axis;
  if (x.rank_known())
    EMBER_RETURN_IF_ERROR(
        axis_of(ctx.op->name, ctx.inputs[1].shape,
                v.fully_known() && v.values.size() == 1 ? std::optional(v.values[0]) : std::nullopt, x.rank(),
                &axis));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

// log(e^a + e^b) without overflow; -inf + -inf stays -inf (no NaN from inf - inf).
inline double log_add_exp(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -std::numeric_limits<double>::infinity()) return a;
  return a + std::log1p(std::exp(b - a));
}

Status logsumexp_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  int64_t axis = 0;
  if (ctx.input(1).rank() != 0)
    return invalid_argument("CumulativeLogsumexp: axis must be a scalar, got shape ",
                            ctx.input(1).shape().to_string());
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.int_values(1)[0], in.rank(), "CumulativeLogsumexp", &axis));
  if (in.num_elements() == 0) return Status::OK();
  const bool exclusive = ctx.attr_bool(0), reverse = ctx.attr_bool(1);
  const Shape& shape = in.shape();
  const int64_t outer = product(shape, 0, static_cast<int>(axis)), n = shape.dim(static_cast<int>(axis));
  const int64_t inner = product(shape, static_cast<int>(axis) + 1, shape.rank());
  visit_dtype<kFloatTypes>(in.dtype(), [&]<typename T>() {
    const T* src = in.data<T>();
    T* dst = out.mutable_data<T>();
    parallel_for(outer * inner, n * 20, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / inner, j = item % inner;
        double acc = -std::numeric_limits<double>::infinity();
        for (int64_t step = 0; step < n; ++step) {
          const int64_t at = (o * n + (reverse ? n - 1 - step : step)) * inner + j;
          const double v = static_cast<double>(static_cast<kernels::compute_t<T>>(src[at]));
          if (!exclusive) acc = log_add_exp(acc, v);
          dst[at] = static_cast<T>(static_cast<kernels::compute_t<T>>(acc));
          if (exclusive) acc = log_add_exp(acc, v);
        }
      }
    });
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// TensorFlow's rule: dx_i = sum over k after i of dy_k e^(x_i - y_k), with the sum itself a logsumexp run the
// other way, split by the sign of dy (the log of a negative dy is taken on -dy).
void logsumexp_grad(GradContext& c) {
  const GradTensor x = c.input(0), y = c.output(0), dy = c.grad(), axis = c.input(1);
  const bool exclusive = c.attr_bool(0), reverse = c.attr_bool(1);
  const GradTensor zero = scalar(0, dy.dtype());
  // log(0) stands as the dtype's lowest finite value, as TensorFlow's rule has it: -inf would make the second
  // derivative inf - inf where the scan below runs over nothing but log(0)s.
  double lowest = -std::numeric_limits<double>::max();
  if (dy.dtype() == DType::kFloat32) lowest = -std::numeric_limits<float>::max();
  if (dy.dtype() == DType::kFloat16) lowest = -65504.0;
  if (dy.dtype() == DType::kBFloat16) lowest = -3.3895313892515355e38;
  const GradTensor minus_inf = scalar(lowest, dy.dtype());
  auto part = [&](const GradTensor& positive, const GradTensor& magnitude) {
    const GradTensor safe = select(positive, magnitude, constant_like(1, dy));
    const GradTensor log_dy = select(positive, log(safe), minus_inf);
    AttrList attrs{exclusive, !reverse};
    return exp(emit1("CumulativeLogsumexp", {log_dy - y, axis}, std::move(attrs)) + x);
  };
  c.set(0, part(compare("Greater", dy, zero), dy) - part(compare("Less", dy, zero), -dy));
}

}  // namespace

void register_cumulative_logsumexp_op(OpRegistry& r) {
  OpBuilder("CumulativeLogsumexp")
      .doc(
          "log(cumsum(exp(x))) along axis, without overflow; exclusive and reverse as in Cumsum. "
          "cumulative_logsumexp([0., 0.]) == [0., 0.6931472]")
      .input("x")
      .input_shape_like("axis")
      .output("out")
      .type_var(kFloatTypes)
      .attr("exclusive", AttrType::kBool, false)
      .attr("reverse", AttrType::kBool, false)
      .shape(&logsumexp_shape)
      .kernel(kFloatTypes, &logsumexp_kernel)
      .grad(&logsumexp_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember

// IsotonicRegression (tf.nn.isotonic_regression): the non-increasing least-squares fit of each row (the last
// axis) and the segments it pools. Registered from register_nn_ops (nn.cc); Python:
// python/ember/ops/nn_ops.py's isotonic_regression, which handles `axis` and `decreasing`.
#include <type_traits>
#include <vector>

#include "ember/kernels/compute_type.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kIsotonicTypes = kFloatTypes | dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) |
                                    dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);

// TensorFlow's kernels pair each input type with one output type: floats keep theirs, int8/int16 give
// float32, int32/int64 float64 (any other output_dtype finds no kernel there).
DType isotonic_output_type(DType input) {
  switch (input) {
    case DType::kInt8:
    case DType::kInt16:
      return DType::kFloat32;
    case DType::kInt32:
    case DType::kInt64:
      return DType::kFloat64;
    default:
      return input;
  }
}

Status check_output_dtype(DType input, DType output_dtype) {
  if (output_dtype != isotonic_output_type(input))
    return invalid_argument("IsotonicRegression: a ", dtype_name(input), " input needs output_dtype ",
                            dtype_name(isotonic_output_type(input)), ", got ", dtype_name(output_dtype));
  return Status::OK();
}

Status isotonic_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_output_dtype(ctx.inputs[0].dtype, ctx.attr_dtype(0)));
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), ctx.inputs[0].shape});
  ctx.outputs.push_back(TensorSpec{DType::kInt32, ctx.inputs[0].shape});
  return Status::OK();
}

// Note [Pooling adjacent violators]
// Each row is read left to right as a stack of segments (sum, count); a new element is a segment of its
// own, merged into the one below while the one below has the smaller mean (strictly: equal means stay
// apart, and a NaN mean compares false so never merges), which is TensorFlow's rule: its segments are
// these. Sums and means are in the output type (float32 for a float32 input), and each output is its
// segment's mean.
template <typename T, typename Out>
void isotonic_rows(const T* in, int64_t rows, int64_t n, Out* out, int32_t* segments) {
  using C = kernels::compute_t<Out>;
  // Each sum and mean is rounded to Out, as TensorFlow's arithmetic in Out.
  const auto round = [](C v) { return static_cast<C>(static_cast<Out>(v)); };
  struct Segment {
    C sum;
    int64_t count;
  };
  const auto mean = [&](const Segment& s) { return round(s.sum / static_cast<C>(s.count)); };
  std::vector<Segment> stack;
  for (int64_t r = 0; r < rows; ++r) {
    stack.clear();
    for (int64_t j = 0; j < n; ++j) {
      Segment current{round(static_cast<C>(static_cast<Out>(in[r * n + j]))), 1};
      while (!stack.empty() && mean(stack.back()) < mean(current)) {
        current.sum = round(current.sum + stack.back().sum);
        current.count += stack.back().count;
        stack.pop_back();
      }
      stack.push_back(current);
    }
    int64_t j = r * n;
    for (size_t s = 0; s < stack.size(); ++s) {
      const Out value = static_cast<Out>(mean(stack[s]));
      for (int64_t k = 0; k < stack[s].count; ++k, ++j) {
        out[j] = value;
        segments[j] = static_cast<int32_t>(s);
      }
    }
  }
}

Status isotonic_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_output_dtype(in.dtype(), ctx.attr_dtype(0)));
  const int64_t n = in.rank() == 0 ? 1 : in.shape().dim(in.rank() - 1);
  if (n > INT32_MAX) return invalid_argument("IsotonicRegression: rows of ", n, " do not fit int32 segments");
  if (in.num_elements() == 0) return Status::OK();
  const int64_t rows = in.num_elements() / n;
  visit_dtype<kIsotonicTypes>(in.dtype(), [&]<typename T>() {
    visit_dtype<kFloatTypes>(ctx.attr_dtype(0), [&]<typename Out>() {
      isotonic_rows(in.data<T>(), rows, n, ctx.output(0).mutable_data<Out>(),
                    ctx.output(1).mutable_data<int32_t>());
    });
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// Each output is the mean of its segment's inputs, so each input gets the mean of its segment's output
// gradients (TensorFlow's _IsotonicRegressionGrad). Segment ids are made unique across rows by adding
// row * n, then one UnsortedSegmentSum sums the gradients and one the counts.
void isotonic_grad(GradContext& c) {
  const GradTensor x = c.input(0), segments = c.output(1);
  const GradTensor dy = cast(c.grad(0), x.dtype());
  if (!x.shape().rank_known())
    check_ok(
        make_error(Code::kUnimplemented, "IsotonicRegression: the gradient needs the rank of the input"));
  const int r = x.rank();
  if (r == 0) return c.set(0, dy);
  const GradTensor rows = dims_product(x, 0, r - 1), n = dims_product(x, r - 1, r);
  const GradTensor first = reshape_to(emit1("Range", {scalar(0, DType::kInt32), rows * n, n}),
                                      stack_ints({rows, scalar(1, DType::kInt32)}));
  const GradTensor flat_shape = stack_ints({rows * n});
  const GradTensor ids = reshape_to(reshape_to(segments, stack_ints({rows, n})) + first, flat_shape);
  const GradTensor sums = emit1("UnsortedSegmentSum", {reshape_to(dy, flat_shape), ids, rows * n});
  const GradTensor counts =
      emit1("UnsortedSegmentSum", {ones_like(reshape_to(dy, flat_shape)), ids, rows * n});
  const GradTensor means = sums / binary("Maximum", counts, scalar(1, x.dtype()));
  c.set(0, reshape_to(emit1("GatherV2", {means, ids, scalar(0, DType::kInt32)}), shape_of(x)));
}

}  // namespace

void register_isotonic_regression_op(OpRegistry& r) {
  OpBuilder("IsotonicRegression")
      .doc(
          "The non-increasing least-squares fit of each row (last axis) and the segments it pools. "
          "([[1., 3., 2., 4.]]) -> ([[2.5, 2.5, 2.5, 2.5]], [[0, 0, 0, 0]])")
      .input("input")
      .output("output")
      .output("segments")
      .type_var(kIsotonicTypes)
      .attr("output_dtype", AttrType::kDType, DType::kFloat32)
      .shape(&isotonic_shape)
      .kernel(kIsotonicTypes, &isotonic_kernel)
      .grad(&isotonic_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

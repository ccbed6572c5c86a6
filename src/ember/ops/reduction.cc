// Reductions: Sum, Mean, Prod, Max, Min, Any, All, ReduceLogSumExp, ArgMax, ArgMin (kernels:
// kernels/reduce.h), the cumulative scans Cumsum and Cumprod (kernels below), and their gradients.
//
// Signatures follow TensorFlow's ops: input 1, `axis` (TF's reduction_indices), is an int tensor listing
// the axes to reduce (negative counts from the end; an empty list reduces nothing, as tf.raw_ops.Sum with
// axis=[] — the Python and C++ APIs turn axis=None into every axis); attribute `keep_dims` (TensorFlow's
// name) keeps reduced axes as size 1.
#include <algorithm>
#include <complex>
#include <string>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/kernels/compute_type.h"
#include "ember/kernels/reduce.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

using kernels::ReduceOp;
using namespace gradient;  // NOLINT(google-build-using-namespace): the rules below read as formulas

std::string format_axes(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

// The set of reduced axes as a bit mask, validated against `rank`.
Status reduction_mask(const OpDef& op, const std::vector<int64_t>& axes, int rank, uint32_t* mask) {
  *mask = 0;
  for (int64_t axis : axes) {
    int64_t a;
    EMBER_RETURN_IF_ERROR(normalize_axis(axis, rank, op.name.c_str(), &a));
    if ((*mask >> a) & 1u)
      return invalid_argument(op.name, ": axis ", format_axes(axes), " contains axis ", a,
                              " twice (for a tensor of rank ", rank, ")");
    *mask |= 1u << a;
  }
  return Status::OK();
}

Status reduction_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  const bool keepdims = ctx.attr_bool(0);
  const TensorSpec& axis_spec = ctx.inputs[1];
  if (axis_spec.shape.rank_known() && axis_spec.shape.rank() > 1)
    return invalid_argument(ctx.op->name, ": 'axis' must be a scalar or a vector, got a tensor of shape ",
                            axis_spec.shape.to_string());
  PartialValue axes = ctx.value_of(1);
  if (!x.shape.rank_known() || !axes.fully_known()) {
    // Unknown axes: with keepdims the rank stands (every dim may have become 1), without it nothing does.
    Shape out = Shape::unknown_rank();
    if (keepdims && x.shape.rank_known()) {
      out = Shape();
      for (int i = 0; i < x.shape.rank(); ++i) out.push_back(x.shape.dim(i) == 1 ? 1 : kUnknownDim);
    }
    ctx.outputs.push_back(TensorSpec{x.dtype, out});
    return Status::OK();
  }
  uint32_t mask;
  EMBER_RETURN_IF_ERROR(reduction_mask(*ctx.op, axes.values, x.shape.rank(), &mask));
  Shape out;
  for (int i = 0; i < x.shape.rank(); ++i) {
    if (!((mask >> i) & 1u)) {
      out.push_back(x.shape.dim(i));
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  ctx.outputs.push_back(TensorSpec{x.dtype, out});
  return Status::OK();
}

template <ReduceOp kOp>
Status reduce_kernel(KernelContext& ctx) {
  if (ctx.input(1).rank() > 1)
    return invalid_argument(ctx.op->name, ": 'axis' must be a scalar or a vector, got a tensor of shape ",
                            ctx.input(1).shape().to_string());
  uint32_t mask;
  EMBER_RETURN_IF_ERROR(reduction_mask(*ctx.op, ctx.int_values(1), ctx.input(0).rank(), &mask));
  return kernels::reduce(kOp, ctx.input(0), mask, ctx.output(0));
}

// ---- Gradients. Input 1 is `axis`, attribute 0 is `keep_dims`.
//
// The axes are usually constants. When they are computed in the graph (the sum a broadcasting op's
// gradient makes over BroadcastGradientArgs' axes, differentiated again), `Axes::known` is false and the
// rules work from tensors: the kept-dims shape is x's shape with 1 where an axis points.

struct Axes {
  bool known = false;
  std::vector<int64_t> values;  // non-negative and sorted, when known
};

Axes reduced_axes(const GradContext& c) {
  Axes axes;
  if (c.input(1)->is_symbolic()) return axes;
  const int rank = c.input(0).rank();
  if (rank < 0)
    check_ok(make_error(Code::kUnimplemented, c.op->name, ": the gradient needs the input's rank"));
  for (int64_t a : known_ints(c.input(1), c.op->name, "axis")) axes.values.push_back(a < 0 ? a + rank : a);
  std::sort(axes.values.begin(), axes.values.end());
  axes.known = true;
  return axes;
}

// Whether each axis of x is reduced (a bool vector [rank]), computed at run time from the axis operand.
GradTensor reduced_positions(const GradContext& c) {
  const GradTensor rank = unary("Size", shape_of(c.input(0)));
  const int64_t flat[] = {-1}, last[] = {1};
  GradTensor axes = reshape_to(cast(c.input(1), DType::kInt32), int_vector(flat));
  // A scalar's axes are empty; the divisor stays positive so that the (empty) FloorMod has nothing to reject.
  axes = binary("FloorMod", axes + rank, binary("Maximum", rank, scalar(1, DType::kInt32)));
  const GradTensor positions = emit1("Range", {scalar(0, DType::kInt32), rank, scalar(1, DType::kInt32)});
  AttrList keep;
  keep.push_back(false);
  return emit1("Any", {compare("Equal", expand_dims(positions, 1), expand_dims(axes, 0)), int_vector(last)},
               std::move(keep));
}

// x's shape with the reduced axes set to 1, computed at run time.
GradTensor kept_shape(const GradContext& c) {
  const GradTensor shape = shape_of(c.input(0));
  return select(reduced_positions(c), ones_like(shape), shape);
}

// `t` (shaped like the op's output) with the reduced axes put back as size 1, so that it broadcasts
// against the input. ExpandDims at each axis in increasing order needs no dims, so unknown ones are fine.
GradTensor with_kept_dims(const GradContext& c, const GradTensor& t, const Axes& axes) {
  if (c.attr_bool(0)) return t;
  if (!axes.known) return reshape_to(t, kept_shape(c));
  if (c.input(0).shape().fully_defined()) {
    std::vector<int64_t> dims = c.input(0).shape().dim_vector();
    for (int64_t a : axes.values) dims[a] = 1;
    return reshape(t, std::move(dims));
  }
  GradTensor r = t;
  for (int64_t a : axes.values) r = expand_dims(r, a);
  return r;
}

void sum_grad(GradContext& c) {
  const Axes axes = reduced_axes(c);
  c.set(0, broadcast_like(with_kept_dims(c, c.grad(), axes), c.input(0)));
}

void mean_grad(GradContext& c) {
  const Axes axes = reduced_axes(c);
  GradTensor x = c.input(0), dy = with_kept_dims(c, c.grad(), axes);
  int64_t count = 1;
  bool known = axes.known;
  for (int64_t a : axes.values) {
    const int64_t d = x.shape().dim(static_cast<int>(a));
    known &= d >= 0;
    count *= d;
  }
  if (known && count != 1) {
    dy = dy / static_cast<double>(count);
  } else if (!known) {
    // How many elements each output averages: size(x) / size(y), with an empty y counted as 1.
    GradTensor one = scalar(1, DType::kInt32);
    GradTensor n = binary("FloorDiv", unary("Size", x), binary("Maximum", unary("Size", c.output(0)), one));
    dy = dy / cast(binary("Maximum", n, one), dy.dtype());
  }
  c.set(0, broadcast_like(dy, x));
}

// Every element equal to the extreme value gets an equal share of the gradient, as TensorFlow's: at a
// tie max is not differentiable, and sharing does not depend on the order of the elements.
void max_min_grad(GradContext& c) {
  const Axes axes = reduced_axes(c);
  GradTensor x = c.input(0);
  GradTensor hit = mask(compare("Equal", with_kept_dims(c, c.output(0), axes), x), x.dtype());
  AttrList keep;
  keep.push_back(true);
  GradTensor count = axes.known ? sum(hit, axes.values, /*keepdims=*/true)
                                : emit1("Sum", {hit, c.input(1)}, std::move(keep));
  c.set(0, with_kept_dims(c, c.grad(), axes) / count * hit);
}

// d/dx log(sum(exp(x))) = exp(x - y), a softmax over the reduced axes.
void log_sum_exp_grad(GradContext& c) {
  const Axes axes = reduced_axes(c);
  GradTensor x = c.input(0);
  c.set(0, with_kept_dims(c, c.grad(), axes) * exp(x - with_kept_dims(c, c.output(0), axes)));
}

GradTensor scan(const char* op, const GradTensor& x, const GradTensor& axis, bool exclusive, bool reverse) {
  AttrList attrs;
  attrs.push_back(exclusive);
  attrs.push_back(reverse);
  return emit1(op, {x, axis}, std::move(attrs));
}
GradTensor scan(const char* op, const GradTensor& x, int64_t axis, bool exclusive, bool reverse) {
  return scan(op, x, scalar(static_cast<double>(axis), DType::kInt32), exclusive, reverse);
}

// Note [Product gradient with zeros]
// d prod(x) / d x_i is the product of all the other elements. y / x_i gives it only where x_i != 0, so
// the product is formed directly: (product of the elements before i) * (product of those after i), two
// exclusive cumulative products along the reduced elements laid out as one axis. Being ember ops, the
// result can be differentiated again (Cumprod's rule handles zeros too).
//
// Where the axes are computed in the graph, the permutation is too: the reduced axes first, then the
// others, each in order (the coordinates of the true elements of [reduced, not reduced], read row by
// row), and x transposed by it is viewed as [reduced elements, other elements].
void prod_grad_dynamic_axes(GradContext& c) {
  const GradTensor x = c.input(0), dy = with_kept_dims(c, c.grad(), Axes{});
  const GradTensor shape = shape_of(x), reduced = reduced_positions(c);
  const int64_t column[] = {0, 1}, rest[] = {-1, 1}, flat[] = {-1}, first[] = {0};
  const GradTensor coordinates = emit1("Where", {stack_ints({reduced, unary("LogicalNot", reduced)})});
  const GradTensor perm =
      cast(reshape_to(emit1("Slice", {coordinates, int_vector(column), int_vector(rest)}), int_vector(flat)),
           DType::kInt32);
  const GradTensor permuted = emit1("Transpose", {x, perm});
  AttrList keep, keep2;
  keep.push_back(false);
  keep2.push_back(false);
  const GradTensor ones = ones_like(shape);
  const GradTensor reduced_count =
      emit1("Prod", {select(reduced, shape, ones), int_vector(first)}, std::move(keep));
  const GradTensor other_count =
      emit1("Prod", {select(reduced, ones, shape), int_vector(first)}, std::move(keep2));
  const GradTensor t = reshape_to(permuted, stack_ints({reduced_count, other_count}));
  GradTensor others = scan("Cumprod", t, 0, true, false) * scan("Cumprod", t, 0, true, true);
  others = reshape_to(others, shape_of(permuted));
  others = emit1("Transpose", {others, unary("InvertPermutation", perm)});
  c.set(0, others * dy);
}

void prod_grad(GradContext& c) {
  const Axes known_axes = reduced_axes(c);
  if (is_complex(c.input(0).dtype())) {
    // TensorFlow's convention for complex (Note [Complex gradients], docs/complex.md): dy times the conjugate
    // of the product of the other elements, here y / x; an element that is exactly 0 gets NaN.
    GradTensor y = with_kept_dims(c, c.output(0), known_axes), dy = with_kept_dims(c, c.grad(), known_axes);
    c.set(0, dy * unary("Conj", y / c.input(0)));
    return;
  }
  if (!known_axes.known) {
    prod_grad_dynamic_axes(c);
    return;
  }
  const std::vector<int64_t>& axes = known_axes.values;
  GradTensor x = c.input(0), dy = with_kept_dims(c, c.grad(), known_axes);
  if (axes.empty()) {
    c.set(0, dy);
    return;
  }
  const int rank = x.rank();
  // Reduced axes that are not adjacent are moved to the front so they can merge into one axis.
  const bool adjacent = axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  std::vector<int64_t> perm;
  GradTensor t = x;
  int first = static_cast<int>(axes.front());
  if (!adjacent) {
    perm = axes;
    for (int i = 0; i < rank; ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i);
    t = transpose(t, perm);
    first = 0;
  }
  const int last = first + static_cast<int>(axes.size());
  // t as [pre, reduced, post]; the products come from t's shape at run time where it is not static.
  const GradTensor permuted_shape = shape_of(t);
  t = reshape_to(
      t, stack_ints({dims_product(t, 0, first), dims_product(t, first, last), dims_product(t, last, rank)}));
  GradTensor others = scan("Cumprod", t, 1, true, false) * scan("Cumprod", t, 1, true, true);
  others = reshape_to(others, permuted_shape);
  if (!adjacent) {
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    others = transpose(others, inverse);
  }
  c.set(0, others * dy);
}

// A scalar axis operand (input `i`): its value when known; an error unless it is a scalar.
Status scalar_axis(const InferContext& ctx, int i, bool* known, int64_t* value) {
  const Shape& s = ctx.inputs[i].shape;
  if (s.rank_known() && s.rank() != 0)
    return invalid_argument(ctx.op->name, ": '", ctx.op->inputs[i].name, "' must be a scalar, got shape ",
                            s.to_string());
  const PartialValue v = ctx.value_of(i);
  *known = v.fully_known() && v.values.size() == 1;
  *value = *known ? v.values[0] : 0;
  return Status::OK();
}

Status scalar_axis(const KernelContext& ctx, int i, int64_t* value) {
  if (ctx.input(i).rank() != 0)
    return invalid_argument(ctx.op->name, ": '", ctx.op->inputs[i].name, "' must be a scalar, got shape ",
                            ctx.input(i).shape().to_string());
  *value = ctx.int_values(i)[0];
  return Status::OK();
}

// ---- ArgMax / ArgMin: input dimension (a scalar), attr output_type (int32 or int64).
Status arg_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  const DType out_type = ctx.attr_dtype(0);
  if (out_type != DType::kInt32 && out_type != DType::kInt64)
    return invalid_argument(ctx.op->name, ": output_type must be int32 or int64, got ", dtype_name(out_type));
  bool known;
  int64_t axis_value;
  EMBER_RETURN_IF_ERROR(scalar_axis(ctx, 1, &known, &axis_value));
  if (!x.shape.rank_known() || !known) {
    Shape out = Shape::unknown_rank();
    if (x.shape.rank_known() && x.shape.rank() > 0)
      out = Shape(std::vector<int64_t>(static_cast<size_t>(x.shape.rank() - 1), kUnknownDim));
    ctx.outputs.push_back(TensorSpec{out_type, out});
    return Status::OK();
  }
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_value, x.shape.rank(), ctx.op->name.c_str(), &axis));
  if (x.shape.dim(static_cast<int>(axis)) == 0)
    return invalid_argument(ctx.op->name, ": reduction axis ", axis, " is empty in shape ",
                            x.shape.to_string(), "; expected at least one element to take the arg",
                            ctx.op->name == "ArgMax" ? "max" : "min", " of");
  Shape out;
  for (int i = 0; i < x.shape.rank(); ++i)
    if (i != axis) out.push_back(x.shape.dim(i));
  ctx.outputs.push_back(TensorSpec{out_type, out});
  return Status::OK();
}

template <bool kMax>
Status arg_kernel(KernelContext& ctx) {
  int64_t axis_value, axis;
  EMBER_RETURN_IF_ERROR(scalar_axis(ctx, 1, &axis_value));
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_value, ctx.input(0).rank(), ctx.op->name.c_str(), &axis));
  if (ctx.input(0).shape().dim(static_cast<int>(axis)) == 0)
    return invalid_argument(
        ctx.op->name, ": reduction axis ", axis, " is empty in shape ", ctx.input(0).shape().to_string(),
        "; expected at least one element to take the arg", ctx.op->name == "ArgMax" ? "max" : "min", " of");
  return kernels::arg_reduce(kMax, ctx.input(0), static_cast<int>(axis), ctx.output(0));
}

struct ReduceDecl {
  const char* name;
  ReduceOp op;
  KernelFn kernel;
  DTypeSet types;
  uint32_t flags;
  const char* doc;
};

#define EMBER_R(op) ReduceOp::op, &reduce_kernel<ReduceOp::op>

const ReduceDecl kReduceOps[] = {
    {"Sum", EMBER_R(kSum), kNumericAndComplexTypes, 0,
     "Sum over axes (empty: 0; 16-bit floats accumulate in float). reduce_sum([[1, 2], [3, 4]], [0]) == [4, "
     "6]"},
    {"Mean", EMBER_R(kMean), kNumericAndComplexTypes, 0,
     "Mean over axes; integers divide truncating, empty floats give NaN. reduce_mean([1, 2], [0]) == 1"},
    {"Prod", EMBER_R(kProd), kNumericAndComplexTypes, 0,
     "Product over axes (empty: 1). reduce_prod([[1, 2], [3, 4]], [1]) == [2, 12]"},
    {"Max", EMBER_R(kMax), kNumericTypes, 0,
     "Maximum over axes; NaN propagates, empty gives -inf or the lowest integer. reduce_max([1, 3], [0]) == "
     "3"},
    {"Min", EMBER_R(kMin), kNumericTypes, 0,
     "Minimum over axes; NaN propagates, empty gives inf or the highest integer. reduce_min([1, 3], [0]) == "
     "1"},
    {"Any", EMBER_R(kAny), kBoolType, kNotDifferentiable,
     "Logical or over axes (empty: False). reduce_any([[True, False], [False, False]], [1]) == [True, "
     "False]"},
    {"All", EMBER_R(kAll), kBoolType, kNotDifferentiable,
     "Logical and over axes (empty: True). reduce_all([[True, False], [True, True]], [1]) == [False, True]"},
    {"ReduceLogSumExp", EMBER_R(kLogSumExp), kFloatTypes, 0,
     "log(sum(exp(x))) over axes, shifted by the max (all -inf gives -inf). "
     "reduce_logsumexp([0., 0.], [0]) == 0.6931472"},
};
#undef EMBER_R

GradFn reduce_grad(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return &sum_grad;
    case ReduceOp::kMean:
      return &mean_grad;
    case ReduceOp::kProd:
      return &prod_grad;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      return &max_min_grad;
    case ReduceOp::kLogSumExp:
      return &log_sum_exp_grad;
    default:
      return nullptr;
  }
}

// ---- Cumsum / Cumprod: attrs axis (int), exclusive (bool), reverse (bool), as tf.math.cumsum.

Status scan_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  bool known;
  int64_t axis_value;
  EMBER_RETURN_IF_ERROR(scalar_axis(ctx, 1, &known, &axis_value));
  if (x.shape.rank_known() && known) {
    int64_t axis;
    EMBER_RETURN_IF_ERROR(normalize_axis(axis_value, x.shape.rank(), ctx.op->name.c_str(), &axis));
  }
  ctx.outputs.push_back(x);
  return Status::OK();
}

// Integers accumulate in uint64_t, whose wrap-around truncates to the wrap-around of T (signed
// overflow in T itself would be undefined); 16-bit floats accumulate in float, complex values in T.
template <typename T>
struct ScanAccumulator {
  using type = std::conditional_t<std::is_integral_v<T>, uint64_t, kernels::compute_t<T>>;
};
template <typename R>
struct ScanAccumulator<std::complex<R>> {
  using type = std::complex<R>;
};
template <typename T>
using ScanAcc = typename ScanAccumulator<T>::type;

template <bool kProd>
Status scan_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  int64_t axis_value, axis;
  EMBER_RETURN_IF_ERROR(scalar_axis(ctx, 1, &axis_value));
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_value, in.rank(), ctx.op->name.c_str(), &axis));
  const bool exclusive = ctx.attr_bool(0), reverse = ctx.attr_bool(1);
  const Shape& shape = in.shape();
  // An empty tensor has nothing to scan, however large its other dims (work items are counted over them).
  if (in.num_elements() == 0) return Status::OK();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
  for (int i = static_cast<int>(axis) + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
  const int64_t n = shape.dim(static_cast<int>(axis));
  // A work item scans a block of up to kBlock contiguous inner positions of one outer index, walking
  // the axis with one accumulator per position so that every step reads contiguous memory.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  visit_dtype<kNumericAndComplexTypes>(in.dtype(), [&]<typename T>() {
    using Acc = ScanAcc<T>;
    const T* src = in.data<T>();
    T* dst = out.mutable_data<T>();
    parallel_for(outer * blocks, n * std::min(inner, kBlock), [&](int64_t begin, int64_t end) {
      Acc acc[kBlock];
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / blocks, j0 = (item % blocks) * kBlock, width = std::min(kBlock, inner - j0);
        for (int64_t j = 0; j < width; ++j) acc[j] = Acc(kProd ? 1 : 0);
        for (int64_t step = 0; step < n; ++step) {
          const int64_t k = reverse ? n - 1 - step : step;
          const int64_t base = (o * n + k) * inner + j0;
          for (int64_t j = 0; j < width; ++j) {
            const Acc v = static_cast<Acc>(src[base + j]);
            if (!exclusive) acc[j] = kProd ? acc[j] * v : acc[j] + v;
            if constexpr (kernels::kIsHalf<T>) {
              dst[base + j] = T(acc[j]);
            } else {
              dst[base + j] = static_cast<T>(acc[j]);
            }
            if (exclusive) acc[j] = kProd ? acc[j] * v : acc[j] + v;
          }
        }
      }
    });
  });
  return Status::OK();
}

// Attributes of a scan rule's op: 0 axis, 1 exclusive, 2 reverse. Each output element sums (or
// multiplies) the inputs before it in scan order, so the gradient sums the output gradients after it:
// the same scan run the other way.
void cumsum_grad(GradContext& c) {
  c.set(0, scan("Cumsum", c.grad(), c.input(1), c.attr_bool(0), !c.attr_bool(1)));
}

// Note [Cumprod gradient with zeros]
// dL/dx_i = sum over outputs k that include x_i of dy_k * (y_k without the factor x_i). Where x_i != 0
// that is reverse_cumsum(dy * y)_i / x_i, exact and differentiable wherever x_i != 0. Along a scan only
// the first zero needs more for the value: every later element's products already hold that zero, so the
// division form gives 0 there, correctly (it divides by 1 in place of x at the zeros). At a zero the
// products without it are those of x with that zero replaced by 1, so the same formula runs on that x
// (the division by 1 drops out). That is done for the first zero and also for the second: its gradient
// is 0, but its derivative with respect to the first zero is not, and only this form carries it, which
// keeps second derivatives exact (third derivatives would need the third zero, and so on).
void cumprod_grad(GradContext& c) {
  const GradTensor axis = c.input(1);
  const bool exclusive = c.attr_bool(0), reverse = c.attr_bool(1);
  GradTensor x = c.input(0), dy = c.grad();
  GradTensor one = scalar(1, x.dtype());
  GradTensor is_zero = compare("Equal", x, scalar(0, x.dtype()));
  GradTensor zeros_before = scan("Cumsum", mask(is_zero, x.dtype()), axis, true, reverse);
  auto reverse_sum = [&](const GradTensor& products) {
    return scan("Cumsum", dy * products, axis, exclusive, !reverse);
  };
  GradTensor grad = reverse_sum(c.output(0)) / select(is_zero, one, x);
  for (int nth : {1, 0}) {
    GradTensor at = emit1("LogicalAnd", {is_zero, compare("Equal", zeros_before, scalar(nth, x.dtype()))});
    GradTensor without = scan("Cumprod", select(at, one, x), axis, exclusive, reverse);
    grad = select(at, reverse_sum(without), grad);
  }
  c.set(0, grad);
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  for (const ReduceDecl& d : kReduceOps) {
    OpBuilder(d.name)
        .doc(d.doc)
        .input("input")
        .input_shape_like("axis")
        .output("output")
        .type_var(d.types)
        .attr("keep_dims", AttrType::kBool, false)
        .flags(d.flags)
        .shape(&reduction_shape)
        .kernel(d.types, d.kernel)
        .grad(reduce_grad(d.op))
        .batching(BatchingRule::kCustom)
        .done(r);
  }
  constexpr DTypeSet kArgTypes = kNumericTypes | kBoolType;
  struct ArgDecl {
    const char* name;
    KernelFn kernel;
    const char* doc;
  };
  const ArgDecl arg_ops[] = {
      {"ArgMax", &arg_kernel<true>,
       "Index of the first largest value along an axis (NaN is skipped, as in TF). argmax([1, 3, 3], 0) == "
       "1"},
      {"ArgMin", &arg_kernel<false>,
       "Index of the first smallest value along an axis (NaN is skipped, as in TF). argmin([3, 1, 1], 0) == "
       "1"},
  };
  for (const ArgDecl& d : arg_ops) {
    OpBuilder(d.name)
        .doc(d.doc)
        .input("input")
        .input_shape_like("dimension")
        .output("output")
        .type_var(kArgTypes)
        .attr("output_type", AttrType::kDType, DType::kInt64)
        .flags(kNotDifferentiable)
        .shape(&arg_shape)
        .kernel(kArgTypes, d.kernel)
        .batching(BatchingRule::kCustom)
        .done(r);
  }
  struct ScanDecl {
    const char* name;
    KernelFn kernel;
    GradFn grad;
    const char* doc;
  };
  const ScanDecl scan_ops[] = {
      {"Cumsum", &scan_kernel<false>, &cumsum_grad,
       "Cumulative sum along `axis`; `exclusive` leaves out the element itself, `reverse` scans from the "
       "end. cumsum([1, 2, 3], 0, exclusive=True) == [0, 1, 3]"},
      {"Cumprod", &scan_kernel<true>, &cumprod_grad,
       "Cumulative product along `axis`; `exclusive` leaves out the element itself, `reverse` scans from "
       "the end. cumprod([1, 2, 3], 0, reverse=True) == [6, 6, 3]"},
  };
  for (const ScanDecl& d : scan_ops) {
    OpBuilder(d.name)
        .doc(d.doc)
        .input("x")
        .input_shape_like("axis")
        .output("out")
        .type_var(kNumericAndComplexTypes)
        .attr("exclusive", AttrType::kBool, false)
        .attr("reverse", AttrType::kBool, false)
        .shape(&scan_shape)
        .kernel(kNumericAndComplexTypes, d.kernel)
        .grad(d.grad)
        .batching(BatchingRule::kCustom)
        .done(r);
  }
}

}  // namespace ember

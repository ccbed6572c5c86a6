// Reductions: Sum, Mean, Prod, Max, Min, Any, All, ReduceLogSumExp, ArgMax, ArgMin. Kernels:
// kernels/reduce.h.
//
// Attributes follow TensorFlow's ops, with the reduction indices as an attribute instead of an input:
// `axis` lists the axes to reduce (negative counts from the end; an empty list reduces nothing, as
// tf.raw_ops.Sum with axis=[] — the Python and C++ APIs turn axis=None into every axis), `keepdims`
// keeps reduced axes as size 1.
#include <string>

#include "ember/kernels/reduce.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

using kernels::ReduceOp;

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
  const bool keepdims = ctx.attr_bool(1);
  if (!x.shape.rank_known()) {
    ctx.outputs.push_back(TensorSpec{x.dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  uint32_t mask;
  EMBER_RETURN_IF_ERROR(reduction_mask(*ctx.op, ctx.attr_ints(0), x.shape.rank(), &mask));
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
  uint32_t mask;
  EMBER_RETURN_IF_ERROR(reduction_mask(*ctx.op, ctx.attr_ints(0), ctx.input(0).rank(), &mask));
  return kernels::reduce(kOp, ctx.input(0), mask, ctx.output(0));
}

// ---- ArgMax / ArgMin: attrs axis (int), output_type (int32 or int64).
Status arg_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  const DType out_type = ctx.attr_dtype(1);
  if (out_type != DType::kInt32 && out_type != DType::kInt64)
    return invalid_argument(ctx.op->name, ": output_type must be int32 or int64, got ", dtype_name(out_type));
  if (!x.shape.rank_known()) {
    ctx.outputs.push_back(TensorSpec{out_type, Shape::unknown_rank()});
    return Status::OK();
  }
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.attr_int(0), x.shape.rank(), ctx.op->name.c_str(), &axis));
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
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.attr_int(0), ctx.input(0).rank(), ctx.op->name.c_str(), &axis));
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
    {"Sum", EMBER_R(kSum), kNumericTypes, 0,
     "Sum over axes (empty: 0; 16-bit floats accumulate in float). reduce_sum([[1, 2], [3, 4]], [0]) == [4, "
     "6]"},
    {"Mean", EMBER_R(kMean), kNumericTypes, 0,
     "Mean over axes; integers divide truncating, empty floats give NaN. reduce_mean([1, 2], [0]) == 1"},
    {"Prod", EMBER_R(kProd), kNumericTypes, 0,
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

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  for (const ReduceDecl& d : kReduceOps) {
    OpBuilder(d.name)
        .doc(d.doc)
        .input("input")
        .output("output")
        .type_var(d.types)
        .attr("axis", AttrType::kInts)
        .attr("keepdims", AttrType::kBool, false)
        .flags(d.flags)
        .shape(&reduction_shape)
        .kernel(d.types, d.kernel)
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
        .output("output")
        .type_var(kArgTypes)
        .attr("axis", AttrType::kInt, int64_t{0})
        .attr("output_type", AttrType::kDType, DType::kInt64)
        .flags(kNotDifferentiable)
        .shape(&arg_shape)
        .kernel(kArgTypes, d.kernel)
        .done(r);
  }
}

}  // namespace ember

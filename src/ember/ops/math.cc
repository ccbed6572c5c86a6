// Element-wise unary and binary ops, AddN and Cast, each beside its gradient rule. Kernels:
// kernels/elementwise.h.
//
// The rules follow TensorFlow's math_grad.py. They use an op's output only through differentiable ops
// (Tanh's dy * (1 - y * y)), so that under an outer tape the rule can itself be differentiated.
#include <cmath>
#include <cstring>
#include <numbers>

#include "ember/core/parallel.h"
#include "ember/kernels/elementwise.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;
using namespace gradient;  // NOLINT(google-build-using-namespace): the rules below read as formulas

// ---- Gradients of the unary ops: dx from x, y = op(x) and dy.
void neg_grad(GradContext& c) { c.set(0, -c.grad()); }
void abs_grad(GradContext& c) { c.set(0, c.grad() * sign(c.input(0))); }
void sign_grad(GradContext& c) { c.set(0, zeros_like(c.input(0))); }
void exp_grad(GradContext& c) { c.set(0, c.grad() * c.output(0)); }
void log_grad(GradContext& c) { c.set(0, c.grad() / c.input(0)); }
void log1p_grad(GradContext& c) { c.set(0, c.grad() / (1.0 + c.input(0))); }
// exp(x) rather than y + 1: y + 1 rounds away the low bits of e^x when x is very negative.
void expm1_grad(GradContext& c) { c.set(0, c.grad() * exp(c.input(0))); }
void sqrt_grad(GradContext& c) { c.set(0, c.grad() * 0.5 / c.output(0)); }
void rsqrt_grad(GradContext& c) {
  GradTensor y = c.output(0);
  c.set(0, c.grad() * -0.5 * (y * y * y));
}
void square_grad(GradContext& c) { c.set(0, c.grad() * (2.0 * c.input(0))); }
void reciprocal_grad(GradContext& c) {
  GradTensor y = c.output(0);
  c.set(0, -c.grad() * (y * y));
}
void sin_grad(GradContext& c) { c.set(0, c.grad() * unary("Cos", c.input(0))); }
void cos_grad(GradContext& c) { c.set(0, -c.grad() * unary("Sin", c.input(0))); }
void tanh_grad(GradContext& c) {
  GradTensor y = c.output(0);
  c.set(0, c.grad() * (1.0 - y * y));
}
void sigmoid_grad(GradContext& c) {
  GradTensor y = c.output(0);
  c.set(0, c.grad() * (y * (1.0 - y)));
}
// At the kinks (x == 0, and x == 6 for Relu6) the gradient is 0, as TensorFlow's.
void relu_grad(GradContext& c) {
  GradTensor x = c.input(0), zero = scalar(0, x.dtype());
  c.set(0, select(compare("Greater", x, zero), c.grad(), zero));
}
void relu6_grad(GradContext& c) {
  GradTensor x = c.input(0), zero = scalar(0, x.dtype());
  GradTensor inside =
      emit1("LogicalAnd", {compare("Greater", x, zero), compare("Less", x, scalar(6, x.dtype()))});
  c.set(0, select(inside, c.grad(), zero));
}
// For x <= 0, d/dx (e^x - 1) = e^x = y + 1, which reuses the output.
void elu_grad(GradContext& c) {
  GradTensor x = c.input(0), dy = c.grad();
  c.set(0, select(compare("Greater", x, scalar(0, x.dtype())), dy, dy * (c.output(0) + 1.0)));
}
void softplus_grad(GradContext& c) { c.set(0, c.grad() * sigmoid(c.input(0))); }
void erf_grad(GradContext& c) {
  GradTensor x = c.input(0);
  c.set(0, c.grad() * (2.0 / std::sqrt(std::numbers::pi)) * exp(-square(x)));
}

// ---- Gradients of the binary ops. Inputs broadcast against each other, so each input's gradient is
// summed back to its own shape (reduce_to).
void add_grad(GradContext& c) {
  c.set(0, reduce_to(c.grad(), c.input(0)));
  c.set(1, reduce_to(c.grad(), c.input(1)));
}
void sub_grad(GradContext& c) {
  c.set(0, reduce_to(c.grad(), c.input(0)));
  c.set(1, reduce_to(-c.grad(), c.input(1)));
}
void mul_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy * y, x));
  c.set(1, reduce_to(x * dy, y));
}
void real_div_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy / y, x));
  c.set(1, reduce_to(dy * (-x / y / y), y));
}
// x mod y = x - floor(x / y) * y; the floor is piecewise constant.
void floor_mod_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy, x));
  c.set(1, reduce_to(-dy * binary("FloorDiv", x, y), y));
}
// d/dy x^y = x^y log(x) is taken as 0 where x <= 0 (there x^y is real only at integer y, so it has no
// derivative in y). log sees 1 there instead of x, so that the unused branch of the select is finite
// and a second derivative does not pick up NaN from it.
void pow_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), z = c.output(0), dy = c.grad();
  c.set(0, reduce_to(dy * y * binary("Pow", x, y - 1.0), x));
  GradTensor positive = compare("Greater", x, scalar(0, x.dtype()));
  GradTensor safe_x = select(positive, x, scalar(1, x.dtype()));
  GradTensor log_x = select(positive, log(safe_x), scalar(0, x.dtype()));
  c.set(1, reduce_to(dy * z * log_x, y));
}
// Ties send the whole gradient to x, as TensorFlow's.
template <bool kMax>
void max_min_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  GradTensor x_wins = compare(kMax ? "GreaterEqual" : "LessEqual", x, y);
  GradTensor zero = scalar(0, dy.dtype());
  c.set(0, reduce_to(select(x_wins, dy, zero), x));
  c.set(1, reduce_to(select(x_wins, zero, dy), y));
}
void squared_difference_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1);
  GradTensor dx = c.grad() * (2.0 * (x - y));
  c.set(0, reduce_to(dx, x));
  c.set(1, reduce_to(-dx, y));
}

template <UnaryOp kOp>
Status unary_kernel(KernelContext& ctx) {
  return kernels::run_unary(kOp, ctx.input(0), ctx.output(0));
}

template <BinaryOp kOp>
Status binary_kernel(KernelContext& ctx) {
  return kernels::run_binary(kOp, ctx.input(0), ctx.input(1), ctx.output(0));
}

struct UnaryDecl {
  const char* name;
  UnaryOp op;
  KernelFn kernel;
  uint32_t flags;
  GradFn grad;  // null exactly when flags hold kNotDifferentiable
  const char* doc;
};

#define EMBER_U(op) UnaryOp::op, &unary_kernel<UnaryOp::op>

const UnaryDecl kUnaryOps[] = {
    {"Neg", EMBER_U(kNeg), 0, &neg_grad, "-x. negative([1, -2]) == [-1, 2]"},
    {"Abs", EMBER_U(kAbs), 0, &abs_grad, "|x|. abs([-1.5, 2]) == [1.5, 2]"},
    {"Sign", EMBER_U(kSign), 0, &sign_grad, "-1, 0 or 1 (NaN stays NaN). sign([-3, 0, 2]) == [-1, 0, 1]"},
    {"Exp", EMBER_U(kExp), 0, &exp_grad, "e^x. exp([0.]) == [1.]"},
    {"Log", EMBER_U(kLog), 0, &log_grad, "Natural logarithm. log([1.]) == [0.]"},
    {"Log1p", EMBER_U(kLog1p), 0, &log1p_grad, "log(1 + x), accurate near 0. log1p([0.]) == [0.]"},
    {"Expm1", EMBER_U(kExpm1), 0, &expm1_grad, "e^x - 1, accurate near 0. expm1([0.]) == [0.]"},
    {"Sqrt", EMBER_U(kSqrt), 0, &sqrt_grad, "Square root. sqrt([4.]) == [2.]"},
    {"Rsqrt", EMBER_U(kRsqrt), 0, &rsqrt_grad, "1 / sqrt(x). rsqrt([4.]) == [0.5]"},
    {"Square", EMBER_U(kSquare), 0, &square_grad, "x * x. square([3]) == [9]"},
    {"Reciprocal", EMBER_U(kReciprocal), 0, &reciprocal_grad, "1 / x. reciprocal([4.]) == [0.25]"},
    {"Sin", EMBER_U(kSin), 0, &sin_grad, "Sine. sin([0.]) == [0.]"},
    {"Cos", EMBER_U(kCos), 0, &cos_grad, "Cosine. cos([0.]) == [1.]"},
    {"Tanh", EMBER_U(kTanh), 0, &tanh_grad, "Hyperbolic tangent. tanh([0.]) == [0.]"},
    {"Sigmoid", EMBER_U(kSigmoid), 0, &sigmoid_grad, "1 / (1 + e^-x). sigmoid([0.]) == [0.5]"},
    {"Relu", EMBER_U(kRelu), 0, &relu_grad, "max(x, 0). relu([-1, 2]) == [0, 2]"},
    {"Relu6", EMBER_U(kRelu6), 0, &relu6_grad, "min(max(x, 0), 6). relu6([-1, 8]) == [0, 6]"},
    {"Elu", EMBER_U(kElu), 0, &elu_grad, "x if x > 0 else e^x - 1. elu([1., 0.]) == [1., 0.]"},
    {"Softplus", EMBER_U(kSoftplus), 0, &softplus_grad, "log(1 + e^x). softplus([0.]) == [0.6931472]"},
    {"Erf", EMBER_U(kErf), 0, &erf_grad, "Gauss error function. erf([0.]) == [0.]"},
    {"Floor", EMBER_U(kFloor), kNotDifferentiable, nullptr,
     "Largest integer <= x. floor([1.5, -1.5]) == [1., -2.]"},
    {"Ceil", EMBER_U(kCeil), kNotDifferentiable, nullptr, "Smallest integer >= x. ceil([1.5]) == [2.]"},
    {"Round", EMBER_U(kRound), kNotDifferentiable, nullptr,
     "Round half to even. round([0.5, 1.5]) == [0., 2.]"},
    {"LogicalNot", EMBER_U(kLogicalNot), kNotDifferentiable, nullptr,
     "Boolean not. logical_not([True]) == [False]"},
    {"IsNan", EMBER_U(kIsNan), kNotDifferentiable, nullptr, "x is NaN. is_nan([nan, 1.]) == [True, False]"},
    {"IsFinite", EMBER_U(kIsFinite), kNotDifferentiable, nullptr,
     "x is neither infinite nor NaN. is_finite([inf, 1.]) == [False, True]"},
};
#undef EMBER_U

struct BinaryDecl {
  const char* name;
  BinaryOp op;
  KernelFn kernel;
  uint32_t flags;
  GradFn grad;  // null exactly when flags hold kNotDifferentiable
  const char* doc;
};

#define EMBER_B(op) BinaryOp::op, &binary_kernel<BinaryOp::op>

const BinaryDecl kBinaryOps[] = {
    {"Add", EMBER_B(kAdd), kCommutative, &add_grad, "x + y with broadcasting. add([1, 2], 3) == [4, 5]"},
    {"Sub", EMBER_B(kSub), 0, &sub_grad, "x - y with broadcasting. subtract([3], [1]) == [2]"},
    {"Mul", EMBER_B(kMul), kCommutative, &mul_grad, "x * y with broadcasting. multiply([2], [3]) == [6]"},
    {"RealDiv", EMBER_B(kDiv), 0, &real_div_grad, "x / y for floats. divide([1.], [4.]) == [0.25]"},
    {"FloorDiv", EMBER_B(kFloorDiv), kNotDifferentiable, nullptr,
     "floor(x / y). floordiv([-7], [2]) == [-4]"},
    {"FloorMod", EMBER_B(kFloorMod), 0, &floor_mod_grad, "x - floor(x / y) * y. floormod([-7], [2]) == [1]"},
    {"Pow", EMBER_B(kPow), 0, &pow_grad, "x ** y. pow([2.], [3.]) == [8.]"},
    {"Maximum", EMBER_B(kMax), kCommutative, &max_min_grad<true>,
     "Element-wise max (NaN wins). maximum([1, 5], [3, 2]) == [3, 5]"},
    {"Minimum", EMBER_B(kMin), kCommutative, &max_min_grad<false>,
     "Element-wise min (NaN wins). minimum([1, 5], [3, 2]) == [1, 2]"},
    {"SquaredDifference", EMBER_B(kSquaredDiff), kCommutative, &squared_difference_grad,
     "(x - y)^2. squared_difference([1.], [3.]) == [4.]"},
    {"Equal", EMBER_B(kEqual), kCommutative | kNotDifferentiable, nullptr,
     "x == y. equal([1, 2], 2) == [False, True]"},
    {"NotEqual", EMBER_B(kNotEqual), kCommutative | kNotDifferentiable, nullptr,
     "x != y. not_equal([1, 2], 2) == [True, False]"},
    {"Less", EMBER_B(kLess), kNotDifferentiable, nullptr, "x < y. less([1, 2], 2) == [True, False]"},
    {"LessEqual", EMBER_B(kLessEqual), kNotDifferentiable, nullptr,
     "x <= y. less_equal([1, 3], 2) == [True, False]"},
    {"Greater", EMBER_B(kGreater), kNotDifferentiable, nullptr, "x > y. greater([1, 3], 2) == [False, True]"},
    {"GreaterEqual", EMBER_B(kGreaterEqual), kNotDifferentiable, nullptr,
     "x >= y. greater_equal([1, 2], 2) == [False, True]"},
    {"LogicalAnd", EMBER_B(kLogicalAnd), kCommutative | kNotDifferentiable, nullptr,
     "Boolean and. logical_and([True], [False]) == [False]"},
    {"LogicalOr", EMBER_B(kLogicalOr), kCommutative | kNotDifferentiable, nullptr,
     "Boolean or. logical_or([True], [False]) == [True]"},
};
#undef EMBER_B

// Which dtypes each op accepts is read off the kernel tables, so the declaration and the kernels cannot
// disagree.
DTypeSet unary_types(UnaryOp op) {
  DTypeSet set = 0;
  for (int d = 0; d < kNumDTypes; ++d)
    if (kernels::elementwise_tables().unary[static_cast<int>(op)][d]) set |= 1u << d;
  return set;
}
DTypeSet binary_types(BinaryOp op) {
  DTypeSet set = 0;
  for (int d = 0; d < kNumDTypes; ++d)
    if (kernels::elementwise_tables().binary[static_cast<int>(op)][d].vv) set |= 1u << d;
  return set;
}

bool returns_bool(UnaryOp op) {
  return op == UnaryOp::kLogicalNot || op == UnaryOp::kIsNan || op == UnaryOp::kIsFinite;
}
bool returns_bool(BinaryOp op) { return op >= BinaryOp::kEqual; }

// ---- AddN: sum of N same-shape tensors.
Status add_n_shape(InferContext& ctx) {
  Shape shape = ctx.inputs[0].shape;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i].shape != shape && shape.fully_defined() && ctx.inputs[i].shape.fully_defined())
      return invalid_argument("AddN: all inputs must have the same shape; input #0 is ", shape.to_string(),
                              " but input #", i, " is ", ctx.inputs[i].shape.to_string());
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, shape});
  return Status::OK();
}

Status add_n_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (ctx.inputs.size() == 1) {
    std::memcpy(out.mutable_raw_data(), ctx.input(0).raw_data(), out.nbytes());
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(kernels::run_binary(BinaryOp::kAdd, ctx.input(0), ctx.input(1), out));
  for (size_t i = 2; i < ctx.inputs.size(); ++i)
    EMBER_RETURN_IF_ERROR(kernels::run_binary(BinaryOp::kAdd, out, ctx.input(static_cast<int>(i)), out));
  return Status::OK();
}

void add_n_grad(GradContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) c.set(i, c.grad());
}

// ---- Cast
Status cast_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), ctx.inputs[0].shape});
  return Status::OK();
}

template <typename From, typename To>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0.0f || (!std::is_floating_point_v<From> && v != From{});
  } else if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

Status cast_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  int64_t n = in.num_elements();
  visit_dtype(in.dtype(), [&]<typename From>() {
    visit_dtype(out.dtype(), [&]<typename To>() {
      const From* src = in.data<From>();
      To* dst = out.mutable_data<To>();
      parallel_for(n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = convert<From, To>(src[i]);
      });
    });
  });
  return Status::OK();
}

// Only a cast between floating types passes a gradient back: through an integer or bool the value is
// piecewise constant.
void cast_grad(GradContext& c) {
  DType from = c.input(0).dtype(), to = c.output(0).dtype();
  if (is_floating(from) && is_floating(to)) c.set(0, cast(c.grad(), from));
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  for (const UnaryDecl& d : kUnaryOps) {
    DTypeSet types = unary_types(d.op);
    uint32_t flags = kElementwise | d.flags | (returns_bool(d.op) ? kNotDifferentiable : 0u);
    if (types == kBoolType) flags |= kNotDifferentiable;
    EMBER_DCHECK((d.grad == nullptr) == ((flags & kNotDifferentiable) != 0));
    OpBuilder(d.name)
        .doc(d.doc)
        .input("x")
        .output("y")
        .type_var(types)
        .flags(flags)
        .shape(returns_bool(d.op) ? &bool_like_input_shape : &same_as_input_shape)
        .kernel(types, d.kernel)
        .tile_unary(static_cast<int>(d.op))
        .grad(d.grad)
        .done(r);
  }
  for (const BinaryDecl& d : kBinaryOps) {
    DTypeSet types = binary_types(d.op);
    EMBER_DCHECK((d.grad == nullptr) == ((d.flags & kNotDifferentiable) != 0));
    OpBuilder(d.name)
        .doc(d.doc)
        .input("x")
        .input("y")
        .output("z")
        .type_var(types)
        .flags(kElementwise | d.flags)
        .shape(returns_bool(d.op) ? &broadcast_compare_shape : &broadcast_binary_shape)
        .kernel(types, d.kernel)
        .tile_binary(static_cast<int>(d.op))
        .grad(d.grad)
        .done(r);
  }
  OpBuilder("AddN")
      .doc("Sum of N tensors of one shape. add_n([[1, 2], [3, 4]]) == [4, 6]")
      .input("inputs")
      .output("sum")
      .type_var(kNumericTypes)
      .flags(kVariadicInput | kCommutative)
      .shape(&add_n_shape)
      .kernel(kNumericTypes, &add_n_kernel)
      .grad(&add_n_grad)
      .done(r);
  OpBuilder("Cast")
      .doc("Converts to another dtype (floats truncate toward zero). cast([1.7], int32) == [1]")
      .input("x")
      .output("y")
      .type_var(kAllTypes)
      .attr("DstT", AttrType::kDType)
      .flags(kElementwise)
      .shape(&cast_shape)
      .kernel(kAllTypes, &cast_kernel)
      .grad(&cast_grad)
      .done(r);
}

}  // namespace ember

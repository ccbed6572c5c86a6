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
// d/dx tan(x) = 1 + tan(x)^2, from the output.
void tan_grad(GradContext& c) { c.set(0, c.grad() * (1.0 + square(c.output(0)))); }
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
void erfc_grad(GradContext& c) {
  GradTensor x = c.input(0);
  c.set(0, c.grad() * (-2.0 / std::sqrt(std::numbers::pi)) * exp(-square(x)));
}

void sinh_grad(GradContext& c) { c.set(0, c.grad() * unary("Cosh", c.input(0))); }
void cosh_grad(GradContext& c) { c.set(0, c.grad() * unary("Sinh", c.input(0))); }

// Inverse trigonometric and hyperbolic functions: 1 / their function's derivative at y, written in x
// (Asinh and Acosh in y itself). Note [Complex inverse functions]: for complex x TensorFlow's rules take the
// derivative at conj(x) (or conj(y)), dy * f'(conj x), where holomorphic_grad would give dy * conj(f'(x));
// the two differ on the branch cuts (the square root of a negative real with a signed zero imaginary part),
// so these rules conjugate their operand themselves and are not wrapped (conjugates_complex_operands).
// Acosh's derivative is 1 / sinh(y) = 1 / (sqrt(x - 1) sqrt(x + 1)), which is not 1 / sqrt(x^2 - 1) in the
// left half of the complex plane; Asinh's is 1 / cosh(y) = 1 / sqrt(x^2 + 1).
GradTensor conj_if_complex(const GradTensor& x) { return is_complex(x.dtype()) ? unary("Conj", x) : x; }
// 1 / sqrt rather than Rsqrt: at the branch points +-1 a complex reciprocal of 0 is NaN, as TensorFlow's
// (Note [Complex division]), where Rsqrt gives inf.
GradTensor inverse_sqrt_of_one_minus_square(const GradTensor& x) {
  return unary("Reciprocal", unary("Sqrt", 1.0 - square(conj_if_complex(x))));
}
void asin_grad(GradContext& c) { c.set(0, c.grad() * inverse_sqrt_of_one_minus_square(c.input(0))); }
void acos_grad(GradContext& c) { c.set(0, -c.grad() * inverse_sqrt_of_one_minus_square(c.input(0))); }
void atan_grad(GradContext& c) { c.set(0, c.grad() / (1.0 + square(conj_if_complex(c.input(0))))); }
void asinh_grad(GradContext& c) { c.set(0, c.grad() / unary("Cosh", conj_if_complex(c.output(0)))); }
void acosh_grad(GradContext& c) { c.set(0, c.grad() / unary("Sinh", conj_if_complex(c.output(0)))); }
void atanh_grad(GradContext& c) { c.set(0, c.grad() / (1.0 - square(conj_if_complex(c.input(0))))); }
void lgamma_grad(GradContext& c) { c.set(0, c.grad() * unary("Digamma", c.input(0))); }
void digamma_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  c.set(0, c.grad() * binary("Polygamma", ones_like(x), x));
}
// d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2).
void erfinv_grad(GradContext& c) {
  c.set(0, c.grad() * (std::sqrt(std::numbers::pi) / 2) * exp(square(c.output(0))));
}

// ---- Gradients of the binary ops. Inputs broadcast against each other, so each input's gradient is
// summed back to its own shape (reduce_to).
void add_grad(GradContext& c) {
  c.set(0, reduce_to(c.grad(), c.input(0), c.input(1)));
  c.set(1, reduce_to(c.grad(), c.input(1), c.input(0)));
}
void sub_grad(GradContext& c) {
  c.set(0, reduce_to(c.grad(), c.input(0), c.input(1)));
  c.set(1, reduce_to(-c.grad(), c.input(1), c.input(0)));
}
void mul_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy * y, x, y));
  c.set(1, reduce_to(x * dy, y, x));
}
void real_div_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy / y, x, y));
  c.set(1, reduce_to(dy * (-x / y / y), y, x));
}
// x mod y = x - floor(x / y) * y; the floor is piecewise constant.
void floor_mod_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  c.set(0, reduce_to(dy, x, y));
  c.set(1, reduce_to(-dy * binary("FloorDiv", x, y), y, x));
}
// d/dy x^y = x^y log(x) is taken as 0 where x <= 0 (there x^y is real only at integer y, so it has no
// derivative in y). log sees 1 there instead of x, so that the unused branch of the select is finite
// and a second derivative does not pick up NaN from it.
void pow_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), z = c.output(0), dy = c.grad();
  c.set(0, reduce_to(dy * y * binary("Pow", x, y - 1.0), x, y));
  // Complex x has a logarithm everywhere but 0 (the principal branch).
  GradTensor zero = scalar(0, x.dtype());
  GradTensor defined = is_complex(x.dtype()) ? compare("NotEqual", x, zero) : compare("Greater", x, zero);
  GradTensor safe_x = select(defined, x, scalar(1, x.dtype()));
  GradTensor log_x = select(defined, log(safe_x), zero);
  c.set(1, reduce_to(dy * z * log_x, y, x));
}
// Ties send the whole gradient to x, as TensorFlow's.
template <bool kMax>
void max_min_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dy = c.grad();
  GradTensor x_wins = compare(kMax ? "GreaterEqual" : "LessEqual", x, y);
  GradTensor zero = scalar(0, dy.dtype());
  c.set(0, reduce_to(select(x_wins, dy, zero), x, y));
  c.set(1, reduce_to(select(x_wins, zero, dy), y, x));
}
void squared_difference_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1);
  GradTensor dx = c.grad() * (2.0 * (x - y));
  c.set(0, reduce_to(dx, x, y));
  c.set(1, reduce_to(-dx, y, x));
}

// atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2).
void atan2_grad(GradContext& c) {
  const GradTensor y = c.input(0), x = c.input(1);
  const GradTensor scaled = c.grad() / (square(x) + square(y));
  c.set(0, reduce_to(scaled * x, y, x));
  c.set(1, reduce_to(-scaled * y, x, y));
}
// TensorFlow's gradients of the "no NaN" ops, written with the ops themselves so that a zero operand
// gives a zero gradient there too (not 0 * inf) and the second derivative keeps that property.
void div_no_nan_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dz = c.grad();
  c.set(0, reduce_to(binary("DivNoNan", dz, y), x, y));
  c.set(1, reduce_to(dz * binary("DivNoNan", binary("DivNoNan", -x, y), y), y, x));
}
void mul_no_nan_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dz = c.grad();
  c.set(0, reduce_to(binary("MulNoNan", dz, y), x, y));
  c.set(1, reduce_to(binary("MulNoNan", x, dz), y, x));
}
// x * f(y) for f = log (Xlogy) or log1p (Xlog1py): d/dx = f(y) where x != 0, d/dy = x f'(y).
template <bool kLog1p>
void x_log_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dz = c.grad();
  GradTensor x_nonzero = mask(compare("NotEqual", x, scalar(0, x.dtype())), x.dtype());
  c.set(0, reduce_to(dz * binary(kLog1p ? "Xlog1py" : "Xlogy", x_nonzero, y), x, y));
  c.set(1, reduce_to(dz * binary("Xdivy", x, kLog1p ? y + 1.0 : y), y, x));
}
void xlogy_grad(GradContext& c) { x_log_grad<false>(c); }
void xlog1py_grad(GradContext& c) { x_log_grad<true>(c); }
void xdivy_grad(GradContext& c) {
  GradTensor x = c.input(0), y = c.input(1), dz = c.grad();
  GradTensor x_nonzero = mask(compare("NotEqual", x, scalar(0, x.dtype())), x.dtype());
  c.set(0, reduce_to(dz * binary("Xdivy", x_nonzero, y), x, y));
  c.set(1, reduce_to(dz * binary("Xdivy", -x, square(y)), y, x));
}
// The order a is a non-negative integer: no gradient flows to it (as TensorFlow's).
void polygamma_grad(GradContext& c) {
  const GradTensor a = c.input(0), x = c.input(1);
  c.set(1, reduce_to(c.grad() * binary("Polygamma", a + 1.0, x), x, a));
}

// TensorFlow's rules for Xdivy, Xlogy, Xlog1py, MulNoNan and SquaredDifference take complex operands as
// they are, unconjugated (unlike Mul, Div or DivNoNan), and ember's gradients are TensorFlow's; the inverse
// trigonometric and hyperbolic rules conjugate their operands themselves (Note [Complex inverse functions]).
constexpr bool conjugates_complex_operands(GradFn rule) {
  for (GradFn own : {&xdivy_grad, &xlogy_grad, &xlog1py_grad, &mul_no_nan_grad, &squared_difference_grad,
                     &asin_grad, &acos_grad, &atan_grad, &asinh_grad, &acosh_grad, &atanh_grad})
    if (rule == own) return false;
  return true;
}

template <GradFn kRule>
constexpr GradFn with_complex() {
  if constexpr (kRule == nullptr)
    return nullptr;
  else if constexpr (!conjugates_complex_operands(kRule))
    return kRule;
  else
    return &holomorphic_grad<kRule>;
}

template <UnaryOp kOp>
Status unary_kernel(KernelContext& ctx) {
  return kernels::run_unary(kOp, ctx.input(0), ctx.output(0));
}

template <BinaryOp kOp>
Status binary_kernel(KernelContext& ctx) {
  return kernels::run_binary(kOp, ctx.input(0), ctx.input(1), ctx.output(0));
}

constexpr GradFn not_differentiable = nullptr;

// One OpDef per row of kernels/elementwise_ops.h. The row's dtypes are the kernel tables' (checked at
// start-up against the loops actually filled in, so the declaration and the kernels cannot disagree).
struct ElementwiseRow {
  const kernels::ElementwiseInfo& info;
  int op;  // the UnaryOp or BinaryOp, as the tile functions take it
  KernelFn kernel;
  uint32_t flags;
  GradFn grad;
  const char* doc;
};

#define EMBER_UNARY_ROW(Enum, Op, api, Math, Types, Result, Cost, Flags, Grad, Doc) \
  ElementwiseRow{kernels::info(UnaryOp::Enum), static_cast<int>(UnaryOp::Enum),     \
                 &unary_kernel<UnaryOp::Enum>, Flags,                               \
                 with_complex<Grad>(),         Doc},
#define EMBER_BINARY_ROW(Enum, Op, api, Math, Types, Result, Cost, Flags, Grad, Doc) \
  ElementwiseRow{kernels::info(BinaryOp::Enum),  static_cast<int>(BinaryOp::Enum),   \
                 &binary_kernel<BinaryOp::Enum>, Flags,                              \
                 with_complex<Grad>(),           Doc},
const ElementwiseRow kUnaryRows[] = {EMBER_UNARY_OPS(EMBER_UNARY_ROW)};
const ElementwiseRow kBinaryRows[] = {EMBER_BINARY_OPS(EMBER_BINARY_ROW)};
#undef EMBER_BINARY_ROW
#undef EMBER_UNARY_ROW

void register_elementwise(OpRegistry& r, const ElementwiseRow& row, bool unary) {
  const kernels::ElementwiseInfo& info = row.info;
  uint32_t flags = kElementwise | row.flags | (row.grad == nullptr ? kNotDifferentiable : 0u);
  OpBuilder b(info.op_name);
  b.doc(row.doc).input("x");
  if (unary) {
    b.output("y")
        .shape(info.returns_bool ? &bool_like_input_shape : &same_as_input_shape)
        .tile_unary(row.op)
        .batching(BatchingRule::kElementwise);
  } else {
    b.input("y")
        .output("z")
        .shape(info.returns_bool ? &broadcast_compare_shape : &broadcast_binary_shape)
        .tile_binary(row.op)
        .batching(BatchingRule::kBroadcasting);
  }
  b.type_var(info.types)
      .flags(flags)
      .kernel(info.types, row.kernel)
      .grad(row.grad)
      .api_name(info.api_name)
      .done(r);
}

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

template <typename T>
inline constexpr bool kIsComplex = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;

template <typename From, typename To>
To convert(From v) {
  if constexpr (kIsComplex<From> && kIsComplex<To>) {
    return static_cast<To>(v);
  } else if constexpr (kIsComplex<From>) {
    return convert<typename From::value_type, To>(v.real());  // TensorFlow drops the imaginary part
  } else if constexpr (kIsComplex<To>) {
    return To(convert<From, typename To::value_type>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
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
  visit_dtype<kAllTypesAndComplex>(in.dtype(), [&]<typename From>() {
    visit_dtype<kAllTypesAndComplex>(out.dtype(), [&]<typename To>() {
      const From* src = in.data<From>();
      To* dst = out.mutable_data<To>();
      parallel_for(n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = convert<From, To>(src[i]);
      });
    });
  });
  return Status::OK();
}

// Only a cast between floating or complex types passes a gradient back: through an integer or bool the
// value is piecewise constant. Complex to real keeps the real part, so its gradient is dy + 0i; real to
// complex passes back the real part of dy (a Cast, as TensorFlow's).
void cast_grad(GradContext& c) {
  DType from = c.input(0).dtype(), to = c.output(0).dtype();
  auto passes = [](DType d) { return is_floating(d) || is_complex(d); };
  if (passes(from) && passes(to)) c.set(0, cast(c.grad(), from));
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  for (const ElementwiseRow& row : kUnaryRows) register_elementwise(r, row, true);
  for (const ElementwiseRow& row : kBinaryRows) register_elementwise(r, row, false);
  OpBuilder("AddN")
      .doc("Sum of N tensors of one shape. add_n([[1, 2], [3, 4]]) == [4, 6]")
      .input("inputs")
      .output("sum")
      .type_var(kNumericAndComplexTypes)
      .flags(kVariadicInput | kCommutative)
      .shape(&add_n_shape)
      .kernel(kNumericAndComplexTypes, &add_n_kernel)
      .grad(&add_n_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Cast")
      .doc("Converts to another dtype (floats truncate toward zero). cast([1.7], int32) == [1]")
      .input("x")
      .output("y")
      .type_var(kAllTypesAndComplex)
      .attr("DstT", AttrType::kDType)
      .flags(kElementwise)
      .shape(&cast_shape)
      .kernel(kAllTypesAndComplex, &cast_kernel)
      .grad(&cast_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember

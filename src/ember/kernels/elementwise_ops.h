// The element-wise ops, one row each: the single declaration that the kernel enums, the per-ISA loop
// tables, the cost model, the registry rows (ops/math.cc) and the C++ façade (api/math.h) expand. Adding
// an op is one row here, its functor in kernels/isa/elementwise_isa.cc, its gradient rule in ops/math.cc
// and a test domain (docs/adding_an_op.md).
//
// Columns of a unary row, X(Enum, Op, api, Math, Types, Result, Cost, Flags, Grad, Doc):
//   Enum    the kernels::UnaryOp enumerator
//   Op      TensorFlow's op type name (the registry's key)
//   api     the snake_case name of the C++ façade function and of the Python wrapper (TensorFlow's)
//   Math    the functor in elementwise_isa.cc that computes one element
//   Types   the dtypes the op is declared (and its loops instantiated) for
//   Result  Same (the input's dtype) or Bool (a predicate)
//   Cost    rough cycles per element (transcendentals 8), for the decision to go parallel
//   Flags   extra OpFlags (kCommutative) or 0
//   Grad    the gradient rule in ops/math.cc, or not_differentiable
//   Doc     one line with an example; the Python docstring
// Binary rows have the same columns. A unary op batches for pfor as an element-wise map, a binary op as a
// broadcasting one (OpDef::batching).
//
// New rows go at the end of their list: FusedElementwise programs (graph attributes) record the enum
// positions.
//
// Kernel-layer code expands only the first columns; the Grad and Flags tokens are names of the ops layer
// and mean nothing here (a macro argument that is never expanded needs no declaration).
#pragma once

// clang-format off
#define EMBER_UNARY_OPS(X)                                                                                   \
  X(kNeg, Neg, negative, NegF, kSignedNumericTypes | kComplexTypes, Same, 1, 0, neg_grad,                                    \
    "-x. negative([1, -2]) == [-1, 2]")                                                                      \
  X(kAbs, Abs, abs, AbsF, kSignedNumericTypes, Same, 1, 0, abs_grad, "|x|. abs([-1.5, 2]) == [1.5, 2]")      \
  X(kSign, Sign, sign, SignF, kSignedNumericTypes | kComplexTypes, Same, 1, 0, sign_grad,                    \
    "-1, 0 or 1 (NaN stays NaN); z / |z| for complex z. sign([-3, 0, 2]) == [-1, 0, 1]")                     \
  X(kExp, Exp, exp, ExpF, kFloatAndComplexTypes, Same, 8, 0, exp_grad, "e^x. exp([0.]) == [1.]")                       \
  X(kLog, Log, log, LogF, kFloatAndComplexTypes, Same, 8, 0, log_grad, "Natural logarithm. log([1.]) == [0.]")         \
  X(kLog1p, Log1p, log1p, Log1pF, kFloatAndComplexTypes, Same, 8, 0, log1p_grad,                                       \
    "log(1 + x), accurate near 0. log1p([0.]) == [0.]")                                                      \
  X(kExpm1, Expm1, expm1, Expm1F, kFloatAndComplexTypes, Same, 8, 0, expm1_grad,                                       \
    "e^x - 1, accurate near 0. expm1([0.]) == [0.]")                                                         \
  X(kSqrt, Sqrt, sqrt, SqrtF, kFloatAndComplexTypes, Same, 1, 0, sqrt_grad, "Square root. sqrt([4.]) == [2.]")         \
  X(kRsqrt, Rsqrt, rsqrt, RsqrtF, kFloatAndComplexTypes, Same, 1, 0, rsqrt_grad, "1 / sqrt(x). rsqrt([4.]) == [0.5]")  \
  X(kSquare, Square, square, SquareF, kNumericAndComplexTypes, Same, 1, 0, square_grad, "x * x. square([3]) == [9]")   \
  X(kReciprocal, Reciprocal, reciprocal, ReciprocalF, kFloatAndComplexTypes, Same, 1, 0, reciprocal_grad,              \
    "1 / x. reciprocal([4.]) == [0.25]")                                                                     \
  X(kSin, Sin, sin, SinF, kFloatAndComplexTypes, Same, 8, 0, sin_grad, "Sine. sin([0.]) == [0.]")                      \
  X(kCos, Cos, cos, CosF, kFloatAndComplexTypes, Same, 8, 0, cos_grad, "Cosine. cos([0.]) == [1.]")                    \
  X(kTanh, Tanh, tanh, TanhF, kFloatAndComplexTypes, Same, 8, 0, tanh_grad, "Hyperbolic tangent. tanh([0.]) == [0.]")  \
  X(kSigmoid, Sigmoid, sigmoid, SigmoidF, kFloatAndComplexTypes, Same, 8, 0, sigmoid_grad,                             \
    "1 / (1 + e^-x). sigmoid([0.]) == [0.5]")                                                                \
  X(kRelu, Relu, relu, ReluF, kNumericTypes, Same, 1, 0, relu_grad, "max(x, 0). relu([-1, 2]) == [0, 2]")    \
  X(kRelu6, Relu6, relu6, Relu6F, kNumericTypes, Same, 1, 0, relu6_grad,                                     \
    "min(max(x, 0), 6). relu6([-1, 8]) == [0, 6]")                                                           \
  X(kElu, Elu, elu, EluF, kFloatTypes, Same, 8, 0, elu_grad,                                                 \
    "x if x > 0 else e^x - 1. elu([1., 0.]) == [1., 0.]")                                                    \
  X(kSoftplus, Softplus, softplus, SoftplusF, kFloatTypes, Same, 8, 0, softplus_grad,                        \
    "log(1 + e^x). softplus([0.]) == [0.6931472]")                                                           \
  X(kErf, Erf, erf, ErfF, kFloatTypes, Same, 8, 0, erf_grad, "Gauss error function. erf([0.]) == [0.]")      \
  X(kFloor, Floor, floor, FloorF, kFloatTypes, Same, 1, 0, not_differentiable,                               \
    "Largest integer <= x. floor([1.5, -1.5]) == [1., -2.]")                                                 \
  X(kCeil, Ceil, ceil, CeilF, kFloatTypes, Same, 1, 0, not_differentiable,                                   \
    "Smallest integer >= x. ceil([1.5]) == [2.]")                                                            \
  X(kRound, Round, round, RoundF, kFloatTypes, Same, 1, 0, not_differentiable,                               \
    "Round half to even. round([0.5, 1.5]) == [0., 2.]")                                                     \
  X(kLogicalNot, LogicalNot, logical_not, LogicalNotF, kBoolType, Bool, 1, 0, not_differentiable,            \
    "Boolean not. logical_not([True]) == [False]")                                                           \
  X(kIsNan, IsNan, is_nan, IsNanF, kFloatTypes, Bool, 1, 0, not_differentiable,                              \
    "x is NaN. is_nan([nan, 1.]) == [True, False]")                                                          \
  X(kIsFinite, IsFinite, is_finite, IsFiniteF, kFloatTypes, Bool, 1, 0, not_differentiable,                  \
    "x is neither infinite nor NaN. is_finite([inf, 1.]) == [False, True]")                                  \
  X(kTan, Tan, tan, TanF, kFloatAndComplexTypes, Same, 8, 0, tan_grad, "Tangent. tan([0.]) == [0.]")                 \
  X(kAsin, Asin, asin, AsinF, kFloatAndComplexTypes, Same, 8, 0, asin_grad,                                  \
    "Inverse sine. asin([1.]) == [1.5707964]")                                                               \
  X(kAcos, Acos, acos, AcosF, kFloatAndComplexTypes, Same, 8, 0, acos_grad,                                  \
    "Inverse cosine. acos([1.]) == [0.]")                                                                    \
  X(kAtan, Atan, atan, AtanF, kFloatAndComplexTypes, Same, 8, 0, atan_grad,                                  \
    "Inverse tangent. atan([0.]) == [0.]")                                                                   \
  X(kAsinh, Asinh, asinh, AsinhF, kFloatAndComplexTypes, Same, 8, 0, asinh_grad,                             \
    "Inverse hyperbolic sine. asinh([0.]) == [0.]")                                                          \
  X(kAcosh, Acosh, acosh, AcoshF, kFloatAndComplexTypes, Same, 8, 0, acosh_grad,                             \
    "Inverse hyperbolic cosine. acosh([1.]) == [0.]")                                                        \
  X(kAtanh, Atanh, atanh, AtanhF, kFloatAndComplexTypes, Same, 8, 0, atanh_grad,                             \
    "Inverse hyperbolic tangent. atanh([0.]) == [0.]")                                                       \
  X(kLgamma, Lgamma, lgamma, LgammaF, kFloatTypes, Same, 8, 0, lgamma_grad,                                  \
    "log |Gamma(x)|. lgamma([3.]) == [0.6931472]")                                                           \
  X(kDigamma, Digamma, digamma, DigammaF, kFloatTypes, Same, 8, 0, digamma_grad,                             \
    "d/dx log Gamma(x). digamma([1.]) == [-0.5772157]")                                                      \
  X(kErfinv, Erfinv, erfinv, ErfinvF, kFloatTypes, Same, 8, 0, erfinv_grad,                                  \
    "Inverse of erf on (-1, 1). erfinv([0.5]) == [0.47693628]")                                              \
  X(kSinh, Sinh, sinh, SinhF, kFloatAndComplexTypes, Same, 8, 0, sinh_grad,                                  \
    "Hyperbolic sine. sinh([0.]) == [0.]")                                                                   \
  X(kCosh, Cosh, cosh, CoshF, kFloatAndComplexTypes, Same, 8, 0, cosh_grad,                                  \
    "Hyperbolic cosine. cosh([0.]) == [1.]")                                                                 \
  X(kInvert, Invert, invert, InvertF, kIntTypes, Same, 1, 0, not_differentiable,                             \
    "Bitwise not. invert([0, 5]) == [-1, -6]")                                                               \
  X(kRint, Rint, rint, RoundF, kFloatTypes, Same, 1, 0, not_differentiable,                                  \
    "The nearest integer, half to even (Round's math). rint([0.5, 1.5, -1.7]) == [0., 2., -2.]")             \
  X(kErfc, Erfc, erfc, ErfcF, kFloatTypes, Same, 8, 0, erfc_grad,                                            \
    "1 - erf(x), accurate where erf(x) is near 1. erfc([0., 3.]) == [1., 2.2090497e-05]")

#define EMBER_BINARY_OPS(X)                                                                                  \
  X(kAdd, Add, add, AddF, kNumericAndComplexTypes, Same, 1, kCommutative, add_grad,                                    \
    "x + y with broadcasting. add([1, 2], 3) == [4, 5]")                                                     \
  X(kSub, Sub, subtract, SubF, kNumericAndComplexTypes, Same, 1, 0, sub_grad,                                          \
    "x - y with broadcasting. subtract([3], [1]) == [2]")                                                    \
  X(kMul, Mul, multiply, MulF, kNumericAndComplexTypes, Same, 1, kCommutative, mul_grad,                               \
    "x * y with broadcasting. multiply([2], [3]) == [6]")                                                    \
  X(kDiv, RealDiv, realdiv, DivF, kFloatAndComplexTypes, Same, 1, 0, real_div_grad,                                    \
    "x / y for floats. realdiv([1.], [4.]) == [0.25]")                                                       \
  X(kFloorDiv, FloorDiv, floordiv, FloorDivF, kNumericTypes, Same, 1, 0, not_differentiable,                 \
    "floor(x / y). floordiv([-7], [2]) == [-4]")                                                             \
  X(kFloorMod, FloorMod, floormod, FloorModF, kNumericTypes, Same, 8, 0, floor_mod_grad,                     \
    "x - floor(x / y) * y. floormod([-7], [2]) == [1]")                                                      \
  X(kPow, Pow, pow, PowF, kNumericAndComplexTypes, Same, 8, 0, pow_grad, "x ** y. pow([2.], [3.]) == [8.]")            \
  X(kMax, Maximum, maximum, MaxF, kNumericTypes, Same, 1, kCommutative, max_min_grad<true>,                  \
    "Element-wise max (NaN wins). maximum([1, 5], [3, 2]) == [3, 5]")                                        \
  X(kMin, Minimum, minimum, MinF, kNumericTypes, Same, 1, kCommutative, max_min_grad<false>,                 \
    "Element-wise min (NaN wins). minimum([1, 5], [3, 2]) == [1, 2]")                                        \
  X(kSquaredDiff, SquaredDifference, squared_difference, SquaredDiffF, kNumericAndComplexTypes, Same, 1,     \
    kCommutative, squared_difference_grad,                                                                   \
    "(x - y)^2; |x - y|^2 for complex. squared_difference([1.], [3.]) == [4.]")                              \
  X(kEqual, Equal, equal, EqualF, kAllTypesAndComplex, Bool, 1, kCommutative, not_differentiable,                      \
    "x == y. equal([1, 2], 2) == [False, True]")                                                             \
  X(kNotEqual, NotEqual, not_equal, NotEqualF, kAllTypesAndComplex, Bool, 1, kCommutative, not_differentiable,         \
    "x != y. not_equal([1, 2], 2) == [True, False]")                                                         \
  X(kLess, Less, less, LessF, kNumericTypes, Bool, 1, 0, not_differentiable,                                 \
    "x < y. less([1, 2], 2) == [True, False]")                                                               \
  X(kLessEqual, LessEqual, less_equal, LessEqualF, kNumericTypes, Bool, 1, 0, not_differentiable,            \
    "x <= y. less_equal([1, 3], 2) == [True, False]")                                                        \
  X(kGreater, Greater, greater, GreaterF, kNumericTypes, Bool, 1, 0, not_differentiable,                     \
    "x > y. greater([1, 3], 2) == [False, True]")                                                            \
  X(kGreaterEqual, GreaterEqual, greater_equal, GreaterEqualF, kNumericTypes, Bool, 1, 0,                    \
    not_differentiable, "x >= y. greater_equal([1, 2], 2) == [False, True]")                                 \
  X(kLogicalAnd, LogicalAnd, logical_and, LogicalAndF, kBoolType, Bool, 1, kCommutative, not_differentiable, \
    "Boolean and. logical_and([True], [False]) == [False]")                                                  \
  X(kLogicalOr, LogicalOr, logical_or, LogicalOrF, kBoolType, Bool, 1, kCommutative, not_differentiable,     \
    "Boolean or. logical_or([True], [False]) == [True]")                                                     \
  X(kAtan2, Atan2, atan2, Atan2F, kFloatTypes, Same, 8, 0, atan2_grad,                                       \
    "atan2(y, x): the angle of the point (x, y), in [-pi, pi]. atan2([1.], [0.]) == [1.5707964]")                                                                                           \
  X(kPolygamma, Polygamma, polygamma, PolygammaF, kFloatTypes, Same, 8, 0, polygamma_grad,                   \
    "The a-th derivative of digamma at x (a a non-negative integer). polygamma([1.], [1.]) == [1.644934]")  \
  X(kDivNoNan, DivNoNan, div_no_nan, DivNoNanF, kFloatAndComplexTypes, Same, 1, 0, div_no_nan_grad,          \
    "x / y, and 0 where y is 0. div_no_nan([3., 1.], [0., 2.]) == [0., 0.5]")                                \
  X(kMulNoNan, MulNoNan, mul_no_nan, MulNoNanF, kFloatAndComplexTypes, Same, 1, 0, mul_no_nan_grad,          \
    "x * y, and 0 where y is 0 even if x is inf or nan. mul_no_nan([inf, 2.], [0., 3.]) == [0., 6.]")        \
  X(kXlogy, Xlogy, xlogy, XlogyF, kFloatAndComplexTypes, Same, 8, 0, xlogy_grad,                             \
    "x * log(y), and 0 where x is 0. xlogy([0., 2.], [0., 1.]) == [0., 0.]")                                 \
  X(kXdivy, Xdivy, xdivy, XdivyF, kFloatAndComplexTypes, Same, 1, 0, xdivy_grad,                             \
    "x / y, and 0 where x is 0. xdivy([0., 1.], [0., 2.]) == [0., 0.5]")                                     \
  X(kXlog1py, Xlog1py, xlog1py, Xlog1pyF, kFloatAndComplexTypes, Same, 8, 0, xlog1py_grad,                   \
    "x * log1p(y), and 0 where x is 0. xlog1py([0., 2.], [-1., 0.]) == [0., 0.]")                        \
  X(kBitwiseAnd, BitwiseAnd, bitwise_and, BitwiseAndF, kIntTypes, Same, 1, kCommutative, not_differentiable, \
    "Bitwise and, broadcasting. bitwise_and([12], [10]) == [8]")                                             \
  X(kBitwiseOr, BitwiseOr, bitwise_or, BitwiseOrF, kIntTypes, Same, 1, kCommutative, not_differentiable,     \
    "Bitwise or, broadcasting. bitwise_or([12], [10]) == [14]")                                              \
  X(kBitwiseXor, BitwiseXor, bitwise_xor, BitwiseXorF, kIntTypes, Same, 1, kCommutative, not_differentiable, \
    "Bitwise exclusive or, broadcasting. bitwise_xor([12], [10]) == [6]")                                    \
  X(kLeftShift, LeftShift, left_shift, LeftShiftF, kIntTypes, Same, 1, 0, not_differentiable,                \
    "x << y, y clamped to [0, bits - 1], bits shifted out dropped. left_shift([1, 3], [2, 1]) == [4, 6]")   \
  X(kRightShift, RightShift, right_shift, RightShiftF, kIntTypes, Same, 1, 0, not_differentiable,            \
    "x >> y (arithmetic for signed x), y clamped to [0, bits - 1]. right_shift([-8, 8], [1, 2]) == [-4, 2]")
// clang-format on

// Inner loops of the element-wise ops. This file is compiled three times with EMBER_ISA set to baseline,
// avx2 and avx512 (see CMakeLists.txt); each copy fills its own table and elementwise.cc picks one at
// start-up. Loops are plain C++ written so GCC vectorises them; 16-bit floats compute in float.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/kernels/elementwise.h"

namespace ember::kernels::EMBER_ISA {

// Transcendentals: std:: for now; vmath.h replaces these with vectorisable polynomials.
template <typename X> X vexp(X x) { return std::exp(x); }
template <typename X> X vlog(X x) { return std::log(x); }
template <typename X> X vlog1p(X x) { return std::log1p(x); }
template <typename X> X vexpm1(X x) { return std::expm1(x); }
template <typename X> X vsin(X x) { return std::sin(x); }
template <typename X> X vcos(X x) { return std::cos(x); }
template <typename X> X vtanh(X x) { return std::tanh(x); }
template <typename X> X verf(X x) { return std::erf(x); }
template <typename X> X vsigmoid(X x) { return X(1) / (X(1) + std::exp(-x)); }
template <typename X> X velu(X x) { return x > X(0) ? x : std::expm1(x); }
template <typename X> X vsoftplus(X x) { return std::log1p(std::exp(-std::fabs(x))) + (x > X(0) ? x : X(0)); }

namespace {

template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<float16> {
  using type = float;
};
template <>
struct compute_type<bfloat16> {
  using type = float;
};
template <typename T>
using C = typename compute_type<T>::type;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// ---- unary functors: `template <class C> C operator()(C x)`; the result type R is given separately.
#define EMBER_UNARY(Name, expr)                   \
  struct Name {                                   \
    template <typename X>                         \
    auto operator()(X x) const {                  \
      return expr;                                \
    }                                             \
  };
EMBER_UNARY(NegF, -x)
EMBER_UNARY(AbsF, x < X(0) ? X(-x) : x)
EMBER_UNARY(SignF, X((x > X(0)) - (x < X(0))) + (x - x))  // x - x keeps NaN
EMBER_UNARY(ExpF, vexp(x))
EMBER_UNARY(LogF, vlog(x))
EMBER_UNARY(Log1pF, vlog1p(x))
EMBER_UNARY(Expm1F, vexpm1(x))
EMBER_UNARY(SqrtF, std::sqrt(x))
EMBER_UNARY(RsqrtF, X(1) / std::sqrt(x))
EMBER_UNARY(SquareF, X(x * x))
EMBER_UNARY(ReciprocalF, X(1) / x)
EMBER_UNARY(SinF, vsin(x))
EMBER_UNARY(CosF, vcos(x))
EMBER_UNARY(TanhF, vtanh(x))
EMBER_UNARY(SigmoidF, vsigmoid(x))
EMBER_UNARY(ReluF, x > X(0) ? x : X(0))
EMBER_UNARY(Relu6F, x > X(0) ? (x < X(6) ? x : X(6)) : X(0))
EMBER_UNARY(EluF, velu(x))
EMBER_UNARY(SoftplusF, vsoftplus(x))
EMBER_UNARY(ErfF, verf(x))
EMBER_UNARY(FloorF, std::floor(x))
EMBER_UNARY(CeilF, std::ceil(x))
EMBER_UNARY(RoundF, std::nearbyint(x))
EMBER_UNARY(LogicalNotF, !x)
EMBER_UNARY(IsNanF, x != x)
EMBER_UNARY(IsFiniteF, (x - x) == (x - x))
#undef EMBER_UNARY

// ---- binary functors
#define EMBER_BINARY(Name, expr)                  \
  struct Name {                                   \
    template <typename X>                         \
    auto operator()(X a, X b) const {             \
      return expr;                                \
    }                                             \
  };
EMBER_BINARY(AddF, X(a + b))
EMBER_BINARY(SubF, X(a - b))
EMBER_BINARY(MulF, X(a * b))
EMBER_BINARY(DivF, X(a / b))
EMBER_BINARY(SquaredDiffF, X((a - b) * (a - b)))
EMBER_BINARY(MaxF, (a > b || a != a) ? a : b)
EMBER_BINARY(MinF, (a < b || a != a) ? a : b)
EMBER_BINARY(EqualF, a == b)
EMBER_BINARY(NotEqualF, a != b)
EMBER_BINARY(LessF, a < b)
EMBER_BINARY(LessEqualF, a <= b)
EMBER_BINARY(GreaterF, a > b)
EMBER_BINARY(GreaterEqualF, a >= b)
EMBER_BINARY(LogicalAndF, a && b)
EMBER_BINARY(LogicalOrF, a || b)
#undef EMBER_BINARY

struct FloorDivF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      return std::floor(a / b);
    } else if constexpr (std::is_unsigned_v<X>) {
      return b == 0 ? X(0) : X(a / b);
    } else {
      if (b == 0) return X(0);  // the driver rejects integer division by zero before running
      X q = a / b;
      return X((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);
    }
  }
};
struct FloorModF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      X r = std::fmod(a, b);
      return (r != X(0) && ((r < X(0)) != (b < X(0)))) ? X(r + b) : r;
    } else if constexpr (std::is_unsigned_v<X>) {
      return b == 0 ? X(0) : X(a % b);
    } else {
      if (b == 0) return X(0);
      X r = X(a % b);
      return X((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    }
  }
};
struct PowF {
  template <typename X>
  X operator()(X a, X b) const {
    if constexpr (kIsFloat<X>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring; negative exponents are rejected by the driver, as in TensorFlow.
      X result = 1, base = a;
      auto e = b;
      while (e > 0) {
        if (e & 1) result = X(result * base);
        base = X(base * base);
        e = X(e >> 1);
      }
      return result;
    }
  }
};

template <typename T, typename R, typename F>
void unary_loop(const void* in_v, void* out_v, int64_t n) {
  const T* __restrict in = static_cast<const T*>(in_v);
  R* __restrict out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(static_cast<C<T>>(in[i])));
}

template <typename T, typename R, typename F>
void binary_vv(const void* a_v, const void* b_v, void* out_v, int64_t n) {
  const T* __restrict a = static_cast<const T*>(a_v);
  const T* __restrict b = static_cast<const T*>(b_v);
  R* __restrict out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(static_cast<C<T>>(a[i]), static_cast<C<T>>(b[i])));
}
template <typename T, typename R, typename F>
void binary_sv(const void* a_v, const void* b_v, void* out_v, int64_t n) {
  const C<T> a = static_cast<C<T>>(*static_cast<const T*>(a_v));
  const T* __restrict b = static_cast<const T*>(b_v);
  R* __restrict out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(a, static_cast<C<T>>(b[i])));
}
template <typename T, typename R, typename F>
void binary_vs(const void* a_v, const void* b_v, void* out_v, int64_t n) {
  const T* __restrict a = static_cast<const T*>(a_v);
  const C<T> b = static_cast<C<T>>(*static_cast<const T*>(b_v));
  R* __restrict out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(static_cast<C<T>>(a[i]), b));
}

template <typename F, bool kBoolResult>
void set_unary(ElementwiseTables& t, UnaryOp op, DTypeSet set) {
  auto one = [&]<typename T>() {
    using R = std::conditional_t<kBoolResult, bool, T>;
    t.unary[static_cast<int>(op)][static_cast<int>(dtype_of<T>::value)] = &unary_loop<T, R, F>;
  };
  for (int i = 0; i < kNumDTypes; ++i)
    if (set & (1u << i)) visit_dtype(static_cast<DType>(i), one);
}

template <typename F, bool kBoolResult>
void set_binary(ElementwiseTables& t, BinaryOp op, DTypeSet set) {
  auto one = [&]<typename T>() {
    using R = std::conditional_t<kBoolResult, bool, T>;
    BinaryLoops& loops = t.binary[static_cast<int>(op)][static_cast<int>(dtype_of<T>::value)];
    loops.vv = &binary_vv<T, R, F>;
    loops.sv = &binary_sv<T, R, F>;
    loops.vs = &binary_vs<T, R, F>;
  };
  for (int i = 0; i < kNumDTypes; ++i)
    if (set & (1u << i)) visit_dtype(static_cast<DType>(i), one);
}

}  // namespace

void fill_elementwise_tables(ElementwiseTables& t) {
  using U = UnaryOp;
  using B = BinaryOp;
  constexpr DTypeSet kF = kFloatTypes;
  constexpr DTypeSet kSN = kSignedNumericTypes;
  constexpr DTypeSet kN = kNumericTypes;
  set_unary<NegF, false>(t, U::kNeg, kSN);
  set_unary<AbsF, false>(t, U::kAbs, kSN);
  set_unary<SignF, false>(t, U::kSign, kSN);
  set_unary<ExpF, false>(t, U::kExp, kF);
  set_unary<LogF, false>(t, U::kLog, kF);
  set_unary<Log1pF, false>(t, U::kLog1p, kF);
  set_unary<Expm1F, false>(t, U::kExpm1, kF);
  set_unary<SqrtF, false>(t, U::kSqrt, kF);
  set_unary<RsqrtF, false>(t, U::kRsqrt, kF);
  set_unary<SquareF, false>(t, U::kSquare, kN);
  set_unary<ReciprocalF, false>(t, U::kReciprocal, kF);
  set_unary<SinF, false>(t, U::kSin, kF);
  set_unary<CosF, false>(t, U::kCos, kF);
  set_unary<TanhF, false>(t, U::kTanh, kF);
  set_unary<SigmoidF, false>(t, U::kSigmoid, kF);
  set_unary<ReluF, false>(t, U::kRelu, kN);
  set_unary<Relu6F, false>(t, U::kRelu6, kN);
  set_unary<EluF, false>(t, U::kElu, kF);
  set_unary<SoftplusF, false>(t, U::kSoftplus, kF);
  set_unary<ErfF, false>(t, U::kErf, kF);
  set_unary<FloorF, false>(t, U::kFloor, kF);
  set_unary<CeilF, false>(t, U::kCeil, kF);
  set_unary<RoundF, false>(t, U::kRound, kF);
  set_unary<LogicalNotF, true>(t, U::kLogicalNot, kBoolType);
  set_unary<IsNanF, true>(t, U::kIsNan, kF);
  set_unary<IsFiniteF, true>(t, U::kIsFinite, kF);

  set_binary<AddF, false>(t, B::kAdd, kN);
  set_binary<SubF, false>(t, B::kSub, kN);
  set_binary<MulF, false>(t, B::kMul, kN);
  set_binary<DivF, false>(t, B::kDiv, kF);
  set_binary<FloorDivF, false>(t, B::kFloorDiv, kN);
  set_binary<FloorModF, false>(t, B::kFloorMod, kN);
  set_binary<PowF, false>(t, B::kPow, kN);
  set_binary<MaxF, false>(t, B::kMax, kN);
  set_binary<MinF, false>(t, B::kMin, kN);
  set_binary<SquaredDiffF, false>(t, B::kSquaredDiff, kN);
  set_binary<EqualF, true>(t, B::kEqual, kAllTypes);
  set_binary<NotEqualF, true>(t, B::kNotEqual, kAllTypes);
  set_binary<LessF, true>(t, B::kLess, kN);
  set_binary<LessEqualF, true>(t, B::kLessEqual, kN);
  set_binary<GreaterF, true>(t, B::kGreater, kN);
  set_binary<GreaterEqualF, true>(t, B::kGreaterEqual, kN);
  set_binary<LogicalAndF, true>(t, B::kLogicalAnd, kBoolType);
  set_binary<LogicalOrF, true>(t, B::kLogicalOr, kBoolType);
}

}  // namespace ember::kernels::EMBER_ISA

// The JIT's library of element functions, compiled by clang to LLVM bitcode at build time (never into
// ember_core) and embedded in the library (jit/library.S). A native fused kernel (jit/codegen.cc) calls
// one of these per instruction of its program and LLVM inlines them into one loop, so each element is
// computed by the same functors (kernels/elementwise_functors.h) and the same polynomials (vmath.h) as the
// interpreter's loops, with the same conversions: 16-bit floats widen to float and round back after every
// op, integers wrap, bools are 0 or 1.
//
// Every value crosses a function boundary in its storage type (S<T>: a uint16_t for the 16-bit floats, a
// uint8_t for bool), so the code generator needs no knowledge of ember's C++ types. Functions are named
// ember_jit_u_<UnaryOp enumerator>_<DType enumerator> and ember_jit_b_<BinaryOp>_<DType>; a combination
// the interpreter cannot fuse has a function that returns zero and is never called. Native loops
// (jit/loop_codegen.cc) also call the predicates (comparisons, IsNan...) over every dtype,
// ember_jit_pu_* and ember_jit_pb_*, which a fused program never holds (its values share one dtype).
//
// Built twice: with EMBER_VM_ASSUME_FMA (for CPUs where the interpreter runs its AVX2 or AVX-512 copy, which
// use FMA) and without (the baseline copy).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/kernels/compute_type.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels::jit_library {

#include "ember/kernels/vmath.h"  // NOLINT: inside this namespace on purpose (see its header)

namespace {

#include "ember/kernels/elementwise_functors.h"  // NOLINT: inside this namespace on purpose

template <typename T>
struct StorageOf {
  using type = T;
};
template <>
struct StorageOf<float16> {
  using type = uint16_t;
};
template <>
struct StorageOf<bfloat16> {
  using type = uint16_t;
};
template <>
struct StorageOf<bool> {
  using type = uint8_t;
};
template <typename T>
using S = typename StorageOf<T>::type;

template <typename T>
inline T load(S<T> s) {
  if constexpr (std::is_same_v<T, bool>)
    return s != 0;
  else
    return __builtin_bit_cast(T, s);
}
template <typename T>
inline S<T> store(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return static_cast<uint8_t>(v);
  else
    return __builtin_bit_cast(S<T>, v);
}

template <typename T, DTypeSet kSet, bool kBool>
constexpr bool kExists = (kSet & dtype_bit(dtype_of<T>::value)) != 0 && (!kBool || std::is_same_v<T, bool>);

// Note [Shorter exact sequences]
// Maximum and minimum with NaN propagation, written so that GCC vectorises them, become four vector
// instructions once LLVM has them. Here they are written in forms with the very same results for every
// input, NaNs and signed zeros included, that LLVM lowers to three: isnan(a) ? a : (a > b ? a : b), whose
// inner select is x86's maxps (which returns b when either is NaN or both are zero).
// tests/cpp/jit/jit_test.cc checks them bit for bit. One exception under DAZ (core/float_env.h): where
// both are zero or subnormal, maxps returns b read as zero, the interpreter b's bits (docs/subnormals.md).
template <typename T, typename F>
constexpr bool kShorterFloat = std::is_floating_point_v<T> &&
                               (std::is_same_v<F, MaxF> || std::is_same_v<F, MinF>);

template <typename T, typename F, DTypeSet kSet, bool kBool>
inline S<T> unary(S<T> x) {
  if constexpr (kExists<T, kSet, kBool>) {
    F f;
    return store<T>(static_cast<T>(f(static_cast<compute_t<T>>(load<T>(x)))));
  } else {
    return S<T>{};
  }
}

template <typename T, typename F, DTypeSet kSet, bool kBool>
inline S<T> binary(S<T> a, S<T> b) {
  if constexpr (kExists<T, kSet, kBool> && kShorterFloat<T, F>) {
    const T x = load<T>(a), y = load<T>(b);
    if constexpr (std::is_same_v<F, MaxF>)
      return store<T>(x != x ? x : (x > y ? x : y));
    else
      return store<T>(x != x ? x : (x < y ? x : y));
  } else if constexpr (kExists<T, kSet, kBool>) {
    F f;
    return store<T>(
        static_cast<T>(f(static_cast<compute_t<T>>(load<T>(a)), static_cast<compute_t<T>>(load<T>(b)))));
  } else {
    return S<T>{};
  }
}

// A predicate (an op whose result is bool) over another dtype, for native loops (jit/loop_codegen.cc):
// the operands in their storage type, the result a bool's byte, 0 or 1, as the interpreter's loops write it.
template <typename T, typename F, DTypeSet kSet, bool kBool>
inline uint8_t predicate_unary(S<T> x) {
  if constexpr (kBool && (kSet & dtype_bit(dtype_of<T>::value)) != 0) {
    F f;
    return static_cast<uint8_t>(static_cast<bool>(f(static_cast<compute_t<T>>(load<T>(x)))));
  } else {
    return 0;
  }
}

template <typename T, typename F, DTypeSet kSet, bool kBool>
inline uint8_t predicate_binary(S<T> a, S<T> b) {
  if constexpr (kBool && (kSet & dtype_bit(dtype_of<T>::value)) != 0) {
    F f;
    return static_cast<uint8_t>(
        static_cast<bool>(f(static_cast<compute_t<T>>(load<T>(a)), static_cast<compute_t<T>>(load<T>(b)))));
  } else {
    return 0;
  }
}

}  // namespace

#define EMBER_JIT_IS_BOOL(Result) (ElementwiseResult::k##Result == ElementwiseResult::kBool)

#define EMBER_JIT_DTYPES(Y, ...)      \
  Y(kFloat16, float16, __VA_ARGS__)   \
  Y(kBFloat16, bfloat16, __VA_ARGS__) \
  Y(kFloat32, float, __VA_ARGS__)     \
  Y(kFloat64, double, __VA_ARGS__)    \
  Y(kInt8, int8_t, __VA_ARGS__)       \
  Y(kInt16, int16_t, __VA_ARGS__)     \
  Y(kInt32, int32_t, __VA_ARGS__)     \
  Y(kInt64, int64_t, __VA_ARGS__)     \
  Y(kUInt8, uint8_t, __VA_ARGS__)     \
  Y(kBool, bool, __VA_ARGS__)

// Per row and dtype: ember_jit_u_<UnaryOp>_<DType> / ember_jit_b_<BinaryOp>_<DType>, which keep the dtype,
// and the predicates ember_jit_pu_* / ember_jit_pb_*, which return a bool's byte (zero for a row whose
// result is not bool, never called).
template <typename T>
using Byte = uint8_t;
#define EMBER_JIT_UNARY_FN(D, T, prefix, Ret, helper, Enum, Math, Types, Result) \
  extern "C" Ret<T> ember_jit_##prefix##_##Enum##_##D(S<T> x) {                  \
    return helper<T, Math, Types, EMBER_JIT_IS_BOOL(Result)>(x);                 \
  }
#define EMBER_JIT_BINARY_FN(D, T, prefix, Ret, helper, Enum, Math, Types, Result) \
  extern "C" Ret<T> ember_jit_##prefix##_##Enum##_##D(S<T> a, S<T> b) {           \
    return helper<T, Math, Types, EMBER_JIT_IS_BOOL(Result)>(a, b);               \
  }
#define EMBER_JIT_UNARY_ROW(Enum, Op, api, Math, Types, Result, ...)           \
  EMBER_JIT_DTYPES(EMBER_JIT_UNARY_FN, u, S, unary, Enum, Math, Types, Result) \
  EMBER_JIT_DTYPES(EMBER_JIT_UNARY_FN, pu, Byte, predicate_unary, Enum, Math, Types, Result)
#define EMBER_JIT_BINARY_ROW(Enum, Op, api, Math, Types, Result, ...)            \
  EMBER_JIT_DTYPES(EMBER_JIT_BINARY_FN, b, S, binary, Enum, Math, Types, Result) \
  EMBER_JIT_DTYPES(EMBER_JIT_BINARY_FN, pb, Byte, predicate_binary, Enum, Math, Types, Result)
EMBER_UNARY_OPS(EMBER_JIT_UNARY_ROW)
EMBER_BINARY_OPS(EMBER_JIT_BINARY_ROW)

// Float sin / cos with FMA (Note [Float sin/cos] in vmath.h): the interpreter picks the argument reduction
// per block of 64 elements, the float one when every |x| of the block is below 2^16. A kernel does the
// same: it asks ember_jit_near_* of the block's operands, then runs the block with ember_jit_{sin,cos}_near_*
// or with the plain functions above.
#if EMBER_VM_HAS_FMA_FOR_JIT
template <typename T>
inline uint8_t near_block(const S<T>* x, int64_t n) {
  uint32_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = vm_f2u(static_cast<float>(load<T>(x[i]))) & 0x7fffffffu;
    top = a > top ? a : top;
  }
  return top < vm_f2u(kVmSinCosFloatMax);
}
template <typename T, bool kCos>
inline S<T> sincos_near(S<T> x) {
  return store<T>(static_cast<T>(vm_sincos_f_bounded<kCos>(static_cast<float>(load<T>(x)))));
}
#define EMBER_JIT_NEAR(D, T)                                                                      \
  extern "C" uint8_t ember_jit_near_##D(const S<T>* x, int64_t n) { return near_block<T>(x, n); } \
  extern "C" S<T> ember_jit_sin_near_##D(S<T> x) { return sincos_near<T, false>(x); }             \
  extern "C" S<T> ember_jit_cos_near_##D(S<T> x) { return sincos_near<T, true>(x); }
EMBER_JIT_NEAR(kFloat16, float16)
EMBER_JIT_NEAR(kBFloat16, bfloat16)
EMBER_JIT_NEAR(kFloat32, float)
#endif

}  // namespace ember::kernels::jit_library

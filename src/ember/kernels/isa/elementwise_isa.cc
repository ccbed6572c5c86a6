// Inner loops of the element-wise ops. This file is compiled three times with EMBER_ISA set to baseline,
// avx2 and avx512 (see CMakeLists.txt); each copy fills its own table and elementwise.cc picks one at
// start-up. Loops are plain C++ written so GCC vectorises them; 16-bit floats compute in float.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/kernels/compute_type.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels::EMBER_ISA {

#include "ember/kernels/vmath.h"  // NOLINT: deliberately inside the ISA namespace (see its header)

namespace {

#include "ember/kernels/elementwise_functors.h"  // NOLINT: inside this namespace on purpose

template <typename F>
concept HasFloatArray = requires(const float* x, float* y, int64_t n) {
  F::array(x, y, n);
};

template <typename T, typename R, typename F>
void unary_loop(const void* in_v, void* out_v, int64_t n) {
  if constexpr (HasFloatArray<F> && std::is_same_v<T, float> && std::is_same_v<R, float>) {
    F::array(static_cast<const float*>(in_v), static_cast<float*>(out_v), n);  // in == out is fine there
  } else if constexpr (HasFloatArray<F> && kIsHalf<T> && std::is_same_v<R, T>) {
    // 16-bit floats compute in float: widen a chunk, run the array form on it in place, round back.
    const T* in = static_cast<const T*>(in_v);
    R* out = static_cast<R*>(out_v);
    constexpr int64_t kChunk = 256;
    alignas(64) float buf[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t len = std::min(kChunk, n - i);
      for (int64_t j = 0; j < len; ++j) buf[j] = static_cast<float>(in[i + j]);
      F::array(buf, buf, len);
      for (int64_t j = 0; j < len; ++j) out[i + j] = static_cast<R>(buf[j]);
    }
  } else {
    const T* __restrict in = static_cast<const T*>(in_v);
    R* __restrict out = static_cast<R*>(out_v);
    F f;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(static_cast<C<T>>(in[i])));
  }
}

template <typename T, typename R, typename F>
void binary_vv(const void* a_v, const void* b_v, void* out_v, int64_t n) {
  const T* __restrict a = static_cast<const T*>(a_v);
  const T* __restrict b = static_cast<const T*>(b_v);
  R* __restrict out = static_cast<R*>(out_v);
  F f;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<R>(f(static_cast<C<T>>(a[i]), static_cast<C<T>>(b[i])));
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

// Only the dtypes in kSet are instantiated: the math functors need not compile for every type.
template <typename F, bool kBoolResult, DTypeSet kSet>
void set_unary(ElementwiseTables& t, UnaryOp op) {
  auto one = [&]<typename T>() {
    using R = std::conditional_t<kBoolResult, bool, T>;
    t.unary[static_cast<int>(op)][static_cast<int>(dtype_of<T>::value)] = &unary_loop<T, R, F>;
  };
  for (int i = 0; i < kNumDTypes; ++i)
    if (kSet & (1u << i)) visit_dtype<kSet>(static_cast<DType>(i), one);
}

template <typename F, bool kBoolResult, DTypeSet kSet>
void set_binary(ElementwiseTables& t, BinaryOp op) {
  auto one = [&]<typename T>() {
    using R = std::conditional_t<kBoolResult, bool, T>;
    BinaryLoops& loops = t.binary[static_cast<int>(op)][static_cast<int>(dtype_of<T>::value)];
    loops.vv = &binary_vv<T, R, F>;
    loops.sv = &binary_sv<T, R, F>;
    loops.vs = &binary_vs<T, R, F>;
  };
  for (int i = 0; i < kNumDTypes; ++i)
    if (kSet & (1u << i)) visit_dtype<kSet>(static_cast<DType>(i), one);
}

}  // namespace

void fill_elementwise_tables(ElementwiseTables& t) {
// Complex loops are not per-ISA: kernels/complex_elementwise.cc fills them (Note [Complex kernels]).
#define EMBER_SET(set_fn, Kind, Enum, Math, Types, Result) \
  set_fn<Math, ElementwiseResult::k##Result == ElementwiseResult::kBool, (Types) & ~kComplexTypes>(t, Kind::Enum);
#define EMBER_SET_UNARY(Enum, Op, api, Math, Types, Result, ...) \
  EMBER_SET(set_unary, UnaryOp, Enum, Math, Types, Result)
#define EMBER_SET_BINARY(Enum, Op, api, Math, Types, Result, ...) \
  EMBER_SET(set_binary, BinaryOp, Enum, Math, Types, Result)
  EMBER_UNARY_OPS(EMBER_SET_UNARY)
  EMBER_BINARY_OPS(EMBER_SET_BINARY)
#undef EMBER_SET_BINARY
#undef EMBER_SET_UNARY
#undef EMBER_SET
}

}  // namespace ember::kernels::EMBER_ISA

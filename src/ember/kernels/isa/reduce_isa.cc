// Inner loops of the reductions (driver: kernels/reduce.cc). Compiled three times with EMBER_ISA set to
// baseline, avx2 and avx512; each copy fills its own table. Loops are plain C++ that GCC vectorises: a
// contiguous run is reduced into an array of independent lane accumulators (no reassociation needed, so
// no -ffast-math), a column reduction combines whole rows into a vector of accumulators.
//
// Everything here has internal linkage and no std:: algorithm is instantiated: an inline function with
// external linkage compiled for AVX-512 could otherwise be picked by the linker for baseline code.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/kernels/compute_type.h"
#include "ember/kernels/reduce.h"

namespace ember::kernels::EMBER_ISA {

// LogSumExp's exp/log: the vectorisable polynomials of vmath.h (included per namespace, by its contract).
#if __has_include("ember/kernels/vmath.h")
namespace vm {
#include "ember/kernels/vmath.h"
}  // namespace vm
static inline float exp_(float x) { return vm::vexp(x); }
static inline double exp_(double x) { return vm::vexp(x); }
#else
static inline float exp_(float x) { return std::exp(x); }
static inline double exp_(double x) { return std::exp(x); }
#endif

namespace {

template <typename T>
using C = compute_t<T>;

template <typename T>
constexpr bool kHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <typename T>
constexpr bool kFloat = std::is_floating_point_v<C<T>>;  // 16-bit floats included

// float16 -> float without branches, so that loops over it vectorise: shifting the exponent/mantissa
// into float position and scaling by 2^112 rebiases the exponent and turns subnormal halves into normal
// floats exactly; infinities and NaNs (exponent all ones) get the float exponent all ones instead.
inline float half_to_float(uint16_t h) {
  uint32_t em = h & 0x7fffu;
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  float scaled = __builtin_bit_cast(float, em << 13) * 0x1p112f;
  uint32_t bits = __builtin_bit_cast(uint32_t, scaled);
  bits = em >= 0x7c00u ? ((em << 13) | 0x7f800000u) : bits;
  return __builtin_bit_cast(float, bits | sign);
}

template <typename T>
inline C<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, float16>) {
    return half_to_float(v.bits);
  } else {
    return static_cast<C<T>>(v);
  }
}
template <typename T, typename A>
inline T from_acc(A a) {
  if constexpr (kHalf<T>) {
    return T(static_cast<float>(a));
  } else if constexpr (std::is_same_v<T, bool>) {
    return a != 0;
  } else {
    return static_cast<T>(a);  // integers: modular, so a wrapped 64-bit sum wraps like T
  }
}

// Independent accumulators per contiguous run: enough vector registers to hide the add latency.
template <typename A>
constexpr int kLanes = sizeof(A) >= 8 ? 16 : (sizeof(A) == 4 ? 32 : 64);

// ---- Ops: accumulator type A, identity, load (T -> A), combine, finish (A -> T given the count).

// Integers accumulate in uint64_t: wrapping is defined, and truncating to T gives T's wrapped sum.
template <typename T>
using SumAcc = std::conditional_t<kFloat<T>, C<T>, uint64_t>;

template <typename T>
struct SumF {
  using A = SumAcc<T>;
  static A identity() { return A(0); }
  static A load(T v) {
    if constexpr (kFloat<T>) {
      return to_compute(v);
    } else {
      return static_cast<A>(static_cast<int64_t>(v));
    }
  }
  static A combine(A a, A b) { return a + b; }
  static T finish(A a, int64_t) { return from_acc<T>(a); }
};

template <typename T>
struct MeanF : SumF<T> {
  using A = SumAcc<T>;
  static T finish(A a, int64_t count) {
    if constexpr (kFloat<T>) {
      return from_acc<T>(a / static_cast<A>(count));  // an empty mean is 0/0 = NaN, as TensorFlow
    } else if constexpr (std::is_signed_v<T>) {
      return count == 0 ? T(0) : static_cast<T>(static_cast<int64_t>(a) / count);
    } else {
      return count == 0 ? T(0) : static_cast<T>(a / static_cast<uint64_t>(count));
    }
  }
};

template <typename T>
struct ProdF : SumF<T> {
  using A = SumAcc<T>;
  static A identity() { return A(1); }
  static A combine(A a, A b) { return a * b; }
};

// Max and Min propagate NaN (as Maximum/Minimum and NumPy do): once a lane holds NaN it keeps it.
template <typename T>
struct MaxF {
  using A = C<T>;
  static A identity() {
    if constexpr (kFloat<T>) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();
    }
  }
  static A load(T v) { return to_compute(v); }
  static A combine(A a, A b) {
    if constexpr (kFloat<T>) {
      return (b > a || b != b) ? b : a;
    } else {
      return b > a ? b : a;
    }
  }
  static T finish(A a, int64_t) { return from_acc<T>(a); }
};

template <typename T>
struct MinF : MaxF<T> {
  using A = C<T>;
  static A identity() {
    if constexpr (kFloat<T>) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  }
  static A combine(A a, A b) {
    if constexpr (kFloat<T>) {
      return (b < a || b != b) ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
};

template <typename T>
struct AnyF {
  using A = uint8_t;
  static A identity() { return 0; }
  static A load(T v) { return static_cast<A>(v); }
  static A combine(A a, A b) { return a | b; }
  static T finish(A a, int64_t) { return a != 0; }
};

template <typename T>
struct AllF : AnyF<T> {
  using A = uint8_t;
  static A identity() { return 1; }
  static A combine(A a, A b) { return a & b; }
};

// ---- Generic loops over an op.

template <typename T, typename Op>
inline typename Op::A reduce_run(const T* __restrict p, int64_t n) {
  using A = typename Op::A;
  constexpr int L = kLanes<A>;
  A result = Op::identity();
  int64_t i = 0;
  if (n >= L) {
    A lane[L];
    for (int j = 0; j < L; ++j) lane[j] = Op::identity();
    for (; i + L <= n; i += L) {
      for (int j = 0; j < L; ++j) lane[j] = Op::combine(lane[j], Op::load(p[i + j]));
    }
    for (int j = 0; j < L; ++j) result = Op::combine(result, lane[j]);
  }
  for (; i < n; ++i) result = Op::combine(result, Op::load(p[i]));
  return result;
}

template <typename Op>
void init_loop(void* acc_v, int64_t n) {
  auto* acc = static_cast<typename Op::A*>(acc_v);
  for (int64_t i = 0; i < n; ++i) acc[i] = Op::identity();
}

// Many short contiguous rows (a sum over the last axis of a [N, 4] tensor): with the row length known at
// compile time the compiler vectorises across rows with permutes instead of reducing each row alone.
template <typename T, typename Op, int N>
void short_rows(const T* __restrict in, int64_t rows, typename Op::A* __restrict acc) {
  for (int64_t j = 0; j < rows; ++j) {
    typename Op::A s = Op::load(in[j * N]);
    for (int t = 1; t < N; ++t) s = Op::combine(s, Op::load(in[j * N + t]));
    acc[j] = Op::combine(acc[j], s);
  }
}

template <typename T, typename Op>
void row_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, void* acc_v) {
  const T* in = static_cast<const T*>(in_v);
  auto* acc = static_cast<typename Op::A*>(acc_v);
  if (stride == n && rows > 1) {
    switch (n) {
      case 2:
        return short_rows<T, Op, 2>(in, rows, acc);
      case 3:
        return short_rows<T, Op, 3>(in, rows, acc);
      case 4:
        return short_rows<T, Op, 4>(in, rows, acc);
      case 5:
        return short_rows<T, Op, 5>(in, rows, acc);
      case 6:
        return short_rows<T, Op, 6>(in, rows, acc);
      case 7:
        return short_rows<T, Op, 7>(in, rows, acc);
      case 8:
        return short_rows<T, Op, 8>(in, rows, acc);
      default:
        break;
    }
  }
  for (int64_t j = 0; j < rows; ++j) acc[j] = Op::combine(acc[j], reduce_run<T, Op>(in + j * stride, n));
}

// Combines `rows` rows into acc, four rows per pass so that acc is loaded and stored a quarter as often.
template <typename T, typename Op>
void combine_rows(const T* in, int64_t rows, int64_t stride, int64_t n, typename Op::A* __restrict acc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const T* __restrict p0 = in + r * stride;
    const T* __restrict p1 = p0 + stride;
    const T* __restrict p2 = p1 + stride;
    const T* __restrict p3 = p2 + stride;
    for (int64_t i = 0; i < n; ++i) {
      auto a = Op::combine(Op::load(p0[i]), Op::load(p1[i]));
      auto b = Op::combine(Op::load(p2[i]), Op::load(p3[i]));
      acc[i] = Op::combine(acc[i], Op::combine(a, b));
    }
  }
  for (; r < rows; ++r) {
    const T* __restrict p = in + r * stride;
    for (int64_t i = 0; i < n; ++i) acc[i] = Op::combine(acc[i], Op::load(p[i]));
  }
}

template <typename T, typename Op>
void col_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, void* acc_v) {
  using A = typename Op::A;
  const T* in = static_cast<const T*>(in_v);
  A* acc = static_cast<A*>(acc_v);
  // Few, contiguous columns (a sum over axis 0 of [N, 3]): view k consecutive rows as one wide row of
  // n * k elements, reduce those, then fold the k copies of each column.
  constexpr int64_t kWide = 128;
  if (n < 32 && stride == n && rows >= 4 * ((kWide + n - 1) / n)) {
    const int64_t k = (kWide + n - 1) / n, w = n * k;
    A wide[kWide + 32];
    for (int64_t i = 0; i < w; ++i) wide[i] = Op::identity();
    const int64_t wide_rows = rows / k;
    combine_rows<T, Op>(in, wide_rows, w, w, wide);
    for (int64_t q = 0; q < k; ++q)
      for (int64_t i = 0; i < n; ++i) acc[i] = Op::combine(acc[i], wide[q * n + i]);
    in += wide_rows * w;
    rows -= wide_rows * k;
  }
  combine_rows<T, Op>(in, rows, stride, n, acc);
}

template <typename Op>
void merge_loop(void* acc_v, const void* other_v, int64_t n) {
  using A = typename Op::A;
  A* __restrict acc = static_cast<A*>(acc_v);
  const A* __restrict other = static_cast<const A*>(other_v);
  for (int64_t i = 0; i < n; ++i) acc[i] = Op::combine(acc[i], other[i]);
}

template <typename T, typename Op>
void finalize_loop(const void* acc_v, int64_t n, int64_t count, void* out_v) {
  const auto* acc = static_cast<const typename Op::A*>(acc_v);
  T* out = static_cast<T*>(out_v);
  for (int64_t i = 0; i < n; ++i) out[i] = Op::finish(acc[i], count);
}

// ---- LogSumExp, second pass: sum of exp(x - shift), shift = the max where finite, else 0 (TensorFlow's
// reduce_logsumexp: all -inf gives log(0) = -inf, +inf gives inf, NaN gives NaN).

template <typename A>
void prepare_shift_loop(void* shift_v, int64_t n) {
  A* s = static_cast<A*>(shift_v);
  for (int64_t i = 0; i < n; ++i) s[i] = (s[i] - s[i] == A(0)) ? s[i] : A(0);
}

template <typename T>
void row_shifted_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, const void* shift_v,
                      void* acc_v) {
  using A = C<T>;
  constexpr int L = kLanes<A>;
  const A* shift = static_cast<const A*>(shift_v);
  A* acc = static_cast<A*>(acc_v);
  for (int64_t j = 0; j < rows; ++j) {
    const T* __restrict p = static_cast<const T*>(in_v) + j * stride;
    const A s = shift[j];
    A sum = 0;
    int64_t i = 0;
    if (n >= L) {
      A lane[L] = {};
      for (; i + L <= n; i += L) {
        for (int k = 0; k < L; ++k) lane[k] += exp_(to_compute(p[i + k]) - s);
      }
      for (int k = 0; k < L; ++k) sum += lane[k];
    }
    for (; i < n; ++i) sum += exp_(to_compute(p[i]) - s);
    acc[j] += sum;
  }
}

template <typename T>
void col_shifted_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, const void* shift_v,
                      void* acc_v) {
  using A = C<T>;
  const A* __restrict shift = static_cast<const A*>(shift_v);
  A* __restrict acc = static_cast<A*>(acc_v);
  for (int64_t r = 0; r < rows; ++r) {
    const T* __restrict p = static_cast<const T*>(in_v) + r * stride;
    for (int64_t i = 0; i < n; ++i) acc[i] += exp_(to_compute(p[i]) - shift[i]);
  }
}

template <typename T>
void finalize_shifted_loop(const void* acc_v, const void* shift_v, int64_t n, void* out_v) {
  using A = C<T>;
  const A* acc = static_cast<const A*>(acc_v);
  const A* shift = static_cast<const A*>(shift_v);
  T* out = static_cast<T*>(out_v);
  for (int64_t i = 0; i < n; ++i) out[i] = from_acc<T>(std::log(acc[i]) + shift[i]);
}

// ---- ArgMax / ArgMin. `better` is strict, so ties keep the earlier index. NaN never compares better, so
// NaNs are skipped and an all-NaN row gives index 0 (TensorFlow's CPU kernels; NumPy differs).

template <typename T, bool kMax>
struct ArgF {
  using B = C<T>;
  static B worst() {
    if constexpr (std::is_same_v<T, bool>) {
      return !kMax;
    } else if constexpr (kFloat<T>) {
      return kMax ? -std::numeric_limits<B>::infinity() : std::numeric_limits<B>::infinity();
    } else {
      return kMax ? std::numeric_limits<B>::lowest() : std::numeric_limits<B>::max();
    }
  }
  static bool better(B v, B best) { return kMax ? v > best : v < best; }
  // Inside a group of candidates NaN must rank last, or it would hide a real value from the final test.
  static bool beats(B v, B u) {
    if constexpr (kFloat<T>) {
      return better(v, u) || (u != u && v == v);
    } else {
      return better(v, u);
    }
  }
};

// The initial index is 0, not "none": a worst-valued best can only survive if every candidate equals
// it, and then index 0 of the first piece is the right answer; later pieces never win such ties.
template <typename T, bool kMax>
void arg_init_loop(void* best_v, int64_t* index, int64_t n) {
  using F = ArgF<T, kMax>;
  auto* best = static_cast<typename F::B*>(best_v);
  for (int64_t i = 0; i < n; ++i) best[i] = F::worst(), index[i] = 0;
}

// Row: first the extreme value with a vectorised reduction, then the first position holding it.
template <typename T, bool kMax>
void arg_row_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, int64_t r_base, void* best_v,
                  int64_t* index) {
  using F = ArgF<T, kMax>;
  using B = typename F::B;
  using Op = std::conditional_t<kMax, MaxF<T>, MinF<T>>;
  auto* best = static_cast<B*>(best_v);
  for (int64_t j = 0; j < rows; ++j) {
    const T* p = static_cast<const T*>(in_v) + j * stride;
    B m;
    if constexpr (std::is_same_v<T, bool>) {
      m = n > 0 ? p[0] : F::worst();
      for (int64_t i = 0; i < n; ++i) m = kMax ? (m || p[i]) : (m && p[i]);
    } else if constexpr (kFloat<T>) {
      m = F::worst();  // a select that skips NaN (the comparison is false), unlike Max/Min's reduction
      for (int64_t i = 0; i < n; ++i) m = F::better(to_compute(p[i]), m) ? to_compute(p[i]) : m;
    } else {
      m = reduce_run<T, Op>(p, n);
    }
    if (n == 0 || !F::better(m, best[j])) continue;
    int64_t pos = 0;
    while (pos < n && !(to_compute(p[pos]) == m)) ++pos;
    best[j] = m;
    index[j] = r_base + pos;
  }
}

template <typename T, bool kMax>
void arg_col_loop(const void* in_v, int64_t rows, int64_t stride, int64_t n, int64_t r_base, void* best_v,
                  int64_t* __restrict index) {
  using F = ArgF<T, kMax>;
  using B = typename F::B;
  B* __restrict best = static_cast<B*>(best_v);
  const T* in = static_cast<const T*>(in_v);
  int64_t r = 0;
  // Four rows per pass: the best of the four (earliest on ties) is found in registers first.
  for (; r + 4 <= rows; r += 4) {
    const T* __restrict p0 = in + r * stride;
    const T* __restrict p1 = p0 + stride;
    const T* __restrict p2 = p1 + stride;
    const T* __restrict p3 = p2 + stride;
    const int64_t at = r_base + r;
    for (int64_t i = 0; i < n; ++i) {
      B v0 = to_compute(p0[i]), v1 = to_compute(p1[i]), v2 = to_compute(p2[i]), v3 = to_compute(p3[i]);
      bool t01 = F::beats(v1, v0), t23 = F::beats(v3, v2);
      B b01 = t01 ? v1 : v0, b23 = t23 ? v3 : v2;
      int64_t i01 = t01 ? 1 : 0, i23 = t23 ? 3 : 2;
      bool t = F::beats(b23, b01);
      B b = t ? b23 : b01;
      int64_t ib = t ? i23 : i01;
      bool take = F::better(b, best[i]);
      best[i] = take ? b : best[i];
      index[i] = take ? at + ib : index[i];
    }
  }
  for (; r < rows; ++r) {
    const T* __restrict p = in + r * stride;
    const int64_t at = r_base + r;
    for (int64_t i = 0; i < n; ++i) {
      B v = to_compute(p[i]);
      bool take = F::better(v, best[i]);
      best[i] = take ? v : best[i];
      index[i] = take ? at : index[i];
    }
  }
}

template <typename T, bool kMax>
void arg_merge_loop(void* best_v, int64_t* index, const void* other_v, const int64_t* other_index,
                    int64_t n) {
  using F = ArgF<T, kMax>;
  using B = typename F::B;
  auto* best = static_cast<B*>(best_v);
  const auto* other = static_cast<const B*>(other_v);
  for (int64_t i = 0; i < n; ++i) {
    if (F::better(other[i], best[i])) best[i] = other[i], index[i] = other_index[i];
  }
}

// ---- Table filling.

template <typename T, template <typename> class OpT>
void set_reduce(ReduceTables& t, ReduceOp op) {
  using Op = OpT<T>;
  ReduceLoops& l = t.reduce[static_cast<int>(op)][static_cast<int>(dtype_of<T>::value)];
  l.acc_size = sizeof(typename Op::A);
  l.init = &init_loop<Op>;
  l.row = &row_loop<T, Op>;
  l.col = &col_loop<T, Op>;
  l.merge = &merge_loop<Op>;
  l.finalize = &finalize_loop<T, Op>;
}

template <typename T>
void set_logsumexp(ReduceTables& t) {
  ReduceLoops& l = t.reduce[static_cast<int>(ReduceOp::kLogSumExp)][static_cast<int>(dtype_of<T>::value)];
  using Sum = SumF<T>;
  l.acc_size = sizeof(C<T>);
  l.init = &init_loop<Sum>;
  l.merge = &merge_loop<Sum>;
  l.prepare_shift = &prepare_shift_loop<C<T>>;
  l.row_shifted = &row_shifted_loop<T>;
  l.col_shifted = &col_shifted_loop<T>;
  l.finalize_shifted = &finalize_shifted_loop<T>;
}

template <typename T, bool kMax>
void set_arg(ReduceTables& t) {
  ArgLoops& l = t.arg[kMax ? 1 : 0][static_cast<int>(dtype_of<T>::value)];
  l.best_size = sizeof(C<T>);
  l.init = &arg_init_loop<T, kMax>;
  l.row = &arg_row_loop<T, kMax>;
  l.col = &arg_col_loop<T, kMax>;
  l.merge = &arg_merge_loop<T, kMax>;
}

template <typename... Ts>
struct TypeList {};
using NumericTypes = TypeList<float16, bfloat16, float, double, int8_t, int16_t, int32_t, int64_t, uint8_t>;
using FloatTypes = TypeList<float16, bfloat16, float, double>;

template <typename... Ts>
void fill_numeric(ReduceTables& t, TypeList<Ts...>) {
  (set_reduce<Ts, SumF>(t, ReduceOp::kSum), ...);
  (set_reduce<Ts, MeanF>(t, ReduceOp::kMean), ...);
  (set_reduce<Ts, ProdF>(t, ReduceOp::kProd), ...);
  (set_reduce<Ts, MaxF>(t, ReduceOp::kMax), ...);
  (set_reduce<Ts, MinF>(t, ReduceOp::kMin), ...);
  (set_arg<Ts, true>(t), ...);
  (set_arg<Ts, false>(t), ...);
}

template <typename... Ts>
void fill_floats(ReduceTables& t, TypeList<Ts...>) {
  (set_logsumexp<Ts>(t), ...);
}

}  // namespace

void fill_reduce_tables(ReduceTables& t) {
  fill_numeric(t, NumericTypes{});
  fill_floats(t, FloatTypes{});
  set_reduce<bool, AnyF>(t, ReduceOp::kAny);
  set_reduce<bool, AllF>(t, ReduceOp::kAll);
  set_arg<bool, true>(t);
  set_arg<bool, false>(t);
}

}  // namespace ember::kernels::EMBER_ISA

// Sum, Mean and Prod of complex64 and complex128: the complex entries of the reduction tables (reduce.h).
// Plain loops over std::complex, compiled once (Note [Complex kernels] in complex_elementwise.cc);
// complex64 accumulates in complex64, as TensorFlow's does.
#include <complex>
#include <limits>

#include "ember/kernels/reduce.h"

namespace ember::kernels {
namespace {

template <typename C, bool kProd>
struct ComplexReduce {
  static C identity() { return kProd ? C(1) : C(0); }
  static C combine(C a, C b) { return kProd ? a * b : a + b; }

  static void init(void* acc, int64_t n) {
    C* a = static_cast<C*>(acc);
    for (int64_t i = 0; i < n; ++i) a[i] = identity();
  }
  static void row(const void* in_v, int64_t rows, int64_t stride, int64_t n, void* acc_v) {
    const C* in = static_cast<const C*>(in_v);
    C* acc = static_cast<C*>(acc_v);
    for (int64_t j = 0; j < rows; ++j) {
      C r = identity();
      const C* p = in + j * stride;
      for (int64_t i = 0; i < n; ++i) r = combine(r, p[i]);
      acc[j] = combine(acc[j], r);
    }
  }
  static void col(const void* in_v, int64_t rows, int64_t stride, int64_t n, void* acc_v) {
    const C* in = static_cast<const C*>(in_v);
    C* acc = static_cast<C*>(acc_v);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) acc[i] = combine(acc[i], in[r * stride + i]);
  }
  static void merge(void* acc_v, const void* other_v, int64_t n) {
    C* acc = static_cast<C*>(acc_v);
    const C* other = static_cast<const C*>(other_v);
    for (int64_t i = 0; i < n; ++i) acc[i] = combine(acc[i], other[i]);
  }
  template <bool kMean>
  static void finalize(const void* acc_v, int64_t n, int64_t count, void* out_v) {
    const C* acc = static_cast<const C*>(acc_v);
    C* out = static_cast<C*>(out_v);
    using R = typename C::value_type;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kMean)
        out[i] = count == 0 ? C(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN())
                            : acc[i] / static_cast<R>(count);
      else
        out[i] = acc[i];
    }
  }
};

template <typename C, bool kProd, bool kMean>
ReduceLoops loops() {
  using K = ComplexReduce<C, kProd>;
  ReduceLoops l;
  l.acc_size = sizeof(C);
  l.init = &K::init;
  l.row = &K::row;
  l.col = &K::col;
  l.merge = &K::merge;
  l.finalize = &K::template finalize<kMean>;
  return l;
}

template <typename C>
void fill_one(ReduceTables& t) {
  const int d = static_cast<int>(dtype_of<C>::value);
  t.reduce[static_cast<int>(ReduceOp::kSum)][d] = loops<C, false, false>();
  t.reduce[static_cast<int>(ReduceOp::kMean)][d] = loops<C, false, true>();
  t.reduce[static_cast<int>(ReduceOp::kProd)][d] = loops<C, true, false>();
}

}  // namespace

void fill_complex_reduce_tables(ReduceTables& t) {
  fill_one<complex64>(t);
  fill_one<complex128>(t);
}

}  // namespace ember::kernels

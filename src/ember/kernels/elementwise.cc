#include "ember/kernels/elementwise.h"

#include <algorithm>
#include <cstring>

#include "ember/core/parallel.h"

namespace ember::kernels {

namespace baseline {
void fill_elementwise_tables(ElementwiseTables& t);
}
namespace avx2 {
void fill_elementwise_tables(ElementwiseTables& t);
}
namespace avx512 {
void fill_elementwise_tables(ElementwiseTables& t);
}
void fill_complex_elementwise_tables(ElementwiseTables& t);  // kernels/complex_elementwise.cc

namespace {
struct Selected {
  ElementwiseTables tables;
  const char* isa;
  Selected() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      avx512::fill_elementwise_tables(tables);
      isa = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      avx2::fill_elementwise_tables(tables);
      isa = "avx2";
    } else {
      baseline::fill_elementwise_tables(tables);
      isa = "baseline";
    }
    fill_complex_elementwise_tables(tables);
  }
};
const Selected& selected() {
  static const Selected s;
  return s;
}

}  // namespace

namespace {

constexpr int64_t kChunkAlign = 64;  // elements: keeps chunks starting on cache-line boundaries

// Dimensions of a broadcast binary op after dropping size-1 dims and merging dims that are contiguous
// in all three tensors.
struct BroadcastPlan {
  int rank = 0;
  int64_t dims[kMaxRank];
  int64_t a_strides[kMaxRank];
  int64_t b_strides[kMaxRank];
};

BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  int rank = out.rank();
  int64_t sa[kMaxRank], sb[kMaxRank];
  {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      int ia = i - (rank - a.rank());
      int64_t d = ia >= 0 ? a.dim(ia) : 1;
      sa[i] = d == 1 ? 0 : s;
      s *= d;
    }
    s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      int ib = i - (rank - b.rank());
      int64_t d = ib >= 0 ? b.dim(ib) : 1;
      sb[i] = d == 1 ? 0 : s;
      s *= d;
    }
  }
  BroadcastPlan p;
  for (int i = 0; i < rank; ++i) {
    int64_t d = out.dim(i);
    if (d == 1) continue;
    if (p.rank > 0) {
      int j = p.rank - 1;
      // Merge with the previous dim when each operand's stride pattern is continuous across both.
      bool a_ok = (sa[i] == 0 && p.a_strides[j] == 0) || (sa[i] != 0 && p.a_strides[j] == sa[i] * d);
      bool b_ok = (sb[i] == 0 && p.b_strides[j] == 0) || (sb[i] != 0 && p.b_strides[j] == sb[i] * d);
      if (a_ok && b_ok) {
        p.dims[j] *= d;
        p.a_strides[j] = sa[i];
        p.b_strides[j] = sb[i];
        continue;
      }
    }
    p.dims[p.rank] = d;
    p.a_strides[p.rank] = sa[i];
    p.b_strides[p.rank] = sb[i];
    ++p.rank;
  }
  return p;
}

bool has_zero(const TensorImpl& t) {
  bool zero = false;
  visit_dtype<kIntTypes>(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) zero |= (p[i] == 0);
  });
  return zero;
}

bool has_negative(const TensorImpl& t) {
  bool neg = false;
  visit_dtype<kSignedIntTypes>(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) neg |= (p[i] < 0);
  });
  return neg;
}

}  // namespace

const ElementwiseTables& elementwise_tables() { return selected().tables; }
const char* elementwise_isa() { return selected().isa; }

Status run_unary(UnaryOp op, const TensorImpl& in, TensorImpl& out) {
  UnaryLoop loop = elementwise_tables().unary[static_cast<int>(op)][static_cast<int>(in.dtype())];
  if (loop == nullptr)
    return make_error(Code::kUnimplemented, "no kernel for dtype ", dtype_name(in.dtype()));
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.mutable_raw_data());
  size_t in_size = dtype_size(in.dtype()), out_size = dtype_size(out.dtype());
  int64_t n = in.num_elements();
  parallel_for((n + kChunkAlign - 1) / kChunkAlign, kChunkAlign * unary_cost(op), [&](int64_t b, int64_t e) {
    int64_t lo = b * kChunkAlign, hi = std::min(n, e * kChunkAlign);
    loop(src + lo * in_size, dst + lo * out_size, hi - lo);
  });
  return Status::OK();
}

Status run_binary(BinaryOp op, const TensorImpl& a, const TensorImpl& b, TensorImpl& out) {
  const BinaryLoops& loops = elementwise_tables().binary[static_cast<int>(op)][static_cast<int>(a.dtype())];
  if (loops.vv == nullptr)
    return make_error(Code::kUnimplemented, "no kernel for dtype ", dtype_name(a.dtype()));
  if (is_integer(a.dtype())) {
    if ((op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod) && has_zero(b))
      return invalid_argument("integer division by zero");
    if (op == BinaryOp::kPow && has_negative(b))
      return invalid_argument("integers to negative integer powers are not allowed");
  }
  int64_t n = out.num_elements();
  if (n == 0) return Status::OK();
  const char* pa = static_cast<const char*>(a.raw_data());
  const char* pb = static_cast<const char*>(b.raw_data());
  char* po = static_cast<char*>(out.mutable_raw_data());
  size_t in_size = dtype_size(a.dtype()), out_size = dtype_size(out.dtype());

  // Fast paths: same shape, or one side a single element.
  int64_t na = a.num_elements(), nb = b.num_elements();
  if ((na == n && nb == n) || (na == 1 && nb == n) || (na == n && nb == 1)) {
    BinaryLoop loop = na == nb ? loops.vv : (na == 1 ? loops.sv : loops.vs);
    if (na == 1 && nb == 1) loop = loops.vv;
    parallel_for((n + kChunkAlign - 1) / kChunkAlign, kChunkAlign, [&](int64_t lo_c, int64_t hi_c) {
      int64_t lo = lo_c * kChunkAlign, hi = std::min(n, hi_c * kChunkAlign);
      loop(na == 1 ? pa : pa + lo * in_size, nb == 1 ? pb : pb + lo * in_size, po + lo * out_size, hi - lo);
    });
    return Status::OK();
  }

  BroadcastPlan p = plan_broadcast(a.shape(), b.shape(), out.shape());
  // Innermost dim is done by one loop call; the outer dims are walked as a row index.
  int last = p.rank - 1;
  int64_t inner = p.dims[last];
  BinaryLoop loop = p.a_strides[last] == 0 ? loops.sv : (p.b_strides[last] == 0 ? loops.vs : loops.vv);
  int64_t rows = n / inner;
  parallel_for(rows, inner, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      int64_t rem = row, off_a = 0, off_b = 0;
      for (int d = last - 1; d >= 0; --d) {
        int64_t idx = rem % p.dims[d];
        rem /= p.dims[d];
        off_a += idx * p.a_strides[d];
        off_b += idx * p.b_strides[d];
      }
      loop(pa + off_a * in_size, pb + off_b * in_size, po + row * inner * out_size, inner);
    }
  });
  return Status::OK();
}

}  // namespace ember::kernels

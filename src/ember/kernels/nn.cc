#include "ember/kernels/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels {

namespace baseline {
void fill_nn_tables(NnTables& t);
}
namespace avx2 {
void fill_nn_tables(NnTables& t);
}
namespace avx512 {
void fill_nn_tables(NnTables& t);
}

const NnTables& nn_tables() {
  static const NnTables tables = [] {
    NnTables t;
    // One ISA decision for the whole library: follow the element-wise kernels' choice.
    std::string_view isa = elementwise_isa();
    if (isa == "avx512") {
      avx512::fill_nn_tables(t);
    } else if (isa == "avx2") {
      avx2::fill_nn_tables(t);
    } else {
      baseline::fill_nn_tables(t);
    }
    return t;
  }();
  return tables;
}

namespace {

// Cycles per element of a softmax-like row (exp, max, sum, scale), for parallel_for's grain.
constexpr int64_t kRowCost = 8;

/// The type a kernel computes in: double for float64, float for everything narrower.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
constexpr bool kComputesInPlace = std::is_same_v<T, Compute<T>>;

template <typename T, typename C>
void load(const T* src, C* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(src[i]);
}
template <typename T, typename C>
T to_storage(C v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}
template <typename T, typename C>
void store(const C* src, T* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_storage<T>(src[i]);
}

// The ISA row loops, chosen by compute type.
void softmax_row(const float* x, float* y, int64_t n, bool log) { nn_tables().softmax_row_f32(x, y, n, log); }
void softmax_row(const double* x, double* y, int64_t n, bool log) {
  nn_tables().softmax_row_f64(x, y, n, log);
}
void softmax_slab(const float* x, int64_t xs, float* y, int64_t ys, int64_t len, int64_t w, bool log,
                  float* mx, float* sm) {
  nn_tables().softmax_slab_f32(x, xs, y, ys, len, w, log, mx, sm);
}
void softmax_slab(const double* x, int64_t xs, double* y, int64_t ys, int64_t len, int64_t w, bool log,
                  double* mx, double* sm) {
  nn_tables().softmax_slab_f64(x, xs, y, ys, len, w, log, mx, sm);
}
float row_max(const float* x, int64_t n) { return nn_tables().max_f32(x, n); }
double row_max(const double* x, int64_t n) { return nn_tables().max_f64(x, n); }
float exp_shift_sum(const float* x, float shift, float* out, int64_t n) {
  return nn_tables().exp_shift_sum_f32(x, shift, out, n);
}
double exp_shift_sum(const double* x, double shift, double* out, int64_t n) {
  return nn_tables().exp_shift_sum_f64(x, shift, out, n);
}

/// Gives a kernel a compute-type view of rows of T: the rows themselves when T is the compute type,
/// otherwise a converted copy in a scratch buffer owned by one parallel_for chunk.
template <typename T>
class RowBuffer {
 public:
  using C = Compute<T>;
  explicit RowBuffer(int64_t n) {
    if constexpr (!kComputesInPlace<T>) buf_.resize(static_cast<size_t>(n));
  }
  const C* read(const T* src, int64_t n) {
    if constexpr (kComputesInPlace<T>) {
      return src;
    } else {
      load(src, buf_.data(), n);
      return buf_.data();
    }
  }
  /// Where to compute a row that will end up in `dst`; call finish() afterwards.
  C* write(T* dst) {
    if constexpr (kComputesInPlace<T>) {
      return dst;
    } else {
      return buf_.data();
    }
  }
  void finish(T* dst, int64_t n) {
    if constexpr (!kComputesInPlace<T>) store(buf_.data(), dst, n);
  }

 private:
  std::vector<C> buf_;
};

// ---- Softmax

template <typename T>
void softmax_contiguous(const T* in, T* out, int64_t rows, int64_t cols, bool log) {
  parallel_for(rows, cols * kRowCost, [&](int64_t begin, int64_t end) {
    RowBuffer<T> x_buf(cols), y_buf(cols);
    for (int64_t r = begin; r < end; ++r) {
      const auto* x = x_buf.read(in + r * cols, cols);
      auto* y = y_buf.write(out + r * cols);
      softmax_row(x, y, cols, log);
      y_buf.finish(out + r * cols, cols);
    }
  });
}

/// Softmax over axis 1 of [outer, len, inner] with inner > 1. Work items are (outer index, block of
/// inner columns); the block is sized so a slab of len x block stays around L2.
template <typename T>
void softmax_strided(const T* in, T* out, int64_t outer, int64_t len, int64_t inner, bool log) {
  using C = Compute<T>;
  constexpr int64_t kSlabElements = 32 * 1024;
  const int64_t block =
      std::min(inner, std::clamp<int64_t>(kSlabElements / std::max<int64_t>(len, 1), 16, 1024));
  const int64_t blocks = (inner + block - 1) / block;
  parallel_for(outer * blocks, len * block * kRowCost, [&](int64_t begin, int64_t end) {
    std::vector<C> mx(block), sm(block), x_slab, y_slab;
    if constexpr (!kComputesInPlace<T>) x_slab.resize(len * block), y_slab.resize(len * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / blocks, j0 = (item % blocks) * block, w = std::min(block, inner - j0);
      const T* x_t = in + o * len * inner + j0;
      T* y_t = out + o * len * inner + j0;
      if constexpr (kComputesInPlace<T>) {
        softmax_slab(x_t, inner, y_t, inner, len, w, log, mx.data(), sm.data());
      } else {
        for (int64_t a = 0; a < len; ++a) load(x_t + a * inner, x_slab.data() + a * w, w);
        softmax_slab(x_slab.data(), w, y_slab.data(), w, len, w, log, mx.data(), sm.data());
        for (int64_t a = 0; a < len; ++a) store(y_slab.data() + a * w, y_t + a * inner, w);
      }
    }
  });
}

// ---- Cross entropy

template <typename T>
void softmax_xent_rows(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows, int64_t cols) {
  using C = Compute<T>;
  parallel_for(rows, cols * (kRowCost + 4), [&](int64_t begin, int64_t end) {
    RowBuffer<T> l_buf(cols), z_buf(cols), g_buf(cols);
    for (int64_t r = begin; r < end; ++r) {
      if (cols == 0) {
        loss[r] = to_storage<T>(C(0));
        continue;
      }
      const C* l = l_buf.read(logits + r * cols, cols);
      const C* z = z_buf.read(labels + r * cols, cols);
      C* g = g_buf.write(backprop + r * cols);
      const C m = row_max(l, cols);
      const C s = exp_shift_sum(l, m, g, cols);
      const C ls = std::log(s), inv = C(1) / s;
      C acc = 0;
      for (int64_t j = 0; j < cols; ++j) {
        acc += z[j] * (ls - (l[j] - m));
        g[j] = g[j] * inv - z[j];
      }
      loss[r] = to_storage<T>(acc);
      g_buf.finish(backprop + r * cols, cols);
    }
  });
}

template <typename T, typename L>
void sparse_xent_rows(const T* logits, const L* labels, T* loss, T* backprop, int64_t rows, int64_t cols) {
  using C = Compute<T>;
  parallel_for(rows, cols * kRowCost, [&](int64_t begin, int64_t end) {
    RowBuffer<T> l_buf(cols), g_buf(cols);
    for (int64_t r = begin; r < end; ++r) {
      const C* l = l_buf.read(logits + r * cols, cols);
      C* g = g_buf.write(backprop + r * cols);
      const int64_t label = static_cast<int64_t>(labels[r]);  // validated in [0, cols) by the caller
      const C m = row_max(l, cols);
      const C s = exp_shift_sum(l, m, g, cols);
      const C inv = C(1) / s;
      for (int64_t j = 0; j < cols; ++j) g[j] *= inv;
      g[label] -= C(1);
      loss[r] = to_storage<T>(std::log(s) - (l[label] - m));
      g_buf.finish(backprop + r * cols, cols);
    }
  });
}

template <typename L>
Status check_labels(const L* labels, int64_t n, int64_t classes) {
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] >= 0 && static_cast<int64_t>(labels[i]) < classes) continue;
    // TensorFlow's wording, with the label values listed (abbreviated for big batches).
    std::string values;
    constexpr int64_t kMaxListed = 32;
    for (int64_t k = 0; k < std::min(n, kMaxListed); ++k) values += " " + std::to_string(labels[k]);
    if (n > kMaxListed) values += " ...";
    return invalid_argument("Received a label value of ", static_cast<int64_t>(labels[i]),
                            " which is outside the valid range of [0, ", classes,
                            ").  Label values:", values);
  }
  return Status::OK();
}

// ---- L2Loss

template <typename T>
double sum_of_squares(const T* x, int64_t n) {
  // Fixed blocks, each summed in double with fixed lanes (Note [Lanes] in nn_isa.cc), then added in
  // block order: the same bits whatever the thread count.
  constexpr int64_t kBlock = 8192;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(blocks, kBlock, [&](int64_t begin, int64_t end) {
    std::vector<float> buf;
    for (int64_t b = begin; b < end; ++b) {
      const int64_t lo = b * kBlock, len = std::min(n, lo + kBlock) - lo;
      if constexpr (std::is_same_v<T, float>) {
        partial[b] = nn_tables().sum_squares_f32(x + lo, len);
      } else if constexpr (std::is_same_v<T, double>) {
        partial[b] = nn_tables().sum_squares_f64(x + lo, len);
      } else {
        buf.resize(static_cast<size_t>(len));
        load(x + lo, buf.data(), len);
        partial[b] = nn_tables().sum_squares_f32(buf.data(), len);
      }
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

Status unsupported(DType d) {
  return make_error(Code::kUnimplemented, "no kernel for dtype ", dtype_name(d));
}

}  // namespace

Status softmax(const TensorImpl& in, int axis, bool log, TensorImpl& out) {
  const Shape& shape = in.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
  const int64_t len = shape.dim(axis);
  if (in.num_elements() == 0) return Status::OK();
  bool ok = visit_dtype<kFloatTypes>(in.dtype(), [&]<typename T>() {
    if (inner == 1) {
      softmax_contiguous(in.data<T>(), out.mutable_data<T>(), outer, len, log);
    } else {
      softmax_strided(in.data<T>(), out.mutable_data<T>(), outer, len, inner, log);
    }
  });
  return ok ? Status::OK() : unsupported(in.dtype());
}

Status bias_add(const TensorImpl& value, const TensorImpl& bias, bool channels_first, TensorImpl& out) {
  // The element-wise Add with NumPy broadcasting does the work: bias [C] broadcasts along the last
  // axis as it is; for NCHW it is viewed as [C, 1, ..., 1] so it lines up with dimension 1.
  const int rank = value.rank();
  if (!channels_first || rank <= 2) return run_binary(BinaryOp::kAdd, value, bias, out);
  Shape column({bias.num_elements()});
  for (int i = 2; i < rank; ++i) column.push_back(1);
  TensorRef view = TensorImpl::view(bias, column, 0);
  return run_binary(BinaryOp::kAdd, value, *view, out);
}

Status l2_loss(const TensorImpl& t, TensorImpl& out) {
  bool ok = visit_dtype<kFloatTypes>(t.dtype(), [&]<typename T>() {
    *out.mutable_data<T>() = to_storage<T>(sum_of_squares(t.data<T>(), t.num_elements()) / 2);
  });
  return ok ? Status::OK() : unsupported(t.dtype());
}

Status sigmoid_cross_entropy(const TensorImpl& labels, const TensorImpl& logits, TensorImpl& out) {
  const int64_t n = logits.num_elements();
  bool ok = visit_dtype<kFloatTypes>(logits.dtype(), [&]<typename T>() {
    using C = Compute<T>;
    const T* z = labels.data<T>();
    const T* x = logits.data<T>();
    T* y = out.mutable_data<T>();
    parallel_for(n, 24, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const C xi = static_cast<C>(x[i]), zi = static_cast<C>(z[i]);
        // max(x, 0) - x z + log(1 + e^-|x|): never exponentiates a positive number.
        y[i] = to_storage<T>((xi > C(0) ? xi : C(0)) - xi * zi + std::log1p(std::exp(-std::abs(xi))));
      }
    });
  });
  return ok ? Status::OK() : unsupported(logits.dtype());
}

Status softmax_cross_entropy(const TensorImpl& logits, const TensorImpl& labels, TensorImpl& loss,
                             TensorImpl& backprop) {
  const int64_t cols = logits.shape().dim(logits.rank() - 1);
  const int64_t rows = loss.num_elements();
  bool ok = visit_dtype<kFloatTypes>(logits.dtype(), [&]<typename T>() {
    softmax_xent_rows(logits.data<T>(), labels.data<T>(), loss.mutable_data<T>(), backprop.mutable_data<T>(),
                      rows, cols);
  });
  return ok ? Status::OK() : unsupported(logits.dtype());
}

Status sparse_softmax_cross_entropy(const TensorImpl& logits, const TensorImpl& labels, TensorImpl& loss,
                                    TensorImpl& backprop) {
  const int64_t cols = logits.shape().dim(logits.rank() - 1);
  const int64_t rows = labels.num_elements();
  Status status;
  bool ok = visit_dtype<kIndexTypes>(labels.dtype(), [&]<typename L>() {
    const L* lab = labels.data<L>();
    status = check_labels(lab, rows, cols);
    if (!status.ok()) return;
    bool float_ok = visit_dtype<kFloatTypes>(logits.dtype(), [&]<typename T>() {
      sparse_xent_rows(logits.data<T>(), lab, loss.mutable_data<T>(), backprop.mutable_data<T>(), rows, cols);
    });
    if (!float_ok) status = unsupported(logits.dtype());
  });
  if (!ok) return unsupported(labels.dtype());
  return status;
}

}  // namespace ember::kernels

#include "ember/kernels/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/float32_copies.h"

namespace ember::kernels {

namespace baseline {
void fill_batch_norm_tables(BatchNormTables& t);
}
namespace avx2 {
void fill_batch_norm_tables(BatchNormTables& t);
}
namespace avx512 {
void fill_batch_norm_tables(BatchNormTables& t);
}

const BatchNormTables& batch_norm_tables() {
  static const BatchNormTables tables = [] {
    BatchNormTables t;
    // One ISA decision for the whole library: follow the element-wise kernels' choice.
    const std::string_view isa = elementwise_isa();
    if (isa == "avx512") {
      avx512::fill_batch_norm_tables(t);
    } else if (isa == "avx2") {
      avx2::fill_batch_norm_tables(t);
    } else {
      baseline::fill_batch_norm_tables(t);
    }
    return t;
  }();
  return tables;
}

namespace {

// Visits every element of channel c: fn(offset).
template <typename Fn>
inline void for_channel(const BatchNormShape& s, int64_t c, Fn&& fn) {
  if (s.channels_last) {
    for (int64_t r = 0; r < s.batch * s.spatial; ++r) fn(r * s.channels + c);
  } else {
    for (int64_t n = 0; n < s.batch; ++n) {
      const int64_t base = (n * s.channels + c) * s.spatial;
      for (int64_t i = 0; i < s.spatial; ++i) fn(base + i);
    }
  }
}

// Note [Batch-norm loops]
// NCHW: one channel per work item, whose elements are N runs of S contiguous values.
// NHWC: a channel's elements are strided by C, so a per-channel loop would read every cache line of the
// tensor once per channel (16-64 passes for a ResNet). Instead the rows [N * S, C] are cut into blocks of
// kRowBlock rows, fixed whatever the thread count; each block sums its rows into C accumulators of the
// tensor's type (a loop over contiguous channels, vectorised), and the blocks' sums are added in double, in
// block order, so the result does not depend on the thread count either. The variance takes one pass: sums
// of x - x[0, c] and of its square (the shift by a sample of the channel keeps the subtraction from
// cancelling).
constexpr int64_t kRowBlock = 64;

// The row loops for T: float32 from the per-ISA tables (kernels/isa/batch_norm_isa.cc), float64 here.
template <typename T>
struct RowLoops {
  static void sum_shifted(const T* x, int64_t rows, int64_t C, const T* pivot, T* sum, T* sq) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const T d = x[r * C + c] - pivot[c];
        sum[c] += d;
        sq[c] += d * d;
      }
  }
  static void sum_grad(const T* x, const T* dy, int64_t rows, int64_t C, const T* mean, T* sum_dy,
                       T* sum_dy_xc) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < C; ++c) {
        sum_dy[c] += dy[r * C + c];
        sum_dy_xc[c] += dy[r * C + c] * (x[r * C + c] - mean[c]);
      }
  }
  static void scale_rows(const T* x, T* y, int64_t rows, int64_t C, const T* k, const T* shift) {
    for (int64_t i = 0; i < rows * C; ++i) y[i] = x[i] * k[i % C] + shift[i % C];
  }
  static void grad_rows(const T* x, const T* dy, T* dx, int64_t rows, int64_t C, const T* k, const T* mean_dy,
                        const T* mean, const T* proj) {
    for (int64_t i = 0; i < rows * C; ++i) {
      const int64_t c = i % C;
      dx[i] = k[c] * (dy[i] - mean_dy[c] - (x[i] - mean[c]) * proj[c]);
    }
  }
};

template <>
struct RowLoops<float> {
  static void sum_shifted(const float* x, int64_t rows, int64_t C, const float* pivot, float* sum,
                          float* sq) {
    batch_norm_tables().sum_shifted_f32(x, rows, C, pivot, sum, sq);
  }
  static void sum_grad(const float* x, const float* dy, int64_t rows, int64_t C, const float* mean,
                       float* sum_dy, float* sum_dy_xc) {
    batch_norm_tables().sum_grad_f32(x, dy, rows, C, mean, sum_dy, sum_dy_xc);
  }
  static void scale_rows(const float* x, float* y, int64_t rows, int64_t C, const float* k,
                         const float* shift) {
    batch_norm_tables().scale_rows_f32(x, y, rows, C, k, shift);
  }
  static void grad_rows(const float* x, const float* dy, float* dx, int64_t rows, int64_t C, const float* k,
                        const float* mean_dy, const float* mean, const float* proj) {
    batch_norm_tables().grad_rows_f32(x, dy, dx, rows, C, k, mean_dy, mean, proj);
  }
};

// Per-channel pairs of sums over the row blocks of a channels-last tensor: fn(first_row, rows, a, b) adds
// a block's terms into its two accumulator vectors a and b [C] of T (float32 sums of kRowBlock rows keep
// ~1e-6 of relative error and vectorise twice as wide as double); the blocks' sums are added in double,
// in block order. Returns [a totals, b totals].
template <typename T, typename Fn>
std::vector<double> row_block_sums(int64_t rows, int64_t C, Fn&& fn) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  std::vector<double> partial(blocks * 2 * C, 0.0);
  parallel_for(blocks, kRowBlock * C * 4 + 1, [&](int64_t b, int64_t e) {
    std::vector<T> acc(2 * C);
    for (int64_t blk = b; blk < e; ++blk) {
      std::fill(acc.begin(), acc.end(), T(0));
      const int64_t first = blk * kRowBlock;
      fn(first, std::min(rows, first + kRowBlock) - first, acc.data(), acc.data() + C);
      std::copy(acc.begin(), acc.end(), partial.begin() + blk * 2 * C);
    }
  });
  std::vector<double> total(2 * C, 0.0);
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t c = 0; c < 2 * C; ++c) total[c] += partial[blk * 2 * C + c];
  return total;
}

// Runs fn(first_row, rows) over the rows in blocks, in parallel.
template <typename Fn>
void for_row_blocks(int64_t rows, int64_t C, int64_t cost_per_element, Fn&& fn) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  parallel_for(blocks, kRowBlock * C * cost_per_element + 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t first = blk * kRowBlock;
      fn(first, std::min(rows, first + kRowBlock) - first);
    }
  });
}

// Note [Batch norm fused with Relu]
// _FusedBatchNormEx / _FusedBatchNormGradEx (passes/fuse_batch_norm.cc) fold a Relu after the batch norm,
// and its gradient, into the batch norm's own passes. Forward: each block of rows is activated while it is
// still in cache, instead of a separate Relu reading and writing the whole tensor again. Backward: the
// incoming gradient is masked (ReluGrad: dy where the Relu's output > 0) one block at a time into a
// per-thread buffer the block's loops then read, instead of a ReluGrad writing a whole masked tensor. The
// same values as the unfused ops: the math per element is theirs (Relu keeps NaN; y > 0 is false for NaN).
template <typename T>
inline T relu_of(T v) {
  return v > T(0) || v != v ? v : T(0);
}

template <typename T>
void relu_in_place(T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    batch_norm_tables().relu_rows_f32(y, n);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = relu_of(y[i]);
  }
}

// dy masked by relu_y > 0 into this thread's buffer (dy itself without a Relu). The buffer is reused by the
// next call on the thread: a caller uses the result before masking again.
template <typename T>
const T* masked_rows(const T* dy, const T* relu_y, int64_t n) {
  if (relu_y == nullptr) return dy;
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(n);
  T* out = buffer.data();
  if constexpr (std::is_same_v<T, float>) {
    batch_norm_tables().mask_rows_f32(dy, relu_y, out, n);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = relu_y[i] > T(0) ? dy[i] : T(0);
  }
  return out;
}

template <typename T>
void forward_channels_last(const BatchNormShape& s, const T* x, const T* scale, const T* offset,
                           const T* mean_in, const T* var_in, double eps, bool training, T* y, T* saved_mean,
                           T* saved_var, bool relu) {
  const int64_t count = s.batch * s.spatial, C = s.channels;
  std::vector<double> mean(C), var(C);
  if (training && count > 0) {
    const std::vector<T> pivot(x, x + C);
    const std::vector<double> sums =
        row_block_sums<T>(count, C, [&](int64_t first, int64_t rows, T* sum, T* sq) {
          RowLoops<T>::sum_shifted(x + first * C, rows, C, pivot.data(), sum, sq);
        });
    for (int64_t c = 0; c < C; ++c) {
      const double m = sums[c] / count;
      mean[c] = pivot[c] + m;
      var[c] = std::max(0.0, sums[C + c] / count - m * m);
    }
  } else if (!training) {
    for (int64_t c = 0; c < C; ++c) mean[c] = mean_in[c], var[c] = var_in[c];
  }
  std::vector<T> k(C), shift(C);
  for (int64_t c = 0; c < C; ++c) {
    saved_mean[c] = static_cast<T>(mean[c]), saved_var[c] = static_cast<T>(var[c]);
    const double kc = scale[c] / std::sqrt(var[c] + eps);
    k[c] = static_cast<T>(kc);
    shift[c] = static_cast<T>(offset[c] - mean[c] * kc);
  }
  for_row_blocks(count, C, 2, [&](int64_t first, int64_t rows) {
    RowLoops<T>::scale_rows(x + first * C, y + first * C, rows, C, k.data(), shift.data());
    if (relu) relu_in_place(y + first * C, rows * C);
  });
}

template <typename T>
void backward_channels_last(const BatchNormShape& s, const T* dy, const T* x, const T* scale, const T* mean,
                            const T* var, double eps, bool training, T* dx, T* dscale, T* doffset,
                            const T* relu_y) {
  const int64_t count = s.batch * s.spatial, C = s.channels;
  const std::vector<T> m(mean, mean + C);
  const std::vector<double> sums =
      row_block_sums<T>(count, C, [&](int64_t first, int64_t rows, T* sum_dy, T* sum_dy_xc) {
        const T* g = masked_rows(dy + first * C, relu_y ? relu_y + first * C : nullptr, rows * C);
        RowLoops<T>::sum_grad(x + first * C, g, rows, C, m.data(), sum_dy, sum_dy_xc);
      });
  std::vector<T> k(C), proj(C, T(0)), mean_dy(C, T(0)), zero(C, T(0));
  for (int64_t c = 0; c < C; ++c) {
    const double inv = 1 / std::sqrt(static_cast<double>(var[c]) + eps);
    dscale[c] = static_cast<T>(sums[C + c] * inv);
    doffset[c] = static_cast<T>(sums[c]);
    k[c] = static_cast<T>(scale[c] * inv);
    if (training && count > 0) {
      // dx = k * (dy - mean(dy) - (x - mean) * proj), proj = inv^2 * mean(dy * (x - mean))
      proj[c] = static_cast<T>(sums[C + c] / count * inv * inv);
      mean_dy[c] = static_cast<T>(sums[c] / count);
    }
  }
  if (!training || count == 0) {  // dx = k * dy; x is not read (a NaN in it must not reach dx)
    for_row_blocks(count, C, 2, [&](int64_t first, int64_t rows) {
      const T* g = masked_rows(dy + first * C, relu_y ? relu_y + first * C : nullptr, rows * C);
      RowLoops<T>::scale_rows(g, dx + first * C, rows, C, k.data(), zero.data());
    });
    return;
  }
  for_row_blocks(count, C, 4, [&](int64_t first, int64_t rows) {
    const T* g = masked_rows(dy + first * C, relu_y ? relu_y + first * C : nullptr, rows * C);
    RowLoops<T>::grad_rows(x + first * C, g, dx + first * C, rows, C, k.data(), mean_dy.data(), m.data(),
                           proj.data());
  });
}

template <typename T>
void forward(const BatchNormShape& s, const T* x, const T* scale, const T* offset, const T* mean_in,
             const T* var_in, double eps, bool training, T* y, T* saved_mean, T* saved_var, bool relu) {
  if (s.channels_last)
    return forward_channels_last(s, x, scale, offset, mean_in, var_in, eps, training, y, saved_mean,
                                 saved_var, relu);
  const int64_t count = s.batch * s.spatial;
  parallel_for(s.channels, 3 * count + 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double mean, var;
      if (training) {
        double sum = 0;
        for_channel(s, c, [&](int64_t i) { sum += x[i]; });
        mean = count ? sum / count : 0;
        double sq = 0;
        for_channel(s, c, [&](int64_t i) {
          const double d = x[i] - mean;
          sq += d * d;
        });
        var = count ? sq / count : 0;
      } else {
        mean = mean_in[c], var = var_in[c];
      }
      saved_mean[c] = static_cast<T>(mean), saved_var[c] = static_cast<T>(var);
      const double k = scale[c] / std::sqrt(var + eps), shift = offset[c] - mean * k;
      if (relu)
        for_channel(s, c, [&](int64_t i) { y[i] = relu_of(static_cast<T>(x[i] * k + shift)); });
      else
        for_channel(s, c, [&](int64_t i) { y[i] = static_cast<T>(x[i] * k + shift); });
    }
  });
}

template <typename T>
void backward(const BatchNormShape& s, const T* dy, const T* x, const T* scale, const T* mean, const T* var,
              double eps, bool training, T* dx, T* dscale, T* doffset, const T* relu_y) {
  if (s.channels_last)
    return backward_channels_last(s, dy, x, scale, mean, var, eps, training, dx, dscale, doffset, relu_y);
  const int64_t count = s.batch * s.spatial;
  // dy, masked by the Relu's output when there is one (Note [Batch norm fused with Relu])
  auto g = [&](int64_t i) { return relu_y == nullptr || relu_y[i] > T(0) ? dy[i] : T(0); };
  parallel_for(s.channels, 3 * count + 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const double inv = 1 / std::sqrt(static_cast<double>(var[c]) + eps), m = mean[c];
      double sum_dy = 0, sum_dy_xc = 0;
      for_channel(s, c, [&](int64_t i) {
        const T gi = g(i);
        sum_dy += gi;
        sum_dy_xc += gi * (x[i] - m);
      });
      dscale[c] = static_cast<T>(sum_dy_xc * inv);
      doffset[c] = static_cast<T>(sum_dy);
      const double k = scale[c] * inv;
      if (!training || count == 0) {
        for_channel(s, c, [&](int64_t i) { dx[i] = static_cast<T>(g(i) * k); });
        continue;
      }
      // dx = scale * inv * (dy - mean(dy) - (x - mean) * inv^2 * mean(dy * (x - mean)))
      const double mean_dy = sum_dy / count, proj = sum_dy_xc / count * inv * inv;
      for_channel(s, c, [&](int64_t i) { dx[i] = static_cast<T>(k * (g(i) - mean_dy - (x[i] - m) * proj)); });
    }
  });
}

template <typename T>
void lrn_rows(const LrnParams& p, const T* x, T* y, int64_t rows, int64_t depth) {
  parallel_for(rows, depth * (2 * p.depth_radius + 1) + 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * depth;
      T* yr = y + r * depth;
      for (int64_t c = 0; c < depth; ++c) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, c - p.depth_radius);
             j <= std::min(depth - 1, c + p.depth_radius); ++j)
          sq += static_cast<double>(xr[j]) * xr[j];
        yr[c] = static_cast<T>(xr[c] * std::pow(p.bias + p.alpha * sq, -p.beta));
      }
    }
  });
}

// dx_j = dy_j * N_j^-beta - 2 alpha beta x_j sum_{c in window(j)} dy_c x_c N_c^(-beta - 1), N_c = bias +
// alpha * (window sum of squares at c); the window is symmetric, so c is in window(j) exactly when j is in
// window(c).
template <typename T>
void lrn_grad_rows(const LrnParams& p, const T* dy, const T* x, T* dx, int64_t rows, int64_t depth) {
  parallel_for(rows, 3 * depth * (2 * p.depth_radius + 1) + 1, [&](int64_t b, int64_t e) {
    std::vector<double> norm(depth);
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * depth;
      const T* dyr = dy + r * depth;
      T* dxr = dx + r * depth;
      for (int64_t c = 0; c < depth; ++c) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, c - p.depth_radius);
             j <= std::min(depth - 1, c + p.depth_radius); ++j)
          sq += static_cast<double>(xr[j]) * xr[j];
        norm[c] = p.bias + p.alpha * sq;
      }
      for (int64_t j = 0; j < depth; ++j) {
        double acc = 0;
        for (int64_t c = std::max<int64_t>(0, j - p.depth_radius);
             c <= std::min(depth - 1, j + p.depth_radius); ++c)
          acc += dyr[c] * static_cast<double>(xr[c]) * std::pow(norm[c], -p.beta - 1);
        dxr[j] = static_cast<T>(dyr[j] * std::pow(norm[j], -p.beta) - 2 * p.alpha * p.beta * xr[j] * acc);
      }
    }
  });
}

Status no_kernel(const char* what, DType d) {
  return make_error(Code::kUnimplemented, what, ": no kernel for ", dtype_name(d));
}

}  // namespace

// Note [16-bit batch norm]
// As TensorFlow's FusedBatchNormV3, a float16 or bfloat16 x (and y, and the gradients' y_backprop and
// x_backprop) comes with float32 statistics, scale and offset (its U). The 16-bit tensors are widened to
// float32, the float32 loops run, and each element of y (x_backprop) is rounded once: the sums accumulate in
// float32 and double as they do for a float32 x, so the statistics are those of the widened x.
Status batch_norm_forward(const BatchNormShape& s, const TensorImpl& x, const TensorImpl& scale,
                          const TensorImpl& offset, const TensorImpl* mean, const TensorImpl* var,
                          double epsilon, bool training, TensorImpl& y, TensorImpl& saved_mean,
                          TensorImpl& saved_var, bool relu) {
  if (is_16bit_float(x.dtype())) {
    auto wide_x = widen_to_float32(x);
    EMBER_RETURN_IF_ERROR(wide_x.status());
    auto wide_y = TensorImpl::allocate(DType::kFloat32, y.shape());
    EMBER_RETURN_IF_ERROR(wide_y.status());
    EMBER_RETURN_IF_ERROR(batch_norm_forward(s, **wide_x, scale, offset, mean, var, epsilon, training,
                                             **wide_y, saved_mean, saved_var, relu));
    narrow_from_float32(**wide_y, y);
  } else if (x.dtype() == DType::kFloat32) {
    forward<float>(s, x.data<float>(), scale.data<float>(), offset.data<float>(),
                   mean ? mean->data<float>() : nullptr, var ? var->data<float>() : nullptr, epsilon,
                   training, y.mutable_data<float>(), saved_mean.mutable_data<float>(),
                   saved_var.mutable_data<float>(), relu);
  } else if (x.dtype() == DType::kFloat64) {
    forward<double>(s, x.data<double>(), scale.data<double>(), offset.data<double>(),
                    mean ? mean->data<double>() : nullptr, var ? var->data<double>() : nullptr, epsilon,
                    training, y.mutable_data<double>(), saved_mean.mutable_data<double>(),
                    saved_var.mutable_data<double>(), relu);
  } else {
    return no_kernel("batch normalization", x.dtype());
  }
  return Status::OK();
}

Status batch_norm_backward(const BatchNormShape& s, const TensorImpl& dy, const TensorImpl& x,
                           const TensorImpl& scale, const TensorImpl& mean, const TensorImpl& var,
                           double epsilon, bool training, TensorImpl& dx, TensorImpl& dscale,
                           TensorImpl& doffset, const TensorImpl* relu_output) {
  if (is_16bit_float(x.dtype())) {  // Note [16-bit batch norm]
    auto wide_dy = widen_to_float32(dy);
    EMBER_RETURN_IF_ERROR(wide_dy.status());
    auto wide_x = widen_to_float32(x);
    EMBER_RETURN_IF_ERROR(wide_x.status());
    StatusOr<TensorRef> wide_relu_output = TensorRef();
    if (relu_output != nullptr) wide_relu_output = widen_to_float32(*relu_output);
    EMBER_RETURN_IF_ERROR(wide_relu_output.status());
    auto wide_dx = TensorImpl::allocate(DType::kFloat32, dx.shape());
    EMBER_RETURN_IF_ERROR(wide_dx.status());
    EMBER_RETURN_IF_ERROR(batch_norm_backward(s, **wide_dy, **wide_x, scale, mean, var, epsilon, training,
                                              **wide_dx, dscale, doffset,
                                              relu_output ? &**wide_relu_output : nullptr));
    narrow_from_float32(**wide_dx, dx);
  } else if (x.dtype() == DType::kFloat32) {
    backward<float>(s, dy.data<float>(), x.data<float>(), scale.data<float>(), mean.data<float>(),
                    var.data<float>(), epsilon, training, dx.mutable_data<float>(),
                    dscale.mutable_data<float>(), doffset.mutable_data<float>(),
                    relu_output ? relu_output->data<float>() : nullptr);
  } else if (x.dtype() == DType::kFloat64) {
    backward<double>(s, dy.data<double>(), x.data<double>(), scale.data<double>(), mean.data<double>(),
                     var.data<double>(), epsilon, training, dx.mutable_data<double>(),
                     dscale.mutable_data<double>(), doffset.mutable_data<double>(),
                     relu_output ? relu_output->data<double>() : nullptr);
  } else {
    return no_kernel("batch normalization gradient", x.dtype());
  }
  return Status::OK();
}

Status lrn(const LrnParams& p, const TensorImpl& x, TensorImpl& y) {
  const int64_t depth = x.rank() ? x.shape().dim(x.rank() - 1) : 1;
  const int64_t rows = depth ? x.num_elements() / depth : 0;
  if (x.dtype() == DType::kFloat32)
    lrn_rows(p, x.data<float>(), y.mutable_data<float>(), rows, depth);
  else if (x.dtype() == DType::kFloat64)
    lrn_rows(p, x.data<double>(), y.mutable_data<double>(), rows, depth);
  else
    return no_kernel("LRN", x.dtype());
  return Status::OK();
}

Status lrn_grad(const LrnParams& p, const TensorImpl& dy, const TensorImpl& x, const TensorImpl&,
                TensorImpl& dx) {
  const int64_t depth = x.rank() ? x.shape().dim(x.rank() - 1) : 1;
  const int64_t rows = depth ? x.num_elements() / depth : 0;
  if (x.dtype() == DType::kFloat32)
    lrn_grad_rows(p, dy.data<float>(), x.data<float>(), dx.mutable_data<float>(), rows, depth);
  else if (x.dtype() == DType::kFloat64)
    lrn_grad_rows(p, dy.data<double>(), x.data<double>(), dx.mutable_data<double>(), rows, depth);
  else
    return no_kernel("LRNGrad", x.dtype());
  return Status::OK();
}

}  // namespace ember::kernels

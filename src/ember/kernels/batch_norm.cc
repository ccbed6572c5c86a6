#include "ember/kernels/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/core/parallel.h"

namespace ember::kernels {

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

// Per-channel sums over the rows of a channels-last tensor: fn(row, acc) adds row's terms into the
// block's accumulators acc[0..width), of T (float32 sums of kRowBlock rows keep ~1e-6 of relative error and
// vectorise twice as wide as double); the blocks' sums are added in double, in block order.
template <typename T, typename Fn>
std::vector<double> row_block_sums(int64_t rows, int64_t width, Fn&& fn) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  std::vector<double> partial(blocks * width, 0.0);
  parallel_for(blocks, kRowBlock * width * 2 + 1, [&](int64_t b, int64_t e) {
    std::vector<T> acc(width);
    for (int64_t blk = b; blk < e; ++blk) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t r = blk * kRowBlock; r < std::min(rows, (blk + 1) * kRowBlock); ++r) fn(r, acc.data());
      std::copy(acc.begin(), acc.end(), partial.begin() + blk * width);
    }
  });
  std::vector<double> total(width, 0.0);
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t c = 0; c < width; ++c) total[c] += partial[blk * width + c];
  return total;
}

// y = x * k[c] + shift[c] over the rows of a channels-last tensor.
template <typename T>
void scale_rows(int64_t rows, int64_t channels, const T* x, const double* k, const double* shift, T* y) {
  std::vector<T> kt(k, k + channels), st(shift, shift + channels);
  parallel_for(rows, 2 * channels + 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * channels;
      T* yr = y + r * channels;
      for (int64_t c = 0; c < channels; ++c) yr[c] = xr[c] * kt[c] + st[c];
    }
  });
}

template <typename T>
void forward_channels_last(const BatchNormShape& s, const T* x, const T* scale, const T* offset,
                           const T* mean_in, const T* var_in, double eps, bool training, T* y, T* saved_mean,
                           T* saved_var) {
  const int64_t count = s.batch * s.spatial, C = s.channels;
  std::vector<double> mean(C), var(C), k(C), shift(C);
  if (training && count > 0) {
    std::vector<T> pivot(x, x + C);
    // [sum of (x - pivot) for each c, then sum of its squares]
    const std::vector<double> sums = row_block_sums<T>(count, 2 * C, [&](int64_t r, T* acc) {
      const T* xr = x + r * C;
      for (int64_t c = 0; c < C; ++c) {
        const T d = xr[c] - pivot[c];
        acc[c] += d;
        acc[C + c] += d * d;
      }
    });
    for (int64_t c = 0; c < C; ++c) {
      const double m = sums[c] / count;
      mean[c] = pivot[c] + m;
      var[c] = std::max(0.0, sums[C + c] / count - m * m);
    }
  } else if (!training) {
    for (int64_t c = 0; c < C; ++c) mean[c] = mean_in[c], var[c] = var_in[c];
  }
  for (int64_t c = 0; c < C; ++c) {
    saved_mean[c] = static_cast<T>(mean[c]), saved_var[c] = static_cast<T>(var[c]);
    k[c] = scale[c] / std::sqrt(var[c] + eps);
    shift[c] = offset[c] - mean[c] * k[c];
  }
  scale_rows(count, C, x, k.data(), shift.data(), y);
}

template <typename T>
void backward_channels_last(const BatchNormShape& s, const T* dy, const T* x, const T* scale, const T* mean,
                            const T* var, double eps, bool training, T* dx, T* dscale, T* doffset) {
  const int64_t count = s.batch * s.spatial, C = s.channels;
  std::vector<T> m(mean, mean + C);
  // [sum of dy for each c, then sum of dy * (x - mean)]
  const std::vector<double> sums = row_block_sums<T>(count, 2 * C, [&](int64_t r, T* acc) {
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    for (int64_t c = 0; c < C; ++c) {
      acc[c] += dyr[c];
      acc[C + c] += dyr[c] * (xr[c] - m[c]);
    }
  });
  std::vector<double> k(C), proj(C), shift(C);
  for (int64_t c = 0; c < C; ++c) {
    const double inv = 1 / std::sqrt(static_cast<double>(var[c]) + eps);
    dscale[c] = static_cast<T>(sums[C + c] * inv);
    doffset[c] = static_cast<T>(sums[c]);
    k[c] = scale[c] * inv;
    if (training && count > 0) {
      // dx = k * (dy - mean(dy) - (x - mean) * proj), proj = inv^2 * mean(dy * (x - mean))
      proj[c] = sums[C + c] / count * inv * inv;
      shift[c] = sums[c] / count;  // mean(dy)
    }
  }
  if (!training || count == 0) {
    std::vector<double> zero(C, 0.0);
    scale_rows(count, C, dy, k.data(), zero.data(), dx);
    return;
  }
  std::vector<T> kt(k.begin(), k.end()), pt(proj.begin(), proj.end()), st(shift.begin(), shift.end());
  parallel_for(count, 4 * C + 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * C;
      const T* dyr = dy + r * C;
      T* dxr = dx + r * C;
      for (int64_t c = 0; c < C; ++c) dxr[c] = kt[c] * (dyr[c] - st[c] - (xr[c] - m[c]) * pt[c]);
    }
  });
}

template <typename T>
void forward(const BatchNormShape& s, const T* x, const T* scale, const T* offset, const T* mean_in,
             const T* var_in, double eps, bool training, T* y, T* saved_mean, T* saved_var) {
  if (s.channels_last)
    return forward_channels_last(s, x, scale, offset, mean_in, var_in, eps, training, y, saved_mean,
                                 saved_var);
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
      for_channel(s, c, [&](int64_t i) { y[i] = static_cast<T>(x[i] * k + shift); });
    }
  });
}

template <typename T>
void backward(const BatchNormShape& s, const T* dy, const T* x, const T* scale, const T* mean, const T* var,
              double eps, bool training, T* dx, T* dscale, T* doffset) {
  if (s.channels_last)
    return backward_channels_last(s, dy, x, scale, mean, var, eps, training, dx, dscale, doffset);
  const int64_t count = s.batch * s.spatial;
  parallel_for(s.channels, 3 * count + 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const double inv = 1 / std::sqrt(static_cast<double>(var[c]) + eps), m = mean[c];
      double sum_dy = 0, sum_dy_xc = 0;
      for_channel(s, c, [&](int64_t i) {
        sum_dy += dy[i];
        sum_dy_xc += dy[i] * (x[i] - m);
      });
      dscale[c] = static_cast<T>(sum_dy_xc * inv);
      doffset[c] = static_cast<T>(sum_dy);
      const double k = scale[c] * inv;
      if (!training || count == 0) {
        for_channel(s, c, [&](int64_t i) { dx[i] = static_cast<T>(dy[i] * k); });
        continue;
      }
      // dx = scale * inv * (dy - mean(dy) - (x - mean) * inv^2 * mean(dy * (x - mean)))
      const double mean_dy = sum_dy / count, proj = sum_dy_xc / count * inv * inv;
      for_channel(s, c,
                  [&](int64_t i) { dx[i] = static_cast<T>(k * (dy[i] - mean_dy - (x[i] - m) * proj)); });
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

Status batch_norm_forward(const BatchNormShape& s, const TensorImpl& x, const TensorImpl& scale,
                          const TensorImpl& offset, const TensorImpl* mean, const TensorImpl* var,
                          double epsilon, bool training, TensorImpl& y, TensorImpl& saved_mean,
                          TensorImpl& saved_var) {
  if (x.dtype() == DType::kFloat32) {
    forward<float>(s, x.data<float>(), scale.data<float>(), offset.data<float>(),
                   mean ? mean->data<float>() : nullptr, var ? var->data<float>() : nullptr, epsilon,
                   training, y.mutable_data<float>(), saved_mean.mutable_data<float>(),
                   saved_var.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    forward<double>(s, x.data<double>(), scale.data<double>(), offset.data<double>(),
                    mean ? mean->data<double>() : nullptr, var ? var->data<double>() : nullptr, epsilon,
                    training, y.mutable_data<double>(), saved_mean.mutable_data<double>(),
                    saved_var.mutable_data<double>());
  } else {
    return no_kernel("batch normalization", x.dtype());
  }
  return Status::OK();
}

Status batch_norm_backward(const BatchNormShape& s, const TensorImpl& dy, const TensorImpl& x,
                           const TensorImpl& scale, const TensorImpl& mean, const TensorImpl& var,
                           double epsilon, bool training, TensorImpl& dx, TensorImpl& dscale,
                           TensorImpl& doffset) {
  if (x.dtype() == DType::kFloat32) {
    backward<float>(s, dy.data<float>(), x.data<float>(), scale.data<float>(), mean.data<float>(),
                    var.data<float>(), epsilon, training, dx.mutable_data<float>(),
                    dscale.mutable_data<float>(), doffset.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    backward<double>(s, dy.data<double>(), x.data<double>(), scale.data<double>(), mean.data<double>(),
                     var.data<double>(), epsilon, training, dx.mutable_data<double>(),
                     dscale.mutable_data<double>(), doffset.mutable_data<double>());
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

#include "ember/kernels/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ember/core/parallel.h"

namespace ember::kernels {

namespace {

// TensorFlow's scale from output to input coordinates along one dim.
float scale_of(const ResizeParams& p, int64_t in, int64_t out) {
  return p.align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                    : static_cast<float>(in) / static_cast<float>(out);
}

// Computed in float as TensorFlow's kernels do, so the sample points (and ties of nearest) are the same.
struct Lerp {
  int64_t lower, upper;
  float frac;
};

std::vector<Lerp> bilinear_taps(const ResizeParams& p, int64_t in, int64_t out) {
  std::vector<Lerp> taps(out);
  const float scale = scale_of(p, in, out);
  for (int64_t i = 0; i < out; ++i) {
    const float x =
        p.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    const float floor_x = std::floor(x);
    taps[i].lower = std::max<int64_t>(static_cast<int64_t>(floor_x), 0);
    taps[i].upper = std::min<int64_t>(static_cast<int64_t>(std::ceil(x)), in - 1);
    taps[i].frac = x - floor_x;
  }
  return taps;
}

std::vector<int64_t> nearest_taps(const ResizeParams& p, int64_t in, int64_t out) {
  std::vector<int64_t> taps(out);
  const float scale = scale_of(p, in, out);
  for (int64_t i = 0; i < out; ++i) {
    const float x =
        p.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
    const int64_t j =
        p.align_corners ? static_cast<int64_t>(std::round(x)) : static_cast<int64_t>(std::floor(x));
    taps[i] = std::clamp<int64_t>(j, 0, in - 1);
  }
  return taps;
}

struct Dims {
  int64_t n, ih, iw, oh, ow, c;
};

Dims dims_of(const TensorImpl& in, const TensorImpl& out) {
  return {in.shape().dim(0),  in.shape().dim(1),  in.shape().dim(2),
          out.shape().dim(1), out.shape().dim(2), in.shape().dim(3)};
}

template <typename T>
void bilinear(const ResizeParams& p, const Dims& d, const T* x, float* y) {
  if (d.ih == 0 || d.iw == 0) return;
  const auto ys = bilinear_taps(p, d.ih, d.oh), xs = bilinear_taps(p, d.iw, d.ow);
  parallel_for(d.n * d.oh, d.ow * d.c * 8 + 1, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t n = row / d.oh, i = row % d.oh;
      const T* top = x + ((n * d.ih + ys[i].lower) * d.iw) * d.c;
      const T* bottom = x + ((n * d.ih + ys[i].upper) * d.iw) * d.c;
      const float dy = ys[i].frac;
      float* out = y + row * d.ow * d.c;
      for (int64_t j = 0; j < d.ow; ++j) {
        const float dx = xs[j].frac;
        const int64_t l = xs[j].lower * d.c, r = xs[j].upper * d.c;
        for (int64_t c = 0; c < d.c; ++c) {
          const float t = static_cast<float>(top[l + c]) +
                          (static_cast<float>(top[r + c]) - static_cast<float>(top[l + c])) * dx;
          const float bt = static_cast<float>(bottom[l + c]) +
                           (static_cast<float>(bottom[r + c]) - static_cast<float>(bottom[l + c])) * dx;
          out[j * d.c + c] = t + (bt - t) * dy;
        }
      }
    }
  });
}

template <typename T, typename G>
void bilinear_grad(const ResizeParams& p, const Dims& d, const G* g, T* dx) {
  std::memset(static_cast<void*>(dx), 0, sizeof(T) * d.n * d.ih * d.iw * d.c);
  if (d.ih == 0 || d.iw == 0) return;
  const auto ys = bilinear_taps(p, d.ih, d.oh), xs = bilinear_taps(p, d.iw, d.ow);
  // One image per work item: rows of an image receive from several output rows.
  parallel_for(d.n, d.oh * d.ow * d.c * 8 + 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n)
      for (int64_t i = 0; i < d.oh; ++i) {
        T* top = dx + ((n * d.ih + ys[i].lower) * d.iw) * d.c;
        T* bottom = dx + ((n * d.ih + ys[i].upper) * d.iw) * d.c;
        const float fy = ys[i].frac;
        const G* gr = g + (n * d.oh + i) * d.ow * d.c;
        for (int64_t j = 0; j < d.ow; ++j) {
          const float fx = xs[j].frac;
          const int64_t l = xs[j].lower * d.c, r = xs[j].upper * d.c;
          for (int64_t c = 0; c < d.c; ++c) {
            const G v = gr[j * d.c + c];  // in float for float32 grads, as TensorFlow
            top[l + c] += static_cast<T>(v * (1 - fy) * (1 - fx));
            top[r + c] += static_cast<T>(v * (1 - fy) * fx);
            bottom[l + c] += static_cast<T>(v * fy * (1 - fx));
            bottom[r + c] += static_cast<T>(v * fy * fx);
          }
        }
      }
  });
}

template <typename T>
void nearest(const ResizeParams& p, const Dims& d, const T* x, T* y) {
  if (d.ih == 0 || d.iw == 0) return;
  const auto ys = nearest_taps(p, d.ih, d.oh), xs = nearest_taps(p, d.iw, d.ow);
  parallel_for(d.n * d.oh, d.ow * d.c + 1, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t n = row / d.oh, i = row % d.oh;
      const T* src = x + (n * d.ih + ys[i]) * d.iw * d.c;
      T* out = y + row * d.ow * d.c;
      for (int64_t j = 0; j < d.ow; ++j) std::memcpy(out + j * d.c, src + xs[j] * d.c, sizeof(T) * d.c);
    }
  });
}

template <typename T>
void nearest_grad(const ResizeParams& p, const Dims& d, const T* g, T* dx) {
  std::memset(static_cast<void*>(dx), 0, sizeof(T) * d.n * d.ih * d.iw * d.c);
  if (d.ih == 0 || d.iw == 0) return;
  const auto ys = nearest_taps(p, d.ih, d.oh), xs = nearest_taps(p, d.iw, d.ow);
  parallel_for(d.n, d.oh * d.ow * d.c + 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n)
      for (int64_t i = 0; i < d.oh; ++i)
        for (int64_t j = 0; j < d.ow; ++j)
          for (int64_t c = 0; c < d.c; ++c)
            dx[((n * d.ih + ys[i]) * d.iw + xs[j]) * d.c + c] += g[((n * d.oh + i) * d.ow + j) * d.c + c];
  });
}

Status no_kernel(const char* what, DType dt) {
  return make_error(Code::kUnimplemented, what, ": no kernel for ", dtype_name(dt));
}

}  // namespace

Status resize_bilinear(const ResizeParams& p, const TensorImpl& images, TensorImpl& out) {
  const Dims d = dims_of(images, out);
  if (images.dtype() == DType::kFloat32)
    bilinear(p, d, images.data<float>(), out.mutable_data<float>());
  else if (images.dtype() == DType::kFloat64)
    bilinear(p, d, images.data<double>(), out.mutable_data<float>());
  else
    return no_kernel("ResizeBilinear", images.dtype());
  return Status::OK();
}

Status resize_bilinear_grad(const ResizeParams& p, const TensorImpl& grads, TensorImpl& dx) {
  const Dims d = dims_of(dx, grads);
  const bool g32 = grads.dtype() == DType::kFloat32;
  if (!g32 && grads.dtype() != DType::kFloat64) return no_kernel("ResizeBilinearGrad", grads.dtype());
  if (dx.dtype() == DType::kFloat32) {
    if (g32)
      bilinear_grad(p, d, grads.data<float>(), dx.mutable_data<float>());
    else
      bilinear_grad(p, d, grads.data<double>(), dx.mutable_data<float>());
  } else if (dx.dtype() == DType::kFloat64) {
    if (g32)
      bilinear_grad(p, d, grads.data<float>(), dx.mutable_data<double>());
    else
      bilinear_grad(p, d, grads.data<double>(), dx.mutable_data<double>());
  } else {
    return no_kernel("ResizeBilinearGrad", dx.dtype());
  }
  return Status::OK();
}

Status resize_nearest(const ResizeParams& p, const TensorImpl& images, TensorImpl& out) {
  const Dims d = dims_of(images, out);
  if (images.dtype() == DType::kFloat32)
    nearest(p, d, images.data<float>(), out.mutable_data<float>());
  else if (images.dtype() == DType::kFloat64)
    nearest(p, d, images.data<double>(), out.mutable_data<double>());
  else
    return no_kernel("ResizeNearestNeighbor", images.dtype());
  return Status::OK();
}

Status resize_nearest_grad(const ResizeParams& p, const TensorImpl& grads, TensorImpl& dx) {
  const Dims d = dims_of(dx, grads);
  if (dx.dtype() == DType::kFloat32)
    nearest_grad(p, d, grads.data<float>(), dx.mutable_data<float>());
  else if (dx.dtype() == DType::kFloat64)
    nearest_grad(p, d, grads.data<double>(), dx.mutable_data<double>());
  else
    return no_kernel("ResizeNearestNeighborGrad", dx.dtype());
  return Status::OK();
}

}  // namespace ember::kernels

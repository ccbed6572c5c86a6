#include "ember/kernels/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
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

namespace {

// Note [Projective transform arithmetic]: every step is TensorFlow's, in float, in the same order (the
// coordinate mapping follows scipy.ndimage, as TensorFlow's does), so outputs are equal bit for bit: a
// different rounding of one sample point moves a nearest-neighbour pick by a whole pixel.
// max then min, as Eigen's clamp: an empty dim (last == -1) gives -1, which reads the fill value (std::clamp
// would be undefined there).
float clamp_to(float in, float last) { return std::min(std::max(in, 0.0f), last); }

float map_coordinate(FillMode mode, float in, int64_t len) {
  const float last = static_cast<float>(len - 1);
  switch (mode) {
    case FillMode::kConstant:
      return in;
    case FillMode::kNearest:
      return clamp_to(in, last);
    case FillMode::kReflect:  // [abcd] -> [dcba|abcd|dcba]
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t twice = 2 * len;
          if (in < twice) in = static_cast<float>(twice * static_cast<int64_t>(-in / twice)) + in;
          in = in < static_cast<float>(-len) ? in + static_cast<float>(twice) : -in - 1;
        }
      } else if (in > last) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t twice = 2 * len;
          in -= static_cast<float>(twice * static_cast<int64_t>(in / twice));
          if (in >= static_cast<float>(len)) in = static_cast<float>(twice) - in - 1;
        }
      }
      return clamp_to(in, last);  // 3.5 in a length of 4 must not round to 4
    case FillMode::kWrap:         // [abcd] -> [abcd|abcd|abcd]
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t span = len - 1;
          in += static_cast<float>(len * (static_cast<int64_t>(-in / span) + 1));
        }
      } else if (in > last) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t span = len - 1;
          in -= static_cast<float>(len * static_cast<int64_t>(in / span));
        }
      }
      return clamp_to(in, last);
  }
  return in;
}

// float -> T as TensorFlow's kernel converts (a C++ conversion; for uint8 through int32, which is what x86
// does for an out-of-range value: -1.5 becomes 255).
template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return static_cast<uint8_t>(static_cast<int32_t>(v));
  else
    return static_cast<T>(v);
}

template <typename T>
void projective(const ProjectiveParams& p, const TensorImpl& images, const float* transforms,
                bool one_transform, TensorImpl& out) {
  const Shape& in = images.shape();
  const int64_t n = in.dim(0), ih = in.dim(1), iw = in.dim(2), c = in.dim(3);
  const int64_t oh = out.shape().dim(1), ow = out.shape().dim(2);
  const T* x = images.data<T>();
  T* y = out.mutable_data<T>();
  const T fill = from_float<T>(p.fill_value);
  auto read = [&](int64_t b, int64_t row, int64_t col, int64_t ch) -> T {
    return row >= 0 && row < ih && col >= 0 && col < iw ? x[((b * ih + row) * iw + col) * c + ch] : fill;
  };
  parallel_for(n * oh, ow * c * 16 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / oh, out_y = r % oh;
      const float* t = one_transform ? transforms : transforms + 8 * b;
      T* dst = y + r * ow * c;
      for (int64_t out_x = 0; out_x < ow; ++out_x, dst += c) {
        const float fx = static_cast<float>(out_x), fy = static_cast<float>(out_y);
        const float k = t[6] * fx + t[7] * fy + 1.f;
        if (k == 0) {  // the point is at infinity: outside the input
          std::fill(dst, dst + c, fill);
          continue;
        }
        const float sx = map_coordinate(p.fill_mode, (t[0] * fx + t[1] * fy + t[2]) / k, iw);
        const float sy = map_coordinate(p.fill_mode, (t[3] * fx + t[4] * fy + t[5]) / k, ih);
        // kConstant leaves points outside: each tap outside reads the fill value (TensorFlow 2.21 does not
        // fill the whole point, so a point half a pixel out still rounds or blends into the image).
        if (!p.bilinear) {
          const auto row = static_cast<int64_t>(std::round(sy)), col = static_cast<int64_t>(std::round(sx));
          for (int64_t ch = 0; ch < c; ++ch) dst[ch] = read(b, row, col, ch);
          continue;
        }
        const float y0 = std::floor(sy), x0 = std::floor(sx), y1 = y0 + 1, x1 = x0 + 1;
        const auto r0 = static_cast<int64_t>(y0), r1 = static_cast<int64_t>(y1);
        const auto c0 = static_cast<int64_t>(x0), c1 = static_cast<int64_t>(x1);
        for (int64_t ch = 0; ch < c; ++ch) {
          const float top = (x1 - sx) * static_cast<float>(read(b, r0, c0, ch)) +
                            (sx - x0) * static_cast<float>(read(b, r0, c1, ch));
          const float bottom = (x1 - sx) * static_cast<float>(read(b, r1, c0, ch)) +
                               (sx - x0) * static_cast<float>(read(b, r1, c1, ch));
          dst[ch] = from_float<T>((y1 - sy) * top + (sy - y0) * bottom);
        }
      }
    }
  });
}

}  // namespace

Status image_projective_transform(const ProjectiveParams& p, const TensorImpl& images,
                                  const TensorImpl& transforms, TensorImpl& out) {
  const float* t = transforms.data<float>();
  const bool one = transforms.shape().dim(0) == 1;
  const bool known = visit_dtype<kFloatTypes | dtype_bit(DType::kUInt8) | dtype_bit(DType::kInt32) |
                                 dtype_bit(DType::kInt64)>(
      images.dtype(), [&]<typename T>() { projective<T>(p, images, t, one, out); });
  return known ? Status::OK() : no_kernel("ImageProjectiveTransformV3", images.dtype());
}

}  // namespace ember::kernels

// ScaleAndTranslate and ScaleAndTranslateGrad with TensorFlow's names, operands and attributes: the separable
// resampling behind tf.image.resize's lanczos3, lanczos5, gaussian and mitchellcubic methods and its
// antialiased bilinear ("triangle") and bicubic ("keyscubic"). Registered by register_image_ops
// (ops/image.cc).
//
// Output pixel x (centre x + 0.5) samples the input at (x + 0.5) / scale - translation / scale; the kernel,
// stretched by 1 / scale when antialiasing a downscale, weighs the input pixels within its radius, and the
// weights of each output pixel are normalised to sum to 1 (TensorFlow's spans, computed in float as its
// kernel computes them). The gradient is the transpose: each output gradient spread back with the same
// weights.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ops/gradient.h"
#include "ember/ops/image_common.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kScaleImageTypes = image_ops::kRealImageTypes;
constexpr DTypeSet kGradTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
constexpr DTypeSet kF32 = dtype_bit(DType::kFloat32);

enum class Kernel { kLanczos1, kLanczos3, kLanczos5, kGaussian, kBox, kTriangle, kKeysCubic, kMitchellCubic };

bool kernel_of(const std::string& name, Kernel* k) {
  static const std::pair<const char*, Kernel> kNames[] = {{"lanczos1", Kernel::kLanczos1},
                                                          {"lanczos3", Kernel::kLanczos3},
                                                          {"lanczos5", Kernel::kLanczos5},
                                                          {"gaussian", Kernel::kGaussian},
                                                          {"box", Kernel::kBox},
                                                          {"triangle", Kernel::kTriangle},
                                                          {"keyscubic", Kernel::kKeysCubic},
                                                          {"mitchellcubic", Kernel::kMitchellCubic}};
  for (const auto& [n, kernel] : kNames)
    if (name == n) return *k = kernel, true;
  return false;
}

float radius_of(Kernel k) {
  switch (k) {
    case Kernel::kLanczos1:
    case Kernel::kBox:
    case Kernel::kTriangle:
      return 1.0f;
    case Kernel::kLanczos3:
      return 3.0f;
    case Kernel::kLanczos5:
      return 5.0f;
    case Kernel::kGaussian:
      return 1.5f;
    case Kernel::kKeysCubic:
    case Kernel::kMitchellCubic:
      return 2.0f;
  }
  return 1.0f;
}

float lanczos(float radius, float x) {
  constexpr float kPi = 3.14159265359f;
  if (x > radius) return 0.0f;
  if (x <= 1e-3f) return 1.0f;  // the limit of sin(x) / x at 0
  return radius * std::sin(kPi * x) * std::sin(kPi * x / radius) / (kPi * kPi * x * x);
}

/// The kernel's value at distance x >= 0 (TensorFlow's sampling_kernels.h functions).
float weigh(Kernel k, float x) {
  switch (k) {
    case Kernel::kLanczos1:
      return lanczos(1.0f, x);
    case Kernel::kLanczos3:
      return lanczos(3.0f, x);
    case Kernel::kLanczos5:
      return lanczos(5.0f, x);
    case Kernel::kGaussian: {
      constexpr float kSigma = 0.5f;  // radius / 3
      return x >= 1.5f ? 0.0f : static_cast<float>(std::exp(-x * x / (2.0 * kSigma * kSigma)));
    }
    case Kernel::kBox:
      return x < 0.5f ? 1.0f : x == 0.5f ? 0.5f : 0.0f;
    case Kernel::kTriangle:
      return x < 1.0f ? 1.0f - x : 0.0f;
    case Kernel::kKeysCubic:  // a = -0.5
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
      return ((1.5f * x - 2.5f) * x) * x + 1.0f;
    case Kernel::kMitchellCubic:  // B = C = 1/3
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
      return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
  }
  return 0.0f;
}

/// For each output pixel along one dim, the first input pixel it reads and `size` weights (zero past its
/// span; all zero when it samples outside the input).
struct Spans {
  int64_t size = 0;
  std::vector<int64_t> starts;
  std::vector<float> weights;
};

Spans spans_of(Kernel k, int64_t out, int64_t in, float scale, float translation, bool antialias) {
  const float inv_scale = 1.0f / scale;
  const float inv_translation = -inv_scale * translation;
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float reach = radius_of(k) * kernel_scale;
  Spans s;
  s.size = std::min<int64_t>(2 * static_cast<int64_t>(std::ceil(reach)) + 1, in);
  s.starts.assign(static_cast<size_t>(out), 0);
  s.weights.assign(static_cast<size_t>(out * s.size), 0.0f);
  std::vector<float> w;
  for (int64_t x = 0; x < out; ++x) {
    const float sample = (static_cast<float>(x) + 0.5f) * inv_scale + inv_translation;
    if (sample < 0 || sample > static_cast<float>(in)) continue;
    const int64_t start =
        std::clamp<int64_t>(static_cast<int64_t>(std::ceil(sample - reach - 0.5f)), 0, in - 1);
    const int64_t end =
        std::clamp<int64_t>(static_cast<int64_t>(std::floor(sample + reach - 0.5f)), 0, in - 1) + 1;
    w.clear();
    float total = 0.0f;
    for (int64_t source = start; source < std::min(end, start + s.size); ++source) {
      const float v =
          weigh(k, std::abs((static_cast<float>(source) + 0.5f - sample) * (1.0f / kernel_scale)));
      total += v;
      w.push_back(v);
    }
    if (std::abs(total) >= 1000.0f * std::numeric_limits<float>::min())
      for (size_t j = 0; j < w.size(); ++j) s.weights[static_cast<size_t>(x * s.size) + j] = w[j] / total;
    s.starts[static_cast<size_t>(x)] = start;
  }
  return s;
}

struct Geometry {
  int64_t batch, in_h, in_w, out_h, out_w, channels;
};

// out[b, y, x, c] = sum_i rows.w[y, i] sum_j cols.w[x, j] in[b, rows.start[y] + i, cols.start[x] + j, c].
template <typename T>
void resample(const Geometry& g, const Spans& rows, const Spans& cols, const T* in, float* out) {
  parallel_for(g.batch * g.out_h, g.out_w * g.channels * (rows.size * cols.size + 1),
               [&](int64_t begin, int64_t end) {
                 std::vector<float> row(static_cast<size_t>(g.in_w * g.channels));
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t b = r / g.out_h, y = r % g.out_h;
                   std::fill(row.begin(), row.end(), 0.0f);
                   for (int64_t i = 0; i < rows.size; ++i) {
                     const float w = rows.weights[static_cast<size_t>(y * rows.size + i)];
                     if (w == 0.0f) continue;
                     const T* src =
                         in + ((b * g.in_h + rows.starts[static_cast<size_t>(y)] + i) * g.in_w) * g.channels;
                     for (int64_t k = 0; k < g.in_w * g.channels; ++k)
                       row[static_cast<size_t>(k)] += w * static_cast<float>(src[k]);
                   }
                   float* dst = out + r * g.out_w * g.channels;
                   for (int64_t x = 0; x < g.out_w; ++x) {
                     for (int64_t c = 0; c < g.channels; ++c) dst[x * g.channels + c] = 0.0f;
                     for (int64_t j = 0; j < cols.size; ++j) {
                       const float w = cols.weights[static_cast<size_t>(x * cols.size + j)];
                       if (w == 0.0f) continue;
                       const float* src = row.data() + (cols.starts[static_cast<size_t>(x)] + j) * g.channels;
                       for (int64_t c = 0; c < g.channels; ++c) dst[x * g.channels + c] += w * src[c];
                     }
                   }
                 }
               });
}

// The transpose of resample: grads [b, out_h, out_w, c] spread onto [b, in_h, in_w, c].
template <typename T>
void resample_grad(const Geometry& g, const Spans& rows, const Spans& cols, const T* grads, T* out) {
  parallel_for(
      g.batch, g.out_h * g.out_w * g.channels * (rows.size * cols.size + 1), [&](int64_t begin, int64_t end) {
        std::vector<double> acc(static_cast<size_t>(g.in_h * g.in_w * g.channels));
        std::vector<double> row(static_cast<size_t>(g.in_w * g.channels));
        for (int64_t b = begin; b < end; ++b) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t y = 0; y < g.out_h; ++y) {
            std::fill(row.begin(), row.end(), 0.0);
            const T* src = grads + ((b * g.out_h + y) * g.out_w) * g.channels;
            for (int64_t x = 0; x < g.out_w; ++x)
              for (int64_t j = 0; j < cols.size; ++j) {
                const double w = cols.weights[static_cast<size_t>(x * cols.size + j)];
                if (w == 0.0) continue;
                double* dst = row.data() + (cols.starts[static_cast<size_t>(x)] + j) * g.channels;
                for (int64_t c = 0; c < g.channels; ++c)
                  dst[c] += w * static_cast<double>(src[x * g.channels + c]);
              }
            for (int64_t i = 0; i < rows.size; ++i) {
              const double w = rows.weights[static_cast<size_t>(y * rows.size + i)];
              if (w == 0.0) continue;
              double* dst = acc.data() + (rows.starts[static_cast<size_t>(y)] + i) * g.in_w * g.channels;
              for (int64_t k = 0; k < g.in_w * g.channels; ++k) dst[k] += w * row[static_cast<size_t>(k)];
            }
          }
          T* o = out + b * g.in_h * g.in_w * g.channels;
          for (size_t k = 0; k < acc.size(); ++k) o[k] = static_cast<T>(acc[k]);
        }
      });
}

Status check_common(const InferContext& ctx, const Shape& image, int scale, int translation) {
  Kernel k;
  if (!kernel_of(ctx.attr_string(0), &k))
    return invalid_argument(
        ctx.op->name, ": unrecognized kernel type \"", ctx.attr_string(0),
        "\"; expected lanczos1, lanczos3, lanczos5, gaussian, box, triangle, keyscubic or "
        "mitchellcubic");
  EMBER_RETURN_IF_ERROR(image_ops::check_images(ctx.op, "images", image));
  for (int i : {scale, translation}) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && (s.rank() != 1 || (s.dim(0) >= 0 && s.dim(0) != 2)))
      return invalid_argument(ctx.op->name, ": ", ctx.op->inputs[static_cast<size_t>(i)].name,
                              " must be a vector of 2 elements, got shape ", s.to_string());
  }
  return Status::OK();
}

// ScaleAndTranslate(images, size [2], scale [2], translation [2]; kernel_type, antialias) -> float32.
Status scale_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_common(ctx, ctx.inputs[0].shape, 2, 3));
  return image_ops::push_resized(ctx, 1, DType::kFloat32);
}

Status read_factors(const KernelContext& ctx, int scale, int translation, float s[2], float t[2]) {
  for (int i : {scale, translation})
    if (ctx.input(i).num_elements() != 2)
      return invalid_argument(ctx.op->name, ": ", ctx.op->inputs[static_cast<size_t>(i)].name,
                              " must have 2 elements, got shape ", ctx.input(i).shape().to_string());
  for (int d = 0; d < 2; ++d) {
    s[d] = ctx.input(scale).data<float>()[d];
    t[d] = ctx.input(translation).data<float>()[d];
    if (!(s[d] > 0) || !std::isfinite(s[d]))
      return invalid_argument(ctx.op->name, ": scale must be positive and finite, got ", s[d]);
    if (!std::isfinite(t[d]))
      return invalid_argument(ctx.op->name, ": translation must be finite, got ", t[d]);
  }
  return Status::OK();
}

Status scale_kernel(KernelContext& ctx) {
  const TensorImpl& images = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  float s[2], t[2];
  EMBER_RETURN_IF_ERROR(read_factors(ctx, 2, 3, s, t));
  const Shape& in = images.shape();
  if (out.num_elements() == 0) return Status::OK();
  EMBER_RETURN_IF_ERROR(image_ops::check_positive_size(ctx.op, in));
  Kernel k;
  kernel_of(ctx.attr_string(0), &k);
  const bool antialias = ctx.attr_bool(1);
  const Geometry g{in.dim(0), in.dim(1), in.dim(2), out.shape().dim(1), out.shape().dim(2), in.dim(3)};
  const Spans rows = spans_of(k, g.out_h, g.in_h, s[0], t[0], antialias);
  const Spans cols = spans_of(k, g.out_w, g.in_w, s[1], t[1], antialias);
  visit_dtype<kScaleImageTypes>(images.dtype(), [&]<typename T>() {
    resample(g, rows, cols, images.data<T>(), out.mutable_data<float>());
  });
  return Status::OK();
}

// ScaleAndTranslateGrad(grads, original_image, scale, translation; kernel_type, antialias) ->
// original_image's shape, grads' dtype (float32 in TensorFlow; float64 too here).
Status scale_grad_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_common(ctx, ctx.inputs[1].shape, 2, 3));
  const Shape &g = ctx.inputs[0].shape, &img = ctx.inputs[1].shape;
  if (g.rank_known() && g.rank() != 4)
    return invalid_argument(ctx.op->name, ": grads must be 4-D, got shape ", g.to_string());
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, img});
  return Status::OK();
}

Status scale_grad_kernel(KernelContext& ctx) {
  const TensorImpl &grads = ctx.input(0), &image = ctx.input(1);
  float s[2], t[2];
  EMBER_RETURN_IF_ERROR(read_factors(ctx, 2, 3, s, t));
  const Shape &gs = grads.shape(), &in = image.shape();
  EMBER_RETURN_IF_ERROR(image_ops::check_grads_match(ctx.op, gs, in));
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  Kernel k;
  kernel_of(ctx.attr_string(0), &k);
  const bool antialias = ctx.attr_bool(1);
  const Geometry g{in.dim(0), in.dim(1), in.dim(2), gs.dim(1), gs.dim(2), in.dim(3)};
  const Spans rows = spans_of(k, g.out_h, g.in_h, s[0], t[0], antialias);
  const Spans cols = spans_of(k, g.out_w, g.in_w, s[1], t[1], antialias);
  visit_dtype<kGradTypes>(grads.dtype(), [&]<typename T>() {
    resample_grad(g, rows, cols, grads.data<T>(), out.mutable_data<T>());
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

using image_ops::same_attrs;

// As TensorFlow's: a gradient for the images only (float32, and float64 here), through the transpose.
void scale_grad(GradContext& c) {
  const GradTensor image = c.input(0);
  if (!(kGradTypes & dtype_bit(image.dtype()))) return;
  const GradTensor g =
      emit1("ScaleAndTranslateGrad", {c.grad(), image, c.input(2), c.input(3)}, same_attrs(c));
  c.set(0, g.dtype() == image.dtype() ? g : cast(g, image.dtype()));
}

// Linear in grads: its transpose is the resampling itself, back to grads' size.
void scale_grad_grad(GradContext& c) {
  const GradTensor y =
      emit1("ScaleAndTranslate", {c.grad(), image_ops::spatial_size(c.input(0)), c.input(2), c.input(3)},
            same_attrs(c));
  c.set(0, y.dtype() == c.input(0).dtype() ? y : cast(y, c.input(0).dtype()));
}

void scale_attrs(OpBuilder& b) {
  b.attr("kernel_type", AttrType::kString, std::string("lanczos3")).attr("antialias", AttrType::kBool, true);
}

}  // namespace

void register_scale_and_translate_ops(OpRegistry& r) {
  OpBuilder op("ScaleAndTranslate");
  op.doc(
        "Separable resampling of NHWC images to size by a kernel (lanczos3, gaussian, keyscubic, ...) at "
        "(x + 0.5 - translation) / scale, as float32. scale_and_translate([[[[1.], [3.]]]], [1, 1], [1., "
        "0.5], "
        "[0., 0.], \"box\") == [[[[2.]]]]")
      .input("images")
      .input_shape_like("size")
      .input_fixed("scale", kF32)
      .input_fixed("translation", kF32)
      .output("resized_images")
      .type_var(kScaleImageTypes);
  scale_attrs(op);
  op.shape(&scale_shape)
      .kernel(kScaleImageTypes, &scale_kernel)
      .grad(&scale_grad)
      .batching(BatchingRule::kFallback)
      .done(r);

  OpBuilder grad("ScaleAndTranslateGrad");
  grad.doc(
          "The gradient of ScaleAndTranslate: grads spread back onto original_image's shape with the same "
          "weights.")
      .input("grads")
      .input("original_image", 1)  // only its shape is read; any image dtype (float32 only in TensorFlow)
      .input_fixed("scale", kF32)
      .input_fixed("translation", kF32)
      .output("output")
      .type_var(kGradTypes)
      .type_var(kScaleImageTypes, 1);
  scale_attrs(grad);
  grad.shape(&scale_grad_shape)
      .kernel(kGradTypes, &scale_grad_kernel)
      .grad(&scale_grad_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

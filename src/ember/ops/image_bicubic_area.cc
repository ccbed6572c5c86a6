// ResizeBicubic, ResizeBicubicGrad and ResizeArea with TensorFlow's names, operands and attributes: the
// kernels of tf.image.resize's bicubic (without antialias) and area methods and of tf.compat.v1's
// resize_bicubic and resize_area. Registered by register_image_ops (ops/image.cc).
//
// Bicubic weights come from TensorFlow's 1024-step table of the cubic convolution kernel (a = -0.5, Keys,
// with half-pixel centers; a = -0.75 otherwise), the sample's fraction rounded to the nearest step, so
// results agree with TensorFlow's to float rounding, not only to the table's resolution. With half-pixel
// centers, taps outside the image get no weight and the others are renormalised (TensorFlow 2's border rule);
// the legacy rule repeats the edge pixel. Area averages each output pixel's footprint, partial pixels by
// their covered fraction.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ops/gradient.h"
#include "ember/ops/image_common.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kResizeImageTypes = image_ops::kRealImageTypes;
constexpr DTypeSet kGradTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
// ResizeBicubicGrad's result: the image's float dtype (TensorFlow: float32 and float64; 16-bit floats here
// too, so that every float image TensorFlow resizes is differentiable).
constexpr DTypeSet kImageGradTypes = kGradTypes | dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16);
constexpr int64_t kTableSize = 1 << 10;

float resize_scale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// coefficients[2 i] is the kernel at distance i / kTableSize, coefficients[2 i + 1] at 1 + i / kTableSize.
std::vector<float> cubic_table(double a) {
  std::vector<float> t(static_cast<size_t>((kTableSize + 1) * 2));
  for (int64_t i = 0; i <= kTableSize; ++i) {
    float x = static_cast<float>(i * 1.0 / kTableSize);
    t[static_cast<size_t>(i * 2)] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
    x += 1.0f;
    t[static_cast<size_t>(i * 2 + 1)] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
  return t;
}

struct Taps {
  std::array<int64_t, 4> index;
  std::array<float, 4> weight;
};

std::vector<Taps> cubic_taps(int64_t out, int64_t in, bool align_corners, bool half_pixel) {
  static const std::vector<float> keys = cubic_table(-0.5), legacy = cubic_table(-0.75);
  const std::vector<float>& table = half_pixel ? keys : legacy;
  const float scale = resize_scale(in, out, align_corners);
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const float at =
        half_pixel ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
    const int64_t base = static_cast<int64_t>(std::floor(at));
    const int64_t step = lrintf((at - static_cast<float>(base)) * kTableSize);
    const float w[4] = {table[static_cast<size_t>(step * 2 + 1)], table[static_cast<size_t>(step * 2)],
                        table[static_cast<size_t>((kTableSize - step) * 2)],
                        table[static_cast<size_t>((kTableSize - step) * 2 + 1)]};
    Taps& t = taps[static_cast<size_t>(o)];
    float total = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const int64_t want = base - 1 + k;
      t.index[k] = std::clamp<int64_t>(want, 0, in - 1);
      t.weight[k] = !half_pixel || t.index[k] == want ? w[k] : 0.0f;
      total += t.weight[k];
    }
    if (half_pixel && std::abs(total) >= 1000.0f * std::numeric_limits<float>::min())
      for (float& v : t.weight) v *= 1.0f / total;
  }
  return taps;
}

struct Geometry {
  int64_t batch, in_h, in_w, out_h, out_w, channels;
};

template <typename T>
void bicubic(const Geometry& g, const std::vector<Taps>& ys, const std::vector<Taps>& xs, const T* in,
             float* out) {
  parallel_for(g.batch * g.out_h, g.out_w * g.channels * 20 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / g.out_h;
      const Taps& ty = ys[static_cast<size_t>(r % g.out_h)];
      float* dst = out + r * g.out_w * g.channels;
      for (int64_t x = 0; x < g.out_w; ++x) {
        const Taps& tx = xs[static_cast<size_t>(x)];
        for (int64_t c = 0; c < g.channels; ++c) {
          // Down the four rows at each column tap first, then across: TensorFlow's order of float sums.
          float sum = 0.0f;
          for (int j = 0; j < 4; ++j) {
            const T* column = in + (b * g.in_h * g.in_w + tx.index[j]) * g.channels + c;
            float down = 0.0f;
            for (int i = 0; i < 4; ++i)
              down += static_cast<float>(column[ty.index[i] * g.in_w * g.channels]) * ty.weight[i];
            sum += down * tx.weight[j];
          }
          dst[x * g.channels + c] = sum;
        }
      }
    }
  });
}

// The transpose of bicubic, per image (rows of one image may share input pixels).
template <typename G, typename T>
void bicubic_grad(const Geometry& g, const std::vector<Taps>& ys, const std::vector<Taps>& xs, const G* grads,
                  T* out) {
  parallel_for(g.batch, g.out_h * g.out_w * g.channels * 20 + 1, [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(g.in_h * g.in_w * g.channels));
    for (int64_t b = begin; b < end; ++b) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t y = 0; y < g.out_h; ++y) {
        const Taps& ty = ys[static_cast<size_t>(y)];
        for (int64_t x = 0; x < g.out_w; ++x) {
          const Taps& tx = xs[static_cast<size_t>(x)];
          const G* src = grads + ((b * g.out_h + y) * g.out_w + x) * g.channels;
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              const double w = static_cast<double>(ty.weight[i]) * tx.weight[j];
              double* dst = acc.data() + (ty.index[i] * g.in_w + tx.index[j]) * g.channels;
              for (int64_t c = 0; c < g.channels; ++c) dst[c] += w * static_cast<double>(src[c]);
            }
        }
      }
      T* o = out + b * g.in_h * g.in_w * g.channels;
      for (size_t k = 0; k < acc.size(); ++k) o[k] = static_cast<T>(acc[k]);
    }
  });
}

// Each output cell's footprint [o * scale, (o + 1) * scale) as (input index, covered length) pairs.
std::vector<std::vector<std::pair<int64_t, float>>> area_spans(int64_t out, int64_t in, bool align_corners) {
  const float scale = resize_scale(in, out, align_corners);
  std::vector<std::vector<std::pair<int64_t, float>>> spans(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const float lo = static_cast<float>(o) * scale, hi = static_cast<float>(o + 1) * scale;
    for (int64_t i = static_cast<int64_t>(std::floor(lo)); i < static_cast<int64_t>(std::ceil(hi)); ++i) {
      const float f = static_cast<float>(i);
      const float covered = f < lo ? (f + 1 > hi ? scale : f + 1 - lo) : (f + 1 > hi ? hi - f : 1.0f);
      spans[static_cast<size_t>(o)].push_back({std::min(i, in - 1), covered});
    }
  }
  return spans;
}

template <typename T>
void area(const Geometry& g, bool align_corners, const T* in, float* out) {
  const auto ys = area_spans(g.out_h, g.in_h, align_corners), xs = area_spans(g.out_w, g.in_w, align_corners);
  const float norm =
      1.0f / (resize_scale(g.in_h, g.out_h, align_corners) * resize_scale(g.in_w, g.out_w, align_corners));
  parallel_for(g.batch * g.out_h, g.out_w * g.channels * 16 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / g.out_h;
      const auto& sy = ys[static_cast<size_t>(r % g.out_h)];
      float* dst = out + r * g.out_w * g.channels;
      for (int64_t x = 0; x < g.out_w; ++x) {
        const auto& sx = xs[static_cast<size_t>(x)];
        for (int64_t c = 0; c < g.channels; ++c) {
          float sum = 0.0f;
          for (const auto& [i, wy] : sy) {
            float across = 0.0f;
            const T* row = in + ((b * g.in_h + i) * g.in_w) * g.channels + c;
            for (const auto& [j, wx] : sx) across += static_cast<float>(row[j * g.channels]) * wx;
            sum += across * wy;
          }
          dst[x * g.channels + c] = sum * norm;
        }
      }
    }
  });
}

using image_ops::check_images;

// ResizeBicubic(images, size) and ResizeArea(images, size) -> float32 [batch, size, channels].
Status resize_shape(InferContext& ctx) {
  if (ctx.op->name == "ResizeBicubic") EMBER_RETURN_IF_ERROR(image_ops::check_conventions(ctx));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "images", ctx.inputs[0].shape));
  return image_ops::push_resized(ctx, 1, DType::kFloat32);
}

Status bicubic_kernel(KernelContext& ctx) {
  const TensorImpl& images = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  EMBER_RETURN_IF_ERROR(image_ops::check_positive_size(ctx.op, images.shape()));
  const Shape& in = images.shape();
  const Geometry g{in.dim(0), in.dim(1), in.dim(2), out.shape().dim(1), out.shape().dim(2), in.dim(3)};
  const bool align = ctx.attr_bool(0), half = ctx.attr_bool(1);
  const auto ys = cubic_taps(g.out_h, g.in_h, align, half), xs = cubic_taps(g.out_w, g.in_w, align, half);
  visit_dtype<kResizeImageTypes>(
      images.dtype(), [&]<typename T>() { bicubic(g, ys, xs, images.data<T>(), out.mutable_data<float>()); });
  return Status::OK();
}

Status area_kernel(KernelContext& ctx) {
  const TensorImpl& images = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  EMBER_RETURN_IF_ERROR(image_ops::check_positive_size(ctx.op, images.shape()));
  const Shape& in = images.shape();
  const Geometry g{in.dim(0), in.dim(1), in.dim(2), out.shape().dim(1), out.shape().dim(2), in.dim(3)};
  visit_dtype<kResizeImageTypes>(images.dtype(), [&]<typename T>() {
    area(g, ctx.attr_bool(0), images.data<T>(), out.mutable_data<float>());
  });
  return Status::OK();
}

// ResizeBicubicGrad(grads, original_image) -> original_image's shape and dtype.
Status bicubic_grad_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(image_ops::check_conventions(ctx));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "grads", ctx.inputs[0].shape));
  EMBER_RETURN_IF_ERROR(check_images(ctx.op, "original_image", ctx.inputs[1].shape));
  ctx.outputs.push_back(ctx.inputs[1]);
  return Status::OK();
}

Status bicubic_grad_kernel(KernelContext& ctx) {
  const TensorImpl &grads = ctx.input(0), &image = ctx.input(1);
  const Shape &gs = grads.shape(), &in = image.shape();
  EMBER_RETURN_IF_ERROR(image_ops::check_grads_match(ctx.op, gs, in));
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  const Geometry g{in.dim(0), in.dim(1), in.dim(2), gs.dim(1), gs.dim(2), in.dim(3)};
  const bool align = ctx.attr_bool(0), half = ctx.attr_bool(1);
  const auto ys = cubic_taps(g.out_h, g.in_h, align, half), xs = cubic_taps(g.out_w, g.in_w, align, half);
  visit_dtype<kGradTypes>(grads.dtype(), [&]<typename G>() {
    visit_dtype<kGradTypes>(
        out.dtype(), [&]<typename T>() { bicubic_grad(g, ys, xs, grads.data<G>(), out.mutable_data<T>()); });
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

using image_ops::same_attrs;

// Float images only (TensorFlow: float32 and float64).
void bicubic_grad_rule(GradContext& c) {
  if (!(kImageGradTypes & dtype_bit(c.input(0).dtype()))) return;
  c.set(0, emit1("ResizeBicubicGrad", {c.grad(), c.input(0)}, same_attrs(c)));
}

// Linear in grads: its transpose is the resize itself, back to grads' size.
void bicubic_grad_grad(GradContext& c) {
  const GradTensor y = emit1("ResizeBicubic", {c.grad(), image_ops::spatial_size(c.input(0))}, same_attrs(c));
  c.set(0, y.dtype() == c.input(0).dtype() ? y : cast(y, c.input(0).dtype()));
}

}  // namespace

void register_bicubic_area_ops(OpRegistry& r) {
  OpBuilder("ResizeBicubic")
      .doc(
          "Bicubic resize of NHWC images to size [new_height, new_width], as float32 (Keys' a = -0.5 with "
          "half_pixel_centers). resize_bicubic([[[[1.], [2.]]]], [1, 2], half_pixel_centers=True) == "
          "[[[[1.], [2.]]]]")
      .input("images")
      .input_shape_like("size")
      .output("resized_images")
      .type_var(kResizeImageTypes)
      .attr("align_corners", AttrType::kBool, false)
      .attr("half_pixel_centers", AttrType::kBool, false)
      .shape(&resize_shape)
      .kernel(kResizeImageTypes, &bicubic_kernel)
      .grad(&bicubic_grad_rule)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("ResizeBicubicGrad")
      .doc(
          "The gradient of ResizeBicubic: grads (float32 in TensorFlow, float64 too here) spread back onto "
          "original_image's shape and dtype.")
      .input("grads", 1)
      .input("original_image")
      .output("output")
      .type_var(kImageGradTypes)
      .type_var(kGradTypes, 1)
      .dispatch_on_input(1)
      .attr("align_corners", AttrType::kBool, false)
      .attr("half_pixel_centers", AttrType::kBool, false)
      .shape(&bicubic_grad_shape)
      .kernel(kImageGradTypes, &bicubic_grad_kernel)
      .grad(&bicubic_grad_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("ResizeArea")
      .doc(
          "Area resize of NHWC images to size [new_height, new_width], as float32: each output pixel the "
          "mean "
          "of the input area it covers. resize_area([[[[1.], [3.]]]], [1, 1]) == [[[[2.]]]]")
      .input("images")
      .input_shape_like("size")
      .output("resized_images")
      .type_var(kResizeImageTypes)
      .attr("align_corners", AttrType::kBool, false)
      .flags(kNotDifferentiable)  // as TensorFlow, which registers no gradient for it
      .shape(&resize_shape)
      .kernel(kResizeImageTypes, &area_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

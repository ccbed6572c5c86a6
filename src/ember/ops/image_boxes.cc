// The box ops of tf.image with TensorFlow's names, operands, attributes and errors: CropAndResize and its two
// gradient ops (CropAndResizeGradImage, CropAndResizeGradBoxes), and non-max suppression
// (NonMaxSuppressionV3, V4, V5, NonMaxSuppressionWithOverlaps, CombinedNonMaxSuppression).
//
// Sample points, interpolation and IoU are computed in float as TensorFlow's kernels compute them, so crops
// agree to float rounding and suppression selects the same boxes. The candidates' order is TensorFlow's too
// (Note [Candidate order]). Registered by register_image_ops (ops/image.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/ops/gradient.h"
#include "ember/ops/image_common.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kCropImageTypes = image_ops::kRealImageTypes;
constexpr DTypeSet kCropGradTypes =
    dtype_bit(DType::kFloat16) | dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
constexpr DTypeSet kNmsTypes = dtype_bit(DType::kFloat16) | dtype_bit(DType::kFloat32);
constexpr DTypeSet kF32 = dtype_bit(DType::kFloat32);
constexpr DTypeSet kI32 = dtype_bit(DType::kInt32);

// ---- Shared checks

Status check_rank(const OpDef* op, const char* what, const Shape& s, int rank) {
  if (s.rank_known() && s.rank() != rank)
    return invalid_argument(op->name, ": ", what, " must be ", rank, "-D, got shape ", s.to_string());
  return Status::OK();
}

Status check_method(const OpDef* op, const std::string& method, bool nearest_allowed) {
  if (method == "bilinear" || (nearest_allowed && method == "nearest")) return Status::OK();
  return invalid_argument(op->name, ": method must be \"bilinear\"", nearest_allowed ? " or \"nearest\"" : "",
                          ", got \"", method, "\"");
}

// boxes [num_boxes, 4] and box_ind [num_boxes], as far as tracing knows them.
Status check_boxes_shape(const InferContext& ctx, int boxes, int box_ind, int64_t* num_boxes) {
  const Shape& b = ctx.inputs[boxes].shape;
  const Shape& i = ctx.inputs[box_ind].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "boxes", b, 2));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "box_ind", i, 1));
  if (b.rank_known() && b.dim(1) >= 0 && b.dim(1) != 4)
    return invalid_argument(ctx.op->name, ": boxes must have 4 columns, got shape ", b.to_string());
  *num_boxes = b.rank_known() ? b.dim(0) : kUnknownDim;
  if (i.rank_known() && i.dim(0) >= 0) {
    if (*num_boxes >= 0 && i.dim(0) != *num_boxes)
      return invalid_argument(ctx.op->name, ": box_ind has incompatible shape: boxes ", b.to_string(),
                              ", box_ind ", i.to_string());
    *num_boxes = i.dim(0);
  }
  return Status::OK();
}

// The run-time checks TensorFlow's kernels make on boxes and box_ind (after the shapes): finite boxes
// (CropAndResize only) and box indices within the batch (OutOfRange, as TensorFlow).
Status check_boxes(const OpDef* op, const TensorImpl& boxes, const TensorImpl& box_ind, int64_t batch,
                   bool require_finite) {
  if (boxes.rank() != 2 || boxes.shape().dim(1) != 4)
    return invalid_argument(op->name, ": boxes must be 2-D with 4 columns, got shape ",
                            boxes.shape().to_string());
  if (box_ind.rank() != 1 || box_ind.shape().dim(0) != boxes.shape().dim(0))
    return invalid_argument(op->name, ": box_ind has incompatible shape: boxes ", boxes.shape().to_string(),
                            ", box_ind ", box_ind.shape().to_string());
  if (require_finite) {
    const float* b = boxes.data<float>();
    for (int64_t k = 0; k < boxes.num_elements(); ++k)
      if (!std::isfinite(b[k]))
        return invalid_argument(op->name, ": boxes contains at least one element that is not finite: ", b[k],
                                " at box ", k / 4);
  }
  const int32_t* ind = box_ind.data<int32_t>();
  for (int64_t k = 0; k < box_ind.num_elements(); ++k)
    if (ind[k] < 0 || ind[k] >= batch)
      return make_error(Code::kOutOfRange, op->name, ": box_index has values outside [0, batch_size): box ",
                        k, " has index ", ind[k], ", batch_size ", batch);
  return Status::OK();
}

// ---- CropAndResize
//
// Box b = [y1, x1, y2, x2] in normalized coordinates samples crop row y at image row
// y1 * (height - 1) + y * (y2 - y1) * (height - 1) / (crop_height - 1) (the box's centre for a crop of one
// row); a sample outside the image takes extrapolation_value.

struct CropGeometry {
  int64_t batch, height, width, depth, num_boxes, crop_height, crop_width;
};

// Where crop row (or column) `i` samples the image, in image pixels; `extent` is height or width.
struct Axis {
  float start, scale, centre;
  bool single;
  float at(int64_t i) const { return single ? centre : start + static_cast<float>(i) * scale; }
};
Axis axis_of(float lo, float hi, int64_t extent, int64_t crop) {
  const float last = static_cast<float>(extent - 1);
  Axis a;
  a.single = crop <= 1;
  a.scale = a.single ? 0.0f : (hi - lo) * last / static_cast<float>(crop - 1);
  a.start = lo * last;
  a.centre = 0.5f * (lo + hi) * last;
  return a;
}

// Where crop row (or column) i samples the image: the pixels below and above and the fraction between them;
// not `inside` where the sample leaves the image (extrapolation_value there, and no gradient).
struct Tap {
  bool inside;
  int64_t lo, hi;
  float frac, at;
};
Tap tap_of(const Axis& a, int64_t i, int64_t extent) {
  const float at = a.at(i);
  if (at < 0 || at > static_cast<float>(extent - 1)) return {false, 0, 0, 0.0f, at};
  const int64_t lo = static_cast<int64_t>(std::floor(at));
  return {true, lo, static_cast<int64_t>(std::ceil(at)), at - static_cast<float>(lo), at};
}

template <typename T>
void crop_and_resize(const CropGeometry& g, const T* image, const float* boxes, const int32_t* box_ind,
                     bool nearest, float extrapolation, float* out) {
  const int64_t row_size = g.crop_width * g.depth;
  parallel_for(g.num_boxes * g.crop_height, row_size * 8 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / g.crop_height, y = row % g.crop_height;
      const float* box = boxes + b * 4;
      const Axis ay = axis_of(box[0], box[2], g.height, g.crop_height);
      const Axis ax = axis_of(box[1], box[3], g.width, g.crop_width);
      const T* img = image + static_cast<int64_t>(box_ind[b]) * g.height * g.width * g.depth;
      float* o = out + row * row_size;
      const Tap ty = tap_of(ay, y, g.height);
      if (!ty.inside) {
        std::fill(o, o + row_size, extrapolation);
        continue;
      }
      for (int64_t x = 0; x < g.crop_width; ++x) {
        float* ox = o + x * g.depth;
        const Tap tx = tap_of(ax, x, g.width);
        if (!tx.inside) {
          std::fill(ox, ox + g.depth, extrapolation);
          continue;
        }
        if (nearest) {
          const T* p = img + (static_cast<int64_t>(std::round(ty.at)) * g.width +
                              static_cast<int64_t>(std::round(tx.at))) *
                                 g.depth;
          for (int64_t d = 0; d < g.depth; ++d) ox[d] = static_cast<float>(p[d]);
          continue;
        }
        const T* tl = img + (ty.lo * g.width + tx.lo) * g.depth;
        const T* tr = img + (ty.lo * g.width + tx.hi) * g.depth;
        const T* bl = img + (ty.hi * g.width + tx.lo) * g.depth;
        const T* br = img + (ty.hi * g.width + tx.hi) * g.depth;
        for (int64_t d = 0; d < g.depth; ++d) {
          const float t =
              static_cast<float>(tl[d]) + (static_cast<float>(tr[d]) - static_cast<float>(tl[d])) * tx.frac;
          const float bt =
              static_cast<float>(bl[d]) + (static_cast<float>(br[d]) - static_cast<float>(bl[d])) * tx.frac;
          ox[d] = t + (bt - t) * ty.frac;
        }
      }
    }
  });
}

// The gradient of CropAndResize with respect to the image: each crop element's gradient spread onto the
// pixels it interpolated (the one it copied, for nearest). Serial: boxes may overlap.
template <typename T>
void crop_and_resize_grad_image(const CropGeometry& g, const float* grads, const float* boxes,
                                const int32_t* box_ind, bool nearest, T* out) {
  std::vector<float> acc(static_cast<size_t>(g.batch * g.height * g.width * g.depth), 0.0f);
  for (int64_t b = 0; b < g.num_boxes; ++b) {
    const float* box = boxes + b * 4;
    const Axis ay = axis_of(box[0], box[2], g.height, g.crop_height);
    const Axis ax = axis_of(box[1], box[3], g.width, g.crop_width);
    float* img = acc.data() + static_cast<int64_t>(box_ind[b]) * g.height * g.width * g.depth;
    for (int64_t y = 0; y < g.crop_height; ++y) {
      const Tap ty = tap_of(ay, y, g.height);
      if (!ty.inside) continue;
      for (int64_t x = 0; x < g.crop_width; ++x) {
        const Tap tx = tap_of(ax, x, g.width);
        if (!tx.inside) continue;
        const float* gd = grads + ((b * g.crop_height + y) * g.crop_width + x) * g.depth;
        if (nearest) {
          float* p = img + (static_cast<int64_t>(std::round(ty.at)) * g.width +
                            static_cast<int64_t>(std::round(tx.at))) *
                               g.depth;
          for (int64_t d = 0; d < g.depth; ++d) p[d] += gd[d];
          continue;
        }
        for (int64_t d = 0; d < g.depth; ++d) {
          const float dtop = (1 - ty.frac) * gd[d], dbottom = ty.frac * gd[d];
          img[(ty.lo * g.width + tx.lo) * g.depth + d] += dtop * (1 - tx.frac);
          img[(ty.lo * g.width + tx.hi) * g.depth + d] += dtop * tx.frac;
          img[(ty.hi * g.width + tx.lo) * g.depth + d] += dbottom * (1 - tx.frac);
          img[(ty.hi * g.width + tx.hi) * g.depth + d] += dbottom * tx.frac;
        }
      }
    }
  }
  for (size_t k = 0; k < acc.size(); ++k) out[k] = static_cast<T>(acc[k]);
}

// The gradient of (bilinear) CropAndResize with respect to the box coordinates: the image's slope at each
// sample point times how the sample point moves with y1, x1, y2 and x2.
template <typename T>
void crop_and_resize_grad_boxes(const CropGeometry& g, const float* grads, const T* image, const float* boxes,
                                const int32_t* box_ind, float* out) {
  const float last_y = static_cast<float>(g.height - 1), last_x = static_cast<float>(g.width - 1);
  const float y_ratio = g.crop_height > 1 ? last_y / static_cast<float>(g.crop_height - 1) : 0.0f;
  const float x_ratio = g.crop_width > 1 ? last_x / static_cast<float>(g.crop_width - 1) : 0.0f;
  parallel_for(g.num_boxes, g.crop_height * g.crop_width * g.depth * 16 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* box = boxes + b * 4;
      const Axis ay = axis_of(box[0], box[2], g.height, g.crop_height);
      const Axis ax = axis_of(box[1], box[3], g.width, g.crop_width);
      const T* img = image + static_cast<int64_t>(box_ind[b]) * g.height * g.width * g.depth;
      float* o = out + b * 4;
      std::fill(o, o + 4, 0.0f);
      for (int64_t y = 0; y < g.crop_height; ++y) {
        const Tap ty = tap_of(ay, y, g.height);
        if (!ty.inside) continue;
        // How the sample row moves with y1 and with y2 (both halves of the centre for a single row).
        const float dy1 = g.crop_height > 1 ? last_y - static_cast<float>(y) * y_ratio : 0.5f * last_y;
        const float dy2 = g.crop_height > 1 ? static_cast<float>(y) * y_ratio : 0.5f * last_y;
        for (int64_t x = 0; x < g.crop_width; ++x) {
          const Tap tx = tap_of(ax, x, g.width);
          if (!tx.inside) continue;
          const float dx1 = g.crop_width > 1 ? last_x - static_cast<float>(x) * x_ratio : 0.5f * last_x;
          const float dx2 = g.crop_width > 1 ? static_cast<float>(x) * x_ratio : 0.5f * last_x;
          const float* gd = grads + ((b * g.crop_height + y) * g.crop_width + x) * g.depth;
          for (int64_t d = 0; d < g.depth; ++d) {
            const float tl = static_cast<float>(img[(ty.lo * g.width + tx.lo) * g.depth + d]);
            const float tr = static_cast<float>(img[(ty.lo * g.width + tx.hi) * g.depth + d]);
            const float bl = static_cast<float>(img[(ty.hi * g.width + tx.lo) * g.depth + d]);
            const float br = static_cast<float>(img[(ty.hi * g.width + tx.hi) * g.depth + d]);
            const float slope_y = (1 - tx.frac) * (bl - tl) + tx.frac * (br - tr);
            const float slope_x = (1 - ty.frac) * (tr - tl) + ty.frac * (br - bl);
            const float dy = gd[d] * slope_y, dx = gd[d] * slope_x;
            o[0] += dy * dy1;
            o[2] += dy * dy2;
            o[1] += dx * dx1;
            o[3] += dx * dx2;
          }
        }
      }
    }
  });
}

// CropAndResize(image [batch, h, w, depth], boxes [n, 4], box_ind [n], crop_size [2]) -> float32
// [n, crop_h, crop_w, depth].
Status crop_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_method(ctx.op, ctx.attr_string(0), true));
  const Shape& img = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "image", img, 4));
  int64_t n = kUnknownDim;
  EMBER_RETURN_IF_ERROR(check_boxes_shape(ctx, 1, 2, &n));
  StatusOr<Shape> size = ctx.shape_operand(3);
  EMBER_RETURN_IF_ERROR(size.status());
  int64_t ch = kUnknownDim, cw = kUnknownDim;
  if (size->rank_known()) {
    if (size->rank() != 2)
      return invalid_argument(ctx.op->name, ": crop_size must have two elements, got ", size->to_string());
    ch = size->dim(0), cw = size->dim(1);
    if (ch == 0 || cw == 0 || ch < kUnknownDim || cw < kUnknownDim)
      return invalid_argument(ctx.op->name, ": crop dimensions must be positive, got ", size->to_string());
  }
  ctx.outputs.push_back(
      TensorSpec{DType::kFloat32, Shape{n, ch, cw, img.rank_known() ? img.dim(3) : kUnknownDim}});
  return Status::OK();
}

CropGeometry geometry(const Shape& image, const TensorImpl& boxes, const Shape& crops) {
  return {image.dim(0),         image.dim(1), image.dim(2), image.dim(3),
          boxes.shape().dim(0), crops.dim(1), crops.dim(2)};
}

Status check_image_dims(const OpDef* op, const Shape& image) {
  if (image.dim(1) <= 0 || image.dim(2) <= 0)
    return invalid_argument(op->name, ": image dimensions must be positive, got ", image.to_string());
  return Status::OK();
}

Status crop_kernel(KernelContext& ctx) {
  const TensorImpl &image = ctx.input(0), &boxes = ctx.input(1), &box_ind = ctx.input(2);
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  EMBER_RETURN_IF_ERROR(check_image_dims(ctx.op, image.shape()));
  EMBER_RETURN_IF_ERROR(check_boxes(ctx.op, boxes, box_ind, image.shape().dim(0), true));
  const CropGeometry g = geometry(image.shape(), boxes, out.shape());
  const bool nearest = ctx.attr_string(0) == "nearest";
  const float extrapolation = static_cast<float>(ctx.attr_float(1));
  visit_dtype<kCropImageTypes>(image.dtype(), [&]<typename T>() {
    crop_and_resize(g, image.data<T>(), boxes.data<float>(), box_ind.data<int32_t>(), nearest, extrapolation,
                    out.mutable_data<float>());
  });
  return Status::OK();
}

// CropAndResizeGradImage(grads [n, crop_h, crop_w, depth], boxes, box_ind, image_size [4]; T, method) ->
// T [image_size].
Status grad_image_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_method(ctx.op, ctx.attr_string(1), true));
  const DType t = ctx.attr_dtype(0);
  if (!(kCropGradTypes & dtype_bit(t)))
    return invalid_argument(ctx.op->name, ": T must be float16, float32 or float64, got ", dtype_name(t));
  const Shape& g = ctx.inputs[0].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "grads", g, 4));
  int64_t n = kUnknownDim;
  EMBER_RETURN_IF_ERROR(check_boxes_shape(ctx, 1, 2, &n));
  StatusOr<Shape> size = ctx.shape_operand(3);
  EMBER_RETURN_IF_ERROR(size.status());
  if (size->rank_known() && size->rank() != 4)
    return invalid_argument(ctx.op->name, ": image_size must have 4 elements, got ", size->to_string());
  if (size->rank_known() && g.rank_known() && size->dim(3) >= 0 && g.dim(3) >= 0 && size->dim(3) != g.dim(3))
    return invalid_argument(ctx.op->name, ": image_size and grads are incompatible: image_size ",
                            size->to_string(), ", grads ", g.to_string());
  ctx.outputs.push_back(TensorSpec{t, size.value()});
  return Status::OK();
}

Status grad_image_kernel(KernelContext& ctx) {
  const TensorImpl &grads = ctx.input(0), &boxes = ctx.input(1), &box_ind = ctx.input(2);
  TensorImpl& out = ctx.output(0);
  const Shape& image = out.shape();
  if (grads.shape().dim(0) != boxes.shape().dim(0))
    return invalid_argument(ctx.op->name, ": boxes and grads have incompatible shape: boxes ",
                            boxes.shape().to_string(), ", grads ", grads.shape().to_string());
  if (image.dim(3) != grads.shape().dim(3))
    return invalid_argument(ctx.op->name, ": image_size and grads are incompatible: image_size ",
                            image.to_string(), ", grads ", grads.shape().to_string());
  EMBER_RETURN_IF_ERROR(check_image_dims(ctx.op, image));
  EMBER_RETURN_IF_ERROR(check_boxes(ctx.op, boxes, box_ind, image.dim(0), false));
  const CropGeometry g = geometry(image, boxes, grads.shape());
  const bool nearest = ctx.attr_string(1) == "nearest";
  visit_dtype<kCropGradTypes>(out.dtype(), [&]<typename T>() {
    crop_and_resize_grad_image(g, grads.data<float>(), boxes.data<float>(), box_ind.data<int32_t>(), nearest,
                               out.mutable_data<T>());
  });
  return Status::OK();
}

// CropAndResizeGradBoxes(grads, image, boxes, box_ind; method = "bilinear") -> float32 [n, 4].
Status grad_boxes_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_method(ctx.op, ctx.attr_string(0), false));
  const Shape &g = ctx.inputs[0].shape, &img = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "grads", g, 4));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "image", img, 4));
  int64_t n = kUnknownDim;
  EMBER_RETURN_IF_ERROR(check_boxes_shape(ctx, 2, 3, &n));
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape{n, 4}});
  return Status::OK();
}

Status grad_boxes_kernel(KernelContext& ctx) {
  const TensorImpl &grads = ctx.input(0), &image = ctx.input(1), &boxes = ctx.input(2),
                   &box_ind = ctx.input(3);
  if (grads.shape().dim(0) != boxes.shape().dim(0))
    return invalid_argument(ctx.op->name, ": boxes and grads have incompatible shape: boxes ",
                            boxes.shape().to_string(), ", grads ", grads.shape().to_string());
  if (image.shape().dim(3) != grads.shape().dim(3))
    return invalid_argument(ctx.op->name, ": image, grads depth differ: image ", image.shape().to_string(),
                            ", grads ", grads.shape().to_string());
  if (boxes.shape().dim(0) == 0) return Status::OK();
  EMBER_RETURN_IF_ERROR(check_image_dims(ctx.op, image.shape()));
  EMBER_RETURN_IF_ERROR(check_boxes(ctx.op, boxes, box_ind, image.shape().dim(0), false));
  const CropGeometry g = geometry(image.shape(), boxes, grads.shape());
  visit_dtype<kCropImageTypes>(image.dtype(), [&]<typename T>() {
    crop_and_resize_grad_boxes(g, grads.data<float>(), image.data<T>(), boxes.data<float>(),
                               box_ind.data<int32_t>(), ctx.output(0).mutable_data<float>());
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// As TensorFlow's: the image's gradient for float images only, the boxes' always from the bilinear rule
// (also for method "nearest", whose crops are piecewise constant in the boxes), none for box_ind and
// crop_size.
void crop_grad(GradContext& c) {
  const GradTensor image = c.input(0);
  const DType t = image.dtype();
  if (kCropGradTypes & dtype_bit(t))
    c.set(0, emit1("CropAndResizeGradImage", {c.grad(), c.input(1), c.input(2), shape_of(image)},
                   AttrList{AttrValue{t}, AttrValue{c.attr_string(0)}}));
  c.set(1, emit1("CropAndResizeGradBoxes", {c.grad(), image, c.input(1), c.input(2)},
                 AttrList{AttrValue{std::string("bilinear")}}));
}

// ---- Non-max suppression
//
// Note [Candidate order]
// Candidates are taken best score first. NonMaxSuppressionV3/V4/V5 break ties by the lower box index (their
// queue compares both), so their order is fully defined. CombinedNonMaxSuppression's queue compares scores
// only and its final ranking is an unstable sort by score, so equal scores come out in the order the
// standard library's binary heap and introsort leave them: the same std::priority_queue over a vector and
// std::sort as TensorFlow's kernel, fed in the same order, reproduce it.

float iou(const float* a, const float* b) {
  const float ymin_a = std::min(a[0], a[2]), xmin_a = std::min(a[1], a[3]);
  const float ymax_a = std::max(a[0], a[2]), xmax_a = std::max(a[1], a[3]);
  const float ymin_b = std::min(b[0], b[2]), xmin_b = std::min(b[1], b[3]);
  const float ymax_b = std::max(b[0], b[2]), xmax_b = std::max(b[1], b[3]);
  const float area_a = (ymax_a - ymin_a) * (xmax_a - xmin_a), area_b = (ymax_b - ymin_b) * (xmax_b - xmin_b);
  if (area_a <= 0 || area_b <= 0) return 0.0f;
  const float inter = std::max(std::min(ymax_a, ymax_b) - std::max(ymin_a, ymin_b), 0.0f) *
                      std::max(std::min(xmax_a, xmax_b) - std::max(xmin_a, xmin_b), 0.0f);
  return inter / (area_a + area_b - inter);
}

// Scores and thresholds of dtype T (float or float16); products rounded to T as TensorFlow computes them.
template <typename T>
T in_t(float v) {
  return static_cast<T>(v);
}

struct NmsResult {
  std::vector<int32_t> selected;
  std::vector<float> scores;
};

/// Greedy (or, with soft_nms_sigma > 0, Gaussian soft) suppression over `similarity(i, j)`, as TensorFlow's
/// NonMaxSuppressionV5 selects: a candidate is compared once with each box selected since it was last looked
/// at; hard suppression drops it when the similarity exceeds the threshold, soft suppression lowers its score
/// and puts it back unless the score fell to score_threshold.
template <typename T, typename Similarity>
NmsResult greedy_nms(const T* scores, int64_t num_boxes, int64_t max_output, float threshold_f,
                     float score_threshold_f, float sigma_f, Similarity similarity) {
  const T threshold = in_t<T>(threshold_f), score_threshold = in_t<T>(score_threshold_f);
  const T sigma = in_t<T>(sigma_f);
  struct Candidate {
    int32_t index;
    T score;
    int64_t compared_up_to;  // selected boxes before this one have been compared with it
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    const float sa = static_cast<float>(a.score), sb = static_cast<float>(b.score);
    return (sa == sb && a.index > b.index) || sa < sb;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  for (int64_t i = 0; i < num_boxes; ++i)
    if (static_cast<float>(scores[i]) > static_cast<float>(score_threshold))
      queue.push({static_cast<int32_t>(i), scores[i], 0});
  const bool soft = static_cast<float>(sigma) > 0;
  const T scale = soft ? in_t<T>(-0.5f / static_cast<float>(sigma)) : in_t<T>(0.0f);
  NmsResult r;
  while (static_cast<int64_t>(r.selected.size()) < max_output && !queue.empty()) {
    Candidate next = queue.top();
    queue.pop();
    const float original = static_cast<float>(next.score);
    bool hard_suppressed = false;
    for (int64_t j = static_cast<int64_t>(r.selected.size()) - 1; j >= next.compared_up_to; --j) {
      const T sim = in_t<T>(similarity(next.index, r.selected[j]));
      const float s = static_cast<float>(sim);
      const T weight = in_t<T>(std::exp(
          static_cast<float>(in_t<T>(static_cast<float>(in_t<T>(static_cast<float>(scale) * s)) * s))));
      const T applied = soft || s <= static_cast<float>(threshold) ? weight : in_t<T>(0.0f);
      next.score = in_t<T>(static_cast<float>(next.score) * static_cast<float>(applied));
      if (!soft && s > static_cast<float>(threshold)) {
        hard_suppressed = true;
        break;
      }
      if (static_cast<float>(next.score) <= static_cast<float>(score_threshold)) break;
    }
    next.compared_up_to = static_cast<int64_t>(r.selected.size());
    if (hard_suppressed) continue;
    if (static_cast<float>(next.score) == original) {
      r.selected.push_back(next.index);
      r.scores.push_back(static_cast<float>(next.score));
    } else if (static_cast<float>(next.score) > static_cast<float>(score_threshold)) {
      queue.push(next);
    }
  }
  return r;
}

float scalar_of(const TensorImpl& t) {
  return t.dtype() == DType::kFloat16 ? static_cast<float>(t.data<float16>()[0]) : t.data<float>()[0];
}

Status check_scalar(const OpDef* op, const char* what, const Shape& s) {
  if (s.rank_known() && s.rank() != 0)
    return invalid_argument(op->name, ": ", what, " must be 0-D, got shape ", s.to_string());
  return Status::OK();
}

// The operands [boxes (or overlaps), scores, max_output_size, thresholds...] as far as tracing knows them.
Status check_nms_operands(const InferContext& ctx, bool overlaps) {
  const Shape &b = ctx.inputs[0].shape, &s = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, overlaps ? "overlaps" : "boxes", b, 2));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "scores", s, 1));
  if (b.rank_known() && !overlaps && b.dim(1) >= 0 && b.dim(1) != 4)
    return invalid_argument(ctx.op->name, ": boxes must have 4 columns, got shape ", b.to_string());
  if (b.rank_known() && overlaps && b.dim(0) >= 0 && b.dim(1) >= 0 && b.dim(0) != b.dim(1))
    return invalid_argument(ctx.op->name, ": overlaps must be square, got shape ", b.to_string());
  if (b.rank_known() && s.rank_known() && b.dim(0) >= 0 && s.dim(0) >= 0 && b.dim(0) != s.dim(0))
    return invalid_argument(ctx.op->name,
                            ": scores has incompatible shape: ", overlaps ? "overlaps " : "boxes ",
                            b.to_string(), ", scores ", s.to_string());
  static const char* const kNames[] = {"max_output_size", "iou_threshold", "score_threshold",
                                       "soft_nms_sigma"};
  for (size_t i = 2; i < ctx.inputs.size(); ++i)
    EMBER_RETURN_IF_ERROR(
        check_scalar(ctx.op, overlaps && i == 3 ? "overlap_threshold" : kNames[i - 2], ctx.inputs[i].shape));
  return Status::OK();
}

// The length of a padded result: max_output_size where it is a constant.
int64_t known_int(const InferContext& ctx, int i) {
  const TensorImpl* c = ctx.constant(i);
  return c != nullptr && c->num_elements() == 1 ? c->data<int32_t>()[0] : kUnknownDim;
}

// V3 and WithOverlaps: selected_indices; V4: and valid_outputs; V5: selected_indices, selected_scores,
// valid_outputs. Padded results have max_output_size elements.
Status nms_shape(InferContext& ctx) {
  const bool overlaps = ctx.op->name == "NonMaxSuppressionWithOverlaps";
  EMBER_RETURN_IF_ERROR(check_nms_operands(ctx, overlaps));
  const int pad_attr = ctx.op->attr_index("pad_to_max_output_size");
  const bool padded = pad_attr >= 0 && ctx.attr_bool(pad_attr);
  const int64_t max_output = known_int(ctx, 2);
  if (max_output != kUnknownDim && max_output < 0)
    return invalid_argument(ctx.op->name, ": output size must be non-negative, got max_output_size ",
                            max_output);
  const Shape selected{padded ? max_output : kUnknownDim};
  ctx.outputs.push_back(TensorSpec{DType::kInt32, selected});
  if (ctx.op->name == "NonMaxSuppressionV5") ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, selected});
  if (ctx.op->name != "NonMaxSuppressionV3" && !overlaps)
    ctx.outputs.push_back(TensorSpec{DType::kInt32, Shape{}});
  return Status::OK();
}

Status check_nms_run(const KernelContext& ctx, bool overlaps, int64_t* max_output) {
  const Shape &b = ctx.input(0).shape(), &s = ctx.input(1).shape();
  if (b.rank() != 2 || (!overlaps && b.dim(1) != 4) || (overlaps && b.dim(0) != b.dim(1)))
    return invalid_argument(ctx.op->name,
                            overlaps ? ": overlaps must be 2-D and square"
                                     : ": boxes must be 2-D "
                                       "with 4 columns",
                            ", got shape ", b.to_string());
  if (s.rank() != 1 || s.dim(0) != b.dim(0))
    return invalid_argument(ctx.op->name,
                            ": scores has incompatible shape: ", overlaps ? "overlaps " : "boxes ",
                            b.to_string(), ", scores ", s.to_string());
  for (size_t i = 2; i < ctx.inputs.size(); ++i)
    if (ctx.input(static_cast<int>(i)).rank() != 0)
      return invalid_argument(ctx.op->name, ": input ", ctx.op->inputs[i].name, " must be 0-D, got shape ",
                              ctx.input(static_cast<int>(i)).shape().to_string());
  *max_output = ctx.input(2).data<int32_t>()[0];
  if (*max_output < 0)
    return invalid_argument(ctx.op->name, ": output size must be non-negative, got max_output_size ",
                            *max_output);
  const float threshold = scalar_of(ctx.input(3));
  if (!overlaps && !(threshold >= 0 && threshold <= 1))
    return invalid_argument(ctx.op->name, ": iou_threshold must be in [0, 1], got ", threshold);
  if (ctx.inputs.size() > 5 && !(scalar_of(ctx.input(5)) >= 0))
    return invalid_argument(ctx.op->name, ": soft_nms_sigma must be >= 0, got ", scalar_of(ctx.input(5)));
  return Status::OK();
}

Status nms_kernel(KernelContext& ctx) {
  const bool overlaps = ctx.op->name == "NonMaxSuppressionWithOverlaps";
  int64_t max_output = 0;
  EMBER_RETURN_IF_ERROR(check_nms_run(ctx, overlaps, &max_output));
  const TensorImpl &boxes = ctx.input(0), &scores = ctx.input(1);
  const int64_t n = boxes.shape().dim(0);
  const float threshold = scalar_of(ctx.input(3));
  const float score_threshold =
      ctx.inputs.size() > 4 ? scalar_of(ctx.input(4)) : std::numeric_limits<float>::lowest();
  const float sigma = ctx.inputs.size() > 5 ? scalar_of(ctx.input(5)) : 0.0f;
  NmsResult r;
  if (boxes.dtype() == DType::kFloat16) {
    std::vector<float> b(static_cast<size_t>(boxes.num_elements()));
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<float>(boxes.data<float16>()[k]);
    r = greedy_nms(scores.data<float16>(), n, max_output, threshold, score_threshold, sigma,
                   [&](int32_t i, int32_t j) { return iou(b.data() + i * 4, b.data() + j * 4); });
  } else if (overlaps) {
    const float* o = boxes.data<float>();
    r = greedy_nms(scores.data<float>(), n, max_output, threshold, score_threshold, sigma,
                   [&](int32_t i, int32_t j) { return o[i * n + j]; });
  } else {
    const float* b = boxes.data<float>();
    r = greedy_nms(scores.data<float>(), n, max_output, threshold, score_threshold, sigma,
                   [&](int32_t i, int32_t j) { return iou(b + i * 4, b + j * 4); });
  }
  const int64_t valid = static_cast<int64_t>(r.selected.size());
  const int pad_attr = ctx.op->attr_index("pad_to_max_output_size");
  // Padded results are allocated at max_output_size before anything is written, so a size too large to
  // allocate is a ResourceExhausted error from allocate_output, not a failed vector resize.
  const Shape out{pad_attr >= 0 && ctx.attr_bool(pad_attr) ? max_output : valid};
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt32, out));
  int32_t* indices = ctx.output(0).mutable_data<int32_t>();
  std::fill(indices, indices + out.dim(0), 0);
  std::copy(r.selected.begin(), r.selected.end(), indices);
  int next = 1;
  if (ctx.op->name == "NonMaxSuppressionV5") {
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, next, scores.dtype(), out));
    TensorImpl& s = ctx.output(next++);
    for (int64_t k = 0; k < out.dim(0); ++k) {
      const float v = k < valid ? r.scores[static_cast<size_t>(k)] : 0.0f;
      if (scores.dtype() == DType::kFloat16)
        s.mutable_data<float16>()[k] = float16(v);
      else
        s.mutable_data<float>()[k] = v;
    }
  }
  if (ctx.op->name != "NonMaxSuppressionV3" && !overlaps) {
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, next, DType::kInt32, Shape{}));
    ctx.output(next).mutable_data<int32_t>()[0] = static_cast<int32_t>(valid);
  }
  return Status::OK();
}

// CombinedNonMaxSuppression(boxes [batch, n, q, 4], scores [batch, n, classes], max_output_size_per_class,
// max_total_size, iou_threshold, score_threshold; pad_per_class, clip_boxes) -> nmsed_boxes
// [batch, size, 4], nmsed_scores, nmsed_classes [batch, size], valid_detections [batch].

Status combined_shape(InferContext& ctx) {
  const Shape &b = ctx.inputs[0].shape, &s = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "boxes", b, 4));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "scores", s, 3));
  static const char* const kNames[] = {"max_output_size_per_class", "max_total_size", "iou_threshold",
                                       "score_threshold"};
  for (int i = 2; i < 6; ++i) EMBER_RETURN_IF_ERROR(check_scalar(ctx.op, kNames[i - 2], ctx.inputs[i].shape));
  if (b.rank_known() && b.dim(3) >= 0 && b.dim(3) != 4)
    return invalid_argument(ctx.op->name, ": boxes must have 4 columns, got shape ", b.to_string());
  const int64_t batch = b.rank_known() ? b.dim(0) : s.rank_known() ? s.dim(0) : kUnknownDim;
  const int64_t per_class = known_int(ctx, 2), total = known_int(ctx, 3);
  if (per_class != kUnknownDim && per_class <= 0)
    return invalid_argument(ctx.op->name, ": max_size_per_class must be positive, got ", per_class);
  if (total != kUnknownDim && total <= 0)
    return invalid_argument(ctx.op->name, ": max_total_size must be > 0, got ", total);
  const int64_t classes = s.rank_known() ? s.dim(2) : kUnknownDim;
  int64_t size = total;
  if (ctx.attr_bool(0))
    size = per_class >= 0 && classes >= 0 && total >= 0 ? std::min(total, per_class * classes) : kUnknownDim;
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape{batch, size, 4}});
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape{batch, size}});
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape{batch, size}});
  ctx.outputs.push_back(TensorSpec{DType::kInt32, Shape{batch}});
  return Status::OK();
}

struct Detection {
  int32_t box = -1;
  float score = -1.0f;
  int32_t cls = -1;
  float coords[4] = {0, 0, 0, 0};
};

// Greedy NMS of one class of one image; its selections go to slots [cls * per_class, ...) of `detections`.
void nms_one_class(const float* boxes, const float* scores, int64_t n, int64_t q, int64_t classes,
                   int64_t cls, int64_t per_class, float iou_threshold, float score_threshold,
                   Detection* detections) {
  struct Candidate {
    int32_t index;
    float score;
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score;
  };  // Note [Candidate order]
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  for (int64_t i = 0; i < n; ++i)
    if (scores[i * classes + cls] > score_threshold)
      queue.push({static_cast<int32_t>(i), scores[i * classes + cls]});
  const int64_t column = q > 1 ? cls : 0;
  auto box = [&](int32_t i) { return boxes + (i * q + column) * 4; };
  std::vector<int32_t> selected;
  while (static_cast<int64_t>(selected.size()) < per_class && !queue.empty()) {
    const Candidate next = queue.top();
    queue.pop();
    bool keep = true;
    for (auto j = selected.rbegin(); j != selected.rend() && keep; ++j)
      keep = !(iou(box(next.index), box(*j)) > iou_threshold);
    if (!keep) continue;
    Detection& d = detections[cls * per_class + static_cast<int64_t>(selected.size())];
    d.box = next.index, d.score = next.score, d.cls = static_cast<int32_t>(cls);
    std::copy(box(next.index), box(next.index) + 4, d.coords);
    selected.push_back(next.index);
  }
}

Status combined_kernel(KernelContext& ctx) {
  const TensorImpl &boxes = ctx.input(0), &scores = ctx.input(1);
  const Shape &bs = boxes.shape(), &ss = scores.shape();
  if (bs.rank() != 4 || bs.dim(3) != 4 || ss.rank() != 3)
    return invalid_argument(ctx.op->name,
                            ": boxes must be [batch, num_boxes, q, 4] and scores [batch, num_boxes, "
                            "num_classes], got ",
                            bs.to_string(), " and ", ss.to_string());
  for (int i = 2; i < 6; ++i)
    if (ctx.input(i).rank() != 0)
      return invalid_argument(ctx.op->name, ": input ", ctx.op->inputs[static_cast<size_t>(i)].name,
                              " must be 0-D, got shape ", ctx.input(i).shape().to_string());
  const int64_t per_class_max = ctx.input(2).data<int32_t>()[0], total = ctx.input(3).data<int32_t>()[0];
  const float iou_threshold = ctx.input(4).data<float>()[0], score_threshold = ctx.input(5).data<float>()[0];
  if (per_class_max <= 0)
    return invalid_argument(ctx.op->name, ": max_size_per_class must be positive, got ", per_class_max);
  if (total <= 0) return invalid_argument(ctx.op->name, ": max_total_size must be > 0, got ", total);
  if (!(iou_threshold >= 0 && iou_threshold <= 1))
    return invalid_argument(ctx.op->name, ": iou_threshold must be in [0, 1], got ", iou_threshold);
  const int64_t batch = bs.dim(0), n = bs.dim(1), q = bs.dim(2), classes = ss.dim(2);
  if (ss.dim(0) != batch || ss.dim(1) != n)
    return invalid_argument(ctx.op->name, ": scores has incompatible shape: boxes ", bs.to_string(),
                            ", scores ", ss.to_string());
  if (q != 1 && q != classes)
    return invalid_argument(ctx.op->name,
                            ": third dimension of boxes must be either 1 or num classes, got boxes ",
                            bs.to_string(), " and ", classes, " classes");
  const bool pad_per_class = ctx.attr_bool(0), clip = ctx.attr_bool(1);
  const int64_t per_class = std::min(per_class_max, n);
  const int64_t size = pad_per_class ? std::min(total, per_class_max * classes) : total;
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kFloat32, Shape{batch, size, 4}));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, DType::kFloat32, Shape{batch, size}));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2, DType::kFloat32, Shape{batch, size}));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 3, DType::kInt32, Shape{batch}));
  float *out_boxes = ctx.output(0).mutable_data<float>(), *out_scores = ctx.output(1).mutable_data<float>();
  float* out_classes = ctx.output(2).mutable_data<float>();
  int32_t* valid = ctx.output(3).mutable_data<int32_t>();
  std::fill(out_boxes, out_boxes + batch * size * 4, 0.0f);
  std::fill(out_scores, out_scores + batch * size, 0.0f);
  std::fill(out_classes, out_classes + batch * size, 0.0f);
  parallel_for(batch, n * classes * 32 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      std::vector<Detection> detections(static_cast<size_t>(per_class * classes));
      for (int64_t c = 0; c < classes; ++c)
        nms_one_class(boxes.data<float>() + b * n * q * 4, scores.data<float>() + b * n * classes, n, q,
                      classes, c, per_class, iou_threshold, score_threshold, detections.data());
      std::sort(detections.begin(), detections.end(), [](const Detection& x, const Detection& y) {
        return x.score > y.score;
      });  // Note [Candidate order]
      const int64_t found =
          std::count_if(detections.begin(), detections.end(), [](const Detection& d) { return d.box > -1; });
      const int64_t kept = std::min(found, size);
      valid[b] = static_cast<int32_t>(kept);
      for (int64_t k = 0; k < kept; ++k) {
        const Detection& d = detections[static_cast<size_t>(k)];
        for (int j = 0; j < 4; ++j)
          out_boxes[(b * size + k) * 4 + j] =
              clip ? std::max(std::min(d.coords[j], 1.0f), 0.0f) : d.coords[j];
        out_scores[b * size + k] = d.score;
        out_classes[b * size + k] = static_cast<float>(d.cls);
      }
    }
  });
  return Status::OK();
}

void method_attr(OpBuilder& b) { b.attr("method", AttrType::kString, std::string("bilinear")); }

}  // namespace

void register_sample_distorted_bounding_box_ops(OpRegistry& r);  // image_sample_box.cc
void register_draw_bounding_boxes_ops(OpRegistry& r);            // image_draw_boxes.cc

void register_image_box_ops(OpRegistry& r) {
  register_sample_distorted_bounding_box_ops(r);
  register_draw_bounding_boxes_ops(r);
  OpBuilder crop("CropAndResize");
  crop.doc(
          "Crops boxes [y1, x1, y2, x2] (normalized) of images[box_ind] and resizes each to crop_size, as "
          "float32. "
          "crop_and_resize([[[[1.], [2.]], [[3.], [4.]]]], [[0., 0., 1., 1.]], [0], [1, 1]) == [[[[2.5]]]]")
      .input("image")
      .input_fixed("boxes", kF32)
      .input_fixed("box_ind", kI32)
      .input_shape_like("crop_size")
      .output("crops")
      .type_var(kCropImageTypes);
  method_attr(crop);
  crop.attr("extrapolation_value", AttrType::kFloat, 0.0)
      .shape(&crop_shape)
      .kernel(kCropImageTypes, &crop_kernel)
      .grad(&crop_grad)
      .batching(BatchingRule::kFallback)
      .done(r);

  OpBuilder grad_image("CropAndResizeGradImage");
  grad_image
      .doc(
          "The gradient of CropAndResize with respect to its image, of dtype T and shape image_size: each "
          "crop "
          "element's gradient spread onto the pixels it was interpolated from.")
      .input_fixed("grads", kF32)
      .input_fixed("boxes", kF32)
      .input_fixed("box_ind", kI32)
      .input_shape_like("image_size")
      .output("output")
      .type_var(kCropGradTypes)
      .attr("T", AttrType::kDType)
      .dispatch_on_output();
  method_attr(grad_image);
  grad_image.shape(&grad_image_shape)
      .kernel(kCropGradTypes, &grad_image_kernel)
      .flags(kNotDifferentiable)
      .batching(BatchingRule::kFallback)
      .done(r);

  OpBuilder grad_boxes("CropAndResizeGradBoxes");
  grad_boxes.doc("The gradient of bilinear CropAndResize with respect to its boxes, float32 [num_boxes, 4].")
      .input_fixed("grads", kF32)
      .input("image")
      .input_fixed("boxes", kF32)
      .input_fixed("box_ind", kI32)
      .output("output")
      .type_var(kCropImageTypes)
      .dispatch_on_input(1);
  method_attr(grad_boxes);
  grad_boxes.shape(&grad_boxes_shape)
      .kernel(kCropImageTypes, &grad_boxes_kernel)
      .flags(kNotDifferentiable)
      .batching(BatchingRule::kFallback)
      .done(r);

  struct NmsOp {
    const char* name;
    const char* doc;
    bool scores_out, valid_out, sigma;
  };
  const NmsOp nms_ops[] = {
      {"NonMaxSuppressionV3",
       "Indices of the boxes greedy non-max suppression keeps, best score first: a box is dropped when its "
       "IoU with "
       "a kept box exceeds iou_threshold or its score is not above score_threshold. "
       "non_max_suppression_v3([[0, 0, 1, 1], [0, 0, 1, 0.9]], [0.9, 0.8], 2, 0.5, 0.) == [0]",
       false, false, false},
      {"NonMaxSuppressionV4",
       "NonMaxSuppressionV3 that also returns how many indices are valid, and pads the indices with zeros to "
       "max_output_size when pad_to_max_output_size. "
       "non_max_suppression_v4([[0, 0, 1, 1]], [0.9], 2, 0.5, 0., True) == ([0, 0], 1)",
       false, true, false},
      {"NonMaxSuppressionV5",
       "NonMaxSuppressionV4 that also returns the selected scores, with Gaussian soft suppression (scores "
       "scaled by "
       "exp(-iou^2 / (2 sigma))) when soft_nms_sigma > 0. "
       "non_max_suppression_v5([[0, 0, 1, 1]], [0.9], 1, 0.5, 0., 0.) == ([0], [0.9], 1)",
       true, true, true},
  };
  for (const NmsOp& spec : nms_ops) {
    OpBuilder nms(spec.name);
    nms.doc(spec.doc).input("boxes").input("scores").input_fixed("max_output_size", kI32);
    const int thresholds = std::string(spec.name) == "NonMaxSuppressionV5" ? 0 : 1;
    nms.input("iou_threshold", thresholds).input("score_threshold", thresholds);
    if (spec.sigma) nms.input("soft_nms_sigma");
    nms.output("selected_indices");
    if (spec.scores_out) nms.output("selected_scores");
    if (spec.valid_out) nms.output("valid_outputs");
    nms.type_var(kNmsTypes);
    if (thresholds == 1) nms.type_var(kNmsTypes, 1);
    if (spec.valid_out) nms.attr("pad_to_max_output_size", AttrType::kBool, false);
    nms.flags(kKernelAllocates | kNotDifferentiable)
        .shape(&nms_shape)
        .kernel(kNmsTypes, &nms_kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("NonMaxSuppressionWithOverlaps")
      .doc(
          "Greedy non-max suppression over a given [n, n] overlaps matrix instead of IoUs: indices kept, "
          "best "
          "score first. non_max_suppression_with_overlaps([[1., 0.9], [0.9, 1.]], [0.9, 0.8], 2, 0.5, 0.) == "
          "[0]")
      .input_fixed("overlaps", kF32)  // all float32: TensorFlow's op has no type attribute
      .input_fixed("scores", kF32)
      .input_fixed("max_output_size", kI32)
      .input_fixed("overlap_threshold", kF32)
      .input_fixed("score_threshold", kF32)
      .output("selected_indices")
      .type_var(kF32)
      .dispatch_on_input(0)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&nms_shape)
      .kernel(kF32, &nms_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CombinedNonMaxSuppression")
      .doc(
          "Per-class greedy non-max suppression of a batch, the survivors of all classes ranked by score and "
          "cut "
          "to max_total_size: boxes, scores, classes (as float) and the number valid per image.")
      .input_fixed("boxes", kF32)  // all float32: TensorFlow's op has no type attribute
      .input_fixed("scores", kF32)
      .input_fixed("max_output_size_per_class", kI32)
      .input_fixed("max_total_size", kI32)
      .input_fixed("iou_threshold", kF32)
      .input_fixed("score_threshold", kF32)
      .output("nmsed_boxes")
      .output("nmsed_scores")
      .output("nmsed_classes")
      .output("valid_detections")
      .type_var(kF32)
      .dispatch_on_input(0)
      .attr("pad_per_class", AttrType::kBool, false)
      .attr("clip_boxes", AttrType::kBool, true)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&combined_shape)
      .kernel(kF32, &combined_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

// SampleDistortedBoundingBoxV2 and StatelessSampleDistortedBoundingBox
// (tf.image.sample_distorted_bounding_box and its stateless form): a random crop of an image that covers
// enough of one of the given boxes. Registered from register_image_box_ops (image_boxes.cc); Python:
// python/ember/ops/image_boxes_ops.py.
//
// Note [Sampling a distorted box]
// The draws are TensorFlow's, word for word, so a stateless call gives TensorFlow's box for the same seed
// and a stateful one continues the stream of its (seed, seed2) as TensorFlow's kernel does (each call
// reserves 4 * max_attempts words). One stream of uint32 words (Philox blocks read word by word) serves
// every attempt: an aspect ratio (a float from 23 bits), then, when the ratio gives a feasible size range,
// the height (word % range) and the offsets y and x (word % room), each only where there is a choice. The
// sizes follow TensorFlow's float arithmetic (lrintf, float areas) so that the same words give the same box.
// The first crop covering min_object_covered of a box (a box of no area is skipped; with no boxes and
// use_image_if_no_bounding_boxes, the image is the box) is the result; after max_attempts, the whole image.
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "ember/kernels/philox.h"
#include "ember/kernels/seed.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

struct Box {
  int min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  float area() const { return static_cast<float>((max_x - min_x) * (max_y - min_y)); }
  Box intersect(const Box& o) const {
    Box r{std::max(min_x, o.min_x), std::max(min_y, o.min_y), std::min(max_x, o.max_x),
          std::min(max_y, o.max_y)};
    return r.min_x > r.max_x || r.min_y > r.max_y ? Box{} : r;
  }
};

bool covers_enough(const Box& crop, float min_covered, const std::vector<Box>& boxes) {
  if (crop.area() < 1.0f) return false;
  for (const Box& box : boxes) {
    const float area = box.area();
    if (area < 1.0f) continue;
    if (crop.intersect(box).area() / area >= min_covered) return true;
  }
  return false;
}

int round_int(float v) { return static_cast<int>(lrintf(v)); }

// One attempt at a crop of `aspect` (width / height) whose area is in [min_area, max_area] of the image's.
bool random_crop(int width, int height, float min_relative, float max_relative, float aspect,
                 kernels::PhiloxStream& words, Box* crop) {
  if (max_relative <= 0.0f || aspect <= 0.0f || width <= 0 || height <= 0 || min_relative > max_relative)
    return false;
  const float min_area = min_relative * width * height;
  const float max_area = max_relative * width * height;
  int h = round_int(std::sqrt(min_area / aspect));
  int max_h = round_int(std::sqrt(max_area / aspect));
  if (round_int(max_h * aspect) > width) {  // the tallest crop whose rounded width fits
    max_h = static_cast<int>((width + 0.5 - 0.0000001f) / aspect);
    if (round_int(max_h * aspect) > width) max_h -= 1;
  }
  max_h = std::min(max_h, height);
  h = std::min(h, max_h);
  if (h < max_h) h += static_cast<int>(words.next_u32() % static_cast<uint32_t>(max_h - h + 1));
  int w = round_int(h * aspect);
  float area = static_cast<float>(w * h);
  if (area < min_area) {  // rounding made it too small: one row more
    h += 1;
    w = round_int(h * aspect);
    area = static_cast<float>(w * h);
  }
  if (area > max_area) {  // or too large: one row less
    h -= 1;
    w = round_int(h * aspect);
    area = static_cast<float>(w * h);
  }
  if (area < min_area || area > max_area || w > width || h > height || w <= 0 || h <= 0) return false;
  const int y = h < height ? static_cast<int>(words.next_u32() % static_cast<uint32_t>(height - h)) : 0;
  const int x = w < width ? static_cast<int>(words.next_u32() % static_cast<uint32_t>(width - w)) : 0;
  *crop = Box{x, y, x + w, y + h};
  return true;
}

// Attribute positions after the op's own (seed, seed2 for the stateful op).
struct SampleAttrs {
  int aspect_ratio_range, area_range, max_attempts, use_image;
};

SampleAttrs sample_attrs(const OpDef& op) {
  return {op.attr_index("aspect_ratio_range"), op.attr_index("area_range"), op.attr_index("max_attempts"),
          op.attr_index("use_image_if_no_bounding_boxes")};
}

Status two_floats(const std::string& op, const char* what, const TensorImpl& t, float out[2]) {
  if (t.rank() != 1 || t.num_elements() != 2 || !dtype_in(t.dtype(), kNumericTypes))
    return invalid_argument(op, ": ", what, " must be a list of 2 floats, got a ", dtype_name(t.dtype()),
                            " tensor of shape ", t.shape().to_string());
  visit_dtype<kNumericTypes>(t.dtype(), [&]<typename T>() {
    for (int i = 0; i < 2; ++i) out[i] = static_cast<float>(static_cast<double>(t.data<T>()[i]));
  });
  return Status::OK();
}

Status check_sample_attrs(const AttrReader& attrs, const OpDef& op, float aspect[2], float area[2]) {
  const SampleAttrs at = sample_attrs(op);
  EMBER_RETURN_IF_ERROR(
      two_floats(op.name, "aspect_ratio_range", *attrs.attr_tensor(at.aspect_ratio_range), aspect));
  EMBER_RETURN_IF_ERROR(two_floats(op.name, "area_range", *attrs.attr_tensor(at.area_range), area));
  if (!(aspect[0] > 0 && aspect[1] > 0))
    return invalid_argument(op.name, ": aspect_ratio_range must be positive, got [", aspect[0], ", ",
                            aspect[1], "]");
  if (!(area[0] > 0 && area[1] > 0 && area[0] <= 1 && area[1] <= 1))
    return invalid_argument(op.name, ": area_range must be in (0, 1], got [", area[0], ", ", area[1], "]");
  if (attrs.attr_int(at.max_attempts) <= 0)
    return invalid_argument(op.name, ": max_attempts must be positive, got ",
                            attrs.attr_int(at.max_attempts));
  return Status::OK();
}

Status sample_box_shape(InferContext& ctx) {
  float aspect[2], area[2];
  EMBER_RETURN_IF_ERROR(check_sample_attrs(ctx, *ctx.op, aspect, area));
  const Shape &size = ctx.inputs[0].shape, &boxes = ctx.inputs[1].shape, &covered = ctx.inputs[2].shape;
  if (size.rank_known() && (size.rank() != 1 || (size.dim(0) >= 0 && size.dim(0) != 3)))
    return invalid_argument(ctx.op->name, ": image_size must be [height, width, channels], got shape ",
                            size.to_string());
  if (boxes.rank_known() && (boxes.rank() != 3 || (boxes.dim(2) >= 0 && boxes.dim(2) != 4)))
    return invalid_argument(ctx.op->name, ": bounding_boxes must be [batch, N, 4], got shape ",
                            boxes.to_string());
  if (covered.rank_known() && covered.rank() != 0)
    return invalid_argument(ctx.op->name, ": min_object_covered must be a scalar, got shape ",
                            covered.to_string());
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({3})});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({3})});
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape({1, 1, 4})});
  return Status::OK();
}

Status sample_box(KernelContext& ctx, kernels::PhiloxStream words) {
  const std::string& op = ctx.op->name;
  float aspect[2], area_range[2];
  EMBER_RETURN_IF_ERROR(check_sample_attrs(ctx, *ctx.op, aspect, area_range));
  const SampleAttrs at = sample_attrs(*ctx.op);
  const TensorImpl &size = ctx.input(0), &boxes_in = ctx.input(1), &covered_in = ctx.input(2);
  if (size.rank() != 1 || size.num_elements() != 3)
    return invalid_argument(op, ": image_size must be [height, width, channels], got shape ",
                            size.shape().to_string());
  if (boxes_in.rank() != 3 || boxes_in.shape().dim(2) != 4)
    return invalid_argument(op, ": bounding_boxes must be [batch, N, 4], got shape ",
                            boxes_in.shape().to_string());
  if (covered_in.rank() != 0)
    return invalid_argument(op, ": min_object_covered must be a scalar, got shape ",
                            covered_in.shape().to_string());
  const float min_covered = covered_in.data<float>()[0];
  if (!(min_covered >= 0))
    return invalid_argument(op, ": min_object_covered must be non-negative, got ", min_covered);
  int64_t dims[2];
  visit_dtype<kIntTypes>(size.dtype(), [&]<typename T>() {
    for (int i = 0; i < 2; ++i) dims[i] = static_cast<int64_t>(size.data<T>()[i]);
  });
  for (int i = 0; i < 2; ++i)
    if (dims[i] < 0 || dims[i] >= INT32_MAX)
      return invalid_argument(op, ": image ", i == 0 ? "height" : "width", " must be in [0, 2^31 - 1), got ",
                              dims[i]);
  const int height = static_cast<int>(dims[0]), width = static_cast<int>(dims[1]);
  std::vector<Box> boxes;
  const float* b = boxes_in.data<float>();
  for (int64_t i = 0; i < boxes_in.num_elements() / 4; ++i, b += 4) {
    for (int k = 0; k < 4; ++k)
      if (!(b[k] >= 0.0f && b[k] <= 1.0f))
        return invalid_argument(op, ": bounding box coordinates must be in [0, 1], got ", b[k], " in box ",
                                i);
    boxes.push_back(Box{static_cast<int>(b[1] * width), static_cast<int>(b[0] * height),
                        static_cast<int>(b[3] * width), static_cast<int>(b[2] * height)});
  }
  const Box image{0, 0, width, height};
  if (boxes.empty()) {
    if (!ctx.attr_bool(at.use_image))
      return invalid_argument(
          op, ": no bounding boxes given; set use_image_if_no_bounding_boxes to use the image");
    boxes.push_back(image);
  }
  Box crop = image;
  for (int64_t attempt = 0; attempt < ctx.attr_int(at.max_attempts); ++attempt) {
    const float ratio =
        kernels::philox_u32_to_float01(words.next_u32()) * (aspect[1] - aspect[0]) + aspect[0];
    Box candidate;
    if (random_crop(width, height, area_range[0], area_range[1], ratio, words, &candidate) &&
        covers_enough(candidate, min_covered, boxes)) {
      crop = candidate;
      break;
    }
  }
  const int64_t begin[3] = {crop.min_y, crop.min_x, 0};
  const int64_t extent[3] = {crop.max_y - crop.min_y, crop.max_x - crop.min_x, -1};
  visit_dtype<kIntTypes>(size.dtype(), [&]<typename T>() {
    for (int i = 0; i < 3; ++i) {
      ctx.output(0).mutable_data<T>()[i] = static_cast<T>(begin[i]);
      ctx.output(1).mutable_data<T>()[i] = static_cast<T>(extent[i]);
    }
  });
  float* out = ctx.output(2).mutable_data<float>();
  out[0] = static_cast<float>(crop.min_y) / static_cast<float>(height);
  out[1] = static_cast<float>(crop.min_x) / static_cast<float>(width);
  out[2] = static_cast<float>(crop.max_y) / static_cast<float>(height);
  out[3] = static_cast<float>(crop.max_x) / static_cast<float>(width);
  return Status::OK();
}

Status stateful_sample_box_kernel(KernelContext& ctx) {
  // TensorFlow caches an eager kernel per attribute set, so a call that differs in any attribute (not
  // only the dtype) starts its own stream of (seed, seed2) and leaves the others' where they were.
  const SampleAttrs at = sample_attrs(*ctx.op);
  uint64_t tag = static_cast<uint64_t>(ctx.input(0).dtype()) + 1;
  auto mix = [&tag](uint64_t v) { tag = (tag ^ v) * 0x100000001b3ull; };
  float aspect[2], area[2];
  EMBER_RETURN_IF_ERROR(check_sample_attrs(ctx, *ctx.op, aspect, area));
  for (float f : {aspect[0], aspect[1], area[0], area[1]}) mix(std::bit_cast<uint32_t>(f));
  mix(static_cast<uint64_t>(ctx.attr_int(at.max_attempts)));
  mix(ctx.attr_bool(at.use_image) ? 1 : 2);
  const uint64_t id = kernels::random_kernel_id(ctx.op->name, tag);
  const kernels::SeedPair seeds{ctx.attr_int(0), ctx.attr_int(1)};
  const int64_t attempts = std::max<int64_t>(ctx.attr_int(at.max_attempts), 0);
  // TensorFlow reserves 4 words per attempt (ReserveSamples32), i.e. one block.
  return sample_box(ctx, kernels::PhiloxStream(kernels::SeedState::global().stateful_call_blocks(
                             id, seeds, static_cast<uint64_t>(attempts))));
}

Status stateless_sample_box_kernel(KernelContext& ctx) {
  const TensorImpl& seed = ctx.input(3);
  if (seed.rank() != 1 || seed.num_elements() != 2)
    return invalid_argument(ctx.op->name, ": seed must have shape [2], got ", seed.shape().to_string());
  int64_t s[2] = {0, 0};
  visit_dtype<kIndexTypes>(seed.dtype(), [&]<typename T>() {
    for (int i = 0; i < 2; ++i) s[i] = static_cast<int64_t>(seed.data<T>()[i]);
  });
  return sample_box(ctx, kernels::PhiloxStream(kernels::stateless_philox_state(s[0], s[1])));
}

TensorRef float_pair(float a, float b) {
  auto t = TensorImpl::allocate(DType::kFloat32, Shape({2}));
  EMBER_DCHECK(t.ok());
  (*t)->mutable_data<float>()[0] = a;
  (*t)->mutable_data<float>()[1] = b;
  return std::move(t).value();
}

OpBuilder& sample_box_attrs(OpBuilder& b) {
  return b.attr("aspect_ratio_range", AttrType::kTensor, float_pair(0.75f, 1.33f))
      .attr("area_range", AttrType::kTensor, float_pair(0.05f, 1.0f))
      .attr("max_attempts", AttrType::kInt, int64_t{100})
      .attr("use_image_if_no_bounding_boxes", AttrType::kBool, false);
}

}  // namespace

void register_sample_distorted_bounding_box_ops(OpRegistry& r) {
  OpBuilder stateful("SampleDistortedBoundingBoxV2");
  stateful
      .doc(
          "A random crop [begin, size, box] covering min_object_covered of a box, from the stateful stream "
          "of "
          "(seed, seed2) (Note [Sampling a distorted box]). ([4, 4, 3], [[[0., 0., 1., 1.]]], 0.1) -> e.g. "
          "([1, 0, 0], [3, 4, -1], [[[0.25, 0., 1., 1.]]])")
      .input("image_size")
      .input_fixed("bounding_boxes", dtype_bit(DType::kFloat32))
      .input_fixed("min_object_covered", dtype_bit(DType::kFloat32))
      .output("begin")
      .output("size")
      .output("bboxes")
      .type_var(kIntTypes)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0});
  sample_box_attrs(stateful)
      .flags(kStateful | kNotDifferentiable)
      .shape(&sample_box_shape)
      .kernel(kIntTypes, &stateful_sample_box_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder stateless("StatelessSampleDistortedBoundingBox");
  stateless
      .doc(
          "SampleDistortedBoundingBoxV2 drawn from the stateless stream of seed [2], TensorFlow's box for "
          "the "
          "same seed. ([4, 4, 3], [[[0., 0., 1., 1.]]], 0.1, [1, 2]) -> ([begin], [size], [[[box]]])")
      .input("image_size")
      .input_fixed("bounding_boxes", dtype_bit(DType::kFloat32))
      .input_fixed("min_object_covered", dtype_bit(DType::kFloat32))
      .input_fixed("seed", kIndexTypes)
      .output("begin")
      .output("size")
      .output("bboxes")
      .type_var(kIntTypes);
  sample_box_attrs(stateless)
      .flags(kNotDifferentiable)
      .shape(&sample_box_shape)
      .kernel(kIntTypes, &stateless_sample_box_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

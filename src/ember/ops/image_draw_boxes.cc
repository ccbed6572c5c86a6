// DrawBoundingBoxes and DrawBoundingBoxesV2 (tf.image.draw_bounding_boxes): a copy of a batch of images with
// each box's outline drawn in its colour. Registered from register_image_box_ops (image_boxes.cc); Python:
// python/ember/ops/image_boxes_ops.py.
//
// Note [Drawing a box]
// As TensorFlow's kernel: a box [y_min, x_min, y_max, x_max] becomes rows y * (height - 1) and columns
// x * (width - 1), computed in float and truncated toward zero; an inverted box or one wholly outside the
// image is skipped; each of its four lines is drawn where it lies inside the image, clamped to it. Box i
// takes colour i % (number of colours): the rows of `colors` (their first `depth` entries), or TensorFlow's
// table of ten (yellow, blue, red, lime, purple, olive, maroon, navy, aqua, fuchsia; the first channel set to
// 1 for one-channel images) when `colors` is empty or not given.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/core/half.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kDrawTypes = dtype_bit(DType::kFloat16) | dtype_bit(DType::kFloat32);

std::vector<std::vector<float>> default_colors(int64_t depth) {
  std::vector<std::vector<float>> table = {{1, 1, 0, 1},     {0, 0, 1, 1},     {1, 0, 0, 1},   {0, 1, 0, 1},
                                           {0.5, 0, 0.5, 1}, {0.5, 0.5, 0, 1}, {0.5, 0, 0, 1}, {0, 0, 0.5, 1},
                                           {0, 1, 1, 1},     {1, 0, 1, 1}};
  if (depth == 1)
    for (auto& color : table) color[0] = 1;
  return table;
}

Status draw_boxes_shape(InferContext& ctx) {
  const std::string& op = ctx.op->name;
  const Shape &images = ctx.inputs[0].shape, &boxes = ctx.inputs[1].shape;
  if (images.rank_known() && images.rank() != 4)
    return invalid_argument(op, ": images must be 4-D [batch, height, width, depth], got shape ",
                            images.to_string());
  if (images.rank_known() && images.dim(3) != kUnknownDim && images.dim(3) != 1 && images.dim(3) != 3 &&
      images.dim(3) != 4)
    return invalid_argument(op, ": images must have 1, 3 or 4 channels, got shape ", images.to_string());
  if (boxes.rank_known() && (boxes.rank() != 3 || (boxes.dim(2) != kUnknownDim && boxes.dim(2) != 4)))
    return invalid_argument(op, ": boxes must be [batch, num_boxes, 4], got shape ", boxes.to_string());
  if (ctx.inputs.size() == 3 && ctx.inputs[2].shape.rank_known() && ctx.inputs[2].shape.rank() != 2)
    return invalid_argument(op, ": colors must be a 2-D matrix, got shape ", ctx.inputs[2].shape.to_string());
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

template <typename T>
void draw(const float* boxes, int64_t batch, int64_t num_boxes, int64_t height, int64_t width, int64_t depth,
          const std::vector<std::vector<float>>& colors, T* canvas) {
  for (int64_t b = 0; b < batch; ++b) {
    T* image = canvas + b * height * width * depth;
    const auto paint = [&](int64_t row, int64_t col, const std::vector<float>& color) {
      for (int64_t c = 0; c < depth; ++c) image[(row * width + col) * depth + c] = static_cast<T>(color[c]);
    };
    for (int64_t i = 0; i < num_boxes; ++i) {
      const float* box = boxes + (b * num_boxes + i) * 4;
      const std::vector<float>& color = colors[static_cast<size_t>(i) % colors.size()];
      const auto at = [](float v, int64_t size) {
        return static_cast<int64_t>(v * static_cast<float>(size - 1));
      };
      const int64_t top = at(box[0], height), left = at(box[1], width);
      const int64_t bottom = at(box[2], height), right = at(box[3], width);
      if (top > bottom || left > right) continue;                               // inverted
      if (top >= height || bottom < 0 || left >= width || right < 0) continue;  // outside
      const int64_t top_c = std::max<int64_t>(top, 0), bottom_c = std::min(bottom, height - 1);
      const int64_t left_c = std::max<int64_t>(left, 0), right_c = std::min(right, width - 1);
      if (top >= 0)
        for (int64_t x = left_c; x <= right_c; ++x) paint(top, x, color);
      if (bottom < height)
        for (int64_t x = left_c; x <= right_c; ++x) paint(bottom, x, color);
      if (left >= 0)
        for (int64_t y = top_c; y <= bottom_c; ++y) paint(y, left, color);
      if (right < width)
        for (int64_t y = top_c; y <= bottom_c; ++y) paint(y, right, color);
    }
  }
}

Status draw_boxes_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &images = ctx.input(0), &boxes = ctx.input(1);
  if (images.rank() != 4)
    return invalid_argument(op, ": images must be 4-D, got shape ", images.shape().to_string());
  if (boxes.rank() != 3 || boxes.shape().dim(2) != 4)
    return invalid_argument(op, ": boxes must be [batch, num_boxes, 4], got shape ",
                            boxes.shape().to_string());
  if (boxes.shape().dim(0) != images.shape().dim(0))
    return invalid_argument(op, ": images and boxes must have the same batch size, got ",
                            images.shape().dim(0), " and ", boxes.shape().dim(0));
  const int64_t depth = images.shape().dim(3);
  if (depth != 1 && depth != 3 && depth != 4)
    return invalid_argument(op, ": images must have 1, 3 or 4 channels, got ", depth);
  std::vector<std::vector<float>> colors;
  if (ctx.inputs.size() == 3) {
    const TensorImpl& given = ctx.input(2);
    if (given.rank() != 2)
      return invalid_argument(op, ": colors must be a 2-D matrix, got shape ", given.shape().to_string());
    if (given.shape().dim(1) < depth)
      return invalid_argument(op, ": colors must have at least the images' ", depth, " channels, got shape ",
                              given.shape().to_string());
    const int64_t stride = given.shape().dim(1);
    for (int64_t i = 0; i < given.shape().dim(0) && stride > 0; ++i)
      colors.emplace_back(given.data<float>() + i * stride, given.data<float>() + i * stride + depth);
  }
  if (colors.empty()) colors = default_colors(depth);
  std::memcpy(ctx.output(0).mutable_raw_data(), images.raw_data(), images.nbytes());
  const Shape& s = images.shape();
  visit_dtype<kDrawTypes>(images.dtype(), [&]<typename T>() {
    draw(boxes.data<float>(), s.dim(0), boxes.shape().dim(1), s.dim(1), s.dim(2), depth, colors,
         ctx.output(0).mutable_data<T>());
  });
  return Status::OK();
}

}  // namespace

void register_draw_bounding_boxes_ops(OpRegistry& r) {
  OpBuilder("DrawBoundingBoxesV2")
      .doc(
          "A copy of images [batch, height, width, 1/3/4] with the outline of each box [batch, n, 4] drawn "
          "in "
          "colors[i % len(colors)] (Note [Drawing a box]). (zeros([1, 3, 3, 1]), [[[0., 0., 1., 1.]]], "
          "[[1.]]) "
          "-> a ring of ones")
      .input("images")
      .input_fixed("boxes", dtype_bit(DType::kFloat32))
      .input_fixed("colors", dtype_bit(DType::kFloat32))
      .output("output")
      .type_var(kDrawTypes)
      .flags(kNotDifferentiable)
      .shape(&draw_boxes_shape)
      .kernel(kDrawTypes, &draw_boxes_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DrawBoundingBoxes")
      .doc(
          "DrawBoundingBoxesV2 with TensorFlow's table of ten colours. (zeros([1, 3, 3, 1]), [[[0., 0., 1., "
          "1.]]]) "
          "-> a ring of ones")
      .input("images")
      .input_fixed("boxes", dtype_bit(DType::kFloat32))
      .output("output")
      .type_var(kDrawTypes)
      .flags(kNotDifferentiable)
      .shape(&draw_boxes_shape)
      .kernel(kDrawTypes, &draw_boxes_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember

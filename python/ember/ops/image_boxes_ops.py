"""``tf.image``'s box operations (exported by ``ember.image``): crop_and_resize and non-max suppression.

crop_and_resize and the suppressions but one call TensorFlow's kernels' registry ops (CropAndResize,
NonMaxSuppressionV3/V5, NonMaxSuppressionWithOverlaps, CombinedNonMaxSuppression; src/ember/ops/image_boxes.cc)
after TensorFlow's Python conversions. ``non_max_suppression_padded`` is, as in TensorFlow 2, not the
NonMaxSuppressionV4 kernel but the batched tiled algorithm of TensorFlow's Python (its results differ from V4's:
boxes whose coordinates are all <= 0 are never selected, a box below score_threshold is zeroed rather than
dropped, suppression inside a tile is iterated to a fixed point), composed here of registry ops in the same
order, so it selects what TensorFlow selects, eagerly and inside ``ember.function``.
"""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, constant, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.ops import array_ops, control_flow_ops, math_ops, sort_ops
from ember.ops.math_ops import cast, reduce_any, reduce_max, reduce_sum

_NEG_INF = float("-inf")


def _tensor(x, dtype=None):
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype == dtype else cast(x, dtype)
    return convert_to_tensor(x, dtype=dtype)


def _like(x, dtype):
    """A threshold as a tensor of the boxes' dtype where it is a Python number (TensorFlow's conversion of an
    op input whose type attribute the boxes have fixed)."""
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype)


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0, name=None):
    """Crops ``boxes`` ([y1, x1, y2, x2], normalized) out of ``image[box_indices]`` and resizes each crop to
    ``crop_size`` ([height, width]) by bilinear or nearest sampling, as float32 [num_boxes, height, width,
    depth]; samples outside the image take ``extrapolation_value``."""
    return _C.op("CropAndResize")(_tensor(image), _tensor(boxes, dtypes.float32), _tensor(box_indices, dtypes.int32),
                                  _tensor(crop_size, dtypes.int32), method, float(extrapolation_value))


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=_NEG_INF, name=None):
    """Indices of the boxes greedy non-max suppression keeps (at most ``max_output_size``), best score first."""
    boxes = _tensor(boxes)
    return _C.op("NonMaxSuppressionV3")(boxes, _tensor(scores), _tensor(max_output_size, dtypes.int32),
                                        _tensor(iou_threshold, dtypes.float32),
                                        _tensor(score_threshold, dtypes.float32))


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=_NEG_INF,
                                    soft_nms_sigma=0.0, name=None):
    """(selected_indices, selected_scores) of non-max suppression; with ``soft_nms_sigma`` > 0 the Gaussian soft
    form, which lowers overlapping boxes' scores instead of dropping them."""
    boxes = _tensor(boxes)
    result = _C.op("NonMaxSuppressionV5")(boxes, _tensor(scores), _tensor(max_output_size, dtypes.int32),
                                          _like(iou_threshold, boxes.dtype), _like(score_threshold, boxes.dtype),
                                          _like(soft_nms_sigma, boxes.dtype), False)
    return result[0], result[1]


def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=_NEG_INF, name=None):
    """Greedy non-max suppression over a given [num_boxes, num_boxes] overlaps matrix instead of IoUs."""
    return _C.op("NonMaxSuppressionWithOverlaps")(_tensor(overlaps), _tensor(scores),
                                                  _tensor(max_output_size, dtypes.int32),
                                                  _tensor(overlap_threshold, dtypes.float32),
                                                  _tensor(score_threshold, dtypes.float32))


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size, iou_threshold=0.5,
                                 score_threshold=_NEG_INF, pad_per_class=False, clip_boxes=True, name=None):
    """Per-class suppression over a batch ([batch, num_boxes, q, 4] boxes, [batch, num_boxes, classes] scores):
    (nmsed_boxes, nmsed_scores, nmsed_classes, valid_detections)."""
    return _C.op("CombinedNonMaxSuppression")(_tensor(boxes), _tensor(scores),
                                              _tensor(max_output_size_per_class, dtypes.int32),
                                              _tensor(max_total_size, dtypes.int32),
                                              _tensor(iou_threshold, dtypes.float32),
                                              _tensor(score_threshold, dtypes.float32), bool(pad_per_class),
                                              bool(clip_boxes))


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=_NEG_INF,
                               pad_to_max_output_size=False, name=None, sorted_input=False,
                               canonicalized_coordinates=False, tile_size=512):
    """(selected_indices, num_valid) of TensorFlow 2's batched tiled suppression; boxes [..., num_boxes, 4].
    Without ``pad_to_max_output_size`` (one image only) the indices are cut to the valid ones."""
    boxes, scores = _tensor(boxes), _tensor(scores)
    if not pad_to_max_output_size and boxes.shape.rank is not None and boxes.shape.rank > 2:
        raise ValueError(f"'pad_to_max_output_size' (value {pad_to_max_output_size}) must be True for batched input")
    max_output_size = _tensor(max_output_size, dtypes.int32)
    indices, num_valid = _tiled_suppression(boxes, scores, max_output_size, _tensor(iou_threshold, dtypes.float32),
                                            score_threshold, sorted_input, canonicalized_coordinates, tile_size)
    if not pad_to_max_output_size:
        return indices[0, :num_valid], num_valid
    batch_dims = array_ops.concat([array_ops.shape(boxes)[:-2], array_ops.expand_dims(max_output_size, 0)], 0)
    return array_ops.reshape(indices, batch_dims), num_valid


_SampleDistortedBoundingBoxV2 = _C.op("SampleDistortedBoundingBoxV2")
_StatelessSampleDistortedBoundingBox = _C.op("StatelessSampleDistortedBoundingBox")


def _sample_box_attrs(aspect_ratio_range, area_range, max_attempts, use_image_if_no_bounding_boxes):
    """The op's attributes with TensorFlow's defaults where an argument is None."""
    return ([0.75, 1.33] if aspect_ratio_range is None else [float(v) for v in aspect_ratio_range],
            [0.05, 1.0] if area_range is None else [float(v) for v in area_range],
            100 if max_attempts is None else int(max_attempts), bool(use_image_if_no_bounding_boxes))


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=0, min_object_covered=0.1,
                                  aspect_ratio_range=None, area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """A random crop of an image of ``image_size`` that covers at least ``min_object_covered`` of one of the
    ``bounding_boxes`` [batch, N, 4]: (begin, size, bboxes) for tf.slice and draw_bounding_boxes. A zero
    ``seed`` draws from a nondeterministic stream, as in TensorFlow (Note [Sampling a distorted box] in
    src/ember/ops/image_sample_box.cc)."""
    from ember.ops.random_ops import _get_seed

    seed1, seed2 = _get_seed(seed, "image.sample_distorted_bounding_box") if seed else (0, 0)
    return _SampleDistortedBoundingBoxV2(
        _tensor(image_size), _tensor(bounding_boxes, dtypes.float32), _tensor(min_object_covered, dtypes.float32),
        seed1, seed2, *_sample_box_attrs(aspect_ratio_range, area_range, max_attempts, use_image_if_no_bounding_boxes))


def stateless_sample_distorted_bounding_box(image_size, bounding_boxes, seed, min_object_covered=0.1,
                                            aspect_ratio_range=None, area_range=None, max_attempts=None,
                                            use_image_if_no_bounding_boxes=None, name=None):
    """sample_distorted_bounding_box drawn from the stateless stream of ``seed`` (a shape [2] int32/int64
    tensor): TensorFlow's box for the same seed."""
    seed = _tensor(seed)
    if seed.dtype not in (dtypes.int32, dtypes.int64):
        seed = cast(seed, dtypes.int64)
    return _StatelessSampleDistortedBoundingBox(
        _tensor(image_size), _tensor(bounding_boxes, dtypes.float32), _tensor(min_object_covered, dtypes.float32),
        seed, *_sample_box_attrs(aspect_ratio_range, area_range, max_attempts, use_image_if_no_bounding_boxes))


def draw_bounding_boxes(images, boxes, colors, name=None):
    """A copy of ``images`` [batch, height, width, 1/3/4] (float32 or float16) with the outline of each box
    [batch, n, 4] (y_min, x_min, y_max, x_max in [0, 1]) drawn in colors[i % len(colors)] ([k, >= depth]
    float32), or TensorFlow's ten default colours when ``colors`` is None (Note [Drawing a box] in
    src/ember/ops/image_draw_boxes.cc)."""
    images = _tensor(images)
    boxes = _tensor(boxes, dtypes.float32)
    if colors is None:
        return _C.op("DrawBoundingBoxes")(images, boxes)
    return _C.op("DrawBoundingBoxesV2")(images, boxes, _tensor(colors, dtypes.float32))


def _pairwise_iou(a, b):
    """IoU of each box of a [batch, N, 4] with each of b [batch, M, 4] (corners already ordered), with
    TensorFlow's tiled suppression's 1e-8 added to the union: [batch, N, M]."""
    a_y0, a_x0, a_y1, a_x1 = array_ops.split(a, 4, axis=2)
    b_y0, b_x0, b_y1, b_x1 = (array_ops.transpose(c, [0, 2, 1]) for c in array_ops.split(b, 4, axis=2))
    width = math_ops.maximum(math_ops.minimum(a_x1, b_x1) - math_ops.maximum(a_x0, b_x0), 0.0)
    height = math_ops.maximum(math_ops.minimum(a_y1, b_y1) - math_ops.maximum(a_y0, b_y0), 0.0)
    intersection = width * height
    union = (a_y1 - a_y0) * (a_x1 - a_x0) + (b_y1 - b_y0) * (b_x1 - b_x0) - intersection + 1e-8
    return intersection / union


def _suppress_tile(boxes, threshold, tile, tile_size):
    """Tile `tile` of boxes [batch, tiles * tile_size, 4] with every box suppressed (zeroed) that a kept box of
    an earlier tile, or of its own tile with a better score, overlaps by threshold or more."""
    batch = array_ops.shape(boxes)[0]
    own = array_ops.slice(boxes, array_ops.stack([0, tile * tile_size, 0]), array_ops.stack([batch, tile_size, 4]))

    def by_earlier_tile(earlier, current):
        other = array_ops.slice(boxes, array_ops.stack([0, earlier * tile_size, 0]),
                                array_ops.stack([batch, tile_size, 4]))
        clear = math_ops.reduce_all(_pairwise_iou(other, current) < threshold, [1])
        return earlier + 1, array_ops.expand_dims(cast(clear, current.dtype), 2) * current

    _, own = control_flow_ops.while_loop(lambda earlier, _: earlier < tile, by_earlier_tile,
                                         [constant(0), own])
    # Within the tile, box j can be suppressed by a better box i < j only while i itself is not suppressed:
    # iterate until the suppressing overlaps stop changing.
    positions = array_ops.range(tile_size)
    later = array_ops.expand_dims(array_ops.reshape(positions, [1, -1]) > array_ops.reshape(positions, [-1, 1]), 0)
    iou = _pairwise_iou(own, own)
    iou = iou * cast(math_ops.logical_and(later, iou >= threshold), iou.dtype)

    def settle(iou, _, total):
        free = cast(array_ops.reshape(reduce_max(iou, 1) < threshold, [batch, -1, 1]), iou.dtype)
        settled = array_ops.reshape(cast(reduce_max(free * iou, 1) < threshold, iou.dtype), [batch, -1, 1]) * iou
        new_total = reduce_sum(settled, [1, 2])
        return settled, reduce_any(total - new_total > threshold), new_total

    iou, _, _ = control_flow_ops.while_loop(lambda _, changed, __: changed, settle,
                                            [iou, constant(True), reduce_sum(iou, [1, 2])])
    suppressed = reduce_sum(iou, 1) > 0
    return own * array_ops.expand_dims(1.0 - cast(suppressed, own.dtype), 2)


def _tiled_suppression(boxes, scores, max_output_size, threshold, score_threshold, sorted_input,
                       canonicalized_coordinates, tile_size):
    batch_dims = array_ops.shape(boxes)[:-2]
    num_boxes = array_ops.shape(boxes)[-2]
    boxes = array_ops.reshape(boxes, array_ops.stack([-1, num_boxes, 4]))
    scores = array_ops.reshape(scores, array_ops.stack([-1, num_boxes]))
    batch = array_ops.shape(boxes)[0]
    if isinstance(score_threshold, Tensor) or score_threshold != _NEG_INF:
        above = cast(scores > score_threshold, scores.dtype)
        scores = scores * above
        boxes = boxes * array_ops.expand_dims(cast(above, boxes.dtype), 2)
    if not canonicalized_coordinates:  # the first box's corners tell which coordinate is the minimum
        y1, x1, y2, x2 = array_ops.split(boxes, 4, axis=2)
        y_first, x_first = y1[0, 0, 0] <= y2[0, 0, 0], x1[0, 0, 0] <= x2[0, 0, 0]
        boxes = array_ops.concat([array_ops.where(y_first, y1, y2), array_ops.where(x_first, x1, x2),
                                  array_ops.where(y_first, y2, y1), array_ops.where(x_first, x2, x1)], axis=2)
    if not sorted_input:
        order = sort_ops.argsort(scores, axis=1, direction="DESCENDING")
        boxes = array_ops.gather(boxes, order, axis=1, batch_dims=1)
    tiles = cast(math_ops.ceil(cast(math_ops.maximum(num_boxes, max_output_size), dtypes.float32) /
                               float(tile_size)), dtypes.int32)
    padded = tiles * tile_size
    boxes = array_ops.pad(cast(boxes, dtypes.float32), array_ops.stack([[0, 0], [0, padded - num_boxes], [0, 0]]))

    def next_tile(boxes, selected, tile):
        own = _suppress_tile(boxes, threshold, tile, tile_size)
        chosen = cast(math_ops.equal(array_ops.range(tiles), tile), boxes.dtype)[None, :, None, None]
        boxes = (array_ops.tile(array_ops.expand_dims(own, 1), array_ops.stack([1, tiles, 1, 1])) * chosen +
                 array_ops.reshape(boxes, array_ops.stack([batch, tiles, tile_size, 4])) * (1 - chosen))
        boxes = array_ops.reshape(boxes, array_ops.stack([batch, -1, 4]))
        selected = selected + reduce_sum(cast(reduce_any(own > 0, [2]), dtypes.int32), [1])
        return boxes, selected, tile + 1

    boxes, selected, _ = control_flow_ops.while_loop(
        lambda _, selected, tile: math_ops.logical_and(math_ops.reduce_min(selected) < max_output_size, tile < tiles),
        next_tile, [boxes, array_ops.zeros(array_ops.stack([batch]), dtypes.int32), constant(0)],
        shape_invariants=[TensorShape([None, None, 4]), TensorShape([None]), TensorShape([])])
    num_valid = math_ops.minimum(selected, max_output_size)
    # Kept boxes' positions, first first: top_k of (padded - position) where kept, 0 elsewhere.
    kept = cast(reduce_any(boxes > 0, [2]), dtypes.int32) * array_ops.expand_dims(array_ops.range(padded, 0, -1), 0)
    indices = math_ops.minimum(padded - sort_ops.top_k(kept, max_output_size)[0], num_boxes - 1)
    if not sorted_input:
        indices = array_ops.gather(order, indices, axis=1, batch_dims=1)
    valid = array_ops.expand_dims(array_ops.range(max_output_size), 0) < array_ops.expand_dims(num_valid, 1)
    indices = array_ops.where(valid, indices, array_ops.zeros_like(indices))
    return indices, array_ops.reshape(num_valid, batch_dims)

"""tf.image.draw_bounding_boxes (DrawBoundingBoxes/V2: src/ember/ops/image_draw_boxes.cc) and
tf.image.adjust_jpeg_quality / random_jpeg_quality / stateless_random_jpeg_quality (EncodeJpegVariableQuality,
src/ember/ops/image_codecs.cc) against TensorFlow 2.21, pixel for pixel."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors

RNG = np.random.default_rng(3)


def _same(ours, theirs):
    assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(ours.numpy(), np.float64), np.asarray(theirs.numpy(), np.float64))


def _boxes(batch, n):
    """Boxes inside, crossing every edge, inverted, outside, and degenerate."""
    b = RNG.uniform(-0.3, 1.3, (batch, n, 4)).astype(np.float32)
    b[:, 0] = [0.0, 0.0, 1.0, 1.0]
    b[:, 1] = [0.5, 0.5, 0.5, 0.5]
    b[:, 2] = [0.8, 0.2, 0.3, 0.9]
    b[:, 3] = [1.5, 1.2, 2.0, 1.9]
    return b


@pytest.mark.parametrize("depth", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_draw_bounding_boxes_matches_tensorflow(depth, dtype):
    images = RNG.uniform(0, 1, (2, 9, 13, depth)).astype(dtype)
    boxes = _boxes(2, 14)
    for colors in (None, np.zeros((0, 4), np.float32), RNG.uniform(0, 1, (3, depth)).astype(np.float32),
                   RNG.uniform(0, 1, (5, 4)).astype(np.float32)):
        # Tensors, not arrays: TensorFlow converts a float16 array to float16 or float32 depending on which
        # of its two ops ran before (its eager type inference), ember keeps the array's dtype.
        ours = em.image.draw_bounding_boxes(em.constant(images), boxes, colors)
        theirs = real_tf.image.draw_bounding_boxes(real_tf.constant(images), boxes, colors)
        _same(ours, theirs)
    traced = em.function(lambda i, b: em.image.draw_bounding_boxes(i, b, [[1.0, 0.0, 0.0, 1.0]]))
    _same(traced(em.constant(images), em.constant(boxes)),
          real_tf.image.draw_bounding_boxes(images, boxes, [[1.0, 0.0, 0.0, 1.0]]))


@pytest.mark.parametrize("call,match", [
    (lambda m: m.image.draw_bounding_boxes(np.zeros((1, 4, 4, 2), np.float32), np.zeros((1, 1, 4), np.float32), None),
     "channels"),
    (lambda m: m.image.draw_bounding_boxes(np.zeros((2, 4, 4, 3), np.float32), np.zeros((1, 1, 4), np.float32), None),
     "batch"),
    (lambda m: m.image.draw_bounding_boxes(np.zeros((1, 4, 4, 3), np.float32), np.zeros((1, 1, 4), np.float32),
                                           np.zeros((2, 2), np.float32)), "colors"),
    (lambda m: m.image.draw_bounding_boxes(np.zeros((4, 4, 3), np.float32), np.zeros((1, 1, 4), np.float32), None),
     "4-D"),
])
def test_draw_errors_name_the_op(call, match):
    with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
        call(real_tf)
    with pytest.raises(errors.InvalidArgumentError, match=f"DrawBoundingBoxes.*{match}"):
        call(em)


@pytest.mark.parametrize("shape,dtype", [((16, 24, 3), np.uint8), ((13, 7, 1), np.uint8), ((16, 16, 3), np.float32),
                                         ((9, 11, 3), np.float64), ((8, 8, 1), np.float16)])
def test_adjust_jpeg_quality_is_pixel_exact(shape, dtype):
    image = RNG.integers(0, 256, shape).astype(np.uint8)
    if dtype != np.uint8:
        image = (image / 255.0).astype(dtype)
    for quality in (0, 1, 30, 75, 95, 100):
        _same(em.image.adjust_jpeg_quality(image, quality), real_tf.image.adjust_jpeg_quality(image, quality))
    _same(em.image.adjust_jpeg_quality(image, em.constant(55)), real_tf.image.adjust_jpeg_quality(image, 55))
    traced = em.function(lambda x, q: em.image.adjust_jpeg_quality(x, q))
    _same(traced(em.constant(image), em.constant(40)), real_tf.image.adjust_jpeg_quality(image, 40))


def test_encode_jpeg_variable_quality_raw_op_and_errors():
    image = RNG.integers(0, 256, (8, 8, 3)).astype(np.uint8)
    assert em.raw_ops.EncodeJpegVariableQuality(images=image, quality=60).numpy() == \
        real_tf.raw_ops.EncodeJpegVariableQuality(images=image, quality=60).numpy()
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.raw_ops.EncodeJpegVariableQuality(images=image, quality=101)
    with pytest.raises(errors.InvalidArgumentError, match=r"EncodeJpegVariableQuality: quality must be in \[0,100\]"):
        em.raw_ops.EncodeJpegVariableQuality(images=image, quality=101)
    with pytest.raises(errors.InvalidArgumentError, match="EncodeJpegVariableQuality.*channels"):
        em.raw_ops.EncodeJpegVariableQuality(images=np.zeros((4, 4, 2), np.uint8), quality=50)


def test_random_jpeg_quality_draws_tensorflows_quality():
    image = RNG.uniform(0, 1, (12, 12, 3)).astype(np.float32)
    for seed in ([1, 2], [7, 3], [0, 9]):
        _same(em.image.stateless_random_jpeg_quality(image, 20, 90, seed),
              real_tf.image.stateless_random_jpeg_quality(image, 20, 90, seed))
    em.random.set_seed(4)
    real_tf.random.set_seed(4)
    for _ in range(3):
        _same(em.image.random_jpeg_quality(image, 5, 95, seed=8), real_tf.image.random_jpeg_quality(image, 5, 95, seed=8))
    for lo, hi in ((-1, 50), (50, 50), (10, 101)):
        with pytest.raises(ValueError):
            real_tf.image.random_jpeg_quality(image, lo, hi)
        with pytest.raises(ValueError):
            em.image.random_jpeg_quality(image, lo, hi)

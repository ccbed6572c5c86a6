"""ember.image (python/ember/image.py; ops in src/ember/ops/image.cc) against TensorFlow 2.21: resize in both
methods and every coordinate convention with gradients, integer images, flips, adjust_contrast,
convert_image_dtype, dynamic sizes in a function, and bad input."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 5, 7, 3)).astype(np.float32)
U8 = RNG.integers(0, 256, (4, 6, 3)).astype(np.uint8)


def _same(ours, theirs, tol=1e-6):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("size", [[9, 4], [3, 11], [5, 7], [1, 1]])
@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor"])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize_ops_and_gradients_match_tensorflow(op, size, align, half):
    def run(m):
        x = m.constant(X)
        with m.GradientTape() as tape:
            tape.watch(x)
            if m is em:
                y = em._C.op(op)(x, em.constant(size), align, half)
            else:
                y = getattr(tf.raw_ops, op)(images=x, size=size, align_corners=align, half_pixel_centers=half)
            loss = m.reduce_sum(y * m.sin(y))
        return y.numpy(), tape.gradient(loss, x).numpy()

    for o, t in zip(run(em), run(tf)):
        _same(o, t, 2e-6)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("image", [X, X[0], U8], ids=["batch", "single", "uint8"])
def test_resize_matches_tensorflow(image, method):
    _same(em.image.resize(image, [7, 4], method), tf.image.resize(image, [7, 4], method))


def test_flips_contrast_and_dtype_conversion_match_tensorflow():
    for fn in ("flip_left_right", "flip_up_down"):
        _same(getattr(em.image, fn)(X), getattr(tf.image, fn)(X))
        _same(getattr(em.image, fn)(U8), getattr(tf.image, fn)(U8))
    _same(em.image.adjust_contrast(X, 1.7), tf.image.adjust_contrast(X, 1.7), 1e-5)
    _same(em.image.adjust_contrast(U8, 0.4), tf.image.adjust_contrast(U8, 0.4))
    # float64 images go through float32, as TensorFlow's kernel has no float64: float32 values come back.
    x64 = X.astype(np.float64) * (1 + 1e-12)
    ours = em.image.adjust_contrast(x64, 1.7).numpy()
    _same(ours, tf.image.adjust_contrast(x64, 1.7), 1e-5)
    np.testing.assert_array_equal(ours.astype(np.float32).astype(np.float64), ours)
    f = RNG.uniform(0, 1, (4, 4)).astype(np.float32)
    i32 = RNG.integers(0, 2**31 - 1, (3, 3)).astype(np.int32)
    for image, dtype, saturate in ((U8, "float32", False), (f, "uint8", False), (f * 1.5, "uint8", True),
                                   (U8, "int32", False), (i32, "uint8", False), (f, "float64", False)):
        _same(em.image.convert_image_dtype(image, getattr(em, dtype), saturate=saturate),
              tf.image.convert_image_dtype(image, getattr(tf, dtype), saturate=saturate))


def test_resize_to_a_size_computed_in_a_function():
    @em.function(input_signature=[em.TensorSpec([None, None, None, 3], em.float32)])
    def upsample(x):
        return em.image.resize(x, em.shape(x)[1:3] * 2, "bilinear")

    for shape in ((1, 3, 4, 3), (2, 5, 2, 3)):
        x = RNG.standard_normal(shape).astype(np.float32)
        _same(upsample(x), tf.image.resize(x, [shape[1] * 2, shape[2] * 2]))


@pytest.mark.parametrize("call,error,message", [
    (lambda: em.image.resize(X, [0, 3]), em.errors.InvalidArgumentError, "ResizeBilinear: the output size must be positive"),
    (lambda: em.image.resize(X[0, 0], [3, 3]), ValueError, "must have either 3 or 4 dimensions"),
    (lambda: em._C.op("ResizeBilinear")(em.constant(X), em.constant([3, 3]), True, True), em.errors.InvalidArgumentError,
     "ResizeBilinear: align_corners and half_pixel_centers cannot both be true"),
    (lambda: em._C.op("ResizeNearestNeighbor")(em.constant(X), em.constant([3, 3, 3]), False, False),
     em.errors.InvalidArgumentError, "ResizeNearestNeighbor: size must have 2 elements"),
    (lambda: em.image.resize(X, [3, 3], "cubic"), ValueError, "Resize method is not implemented: cubic"),
])
def test_bad_input_is_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()

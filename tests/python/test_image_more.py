"""ember.image's crops, pads, colour conversions and adjustments, random and stateless flips, patches, edges and
quality measures (python/ember/image.py, ops/image_color_ops.py, ops/image_metrics_ops.py) against TensorFlow
2.21: values eagerly and inside a function, gradients where TensorFlow has them, seeded draws and errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(11)
RGB = RNG.uniform(0, 1, (2, 6, 7, 3)).astype(np.float32)
U8 = RNG.integers(0, 256, (5, 6, 3)).astype(np.uint8)
BIG = RNG.uniform(0, 1, (2, 16, 13, 3)).astype(np.float32)


def _same(ours, theirs, tol=1e-5):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


def _compare(fn, *inputs, tol=1e-5, grad=True):
    """fn(module, *tensors) in ember (eager and in ember.function) and in TensorFlow: equal values, and equal
    gradients of sum(y * sin(y)) with respect to the float inputs when ``grad``."""
    def run(m, traced):
        xs = [m.constant(x) for x in inputs]
        with m.GradientTape() as tape:
            for x in xs:
                if x.dtype.is_floating:
                    tape.watch(x)
            f = (lambda *a: fn(m, *a))
            ys = em.function(f)(*xs) if traced else f(*xs)
            ys = ys if isinstance(ys, (tuple, list)) else [ys]
            loss = m.add_n([m.reduce_sum(m.cast(y, m.float64) * m.sin(m.cast(y, m.float64))) for y in ys])
        grads = tape.gradient(loss, [x for x in xs if x.dtype.is_floating]) if grad else []
        return [y.numpy() for y in ys], [g.numpy() for g in grads]

    theirs = run(tf, False)
    for traced in (False, True):
        ours = run(em, traced)
        for o, t in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
            _same(o, t, tol)


@pytest.mark.parametrize("image", [RGB, RGB[0], U8])
@pytest.mark.parametrize("box", [(0, 0, 5, 6), (1, 2, 3, 4), (2, 0, 3, 5)])
def test_crop_and_pad_to_bounding_box(image, box):
    _compare(lambda m, x: m.image.crop_to_bounding_box(x, *box), image)
    _compare(lambda m, x: m.image.pad_to_bounding_box(x, box[0], box[1], 12, 11), image)


def test_crop_and_pad_take_tensor_offsets():
    _compare(lambda m, x: m.image.crop_to_bounding_box(x, m.constant(1), m.constant(2), 3, m.constant(4)), RGB)
    _compare(lambda m, x: m.image.pad_to_bounding_box(x, m.constant(1), 2, m.constant(9), 10), RGB)


@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.33, 0.9])
def test_central_crop(fraction):
    _compare(lambda m, x: m.image.central_crop(x, fraction), RGB)
    _compare(lambda m, x: m.image.central_crop(x, fraction), U8, grad=False)


@pytest.mark.parametrize("target", [(3, 4), (9, 11), (4, 10), (6, 7)])
def test_resize_with_crop_or_pad(target):
    _compare(lambda m, x: m.image.resize_with_crop_or_pad(x, *target), RGB)
    _compare(lambda m, x: m.image.resize_with_crop_or_pad(x, *target), U8, grad=False)


@pytest.mark.parametrize("target", [(3, 4), (9, 11), (12, 7), (5, 20)])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_resize_with_pad(target, method):
    _compare(lambda m, x: m.image.resize_with_pad(x, *target, method=method), RGB)


def test_grayscale_round_trip():
    _compare(lambda m, x: m.image.rgb_to_grayscale(x), RGB)
    _compare(lambda m, x: m.image.rgb_to_grayscale(x), U8, grad=False)
    _compare(lambda m, x: m.image.grayscale_to_rgb(m.image.rgb_to_grayscale(x)), RGB)


def test_hsv_conversions_and_their_gradients():
    pixels = np.concatenate([RGB.reshape(-1, 3), [[0, 0, 0], [0.5, 0.5, 0.5], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                                                  [1, 1, 0], [0.2, 0.2, 0.9]]]).astype(np.float32)
    _compare(lambda m, x: m.image.rgb_to_hsv(x), pixels, grad=False)
    _compare(lambda m, x: m.image.rgb_to_hsv(x), RGB)  # gradients where no two channels tie
    hsv = tf.image.rgb_to_hsv(pixels).numpy()
    _compare(lambda m, x: m.image.hsv_to_rgb(x), hsv, grad=False)  # TensorFlow's gradient is None
    _compare(lambda m, x: m.image.hsv_to_rgb(x), hsv.astype(np.float64), grad=False)


def _finite_difference_check(fn, x, eps=1e-6, tol=1e-6):
    x = em.constant(x)
    with em.GradientTape() as tape:
        tape.watch(x)
        loss = em.reduce_sum(em.sin(fn(x)))
    analytic = tape.gradient(loss, x).numpy().ravel()
    flat = x.numpy().ravel()
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (em.reduce_sum(em.sin(fn(em.constant(up.reshape(x.shape))))) -
                   em.reduce_sum(em.sin(fn(em.constant(down.reshape(x.shape)))))).numpy() / (2 * eps)
        assert abs(numeric - analytic[i]) < tol, (i, numeric, analytic[i])


def test_gradients_where_tensorflow_has_none_match_finite_differences():
    """hsv_to_rgb, adjust_hue and adjust_saturation differentiate (TensorFlow's give None or raise)."""
    pixels = RNG.uniform(0.05, 0.95, (4, 3)).astype(np.float64)
    _finite_difference_check(em.image.hsv_to_rgb, pixels)
    _finite_difference_check(lambda x: em.image.rgb_to_hsv(x), pixels)
    _finite_difference_check(lambda x: em.cast(em.image.adjust_hue(em.cast(x, em.float32), 0.3), em.float64),
                             pixels.astype(np.float32).astype(np.float64), eps=1e-3, tol=1e-3)


@pytest.mark.parametrize("image", [RGB, U8, RGB.astype(np.float64)])
def test_adjustments(image):
    grad = image.dtype == np.float32
    _compare(lambda m, x: m.image.adjust_brightness(x, 0.2), image, grad=grad)
    _compare(lambda m, x: m.image.adjust_brightness(x, -0.3), image, grad=grad)
    _compare(lambda m, x: m.image.adjust_gamma(x, 0.7, 1.2), image, grad=grad)
    _compare(lambda m, x: m.image.adjust_saturation(x, 1.7), image, grad=False)
    _compare(lambda m, x: m.image.adjust_saturation(x, 0.3), image, grad=False)
    for delta in (0.2, -0.45, 1.0, -1.0):
        _compare(lambda m, x: m.image.adjust_hue(x, delta), image, grad=False, tol=2e-5)
    _compare(lambda m, x: m.image.per_image_standardization(x), image, grad=grad)


def test_per_image_standardization_of_a_constant_image():
    _compare(lambda m, x: m.image.per_image_standardization(x), np.full((3, 4, 2), 7, np.uint8), grad=False)


@pytest.mark.parametrize("fn", ["random_flip_left_right", "random_flip_up_down"])
@pytest.mark.parametrize("image", [RGB, RGB[0]])
def test_random_flips_draw_as_tensorflow(fn, image):
    for seed in (1, 7, 23):
        tf.random.set_seed(seed)
        em.random.set_seed(seed)
        theirs = [getattr(tf.image, fn)(image, seed=3).numpy() for _ in range(6)]
        ours = [getattr(em.image, fn)(image, seed=3).numpy() for _ in range(6)]
        for o, t in zip(ours, theirs):
            _same(o, t, 0)


@pytest.mark.parametrize("fn", ["stateless_random_flip_left_right", "stateless_random_flip_up_down"])
def test_stateless_flips_match_tensorflow(fn):
    for seed in [(1, 2), (5, 9), (0, 0), (123, 4)]:
        for image in (RGB, RGB[0]):
            _compare(lambda m, x: getattr(m.image, fn)(x, seed=seed), image)


def test_random_brightness_contrast_crop_draw_as_tensorflow():
    tf.random.set_seed(4)
    em.random.set_seed(4)
    for _ in range(3):
        _same(em.image.random_brightness(RGB, 0.4, seed=2), tf.image.random_brightness(RGB, 0.4, seed=2))
        _same(em.image.random_contrast(RGB, 0.2, 1.8, seed=5), tf.image.random_contrast(RGB, 0.2, 1.8, seed=5))
        _same(em.image.random_crop(U8, [3, 4, 3], seed=8), tf.image.random_crop(U8, [3, 4, 3], seed=8), 0)


def test_random_hue_and_saturation_draw_as_tensorflow():
    tf.random.set_seed(9)
    em.random.set_seed(9)
    for _ in range(3):
        _same(em.image.random_hue(RGB, 0.3, seed=1), tf.image.random_hue(RGB, 0.3, seed=1), 2e-5)
        _same(em.image.random_saturation(RGB, 0.5, 1.5, seed=4), tf.image.random_saturation(RGB, 0.5, 1.5, seed=4))


@pytest.mark.parametrize("seed", [(1, 2), (7, 0), (33, 5)])
def test_stateless_random_adjustments_and_crop_match_tensorflow(seed):
    _compare(lambda m, x: m.image.stateless_random_brightness(x, 0.3, seed), RGB)
    _compare(lambda m, x: m.image.stateless_random_contrast(x, 0.2, 1.8, seed), RGB, grad=False)  # TF: none
    _compare(lambda m, x: m.image.stateless_random_saturation(x, 0.2, 1.8, seed), RGB, grad=False)
    _compare(lambda m, x: m.image.stateless_random_hue(x, 0.4, seed), RGB, grad=False, tol=2e-5)
    _compare(lambda m, x: m.image.stateless_random_crop(x, [1, 4, 3, 3], seed), RGB)
    _compare(lambda m, x: m.image.stateless_random_crop(x, [2, 5, 3], seed), U8, grad=False)


def test_random_crop_covers_every_offset():
    em.random.set_seed(0)
    image = np.arange(5 * 4).reshape(5, 4)
    corners = {int(em.image.random_crop(image, [2, 2]).numpy()[0, 0]) for _ in range(300)}
    assert corners == {r * 4 + c for r in range(4) for c in range(3)}


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("sizes,strides,rates", [
    ([1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1]), ([1, 2, 3, 1], [1, 2, 3, 1], [1, 1, 1, 1]),
    ([1, 3, 2, 1], [1, 3, 2, 1], [1, 2, 3, 1]), ([1, 1, 1, 1], [1, 2, 2, 1], [1, 1, 1, 1]),
    ([1, 5, 3, 1], [1, 1, 1, 1], [1, 1, 2, 1]), ([1, 3, 3, 1], [1, 4, 4, 1], [1, 2, 2, 1])])
def test_extract_patches(padding, sizes, strides, rates):
    _compare(lambda m, x: m.image.extract_patches(x, sizes, strides, rates, padding), RGB)


def test_image_gradients_and_sobel_edges():
    _compare(lambda m, x: m.image.image_gradients(x), RGB)
    _compare(lambda m, x: m.image.sobel_edges(x), RGB)
    _compare(lambda m, x: m.image.sobel_edges(x), RGB.astype(np.float64))


def test_psnr_ssim_total_variation():
    other = np.clip(BIG + RNG.normal(0, 0.1, BIG.shape), 0, 1).astype(np.float32)
    _compare(lambda m, a, b: m.image.psnr(a, b, 1.0), RGB, RGB[::-1].copy())
    _compare(lambda m, a, b: m.image.ssim(a, b, 1.0), BIG, other, tol=2e-5)
    _compare(lambda m, a, b: m.image.ssim(a, b, 1.0, filter_size=5, filter_sigma=0.8), RGB, RGB[::-1].copy(),
             tol=2e-5)
    _compare(lambda m, a, b: m.image.ssim(a, b, 1.0, return_index_map=True), BIG, other, tol=2e-5)
    u8 = (BIG * 255).astype(np.uint8)
    _compare(lambda m, a, b: m.image.ssim(a, b, 255), u8, u8[::-1].copy(), grad=False, tol=2e-5)
    _compare(lambda m, a, b: m.image.psnr(a, b, 255), u8, u8[::-1].copy(), grad=False)
    _compare(lambda m, x: m.image.total_variation(x), RGB)
    _compare(lambda m, x: m.image.total_variation(x), RGB[0])


def test_ssim_multiscale():
    """Five scales of an odd-sized image (the odd heights and widths padded by mirroring before each 2x2
    pooling), three scales of a smaller one with its own weights and filter, uint8 images, and a batch of
    batches; values and gradients eagerly and traced."""
    big = RNG.uniform(0, 1, (2, 181, 179, 3)).astype(np.float32)
    other = np.clip(big + RNG.normal(0, 0.2, big.shape), 0, 1).astype(np.float32)
    _compare(lambda m, a, b: m.image.ssim_multiscale(a, b, 1.0), big, other, tol=5e-5)
    small, noisy = BIG[:, :, :12], np.clip(BIG[:, :, :12] + 0.3 * RNG.normal(size=BIG[:, :, :12].shape), 0, 1)
    _compare(lambda m, a, b: m.image.ssim_multiscale(a, b, 1.0, power_factors=(0.2, 0.3, 0.5), filter_size=3,
                                                     filter_sigma=0.7), small, noisy.astype(np.float32), tol=5e-5)
    u8 = (big * 255).astype(np.uint8)
    _compare(lambda m, a, b: m.image.ssim_multiscale(a, b, 255), u8, (other * 255).astype(np.uint8), grad=False,
             tol=5e-5)
    # Unrelated images: some contrast-structure terms are negative, relu makes them 0 and pow's gradient there
    # is inf, which TensorFlow's ReluGrad turns into NaN (inf * 0) and ember's into 0 (a select): values only.
    _compare(lambda m, a, b: m.image.ssim_multiscale(a, b, 1.0, power_factors=(0.5, 0.5), filter_size=5),
             BIG.reshape(1, 2, 16, 13, 3), BIG[::-1].reshape(1, 2, 16, 13, 3).copy(), tol=5e-5, grad=False)


def _error(fn, *, kind=None):
    """The error fn(tf) raises, and that fn(em) raises the same kind with the same message."""
    with pytest.raises(Exception) as theirs:
        fn(tf)
    with pytest.raises(Exception) as ours:
        fn(em)
    assert type(ours.value).__name__ == (kind or type(theirs.value).__name__), (ours.value, theirs.value)
    return str(ours.value), str(theirs.value)


@pytest.mark.parametrize("fn", [
    lambda m: m.image.crop_to_bounding_box(RGB, -1, 0, 2, 2),
    lambda m: m.image.crop_to_bounding_box(RGB, 5, 0, 2, 2),
    lambda m: m.image.crop_to_bounding_box(RGB, 0, 0, 2, 0),
    lambda m: m.image.crop_to_bounding_box(RGB[0, 0], 0, 0, 1, 1),
    lambda m: m.image.pad_to_bounding_box(RGB, 1, 0, 6, 9),
    lambda m: m.image.pad_to_bounding_box(RGB, 0, -1, 9, 9),
    lambda m: m.image.central_crop(RGB, 0.0),
    lambda m: m.image.central_crop(RGB, 1.5),
    lambda m: m.image.resize_with_crop_or_pad(RGB, 0, 3),
    lambda m: m.image.grayscale_to_rgb(m.constant(RGB)),
    lambda m: m.image.adjust_gamma(RGB, -1.0),
    lambda m: m.image.adjust_hue(RGB, 1.5),
    lambda m: m.image.random_brightness(RGB, -1.0),
    lambda m: m.image.random_contrast(RGB, 1.0, 0.5),
    lambda m: m.image.random_contrast(RGB, -1.0, 0.5),
    lambda m: m.image.random_hue(RGB, 0.6),
    lambda m: m.image.stateless_random_hue(RGB, -0.1, (1, 2)),
    lambda m: m.image.random_saturation(RGB, 2.0, 1.0),
    lambda m: m.image.stateless_random_brightness(RGB, -1.0, (1, 2)),
    lambda m: m.image.image_gradients(m.constant(RGB[0])),
    lambda m: m.image.total_variation(m.constant(RGB[0, 0])),
    lambda m: m.image.ssim(RGB, RGB[:, :5], 1.0),
])
def test_errors_raised_now_match_tensorflow(fn):
    ours, theirs = _error(fn)
    assert theirs.splitlines()[0] in ours


@pytest.mark.parametrize("fn,kind", [
    (lambda m: m.image.crop_to_bounding_box(RGB, m.constant(5), 0, 2, 2), None),
    (lambda m: m.image.random_crop(RGB, [3, 7, 3]), None),
    (lambda m: m.image.stateless_random_crop(RGB, [1, 3, 8, 3], (1, 2)), None),
    (lambda m: m.image.rgb_to_hsv(RGB[..., :2]), "InvalidArgumentError"),  # TF: FailedPrecondition
    (lambda m: m.image.adjust_saturation(np.zeros([2, 2, 4], np.float32), 0.5), None),
    (lambda m: m.image.extract_patches(RGB, [1, 2, 2], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"), None),
    (lambda m: m.image.extract_patches(RGB, [2, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"), None),
    (lambda m: m.image.extract_patches(RGB, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL"), None),
    (lambda m: m.image.ssim(RGB, RGB, 1.0), None),
    (lambda m: m.image.extract_patches(RGB, [1, 5, 5, 1], [1, 1, 1, 1], [1, 3, 3, 1], "VALID"), None),
])
def test_errors_at_run_time_are_ember_errors(fn, kind):
    _error(fn, kind=kind)


def test_tensor_checks_run_inside_a_function():
    crop = em.function(lambda x, top: em.image.crop_to_bounding_box(x, top, 0, 2, 2))
    assert crop(RGB, em.constant(1)).shape == (2, 2, 2, 3)
    with pytest.raises(em.errors.InvalidArgumentError, match="height must be >= target"):
        crop(RGB, em.constant(5))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.image.crop_to_bounding_box(x, 1, 2, 3, 4),
    lambda m, x: m.image.pad_to_bounding_box(x, 1, 2, 9, 12),
    lambda m, x: m.image.central_crop(x, 0.5),
    lambda m, x: m.image.resize_with_crop_or_pad(x, 4, 9),
    lambda m, x: m.image.resize_with_pad(x, 9, 4),
    lambda m, x: m.image.per_image_standardization(x),
    lambda m, x: m.image.rgb_to_grayscale(x),
    lambda m, x: m.image.adjust_hue(x, 0.25),
    lambda m, x: m.image.stateless_random_flip_left_right(x, (3, 4)),
    lambda m, x: m.image.stateless_random_crop(x, [3, 3, 3], (3, 4)),
])
def test_images_of_unknown_size_in_a_function(fn):
    """A dataset map sees images whose height and width are unknown while tracing."""
    traced = em.function(lambda x: fn(em, x), input_signature=[em.TensorSpec([None, None, 3], em.float32)])
    for image in (RGB[0], BIG[1, :8, :10]):
        _same(traced(image), fn(tf, tf.constant(image)), 2e-5)

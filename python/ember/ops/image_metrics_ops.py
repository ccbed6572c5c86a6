"""``tf.image``'s image quality measures: psnr, ssim, ssim_multiscale (TensorFlow's definition: an 11x11 Gaussian window of
sigma 1.5 applied with VALID padding, k1 = 0.01, k2 = 0.03) and total_variation (exported by ``ember.image``).
All are compositions of registry ops, so they differentiate and trace."""

import numpy as np

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.image_color_ops import convert_image_dtype
from ember.ops.math_ops import cast, reduce_mean


def _pair(a, b, op):
    """a and b converted to tensors, checked as TensorFlow: rank >= 3 and compatible last three dimensions."""
    a = a if isinstance(a, Tensor) else convert_to_tensor(a)
    b = b if isinstance(b, Tensor) else convert_to_tensor(b)
    for x in (a, b):
        if x.shape.rank is not None and x.shape.rank < 3:
            raise ValueError(f"{op}: shape {x.shape} must have rank at least 3")
    if a.shape.rank is not None and b.shape.rank is not None:
        if not a.shape[-3:].is_compatible_with(b.shape[-3:]):
            raise ValueError(f"Shapes {a.shape[-3:]} and {b.shape[-3:]} are incompatible")
    return a, b


def _max_val(max_val, like):
    return convert_image_dtype(cast(convert_to_tensor(max_val), like.dtype), dtypes.float32)


def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio per image: 20 log10(max_val) - 10 log10(mean squared error), in float32."""
    a, b = _pair(a, b, "psnr")
    max_val = _max_val(max_val, a)
    a, b = convert_image_dtype(a, dtypes.float32), convert_image_dtype(b, dtypes.float32)
    mse = reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
    return (20.0 * math_ops.log(max_val) / np.float32(np.log(10.0))
            - np.float32(10 / np.log(10)) * math_ops.log(mse))


def _gaussian_window(size, sigma):
    """The [size, size, 1, 1] normalised Gaussian, as TensorFlow builds it (a softmax of -d^2 / (2 sigma^2))."""
    from ember.ops.nn_ops import softmax

    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = convert_to_tensor(np.square(coords)) * (np.float32(-0.5) / math_ops.square(sigma))
    g = array_ops.reshape(g, [1, -1]) + array_ops.reshape(g, [-1, 1])
    return array_ops.reshape(softmax(array_ops.reshape(g, [1, -1])), [size, size, 1, 1])


def _ssim_maps(img1, img2, max_val, filter_size, filter_sigma, k1, k2):
    """The luminance and contrast-structure maps of two float32 images over the VALID window positions."""
    from ember import debugging
    from ember.ops.nn_conv_ops import depthwise_conv2d

    filter_size = int(filter_size)
    shape = array_ops.shape(img1)
    debugging.Assert(math_ops.reduce_all(math_ops.greater_equal(shape[-3:-1], filter_size)),
                     [shape, filter_size], summarize=8)
    depth = img1.shape[-1]
    if depth is None:
        raise ValueError(f"ssim: the number of channels must be known, got shape {img1.shape}")
    sigma = convert_to_tensor(filter_sigma, dtype=dtypes.float32)
    kernel = array_ops.tile(_gaussian_window(filter_size, sigma), [1, 1, depth, 1])

    def window_mean(x):  # over the leading dimensions folded into one batch
        inner = x.shape[-3:].as_list()
        outer = array_ops.shape(x)[:-3]
        y = depthwise_conv2d(array_ops.reshape(x, [-1] + [d if d is not None else -1 for d in inner]),
                             kernel, [1, 1, 1, 1], "VALID")
        return array_ops.reshape(y, array_ops.concat([outer, array_ops.shape(y)[1:]], 0))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean1, mean2 = window_mean(img1), window_mean(img2)
    num0 = mean1 * mean2 * 2.0
    den0 = math_ops.square(mean1) + math_ops.square(mean2)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = window_mean(img1 * img2) * 2.0
    den1 = window_mean(math_ops.square(img1) + math_ops.square(img2))
    contrast_structure = (num1 - num0 + c2) / (den1 - den0 + c2)
    return luminance, contrast_structure


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, return_index_map=False):
    """Structural similarity per image (mean over the window positions and channels), in float32; with
    ``return_index_map`` the map over the positions, averaged over channels."""
    img1, img2 = _pair(img1, img2, "ssim")
    max_val = _max_val(max_val, img1)
    img1, img2 = convert_image_dtype(img1, dtypes.float32), convert_image_dtype(img2, dtypes.float32)
    luminance, contrast_structure = _ssim_maps(img1, img2, max_val, filter_size, filter_sigma, k1, k2)
    per_channel = luminance * contrast_structure
    if not return_index_map:
        per_channel = reduce_mean(per_channel, [-3, -2])
    return reduce_mean(per_channel, [-1])


_MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MS_SSIM_WEIGHTS, filter_size=11, filter_sigma=1.5, k1=0.01,
                    k2=0.03):
    """Multi-scale SSIM per image, as TensorFlow computes it: at each of len(power_factors) scales (each a
    2x2 average pool of the last, an odd height or width first padded by mirroring its last row or column),
    the contrast-structure term, and at the last scale the full SSIM, each per channel through relu, raised
    to its power factor and multiplied; then the mean over channels."""
    from ember.ops.array_ops import pad
    from ember.ops.nn_ops import relu
    from ember.ops.nn_conv_ops import avg_pool

    img1, img2 = _pair(img1, img2, "ssim_multiscale")
    max_val = _max_val(max_val, img1)
    imgs = [convert_image_dtype(img1, dtypes.float32), convert_image_dtype(img2, dtypes.float32)]
    heads = [array_ops.shape(x)[:-3] for x in imgs]
    tails = [array_ops.shape(x)[-3:] for x in imgs]
    divisor = convert_to_tensor([2, 2, 1], dtype=dtypes.int32)
    terms = []
    for k in range(len(power_factors)):
        if k > 0:
            flat = [array_ops.reshape(x, array_ops.concat([[-1], t], 0)) for x, t in zip(imgs, tails)]
            # SYMMETRIC padding by nothing is the identity, so TensorFlow's cond on "any odd" is not needed.
            remainder = array_ops.reshape(tails[0] % divisor, [3, 1])
            paddings = array_ops.concat([array_ops.zeros([4, 1], dtypes.int32),
                                         array_ops.concat([array_ops.zeros([1, 1], dtypes.int32), remainder], 0)], 1)
            down = [avg_pool(pad(x, paddings, mode="SYMMETRIC"), [1, 2, 2, 1], [1, 2, 2, 1], "VALID") for x in flat]
            tails = [array_ops.shape(x)[1:] for x in down]
            imgs = [array_ops.reshape(x, array_ops.concat([h, t], 0)) for x, h, t in zip(down, heads, tails)]
        luminance, contrast_structure = _ssim_maps(*imgs, max_val, filter_size, filter_sigma, k1, k2)
        ssim_per_channel = reduce_mean(luminance * contrast_structure, [-3, -2])
        terms.append(relu(reduce_mean(contrast_structure, [-3, -2])))
    terms[-1] = relu(ssim_per_channel)
    factors = convert_to_tensor(list(power_factors), dtype=dtypes.float32)
    ms_ssim = math_ops.reduce_prod(math_ops.pow(array_ops.stack(terms, axis=-1), factors), [-1])
    return reduce_mean(ms_ssim, [-1])


def total_variation(images, name=None):
    """The sum of absolute differences between neighbouring pixels, per image for a batch."""
    x = images if isinstance(images, Tensor) else convert_to_tensor(images)
    if x.shape.rank == 3:
        down, right, axes = x[1:, :, :] - x[:-1, :, :], x[:, 1:, :] - x[:, :-1, :], None
    elif x.shape.rank == 4:
        down, right, axes = x[:, 1:, :, :] - x[:, :-1, :, :], x[:, :, 1:, :] - x[:, :, :-1, :], [1, 2, 3]
    else:
        raise ValueError("'images' must be either 3 or 4-dimensional.")
    return math_ops.reduce_sum(math_ops.abs(down), axes) + math_ops.reduce_sum(math_ops.abs(right), axes)

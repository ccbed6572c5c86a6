"""``ember.keras.preprocessing.image``: Keras 2's image augmentation (``ImageDataGenerator`` and the
``random_*``/``apply_*`` functions), its batch iterators (``image_iterators.py``) and the image file helpers
under Keras 2's older names (``keras/utils/image_utils.py``).

As in tf_keras this is NumPy and SciPy (``scipy.ndimage.affine_transform``) on host arrays, not ember ops: the
transforms are per-image resamplings a data pipeline runs before a batch reaches the model. Randomness comes
from NumPy's global state, drawn in tf_keras' order (see ``get_random_transform``), so the same seed gives
tf_keras' parameters and, through the same SciPy resampling, its pixels.
"""

import warnings

import numpy as np

from ember.keras.preprocessing.image_iterators import (  # noqa: F401
    BatchFromFilesMixin, DataFrameIterator, DirectoryIterator, Iterator, NumpyArrayIterator)
from ember.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img, smart_resize  # noqa: F401


def _ndimage():
    try:
        from scipy import ndimage
    except ImportError as e:  # pragma: no cover - SciPy is installed where Keras' augmentation is used
        raise ImportError("Image transformations require SciPy. Install SciPy.") from e
    return ndimage


# ---- one image: the module functions ----------------------------------------------------------------


def transform_matrix_offset_center(matrix, x, y):
    """``matrix`` (homogeneous 3x3) about the centre of an ``x`` by ``y`` image instead of its corner."""
    o_x, o_y = float(x) / 2 - 0.5, float(y) / 2 - 0.5
    to_center = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    from_center = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return to_center @ matrix @ from_center


def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=1, col_axis=2, channel_axis=0,
                           fill_mode="nearest", cval=0.0, order=1):
    """Rotates by ``theta`` degrees, shifts by (``tx``, ``ty``) pixels, shears by ``shear`` degrees and zooms by
    (``zx``, ``zy``) a 3-D image, about its centre; each channel is resampled by
    ``scipy.ndimage.affine_transform`` (spline ``order``, ``fill_mode`` and ``cval`` outside). With nothing to
    do, ``x`` comes back as it is."""
    ndimage = _ndimage()
    axes = {row_axis, col_axis, channel_axis}
    if len(axes) != 3:
        raise ValueError("'row_axis', 'col_axis', and 'channel_axis' must be distinct")
    if axes != {0, 1, 2}:
        raise ValueError(f"Invalid axis' indices: {axes - {0, 1, 2}}")
    if x.ndim != 3:
        raise ValueError("Input arrays must be multi-channel 2D images.")
    if channel_axis not in (0, 2):
        raise ValueError("Channels are allowed and the first and last dimensions.")
    # The product rotation @ shift @ shear @ zoom of the parts that are not the identity.
    parts = []
    if theta != 0:
        t = np.deg2rad(theta)
        parts.append(np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]]))
    if tx != 0 or ty != 0:
        parts.append(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        s = np.deg2rad(shear)
        parts.append(np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        parts.append(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if not parts:
        return x
    matrix = parts[0]
    for part in parts[1:]:
        matrix = np.dot(matrix, part)
    matrix = transform_matrix_offset_center(matrix, x.shape[row_axis], x.shape[col_axis])
    if col_axis > row_axis:
        # Keras builds the matrix in (x, y) = (column, row) terms of the picture; ndimage indexes (row, col)
        matrix[:, [0, 1]] = matrix[:, [1, 0]]
        matrix[[0, 1]] = matrix[[1, 0]]
    channels = np.rollaxis(x, channel_axis, 0)
    out = np.stack([ndimage.affine_transform(c, matrix[:2, :2], matrix[:2, 2], order=order, mode=fill_mode,
                                             cval=cval) for c in channels], axis=0)
    return np.rollaxis(out, 0, channel_axis + 1)


def random_rotation(x, rg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                    interpolation_order=1):
    """Rotates a 3-D image by a uniform random angle in [-rg, rg] degrees."""
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(x, theta=theta, row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis,
                                  fill_mode=fill_mode, cval=cval, order=interpolation_order)


def random_shift(x, wrg, hrg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                 interpolation_order=1):
    """Shifts a 3-D image by uniform random fractions of its height (``hrg``) and width (``wrg``)."""
    tx = np.random.uniform(-hrg, hrg) * x.shape[row_axis]
    ty = np.random.uniform(-wrg, wrg) * x.shape[col_axis]
    return apply_affine_transform(x, tx=tx, ty=ty, row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis,
                                  fill_mode=fill_mode, cval=cval, order=interpolation_order)


def random_shear(x, intensity, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                 interpolation_order=1):
    """Shears a 3-D image by a uniform random angle in [-intensity, intensity] degrees."""
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(x, shear=shear, row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis,
                                  fill_mode=fill_mode, cval=cval, order=interpolation_order)


def random_zoom(x, zoom_range, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                interpolation_order=1):
    """Zooms a 3-D image by factors drawn uniformly from ``zoom_range = (lower, upper)``, one per axis."""
    if len(zoom_range) != 2:
        raise ValueError(f"`zoom_range` should be a tuple or list of two floats. Received: {zoom_range}")
    zx, zy = _draw_zoom(zoom_range)
    return apply_affine_transform(x, zx=zx, zy=zy, row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis,
                                  fill_mode=fill_mode, cval=cval, order=interpolation_order)


def _draw_zoom(zoom_range):
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        return 1, 1
    zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return zx, zy


def apply_channel_shift(x, intensity, channel_axis=0):
    """Adds ``intensity`` to every channel, clipped to the image's own [min, max]."""
    channels = np.rollaxis(x, channel_axis, 0)
    low, high = np.min(channels), np.max(channels)
    shifted = np.stack([np.clip(c + intensity, low, high) for c in channels], axis=0)
    return np.rollaxis(shifted, 0, channel_axis + 1)


def random_channel_shift(x, intensity_range, channel_axis=0):
    """``apply_channel_shift`` by a uniform random intensity in [-intensity_range, intensity_range]."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def apply_brightness_shift(x, brightness, scale=True):
    """Pillow's ``ImageEnhance.Brightness(brightness)`` of a channels-last 3-D image; out of [0, 255] the image
    is scaled into it first and, with ``scale=False``, back to its range after."""
    try:
        from PIL import ImageEnhance
    except ImportError as e:  # pragma: no cover - Pillow is installed where Keras' image helpers are used
        raise ImportError("Using brightness shifts requires PIL. Install PIL or Pillow.") from e
    low, high = np.min(x), np.max(x)
    out_of_range = low < 0 or high > 255
    img = array_to_img(x, scale=out_of_range or scale)
    out = img_to_array(ImageEnhance.Brightness(img).enhance(brightness))
    if out_of_range and not scale:
        out = out / 255 * (high - low) + low
    return out


def random_brightness(x, brightness_range, scale=True):
    """``apply_brightness_shift`` by a factor drawn uniformly from ``brightness_range = (lower, upper)``."""
    if len(brightness_range) != 2:
        raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}")
    factor = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, factor, scale)


def flip_axis(x, axis):
    """``x`` reversed along ``axis``."""
    return np.flip(np.asarray(x), axis)


def _draw_shift(shift_range, size):
    """A shift in pixels. A float range draws uniformly from [-range, range]; an int n draws from
    {-(n-1), ..., n-1} and a list from +/- its values (``np.random.choice``, which refuses a float with
    ValueError; that is how tf_keras tells the cases apart). Fractions (< 1) are of ``size``."""
    try:
        shift = np.random.choice(shift_range)
        shift *= np.random.choice([-1, 1])
    except ValueError:
        shift = np.random.uniform(-shift_range, shift_range)
    if np.max(shift_range) < 1:
        shift *= size
    return shift


# ---- ImageDataGenerator -----------------------------------------------------------------------------


def _not_fit(option):
    warnings.warn(f"This ImageDataGenerator specifies `{option}`, but it hasn't been fit on any training data. Fit "
                  "it first by calling `.fit(numpy_data)`.")


class ImageDataGenerator:
    """Batches of augmented, normalized images from arrays (``flow``) or image folders
    (``flow_from_directory``), as tf_keras' ``ImageDataGenerator``: each image gets a random affine transform
    (rotation, shifts, shear, zoom), channel shift, flips and brightness (``get_random_transform`` then
    ``apply_transform``), then ``standardize`` (preprocessing_function, rescale, sample-wise then feature-wise
    centring and scaling, ZCA whitening; the feature-wise statistics come from ``fit``)."""

    def __init__(self, featurewise_center=False, samplewise_center=False, featurewise_std_normalization=False,
                 samplewise_std_normalization=False, zca_whitening=False, zca_epsilon=1e-6, rotation_range=0,
                 width_shift_range=0.0, height_shift_range=0.0, brightness_range=None, shear_range=0.0,
                 zoom_range=0.0, channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None, data_format=None,
                 validation_split=0.0, interpolation_order=1, dtype=None):
        from ember.keras import backend

        data_format = data_format or backend.image_data_format()
        self.dtype = dtype or backend.floatx()
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.interpolation_order = interpolation_order
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError('`data_format` should be `"channels_last"` (channel after row and column) or '
                             f'`"channels_first"` (channel before row and column). Received: {data_format}')
        self.data_format = data_format
        # axes of a batch; an image's are one less
        if data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(f"`validation_split` must be strictly between 0 and 1.  Received: {validation_split}")
        self._validation_split = validation_split
        self.mean = None
        self.std = None
        self.zca_whitening_matrix = None
        if isinstance(zoom_range, (float, int)):
            self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
            self.zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"`zoom_range` should be a float or a tuple or list of two floats. Received: {zoom_range}")
        if zca_whitening:
            if not featurewise_center:
                self.featurewise_center = True
                warnings.warn("This ImageDataGenerator specifies `zca_whitening`, which overrides setting of "
                              "`featurewise_center`.")
            if featurewise_std_normalization:
                self.featurewise_std_normalization = False
                warnings.warn("This ImageDataGenerator specifies `zca_whitening` which overrides setting of"
                              "`featurewise_std_normalization`.")
        if featurewise_std_normalization and not featurewise_center:
            self.featurewise_center = True
            warnings.warn("This ImageDataGenerator specifies `featurewise_std_normalization`, which overrides setting "
                          "of `featurewise_center`.")
        if samplewise_std_normalization and not samplewise_center:
            self.samplewise_center = True
            warnings.warn("This ImageDataGenerator specifies `samplewise_std_normalization`, which overrides setting "
                          "of `samplewise_center`.")
        if brightness_range is not None and (not isinstance(brightness_range, (tuple, list))
                                             or len(brightness_range) != 2):
            raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}")
        self.brightness_range = brightness_range

    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None, save_to_dir=None,
             save_prefix="", save_format="png", ignore_class_split=False, subset=None):
        """A ``NumpyArrayIterator`` over images ``x`` (rank 4) and labels ``y``."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle, sample_weight=sample_weight,
                                  seed=seed, data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format,
                                  ignore_class_split=ignore_class_split, subset=subset, dtype=self.dtype)

    def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb", classes=None,
                            class_mode="categorical", batch_size=32, shuffle=True, seed=None, save_to_dir=None,
                            save_prefix="", save_format="png", follow_links=False, subset=None,
                            interpolation="nearest", keep_aspect_ratio=False):
        """A ``DirectoryIterator`` over ``directory/<class>/`` image files."""
        return DirectoryIterator(directory, self, target_size=target_size, color_mode=color_mode,
                                 keep_aspect_ratio=keep_aspect_ratio, classes=classes, class_mode=class_mode,
                                 data_format=self.data_format, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                 save_to_dir=save_to_dir, save_prefix=save_prefix, save_format=save_format,
                                 follow_links=follow_links, subset=subset, interpolation=interpolation,
                                 dtype=self.dtype)

    def flow_from_dataframe(self, dataframe, directory=None, x_col="filename", y_col="class", weight_col=None,
                            target_size=(256, 256), color_mode="rgb", classes=None, class_mode="categorical",
                            batch_size=32, shuffle=True, seed=None, save_to_dir=None, save_prefix="",
                            save_format="png", subset=None, interpolation="nearest", validate_filenames=True,
                            **kwargs):
        """A ``DataFrameIterator`` over the image files a pandas DataFrame names in ``x_col`` (relative to
        ``directory`` when given), labelled from ``y_col`` as ``class_mode`` says."""
        for old in ("has_ext", "sort", "drop_duplicates"):
            if old in kwargs:
                warnings.warn(f"{old} is deprecated and will be removed in a future version.", DeprecationWarning)
                kwargs.pop(old)
        if kwargs:
            raise TypeError(f"flow_from_dataframe() got unexpected keyword arguments {sorted(kwargs)}")
        return DataFrameIterator(dataframe, directory, self, x_col=x_col, y_col=y_col, weight_col=weight_col,
                                 target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, subset=subset, interpolation=interpolation,
                                 validate_filenames=validate_filenames, dtype=self.dtype)

    def standardize(self, x):
        """Normalizes one image (or a batch) in place where NumPy can: preprocessing_function, rescale,
        sample-wise centring and std scaling, then the fitted feature-wise mean, std and ZCA matrix."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center:
            if self.mean is None:
                _not_fit("featurewise_center")
            else:
                x -= self.mean
        if self.featurewise_std_normalization:
            if self.std is None:
                _not_fit("featurewise_std_normalization")
            else:
                x /= self.std + 1e-6
        if self.zca_whitening:
            if self.zca_whitening_matrix is None:
                _not_fit("zca_whitening")
            else:
                flat = x.reshape(-1, np.prod(x.shape[-3:]))
                x = np.reshape(flat @ self.zca_whitening_matrix, x.shape)
        return x

    def get_random_transform(self, img_shape, seed=None):
        """The random parameters of one image's transform (a dict for ``apply_transform``), drawn from NumPy's
        global state (seeded with ``seed`` when given) in this order: rotation, height shift, width shift,
        shear, zoom (two), horizontal flip, vertical flip (always drawn), channel shift, brightness."""
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) if self.rotation_range else 0
        # tx moves along rows, ty along columns
        tx = _draw_shift(self.height_shift_range, img_shape[self.row_axis - 1]) if self.height_shift_range else 0
        ty = _draw_shift(self.width_shift_range, img_shape[self.col_axis - 1]) if self.width_shift_range else 0
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        zx, zy = _draw_zoom(self.zoom_range)
        flip_horizontal = (np.random.random() < 0.5) * self.horizontal_flip
        flip_vertical = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift_intensity = None
        if self.channel_shift_range != 0:
            channel_shift_intensity = np.random.uniform(-self.channel_shift_range, self.channel_shift_range)
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_horizontal, "flip_vertical": flip_vertical,
                "channel_shift_intensity": channel_shift_intensity, "brightness": brightness}

    def apply_transform(self, x, transform_parameters):
        """Applies ``transform_parameters`` (missing keys mean no change) to one 3-D image: the affine
        transform, the channel shift, the flips, then the brightness."""
        p = transform_parameters
        row_axis, col_axis, channel_axis = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0), p.get("shear", 0),
                                   p.get("zx", 1), p.get("zy", 1), row_axis=row_axis, col_axis=col_axis,
                                   channel_axis=channel_axis, fill_mode=self.fill_mode, cval=self.cval,
                                   order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], channel_axis)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, col_axis)
        if p.get("flip_vertical", False):
            x = flip_axis(x, row_axis)
        if p.get("brightness") is not None:
            x = apply_brightness_shift(x, p["brightness"], False)
        return x

    def random_transform(self, x, seed=None):
        """One image with a random transform applied."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None):
        """Computes the feature-wise mean and std (per channel) and the ZCA whitening matrix of images ``x``
        (rank 4), after rescale and, with ``augment``, over ``rounds`` randomly transformed copies."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}")
        if x.shape[self.channel_axis] not in (1, 3, 4):
            axis = self.channel_axis
            warnings.warn("Expected input to be images (as Numpy array) following the data format convention "
                          f'"{self.data_format}" (channels on axis {axis}), i.e. expected either 1, 3 or 4 channels '
                          f"on axis {axis}. However, it was passed an array with shape {x.shape} "
                          f"({x.shape[axis]} channels).")
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            augmented = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    augmented[i + r * x.shape[0]] = self.random_transform(x[i])
            x = augmented
        per_channel = [1, 1, 1]
        per_channel[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=(0, self.row_axis, self.col_axis)), per_channel)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=(0, self.row_axis, self.col_axis)), per_channel)
            x /= self.std + 1e-6
        if self.zca_whitening:
            n = len(x)
            u, s, _ = np.linalg.svd(np.reshape(x, (n, -1)).T, full_matrices=False)
            self.zca_whitening_matrix = (u * (np.sqrt(n) / (s + self.zca_epsilon))).dot(u.T)

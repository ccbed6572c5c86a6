"""Keras 2's image helpers: ``load_img``, ``img_to_array``, ``array_to_img``, ``save_img`` (on Pillow, as
tf_keras: the same resampling, so the same pixels), ``smart_resize`` and ``image_dataset_from_directory``
(``tf.io.read_file`` and ``tf.image.decode_image`` inside a ``tf.data`` map, on ember's codec ops)."""

import io
import os
import pathlib
import warnings

import numpy as np

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _pil():
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - Pillow is installed where Keras' image helpers are used
        raise ImportError("Could not import PIL.Image. The use of `load_img` requires PIL (pip install Pillow).") from e
    return Image


def _pil_resampling(name):
    image = _pil()
    methods = {"nearest": image.NEAREST, "bilinear": image.BILINEAR, "bicubic": image.BICUBIC,
               "hamming": image.HAMMING, "box": image.BOX, "lanczos": image.LANCZOS}
    if name not in methods:
        raise ValueError(f"Invalid interpolation method {name} specified. Supported methods are "
                         f"{', '.join(methods)}")
    return methods[name]


def _data_format(data_format):
    if data_format is None:
        from ember.keras import backend

        data_format = backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Invalid data_format: {data_format}")
    return data_format


def load_img(path, grayscale=False, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """A PIL image from a file path (str, bytes or pathlib.Path) or BytesIO, converted to ``color_mode`` and
    resized to ``target_size = (height, width)`` (the centre crop of that aspect ratio when
    ``keep_aspect_ratio``)."""
    if grayscale:
        warnings.warn("grayscale is deprecated. Please use color_mode = 'grayscale'")
        color_mode = "grayscale"
    pil = _pil()
    if isinstance(path, io.BytesIO):
        img = pil.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        with open(str(path.resolve()) if isinstance(path, pathlib.Path) else path, "rb") as f:
            img = pil.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    modes = {"grayscale": ("L", "I;16", "I"), "rgba": ("RGBA",), "rgb": ("RGB",)}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode not in modes[color_mode]:
        img = img.convert(modes[color_mode][0])  # 16- and 32-bit gray images stay as they are
    if target_size is None:
        return img
    size = (target_size[1], target_size[0])  # PIL's (width, height)
    if img.size == size:
        return img
    resample = _pil_resampling(interpolation)
    if not keep_aspect_ratio:
        return img.resize(size, resample)
    width, height = img.size
    crop_height = min(height, (width * size[1]) // size[0])
    crop_width = min(width, (height * size[0]) // size[1])
    top, left = (height - crop_height) // 2, (width - crop_width) // 2
    return img.resize(size, resample, box=[left, top, left + crop_width, top + crop_height])


def img_to_array(img, data_format=None, dtype=None):
    """A PIL image as a 3-D NumPy array (float32 unless ``dtype``), channels last unless ``data_format``."""
    from ember.keras import backend

    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or backend.floatx())
    if x.ndim == 2:
        x = x[np.newaxis] if data_format == "channels_first" else x[..., np.newaxis]
    elif x.ndim == 3:
        if data_format == "channels_first":
            x = x.transpose(2, 0, 1)
    else:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image of a 3-D array (1, 3 or 4 channels); ``scale`` maps its range onto [0, 255]."""
    from ember.keras import backend

    x = np.asarray(x, dtype=dtype or backend.floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    if _data_format(data_format) == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    pil = _pil()
    channels = x.shape[2]
    if channels in (3, 4):
        return pil.fromarray(x.astype("uint8"), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        if np.max(x) > 255:  # a 32-bit gray image
            return pil.fromarray(x[:, :, 0].astype("int32"), "I")
        return pil.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes a 3-D array as an image file (the format from ``file_format`` or the file name)."""
    img = array_to_img(x, data_format=_data_format(data_format), scale=scale)
    if img.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def smart_resize(x, size, interpolation="bilinear"):
    """Resizes images ([h, w, c] or [n, h, w, c]) to ``size`` without distorting them: the largest centred
    crop of the target aspect ratio, then ``tf.image.resize``."""
    import ember as tf

    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    img = tf.convert_to_tensor(x)
    rank = img.shape.rank
    if rank is not None and rank not in (3, 4):
        raise ValueError(f"Expected an image array with shape `(height, width, channels)`, or `(batch_size, height, "
                         f"width, channels)`, but got input with incorrect rank, of shape {img.shape}.")
    shape = tf.shape(img)
    height, width = shape[-3], shape[-2]
    target_height, target_width = size
    # In float32, then truncated, as Keras computes the crop.
    crop_height = tf.minimum(height, tf.cast(tf.cast(width * target_height, "float32") / target_width, "int32"))
    crop_width = tf.minimum(width, tf.cast(tf.cast(height * target_width, "float32") / target_height, "int32"))
    top = tf.cast(tf.cast(height - crop_height, "float32") / 2, "int32")
    left = tf.cast(tf.cast(width - crop_width, "float32") / 2, "int32")
    if rank == 4:
        img = tf.slice(img, tf.stack([0, top, left, 0]), tf.stack([-1, crop_height, crop_width, -1]))
    else:
        img = tf.slice(img, tf.stack([top, left, 0]), tf.stack([crop_height, crop_width, -1]))
    img = tf.image.resize(img, size, method=interpolation)
    if isinstance(x, np.ndarray):
        return img.numpy()
    return img


def _index_images(directory, labels, class_names, follow_links):
    """Keras' index_directory: files with an image extension, walked in sorted order, class by class in sorted
    subdirectory order (labels the class's place in ``class_names``); or the whole tree for labels None or a
    list."""
    if labels == "inferred":
        subdirs = sorted(d for d in os.listdir(directory)
                         if os.path.isdir(os.path.join(directory, d)) and not d.startswith("."))
        if not class_names:
            class_names = subdirs
        elif set(class_names) != set(subdirs):
            raise ValueError("The `class_names` passed did not match the names of the subdirectories of the target "
                             f"directory. Expected: {subdirs}, but received: {class_names}")
    else:
        subdirs = [""]
        class_names = subdirs
    index_of = {name: i for i, name in enumerate(class_names)}
    files, found = [], []
    for subdir in subdirs:
        top = os.path.join(directory, subdir)
        for root, _, names in sorted(os.walk(top, followlinks=follow_links), key=lambda w: w[0]):
            for name in sorted(names):
                if name.lower().endswith(ALLOWLIST_FORMATS):
                    files.append(os.path.join(root, name))
                    found.append(index_of.get(subdir, 0))
    if labels not in ("inferred", None):
        if len(labels) != len(files):
            raise ValueError("Expected the lengths of `labels` to match the number of files in the target directory. "
                             f"len(labels) is {len(labels)} while we found {len(files)} files in directory "
                             f"{directory}.")
        class_names = sorted(set(labels))
        found = list(labels)
    if labels is None:
        print(f"Found {len(files)} files.")
    else:
        print(f"Found {len(files)} files belonging to {len(class_names)} classes.")
    return files, found, class_names


def _check_split(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: {validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or "both", received: {subset}')
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide a `seed` argument, to "
                         "make sure that there is no overlap between the training and validation subset.")


def _split(paths, labels, validation_split, subset):
    if not validation_split:
        return paths, labels
    count = int(validation_split * len(paths))
    keep = slice(0, len(paths) - count) if subset == "training" else slice(len(paths) - count, None)
    return paths[keep], None if labels is None else labels[keep]


def _image_dataset(paths, labels, label_mode, num_classes, image_size, channels, interpolation, crop):
    import ember as tf

    def load(path):
        img = tf.image.decode_image(tf.io.read_file(path), channels=channels, expand_animations=False)
        if crop:
            img = smart_resize(img, image_size, interpolation=interpolation)
        else:
            img = tf.image.resize(img, image_size, method=interpolation)
        img.set_shape((image_size[0], image_size[1], channels))
        return img

    images = tf.data.Dataset.from_tensor_slices(paths).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    if not label_mode:
        return images
    label_ds = tf.data.Dataset.from_tensor_slices(np.asarray(labels, dtype=np.int32))
    if label_mode == "binary":
        label_ds = label_ds.map(lambda y: tf.expand_dims(tf.cast(y, "float32"), axis=-1))
    elif label_mode == "categorical":
        label_ds = label_ds.map(lambda y: tf.one_hot(y, num_classes))
    return tf.data.Dataset.zip((images, label_ds))


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None,
                                 color_mode="rgb", batch_size=32, image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, **kwargs):
    """A ``tf.data`` dataset of (image, label) batches from ``directory/<class>/<image files>``, as tf_keras'
    (the same files in the same order, decoded by ``tf.image.decode_image`` and resized by
    ``tf.image.resize``, or ``smart_resize`` with ``crop_to_aspect_ratio``). ``subset="both"`` returns
    [training, validation]."""
    import ember as tf

    if "smart_resize" in kwargs:
        crop_to_aspect_ratio = kwargs.pop("smart_resize")
    if kwargs:
        raise TypeError(f"Unknown keywords argument(s): {tuple(kwargs.keys())}")
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError("`labels` argument should be a list/tuple of integer labels, of the same size as the "
                             "number of image files in the target directory. If you wish to infer the labels from "
                             'the subdirectory names in the target directory, pass `labels="inferred"`. If you wish '
                             "to get a dataset that only contains images (no labels), pass `labels=None`. "
                             f"Received: labels={labels}")
        if class_names:
            raise ValueError('You can only pass `class_names` if `labels="inferred"`. Received: '
                             f"labels={labels}, and class_names={class_names}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError('`label_mode` argument must be one of "int", "categorical", "binary", or None. '
                         f"Received: label_mode={label_mode}")
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. Received: color_mode={color_mode}')
    interpolation = interpolation.lower()
    if interpolation not in _INTERPOLATIONS:
        raise NotImplementedError(f"Value not recognized for `interpolation`: {interpolation}. Supported values are: "
                                  f"{_INTERPOLATIONS}")
    _check_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, found, class_names = _index_images(directory, labels, class_names, follow_links)
    if shuffle:
        # Keras shuffles paths and labels with two generators of one seed: the same permutation.
        order = np.random.RandomState(seed).permutation(len(paths))
        paths, found = [paths[i] for i in order], [found[i] for i in order]
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError('When passing `label_mode="binary"`, there must be exactly 2 class_names. Received: '
                         f"class_names={class_names}")

    def build(subset_name, shuffled):
        part_paths, part_labels = _split(paths, found, validation_split, subset_name)
        if not part_paths:
            kind = {"training": "training ", "validation": "validation "}.get(subset_name, "")
            raise ValueError(f"No {kind if subset == 'both' else ''}images found in directory {directory}. "
                             f"Allowed formats: {ALLOWLIST_FORMATS}")
        ds = _image_dataset(part_paths, part_labels, label_mode, len(class_names), image_size, channels,
                            interpolation, crop_to_aspect_ratio)
        if batch_size is not None:
            if shuffled:
                ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
            ds = ds.batch(batch_size)
        elif shuffled:
            ds = ds.shuffle(buffer_size=1024, seed=seed)
        ds = ds.prefetch(tf.data.AUTOTUNE)
        ds.class_names = class_names
        ds.file_paths = part_paths
        return ds

    if subset == "both":
        # Keras shuffles the training part only (the validation part's batches keep their order).
        return [build("training", shuffle), build("validation", False)]
    return build(subset, shuffle)

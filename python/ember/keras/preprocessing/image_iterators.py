"""Keras 2's image batch iterators (``keras.preprocessing.image.Iterator``, ``NumpyArrayIterator``,
``DirectoryIterator``, ``DataFrameIterator``), the objects ``ImageDataGenerator.flow``,
``flow_from_directory`` and ``flow_from_dataframe`` return.

They are NumPy, as in tf_keras, and they consume NumPy's global random state in tf_keras' order, so that with
the same seed the batches are tf_keras' batch for batch: an iterator given a ``seed`` reseeds NumPy with
``seed + total_batches_seen`` before each batch (so the order of the samples and every random transform of
that batch follow from the seed and the batch count alone), shuffles with ``np.random.permutation`` at the
start of each pass, then draws each sample's transform (``get_random_transform``) in sample order, and last
the random part of ``save_to_dir``'s file names.

An iterator is both a ``keras.utils.Sequence`` (``it[i]``: batch ``i`` of the current order, which
``on_epoch_end`` reshuffles; this is how ``fit`` reads it) and an endless Python iterator (``next(it)``, which
wraps around the data, the last batch of a pass possibly short, and reshuffles at each wrap).
"""

import os
import threading
import warnings

import numpy as np

from ember.keras.utils import image_utils
from ember.keras.utils.data_utils import Sequence


def _defaults(data_format, dtype):
    from ember.keras import backend

    return data_format or backend.image_data_format(), dtype or backend.floatx()


class Iterator(Sequence):
    """Batches of ``batch_size`` indices into ``n`` samples; subclasses make the batch of an index array
    (``_get_batches_of_transformed_samples``)."""

    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n, batch_size, shuffle, seed):
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self):
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def _reseed(self):
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}")
        self._reseed()
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(
            self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)])

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self):
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    def _flow_index(self):
        """The index arrays of ``next()``: wraps around the samples, reshuffling at the start of each pass."""
        self.reset()
        while True:
            self._reseed()
            if self.batch_index == 0:
                self._set_index_array()
            start = 0 if self.n == 0 else (self.batch_index * self.batch_size) % self.n
            # the pass ends with the batch that reaches the last sample
            self.batch_index = self.batch_index + 1 if self.n > start + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[start:start + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        with self.lock:  # the index generator is shared by the threads that read batches
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array):
        raise NotImplementedError(f"{type(self).__name__} must define _get_batches_of_transformed_samples")


def _save_batch(batch_x, index_array, data_format, save_to_dir, prefix, file_format, hash_range):
    for i, j in enumerate(index_array):
        img = image_utils.array_to_img(batch_x[i], data_format, scale=True)
        name = f"{prefix}_{j}_{np.random.randint(hash_range)}.{file_format}"
        img.save(os.path.join(save_to_dir, name))


class NumpyArrayIterator(Iterator):
    """Batches of a rank-4 array ``x`` (and its ``y``, ``sample_weight``, and any further arrays passed as
    ``x = (images, [arrays])``), each image transformed and standardized by ``image_data_generator``."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False, sample_weight=None, seed=None,
                 data_format=None, save_to_dir=None, save_prefix="", save_format="png", subset=None,
                 ignore_class_split=False, dtype=None):
        data_format, self.dtype = _defaults(data_format, dtype)
        x_misc = []
        if isinstance(x, (tuple, list)):
            x_misc = [np.asarray(a) for a in x[1]] if isinstance(x[1], list) else [np.asarray(x[1])]
            x = x[0]
            for a in x_misc:
                if len(x) != len(a):
                    raise ValueError("All of the arrays in `x` should have the same length. Found a pair with: "
                                     f"len(x[0]) = {len(x)}, len(x[?]) = {len(a)}")
        if y is not None and len(x) != len(y):
            raise ValueError("`x` (images tensor) and `y` (labels) should have the same length. Found: x.shape = "
                             f"{np.asarray(x).shape}, y.shape = {np.asarray(y).shape}")
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError("`x` (images tensor) and `sample_weight` should have the same length. Found: x.shape = "
                             f"{np.asarray(x).shape}, sample_weight.shape = {np.asarray(sample_weight).shape}")
        if subset is not None:
            if subset not in ("training", "validation"):
                raise ValueError(f"Invalid subset name: {subset}; expected \"training\" or \"validation\".")
            # the validation subset is the first validation_split of the samples, in their order
            split = int(len(x) * image_data_generator._validation_split)
            if (y is not None and not ignore_class_split
                    and not np.array_equal(np.unique(y[:split]), np.unique(y[split:]))):
                raise ValueError("Training and validation subsets have different number of classes after the split. "
                                 "If your numpy arrays are sorted by the label, you might want to shuffle them.")
            part = slice(None, split) if subset == "validation" else slice(split, None)
            x = x[part]
            x_misc = [np.asarray(a[part]) for a in x_misc]
            if y is not None:
                y = y[part]
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError(f"Input data in `NumpyArrayIterator` should have rank 4. You passed an array with shape "
                             f"{self.x.shape}")
        channels_axis = 3 if data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in (1, 3, 4):
            warnings.warn(f'NumpyArrayIterator is set to use the data format convention "{data_format}" (channels on '
                          f"axis {channels_axis}), i.e. expected either 1, 3, or 4 channels on axis {channels_axis}. "
                          f"However, it was passed an array with shape {self.x.shape} "
                          f"({self.x.shape[channels_axis]} channels).")
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        generator = self.image_data_generator
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = generator.get_random_transform(x.shape)
            batch_x[i] = generator.standardize(generator.apply_transform(x.astype(self.dtype), params))
        if self.save_to_dir:
            _save_batch(batch_x, index_array, self.data_format, self.save_to_dir, self.save_prefix, self.save_format,
                        10000)
        misc = [a[index_array] for a in self.x_misc]
        inputs = [batch_x] + misc if misc else batch_x
        if self.y is None:
            return inputs
        if self.sample_weight is None:
            return inputs, self.y[index_array]
        return inputs, self.y[index_array], self.sample_weight[index_array]


def _iter_valid_files(directory, white_list_formats, follow_links):
    """(folder, file name) of the image files under ``directory``, folders and names in sorted order."""
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda walked: walked[0]):
        for name in sorted(files):
            if name.lower().endswith(".tiff"):
                warnings.warn('Using ".tiff" files with multiple bands will cause distortion. Please verify your '
                              "output.")
            if name.lower().endswith(white_list_formats):
                yield root, name


def _list_valid_filenames_in_directory(directory, white_list_formats, split, class_indices, follow_links):
    """(labels, paths relative to the parent of ``directory``) of one class folder's images, cut to the
    ``split`` fraction (start, stop) of them when given."""
    class_name = os.path.basename(directory)
    files = list(_iter_valid_files(directory, white_list_formats, follow_links))
    if split:
        files = files[int(split[0] * len(files)):int(split[1] * len(files))]
    paths = [os.path.join(class_name, os.path.relpath(os.path.join(root, name), directory)) for root, name in files]
    return [class_indices[class_name]] * len(paths), paths


class BatchFromFilesMixin:
    """Loads, transforms and labels batches of image files (``filepaths``, ``labels``, ``sample_weight`` come
    from the iterator)."""

    def set_processing_attrs(self, image_data_generator, target_size, color_mode, data_format, save_to_dir,
                             save_prefix, save_format, subset, interpolation, keep_aspect_ratio):
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        self.keep_aspect_ratio = keep_aspect_ratio
        channels = {"rgb": 3, "rgba": 4, "grayscale": 1}
        if color_mode not in channels:
            raise ValueError(f'Invalid color mode: {color_mode}; expected "rgb", "rgba", or "grayscale".')
        self.color_mode = color_mode
        self.data_format = data_format
        if data_format == "channels_last":
            self.image_shape = self.target_size + (channels[color_mode],)
        else:
            self.image_shape = (channels[color_mode],) + self.target_size
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.interpolation = interpolation
        if subset is None:
            self.split = None
        else:
            validation_split = image_data_generator._validation_split
            if subset == "validation":
                self.split = (0, validation_split)
            elif subset == "training":
                self.split = (validation_split, 1)
            else:
                raise ValueError(f'Invalid subset name: {subset}; expected "training" or "validation"')
        self.subset = subset

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        generator = self.image_data_generator
        for i, j in enumerate(index_array):
            img = image_utils.load_img(self.filepaths[j], color_mode=self.color_mode, target_size=self.target_size,
                                       interpolation=self.interpolation, keep_aspect_ratio=self.keep_aspect_ratio)
            x = image_utils.img_to_array(img, data_format=self.data_format)
            img.close()
            if generator:
                x = generator.standardize(generator.apply_transform(x, generator.get_random_transform(x.shape)))
            batch_x[i] = x
        if self.save_to_dir:
            _save_batch(batch_x, index_array, self.data_format, self.save_to_dir, self.save_prefix, self.save_format,
                        10000000)
        mode = self.class_mode
        if mode == "input":
            batch_y = batch_x.copy()
        elif mode in ("binary", "sparse"):
            batch_y = np.asarray([self.classes[j] for j in index_array], dtype=self.dtype)
        elif mode == "categorical":
            batch_y = np.zeros((len(batch_x), len(self.class_indices)), dtype=self.dtype)
            for i, j in enumerate(index_array):
                batch_y[i, self.classes[j]] = 1.0  # a list of classes (a multi-label row) sets each
        elif mode == "multi_output":
            batch_y = [target[index_array] for target in self._targets]
        elif mode == "raw":
            batch_y = self._targets[index_array]
        else:
            return batch_x
        if self.sample_weight is None:
            return batch_x, batch_y
        return batch_x, batch_y, self.sample_weight[index_array]

    @property
    def filepaths(self):
        raise NotImplementedError(f"`filepaths` property method has not been implemented in {type(self).__name__}.")

    @property
    def labels(self):
        raise NotImplementedError(f"`labels` property method has not been implemented in {type(self).__name__}.")

    @property
    def sample_weight(self):
        raise NotImplementedError(f"`sample_weight` property method has not been implemented in "
                                  f"{type(self).__name__}.")


class DirectoryIterator(BatchFromFilesMixin, Iterator):
    """Batches of the images under ``directory/<class>/...`` (classes: the sorted subfolders unless given),
    ordered class by class, each class's files walked in sorted order."""

    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(self, directory, image_data_generator, target_size=(256, 256), color_mode="rgb", classes=None,
                 class_mode="categorical", batch_size=32, shuffle=True, seed=None, data_format=None, save_to_dir=None,
                 save_prefix="", save_format="png", follow_links=False, subset=None, interpolation="nearest",
                 keep_aspect_ratio=False, dtype=None):
        data_format, dtype = _defaults(data_format, dtype)
        self.set_processing_attrs(image_data_generator, target_size, color_mode, data_format, save_to_dir,
                                  save_prefix, save_format, subset, interpolation, keep_aspect_ratio)
        self.directory = directory
        if class_mode not in self.allowed_class_modes:
            raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: {self.allowed_class_modes}")
        self.class_mode = class_mode
        self.dtype = dtype
        if not classes:
            classes = [d for d in sorted(os.listdir(directory)) if os.path.isdir(os.path.join(directory, d))]
        self.num_classes = len(classes)
        self.class_indices = {name: i for i, name in enumerate(classes)}
        labels, self.filenames = [], []
        for name in classes:
            found, paths = _list_valid_filenames_in_directory(os.path.join(directory, name), self.white_list_formats,
                                                              self.split, self.class_indices, follow_links)
            labels += found
            self.filenames += paths
        self.samples = len(self.filenames)
        self.classes = np.asarray(labels, dtype="int32").reshape(self.samples)
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        self._filepaths = [os.path.join(directory, name) for name in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def filepaths(self):
        return self._filepaths

    @property
    def labels(self):
        return self.classes

    @property
    def sample_weight(self):
        return None


class DataFrameIterator(BatchFromFilesMixin, Iterator):
    """Batches of the image files a DataFrame names (``x_col``), labelled by ``y_col`` as ``class_mode`` says:
    class names ("categorical": a name or a list of names per row, "binary" with exactly two classes,
    "sparse"), the column's values ("raw"; a list of columns gives one array of them), one array per column
    ("multi_output"), the image itself ("input") or nothing (None). Rows whose file is missing or not an
    image are dropped with a warning (``validate_filenames``), as are rows of classes not in ``classes``;
    ``subset`` then takes its fraction of the rows in order. The DataFrame is read through its columns only
    (``df[col]``), so ember does not import pandas."""

    allowed_class_modes = {"binary", "categorical", "input", "multi_output", "raw", "sparse", None}

    def __init__(self, dataframe, directory=None, image_data_generator=None, x_col="filename", y_col="class",
                 weight_col=None, target_size=(256, 256), color_mode="rgb", classes=None, class_mode="categorical",
                 batch_size=32, shuffle=True, seed=None, data_format="channels_last", save_to_dir=None,
                 save_prefix="", save_format="png", subset=None, interpolation="nearest", keep_aspect_ratio=False,
                 dtype="float32", validate_filenames=True):
        if not (hasattr(dataframe, "columns") and hasattr(dataframe, "__getitem__")):
            raise TypeError(f"flow_from_dataframe: dataframe must be a pandas DataFrame, got "
                            f"{type(dataframe).__name__}")
        data_format, dtype = _defaults(data_format, dtype)
        self.set_processing_attrs(image_data_generator, target_size, color_mode, data_format, save_to_dir,
                                  save_prefix, save_format, subset, interpolation, keep_aspect_ratio)
        self.directory = directory or ""
        self.class_mode = class_mode
        self.dtype = dtype
        filenames = list(dataframe[x_col])
        labels = _check_dataframe_columns(dataframe, filenames, x_col, y_col, weight_col, classes, class_mode)
        rows = list(range(len(filenames)))
        if validate_filenames:
            rows = self._valid_rows(filenames, x_col)
        labelled = class_mode not in ("input", "multi_output", "raw", None)
        if labelled:
            rows, row_classes, classes = _rows_of_classes(rows, labels, classes)
            if class_mode == "binary" and len(classes) != 2:
                raise ValueError(f'If class_mode="binary" there must be 2 classes. Found {len(classes)} classes.')
            self.class_indices = {name: i for i, name in enumerate(classes)}
        if self.split:
            rows = rows[int(self.split[0] * len(rows)):int(self.split[1] * len(rows))]
        if labelled:
            index = self.class_indices
            self.classes = [index[row_classes[r]] if isinstance(row_classes[r], str)
                            else [index[c] for c in row_classes[r]] for r in rows]
        self.filenames = [filenames[r] for r in rows]
        self._sample_weight = np.asarray(dataframe[weight_col])[rows] if weight_col else None
        if class_mode == "multi_output":
            self._targets = [np.array(list(dataframe[column]))[rows] for column in y_col]
        elif class_mode == "raw":
            columns = y_col if isinstance(y_col, str) else list(y_col)
            self._targets = np.asarray(dataframe[columns].values)[rows]
        self.samples = len(self.filenames)
        checked = "validated" if validate_filenames else "non-validated"
        belonging = f" belonging to {len(self.class_indices)} classes" if labelled else ""
        print(f"Found {self.samples} {checked} image filenames{belonging}.")
        self._filepaths = [os.path.join(self.directory, name) for name in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    def _valid_rows(self, filenames, x_col):
        """The rows whose name is a string naming an existing image file (by its extension)."""
        def valid(name):
            return (isinstance(name, str) and name.lower().endswith(self.white_list_formats)
                    and os.path.isfile(os.path.join(self.directory, name)))

        rows = [r for r, name in enumerate(filenames) if valid(name)]
        dropped = len(filenames) - len(rows)
        if dropped:
            warnings.warn(f'Found {dropped} invalid image filename(s) in x_col="{x_col}". These filename(s) will be '
                          "ignored.")
        return rows

    @property
    def filepaths(self):
        return self._filepaths

    @property
    def labels(self):
        if self.class_mode in ("multi_output", "raw"):
            return self._targets
        return self.classes

    @property
    def sample_weight(self):
        return self._sample_weight


def _check_dataframe_columns(dataframe, filenames, x_col, y_col, weight_col, classes, class_mode):
    """Refuses what tf_keras refuses (with its exception types); returns the label column's values, or None
    when the class mode reads no class names."""
    if class_mode not in DataFrameIterator.allowed_class_modes:
        raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: {DataFrameIterator.allowed_class_modes}")
    if class_mode == "multi_output" and not isinstance(y_col, list):
        raise TypeError(f'If class_mode="multi_output", y_col must be a list. Received {type(y_col).__name__}.')
    if not all(isinstance(name, str) for name in filenames):
        raise TypeError(f"All values in column x_col={x_col} must be strings.")
    labels = None
    if class_mode in ("binary", "sparse", "categorical"):
        labels = list(dataframe[y_col])
        allowed = (str,) if class_mode != "categorical" else (str, list, tuple)
        if not all(isinstance(label, allowed) for label in labels):
            kinds = "strings" if class_mode != "categorical" else "type string, list or tuple"
            raise TypeError(f'If class_mode="{class_mode}", y_col="{y_col}" column values must be {kinds}.')
    if classes is not None and isinstance(classes, (int, float)):
        raise TypeError(f"classes must be a list of class names, got {classes!r}")
    if weight_col is not None and not np.issubdtype(np.asarray(dataframe[weight_col]).dtype, np.number):
        raise TypeError(f"Column weight_col={weight_col} must be numeric.")
    return labels


def _rows_of_classes(rows, labels, classes):
    """(rows kept, each row's class name or names, the class names in index order). Without ``classes`` every
    name seen is a class, sorted; with them, a row keeps only its names among them, and a row left with none
    is dropped."""
    if classes is None:
        seen = set()
        for r in rows:
            seen.update([labels[r]] if isinstance(labels[r], str) else labels[r])
        return rows, labels, sorted(seen)
    classes = list(classes)
    wanted = set(classes)
    kept, row_classes = [], dict()
    for r in rows:
        label = labels[r]
        if isinstance(label, str):
            if label in wanted:
                kept.append(r)
                row_classes[r] = label
        else:
            names = [c for c in label if c in wanted]
            if names:
                kept.append(r)
                row_classes[r] = names
    return kept, row_classes, classes

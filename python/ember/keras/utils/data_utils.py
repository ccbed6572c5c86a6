"""Keras 2's data helpers: ``Sequence`` (batches by index, which ``fit`` takes like any iterable of
batches, calling ``on_epoch_end`` after each epoch), ``pad_sequences``, ``timeseries_dataset_from_array``,
``text_dataset_from_directory``, ``split_dataset`` and the ``(x, y, sample_weight)`` packers."""

import math
import os

import numpy as np


class Sequence:
    """Subclass with ``__getitem__(index)`` returning a batch and ``__len__`` the number of batches;
    ``on_epoch_end`` runs after each epoch of ``fit`` (to reshuffle, say)."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        # Keras accepts these for its worker pool; ember's fit reads the batches on its own thread
        self.workers, self.use_multiprocessing, self.max_queue_size = workers, use_multiprocessing, max_queue_size

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index) returning a batch")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__() returning the number of batches")

    def on_epoch_end(self):
        pass

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """A [len(sequences), maxlen, ...] array of the sequences, each cut to ``maxlen`` (its start dropped with
    truncating='pre', its end with 'post') and filled with ``value`` before ('pre') or after ('post')."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood')
    lengths, sample_shape, rows = [], (), []
    for s in sequences:
        if not hasattr(s, "__len__"):
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {s}")
        row = np.asarray(s)
        lengths.append(len(row))
        if len(row) and not sample_shape:
            sample_shape = row.shape[1:]
        rows.append(row)
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    is_text = np.issubdtype(np.dtype(dtype), np.str_) or np.issubdtype(np.dtype(dtype), np.object_)
    if isinstance(value, str) and dtype != object and not is_text:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}\nYou should set "
                         "`dtype=object` for variable length strings.")
    out = np.full((len(rows), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for i, row in enumerate(rows):
        if not len(row) or not maxlen:
            continue
        kept = row[-maxlen:] if truncating == "pre" else row[:maxlen]
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at position {i} is different from "
                             f"expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, -len(kept):] = kept
    return out


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """Batches of windows over ``data``: window i takes ``sequence_length`` steps ``sampling_rate`` apart
    from start position i * ``sequence_stride``; with ``targets``, each window comes with
    ``targets[start]`` (positions counted from ``start_index``)."""
    import ember as tf

    if sequence_length <= 0 or sequence_stride <= 0 or sampling_rate <= 0:
        raise ValueError(f"`sequence_length`, `sequence_stride` and `sampling_rate` must be positive; received "
                         f"{sequence_length}, {sequence_stride}, {sampling_rate}")
    if start_index is not None and not 0 <= start_index < len(data):
        raise ValueError(f"`start_index` must be 0 or greater and lower than the length of the data. Received: "
                         f"start_index={start_index}, for data of length {len(data)}")
    if end_index is not None and not ((start_index or 0) < end_index < len(data)):
        raise ValueError(f"`end_index` must be higher than `start_index` and lower than the length of the data. "
                         f"Received: start_index={start_index}, end_index={end_index}, for data of length "
                         f"{len(data)}")
    if targets is not None and len(targets) != len(data):
        raise ValueError(f"Expected data and targets to have the same number of time steps (axis=0). Received: "
                         f"data.shape={np.shape(data)}, targets.shape={np.shape(targets)}")
    start_index = start_index or 0
    end_index = len(data) if end_index is None else end_index
    count = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        count = min(count, len(targets))
    starts = np.arange(0, max(count, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        rng = np.random.RandomState(np.random.randint(1_000_000) if seed is None else seed)
        rng.shuffle(starts)
    steps = tf.constant(np.asarray(data)[start_index:end_index])
    offsets = tf.range(0, sequence_length * sampling_rate, sampling_rate, dtype=tf.int64)
    windows = tf.data.Dataset.from_tensor_slices(starts).map(lambda s: tf.gather(steps, s + offsets))
    if targets is not None:
        target_steps = tf.constant(np.asarray(targets)[start_index:end_index])
        labels = tf.data.Dataset.from_tensor_slices(starts).map(lambda s: tf.gather(target_steps, s))
        windows = tf.data.Dataset.zip((windows, labels))
    if batch_size is not None:
        if shuffle:
            windows = windows.shuffle(buffer_size=batch_size * 8, seed=seed)
        return windows.batch(batch_size)
    return windows.shuffle(buffer_size=1024, seed=seed) if shuffle else windows


def _class_files(directory, labels, class_names, extensions, what):
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple)):
        raise ValueError(f"{what}: `labels` must be 'inferred', None, or a list/tuple of labels; got {labels!r}")
    if labels == "inferred":
        found = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
        if class_names is not None:
            if sorted(class_names) != found and set(class_names) != set(found):
                raise ValueError(f"{what}: the `class_names` passed did not match the names of the subdirectories "
                                 f"of the target directory. Expected: {found}, but received: {class_names}")
            found = list(class_names)
        files, indices = [], []
        for index, name in enumerate(found):
            for root, _, names in sorted(os.walk(os.path.join(directory, name), followlinks=True)):
                for f in sorted(names):
                    if f.lower().endswith(extensions):
                        files.append(os.path.join(root, f))
                        indices.append(index)
        return files, indices, found
    files = []
    for root, _, names in sorted(os.walk(directory, followlinks=True)):
        files.extend(os.path.join(root, f) for f in sorted(names) if f.lower().endswith(extensions))
    if labels is None:
        return files, None, None
    if len(labels) != len(files):
        raise ValueError(f"{what}: expected the lengths of `labels` to match the number of files in the target "
                         f"directory. len(labels) is {len(labels)} while we found {len(files)} files in directory "
                         f"{directory}.")
    return files, list(labels), None


def _split(files, indices, validation_split, subset, seed, what):
    if validation_split is None:
        if subset is not None:
            raise ValueError(f"{what}: `subset` needs `validation_split`")
        return files, indices
    if not 0 < validation_split < 1:
        raise ValueError(f"{what}: `validation_split` must be between 0 and 1, received: {validation_split}")
    if subset not in ("training", "validation", "both"):
        raise ValueError(f'{what}: `subset` must be "training", "validation" or "both" with validation_split; '
                         f"received {subset!r}")
    count = int(validation_split * len(files))
    if subset == "training":
        print(f"Using {len(files) - count} files for training.")
        return files[:len(files) - count], None if indices is None else indices[:len(files) - count]
    print(f"Using {count} files for validation.")
    return files[len(files) - count:], None if indices is None else indices[len(files) - count:]


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False):
    """A dataset of (text, label) from ``directory/<class>/*.txt`` (labels ``int``, ``categorical`` or
    ``binary``; texts as string scalars, cut to ``max_length`` characters), as tf_keras'."""
    import ember as tf

    what = "text_dataset_from_directory"
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f'{what}: `label_mode` argument must be one of "int", "categorical", "binary", or None. '
                         f"Received: label_mode={label_mode}")
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    files, indices, names = _class_files(directory, labels, class_names, (".txt",), what)
    # tf_keras' counts (unlabelled files count as one class there)
    print(f"Found {len(files)} files belonging to {len(names) if names is not None else 1} classes.")
    if label_mode == "binary" and names is not None and len(names) != 2:
        raise ValueError(f'{what}: When passing `label_mode="binary"`, there must be exactly 2 class_names. '
                         f"Received: class_names={names}")
    if shuffle:
        order = np.random.RandomState(np.random.randint(1_000_000) if seed is None else seed).permutation(len(files))
        files = [files[i] for i in order]
        indices = None if indices is None else [indices[i] for i in order]
    if subset == "both":
        parts = [_split(files, indices, validation_split, s, seed, what) for s in ("training", "validation")]
        return [_text_dataset(f, i, names, label_mode, batch_size, max_length) for f, i in parts]
    files, indices = _split(files, indices, validation_split, subset, seed, what)
    dataset = _text_dataset(files, indices, names, label_mode, batch_size, max_length)
    return dataset


def _text_dataset(files, indices, names, label_mode, batch_size, max_length):
    import ember as tf

    texts = tf.data.Dataset.from_tensor_slices(files).map(tf.io.read_file)
    if max_length is not None:
        texts = texts.map(lambda t: tf.strings.substr(t, 0, max_length))
    if indices is not None:
        if label_mode == "categorical":
            values = np.eye(len(names), dtype=np.float32)[indices]
        elif label_mode == "binary":
            values = np.asarray(indices, np.float32).reshape(-1, 1)
        else:
            values = np.asarray(indices, np.int32)
        texts = tf.data.Dataset.zip((texts, tf.data.Dataset.from_tensor_slices(values)))
    if batch_size is not None:
        texts = texts.batch(batch_size)
    texts.class_names = names
    return texts


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Two datasets from a dataset, arrays or a tuple of arrays: the first ``left_size`` elements (an int
    count or a float fraction) and the rest (or ``right_size``)."""
    import ember as tf

    if isinstance(dataset, tf.data.Dataset):
        elements = list(dataset)
        structure = elements
    else:
        structure = dataset
        elements = None
    total = len(elements) if elements is not None else len(tf.nest.flatten(structure)[0])

    def size(value, other):
        if value is None:
            return None
        if isinstance(value, float):
            if not 0 < value < 1:
                raise ValueError(f"split_dataset: a float size must be in (0, 1), got {value}")
            return round(value * total)
        if not isinstance(value, int) or not 0 < value <= total:
            raise ValueError(f"split_dataset: sizes must be positive ints up to {total} or floats in (0, 1); got "
                             f"{value!r}")
        return value

    left, right = size(left_size, right_size), size(right_size, left_size)
    if left is None and right is None:
        raise ValueError("split_dataset: you must specify either `left_size` or `right_size`.")
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"split_dataset: left_size + right_size ({left} + {right}) exceeds the {total} elements")
    order = np.arange(total)
    if shuffle:
        np.random.RandomState(np.random.randint(1_000_000) if seed is None else seed).shuffle(order)
    if elements is not None:
        pick = lambda idx: tf.data.Dataset.from_tensor_slices(  # noqa: E731
            tf.nest.map_structure(lambda *xs: np.stack([np.asarray(x) for x in xs]), *[elements[i] for i in idx]))
    else:
        pick = lambda idx: tf.data.Dataset.from_tensor_slices(  # noqa: E731
            tf.nest.map_structure(lambda a: np.asarray(a)[idx], structure))
    return pick(order[:left]), pick(order[left:left + right])


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    if y is None:
        return x if not isinstance(x, (tuple, list)) else (x,)  # a bare x unless it would be read as (x, y)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) == 1:
        return (data[0], None, None)
    if len(data) == 2:
        return (data[0], data[1], None)
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, found: "
                     f"{data}")


def normalize(x, axis=-1, order=2):
    """x divided by its ``order``-norm along ``axis`` (a zero norm leaves the row as it is)."""
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def flat_labels(y, num_classes):
    """Integer labels flattened, the shape their encoding keeps (a trailing 1 dropped, as Keras) and the
    class count (one more than the largest label when not given): what to_categorical and to_ordinal share."""
    y = np.array(y, dtype="int")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    return y, shape, int(np.max(y)) + 1 if num_classes is None else num_classes


def to_ordinal(y, num_classes=None, dtype="float32"):
    """Integer labels -> ordinal rows: label k has ones in its first k places."""
    y, shape, num_classes = flat_labels(y, num_classes)
    ranks = np.arange(num_classes - 1)
    return (ranks[None, :] < y[:, None]).astype(dtype).reshape(shape + (num_classes - 1,))

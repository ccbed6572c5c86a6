"""The data that ``fit``/``evaluate``/``predict`` accept, as batches (Keras 2's data_adapter, smaller).

- NumPy arrays, ember tensors, or lists/tuples/dicts of them (one per model input or output): sliced into
  batches of ``batch_size`` (32 by default), shuffled each epoch when asked; floating arrays become
  float32 as in Keras 2. ``validation_split`` keeps the last fraction for validation, before shuffling.
- Any other iterable (a ``tf.data.Dataset``, a generator, a list of batches) yielding ``x``, ``(x,)``,
  ``(x, y)`` or ``(x, y, sample_weight)``: taken batch by batch, re-iterated each epoch;
  ``steps_per_epoch`` bounds an epoch.
"""

import math

import numpy as np

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.util import nest


def _is_array_like(x):
    return isinstance(x, (np.ndarray, Tensor)) or (hasattr(x, "__array__") and hasattr(x, "shape")
                                                  and not hasattr(x, "__next__"))


def _is_array_structure(x):
    if x is None:
        return True
    leaves = nest.flatten(x)
    return bool(leaves) and all(_is_array_like(v) or isinstance(v, (list, float, int)) for v in leaves)


def _to_array(x):
    if isinstance(x, Tensor):
        x = x.numpy()
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.floating) and x.dtype != np.float32:
        x = x.astype(np.float32)
    return x


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) from a batch as Keras 2 reads it."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, found: "
                     f"{data}")


def _num_samples(structure):
    sizes = {int(v.shape[0]) for v in nest.flatten(structure) if v is not None}
    if len(sizes) > 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have different numbers of samples "
                         f"{sorted(sizes)}. Make sure all arrays contain the same number of samples.")
    return sizes.pop() if sizes else 0


def class_weight_to_sample_weight(y, class_weight):
    y = np.asarray(y.numpy() if isinstance(y, Tensor) else y)
    if y.ndim == 2 and y.shape[1] > 1:
        labels = np.argmax(y, axis=-1)
    elif y.ndim == 2 and y.shape[1] == 1:
        labels = y[:, 0]
    else:
        labels = y
    labels = np.round(labels).astype(np.int64)
    missing = sorted(set(np.unique(labels).tolist()) - set(int(k) for k in class_weight))
    if missing:
        raise ValueError(f"`class_weight` must contain all classes in the data. The classes {set(missing)} exist "
                         f"in the data but not in `class_weight`.")
    table = {int(k): float(v) for k, v in class_weight.items()}
    return np.array([table[int(l)] for l in labels], dtype=np.float32)


class ArrayData:
    """In-memory arrays cut into batches."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, class_weight=None):
        self.x = nest.map_structure(_to_array, x)
        self.y = nest.map_structure(_to_array, y) if y is not None else None
        if sample_weight is not None:
            sample_weight = nest.map_structure(_to_array, sample_weight)
        if class_weight is not None:
            if self.y is None:
                raise ValueError("`class_weight` needs targets `y`")
            if len(nest.flatten(self.y)) > 1:
                raise ValueError("`class_weight` is only supported for Models with a single output.")
            cw = class_weight_to_sample_weight(nest.flatten(self.y)[0], class_weight)
            sample_weight = cw if sample_weight is None else sample_weight * cw
        self.sample_weight = sample_weight
        self.num_samples = _num_samples((self.x, self.y, self.sample_weight))
        self.batch_size = 32 if batch_size is None else int(batch_size)
        if self.batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.shuffle = shuffle
        self.steps = max(1, math.ceil(self.num_samples / self.batch_size)) if self.num_samples else 0

    def split(self, validation_split):
        """(train, validation) ArrayData: the last ``validation_split`` of the samples are validation."""
        if not 0 < validation_split < 1:
            raise ValueError(f"`validation_split` must be between 0 and 1, got {validation_split}")
        split = int(self.num_samples * (1.0 - validation_split))
        if split == 0 or split == self.num_samples:
            raise ValueError(f"Training data contains {self.num_samples} samples, which is not sufficient to split it "
                             "into a validation and training set as specified by "
                             f"`validation_split={validation_split}`."
                             " Either provide more data, or a different value for the `validation_split` argument.")

        def take(structure, s):
            return nest.map_structure(lambda a: a[s], structure) if structure is not None else None

        first, second = slice(0, split), slice(split, None)
        train = ArrayData(take(self.x, first), take(self.y, first), take(self.sample_weight, first),
                          self.batch_size, self.shuffle)
        val = ArrayData(take(self.x, second), take(self.y, second), take(self.sample_weight, second),
                        self.batch_size, False)
        return train, val

    def batches(self, steps=None):
        order = np.random.permutation(self.num_samples) if self.shuffle else None
        steps = self.steps if steps is None else min(steps, self.steps)
        for step in range(steps):
            start, stop = step * self.batch_size, min((step + 1) * self.batch_size, self.num_samples)
            index = order[start:stop] if order is not None else slice(start, stop)

            def take(structure):
                if structure is None:
                    return None
                return nest.map_structure(lambda a: convert_to_tensor(a[index]), structure)

            yield take(self.x), take(self.y), take(self.sample_weight)


class IterableData:
    """Batches from an iterable (a tf.data.Dataset, a generator, a list of (x, y) tuples)."""

    def __init__(self, data, steps=None, class_weight=None, shuffle=False):
        from ember.keras.utils.data_utils import Sequence

        self.data = data
        self.steps = steps
        self.class_weight = class_weight
        # A keras.utils.Sequence: batches by index, in a new order each epoch when shuffling, and told when
        # each epoch ends (as Keras' sequence adapter does)
        self._sequence = isinstance(data, Sequence)
        self._shuffle = bool(shuffle) and self._sequence
        self._iterator = None
        try:
            self.cardinality = len(data)
        except TypeError:
            self.cardinality = None
        if self.steps is None and self.cardinality is not None and self.cardinality >= 0:
            self.steps = self.cardinality

    def batches(self, steps=None):
        steps = steps if steps is not None else self.steps
        if self._iterator is None or steps is None or self.cardinality is not None:
            if self._shuffle:
                self._iterator = (self.data[int(i)] for i in np.random.permutation(len(self.data)))
            elif self._sequence:
                # by index, as Keras reads a Sequence: some (the image iterators) iterate endlessly
                self._iterator = (self.data[i] for i in range(len(self.data)))
            else:
                self._iterator = iter(self.data)
        taken = 0
        while steps is None or taken < steps:
            try:
                batch = next(self._iterator)
            except StopIteration:
                self._iterator = None
                break
            x, y, sw = unpack_x_y_sample_weight(batch)
            convert = lambda s: nest.map_structure(_batch_tensor, s) if s is not None else None  # noqa: E731
            x, y, sw = convert(x), convert(y), convert(sw)
            if self.class_weight is not None and y is not None:
                cw = convert_to_tensor(class_weight_to_sample_weight(nest.flatten(y)[0], self.class_weight))
                sw = cw if sw is None else sw * cw
            taken += 1
            yield x, y, sw
        if self._sequence:
            self.data.on_epoch_end()


def _batch_tensor(v):
    if isinstance(v, Tensor):
        if v.dtype == dtypes.float64:
            from ember.ops import math_ops

            return math_ops.cast(v, dtypes.float32)
        return v
    return convert_to_tensor(_to_array(v))


def adapt(x, y=None, sample_weight=None, batch_size=None, steps=None, shuffle=False, class_weight=None):
    """ArrayData or IterableData for what the user passed."""
    if _is_array_structure(x) and not (isinstance(x, (list, tuple)) and x and isinstance(x[0], tuple)):
        if isinstance(x, (list, tuple)) and x and all(isinstance(v, (float, int)) for v in x):
            x = np.asarray(x)
        return ArrayData(x, y, sample_weight, batch_size, shuffle, class_weight)
    if y is not None:
        raise ValueError("`y` argument is not supported when using dataset as input (the dataset yields (x, y)).")
    if sample_weight is not None:
        raise ValueError("`sample_weight` argument is not supported when using dataset as input.")
    if not hasattr(x, "__iter__"):
        raise ValueError(f"Unrecognized data type: x={x} (of type {type(x).__name__}); expected arrays, tensors or an "
                         "iterable of batches")
    return IterableData(x, steps, class_weight, shuffle)

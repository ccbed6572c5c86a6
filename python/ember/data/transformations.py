"""The tf.data transformations that run in Python over their input's elements (TensorFlow's names and
semantics): shard, take_while, scan, unique, get_single_element, counter, choose_from_datasets,
sample_from_datasets, list_files, group_by_window and bucket_by_sequence_length. Their user functions are
traced once, as map's are (data/functions.py); the Dataset methods in dataset_ops.py construct them.
"""

import glob as _glob
import os

import numpy as np

from ember import errors
from ember.data import structure
from ember.data.dataset_ops import INFINITE, UNKNOWN, Dataset, _closing, _UnaryDataset
from ember.data.functions import TracedFunction
from ember.dtypes import bool as _bool, int32, int64, string
from ember.framework.tensor import Tensor, constant
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec


def _int_arg(value, what, name):
    if isinstance(value, Tensor):
        if value._is_symbolic:
            raise TypeError(f"{what}: {name} must be known when the dataset is built, got a symbolic tensor")
        value = value.numpy()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} must be an int, got {value!r}") from None


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


def _scalar_bool_fn(fn, spec, what, name):
    traced = TracedFunction(fn, spec, what)
    out = traced.output_spec
    if not isinstance(out, TensorSpec) or out.dtype != _bool or out.shape.rank != 0:
        raise ValueError(f"{what}: `{name}` must return a scalar tf.bool tensor, but its return type is {out}.")
    return traced


class _ListDataset(Dataset):
    """Flat elements already in memory (a window of group_by_window)."""

    def __init__(self, elements, spec):
        self._elements = elements
        self._spec = spec

    def _flat_iter(self):
        return iter(self._elements)

    def _cardinality(self):
        return len(self._elements)


class ShardDataset(_UnaryDataset):
    def __init__(self, input_dataset, num_shards, index):
        what = "Dataset.shard()"
        super().__init__(input_dataset)
        self._n = _int_arg(num_shards, what, "num_shards")
        self._index = _int_arg(index, what, "index")
        if self._n <= 0:
            raise _invalid(f"{what}: num_shards must be > 0, got {self._n}")
        if not 0 <= self._index < self._n:
            raise _invalid(f"{what}: index must be in [0, num_shards), got index {self._index} with "
                           f"num_shards {self._n}")

    def _flat_iter(self):
        for i, element in enumerate(self._input._flat_iter()):
            if i % self._n == self._index:
                yield element

    def _cardinality(self):
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._n + (1 if n % self._n > self._index else 0)


class TakeWhileDataset(_UnaryDataset):
    def __init__(self, input_dataset, predicate):
        super().__init__(input_dataset)
        self._fn = _scalar_bool_fn(predicate, input_dataset.element_spec, "Dataset.take_while()", "predicate")

    def _flat_iter(self):
        it = _closing(self._input._flat_iter())
        for element in it:
            if not bool(self._fn(element)[0]):
                it.close()
                return
            yield element


class ScanDataset(_UnaryDataset):
    """scan_func(state, element) -> (new_state, output); the state's dtypes are fixed, a shape that changes
    is relaxed and the function traced again, as TensorFlow does."""

    def __init__(self, input_dataset, initial_state, scan_func):
        what = "Dataset.scan()"
        self._what = what
        state = structure.map_structure(lambda v: structure.to_tensor(v, what), initial_state)
        self._initial = structure.flatten(state)
        state_spec = structure.specs_of(state)
        for _ in range(2):
            fn = TracedFunction(scan_func, input_dataset.element_spec, what, extra_spec=state_spec)
            result = fn.output_structure
            if not isinstance(result, tuple) or len(result) != 2:
                raise TypeError(f"{what}: `scan_func` must return a pair (new_state, output_element), got "
                                f"{result!r}")
            new_spec = structure.specs_of(result[0])
            if not structure.same_structure(new_spec, state_spec) or any(
                    a.dtype != b.dtype for a, b in zip(structure.flatten(new_spec), structure.flatten(state_spec))):
                raise TypeError(f"{what}: The element types for the new state must match the initial state. "
                                f"Expected {state_spec}; got {new_spec}.")
            joined = structure.most_specific_compatible(state_spec, new_spec, what)
            if [s.shape.as_list() if s.shape.rank is not None else None for s in structure.flatten(joined)] == \
                    [s.shape.as_list() if s.shape.rank is not None else None for s in structure.flatten(state_spec)]:
                break
            state_spec = joined  # the state's shape changes: trace again for the relaxed shape
        self._fn = fn
        self._n_state = len(structure.flatten(state_spec))
        super().__init__(input_dataset, structure.specs_of(result[1]))

    def _flat_iter(self):
        state = list(self._initial)
        for element in self._input._flat_iter():
            out = self._fn(state + list(element))
            state = list(out[:self._n_state])
            yield tuple(out[self._n_state:])

    def _cardinality(self):
        return self._input._cardinality()


class UniqueDataset(_UnaryDataset):
    def __init__(self, input_dataset):
        what = "Dataset.unique()"
        spec = input_dataset.element_spec
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"{what}: the dataset's elements must be single tensors, got {spec}")
        if spec.dtype not in (int32, int64, string):
            raise TypeError(f"{what}: the elements must be int32, int64 or string, got {spec.dtype.name}")
        if spec.shape.rank not in (0, None):
            raise TypeError(f"{what}: the elements must be scalars, got shape {spec.shape}")
        super().__init__(input_dataset)

    def _flat_iter(self):
        seen = set()
        for element in self._input._flat_iter():
            key = element[0].numpy()
            key = key.item() if isinstance(key, np.generic) else key
            if key not in seen:
                seen.add(key)
                yield element


def get_single_element(dataset):
    what = "Dataset.get_single_element()"
    it = _closing(dataset._flat_iter())
    try:
        first = next(it, None)
        if first is None:
            raise _invalid(f"{what}: Dataset was empty.")
        if next(it, None) is not None:
            raise _invalid(f"{what}: Dataset had more than one element.")
    finally:
        it.close()
    return structure.pack(dataset.element_spec, list(first))


class CounterDataset(Dataset):
    def __init__(self, start, step, dtype):
        self._start, self._step, self._dtype = start, step, dtype
        self._spec = TensorSpec([], dtype)

    def _flat_iter(self):
        value = self._start
        while True:
            yield (constant(value, dtype=self._dtype),)
            value += self._step

    def _cardinality(self):
        return INFINITE


def _check_same_specs(datasets, what):
    """The element spec of a dataset drawing from all of ``datasets``: their specs, joined dim by dim."""
    spec = datasets[0].element_spec
    for d in datasets[1:]:
        spec = structure.most_specific_compatible(spec, d.element_spec, what)
    return spec


class ChooseFromDatasets(Dataset):
    def __init__(self, datasets, choice_dataset, stop_on_empty_dataset=True):
        what = "choose_from_datasets()"
        self._datasets = list(datasets)
        if not self._datasets:
            raise ValueError(f"{what}: Invalid `datasets`. `datasets` should not be empty.")
        spec = choice_dataset.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype != int64 or spec.shape.rank != 0:
            raise TypeError(f"{what}: Invalid `choice_dataset`. Elements of `choice_dataset` must be scalar "
                            f"`tf.int64` tensors. Got {spec}.")
        self._choices = choice_dataset
        self._stop = bool(stop_on_empty_dataset)
        self._spec = _check_same_specs(self._datasets, what)

    def _flat_iter(self):
        its = [_closing(d._flat_iter()) for d in self._datasets]
        done = [False] * len(its)
        choices = _closing(self._choices._flat_iter())
        try:
            for (choice,) in choices:
                i = int(choice.numpy())
                if not 0 <= i < len(its):
                    raise _invalid(f"choose_from_datasets(): Selector index out of range: {i} >= {len(its)}"
                                   if i >= 0 else f"choose_from_datasets(): Selector index out of range: {i} < 0")
                if done[i]:
                    continue
                element = next(its[i], None)
                if element is None:
                    done[i] = True
                    if self._stop:
                        return
                    if all(done):
                        return
                    continue
                yield element
        finally:
            choices.close()
            for it in its:
                it.close()


class SampleFromDatasets(Dataset):
    """Picks each element's source at random with ``weights`` (NumPy's generator: the order is not
    TensorFlow's, whose sampling uses its own stateless random ops)."""

    def __init__(self, datasets, weights, seed, stop_on_empty_dataset):
        what = "sample_from_datasets()"
        self._datasets = list(datasets)
        if not self._datasets:
            raise ValueError(f"{what}: Invalid `datasets`. `datasets` should not be empty.")
        n = len(self._datasets)
        if weights is None:
            w = np.full(n, 1.0 / n)
        else:
            w = np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights, dtype=np.float64)
            if w.shape != (n,):
                raise ValueError(f"{what}: Invalid `weights`. The shape of `weights` should be compatible with "
                                 f"`[len(datasets)]`. Found shape: {list(w.shape)}.")
            if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
                raise _invalid(f"{what}: weights must be finite, non-negative and not all zero, got {w.tolist()}")
        self._weights = w / w.sum()
        self._seed = seed
        self._stop = bool(stop_on_empty_dataset)
        self._spec = _check_same_specs(self._datasets, what)

    def _flat_iter(self):
        rng = np.random.default_rng(self._seed)
        weights = self._weights.copy()
        its = [_closing(d._flat_iter()) for d in self._datasets]
        try:
            while weights.sum() > 0:
                i = int(rng.choice(len(its), p=weights / weights.sum()))
                element = next(its[i], None)
                if element is None:
                    if self._stop:
                        return
                    weights[i] = 0.0
                    continue
                yield element
        finally:
            for it in its:
                it.close()


def list_files(file_pattern, shuffle=None, seed=None):
    """A dataset of the file names matching ``file_pattern`` (a pattern or a list of them), shuffled unless
    ``shuffle=False`` (then sorted); no match is InvalidArgumentError, as TensorFlow's."""
    from ember.data.dataset_ops import Dataset as _Dataset

    patterns = file_pattern
    if isinstance(patterns, Tensor):
        patterns = patterns.numpy().tolist() if patterns.ndim else [patterns.numpy()]
    if isinstance(patterns, (str, bytes, os.PathLike)):
        patterns = [patterns]
    names = sorted({os.fsdecode(m) for p in patterns for m in _glob.glob(os.fsdecode(p))})
    if not names:
        raise _invalid(f"Dataset.list_files(): No files matched pattern: {', '.join(map(os.fsdecode, patterns))}")
    dataset = _Dataset.from_tensor_slices(constant(names, dtype=string))
    if shuffle is None or shuffle:
        dataset = dataset.shuffle(len(names), seed=seed)
    return dataset


class GroupByWindowDataset(_UnaryDataset):
    """Elements grouped by key_func's int64 key; a group of window_size elements (or what is left at the end)
    is handed to reduce_func(key, window_dataset), whose dataset's elements are the output. Partial windows
    are reduced at the end in the order their keys first appeared, as TensorFlow's."""

    def __init__(self, input_dataset, key_func, reduce_func, window_size, window_size_of=None):
        what = "Dataset.group_by_window()"
        self._what = what
        self._window = _int_arg(window_size, what, "window_size")
        if self._window <= 0:
            raise _invalid(f"{what}: window_size must be > 0, got {self._window}")
        key = TracedFunction(key_func, input_dataset.element_spec, what)
        if not isinstance(key.output_spec, TensorSpec) or key.output_spec.dtype != int64 or \
                key.output_spec.shape.rank != 0:
            raise ValueError(f"{what}: `key_func` must return a single tf.int64 scalar tensor, got "
                             f"{key.output_spec}")
        self._key = key
        self._reduce = reduce_func
        # A key's own window size (bucket_by_sequence_length's batch size per bucket), else window_size.
        self._size_of = window_size_of or (lambda key: self._window)
        self._input_spec = input_dataset.element_spec
        probe = self._reduce_window(constant(0, dtype=int64), [])
        super().__init__(input_dataset, probe.element_spec)

    def _reduce_window(self, key, elements):
        result = self._reduce(key, _ListDataset(elements, self._input_spec))
        if not isinstance(result, Dataset):
            raise TypeError(f"{self._what}: `reduce_func` must return a Dataset, got {type(result).__name__}")
        return result

    def _flat_iter(self):
        windows = {}
        order = []
        for element in self._input._flat_iter():
            key = int(self._key(element)[0].numpy())
            if key not in windows:
                windows[key] = []
                order.append(key)
            windows[key].append(element)
            if len(windows[key]) == self._size_of(key):
                yield from self._reduce_window(constant(key, dtype=int64), windows.pop(key))._flat_iter()
                order.remove(key)
        for key in order:  # the partial windows, in the order their keys first appeared
            yield from self._reduce_window(constant(key, dtype=int64), windows.pop(key))._flat_iter()

    def _cardinality(self):
        return UNKNOWN


def bucket_by_sequence_length(dataset, element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None, pad_to_bucket_boundary=False,
                              no_padding=False, drop_remainder=False):
    """Batches elements of similar length together: bucket i holds lengths in [boundaries[i-1],
    boundaries[i]) and is batched (padded, unless no_padding) by bucket_batch_sizes[i]; built on
    group_by_window as TensorFlow builds it."""
    what = "Dataset.bucket_by_sequence_length()"
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError(f"{what}: len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1, got "
                         f"{len(sizes)} and {len(boundaries)}")
    if any(b2 <= b1 for b1, b2 in zip(boundaries, boundaries[1:])):
        raise ValueError(f"{what}: bucket_boundaries must be sorted increasingly, got {boundaries}")
    if pad_to_bucket_boundary and padded_shapes is not None:
        raise ValueError(f"{what}: pad_to_bucket_boundary cannot be combined with padded_shapes")
    import ember as tf

    def key_func(*element):
        length = element_length_func(*element)
        return tf.cast(tf.reduce_sum(tf.cast(tf.greater_equal(length, boundaries), int64)) if boundaries else
                       tf.constant(0, int64), int64)

    def reduce_func(key, window):
        index = int(key.numpy())
        batch = sizes[index]
        if no_padding:
            return window.batch(batch, drop_remainder=drop_remainder)
        shapes = padded_shapes
        if pad_to_bucket_boundary:
            if index == len(boundaries):
                raise _invalid(f"{what}: an element of length >= the last boundary ({boundaries[-1]}) has no "
                               "bucket to pad to with pad_to_bucket_boundary=True")
            # Unknown dims pad to the bucket's largest length, as TensorFlow's.
            shapes = structure.map_structure(
                lambda s: TensorShape([boundaries[index] - 1 if d is None else d for d in s.shape.as_list()]),
                window.element_spec)
        return window.padded_batch(batch, shapes, padding_values, drop_remainder=drop_remainder)

    return GroupByWindowDataset(dataset, key_func, reduce_func, max(sizes), window_size_of=sizes.__getitem__)

"""Dataset.window and Dataset.ragged_batch (TensorFlow's semantics), which run in Python over their input's
elements and give elements that are not dense tensors: a window is a structure of datasets (described by
``DatasetSpec``), a ragged batch holds ``RaggedTensor``s (described by ``RaggedTensorSpec``). Such elements
are iterated and handed to ``flat_map``/``interleave``; ``map`` and ``batch`` take dense elements only."""

import numpy as np

from ember import errors
from ember.data import structure
from ember.data.dataset_ops import INFINITE, UNKNOWN, _UnaryDataset, _batched_cardinality
from ember.data.transformations import _ListDataset, _int_arg
from ember.dtypes import as_dtype, int32, int64
from ember.framework.tensor import constant
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec


class DatasetSpec:
    """``tf.data.DatasetSpec``: the type of a dataset-valued component (a window's), by its element spec."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def shape(self):
        return self._dataset_shape

    @property
    def dtype(self):
        # What map, batch and the other tensor transformations ask of a component first.
        raise TypeError("tf.data: this element holds datasets (a window's components, DatasetSpec), which only "
                        "flat_map, interleave and iteration take; flat_map over the windows first (for "
                        "example `ds.window(n).flat_map(lambda w: w.batch(n))`)")

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and other._element_spec == self._element_spec and \
            other._dataset_shape == self._dataset_shape

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


def _positive(value, what, name):
    n = _int_arg(value, what, name)
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, f"{what}: {name} must be greater than zero, got {n}")
    return n


class WindowDataset(_UnaryDataset):
    """Windows of ``size`` elements taken every ``stride``-th from a start that moves by ``shift``; each output
    element has the input's structure with a dataset of the window's values for each component. Without
    ``drop_remainder`` the last windows may be shorter (a window is made for every start in the input)."""

    def __init__(self, input_dataset, size, shift, stride, drop_remainder):
        what = "Dataset.window()"
        self._size = _positive(size, what, "size")
        self._shift = self._size if shift is None else _positive(shift, what, "shift")
        self._stride = _positive(stride, what, "stride")
        self._drop = bool(drop_remainder)
        self._component_specs = structure.flatten(input_dataset.element_spec)
        super().__init__(input_dataset,
                         structure.map_structure(lambda s: DatasetSpec(s), input_dataset.element_spec))

    def _window(self, elements):
        return tuple(_ListDataset([(e[c],) for e in elements], spec)
                     for c, spec in enumerate(self._component_specs))

    def _flat_iter(self):
        it = self._input._flat_iter()
        span = (self._size - 1) * self._stride + 1  # the input elements one window reaches over
        buffer, exhausted, to_skip = [], False, 0
        while True:
            while to_skip and not exhausted:  # a shift longer than the span passes elements no window uses
                exhausted = next(it, None) is None
                to_skip -= 1
            while len(buffer) < span and not exhausted:
                element = next(it, None)
                if element is None:
                    exhausted = True
                else:
                    buffer.append(element)
            if not buffer:
                return
            window = buffer[::self._stride][:self._size]
            if len(window) < self._size and self._drop:
                return
            yield self._window(window)
            to_skip = max(self._shift - len(buffer), 0)
            buffer = buffer[self._shift:]

    def _cardinality(self):
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        if not self._drop:
            return -(-n // self._shift)
        span = (self._size - 1) * self._stride + 1
        return 0 if n < span else (n - span) // self._shift + 1


def _ragged_rank(spec):
    """The ragged rank a component gets in a ragged batch: None (batched densely) when its shape is fully known
    or of unknown rank, else the index of its last unknown dimension, plus one for the batch dimension."""
    if spec.shape.rank is None or spec.shape.is_fully_defined():
        return None
    return max(i for i, d in enumerate(spec.shape.as_list()) if d is None) + 1


class RaggedBatchDataset(_UnaryDataset):
    """Batches of ``batch_size`` elements whose shapes may differ: a component with unknown dimensions becomes a
    RaggedTensor whose ragged dimensions are the batch's and the element's up to its last unknown one (TF's
    ``dense_to_ragged_batch``); a component of fully known shape is stacked as ``batch`` does."""

    def __init__(self, input_dataset, batch_size, drop_remainder, row_splits_dtype):
        from ember.ragged import RaggedTensorSpec

        what = "Dataset.ragged_batch()"
        self._batch = _positive(batch_size, what, "batch_size")
        self._drop = bool(drop_remainder)
        self._splits_dtype = as_dtype(row_splits_dtype)
        if self._splits_dtype not in (int32, int64):
            raise ValueError(f"{what}: row_splits_dtype must be int32 or int64, got {self._splits_dtype.name}")
        self._component_specs = structure.flatten(input_dataset.element_spec)
        first = self._batch if self._drop else None

        def batched(spec):
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"{what}: elements must be tensors, got a component of type {spec}")
            rank = _ragged_rank(spec)
            if rank is None:
                return structure.unknown_batch(spec, first)
            return RaggedTensorSpec([first] + spec.shape.as_list(), spec.dtype, rank, self._splits_dtype)

        super().__init__(input_dataset, structure.map_structure(batched, input_dataset.element_spec))

    def _component(self, spec, values):
        from ember.ragged import RaggedTensor

        rank = _ragged_rank(spec)
        arrays = [v.numpy() for v in values]
        if rank is None:
            return constant(np.stack(arrays), dtype=spec.dtype)
        # Level j of the nested row splits: every element gives prod(its dims before j) rows of its dim j.
        splits = []
        for level in range(rank):
            lengths = [np.full(int(np.prod(a.shape[:level])), a.shape[level], np.int64) for a in arrays]
            splits.append(constant(np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(
                self._splits_dtype.as_numpy_dtype)))
        inner = spec.shape.as_list()[rank:]
        flat = np.concatenate([a.reshape([-1] + inner) for a in arrays]) if arrays else np.zeros([0] + inner)
        return RaggedTensor.from_nested_row_splits(constant(flat, dtype=spec.dtype), splits, validate=False)

    def _flat_iter(self):
        rows = []
        for element in self._input._flat_iter():
            rows.append(element)
            if len(rows) == self._batch:
                yield self._batched(rows)
                rows = []
        if rows and not self._drop:
            yield self._batched(rows)

    def _batched(self, rows):
        return tuple(self._component(spec, [row[c] for row in rows]) for c, spec in enumerate(self._component_specs))

    def _cardinality(self):
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)

"""tf.data.experimental's transformations that run in Python over their input's elements (TensorFlow's
names and semantics): from_list, assert_cardinality, ignore_errors, group_by_reducer, rejection_resample
and at. Their user functions are traced once, as map's are (data/functions.py).
"""

import numpy as np

from ember import errors
from ember.data import structure
from ember.data.dataset_ops import INFINITE, UNKNOWN, Dataset, _closing, _UnaryDataset
from ember.data.functions import TracedFunction
from ember.dtypes import int32, int64
from ember.framework.tensor import Tensor, constant
from ember.framework.tensor_spec import TensorSpec


def _int_arg(value, what, name):
    if isinstance(value, Tensor):
        value = value.numpy()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} must be an int, got {value!r}") from None


def _joined_spec(spec, values):
    """``spec`` with None in each dim where the values' lengths differ."""
    from ember.framework.tensor_spec import TensorSpec

    dims = list(values[0].shape)
    for v in values[1:]:
        dims = [a if a == b else None for a, b in zip(dims, v.shape)]
    return TensorSpec(dims, spec.dtype)


class FromListDataset(Dataset):
    """The elements of a Python list, each a nested structure of the same form (TensorFlow converts each
    component of the list to one tensor and slices it, so the components must stack)."""

    def __init__(self, elements):
        what = "from_list()"
        if not isinstance(elements, (list, tuple)) or len(elements) == 0:
            raise ValueError("Invalid `elements`. `elements` should not be empty. If you want an empty dataset, "
                             "use `tf.data.Dataset.range(0)`.")
        first = structure.normalize(elements[0], what)
        flats = []
        for i, element in enumerate(elements):
            value = structure.normalize(element, what)
            if not structure.same_structure(first, value):
                raise ValueError(f"{what}: element {i} has another structure than element 0: "
                                 f"{structure.specs_of(value)} vs {structure.specs_of(first)}")
            flats.append(structure.flatten(value))
        spec = structure.specs_of(first)
        columns = []
        for c, component in enumerate(structure.flatten(spec)):
            values = [flat[c] for flat in flats]
            ranks = {len(v.shape) for v in values}
            if len(ranks) != 1 or any(v.dtype != component.dtype for v in values):
                raise ValueError(f"{what}: component {c} must have one dtype and rank in every element, got "
                                 f"shapes {sorted({tuple(v.shape) for v in values})}")
            columns.append(values)
        # Elements may differ in length along a dim: the spec has None there, as TensorFlow's (a list of
        # ragged rows gives a (None,) component)
        self._spec = structure.pack(spec, [_joined_spec(component, values)
                                           for component, values in zip(structure.flatten(spec), columns)])
        self._elements = [tuple(col[i] for col in columns) for i in range(len(elements))]

    def _flat_iter(self):
        return iter(self._elements)

    def _cardinality(self):
        return len(self._elements)


class AssertCardinalityDataset(_UnaryDataset):
    def __init__(self, input_dataset, expected_cardinality):
        super().__init__(input_dataset)
        self._expected = _int_arg(expected_cardinality, "assert_cardinality()", "expected_cardinality")

    def _flat_iter(self):
        count = 0
        for element in self._input._flat_iter():
            count += 1
            if self._expected != INFINITE and count > self._expected:
                raise errors.FailedPreconditionError(
                    None, None, f"Input dataset was expected to contain {self._expected} elements but contained "
                                f"at least {count} elements.")
            yield element
        if self._expected == INFINITE or count < self._expected:
            expected = "an infinite number of" if self._expected == INFINITE else str(self._expected)
            raise errors.FailedPreconditionError(
                None, None, f"Input dataset was expected to contain {expected} elements but contained only "
                            f"{count} elements.")

    def _cardinality(self):
        return self._expected


class IgnoreErrorsDataset(_UnaryDataset):
    """Drops the elements whose computation raised an ``ember.errors`` error. A native input (map) goes on
    after a failed element; a Python input ends at its first error, as a Python generator must."""

    def __init__(self, input_dataset, log_warning=False):
        super().__init__(input_dataset)
        self._log = bool(log_warning)

    def _flat_iter(self):
        resumable = getattr(self._input, "_flat_iter_ignoring_errors", None)
        if resumable is not None:  # a reader that can skip a bad record and go on (CsvDataset)
            yield from resumable()
            return
        native = self._input._native()
        if native is not None:
            try:
                while True:
                    try:
                        element = native.next()
                    except errors.OpError as e:
                        self._warn(e)
                        continue
                    if element is None:
                        return
                    yield element
            finally:
                native.close()
            return
        it = self._input._flat_iter()
        while True:
            try:
                element = next(it)
            except StopIteration:
                return
            except errors.OutOfRangeError:
                return
            except errors.OpError as e:
                self._warn(e)
                continue
            yield element

    def _warn(self, error):
        if self._log:
            import logging
            logging.getLogger("ember").warning("ignore_errors: dropping an element: %s", error)

    def _cardinality(self):
        return UNKNOWN


class Reducer:
    """``tf.data.experimental.Reducer``: a group's initial state from its key, the state after each of its
    elements, and the group's result from the final state."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self.init_func = init_func
        self.reduce_func = reduce_func
        self.finalize_func = finalize_func


class GroupByReducerDataset(_UnaryDataset):
    """One element per key (in increasing key order, as TensorFlow's), each the finalized state of the
    reduction over that key's elements."""

    def __init__(self, input_dataset, key_func, reducer):
        what = "group_by_reducer()"
        spec = input_dataset.element_spec
        self._key = TracedFunction(key_func, spec, what)
        key_spec = self._key.output_spec
        if not isinstance(key_spec, TensorSpec) or key_spec.dtype != int64 or key_spec.shape.rank != 0:
            raise ValueError(f"{what}: `key_func` must return a single tf.int64 scalar tensor, got {key_spec}")
        self._init = TracedFunction(reducer.init_func, key_spec, what)
        state_spec = self._init.output_spec
        self._reduce = TracedFunction(reducer.reduce_func, spec, what, extra_spec=state_spec)
        if not structure.same_structure(state_spec, self._reduce.output_spec):
            raise ValueError(f"{what}: `reduce_func` must return the state's structure {state_spec}, got "
                             f"{self._reduce.output_spec}")
        self._state_spec = state_spec
        finalize = TracedFunction(reducer.finalize_func, state_spec, what)
        self._finalize = finalize
        super().__init__(input_dataset, finalize.output_spec)

    def _flat_iter(self):
        states = {}
        for element in self._input._flat_iter():
            key = int(self._key(element)[0].numpy())
            if key not in states:
                states[key] = self._init((constant(key, dtype=int64),))
            states[key] = self._reduce(tuple(states[key]) + tuple(element))
        for key in sorted(states):  # TensorFlow's kernel keeps its states in a map ordered by key
            yield self._finalize(states[key])


class RejectionResampleDataset(_UnaryDataset):
    """``rejection_resample``: ``(class, element)`` pairs whose class distribution approaches
    ``target_dist``. Each element of class i is kept with probability ``min(target_i / initial_i, ...)``
    scaled so the most over-kept class has probability 1 (TensorFlow's acceptance rule); ``initial_dist``
    unknown is estimated as the running class frequencies. NumPy's generator draws: a seeded order is not
    TensorFlow's, the distribution is."""

    def __init__(self, input_dataset, class_func, target_dist, initial_dist, seed):
        what = "rejection_resample()"
        spec = input_dataset.element_spec
        self._class = TracedFunction(class_func, spec, what)
        class_spec = self._class.output_spec
        if not isinstance(class_spec, TensorSpec) or class_spec.dtype not in (int32, int64) or \
                class_spec.shape.rank != 0:
            raise ValueError(f"{what}: `class_func` must return an int32 or int64 scalar, got {class_spec}")
        self._target = self._distribution(target_dist, what, "target_dist")
        self._initial = None if initial_dist is None else self._distribution(initial_dist, what, "initial_dist")
        if self._initial is not None and self._initial.shape != self._target.shape:
            raise ValueError(f"{what}: initial_dist has {self._initial.size} classes, target_dist "
                             f"{self._target.size}")
        self._seed = seed
        super().__init__(input_dataset, (class_spec, spec))

    @staticmethod
    def _distribution(value, what, name):
        p = np.asarray(value.numpy() if isinstance(value, Tensor) else value, dtype=np.float64)
        if p.ndim != 1 or p.size == 0 or (p < 0).any() or not np.isfinite(p).all() or p.sum() <= 0:
            raise errors.InvalidArgumentError(None, None, f"{what}: {name} must be a non-empty vector of "
                                                          f"non-negative probabilities, got {p.tolist()}")
        return p / p.sum()

    def _flat_iter(self):
        rng = np.random.default_rng(self._seed)
        n = self._target.size
        counts = np.zeros(n)
        for element in self._input._flat_iter():
            label = self._class(element)[0]
            c = int(label.numpy())
            if not 0 <= c < n:
                raise errors.InvalidArgumentError(None, None, f"rejection_resample(): class {c} is outside "
                                                              f"[0, {n})")
            if self._initial is not None:
                initial = self._initial
            else:
                counts[c] += 1
                initial = counts / counts.sum()
            ratio = np.where(initial > 0, self._target / np.maximum(initial, 1e-300), 0.0)
            accept = ratio[c] / ratio.max()
            if rng.random() < accept:
                yield (label,) + tuple(element)


def at(dataset, index):
    """The ``index``-th element of ``dataset`` (OutOfRangeError outside [0, cardinality))."""
    index = _int_arg(index, "at()", "index")
    n = dataset._cardinality()
    if index < 0 or (n >= 0 and index >= n):
        raise errors.OutOfRangeError(None, None, f"at(): Index out of range [0, {n}):{index}")
    it = _closing(dataset._flat_iter())
    try:
        for i, element in enumerate(it):
            if i == index:
                spec = dataset.element_spec
                return element[0] if not structure.is_structure(spec) else structure.pack(spec, element)
    finally:
        it.close()
    raise errors.OutOfRangeError(None, None, f"at(): Index out of range [0, {index}):{index}")


"""tf.data.Dataset (docs/data.md).

A dataset is an immutable description; iterating it makes an iterator over flat elements (tuples of
tensors, structure.flatten order) that the user-facing iterator packs into ``element_spec``'s structure.
The transformations whose cost is per element in C++ — from_tensor_slices, map, batch, prefetch — build
C++ iterators (``_native``), chained directly when their input is native too and fed from the Python
iterator otherwise; the others are Python generators over their input's flat elements.
"""

import itertools
import os

import numpy as np

from ember import _C, errors
from ember.data import structure
from ember.data.functions import TracedFunction
from ember.dtypes import bool as _bool, int64, string as _string
from ember.framework.tensor import Tensor, constant, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec

AUTOTUNE = -1
INFINITE = -1  # tf.data.INFINITE_CARDINALITY
UNKNOWN = -2  # tf.data.UNKNOWN_CARDINALITY


def _count(value, what, name):
    if isinstance(value, Tensor):
        value = value.numpy()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} must be an int, got {value!r}") from None


def _refuse_strings(spec, what):
    from ember.data.readers import refuse_strings
    refuse_strings(spec, what)


def _native_flat(native):
    """A generator over a C++ iterator's elements; closing it (or dropping it) stops its threads."""
    try:
        while True:
            element = native.next()
            if element is None:
                return
            yield element
    finally:
        native.close()


class Dataset:
    """A sequence of elements, each a nested structure of tensors described by ``element_spec``."""

    # ---- what each dataset provides
    @property
    def element_spec(self):
        return self._spec

    def _flat_iter(self):
        """A Python iterator over flat elements (tuples of tensors)."""
        native = self._native()
        if native is None:
            raise NotImplementedError(type(self).__name__)
        return _native_flat(native)

    def _native(self):
        """A fresh ``_C.DataIterator``, or None when this dataset runs in Python."""
        return None

    def _cardinality(self):
        return UNKNOWN

    def _native_input(self):
        """This dataset as a C++ iterator: its own, or its Python iterator as a C++ source."""
        native = self._native()
        return native if native is not None else _C.data_source(self._flat_iter())

    def _flat_specs(self):
        return structure.flatten(self.element_spec)

    # ---- iteration
    def __iter__(self):
        if _C.in_trace():
            from ember.data import staged
            return staged.StagedIterator(self)
        from ember.data.iterator_ops import OwnedIterator
        return OwnedIterator(self)

    def _ember_staged_for(self, extra_test, body, get_state, set_state, symbol_names, opts):
        """AutoGraph's ``for x in self`` while tracing (Note [Datasets inside functions], staged.py)."""
        from ember.data import staged
        staged.staged_for(self, extra_test, body, get_state, set_state, symbol_names, opts)

    def as_numpy_iterator(self):
        if _C.in_trace():
            raise RuntimeError("Dataset.as_numpy_iterator() is not supported while tracing an ember.function")
        from ember.data.iterator_ops import NumpyIterator
        return NumpyIterator(self)

    def __bool__(self):
        return True

    def __len__(self):
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def cardinality(self):
        return constant(self._cardinality(), dtype=int64)

    def __repr__(self):
        return f"<{type(self).__name__} element_spec={self.element_spec}>"

    # ---- sources
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        from ember.data.sources import _RaggedSliceDataset, _TensorSliceDataset
        if getattr(tensors, "_ember_composite", False):
            return _RaggedSliceDataset(tensors)
        return _TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        from ember.data.sources import _TensorDataset
        return _TensorDataset(tensors)

    @staticmethod
    def range(*args, output_type=int64, name=None):
        from ember.data.sources import _RangeDataset
        return _RangeDataset(args, output_type)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        from ember.data.sources import _GeneratorDataset
        return _GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        if datasets is not None and args:
            raise TypeError("Dataset.zip(): give the datasets either positionally or as `datasets=`, not both")
        if datasets is None:
            if not args:
                raise TypeError("Dataset.zip() needs at least one dataset")
            datasets = args[0] if len(args) == 1 else tuple(args)
        return _ZipDataset(datasets)

    # ---- transformations
    def concatenate(self, dataset, name=None):
        return _ConcatenateDataset(self, dataset)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        return _MapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None):
        return _FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        return _BatchDataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        return _PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=int64, name=None):
        from ember.data import windowing
        return windowing.RaggedBatchDataset(self, batch_size, drop_remainder, row_splits_dtype)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        from ember.data import windowing
        return windowing.WindowDataset(self, size, shift, stride, drop_remainder)

    def unbatch(self, name=None):
        return _UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        return _ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None):
        return _RepeatDataset(self, count)

    def take(self, count, name=None):
        return _TakeDataset(self, count)

    def skip(self, count, name=None):
        return _SkipDataset(self, count)

    def prefetch(self, buffer_size, name=None):
        return _PrefetchDataset(self, buffer_size)

    def cache(self, filename="", name=None):
        return _CacheDataset(self, filename)

    def save(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Writes the elements to the directory ``path`` (data/save_load.py, Note [Saved datasets])."""
        from ember.data import save_load
        return save_load.save(self, path, compression, shard_func, checkpoint_args)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None, wait=False):
        """The dataset ``Dataset.save`` wrote to ``path``."""
        from ember.data import save_load
        return save_load.load(path, element_spec, compression, reader_func, wait)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        return _InterleaveDataset(self, map_func, cycle_length, block_length)

    def flat_map(self, map_func, name=None):
        return _InterleaveDataset(self, map_func, 1, 1, what="Dataset.flat_map()")

    def enumerate(self, start=0, name=None):
        return _ZipDataset((Dataset.range(start, np.iinfo(np.int64).max), self))

    def apply(self, transformation_func):
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply(): `transformation_func` must return a Dataset, got "
                            f"{type(result).__name__}")
        return result

    def options(self):
        return getattr(self, "_options_value", None) or Options()

    def with_options(self, options, name=None):
        out = _OptionsDataset(self)
        out._options_value = options
        return out

    def reduce(self, initial_state, reduce_func, name=None):
        from ember.data import staged
        return staged.reduce(self, initial_state, reduce_func)

    # ---- transformations that run in Python over the elements (data/transformations.py)
    def shard(self, num_shards, index, name=None):
        from ember.data import transformations
        return transformations.ShardDataset(self, num_shards, index)

    def take_while(self, predicate, name=None):
        from ember.data import transformations
        return transformations.TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None):
        from ember.data import transformations
        return transformations.ScanDataset(self, initial_state, scan_func)

    def unique(self, name=None):
        from ember.data import transformations
        return transformations.UniqueDataset(self)

    def get_single_element(self, name=None):
        from ember.data import transformations
        return transformations.get_single_element(self)

    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None, name=None):
        from ember.data import transformations
        if window_size_func is not None:
            raise NotImplementedError("Dataset.group_by_window(): window_size_func is not implemented; pass "
                                      "window_size")
        return transformations.GroupByWindowDataset(self, key_func, reduce_func, window_size)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries, bucket_batch_sizes,
                                  padded_shapes=None, padding_values=None, pad_to_bucket_boundary=False,
                                  no_padding=False, drop_remainder=False, name=None):
        from ember.data import transformations
        return transformations.bucket_by_sequence_length(
            self, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes, padding_values,
            pad_to_bucket_boundary, no_padding, drop_remainder)

    def ignore_errors(self, log_warning=False, name=None):
        from ember.data import experimental_ops
        return experimental_ops.IgnoreErrorsDataset(self, log_warning)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None, name=None):
        from ember.data import experimental_ops
        return experimental_ops.RejectionResampleDataset(self, class_func, target_dist, initial_dist, seed)

    @staticmethod
    def counter(start=0, step=1, dtype=int64, name=None):
        from ember.data import transformations
        return transformations.CounterDataset(start, step, dtype)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        from ember.data import transformations
        return transformations.ChooseFromDatasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        from ember.data import transformations
        return transformations.SampleFromDatasets(datasets, weights, seed, stop_on_empty_dataset)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        from ember.data import transformations
        return transformations.list_files(file_pattern, shuffle, seed)


class ThreadingOptions:
    """tf.data.ThreadingOptions: accepted and kept; ember's pipelines do not read them yet."""

    def __init__(self):
        self.max_intra_op_parallelism = None
        self.private_threadpool_size = None

    def __repr__(self):
        return (f"ThreadingOptions(max_intra_op_parallelism={self.max_intra_op_parallelism}, "
                f"private_threadpool_size={self.private_threadpool_size})")


class Options:
    """tf.data.Options: accepted and kept; ember's pipelines do not read them yet."""

    def __init__(self):
        self.deterministic = None
        self.experimental_deterministic = None
        self.threading = ThreadingOptions()

    def merge(self, options):
        out = Options()
        out.__dict__.update(self.__dict__)
        out.__dict__.update({k: v for k, v in options.__dict__.items() if v is not None})
        return out


class _UnaryDataset(Dataset):
    def __init__(self, input_dataset, spec=None):
        if not isinstance(input_dataset, Dataset):
            raise TypeError(f"{type(self).__name__}: the input must be a Dataset, got "
                            f"{type(input_dataset).__name__}")
        self._input = input_dataset
        self._spec = input_dataset.element_spec if spec is None else spec

    def options(self):
        return getattr(self, "_options_value", None) or self._input.options()


class _OptionsDataset(_UnaryDataset):
    def _flat_iter(self):
        return self._input._flat_iter()

    def _native(self):
        return self._input._native()

    def _cardinality(self):
        return self._input._cardinality()


# ---- combining -----------------------------------------------------------------------------------------

class _ZipDataset(Dataset):
    def __init__(self, datasets):
        for d in structure.flatten(datasets):
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip(): expected a (nested) structure of datasets, got "
                                f"{type(d).__name__}")
        self._datasets = datasets
        self._spec = structure.map_structure(lambda d: d.element_spec, datasets)

    def _flat_iter(self):
        iters = [d._flat_iter() for d in structure.flatten(self._datasets)]
        try:
            for parts in zip(*iters):
                yield tuple(itertools.chain.from_iterable(parts))
        finally:
            for it in iters:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

    def _cardinality(self):
        counts = [d._cardinality() for d in structure.flatten(self._datasets)]
        finite = [c for c in counts if c >= 0]
        if finite:
            return min(finite)
        return UNKNOWN if UNKNOWN in counts else INFINITE


class _ConcatenateDataset(Dataset):
    def __init__(self, first, second):
        if not isinstance(second, Dataset):
            raise TypeError(f"Dataset.concatenate(): expected a Dataset, got {type(second).__name__}")
        self._first, self._second = first, second
        self._spec = structure.most_specific_compatible(first.element_spec, second.element_spec,
                                                        "Dataset.concatenate()")

    def _flat_iter(self):
        yield from self._first._flat_iter()
        yield from self._second._flat_iter()

    def _cardinality(self):
        a, b = self._first._cardinality(), self._second._cardinality()
        if INFINITE in (a, b):
            return INFINITE
        if UNKNOWN in (a, b):
            return UNKNOWN
        return a + b


# ---- functions ----------------------------------------------------------------------------------------

def _parallelism(num_parallel_calls, what):
    if num_parallel_calls is None:
        return 0
    n = _count(num_parallel_calls, what, "num_parallel_calls")
    if n == AUTOTUNE:
        return _C.data_autotune_parallelism()
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, f"{what}: num_parallel_calls must be positive or "
                                          f"tf.data.AUTOTUNE, got {n}")
    return n


class _MapDataset(_UnaryDataset):
    def __init__(self, input_dataset, map_func, num_parallel_calls, deterministic):
        what = "Dataset.map()"
        super().__init__(input_dataset)
        if not callable(map_func):
            raise TypeError(f"{what}: `map_func` must be callable, got {type(map_func).__name__}")
        _refuse_strings(input_dataset.element_spec, what)
        self._threads = _parallelism(num_parallel_calls, what)
        self._fn = TracedFunction(map_func, input_dataset.element_spec, what)
        self._spec = self._fn.output_spec
        self._name = f"{what[:-2]}({getattr(map_func, '__name__', 'map_func')})"

    def _native(self):
        return _C.data_map(self._input._native_input(), self._fn.graph_function, self._threads, self._name)

    def _cardinality(self):
        return self._input._cardinality()


class _FilterDataset(_UnaryDataset):
    def __init__(self, input_dataset, predicate):
        what = "Dataset.filter()"
        super().__init__(input_dataset)
        _refuse_strings(input_dataset.element_spec, what)
        self._fn = TracedFunction(predicate, input_dataset.element_spec, what)
        out = self._fn.output_spec
        if not isinstance(out, TensorSpec) or out.dtype != _bool or out.shape.rank != 0:
            raise ValueError(f"{what}: Invalid `predicate`. `predicate` must return a `tf.bool` scalar tensor, "
                             f"but its return type is {out}.")

    def _flat_iter(self):
        fn = self._fn.graph_function
        for element in self._input._flat_iter():
            if bool(fn(list(element))[0]):
                yield element


class _InterleaveDataset(_UnaryDataset):
    def __init__(self, input_dataset, map_func, cycle_length, block_length, what="Dataset.interleave()"):
        super().__init__(input_dataset)
        self._what = what
        self._map_func = map_func
        self._cycle = _C.data_autotune_parallelism() if cycle_length in (None, AUTOTUNE) else _count(
            cycle_length, what, "cycle_length")
        self._block = 1 if block_length is None else _count(block_length, what, "block_length")
        if self._cycle <= 0 or self._block <= 0:
            raise errors.InvalidArgumentError(None, None, f"{what}: cycle_length and block_length must be "
                                              f"positive, got {self._cycle} and {self._block}")
        # The function returns a dataset, so it runs in Python per input element; its element spec comes
        # from a call on a placeholder-free probe: the first element's dataset, checked against the rest.
        self._spec = None
        probe = self._probe()
        self._spec = probe.element_spec if probe is not None else None

    def _probe(self):
        for element in self._input._flat_iter():
            return self._dataset_for(element)
        return None

    @property
    def element_spec(self):
        if self._spec is None:
            raise ValueError(f"{self._what}: the element spec of an interleave over an empty input is unknown")
        return self._spec

    def _dataset_for(self, flat):
        value = structure.pack(self._input.element_spec, flat)
        result = self._map_func(*value) if type(value) is tuple else self._map_func(value)
        if not isinstance(result, Dataset):
            raise TypeError(f"{self._what}: `map_func` must return a Dataset, got {type(result).__name__}")
        if self._spec is not None and not structure.same_structure(result.element_spec, self._spec):
            raise TypeError(f"{self._what}: `map_func` returned datasets of different element structures: "
                            f"{self._spec} and {result.element_spec}")
        return result

    def _flat_iter(self):
        return interleave_flat(self._input._flat_iter(), lambda e: self._dataset_for(e)._flat_iter(),
                               self._cycle, self._block)


def interleave_flat(inputs, make_iter, cycle, block):
    """Note [Interleave order]: TensorFlow's deterministic order. The cycle holds up to ``cycle`` open
    iterators; each turn takes up to ``block`` elements from the current one, then moves on. An empty slot
    is refilled from the next input before moving on; an exhausted iterator frees its slot and the cycle
    moves on."""
    slots = [None] * cycle
    index, in_block, inputs_done = 0, 0, False
    while True:
        it = slots[index]
        if it is None:
            if not inputs_done:
                element = next(inputs, None)
                if element is None:
                    inputs_done = True
                else:
                    slots[index] = make_iter(element)
                    in_block = 0
                    continue
            if inputs_done and all(s is None for s in slots):
                return
            index, in_block = (index + 1) % cycle, 0
            continue
        element = next(it, None)
        if element is None:
            slots[index] = None
            index, in_block = (index + 1) % cycle, 0
            continue
        yield element
        in_block += 1
        if in_block == block:
            index, in_block = (index + 1) % cycle, 0


# ---- batching -----------------------------------------------------------------------------------------

def _batch_size(batch_size, what):
    n = _count(batch_size, what, "batch_size")
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, f"{what}: Batch size must be greater than zero, got {n}.")
    return n


def _batched_cardinality(n, batch, drop):
    if n < 0:
        return n
    return n // batch if drop else -(-n // batch)


class _BatchDataset(_UnaryDataset):
    def __init__(self, input_dataset, batch_size, drop_remainder):
        what = "Dataset.batch()"
        _refuse_strings(input_dataset.element_spec, what)
        self._batch = _batch_size(batch_size, what)
        self._drop = bool(drop_remainder)
        first = self._batch if self._drop else None
        super().__init__(input_dataset, structure.map_structure(
            lambda s: structure.unknown_batch(s, first), input_dataset.element_spec))

    def _native(self):
        return _C.data_batch(self._input._native_input(), self._batch, self._drop)

    def _cardinality(self):
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)


class _PaddedBatchDataset(_UnaryDataset):
    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        what = "Dataset.padded_batch()"
        _refuse_strings(input_dataset.element_spec, what)
        self._what = what
        self._batch = _batch_size(batch_size, what)
        self._drop = bool(drop_remainder)
        in_spec = input_dataset.element_spec
        specs = structure.flatten(in_spec)
        if padded_shapes is None:
            for s in specs:
                if s.shape.rank is None:
                    raise ValueError(f"{what}: You must provide `padded_shapes` argument because component "
                                     f"{s} has unknown rank.")
            shapes = [s.shape for s in specs]
        else:
            from ember.data.sources import _flatten_shapes
            shapes = [TensorShape(s) for s in _flatten_shapes(padded_shapes, len(specs))]
            if len(shapes) != len(specs):
                raise ValueError(f"{what}: `padded_shapes` has {len(shapes)} component(s), the element has "
                                 f"{len(specs)}")
            for s, p in zip(specs, shapes):
                if s.shape.rank is not None and p.rank is not None and s.shape.rank != p.rank:
                    raise ValueError(f"{what}: The padded shape {p} is not compatible with the shape {s.shape} of "
                                     "the corresponding input component.")
        self._shapes = shapes
        if padding_values is None:
            values = [None] * len(specs)
        else:
            flat_values = structure.flatten(padding_values) if structure.is_structure(in_spec) else [padding_values]
            if len(flat_values) == 1 and len(specs) > 1 and not structure.is_structure(padding_values):
                flat_values = flat_values * len(specs)
            values = flat_values
        self._values = []
        for s, v in zip(specs, values):
            if v is None:  # zero, or the empty string
                self._values.append(b"" if s.dtype == _string else np.zeros((), dtype=s.dtype.as_numpy_dtype))
                continue
            t = structure.to_tensor(v, what)
            if t.dtype != s.dtype:
                raise TypeError(f"{what}: the padding value {v!r} is {t.dtype.name}, the component is "
                                f"{s.dtype.name}")
            self._values.append(t.numpy())
        first = self._batch if self._drop else None
        out = [TensorSpec(TensorShape([first] + (p.as_list() if p.rank is not None else [])), s.dtype)
               for s, p in zip(specs, shapes)]
        super().__init__(input_dataset, structure.pack(in_spec, out))

    def _flat_iter(self):
        rows = []
        for element in self._input._flat_iter():
            rows.append(element)
            if len(rows) == self._batch:
                yield self._pad(rows)
                rows = []
        if rows and not self._drop:
            yield self._pad(rows)

    def _pad(self, rows):
        out = []
        for c, (shape, value) in enumerate(zip(self._shapes, self._values)):
            arrays = [np.asarray(r[c].numpy()) for r in rows]  # (a string scalar's numpy() is bytes)
            longest = np.max([a.shape for a in arrays], axis=0) if arrays[0].ndim else ()
            target = []
            for d, want in enumerate(shape.as_list() if shape.rank is not None else [None] * arrays[0].ndim):
                if want is None or want == -1:
                    target.append(int(longest[d]))
                else:
                    if longest[d] > want:
                        raise errors.InvalidArgumentError(None, None, f"{self._what}: Attempted to pad to a "
                                                          f"smaller size than the input element (component {c}: "
                                                          f"{longest[d]} > {want} in dimension {d}).")
                    target.append(want)
            kind = object if rows[0][c].dtype == _string else arrays[0].dtype  # bytes of any length
            batch = np.full([len(arrays)] + target, value, dtype=kind)
            for i, a in enumerate(arrays):
                if kind is object:  # bytes objects, not NumPy's fixed-width (or 0-d) byte arrays
                    a = a.astype(object) if a.ndim else a.item()
                batch[(i,) + tuple(slice(0, n) for n in np.shape(a))] = a
            out.append(convert_to_tensor(batch, dtype=rows[0][c].dtype))
        return tuple(out)

    def _cardinality(self):
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)


class _UnbatchDataset(_UnaryDataset):
    def __init__(self, input_dataset):
        what = "Dataset.unbatch()"
        _refuse_strings(input_dataset.element_spec, what)
        super().__init__(input_dataset, structure.map_structure(lambda s: structure.drop_first(s, what),
                                                                input_dataset.element_spec))

    def _flat_iter(self):
        for element in self._input._flat_iter():
            arrays = [t.numpy() for t in element]
            n = {a.shape[0] for a in arrays}
            if len(n) != 1:
                raise errors.InvalidArgumentError(None, None, "Dataset.unbatch(): Input element must have the same "
                                                  f"batch size in each component; got sizes {sorted(n)}")
            for i in range(n.pop()):
                yield tuple(constant(a[i]) for a in arrays)


# ---- order and count ----------------------------------------------------------------------------------

class _ShuffleDataset(_UnaryDataset):
    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        what = "Dataset.shuffle()"
        super().__init__(input_dataset)
        self._buffer = _count(buffer_size, what, "buffer_size")
        if self._buffer <= 0 and self._buffer != UNKNOWN:
            raise errors.InvalidArgumentError(None, None, f"{what}: buffer_size must be greater than zero or "
                                              f"UNKNOWN_CARDINALITY, got {self._buffer}")
        from ember.data.shuffle import SeedGenerator
        from ember.ops.random_ops import _get_seed
        seeds = tuple(int(v) for v in _get_seed(seed, what))
        self._seeds = SeedGenerator(seeds, bool(reshuffle_each_iteration))

    def _flat_iter(self):
        from ember.data.shuffle import shuffled
        return shuffled(iter(self._input._flat_iter()), self._buffer, self._seeds.next_seeds())

    def _cardinality(self):
        return self._input._cardinality()


class _RepeatDataset(_UnaryDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = -1 if count is None else _count(count, "Dataset.repeat()", "count")

    def _flat_iter(self):
        epochs = itertools.count() if self._count < 0 else range(self._count)
        for _ in epochs:
            empty = True
            for element in self._input._flat_iter():
                empty = False
                yield element
            if empty:  # an empty input repeated for ever is empty, as TensorFlow's
                return

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count == 0 or n == 0:
            return 0
        if self._count < 0:
            return INFINITE  # an unknown count repeated for ever is infinite, as TensorFlow says
        return n * self._count if n >= 0 else n


class _TakeDataset(_UnaryDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = _count(count, "Dataset.take()", "count")

    def _flat_iter(self):
        if self._count == 0:
            return iter(())
        it = self._input._flat_iter()
        return it if self._count < 0 else itertools.islice(_closing(it), self._count)

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE:
            return self._count
        return min(n, self._count) if n >= 0 else UNKNOWN


def _closing(it):
    """``it``, closed as soon as the consumer stops (take ends early: its input's threads stop at once)."""
    try:
        yield from it
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


class _SkipDataset(_UnaryDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = _count(count, "Dataset.skip()", "count")

    def _flat_iter(self):
        it = self._input._flat_iter()
        if self._count < 0:
            for _ in it:
                pass
            return iter(())
        return itertools.islice(it, self._count, None)

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n != INFINITE else INFINITE
        return max(n - self._count, 0) if n >= 0 else n


class _PrefetchDataset(_UnaryDataset):
    def __init__(self, input_dataset, buffer_size):
        super().__init__(input_dataset)
        n = _count(buffer_size, "Dataset.prefetch()", "buffer_size")
        if n < 0 and n != AUTOTUNE:
            raise errors.InvalidArgumentError(None, None, f"Dataset.prefetch(): buffer_size must be >= 0 or "
                                              f"tf.data.AUTOTUNE, got {n}")
        self._buffer = max(2, _C.data_autotune_parallelism()) if n == AUTOTUNE else n

    def _native(self):
        from ember.data.readers import has_strings
        if not all(isinstance(s, TensorSpec) for s in self._flat_specs()):
            return None  # windows and ragged batches (windowing.py) stay in Python
        if has_strings(self.element_spec):  # records (bytes) stay in Python
            return None
        if self._buffer == 0:
            return self._input._native()
        return _C.data_prefetch(self._input._native_input(), self._buffer)

    def _flat_iter(self):
        if self._native() is None:
            return self._input._flat_iter()
        return super()._flat_iter()

    def _cardinality(self):
        return self._input._cardinality()


class _CacheDataset(_UnaryDataset):
    """In memory (``filename=""``) or in a file: the first complete pass records the elements, later
    passes replay them. A pass abandoned early records nothing (as TensorFlow's memory cache)."""

    def __init__(self, input_dataset, filename):
        super().__init__(input_dataset)
        self._filename = os.fspath(filename) if not isinstance(filename, Tensor) else str(filename.numpy())
        self._cached = None
        if self._filename:
            from ember.data.save_load import _flat_specs

            _flat_specs(input_dataset.element_spec, "Dataset.cache(filename)")  # the file holds dense tensors

    def _load(self):
        if self._cached is None and self._filename and os.path.exists(self._filename):
            from ember.data.save_load import _decode
            from ember.io.tf_record import tf_record_iterator

            self._cached = [tuple(convert_to_tensor(a) for a in _decode(record, None, self._filename))
                            for record in tf_record_iterator(self._filename)]
        return self._cached

    def _flat_iter(self):
        cached = self._load()
        if cached is not None:
            yield from cached
            return
        recorded = []
        for element in self._input._flat_iter():
            recorded.append(element)
            yield element
        self._cached = recorded
        if self._filename:  # TFRecord records of the flat tensors (data/save_load.py's encoding), no pickle
            from ember.data.save_load import _encode
            from ember.io.tf_record import TFRecordWriter

            tmp = self._filename + ".tmp"
            with TFRecordWriter(tmp) as writer:
                for element in recorded:
                    writer.write(_encode(element))
            os.replace(tmp, self._filename)

    def _cardinality(self):
        return self._input._cardinality()

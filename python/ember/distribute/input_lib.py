"""Distributed datasets: each element is one step's input for every replica, as PerReplica values.

``experimental_distribute_dataset(dataset)`` splits each global batch along its first dimension the way
TensorFlow's rebatching does: of a batch of ``B`` rows, every replica takes up to ``ceil(B / replicas)``
rows, in replica order, so the last replicas may get fewer rows, or none (an empty batch of the same element
shape): 9 rows on 4 replicas are 3+3+3+0, a last batch of 2 is 1+1+0+0. ``distribute_datasets_from_function(fn)`` calls ``fn`` with an
InputContext and gives the replicas consecutive elements of its dataset (already per-replica batches).
Each replica's part is copied to its device.
"""

from ember.distribute import distribute_lib, values as values_lib
from ember.distribute.values import on_device
from ember.util import nest


def _on_device(value, device):
    from ember.framework.tensor import convert_to_tensor
    from ember.ops import array_ops

    with on_device(device):
        return array_ops.identity(convert_to_tensor(value))


class DistributedIterator:
    def __init__(self, strategy, iterator, split):
        self._strategy = strategy
        self._iterator = iterator
        self._split = split
        self._devices = strategy.extended.worker_devices

    def __iter__(self):
        return self

    def __next__(self):
        return self._split(self._iterator)

    def get_next(self):
        return self.__next__()

    def get_next_as_optional(self):
        raise NotImplementedError("DistributedIterator.get_next_as_optional is not supported by ember yet")

    @property
    def element_spec(self):
        return self._element_spec

    def _per_replica(self, parts):
        """One structure per replica -> one structure of PerReplica leaves, each part on its device."""
        placed = [nest.map_structure(lambda v, d=device: _on_device(v, d), part)
                  for part, device in zip(parts, self._devices)]
        if len(placed) == 1:
            return placed[0]
        flats = [nest.flatten(p) for p in placed]
        leaves = [values_lib.PerReplica(items) for items in zip(*flats)]
        return nest.pack_sequence_as(placed[0], leaves)


class DistributedDataset:
    """``strategy.experimental_distribute_dataset(dataset)``: iterate it eagerly (``for x in dist:``)."""

    def __init__(self, strategy, dataset, options=None):
        if not hasattr(dataset, "element_spec"):
            raise TypeError(f"experimental_distribute_dataset: expected a tf.data.Dataset, got {type(dataset).__name__}")
        self._strategy = strategy
        self._dataset = dataset
        self._options = options

    @property
    def element_spec(self):
        n = self._strategy.num_replicas_in_sync
        spec = self._dataset.element_spec
        return spec if n == 1 else nest.map_structure(lambda s: values_lib.PerReplica([s] * n), spec)

    def __iter__(self):
        n = self._strategy.num_replicas_in_sync

        def split(iterator):
            element = next(iterator)
            flat = nest.flatten(element)
            rows = int(flat[0].shape[0]) if flat and flat[0].shape.rank else None
            if rows is None:
                raise ValueError("experimental_distribute_dataset: the dataset's elements must be batched (the "
                                 "global batch is split along its first dimension); call dataset.batch(...) first")
            per = max(1, -(-rows // n))
            parts = []
            for i in range(n):
                start, stop = min(i * per, rows), min((i + 1) * per, rows)
                parts.append(nest.pack_sequence_as(element, [v[start:stop] for v in flat]))
            return it._per_replica(parts)

        it = DistributedIterator(self._strategy, iter(self._dataset), split)
        it._element_spec = self.element_spec
        return it


class DistributedDatasetsFromFunction:
    """``strategy.distribute_datasets_from_function(fn)``: replica i takes element i of each group of
    ``replicas`` consecutive elements; a short last group gives the others empty batches."""

    def __init__(self, strategy, dataset_fn, options=None):
        if not callable(dataset_fn):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must be callable, got {dataset_fn!r}")
        self._strategy = strategy
        context = distribute_lib.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                              num_replicas_in_sync=strategy.num_replicas_in_sync)
        self._dataset = dataset_fn(context)
        if not hasattr(self._dataset, "element_spec"):
            raise TypeError("distribute_datasets_from_function: dataset_fn must return a tf.data.Dataset, got "
                            f"{type(self._dataset).__name__}")

    @property
    def element_spec(self):
        n = self._strategy.num_replicas_in_sync
        spec = self._dataset.element_spec
        return spec if n == 1 else nest.map_structure(lambda s: values_lib.PerReplica([s] * n), spec)

    def __iter__(self):
        n = self._strategy.num_replicas_in_sync

        def split(iterator):
            parts = [next(iterator)]  # StopIteration here ends the distributed iteration
            for _ in range(n - 1):
                try:
                    parts.append(next(iterator))
                except StopIteration:
                    parts.append(nest.map_structure(lambda v: v[0:0], parts[0]))
            return it._per_replica(parts)

        it = DistributedIterator(self._strategy, iter(self._dataset), split)
        it._element_spec = self.element_spec
        return it


def split_for_replicas(strategy, tensors):
    """Keras' global batch (flat tensors or arrays, batch first) split as experimental_distribute_dataset
    splits it: replica 0's parts, then replica 1's, ..., each on its replica's device."""
    from ember.framework.tensor import convert_to_tensor

    devices = strategy.extended.worker_devices
    n = len(devices)
    tensors = [convert_to_tensor(t) for t in tensors]
    rows = int(tensors[0].shape[0]) if tensors and tensors[0].shape.rank else 0
    per = max(1, -(-rows // n))
    out = []
    for i, device in enumerate(devices):
        start, stop = min(i * per, rows), min((i + 1) * per, rows)
        out.extend(_on_device(t[start:stop], device) for t in tensors)
    return out

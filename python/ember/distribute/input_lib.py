"""Distributed datasets: each element is one step's input for every replica, as PerReplica values.

``experimental_distribute_dataset(dataset)`` splits each global batch along its first dimension the way
TensorFlow's rebatching does: of a batch of ``B`` rows, every replica takes up to ``ceil(B / replicas)``
rows, in replica order, so the last replicas may get fewer rows, or none (an empty batch of the same element
shape): 9 rows on 4 replicas are 3+3+3+0, a last batch of 2 is 1+1+0+0.
``distribute_datasets_from_function(fn)`` calls ``fn`` with an InputContext and gives the replicas
consecutive elements of its dataset (already per-replica batches). Each replica's part is copied to its
device. "Replicas" here are this process's (a multi-process strategy shards the input between processes:
MultiWorkerMirroredStrategy.experimental_distribute_dataset, and ``split_for_replicas`` for Keras).
"""

from ember.distribute import distribute_lib, values as values_lib
from ember.distribute.values import on_device
from ember.util import nest


def _per_replica(strategy, parts):
    """One structure per replica -> one structure of PerReplica leaves, each part on its replica's device."""
    devices = strategy.extended.worker_devices
    placed = [nest.map_structure(lambda v, d=device: _on_device(v, d), part) for part, device in zip(parts, devices)]
    if len(placed) == 1:
        return placed[0]
    flats = [nest.flatten(p) for p in placed]
    leaves = [values_lib.PerReplica(items) for items in zip(*flats)]
    return nest.pack_sequence_as(placed[0], leaves)


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


class DistributedDataset:
    """``strategy.experimental_distribute_dataset(dataset)``: iterate it eagerly (``for x in dist:``)."""

    def __init__(self, strategy, dataset, options=None):
        if not hasattr(dataset, "element_spec"):
            raise TypeError("experimental_distribute_dataset: expected a tf.data.Dataset, got "
                            f"{type(dataset).__name__}")
        self._strategy = strategy
        self._dataset = dataset
        self._options = options

    @property
    def element_spec(self):
        n = len(self._strategy.extended.worker_devices)  # this process's replicas
        spec = self._dataset.element_spec
        return spec if n == 1 else nest.map_structure(lambda s: values_lib.PerReplica([s] * n), spec)

    def _split(self, element):
        """One global batch -> its PerReplica structure (symbolic bounds when the batch size is unknown, as
        while tracing)."""
        from ember.ops import array_ops, math_ops

        n = len(self._strategy.extended.worker_devices)  # this process's replicas
        flat = nest.flatten(element)
        if not flat or not flat[0].shape.rank:
            raise ValueError("experimental_distribute_dataset: the dataset's elements must be batched (the global "
                             "batch is split along its first dimension); call dataset.batch(...) first")
        rows = flat[0].shape[0]
        if rows is not None:
            per = max(1, -(-int(rows) // n))
            bounds = [(min(i * per, rows), min((i + 1) * per, rows)) for i in range(n)]
        else:
            rows = array_ops.shape(flat[0])[0]
            per = math_ops.maximum((rows + (n - 1)) // n, 1)
            bounds = [(math_ops.minimum(per * i, rows), math_ops.minimum(per * (i + 1), rows)) for i in range(n)]
        parts = [nest.pack_sequence_as(element, [v[start:stop] for v in flat]) for start, stop in bounds]
        return _per_replica(self._strategy, parts)

    def __iter__(self):
        it = DistributedIterator(self._strategy, iter(self._dataset), lambda iterator: self._split(next(iterator)))
        it._element_spec = self.element_spec
        return it

    def _ember_staged_for(self, extra_test, body, get_state, set_state, symbol_names, opts):
        """AutoGraph's ``for batch in dist_dataset`` inside ember.function: the dataset's staged loop, each
        element split for the replicas inside the graph."""
        self._dataset._ember_staged_for(extra_test, lambda element: body(self._split(element)), get_state,
                                        set_state, symbol_names, opts)


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
        n = len(self._strategy.extended.worker_devices)  # this process's replicas
        spec = self._dataset.element_spec
        return spec if n == 1 else nest.map_structure(lambda s: values_lib.PerReplica([s] * n), spec)

    def __iter__(self):
        from ember import _C

        if _C.in_trace():
            raise NotImplementedError("distribute_datasets_from_function: iterating inside ember.function is not "
                                      "supported yet; iterate eagerly and pass each element to the function")
        n = len(self._strategy.extended.worker_devices)  # this process's replicas

        def split(iterator):
            parts = [next(iterator)]  # StopIteration here ends the distributed iteration
            for _ in range(n - 1):
                try:
                    parts.append(next(iterator))
                except StopIteration:
                    parts.append(nest.map_structure(lambda v: v[0:0], parts[0]))
            return _per_replica(self._strategy, parts)

        it = DistributedIterator(self._strategy, iter(self._dataset), split)
        it._element_spec = self.element_spec
        return it


def worker_share(strategy):
    """(rank, number of workers) of a multi-process strategy's worker; (0, 1) in one process."""
    extended = strategy.extended
    return getattr(extended, "_rank", 0), getattr(extended, "_num_workers", 1)


def split_for_replicas(strategy, tensors):
    """Keras' global batch (flat tensors or arrays, batch first) split as experimental_distribute_dataset
    splits it: across processes first (worker i of n takes rows [i*ceil(B/n), (i+1)*ceil(B/n)) of a batch
    of B, TensorFlow's data sharding of a rebatched dataset), then over this worker's replicas: replica 0's
    parts, then replica 1's, ..., each on its replica's device."""
    from ember.framework.tensor import convert_to_tensor

    devices = strategy.extended.worker_devices
    n = len(devices)
    tensors = [convert_to_tensor(t) for t in tensors]
    rows = int(tensors[0].shape[0]) if tensors and tensors[0].shape.rank else 0
    rank, num_workers = worker_share(strategy)
    if num_workers > 1:
        per_worker = -(-rows // num_workers)
        start, stop = min(rank * per_worker, rows), min((rank + 1) * per_worker, rows)
        tensors = [t[start:stop] for t in tensors]
        rows = stop - start
    per = max(1, -(-rows // n))
    out = []
    for i, device in enumerate(devices):
        start, stop = min(i * per, rows), min((i + 1) * per, rows)
        out.extend(_on_device(t[start:stop], device) for t in tensors)
    return out

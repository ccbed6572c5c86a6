"""tf.distribute.MultiWorkerMirroredStrategy: synchronous data parallelism across worker processes.

Each worker process holds one replica (its CPU) and the same variables; `run` calls the step on the worker's
share of the global batch; gradients and `reduce` go across the workers through the collective ops on
Gloo (collective_all_reduce.py, docs/distribute.md "Across processes"). The workers find each other from
TF_CONFIG (or mpirun's environment) through the cluster resolver; `communication_options.timeout_seconds`
bounds every collective, so a worker that dies makes the others raise ember.errors.UnavailableError (or
DeadlineExceededError) instead of hanging.
"""

import contextlib
import threading

from ember.distribute import collective_ops
from ember.distribute.cluster_resolver import TFConfigClusterResolver
from ember.distribute.collective_all_reduce import CollectiveAllReduce
from ember.distribute.collective_util import CommunicationOptions
from ember.framework.tensor import convert_to_tensor
from ember.ops import math_ops

__all__ = ["MultiWorkerMirroredStrategy"]

_local = threading.local()


def _current():
    return getattr(_local, "strategy", None), getattr(_local, "replica", None)


class ReplicaContext:
    """What the step sees inside `strategy.run`: its replica id and the cross-replica all-reduce."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a tensor or a nest of tensors) reduced over every replica of every worker."""
        flat, rebuild = _flatten(value)
        reduced = self._strategy.extended._cross_device_ops.batch_reduce(
            reduce_op, [(v, None) for v in flat], options)
        return rebuild(reduced)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        parts = [_flatten(v) for v in value]
        flat = [t for p, _ in parts for t in p]

        def rebuild(ts):
            out, i = [], 0
            for p, r in parts:
                out.append(r(ts[i:i + len(p)]))
                i += len(p)
            return type(value)(out)
        return flat, rebuild
    if isinstance(value, dict):
        keys = sorted(value)
        flat, rebuild = _flatten([value[k] for k in keys])
        return flat, lambda ts: dict(zip(keys, rebuild(ts)))
    return [value], lambda ts: ts[0]


class MultiWorkerExtended:
    """strategy.extended: the cross-process reduction and the worker's place in the cluster."""

    def __init__(self, strategy, cross_device_ops):
        self._strategy = strategy
        self._cross_device_ops = cross_device_ops

    @property
    def worker_devices(self):
        return ("/job:worker/replica:0/task:%d/device:CPU:0" % self._strategy._rank,)

    @property
    def parameter_devices(self):
        return self.worker_devices

    @property
    def experimental_between_graph(self):
        return True

    @property
    def experimental_should_init(self):
        return True

    @property
    def should_checkpoint(self):
        return self._strategy._rank == 0

    @property
    def should_save_summary(self):
        return self._strategy._rank == 0

    def reduce_to(self, reduce_op, value, destinations, options=None):
        return self._cross_device_ops.reduce(reduce_op, value, destinations, options)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        return self._cross_device_ops.batch_reduce(reduce_op, value_destination_pairs, options)


class MultiWorkerMirroredStrategy:
    """Synchronous training on one replica per worker process (TensorFlow's API).

        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(timeout_seconds=60))
        with strategy.scope():
            model = ...
        loss = strategy.run(step, args=(local_batch,))
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        if communication_options is not None and not isinstance(communication_options, CommunicationOptions):
            raise ValueError("communication_options must be a tf.distribute.experimental.CommunicationOptions, "
                             f"got {type(communication_options).__name__}")
        self._options = CommunicationOptions().merge(communication_options)
        self._cluster_resolver = cluster_resolver or TFConfigClusterResolver()
        self._rank, self._size = collective_ops.initialize(self._cluster_resolver,
                                                           timeout_seconds=self._options.timeout_seconds)
        self.extended = MultiWorkerExtended(
            self, CollectiveAllReduce(self._options.bytes_per_pack, self._options.timeout_seconds))

    @property
    def cluster_resolver(self):
        return self._cluster_resolver

    @property
    def num_replicas_in_sync(self):
        return self._size

    @contextlib.contextmanager
    def scope(self):
        previous = _current()
        _local.strategy, _local.replica = self, None
        try:
            yield self
        finally:
            _local.strategy, _local.replica = previous

    def run(self, fn, args=(), kwargs=None, options=None):
        """Calls `fn(*args, **kwargs)` as this worker's replica (inside ember.function too)."""
        previous = _current()
        _local.strategy, _local.replica = self, ReplicaContext(self, self._rank)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            _local.strategy, _local.replica = previous

    def reduce(self, reduce_op, value, axis=None):
        """`value` reduced over the replicas of every worker; with `axis`, over that axis of each first
        (MEAN then divides by the global number of elements along it)."""
        name = str(getattr(reduce_op, "value", reduce_op)).upper()
        flat, rebuild = _flatten(value)
        out = []
        for v in flat:
            v = convert_to_tensor(v)
            if axis is None:
                out.append(self.extended._cross_device_ops.reduce(reduce_op, v))
                continue
            local = math_ops.reduce_sum(v, axis=axis)
            total = self.extended._cross_device_ops.reduce("SUM", local)
            if name == "MEAN":
                count = self.extended._cross_device_ops.reduce(
                    "SUM", convert_to_tensor(float(v.shape[axis]) if v.shape[axis] is not None else
                                             math_ops.cast(__import__("ember").shape(v)[axis], v.dtype),
                                             dtype=v.dtype))
                total = total / count
            out.append(total)
        return rebuild(out)

    def experimental_distribute_dataset(self, dataset, options=None):
        """Each worker's share of every global batch: worker i takes rows [i*b/n, (i+1)*b/n)."""
        return _WorkerShard(dataset, self._rank, self._size)

    def gather(self, value, axis=0):
        """Every worker's `value` concatenated along `axis` (0 only)."""
        if axis != 0:
            raise ValueError(f"MultiWorkerMirroredStrategy.gather: only axis 0 is supported, got {axis}")
        return collective_ops.all_gather(value)


class _WorkerShard:
    def __init__(self, dataset, rank, size):
        self._dataset, self._rank, self._size = dataset, rank, size

    def __iter__(self):
        for batch in self._dataset:
            yield _slice(batch, self._rank, self._size)


def _slice(batch, rank, size):
    flat, rebuild = _flatten(batch)
    out = []
    for t in flat:
        n = t.shape[0]
        if n % size:
            raise ValueError(f"experimental_distribute_dataset: a global batch of {n} does not split evenly over "
                             f"{size} workers")
        b = n // size
        out.append(t[rank * b:(rank + 1) * b])
    return rebuild(out)


def get_replica_context():
    """The replica context inside `strategy.run`, else None (in cross-replica context or no strategy)."""
    return _current()[1]


def get_strategy():
    return _current()[0]

"""tf.distribute.MultiWorkerMirroredStrategy: synchronous data parallelism across worker processes.

MirroredStrategy (mirrored_strategy.py) over this worker's devices (its CPU), with two changes
(docs/distribute.md, sections 5 and 8): the cross-device ops also all-reduce across the workers
(collective_all_reduce.py, on the collective ops and Gloo), and `num_replicas_in_sync` counts the replicas of
every worker. The workers find each other from TF_CONFIG (or mpirun's environment) through the cluster
resolver; `communication_options.timeout_seconds` bounds every collective, so a worker that dies makes the
others raise ember.errors.UnavailableError (or DeadlineExceededError) instead of hanging.

Variables created in the scope start from the chief's (rank 0) initial values, broadcast when they are
created, as TensorFlow's do; every worker must create them in the same order. Distributed datasets give each
worker its share of every global batch (rows [i*b/n, (i+1)*b/n) of a batch of b on worker i of n).
"""

from ember.distribute import collective_ops
from ember.distribute.cluster_resolver import TFConfigClusterResolver
from ember.distribute.collective_all_reduce import CollectiveAllReduce
from ember.distribute.collective_util import CommunicationOptions
from ember.distribute.mirrored_strategy import MirroredExtended, MirroredStrategy

__all__ = ["MultiWorkerMirroredStrategy"]


class MultiWorkerExtended(MirroredExtended):
    def __init__(self, container_strategy, devices, cross_device_ops, rank, num_workers):
        super().__init__(container_strategy, devices, cross_device_ops)
        self._rank = rank
        self._num_workers = num_workers

    def _num_replicas_in_sync(self):
        return len(self._devices) * self._num_workers

    @property
    def experimental_between_graph(self):
        return True

    @property
    def experimental_should_init(self):
        return True

    @property
    def should_checkpoint(self):
        return self._rank == 0

    @property
    def should_save_summary(self):
        return self._rank == 0

    def _create_variable(self, next_creator, **kwargs):
        if self._num_workers > 1 and kwargs.get("initial_value") is not None:
            initial_value = kwargs["initial_value"]

            def from_chief(initial_value=initial_value):
                value = initial_value() if callable(initial_value) else initial_value
                return collective_ops.broadcast(value, root=0)

            kwargs["initial_value"] = from_chief
        return super()._create_variable(next_creator, **kwargs)


class MultiWorkerMirroredStrategy(MirroredStrategy):
    """Synchronous training on the replicas of every worker process (TensorFlow's API).

        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(timeout_seconds=60))
        with strategy.scope():
            model = ...
        loss = strategy.run(step, args=(batch,))
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        if communication_options is not None and not isinstance(communication_options, CommunicationOptions):
            raise ValueError("communication_options must be a tf.distribute.experimental.CommunicationOptions, "
                             f"got {type(communication_options).__name__}")
        self._communication_options = CommunicationOptions().merge(communication_options)
        self._cluster_resolver = cluster_resolver or TFConfigClusterResolver()
        rank, num_workers = collective_ops.initialize(
            self._cluster_resolver, timeout_seconds=self._communication_options.timeout_seconds)
        ops = CollectiveAllReduce(self._communication_options.bytes_per_pack,
                                  self._communication_options.timeout_seconds)
        super().__init__(["cpu:0"], cross_device_ops=ops)
        # MirroredStrategy built its extended for the local device; this one also knows the other workers.
        self._extended = MultiWorkerExtended(self, self._extended.worker_devices, ops, rank, num_workers)

    @property
    def cluster_resolver(self):
        return self._cluster_resolver

    def experimental_distribute_dataset(self, dataset, options=None):
        """Each worker's share of every global batch, split over its replicas as MirroredStrategy splits."""
        num_workers, rank = self._extended._num_workers, self._extended._rank
        if num_workers > 1:
            dataset = dataset.map(lambda *batch: _worker_share(batch, rank, num_workers))
        return super().experimental_distribute_dataset(dataset, options)

    def gather(self, value, axis):
        """The replicas' values of every worker concatenated along `axis` (0 across workers)."""
        local = super().gather(value, axis)
        if self._extended._num_workers == 1:
            return local
        if axis != 0:
            raise ValueError(f"MultiWorkerMirroredStrategy.gather: only axis 0 is supported across workers, "
                             f"got {axis}")
        return collective_ops.all_gather(local)

    def __repr__(self):
        return (f"<tf.distribute.MultiWorkerMirroredStrategy worker {self._extended._rank} of "
                f"{self._extended._num_workers}>")


def _worker_share(batch, rank, num_workers):
    import ember as tf
    from ember.util import nest

    def share(t):
        n = tf.shape(t)[0]
        per = (n + num_workers - 1) // num_workers
        start = tf.minimum(rank * per, n)
        return t[start:tf.minimum(start + per, n)]

    out = nest.map_structure(share, batch)
    return out[0] if len(out) == 1 else out

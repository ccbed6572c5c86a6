"""Reductions across worker processes for MultiWorkerMirroredStrategy: TensorFlow's CrossDeviceOps
(`reduce`, `batch_reduce`, cross_device_ops.py) on the collective ops.

Each value is first summed over this process's replicas (`_local_sum`), then all-reduced across the workers,
then divided by the global replica count for MEAN. `batch_reduce` packs its values into buckets of at most
`bytes_per_pack` bytes (one dtype per bucket) and runs one all-reduce per bucket instead of one per tensor,
as PyTorch's DDP and TensorFlow's CollectiveAllReduce do.

The buckets overlap the backward pass, as DDP's do (docs/distribute.md, "Overlapping the backward pass"):
they are filled in the reverse of the order given (an optimizer lists the variables in the order the
forward pass uses them, so the last layers' gradients, ready first, fill the first bucket), the first
bucket holds at most 1 MiB (DDP's first bucket) so that it is ready early, and each bucket's all-reduce is
started on the collective thread (`start_all_reduce`) before any is waited for. Inside ember.function a
start runs as soon as its bucket's gradients are computed, while the rest of the backward pass runs.
"""

from ember.distribute import collective_ops, reduce_util
from ember.distribute.cross_device_ops import ReductionToOneDevice, _values_of
from ember.distribute.values import on_device

DEFAULT_BYTES_PER_PACK = 4 << 20
FIRST_BUCKET_BYTES = 1 << 20  # PyTorch DDP's first bucket: small, so the last layers' gradients go early

__all__ = ["CollectiveAllReduce"]


class CollectiveAllReduce(ReductionToOneDevice):
    """Sums (or averages) values over every replica of every worker process."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None):
        super().__init__()
        self._bytes_per_pack = bytes_per_pack or DEFAULT_BYTES_PER_PACK
        self._first_bucket_bytes = min(FIRST_BUCKET_BYTES, self._bytes_per_pack)
        self._timeout = timeout_seconds or 0

    @property
    def num_workers(self):
        return collective_ops.group_size()

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        return self.batch_reduce_implementation(reduce_op, [(per_replica_value, destinations)], options)[0]

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        timeout = getattr(options, "timeout_seconds", None) or self._timeout
        sums, replicas = [], []
        for value, devices in value_destination_pairs:
            values = _values_of(value)
            sums.append(self._local_sum(values, devices[0]))
            replicas.append(len(values) * self.num_workers)
        reduced = self._all_reduce_packed(sums, timeout)
        out = []
        for total, count, (_, devices) in zip(reduced, replicas, value_destination_pairs):
            if reduce_op == reduce_util.ReduceOp.MEAN:
                total = _mean(total, count, devices[0])
            out.append(self._broadcast(total, devices))
        return out

    def _buckets(self, tensors):
        """Lists of indices into `tensors`, taken in reverse order: each bucket one dtype and at most
        bytes_per_pack (the first at most FIRST_BUCKET_BYTES), or a single tensor."""
        buckets, current, current_bytes, current_dtype = [], [], 0, None
        for i in reversed(range(len(tensors))):
            t = tensors[i]
            cap = self._first_bucket_bytes if not buckets else self._bytes_per_pack
            nbytes = t.shape.num_elements() * t.dtype.size if t.shape.is_fully_defined() else None
            if nbytes is None:  # a dynamic shape travels alone
                if current:
                    buckets.append(current)
                buckets.append([i])
                current, current_bytes, current_dtype = [], 0, None
                continue
            if current and (t.dtype != current_dtype or current_bytes + nbytes > cap):
                buckets.append(current)
                current, current_bytes = [], 0
            current.append(i)
            current_bytes += nbytes
            current_dtype = t.dtype
        if current:
            buckets.append(current)
        return buckets

    def _all_reduce_packed(self, tensors, timeout):
        from ember.ops import array_ops

        if self.num_workers == 1:
            return list(tensors)
        # Every bucket is started before any is waited for: inside ember.function each start then runs as
        # soon as its gradients exist (it is scheduled early), overlapping the rest of the backward pass.
        started = []
        for bucket in self._buckets(tensors):
            if len(bucket) == 1:
                flat = tensors[bucket[0]]
            else:
                flat = array_ops.concat([array_ops.reshape(tensors[i], [-1]) for i in bucket], 0)
            started.append((bucket, flat, collective_ops.start_all_reduce(flat, "sum", timeout=timeout)))
        out = [None] * len(tensors)
        for bucket, flat, handle in started:
            total = collective_ops.wait_all_reduce(handle, flat)
            if len(bucket) == 1:
                out[bucket[0]] = total
                continue
            sizes = [tensors[i].shape.num_elements() for i in bucket]
            for i, piece in zip(bucket, array_ops.split(total, sizes)):
                out[i] = array_ops.reshape(piece, tensors[i].shape.as_list())
        return out


def _mean(total, count, device):
    from ember.ops import math_ops

    with on_device(device):
        if total.dtype.is_floating:
            return total / math_ops.cast(count, total.dtype)
        return math_ops.cast(total, "float64") / float(count)  # TensorFlow's MEAN of integers is float64

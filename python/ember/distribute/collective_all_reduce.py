"""Reductions across worker processes for MultiWorkerMirroredStrategy: TensorFlow's CrossDeviceOps
interface (`reduce`, `batch_reduce`) on the collective ops.

`batch_reduce` packs its values into buckets of at most `bytes_per_pack` bytes (one dtype per bucket, in the
order given: a model's gradients arrive last layer first, as the backward pass produces them, so the first
bucket is the first one ready) and runs one all-reduce per bucket instead of one per tensor, as PyTorch's DDP
and TensorFlow's CollectiveAllReduce do. A value holding several replicas of this process (a PerReplica of
MirroredStrategy's local devices) is summed locally first, so each process sends one copy.
"""

from ember.distribute import collective_ops
from ember.ops import array_ops, math_ops
from ember.framework.tensor import convert_to_tensor

DEFAULT_BYTES_PER_PACK = 4 << 20


def _reduce_op_name(reduce_op):
    name = str(getattr(reduce_op, "value", reduce_op)).upper()
    if name not in ("SUM", "MEAN"):
        raise ValueError(f"reduce_op must be ReduceOp.SUM or ReduceOp.MEAN, got {reduce_op!r}")
    return name


def _local_values(value):
    values = getattr(value, "values", None)
    if isinstance(values, (list, tuple)):
        return list(values)
    return [value]


def _local_sum(value):
    values = [convert_to_tensor(v) for v in _local_values(value)]
    return values[0] if len(values) == 1 else math_ops.add_n(values), len(values)


class CollectiveAllReduce:
    """Sums (or averages) values over every replica of every worker process."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None):
        self._bytes_per_pack = bytes_per_pack or DEFAULT_BYTES_PER_PACK
        self._timeout = timeout_seconds or 0

    @property
    def num_workers(self):
        return collective_ops.group_size()

    def reduce(self, reduce_op, per_replica_value, destinations=None, options=None):
        return self.batch_reduce(reduce_op, [(per_replica_value, destinations)], options)[0]

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        op = _reduce_op_name(reduce_op)
        timeout = getattr(options, "timeout_seconds", None) or self._timeout
        sums, local_replicas = [], []
        for value, _ in value_destination_pairs:
            total, count = _local_sum(value)
            sums.append(total)
            local_replicas.append(count)
        replicas = sum(local_replicas) // max(len(local_replicas), 1) * self.num_workers if sums else 1
        reduced = self._all_reduce_packed(sums, timeout)
        if op == "MEAN":
            reduced = [r / replicas if r.dtype.is_floating else r // replicas for r in reduced]
        return reduced

    def _buckets(self, tensors):
        """Lists of indices into `tensors`, each list one dtype and at most bytes_per_pack (or one tensor)."""
        buckets, current, current_bytes, current_dtype = [], [], 0, None
        for i, t in enumerate(tensors):
            size = t.shape.num_elements() if t.shape.is_fully_defined() else None
            nbytes = None if size is None else size * t.dtype.size
            if nbytes is None:  # a dynamic shape travels alone
                if current:
                    buckets.append(current)
                buckets.append([i])
                current, current_bytes, current_dtype = [], 0, None
                continue
            if current and (t.dtype != current_dtype or current_bytes + nbytes > self._bytes_per_pack):
                buckets.append(current)
                current, current_bytes = [], 0
            current.append(i)
            current_bytes += nbytes
            current_dtype = t.dtype
        if current:
            buckets.append(current)
        return buckets

    def _all_reduce_packed(self, tensors, timeout):
        if self.num_workers == 1:
            return list(tensors)
        out = [None] * len(tensors)
        for bucket in self._buckets(tensors):
            if len(bucket) == 1:
                i = bucket[0]
                out[i] = collective_ops.all_reduce(tensors[i], "sum", timeout=timeout)
                continue
            flat = array_ops.concat([array_ops.reshape(tensors[i], [-1]) for i in bucket], 0)
            total = collective_ops.all_reduce(flat, "sum", timeout=timeout)
            sizes = [tensors[i].shape.num_elements() for i in bucket]
            for i, piece in zip(bucket, array_ops.split(total, sizes)):
                out[i] = array_ops.reshape(piece, tensors[i].shape.as_list())
        return out

    def broadcast(self, tensor, root=0):
        return collective_ops.broadcast(tensor, root=root, timeout=self._timeout)

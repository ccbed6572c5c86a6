"""``tf.distribute.CrossDeviceOps``: the one place where replicas' values are combined.

Every cross-replica reduction of a strategy (``strategy.reduce``, ``ReplicaContext.all_reduce``, the
gradient all-reduce of an optimizer's ``apply_gradients``, writes to SUM/MEAN mirrored variables) goes
through ``strategy.extended._cross_device_ops``:

- ``reduce(reduce_op, per_replica_value, destinations)`` -> ``Mirrored``: the reduction of the replicas'
  values, one copy per destination device;
- ``batch_reduce(reduce_op, value_destination_pairs)`` -> a list of ``Mirrored``, one per pair (the
  gradients of one step go together, so an implementation may fuse them into buckets).

Both validate their arguments and call ``reduce_implementation`` / ``batch_reduce_implementation``, which a
subclass overrides. The default, ``ReductionToOneDevice``, adds the values in this process on the first
destination device and copies the sum to the others. A multi-process strategy (MultiWorkerMirroredStrategy)
subclasses it: it reduces the local replicas with ``_local_sum``, all-reduces that sum across processes, and
divides by the global replica count for MEAN (``num_replicas`` below is the local count only).

``destinations`` is a device string, a list of them, or a distributed variable / value (its devices).
"""

from ember.distribute import reduce_util
from ember.distribute.values import on_device, DistributedValues, DistributedVariable, Mirrored


def _devices_of(destinations):
    if isinstance(destinations, str):
        return [destinations]
    if isinstance(destinations, DistributedVariable):
        return list(destinations._devices())
    if isinstance(destinations, DistributedValues):
        devices = [getattr(v, "device", "") for v in destinations.values]
        return devices if all(devices) else [""] * len(devices)
    if isinstance(destinations, (list, tuple)) and all(isinstance(d, str) for d in destinations):
        if not destinations:
            raise ValueError("CrossDeviceOps: destinations is an empty list of devices")
        return list(destinations)
    if getattr(destinations, "_ember_variable", False):
        return [destinations.device]
    raise ValueError(f"CrossDeviceOps: destinations must be a device string, a list of device strings, or a "
                     f"distributed variable/value; got {destinations!r}")


def _values_of(per_replica_value):
    if isinstance(per_replica_value, DistributedValues):
        return list(per_replica_value.values)
    return [per_replica_value]  # one replica (TensorFlow accepts a plain tensor there)


class CrossDeviceOps:
    """The base: argument checks, then the ``*_implementation`` methods a subclass provides."""

    def reduce(self, reduce_op, per_replica_value, destinations, options=None):
        reduce_op = reduce_util.as_reduce_op(reduce_op, "CrossDeviceOps.reduce")
        devices = _devices_of(destinations)
        return self.reduce_implementation(reduce_op, per_replica_value, devices, options)

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        reduce_op = reduce_util.as_reduce_op(reduce_op, "CrossDeviceOps.batch_reduce")
        pairs = list(value_destination_pairs)
        for pair in pairs:
            if isinstance(pair, DistributedValues) or not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"CrossDeviceOps.batch_reduce: expected (value, destinations) pairs, got {pair!r}")
        resolved = [(value, _devices_of(destinations)) for value, destinations in pairs]
        return self.batch_reduce_implementation(reduce_op, resolved, options)

    def broadcast(self, tensor, destinations):
        return self._broadcast(tensor, _devices_of(destinations))

    # ---- to override
    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        raise NotImplementedError(f"{type(self).__name__} must implement reduce_implementation")

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        return [self.reduce_implementation(reduce_op, value, devices, options)
                for value, devices in value_destination_pairs]

    # ---- helpers for implementations
    @staticmethod
    def _local_sum(values, device):
        """The sum of this process's replica values, computed on ``device``."""
        from ember.ops import math_ops

        with on_device(device):
            return values[0] if len(values) == 1 else math_ops.add_n(list(values))

    @staticmethod
    def _broadcast(tensor, devices):
        from ember.ops import array_ops

        copies = []
        for i, device in enumerate(devices):
            if i == 0:
                copies.append(tensor)
                continue
            with on_device(device):
                copies.append(array_ops.identity(tensor))  # the copy lives on (is read from) that device
        return Mirrored(copies)


class ReductionToOneDevice(CrossDeviceOps):
    """Adds the replicas' values on one device (``reduce_to_device``, else the first destination) and copies
    the result to every destination: the in-process default."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self._reduce_to_device = reduce_to_device
        self._accumulation_fn = accumulation_fn

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        values = _values_of(per_replica_value)
        device = self._reduce_to_device or destinations[0]
        if self._accumulation_fn is not None:
            with on_device(device):
                total = self._accumulation_fn(values)
        else:
            total = self._local_sum(values, device)
        if reduce_op == reduce_util.ReduceOp.MEAN:
            total = _divide(total, len(values), device)
        return self._broadcast(total, destinations)


def _divide(total, count, device):
    from ember.ops import math_ops

    with on_device(device):
        if total.dtype.is_floating:
            return total / math_ops.cast(count, total.dtype)
        return math_ops.cast(total, "float64") / float(count)  # TensorFlow's MEAN of integers is float64


class HierarchicalCopyAllReduce(ReductionToOneDevice):
    """TensorFlow's GPU-tree all-reduce; on this process's devices it reduces as ReductionToOneDevice."""

    def __init__(self, num_packs=1):
        super().__init__()
        self._num_packs = num_packs


class NcclAllReduce(ReductionToOneDevice):
    """TensorFlow's NCCL all-reduce; without GPUs it reduces as ReductionToOneDevice."""

    def __init__(self, num_packs=1):
        super().__init__()
        self._num_packs = num_packs

"""Distributed values: one value per replica.

``PerReplica`` holds what each replica computed (``strategy.run``'s results, a distributed dataset's
batches); ``Mirrored`` holds copies known to be equal (a reduction's result on each device). Distributed
variables are ember.Variables with one component Variable per device:

- ``MirroredVariable`` (``synchronization`` ON_WRITE or AUTO): the copies stay equal. A replica reads its own
  copy; a write in cross-replica context writes every copy; a write in replica context follows the
  variable's ``aggregation`` as TensorFlow's does: NONE writes the replica's own copy only, SUM/MEAN reduce
  the replicas' values (through the strategy's cross-device ops) and write the result to every copy,
  ONLY_FIRST_REPLICA writes replica 0's value to every copy.
- ``SyncOnReadVariable`` (``synchronization=ON_READ``, Keras metrics' kind): each replica updates its own
  copy; a read in cross-replica context aggregates them (SUM adds, MEAN averages, else the first), and a
  write there gives each copy its share (``value / replicas`` for SUM), so the aggregated read returns it.

A distributed variable names the component of the current replica (``_id``), so ReadVariableOp,
GradientTape and ember.function see an ordinary variable inside ``strategy.run``, and the primary copy
(device 0) in cross-replica context: that is the one a checkpoint saves, and a restore assigns every copy.
"""

from ember import device_scope
from ember.variables import Variable, VariableAggregation, VariableSynchronization


def on_device(name):
    """``tf.device(name)``; no scope at all for '' (the default strategy's device is whatever is current)."""
    import contextlib

    return device_scope.device(name) if name else contextlib.nullcontext()


def _context():
    from ember.distribute import distribute_lib

    return distribute_lib


class DistributedValues(tuple):
    """A value per replica; ``values`` in replica order.

    A tuple of its values, so that ember.function and ``tf.nest``-style code see the tensors inside (a
    PerReplica argument of a function is traced as its components, and rebuilt as a PerReplica).
    """

    def __new__(cls, values):
        return super().__new__(cls, values)

    @property
    def values(self):
        return tuple(self)

    def _get(self):
        """The current replica's value (the first one in cross-replica context)."""
        replica = _context()._current_replica_id()
        return self[replica] if replica is not None and replica < len(self) else self[0]

    def _primary(self):
        return self[0]

    def __repr__(self):
        body = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self))
        return f"{type(self).__name__}:{{\n{body}\n}}"

    __str__ = __repr__


class PerReplica(DistributedValues):
    """What each replica computed (``strategy.run``'s outputs, a distributed dataset's batch)."""


class Mirrored(DistributedValues):
    """Copies of one value, one per device."""


# ---- distributed variables
class DistributedVariable(Variable):
    """A variable with one component per device (see the module docstring)."""

    def __init__(self, strategy, components, aggregation):
        self._strategy = strategy
        self._components = tuple(components)
        primary = self._components[0]
        self._aggregation = VariableAggregation(aggregation or VariableAggregation.NONE)
        self._dtype = primary.dtype
        self._shape = primary.shape
        self._shape_list = primary._shape_list
        self._unknown_rank = primary._unknown_rank
        self._name = primary.name
        self._trainable = primary.trainable
        self.constraint = getattr(primary, "constraint", None)

    # The component of the current replica: reads, gradients and traced graphs name its resource.
    def _get(self):
        replica = _context()._current_replica_id(self._strategy)
        return self._components[replica] if replica is not None else self._components[0]

    @property
    def _id(self):
        return self._get()._id

    @property
    def _handle(self):
        return self._get()._handle

    @property
    def values(self):
        return self._components

    def _primary(self):
        return self._components[0]

    @property
    def device(self):
        return self._get().device

    @property
    def distribute_strategy(self):
        return self._strategy

    def _devices(self):
        return self._strategy.extended.worker_devices

    def _in_replica_context(self):
        return _context()._current_replica_id(self._strategy) is not None

    def _write_each(self, method, value):
        """Cross-replica write: every component, each under its own device."""
        for device, component in zip(self._devices(), self._components):
            with on_device(device):
                getattr(component, method)(value)
        return self

    def __repr__(self):
        body = ",\n".join(f"  {i}: {c!r}" for i, c in enumerate(self._components))
        return f"{type(self).__name__}:{{\n{body}\n}}"


class MirroredVariable(DistributedVariable):
    _synchronization = VariableSynchronization.ON_WRITE

    def _update(self, method, value):
        if not self._in_replica_context():
            return self._write_each(method, value)
        if self._aggregation == VariableAggregation.NONE:
            getattr(self._get(), method)(value)  # TensorFlow writes the replica's own copy, unsynchronized
            return self
        context = _context().get_replica_context()
        return context.merge_call(_merged_update, args=(self, method, value))

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._update("assign", value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_add", delta)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_sub", delta)


def _merged_update(strategy, variable, method, value):
    """merge_call body of a replica-context write to a MirroredVariable with SUM/MEAN/ONLY_FIRST_REPLICA."""
    from ember.distribute.reduce_util import ReduceOp

    if variable._aggregation == VariableAggregation.ONLY_FIRST_REPLICA:
        reduced = value.values[0] if isinstance(value, DistributedValues) else value
    else:
        if not isinstance(value, DistributedValues):  # the same value in every replica (of every process)
            value = PerReplica([variable._value_for(value)] * len(variable._components))
        op = ReduceOp.SUM if variable._aggregation == VariableAggregation.SUM else ReduceOp.MEAN
        reduced = strategy.extended._cross_device_ops.reduce(op, value, destinations=variable).values[0]
    return variable._write_each(method, reduced)


class SyncOnReadVariable(DistributedVariable):
    _synchronization = VariableSynchronization.ON_READ

    def read_value(self):
        if self._in_replica_context():
            return self._get().read_value()
        from ember.ops import math_ops

        if self._aggregation in (VariableAggregation.SUM, VariableAggregation.MEAN):
            total = math_ops.add_n([c.read_value() for c in self._components])
            if self._num_workers() > 1:
                # TensorFlow's rule under MultiWorkerMirroredStrategy: reading an ON_READ variable
                # all-reduces it, so every worker must read it (Keras' logs, a checkpoint) in the same order.
                from ember.distribute import collective_ops

                total = collective_ops.all_reduce(total, "sum")
            if self._aggregation == VariableAggregation.MEAN:
                total = total / (len(self._components) * self._num_workers())
            return total
        return self._components[0].read_value()

    def _num_workers(self):
        return getattr(self._strategy.extended, "_num_workers", 1)

    def _as_tensor(self, dtype=None):
        if self._in_replica_context():
            return self._get()._as_tensor(dtype)
        return Variable._as_tensor(self, dtype)

    def _cross_replica_value(self, value):
        if self._aggregation == VariableAggregation.SUM:
            return self._value_for(value) / (len(self._components) * self._num_workers())
        return value

    def _update(self, method, value):
        if self._in_replica_context():
            getattr(self._get(), method)(value)
            return self
        return self._write_each(method, self._cross_replica_value(value))

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._update("assign", value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_add", delta)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_sub", delta)


# ---- structures of per-replica values (distributed values are leaves here, though they are tuples)
def _map(fn, structure):
    if isinstance(structure, DistributedValues) or not isinstance(structure, (list, tuple, dict)):
        return fn(structure)
    if isinstance(structure, dict):
        return type(structure)((k, _map(fn, v)) for k, v in structure.items())
    if hasattr(type(structure), "_fields"):
        return type(structure)(*[_map(fn, v) for v in structure])
    return type(structure)(_map(fn, v) for v in structure)


def _flatten(structure, leaves):
    if isinstance(structure, DistributedValues) or not isinstance(structure, (list, tuple, dict)):
        leaves.append(structure)
    elif isinstance(structure, dict):
        for k in structure:
            _flatten(structure[k], leaves)
    else:
        for v in structure:
            _flatten(v, leaves)
    return leaves


def _pack(structure, it):
    return _map(lambda _: next(it), structure)


def regroup(per_replica_structures, wrap=PerReplica):
    """Per-replica structures (same nesting) -> one structure whose leaves are ``wrap`` (PerReplica), or the
    leaf itself where every replica holds the same object (a variable, None, a Python value). One replica's
    structure is returned as it is, as TensorFlow does."""
    if len(per_replica_structures) == 1:
        return per_replica_structures[0]
    flats = [_flatten(s, []) for s in per_replica_structures]
    if any(len(f) != len(flats[0]) for f in flats):
        raise ValueError("tf.distribute: the replicas returned structures of different sizes: "
                         f"{[len(f) for f in flats]} values")
    leaves = []
    for items in zip(*flats):
        same = all(x is items[0] for x in items) or all(
            not hasattr(x, "dtype") and not isinstance(x, DistributedValues) and _equal(x, items[0]) for x in items)
        leaves.append(items[0] if same else wrap(items))
    return _pack(per_replica_structures[0], iter(leaves))


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a value without a plain truth value is not "the same"
        return False


def select_replica(replica_id, structure):
    """The replica's part of a structure whose leaves may be distributed values."""
    return _map(lambda x: x[replica_id] if isinstance(x, DistributedValues) else x, structure)


def local_results(structure, num_replicas):
    """A tuple with one structure per replica (``experimental_local_results``)."""
    return tuple(select_replica(i, structure) for i in range(num_replicas))

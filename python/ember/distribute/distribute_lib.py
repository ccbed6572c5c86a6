"""The strategy API shared by every ``tf.distribute`` strategy, and the contexts code runs in.

Code runs in one of two contexts, as in TensorFlow:

- **cross-replica**: inside ``strategy.scope()`` (and in a ``merge_call``): one Python call stands for all
  replicas; a distributed variable reads its primary copy and a write updates every copy.
- **replica**: inside ``strategy.run(fn)``, once per replica, each with its ``ReplicaContext`` (its id, the
  replica count, ``all_reduce``, ``merge_call``). Outside any strategy, code is in the *default replica
  context* of the *default strategy* (one replica, on the current device).

The context is a per-thread stack (``_stack``): MirroredStrategy runs each replica in a thread of its own
(mirrored_run.py), which starts with its replica context on top.
"""

import contextlib
import threading

from ember.distribute import reduce_util, values as values_lib
from ember.distribute.reduce_util import ReduceOp
from ember.distribute.values import on_device, DistributedValues, PerReplica

_local = threading.local()


class _Context:
    __slots__ = ("strategy", "replica")

    def __init__(self, strategy, replica):
        self.strategy = strategy
        self.replica = replica  # a ReplicaContext, or None in cross-replica context


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [_Context(_default_strategy(), _default_strategy()._default_replica_context)]
    return stack


@contextlib.contextmanager
def _pushed(context):
    stack = _stack()
    stack.append(context)
    try:
        yield
    finally:
        stack.pop()


def _current_replica_id(strategy=None):
    """The replica id of the current replica context of ``strategy`` (any strategy when None); None in
    cross-replica context, in the default replica context, or in another strategy's replica."""
    context = _stack()[-1]
    replica = context.replica
    if replica is None or context.strategy is _default_strategy():
        return None
    if strategy is not None and context.strategy is not strategy:
        return None
    return replica.replica_id_in_sync_group


# ---- the public context functions
def get_strategy():
    """The current strategy: the one whose scope (or ``run``) encloses this code, else the default one."""
    return _stack()[-1].strategy


def has_strategy():
    """Whether a strategy other than the default one is current."""
    return get_strategy() is not _default_strategy()


def in_cross_replica_context():
    return _stack()[-1].replica is None


def get_replica_context():
    """The current ReplicaContext; None in cross-replica context (inside ``strategy.scope()``)."""
    return _stack()[-1].replica


def get_cross_replica_context():
    """The current strategy in cross-replica context, else None (TensorFlow keeps this one internal)."""
    context = _stack()[-1]
    return context.strategy if context.replica is None else None


def experimental_set_strategy(strategy):
    """Makes ``strategy`` current for this thread without a ``with`` block; None goes back to the default."""
    previous = getattr(_local, "set_scope", None)
    if previous is not None:
        _local.set_scope = None
        previous.__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _local.set_scope = scope


# ---- InputContext
class InputContext:
    """What an input function needs to know to make its part of the input (``distribute_datasets_from_function``)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self._num_replicas_in_sync} ")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return (f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, total: "
                f"{self._num_input_pipelines})")


class InputReplicationMode:
    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputOptions:
    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode="PER_WORKER",
                 experimental_place_dataset_on_device=False, experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size


class RunOptions:
    def __init__(self, experimental_enable_dynamic_batch_size=True, experimental_bucketizing_dynamic_shape=False,
                 experimental_xla_options=None):
        self.experimental_enable_dynamic_batch_size = experimental_enable_dynamic_batch_size
        self.experimental_bucketizing_dynamic_shape = experimental_bucketizing_dynamic_shape
        self.experimental_xla_options = experimental_xla_options


# ---- ReplicaContext
class ReplicaContext:
    """The context of one replica inside ``strategy.run``: ``replica_id_in_sync_group``,
    ``num_replicas_in_sync``, ``all_reduce``, ``all_gather``, ``merge_call``."""

    def __init__(self, strategy, replica_id_in_sync_group, run=None):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group
        self._run = run  # mirrored_run's coordinator when replicas run in threads; None runs merge_fn inline

    @property
    def strategy(self):
        return self._strategy

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def devices(self):
        return (self._strategy.extended.worker_devices[self._replica_id],)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Calls ``merge_fn(strategy, *args, **kwargs)`` once, in cross-replica context, with each argument
        that differs between replicas as a PerReplica value; every replica gets its return value (its own
        part of a distributed one)."""
        kwargs = kwargs or {}
        if self._run is not None:
            return self._run.merge_call(self._replica_id, merge_fn, args, kwargs)
        with _pushed(_Context(self._strategy, None)):
            result = merge_fn(self._strategy, *args, **kwargs)
        return values_lib.select_replica(0, result)

    def all_reduce(self, reduce_op, value, options=None):
        """The reduction over all replicas of ``value`` (a tensor or a structure of them), in every replica."""
        reduce_op = reduce_util.as_reduce_op(reduce_op, "ReplicaContext.all_reduce")
        if self.num_replicas_in_sync == 1:
            return value

        def merge(strategy, value):
            leaves = values_lib._flatten(value, [])
            devices = strategy.extended.worker_devices
            reduced = strategy.extended.batch_reduce_to(reduce_op, [(v, devices) for v in leaves])
            return values_lib._pack(value, iter(reduced))

        return self.merge_call(merge, args=(value,))

    def all_gather(self, value, axis, options=None):
        """The replicas' values concatenated along ``axis``, in every replica."""
        if self.num_replicas_in_sync == 1:
            return value

        def merge(strategy, value):
            return values_lib._map(lambda v: strategy.extended._broadcast_gather(v, axis), value)

        return self.merge_call(merge, args=(value,))

    def __repr__(self):
        return f"<tf.distribute.ReplicaContext replica {self._replica_id} of {self.num_replicas_in_sync}>"


# ---- Strategy and StrategyExtended
class StrategyExtended:
    """The strategy's devices and its primitives (``strategy.extended``)."""

    def __init__(self, container_strategy, devices, cross_device_ops=None):
        self._container_strategy = container_strategy
        self._devices = tuple(devices)
        if cross_device_ops is None:
            from ember.distribute.cross_device_ops import ReductionToOneDevice

            cross_device_ops = ReductionToOneDevice()
        self._cross_device_ops = cross_device_ops

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def experimental_between_graph(self):
        return False

    @property
    def should_checkpoint(self):
        return True

    @property
    def should_save_summary(self):
        return True

    def _num_replicas_in_sync(self):
        return len(self._devices)

    def variable_created_in_scope(self, v):
        return getattr(v, "_strategy", None) is self._container_strategy

    def reduce_to(self, reduce_op, value, destinations, options=None):
        """``value`` reduced across replicas, as a Mirrored value on ``destinations``."""
        reduce_op = reduce_util.as_reduce_op(reduce_op, "reduce_to")
        value = self._as_per_replica(reduce_op, value)
        return self._cross_device_ops.reduce(reduce_op, value, destinations)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        reduce_op = reduce_util.as_reduce_op(reduce_op, "batch_reduce_to")
        pairs = [(self._as_per_replica(reduce_op, v), d) for v, d in value_destination_pairs]
        return self._cross_device_ops.batch_reduce(reduce_op, pairs)

    def _as_per_replica(self, reduce_op, value):
        # The local replicas' values (a multi-process subclass counts its global replicas in
        # _num_replicas_in_sync, but holds values for its own devices only).
        if isinstance(value, DistributedValues) or len(self._devices) == 1:
            return value
        if reduce_op == ReduceOp.MEAN:  # the same value in every replica
            return PerReplica([value] * len(self._devices))
        raise ValueError(f"A non-DistributedValues value {value!r} cannot be reduced with the given reduce op "
                         f"{reduce_op}.")

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Runs ``fn(component, *args)`` for each component of ``var`` (on its device); plain variables once."""
        kwargs = kwargs or {}
        if isinstance(var, values_lib.DistributedVariable):
            results = []
            for i, (device, component) in enumerate(zip(self._devices, var.values)):
                with on_device(device):
                    results.append(fn(component, *values_lib.select_replica(i, args), **kwargs))
            return results[0] if group else values_lib.Mirrored(results)
        return fn(var, *args, **kwargs)

    def _broadcast_gather(self, value, axis):
        from ember.ops import array_ops

        parts = list(value) if isinstance(value, DistributedValues) else [value]
        return self._cross_device_ops.broadcast(array_ops.concat(parts, axis), list(self._devices))

    def _create_variable(self, next_creator, **kwargs):
        with on_device(self._devices[0]):
            return next_creator(**kwargs)

    def _scope_creator(self):
        def creator(next_creator, **kwargs):
            return self._create_variable(next_creator, **kwargs)

        return creator


class Strategy:
    """The base of the strategies: ``scope``, ``run``, ``reduce``, ``gather``, the distributed datasets."""

    def __init__(self, extended):
        self._extended = extended
        self._default_replica_context = None

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return self._extended._num_replicas_in_sync()

    @property
    def cluster_resolver(self):
        return None

    def scope(self):
        """Makes this strategy current: variables created inside are distributed, code runs in
        cross-replica context."""
        return _StrategyScope(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        """Runs ``fn(*args, **kwargs)`` once per replica (PerReplica arguments give each replica its own
        part); returns the replicas' results, PerReplica where they differ."""
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}.run: fn must be callable, got {fn!r}")
        kwargs = kwargs or {}
        if _current_replica_id() is not None:
            raise RuntimeError(f"{type(self).__name__}.run was called inside a replica (inside strategy.run): it "
                               "requires cross-replica context; use tf.distribute.get_replica_context().merge_call()")
        if not isinstance(args, (list, tuple)):
            raise TypeError(f"{type(self).__name__}.run: args must be a tuple or list, got {type(args).__name__}")
        return self._run(fn, tuple(args), dict(kwargs))

    def _run(self, fn, args, kwargs):
        replica = ReplicaContext(self, 0)
        with _pushed(_Context(self, replica)), on_device(self._extended.worker_devices[0]):
            return fn(*values_lib.select_replica(0, args), **values_lib.select_replica(0, kwargs))

    def reduce(self, reduce_op, value, axis=None):
        """The reduction of a per-replica ``value`` (over the replicas, and over ``axis`` too if given)."""
        from ember.ops import array_ops, math_ops

        reduce_op = reduce_util.as_reduce_op(reduce_op, f"{type(self).__name__}.reduce")
        if _current_replica_id(self) is not None:
            raise RuntimeError("`Strategy.reduce` must be called in cross-replica context (outside `strategy.run`); "
                               "inside a replica use `tf.distribute.get_replica_context().all_reduce`")

        def one(value):
            if axis is None:
                return self._reduce_replicas(reduce_op, value)
            parts = list(value) if isinstance(value, DistributedValues) else [value]

            def across(tensors):
                return self._reduce_replicas(ReduceOp.SUM, PerReplica(tensors) if len(tensors) > 1 else tensors[0])

            total = across([math_ops.reduce_sum(p, axis=axis) for p in parts])
            if reduce_op == ReduceOp.SUM:
                return total
            # MEAN over the replicas and the axis: the sum over both, divided by the number of elements.
            count = across([math_ops.cast(array_ops.shape(p)[axis], total.dtype) for p in parts])
            return total / count

        return values_lib._map(one, value)

    def _reduce_replicas(self, reduce_op, value):
        if self.num_replicas_in_sync == 1 and not isinstance(value, DistributedValues):
            return value
        if isinstance(value, values_lib.Mirrored):
            value = PerReplica(value.values)
        destination = self._extended.worker_devices[0]
        return self._extended.reduce_to(reduce_op, value, destination).values[0]

    def gather(self, value, axis):
        """The replicas' values concatenated along ``axis`` (on the first device)."""
        from ember.ops import array_ops

        def one(v):
            if not isinstance(v, DistributedValues):
                return v
            with on_device(self._extended.worker_devices[0]):
                return array_ops.concat(list(v), axis)

        return values_lib._map(one, value)

    def experimental_local_results(self, value):
        """A tuple with this process's value of each replica."""
        return values_lib.local_results(value, len(self._extended.worker_devices))

    def experimental_distribute_dataset(self, dataset, options=None):
        """A dataset whose global batches are split across the replicas (see input_lib)."""
        from ember.distribute import input_lib

        return input_lib.DistributedDataset(self, dataset, options)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """A distributed dataset from ``dataset_fn(InputContext)``, each replica taking the next element."""
        from ember.distribute import input_lib

        return input_lib.DistributedDatasetsFromFunction(self, dataset_fn, options)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        """PerReplica of ``value_fn(ValueContext)`` for each replica."""
        results = []
        for i, device in enumerate(self._extended.worker_devices):
            with on_device(device):
                results.append(value_fn(ValueContext(i, self.num_replicas_in_sync)))
        return values_lib.regroup(results)

    def __deepcopy__(self, memo):
        return self  # a strategy is shared, never copied (Keras deep-copies configs that name it)


class ValueContext:
    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class _StrategyScope:
    def __init__(self, strategy):
        self._strategy = strategy
        self._creator_scope = None

    def __enter__(self):
        from ember.variable_creation import variable_creator_scope

        current = get_strategy()
        if current is not self._strategy and current is not _default_strategy() and \
                self._strategy is not _default_strategy():
            raise ValueError("Mixing different tf.distribute.Strategy objects: entering the scope of "
                             f"{self._strategy!r} inside the scope of {current!r}")
        _stack().append(_Context(self._strategy, None))
        self._creator_scope = variable_creator_scope(self._strategy.extended._scope_creator())
        self._creator_scope.__enter__()
        return self._strategy

    def __exit__(self, *exc):
        self._creator_scope.__exit__(*exc)
        _stack().pop()
        return False


# ---- the default strategy: one replica, on whatever device is current
class _DefaultExtended(StrategyExtended):
    def _create_variable(self, next_creator, **kwargs):
        return next_creator(**kwargs)

    def reduce_to(self, reduce_op, value, destinations, options=None):
        reduce_util.as_reduce_op(reduce_op, "reduce_to")
        return values_lib.Mirrored([value])


class _DefaultStrategy(Strategy):
    def __init__(self):
        super().__init__(_DefaultExtended(self, [""]))
        self._default_replica_context = _DefaultReplicaContext(self)

    def _run(self, fn, args, kwargs):
        with _pushed(_Context(self, self._default_replica_context)):
            return fn(*args, **kwargs)

    def reduce(self, reduce_op, value, axis=None):
        from ember.ops import math_ops

        reduce_op = reduce_util.as_reduce_op(reduce_op, "Strategy.reduce")
        if axis is None:
            return value
        fn = math_ops.reduce_sum if reduce_op == ReduceOp.SUM else math_ops.reduce_mean
        return values_lib._map(lambda v: fn(v, axis=axis), value)

    def gather(self, value, axis):
        return value

    def __repr__(self):
        return "<tf.distribute default strategy>"


class _DefaultReplicaContext(ReplicaContext):
    def __init__(self, strategy):
        super().__init__(strategy, 0)

    def __repr__(self):
        return "<tf.distribute default ReplicaContext>"


_DEFAULT = []


def _default_strategy():
    if not _DEFAULT:
        _DEFAULT.append(_DefaultStrategy())
    return _DEFAULT[0]


# ---- for optimizers
def in_distributed_replica_context():
    """Whether this code runs in one replica of several (inside ``strategy.run`` of a multi-replica strategy)."""
    context = _stack()[-1]
    return context.replica is not None and context.strategy is not _default_strategy() and \
        context.strategy.num_replicas_in_sync > 1


def all_reduce_and_apply(grads_and_vars, apply_fn):
    """An optimizer's ``apply_gradients`` called in a replica: waits for every replica's gradients, adds them
    up (SUM, through the strategy's cross-device ops, all in one ``batch_reduce``) and calls
    ``apply_fn(summed_grads_and_vars)`` once, in cross-replica context, so each variable gets one update.
    Returns what ``apply_fn`` returned, to every replica."""

    def merge(strategy, pairs):
        present = [(g, v) for g, v in pairs if g is not None]
        reduced = iter(strategy.extended.batch_reduce_to(ReduceOp.SUM, present) if present else [])
        summed = [(next(reduced).values[0] if g is not None else None, v) for g, v in pairs]
        return apply_fn(summed)

    return get_replica_context().merge_call(merge, args=([tuple(p) for p in grads_and_vars],))


# ---- tf.nn's loss helpers for custom training loops
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """``tf.nn.compute_average_loss``: the replica's share of the mean loss over the global batch (the sum
    of its per-example losses divided by the global batch size), so that summed gradients are the mean's."""
    from ember.framework.tensor import convert_to_tensor
    from ember.ops import array_ops, math_ops

    loss = convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * math_ops.cast(convert_to_tensor(sample_weight), loss.dtype)
    total = math_ops.reduce_sum(loss)
    if global_batch_size is None:
        context = get_replica_context()
        replicas = context.num_replicas_in_sync if context is not None else get_strategy().num_replicas_in_sync
        per_replica = array_ops.shape(loss)[0] if loss.shape.rank else 1
        global_batch_size = math_ops.cast(per_replica, loss.dtype) * float(replicas)
    else:
        global_batch_size = math_ops.cast(global_batch_size, loss.dtype)
    return total / global_batch_size


def scale_regularization_loss(regularization_loss):
    """``tf.nn.scale_regularization_loss``: the loss divided by the number of replicas."""
    context = get_replica_context()
    replicas = context.num_replicas_in_sync if context is not None else get_strategy().num_replicas_in_sync
    return regularization_loss / float(replicas)

"""Collectives across worker processes, usable with or without a strategy.

TensorFlow's collective ops (`all_reduce_v2`, `all_gather_v2`, `broadcast_send_v2`, `broadcast_recv_v2`, as
in `tensorflow.python.ops.collective_ops`, with `group_size`, `group_key` and `instance_key`) run on the
process's group of workers, which `initialize()` joins (MultiWorkerMirroredStrategy calls it). The ops are
in the registry (src/ember/distribute/collective_ops.cc), so they run eagerly and inside ember.function.

The short forms `all_reduce(t, "sum")`, `all_gather`, `broadcast` and `barrier` (ember.distribute.experimental
.collective) span every worker and number their instances themselves: every worker must call them in the same
order, as every worker must run the same collectives in the same order in TensorFlow.

    import ember as tf
    from ember.distribute.experimental import collective
    collective.initialize()                      # TF_CONFIG, or mpirun's environment
    total = collective.all_reduce(tf.constant([1.0, 2.0]), "sum")
"""

import os
import shutil
import socket
import tempfile
import hashlib
import json
import itertools
import threading

from ember import _C
from ember.distribute import cluster_resolver as _resolver
from ember.framework.tensor import constant, convert_to_tensor
from ember import dtypes

__all__ = ["initialize", "shutdown", "is_initialized", "rank", "group_size", "all_reduce", "all_gather",
           "broadcast", "barrier", "all_reduce_v2", "all_gather_v2", "broadcast_send_v2", "broadcast_recv_v2"]

_Reduce = _C.op("CollectiveReduceV2")
_Gather = _C.op("CollectiveGatherV2")
_BcastSend = _C.op("CollectiveBcastSendV2")
_BcastRecv = _C.op("CollectiveBcastRecvV2")
_ReduceStart = _C.op("_CollectiveReduceStart")
_ReduceDone = _C.op("_CollectiveReduceDone")

DEFAULT_TIMEOUT_SECONDS = 300.0
_GROUP_KEY = 1
_BARRIER_TAG_BASE = 0xFF000000


def _int32(value):
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return value
    return constant(int(value), dtype=dtypes.int32)


def all_reduce_v2(t, group_size, group_key, instance_key, merge_op="Add", final_op="Id",
                  communication_hint="auto", timeout=0, name=None):
    """CollectiveReduceV2: `t` reduced across the group (merge_op Add|Mul|Min|Max, final_op Id|Div)."""
    return _Reduce(convert_to_tensor(t), _int32(group_size), _int32(group_key), _int32(instance_key), merge_op,
                   final_op, communication_hint, float(timeout or 0))


def all_gather_v2(t, group_size, group_key, instance_key, communication_hint="auto", timeout=0, name=None):
    """CollectiveGatherV2: every worker's `t` concatenated along axis 0, in rank order."""
    return _Gather(convert_to_tensor(t), _int32(group_size), _int32(group_key), _int32(instance_key),
                   communication_hint, float(timeout or 0))


def broadcast_send_v2(t, group_size, group_key, instance_key, communication_hint="auto", timeout=0, name=None):
    """CollectiveBcastSendV2: sends `t` to the group's receivers and returns it."""
    return _BcastSend(convert_to_tensor(t), _int32(group_size), _int32(group_key), _int32(instance_key),
                      communication_hint, float(timeout or 0))


def broadcast_recv_v2(shape, dtype, group_size, group_key, instance_key, communication_hint="auto", timeout=0,
                      name=None):
    """CollectiveBcastRecvV2: the tensor of `shape` and `dtype` one worker of the group sends."""
    if not hasattr(shape, "dtype"):
        shape = constant(list(shape), dtype=dtypes.int32)
    return _BcastRecv(_int32(group_size), _int32(group_key), _int32(instance_key), shape, dtypes.as_dtype(dtype),
                      communication_hint, float(timeout or 0))


# ---- The process's group.

class _Group:
    def __init__(self, rank, size, timeout):
        self.rank = rank
        self.size = size
        self.timeout = timeout
        self._instances = itertools.count(1)
        self._barriers = itertools.count(0)
        self._lock = threading.Lock()

    def next_instance_key(self):
        with self._lock:
            return next(self._instances)

    def next_barrier_tag(self):
        with self._lock:
            return _BARRIER_TAG_BASE + next(self._barriers) % 0xFFFFFF


_group = None


def _default_timeout(timeout_seconds):
    if timeout_seconds:
        return float(timeout_seconds)
    return float(os.environ.get("EMBER_COLLECTIVE_TIMEOUT", DEFAULT_TIMEOUT_SECONDS))


def _default_store(spec):
    """A directory named after the cluster, so that every worker of it on this host finds the same one.
    The chief empties it once all have connected; EMBER_COLLECTIVE_STORE names another (a shared file
    system across hosts)."""
    text = json.dumps(spec.as_dict(), sort_keys=True)
    launcher = os.environ.get("OMPI_MCA_orte_hnp_uri") or os.environ.get("PMI_ID", "")
    digest = hashlib.sha1((text + launcher).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"ember-collective-{digest}")


def _ipv4(host):
    try:
        return socket.gethostbyname(host or "127.0.0.1")
    except OSError:
        return "127.0.0.1"


def initialize(cluster_resolver=None, timeout_seconds=None, store_path=None):
    """Joins this process to the group of its cluster's workers (blocks until all have joined).

    `cluster_resolver` defaults to TFConfigClusterResolver (TF_CONFIG, else mpirun's environment); a cluster
    of one worker needs no group. `timeout_seconds` bounds the rendezvous and is the default deadline of
    every collective. Returns (rank, group size)."""
    global _group
    if _group is not None:
        return _group.rank, _group.size
    resolver = cluster_resolver or _resolver.TFConfigClusterResolver()
    rank_, size, host = _resolver.worker_rank(resolver)
    timeout = _default_timeout(timeout_seconds)
    if size > 1:
        store = store_path or os.environ.get("EMBER_COLLECTIVE_STORE") or _default_store(resolver.cluster_spec())
        os.makedirs(store, exist_ok=True)
        _C.collective_initialize(rank_, size, store, "ember", _ipv4(host), timeout)
        _group = _Group(rank_, size, timeout)
        # Everyone has read everyone's address: the store has done its work, and an empty directory lets the
        # next job of this cluster start clean.
        barrier()
        if rank_ == 0 and not store_path and not os.environ.get("EMBER_COLLECTIVE_STORE"):
            shutil.rmtree(store, ignore_errors=True)
    else:
        _group = _Group(rank_, size, timeout)
    return rank_, size


def shutdown():
    """Leaves the group; a later initialize() joins a new one."""
    global _group
    _group = None
    _C.collective_shutdown()


def is_initialized():
    return _group is not None


def _require_group():
    if _group is None:
        initialize()
    return _group


def rank():
    return _require_group().rank


def group_size():
    return _require_group().size


def _merge_op(op):
    name = getattr(op, "value", op)
    name = str(name).upper()
    table = {"SUM": ("Add", "Id"), "MEAN": ("Add", "Div"), "MAX": ("Max", "Id"), "MIN": ("Min", "Id"),
             "PRODUCT": ("Mul", "Id"), "PROD": ("Mul", "Id")}
    if name not in table:
        raise ValueError(f"all_reduce: op must be one of SUM, MEAN, MAX, MIN, PRODUCT, got {op!r}")
    return table[name]


def all_reduce(t, op="sum", group_size=None, group_key=_GROUP_KEY, instance_key=None, timeout=0):
    """`t` reduced over every worker: op "sum", "mean", "max", "min", "product" or a ReduceOp."""
    group = _require_group()
    merge_op, final_op = _merge_op(op)
    return all_reduce_v2(t, group.size if group_size is None else group_size, group_key,
                         group.next_instance_key() if instance_key is None else instance_key, merge_op, final_op,
                         timeout=timeout or group.timeout)


def start_all_reduce(t, op="sum", timeout=0):
    """Starts reducing `t` over every worker on the collective thread and returns a handle at once; inside
    ember.function the start runs as soon as `t` is computed (Note [Overlapping collectives] in
    src/ember/distribute/collective_ops.cc). ``wait_all_reduce(handle, t)`` returns the result."""
    group = _require_group()
    merge_op, final_op = _merge_op(op)
    return _ReduceStart(convert_to_tensor(t), _int32(group.size), _int32(_GROUP_KEY),
                        _int32(group.next_instance_key()), merge_op, final_op, "auto",
                        float(timeout or group.timeout))


def wait_all_reduce(handle, t):
    """The result of the all-reduce ``start_all_reduce(t)`` began (`t` gives its shape and dtype)."""
    return _ReduceDone(handle, t)


def all_gather(t, group_size=None, group_key=_GROUP_KEY, instance_key=None, timeout=0):
    """Every worker's `t` concatenated along axis 0, in rank order."""
    group = _require_group()
    return all_gather_v2(t, group.size if group_size is None else group_size, group_key,
                         group.next_instance_key() if instance_key is None else instance_key,
                         timeout=timeout or group.timeout)


def broadcast(t, root=0, group_size=None, group_key=_GROUP_KEY, instance_key=None, timeout=0):
    """Rank `root`'s `t` on every worker (the others' `t` gives the shape and dtype to receive)."""
    group = _require_group()
    size = group.size if group_size is None else group_size
    key = group.next_instance_key() if instance_key is None else instance_key
    t = convert_to_tensor(t)
    if group.rank == root or size == 1:
        return broadcast_send_v2(t, size, group_key, key, timeout=timeout or group.timeout)
    return broadcast_recv_v2(t.shape.as_list(), t.dtype, size, group_key, key, timeout=timeout or group.timeout)


def barrier(timeout=0):
    """Returns once every worker has called it (eagerly; inside a function it runs at trace time)."""
    group = _require_group()
    if group.size > 1:
        _C.collective_barrier(group.next_barrier_tag(), float(timeout or group.timeout))

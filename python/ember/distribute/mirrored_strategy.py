"""``tf.distribute.MirroredStrategy``: synchronous data parallelism over the devices of this process.

One replica per device; variables created in its scope are MirroredVariables (a copy per device);
``run`` runs a replica per device (mirrored_run.py), and every reduction goes through
``extended._cross_device_ops`` (cross_device_ops.py). MultiWorkerMirroredStrategy subclasses it with
cross-device ops that also all-reduce across processes.
"""

import re

from ember.distribute import distribute_lib, mirrored_run, values as values_lib
from ember.distribute.values import on_device
from ember.variables import VariableAggregation, VariableSynchronization

_PREFIX = "/job:localhost/replica:0/task:0"


def canonicalize_device(name):
    """'cpu:0', '/CPU:0', '/device:CPU:0', '/job:localhost/replica:0/task:0/device:CPU:0' -> the full name."""
    if not isinstance(name, str):
        raise TypeError(f"MirroredStrategy: a device must be a string, got {name!r}")
    match = re.fullmatch(r"(/job:\w+/replica:\d+/task:\d+)?/?(?:device:)?([A-Za-z_]+):(\d+)", name.strip())
    if match is None:
        raise ValueError(f"MirroredStrategy: cannot parse device name {name!r}; expected e.g. 'cpu:0', '/GPU:1' "
                         "or '/job:localhost/replica:0/task:0/device:CPU:0'")
    prefix = match.group(1) or _PREFIX
    return f"{prefix}/device:{match.group(2).upper()}:{match.group(3)}"


def _logical_devices(kind=None):
    """This process's logical devices, through the public tf.config API when it has them."""
    from ember import config

    lister = getattr(config, "list_logical_devices", None)
    if lister is None:
        return None
    return [canonicalize_device(d.name) for d in lister(kind)] if kind else \
        [canonicalize_device(d.name) for d in lister()]


def _default_devices():
    gpus = _logical_devices("GPU") or []
    if gpus:
        return gpus
    cpus = _logical_devices("CPU")
    return cpus or [f"{_PREFIX}/device:CPU:0"]


class MirroredExtended(distribute_lib.StrategyExtended):
    def __init__(self, container_strategy, devices, cross_device_ops):
        super().__init__(container_strategy, devices, cross_device_ops)

    def _create_variable(self, next_creator, **kwargs):
        context = distribute_lib.get_replica_context()
        run = getattr(context, "_run", None) if context is not None else None
        if run is not None and context.strategy is self._container_strategy and context.replica_id_in_sync_group:
            return run.take_created(context.replica_id_in_sync_group)
        variable = self._create_distributed(next_creator, kwargs)
        if run is not None and context.strategy is self._container_strategy:
            run.created.append(variable)
        return variable

    def _create_distributed(self, next_creator, kwargs):
        synchronization = kwargs.get("synchronization") or VariableSynchronization.AUTO
        aggregation = kwargs.get("aggregation") or VariableAggregation.NONE
        synchronization = VariableSynchronization(synchronization)
        aggregation = VariableAggregation(aggregation)
        if synchronization == VariableSynchronization.NONE:
            raise ValueError("`NONE` variable synchronization mode is not supported with tf.distribute strategy. "
                             "Please change the `synchronization` for variable: " + str(kwargs.get("name")))
        name = kwargs.get("name") or "Variable"
        components = []
        for i, device in enumerate(self._devices):
            args = dict(kwargs)
            if i > 0:
                primary = components[0]
                # Every copy starts from the primary's value (a random initializer runs once).
                args["initial_value"] = lambda primary=primary: primary.read_value()
                args["name"] = f"{name}/replica_{i}"
            with on_device(device):
                components.append(next_creator(**args))
        cls = values_lib.SyncOnReadVariable if synchronization == VariableSynchronization.ON_READ else \
            values_lib.MirroredVariable
        return cls(self._container_strategy, components, aggregation)

    def _run(self, fn, args, kwargs):
        if len(self._devices) == 1:
            return distribute_lib.Strategy._run(self._container_strategy, fn, args, kwargs)
        if getattr(self, "_threads", None) is None:
            self._threads = mirrored_run.ReplicaThreads(len(self._devices))
        return mirrored_run.MirroredRun(self._container_strategy, fn, args, kwargs).execute(self._threads)


class MirroredStrategy(distribute_lib.Strategy):
    """``tf.distribute.MirroredStrategy(devices=None, cross_device_ops=None)``: one replica per device (by
    default every logical GPU, else every logical CPU of this process)."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            devices = _default_devices()
        elif isinstance(devices, str):
            raise ValueError(f"MirroredStrategy: `devices` must be a list of device names, got the string "
                             f"{devices!r}; write devices=[{devices!r}]")
        else:
            devices = [canonicalize_device(d) for d in devices]
        if not devices:
            raise ValueError("Got an empty `devices` list and unable to recognize any local devices.")
        if len(set(devices)) != len(devices):
            raise ValueError(f"No duplicates allowed in `devices` argument: {devices}")
        known = _logical_devices()
        if known is not None:
            unknown = [d for d in devices if d not in known]
            if unknown:
                raise ValueError(f"MirroredStrategy: unknown device(s) {unknown}; this process has {known} "
                                 "(split the CPU with tf.config.set_logical_device_configuration)")
        super().__init__(MirroredExtended(self, devices, cross_device_ops))

    def _run(self, fn, args, kwargs):
        return self._extended._run(fn, args, kwargs)

    def __repr__(self):
        return f"<tf.distribute.MirroredStrategy devices={list(self._extended.worker_devices)}>"

"""``ember.distribute`` (``tf.distribute``): data parallelism with TensorFlow's strategy API.

    strategy = tf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    with strategy.scope():
        model = make_model()          # its variables are MirroredVariables: a copy per device
    per_replica = strategy.run(step, args=(next(iter(strategy.experimental_distribute_dataset(ds))),))
    total = strategy.reduce("SUM", per_replica, axis=None)

See docs/distribute.md. Multi-process strategies (MultiWorkerMirroredStrategy, cluster resolvers) build on
this package's MirroredStrategy and CrossDeviceOps.
"""

from ember.distribute.cross_device_ops import (  # noqa: F401
    CrossDeviceOps, HierarchicalCopyAllReduce, NcclAllReduce, ReductionToOneDevice)
from ember.distribute.distribute_lib import (  # noqa: F401
    InputContext, InputOptions, InputReplicationMode, ReplicaContext, RunOptions, Strategy, StrategyExtended,
    experimental_set_strategy, get_cross_replica_context, get_replica_context, get_strategy, has_strategy,
    in_cross_replica_context)
from ember.distribute.mirrored_strategy import MirroredStrategy  # noqa: F401
from ember.distribute.one_device_strategy import OneDeviceStrategy  # noqa: F401
from ember.distribute.reduce_util import ReduceOp  # noqa: F401
from ember.distribute.values import (  # noqa: F401
    DistributedValues, Mirrored, MirroredVariable, PerReplica, SyncOnReadVariable)

# Names of the multi-process part (another module's files), imported on first use: name -> (module, attribute
# or None for the module itself). The collectives work adds its entries here.
_LAZY = {
    "MultiWorkerMirroredStrategy": ("ember.distribute.multi_worker_mirrored_strategy", "MultiWorkerMirroredStrategy"),
    "cluster_resolver": ("ember.distribute.cluster_resolver", None),
    "experimental": ("ember.distribute.experimental", None),
    "collective_util": ("ember.distribute.collective_util", None),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            raise AttributeError(f"module 'ember.distribute' has no attribute {name!r} (the multi-process part, "
                                 f"{module_name}, is not in this build)") from None
        return module if attribute is None else getattr(module, attribute)
    raise AttributeError(f"module 'ember.distribute' has no attribute {name!r}")

"""tf.distribute: data-parallel training across worker processes (docs/distribute.md)."""
from ember.distribute import cluster_resolver, collective_util, experimental
from ember.distribute.multi_worker_mirrored_strategy import MultiWorkerMirroredStrategy
from ember.distribute.multi_worker_mirrored_strategy import get_replica_context, get_strategy

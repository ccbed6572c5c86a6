"""tf.distribute.experimental: the options of collectives, and ember's strategy-free collectives
(`collective`: initialize, all_reduce, all_gather, broadcast, barrier)."""
from ember.distribute import collective_ops as collective
from ember.distribute.collective_util import CommunicationImplementation, CommunicationOptions

CollectiveCommunication = CommunicationImplementation  # TensorFlow's older name


def __getattr__(name):
    if name == "MultiWorkerMirroredStrategy":
        from ember.distribute.multi_worker_mirrored_strategy import MultiWorkerMirroredStrategy
        return MultiWorkerMirroredStrategy
    raise AttributeError(f"module 'ember.distribute.experimental' has no attribute {name!r}")

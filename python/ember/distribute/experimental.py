"""tf.distribute.experimental: the options of collectives, and ember's strategy-free collectives
(`collective`: initialize, all_reduce, all_gather, broadcast, barrier)."""
from ember.distribute import collective_ops as collective  # noqa: F401
from ember.distribute.collective_util import CommunicationImplementation, CommunicationOptions  # noqa: F401
from ember.distribute.multi_worker_mirrored_strategy import MultiWorkerMirroredStrategy  # noqa: F401

CollectiveCommunication = CommunicationImplementation  # TensorFlow's older name

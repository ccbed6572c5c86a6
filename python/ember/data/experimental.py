"""tf.data.experimental: the constants and helpers TensorFlow 2 code still reaches through it."""

from ember.data.dataset_ops import AUTOTUNE  # noqa: F401
from ember.data.dataset_ops import INFINITE as INFINITE_CARDINALITY  # noqa: F401
from ember.data.dataset_ops import UNKNOWN as UNKNOWN_CARDINALITY  # noqa: F401


def cardinality(dataset):
    return dataset.cardinality()

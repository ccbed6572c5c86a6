"""tf.data: input pipelines (docs/data.md).

    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=1).map(
        augment, num_parallel_calls=tf.data.AUTOTUNE).batch(128).prefetch(tf.data.AUTOTUNE)
    for xb, yb in ds: ...
"""

from ember.data import experimental, staged  # noqa: F401 - staged installs the in-function dataset ops
from ember.data.dataset_ops import AUTOTUNE, Dataset, Options, ThreadingOptions
from ember.data.dataset_ops import INFINITE as INFINITE_CARDINALITY
from ember.data.dataset_ops import UNKNOWN as UNKNOWN_CARDINALITY
from ember.data.iterator_ops import IteratorSpec, NumpyIterator, OwnedIterator as Iterator
from ember.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from ember.data.windowing import DatasetSpec

__all__ = ["AUTOTUNE", "Dataset", "DatasetSpec", "INFINITE_CARDINALITY", "Iterator", "IteratorSpec", "NumpyIterator", "Options", "ThreadingOptions", "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "UNKNOWN_CARDINALITY",
           "experimental"]

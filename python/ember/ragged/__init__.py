"""``tf.ragged``: RaggedTensors (rows of different lengths) and the ops on them (docs/composite.md).

    rt = tf.ragged.constant([[1, 2], [3]])       # <tf.RaggedTensor [[1, 2], [3]]>
    tf.RaggedTensor.from_row_splits([1, 2, 3], row_splits=[0, 2, 3])
    rt + 1, tf.reduce_sum(rt, axis=1), rt.to_tensor()
"""

from ember.ragged.ragged_factory import constant, constant_value
from ember.ragged.ragged_ops import (boolean_mask, is_ragged, map_flat_values, row_splits_to_segment_ids,
                                     segment_ids_to_row_splits)
from ember.ragged.ragged_ops import ragged_range as range  # noqa: A001 - TF's name
from ember.ragged.ragged_ops import stack
from ember.ragged.ragged_tensor import RaggedTensor, RaggedTensorSpec


def stack_dynamic_partitions(data, partitions, num_partitions, name=None):
    """Row p holds the values of data whose partition is p, in order."""
    import ember

    data = ember.convert_to_tensor(data)
    partitions = ember.cast(partitions, ember.int64)
    return RaggedTensor.from_value_rowids(*_sorted_by_partition(data, partitions), nrows=num_partitions)


def _sorted_by_partition(data, partitions):
    import ember

    order = ember.argsort(partitions, stable=True)
    return ember.gather(data, order), ember.gather(partitions, order)


__all__ = ["RaggedTensor", "RaggedTensorSpec", "boolean_mask", "constant", "constant_value", "is_ragged",
           "map_flat_values", "range", "row_splits_to_segment_ids", "segment_ids_to_row_splits", "stack",
           "stack_dynamic_partitions"]

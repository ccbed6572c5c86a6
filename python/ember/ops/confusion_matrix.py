"""``tf.math.confusion_matrix``: counts (or sums ``weights``) of each (label, prediction) pair, as TensorFlow's
confusion_matrix.py composes it: int64 class ids checked to be non-negative and below ``num_classes``, then
ScatterNd of ones (or weights) into a [num_classes, num_classes] matrix."""

from ember import debugging, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.math_ops import cast


def _squeeze_extra_dim(labels, predictions):
    """TensorFlow's remove_squeezable_dimensions: a trailing dimension of 1 that only one side has goes."""
    lr, pr = labels.shape.rank, predictions.shape.rank
    if lr is not None and pr is not None:
        if lr == pr + 1 and labels.shape[-1] == 1:
            labels = array_ops.squeeze(labels, [-1])
        elif pr == lr + 1 and predictions.shape[-1] == 1:
            predictions = array_ops.squeeze(predictions, [-1])
    return labels, predictions


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=dtypes.int32, name=None):
    """M[i, j] = the number (or the summed weights) of examples with label i predicted as j; ``num_classes``
    defaults to one more than the largest label or prediction."""
    from ember.ops.indexing_ops import scatter_nd

    labels = labels if isinstance(labels, Tensor) else convert_to_tensor(labels)
    predictions = predictions if isinstance(predictions, Tensor) else convert_to_tensor(predictions)
    labels, predictions = _squeeze_extra_dim(labels, predictions)
    labels, predictions = cast(labels, dtypes.int64), cast(predictions, dtypes.int64)
    zero = convert_to_tensor(0, dtype=dtypes.int64)
    debugging.assert_greater_equal(labels, zero, message="`labels` contains negative values")
    debugging.assert_greater_equal(predictions, zero, message="`predictions` contains negative values")
    if num_classes is None:
        num_classes = math_ops.maximum(math_ops.reduce_max(predictions), math_ops.reduce_max(labels)) + 1
    else:
        num_classes = cast(convert_to_tensor(num_classes), dtypes.int64)
        debugging.assert_less(labels, num_classes, message="`labels` out of bound")
        debugging.assert_less(predictions, num_classes, message="`predictions` out of bound")
    dtype = dtypes.as_dtype(dtype)
    values = array_ops.ones_like(predictions, dtype) if weights is None else \
        cast(weights if isinstance(weights, Tensor) else convert_to_tensor(weights, dtype=dtype), dtype)
    indices = array_ops.stack([labels, predictions], 1)
    return scatter_nd(indices, values, array_ops.stack([num_classes, num_classes]))

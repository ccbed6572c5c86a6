"""Accuracy metrics, as functions (one value per sample) and as Metrics (their running mean), with Keras 2's
(``tf_keras``) semantics: exact match, thresholded binary match, arg-max match against one-hot or integer
labels, and top-k match."""

from ember import dtypes
from ember.keras.metrics.base_metric import MeanMetricWrapper, _invalid, to_tensor
from ember.ops import array_ops, math_ops, sort_ops


def _check_compatible(y_true, y_pred, what):
    if not y_true.shape.is_compatible_with(y_pred.shape):
        raise _invalid(what, f"y_true and y_pred must have the same shape; got y_true of shape "
                             f"{y_true.shape.as_list()} and y_pred of shape {y_pred.shape.as_list()}")


def accuracy(y_true, y_pred):
    """1.0 where y_pred equals y_true exactly, else 0.0."""
    y_true, y_pred = to_tensor(y_true, "accuracy", "y_true"), to_tensor(y_pred, "accuracy", "y_pred")
    _check_compatible(y_true, y_pred, "accuracy")
    if y_true.dtype != y_pred.dtype:
        y_pred = math_ops.cast(y_pred, y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, y_pred), dtypes.float32)


def binary_matches(y_true, y_pred, threshold=0.5):
    y_pred = to_tensor(y_pred, "binary_accuracy", "y_pred")
    y_true = to_tensor(y_true, "binary_accuracy", "y_true")
    if not y_pred.dtype.is_floating:
        y_pred = math_ops.cast(y_pred, dtypes.float32)
    y_pred = math_ops.cast(y_pred > math_ops.cast(threshold, y_pred.dtype), y_pred.dtype)
    return math_ops.cast(math_ops.equal(math_ops.cast(y_true, y_pred.dtype), y_pred), dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """The fraction of the last axis where (y_pred > threshold) equals y_true."""
    return math_ops.reduce_mean(binary_matches(y_true, y_pred, threshold), axis=-1)


def sparse_categorical_matches(y_true, y_pred, what="sparse_categorical_accuracy"):
    """1.0 where argmax(y_pred) equals the integer label y_true (which may carry a trailing axis of 1)."""
    y_pred = to_tensor(y_pred, what, "y_pred")
    y_true = to_tensor(y_true, what, "y_true")
    if y_pred.shape.rank == 0:
        raise _invalid(what, "y_pred must have a class axis; got a scalar")
    reshape = None
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank:
        if y_true.shape[-1] not in (1, None):
            raise _invalid(what, f"y_true must hold class indices, shaped like y_pred without its class axis (or "
                                 f"with a trailing 1); got y_true of shape {y_true.shape.as_list()} for y_pred "
                                 f"of shape {y_pred.shape.as_list()}")
        reshape = array_ops.shape(y_true)
        y_true = array_ops.squeeze(y_true, [-1])
    expected = y_pred.shape[:-1]
    if not y_true.shape.is_compatible_with(expected):
        raise _invalid(what, f"y_true must hold one class index per prediction, shaped {expected.as_list()}; got "
                             f"y_true of shape {y_true.shape.as_list()} for y_pred of shape "
                             f"{y_pred.shape.as_list()}")
    predicted = math_ops.argmax(y_pred, axis=-1)
    if predicted.dtype != y_true.dtype:
        predicted = math_ops.cast(predicted, y_true.dtype)
    matches = math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)
    return array_ops.reshape(matches, reshape) if reshape is not None else matches


def sparse_top_k_categorical_matches(y_true, y_pred, k=5, what="sparse_top_k_categorical_accuracy"):
    """1.0 where the label's prediction is among the k largest of its row (ties count as in)."""
    y_true = to_tensor(y_true, what, "y_true")
    y_pred = to_tensor(y_pred, what, "y_pred")
    if y_pred.shape.rank is not None and y_pred.shape.rank < 2:
        raise _invalid(what, f"y_pred must have a batch and a class axis; got shape {y_pred.shape.as_list()}")
    if not y_pred.dtype.is_floating or y_pred.dtype != dtypes.float32:
        y_pred = math_ops.cast(y_pred, dtypes.float32)
    original_shape = array_ops.shape(y_true)
    reshape = False
    if y_pred.shape.rank is not None and y_pred.shape.rank > 2:
        y_pred = array_ops.reshape(y_pred, [-1, y_pred.shape[-1]])
    if y_true.shape.rank is not None and y_true.shape.rank > 1:
        reshape = True
        y_true = array_ops.reshape(y_true, [-1])
    matches = math_ops.cast(sort_ops.in_top_k(math_ops.cast(y_true, dtypes.int32), y_pred, k), dtypes.float32)
    return array_ops.reshape(matches, original_shape) if reshape else matches


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) equals argmax(y_true) (one-hot labels)."""
    y_true = to_tensor(y_true, "categorical_accuracy", "y_true")
    return sparse_categorical_matches(math_ops.argmax(y_true, axis=-1), y_pred, "categorical_accuracy")


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) equals the integer label y_true."""
    matches = sparse_categorical_matches(y_true, y_pred)
    if matches.shape.rank is not None and matches.shape.rank > 1 and matches.shape[-1] == 1:
        matches = array_ops.squeeze(matches, [-1])
    return matches


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the one-hot label's class is among the k largest predictions."""
    y_true = to_tensor(y_true, "top_k_categorical_accuracy", "y_true")
    return sparse_top_k_categorical_matches(math_ops.argmax(y_true, axis=-1), y_pred, k,
                                            "top_k_categorical_accuracy")


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the integer label's class is among the k largest predictions."""
    return sparse_top_k_categorical_matches(y_true, y_pred, k)


class Accuracy(MeanMetricWrapper):
    """How often y_pred equals y_true exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often (y_pred > threshold) equals the binary label."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_matches, name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals argmax of the one-hot label."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(_categorical_matches, name, dtype=dtype)


def _categorical_matches(y_true, y_pred):
    return sparse_categorical_matches(math_ops.argmax(y_true, axis=-1), y_pred, "categorical_accuracy")


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_matches, name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label's class is among the k largest predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(_top_k_matches, name, dtype=dtype, k=k)


def _top_k_matches(y_true, y_pred, k):
    return sparse_top_k_categorical_matches(math_ops.argmax(y_true, axis=-1), y_pred, k,
                                            "top_k_categorical_accuracy")


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label's class is among the k largest predictions."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_matches, name, dtype=dtype, k=k)

"""Intersection-over-union metrics (Keras 2, ``tf_keras``): IoU, MeanIoU, BinaryIoU, OneHotIoU,
OneHotMeanIoU. They accumulate a weighted confusion matrix (rows: labels, columns: predictions); IoU of a
class is TP / (TP + FP + FN), averaged over the target classes that occurred."""

from ember import debugging, dtypes
from ember.compat.v1 import control_dependencies
from ember.keras import losses
from ember.keras.metrics.base_metric import Metric, _invalid, broadcast_weights, divide_no_nan, to_tensor
from ember.ops import array_ops, math_ops


def confusion_matrix(labels, predictions, num_classes, weights, dtype, what):
    """The [num_classes, num_classes] matrix of summed weights, indexed [label, prediction]; a class id
    outside [0, num_classes) is an InvalidArgumentError."""
    labels = math_ops.cast(labels, dtypes.int64)
    predictions = math_ops.cast(predictions, dtypes.int64)
    checks = []
    for name, ids in (("labels", labels), ("predictions", predictions)):
        checks.append(debugging.assert_non_negative(ids, message=f"{what}: {name} must be class ids in "
                                                                 f"[0, {num_classes})"))
        checks.append(debugging.assert_less(ids, math_ops.cast(num_classes, dtypes.int64),
                                            message=f"{what}: {name} must be class ids in [0, {num_classes})"))
    with control_dependencies([c for c in checks if c is not None]):
        ids = labels * num_classes + predictions
        if weights is None:
            weights = math_ops.cast(array_ops.ones_like(ids), dtype)
        sums = array_ops.unsorted_segment_sum(weights, ids, num_classes * num_classes)
    return array_ops.reshape(sums, [num_classes, num_classes])


class _IoUBase(Metric):
    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"Argument `num_classes` must be a positive integer. Received: "
                             f"num_classes={num_classes!r}")
        self.num_classes = num_classes
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight("total_confusion_matrix", shape=(num_classes, num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true")
        y_pred = to_tensor(y_pred, self.name, "y_pred")
        if not self.sparse_y_true:
            y_true = math_ops.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = math_ops.argmax(y_pred, axis=self.axis)
        if not y_true.shape.is_compatible_with(y_pred.shape):
            raise _invalid(self.name, f"y_true and y_pred must hold one class id per entry, in the same shape; got "
                                      f"y_true of shape {y_true.shape.as_list()} and y_pred of shape "
                                      f"{y_pred.shape.as_list()}")
        if sample_weight is not None:
            sample_weight = to_tensor(sample_weight, self.name, "sample_weight", self._dtype)
            labels = math_ops.cast(y_true, self._dtype)
            _, _, sample_weight = losses.squeeze_or_expand_dimensions(labels, None, sample_weight)
            sample_weight = array_ops.reshape(broadcast_weights(sample_weight, labels, self.name), [-1])
        y_true = array_ops.reshape(math_ops.cast(y_true, self._dtype), [-1])
        y_pred = array_ops.reshape(math_ops.cast(y_pred, self._dtype), [-1])
        if self.ignore_class is not None:
            # Ignored entries weigh nothing and count as class 0, so they neither add nor fail the range check.
            valid = math_ops.not_equal(y_true, math_ops.cast(self.ignore_class, self._dtype))
            zero = array_ops.zeros_like(y_true)
            y_true, y_pred = array_ops.where(valid, y_true, zero), array_ops.where(valid, y_pred, zero)
            valid = math_ops.cast(valid, self._dtype)
            sample_weight = valid if sample_weight is None else sample_weight * valid
        self.total_cm.assign_add(confusion_matrix(y_true, y_pred, self.num_classes, sample_weight, self._dtype,
                                                  self.name))

    def reset_state(self):
        self.total_cm.assign(array_ops.zeros([self.num_classes, self.num_classes], self._dtype))


class IoU(_IoUBase):
    """The mean IoU over ``target_class_ids`` (classes never seen nor predicted are left out)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, which is "
                             f"[0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)

    def result(self):
        cm = self.total_cm.read_value()
        sum_over_row = math_ops.reduce_sum(cm, axis=0)
        sum_over_col = math_ops.reduce_sum(cm, axis=1)
        true_positives = array_ops.gather(array_ops.reshape(cm, [-1]),
                                          [i * (self.num_classes + 1) for i in range(self.num_classes)])
        denominator = sum_over_row + sum_over_col - true_positives
        true_positives = array_ops.gather(true_positives, self.target_class_ids)
        denominator = array_ops.gather(denominator, self.target_class_ids)
        num_valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0), self._dtype))
        return divide_no_nan(math_ops.reduce_sum(divide_no_nan(true_positives, denominator)), num_valid)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of two classes, predictions thresholded at ``threshold`` (>= is class 1)."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        y_pred = math_ops.cast(y_pred >= self.threshold, self._dtype)
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class MeanIoU(IoU):
    """The mean IoU over all ``num_classes`` classes."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
                 axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotIoU(IoU):
    """IoU with one-hot labels (and, unless ``sparse_y_pred``, per-class scores as predictions)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids, "name": self.name,
                "dtype": self.dtype, "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    """MeanIoU with one-hot labels (and, unless ``sparse_y_pred``, per-class scores as predictions)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}

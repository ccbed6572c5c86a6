"""Metrics on confusion-matrix counts at thresholds, with Keras 2's (``tf_keras``) semantics: TruePositives,
FalsePositives, TrueNegatives, FalseNegatives, Precision, Recall, AUC (ROC and PR, interpolated or Riemann,
multi-label), and the four "X at Y" metrics (SensitivityAtSpecificity, SpecificityAtSensitivity,
PrecisionAtRecall, RecallAtPrecision).

A prediction counts as positive at threshold t when it is above t. Counts are weighted sums of sample
weights (and label weights). With thresholds spread evenly over [0, 1] (AUC's default, and any list that
happens to be even), each prediction falls in one bucket, counts are a segment sum and a reversed cumulative
sum, and the cost is O(n + thresholds) instead of O(n * thresholds); both paths give tf_keras' numbers.
"""

import numpy as np

from ember import dtypes
from ember.framework.tensor import convert_to_tensor
from ember.keras import losses as losses_lib
from ember.keras.metrics.base_metric import Metric, _invalid, broadcast_weights, divide_no_nan, to_tensor
from ember.ops import array_ops, math_ops, sort_ops

EPSILON = 1e-7
NEG_INF = -1e10
TP, FP, TN, FN = "tp", "fp", "tn", "fn"


def _to_list(x):
    return list(x) if isinstance(x, (list, tuple, np.ndarray)) else [x]


def parse_thresholds(thresholds, default_threshold=0.5):
    if thresholds is not None:
        bad = [t for t in _to_list(thresholds) if t is None or t < 0 or t > 1]
        if bad:
            raise ValueError(f"Threshold values must be in [0, 1]. Received: {bad}")
    return _to_list(default_threshold if thresholds is None else thresholds)


def evenly_distributed(thresholds):
    n = len(thresholds)
    if n < 3:
        return False
    return np.allclose(thresholds, np.arange(n, dtype=np.float32) / (n - 1), atol=EPSILON)


def _filter_top_k(x, k):
    """x where it is among the k largest of its row, NEG_INF elsewhere."""
    _, indices = sort_ops.top_k(x, k, sorted=False)
    mask = math_ops.reduce_sum(array_ops.one_hot(indices, array_ops.shape(x)[-1], axis=-1), axis=-2)
    return x * mask + NEG_INF * (1 - mask)


def update_confusion_matrix_variables(variables, y_true, y_pred, thresholds, what, top_k=None, class_id=None,
                                      sample_weight=None, multi_label=False, label_weights=None,
                                      thresholds_distributed_evenly=False):
    """Adds the weighted counts of ``variables`` ({TP|FP|TN|FN: variable}) at each threshold."""
    dtype = list(variables.values())[0].dtype
    y_true = to_tensor(y_true, what, "y_true", dtype)
    y_pred = to_tensor(y_pred, what, "y_pred", dtype)
    with_epsilon = thresholds_distributed_evenly and (thresholds[0] < 0.0 or thresholds[-1] > 1.0)
    thresholds = convert_to_tensor(np.asarray(thresholds, dtype=dtype.as_numpy_dtype))
    num_thresholds = thresholds.shape[0]
    if sample_weight is not None:
        sample_weight = to_tensor(sample_weight, what, "sample_weight", dtype)
    y_pred, y_true, sample_weight = losses_lib.squeeze_or_expand_dimensions(y_pred, y_true, sample_weight)
    if not y_pred.shape.is_compatible_with(y_true.shape):
        raise _invalid(what, f"y_true and y_pred must have the same shape; got y_true of shape "
                             f"{y_true.shape.as_list()} and y_pred of shape {y_pred.shape.as_list()}")
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.shape.rank is not None and y_pred.shape[-1] is not None and not \
                -y_pred.shape[-1] <= class_id < y_pred.shape[-1]:
            raise _invalid(what, f"class_id {class_id} is out of range for predictions of {y_pred.shape[-1]} "
                                 "classes")
        y_true = array_ops.expand_dims(y_true[..., class_id], -1)
        y_pred = array_ops.expand_dims(y_pred[..., class_id], -1)
    if sample_weight is not None:
        sample_weight = broadcast_weights(sample_weight, y_pred, what)
    if label_weights is not None and not multi_label:
        label_weights = broadcast_weights(array_ops.expand_dims(label_weights, 0), y_pred, what)
    if thresholds_distributed_evenly:
        counts = _bucketed_counts(variables, y_true, y_pred, num_thresholds, multi_label, sample_weight,
                                  label_weights, with_epsilon)
    else:
        counts = _tiled_counts(variables, y_true, y_pred, thresholds, multi_label, sample_weight, label_weights)
    for key, variable in variables.items():
        variable.assign_add(counts[key])


def _bucketed_counts(variables, y_true, y_pred, num_thresholds, multi_label, sample_weight, label_weights,
                     with_epsilon):
    weights = 1.0
    if sample_weight is not None:
        weights = sample_weight if multi_label else array_ops.reshape(sample_weight, [-1])
    if label_weights is not None:
        weights = weights * array_ops.reshape(label_weights, [-1])
    y_pred = array_ops.clip_by_value(y_pred, 0.0, 1.0)
    y_true = math_ops.cast(math_ops.cast(y_true, dtypes.bool), y_true.dtype)
    if not multi_label:
        y_true = array_ops.reshape(y_true, [-1])
        y_pred = array_ops.reshape(y_pred, [-1])
    true_labels = y_true * weights
    false_labels = (1.0 - y_true) * weights
    # Prediction p is above threshold i/(n-1) exactly for i < ceil(p * (n-1)): bucket ceil(p * (n-1)) - 1.
    buckets = math_ops.ceil(y_pred * (num_thresholds - 1)) - 1
    if with_epsilon:
        buckets = math_ops.maximum(buckets, 0.0)
    buckets = math_ops.cast(buckets, dtypes.int32)
    if multi_label:
        # One segment sum over all labels: label j's buckets are offset by j * num_thresholds.
        num_labels = array_ops.shape(y_pred)[1]
        offsets = array_ops.range(num_labels) * num_thresholds
        ids = buckets + array_ops.expand_dims(offsets, 0)

        def per_label(labels):
            sums = array_ops.unsorted_segment_sum(array_ops.reshape(labels, [-1]), array_ops.reshape(ids, [-1]),
                                                  num_labels * num_thresholds)
            return array_ops.transpose(math_ops.cumsum(array_ops.reshape(sums, [num_labels, num_thresholds]),
                                                       axis=1, reverse=True))

        tp, fp = per_label(true_labels), per_label(false_labels)
        total_true, total_false = math_ops.reduce_sum(true_labels, axis=0), math_ops.reduce_sum(false_labels, axis=0)
    else:
        tp = math_ops.cumsum(array_ops.unsorted_segment_sum(true_labels, buckets, num_thresholds), reverse=True)
        fp = math_ops.cumsum(array_ops.unsorted_segment_sum(false_labels, buckets, num_thresholds), reverse=True)
        total_true, total_false = math_ops.reduce_sum(true_labels), math_ops.reduce_sum(false_labels)
    counts = {TP: tp, FP: fp}
    if TN in variables:
        counts[TN] = total_false - fp
    if FN in variables:
        counts[FN] = total_true - tp
    return counts


def _tiled_counts(variables, y_true, y_pred, thresholds, multi_label, sample_weight, label_weights):
    num_thresholds = thresholds.shape[0]
    if multi_label:
        preds = array_ops.expand_dims(y_pred, 0)                           # [1, N, L]
        labels = array_ops.expand_dims(math_ops.cast(y_true, dtypes.bool), 0)
        thresh = array_ops.reshape(thresholds, [num_thresholds, 1, 1])
    else:
        preds = array_ops.reshape(y_pred, [1, -1])                         # [1, N * L]
        labels = array_ops.reshape(math_ops.cast(y_true, dtypes.bool), [1, -1])
        thresh = array_ops.reshape(thresholds, [num_thresholds, 1])
    pred_is_pos = preds > thresh                                           # broadcast: [T, ...]
    label_is_pos = labels & array_ops.ones_like(pred_is_pos)
    weights = None
    if sample_weight is not None:
        weights = array_ops.expand_dims(sample_weight, 0) if multi_label else \
            array_ops.reshape(sample_weight, [1, -1])
    if label_weights is not None:
        lw = array_ops.reshape(label_weights, [1, -1])
        weights = lw if weights is None else weights * lw
    pairs = {TP: (label_is_pos, pred_is_pos), FN: (label_is_pos, math_ops.logical_not(pred_is_pos)),
             FP: (math_ops.logical_not(label_is_pos), pred_is_pos),
             TN: (math_ops.logical_not(label_is_pos), math_ops.logical_not(pred_is_pos))}
    counts = {}
    for key in variables:
        label, pred = pairs[key]
        both = math_ops.cast(math_ops.logical_and(label, pred), y_pred.dtype)
        if weights is not None:
            both = both * weights
        counts[key] = math_ops.reduce_sum(both, axis=1)
    return counts


class _ConfusionMatrixConditionCount(Metric):
    def __init__(self, confusion_matrix_cond, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._confusion_matrix_cond = confusion_matrix_cond
        self.init_thresholds = thresholds
        self.thresholds = parse_thresholds(thresholds, default_threshold=0.5)
        self._thresholds_distributed_evenly = evenly_distributed(self.thresholds)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        update_confusion_matrix_variables({self._confusion_matrix_cond: self.accumulator}, y_true, y_pred,
                                          self.thresholds, self.name, sample_weight=sample_weight,
                                          thresholds_distributed_evenly=self._thresholds_distributed_evenly)

    def result(self):
        value = self.accumulator.read_value()
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConfusionMatrixConditionCount):
    """The weighted number of positive labels predicted positive, at each threshold."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(TP, thresholds=thresholds, name=name, dtype=dtype)


class FalsePositives(_ConfusionMatrixConditionCount):
    """The weighted number of negative labels predicted positive, at each threshold."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(FP, thresholds=thresholds, name=name, dtype=dtype)


class TrueNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of negative labels predicted negative, at each threshold."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(TN, thresholds=thresholds, name=name, dtype=dtype)


class FalseNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of positive labels predicted negative, at each threshold."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(FN, thresholds=thresholds, name=name, dtype=dtype)


class _PrecisionOrRecall(Metric):
    _other = None  # FP for precision, FN for recall

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = parse_thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        self._thresholds_distributed_evenly = evenly_distributed(self.thresholds)
        self.true_positives = self.add_weight("true_positives", shape=(len(self.thresholds),))
        other_name = "false_positives" if self._other == FP else "false_negatives"
        setattr(self, other_name, self.add_weight(other_name, shape=(len(self.thresholds),)))
        self._ember_other = getattr(self, other_name)

    def update_state(self, y_true, y_pred, sample_weight=None):
        update_confusion_matrix_variables({TP: self.true_positives, self._other: self._ember_other}, y_true, y_pred,
                                          self.thresholds, self.name, top_k=self.top_k, class_id=self.class_id,
                                          sample_weight=sample_weight,
                                          thresholds_distributed_evenly=self._thresholds_distributed_evenly)

    def result(self):
        tp = self.true_positives.read_value()
        value = divide_no_nan(tp, tp + self._ember_other.read_value())
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_PrecisionOrRecall):
    """TP / (TP + FP) at each threshold (0.5 by default), optionally over the top-k predictions or one
    class."""
    _other = FP


class Recall(_PrecisionOrRecall):
    """TP / (TP + FN) at each threshold (0.5 by default), optionally over the top-k predictions or one
    class."""
    _other = FN


class SensitivitySpecificityBase(Metric):
    """All four counts at ``num_thresholds`` thresholds spread over [0, 1]; a subclass's result is the best
    value of one rate among the thresholds where another rate reaches ``value``."""

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if not isinstance(num_thresholds, int) or num_thresholds <= 0:
            raise ValueError(f"Argument `num_thresholds` must be an integer > 0. Received: "
                             f"num_thresholds={num_thresholds}")
        self.value = value
        self.class_id = class_id
        self.true_positives = self.add_weight("true_positives", shape=(num_thresholds,))
        self.true_negatives = self.add_weight("true_negatives", shape=(num_thresholds,))
        self.false_positives = self.add_weight("false_positives", shape=(num_thresholds,))
        self.false_negatives = self.add_weight("false_negatives", shape=(num_thresholds,))
        if num_thresholds == 1:
            self.thresholds = [0.5]
            self._thresholds_distributed_evenly = False
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
            self._thresholds_distributed_evenly = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        update_confusion_matrix_variables(
            {TP: self.true_positives, TN: self.true_negatives, FP: self.false_positives, FN: self.false_negatives},
            y_true, y_pred, self.thresholds, self.name, class_id=self.class_id, sample_weight=sample_weight,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly)

    def _rates(self):
        tp, tn = self.true_positives.read_value(), self.true_negatives.read_value()
        fp, fn = self.false_positives.read_value(), self.false_negatives.read_value()
        return {"sensitivity": divide_no_nan(tp, tp + fn), "recall": divide_no_nan(tp, tp + fn),
                "specificity": divide_no_nan(tn, tn + fp), "precision": divide_no_nan(tp, tp + fp)}

    def _find_max_under_constraint(self, constrained, dependent):
        feasible = constrained >= self.value
        best = math_ops.reduce_max(array_ops.where(feasible, dependent, array_ops.fill(
            array_ops.shape(dependent), convert_to_tensor(-np.inf, dependent.dtype))))
        return array_ops.where(math_ops.reduce_any(feasible), best, array_ops.zeros_like(best))

    def get_config(self):
        return {**super().get_config(), "class_id": self.class_id}


class SensitivityAtSpecificity(SensitivitySpecificityBase):
    """The best sensitivity (recall) among the thresholds whose specificity is at least ``specificity``."""

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_rate("specificity", specificity)
        self.specificity, self.num_thresholds = specificity, num_thresholds
        super().__init__(specificity, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        rates = self._rates()
        return self._find_max_under_constraint(rates["specificity"], rates["sensitivity"])

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "specificity": self.specificity}


class SpecificityAtSensitivity(SensitivitySpecificityBase):
    """The best specificity among the thresholds whose sensitivity is at least ``sensitivity``."""

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_rate("sensitivity", sensitivity)
        self.sensitivity, self.num_thresholds = sensitivity, num_thresholds
        super().__init__(sensitivity, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        rates = self._rates()
        return self._find_max_under_constraint(rates["sensitivity"], rates["specificity"])

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "sensitivity": self.sensitivity}


class PrecisionAtRecall(SensitivitySpecificityBase):
    """The best precision among the thresholds whose recall is at least ``recall``."""

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_rate("recall", recall)
        self.recall, self.num_thresholds = recall, num_thresholds
        super().__init__(recall, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        rates = self._rates()
        return self._find_max_under_constraint(rates["recall"], rates["precision"])

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "recall": self.recall}


class RecallAtPrecision(SensitivitySpecificityBase):
    """The best recall among the thresholds whose precision is at least ``precision``."""

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_rate("precision", precision)
        self.precision, self.num_thresholds = precision, num_thresholds
        super().__init__(precision, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        rates = self._rates()
        return self._find_max_under_constraint(rates["precision"], rates["recall"])

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "precision": self.precision}


def _check_rate(name, value):
    if value < 0 or value > 1:
        raise ValueError(f"Argument `{name}` must be in the range [0, 1]. Received: {name}={value}")


_CURVES = {"roc": "ROC", "pr": "PR", "pr_gain": "PR_GAIN", "prgain": "PR_GAIN"}
_SUMMATIONS = ("interpolation", "majoring", "minoring")


class AUC(Metric):
    """The area under the ROC or precision-recall curve, from the four counts at ``num_thresholds``
    thresholds (or at ``thresholds``, with 0 - eps and 1 + eps added). PR with 'interpolation' integrates
    precision along recall exactly between thresholds (Davis & Goadrich); otherwise a Riemann sum with
    trapezoid ('interpolation'), lower ('minoring') or upper ('majoring') heights. ``multi_label`` keeps
    counts per label and averages the per-label areas (weighted by ``label_weights``)."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        curve_key = str(curve).lower()
        if curve_key not in _CURVES:
            raise ValueError(f'Invalid AUC curve value: "{curve}". Expected values are ["PR", "ROC", "PR_GAIN"]')
        if str(summation_method).lower() not in _SUMMATIONS:
            raise ValueError(f'Invalid AUC summation method value: "{summation_method}". Expected values are '
                             '["interpolation", "majoring", "minoring"]')
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            self.num_thresholds = len(thresholds) + 2
            thresholds = sorted(thresholds)
            self._thresholds_distributed_evenly = evenly_distributed(np.array([0.0] + thresholds + [1.0]))
        else:
            if not isinstance(num_thresholds, int) or num_thresholds <= 1:
                raise ValueError(f"Argument `num_thresholds` must be an integer > 1. Received: "
                                 f"num_thresholds={num_thresholds}")
            self.num_thresholds = num_thresholds
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        self._thresholds = np.array([0.0 - EPSILON] + thresholds + [1.0 + EPSILON])
        self.curve = _CURVES[curve_key]
        self.summation_method = str(summation_method).lower()
        super().__init__(name=name, dtype=dtype)
        self.multi_label = multi_label
        self.num_labels = num_labels
        if label_weights is not None:
            weights = np.asarray(label_weights, dtype=self._dtype.as_numpy_dtype)
            if (weights < 0).any():
                raise ValueError(f"All values of `label_weights` must be non-negative. Received: {label_weights}")
            self.label_weights = convert_to_tensor(weights)
        else:
            self.label_weights = None
        self._from_logits = from_logits
        self._ember_built = False
        if multi_label:
            if num_labels:
                self._build([None, num_labels])
        else:
            if num_labels:
                raise ValueError("`num_labels` is needed only when `multi_label` is True.")
            self._build(None)

    @property
    def thresholds(self):
        return list(self._thresholds)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError(f"`y_pred` must have rank 2 when `multi_label=True`. Found rank {len(shape)}. "
                                 f"Full shape received for `y_pred`: {shape}")
            if shape[1] is None:
                raise ValueError(f"{self.name}: with multi_label=True the number of labels (y_pred's last axis) "
                                 f"must be known, or given as num_labels; got y_pred of shape {shape}")
            self._num_labels = shape[1]
            variable_shape = [self.num_thresholds, self._num_labels]
        else:
            variable_shape = [self.num_thresholds]
        self.true_positives = self.add_weight("true_positives", shape=variable_shape)
        self.true_negatives = self.add_weight("true_negatives", shape=variable_shape)
        self.false_positives = self.add_weight("false_positives", shape=variable_shape)
        self.false_negatives = self.add_weight("false_negatives", shape=variable_shape)
        self._ember_built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = to_tensor(y_pred, self.name, "y_pred")
        if not self._ember_built:
            self._build(y_pred.shape.as_list() if y_pred.shape.rank is not None else [])
        if self.multi_label or self.label_weights is not None:
            y_true_t = to_tensor(y_true, self.name, "y_true")
            num_labels = self._num_labels if self.multi_label else self.label_weights.shape[0]
            if y_true_t.shape.rank != 2 or y_true_t.shape[1] not in (None, num_labels):
                raise _invalid(self.name, f"Number of labels is not consistent: expected y_true of shape [N, "
                                          f"{num_labels}], got {y_true_t.shape.as_list()}")
        label_weights = None if self.multi_label else self.label_weights
        if self._from_logits:
            y_pred = math_ops.sigmoid(math_ops.cast(y_pred, self._dtype))
        update_confusion_matrix_variables(
            {TP: self.true_positives, TN: self.true_negatives, FP: self.false_positives, FN: self.false_negatives},
            y_true, y_pred, self._thresholds, self.name, sample_weight=sample_weight, multi_label=self.multi_label,
            label_weights=label_weights, thresholds_distributed_evenly=self._thresholds_distributed_evenly)

    def _average(self, by_label):
        if self.label_weights is None:
            return math_ops.reduce_mean(by_label)
        return divide_no_nan(math_ops.reduce_sum(by_label * self.label_weights),
                             math_ops.reduce_sum(self.label_weights))

    def interpolate_pr_auc(self):
        n = self.num_thresholds
        tp, fp, fn = (self.true_positives.read_value(), self.false_positives.read_value(),
                      self.false_negatives.read_value())
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        prec_slope = divide_no_nan(dtp, math_ops.maximum(dp, 0.0))
        intercept = tp[1:] - prec_slope * p[1:]
        both_positive = math_ops.logical_and(p[:n - 1] > 0, p[1:] > 0)
        safe_p_ratio = array_ops.where(both_positive, divide_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.0)),
                                       array_ops.ones_like(p[1:]))
        increment = divide_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                                  math_ops.maximum(tp[1:] + fn[1:], 0.0))
        if self.multi_label:
            return self._average(math_ops.reduce_sum(increment, axis=0))
        return math_ops.reduce_sum(increment)

    def result(self):
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self.interpolate_pr_auc()
        n = self.num_thresholds
        tp, tn = self.true_positives.read_value(), self.true_negatives.read_value()
        fp, fn = self.false_positives.read_value(), self.false_negatives.read_value()
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, divide_no_nan(tp, tp + fp)
        else:
            scaling = divide_no_nan(tp + fn, fp + tn)
            recall_gain = 1.0 - scaling * divide_no_nan(fn, tp)
            precision_gain = 1.0 - scaling * divide_no_nan(fp, tp)
            no_tp = math_ops.equal(tp, 0.0)
            recall_gain = math_ops.maximum(array_ops.where(no_tp, array_ops.zeros_like(recall_gain), recall_gain),
                                           0.0)
            precision_gain = array_ops.where(no_tp, array_ops.ones_like(precision_gain), precision_gain)
            x, y = recall_gain, precision_gain
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = math_ops.minimum(y[:n - 1], y[1:])
        else:
            heights = math_ops.maximum(y[:n - 1], y[1:])
        terms = (x[:n - 1] - x[1:]) * heights
        if self.multi_label:
            return self._average(math_ops.reduce_sum(terms, axis=0))
        return math_ops.reduce_sum(terms)

    def reset_state(self):
        if self._ember_built:
            super().reset_state()

    def get_config(self):
        label_weights = self.label_weights.numpy().tolist() if self.label_weights is not None else None
        config = {"num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method, "multi_label": self.multi_label,
                  "num_labels": self.num_labels, "label_weights": label_weights, "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return {**super().get_config(), **config}

"""F-beta and F1 scores over 2-D multi-label or one-hot inputs (Keras 2, ``tf_keras``), per class or averaged
('micro' pools the counts, 'macro' averages the per-class scores, 'weighted' weighs them by support)."""

from ember.keras.metrics.base_metric import Metric, _invalid, divide_no_nan, to_tensor
from ember.ops import array_ops, math_ops


class FBetaScore(Metric):
    """(1 + beta^2) * precision * recall / (beta^2 * precision + recall). Without ``threshold`` each row's
    largest (non-zero) prediction counts as its positive."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                             f"'weighted'}}. Received: average={average}")
        if not isinstance(beta, float) or beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be a Python float > 0. Received: "
                             f"beta={beta!r}")
        if threshold is not None and (not isinstance(threshold, float) or not 0.0 < threshold <= 1.0):
            raise ValueError(f"Invalid `threshold` argument value. It should be a Python float with "
                             f"0 < threshold <= 1. Received: threshold={threshold!r}")
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._ember_built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2 or y_pred_shape[-1] is None:
            raise ValueError(f"FBetaScore expects 2D inputs with shape (batch_size, output_dim), output_dim known. "
                             f"Received input shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        shape = [] if self.average == "micro" else [y_pred_shape[-1]]
        self.true_positives = self.add_weight("true_positives", shape=shape)
        self.false_positives = self.add_weight("false_positives", shape=shape)
        self.false_negatives = self.add_weight("false_negatives", shape=shape)
        self.intermediate_weights = self.add_weight("intermediate_weights", shape=shape)
        self._ember_built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        if not self._ember_built:
            self._build(y_true.shape.as_list(), y_pred.shape.as_list())
        if not y_true.shape.is_compatible_with(y_pred.shape):
            raise _invalid(self.name, f"y_true and y_pred must have the same shape; got {y_true.shape.as_list()} "
                                      f"and {y_pred.shape.as_list()}")
        if self.threshold is None:
            top = math_ops.reduce_max(y_pred, axis=-1, keepdims=True)
            y_pred = math_ops.logical_and(y_pred >= top, math_ops.abs(y_pred) > 1e-9)
        else:
            y_pred = y_pred > self.threshold
        y_pred = math_ops.cast(y_pred, self._dtype)
        if sample_weight is not None:
            sample_weight = array_ops.expand_dims(to_tensor(sample_weight, self.name, "sample_weight",
                                                            self._dtype), 1)

        def weighted_sum(value):
            if sample_weight is not None:
                value = value * sample_weight
            return math_ops.reduce_sum(value, axis=self.axis)

        self.true_positives.assign_add(weighted_sum(y_pred * y_true))
        self.false_positives.assign_add(weighted_sum(y_pred * (1 - y_true)))
        self.false_negatives.assign_add(weighted_sum((1 - y_pred) * y_true))
        self.intermediate_weights.assign_add(weighted_sum(y_true))

    def result(self):
        tp = self.true_positives.read_value()
        precision = divide_no_nan(tp, tp + self.false_positives.read_value())
        recall = divide_no_nan(tp, tp + self.false_negatives.read_value())
        beta_squared = self.beta * self.beta
        score = divide_no_nan(precision * recall, beta_squared * precision + recall) * (1 + beta_squared)
        if self.average == "weighted":
            support = self.intermediate_weights.read_value()
            return math_ops.reduce_sum(score * divide_no_nan(support, math_ops.reduce_sum(support)))
        if self.average is not None:
            return math_ops.reduce_mean(score)
        return score

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """FBetaScore with beta = 1."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config

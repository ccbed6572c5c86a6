"""Regression metrics (Keras 2, ``tf_keras``): the running means of the regression losses, RMSE, cosine
similarity, log-cosh, mean relative error, and R2."""

import warnings

from ember import dtypes
from ember.keras import losses
from ember.keras.metrics.base_metric import (Mean, MeanMetricWrapper, Metric, _invalid, broadcast_weights,
                                             divide_no_nan, to_tensor)
from ember.ops import array_ops, math_ops, nn_ops


def cosine_similarity(y_true, y_pred, axis=-1):
    """sum(l2_normalize(y_true) * l2_normalize(y_pred)) over ``axis`` (the loss is its negative)."""
    y_true = to_tensor(y_true, "cosine_similarity", "y_true", dtypes.float32)
    y_pred = to_tensor(y_pred, "cosine_similarity", "y_pred", dtypes.float32)
    return math_ops.reduce_sum(nn_ops.l2_normalize(y_true, axis=axis) * nn_ops.l2_normalize(y_pred, axis=axis),
                               axis=axis)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses.mean_squared_error, name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses.mean_absolute_error, name, dtype=dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(losses.mean_absolute_percentage_error, name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(losses.mean_squared_logarithmic_error, name, dtype=dtype)


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity of y_true and y_pred along ``axis``."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name, dtype=dtype, axis=axis)


class LogCoshError(MeanMetricWrapper):
    def __init__(self, name="logcosh", dtype=None):
        super().__init__(losses.log_cosh, name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """sqrt(weighted mean of (y_pred - y_true)^2) over everything seen."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        y_pred, y_true, _ = losses.squeeze_or_expand_dimensions(y_pred, y_true)
        losses._check_broadcastable(y_true, y_pred, self.name)
        return super().update_state(math_ops.squared_difference(y_pred, y_true), sample_weight=sample_weight)

    def result(self):
        return math_ops.sqrt(divide_no_nan(self.total.read_value(), self.count.read_value()))


class MeanRelativeError(Mean):
    """The weighted mean of |y_true - y_pred| / normalizer."""

    def __init__(self, normalizer, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.normalizer = math_ops.cast(to_tensor(normalizer, "MeanRelativeError", "normalizer"), self._dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        y_pred, y_true, _ = losses.squeeze_or_expand_dimensions(y_pred, y_true)
        if not y_pred.shape.is_compatible_with(y_true.shape):
            raise _invalid(self.name, f"y_true and y_pred must have the same shape; got {y_true.shape.as_list()} "
                                      f"and {y_pred.shape.as_list()}")
        normalizer = self.normalizer
        if normalizer.shape.rank is not None and y_pred.shape.rank is not None \
                and normalizer.shape.rank == y_pred.shape.rank + 1 and normalizer.shape[-1] == 1:
            normalizer = array_ops.squeeze(normalizer, [-1])
        return super().update_state(divide_no_nan(math_ops.abs(y_true - y_pred), normalizer),
                                    sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), "normalizer": self.normalizer.numpy().tolist()}


class R2Score(Metric):
    """The coefficient of determination per output column of 2-D inputs, averaged uniformly, by variance,
    or not at all (``class_aggregation`` None); ``num_regressors`` > 0 gives the adjusted R2."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError(f"Invalid value for argument `class_aggregation`. Expected one of {valid}. Received: "
                             f"class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError(f"Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                             f"num_regressors={num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_weight(name="num_samples", dtype=dtypes.int32)
        self._ember_built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2 or y_pred_shape[-1] is None:
            raise ValueError(f"R2Score expects 2D inputs with shape (batch_size, output_dim), output_dim known. "
                             f"Received input shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        n = y_pred_shape[-1]
        self.squared_sum = self.add_weight(name="squared_sum", shape=[n])
        self.sum = self.add_weight(name="sum", shape=[n])
        self.total_mse = self.add_weight(name="residual", shape=[n])
        self.count = self.add_weight(name="count", shape=[n])
        self._ember_built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        if not self._ember_built:
            self._build(y_true.shape.as_list(), y_pred.shape.as_list())
        weight = to_tensor(1 if sample_weight is None else sample_weight, self.name, "sample_weight", self._dtype)
        if weight.shape.rank == 1:
            weight = array_ops.expand_dims(weight, 1)
        weight = broadcast_weights(weight, y_true, self.name)
        weighted_y_true = y_true * weight
        self.sum.assign_add(math_ops.reduce_sum(weighted_y_true, axis=0))
        self.squared_sum.assign_add(math_ops.reduce_sum(y_true * weighted_y_true, axis=0))
        self.total_mse.assign_add(math_ops.reduce_sum(math_ops.square(y_true - y_pred) * weight, axis=0))
        self.count.assign_add(math_ops.reduce_sum(weight, axis=0))
        self.num_samples.assign_add(array_ops.size(y_true))

    def result(self):
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        raw = 1 - (self.total_mse / total)
        raw = array_ops.where(math_ops.equal(math_ops.abs(raw), float("inf")), array_ops.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = math_ops.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = math_ops.reduce_sum(total * raw) / math_ops.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors != 0:
            n = int(self.num_samples.numpy())
            if self.num_regressors >= n - 1:
                warnings.warn("Adjusted R2 score needs more datapoints than independent predictors plus one; "
                              "falling back to the standard R2 score.", stacklevel=2)
            else:
                score = 1.0 - (1.0 - score) * (n - 1.0) / (n - self.num_regressors - 1.0)
        return score

    def reset_state(self):
        for v in self.variables:
            v.assign(array_ops.zeros(v.shape.as_list(), v.dtype))

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}

"""The running means of the probabilistic and hinge losses, as Keras 2's (``tf_keras``) metrics."""

from ember.keras import losses
from ember.keras.metrics.base_metric import Mean, MeanMetricWrapper, to_tensor


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False, label_smoothing=0):
        super().__init__(losses.binary_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False, label_smoothing=0, axis=-1):
        super().__init__(losses.categorical_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean cross-entropy of integer labels; labels equal to ``ignore_class`` are left out of the mean."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False, ignore_class=None,
                 axis=-1):
        super().__init__(losses.sparse_categorical_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         ignore_class=ignore_class, axis=axis)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self._fn_kwargs["ignore_class"] is None:
            return super().update_state(y_true, y_pred, sample_weight)
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        y_pred, y_true, _ = losses.squeeze_or_expand_dimensions(y_pred, y_true)
        values, valid = losses._sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)
        mask = to_tensor(valid, self.name, "mask", self._dtype)
        if sample_weight is not None:
            sample_weight = to_tensor(sample_weight, self.name, "sample_weight", self._dtype)
            _, _, sample_weight = losses.squeeze_or_expand_dimensions(values, None, sample_weight)
            mask = mask * sample_weight
        return Mean.update_state(self, values, sample_weight=mask)


class KLDivergence(MeanMetricWrapper):
    def __init__(self, name="kullback_leibler_divergence", dtype=None):
        super().__init__(losses.kl_divergence, name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    def __init__(self, name="poisson", dtype=None):
        super().__init__(losses.poisson, name, dtype=dtype)


class Hinge(MeanMetricWrapper):
    def __init__(self, name="hinge", dtype=None):
        super().__init__(losses.hinge, name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(losses.squared_hinge, name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(losses.categorical_hinge, name, dtype=dtype)

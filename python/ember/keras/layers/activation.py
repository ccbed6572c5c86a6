"""Keras 2's activation layers (tf_keras): ReLU, LeakyReLU, ELU, PReLU, Softmax, ThresholdedReLU."""

from ember.framework.tensor_shape import TensorShape
from ember.keras import constraints, initializers, regularizers
from ember.keras.engine.base_layer import Layer

__all__ = ["ReLU", "LeakyReLU", "ELU", "PReLU", "Softmax", "ThresholdedReLU"]


def _tf():
    import ember

    return ember


class _Elementwise(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class ReLU(_Elementwise):
    """``min(max_value, x)`` for x >= threshold, ``negative_slope * (x - threshold)`` below it."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"max_value of a Relu layer cannot be a negative value. Received: {max_value}")
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"negative_slope of a Relu layer cannot be a negative value. Received: {negative_slope}")
        if threshold is None or threshold < 0:
            raise ValueError(f"threshold of a Relu layer cannot be a negative value. Received: {threshold}")
        self.max_value = max_value
        self.negative_slope = negative_slope
        self.threshold = threshold

    def call(self, inputs):
        from ember.keras import activations

        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value, "negative_slope": self.negative_slope,
                "threshold": self.threshold}


class LeakyReLU(_Elementwise):
    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("The alpha value of a Leaky ReLU layer cannot be None. Expecting a float. Received: "
                             f"{alpha}")
        self.alpha = alpha

    def call(self, inputs):
        return _tf().nn.leaky_relu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": float(self.alpha)}


class ELU(_Elementwise):
    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError(f"Alpha of an ELU layer cannot be None, expecting a float. Received: {alpha}")
        self.alpha = alpha

    def call(self, inputs):
        tf = _tf()
        return tf.nn.elu(inputs) if self.alpha == 1.0 else tf.where(inputs > 0, inputs,
                                                                    self.alpha * tf.math.expm1(inputs))

    def get_config(self):
        return {**super().get_config(), "alpha": float(self.alpha)}


class ThresholdedReLU(_Elementwise):
    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        if theta is None or theta < 0:
            raise ValueError(f"Theta of a Thresholded ReLU layer cannot be None or negative, expecting a float. "
                             f"Received: {theta}")
        self.theta = theta

    def call(self, inputs):
        tf = _tf()
        return inputs * tf.cast(tf.greater(inputs, tf.cast(self.theta, inputs.dtype)), inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "theta": float(self.theta)}


class Softmax(_Elementwise):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        tf = _tf()
        if mask is not None:  # masked positions get a large negative logit, as tf_keras
            inputs = inputs + (1.0 - tf.cast(mask, inputs.dtype)) * -1e9
        if isinstance(self.axis, (tuple, list)):
            if len(self.axis) > 1:
                return tf.exp(inputs - tf.reduce_logsumexp(inputs, axis=self.axis, keepdims=True))
            return tf.nn.softmax(inputs, axis=self.axis[0])
        return tf.nn.softmax(inputs, axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class PReLU(Layer):
    """``max(0, x) + alpha * min(0, x)`` with a learned ``alpha`` per input element (shared along
    ``shared_axes``)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif not isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [shared_axes]
        else:
            self.shared_axes = list(shared_axes)

    def build(self, input_shape):
        param_shape = list(TensorShape(input_shape).as_list()[1:])
        if self.shared_axes is not None:
            for i in self.shared_axes:
                param_shape[i - 1] = 1
        if any(d is None for d in param_shape):
            raise ValueError(f"PReLU: the input dims {param_shape} must be known (or shared) to build alpha")
        self.alpha = self.add_weight(shape=param_shape, name="alpha", initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint)
        self.built = True

    def call(self, inputs):
        tf = _tf()
        return tf.nn.relu(inputs) - self.alpha * tf.nn.relu(-inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint), "shared_axes": self.shared_axes}

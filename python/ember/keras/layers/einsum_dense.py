"""Keras 2's EinsumDense (tf_keras): ``activation(einsum(equation, inputs, kernel) + bias)``, the kernel and
bias shapes read from the equation, the input shape and ``output_shape`` (the output's dims after the batch
dim, or after those an ellipsis stands for)."""

import re

from ember.framework.tensor_shape import TensorShape
from ember.keras import activations, constraints, initializers, regularizers
from ember.keras.engine.base_layer import Layer

__all__ = ["EinsumDense"]


def _specs(equation):
    match = re.fullmatch(r"(\.\.\.)?([a-zA-Z]*),([a-zA-Z]+)->(\.\.\.)?([a-zA-Z]*)", equation.replace(" ", ""))
    if match is None or bool(match.group(1)) != bool(match.group(4)):
        raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form [X],[Y]->[Z], "
                         "...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")
    return bool(match.group(1)), match.group(2), match.group(3), match.group(5)


class EinsumDense(Layer):
    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = equation
        self.partial_output_shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._elided, self._in, self._weight, self._out = _specs(equation)

    def _dims(self, input_shape):
        """{letter: dim} and the full output shape for ``input_shape``."""
        shape = TensorShape(input_shape).as_list()
        if self._elided:
            lead = shape[:len(shape) - len(self._in)]
            named = shape[len(lead):]
            out_named = self.partial_output_shape
            full = lead + out_named
        else:
            if len(shape) != len(self._in):
                raise ValueError(f"EinsumDense: the equation '{self.equation}' names {len(self._in)} input dims, "
                                 f"the input has shape {tuple(shape)}")
            named = shape
            out_named = shape[:1] + self.partial_output_shape
            full = out_named
        if len(out_named) != len(self._out):
            raise ValueError(f"EinsumDense: output_shape {self.partial_output_shape} does not fit the output spec "
                             f"'{self._out}' of '{self.equation}'")
        dims = dict(zip(self._in, named))
        for letter, dim in zip(self._out, out_named):
            dims.setdefault(letter, dim)
        return dims, full

    def build(self, input_shape):
        dims, _ = self._dims(input_shape)
        kernel_shape = [dims.get(c) for c in self._weight]
        if any(d is None for d in kernel_shape):
            raise ValueError(f"EinsumDense: the kernel dims of '{self._weight}' must be known from the input shape "
                             f"{TensorShape(input_shape)} and output_shape {self.partial_output_shape}, got "
                             f"{kernel_shape}")
        self.kernel = self.add_weight("kernel", shape=kernel_shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self._dtype, trainable=True)
        if self.bias_axes:
            for c in self.bias_axes:
                if c not in self._out:
                    raise ValueError(f"Bias dimension {c} was requested, but is not part of the output spec "
                                     f"{self._out}")
            first = min(self._out.index(c) for c in self.bias_axes)
            bias_shape = [dims[c] if c in self.bias_axes else 1 for c in self._out[first:]]
            self.bias = self.add_weight("bias", shape=bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self._dtype, trainable=True)
        else:
            self.bias = None
        self.built = True

    def call(self, inputs):
        import ember as tf

        out = tf.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation is not None else out

    def compute_output_shape(self, input_shape):
        return TensorShape(self._dims(input_shape)[1])

    def get_config(self):
        return {**super().get_config(), "output_shape": self.partial_output_shape, "equation": self.equation,
                "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self._activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}

"""Keras 2's locally-connected layers (tf_keras): a convolution whose every output position has its own
kernel, in tf_keras' three implementations, each with its own weight layout so tf_keras' weights load as they
are (``set_weights(tf_keras_layer.get_weights())``):

- ``implementation=1`` (the default): the kernel is ``[output positions, prod(kernel_size) * input channels,
  filters]``, each position's window flattened in the input's own axis order; the windows are gathered and
  multiplied at once (``backend.local_conv2d``). Only "valid" padding.
- ``implementation=2``: a dense kernel over every (input position, output position) pair,
  ``[*input_spatial, channels, *output_spatial, filters]`` (channels_last) or
  ``[channels, *input_spatial, filters, *output_spatial]`` (channels_first), multiplied by a constant 0/1
  mask of the connected pairs, reshaped to a matrix and applied to the flattened input in one matmul.
- ``implementation=3``: only the connected entries, a vector of ``len(kernel_idxs)`` values; ``kernel_idxs``
  are the (flat output index, flat input index) pairs of the connected entries in row-major order (so a
  weight's position is fixed by the shapes alone), and the output is ``SparseTensorDenseMatMul`` of that
  sparse matrix with the flattened input.

Implementations 2 and 3 also take "same" padding, with tf_keras' window placement (``_connected_inputs``:
the window of output position ``o`` starts at ``o * stride - kernel // 2``, clipped to the input), which is
not the convolution ops' padding. The bias has one value per output position and filter: ``[output_length,
filters]`` (1D), ``[rows, cols, filters]`` (2D); for channels_first tf_keras *reshapes* (does not transpose)
it to ``[filters, ...]``, and so does ember, so the same weights give the same outputs.
"""

import itertools

import numpy as np

from ember.framework.tensor_shape import TensorShape
from ember.keras import activations, backend, constraints, initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.input_spec import InputSpec
from ember.keras.layers import _layer_utils as U
from ember.ops import array_ops, math_ops

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


class _LocallyConnected(Layer):
    rank = None  # the number of spatial axes

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, implementation=1, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = type(self).__name__
        self.filters = filters
        self.kernel_size = U.normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = U.normalize_tuple(strides, self.rank, "strides", allow_zero=True)
        self.padding = U.normalize_padding(padding)
        if implementation not in (1, 2, 3):
            raise ValueError(f"Unrecognized implementation mode: {implementation}.")
        if self.padding != "valid" and implementation == 1:
            raise ValueError(f'Invalid border mode for {name} (only "valid" is supported if implementation is '
                             f"1): {padding}")
        self.data_format = U.normalize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.implementation = implementation
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _split(self, shape):
        """(channels, spatial dims) of an input shape."""
        if self.data_format == "channels_first":
            return shape[1], list(shape[2:])
        return shape[-1], list(shape[1:-1])

    def _output_spatial(self, spatial):
        return [U.conv_output_length(length, k, self.padding, s)
                for length, k, s in zip(spatial, self.kernel_size, self.strides)]

    def build(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        channels, spatial = self._split(shape)
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs to {type(self).__name__} should be defined. "
                             f"Found shape: {shape}")
        if None in spatial:
            raise ValueError(f"{type(self).__name__} needs every spatial dimension of its input known (each output "
                             f"position has its own kernel). Found shape: {shape}")
        self.output_spatial = self._output_spatial(spatial)
        if any(length <= 0 for length in self.output_spatial):
            raise ValueError(f"One of the dimensions in the output is <= 0 due to downsampling in {self.name}. "
                             f"Consider increasing the input size. Received input shape {shape} which would "
                             "produce output shape with a zero or negative value in a dimension.")
        if self.implementation == 1:
            positions = 1
            window = channels
            for length, k in zip(self.output_spatial, self.kernel_size):
                positions *= length
                window *= k
            self.kernel_shape = (positions, window, self.filters)
            kernel_shape = self.kernel_shape
        elif self.implementation == 2:
            if self.data_format == "channels_first":
                self.kernel_shape = (channels, *spatial, self.filters, *self.output_spatial)
            else:
                self.kernel_shape = (*spatial, channels, *self.output_spatial, self.filters)
            kernel_shape = self.kernel_shape
        else:
            out_size = int(np.prod(self.output_spatial)) * self.filters
            self.kernel_shape = (out_size, int(np.prod(spatial)) * channels)
            self.kernel_idxs = self._kernel_idxs(spatial, channels)
            kernel_shape = (len(self.kernel_idxs),)
        self.kernel = self.add_weight("kernel", shape=kernel_shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self._dtype)
        if self.implementation == 2:
            self.kernel_mask = self._kernel_mask(spatial)
        elif self.implementation == 3:
            self._sparse_indices = np.asarray(self.kernel_idxs, np.int64).reshape(-1, 2)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=tuple(self.output_spatial) + (self.filters,),
                                        initializer=self.bias_initializer, regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self._dtype)
        else:
            self.bias = None
        channel_axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={channel_axis: channels})
        self.built = True

    def _spatial_mask(self, spatial):
        """[*input_spatial, *output_spatial] bool: which input positions each output position reads."""
        mask = np.zeros(tuple(spatial) + tuple(self.output_spatial), bool)
        for position in itertools.product(*(range(n) for n in self.output_spatial)):
            window = tuple(_connected_inputs(n, k, s, o, self.padding)
                           for n, k, s, o in zip(spatial, self.kernel_size, self.strides, position))
            mask[window + position] = True
        return mask

    def _kernel_mask(self, spatial):
        """The spatial mask with unit axes where implementation 2's kernel has its channel and filter axes."""
        mask = self._spatial_mask(spatial)
        if self.data_format == "channels_first":
            return mask.reshape((1, *spatial, 1, *self.output_spatial))
        return mask.reshape((*spatial, 1, *self.output_spatial, 1))

    def _kernel_idxs(self, spatial, channels):
        """Implementation 3's (output, input) index pairs, in row-major order of the dense
        [outputs, inputs] matrix whose flat indices follow the data format's axis order."""
        rank = self.rank
        mask = self._spatial_mask(spatial)
        # to [*output_spatial, *input_spatial], then add the filter and channel axes
        mask = mask.transpose(tuple(range(rank, 2 * rank)) + tuple(range(rank)))
        if self.data_format == "channels_first":
            full = np.broadcast_to(mask.reshape((1, *self.output_spatial, 1, *spatial)),
                                   (self.filters, *self.output_spatial, channels, *spatial))
        else:
            full = np.broadcast_to(mask.reshape((*self.output_spatial, 1, *spatial, 1)),
                                   (*self.output_spatial, self.filters, *spatial, channels))
        pairs = np.argwhere(full.reshape(self.kernel_shape))
        return [tuple(int(i) for i in pair) for pair in pairs]

    def _output_shape_without_batch(self):
        if self.data_format == "channels_first":
            return [self.filters] + list(self.output_spatial)
        return list(self.output_spatial) + [self.filters]

    def call(self, inputs):
        if self.implementation == 1:
            outputs = backend.local_conv2d(inputs, self.kernel, self.kernel_size, self.strides,
                                           tuple(self.output_spatial), self.data_format)
        else:
            batch = array_ops.shape(inputs)[:1]
            flat = array_ops.reshape(inputs, array_ops.concat([batch, [-1]], 0))
            if self.implementation == 2:
                kernel = self.kernel * math_ops.cast(self.kernel_mask, inputs.dtype)  # the compute dtype
                rows = int(np.prod(self.kernel_shape[:self.rank + 1]))
                flat_out = math_ops.matmul(flat, array_ops.reshape(kernel, [rows, -1]))
            else:
                from ember.sparse import sparse_ops
                from ember.sparse.sparse_tensor import SparseTensor

                matrix = SparseTensor(self._sparse_indices, self.kernel, self.kernel_shape)
                flat_out = array_ops.transpose(sparse_ops.sparse_dense_matmul(matrix, flat, adjoint_b=True))
            outputs = array_ops.reshape(flat_out, array_ops.concat([batch, self._output_shape_without_batch()], 0))
        if self.use_bias:
            if self.data_format == "channels_first":
                # tf_keras' backend.bias_add reshapes [..., filters] to [filters, ...] (no transpose).
                bias = array_ops.reshape(self.bias, [1, self.filters] + list(self.output_spatial))
            else:
                bias = array_ops.expand_dims(self.bias, 0)
            outputs = outputs + bias
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        _, spatial = self._split(shape)
        out = [None if length is None else U.conv_output_length(length, k, self.padding, s)
               for length, k, s in zip(spatial, self.kernel_size, self.strides)]
        if self.data_format == "channels_first":
            return TensorShape([shape[0], self.filters] + out)
        return TensorShape([shape[0]] + out + [self.filters])

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
                       "padding": self.padding, "data_format": self.data_format,
                       "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                       "kernel_initializer": initializers.serialize(self.kernel_initializer),
                       "bias_initializer": initializers.serialize(self.bias_initializer),
                       "kernel_regularizer": U.serialize("regularizers", self.kernel_regularizer),
                       "bias_regularizer": U.serialize("regularizers", self.bias_regularizer),
                       "activity_regularizer": U.serialize("regularizers", self._activity_regularizer),
                       "kernel_constraint": U.serialize("constraints", self.kernel_constraint),
                       "bias_constraint": U.serialize("constraints", self.bias_constraint),
                       "implementation": self.implementation})
        return config


def _connected_inputs(length, kernel, stride, position, padding):
    """The input positions (a slice) that output ``position`` reads along one axis, as tf_keras places the
    window (``conv_utils.conv_connected_inputs``)."""
    start = position * stride - (0 if padding == "valid" else kernel // 2)
    return slice(max(0, start), min(length, start + kernel))


class LocallyConnected1D(_LocallyConnected):
    """Over (batch, steps, channels) (or channels_first): kernel [output_length, kernel_size * channels,
    filters], bias [output_length, filters]."""

    rank = 1


class LocallyConnected2D(_LocallyConnected):
    """Over (batch, rows, cols, channels) (or channels_first): kernel [rows_out * cols_out,
    kh * kw * channels, filters], bias [rows_out, cols_out, filters]."""

    rank = 2

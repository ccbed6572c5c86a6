"""Keras 2's convolution layers: Conv1D/2D/3D, Conv2DTranspose and DepthwiseConv2D, on ember's convolution
ops (docs/convolutions.md). Weights are Keras's, in its order and layouts: ``kernel`` [k..., in / groups,
filters] (a transposed convolution's is [k..., filters, in]; a depthwise one's ``depthwise_kernel`` is
[kh, kw, in, depth_multiplier]), then ``bias``."""

import ember as tf
from ember.keras import activations, initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U

try:
    from ember.keras import constraints
except ImportError:  # constraints are optional: a layer built without them needs none
    constraints = None

__all__ = ["Conv", "Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "DepthwiseConv2D", "SeparableConv2D",
           "SeparableConvolution2D", "Convolution1D", "Convolution2D", "Convolution3D", "Convolution2DTranspose"]

_LAYOUTS = {1: "[batch, steps, channels]", 2: "[batch, rows, cols, channels]",
            3: "[batch, depth, rows, cols, channels]"}
_FORMATS = {(1, True): "NWC", (1, False): "NCW", (2, True): "NHWC", (2, False): "NCHW",
            (3, True): "NDHWC", (3, False): "NCDHW"}


def _constraint(value):
    if value is None:
        return None
    if constraints is None:
        if callable(value):
            return value
        raise ValueError(f"ember.keras has no constraints module yet; pass a callable, got {value!r}")
    return constraints.get(value)


def _add_bias(y, bias, channels_last, rank):
    if channels_last:
        return y + bias
    return y + tf.reshape(bias, [-1] + [1] * rank)


class Conv(Layer):
    """The N-D convolution (N = ``rank``) that Conv1D/2D/3D are, with Keras 2's arguments."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.rank = rank
        if isinstance(filters, float):
            filters = int(filters)
        if filters is not None and filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                             f"Received filters={filters}.")
        self.filters = filters
        self.groups = groups or 1
        self.kernel_size = U.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = U.normalize_tuple(strides, rank, "strides")
        allowed = ("valid", "same", "causal") if rank == 1 else ("valid", "same")
        self.padding = U.normalize_padding(padding, allowed)
        self.data_format = U.normalize_data_format(data_format)
        self.dilation_rate = U.normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = _constraint(kernel_constraint)
        self.bias_constraint = _constraint(bias_constraint)
        if self.filters is not None and self.filters % self.groups != 0:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={self.groups}, filters={self.filters}")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")

    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    @property
    def _channel_axis(self):
        return -1 if self._channels_last else 1

    def _check_input(self, x):
        U.check_rank(self, x, self.rank + 2, _LAYOUTS[self.rank] if self._channels_last else "channels first")

    def _kernel_shape(self, in_channels):
        return self.kernel_size + (in_channels // self.groups, self.filters)

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        self._check_input(input_shape)
        in_channels = U.known_dim(self, input_shape, self._channel_axis, "input channels")
        if in_channels % self.groups != 0:
            raise U.input_error(self, f"a number of input channels divisible by groups={self.groups}",
                                f"{in_channels} (input shape {tuple(input_shape.as_list())})")
        self._in_channels = in_channels
        self.kernel = self.add_weight(name="kernel", shape=self._kernel_shape(in_channels),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        trainable=True, dtype=self.dtype)
        else:
            self.bias = None
        self.built = True

    def _convolve(self, x):
        fmt = _FORMATS[(self.rank, self._channels_last)]
        padding = self.padding.upper()
        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            x = tf.pad(x, [[0, 0], [left, 0], [0, 0]] if self._channels_last else [[0, 0], [0, 0], [left, 0]])
            padding = "VALID"
        if self.rank == 1:
            return tf.nn.conv1d(x, self.kernel, list(self.strides), padding, data_format=fmt,
                                dilations=list(self.dilation_rate))
        if self.rank == 2:
            return tf.nn.conv2d(x, self.kernel, list(self.strides), padding, data_format=fmt,
                                dilations=list(self.dilation_rate))
        return tf.nn.conv3d(x, self.kernel, [1, *self.strides, 1] if self._channels_last else [1, 1, *self.strides],
                            padding, data_format=fmt,
                            dilations=[1, *self.dilation_rate, 1] if self._channels_last else
                            [1, 1, *self.dilation_rate])

    def call(self, inputs):
        x = U.as_tensor(inputs, self.dtype)
        self._check_input(x)
        U.check_axis_size(self, x, self._channel_axis, self._in_channels, "input channels")
        y = self._convolve(x)
        if self.use_bias:
            y = _add_bias(y, self.bias, self._channels_last, self.rank)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def _spatial_output_shape(self, spatial):
        return [U.conv_output_length(n, k, self.padding, s, d)
                for n, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation_rate)]

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        if self._channels_last:
            return tf.TensorShape([shape[0], *self._spatial_output_shape(shape[1:-1]), self.filters])
        return tf.TensorShape([shape[0], self.filters, *self._spatial_output_shape(shape[2:])])

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
            "groups": self.groups, "activation": U.serialize("activations", self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": U.serialize("initializers", self.kernel_initializer),
            "bias_initializer": U.serialize("initializers", self.bias_initializer),
            "kernel_regularizer": U.serialize("regularizers", self.kernel_regularizer),
            "bias_regularizer": U.serialize("regularizers", self.bias_regularizer),
            "activity_regularizer": U.serialize("regularizers", self._activity_regularizer),
            "kernel_constraint": None if constraints is None else U.serialize("constraints", self.kernel_constraint),
            "bias_constraint": None if constraints is None else U.serialize("constraints", self.bias_constraint),
        })
        return config


class Conv1D(Conv):
    """1-D convolution over [batch, steps, channels]; ``padding="causal"`` pads on the left only."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation,
                         use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)


class Conv2D(Conv):
    """2-D convolution over [batch, rows, cols, channels] (channels_last, Keras's default)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1),
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation,
                         use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)


class Conv3D(Conv):
    """3-D convolution over [batch, depth, rows, cols, channels]."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation,
                         use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)


class Conv2DTranspose(Conv2D):
    """The transpose of Conv2D (Conv2DBackpropInput); ``kernel`` is [kh, kw, filters, in_channels]. The
    output size is Keras's ``deconv_output_length`` (``output_padding`` adds rows/cols after)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, **kwargs)
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = U.normalize_tuple(output_padding, 2, "output_padding", allow_zero=True)
            for stride, pad in zip(self.strides, self.output_padding):
                if pad >= stride:
                    raise ValueError(f"Strides must be greater than output padding. Received strides={self.strides}, "
                                     f"output_padding={self.output_padding}.")

    def _kernel_shape(self, in_channels):
        return self.kernel_size + (self.filters, in_channels)

    def _spatial_output_shape(self, spatial):
        pads = self.output_padding or (None, None)
        return [U.deconv_output_length(n, k, self.padding, p, s, d)
                for n, k, p, s, d in zip(spatial, self.kernel_size, pads, self.strides, self.dilation_rate)]

    def _convolve(self, x):
        shape = tf.shape(x)
        spatial_axes = (1, 2) if self._channels_last else (2, 3)
        out_hw = []
        pads = self.output_padding or (None, None)
        for i, axis in enumerate(spatial_axes):
            static = x.shape[axis]
            length = U.deconv_output_length(static, self.kernel_size[i], self.padding, pads[i], self.strides[i],
                                            self.dilation_rate[i])
            if length is None:
                length = self._dynamic_length(shape[axis], i, pads[i])
            out_hw.append(length)
        if self._channels_last:
            output_shape = tf.stack([shape[0], out_hw[0], out_hw[1], self.filters])
        else:
            output_shape = tf.stack([shape[0], self.filters, out_hw[0], out_hw[1]])
        return tf.nn.conv2d_transpose(x, self.kernel, output_shape, list(self.strides), self.padding.upper(),
                                      data_format=_FORMATS[(2, self._channels_last)],
                                      dilations=list(self.dilation_rate))

    def _dynamic_length(self, length, i, output_padding):
        """deconv_output_length on a dimension known only when the graph runs."""
        k = self.kernel_size[i] + (self.kernel_size[i] - 1) * (self.dilation_rate[i] - 1)
        s = self.strides[i]
        if output_padding is None:
            return length * s + (max(k - s, 0) if self.padding == "valid" else 0)
        pad = k // 2 if self.padding == "same" else 0
        return (length - 1) * s + k - 2 * pad + output_padding

    def get_config(self):
        config = super().get_config()
        config["output_padding"] = self.output_padding
        return config


class _DepthwiseKernel:
    """The depthwise half DepthwiseConv2D and SeparableConv2D share: its arguments, its kernel
    [kh, kw, in_channels, depth_multiplier], the bias and the config entries."""

    def _init_depthwise(self, depth_multiplier, initializer, regularizer, constraint):
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(initializer)
        self.depthwise_regularizer = regularizers.get(regularizer)
        self.depthwise_constraint = _constraint(constraint)

    def _build_depthwise(self, input_shape):
        """Checks the input, adds depthwise_kernel and returns the input's channels."""
        input_shape = tf.TensorShape(input_shape)
        self._check_input(input_shape)
        in_channels = U.known_dim(self, input_shape, self._channel_axis, "input channels")
        self._in_channels = in_channels
        self.depthwise_kernel = self.add_weight(
            name="depthwise_kernel", shape=self.kernel_size + (in_channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint, trainable=True, dtype=self.dtype)
        return in_channels

    def _build_bias(self):
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        trainable=True, dtype=self.dtype)
        else:
            self.bias = None
        self.built = True

    def _depthwise_config(self):
        return {
            "depth_multiplier": self.depth_multiplier,
            "depthwise_initializer": U.serialize("initializers", self.depthwise_initializer),
            "depthwise_regularizer": U.serialize("regularizers", self.depthwise_regularizer),
            "depthwise_constraint": None if constraints is None else
            U.serialize("constraints", self.depthwise_constraint),
        }


class DepthwiseConv2D(_DepthwiseKernel, Conv2D):
    """Each input channel convolved with its own ``depth_multiplier`` filters (DepthwiseConv2dNative);
    ``depthwise_kernel`` is [kh, kw, in_channels, depth_multiplier], the output has in * multiplier
    channels."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(None, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        self._init_depthwise(depth_multiplier, depthwise_initializer, depthwise_regularizer,
                             depthwise_constraint)

    def build(self, input_shape):
        self.filters = self._build_depthwise(input_shape) * self.depth_multiplier
        self._build_bias()

    def _convolve(self, x):
        last = self._channels_last
        strides = [1, *self.strides, 1] if last else [1, 1, *self.strides]
        return tf.nn.depthwise_conv2d(x, self.depthwise_kernel, strides, self.padding.upper(),
                                      data_format=_FORMATS[(2, last)], dilations=list(self.dilation_rate))

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        channels = shape[self._channel_axis]
        out_channels = None if channels is None else channels * self.depth_multiplier
        if self._channels_last:
            return tf.TensorShape([shape[0], *self._spatial_output_shape(shape[1:-1]), out_channels])
        return tf.TensorShape([shape[0], out_channels, *self._spatial_output_shape(shape[2:])])

    def get_config(self):
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key, None)
        config.update(self._depthwise_config())
        return config


Convolution1D, Convolution2D, Convolution3D, Convolution2DTranspose = Conv1D, Conv2D, Conv3D, Conv2DTranspose


class SeparableConv2D(_DepthwiseKernel, Conv2D):
    """A depthwise convolution (``depthwise_kernel`` [kh, kw, in, depth_multiplier]) followed by a 1x1
    pointwise one (``pointwise_kernel`` [1, 1, in * depth_multiplier, filters]): tf.nn.separable_conv2d."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        self._init_depthwise(depth_multiplier, depthwise_initializer, depthwise_regularizer,
                             depthwise_constraint)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = _constraint(pointwise_constraint)

    def build(self, input_shape):
        in_channels = self._build_depthwise(input_shape)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel", shape=(1, 1, in_channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, trainable=True, dtype=self.dtype)
        self._build_bias()

    def _convolve(self, x):
        last = self._channels_last
        strides = [1, *self.strides, 1] if last else [1, 1, *self.strides]
        return tf.nn.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel, strides, self.padding.upper(),
                                      data_format=_FORMATS[(2, last)], dilations=list(self.dilation_rate))

    def get_config(self):
        config = super().get_config()
        config.update(self._depthwise_config())
        config.update({
            "pointwise_initializer": U.serialize("initializers", self.pointwise_initializer),
            "pointwise_regularizer": U.serialize("regularizers", self.pointwise_regularizer),
            "pointwise_constraint": None if constraints is None else
            U.serialize("constraints", self.pointwise_constraint),
        })
        return config


SeparableConvolution2D = SeparableConv2D


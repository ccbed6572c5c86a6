"""Keras 2's convolution layers: Conv1D/2D/3D, Conv1D/2D/3DTranspose, DepthwiseConv1D/2D and SeparableConv2D,
on ember's convolution ops (docs/convolutions.md). Weights are Keras's, in its order and layouts: ``kernel``
[k..., in / groups, filters] (a transposed convolution's is [k..., filters, in]; a depthwise one's
``depthwise_kernel`` is [k..., in, depth_multiplier]), then ``bias``. The 1-D transposed and depthwise
convolutions run the 2-D ops over a height of 1, as tf_keras does."""

import ember as tf
from ember.keras import activations, initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U

try:
    from ember.keras import constraints
except ImportError:  # constraints are optional: a layer built without them needs none
    constraints = None

__all__ = ["Conv", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D",
           "SeparableConvolution2D", "Convolution1D",
           "Convolution2D", "Convolution3D", "Convolution1DTranspose", "Convolution2DTranspose",
           "Convolution3DTranspose"]

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
        y = U.in_float32(self._convolve, x)
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


class _Transposed:
    """What Conv1D/2D/3DTranspose add to their convolution: the transpose of it (the gradient of the
    convolution w.r.t. its input), ``kernel`` [k..., filters, in_channels], and an output size of Keras's
    ``deconv_output_length`` (``output_padding`` adds rows/cols after)."""

    # Keras 2's Conv3DTranspose accepts dilation_rate but never passes it to the op (nor counts it in the output
    # shape, nor writes it in its config): ember does the same, so that weights and configs carry over.
    _uses_dilation = True

    def _init_output_padding(self, output_padding):
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = U.normalize_tuple(output_padding, self.rank, "output_padding", allow_zero=True)
            for stride, pad in zip(self.strides, self.output_padding):
                if pad >= stride:
                    raise ValueError(f"Strides must be greater than output padding. Received strides={self.strides}, "
                                     f"output_padding={self.output_padding}.")

    def _kernel_shape(self, in_channels):
        return self.kernel_size + (self.filters, in_channels)

    def _dilations(self):
        return self.dilation_rate if self._uses_dilation else (1,) * self.rank

    def _spatial_output_shape(self, spatial):
        pads = self.output_padding or (None,) * self.rank
        return [U.deconv_output_length(n, k, self.padding, p, s, d)
                for n, k, p, s, d in zip(spatial, self.kernel_size, pads, self.strides, self._dilations())]

    def _output_shape(self, x):
        """The output's shape as a tensor: static where the input's spatial sizes are known."""
        shape = tf.shape(x)
        first_spatial = 1 if self._channels_last else 2
        pads = self.output_padding or (None,) * self.rank
        spatial = []
        for i in range(self.rank):
            axis = first_spatial + i
            length = U.deconv_output_length(x.shape[axis], self.kernel_size[i], self.padding, pads[i],
                                            self.strides[i], self._dilations()[i])
            spatial.append(self._dynamic_length(shape[axis], i, pads[i]) if length is None else length)
        if self._channels_last:
            return [shape[0], *spatial, self.filters]
        return [shape[0], self.filters, *spatial]

    def _dynamic_length(self, length, i, output_padding):
        """deconv_output_length on a dimension known only when the graph runs."""
        d = self._dilations()[i]
        k = self.kernel_size[i] + (self.kernel_size[i] - 1) * (d - 1)
        s = self.strides[i]
        if output_padding is None:
            return length * s + (max(k - s, 0) if self.padding == "valid" else 0)
        pad = k // 2 if self.padding == "same" else 0
        return (length - 1) * s + k - 2 * pad + output_padding

    def _convolve(self, x):
        last, padding = self._channels_last, self.padding.upper()
        output_shape = self._output_shape(x)
        if self.rank == 1:
            # As tf_keras (tf.nn.conv1d_transpose): the 2-D transpose over a height of 1.
            height_axis = 1 if last else 2
            output_shape.insert(height_axis, 1)
            y = tf.nn.conv2d_transpose(tf.expand_dims(x, height_axis), tf.expand_dims(self.kernel, 0),
                                       tf.stack(output_shape), [1, self.strides[0]], padding,
                                       data_format=_FORMATS[(2, last)], dilations=[1, self.dilation_rate[0]])
            return tf.squeeze(y, [height_axis])
        if self.rank == 2:
            return tf.nn.conv2d_transpose(x, self.kernel, tf.stack(output_shape), list(self.strides), padding,
                                          data_format=_FORMATS[(2, last)], dilations=list(self.dilation_rate))
        strides = [1, *self.strides, 1] if last else [1, 1, *self.strides]
        return tf.nn.conv3d_transpose(x, self.kernel, tf.stack(output_shape), strides, padding,
                                      data_format=_FORMATS[(3, last)])

    def get_config(self):
        config = super().get_config()
        if not self._uses_dilation:
            config.pop("dilation_rate")
        config["output_padding"] = self.output_padding
        return config


def _transposed_init(cls, default_stride):
    """The __init__ of the Conv{1,2,3}DTranspose layer over ``cls`` (Keras 2's arguments, output_padding
    added)."""

    def __init__(self, filters, kernel_size, strides=default_stride, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=default_stride, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        cls.__init__(self, filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                     dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                     kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                     kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                     activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                     bias_constraint=bias_constraint, **kwargs)
        if self.padding == "causal":
            raise ValueError(f"{type(self).__name__}: padding must be 'valid' or 'same'. Received: padding=causal")
        self._init_output_padding(output_padding)

    return __init__


class Conv1DTranspose(_Transposed, Conv1D):
    """The transpose of Conv1D over [batch, steps, channels]; ``kernel`` is [k, filters, in_channels]."""

    __init__ = _transposed_init(Conv1D, 1)


class Conv2DTranspose(_Transposed, Conv2D):
    """The transpose of Conv2D (Conv2DBackpropInput); ``kernel`` is [kh, kw, filters, in_channels]."""

    __init__ = _transposed_init(Conv2D, (1, 1))


class Conv3DTranspose(_Transposed, Conv3D):
    """The transpose of Conv3D (Conv3DBackpropInputV2); ``kernel`` is [kd, kh, kw, filters, in_channels].
    ``dilation_rate`` is accepted and ignored, as in Keras 2."""

    _uses_dilation = False
    __init__ = _transposed_init(Conv3D, (1, 1, 1))


class _DepthwiseKernel:
    """The depthwise half DepthwiseConv1D/2D and SeparableConv2D share: its arguments, its kernel
    [k..., in_channels, depth_multiplier], the bias and the config entries."""

    def _init_depthwise(self, depth_multiplier, initializer, regularizer, constraint):
        if self.padding == "causal":
            raise ValueError(f"{type(self).__name__}: padding must be 'valid' or 'same'. Received: padding=causal")
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


class _Depthwise(_DepthwiseKernel):
    """DepthwiseConv1D/2D: each input channel convolved with its own ``depth_multiplier`` filters
    (DepthwiseConv2dNative), the output has in * multiplier channels."""

    def build(self, input_shape):
        self.filters = self._build_depthwise(input_shape) * self.depth_multiplier
        self._build_bias()

    def _convolve(self, x):
        last = self._channels_last
        if self.rank == 2:
            strides = [1, *self.strides, 1] if last else [1, 1, *self.strides]
            return tf.nn.depthwise_conv2d(x, self.depthwise_kernel, strides, self.padding.upper(),
                                          data_format=_FORMATS[(2, last)], dilations=list(self.dilation_rate))
        # 1-D, as tf_keras: the 2-D op over a height of 1.
        height_axis = 1 if last else 2
        stride = self.strides[0]
        y = tf.nn.depthwise_conv2d(tf.expand_dims(x, height_axis), tf.expand_dims(self.depthwise_kernel, 0),
                                   [1, stride, stride, 1] if last else [1, 1, stride, stride],
                                   self.padding.upper(), data_format=_FORMATS[(2, last)],
                                   dilations=[1, self.dilation_rate[0]])
        return tf.squeeze(y, [height_axis])

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


def _depthwise_init(cls, default_stride):
    """The __init__ of the DepthwiseConv{1,2}D layer over ``cls``, with Keras 2's arguments."""

    def __init__(self, kernel_size, strides=default_stride, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=default_stride, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        cls.__init__(self, None, kernel_size, strides=strides, padding=padding, data_format=data_format,
                     dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                     bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                     activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        self._init_depthwise(depth_multiplier, depthwise_initializer, depthwise_regularizer, depthwise_constraint)

    return __init__


class DepthwiseConv1D(_Depthwise, Conv1D):
    """The depthwise convolution over [batch, steps, channels]; ``depthwise_kernel`` is [k, in_channels,
    depth_multiplier]."""

    __init__ = _depthwise_init(Conv1D, 1)


class DepthwiseConv2D(_Depthwise, Conv2D):
    """The depthwise convolution over [batch, rows, cols, channels]; ``depthwise_kernel`` is [kh, kw,
    in_channels, depth_multiplier]."""

    __init__ = _depthwise_init(Conv2D, (1, 1))


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose = Conv1DTranspose, Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose


class _Separable(_DepthwiseKernel):
    """A depthwise convolution (``depthwise_kernel`` [k..., in, depth_multiplier]) followed by a pointwise
    one (``pointwise_kernel`` [1..., in * depth_multiplier, filters]): tf.nn.separable_conv2d, over a
    length-1 row for the 1-D layer."""

    def __init__(self, filters, kernel_size, strides, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint, **kwargs)
        causal = self.padding == "causal"
        if causal and self.rank == 1:
            self.padding = "valid"  # checked as valid; the left padding is added in _convolve
        self._init_depthwise(depth_multiplier, depthwise_initializer, depthwise_regularizer,
                             depthwise_constraint)
        self.padding = "causal" if causal else self.padding
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = _constraint(pointwise_constraint)

    def build(self, input_shape):
        in_channels = self._build_depthwise(input_shape)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel", shape=(1,) * self.rank + (in_channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, trainable=True, dtype=self.dtype)
        self._build_bias()

    def _convolve(self, x):
        last = self._channels_last
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        strides, dilations, padding = list(self.strides), list(self.dilation_rate), self.padding.upper()
        if self.rank == 1:
            if self.padding == "causal":
                left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
                x = tf.pad(x, [[0, 0], [left, 0], [0, 0]] if last else [[0, 0], [0, 0], [left, 0]])
                padding = "VALID"
            x = tf.expand_dims(x, 1 if last else 2)  # a row of height 1: [batch, 1, steps, channels]
            depthwise, pointwise = tf.expand_dims(depthwise, 0), tf.expand_dims(pointwise, 0)
            strides, dilations = [1, *strides], [1, *dilations]
        y = tf.nn.separable_conv2d(x, depthwise, pointwise, [1, *strides, 1] if last else [1, 1, *strides],
                                   padding, data_format=_FORMATS[(2, last)], dilations=dilations)
        return tf.squeeze(y, [1 if last else 2]) if self.rank == 1 else y

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


class SeparableConv1D(_Separable, Conv1D):
    """The separable convolution over [batch, steps, channels] (``padding="causal"`` pads on the left)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format or "channels_last", dilation_rate,
                         **kwargs)


class SeparableConv2D(_Separable, Conv2D):
    """The separable convolution over [batch, rows, cols, channels]."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)


SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D


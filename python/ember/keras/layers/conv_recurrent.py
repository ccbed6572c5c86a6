"""Keras 2's convolutional LSTMs: ConvLSTM1D, ConvLSTM2D and ConvLSTM3D (Shi et al. 2015): an LSTM whose
input and recurrent transformations are convolutions, over [batch, steps, spatial..., channels].

Weights are tf_keras's: ``kernel`` [k..., in_channels, 4 * filters], ``recurrent_kernel`` [k..., filters,
4 * filters], ``bias`` [4 * filters], gates i, f, c, o along the last axis. The input convolution uses the
layer's strides, padding and dilation; the recurrent one stride 1 and "same" padding, so the state keeps the
output's spatial size.

As in ``recurrent.py`` (Note [How the loop runs]) the input convolution of every step is one convolution
over the steps folded into the batch, done before the loop; a step is then one convolution of the state by
the whole recurrent kernel (the four gates at once: a convolution is linear in its output channels) and the
gate arithmetic. The loop, masks, ``go_backwards``, ``return_sequences``/``return_state`` and ``stateful``
are the RNN layer's.
"""

import ember as tf
from ember.keras.engine.base_layer import unique_object_name
from ember.keras.layers import _layer_utils as U
from ember.keras.layers.recurrent import RNN, LSTMCell

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "ConvLSTM1DCell", "ConvLSTM2DCell", "ConvLSTM3DCell"]

_FORMATS = {(1, True): "NWC", (1, False): "NCW", (2, True): "NHWC", (2, False): "NCHW", (3, True): "NDHWC",
            (3, False): "NCDHW"}
_CELL_ARGS = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation",
              "recurrent_activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
              "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
              "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout")


class _ConvLSTMCell(LSTMCell):
    """One ConvLSTM step over [batch, spatial..., channels] (``rank`` spatial axes): LSTMCell's gates, with
    convolutions for its matmuls."""

    rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="hard_sigmoid", **kwargs):
        super().__init__(int(filters), activation=activation, recurrent_activation=recurrent_activation, **kwargs)
        self.filters = self.units
        self.kernel_size = U.normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = U.normalize_tuple(strides, self.rank, "strides")
        self.padding = U.normalize_padding(padding)
        self.data_format = U.normalize_data_format(data_format)
        self.dilation_rate = U.normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        self._gate_axis = -1 if self._channels_last else 1

    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)  # one step: [batch, spatial..., channels]
        channel_axis = -1 if self._channels_last else 1
        in_channels = U.known_dim(self, input_shape, channel_axis, "input channels")
        self._in_channels = in_channels
        n = 4 * self.filters
        self.kernel = self.add_weight(name="kernel", shape=self.kernel_size + (in_channels, n),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype)
        self.recurrent_kernel = self.add_weight(name="recurrent_kernel", shape=self.kernel_size + (self.filters, n),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(n,), initializer=self._bias_initializer(),
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self.dtype)
        else:
            self.bias = None
        self.built = True

    def _conv(self, x, kernel, strides, padding, dilations):
        if x.dtype in (tf.float16, tf.bfloat16):  # mixed precision: ember's convolutions are float32/float64
            return tf.cast(self._conv(tf.cast(x, tf.float32), tf.cast(kernel, tf.float32), strides, padding,
                                      dilations), x.dtype)
        fmt = _FORMATS[(self.rank, self._channels_last)]
        padding = padding.upper()
        if self.rank == 1:
            return tf.nn.conv1d(x, kernel, list(strides), padding, data_format=fmt, dilations=list(dilations))
        if self.rank == 2:
            return tf.nn.conv2d(x, kernel, list(strides), padding, data_format=fmt, dilations=list(dilations))
        last = self._channels_last
        return tf.nn.conv3d(x, kernel, [1, *strides, 1] if last else [1, 1, *strides], padding, data_format=fmt,
                            dilations=[1, *dilations, 1] if last else [1, 1, *dilations])

    def _add_bias(self, z):
        if self._channels_last:
            return z + self.bias
        return z + tf.reshape(self.bias, [-1] + [1] * self.rank)

    def project(self, x):
        """The input convolution (and bias) of [..., spatial..., channels] inputs: every step at once when
        ``x`` is [steps, batch, ...]."""
        if x.shape.rank == self.rank + 2:
            z = self._conv(x, self.kernel, self.strides, self.padding, self.dilation_rate)
            return self._add_bias(z) if self.use_bias else z
        shape = tf.shape(x)
        folded = tf.reshape(x, tf.concat([[-1], shape[2:]], 0))
        z = self._conv(folded, self.kernel, self.strides, self.padding, self.dilation_rate)
        if self.use_bias:
            z = self._add_bias(z)
        return tf.reshape(z, tf.concat([shape[:2], tf.shape(z)[1:]], 0))

    def _recurrent(self, h):
        return self._conv(h, self.recurrent_kernel, (1,) * self.rank, "same", (1,) * self.rank)

    def output_spatial_shape(self, spatial):
        return [U.conv_output_length(n, k, self.padding, s, d)
                for n, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation_rate)]

    def get_config(self):
        config = super().get_config()
        config.pop("units")
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
        })
        return config


class ConvLSTM1DCell(_ConvLSTMCell):
    rank = 1


class ConvLSTM2DCell(_ConvLSTMCell):
    rank = 2


class ConvLSTM3DCell(_ConvLSTMCell):
    rank = 3


class _ConvLSTM(RNN):
    """The RNN layer over a ConvLSTM cell, with the cell's arguments as the layer's (tf_keras's ConvLSTM*D)."""

    _cell_class = None
    _cell_args = _CELL_ARGS

    def __init__(self, filters, kernel_size, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, **kwargs):
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _CELL_ARGS}
        kwargs.pop("unroll", None)
        kwargs.pop("time_major", None)  # tf_keras writes both in the config and takes neither
        if kwargs.get("name") is None:  # tf_keras' "conv_lstm2d" (the generic rule would give "conv_lstm2_d")
            kwargs["name"] = unique_object_name(f"conv_lstm{self._cell_class.rank}d")
        cell = self._cell_class(filters, kernel_size, dtype=kwargs.get("dtype"), name="conv_lstm_cell",
                                **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, **kwargs)

    @property
    def rank(self):
        return self.cell.rank

    def _layout(self):
        spatial = {1: "steps", 2: "rows, cols", 3: "depth, rows, cols"}[self.rank]
        if self.cell._channels_last:
            return f"[batch, time, {spatial}, channels]"
        return f"[batch, time, channels, {spatial}]"

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        U.check_rank(self, input_shape, self.rank + 3, self._layout())
        batch = input_shape[0]
        channel_axis = -1 if self.cell._channels_last else 2
        U.known_dim(self, input_shape, channel_axis, "input channels")
        if not self.cell.built:
            self.cell.build(tf.TensorShape([batch] + input_shape.as_list()[2:]))
        self._input_dim = int(input_shape[channel_axis])
        self._ember_input_shape = input_shape
        if self.stateful:
            self._ember_batch_size = batch
            self._make_state_variables()
        self.built = True

    def _check_input(self, x):
        U.check_rank(self, x, self.rank + 3, self._layout())
        U.check_axis_size(self, x, -1 if self.cell._channels_last else 2, self._input_dim, "input channels")
        if self.stateful:
            U.check_axis_size(self, x, 0, self._ember_batch_size,
                              "examples per batch (the batch size of a stateful RNN is fixed at build)")

    def _state_spatial(self, spatial):
        return self.cell.output_spatial_shape(spatial)

    def _state_shapes(self, batch):
        shape = self._ember_input_shape.as_list()
        spatial = shape[2:-1] if self.cell._channels_last else shape[3:]
        out = self._state_spatial(spatial)
        if any(d is None for d in out):
            raise ValueError(f"{type(self).__name__} '{self.name}': a stateful layer needs the spatial size of its "
                             f"input known at build, got input shape {tuple(shape)}")
        f = self.cell.filters
        return [[batch, *out, f] if self.cell._channels_last else [batch, f, *out]] * 2

    def _zero_states(self, x, batch):
        """Zeros of the input convolution's output shape (x is time-major)."""
        cell, last = self.cell, self.cell._channels_last
        shape = tf.shape(x)
        first = 2 if last else 3
        spatial = []
        for i, n in enumerate(self._state_spatial(x.shape.as_list()[first:first + self.rank])):
            if n is None:  # known when the graph runs: conv_output_length of the dynamic size
                k = cell.kernel_size[i] + (cell.kernel_size[i] - 1) * (cell.dilation_rate[i] - 1)
                n = shape[first + i] if cell.padding == "same" else shape[first + i] - k + 1
                n = (n + cell.strides[i] - 1) // cell.strides[i]
            spatial.append(n)
        dims = [batch, *spatial, cell.filters] if last else [batch, cell.filters, *spatial]
        zeros = tf.zeros(tf.stack(dims), x.dtype)
        return [zeros, zeros]

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        last = self.cell._channels_last
        spatial = self._state_spatial(shape[2:-1] if last else shape[3:])
        f = self.cell.filters
        step = [shape[0], *spatial, f] if last else [shape[0], f, *spatial]
        out = tf.TensorShape(step[:1] + [shape[1]] + step[1:] if self.return_sequences else step)
        if self.return_state:
            return [out, tf.TensorShape(step), tf.TensorShape(step)]
        return out

    def get_config(self):
        config = super().get_config()
        config["activity_regularizer"] = U.serialize("regularizers", self._activity_regularizer)
        return config


class ConvLSTM1D(_ConvLSTM):
    """The convolutional LSTM over [batch, time, steps, channels]."""

    _cell_class = ConvLSTM1DCell


class ConvLSTM2D(_ConvLSTM):
    """The convolutional LSTM over [batch, time, rows, cols, channels]."""

    _cell_class = ConvLSTM2DCell


class ConvLSTM3D(_ConvLSTM):
    """The convolutional LSTM over [batch, time, depth, rows, cols, channels]."""

    _cell_class = ConvLSTM3DCell

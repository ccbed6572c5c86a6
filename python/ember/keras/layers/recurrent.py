"""Keras 2's recurrent layers: SimpleRNN, LSTM and GRU (and their cells, and ``RNN`` over a cell), and
Bidirectional.

Weights are Keras's, in its order and gate layout, so ``set_weights`` of a tf_keras layer's weights gives
the same outputs: ``kernel`` [input_dim, gates * units], ``recurrent_kernel`` [units, gates * units], ``bias``
(LSTM gates i, f, c, o; GRU gates z, r, h with ``bias`` [2, 3 * units] when ``reset_after``, Keras 2's default).

Note [How the loop runs]
The input's contribution to every gate (``x @ kernel + bias``) does not depend on the state, so it is one
matmul over all steps at once before the loop; a step is then one [batch, units] @ [units, gates * units]
matmul and the element-wise gate arithmetic. When the number of steps is known while tracing (and at most
``_MAX_UNROLLED_STEPS``) the steps are unrolled in Python into one straight graph, which autodiff turns into
one straight backward graph: no per-iteration loop bookkeeping, and no TensorArray gradient accumulating
[steps, batch, gates * units] per step. A sequence of unknown length runs as a ``while_loop`` over
TensorArrays. The two give the same values (the tests check both against tf_keras).

Keras's standard LSTM (tanh and sigmoid) in float32, with its number of steps known, no mask and no
recurrent dropout, is one op instead: TensorFlow's BlockLSTMV2 (gate layout i, f, c, o, as Keras's weights;
w = [kernel; recurrent_kernel]), whose kernel does the same hoisted GEMM and then one GEMM and one pass over
the gates per step (Note [One kernel for an LSTM sequence] in kernels/lstm.cc); its gradient is
BlockLSTMGradV2, which, like TensorFlow's, has no gradient itself, so a gradient that a tape records (second
order) runs on the plain unrolled steps instead (``_block_lstm``). Other dtypes (float64, mixed precision) keep
the unrolled steps with their own backward pass (``_lstm_sequence``).
"""

import ember as tf
from ember.keras import activations, initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U
from ember.keras.layers.convolutional import _constraint, constraints

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell", "Bidirectional",
           "StackedRNNCells", "AbstractRNNCell"]

_MAX_UNROLLED_STEPS = 400  # above this the traced graph (and its gradient) would be too large to be worth it


def _zeros_state(batch, units, dtype):
    return tf.zeros(tf.stack([batch, units]), dtype=dtype)


def _dropout_mask(like, rate):
    """A [batch, n] mask scaled by 1 / (1 - rate), drawn once per call and applied at every step (Keras's
    recurrent dropout: the same units are dropped for the whole sequence)."""
    keep = tf.random.uniform(tf.shape(like), dtype=like.dtype) >= rate
    return tf.cast(keep, like.dtype) / (1.0 - rate)


class _Cell(Layer):
    """What the three cells share: Keras's arguments and weights. Subclasses give ``_gates`` (gates per unit)
    and ``_step(x_proj, states, h_mask)``: one step from the projected input."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        kwargs.pop("implementation", None)  # Keras's choice of kernels; the results do not depend on it
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units!r}.")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = _constraint(kernel_constraint)
        self.recurrent_constraint = _constraint(recurrent_constraint)
        self.bias_constraint = _constraint(bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        input_dim = U.known_dim(self, input_shape, -1, "input features")
        self._input_dim = input_dim
        n = self._gates * self.units
        self.kernel = self.add_weight(name="kernel", shape=(input_dim, n), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self.dtype)
        self.recurrent_kernel = self.add_weight(name="recurrent_kernel", shape=(self.units, n),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=self._bias_shape(), initializer=self._bias_initializer(),
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self.dtype)
        else:
            self.bias = None
        self.built = True

    def _input_bias(self):
        return self.bias

    def project(self, x):
        """x @ kernel + the input bias, for x of shape [..., input_dim] (all steps at once)."""
        shape = tf.shape(x)
        flat = tf.reshape(x, [-1, self._input_dim])
        z = tf.matmul(flat, self.kernel)
        bias = self._input_bias() if self.use_bias else None
        if bias is not None:
            z = z + bias
        if x.shape.rank == 2:
            return z
        return tf.reshape(z, tf.concat([shape[:-1], [self._gates * self.units]], 0))

    def initial_states(self, batch, dtype):
        return [_zeros_state(batch, self.units, dtype)]

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            batch_size, dtype = tf.shape(inputs)[0], inputs.dtype
        states = self.initial_states(batch_size, dtype or tf.float32)
        return states[0] if len(states) == 1 else states

    def call(self, inputs, states, training=None):
        """Keras's cell API: one step from [batch, input_dim] and the list of states."""
        x = U.as_tensor(inputs, self.dtype)
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        if training and self.dropout > 0:
            x = x * _dropout_mask(x, self.dropout)
        h_mask = _dropout_mask(states[0], self.recurrent_dropout) if training and self.recurrent_dropout > 0 \
            else None
        out, new_states = self._step(self.project(x), states, h_mask)
        return out, new_states

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": U.serialize("activations", self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": U.serialize("initializers", self.kernel_initializer),
            "recurrent_initializer": U.serialize("initializers", self.recurrent_initializer),
            "bias_initializer": U.serialize("initializers", self.bias_initializer),
            "kernel_regularizer": U.serialize("regularizers", self.kernel_regularizer),
            "recurrent_regularizer": U.serialize("regularizers", self.recurrent_regularizer),
            "bias_regularizer": U.serialize("regularizers", self.bias_regularizer),
            "kernel_constraint": None if constraints is None else U.serialize("constraints", self.kernel_constraint),
            "recurrent_constraint": None if constraints is None else
            U.serialize("constraints", self.recurrent_constraint),
            "bias_constraint": None if constraints is None else U.serialize("constraints", self.bias_constraint),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
        })
        return config


class SimpleRNNCell(_Cell):
    """h = activation(x @ kernel + bias + h @ recurrent_kernel)."""

    def _step(self, xp, states, h_mask):
        h = states[0]
        h_in = h if h_mask is None else h * h_mask
        h = tf.matmul(h_in, self.recurrent_kernel) + xp
        if self.activation is not None:
            h = self.activation(h)
        return h, [h]


class LSTMCell(_Cell):
    """Keras's LSTM step, gates i, f, c, o; ``unit_forget_bias`` starts the forget gate's bias at one."""

    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = self.bias_initializer, self.units

        def init(shape, dtype=None, **kwargs):
            return tf.concat([base((units,), dtype=dtype), tf.ones((units,), dtype=dtype),
                              base((2 * units,), dtype=dtype)], 0)

        return init

    def initial_states(self, batch, dtype):
        return [_zeros_state(batch, self.units, dtype), _zeros_state(batch, self.units, dtype)]

    _gate_axis = -1  # where the four gates' pre-activations lie side by side

    def _recurrent(self, h):
        """The recurrent transformation of the state (all four gates)."""
        return tf.matmul(h, self.recurrent_kernel)

    def _step(self, xp, states, h_mask):
        h, c = states
        h_in = h if h_mask is None else h * h_mask
        z = xp + self._recurrent(h_in)
        zi, zf, zc, zo = tf.split(z, 4, axis=self._gate_axis)
        act, rec = self.activation, self.recurrent_activation
        c = rec(zf) * c + rec(zi) * act(zc)
        h = rec(zo) * act(c)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": U.serialize("activations", self.recurrent_activation),
                       "unit_forget_bias": self.unit_forget_bias})
        return config


class GRUCell(_Cell):
    """Keras's GRU step, gates z, r, h. With ``reset_after`` (Keras 2's default, cuDNN's form) the reset gate
    multiplies the recurrent part after its matmul and ``bias`` is [2, 3 * units] (input, recurrent)."""

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def _step(self, xp, states, h_mask):
        h = states[0]
        h_in = h if h_mask is None else h * h_mask
        act, rec, n = self.activation, self.recurrent_activation, self.units
        xz, xr, xh = tf.split(xp, 3, axis=-1)
        if self.reset_after:
            inner = tf.matmul(h_in, self.recurrent_kernel)
            if self.use_bias:
                inner = inner + self.bias[1]
            rz, rr, rh = tf.split(inner, 3, axis=-1)
            z = rec(xz + rz)
            r = rec(xr + rr)
            hh = act(xh + r * rh)
        else:
            inner = tf.matmul(h_in, self.recurrent_kernel[:, :2 * n])
            rz, rr = tf.split(inner, 2, axis=-1)
            z = rec(xz + rz)
            r = rec(xr + rr)
            hh = act(xh + tf.matmul(r * h_in, self.recurrent_kernel[:, 2 * n:]))
        h = z * h + (1.0 - z) * hh
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": U.serialize("activations", self.recurrent_activation),
                       "reset_after": self.reset_after})
        return config


def _as_list(states):
    if states is None:
        return None
    return list(states) if isinstance(states, (list, tuple)) else [states]


class RNN(Layer):
    """A cell run over the steps of [batch, steps, features] (``time_major``: [steps, batch, features]).
    Returns the last output, or every step's (``return_sequences``), followed by the final states
    (``return_state``). ``go_backwards`` runs the steps last to first (and returns the outputs in that
    order, as Keras). A ``mask`` [batch, steps] keeps the state and repeats the previous output at masked
    steps (zeros instead with ``zero_output_for_mask``)."""

    # The arguments of the cell a layer makes itself (SimpleRNN/LSTM/GRU, ConvLSTM*D): Keras shows them, and the
    # cell's weights, as the layer's attributes and config entries. None for an RNN over a given cell.
    _cell_args = ()

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, time_major=False, **kwargs):
        self.zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"Argument `cell` should have a `call` method and a `state_size` attribute. "
                             f"Received: cell={cell!r}")
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll  # accepted for Keras's API; ember chooses the loop itself (Note [How the loop runs])
        self.time_major = time_major
        self.supports_masking = True

    # Note [Stateful RNNs]
    # With ``stateful=True`` the final states of a call are the initial states of the next: they live in
    # non-trainable variables of [batch, units] made at build (so the batch size must be known then: from
    # ``batch_input_shape``, ``Input(batch_size=...)`` or the first eager call), read at the start of a call
    # and assigned at its end, in eager code and in traced functions alike (``fit``'s step). As in tf_keras
    # they are not weights (``weights``, ``get_weights`` and checkpoints leave them out); ``reset_states``
    # sets them to zeros or to given values.

    @property
    def states(self):
        """The state variables of a stateful layer once built; [None] per state otherwise, as tf_keras."""
        states = self.__dict__.get("_ember_states")
        if states is not None:
            return list(states)
        return [None] * len(_as_list(self.cell.state_size))

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        U.check_rank(self, input_shape, 3, "[steps, batch, features]" if self.time_major else
                     "[batch, steps, features]")
        batch = input_shape[1 if self.time_major else 0]
        step_shape = tf.TensorShape([batch, input_shape[-1]])
        U.known_dim(self, input_shape, -1, "input features")
        if not getattr(self.cell, "built", False):
            self.cell.build(step_shape)
            self.cell.built = True
        self._input_dim = int(input_shape[-1])
        if self.stateful:
            self._ember_batch_size = batch
            self._make_state_variables()
        self.built = True

    def _make_state_variables(self):
        batch = self.__dict__.get("_ember_batch_size")
        if batch is None:
            raise ValueError(
                "If a RNN is stateful, it needs to know its batch size. Specify the batch size of your input "
                "tensors: \n- If using a Sequential model, specify the batch size by passing a `batch_input_shape` "
                "argument to your first layer.\n- If using the functional API, specify the batch size by passing a "
                "`batch_shape` argument to your Input layer.")
        dtype = self._ember_compute_dtype  # the states are what the cell computes
        with tf.init_scope():  # made eagerly even when the layer is first built inside a trace
            self._ember_states = [tf.Variable(tf.zeros(shape, dtype), trainable=False, name="Variable")
                                  for shape in self._state_shapes(batch)]

    def reset_states(self, states=None):
        """Sets a stateful layer's states to zeros, or to ``states`` (one array per state, [batch, units])."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if self.__dict__.get("_ember_states") is None:
            self._make_state_variables()
        variables = self._ember_states
        if states is None:
            for variable in variables:
                variable.assign(tf.zeros(variable.shape, variable.dtype))
            return
        values = _as_list(states)
        if len(values) != len(variables):
            raise ValueError(f"Layer {self.name} expects {len(variables)} states, but it received {len(values)} "
                             f"state values. States received: {states}")
        for i, (variable, value) in enumerate(zip(variables, values)):
            value = U.as_tensor(value, variable.dtype)
            if value.shape.as_list() != variable.shape.as_list():
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape="
                                 f"{tuple(variable.shape.as_list())} but found shape={tuple(value.shape.as_list())}")
            variable.assign(value)

    def _check_input(self, x):
        U.check_rank(self, x, 3, "[steps, batch, features]" if self.time_major else "[batch, steps, features]")
        U.check_axis_size(self, x, -1, self._input_dim, "input features")
        if self.stateful:
            U.check_axis_size(self, x, 1 if self.time_major else 0, self._ember_batch_size,
                              "examples per batch (the batch size of a stateful RNN is fixed at build)")

    def call(self, inputs, mask=None, training=None, initial_state=None):
        x = U.as_tensor(inputs, self.dtype)
        self._check_input(x)
        swap = [1, 0] + list(range(2, x.shape.rank))  # batch-major <-> time-major
        if not self.time_major:
            x = tf.transpose(x, swap)  # time-major: step t is x[t]
        batch = tf.shape(x)[1]
        cell = self.cell
        n_states = len(_as_list(cell.state_size))
        states = _as_list(initial_state)
        if states is None and self.stateful:
            states = [v.read_value() for v in self._ember_states]
        if states is None:
            states = self._zero_states(x, batch) if isinstance(cell, _Cell) else \
                _as_list(cell.get_initial_state(inputs=tf.transpose(x, swap), batch_size=batch, dtype=x.dtype))
        else:
            if len(states) != n_states:
                raise U.input_error(self, f"initial_state of {n_states} tensor(s) (the cell's states)",
                                    f"{len(states)}")
            states = [U.as_tensor(s, x.dtype) for s in states]
        if mask is not None:
            mask = tf.transpose(tf.cast(U.as_tensor(mask), tf.bool), [1, 0])
        if self.go_backwards:
            x = tf.reverse(x, [0])
            if mask is not None:
                mask = tf.reverse(mask, [0])
        training = bool(training) if not isinstance(training, tf.Tensor) else training
        last, outputs, states = self._run(x, states, mask, training)
        if self.stateful:
            for variable, value in zip(self._ember_states, states):
                variable.assign(value)
        if self.return_sequences:
            output = outputs if self.time_major else tf.transpose(outputs, swap)
        else:
            output = last
        if self.return_state:
            return [output] + list(states)
        return output

    def _zero_states(self, x, batch):
        """The initial states when none are given, for the time-major input ``x``."""
        return self.cell.initial_states(batch, x.dtype)

    def _state_shapes(self, batch):
        """The shapes of a stateful layer's state variables."""
        return [[batch, size] for size in _as_list(self.cell.state_size)]

    def _run(self, x, states, mask, training):
        """(last output, [steps, batch, units] outputs or None, final states) of the cell over x (time-major)."""
        cell = self.cell
        fast = isinstance(cell, _Cell)
        h_mask = None
        if fast:
            if training is True and cell.dropout > 0:
                x = x * _dropout_mask(x[0], cell.dropout)
            if training is True and cell.recurrent_dropout > 0:
                h_mask = _dropout_mask(states[0], cell.recurrent_dropout)
            if (mask is None and h_mask is None and _is_standard_lstm(cell) and x.dtype == tf.float32
                    and x.shape[0] is not None and 0 < x.shape[0]):
                return self._block_lstm(x, states)  # Note [How the loop runs]
            inputs = cell.project(x)  # Note [How the loop runs]
            step = lambda xt, s: cell._step(xt, s, h_mask)  # noqa: E731
        else:
            inputs = x
            step = lambda xt, s: _user_cell_step(cell, xt, s, training)  # noqa: E731
        prev_out = tf.zeros_like(states[0]) if fast else None
        steps = x.shape[0]
        if steps is not None and steps <= _MAX_UNROLLED_STEPS:
            if mask is None and h_mask is None and steps > 0 and _is_standard_lstm(cell):
                kernel = tf.convert_to_tensor(cell.recurrent_kernel)  # a tensor: its gradient flows to the variable
                outputs, h, c = _lstm_sequence(inputs, states[0], states[1], kernel)
                return h, (outputs if self.return_sequences else None), [h, c]
            return self._unrolled(step, inputs, states, mask, prev_out, steps)
        return self._while(step, inputs, states, mask, prev_out)

    def _block_lstm(self, x, states):
        """The standard float32 LSTM over the time-major x as one BlockLSTMV2 op (Note [How the loop runs])."""
        cell = self.cell
        bias = tf.convert_to_tensor(cell.bias) if cell.use_bias else tf.zeros([4 * cell.units], x.dtype)
        # Tensors, not variables: their gradients flow on to the variables.
        h_seq, c = _block_lstm(x, states[0], states[1], tf.convert_to_tensor(cell.kernel),
                               tf.convert_to_tensor(cell.recurrent_kernel), bias)
        h = h_seq[-1]
        return h, (h_seq if self.return_sequences else None), [h, c]

    def _masked(self, mask_t, out, new_states, prev_out, states):
        keep = tf.reshape(mask_t, [-1] + [1] * (out.shape.rank - 1))  # [batch, 1, ...]: one flag per example
        new_states = [tf.where(keep, n, o) for n, o in zip(new_states, states)]
        carried = tf.where(keep, out, prev_out)
        emitted = tf.where(keep, out, tf.zeros_like(out)) if self.zero_output_for_mask else carried
        return emitted, carried, new_states

    def _unrolled(self, step, inputs, states, mask, prev_out, steps):
        xs = tf.unstack(inputs, num=steps, axis=0)
        masks = tf.unstack(mask, num=steps, axis=0) if mask is not None else None
        outs = []
        out = prev_out
        for t in range(steps):
            new_out, new_states = step(xs[t], states)
            if masks is not None:
                if out is None:
                    out = tf.zeros_like(new_out)
                emitted, out, states = self._masked(masks[t], new_out, new_states, out, states)
            else:
                emitted, out, states = new_out, new_out, list(new_states)
            if self.return_sequences:
                outs.append(emitted)
        if steps == 0:
            raise U.input_error(self, "at least one step", "an input with 0 steps")
        return out, (tf.stack(outs, 0) if self.return_sequences else None), states

    def _while(self, step, inputs, states, mask, prev_out):
        n = tf.shape(inputs)[0]
        ta_in = tf.TensorArray(inputs.dtype, size=n, element_shape=inputs.shape[1:]).unstack(inputs)
        ta_mask = tf.TensorArray(tf.bool, size=n, element_shape=mask.shape[1:]).unstack(mask) \
            if mask is not None else None
        if prev_out is None:  # a user cell: its output's shape is known after one step
            prev_out = tf.zeros_like(step(inputs[0], states)[0])
        sequences = self.return_sequences
        # The output array starts as a dense [steps, batch, units] buffer: an empty array's buffer would be
        # created at the first write, with a shape that the loop's gradient cannot stack across iterations.
        extra = [tf.TensorArray(inputs.dtype, size=n, element_shape=prev_out.shape).unstack(
            tf.zeros(tf.concat([[n], tf.shape(prev_out)], 0), inputs.dtype))] if sequences else []

        def body(t, out, *rest):
            ta_out, states = (rest[0], list(rest[1:])) if sequences else (None, list(rest))
            new_out, new_states = step(ta_in.read(t), states)
            if ta_mask is not None:
                emitted, out, new_states = self._masked(ta_mask.read(t), new_out, new_states, out, states)
            else:
                emitted, out = new_out, new_out
            written = [ta_out.write(t, emitted)] if sequences else []
            return (t + 1, out, *written, *new_states)

        result = tf.while_loop(lambda t, *_: t < n, body, (tf.constant(0), prev_out, *extra, *states))
        last = result[1]
        outputs = result[2].stack() if sequences else None
        return last, outputs, list(result[3 if sequences else 2:])

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        out_mask = mask if self.return_sequences else None
        if self.return_state:
            return [out_mask] + [None] * len(_as_list(self.cell.state_size))
        return out_mask

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape).as_list()
        batch, steps = (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])
        units = _as_list(self.cell.output_size if hasattr(self.cell, "output_size") else self.cell.state_size)[0]
        if self.return_sequences:
            out = tf.TensorShape([steps, batch, units] if self.time_major else [batch, steps, units])
        else:
            out = tf.TensorShape([batch, units])
        if self.return_state:
            return [out] + [tf.TensorShape([batch, s]) for s in _as_list(self.cell.state_size)]
        return out

    def __getattr__(self, name):
        if name in type(self)._cell_args or (type(self)._cell_args and name in ("kernel", "recurrent_kernel", "bias")):
            cell = self.__dict__.get("cell")
            if cell is not None:
                return getattr(cell, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def get_config(self):
        config = super().get_config()
        config.update({"return_sequences": self.return_sequences, "return_state": self.return_state,
                       "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                       "time_major": self.time_major})
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
        cell_config = self.cell.get_config() if self._cell_args else {}
        config.update({key: cell_config[key] for key in self._cell_args if key in cell_config})
        if not self._cell_args:  # an RNN over a given cell: the cell is part of the config, as tf_keras'
            from ember.keras import layers as layers_mod

            config["cell"] = layers_mod.serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "cell" in config and not cls._cell_args:
            from ember.keras import layers as layers_mod

            config["cell"] = layers_mod.deserialize(config["cell"], custom_objects)
        return super().from_config(config)

    def _clone(self, **overrides):
        """A fresh, unbuilt layer with this one's arguments (Bidirectional's backward layer)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be copied; pass `backward_layer` to "
                                  f"Bidirectional")


def _is_standard_lstm(cell):
    return (type(cell) is LSTMCell and getattr(cell.activation, "__name__", None) == "tanh"
            and getattr(cell.recurrent_activation, "__name__", None) == "sigmoid")


def _lstm_steps(xp, h, c, recurrent_kernel):
    """([steps, batch, units] outputs, final c) of the standard LSTM over the projected inputs ``xp``, as plain
    ops that autodiff differentiates to any order: the gradients that a tape records go through here."""
    hs = []
    for x_t in tf.unstack(xp):
        zi, zf, zc, zo = tf.split(x_t + tf.matmul(h, recurrent_kernel), 4, axis=-1)
        c = tf.sigmoid(zf) * c + tf.sigmoid(zi) * tf.tanh(zc)
        h = tf.sigmoid(zo) * tf.tanh(c)
        hs.append(h)
    return tf.stack(hs), c


@tf.custom_gradient
def _block_lstm(x, h0, c0, kernel, recurrent_kernel, bias):
    """([steps, batch, units] outputs, final c) of Keras's standard LSTM over the time-major float32 ``x`` as
    TensorFlow's BlockLSTMV2 (gates i, f, c, o, as Keras's), with BlockLSTMGradV2 as its gradient.

    BlockLSTMGradV2, as TensorFlow's, has no gradient of its own. So where a tape records the gradient being
    computed (a second-order gradient: the outer tape of nested ones), the gradient is taken instead by
    autodiff of the unrolled steps (``_lstm_steps``), which differentiates again; a gradient computed with no
    tape recording (``fit``'s step) is the one op."""
    steps, units = int(x.shape[0]), int(recurrent_kernel.shape[0])
    w = tf.concat([kernel, recurrent_kernel], 0)
    no_peephole = tf.zeros([units], x.dtype)
    seq_len = tf.constant(steps, tf.int64)
    outs = tf.raw_ops.BlockLSTMV2(seq_len_max=seq_len, x=x, cs_prev=c0, h_prev=h0, w=w, wci=no_peephole,
                                  wcf=no_peephole, wco=no_peephole, b=bias)
    h_seq, c_seq = outs[6], outs[1]

    def grad(d_h_seq, d_c):
        d_h_seq = tf.zeros_like(h_seq) if d_h_seq is None else d_h_seq
        d_c = tf.zeros_like(c0) if d_c is None else d_c
        if tf._C.recording_active():
            inputs = [x, h0, c0, kernel, recurrent_kernel, bias]
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                xp = tf.reshape(tf.matmul(tf.reshape(x, [-1, int(x.shape[2])]), kernel) + bias,
                                [steps, -1, 4 * units])
                outputs, c = _lstm_steps(xp, h0, c0, recurrent_kernel)
            return tape.gradient([outputs, c], inputs, output_gradients=[d_h_seq, d_c])
        d_c_seq = tf.pad(d_c[None], [[steps - 1, 0], [0, 0], [0, 0]])  # only the final c is returned
        g = tf.raw_ops.BlockLSTMGradV2(seq_len_max=seq_len, x=x, cs_prev=c0, h_prev=h0, w=w, wci=no_peephole,
                                       wcf=no_peephole, wco=no_peephole, b=bias, i=outs[0], cs=c_seq, f=outs[2],
                                       o=outs[3], ci=outs[4], co=outs[5], h=h_seq, cs_grad=d_c_seq, h_grad=d_h_seq,
                                       use_peephole=False)
        d_kernel, d_recurrent = tf.split(g[3], [int(kernel.shape[0]), units], 0)
        return g[0], g[2], g[1], d_kernel, d_recurrent, g[7]

    return (h_seq, c_seq[-1]), grad


@tf.custom_gradient
def _lstm_sequence(xp, h, c, recurrent_kernel):
    """Keras's LSTM (sigmoid gates, tanh) over the projected inputs ``xp`` [steps, batch, 4 * units]:
    ([steps, batch, units] outputs, final h, final c), with its backward pass written out.

    Note [The LSTM's own backward pass]
    Autodiff of the unrolled steps gives, per step, a matmul for the recurrent kernel's gradient and an AddN
    of all of them at the end. Here the step's pre-activation gradients are stacked and the kernel's gradient
    is one [units, steps * batch] @ [steps * batch, 4 * units] matmul; the per-step work left is the chain
    that cannot be batched (dh = dz @ recurrent_kernel^T) and the element-wise gate derivatives, from the
    gate values the forward pass saved. The gradient is written in ember ops (so it traces into functions)
    and equals autodiff's (the tests check it against tf_keras's)."""
    xs = tf.unstack(xp)
    units = int(recurrent_kernel.shape[0])
    h0, c0 = h, c
    hs, saved = [h], []
    for x_t in xs:
        z = x_t + tf.matmul(h, recurrent_kernel)
        zi, zf, zc, zo = tf.split(z, 4, axis=-1)
        i, f, g, o = tf.sigmoid(zi), tf.sigmoid(zf), tf.tanh(zc), tf.sigmoid(zo)
        c_prev = c
        c = f * c + i * g
        tanh_c = tf.tanh(c)
        h = o * tanh_c
        # What the backward step multiplies by: dc += dh * dc_dh, and the gates' pre-activation gradients
        # are [dc, dc, dc, dh] * dz_scale (so a backward step is a few ops: it is the sequential part).
        dc_dh = o * (1.0 - tanh_c * tanh_c)
        dz_scale = tf.concat([g * i * (1.0 - i), c_prev * f * (1.0 - f), i * (1.0 - g * g),
                              tanh_c * o * (1.0 - o)], -1)
        saved.append((f, dc_dh, dz_scale))
        hs.append(h)
    outputs = tf.stack(hs[1:])

    def grad(d_outputs, d_h, d_c):
        if tf._C.recording_active():
            # A tape records this gradient (a second-order one): the saved gate values were computed with no
            # tape recording, so a gradient built from them would not differentiate again. Autodiff of the
            # plain steps does, as _block_lstm's.
            inputs = [xp, h0, c0, recurrent_kernel]
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                steps_out, c_last = _lstm_steps(xp, h0, c0, recurrent_kernel)
                h_last = steps_out[-1]
            seeds = [tf.zeros_like(outputs) if d_outputs is None else d_outputs,
                     tf.zeros_like(h) if d_h is None else d_h, tf.zeros_like(c) if d_c is None else d_c]
            return tape.gradient([steps_out, h_last, c_last], inputs, output_gradients=seeds)
        dh = tf.zeros_like(h) if d_h is None else d_h
        dc = tf.zeros_like(c) if d_c is None else d_c
        d_outs = tf.unstack(d_outputs) if d_outputs is not None else None
        dzs = []
        for t in reversed(range(len(xs))):
            if d_outs is not None:
                dh = dh + d_outs[t]
            f, dc_dh, dz_scale = saved[t]
            dc = dc + dh * dc_dh
            dz = tf.concat([dc, dc, dc, dh], -1) * dz_scale
            dc = dc * f
            dzs.append(dz)
            dh = tf.matmul(dz, recurrent_kernel, transpose_b=True)
        d_xp = tf.stack(dzs[::-1])
        h_prev = tf.reshape(tf.stack(hs[:-1]), [-1, units])
        d_kernel = tf.matmul(h_prev, tf.reshape(d_xp, [-1, 4 * units]), transpose_a=True)
        return d_xp, dh, dc, d_kernel

    return (outputs, h, c), grad


class AbstractRNNCell(Layer):
    """The base of a user's cell: ``call(inputs, states)`` returns ``(output, new_states)``; subclasses give
    ``state_size`` and ``output_size``. Initial states are zeros of [batch, size] per state."""

    @property
    def state_size(self):
        raise NotImplementedError(f"{type(self).__name__} must define the state_size property")

    @property
    def output_size(self):
        raise NotImplementedError(f"{type(self).__name__} must define the output_size property")

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            batch_size, dtype = tf.shape(inputs)[0], inputs.dtype
        states = [_zeros_state(batch_size, size, dtype or tf.float32) for size in _as_list(self.state_size)]
        return states[0] if len(states) == 1 else states


class StackedRNNCells(Layer):
    """Cells run one above the other at each step: cell k's output is cell k+1's input; the states are every
    cell's states, first cell first, and the output is the last cell's."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `call` method and a `state_size` attribute. Received "
                                 f"cells={cells}")
        super().__init__(**kwargs)
        self.cells = list(cells)

    def _counts(self):
        return [len(_as_list(cell.state_size)) for cell in self.cells]

    @property
    def state_size(self):
        return [size for cell in self.cells for size in _as_list(cell.state_size)]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", None) or _as_list(last.state_size)[0]

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        states = []
        for cell in self.cells:
            if hasattr(cell, "get_initial_state"):
                states.extend(_as_list(cell.get_initial_state(inputs=inputs, batch_size=batch_size, dtype=dtype)))
            else:
                batch = tf.shape(inputs)[0] if inputs is not None else batch_size
                states.extend(_zeros_state(batch, size, dtype or inputs.dtype) for size in _as_list(cell.state_size))
        return states

    def build(self, input_shape):
        shape = tf.TensorShape(input_shape)
        for cell in self.cells:
            if not getattr(cell, "built", False):
                cell.build(shape)
                cell.built = True
            size = getattr(cell, "output_size", None) or _as_list(cell.state_size)[0]
            shape = tf.TensorShape([shape[0], size])
        self.built = True

    def call(self, inputs, states, training=None):
        states = _as_list(states)
        new_states = []
        x = inputs
        start = 0
        for cell, count in zip(self.cells, self._counts()):
            cell_states = states[start:start + count]
            start += count
            x, cell_new = _user_cell_step(cell, x, cell_states, training)
            new_states.extend(cell_new)
        return x, new_states

    def get_config(self):
        from ember.keras import layers as layers_mod

        return {**super().get_config(), "cells": [layers_mod.serialize(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import layers as layers_mod

        config = dict(config)
        cells = [layers_mod.deserialize(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _user_cell_step(cell, xt, states, training):
    kwargs = {"training": training} if training is not None else {}
    try:
        out, new_states = cell(xt, states if len(states) > 1 else states[0], **kwargs)
    except TypeError:
        out, new_states = cell(xt, states if len(states) > 1 else states[0])
    return out, _as_list(new_states)


_CELL_ARGS = ("units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "unit_forget_bias", "kernel_regularizer",
              "recurrent_regularizer", "bias_regularizer", "kernel_constraint", "recurrent_constraint",
              "bias_constraint", "dropout", "recurrent_dropout", "reset_after")


class _CellLayer(RNN):
    """SimpleRNN, LSTM and GRU: an RNN over their own cell, with the cell's arguments as the layer's."""

    _cell_class = None
    _cell_args = _CELL_ARGS

    def __init__(self, units, **kwargs):
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _CELL_ARGS}
        cell_kwargs.pop("units", None)
        self._arguments = dict(units=units, **cell_kwargs)
        layer_kwargs = {k: kwargs[k] for k in ("return_sequences", "return_state", "go_backwards", "stateful",
                                               "unroll", "time_major", "zero_output_for_mask") if k in kwargs}
        self._arguments.update(layer_kwargs)
        kwargs.pop("implementation", None)
        dtype = kwargs.get("dtype")
        cell = self._cell_class(units, dtype=dtype, name=f"{self._cell_class.__name__.lower()[:-4]}_cell",
                                **cell_kwargs)
        super().__init__(cell, **kwargs)

    def _clone(self, **overrides):
        arguments = dict(self._arguments, **overrides)
        units = arguments.pop("units")
        return type(self)(units, **arguments)


class SimpleRNN(_CellLayer):
    """A fully connected RNN: h = tanh(x @ kernel + bias + h @ recurrent_kernel)."""

    _cell_class = SimpleRNNCell


class LSTM(_CellLayer):
    """Long short-term memory (Hochreiter 1997), Keras 2's: sigmoid gates, tanh activations, forget bias 1;
    ``return_state`` gives [output, h, c]."""

    _cell_class = LSTMCell


class GRU(_CellLayer):
    """Gated recurrent unit (Cho 2014), Keras 2's ``reset_after=True`` form by default."""

    _cell_class = GRUCell


class Bidirectional(Layer):
    """Runs ``layer`` forwards and a copy of it backwards over the steps, and merges their outputs
    (``merge_mode`` "concat" (default), "sum", "mul", "ave" or None for the pair). The backward outputs are
    put back in forward order before merging. Weights: the forward layer's, then the backward layer's."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, RNN):
            raise ValueError(f"Please initialize `Bidirectional` layer with a `tf.keras.layers.Layer` instance "
                             f"(an RNN). Received: {layer!r}")
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be one of "
                             f'{{"sum", "mul", "ave", "concat", None}}')
        super().__init__(**kwargs)
        if backward_layer is None:
            backward_layer = layer._clone(go_backwards=not layer.go_backwards)
        elif backward_layer.go_backwards == layer.go_backwards:
            raise ValueError("Forward layer and backward layer should have different `go_backwards` value. "
                             f"forward_layer.go_backwards = {layer.go_backwards}, "
                             f"backward_layer.go_backwards = {backward_layer.go_backwards}")
        for attr in ("return_sequences", "return_state"):
            if getattr(layer, attr) != getattr(backward_layer, attr):
                raise ValueError(f"Forward layer and backward layer should have the same `{attr}`")
        self.forward_layer = layer
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.stateful = layer.stateful
        for rnn in (layer, backward_layer):
            rnn.zero_output_for_mask = rnn.return_sequences  # as Keras: padded steps of each direction are zero
        self._initial_weights = weights
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        for rnn in (self.forward_layer, self.backward_layer):
            if not rnn.built:
                rnn.build(input_shape)
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def reset_states(self, states=None):
        """Resets both directions' states: to zeros, or to ``states`` (the forward layer's, then the backward's)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        states = _as_list(states)
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def call(self, inputs, training=None, mask=None, initial_state=None):
        states = _as_list(initial_state)
        fw_states = bw_states = None
        if states is not None:
            if len(states) % 2:
                raise U.input_error(self, "an initial_state of an even number of tensors (forward's then "
                                    "backward's)", f"{len(states)}")
            half = len(states) // 2
            fw_states, bw_states = states[:half], states[half:]
        fw = self.forward_layer(inputs, training=training, mask=mask, initial_state=fw_states)
        bw = self.backward_layer(inputs, training=training, mask=mask, initial_state=bw_states)
        if self.return_state:
            fw, fw_states = fw[0], fw[1:]
            bw, bw_states = bw[0], bw[1:]
        if self.return_sequences:
            time_axis = 0 if self.forward_layer.time_major else 1
            bw = tf.reverse(bw, [time_axis])
        if self.merge_mode == "concat":
            out = tf.concat([fw, bw], -1)
        elif self.merge_mode == "sum":
            out = fw + bw
        elif self.merge_mode == "ave":
            out = (fw + bw) / 2
        elif self.merge_mode == "mul":
            out = fw * bw
        else:
            out = [fw, bw]
        if self.return_state:
            out = out if isinstance(out, list) else [out]
            return out + list(fw_states) + list(bw_states)
        return out

    def compute_mask(self, inputs, mask=None):
        if mask is None or not self.return_sequences:
            return None
        return mask

    def compute_output_shape(self, input_shape):
        fw = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            fw, states = fw[0], fw[1:]
        dims = fw.as_list()
        if self.merge_mode == "concat":
            dims[-1] = None if dims[-1] is None else dims[-1] * 2
        out = [tf.TensorShape(dims)] * 2 if self.merge_mode is None else [tf.TensorShape(dims)]
        if self.return_state:
            return out + list(states) * 2
        return out if self.merge_mode is None else out[0]

    def get_config(self):
        from ember.keras import layers

        config = super().get_config()
        config.update({"merge_mode": self.merge_mode, "layer": layers.serialize(self.forward_layer),
                       "backward_layer": layers.serialize(self.backward_layer)})
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import layers

        config = dict(config)
        config["layer"] = layers.deserialize(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = layers.deserialize(config["backward_layer"], custom_objects)
        return cls(**config)

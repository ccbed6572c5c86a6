"""Keras 2's BatchNormalization, LayerNormalization and GroupNormalization.

BatchNormalization of a 4-D or 5-D input normalised over its first or last axis runs the FusedBatchNormV3
op, as Keras 2's fused path does; other inputs are moments and an element-wise normalisation. In training
(``training=True``, as ``fit`` calls it) the output uses the batch's mean and biased variance and the moving
statistics move towards them: ``moving = moving * momentum + batch * (1 - momentum)``, where the batch's
variance is the unbiased one on the fused path and the biased one otherwise, as in Keras 2. In inference, or
when the layer is not trainable (Keras 2's rule for fine-tuning), the moving statistics normalise. Weights, in
Keras's order: gamma, beta (trainable), moving_mean, moving_variance (not trainable)."""

import ember as tf
from ember.keras import initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U
from ember.keras.layers.convolutional import _constraint, constraints

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization"]


def _axes(axis, rank, layer):
    """Normalised, sorted, non-negative axes; raises naming the layer when one is out of range."""
    values = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in values:
        b = a + rank if a < 0 else a
        if not 0 <= b < rank:
            raise U.input_error(layer, f"axis {a} inside an input of rank {rank}", f"axis={axis!r}")
        out.append(b)
    if len(set(out)) != len(out):
        raise ValueError(f"Duplicate axis: {axis!r}")
    return sorted(out)


def _training_value(training):
    """True, False or a boolean tensor (None means inference, as a layer called outside ``fit``)."""
    if training is None:
        return False
    if isinstance(training, tf.Tensor):
        return training if training._is_symbolic else bool(training.numpy())
    return bool(training)


def _broadcast_param(param, shape_of_params, rank, axes):
    """A parameter of the normalised axes' shape reshaped to broadcast against the input (1 elsewhere)."""
    if axes == list(range(rank - len(axes), rank)):
        return param  # trailing axes broadcast as they are
    shape = [1] * rank
    for a, n in zip(axes, shape_of_params):
        shape[a] = n
    return tf.reshape(param, shape)


class BatchNormalization(Layer):
    """Normalises with the batch's statistics in training and the moving ones in inference."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 synchronized=False, **kwargs):
        kwargs.pop("fused", None)  # ember picks the fused op where Keras would; the choice does not change results
        if kwargs.pop("renorm", False):
            raise NotImplementedError("BatchNormalization: `renorm=True` is not supported by ember yet")
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = _constraint(beta_constraint)
        self.gamma_constraint = _constraint(gamma_constraint)
        self.synchronized = synchronized  # one replica: nothing to synchronise
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        if input_shape.rank is None:
            raise U.input_error(self, "an input of known rank", f"shape {input_shape}")
        rank = input_shape.rank
        self._axes = _axes(self.axis, rank, self)
        self._rank = rank
        sizes = [U.known_dim(self, input_shape, a, "features") for a in self._axes]
        self._sizes = sizes
        # Keras's parameter shape: the axis's size, or with several axes the input's rank with 1 elsewhere.
        param_shape = sizes if len(sizes) == 1 else [sizes[self._axes.index(a)] if a in self._axes else 1
                                                      for a in range(rank)]
        self._param_shape = param_shape
        self._fused_format = None
        if len(self._axes) == 1 and rank in (4, 5):
            if self._axes[0] == rank - 1:
                self._fused_format = "NHWC" if rank == 4 else "NDHWC"
            elif self._axes[0] == 1:
                self._fused_format = "NCHW" if rank == 4 else "NCDHW"
        self.gamma = self.add_weight(name="gamma", shape=param_shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     trainable=True, dtype=self.dtype,
                                     experimental_autocast=False) if self.scale else None
        self.beta = self.add_weight(name="beta", shape=param_shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    trainable=True, dtype=self.dtype,
                                    experimental_autocast=False) if self.center else None
        self.moving_mean = self.add_weight(name="moving_mean", shape=param_shape,
                                           initializer=self.moving_mean_initializer, trainable=False,
                                           dtype=self.dtype, experimental_autocast=False)
        self.moving_variance = self.add_weight(name="moving_variance", shape=param_shape,
                                               initializer=self.moving_variance_initializer, trainable=False,
                                               dtype=self.dtype, experimental_autocast=False)
        self.built = True

    def _check_input(self, x):
        U.check_rank(self, x, self._rank, "the rank the layer was built for")
        for a, n in zip(self._axes, self._sizes):
            U.check_axis_size(self, x, a, n, "features")

    def call(self, inputs, training=None, mask=None):
        x = U.as_tensor(inputs, self.dtype)
        self._check_input(x)
        training = _training_value(training)
        if not self.trainable:
            training = False
        # Under a mixed-precision policy the weights stay float32 (not autocast, as Keras's): the fused op takes a
        # 16-bit x with float32 parameters, and the other path normalises a 16-bit x in float32, as Keras does.
        input_dtype = x.dtype
        if input_dtype in (tf.float16, tf.bfloat16) and self._fused_format is None:
            x = tf.cast(x, tf.float32)
        if isinstance(training, tf.Tensor):
            y = tf.cond(training, lambda: self._train(x), lambda: self._infer(x))
        else:
            y = self._train(x) if training else self._infer(x)
        return y if y.dtype == input_dtype else tf.cast(y, input_dtype)

    def _broadcast(self, param):
        if len(self._sizes) != 1:
            return param  # already of the input's rank
        return _broadcast_param(param, self._sizes, self._rank, self._axes)

    def _scale_offset(self, x):
        # The fused op's U: float32 for a 16-bit x.
        dtype = tf.float32 if x.dtype in (tf.float16, tf.bfloat16) else x.dtype
        ones = tf.ones(self._param_shape, dtype)
        return (self.gamma if self.scale else ones), (self.beta if self.center else tf.zeros_like(ones))

    def _infer(self, x):
        gamma, beta = self._scale_offset(x)
        if self._fused_format is not None:
            y, _, _ = tf.nn.fused_batch_norm(x, gamma, beta, self.moving_mean, self.moving_variance, self.epsilon,
                                             data_format=self._fused_format, is_training=False)
            return y
        b = self._broadcast
        return tf.nn.batch_normalization(x, b(self.moving_mean), b(self.moving_variance), b(beta), b(gamma),
                                         self.epsilon)

    def _train(self, x):
        gamma, beta = self._scale_offset(x)
        reduction = [a for a in range(self._rank) if a not in self._axes]
        if self._fused_format is not None:
            # Note: the moving variance blends the op's unbiased variance here, as Keras 2's fused path does
            # (its Bessel-correction removal is for V1 tests only); the other path blends the biased one.
            y, mean, variance = tf.nn.fused_batch_norm(x, gamma, beta, epsilon=self.epsilon,
                                                       data_format=self._fused_format, is_training=True)
        else:
            mean, variance = tf.nn.moments(x, reduction, keepdims=True)
            b = self._broadcast
            y = tf.nn.batch_normalization(x, mean, variance, b(beta), b(gamma), self.epsilon)
            mean = tf.reshape(mean, self._param_shape)
            variance = tf.reshape(variance, self._param_shape)
        decay = 1.0 - self.momentum
        self.moving_mean.assign_sub((self.moving_mean - tf.cast(mean, self.moving_mean.dtype)) * decay)
        self.moving_variance.assign_sub((self.moving_variance - tf.cast(variance, self.moving_variance.dtype)) *
                                        decay)
        return y

    def compute_output_shape(self, input_shape):
        return tf.TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon, "center": self.center,
            "scale": self.scale, "beta_initializer": U.serialize("initializers", self.beta_initializer),
            "gamma_initializer": U.serialize("initializers", self.gamma_initializer),
            "moving_mean_initializer": U.serialize("initializers", self.moving_mean_initializer),
            "moving_variance_initializer": U.serialize("initializers", self.moving_variance_initializer),
            "beta_regularizer": U.serialize("regularizers", self.beta_regularizer),
            "gamma_regularizer": U.serialize("regularizers", self.gamma_regularizer),
            "beta_constraint": None if constraints is None else U.serialize("constraints", self.beta_constraint),
            "gamma_constraint": None if constraints is None else U.serialize("constraints", self.gamma_constraint),
            "synchronized": self.synchronized,
        })
        return config


class _PerExampleNormalization(Layer):
    """What LayerNormalization and GroupNormalization share: each example normalised by its own statistics,
    then scaled by gamma and shifted by beta; their arguments, weights and config entries."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = _constraint(beta_constraint)
        self.gamma_constraint = _constraint(gamma_constraint)
        self.supports_masking = True

    def _add_gamma_and_beta(self, shape):
        self.gamma = self.add_weight(name="gamma", shape=shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     trainable=True, dtype=self.dtype) if self.scale else None
        self.beta = self.add_weight(name="beta", shape=shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    trainable=True, dtype=self.dtype) if self.center else None

    def compute_output_shape(self, input_shape):
        return tf.TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
            "beta_initializer": U.serialize("initializers", self.beta_initializer),
            "gamma_initializer": U.serialize("initializers", self.gamma_initializer),
            "beta_regularizer": U.serialize("regularizers", self.beta_regularizer),
            "gamma_regularizer": U.serialize("regularizers", self.gamma_regularizer),
            "beta_constraint": None if constraints is None else U.serialize("constraints", self.beta_constraint),
            "gamma_constraint": None if constraints is None else U.serialize("constraints", self.gamma_constraint),
        })
        return config


class LayerNormalization(_PerExampleNormalization):
    """Normalises each example over ``axis`` (default the last) by its own mean and variance, then scales by
    gamma and shifts by beta (of the normalised axes' shape)."""

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        if input_shape.rank is None:
            raise U.input_error(self, "an input of known rank", f"shape {input_shape}")
        self._rank = input_shape.rank
        self._axes = _axes(self.axis, self._rank, self)
        self._param_shape = [U.known_dim(self, input_shape, a, "features") for a in self._axes]
        self._add_gamma_and_beta(self._param_shape)
        self.built = True

    def call(self, inputs):
        x = U.as_tensor(inputs, self.dtype)
        U.check_rank(self, x, self._rank, "the rank the layer was built for")
        for a, n in zip(self._axes, self._param_shape):
            U.check_axis_size(self, x, a, n, "features")
        mean, variance = tf.nn.moments(x, self._axes, keepdims=True)
        b = lambda p: None if p is None else _broadcast_param(p, self._param_shape, self._rank, self._axes)  # noqa
        return tf.nn.batch_normalization(x, mean, variance, b(self.beta), b(self.gamma), self.epsilon)


class GroupNormalization(_PerExampleNormalization):
    """Splits the channels of ``axis`` into ``groups`` groups of consecutive channels and normalises each example
    over each group (its channels and every other non-batch axis), then scales by gamma and shifts by beta, one
    per channel. ``groups=-1`` is one channel per group (instance normalisation). A ``mask`` (broadcast to the
    input) weights the statistics, as tf_keras's ``weighted_moments`` does. Weights: gamma, then beta."""

    def __init__(self, groups=32, axis=-1, **kwargs):
        super().__init__(axis=axis, **kwargs)
        self.groups = groups

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        if input_shape.rank is None:
            raise U.input_error(self, "an input of known rank", f"shape {input_shape}")
        self._rank = input_shape.rank
        self._axis = _axes(self.axis, self._rank, self)[0]
        channels = U.known_dim(self, input_shape, self._axis, "channels")
        if self.groups == -1:
            self.groups = channels
        if channels < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels "
                             f"({channels}).")
        if channels % self.groups != 0:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number of channels "
                             f"({channels}).")
        self._channels = channels
        self._add_gamma_and_beta((channels,))
        self.built = True

    def _grouped(self, x):
        """x with its channel axis split into [groups, channels / groups]."""
        shape = tf.shape(x)
        dims = [shape[i] for i in range(self._rank)]
        dims[self._axis:self._axis + 1] = [self.groups, self._channels // self.groups]
        return tf.reshape(x, tf.stack(dims))

    def call(self, inputs, mask=None):
        x = U.as_tensor(inputs, self.dtype)
        U.check_rank(self, x, self._rank, "the rank the layer was built for")
        U.check_axis_size(self, x, self._axis, self._channels, "channels")
        grouped = self._grouped(x)
        # Every axis but the batch's and the group's: the group's channels and the other feature axes.
        axes = [a for a in range(1, self._rank + 1) if a != self._axis]
        if mask is None:
            mean, variance = tf.nn.moments(grouped, axes, keepdims=True)
        else:
            weights = self._grouped(tf.broadcast_to(tf.cast(U.as_tensor(mask), x.dtype), tf.shape(x)))
            total = tf.reduce_sum(weights, axes, keepdims=True)
            # A group with no weight has sums of 0: divided by 1 they stay 0 (tf_keras' reciprocal_no_nan).
            total = tf.where(total > 0, total, tf.ones_like(total))
            mean = tf.reduce_sum(grouped * weights, axes, keepdims=True) / total
            variance = tf.reduce_sum(weights * tf.square(grouped - mean), axes, keepdims=True) / total
        param_shape = [1] * (self._rank + 1)
        param_shape[self._axis:self._axis + 2] = [self.groups, self._channels // self.groups]
        gamma = None if self.gamma is None else tf.reshape(self.gamma, param_shape)
        beta = None if self.beta is None else tf.reshape(self.beta, param_shape)
        y = tf.nn.batch_normalization(grouped, mean, variance, beta, gamma, self.epsilon)
        return tf.reshape(y, tf.shape(x))

    def get_config(self):
        return {**super().get_config(), "groups": self.groups}

"""Keras 2's MultiHeadAttention (Vaswani et al. 2017) over [batch, steps, features] inputs.

Weights are Keras's, in its order and shapes, so ``set_weights`` of a tf_keras layer's weights gives the same
outputs: query, key and value projections (``kernel`` [features, num_heads, key_dim or value_dim], ``bias``
[num_heads, dim]) and the output projection (``kernel`` [num_heads, value_dim, output features], ``bias``).
Keras writes the projections as einsums; here they are matmuls over reshaped kernels (the same products), and
the heads are a batch dimension of the score and context matmuls.
"""

import math

import ember as tf
from ember.keras import initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.layers import _layer_utils as U
from ember.keras.layers.convolutional import _constraint, constraints

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]

_MASKED_LOGIT = -1e9  # Keras's "large negative" added to masked float32 logits before the softmax


class _Projection(Layer):
    """x [batch, steps, in] -> [batch, steps, *out_dims] with ``kernel`` [in, *out_dims] and ``bias``
    [*out_dims] (Keras's EinsumDense "abc,cde->abde"), or [batch, steps, heads, dim] -> [batch, steps, out]
    with ``kernel`` [heads, dim, out] ("abcd,cde->abe") when ``in_dims`` has two entries."""

    def __init__(self, in_dims, out_dims, use_bias, owner, **kwargs):
        super().__init__(**kwargs)
        self.in_dims, self.out_dims = list(in_dims), list(out_dims)
        self.use_bias = use_bias
        o = owner
        self.kernel = self.add_weight(name="kernel", shape=self.in_dims + self.out_dims,
                                      initializer=o.kernel_initializer, regularizer=o.kernel_regularizer,
                                      constraint=o.kernel_constraint, dtype=o.dtype)
        self.bias = self.add_weight(name="bias", shape=self.out_dims, initializer=o.bias_initializer,
                                    regularizer=o.bias_regularizer, constraint=o.bias_constraint,
                                    dtype=o.dtype) if use_bias else None
        self.built = True

    def call(self, x):
        n_in, n_out = math.prod(self.in_dims), math.prod(self.out_dims)
        shape = tf.shape(x)
        lead = shape[:-len(self.in_dims)]
        y = tf.matmul(tf.reshape(x, [-1, n_in]), tf.reshape(self.kernel, [n_in, n_out]))
        if self.bias is not None:
            y = y + tf.reshape(self.bias, [n_out])
        return tf.reshape(y, tf.concat([lead, self.out_dims], 0))


class MultiHeadAttention(Layer):
    """softmax(Q K^T / sqrt(key_dim) + mask) V per head, heads concatenated and projected back.

    ``call(query, value, key=None, attention_mask=None, return_attention_scores=False, training=None,
    use_causal_mask=False)``: ``attention_mask`` [batch, target, source] (True attends) is combined with the
    causal mask; the attention probabilities are dropped out with ``dropout`` in training; the scores
    returned are the probabilities before dropout, [batch, num_heads, target, source]."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(num_heads, int) or num_heads <= 0 or not isinstance(key_dim, int) or key_dim <= 0:
            raise ValueError(f"MultiHeadAttention: num_heads and key_dim must be positive integers, got "
                             f"num_heads={num_heads!r}, key_dim={key_dim!r}")
        if attention_axes is not None and tuple([attention_axes] if isinstance(attention_axes, int)
                                                else attention_axes) not in ((1,), (-2,)):
            raise NotImplementedError(f"MultiHeadAttention: attention_axes={attention_axes!r} is not supported by "
                                      f"ember yet (only attention over the steps of [batch, steps, features])")
        self._num_heads = num_heads
        self._key_dim = key_dim
        self._value_dim = value_dim if value_dim else key_dim
        self._dropout = float(dropout)
        self._use_bias = use_bias
        self._output_shape = output_shape
        self._attention_axes = attention_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = _constraint(kernel_constraint)
        self.bias_constraint = _constraint(bias_constraint)
        self._built_from_signature = False
        self.supports_masking = True

    num_heads = property(lambda self: self._num_heads)
    key_dim = property(lambda self: self._key_dim)
    value_dim = property(lambda self: self._value_dim)
    dropout = property(lambda self: self._dropout)
    use_bias = property(lambda self: self._use_bias)

    def build(self, input_shape=None, *args, **kwargs):
        # The projections need the query's, value's and key's sizes: built on the first call (as Keras's
        # ``_build_from_signature``), or here when ``build`` is given all three shapes.
        if args:
            self._build_from_signature(input_shape, args[0], args[1] if len(args) > 1 else None)
        self.built = True

    def _build_from_signature(self, query_shape, value_shape, key_shape=None):
        query_shape, value_shape = tf.TensorShape(query_shape), tf.TensorShape(value_shape)
        key_shape = value_shape if key_shape is None else tf.TensorShape(key_shape)
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            U.check_rank(self, shape, 3, f"{what} of shape [batch, steps, features]")
        q_dim = U.known_dim(self, query_shape, -1, "query features")
        k_dim = U.known_dim(self, key_shape, -1, "key features")
        v_dim = U.known_dim(self, value_shape, -1, "value features")
        self._dims = (q_dim, k_dim, v_dim)
        self._query_shape, self._value_shape, self._key_shape = (
            list(query_shape.as_list()), list(value_shape.as_list()), list(key_shape.as_list()))
        heads = self._num_heads
        self._query_dense = _Projection([q_dim], [heads, self._key_dim], self._use_bias, self, name="query")
        self._key_dense = _Projection([k_dim], [heads, self._key_dim], self._use_bias, self, name="key")
        self._value_dense = _Projection([v_dim], [heads, self._value_dim], self._use_bias, self, name="value")
        out = self._output_shape if self._output_shape else [q_dim]
        out = [out] if isinstance(out, int) else list(out)
        self._output_dense = _Projection([heads, self._value_dim], out, self._use_bias, self,
                                         name="attention_output")
        self._built_from_signature = True

    def _check(self, what, x, index):
        U.check_rank(self, x, 3, f"{what} of shape [batch, steps, features]")
        U.check_axis_size(self, x, -1, self._dims[index], f"{what} features")

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        query = U.as_tensor(query, self.dtype)
        value = U.as_tensor(value, self.dtype)
        key = value if key is None else U.as_tensor(key, self.dtype)
        if not self._built_from_signature:
            self._build_from_signature(query.shape, value.shape, key.shape)
        self._check("query", query, 0)
        self._check("value", value, 2)
        self._check("key", key, 1)
        mask = self._compute_attention_mask(query, value, key, attention_mask, use_causal_mask)
        # [batch, steps, heads, dim] -> [batch, heads, steps, dim]: heads become a batch dimension.
        q = tf.transpose(self._query_dense(query), [0, 2, 1, 3]) * (1.0 / math.sqrt(float(self._key_dim)))
        k = tf.transpose(self._key_dense(key), [0, 2, 1, 3])
        v = tf.transpose(self._value_dense(value), [0, 2, 1, 3])
        logits = tf.matmul(q, k, transpose_b=True)  # [batch, heads, target, source]
        if mask is not None:
            logits = logits + (1.0 - tf.cast(mask, logits.dtype)) * _MASKED_LOGIT
        scores = tf.nn.softmax(logits, axis=-1)
        probs = scores
        if training is True and self._dropout > 0:
            keep = tf.random.uniform(tf.shape(scores), dtype=scores.dtype) >= self._dropout
            probs = tf.where(keep, scores / (1.0 - self._dropout), tf.zeros_like(scores))
        context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])  # [batch, target, heads, value_dim]
        output = self._output_dense(context)
        if return_attention_scores:
            return output, scores
        return output

    def _compute_attention_mask(self, query, value, key, attention_mask, use_causal_mask):
        """[batch, 1, target, source] booleans (True attends), or None: the attention mask, the keras masks of
        the inputs (where they carry one) and the causal mask, combined."""
        mask = None
        q_mask = getattr(query, "_keras_mask", None)
        v_mask = getattr(value, "_keras_mask", None)
        k_mask = getattr(key, "_keras_mask", None)
        if q_mask is not None:
            mask = tf.expand_dims(tf.cast(q_mask, tf.bool), -1)  # [B, T, 1]
        for m in (v_mask, k_mask):
            if m is not None:
                m = tf.expand_dims(tf.cast(m, tf.bool), -2)  # [B, 1, S]
                mask = m if mask is None else tf.logical_and(mask, m)
        if use_causal_mask:
            t, s = tf.shape(query)[1], tf.shape(value)[1]
            causal = tf.cast(tf.linalg.band_part(tf.ones(tf.stack([t, s]), tf.int32), -1, 0), tf.bool)
            causal = tf.expand_dims(causal, 0)
            mask = causal if mask is None else tf.logical_and(mask, causal)
        if attention_mask is not None:
            am = tf.cast(U.as_tensor(attention_mask), tf.bool)
            if am.shape.rank is not None and am.shape.rank not in (2, 3):
                raise U.input_error(self, "an attention_mask of shape [batch, target, source]",
                                    f"shape {tuple(am.shape.as_list())}")
            mask = am if mask is None else tf.logical_and(mask, am)
        if mask is None:
            return None
        return tf.expand_dims(mask, 1) if mask.shape.rank == 3 else mask

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        query_shape = tf.TensorShape(query_shape).as_list()
        out = self._output_shape if self._output_shape else [query_shape[-1]]
        out = [out] if isinstance(out, int) else list(out)
        return tf.TensorShape(query_shape[:-1] + out)

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self._num_heads, "key_dim": self._key_dim, "value_dim": self._value_dim,
            "dropout": self._dropout, "use_bias": self._use_bias, "output_shape": self._output_shape,
            "attention_axes": self._attention_axes,
            "kernel_initializer": U.serialize("initializers", self.kernel_initializer),
            "bias_initializer": U.serialize("initializers", self.bias_initializer),
            "kernel_regularizer": U.serialize("regularizers", self.kernel_regularizer),
            "bias_regularizer": U.serialize("regularizers", self.bias_regularizer),
            "kernel_constraint": None if constraints is None else U.serialize("constraints", self.kernel_constraint),
            "bias_constraint": None if constraints is None else U.serialize("constraints", self.bias_constraint),
            "query_shape": getattr(self, "_query_shape", None), "key_shape": getattr(self, "_key_shape", None),
            "value_shape": getattr(self, "_value_shape", None),
        })
        return config

    @classmethod
    def from_config(cls, config):
        """As Keras: a layer whose config has the input shapes it was built for builds its weights at once."""
        config = dict(config)
        shapes = [config.pop(k, None) for k in ("query_shape", "value_shape", "key_shape")]
        layer = cls(**config)
        if shapes[0] is not None and shapes[1] is not None:
            layer._build_from_signature(*shapes)
        return layer


class _BaseDenseAttention(Layer):
    """Attention of a query [batch, Tq, dim] over a value [batch, Tv, dim] (keyed by ``key``, the value
    when not given): softmax(scores) @ value, with masks and a causal mask as tf_keras' dense attention."""

    def __init__(self, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.supports_masking = True

    def _calculate_scores(self, query, key):
        raise NotImplementedError

    def call(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, namely [query, value] "
                             f"or [query, value, key]. Received: {inputs}.")
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._calculate_scores(query, key)
        big = 65504.0 if scores.dtype == tf.float16 else 1.0e9
        padding = None
        if v_mask is not None:
            padding = tf.logical_not(tf.expand_dims(tf.cast(v_mask, tf.bool), -2))
        if use_causal_mask:
            shape = tf.shape(scores)
            rows = tf.range(shape[-2])[:, None]
            cols = tf.range(shape[-1])[None, :]
            causal = tf.expand_dims(rows >= cols, 0)
            padding = tf.logical_not(causal) if padding is None else tf.logical_or(padding, tf.logical_not(causal))
        if padding is not None:
            scores -= big * tf.cast(padding, scores.dtype)
        weights = tf.nn.softmax(scores)
        if training and 0 < self.dropout < 1:
            keep = tf.cast(tf.random.uniform(tf.shape(weights)) >= self.dropout, weights.dtype)
            weights = weights * keep / (1.0 - self.dropout)
        result = tf.matmul(weights, value)
        if q_mask is not None:
            result *= tf.cast(tf.expand_dims(q_mask, -1), result.dtype)
        return (result, weights) if return_attention_scores else result

    def compute_mask(self, inputs, mask=None):
        if mask is None or mask[0] is None:
            return None
        return tf.convert_to_tensor(mask[0])

    def compute_output_shape(self, input_shape):
        query, value = input_shape[0], input_shape[1]
        return tf.TensorShape(tf.TensorShape(query).as_list()[:-1] + tf.TensorShape(value).as_list()[-1:])

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout}


class Attention(_BaseDenseAttention):
    """Dot-product (Luong) attention: scores = query @ key^T (times a learned scalar with use_scale), or
    with score_mode="concat" the sum over features of tanh(query + key)."""

    def __init__(self, use_scale=False, score_mode="dot", **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. Expected one of {{'dot', 'concat'}}. Received: "
                             f"score_mode={score_mode}")
        self.use_scale = use_scale
        self.score_mode = score_mode

    def build(self, input_shape):
        self.scale = self.add_weight("scale", shape=(), initializer="ones", trainable=True) if self.use_scale \
            else None
        self.concat_score_weight = self.add_weight("concat_score_weight", shape=(), initializer="ones",
                                                   trainable=True) if self.score_mode == "concat" else None
        self.built = True

    def _calculate_scores(self, query, key):
        if self.score_mode == "dot":
            scores = tf.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        q = tf.expand_dims(query, -2)
        k = tf.expand_dims(key, -3)
        inner = self.scale * (q + k) if self.scale is not None else q + k
        return self.concat_score_weight * tf.reduce_sum(tf.tanh(inner), axis=-1)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode}


class AdditiveAttention(_BaseDenseAttention):
    """Additive (Bahdanau) attention: scores = sum over features of scale * tanh(query + key)."""

    def __init__(self, use_scale=True, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = use_scale

    def build(self, input_shape):
        dim = tf.TensorShape(input_shape[1]).as_list()[-1]
        self.scale = self.add_weight("scale", shape=[dim], initializer="glorot_uniform", trainable=True) \
            if self.use_scale else None
        self.built = True

    def _calculate_scores(self, query, key):
        q = tf.expand_dims(query, -2)
        k = tf.expand_dims(key, -3)
        terms = tf.tanh(q + k)
        return tf.reduce_sum(self.scale * terms if self.scale is not None else terms, axis=-1)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale}


"""Keras 2's layer wrappers (tf_keras): the ``Wrapper`` base (a layer holding one other layer, serialized with
it), TimeDistributed, which applies a layer to every time step, and SpectralNormalization, which divides a
layer's kernel by its largest singular value before each training call."""

from ember.framework.tensor_shape import TensorShape
from ember.keras import initializers
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.input_spec import InputSpec

__all__ = ["Wrapper", "TimeDistributed", "SpectralNormalization"]


class Wrapper(Layer):
    """The base of layers that wrap one ``layer``: builds it on the wrapper's input shape unless built, and
    keeps it in the config as a serialized layer (``from_config`` deserializes it). Subclasses write
    ``call``."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer} supplied to wrapper is not a supported layer type. Please ensure "
                             "wrapped layer is a valid TF-Keras layer.")
        self.layer = layer
        super().__init__(**kwargs)

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
        self.built = True

    def get_config(self):
        from ember.keras import layers

        return {**super().get_config(), "layer": layers.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import layers

        config = dict(config)
        layer = layers.deserialize(config.pop("layer"), custom_objects)
        return cls(layer, **config)


class TimeDistributed(Wrapper):
    """``layer`` applied to each slice [:, t] of a (batch, time, ...) input, with one set of weights: the
    batch and time dims are folded into one for the call and unfolded after, as tf_keras does for inputs
    whose inner dims are known."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer with a `tf.keras.layers.Layer` instance. "
                             f"Received: {layer}")
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        if len(shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape` with at least 3 dimensions, "
                             f"received: {shape}")
        if not self.layer.built:
            self.layer.build(TensorShape([None] + shape[2:]))
        self.built = True

    def call(self, inputs, training=None):
        import ember as tf

        shape = tf.shape(inputs)
        inner = inputs.shape.as_list()[2:]
        folded = tf.reshape(inputs, tf.concat([[-1], shape[2:]], 0) if None in inner else [-1] + inner)
        kwargs = {"training": training} if self.layer._expects_training_arg else {}
        out = self.layer(folded, **kwargs)
        out_inner = out.shape.as_list()[1:]
        out_shape = tf.concat([shape[:2], tf.shape(out)[1:]], 0)
        result = tf.reshape(out, out_shape)
        static = inputs.shape.as_list()[:2] + out_inner
        return tf.ensure_shape(result, static) if hasattr(tf, "ensure_shape") else result

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape).as_list()
        inner = TensorShape(self.layer.compute_output_shape(TensorShape([None] + shape[2:]))).as_list()
        return TensorShape(shape[:2] + inner[1:])


class SpectralNormalization(Wrapper):
    """``layer`` (one with a ``kernel`` or ``embeddings``) whose kernel is replaced, at each call with
    ``training=True``, by ``kernel / sigma``: sigma is the largest singular value of the kernel seen as
    ``[-1, last axis]``, estimated by ``power_iterations`` steps of power iteration from the kept vector
    ``vector_u`` (a non-trainable weight, TruncatedNormal(stddev=0.02) at first), as tf_keras does. An all-zero
    kernel is left as it is."""

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        self.power_iterations = power_iterations

    def build(self, input_shape):
        super().build(input_shape)
        input_shape = TensorShape(input_shape)
        self.input_spec = InputSpec(shape=[None] + input_shape.as_list()[1:])
        if hasattr(self.layer, "kernel"):
            self.kernel = self.layer.kernel
        elif hasattr(self.layer, "embeddings"):
            self.kernel = self.layer.embeddings
        else:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' nor 'embeddings'")
        self.kernel_shape = self.kernel.shape.as_list()
        self.vector_u = self.add_weight(shape=(1, self.kernel_shape[-1]),
                                        initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False,
                                        name="vector_u", dtype=self.kernel.dtype)

    def call(self, inputs, training=False):
        if training:
            self._update_weights()
        return self.layer(inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(TensorShape(self.layer.compute_output_shape(input_shape)).as_list())

    def _update_weights(self):
        import ember as tf

        kernel, vector_u = tf.cond(tf.reduce_all(tf.equal(self.kernel, 0)),
                                   lambda: (tf.identity(self.kernel), tf.identity(self.vector_u)),
                                   self.normalize_weights)
        self.kernel.assign(kernel)
        self.vector_u.assign(vector_u)

    def normalize_weights(self):
        """``(kernel / sigma, the new vector_u)``."""
        import ember as tf

        weights = tf.reshape(self.kernel, [-1, self.kernel_shape[-1]])
        vector_u = tf.convert_to_tensor(self.vector_u)
        vector_v = vector_u
        for _ in range(self.power_iterations):
            vector_v = tf.math.l2_normalize(tf.matmul(vector_u, weights, transpose_b=True))
            vector_u = tf.math.l2_normalize(tf.matmul(vector_v, weights))
        vector_u = tf.stop_gradient(vector_u)
        vector_v = tf.stop_gradient(vector_v)
        sigma = tf.matmul(tf.matmul(vector_v, weights), vector_u, transpose_b=True)
        return tf.reshape(weights / sigma, self.kernel_shape), vector_u

    def get_config(self):
        return {**super().get_config(), "power_iterations": self.power_iterations}

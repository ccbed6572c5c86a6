"""Keras 2's layer wrappers (tf_keras): TimeDistributed, which applies a layer to every time step."""

from ember.framework.tensor_shape import TensorShape
from ember.keras.engine.base_layer import Layer

__all__ = ["TimeDistributed"]


class TimeDistributed(Layer):
    """``layer`` applied to each slice [:, t] of a (batch, time, ...) input, with one set of weights: the
    batch and time dims are folded into one for the call and unfolded after, as tf_keras does for inputs
    whose inner dims are known."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer with a `tf.keras.layers.Layer` instance. "
                             f"Received: {layer}")
        super().__init__(**kwargs)
        self.layer = layer
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

    def get_config(self):
        from ember.keras import layers

        return {**super().get_config(), "layer": layers.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import layers

        config = dict(config)
        layer = layers.deserialize(config.pop("layer"), custom_objects)
        return cls(layer, **config)

"""Keras 2's Dot merge layer (tf_keras); the element-wise merges and Concatenate are in core.py."""

from ember.framework.tensor_shape import TensorShape
from ember.keras.layers.core import _Merge

__all__ = ["Dot", "dot"]


class Dot(_Merge):
    """The dot product of two (batch, ...) inputs along ``axes`` (an int or a pair), optionally of their
    L2-normalized vectors (cosine proximity), as tf_keras' batched dot."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)) or len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise ValueError(f"Invalid type/value for `axes` argument. Expected an int or a list/tuple of 2 ints. "
                                 f"Received: axes={axes}")
        self.axes = axes
        self.normalize = normalize
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs. Received: "
                             f"input_shape={input_shape}")
        x, y = (TensorShape(s).as_list() for s in input_shape)
        ax, ay = self._axes_for([len(x), len(y)])
        if x[ax] is not None and y[ay] is not None and x[ax] != y[ay]:
            raise ValueError(f"Incompatible input shapes: axis values {x[ax]} (at axis {ax}) != {y[ay]} (at axis "
                             f"{ay}). Full input shapes: {tuple(x)}, {tuple(y)}")
        self.built = True

    def _axes_for(self, ranks):
        axes = (self.axes, self.axes) if isinstance(self.axes, int) else tuple(self.axes)
        return tuple(a % r if a < 0 else a for a, r in zip(axes, ranks))

    def _merge(self, inputs):
        import ember as tf

        if len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        x, y = inputs
        ax, ay = self._axes_for([x.shape.rank, y.shape.rank])
        if self.normalize:
            x = tf.math.l2_normalize(x, axis=ax)
            y = tf.math.l2_normalize(y, axis=ay)
        # batch dim 0 kept; contract x's axis ax with y's axis ay, then the other dims in order (x's, y's)
        x_rest = [d for d in range(1, x.shape.rank) if d != ax]
        y_rest = [d for d in range(1, y.shape.rank) if d != ay]
        xt = tf.transpose(x, [0] + x_rest + [ax])
        yt = tf.transpose(y, [0, ay] + y_rest)
        xs, ys = tf.shape(xt), tf.shape(yt)
        x2 = tf.reshape(xt, tf.stack([xs[0], -1, xs[-1]]))
        y2 = tf.reshape(yt, tf.stack([ys[0], ys[1], -1]))
        out = tf.matmul(x2, y2)
        out_shape = tf.concat([xs[:1], xs[1:-1], ys[2:]], 0)
        out = tf.reshape(out, out_shape)
        if x.shape.rank + y.shape.rank == 4:  # two vectors per example: tf_keras keeps a (batch, 1) result
            out = tf.expand_dims(out, 1)
        return out

    def compute_output_shape(self, input_shape):
        x, y = (TensorShape(s).as_list() for s in input_shape)
        ax, ay = self._axes_for([len(x), len(y)])
        shape = [x[0]] + [d for i, d in enumerate(x) if i not in (0, ax)] + [d for i, d in enumerate(y)
                                                                           if i not in (0, ay)]
        return TensorShape(shape if len(shape) > 1 else shape + [1])

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def dot(inputs, axes, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)

"""``ember.math``: TensorFlow's ``tf.math`` namespace."""

from ember.ops.math_ops import *  # noqa: F401,F403
from ember.ops.math_ops import abs, pow, round  # noqa: F401 - names the star import skips
from ember.ops.nn_ops import softplus  # noqa: F401

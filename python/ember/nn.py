"""``ember.nn``: TensorFlow's ``tf.nn`` namespace."""

from ember.ops.nn_ops import *  # noqa: F401,F403
from ember.ops.nn_conv_ops import *  # noqa: F401,F403
from ember.ops.nn_norm_ops import *  # noqa: F401,F403

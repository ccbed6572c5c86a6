"""``ember.math``: TensorFlow's ``tf.math`` namespace."""

from ember.ops.array_ops import unsorted_segment_sum  # noqa: F401
from ember.ops.math_ops import *  # noqa: F401,F403
from ember.ops.nn_ops import l2_normalize, log_sigmoid, log_softmax, softmax, softplus, softsign  # noqa: F401

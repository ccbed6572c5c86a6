"""``ember.random``: TensorFlow's ``tf.random`` namespace."""

from ember.ops.random_ops import (normal, set_seed, stateless_normal, stateless_truncated_normal,  # noqa: F401
                                  stateless_uniform, truncated_normal, uniform)

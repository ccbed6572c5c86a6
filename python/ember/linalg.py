"""``ember.linalg``: TensorFlow's ``tf.linalg`` namespace."""

from ember.ops.math_ops import matmul  # noqa: F401

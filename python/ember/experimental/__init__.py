"""``ember.experimental``: TensorFlow's ``tf.experimental`` names that ember has."""

from ember.experimental import dlpack  # noqa: F401

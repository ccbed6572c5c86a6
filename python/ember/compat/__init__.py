"""``ember.compat``: ``compat.v1`` for code written against TensorFlow 1.x (wrap_function and friends)."""

from ember.compat import v1  # noqa: F401

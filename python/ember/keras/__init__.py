"""``ember.keras``: the parts of Keras 3 (``tf.keras`` in TF 2.16+) that ember has so far: optimizers."""

from ember.keras import optimizers  # noqa: F401

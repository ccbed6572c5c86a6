"""``ember.keras``: Keras 2's API as TensorFlow's ``tf_keras`` has it: layers are ember.Modules.

``import ember as tf`` then ``tf.keras.layers.Dense``, ``tf.keras.Model``, ``tf.keras.Sequential``,
``tf.keras.Input``, ``tf.keras.optimizers``, ``tf.keras.losses`` ... See docs/keras.md.
"""

from ember.keras import activations, backend, initializers, optimizers, regularizers  # noqa: F401
from ember.keras import layers  # noqa: F401
from ember.keras.engine.input_layer import Input  # noqa: F401

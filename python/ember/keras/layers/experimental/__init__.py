"""``tf.keras.layers.experimental``: where Keras 2.3-2.5 first put the preprocessing layers; tf_keras still
exports them there (``layers.experimental.preprocessing.RandomFlip`` is ``layers.RandomFlip``)."""

from ember.keras.layers.experimental import preprocessing  # noqa: F401

"""``tf.keras.layers.experimental.preprocessing``: the preprocessing and augmentation layers under their
older names, the same classes as ``tf.keras.layers``' (tf_keras lists these; HashedCrossing and the
PreprocessingLayer base are not in ember)."""

from ember.keras.layers.image_augmentation import (RandomContrast, RandomCrop, RandomFlip, RandomHeight,  # noqa: F401
                                                   RandomRotation, RandomTranslation, RandomWidth, RandomZoom)
from ember.keras.layers.preprocessing import (CategoryEncoding, CenterCrop, Discretization, Hashing,  # noqa: F401
                                              Normalization, Rescaling, Resizing)
from ember.keras.layers.text_lookup import IntegerLookup, StringLookup, TextVectorization  # noqa: F401

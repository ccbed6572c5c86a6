"""``ember.keras.utils``: Progbar, to_categorical, the image file helpers (image_utils.py), plot-free helpers of
Keras 2's utils."""

import numpy as np

from ember.keras.utils.data_utils import (Sequence, normalize, pack_x_y_sample_weight,  # noqa: F401
                                          pad_sequences, split_dataset, text_dataset_from_directory,
                                          timeseries_dataset_from_array, to_ordinal, unpack_x_y_sample_weight)
from ember.keras.utils import data_utils
from ember.keras.utils.generic_utils import Progbar  # noqa: F401
from ember.keras.utils.image_utils import (array_to_img, image_dataset_from_directory, img_to_array,  # noqa: F401
                                           load_img, save_img)
from ember.keras.utils.object_registration import (CustomObjectScope, custom_object_scope,  # noqa: F401
                                                   deserialize_keras_object, get_custom_objects,
                                                   get_registered_name, get_registered_object,
                                                   register_keras_serializable, serialize_keras_object)


def to_categorical(y, num_classes=None, dtype="float32"):
    """Integer class labels -> one-hot rows (Keras 2's utils.to_categorical)."""
    y, shape, num_classes = data_utils.flat_labels(y, num_classes)
    out = np.zeros((y.shape[0], num_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


def set_random_seed(seed):
    """Seeds Python's, NumPy's and ember's random generators (keras.utils.set_random_seed)."""
    import random

    from ember.ops import random_ops

    from ember.keras import backend

    random.seed(seed)
    np.random.seed(seed)
    random_ops.set_seed(seed)
    # tf_keras' own stream of seeds for layers made without one (the augmentation layers' generators).
    backend._SEED_GENERATOR.generator = random.Random(seed)

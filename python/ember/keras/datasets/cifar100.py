"""CIFAR-100: the pickled ``train`` and ``test`` files of ``cifar-100-python.tar.gz``, with ``fine`` (100) or
``coarse`` (20) labels."""

import os

import numpy as np

from ember.keras import backend
from ember.keras.datasets._cache import cached_path
from ember.keras.datasets.cifar10 import load_batch

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"


def load_data(label_mode="fine", cache_dir=None):
    """``(x_train, y_train), (x_test, y_test)``: 32x32x3 uint8 images (channels first when the backend's
    image_data_format says so) and labels of shape (N, 1)."""
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    folder = cached_path("cifar-100-python", _ORIGIN, cache_dir, untar=True)
    splits = []
    for name in ("train", "test"):
        x, y = load_batch(os.path.join(folder, name), label_key=label_mode + "_labels")
        y = np.reshape(y, (len(y), 1))
        if backend.image_data_format() == "channels_last":
            x = x.transpose(0, 2, 3, 1)
        splits.append((x, y))
    return tuple(splits)

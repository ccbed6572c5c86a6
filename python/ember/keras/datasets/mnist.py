"""MNIST digits: ``mnist.npz`` (x_train, y_train, x_test, y_test as uint8 arrays)."""

import numpy as np

from ember.keras.datasets._cache import KERAS_DATASETS_URL, cached_path


def load_data(path="mnist.npz", cache_dir=None):
    """``(x_train, y_train), (x_test, y_test)``: 28x28 uint8 images and uint8 labels."""
    path = cached_path(path, KERAS_DATASETS_URL + "mnist.npz", cache_dir)
    with np.load(path, allow_pickle=True) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])

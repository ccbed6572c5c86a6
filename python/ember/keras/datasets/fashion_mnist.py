"""Fashion-MNIST: four gzipped IDX files under ``datasets/fashion-mnist/``."""

import gzip

import numpy as np

from ember.keras.datasets._cache import KERAS_DATASETS_URL, cached_path

_FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
          "t10k-images-idx3-ubyte.gz")


def _read(path, header_bytes):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header_bytes)


def load_data(cache_dir=None):
    """``(x_train, y_train), (x_test, y_test)``: 28x28 uint8 images and uint8 labels."""
    train_labels, train_images, test_labels, test_images = (
        cached_path(name, KERAS_DATASETS_URL + name, cache_dir, cache_subdir="datasets/fashion-mnist")
        for name in _FILES)
    # An IDX file opens with an 8-byte (labels) or 16-byte (images) header of magic number and sizes.
    y_train = _read(train_labels, 8)
    x_train = _read(train_images, 16).reshape(len(y_train), 28, 28)
    y_test = _read(test_labels, 8)
    x_test = _read(test_images, 16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)

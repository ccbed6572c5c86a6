"""CIFAR-10: the pickled batches of ``cifar-10-python.tar.gz`` (``cifar-10-batches-py/data_batch_1..5`` and
``test_batch``), each a dict of ``b"data"`` (N x 3072 uint8, channels first) and ``b"labels"``."""

import os
import pickle

import numpy as np

from ember.keras import backend
from ember.keras.datasets._cache import cached_path

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def load_batch(fpath, label_key="labels"):
    """One pickled batch: ``(data as N x 3 x 32 x 32, labels)``."""
    with open(fpath, "rb") as f:
        batch = pickle.load(f, encoding="bytes")
    batch = {key.decode("utf8") if isinstance(key, bytes) else key: value for key, value in batch.items()}
    data = batch["data"]
    return data.reshape(data.shape[0], 3, 32, 32), batch[label_key]


def load_data(cache_dir=None):
    """``(x_train, y_train), (x_test, y_test)``: 32x32x3 uint8 images (channels first when the backend's
    image_data_format says so) and uint8 labels of shape (N, 1)."""
    folder = cached_path("cifar-10-batches-py", _ORIGIN, cache_dir, untar=True)
    train = [load_batch(os.path.join(folder, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([data for data, _ in train]).astype(np.uint8)
    y_train = np.concatenate([np.asarray(labels) for _, labels in train]).astype(np.uint8)
    x_test, y_test = load_batch(os.path.join(folder, "test_batch"))
    x_test = np.asarray(x_test).astype(np.uint8)
    y_train = y_train.reshape(-1, 1)
    y_test = np.asarray(y_test).astype(np.uint8).reshape(-1, 1)
    if backend.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)

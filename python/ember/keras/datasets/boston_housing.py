"""Boston housing prices: ``boston_housing.npz`` (x: N x 13, y: N), shuffled and split as tf_keras does."""

import numpy as np

from ember.keras.datasets._cache import KERAS_DATASETS_URL, cached_path


def load_data(path="boston_housing.npz", test_split=0.2, seed=113, cache_dir=None):
    """``(x_train, y_train), (x_test, y_test)``: the rows shuffled by ``np.random.RandomState(seed)``, the last
    ``test_split`` of them for testing."""
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}")
    path = cached_path(path, KERAS_DATASETS_URL + "boston_housing.npz", cache_dir)
    with np.load(path, allow_pickle=True) as f:
        x, y = f["x"], f["y"]
    order = np.arange(len(x))
    np.random.RandomState(seed).shuffle(order)
    x, y = x[order], y[order]
    split = int(len(x) * (1 - test_split))
    return (np.array(x[:split]), np.array(y[:split])), (np.array(x[split:]), np.array(y[split:]))

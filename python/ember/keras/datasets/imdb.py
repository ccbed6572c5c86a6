"""IMDB reviews: ``imdb.npz`` (x_train/x_test: object arrays of word-index lists, y: 0/1) and
``imdb_word_index.json``, prepared as tf_keras prepares them."""

import json

import numpy as np

from ember.keras.datasets import _sequences
from ember.keras.datasets._cache import KERAS_DATASETS_URL, cached_path


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, cache_dir=None, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: each split shuffled with one ``RandomState(seed)``, the
    indices shifted by ``index_from`` after ``start_char``, sequences longer than ``maxlen`` dropped, and
    words outside ``[skip_top, num_words)`` replaced by ``oov_char`` (dropped when it is None)."""
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    path = cached_path(path, KERAS_DATASETS_URL + "imdb.npz", cache_dir)
    with np.load(path, allow_pickle=True) as f:
        x_train, labels_train = f["x_train"], f["y_train"]
        x_test, labels_test = f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    x_train, labels_train = _sequences.shuffled(x_train, labels_train, rng)
    x_test, labels_test = _sequences.shuffled(x_test, labels_test, rng)

    x_train = _sequences.shift(x_train, start_char, index_from)
    x_test = _sequences.shift(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = _sequences.drop_longer(maxlen, x_train, labels_train)
        x_test, labels_test = _sequences.drop_longer(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                             "Increase maxlen.")
    sequences = _sequences.limit_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([labels_train, labels_test])
    n_train = len(x_train)
    return ((np.array(sequences[:n_train], dtype="object"), labels[:n_train]),
            (np.array(sequences[n_train:], dtype="object"), labels[n_train:]))


def get_word_index(path="imdb_word_index.json"):
    """The word -> index dict (indices before ``index_from`` is added)."""
    path = cached_path(path, KERAS_DATASETS_URL + "imdb_word_index.json")
    with open(path) as f:
        return json.load(f)

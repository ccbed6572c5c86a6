"""Reuters newswire topics: ``reuters.npz`` (x: object array of word-index lists, y: topic ids) and
``reuters_word_index.json``, prepared and split as tf_keras does."""

import json

import numpy as np

from ember.keras.datasets import _sequences
from ember.keras.datasets._cache import KERAS_DATASETS_URL, cached_path

# The 46 topics, in the order of their ids.
_LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply", "coffee", "sugar",
    "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp",
    "meal-feed", "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail", "ipi", "iron-steel",
    "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog",
    "lead")


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113,
              start_char=1, oov_char=2, index_from=3, cache_dir=None, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: the newswires shuffled by ``RandomState(seed)``, prepared as
    imdb's (see ``imdb.load_data``), the last ``test_split`` of them for testing."""
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    path = cached_path(path, KERAS_DATASETS_URL + "reuters.npz", cache_dir)
    with np.load(path, allow_pickle=True) as f:
        xs, labels = f["x"], f["y"]
    xs, labels = _sequences.shuffled(xs, labels, np.random.RandomState(seed))
    xs = _sequences.shift(xs, start_char, index_from)
    if maxlen:
        xs, labels = _sequences.drop_longer(maxlen, xs, labels)
    xs = _sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    split = int(len(xs) * (1 - test_split))
    return ((np.array(xs[:split], dtype="object"), np.array(labels[:split])),
            (np.array(xs[split:], dtype="object"), np.array(labels[split:])))


def get_word_index(path="reuters_word_index.json"):
    """The word -> index dict (indices before ``index_from`` is added)."""
    path = cached_path(path, KERAS_DATASETS_URL + "reuters_word_index.json")
    with open(path) as f:
        return json.load(f)


def get_label_names():
    return _LABEL_NAMES

"""ember.keras.datasets against tf_keras: small files in Keras' cache formats, written into a temporary cache,
read by both (tf_keras' hash check is switched off, as these are not the published files); a missing file
raises naming the URL and the path looked at."""

import gzip
import json
import os
import pickle
import tarfile

import numpy as np
import pytest
import tf_keras
from tf_keras.src.utils import data_utils as tf_keras_data_utils

from ember.keras import datasets

RNG = np.random.default_rng(0)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A Keras cache root (``<root>/datasets/``) that tf_keras reads without checking hashes."""
    monkeypatch.setattr(tf_keras_data_utils, "validate_file", lambda *args, **kwargs: True)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "datasets").mkdir()
    return tmp_path


def assert_same_splits(ours, theirs):
    for our_split, their_split in zip(ours, theirs):
        for our_array, their_array in zip(our_split, their_split):
            assert our_array.dtype == their_array.dtype and our_array.shape == their_array.shape
            if our_array.dtype == object:
                assert [list(x) for x in our_array] == [list(x) for x in their_array]
            else:
                np.testing.assert_array_equal(our_array, their_array)


def test_mnist_reads_the_npz_from_keras_home(cache):
    arrays = {"x_train": RNG.integers(0, 256, (7, 28, 28), dtype=np.uint8), "y_train": np.arange(7, dtype=np.uint8),
              "x_test": RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8), "y_test": np.arange(3, dtype=np.uint8)}
    np.savez(cache / "datasets" / "mnist.npz", **arrays)
    ours = datasets.mnist.load_data()
    assert_same_splits(ours, tf_keras.datasets.mnist.load_data(cache_dir=str(cache)))
    np.testing.assert_array_equal(ours[0][0], arrays["x_train"])


def test_cache_dir_wins_over_keras_home(cache, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    (other / "datasets").mkdir()
    np.savez(other / "datasets" / "boston_housing.npz", x=RNG.normal(size=(20, 13)), y=RNG.normal(size=20))
    ours = datasets.boston_housing.load_data(cache_dir=str(other), test_split=0.25, seed=5)
    theirs = tf_keras.datasets.boston_housing.load_data(cache_dir=str(other), test_split=0.25, seed=5)
    assert_same_splits(ours, theirs)
    assert len(ours[0][0]) == 15


def test_fashion_mnist_reads_the_gzipped_idx_files(cache):
    folder = cache / "datasets" / "fashion-mnist"
    folder.mkdir()
    for prefix, n in (("train", 6), ("t10k", 4)):
        with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(b"\0" * 8 + RNG.integers(0, 10, n, dtype=np.uint8).tobytes())
        with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(b"\0" * 16 + RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8).tobytes())
    assert_same_splits(datasets.fashion_mnist.load_data(),
                       tf_keras.datasets.fashion_mnist.load_data(cache_dir=str(cache)))


def test_cifar10_unpacks_the_cached_archive(cache):
    # tf_keras assumes the published sizes (five batches of 10000), so the batches are full size; the pixel
    # values are a cheap pattern so that the archive compresses quickly.
    folder = cache / "work" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    pattern = (np.arange(10000 * 3072, dtype=np.int64) % 251).astype(np.uint8).reshape(10000, 3072)
    for index, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        batch = {b"data": np.roll(pattern, index, axis=0), b"labels": list(np.roll(np.arange(10000) % 10, index))}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    with tarfile.open(cache / "datasets" / "cifar-10-batches-py.tar.gz", "w:gz", compresslevel=1) as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    ours = datasets.cifar10.load_data()
    assert os.path.isdir(cache / "datasets" / "cifar-10-batches-py")
    theirs = tf_keras.datasets.cifar10.load_data(cache_dir=str(cache))
    assert_same_splits(ours, theirs)
    assert ours[0][0].shape == (50000, 32, 32, 3) and ours[1][1].shape == (10000, 1)


def test_cifar100_fine_and_coarse_labels(cache):
    folder = cache / "work" / "cifar-100-python"
    folder.mkdir(parents=True)
    for name, n in (("train", 5), ("test", 3)):
        batch = {b"data": RNG.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"fine_labels": list(RNG.integers(0, 100, n)), b"coarse_labels": list(RNG.integers(0, 20, n))}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    with tarfile.open(cache / "datasets" / "cifar-100-python.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="cifar-100-python")
    for label_mode in ("fine", "coarse"):
        assert_same_splits(datasets.cifar100.load_data(label_mode),
                           tf_keras.datasets.cifar100.load_data(label_mode, cache_dir=str(cache)))
    with pytest.raises(ValueError, match="label_mode"):
        datasets.cifar100.load_data("medium")


def write_imdb(cache):
    lengths = RNG.integers(3, 12, 9)
    x_train = np.array([list(RNG.integers(1, 30, n)) for n in lengths[:5]], dtype=object)
    x_test = np.array([list(RNG.integers(1, 30, n)) for n in lengths[5:]], dtype=object)
    np.savez(cache / "datasets" / "imdb.npz", x_train=x_train, y_train=RNG.integers(0, 2, 5),
             x_test=x_test, y_test=RNG.integers(0, 2, 4))


@pytest.mark.parametrize("kwargs", [
    {},
    {"num_words": 20, "skip_top": 5},
    {"maxlen": 10, "seed": 7},
    {"oov_char": None, "num_words": 15},
    {"start_char": None, "index_from": 2},
])
def test_imdb_prepares_sequences_as_tf_keras(cache, kwargs):
    write_imdb(cache)
    assert_same_splits(datasets.imdb.load_data(**kwargs),
                       tf_keras.datasets.imdb.load_data(cache_dir=str(cache), **kwargs))


def test_imdb_word_index_and_bad_arguments(cache):
    (cache / "datasets" / "imdb_word_index.json").write_text(json.dumps({"the": 1, "film": 2}))
    assert datasets.imdb.get_word_index() == {"the": 1, "film": 2}
    write_imdb(cache)
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        datasets.imdb.load_data(bogus=1)
    with pytest.raises(ValueError, match="maxlen=2"):
        datasets.imdb.load_data(maxlen=2)


def test_a_missing_file_names_the_url_and_the_path(cache):
    with pytest.raises(FileNotFoundError) as info:
        datasets.mnist.load_data()
    assert "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz" in str(info.value)
    assert str(cache / "datasets" / "mnist.npz") in str(info.value)
    with pytest.raises(FileNotFoundError, match="cifar-10-python.tar.gz.*cifar-10-batches-py.tar.gz"):
        datasets.cifar10.load_data()
    with pytest.raises(ValueError, match="test_split"):
        datasets.boston_housing.load_data(test_split=1.5)


@pytest.mark.parametrize("kwargs", [{}, {"num_words": 12, "skip_top": 4, "test_split": 0.3},
                                    {"maxlen": 9, "oov_char": None}])
def test_reuters_prepares_and_splits_as_tf_keras(cache, kwargs):
    xs = np.array([list(RNG.integers(1, 25, n)) for n in RNG.integers(3, 12, 10)], dtype=object)
    np.savez(cache / "datasets" / "reuters.npz", x=xs, y=RNG.integers(0, 46, 10))
    assert_same_splits(datasets.reuters.load_data(**kwargs),
                       tf_keras.datasets.reuters.load_data(cache_dir=str(cache), **kwargs))
    assert datasets.reuters.get_label_names() == tf_keras.datasets.reuters.get_label_names()

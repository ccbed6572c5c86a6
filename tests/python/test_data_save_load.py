"""Dataset.save / Dataset.load and tf.data.experimental.save / load (python/ember/data/save_load.py): the
elements, their structure and cardinality come back as TensorFlow's do; eager and in ember.function; bad or
damaged directories raise ember.errors; a failed save leaves the earlier one whole."""

import os

import numpy as np
import pytest
import tensorflow

import ember


def _dataset(tf):
    elements = {"x": np.arange(12, dtype=np.float32).reshape(6, 2), "s": [b"a", b"bc", b"", b"\x00z\x00", b"e", b"f"],
                "i": np.arange(6), "h": np.linspace(-1, 1, 6).astype(np.float16)}
    return tf.data.Dataset.from_tensor_slices(elements).map(lambda e: (e["x"] * 2, (e["s"], e["i"]), e["h"]))


def _listed(dataset):
    return [[np.asarray(a).tolist() for a in tensorflow.nest.flatten(e)] for e in dataset.as_numpy_iterator()]


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
@pytest.mark.parametrize("batch", [None, 4])
def test_saved_dataset_loads_as_tensorflows(tmp_path, compression, batch):
    results = []
    for tf in (ember, tensorflow):
        dataset = _dataset(tf) if batch is None else _dataset(tf).batch(batch)
        path = str(tmp_path / tf.__name__)
        dataset.save(path, compression=compression)
        loaded = tf.data.Dataset.load(path, compression=compression)
        results.append((repr(loaded.element_spec).replace("ember", "tf"), int(loaded.cardinality()),
                        _listed(loaded)))
    assert results[0] == results[1]


def test_loaded_dataset_in_a_function_and_the_experimental_names(tmp_path):
    ember.data.Dataset.range(5).map(lambda x: x * 3).save(str(tmp_path / "d"))

    @ember.function
    def total():
        s = ember.constant(0, ember.int64)
        for v in ember.data.Dataset.load(str(tmp_path / "d")):
            s += v
        return s

    assert int(total()) == 30
    assert list(ember.data.experimental.load(str(tmp_path / "d")).as_numpy_iterator()) == [0, 3, 6, 9, 12]
    ember.data.experimental.save(ember.data.Dataset.range(2), str(tmp_path / "e"))
    assert list(ember.data.Dataset.load(str(tmp_path / "e")).as_numpy_iterator()) == [0, 1]


def test_element_spec_argument_must_match(tmp_path):
    ember.data.Dataset.range(3).save(str(tmp_path / "d"))
    spec = ember.TensorSpec([], ember.int64)
    assert list(ember.data.Dataset.load(str(tmp_path / "d"), element_spec=spec).as_numpy_iterator()) == [0, 1, 2]
    with pytest.raises(ValueError, match="does not match"):
        ember.data.Dataset.load(str(tmp_path / "d"), element_spec=ember.TensorSpec([], ember.float32))


def test_missing_and_damaged_directories_raise(tmp_path):
    with pytest.raises(ember.errors.NotFoundError):
        ember.data.Dataset.load(str(tmp_path / "nothing"))
    path = str(tmp_path / "d")
    ember.data.Dataset.from_tensor_slices(np.arange(4.0)).save(path)
    data = os.path.join(path, "data-00000.tfrecord")
    raw = bytearray(open(data, "rb").read())
    raw[20] ^= 0xFF  # inside the first record: its CRC no longer matches
    open(data, "wb").write(bytes(raw))
    with pytest.raises(ember.errors.DataLossError):
        list(ember.data.Dataset.load(path).as_numpy_iterator())
    with open(os.path.join(path, "metadata.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(ember.errors.DataLossError):
        ember.data.Dataset.load(path)


def test_a_failed_save_leaves_the_earlier_one(tmp_path):
    path = str(tmp_path / "d")
    ember.data.Dataset.range(3).save(path)

    def elements():
        yield 0
        raise RuntimeError("the input pipeline failed")

    failing = ember.data.Dataset.from_generator(elements, output_signature=ember.TensorSpec([], ember.int64))
    with pytest.raises(Exception):
        failing.save(path)
    assert list(ember.data.Dataset.load(path).as_numpy_iterator()) == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["d"]  # no temporary directory left


def test_ragged_elements_are_refused_clearly(tmp_path):
    ragged = ember.data.Dataset.range(3).map(lambda x: ember.range(x)).ragged_batch(2)
    with pytest.raises(TypeError, match="dense tensors"):
        ragged.save(str(tmp_path / "r"))
    with pytest.raises(TypeError, match="dense tensors"):
        ragged.cache(str(tmp_path / "c"))
    assert [r.to_list() for r in ragged.cache()] == [[[], [0]], [[0, 1]]]  # in memory it caches anything


def test_cache_file_holds_records_not_pickles(tmp_path):
    path = str(tmp_path / "c")
    elements = {"a": [b"x", b"\x00yz"], "b": np.array([[1.5, 2], [3, 4]], np.float32)}
    first = _listed(ember.data.Dataset.from_tensor_slices(elements).cache(path))
    other = {"a": [b"q", b"r"], "b": np.zeros((2, 2), np.float32)}
    assert _listed(ember.data.Dataset.from_tensor_slices(other).cache(path)) == first  # replayed from the file
    assert len(list(tensorflow.compat.v1.io.tf_record_iterator(path))) == 2  # TFRecord records, not a pickle
    raw = bytearray(open(path, "rb").read())
    raw[-3] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    with pytest.raises(ember.errors.DataLossError):
        _listed(ember.data.Dataset.from_tensor_slices(other).cache(path))

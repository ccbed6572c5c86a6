"""tf.data.TFRecordDataset over ember.io.tf_record's reader: the records of files TensorFlow wrote, in
TensorFlow's order (one file after another, or interleaved with num_parallel_reads), compressed or not;
corrupt files raise DataLossError; records (bytes: ember has no string tensors yet) pass through the
transformations that only move elements, and the others say why they cannot take them."""

import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors


def write(path, records, compression=None):
    with real_tf.io.TFRecordWriter(str(path), options=compression) as w:
        for r in records:
            w.write(r)
    return str(path)


@pytest.fixture
def files(tmp_path):
    return [write(tmp_path / f"f{i}.tfrecord", [f"file{i}-rec{j}".encode() for j in range(i + 1)])
            for i in range(3)]


def records(lib, build):
    return [e if isinstance(e, bytes) else e for e in build(lib).as_numpy_iterator()]


@pytest.mark.parametrize("build", [
    lambda t, f: t.data.TFRecordDataset(f),
    lambda t, f: t.data.TFRecordDataset(f[0]),
    lambda t, f: t.data.TFRecordDataset(f, num_parallel_reads=2),
    lambda t, f: t.data.TFRecordDataset(f, num_parallel_reads=3).skip(1).take(3).repeat(2),
    lambda t, f: t.data.TFRecordDataset(f).shuffle(10, seed=3, reshuffle_each_iteration=False).take(0),
    lambda t, f: t.data.Dataset.zip((t.data.TFRecordDataset(f), t.data.Dataset.range(100))),
])
def test_records_match_tensorflow(files, build):
    assert records(tf, lambda t: build(t, files)) == records(real_tf, lambda t: build(t, files))


def test_element_spec_is_a_string_scalar(files):
    assert repr(tf.data.TFRecordDataset(files).element_spec) == repr(real_tf.data.TFRecordDataset(files).element_spec)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files(tmp_path, compression):
    path = write(tmp_path / "c.tfrecord", [b"a", b"bb", b""], compression)
    assert list(tf.data.TFRecordDataset(path, compression_type=compression).as_numpy_iterator()) == [b"a", b"bb", b""]


def test_corrupt_file_is_data_loss(tmp_path):
    path = write(tmp_path / "bad.tfrecord", [b"hello world"])
    data = bytearray(open(path, "rb").read())
    data[14] ^= 0xFF  # inside the record's data: its CRC no longer matches
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError):
        list(tf.data.TFRecordDataset(path))


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError):
        list(tf.data.TFRecordDataset(str(tmp_path / "nope.tfrecord")))


def test_transformations_needing_string_tensors_say_so(files):
    ds = tf.data.TFRecordDataset(files)
    for make in (lambda: ds.map(lambda r: r), lambda: ds.batch(2), lambda: ds.filter(lambda r: True),
                 lambda: ds.reduce(0, lambda s, r: s)):
        with pytest.raises(NotImplementedError, match="string tensors"):
            make()
    with pytest.raises(TypeError, match="filenames"):
        tf.data.TFRecordDataset([1, 2])

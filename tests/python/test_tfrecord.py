"""TFRecord files (tf.io.TFRecordWriter, tf.compat.v1.io.tf_record_iterator, the RecordReader tf.data uses)
against TensorFlow 2.21: the same bytes, each reads the other's files in every compression, and corrupt or
truncated files raise DataLossError as TensorFlow's reader does."""

import gzip
import zlib

import pytest
import tensorflow as tf

import ember as em
from ember.io.tf_record import RecordReader

RECORDS = [b"", b"hello", b"\x00\xff" * 1000, "snowman \u2603".encode(), bytes(range(256)) * 300]


def _tf_records(path, compression=""):
    return list(tf.compat.v1.io.tf_record_iterator(str(path), tf.io.TFRecordOptions(compression)))


def _em_records(path, compression=""):
    return list(em.compat.v1.io.tf_record_iterator(str(path), em.io.TFRecordOptions(compression)))


def test_uncompressed_bytes_equal_tensorflows(tmp_path):
    with tf.io.TFRecordWriter(str(tmp_path / "tf.tfrecord")) as w:
        for r in RECORDS:
            w.write(r)
    with em.io.TFRecordWriter(str(tmp_path / "em.tfrecord")) as w:
        for r in RECORDS:
            w.write(r)
    assert (tmp_path / "em.tfrecord").read_bytes() == (tmp_path / "tf.tfrecord").read_bytes()


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_each_reads_the_others_files(tmp_path, compression):
    with em.io.TFRecordWriter(str(tmp_path / "em"), em.io.TFRecordOptions(compression)) as w:
        for r in RECORDS:
            w.write(r)
    with tf.io.TFRecordWriter(str(tmp_path / "tf"), tf.io.TFRecordOptions(compression)) as w:
        for r in RECORDS:
            w.write(r)
    assert _tf_records(tmp_path / "em", compression) == RECORDS
    assert _em_records(tmp_path / "tf", compression) == RECORDS
    assert list(RecordReader(tmp_path / "tf", compression)) == RECORDS
    # A plain string names the compression too, as in TensorFlow.
    assert list(em.compat.v1.io.tf_record_iterator(str(tmp_path / "tf"), compression or None)) == RECORDS


def test_compressed_files_are_real_zlib_and_gzip(tmp_path):
    for compression, opener in (("GZIP", gzip.decompress), ("ZLIB", zlib.decompress)):
        p = tmp_path / compression
        with em.io.TFRecordWriter(str(p), compression) as w:
            w.write(b"abc")
        assert opener(p.read_bytes()) == em._C.encode_record(b"abc")


def test_options_levels_and_str_records(tmp_path):
    opts = em.io.TFRecordOptions(compression_type="ZLIB", compression_level=9, window_bits=12, mem_level=4)
    with em.io.TFRecordWriter(str(tmp_path / "x"), opts) as w:
        w.write("a str is written as UTF-8 \u2603")
    got = list(tf.compat.v1.io.tf_record_iterator(str(tmp_path / "x"), tf.io.TFRecordOptions("ZLIB")))
    assert got == ["a str is written as UTF-8 \u2603".encode()]
    assert em.io.TFRecordOptions.get_compression_type_string(None) == ""
    assert em.io.TFRecordOptions.get_compression_type_string(em.io.TFRecordCompressionType.GZIP) == "GZIP"


def test_flush_makes_records_visible_to_tensorflow(tmp_path):
    p = str(tmp_path / "live")
    w = em.io.TFRecordWriter(p)
    w.write(b"one")
    w.flush()
    assert _tf_records(p) == [b"one"]
    w.write(b"two")
    w.close()
    assert _tf_records(p) == [b"one", b"two"]


def _corruptions(tmp_path):
    p = tmp_path / "good"
    with tf.io.TFRecordWriter(str(p)) as w:
        w.write(b"hello")
        w.write(b"world!!")
    data = p.read_bytes()
    return {
        "truncated_data": data[:-3],
        "short_header": data[:26],
        "data_crc": data[:20] + b"X" + data[21:],
        "length_crc": data[:9] + b"\0" + data[10:],
        "second_length": data[:22] + b"\x7f" + data[23:],
        "garbage": b"not a tfrecord file at all",
    }


def test_corrupt_and_truncated_files_fail_as_tensorflows(tmp_path):
    for name, bad in _corruptions(tmp_path).items():
        p = tmp_path / name
        p.write_bytes(bad)
        try:
            expected = ("ok", _tf_records(p))
        except tf.errors.OpError as e:
            expected = (type(e).__name__, e.message.split("'")[0])
        try:
            got = ("ok", _em_records(p))
        except em.errors.OpError as e:
            got = (type(e).__name__, e.message)
        assert got == expected, name
    # The cases above include DataLossError ones (so the test can fail for its reason).
    p = tmp_path / "t"
    p.write_bytes(_corruptions(tmp_path)["truncated_data"])
    with pytest.raises(em.errors.DataLossError, match="truncated record at 21"):
        _em_records(p)


def test_errors_for_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        em.io.TFRecordWriter(str(tmp_path / "x"), "BAD")
    with pytest.raises(em.errors.NotFoundError):
        list(em.compat.v1.io.tf_record_iterator(str(tmp_path / "missing")))
    w = em.io.TFRecordWriter(str(tmp_path / "x"))
    with pytest.raises(TypeError):
        w.write(5)
    w.close()
    with pytest.raises(em.errors.FailedPreconditionError, match="Writer is closed."):
        w.write(b"x")


def test_reader_api_for_tf_data(tmp_path):
    p = tmp_path / "r"
    with em.io.TFRecordWriter(str(p), "GZIP") as w:
        w.write(b"a")
        w.write(b"b")
    with RecordReader(p, "GZIP") as r:
        assert r.read_next() == b"a"
        assert r.offset == 17
        assert r.read_next() == b"b"
        assert r.read_next() is None

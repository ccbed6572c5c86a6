"""tf.data.TextLineDataset and FixedLengthRecordDataset (python/ember/data/readers.py) against TensorFlow on
the same files: elements, compression, interleaved reads, file names from a dataset, use inside a function,
and the class of each error."""
import gzip
import zlib

import numpy as np
import pytest
import tensorflow

import ember


@pytest.fixture()
def files(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_bytes(b"a\r\nbb\n\nlast")
    (tmp_path / "lines.gz").write_bytes(gzip.compress(b"one\ntwo\n"))
    (tmp_path / "lines.zlib").write_bytes(zlib.compress(b"x\ny"))
    (tmp_path / "second.txt").write_bytes(b"s1\ns2\ns3\n")
    (tmp_path / "records.bin").write_bytes(bytes(range(23)))
    return tmp_path


def _outcome(make):
    try:
        return ("ok", [bytes(x) for x in make().as_numpy_iterator()])
    except Exception as e:  # noqa: BLE001 - compared by class
        return ("error", type(e).__name__)


CASES = [
    ("lines", lambda fw, d: fw.data.TextLineDataset(str(d / "lines.txt"))),
    ("gzip", lambda fw, d: fw.data.TextLineDataset([str(d / "lines.gz")], compression_type="GZIP")),
    ("zlib", lambda fw, d: fw.data.TextLineDataset([str(d / "lines.zlib")], compression_type="ZLIB")),
    ("two files", lambda fw, d: fw.data.TextLineDataset([str(d / "lines.txt"), str(d / "second.txt")])),
    ("interleaved", lambda fw, d: fw.data.TextLineDataset([str(d / "lines.txt"), str(d / "second.txt")],
                                                          num_parallel_reads=2)),
    ("names from a dataset", lambda fw, d: fw.data.TextLineDataset(
        fw.data.Dataset.from_tensor_slices([str(d / "second.txt"), str(d / "lines.txt")]))),
    ("missing file", lambda fw, d: fw.data.TextLineDataset(str(d / "nope.txt"))),
    ("bad compression", lambda fw, d: fw.data.TextLineDataset(str(d / "lines.txt"), compression_type="BAD")),
    ("records", lambda fw, d: fw.data.FixedLengthRecordDataset(str(d / "records.bin"), 5, header_bytes=2,
                                                               footer_bytes=1)),
    ("records exact", lambda fw, d: fw.data.FixedLengthRecordDataset(str(d / "records.bin"), 10,
                                                                     header_bytes=3)),
    ("records ragged body", lambda fw, d: fw.data.FixedLengthRecordDataset(str(d / "records.bin"), 4)),
    ("records zero length", lambda fw, d: fw.data.FixedLengthRecordDataset(str(d / "records.bin"), 0)),
    ("records pipeline", lambda fw, d: fw.data.FixedLengthRecordDataset(str(d / "records.bin"), 5,
                                                                        header_bytes=3).map(
        lambda r: fw.strings.substr(r, 1, 2)).skip(1)),
]


@pytest.mark.parametrize("label,case", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(files, label, case):
    assert _outcome(lambda: case(ember, files)) == _outcome(lambda: case(tensorflow, files))


def test_element_spec_and_cardinality(files):
    ds = ember.data.TextLineDataset(str(files / "lines.txt"))
    assert ds.element_spec == ember.TensorSpec([], ember.string)
    assert int(ds.cardinality()) == ember.data.UNKNOWN_CARDINALITY


def test_a_text_dataset_made_and_reduced_inside_a_function(files):
    path = str(files / "lines.txt")

    @ember.function
    def total_length():
        return ember.data.TextLineDataset(path).reduce(ember.constant(0),
                                                       lambda acc, line: acc + ember.strings.length(line))

    assert int(total_length()) == 7
    np.testing.assert_array_equal(
        list(ember.data.TextLineDataset(path).map(ember.strings.length).batch(2).as_numpy_iterator())[0], [1, 2])

"""tf.data.experimental against TensorFlow 2.21: CSV (python/ember/data/csv.py: decode_csv, CsvDataset,
make_csv_dataset) and the transformations of python/ember/data/experimental_ops.py (from_list,
assert_cardinality, ignore_errors, group_by_reducer, rejection_resample, at), with enumerate_dataset,
unbatch, get_structure, NumpyIterator, IteratorSpec and ThreadingOptions."""

import numpy as np
import pytest
import tensorflow

import ember

CSV = 'a,b,c,name\n1,2.5,3,"x, y"\n4,,6,z\n7,8.25,,"q""r"\r\n10,1e3,12,"two\nlines"\n'


@pytest.fixture
def csv_path(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(CSV.encode())
    return str(path)


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _same(make):
    """make(tf) in ember and in TensorFlow: the same elements, element spec and dtypes."""
    ours, theirs = make(ember), make(tensorflow)
    assert repr(ours.element_spec) == repr(theirs.element_spec)
    got, want = list(ours.as_numpy_iterator()), list(theirs.as_numpy_iterator())
    assert _plain(got) == _plain(want)
    for g, w in zip(got, want):
        assert [np.asarray(x).dtype for x in tensorflow.nest.flatten(g)] == \
            [np.asarray(x).dtype for x in tensorflow.nest.flatten(w)]
    return got


# ---- decode_csv

DECODE_CASES = {
    "quotes": (["1,a", '2,"b,c"', '3,"say ""hi"""'], lambda tf: [[0], ["d"]], {}),
    "defaults_na": ([["1;NA"], ["2;3"], [";"]], lambda tf: [[0], [7.5]], {"field_delim": ";", "na_value": "NA"}),
    "select_cols": (["1,2,3,4", "5,6,7,8,9"], lambda tf: [[0], tf.constant([0], tf.int64)],
                    {"select_cols": [1, 3]}),
    "no_quote_delim": ('a"b,c', lambda tf: [[""], [""]], {"use_quote_delim": False}),
    "types": (["1,2,3.5,4.25,s", "-1,9000000000,nan,inf,"],
              lambda tf: [[0], tf.constant([0], tf.int64), [0.0], tf.constant([0.0], tf.float64), ["e"]], {}),
}


@pytest.mark.parametrize("name", DECODE_CASES)
def test_decode_csv_matches_tensorflow(name):
    records, defaults, kwargs = DECODE_CASES[name]
    got = ember.io.decode_csv(records, defaults(ember), **kwargs)
    want = tensorflow.io.decode_csv(records, defaults(tensorflow), **kwargs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype.name == w.dtype.name and g.shape == w.shape
        np.testing.assert_array_equal(g.numpy(), w.numpy())


BAD_RECORDS = [("1,2", [[0]], {}), ("x", [[0]], {}), ("", [[5]], {}), ('"a', [[""]], {}), ('a"b', [[""]], {}),
               ('"a"b', [[""]], {}), ("3000000000", [[0]], {}), ("1_0", [[0]], {})]


@pytest.mark.parametrize("record,defaults,kwargs", BAD_RECORDS)
def test_decode_csv_bad_records_are_invalid_argument_as_in_tensorflow(record, defaults, kwargs):
    with pytest.raises(tensorflow.errors.InvalidArgumentError):
        tensorflow.io.decode_csv(record, defaults, **kwargs)
    with pytest.raises(ember.errors.InvalidArgumentError, match="decode_csv"):
        ember.io.decode_csv(record, defaults, **kwargs)


def test_decode_csv_required_column_and_bad_arguments():
    with pytest.raises(ember.errors.InvalidArgumentError, match="Field 1 is required but missing in record 1"):
        ember.io.decode_csv(["1,2", "3,"], [[0], ember.constant([], ember.int32)])
    with pytest.raises(ValueError, match="select_cols and record_defaults"):
        ember.io.decode_csv("1,2", [[0], [0]], select_cols=[1])
    with pytest.raises(TypeError, match="bool"):
        ember.io.decode_csv("1", [[True]])
    with pytest.raises(ValueError, match="one character"):
        ember.io.decode_csv("1", [[0]], field_delim="::")


def test_decode_csv_in_a_dataset_map_matches_tensorflow(csv_path):
    def make(tf):
        return tf.data.TextLineDataset(csv_path).skip(1).take(3).map(
            lambda line: tuple(tf.io.decode_csv(line, [[0], [0.0], [-1], ["?"]])))
    _same(make)


# ---- CsvDataset and make_csv_dataset

def test_csv_dataset_matches_tensorflow(csv_path):
    _same(lambda tf: tf.data.experimental.CsvDataset(csv_path, [tf.int32, [0.0], [9], ""], header=True))


def test_csv_dataset_select_and_exclude_cols_match_tensorflow(csv_path):
    _same(lambda tf: tf.data.experimental.CsvDataset(csv_path, [[0.0], ""], header=True, select_cols=[1, 3]))
    _same(lambda tf: tf.data.experimental.CsvDataset(csv_path, [[0], [0]], header=True, exclude_cols=[1, 3]))


def test_csv_dataset_gzip_matches_tensorflow(tmp_path):
    import gzip
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(CSV.encode()))
    _same(lambda tf: tf.data.experimental.CsvDataset(str(path), [[0], [0.0], [0], [""]], header=True,
                                                     compression_type="GZIP"))


def test_csv_dataset_missing_required_field_fails_when_reached(csv_path):
    ds = ember.data.experimental.CsvDataset(csv_path, [ember.int32, ember.float32, ember.int32, ember.string],
                                            header=True)
    with pytest.raises(ember.errors.InvalidArgumentError, match="Field 1 is required"):
        list(ds)


@pytest.mark.parametrize("kwargs", [
    {"label_name": "c"},
    {"select_columns": ["name", "a"]},
    {"select_columns": [0, 2], "label_name": "a"},
    {"column_defaults": [ember.int64, [0.0], [0], ["n/a"]]},
    {"num_epochs": 2, "batch_size": 3},
    {"na_value": "8.25"},
])
def test_make_csv_dataset_matches_tensorflow(csv_path, kwargs):
    def make(tf):
        args = dict(kwargs)
        if "column_defaults" in args:
            args["column_defaults"] = [tf.int64, [0.0], [0], ["n/a"]]
        args.setdefault("batch_size", 2)
        args.setdefault("num_epochs", 1)
        return tf.data.experimental.make_csv_dataset(csv_path, shuffle=False, **args)
    _same(make)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # TensorFlow's own inference
def test_make_csv_dataset_infers_wider_types_as_tensorflow(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("i,big,f,d,s,empty,nan,ninf\n1,1,1,1,1,,1,1\n2,9000000000,0.5,1e300,x,,nan,-inf\n")
    _same(lambda tf: tf.data.experimental.make_csv_dataset(str(path), 2, shuffle=False, num_epochs=1))


def test_make_csv_dataset_repeats_and_shuffles(csv_path):
    ds = ember.data.experimental.make_csv_dataset(csv_path, 4, shuffle=True, shuffle_seed=3)
    assert ds.element_spec["a"].shape.as_list() == [4]  # num_epochs=None drops the remainder
    values = [v for features in ds.take(5) for v in features["a"].numpy().tolist()]
    assert len(values) == 20 and set(values) == {1, 4, 7, 10}


def test_make_csv_dataset_bad_arguments(csv_path):
    with pytest.raises(ValueError, match="label_name"):
        ember.data.experimental.make_csv_dataset(csv_path, 2, label_name="zz")
    with pytest.raises(ValueError, match="No files match"):
        ember.data.experimental.make_csv_dataset(csv_path + ".none", 2)
    with pytest.raises(ValueError, match="Neither is provided"):
        ember.data.experimental.make_csv_dataset(csv_path, 2, header=False)


def test_make_csv_dataset_and_csv_dataset_ignore_errors_skip_bad_rows_as_tensorflow(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\nx,3\n4,5\n6\n7,8\n")
    _same(lambda tf: tf.data.experimental.make_csv_dataset(str(path), 5, column_defaults=[[0], [0]],
                                                           shuffle=False, num_epochs=1, ignore_errors=True))
    _same(lambda tf: tf.data.experimental.CsvDataset(str(path), [[0], [0]], header=True).ignore_errors())

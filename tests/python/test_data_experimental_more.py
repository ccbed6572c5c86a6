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
    with pytest.raises(ember.errors.InvalidArgumentError, match="DecodeCSV"):
        ember.io.decode_csv(record, defaults, **kwargs)


def test_decode_csv_required_column_and_bad_arguments():
    with pytest.raises(ember.errors.InvalidArgumentError, match="Field 1 is required but missing in record 1"):
        ember.io.decode_csv(["1,2", "3,"], [[0], ember.constant([], ember.int32)])
    with pytest.raises(ValueError, match="select_cols and record_defaults"):
        ember.io.decode_csv("1,2", [[0], [0]], select_cols=[1])
    with pytest.raises(TypeError, match="bool"):
        ember.io.decode_csv("1", [[True]])
    # Defaults may be computed in the graph: the op reads them when it runs.
    got = ember.function(lambda d: ember.io.decode_csv(["1,2", ",2"], [d, [0]]))(ember.constant([3]))
    assert got[0].numpy().tolist() == [1, 3]
    with pytest.raises(tensorflow.errors.InvalidArgumentError, match="field_delim"):
        tensorflow.io.decode_csv("1", [[0]], field_delim="::")
    with pytest.raises(ember.errors.InvalidArgumentError, match="DecodeCSV: field_delim should be only 1 char"):
        ember.io.decode_csv("1", [[0]], field_delim="::")


def test_decode_csv_in_a_dataset_map_matches_tensorflow(csv_path):
    def make(tf):
        return tf.data.TextLineDataset(csv_path).skip(1).take(3).map(
            lambda line: tuple(tf.io.decode_csv(line, [[0], [0.0], [-1], ["?"]])))
    _same(make)


def test_decode_csv_in_a_function_matches_tensorflow():
    def make(tf):
        @tf.function
        def parse(lines):
            return tf.io.decode_csv(lines, [[0], ["?"]], select_cols=[0, 2])
        return parse

    records = ["1,b,c", "2,e,"]
    for g, w in zip(make(ember)(ember.constant(records)), make(tensorflow)(tensorflow.constant(records))):
        assert g.shape == w.shape and g.dtype.name == w.dtype.name
        np.testing.assert_array_equal(g.numpy(), w.numpy())


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


def test_make_csv_dataset_interleaves_files_as_tensorflow(tmp_path):
    names = []
    for i, rows in enumerate([3, 1, 4]):
        path = tmp_path / f"part{i}.csv"
        path.write_text("k,v\n" + "".join(f"{i},{r}\n" for r in range(rows)))
        names.append(str(path))
    _same(lambda tf: tf.data.experimental.make_csv_dataset(str(tmp_path / "part*.csv"), 3, shuffle=False,
                                                           num_epochs=1, num_parallel_reads=2))
    _same(lambda tf: tf.data.experimental.make_csv_dataset(names[::-1], 3, shuffle=False, num_epochs=1))
    ds = ember.data.experimental.make_csv_dataset(names, 8, shuffle=False, num_epochs=1,
                                                  num_parallel_reads=ember.data.AUTOTUNE)
    assert sorted(next(iter(ds))["v"].numpy().tolist()) == [0, 0, 0, 1, 1, 2, 2, 3]


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


# ---- the transformations of experimental_ops.py and the small tf.data names


SAME_CASES = {
    "from_list": lambda tf: tf.data.experimental.from_list([(1, "a"), (2, "b")]),
    "from_list_dict": lambda tf: tf.data.experimental.from_list([{"a": [1.5, 2.0]}, {"a": [3.0, 4.0]}]),
    "assert_cardinality": lambda tf: tf.data.Dataset.range(5).filter(lambda x: x < 3).apply(
        tf.data.experimental.assert_cardinality(3)),
    "ignore_errors_map": lambda tf: tf.data.Dataset.from_tensor_slices(["1", "x", "2.5", "", "4"]).map(
        tf.strings.to_number).ignore_errors(),
    "ignore_errors_parallel_map": lambda tf: tf.data.Dataset.from_tensor_slices(["1", "x"] * 20).map(
        tf.strings.to_number, num_parallel_calls=4).batch(3).ignore_errors(),
    "ignore_errors_apply": lambda tf: tf.data.Dataset.from_tensor_slices(["y", "3"]).map(
        tf.strings.to_number).apply(tf.data.experimental.ignore_errors()),
    "enumerate_dataset": lambda tf: tf.data.Dataset.range(3).apply(tf.data.experimental.enumerate_dataset(5)),
    "unbatch": lambda tf: tf.data.Dataset.range(7).batch(3).apply(tf.data.experimental.unbatch()),
    "group_by_reducer": lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.group_by_reducer(
        lambda x: x % 3, tf.data.experimental.Reducer(
            lambda key: (key * 100, tf.constant(0, tf.int64)),
            lambda state, x: (state[0] + x, state[1] + 1),
            lambda total, count: {"total": total, "count": count}))),
    "group_by_reducer_key_order": lambda tf: tf.data.Dataset.from_tensor_slices(
        tf.constant([7, 2, 9, 2, 5, 4, 11], tf.int64)).apply(tf.data.experimental.group_by_reducer(
            lambda x: 50 - x * 13 % 97, tf.data.experimental.Reducer(lambda k: k * 100, lambda s, x: s + x,
                                                                     lambda s: s))),
}


@pytest.mark.parametrize("name", SAME_CASES)
def test_experimental_transformation_matches_tensorflow(name):
    _same(SAME_CASES[name])


def test_from_list_and_assert_cardinality_cardinalities_match_tensorflow():
    for tf in (ember, tensorflow):
        assert int(tf.data.experimental.from_list([1, 2, 3]).cardinality()) == 3
        ds = tf.data.Dataset.range(5).filter(lambda x: x < 3)
        assert int(ds.apply(tf.data.experimental.assert_cardinality(3)).cardinality()) == 3


def test_from_list_refuses_empty_and_mixed_structures():
    with pytest.raises(ValueError, match="should not be empty"):
        ember.data.experimental.from_list([])
    with pytest.raises(ValueError, match="structure"):
        ember.data.experimental.from_list([1, (2, 3)])
    with pytest.raises(ValueError, match="rank"):
        ember.data.experimental.from_list([[1, 2], [[3]]])


@pytest.mark.parametrize("actual,expected,message", [(3, 5, "contained only 3"), (6, 5, "at least 6")])
def test_assert_cardinality_fails_as_tensorflow(actual, expected, message):
    for tf in (ember, tensorflow):
        ds = tf.data.Dataset.range(actual).filter(lambda x: True).apply(
            tf.data.experimental.assert_cardinality(expected))
        with pytest.raises(tf.errors.FailedPreconditionError, match=message):
            list(ds)


def test_get_structure_of_datasets_and_iterators_matches_tensorflow():
    for tf in (ember, tensorflow):
        ds = tf.data.Dataset.from_tensor_slices(({"a": [1, 2]}, [0.5, 1.5]))
        assert repr(tf.data.experimental.get_structure(ds)) == repr(ds.element_spec)
        assert repr(tf.data.experimental.get_structure(iter(ds))) == repr(ds.element_spec)
        with pytest.raises(TypeError, match="dataset_or_iterator"):
            tf.data.experimental.get_structure([1])


def test_at_matches_tensorflow():
    for tf in (ember, tensorflow):
        assert int(tf.data.experimental.at(tf.data.Dataset.range(10), 3)) == 3
        with pytest.raises(tf.errors.OutOfRangeError, match="Index out of range"):
            tf.data.experimental.at(tf.data.Dataset.range(10), 13)
    got = ember.data.experimental.at(ember.data.Dataset.from_tensor_slices(([1, 2], ["a", "b"])), 1)
    assert int(got[0]) == 2 and got[1].numpy() == b"b"


def test_rejection_resample_reaches_the_target_distribution():
    labels = np.array([0] * 800 + [1] * 150 + [2] * 50, dtype=np.int64)
    np.random.default_rng(0).shuffle(labels)
    target = [0.2, 0.3, 0.5]
    for tf, initial in ((ember, None), (ember, [0.8, 0.15, 0.05]), (tensorflow, None)):
        ds = tf.data.Dataset.from_tensor_slices(labels).repeat(20).rejection_resample(
            lambda x: x, target, initial_dist=initial, seed=1)
        assert repr(ds.element_spec) == repr((tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64)))
        classes = np.array([c for c, x in ds.as_numpy_iterator()])
        assert len(classes) > 1000
        np.testing.assert_allclose(np.bincount(classes, minlength=3) / len(classes), target, atol=0.03)
    with pytest.raises(ember.errors.InvalidArgumentError, match="target_dist"):
        ember.data.Dataset.range(3).rejection_resample(lambda x: x, [-1.0, 2.0])


def test_numpy_iterator_iterator_spec_and_threading_options_are_tensorflow_names():
    for tf in (ember, tensorflow):
        it = tf.data.Dataset.from_tensor_slices(([1, 2], ["a", "b"])).as_numpy_iterator()
        assert isinstance(it, tf.data.NumpyIterator) and iter(it) is it
        first = next(it)
        assert first[0] == 1 and first[1] == b"a" and isinstance(first[0], np.generic)
        assert repr(it).startswith("NumpyIterator(iterator=")
        spec = tf.data.IteratorSpec(tf.TensorSpec([], tf.int32))
        assert spec == tf.data.IteratorSpec(tf.TensorSpec([], tf.int32))
        assert spec != tf.data.IteratorSpec(tf.TensorSpec([], tf.int64))
        options = tf.data.Options()
        assert isinstance(options.threading, tf.data.ThreadingOptions)
        options.threading.private_threadpool_size = 4
        assert options.threading.private_threadpool_size == 4
        assert tf.data.ThreadingOptions().max_intra_op_parallelism is None


def test_from_list_of_rows_of_different_lengths_matches_tensorflow():
    for fw in (ember, tensorflow):
        ds = fw.data.experimental.from_list([([1, 2], "a"), ([3], "bc")])
        assert ds.element_spec[0].shape.as_list() == [None]
        got = [(x.numpy().tolist(), s.numpy()) for x, s in ds]
        assert got == [([1, 2], b"a"), ([3], b"bc")]

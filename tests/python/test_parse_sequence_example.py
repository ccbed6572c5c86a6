"""tf.io.parse_sequence_example / parse_single_sequence_example (the ParseSequenceExampleV2 op,
src/ember/ops/parse_example.cc) and RaggedFeature partitions (python/ember/io/parsing.py) against
TensorFlow 2.21: context and feature-list features of each kind, the feature-list lengths, partitions,
errors, inside tf.data map functions, and the op in graphs and SavedModels moving between TensorFlow and
ember."""
import collections

import numpy as np
import pytest
import tensorflow

import ember
from test_parse_example import (_PARTITIONED, _assert_same, _partition_specs, _plain,
                                assert_ember_runs_tensorflows_graph, assert_serving_function_runs_in_ember,
                                assert_tensorflow_runs_embers_graph)


def _feature(tf, values):
    """A Feature of `values`' type; an empty list is an Int64List, an empty tuple an empty FloatList."""
    if values == () or (values and isinstance(values[0], float)):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    if values and isinstance(values[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _sequence_example(tf, context=None, lists=None):
    """A serialized SequenceExample: `context` maps keys to values, `lists` keys to a list of steps' values."""
    example = tf.train.SequenceExample(
        context=tf.train.Features(feature={k: _feature(tf, v) for k, v in (context or {}).items()}),
        feature_lists=tf.train.FeatureLists(feature_list={
            k: tf.train.FeatureList(feature=[_feature(tf, step) for step in steps])
            for k, steps in (lists or {}).items()}))
    return example.SerializeToString()


def _records(tf):
    return [_sequence_example(tf, {"n": [3], "tags": [b"a", b"b"], "c": [0.5, 1.5]},
                              {"x": [[1.0, 2.0], [3.0, 4.0]], "w": [[b"p"], [b"q"], [b"r"]], "s": [[1], [], [2, 3]],
                               "r": [[1.5, 2.5], [3.5]], "ids": [[7], [8, 9]]}),
            _sequence_example(tf, {"n": [4]}, {"x": [], "s": [[5]]}),
            _sequence_example(tf, {"n": [5], "c": [2.0]}, {"x": [[5.0, 6.0]], "r": [(), [4.5]], "ids": [[1]]})]


def _context_specs(tf):
    return {"n": tf.io.FixedLenFeature([], tf.int64),
            "d": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.25, 0.75]),
            "tags": tf.io.VarLenFeature(tf.string),
            "c": tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int64)}


def _sequence_specs(tf):
    return {"x": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
            "w": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True),
            "s": tf.io.VarLenFeature(tf.int64),
            "r": tf.io.RaggedFeature(tf.float32),
            "i": tf.io.RaggedFeature(tf.int64, value_key="ids", row_splits_dtype=tf.int64)}


def _parsed(results):
    return [{k: _plain(v) for k, v in d.items()} for d in results]


def _flat(results):
    """The parsed tensors of each dict in key order, a SparseTensor or RaggedTensor as its component tensors."""
    out = []
    for parsed in results:
        for key in sorted(parsed):
            value = parsed[key]
            if hasattr(value, "dense_shape"):
                out += [value.indices, value.values, value.dense_shape]
            elif hasattr(value, "nested_row_splits"):
                out += [value.flat_values, *value.nested_row_splits]
            else:
                out.append(value)
    return out


def _parse(tf, records, context=True, sequence=True):
    return tf.io.parse_sequence_example(records, _context_specs(tf) if context else None,
                                        _sequence_specs(tf) if sequence else None)


@pytest.mark.parametrize("batch", [slice(None), slice(1, 2)], ids=["all", "one"])
def test_parse_sequence_example_matches_tensorflow(batch):
    def parse(tf):
        return _parsed(_parse(tf, tf.constant(_records(tf)[batch], tf.string)))

    assert parse(ember) == parse(tensorflow)


def test_an_empty_batch_matches_tensorflow():
    # (with a default for "n": TensorFlow's kernel fails an empty batch for a required context feature)
    def parse(tf):
        context = dict(_context_specs(tf), n=tf.io.FixedLenFeature([], tf.int64, default_value=0))
        return _parsed(tf.io.parse_sequence_example(tf.constant([], tf.string), context, _sequence_specs(tf)))

    assert parse(ember) == parse(tensorflow)


@pytest.mark.parametrize("context,sequence", [(True, False), (False, True)])
def test_context_or_feature_lists_alone_match_tensorflow(context, sequence):
    assert _parsed(_parse(ember, _records(ember), context, sequence)) == _parsed(
        _parse(tensorflow, _records(tensorflow), context, sequence))


@pytest.mark.parametrize("index", range(3))
def test_parse_single_sequence_example_matches_tensorflow(index):
    def parse(tf):
        return _parsed(tf.io.parse_single_sequence_example(_records(tf)[index], _context_specs(tf),
                                                           _sequence_specs(tf)))

    assert parse(ember) == parse(tensorflow)


def test_traced_with_an_unknown_rank_matches_tensorflow():
    def parse(tf):
        fn = tf.function(lambda s: tf.io.parse_single_sequence_example(s, _context_specs(tf), _sequence_specs(tf)),
                         input_signature=[tf.TensorSpec(None, tf.string)])
        return _parsed(fn(tf.constant(_records(tf)[0])))

    assert parse(ember) == parse(tensorflow)


def test_in_dataset_map_functions_as_tensorflow():
    def pipeline(tf):
        ds = tf.data.Dataset.from_tensor_slices(_records(tf)).batch(2)
        ds = ds.map(lambda r: tuple(_flat(_parse(tf, r))))
        single = tf.data.Dataset.from_tensor_slices(_records(tf)).map(
            lambda r: tuple(_flat(tf.io.parse_single_sequence_example(r, _context_specs(tf), _sequence_specs(tf)))))
        return [[np.asarray(a).tolist() for a in element] for d in (ds, single) for element in d.as_numpy_iterator()]

    assert pipeline(ember) == pipeline(tensorflow)


@pytest.mark.parametrize("case", ["garbage", "list type", "context type", "required list", "required context",
                                  "step size"])
def test_errors_name_the_op_and_feature_as_tensorflow_raises(case):
    def call(tf):
        records = _records(tf)
        x = {"x": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}
        if case == "garbage":
            return tf.io.parse_sequence_example([records[0], b"garbage!"], sequence_features=x)
        if case == "list type":
            return tf.io.parse_sequence_example(records, sequence_features={"s": tf.io.VarLenFeature(tf.float32)})
        if case == "context type":
            return tf.io.parse_sequence_example(records, {"n": tf.io.FixedLenFeature([], tf.string)})
        if case == "required list":
            return tf.io.parse_sequence_example(records, sequence_features={
                "w": tf.io.FixedLenSequenceFeature([], tf.string)})
        if case == "required context":
            return tf.io.parse_sequence_example(records, {"c": tf.io.FixedLenFeature([2], tf.float32)})
        return tf.io.parse_sequence_example(records, sequence_features={
            "x": tf.io.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)})

    messages = {
        "garbage": "ParseSequenceExampleV2: record 1 is not a serialized tf.train.SequenceExample",
        "list type": "ParseSequenceExampleV2: feature list 's' of record 0, step 0, holds int64 values, but the "
                     "feature list is declared float",
        "context type": "ParseSequenceExampleV2: context feature 'n' of record 0 holds int64 values, but the "
                        "feature is declared string",
        "required list": "ParseSequenceExampleV2: feature list 'w' is required but could not be found in record 1",
        "required context": "ParseSequenceExampleV2: feature 'c' .* is required but could not be found in record 1",
        "step size": "ParseSequenceExampleV2: feature list 'x' of record 0, step 0, has 2 value\\(s\\), but its "
                     "shape \\[3\\] holds 3"}
    with pytest.raises(ember.errors.InvalidArgumentError, match=messages[case]):
        call(ember)
    with pytest.raises(tensorflow.errors.InvalidArgumentError):
        call(tensorflow)


def test_fuzzed_records_parse_or_raise_never_crash():
    """A record with a byte changed, maybe cut short, parses or raises an InvalidArgumentError. (Not compared
    with TensorFlow: its kernel crashed the process on one of these records; and the two judge damaged records
    differently, docs/data.md.)"""
    rng = np.random.default_rng(0)
    base = _records(ember)[0]
    outcomes = collections.Counter()
    for _ in range(300):
        data = bytearray(base)
        data[int(rng.integers(len(data)))] = int(rng.integers(256))
        data = bytes(data[:int(rng.integers(1, len(data) + 1))] if rng.random() < 0.3 else data)
        try:
            ember.io.parse_single_sequence_example(data, _context_specs(ember), _sequence_specs(ember))
            outcomes["parsed"] += 1
        except ember.errors.InvalidArgumentError:
            outcomes["refused"] += 1
    assert outcomes["parsed"] > 20 and outcomes["refused"] > 20, outcomes


def test_debug_names_name_the_record():
    with pytest.raises(ember.errors.InvalidArgumentError, match="record 1 \\('second'\\) is not a serialized"):
        ember.io.parse_sequence_example([_records(ember)[0], b"garbage!"], {"n": ember.io.FixedLenFeature(
            [], ember.int64)}, example_names=["first", "second"])


def test_bad_specs_raise_as_tensorflow():
    records = _records(ember)
    cases = [({}, {}, ValueError, "both empty"),
             ({"n": ember.io.FixedLenSequenceFeature([], ember.int64, allow_missing=True)}, None, ValueError,
              "unsupported FixedLenSequenceFeature 'n' in context_features"),
             (None, {"x": ember.io.FixedLenFeature([2], ember.float32)}, ValueError,
              "unsupported FixedLenFeature 'x' in sequence_features"),
             (None, {"x": ember.io.FixedLenSequenceFeature([2], ember.float32, True, default_value=0.0)}, ValueError,
              "takes no default_value"),
             ({"n": 3}, None, TypeError, "expected a FixedLenFeature"),
             ({"n": ember.io.FixedLenFeature([None], ember.int64)}, None, ValueError, "fully defined shape")]
    for context, sequence, error, message in cases:
        with pytest.raises(error, match=message):
            ember.io.parse_sequence_example(records, context, sequence)
    with pytest.raises(ValueError, match="must be a scalar"):
        ember.io.parse_single_sequence_example(records, _context_specs(ember))


def _partitioned_records(tf, steps):
    """SequenceExamples whose feature lists hold the partitioned records, `steps` per record."""
    return [_sequence_example(tf, lists={k: [_PARTITIONED[(r + s) % 3][k] for s in range(steps)]
                                         for k in _PARTITIONED[0]}) for r in range(3)]


@pytest.mark.parametrize("steps", [1, 2])
def test_ragged_feature_list_partitions_match_tensorflow(steps):
    def parse(tf):
        records = _partitioned_records(tf, steps)
        batch = tf.io.parse_sequence_example(records, sequence_features=_partition_specs(tf))[1]
        single = [tf.io.parse_single_sequence_example(r, sequence_features=_partition_specs(tf))[1] for r in records]
        return _parsed([batch] + single)

    assert parse(ember) == parse(tensorflow)


def test_ragged_context_partitions_match_tensorflow():
    def parse(tf):
        records = [_sequence_example(tf, context=record) for record in _PARTITIONED]
        batch = tf.io.parse_sequence_example(records, context_features=_partition_specs(tf))[0]
        single = [tf.io.parse_single_sequence_example(r, context_features=_partition_specs(tf))[0] for r in records]
        return _parsed([batch] + single)

    assert parse(ember) == parse(tensorflow)


def _interchange_context(tf):
    return {"n": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "tags": tf.io.VarLenFeature(tf.string), "c": tf.io.RaggedFeature(tf.float32)}


def _interchange(tf, s):
    return _flat(tf.io.parse_sequence_example(s, _interchange_context(tf), _sequence_specs(tf)))


def test_ember_runs_tensorflows_parse_sequence_example_graph():
    assert_ember_runs_tensorflows_graph("ParseSequenceExampleV2", _interchange, _records(tensorflow))


def test_tensorflow_runs_embers_parse_sequence_example_graph():
    assert_tensorflow_runs_embers_graph("ParseSequenceExampleV2", _interchange, _records(ember))


def test_ember_loads_and_runs_a_tensorflow_serving_function_that_parses_sequence_examples(tmp_path):
    class Parser(tensorflow.Module):
        @tensorflow.function(input_signature=[tensorflow.TensorSpec([None], tensorflow.string, name="examples")])
        def serve(self, examples):
            context, lists, lengths = tensorflow.io.parse_sequence_example(
                examples, {"n": tensorflow.io.FixedLenFeature([], tensorflow.int64)},
                {"x": tensorflow.io.FixedLenSequenceFeature([2], tensorflow.float32, allow_missing=True),
                 "r": tensorflow.io.RaggedFeature(tensorflow.float32)})
            return {"n": context["n"] + 1, "x": lists["x"] * 2.0, "x_lengths": lengths["x"],
                    "r": lists["r"].flat_values, "r_inner": lists["r"].values.row_splits,
                    "r_outer": lists["r"].row_splits}

    assert_serving_function_runs_in_ember(Parser(), _records(tensorflow), tmp_path)


def test_attributes_of_the_raw_op_are_checked():
    op = ember._C.op("ParseSequenceExampleV2")
    none = ember.constant([], ember.string)
    key = ember.constant(["x"])
    records = ember.constant(_records(ember))
    args = [records, none, none, none, none, none, key, none, ember.constant([True]), []]
    values, lengths = op(*args, 0, [], [], [], [], [], 0, 1, [ember.float32], [], [], [], [[2]])
    assert lengths.numpy().tolist() == [2, 0, 1]
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match="feature_list_dense_types \\(1\\) must be as long as Nfeature_list_dense \\(2\\)"):
        op(*args, 0, [], [], [], [], [], 0, 2, [ember.float32], [], [], [], [[2]])
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match="feature_list_dense_missing_assumed_empty must be a vector of 1 bool"):
        op(*args[:8], ember.constant([True, False]), [], 0, [], [], [], [], [], 0, 1, [ember.float32], [], [], [],
           [[2]])

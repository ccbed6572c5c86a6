"""tf.io.parse_example / parse_single_example (the ParseExampleV2 op, src/ember/ops/parse_example.cc) and
the tf.train.Example message classes against TensorFlow 2.21: values, SparseTensor and RaggedTensor results
(with partitions), defaults, sequence features, errors, inside tf.data pipelines and ember.function, and
ParseExampleV2 in graphs and SavedModels moving between TensorFlow and ember."""
import numpy as np
import pytest
import tensorflow

import ember


def _example(tf, **features):
    made = {}
    for key, values in features.items():
        if values is None:
            made[key] = tf.train.Feature()
        elif not values:  # an empty list of the type the key holds elsewhere
            made[key] = tf.train.Feature(bytes_list=tf.train.BytesList()) if key in ("s", "tags") else \
                tf.train.Feature(int64_list=tf.train.Int64List())
        elif isinstance(values[0], float):
            made[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif isinstance(values[0], int):
            made[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            made[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=made)).SerializeToString()


def _records(tf):
    return [_example(tf, x=[1.0, 2.0], n=[3], s=[b"ab"], v=[1, 2, 3], r=[0.25, 0.75]),
            _example(tf, x=[4.0, 5.0], s=[b"c", b"d"], v=[7]),
            _example(tf, x=[6.0, 7.0], n=[9], e=None, s=[], r=[1.5]),
            _example(tf, x=[8.0, 9.0], v=[], w=[0.5])]


def _specs(tf):
    return {"x": tf.io.FixedLenFeature([2], tf.float32),
            "x21": tf.io.FixedLenFeature([2, 1], tf.float32, default_value=[[0.0], [0.0]]),
            "n": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "e": tf.io.FixedLenFeature([3], tf.float32, default_value=[0.5, 0.25, 0.0]),
            "s": tf.io.VarLenFeature(tf.string),
            "sd": tf.io.FixedLenFeature([], tf.string, default_value="none"),
            "v": tf.io.RaggedFeature(tf.int64),
            "r64": tf.io.RaggedFeature(tf.float32, value_key="r", row_splits_dtype=tf.int64),
            "w": tf.io.VarLenFeature(tf.float32)}


def _plain(value):
    if hasattr(value, "dense_shape"):
        return {"indices": value.indices.numpy().tolist(), "values": value.values.numpy().tolist(),
                "dense_shape": value.dense_shape.numpy().tolist()}
    if hasattr(value, "row_splits"):
        return {"values": value.flat_values.numpy().tolist(), "dtype": value.dtype.name,
                "row_splits": [s.numpy().tolist() for s in value.nested_row_splits],
                "splits_dtype": value.row_splits.dtype.name}
    return {"value": np.asarray(value.numpy()).tolist(), "dtype": value.dtype.name, "shape": list(value.shape)}


def _parsed(tf, serialized, specs, single=False):
    parse = tf.io.parse_single_example if single else tf.io.parse_example
    return {k: _plain(v) for k, v in parse(serialized, specs).items()}


def test_parse_example_matches_tensorflow():
    assert _parsed(ember, _records(ember), _specs(ember)) == _parsed(tensorflow, _records(tensorflow),
                                                                     _specs(tensorflow))


@pytest.mark.parametrize("index", range(4))
def test_parse_single_example_matches_tensorflow(index):
    def specs(tf):
        return {k: v for k, v in _specs(tf).items() if k not in ("x21",)}

    assert _parsed(ember, _records(ember)[index], specs(ember), single=True) == \
        _parsed(tensorflow, _records(tensorflow)[index], specs(tensorflow), single=True)


def test_example_bytes_are_tensorflows():
    ours, theirs = _records(ember), _records(tensorflow)
    for a, b in zip(ours, theirs):
        assert tensorflow.train.Example.FromString(a) == tensorflow.train.Example.FromString(b)
        assert ember.train.Example.FromString(b) == ember.train.Example.FromString(a)


def test_a_tfrecord_pipeline_as_tensorflow(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    with tensorflow.io.TFRecordWriter(path) as writer:
        for i in range(7):
            writer.write(_example(tensorflow, image=[float(i)] * 4, label=[i % 3], tags=[b"t"] * (i % 3)))

    def pipeline(tf):
        spec = {"image": tf.io.FixedLenFeature([2, 2], tf.float32), "label": tf.io.FixedLenFeature([], tf.int64),
                "tags": tf.io.RaggedFeature(tf.string)}
        ds = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec))
        ds = ds.map(lambda d: (d["image"] * 2.0, d["label"], tf.size(d["tags"]))).batch(3)
        batched = tf.data.TFRecordDataset(path).batch(4).map(lambda r: tf.io.parse_example(r, spec)["label"])
        return ([[a.tolist() for a in element] for element in ds.as_numpy_iterator()],
                [a.tolist() for a in batched.as_numpy_iterator()])

    assert pipeline(ember) == pipeline(tensorflow)


def test_traced_with_an_unknown_batch():
    spec = {"x": ember.io.FixedLenFeature([2], ember.float32), "v": ember.io.VarLenFeature(ember.int64)}
    fn = ember.function(lambda s: ember.sparse.to_dense(ember.io.parse_example(s, spec)["v"]) * 10,
                        input_signature=[ember.TensorSpec([None], ember.string)])
    got = fn(ember.constant(_records(ember)))
    assert got.numpy().tolist() == [[10, 20, 30], [70, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_parse_single_example_traced_with_an_unknown_rank_matches_tensorflow():
    def parse(tf):
        fn = tf.function(lambda s: tf.io.parse_single_example(s, _specs(tf)),
                         input_signature=[tf.TensorSpec(None, tf.string)])
        return {k: _plain(v) for k, v in fn(tf.constant(_records(tf)[0])).items()}

    assert parse(ember) == parse(tensorflow)


@pytest.mark.parametrize("case", ["required", "type", "count", "garbage"])
def test_errors_as_tensorflow(case):
    def call(tf):
        records = _records(tf)
        if case == "required":
            return tf.io.parse_example(records, {"n": tf.io.FixedLenFeature([], tf.int64)})
        if case == "type":
            return tf.io.parse_example(records, {"x": tf.io.FixedLenFeature([2], tf.int64)})
        if case == "count":
            return tf.io.parse_example(records, {"x": tf.io.FixedLenFeature([3], tf.float32)})
        # (ASCII: TensorFlow's own error message fails to decode a non-UTF-8 record it quotes)
        return tf.io.parse_example([b"garbage!"], {"x": tf.io.FixedLenFeature([2], tf.float32)})

    messages = {"required": "'n' .* is required but could not be found in record 1",
                "type": "feature 'x' of record 0 holds float values, but the feature is declared int64",
                "count": "feature 'x' of record 0 has 2 value\\(s\\), but its shape \\[3\\] holds 3",
                "garbage": "record 0 is not a serialized tf.train.Example"}
    with pytest.raises(ember.errors.InvalidArgumentError, match=messages[case]):
        call(ember)
    with pytest.raises(tensorflow.errors.InvalidArgumentError):
        call(tensorflow)


def test_bad_specs_raise_clear_errors():
    records = _records(ember)
    with pytest.raises(ValueError, match="needs a fully defined shape"):
        ember.io.parse_example(records, {"x": ember.io.FixedLenFeature([None], ember.float32)})
    with pytest.raises(ValueError, match="an Example holds float32, int64 or string"):
        ember.io.parse_example(records, {"x": ember.io.FixedLenFeature([2], ember.int32)})
    with pytest.raises(ValueError, match="the default of FixedLenFeature 'x' has 3 value"):
        ember.io.parse_example(records, {"x": ember.io.FixedLenFeature([2], ember.float32, [1.0, 2.0, 3.0])})
    with pytest.raises(TypeError, match="expected a FixedLenFeature"):
        ember.io.parse_example(records, {"x": "float"})
    with pytest.raises(ValueError, match="must be a scalar"):
        ember.io.parse_single_example(records, {"x": ember.io.FixedLenFeature([2], ember.float32)})
    with pytest.raises(TypeError, match="each partition must be a RaggedFeature.RowSplits"):  # TF: a TypeError
        ember.io.RaggedFeature(ember.int64, partitions=[1])


def test_fuzzed_records_raise_or_parse_never_crash():
    rng = np.random.default_rng(0)
    base = _records(ember)[0]
    spec = {"x": ember.io.FixedLenFeature([2], ember.float32), "s": ember.io.VarLenFeature(ember.string),
            "v": ember.io.RaggedFeature(ember.int64)}
    parsed = errors = 0
    for _ in range(300):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        data = bytes(data[:int(rng.integers(1, len(data) + 1))])
        try:
            ember.io.parse_example([data], spec)
            parsed += 1
        except ember.errors.InvalidArgumentError:
            errors += 1
    assert parsed + errors == 300 and errors > 0


def _partition_specs(tf):
    f = tf.io.RaggedFeature
    return {"splits": f(tf.int64, "v", [f.RowSplits("rs")]),
            "lengths": f(tf.int64, "v", [f.RowLengths("rl")]),
            "starts": f(tf.int64, "v", [f.RowStarts("st")]),
            "limits": f(tf.int64, "v", [f.RowLimits("li")]),
            "rowids": f(tf.int64, "v", [f.ValueRowIds("ids")]),
            "uniform": f(tf.int64, "v", [f.UniformRowLength(3)]),
            "two": f(tf.int64, "v", [f.RowLengths("l2"), f.UniformRowLength(3)], validate=True),
            "nested": f(tf.int64, "v", [f.RowLengths("outer"), f.RowLengths("rl")])}


# Per record, one feature-list step (or one Example) of each partition's key: values v in rows.
_PARTITIONED = [
    {"v": [1, 2, 3, 4, 5, 6], "rs": [0, 2, 6], "rl": [2, 4], "st": [0, 2], "li": [2, 6], "ids": [0, 0, 1, 1, 1, 1],
     "l2": [2, 0], "outer": [1, 1]},
    {"v": [7, 8, 9], "rs": [0, 1, 1, 3], "rl": [1, 0, 2], "st": [0, 1, 1], "li": [1, 1, 3], "ids": [0, 2, 2],
     "l2": [1], "outer": [1, 2]},
    {"v": [], "rs": [0], "rl": [], "st": [], "li": [], "ids": [], "l2": [], "outer": []},
]


@pytest.mark.parametrize("single", [False, True])
def test_ragged_feature_partitions_match_tensorflow(single):
    def parse(tf):
        records = [_example(tf, **record) for record in _PARTITIONED]
        if single:
            return [_parsed(tf, r, _partition_specs(tf), single=True) for r in records]
        return _parsed(tf, records, _partition_specs(tf))

    assert parse(ember) == parse(tensorflow)


def test_partitions_in_a_traced_function_match_tensorflow():
    def parse(tf):
        fn = tf.function(lambda s: tf.io.parse_example(s, _partition_specs(tf)),
                         input_signature=[tf.TensorSpec([None], tf.string)])
        parsed = fn(tf.constant([_example(tf, **record) for record in _PARTITIONED]))
        return {k: v.to_list() for k, v in parsed.items()}

    assert parse(ember) == parse(tensorflow)


def _interchange_specs(tf):
    """One feature of each kind ParseExampleV2 parses (keys of one kind sorted apart from their outputs')."""
    return {"x": tf.io.FixedLenFeature([2], tf.float32),
            "n": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "sd": tf.io.FixedLenFeature([], tf.string, default_value="none"),
            "s": tf.io.VarLenFeature(tf.string),
            "v": tf.io.RaggedFeature(tf.int64),
            "r64": tf.io.RaggedFeature(tf.float32, value_key="r", row_splits_dtype=tf.int64),
            "w": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=-1.0)}


def _flat(parsed):
    """The parsed tensors in key order, a SparseTensor or RaggedTensor as its component tensors."""
    out = []
    for key in sorted(parsed):
        value = parsed[key]
        if hasattr(value, "dense_shape"):
            out += [value.indices, value.values, value.dense_shape]
        elif hasattr(value, "row_splits"):
            out += [value.values, value.row_splits]
        else:
            out.append(value)
    return out


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g.numpy()), np.asarray(w.numpy())
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tolist() == w.tolist()


def test_sequence_features_match_tensorflow():
    def specs(tf):
        return {"w": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
                "v2": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True, default_value=5)}

    def records(tf):
        return [_example(tf, w=[1.0, 2.0], v2=[1, 2, 3, 4]), _example(tf), _example(tf, w=[3.0], v2=[5, 6])]

    assert _parsed(ember, records(ember), specs(ember)) == _parsed(tensorflow, records(tensorflow),
                                                                   specs(tensorflow))
    with pytest.raises(ValueError, match="allow_missing=True"):
        ember.io.parse_example(records(ember), {"w": ember.io.FixedLenSequenceFeature([], ember.float32)})


def assert_ember_runs_tensorflows_graph(op, parse, records):
    """A TensorFlow graph of parse(tensorflow, s) (a list of tensors), which holds one `op` node, imported
    and run in ember on `records` and two of them, gives TensorFlow's results."""
    program = tensorflow.function(lambda s: parse(tensorflow, s),
                                  input_signature=[tensorflow.TensorSpec([None], tensorflow.string)])
    concrete = program.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert [n.op for n in gd.node].count(op) == 1
    graph = ember.graph_util.import_graph_def(gd)
    fn = ember.NewGraphFunction(graph, ["s:0"], [t.name for t in concrete.outputs])
    for batch in (records, records[1:3]):
        _assert_same(fn(ember.constant(batch)), program(tensorflow.constant(batch)))


def assert_tensorflow_runs_embers_graph(op, parse, records):
    """ember's GraphDef of parse(ember, s) inside a called function holds the `op` node TensorFlow writes
    (every attribute alike) and runs in TensorFlow on `records` as in ember; returns ember's node."""
    from test_graph_def_tf import run_in_tensorflow

    @ember.function
    def called(s):  # a called function: its outputs are named by output list in the FunctionDef
        return parse(ember, s)

    @ember.function(input_signature=[ember.TensorSpec([None], ember.string)])
    def program(s):
        return called(s)

    graph = program.get_concrete_function().graph
    gd = graph.as_graph_def()
    node = next(n for f in gd.library.function for n in f.node_def if n.op == op)
    theirs = next(n for n in tensorflow.function(lambda s: parse(tensorflow, s)).get_concrete_function(
        tensorflow.TensorSpec([None], tensorflow.string)).graph.as_graph_def().node if n.op == op)
    assert sorted(node.attr) == sorted(theirs.attr)
    for name in theirs.attr:
        assert node.attr[name].SerializeToString() == theirs.attr[name].SerializeToString(), name
    got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                            [t.name for t in graph.outputs], tensorflow.constant(records))
    _assert_same(got, program(ember.constant(records)))
    return node


def _parse_interchange(tf, s):
    return _flat(tf.io.parse_example(s, _interchange_specs(tf)))


def test_ember_runs_tensorflows_parse_example_graph():
    assert_ember_runs_tensorflows_graph("ParseExampleV2", _parse_interchange, _records(tensorflow))


def test_tensorflow_runs_embers_parse_example_graph():
    node = assert_tensorflow_runs_embers_graph("ParseExampleV2", _parse_interchange, _records(ember))
    assert list(node.attr["Tdense"].list.type) == [tensorflow.int64.as_datatype_enum,
                                                   tensorflow.string.as_datatype_enum,
                                                   tensorflow.float32.as_datatype_enum,
                                                   tensorflow.float32.as_datatype_enum]
    assert [list(d.size for d in s.dim) for s in node.attr["dense_shapes"].list.shape] == [[], [], [-1], [2]]


def test_parse_example_in_dataset_map_functions_as_tensorflow():
    def pipeline(tf):
        ds = tf.data.Dataset.from_tensor_slices(_records(tf)).batch(3)
        ds = ds.map(lambda r: tuple(_flat(tf.io.parse_example(r, _interchange_specs(tf)))))
        return [[np.asarray(a).tolist() for a in element] for element in ds.as_numpy_iterator()]

    assert pipeline(ember) == pipeline(tensorflow)


def test_ember_loads_and_runs_a_tensorflow_serving_function_that_parses_examples(tmp_path):
    class Parser(tensorflow.Module):
        @tensorflow.function(input_signature=[tensorflow.TensorSpec([None], tensorflow.string, name="examples")])
        def serve(self, examples):
            parsed = tensorflow.io.parse_example(examples, _interchange_specs(tensorflow))
            return {"x": parsed["x"] * 2.0, "n": parsed["n"], "w": parsed["w"], "sd": parsed["sd"],
                    "s": tensorflow.sparse.to_dense(parsed["s"]), "v_values": parsed["v"].values,
                    "v_splits": parsed["v"].row_splits, "r": parsed["r64"].values}

    assert_serving_function_runs_in_ember(Parser(), _records(tensorflow), tmp_path)


def assert_serving_function_runs_in_ember(model, records, tmp_path):
    """`model`'s serve function (of string records "examples"), saved as a SavedModel by TensorFlow, loaded
    and run in ember on `records`, gives TensorFlow's results."""
    path = str(tmp_path / "parser")
    tensorflow.saved_model.save(model, path, signatures={"serving_default": model.serve})
    loaded = ember.saved_model.load(path)
    got = loaded.signatures["serving_default"](examples=ember.constant(records))
    want = model.serve(tensorflow.constant(records))
    assert sorted(got) == sorted(want)
    _assert_same([got[k] for k in sorted(got)], [want[k] for k in sorted(want)])


def test_list_attributes_of_the_raw_op_are_checked():
    op = ember._C.op("ParseExampleV2")
    none = ember.constant(np.array([], dtype=object), ember.string)
    key = ember.constant(["x"])
    records = ember.constant(_records(ember))
    args = [records, none, none, key, none, [ember.constant([0.0, 0.0])]]
    got = op(*args, [ember.float32], 0, [], [], [], [[2]])
    assert got.numpy().tolist() == [[1.0, 2.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0]]
    with pytest.raises(TypeError, match="ParseExampleV2: attribute 'Tdense' must be a list of dtypes, element 0"):
        op(*args, ["float"], 0, [], [], [], [[2]])
    with pytest.raises(TypeError, match="attribute 'dense_shapes' must be a list of shapes"):
        op(*args, [ember.float32], 0, [], [], [], [["a"]])
    with pytest.raises(ember.errors.InvalidArgumentError, match="one entry per dense default"):
        op(*args, [ember.float32, ember.int64], 0, [], [], [], [[2]])
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match="attribute 'ragged_split_types' must hold int32 or int64"):
        op(records, none, none, none, key, [], [], 0, [], [ember.int64], [ember.float32], [])


def test_a_graph_with_bad_list_attributes_is_a_clear_error():
    program = tensorflow.function(lambda s: tensorflow.io.parse_example(s, _interchange_specs(tensorflow))["x"],
                                  input_signature=[tensorflow.TensorSpec([None], tensorflow.string)])
    gd = program.get_concrete_function().graph.as_graph_def()
    node = next(n for n in gd.node if n.op == "ParseExampleV2")
    node.attr["Tdense"].list.ClearField("type")
    node.attr["Tdense"].list.i.extend([1, 2])
    with pytest.raises(ember.errors.InvalidArgumentError, match="attribute 'Tdense': should be a list of dtypes"):
        ember.graph_util.import_graph_def(gd)
    node.attr["Tdense"].list.ClearField("i")
    node.attr["Tdense"].list.type.extend([tensorflow.int64.as_datatype_enum])  # one type for four defaults
    with pytest.raises(ember.errors.InvalidArgumentError, match="one entry per dense default"):
        ember.graph_util.import_graph_def(gd)

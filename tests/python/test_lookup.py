"""tf.lookup (python/ember/lookup/, the table ops of src/ember/ops/lookup.cc) against TensorFlow 2.21: static
and vocabulary tables from tensors and text files, mutable tables, errors, use inside ember.function, and
checkpoints of a MutableHashTable in TensorFlow's format."""
import numpy as np
import pytest
import tensorflow

import ember


def _both(build):
    """build(tf) run with ember and with TensorFlow."""
    return build(ember), build(tensorflow)


def _sorted_export(table):
    keys, values = table.export()
    return sorted(zip(keys.numpy().tolist(), values.numpy().tolist()))


_KEYS = [("string", [b"a", b"b", b"c"], [[b"a", b"x"], [b"c", b"b"]]),
         ("int64", [10, 20, 30], [[10, 7], [30, 20]]),
         ("int32", [10, 20, 30], [[10, 7], [30, 20]])]
_VALUES = [("int64", [1, 2, 3], -1), ("float32", [0.5, 1.5, 2.5], -1.0), ("float64", [0.5, 1.5, 2.5], 9.0),
           ("string", [b"p", b"q", b"r"], b"?"), ("int32", [1, 2, 3], 0)]


# TensorFlow has no HashTable kernel for int32 -> int64 (ember has; tested below without TensorFlow).
@pytest.mark.parametrize("key_dtype,keys,queries,value_dtype,values,default",
                         [k + v for k in _KEYS for v in _VALUES if (k[0], v[0]) != ("int32", "int64")])
def test_static_hash_table_matches_tensorflow(key_dtype, keys, queries, value_dtype, values, default):
    def build(tf):
        init = tf.lookup.KeyValueTensorInitializer(tf.constant(keys, dtype=key_dtype),
                                                   tf.constant(values, dtype=value_dtype))
        table = tf.lookup.StaticHashTable(init, tf.constant(default, dtype=value_dtype))
        found = table.lookup(tf.constant(queries, dtype=key_dtype))
        return found.numpy(), found.dtype.name, int(table.size()), _sorted_export(table)

    ours, theirs = _both(build)
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]


def test_key_value_pairs_tensorflow_lacks():
    table = ember.lookup.StaticHashTable(
        ember.lookup.KeyValueTensorInitializer(ember.constant([1, 2]), ember.constant([5, 6], ember.int64)), 0)
    assert table.lookup(ember.constant([2, 3])).numpy().tolist() == [6, 0]
    flags = ember.lookup.StaticHashTable(
        ember.lookup.KeyValueTensorInitializer(["on", "off"], [True, False]), False)
    assert flags.lookup(ember.constant(["on", "off", "?"])).numpy().tolist() == [True, False, False]


def test_scalar_and_ragged_keys():
    def build(tf):
        init = tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64))
        table = tf.lookup.StaticHashTable(init, -1)
        ragged = table.lookup(tf.ragged.constant([["a", "z"], [], ["b"]]))
        return int(table.lookup(tf.constant("b"))), ragged.to_list(), int(table[tf.constant("a")])

    ours, theirs = _both(build)
    assert ours == theirs


def test_wrong_key_dtype_is_tensorflows_type_error():
    init = ember.lookup.KeyValueTensorInitializer(["a"], ember.constant([1], ember.int64))
    table = ember.lookup.StaticHashTable(init, -1)
    with pytest.raises(TypeError, match="Dtype of argument `keys` must be"):
        table.lookup(ember.constant([1, 2]))


def test_raw_op_wrong_key_dtype_names_table_and_dtypes():
    init = ember.lookup.KeyValueTensorInitializer(["a"], ember.constant([1], ember.int64))
    table = ember.lookup.StaticHashTable(init, -1, name="vocab")
    find = ember._C.op("LookupTableFindV2")
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match="'vocab' maps string -> int64, got keys of dtype int32"):
        find(ember.constant([1]), ember.constant(-1, ember.int64), table._id)
    with pytest.raises(tensorflow.errors.InvalidArgumentError, match="Signature mismatch"):
        t = tensorflow.lookup.StaticHashTable(
            tensorflow.lookup.KeyValueTensorInitializer(["a"], tensorflow.constant([1], tensorflow.int64)), -1)
        tensorflow.raw_ops.LookupTableFindV2(table_handle=t.resource_handle, keys=tensorflow.constant(["a"]),
                                             default_value=tensorflow.constant(1.0))


def test_duplicate_keys_and_second_initialization_as_tensorflow():
    for tf, error in ((ember, ember.errors.FailedPreconditionError),
                      (tensorflow, tensorflow.errors.FailedPreconditionError)):
        with pytest.raises(error, match="Key a has 1 and trying to add value 2"):
            tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "a"], tf.constant([1, 2], tf.int64)),
                                      -1)
        same = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "a"], tf.constant([1, 1], tf.int64)),
                                         -1)
        assert int(same.size()) == 1
    table = ember.lookup.StaticHashTable(
        ember.lookup.KeyValueTensorInitializer(["a"], ember.constant([1], ember.int64)), -1)
    table._initializer.initialize(table)  # the same entries again: nothing changes
    with pytest.raises(ember.errors.FailedPreconditionError, match="already initialized with different data"):
        ember.lookup.KeyValueTensorInitializer(["b"], ember.constant([1], ember.int64)).initialize(table)


def test_text_file_initializer(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("emerson 10\nlake 20\npalmer 30\n")

    def build(tf):
        by_column = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1, delimiter=" "), -1)
        by_line = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(path), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                                          tf.lookup.TextFileIndex.LINE_NUMBER, vocab_size=2), -1)
        ids = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(path), tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER, tf.string,
                                          tf.lookup.TextFileIndex.WHOLE_LINE), "UNK")
        return (by_column.lookup(tf.constant(["lake", "x", "palmer"])).numpy().tolist(),
                by_line.lookup(tf.constant(["lake 20", "palmer 30"])).numpy().tolist(),
                ids.lookup(tf.constant([0, 2, 5], tf.int64)).numpy().tolist())

    ours, theirs = _both(build)
    assert ours == theirs


def test_text_file_errors(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a 1\nb x\n")
    for tf in (ember, tensorflow):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Field x in line 1 is not a valid int64"):
            tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1,
                                                                    delimiter=" "), -1)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid vocab_size"):
            tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
                str(path), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER, vocab_size=5), -1)
        with pytest.raises(tf.errors.NotFoundError):
            tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
                str(tmp_path / "absent.txt"), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER), -1)
        with pytest.raises(ValueError, match="must be int64"):
            tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int32, tf.lookup.TextFileIndex.LINE_NUMBER)


@pytest.mark.parametrize("keys,queries", [
    (["emerson", "lake", "palmer"], ["emerson", "lake", "king", "crimson", "x", ""]),
    ([10, 20], [10, 7, 123, 20, -5]),
])
def test_static_vocabulary_table_hashes_oov_as_tensorflow(keys, queries):
    def build(tf):
        dtype = tf.string if isinstance(keys[0], str) else tf.int64
        init = tf.lookup.KeyValueTensorInitializer(tf.constant(keys, dtype), tf.range(len(keys), dtype=tf.int64))
        table = tf.lookup.StaticVocabularyTable(init, 5)
        return table.lookup(tf.constant(queries, dtype)).numpy().tolist(), int(table.size())

    ours, theirs = _both(build)
    assert ours == theirs


def test_mutable_hash_table_matches_tensorflow():
    def build(tf):
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, -1.0)
        table.insert(tf.constant(["x", "y", "z"]), tf.constant([1.0, 2.0, 3.0]))
        table.insert(tf.constant(["y"]), tf.constant([5.0]))
        table.remove(tf.constant(["x", "absent"]))
        found = table.lookup(tf.constant([["x", "y"], ["z", "w"]]))
        return found.numpy().tolist(), int(table.size()), _sorted_export(table)

    ours, theirs = _both(build)
    assert ours == theirs


def test_mutable_hash_table_errors_as_tensorflow():
    for tf in (ember, tensorflow):
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
        with pytest.raises(tf.errors.InvalidArgumentError):
            table.insert(tf.constant(["a", "b"]), tf.constant([1, 2, 3], tf.int64))
    init = ember.lookup.KeyValueTensorInitializer(["a"], ember.constant([1], ember.int64))
    static = ember.lookup.StaticHashTable(init, -1)
    with pytest.raises(ember.errors.UnimplementedError, match="only a MutableHashTable takes insertions"):
        ember._C.op("LookupTableInsertV2")(ember.constant(["b"]), ember.constant([2], ember.int64), static._id)


def test_dense_hash_table_refuses_its_reserved_keys():
    for tf in (ember, tensorflow):
        table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, default_value=-1, empty_key=0,
                                                      deleted_key=-1)
        table.insert(tf.constant([5, 6], tf.int64), tf.constant([50, 60], tf.int64))
        table.erase(tf.constant([6], tf.int64))
        assert table.lookup(tf.constant([5, 6], tf.int64)).numpy().tolist() == [50, -1]
        with pytest.raises(tf.errors.InvalidArgumentError, match="empty_key"):
            table.insert(tf.constant([0], tf.int64), tf.constant([1], tf.int64))


def test_tables_captured_by_a_function():
    def build(tf):
        static = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64)), -1)
        mutable = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, 0)

        @tf.function
        def step(keys, values):
            before = mutable.lookup(keys)
            mutable.insert(keys, values + static.lookup(keys))  # ordered after the lookup above
            after = mutable.lookup(keys)
            return before, after, mutable.size(), static.size()

        first = [t.numpy().tolist() for t in step(tf.constant(["a", "c"]), tf.constant([10, 20], tf.int64))]
        second = [t.numpy().tolist() for t in step(tf.constant(["a", "d"]), tf.constant([5, 5], tf.int64))]
        exported = tf.function(lambda: mutable.export())()
        return first, second, sorted(zip(exported[0].numpy().tolist(), exported[1].numpy().tolist()))

    ours, theirs = _both(build)
    assert ours == theirs


def test_static_table_created_inside_a_function():
    def build(tf):
        @tf.function
        def f(x):
            init = tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64))
            vocabulary = tf.lookup.StaticVocabularyTable(init, 3)
            return vocabulary.lookup(x)

        return [f(tf.constant(keys)).numpy().tolist() for keys in (["a", "q"], ["b", "zz", "q"])]

    ours, theirs = _both(build)
    assert ours == theirs
    with pytest.raises(NotImplementedError, match="create the table outside the function"):
        ember.function(lambda: ember.lookup.experimental.MutableHashTable(ember.string, ember.int64, 0).size())()


def test_deleted_table_in_a_function_is_an_error():
    table = ember.lookup.experimental.MutableHashTable(ember.string, ember.int64, 0)
    f = ember.function(lambda k: table.lookup(k))
    assert f(ember.constant(["a"])).numpy().tolist() == [0]
    del table
    with pytest.raises(ember.errors.FailedPreconditionError, match="has been deleted"):
        f(ember.constant(["a"]))


def test_mutable_table_checkpoint_is_tensorflows(tmp_path):
    ours = ember.lookup.experimental.MutableHashTable(ember.string, ember.int64, -1)
    ours.insert(ember.constant(["a", "b"]), ember.constant([1, 2], ember.int64))
    path = ember.train.Checkpoint(t=ours).save(str(tmp_path / "ours" / "ckpt"))
    names = dict(tensorflow.train.list_variables(path))
    assert names["t/.ATTRIBUTES/table-keys"] == [2] and names["t/.ATTRIBUTES/table-values"] == [2]

    theirs = tensorflow.lookup.experimental.MutableHashTable(tensorflow.string, tensorflow.int64, -1)
    tensorflow.train.Checkpoint(t=theirs).restore(path).assert_consumed()
    assert _sorted_export(theirs) == [(b"a", 1), (b"b", 2)]

    theirs.insert(tensorflow.constant(["c"]), tensorflow.constant([3], tensorflow.int64))
    tf_path = tensorflow.train.Checkpoint(t=theirs).save(str(tmp_path / "theirs" / "ckpt"))
    restored = ember.lookup.experimental.MutableHashTable(ember.string, ember.int64, -1)
    restored.insert(ember.constant(["gone"]), ember.constant([9], ember.int64))
    ember.train.Checkpoint(t=restored).restore(tf_path)
    assert _sorted_export(restored) == [(b"a", 1), (b"b", 2), (b"c", 3)]


def test_graph_def_export_runs_in_tensorflow():
    """A traced lookup exports as TensorFlow writes a captured table: a DT_RESOURCE Placeholder as input 0
    and TensorFlow's attributes (Tin, Tout, ...); TensorFlow imports the graph with its own table fed there."""
    from tensorflow.python.framework import op_def_registry

    table = ember.lookup.StaticHashTable(
        ember.lookup.KeyValueTensorInitializer(["a", "b"], ember.constant([1, 2], ember.int64)), -1)
    mutable = ember.lookup.experimental.MutableHashTable(ember.string, ember.int64, -1)

    def body(x):
        mutable.insert(x, ember.ones_like(table.lookup(x)))
        mutable.remove(x)
        return table.lookup(x), mutable.size(), mutable.export()[0]

    traced = ember.function(body).get_concrete_function(ember.TensorSpec([None], ember.string))
    graph = tensorflow.compat.v1.GraphDef.FromString(traced.graph.as_graph_def().SerializeToString())
    for node in graph.node:
        if node.op.startswith("LookupTable"):
            declared = op_def_registry.get(node.op)
            assert sorted(node.attr) == sorted(a.name for a in declared.attr), node.op
            assert len(node.input) - sum(i.startswith("^") for i in node.input) == len(declared.input_arg)

    lookup = [n for n in graph.node if n.op == "LookupTableFindV2"][0]
    resource = tensorflow.resource.as_datatype_enum
    table_node = lookup.input[0]
    feeds = [n.name for n in graph.node if n.op == "Placeholder" and n.attr["dtype"].type != resource]
    assert [n for n in graph.node if n.name == table_node][0].attr["dtype"].type == resource
    only_lookup = tensorflow.compat.v1.GraphDef()
    only_lookup.node.extend(n for n in graph.node if n.name in (table_node, lookup.name, *lookup.input))
    with tensorflow.Graph().as_default():
        theirs = tensorflow.lookup.StaticHashTable(
            tensorflow.lookup.KeyValueTensorInitializer(["a", "b"], tensorflow.constant([1, 2], tensorflow.int64)), -1)
        keys_node, default_node = lookup.input[1], lookup.input[2]
        assert keys_node in feeds and default_node in feeds
        found, = tensorflow.graph_util.import_graph_def(
            only_lookup, input_map={table_node: theirs.resource_handle, keys_node: tensorflow.constant(["a", "q", "b"]),
                                    default_node: tensorflow.constant(-1, tensorflow.int64)},
            return_elements=[lookup.name + ":0"])
        with tensorflow.compat.v1.Session() as session:
            session.run(tensorflow.compat.v1.tables_initializer())
            assert session.run(found).tolist() == [1, -1, 2]

"""Tables shared by ``shared_name`` in a loaded SavedModel, against TensorFlow 2.21 (saved_model/table_names.py):
within one load, table-creating nodes naming one table share it; two loads of one SavedModel never share; a
HashTableV2 without ``use_node_name_sharing`` shares with no other node. The SavedModels are TensorFlow's,
each loaded twice by TensorFlow and by ember, and every result is compared."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.ops import gen_lookup_ops as tf_lookup_ops

import ember as em


def _tf2_model(path):
    """Functions that create their MutableHashTableV2 by shared_name and by node-name sharing, and a
    MutableHashTable object: what one load inserts, its other functions find."""

    def table(**kwargs):
        return tf_lookup_ops.mutable_hash_table_v2(key_dtype=tf.string, value_dtype=tf.int64, **kwargs)

    class Shared(tf.Module):
        def __init__(self):
            self.object_table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int64)])
        def insert(self, keys, values):
            by_name, by_node = table(shared_name="shared_vocab"), table(use_node_name_sharing=True, name="nn")
            tf_lookup_ops.lookup_table_insert_v2(by_name, keys, values)
            tf_lookup_ops.lookup_table_insert_v2(by_node, keys, values * 10)
            self.object_table.insert(keys, values * 100)
            return tf_lookup_ops.lookup_table_size_v2(by_name)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def find(self, keys):
            by_name, by_node = table(shared_name="shared_vocab"), table(use_node_name_sharing=True, name="nn")
            minus_one = tf.constant(-1, tf.int64)
            return tf.stack([tf_lookup_ops.lookup_table_find_v2(by_name, keys, minus_one),
                             tf_lookup_ops.lookup_table_find_v2(by_node, keys, minus_one),
                             self.object_table.lookup(keys)])

    tf.saved_model.save(Shared(), path)


def _tf1_model(path):
    """A TensorFlow 1 SavedModel: a MutableHashTable (node-name sharing), a StaticHashTable filled by the
    main op, and two HashTableV2 nodes of one shared_name of which only the first is initialized."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        keys = v1.placeholder(tf.string, [None], name="keys")
        values = v1.placeholder(tf.int64, [None], name="values")
        mutable = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1, name="mutable")
        static = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64)), -1)
        first = tf_lookup_ops.hash_table_v2(key_dtype=tf.string, value_dtype=tf.int64, shared_name="vocab")
        second = tf_lookup_ops.hash_table_v2(key_dtype=tf.string, value_dtype=tf.int64, shared_name="vocab")
        v1.add_to_collection(v1.GraphKeys.TABLE_INITIALIZERS, tf_lookup_ops.lookup_table_import_v2(
            first, tf.constant(["x"]), tf.constant([3], tf.int64)))
        with tf.control_dependencies([mutable.insert(keys, values)]):
            size = mutable.size()
        minus_one = tf.constant(-1, tf.int64)
        with v1.Session() as session:
            session.run(v1.tables_initializer())
            builder = v1.saved_model.Builder(path)
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={
                "insert": v1.saved_model.predict_signature_def({"keys": keys, "values": values}, {"size": size}),
                "find": v1.saved_model.predict_signature_def({"keys": keys}, {
                    "mutable": mutable.lookup(keys), "static": static.lookup(keys),
                    "first": tf_lookup_ops.lookup_table_find_v2(first, keys, minus_one)}),
                "find_second": v1.saved_model.predict_signature_def({"keys": keys}, {
                    "second": tf_lookup_ops.lookup_table_find_v2(second, keys, minus_one)})},
                main_op=v1.tables_initializer())
            builder.save()


def _tf1_vocabulary_model(path, vocabulary):
    """A TensorFlow 1 SavedModel whose main op fills a StaticHashTable from a vocabulary asset."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        keys = v1.placeholder(tf.string, [None], name="keys")
        filename = tf.constant(vocabulary, name="vocabulary_path")
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, filename)
        table = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
            filename, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER),
            -1)
        with v1.Session() as session:
            session.run(v1.tables_initializer())
            builder = v1.saved_model.Builder(path)
            builder.add_meta_graph_and_variables(
                session, ["serve"],
                signature_def_map={"find": v1.saved_model.predict_signature_def({"keys": keys},
                                                                                {"ids": table.lookup(keys)})},
                main_op=v1.tables_initializer(), assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS))
            builder.save()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("table_names")
    _tf2_model(str(root / "tf2"))
    _tf1_model(str(root / "tf1"))
    vocabulary = root / "vocabulary.txt"
    vocabulary.write_text("x\ny\nz\n")
    _tf1_vocabulary_model(str(root / "tf1_vocabulary"), str(vocabulary))
    vocabulary.unlink()  # the model reads its copy in assets/
    return root


@pytest.mark.parametrize("lib", [tf, em], ids=["tensorflow", "ember"])
def test_two_loads_of_one_model_share_within_and_not_across(saved, lib):
    first, second = lib.saved_model.load(str(saved / "tf2")), lib.saved_model.load(str(saved / "tf2"))
    keys = lib.constant(["q", "r"])
    assert int(first.insert(keys, lib.constant([1, 2], lib.int64))) == 2
    assert int(first.insert(lib.constant(["s"]), lib.constant([3], lib.int64))) == 3  # the same table again
    found = [load.find(lib.constant(["q", "s", "z"])).numpy().tolist() for load in (first, second)]
    assert found == [[[1, 3, -1], [10, 30, -1], [100, 300, -1]], [[-1, -1, -1]] * 3]


def test_ember_finds_what_tensorflow_finds(saved):
    def run(lib):
        loads = [lib.saved_model.load(str(saved / "tf2")) for _ in range(2)]
        loads[1].insert(lib.constant(["q"]), lib.constant([5], lib.int64))
        return [load.find(lib.constant(["q", "z"])).numpy() for load in loads]

    for ours, theirs in zip(run(em), run(tf)):
        np.testing.assert_array_equal(ours, theirs)


def test_tensorflow1_model_tables(saved):
    def run(lib):
        first, second = lib.saved_model.load(str(saved / "tf1")), lib.saved_model.load(str(saved / "tf1"))
        size = first.signatures["insert"](keys=lib.constant(["q"]), values=lib.constant([7], lib.int64))["size"]
        out = [int(size)]
        for load in (first, second):
            found = load.signatures["find"](keys=lib.constant(["q", "a", "x"]))
            out.append({key: value.numpy().tolist() for key, value in found.items()})
        try:  # the second "vocab" node is a table of its own, never initialized
            first.signatures["find_second"](keys=lib.constant(["x"]))
            out.append("found")
        except lib.errors.FailedPreconditionError:
            out.append("not initialized")
        return out

    ours = run(em)
    assert ours == run(tf)
    assert ours == [1, {"mutable": [7, -1, -1], "static": [-1, 1, -1], "first": [-1, -1, 3]},
                    {"mutable": [-1, -1, -1], "static": [-1, 1, -1], "first": [-1, -1, 3]}, "not initialized"]


def test_tensorflow1_model_filled_from_a_vocabulary_asset(saved):
    # The main op reads the vocabulary's copy in assets/ (the original file is gone), in every load.
    def run(lib):
        return [lib.saved_model.load(str(saved / "tf1_vocabulary")).signatures["find"](
            keys=lib.constant(["y", "q", "x"]))["ids"].numpy().tolist() for _ in range(2)]

    assert run(em) == run(tf) == [[1, -1, 0]] * 2

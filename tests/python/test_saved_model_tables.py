"""SavedModels holding tf.lookup tables, both directions with TensorFlow 2.21: a module with a StaticHashTable
(from tensors and from a vocabulary file, which travels as an asset), a StaticVocabularyTable and a
MutableHashTable (its entries in the checkpoint), used by an ember.function with an input_signature; the
Keras text layers saved with model.save; TensorFlow's graphs that create tables (HashTableV2, ...); and the
errors (a missing vocabulary asset names the file)."""

import os

import numpy as np
import pytest
import tensorflow as tf

import ember as em

KEYS = ["a", "b", "apple", "cherry", "x", "y", "zz"]


def _module(lib, vocab):
    """The same module in TensorFlow (lib=tf) or ember (lib=em)."""

    class Tables(lib.Module):
        def __init__(self):
            super().__init__()
            init = lib.lookup.KeyValueTensorInitializer(lib.constant(["a", "b"]), lib.constant([1, 2], lib.int64))
            self.static = lib.lookup.StaticHashTable(init, -1)
            self.text = lib.lookup.StaticHashTable(
                lib.lookup.TextFileInitializer(vocab, lib.string, lib.lookup.TextFileIndex.WHOLE_LINE, lib.int64,
                                               lib.lookup.TextFileIndex.LINE_NUMBER), -1)
            self.vocabulary = lib.lookup.StaticVocabularyTable(
                lib.lookup.KeyValueTensorInitializer(lib.constant(["a", "b"]), lib.constant([0, 1], lib.int64)), 3)
            self.mutable = lib.lookup.experimental.MutableHashTable(lib.string, lib.int64, -1)
            self.mutable.insert(lib.constant(["x", "y"]), lib.constant([7, 8], lib.int64))

        @lib.function(input_signature=[lib.TensorSpec([None], lib.string)])
        def lookup(self, keys):
            return (self.static.lookup(keys) + 10 * self.text.lookup(keys) + 100 * self.mutable.lookup(keys)
                    + 1000 * self.vocabulary.lookup(keys))

    return Tables()


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "source" / "vocab.txt"
    path.parent.mkdir()
    path.write_text("apple\nbanana\ncherry\n")
    return str(path)


def _expected(vocab):
    module = _module(tf, vocab)  # held: a tf.function holds its module weakly
    return module.lookup(tf.constant(KEYS)).numpy()


def test_tensorflow_loads_embers_tables(tmp_path, vocab):
    module = _module(em, vocab)
    expected = _expected(vocab)
    np.testing.assert_array_equal(module.lookup(em.constant(KEYS)).numpy(), expected)
    path = str(tmp_path / "model")
    em.saved_model.save(module, path)
    assert sorted(os.listdir(os.path.join(path, "assets"))) == ["vocab.txt"]
    os.remove(vocab)  # the loaded tables read the copy in assets/
    loaded = tf.saved_model.load(path)
    np.testing.assert_array_equal(loaded.lookup(tf.constant(KEYS)).numpy(), expected)
    out = loaded.signatures["serving_default"](keys=tf.constant(KEYS))
    np.testing.assert_array_equal(out["output_0"].numpy(), expected)
    # TensorFlow's tables: a resource with its functions, the mutable one restored from the checkpoint.
    assert type(loaded.static).__name__ == "RestoredResource"
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    keys = reader.get_tensor("mutable/.ATTRIBUTES/table-keys")
    values = reader.get_tensor("mutable/.ATTRIBUTES/table-values")
    assert sorted(zip(keys.tolist(), values.tolist())) == [(b"x", 7), (b"y", 8)]


def test_ember_loads_tensorflows_tables(tmp_path, vocab):
    path = str(tmp_path / "model")
    tf.saved_model.save(_module(tf, vocab), path)
    expected = _expected(vocab)
    os.remove(vocab)
    loaded = em.saved_model.load(path)
    np.testing.assert_array_equal(loaded.lookup(em.constant(KEYS)).numpy(), expected)
    out = loaded.signatures["serving_default"](keys=em.constant(KEYS))
    np.testing.assert_array_equal(out["output_0"].numpy(), expected)
    assert "MutableHashTable string -> int64" in repr(loaded.mutable)
    keys, values = loaded.mutable.export()
    assert sorted(zip(keys.numpy().tolist(), values.numpy().tolist())) == [(b"x", 7), (b"y", 8)]


def test_ember_loads_its_own_tables(tmp_path, vocab):
    module = _module(em, vocab)
    path = str(tmp_path / "model")
    em.saved_model.save(module, path)
    module.mutable.insert(em.constant(["x"]), em.constant([70], em.int64))  # after the save: not in it
    loaded = em.saved_model.load(path)
    np.testing.assert_array_equal(loaded.lookup(em.constant(KEYS)).numpy(), _expected(vocab))


@pytest.mark.parametrize("saver", ["ember", "tensorflow"])
def test_a_loaded_models_tables_are_saved_again(tmp_path, vocab, saver):
    """Loaded (from TensorFlow's SavedModel or ember's), changed and saved again by ember: TensorFlow and ember
    load the tables as they were at the second save."""
    lib = em if saver == "ember" else tf
    module = _module(lib, vocab)
    lib.saved_model.save(module, str(tmp_path / "first"))
    expected = _expected(vocab)
    os.remove(vocab)
    loaded = em.saved_model.load(str(tmp_path / "first"))
    import_entries = em._C.op("LookupTableImportV2")  # replaces the mutable table's entries
    import_entries(em.constant(["y"]), em.constant([9], em.int64), loaded.mutable._id)
    em.saved_model.save(loaded, str(tmp_path / "again"))
    changed = expected.copy()
    changed[KEYS.index("x")] += 100 * (-1 - 7)
    changed[KEYS.index("y")] += 100 * (9 - 8)
    np.testing.assert_array_equal(em.saved_model.load(str(tmp_path / "again")).lookup(em.constant(KEYS)).numpy(),
                                  changed)
    np.testing.assert_array_equal(tf.saved_model.load(str(tmp_path / "again")).lookup(tf.constant(KEYS)).numpy(),
                                  changed)


@pytest.mark.parametrize("saver", ["ember", "tensorflow"])
def test_a_missing_vocabulary_asset_names_the_file(tmp_path, vocab, saver):
    path = str(tmp_path / "model")
    (em if saver == "ember" else tf).saved_model.save(_module(em if saver == "ember" else tf, vocab), path)
    os.remove(os.path.join(path, "assets", "vocab.txt"))
    with pytest.raises(em.errors.NotFoundError, match=r"InitializeTableFromTextFileV2.*/assets/vocab\.txt; No such "
                                                      r"file or directory \(initializing table 'text'"):
        em.saved_model.load(path)


def test_a_table_not_reachable_from_the_saved_object_is_refused(tmp_path):
    table = em.lookup.StaticHashTable(em.lookup.KeyValueTensorInitializer(["a"], em.constant([1], em.int64)), -1)

    class Holder(em.Module):
        @em.function(input_signature=[em.TensorSpec([None], em.string)])
        def __call__(self, keys):
            return table.lookup(keys)

    with pytest.raises(ValueError, match="uses a lookup table that is not reachable from the saved object"):
        em.saved_model.save(Holder(), str(tmp_path / "model"))


def _dense_module(lib):
    """A DenseHashTable (with a removed key, and more entries than its initial buckets hold at TensorFlow's
    load factor) and a function looking it up, in TensorFlow (lib=tf) or ember (lib=em)."""

    class Dense(lib.Module):
        def __init__(self):
            super().__init__()
            self.table = lib.lookup.experimental.DenseHashTable(lib.string, lib.int64, -1, empty_key="",
                                                                deleted_key="$", initial_num_buckets=8)
            self.table.insert(lib.constant(DENSE_KEYS), lib.constant(list(range(1, len(DENSE_KEYS) + 1)), lib.int64))
            self.table.remove(lib.constant(["b"]))
            self.ids = lib.lookup.experimental.DenseHashTable(lib.int64, lib.float32, -1.0, empty_key=-1,
                                                              deleted_key=-2, initial_num_buckets=4)
            self.ids.insert(lib.constant([5, 13, -7], lib.int64), lib.constant([0.5, 1.5, 2.5]))

        @lib.function(input_signature=[lib.TensorSpec([None], lib.string), lib.TensorSpec([None], lib.int64)])
        def lookup(self, keys, ids):
            return lib.cast(self.table.lookup(keys), lib.float32) + self.ids.lookup(ids)

    return Dense()


DENSE_KEYS = ["a", "b", "c", "a longer key than eight bytes", "d", "e", "f", "g", "h"]
DENSE_QUERY = (["a", "b", "h", "zz", "a longer key than eight bytes"], [5, 13, -7, 4, 0])


def _dense_lookup(module, lib):
    return module.lookup(lib.constant(DENSE_QUERY[0]), lib.constant(DENSE_QUERY[1], lib.int64)).numpy()


def test_dense_tables_round_trip_between_ember_and_tensorflow(tmp_path):
    """ember writes TensorFlow's bucket array (keys where TensorFlow's hash and probing find them), so
    TensorFlow looks up and grows the table it loads; each framework loads the other's, and a loaded table is
    saved again as a dense one."""
    expected = _dense_lookup(_dense_module(tf), tf)
    ours = _dense_module(em)
    np.testing.assert_array_equal(_dense_lookup(ours, em), expected)
    em.saved_model.save(ours, str(tmp_path / "ember"))
    in_tensorflow = tf.saved_model.load(str(tmp_path / "ember"))
    np.testing.assert_array_equal(_dense_lookup(in_tensorflow, tf), expected)
    handle = in_tensorflow.table.resource_handle  # grown past 8 buckets' load by TensorFlow's insert
    tf.raw_ops.LookupTableInsertV2(table_handle=handle, keys=tf.constant(["x", "y"]),
                                   values=tf.constant([10, 11], tf.int64))
    found = tf.raw_ops.LookupTableFindV2(table_handle=handle, keys=tf.constant(["x", "c", "y", "b"]),
                                         default_value=tf.constant(-1, tf.int64))
    assert found.numpy().tolist() == [10, 3, 11, -1]
    tf.saved_model.save(_dense_module(tf), str(tmp_path / "tensorflow"))
    for source in ("ember", "tensorflow"):
        loaded = em.saved_model.load(str(tmp_path / source))
        np.testing.assert_array_equal(_dense_lookup(loaded, em), expected)
        em.saved_model.save(loaded, str(tmp_path / f"{source}_again"))
        np.testing.assert_array_equal(_dense_lookup(tf.saved_model.load(str(tmp_path / f"{source}_again")), tf),
                                      expected)
    reader = tf.train.load_checkpoint(str(tmp_path / "ember" / "variables" / "variables"))
    assert reader.get_variable_to_shape_map()["table/.ATTRIBUTES/table-keys"] == [16, 1]  # 8 entries > 0.8 * 8


def test_dense_table_checkpoints_both_ways(tmp_path):
    ours = em.lookup.experimental.DenseHashTable(em.int64, em.int64, -1, empty_key=0, deleted_key=-1)
    ours.insert(em.constant([3, 1 << 40, 7], em.int64), em.constant([30, 40, 70], em.int64))
    path = em.train.Checkpoint(table=ours).save(str(tmp_path / "ember" / "ckpt"))
    theirs = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=-1)
    tf.train.Checkpoint(table=theirs).restore(path).assert_consumed()
    assert theirs.lookup(tf.constant([7, 1 << 40, 5], tf.int64)).numpy().tolist() == [70, 40, -1]
    theirs.insert(tf.constant([9], tf.int64), tf.constant([90], tf.int64))
    theirs.remove(tf.constant([3], tf.int64))
    path = tf.train.Checkpoint(table=theirs).save(str(tmp_path / "tensorflow" / "ckpt"))
    restored = em.lookup.experimental.DenseHashTable(em.int64, em.int64, -1, empty_key=0, deleted_key=-1)
    em.train.Checkpoint(table=restored).restore(path)
    keys, values = restored.export()  # the entries, without TensorFlow's empty and deleted buckets
    assert sorted(zip(keys.numpy().tolist(), values.numpy().tolist())) == [(7, 70), (9, 90), (1 << 40, 40)]


def test_dense_table_buckets_must_be_a_power_of_two():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, 0, -1, initial_num_buckets=12)
    with pytest.raises(em.errors.InvalidArgumentError, match="at least 4 and a power of 2, got: 12"):
        em.lookup.experimental.DenseHashTable(em.int64, em.int64, -1, 0, -1, initial_num_buckets=12)


def test_ember_loads_tensorflows_dense_table(tmp_path):
    class Dense(tf.Module):
        def __init__(self):
            self.table = tf.lookup.experimental.DenseHashTable(tf.string, tf.int64, -1, empty_key="",
                                                               deleted_key="$")
            self.table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def lookup(self, keys):
            return self.table.lookup(keys)

    module = Dense()
    tf.saved_model.save(module, str(tmp_path / "model"))
    expected = module.lookup(tf.constant(["a", "z", "b"])).numpy()
    loaded = em.saved_model.load(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.lookup(em.constant(["a", "z", "b"])).numpy(), expected)
    keys, _ = loaded.table.export()  # the entries, not TensorFlow's empty buckets
    assert sorted(keys.numpy().tolist()) == [b"a", b"b"]


def test_tensorflows_graph_that_creates_tables_imports_and_runs():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.string, [None], name="x")
        static = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64)), -1)
        mutable = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
        insert = mutable.insert(tf.constant(["c"]), tf.constant([5], tf.int64))
        with tf.control_dependencies([tf.compat.v1.tables_initializer(), insert]):
            tf.identity(static.lookup(x) + 10 * mutable.lookup(x), name="y")
    ops = {node.op for node in graph.as_graph_def().node}
    assert {"HashTableV2", "MutableHashTableV2"} <= ops
    with tf.compat.v1.Session(graph=graph) as session:
        expected = session.run("y:0", {"x:0": ["a", "b", "c", "z"]})
    imported = em.graph_util.import_graph_def(graph.as_graph_def())
    lookup = em.NewGraphFunction(imported, ["x:0"], ["y:0"])
    for _ in range(2):  # the tables were made once, at import
        np.testing.assert_array_equal(lookup(em.constant(["a", "b", "c", "z"])).numpy(), expected)


def test_table_creating_ops_are_tensorflows():
    from tensorflow.python.framework import op_def_registry

    for name in ("HashTableV2", "MutableHashTableV2", "MutableDenseHashTableV2"):
        theirs, ours = op_def_registry.get(name), em._C.op_info(name)
        assert ours["outputs"] == [a.name for a in theirs.output_arg] == ["table_handle"]
        assert ours["inputs"] == [a.name for a in theirs.input_arg]
        assert ours["attrs"] == [a.name for a in theirs.attr]
        assert ours["stateful"]


def _keras_models(keras):
    inputs = keras.Input(shape=(None,), dtype="string")
    lookup = keras.Model(inputs, keras.layers.StringLookup(vocabulary=["a", "b", "c"])(inputs))
    text = keras.Input(shape=(), dtype="string")
    vectorize = keras.layers.TextVectorization(max_tokens=10, output_sequence_length=4)
    vectorize.adapt(["the cat sat", "the dog ran", "a cat"])
    return lookup, keras.Model(text, vectorize(text))


LOOKUP_INPUT = [["a", "z", "c"]]
TEXT_INPUT = ["the cat ran fast"]


def _check_keras_models(path, lib, expected_lookup, expected_text):
    """ember's load_model runs both saved models (an adapted vocabulary is in no config: it comes from the
    SavedModel's table), and ``lib``'s tf.saved_model.load runs the StringLookup's serving signature."""
    np.testing.assert_array_equal(
        em.keras.models.load_model(str(path / "lookup"))(em.constant(LOOKUP_INPUT)).numpy(), expected_lookup)
    np.testing.assert_array_equal(
        em.keras.models.load_model(str(path / "text"))(em.constant(TEXT_INPUT)).numpy(), expected_text)
    signature = lib.saved_model.load(str(path / "lookup")).signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    (out,) = signature(**{name: lib.constant(LOOKUP_INPUT)}).values()
    np.testing.assert_array_equal(out.numpy(), expected_lookup)


def test_keras_text_layers_saved_by_ember_load_in_ember_and_tensorflow(tmp_path):
    import tf_keras

    lookup, vectorize = _keras_models(em.keras)
    their_lookup, their_vectorize = _keras_models(tf_keras)
    expected_lookup = their_lookup(tf.constant(LOOKUP_INPUT)).numpy()
    lookup.save(str(tmp_path / "lookup"))
    vectorize.save(str(tmp_path / "text"))
    _check_keras_models(tmp_path, tf, expected_lookup, their_vectorize(tf.constant(TEXT_INPUT)).numpy())
    np.testing.assert_array_equal(
        tf_keras.models.load_model(str(tmp_path / "lookup"))(tf.constant(LOOKUP_INPUT)).numpy(), expected_lookup)


def test_keras_text_layers_saved_by_tf_keras_load_in_ember(tmp_path):
    import tf_keras

    lookup, vectorize = _keras_models(tf_keras)
    lookup.save(str(tmp_path / "lookup"), save_format="tf")
    vectorize.save(str(tmp_path / "text"), save_format="tf")
    _check_keras_models(tmp_path, em, lookup(tf.constant(LOOKUP_INPUT)).numpy(),
                        vectorize(tf.constant(TEXT_INPUT)).numpy())
    # tf_keras saves an adapt_step taking a dataset iterator: restored, and plain about not running.
    layer = getattr(em.saved_model.load(str(tmp_path / "text")), "layer_with_weights-0")
    with pytest.raises(NotImplementedError, match="IteratorSpec"):
        layer._adapt_function(None)


def _id_module(lib, vocab):
    """A signature the C++ example can feed (it generates int64 inputs i % 7): ids through a table of
    tensors, a table from a vocabulary file of numbers, a MutableHashTable (entries from the checkpoint) and a
    DenseHashTable (its bucket array in the checkpoint, with a removed key's bucket)."""

    class Ids(lib.Module):
        def __init__(self):
            super().__init__()
            self.squares = lib.lookup.StaticHashTable(lib.lookup.KeyValueTensorInitializer(
                lib.constant([0, 1, 2, 3], lib.int64), lib.constant([0.0, 1.0, 4.0, 9.0])), -1.0)
            self.numbers = lib.lookup.StaticHashTable(lib.lookup.TextFileInitializer(
                vocab, lib.int64, lib.lookup.TextFileIndex.WHOLE_LINE, lib.int64,
                lib.lookup.TextFileIndex.LINE_NUMBER), -1)
            self.inserted = lib.lookup.experimental.MutableHashTable(lib.int64, lib.int64, -1)
            self.inserted.insert(lib.constant([2, 4], lib.int64), lib.constant([20, 40], lib.int64))
            self.dense = lib.lookup.experimental.DenseHashTable(lib.int64, lib.int64, -1, empty_key=-1,
                                                                deleted_key=-2, initial_num_buckets=8)
            self.dense.insert(lib.constant([1, 3, 6], lib.int64), lib.constant([10, 30, 60], lib.int64))
            self.dense.remove(lib.constant([3], lib.int64))

        @lib.function(input_signature=[lib.TensorSpec([None], lib.int64)])
        def __call__(self, ids):
            return {"square": self.squares.lookup(ids), "line": self.numbers.lookup(ids),
                    "inserted": self.inserted.lookup(ids), "dense": self.dense.lookup(ids)}

    return Ids()


@pytest.mark.parametrize("saver", ["ember", "tensorflow"])
def test_cpp_loader_runs_a_signature_that_looks_up_tables(tmp_path, saver):
    from test_saved_model_cpp import parse, serve

    vocab = tmp_path / "numbers.txt"
    vocab.write_text("5\n3\n1\n")
    lib = em if saver == "ember" else tf
    module = _id_module(lib, str(vocab))
    path = tmp_path / "model"
    lib.saved_model.save(module, str(path))
    vocab.unlink()  # the C++ loader reads the copy in assets/
    outputs, info = parse(serve(path, "--batch", 9).stdout)
    ids = np.arange(9) % 7  # the example's generated input
    np.testing.assert_array_equal(outputs["square"][1], [{0: 0.0, 1: 1.0, 2: 4.0, 3: 9.0}.get(i, -1.0) for i in ids])
    np.testing.assert_array_equal(outputs["line"][1], [{5: 0, 3: 1, 1: 2}.get(i, -1) for i in ids])
    np.testing.assert_array_equal(outputs["inserted"][1], [{2: 20, 4: 40}.get(i, -1) for i in ids])
    np.testing.assert_array_equal(outputs["dense"][1], [{1: 10, 6: 60}.get(i, -1) for i in ids])
    assert info["python_in_process"] == "no"

"""ember.train.Checkpoint on its own: the dependency graph, matching by path, restore-on-create, the
status checks, CheckpointManager, atomic saves, and bad checkpoints (each a clear error naming the file)."""

import os
import struct
import time

import numpy as np
import pytest

import ember
from ember import errors
from ember.framework import protos


class Dense(ember.Module):
    """Builds its variables on first call, as a Keras layer does."""

    def __init__(self, units, name=None):
        super().__init__(name=name)
        self.units = units
        self.kernel = None

    def __call__(self, x):
        if self.kernel is None:
            self.kernel = ember.Variable(np.ones((x.shape[-1], self.units), np.float32), name="kernel")
            self.bias = ember.Variable(np.zeros(self.units, np.float32), name="bias")
        return ember.matmul(x, self.kernel) + self.bias


def object_graph(prefix):
    reader = ember.train.load_checkpoint(prefix)
    return protos.message_class("TrackableObjectGraph").FromString(
        reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))


def test_keys_follow_paths_lists_dicts_and_escaping(tmp_path):
    m = ember.Module()
    m.layers = [ember.Variable(1.0), {"a/b.c": ember.Variable(2.0)}, "not saved", 3]
    m.same = m.layers[0]  # a second path to one variable: one node, named by its shortest path (as TF)
    prefix = ember.train.Checkpoint(model=m).write(str(tmp_path / "w"))
    keys = [k for k, _ in ember.train.list_variables(prefix)]
    assert keys == ["_CHECKPOINTABLE_OBJECT_GRAPH", "model/layers/1/a.Sb..c/.ATTRIBUTES/VARIABLE_VALUE",
                    "model/same/.ATTRIBUTES/VARIABLE_VALUE"]  # what TensorFlow writes for the same Module
    graph = object_graph(prefix)
    model = graph.nodes[graph.nodes[0].children[0].node_id]
    assert [(c.local_name) for c in model.children] == ["layers", "same"]
    assert model.children[0].node_id != model.children[1].node_id
    layers = graph.nodes[model.children[0].node_id]
    assert [c.local_name for c in layers.children] == ["0", "1"]
    assert layers.children[0].node_id == model.children[1].node_id
    assert all(n.HasField("has_checkpoint_values") for n in graph.nodes)


def test_write_creates_missing_directories(tmp_path):
    prefix = ember.train.Checkpoint(v=ember.Variable(1.0)).write(str(tmp_path / "a" / "b" / "ck"))
    assert ember.train.list_variables(prefix)[1][0] == "v/.ATTRIBUTES/VARIABLE_VALUE"


def test_restore_matches_by_path_not_by_name(tmp_path):
    a = ember.Module()
    a.x, a.y = ember.Variable(1.0, name="y"), ember.Variable(2.0, name="x")
    path = ember.train.Checkpoint(m=a).save(str(tmp_path / "ck"))
    b = ember.Module()
    b.x, b.y = ember.Variable(0.0, name="x"), ember.Variable(0.0, name="y")
    ember.train.Checkpoint(m=b).restore(path).assert_consumed()
    assert (b.x.numpy(), b.y.numpy()) == (1.0, 2.0)


def test_restore_on_create_for_a_layer_built_later(tmp_path):
    layer = Dense(2)
    layer(ember.ones((1, 3)))
    layer.kernel.assign(np.full((3, 2), 5.0, np.float32))
    path = ember.train.Checkpoint(layer=layer).save(str(tmp_path / "ck"))
    fresh = Dense(2)
    status = ember.train.Checkpoint(layer=fresh).restore(path)
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()
    out = fresh(ember.ones((1, 3)))  # builds: kernel takes the saved value as it is attached
    np.testing.assert_array_equal(out.numpy(), [[15.0, 15.0]])
    status.assert_consumed()


def test_objects_joining_through_a_plain_list_are_matched(tmp_path):
    m = ember.Module()
    m.layers = [ember.Variable(3.0)]
    path = ember.train.Checkpoint(m=m).save(str(tmp_path / "ck"))
    fresh = ember.Module()
    fresh.layers = []
    status = ember.train.Checkpoint(m=fresh).restore(path)
    fresh.layers.append(ember.Variable(0.0))  # no attribute is set: matched when the status is checked
    status.assert_consumed()
    assert fresh.layers[0].numpy() == 3.0


def test_restore_on_create_for_optimizer_slots(tmp_path):
    v = ember.Variable([1.0, 2.0])
    opt = ember.keras.optimizers.Adam(0.1)
    opt.apply_gradients([(ember.constant([1.0, 1.0]), v)])
    path = ember.train.Checkpoint(v=v, opt=opt).save(str(tmp_path / "ck"))
    v2, opt2 = ember.Variable([1.0, 2.0]), ember.keras.optimizers.Adam(0.1)
    status = ember.train.Checkpoint(v=v2, opt=opt2).restore(path)
    status.assert_existing_objects_matched()
    assert int(opt2.iterations.numpy()) == 1
    opt2.apply_gradients([(ember.constant([0.0, 0.0]), v2)])
    status.assert_consumed()
    # the restored first moment (0.1 per element), decayed once by beta_1: 0.09
    np.testing.assert_allclose(opt2._momentums[0].numpy(), [0.09, 0.09], rtol=1e-6)


def test_status_checks(tmp_path):
    path = ember.train.Checkpoint(a=ember.Variable(1.0)).write(str(tmp_path / "w"))
    extra = ember.train.Checkpoint(a=ember.Variable(0.0), b=ember.Variable(0.0))
    status = extra.restore(path)
    with pytest.raises(AssertionError, match="not bound to checkpointed values"):
        status.assert_existing_objects_matched()
    status.assert_nontrivial_match()
    assert status.expect_partial() is status
    unrelated = ember.train.Checkpoint(c=ember.Variable(0.0)).restore(path)
    with pytest.raises(AssertionError, match="Nothing except the root"):
        unrelated.assert_nontrivial_match()
    with pytest.raises(AssertionError):
        ember.train.Checkpoint(a=ember.Variable(0.0)).restore(None).assert_consumed()


def test_save_numbers_and_state_file(tmp_path):
    ckpt = ember.train.Checkpoint(v=ember.Variable(1.0))
    assert ckpt.save(str(tmp_path / "ck")) == str(tmp_path / "ck-1")
    assert ckpt.save(str(tmp_path / "ck")) == str(tmp_path / "ck-2")
    assert ember.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ck-2")
    assert open(tmp_path / "checkpoint").read() == ('model_checkpoint_path: "ck-2"\n'
                                                    'all_model_checkpoint_paths: "ck-2"\n')
    restored = ember.train.Checkpoint(v=ember.Variable(0.0))
    restored.restore(str(tmp_path)).assert_consumed()  # a directory means its latest checkpoint
    assert int(restored.save_counter.numpy()) == 2


def test_mismatched_shape_or_dtype_is_an_error_naming_the_key(tmp_path):
    path = ember.train.Checkpoint(v=ember.Variable([1.0, 2.0])).write(str(tmp_path / "w"))
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(3,\).*v/.ATTRIBUTES/VARIABLE_VALUE"):
        ember.train.Checkpoint(v=ember.Variable([0.0, 0.0, 0.0])).restore(path)
    with pytest.raises(TypeError, match="float32.*int32"):
        ember.train.Checkpoint(v=ember.Variable([0, 0])).restore(path)


def test_checkpoint_manager_keeps_max_to_keep_and_recovers(tmp_path):
    v = ember.Variable(0.0)
    manager = ember.train.CheckpointManager(ember.train.Checkpoint(v=v), str(tmp_path), max_to_keep=2,
                                            checkpoint_name="model")
    for i in range(4):
        v.assign(float(i))
        manager.save()
    assert manager.checkpoints == [str(tmp_path / "model-3"), str(tmp_path / "model-4")]
    assert not os.path.exists(tmp_path / "model-1.index") and not os.path.exists(tmp_path / "model-2.index")
    assert manager.latest_checkpoint == str(tmp_path / "model-4")
    assert manager.save(checkpoint_number=10) == str(tmp_path / "model-10")
    again = ember.train.CheckpointManager(ember.train.Checkpoint(v=ember.Variable(0.0)), str(tmp_path),
                                          max_to_keep=2, checkpoint_name="model")
    assert again.checkpoints == [str(tmp_path / "model-4"), str(tmp_path / "model-10")]
    assert again.restore_or_initialize() == str(tmp_path / "model-10")
    assert again.checkpoint._objects["v"].numpy() == 3.0


def test_keep_checkpoint_every_n_hours_preserves_old_ones(tmp_path, monkeypatch):
    import ember.train.checkpoint_management as cm
    clock = [1000.0]
    monkeypatch.setattr(cm.time, "time", lambda: clock[0])
    manager = ember.train.CheckpointManager(ember.train.Checkpoint(v=ember.Variable(0.0)), str(tmp_path),
                                            max_to_keep=1, keep_checkpoint_every_n_hours=1)
    for _ in range(4):
        clock[0] += 1800.0  # half an hour per save: every other one is kept
        manager.save()
    kept = sorted(p.name for p in tmp_path.glob("*.index"))
    assert kept == ["ckpt-2.index", "ckpt-4.index"]


def test_a_failed_write_leaves_the_old_checkpoint(tmp_path):
    v = ember.Variable([1.0, 2.0])
    prefix = str(tmp_path / "w")
    ember.train.Checkpoint(v=v).write(prefix)
    writer = ember._C.BundleWriter(prefix)
    writer.add("x", ember.constant([9.0]))
    with pytest.raises(errors.InvalidArgumentError, match="added twice"):
        writer.add("x", ember.constant([9.0]))
    del writer  # abandoned: its temporary files go, the old files stay
    assert sorted(os.listdir(tmp_path)) == ["w.data-00000-of-00001", "w.index"]
    restored = ember.Variable([0.0, 0.0])
    ember.train.Checkpoint(v=restored).restore(prefix).assert_nontrivial_match()
    assert restored.numpy().tolist() == [1.0, 2.0]


# ---- bad checkpoints


def write_sample(tmp_path):
    m = ember.Module()
    m.w = ember.Variable(np.arange(12, dtype=np.float32).reshape(3, 4))
    m.s = ember.Variable(np.int64(3))
    return ember.train.Checkpoint(m=m).write(str(tmp_path / "s"))


def restore_sample(prefix):
    m = ember.Module()
    m.w = ember.Variable(np.zeros((3, 4), np.float32))
    m.s = ember.Variable(np.int64(0))
    return ember.train.Checkpoint(m=m).restore(prefix)


def test_missing_files(tmp_path):
    with pytest.raises(errors.NotFoundError, match="nope.index"):
        restore_sample(str(tmp_path / "nope"))
    prefix = write_sample(tmp_path)
    os.remove(prefix + ".data-00000-of-00001")
    with pytest.raises(errors.NotFoundError, match="data-00000-of-00001"):
        restore_sample(prefix)


@pytest.mark.parametrize("cut", [0, 10, 47, 100, -1])
def test_truncated_index(tmp_path, cut):
    prefix = write_sample(tmp_path)
    data = open(prefix + ".index", "rb").read()
    open(prefix + ".index", "wb").write(data[:cut])
    with pytest.raises(errors.DataLossError, match=r"s\.index"):
        restore_sample(prefix)


def test_truncated_data(tmp_path):
    prefix = write_sample(tmp_path)
    data = open(prefix + ".data-00000-of-00001", "rb").read()
    open(prefix + ".data-00000-of-00001", "wb").write(data[:-5])
    with pytest.raises(errors.DataLossError, match="data-00000-of-00001.*truncated"):
        restore_sample(prefix)


def test_bit_flip_in_data_is_a_checksum_error(tmp_path):
    prefix = write_sample(tmp_path)
    path = prefix + ".data-00000-of-00001"
    data = bytearray(open(path, "rb").read())
    data[5] ^= 0x10
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError, match="checksum mismatch"):
        restore_sample(prefix)


def rewrite_entry(prefix, key, **changes):
    """Rewrites one BundleEntryProto of a checkpoint (with valid table checksums: a hostile file)."""
    reader = ember._C.BundleReader.open(prefix)
    entries = {}
    for k in reader.keys():
        entries[k] = (reader.tf_dtype(k), reader.dims(k))
    del reader
    entry_cls = protos.message_class("BundleEntryProto")
    raw = _read_table(prefix + ".index")
    entry = entry_cls.FromString(raw[key])
    for field, value in changes.items():
        if field == "dims":
            del entry.shape.dim[:]
            for d in value:
                entry.shape.dim.add(size=d)
        else:
            setattr(entry, field, value)
    raw[key] = entry.SerializeToString()
    _write_table(prefix + ".index", raw)


def _read_table(path):
    import leveldb_table
    return leveldb_table.read(path)


def _write_table(path, entries):
    import leveldb_table
    leveldb_table.write(path, entries)


@pytest.mark.parametrize("changes, message", [
    ({"size": 1 << 60}, "claims bytes"),
    ({"offset": 1 << 62}, "claims bytes"),
    ({"offset": -4}, "offset -4"),
    ({"dims": [1 << 40, 1 << 40]}, "too large"),
    ({"dims": [1 << 20, 1 << 20]}, "but its entry says 48 bytes"),
    ({"dims": [-1, 4]}, "unknown dimension"),
    ({"dtype": 2}, "float64 of 12 elements"),
    ({"dtype": 11}, "DataType 11"),  # DT_QINT8 (8, DT_COMPLEX64, is read since complex support)
    ({"shard_id": 3}, "shard 3 of 1"),
])
def test_hostile_entries(tmp_path, changes, message):
    prefix = write_sample(tmp_path)
    rewrite_entry(prefix, "m/w/.ATTRIBUTES/VARIABLE_VALUE", **changes)
    with pytest.raises(errors.OpError, match=message) as info:
        restore_sample(prefix)
    assert "s.index" in str(info.value) or "s.data" in str(info.value) or prefix in str(info.value)


def test_hostile_object_graph(tmp_path):
    prefix = write_sample(tmp_path)
    graph = object_graph(prefix)
    graph.nodes[0].children.add(node_id=99, local_name="ghost")
    writer = ember._C.BundleWriter(str(tmp_path / "g"))
    reader = ember.train.load_checkpoint(prefix)
    for key in ("m/w/.ATTRIBUTES/VARIABLE_VALUE", "m/s/.ATTRIBUTES/VARIABLE_VALUE"):
        writer.add(key, reader._tensor(key))
    writer.add_strings("_CHECKPOINTABLE_OBJECT_GRAPH", [graph.SerializeToString()])
    writer.finish()
    with pytest.raises(errors.DataLossError, match="child node 99"):
        restore_sample(str(tmp_path / "g"))
    # a cycle (a node its own child) is fine: matching visits each node once
    graph = object_graph(prefix)
    graph.nodes[1].children.add(node_id=0, local_name="loop")
    writer = ember._C.BundleWriter(str(tmp_path / "c"))
    for key in ("m/w/.ATTRIBUTES/VARIABLE_VALUE", "m/s/.ATTRIBUTES/VARIABLE_VALUE"):
        writer.add(key, reader._tensor(key))
    writer.add_strings("_CHECKPOINTABLE_OBJECT_GRAPH", [b"\xff\xff garbage"])
    writer.finish()
    with pytest.raises(errors.DataLossError, match="not a valid TrackableObjectGraph"):
        restore_sample(str(tmp_path / "c"))


def test_name_based_checkpoint_is_a_clear_error(tmp_path):
    writer = ember._C.BundleWriter(str(tmp_path / "n"))
    writer.add("dense/kernel", ember.constant([1.0]))
    writer.finish()
    with pytest.raises(errors.NotFoundError, match="no object graph"):
        restore_sample(str(tmp_path / "n"))


def test_crc32c_known_values():
    assert ember._C.crc32c(b"123456789") == 0xE3069283
    assert ember._C.crc32c(b"") == 0
    assert ember._C.crc32c(bytes(32)) == 0x8A9136AA
    assert struct.pack("<I", ember._C.crc32c(b"\xff" * 32)) == struct.pack("<I", 0x62A8AB43)


def test_checkpoints_iterator_follows_new_checkpoints(tmp_path):
    import threading

    v = ember.Variable(1.0)
    ckpt = ember.train.Checkpoint(v=v)
    assert list(ember.train.checkpoints_iterator(str(tmp_path), timeout=0.2)) == []
    first = ckpt.save(str(tmp_path / "ckpt"))
    it = ember.train.checkpoints_iterator(str(tmp_path), timeout=5)
    assert next(it) == first

    def save_later():
        time.sleep(0.3)
        v.assign(2.0)
        ckpt.save(str(tmp_path / "ckpt"))

    saver = threading.Thread(target=save_later)
    saver.start()
    second = next(it)
    saver.join()
    assert second.endswith("ckpt-2") and second != first
    reader = ember.train.load_checkpoint(second)
    assert reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE") == 2.0


def test_checkpoints_iterator_timeout_fn_decides_whether_to_keep_waiting(tmp_path):
    calls = []

    def timeout_fn():
        calls.append(1)
        return len(calls) >= 3

    assert list(ember.train.checkpoints_iterator(str(tmp_path), timeout=0.05, timeout_fn=timeout_fn)) == []
    assert len(calls) == 3


def test_a_written_checkpoint_without_save_counter_is_consumed(tmp_path):
    """Checkpoint.write saves no save_counter; reading it back must not count the counter as unmatched (as
    TensorFlow, whose counter is made lazily). A saved one is restored and consumed."""
    path = ember.train.Checkpoint(v=ember.Variable(1.0)).write(str(tmp_path / "w"))
    ember.train.Checkpoint(v=ember.Variable(2.0)).read(path).assert_consumed()
    saver = ember.train.Checkpoint(v=ember.Variable(1.0))
    saver.save(str(tmp_path / "s"))
    saved = saver.save(str(tmp_path / "s"))
    reader = ember.train.Checkpoint(v=ember.Variable(2.0))
    reader.restore(saved).assert_consumed()
    assert int(reader.save_counter.numpy()) == 2


def test_synced_and_unsynced_saves_round_trip(tmp_path):
    # Default saves fsync data, index and directory (the specification); CheckpointOptions(
    # experimental_sync=False) skips the fsyncs, as TensorFlow's saves. Both must write the same restorable
    # checkpoint, through write, save and CheckpointManager.save.
    v = ember.Variable(np.arange(6, dtype=np.float32))
    ckpt = ember.train.Checkpoint(v=v)
    unsynced = ember.train.CheckpointOptions(experimental_sync=False)
    assert ember.train.CheckpointOptions().experimental_sync and not unsynced.experimental_sync
    paths = [ckpt.write(str(tmp_path / "plain")), ckpt.write(str(tmp_path / "unsynced"), options=unsynced),
             ckpt.save(str(tmp_path / "numbered"), options=unsynced),
             ember.train.CheckpointManager(ckpt, str(tmp_path / "managed"), max_to_keep=1).save(options=unsynced)]
    for path in paths:
        target = ember.Variable(np.zeros(6, np.float32))
        ember.train.Checkpoint(v=target).read(path).expect_partial()
        np.testing.assert_array_equal(target.numpy(), np.arange(6, dtype=np.float32))
    assert not [f for f in os.listdir(tmp_path) if "tempstate" in f]


def test_rewriting_a_prefix_leaves_no_temporary_files_after_exit(tmp_path):
    # A replaced file's name goes at once and its space is freed in the background (Note [Replacing a large
    # file] in tensor_bundle.cc): nothing may be left behind, in a forked child too.
    import subprocess
    import sys

    program = r"""
import os, sys
import numpy as np
import ember as tf
prefix = sys.argv[1]
v = tf.Variable(np.zeros(1 << 18, np.float32))
ckpt = tf.train.Checkpoint(v=v)
for k in range(3):
    v.assign(tf.fill([1 << 18], float(k)))
    ckpt.write(prefix)
pid = os.fork()
if pid == 0:  # no kernels here: GNU OpenMP's thread pool does not survive a fork
    ckpt.write(prefix + "_child")
    ckpt.write(prefix + "_child")
    sys.exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    # with this interpreter's flags: -S only where the parent has it (then PYTHONPATH finds this ember)
    proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", program,
                           str(tmp_path / "ckpt")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.data-00000-of-00001", "ckpt.index",
                                           "ckpt_child.data-00000-of-00001", "ckpt_child.index"]
    for prefix, value in (("ckpt", 2.0), ("ckpt_child", 2.0)):
        restored = ember.Variable(np.ones(1 << 18, np.float32))
        ember.train.Checkpoint(v=restored).read(str(tmp_path / prefix)).assert_consumed()
        assert np.all(restored.numpy() == value)


def test_a_tensor_over_shared_memory_is_saved_as_it_was_when_added(tmp_path):
    # A DLPack import shares NumPy's memory; the writer keeps tensors until finish, so it copies such a one.
    array = np.ones(4, np.float32)
    shared = ember.experimental.dlpack.from_dlpack(array.__dlpack__())
    writer = ember._C.BundleWriter(str(tmp_path / "w"), False)
    writer.add("v", shared)
    array[:] = 7.0
    writer.finish()
    assert ember.train.load_checkpoint(str(tmp_path / "w")).get_tensor("v").tolist() == [1.0] * 4

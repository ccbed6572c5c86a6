"""Checkpoints interchange with TensorFlow 2: the same model written with tf.Module / tf.Variable /
tf.keras optimizers restores what ember saved, and ember restores what TensorFlow saved, key for key."""

import numpy as np
import pytest
import tensorflow as tf

import ember

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def values_of(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(0, 100, shape)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorflow_reads_every_dtype_ember_writes(tmp_path, dtype):
    value = ember.constant(values_of(dtype), dtype=getattr(ember, dtype))
    writer = ember._C.BundleWriter(str(tmp_path / "b"))
    writer.add("x", value)
    writer.add("scalar", ember.constant(values_of(dtype, ()), dtype=getattr(ember, dtype)))
    writer.add("empty", ember.constant(values_of(dtype, (0, 4)), dtype=getattr(ember, dtype)))
    writer.finish()
    reader = tf.train.load_checkpoint(str(tmp_path / "b"))
    assert reader.get_variable_to_dtype_map()["x"].name == dtype
    assert reader.get_variable_to_shape_map() == {"x": [2, 3], "scalar": [], "empty": [0, 4]}
    np.testing.assert_array_equal(np.asarray(reader.get_tensor("x")).astype(np.float64),
                                  value.numpy().astype(np.float64))
    assert np.asarray(reader.get_tensor("empty")).shape == (0, 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ember_reads_every_dtype_tensorflow_writes(tmp_path, dtype):
    value = tf.constant(values_of(dtype, (3, 2), seed=1), dtype=getattr(tf, dtype))
    tf.train.Checkpoint(v=tf.Variable(value), s=tf.Variable(tf.constant(values_of(dtype, ()), dtype=getattr(tf, dtype)))).write(
        str(tmp_path / "c"))
    reader = ember.train.load_checkpoint(str(tmp_path / "c"))
    assert reader.get_variable_to_dtype_map()["v/.ATTRIBUTES/VARIABLE_VALUE"] == getattr(ember, dtype)
    np.testing.assert_array_equal(reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE").astype(np.float64),
                                  value.numpy().astype(np.float64))
    assert reader.get_tensor("s/.ATTRIBUTES/VARIABLE_VALUE").shape == ()


def test_strings_both_ways(tmp_path):
    writer = ember._C.BundleWriter(str(tmp_path / "e"))
    writer.add_strings("s", [b"x", b"", b"\x00\xffz" * 100, b"q"], [2, 2])
    writer.add_strings("one", [b"hello"])
    writer.finish()
    reader = tf.train.load_checkpoint(str(tmp_path / "e"))
    assert reader.get_tensor("s").tolist() == [[b"x", b""], [b"\x00\xffz" * 100, b"q"]]
    assert reader.get_tensor("one") == b"hello"
    tf.train.Checkpoint(v=tf.Variable([[b"a", b"bc"], [b"", b"d" * 300]])).write(str(tmp_path / "t"))
    got = ember.train.load_checkpoint(str(tmp_path / "t")).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")
    assert got.tolist() == [[b"a", b"bc"], [b"", b"d" * 300]]


def test_a_large_checkpoint_is_sharded_and_read_both_ways(tmp_path):
    """Over 128 MiB, ember writes one data shard per intra-op thread in parallel; TensorFlow restores every
    variable from the shards, and a TensorFlow model's save reads back in ember."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal((3 << 20) * 4 + i, dtype=np.float32) for i in range(3)]  # 3 x 48 MiB
    before = ember.config.threading.get_intra_op_parallelism_threads()
    ember.config.threading.set_intra_op_parallelism_threads(2)
    try:
        module = ember.Module()
        module.weights = [ember.Variable(v) for v in values]
        ember.train.Checkpoint(model=module).write(str(tmp_path / "big"))
    finally:
        ember.config.threading.set_intra_op_parallelism_threads(before)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "big.data-00000-of-00002", "big.data-00001-of-00002", "big.index"]
    theirs = tf.Module()
    theirs.weights = [tf.Variable(np.zeros_like(v)) for v in values]
    tf.train.Checkpoint(model=theirs).read(str(tmp_path / "big")).assert_consumed()
    for variable, value in zip(theirs.weights, values):
        np.testing.assert_array_equal(variable.numpy(), value)
    mine = ember.Module()
    mine.weights = [ember.Variable(np.zeros_like(v)) for v in values]
    ember.train.Checkpoint(model=mine).read(str(tmp_path / "big")).assert_consumed()
    for variable, value in zip(mine.weights, values):
        np.testing.assert_array_equal(variable.numpy(), value)


def test_list_variables_and_object_graph_match_tensorflow(tmp_path):
    tf.train.Checkpoint(a=tf.Variable([1.0, 2.0]), b=tf.Variable(3)).save(str(tmp_path / "tf" / "ck"))
    ember.train.Checkpoint(a=ember.Variable([1.0, 2.0]), b=ember.Variable(3)).save(str(tmp_path / "em" / "ck"))
    assert ember.train.list_variables(str(tmp_path / "em")) == tf.train.list_variables(str(tmp_path / "tf"))
    assert ember.train.list_variables(str(tmp_path / "tf")) == tf.train.list_variables(str(tmp_path / "tf"))
    assert tf.train.latest_checkpoint(str(tmp_path / "em")) == str(tmp_path / "em" / "ck-1")
    assert ember.train.latest_checkpoint(str(tmp_path / "tf")) == str(tmp_path / "tf" / "ck-1")


def make_model(lib, seed):
    rng = np.random.default_rng(seed)

    class Dense(lib.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            self.kernel = lib.Variable(rng.standard_normal((n_in, n_out)).astype(np.float32), name="kernel")
            self.bias = lib.Variable(np.zeros(n_out, np.float32), name="bias")

        def __call__(self, x):
            return lib.matmul(x, self.kernel) + self.bias

    class MLP(lib.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(3, 4, "d0"), Dense(4, 2, "d1")]
            self.extra = {"scale": lib.Variable(2.0), "steps": lib.Variable(0, dtype=lib.int64, trainable=False)}

        def __call__(self, x):
            for layer in self.layers:
                x = lib.nn.relu(layer(x))
            return x * self.extra["scale"]

    return MLP()


def train(lib, model, optimizer, steps):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    for _ in range(steps):
        with lib.GradientTape() as tape:
            loss = lib.reduce_sum(lib.square(model(x) - 1.0))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        model.extra["steps"].assign_add(1)
    return model(x).numpy()


def state(ckpt_dir):
    reader = tf.train.load_checkpoint(ckpt_dir)
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if "OBJECT_GRAPH" not in k}


@pytest.mark.parametrize("optimizer", ["Adam", "SGD"])
def test_tensorflow_restores_an_ember_model_and_optimizer(tmp_path, optimizer):
    kwargs = {"momentum": 0.9} if optimizer == "SGD" else {}
    em_model = make_model(ember, 0)
    em_opt = getattr(ember.keras.optimizers, optimizer)(0.05, **kwargs)
    train(ember, em_model, em_opt, 3)
    path = ember.train.Checkpoint(model=em_model, optimizer=em_opt).save(str(tmp_path / "ck"))

    tf_model = make_model(tf, 1)
    tf_opt = getattr(tf.keras.optimizers, optimizer)(0.05, **kwargs)
    status = tf.train.Checkpoint(model=tf_model, optimizer=tf_opt).restore(path)
    status.assert_existing_objects_matched()
    train(tf, tf_model, tf_opt, 0)
    tf_opt.build(tf_model.trainable_variables)  # slots made after the restore take their saved values
    status.assert_consumed()
    # both continue training from the same state to the same values
    np.testing.assert_allclose(train(tf, tf_model, tf_opt, 2), train(ember, em_model, em_opt, 2), rtol=1e-5)
    assert int(tf_opt.iterations.numpy()) == 5


@pytest.mark.parametrize("optimizer", ["Adam", "SGD"])
def test_ember_restores_a_tensorflow_model_and_optimizer(tmp_path, optimizer):
    kwargs = {"momentum": 0.9} if optimizer == "SGD" else {}
    tf_model = make_model(tf, 0)
    tf_opt = getattr(tf.keras.optimizers, optimizer)(0.05, **kwargs)
    train(tf, tf_model, tf_opt, 3)
    tf.train.Checkpoint(model=tf_model, optimizer=tf_opt).save(str(tmp_path / "ck"))

    em_model = make_model(ember, 1)
    em_opt = getattr(ember.keras.optimizers, optimizer)(0.05, **kwargs)
    ckpt = ember.train.Checkpoint(model=em_model, optimizer=em_opt)
    status = ckpt.restore(ember.train.latest_checkpoint(str(tmp_path)))
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()  # the optimizer's slots do not exist yet
    out_em = train(ember, em_model, em_opt, 2)  # the first step makes the slots: restored on creation
    status.assert_consumed()
    np.testing.assert_allclose(out_em, train(tf, tf_model, tf_opt, 2), rtol=1e-5)
    assert int(ckpt.save_counter.numpy()) == 1
    # and the saved values round-trip key for key
    ckpt.write(str(tmp_path / "again"))
    tf.train.Checkpoint(model=tf_model, optimizer=tf_opt).write(str(tmp_path / "tf_again"))
    mine, theirs = state(str(tmp_path / "again")), state(str(tmp_path / "tf_again"))
    assert mine.pop("save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 1  # made by restore; TF's fresh one has none
    assert sorted(mine) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(mine[key], theirs[key], rtol=1e-5, err_msg=key)


def test_checkpoint_manager_state_is_tensorflows(tmp_path):
    v = ember.Variable(1.0)
    manager = ember.train.CheckpointManager(ember.train.Checkpoint(v=v), str(tmp_path), max_to_keep=2)
    for _ in range(3):
        v.assign_add(1.0)
        manager.save()
    tf_v = tf.Variable(0.0)
    tf_manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf_v), str(tmp_path), max_to_keep=2)
    assert tf_manager.checkpoints == manager.checkpoints == [str(tmp_path / "ckpt-2"), str(tmp_path / "ckpt-3")]
    tf_manager.restore_or_initialize()
    assert tf_v.numpy() == 4.0


def test_ember_writes_the_bytes_tensorflow_writes(tmp_path):
    """The same model and optimizer state saved by both: the index and data files are byte-identical."""
    def save(lib, directory):
        m = lib.Module()
        m.dense = [lib.Variable(np.ones((3, 4), np.float32)), lib.Variable(np.zeros(4, np.float32))]
        m.table = {"ids": lib.Variable(np.arange(5, dtype=np.int64)), "flag": lib.Variable(True)}
        optimizer = lib.keras.optimizers.Adam(0.5, name="adam")  # full names hold it: no global counter
        with lib.GradientTape() as tape:
            loss = lib.reduce_sum(lib.matmul(lib.ones((1, 3)), m.dense[0]) + m.dense[1])
        optimizer.apply_gradients(zip(tape.gradient(loss, m.dense), m.dense))
        return lib.train.Checkpoint(model=m, optimizer=optimizer).save(str(directory / "ck"))

    mine, theirs = save(ember, tmp_path / "em"), save(tf, tmp_path / "tf")
    for suffix in (".index", ".data-00000-of-00001"):
        assert open(mine + suffix, "rb").read() == open(theirs + suffix, "rb").read(), suffix
    assert open(tmp_path / "em" / "checkpoint").read() == open(tmp_path / "tf" / "checkpoint").read()


def test_messages_carry_tensorflows_field_numbers():
    from tensorflow.core.protobuf import tensor_bundle_pb2, trackable_object_graph_pb2
    from tensorflow.python.training import checkpoint_state_pb2
    from test_graph_def_tf import _check_message

    from ember.framework import protos
    theirs = {"BundleHeaderProto": tensor_bundle_pb2.BundleHeaderProto,
              "BundleEntryProto": tensor_bundle_pb2.BundleEntryProto,
              "TrackableObjectGraph": trackable_object_graph_pb2.TrackableObjectGraph,
              "RegisteredSaver": trackable_object_graph_pb2.RegisteredSaver,
              "CheckpointState": checkpoint_state_pb2.CheckpointState}
    for name, cls in theirs.items():
        ours = protos.message_class(name).DESCRIPTOR
        assert ours.full_name == "ember.proto." + name
        _check_message(ours, cls.DESCRIPTOR, name)

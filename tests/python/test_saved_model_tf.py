"""SavedModels between ember and TensorFlow 2.21 (issue 16, part 2): TensorFlow loads what ember saves and
computes the same outputs (functions, signatures, variables), ember loads what TensorFlow saves (a
tf.Module with variables and tf.functions, a tf_keras MLP, the L2HMC model) and runs it, and ember's
SavedModel messages carry TensorFlow's field numbers. TensorFlow and tf_keras are installed by the test
command (scripts/install_deps.sh --test), so nothing here is skipped."""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember.framework import protos

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import l2hmc_model as l2  # noqa: E402


def _tf_messages():
    from tensorflow.core.protobuf import (fingerprint_pb2, meta_graph_pb2, saved_model_pb2, saved_object_graph_pb2,
                                          saver_pb2, struct_pb2)
    return [saved_model_pb2.SavedModel, meta_graph_pb2.MetaGraphDef, meta_graph_pb2.SignatureDef,
            meta_graph_pb2.TensorInfo, meta_graph_pb2.CollectionDef, meta_graph_pb2.AssetFileDef,
            saver_pb2.SaverDef, fingerprint_pb2.FingerprintDef, saved_object_graph_pb2.SavedObjectGraph,
            saved_object_graph_pb2.SavedObject, saved_object_graph_pb2.SavedUserObject,
            saved_object_graph_pb2.SavedFunction, saved_object_graph_pb2.SavedConcreteFunction,
            saved_object_graph_pb2.SavedBareConcreteFunction, saved_object_graph_pb2.SavedVariable,
            saved_object_graph_pb2.FunctionSpec, saved_object_graph_pb2.CapturedTensor,
            saved_object_graph_pb2.SaveableObject, struct_pb2.StructuredValue, struct_pb2.TensorSpecProto,
            struct_pb2.TypeSpecProto, struct_pb2.NamedTupleValue, struct_pb2.DictValue, struct_pb2.PairValue]


def _check_fields(tf_descriptor, ours, path):
    for field in ours.fields:
        theirs = tf_descriptor.fields_by_name.get(field.name)
        assert theirs is not None, f"{path}.{field.name}: TensorFlow has no such field"
        assert (field.number, field.type) == (theirs.number, theirs.type), f"{path}.{field.name}"
        assert field.is_repeated == theirs.is_repeated, f"{path}.{field.name}"
    for nested in ours.nested_types:
        if not nested.GetOptions().map_entry:
            _check_fields(tf_descriptor.nested_types_by_name[nested.name], nested, f"{path}.{nested.name}")


def test_messages_carry_tensorflows_field_numbers():
    for message in _tf_messages():
        name = message.DESCRIPTOR.name
        _check_fields(message.DESCRIPTOR, protos.message_class(name).DESCRIPTOR, name)


class _EmberMLP(em.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = em.Variable(rng.normal(size=(3, 16)).astype(np.float32))
        self.b1 = em.Variable(rng.normal(size=(16,)).astype(np.float32))
        self.head = [em.Variable(rng.normal(size=(16, 2)).astype(np.float32))]

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def __call__(self, x):
        return em.matmul(em.nn.relu(em.matmul(x, self.w1) + self.b1), self.head[0])

    @em.function
    def pair(self, x, scale=3.0):
        return {"doubled": self.__call__(x) * scale, "rows": em.shape(x)[0]}


def _x(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3)).astype(np.float32)


def test_tensorflow_loads_an_ember_saved_model(tmp_path):
    m = _EmberMLP()
    m.pair(em.constant(_x(4)))
    path = str(tmp_path / "ember_mlp")
    em.saved_model.save(m, path)
    loaded = tf.saved_model.load(path)
    for n in (1, 4, 9):  # the signature's None batch dimension
        np.testing.assert_allclose(loaded(tf.constant(_x(n))).numpy(), m(em.constant(_x(n))).numpy(), rtol=1e-5, atol=1e-5)
    sig = loaded.signatures["serving_default"](x=tf.constant(_x(5)))
    assert list(sig) == ["output_0"]
    np.testing.assert_allclose(sig["output_0"].numpy(), m(em.constant(_x(5))).numpy(), rtol=1e-5, atol=1e-5)
    out = loaded.pair(tf.constant(_x(4)))
    np.testing.assert_allclose(out["doubled"].numpy(), m.pair(em.constant(_x(4)))["doubled"].numpy(), rtol=1e-5, atol=1e-5)
    assert int(out["rows"]) == 4
    np.testing.assert_array_equal(loaded.head[0].numpy(), m.head[0].numpy())
    np.testing.assert_array_equal(loaded.b1.numpy(), m.b1.numpy())


def _l2hmc_inputs():
    rng = np.random.default_rng(1)
    x0, v0 = (rng.normal(size=(l2.BATCH, l2.D)).astype(np.float32) for _ in range(2))
    return x0, v0, rng.uniform(size=(l2.BATCH,)).astype(np.float32)


def _l2hmc_module(framework):
    class L2HMC(framework.Module):
        def __init__(self):
            super().__init__()
            self.params = [framework.Variable(p) for p in l2.l2hmc_params(np.random.default_rng(0))]

        @framework.function(input_signature=[framework.TensorSpec([l2.BATCH, l2.D], framework.float32)] * 2 +
                            [framework.TensorSpec([l2.BATCH], framework.float32)])
        def transition(self, x0, v0, u):
            return l2.tf_style(framework, self.params).transition(x0, v0, u)

    return L2HMC()


def test_tensorflow_runs_the_ember_l2hmc_saved_model(tmp_path):
    m = _l2hmc_module(em)
    em.saved_model.save(m, str(tmp_path / "l2hmc"))
    loaded = tf.saved_model.load(str(tmp_path / "l2hmc"))
    inputs = _l2hmc_inputs()
    want = m.transition(*[em.constant(a) for a in inputs])
    got = loaded.signatures["serving_default"](x0=inputs[0], v0=inputs[1], u=inputs[2])
    np.testing.assert_allclose(got["output_0"].numpy(), want[0].numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["output_1"].numpy(), want[1].numpy(), rtol=1e-4, atol=1e-5)


class _TfModule(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
        self.b = tf.Variable([0.5, -0.5], name="b")
        self.count = tf.Variable(0, name="count")

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)

    @tf.function
    def scale(self, x, k=2.0):
        return {"y": x * k, "sum": tf.reduce_sum(x)}

    @tf.function(input_signature=[])
    def increment(self):
        self.count.assign_add(1)
        return self.count.read_value()


def test_ember_loads_a_tensorflow_module(tmp_path):
    m = _TfModule()
    m.scale(tf.constant([1.0, 2.0]))
    m.scale(tf.constant([1.0, 2.0]), 3.0)
    path = str(tmp_path / "tf_module")
    tf.saved_model.save(m, path, signatures={"serving_default": m.__call__, "inc": m.increment})
    loaded = em.saved_model.load(path)
    x = np.array([[1.0, -1.0], [0.5, 2.0], [3.0, 0.0]], np.float32)
    np.testing.assert_allclose(loaded(em.constant(x)).numpy(), m(tf.constant(x)).numpy(), rtol=1e-6)
    sig = loaded.signatures["serving_default"](x=em.constant(x))
    np.testing.assert_allclose(sig["output_0"].numpy(), m(tf.constant(x)).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(loaded.scale(em.constant([1.0, 2.0]))["y"].numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(loaded.scale(em.constant([1.0, 2.0]), 3.0)["y"].numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(loaded.w.numpy(), m.w.numpy())
    assert int(loaded.signatures["inc"]()["output_0"]) == 1 and int(loaded.count.numpy()) == 1
    with pytest.raises(ValueError, match="Option 1"):
        loaded.scale(em.constant([1.0, 2.0]), 5.0)  # traced for k=2.0 and 3.0 only


def test_ember_loads_a_tf_keras_mlp(tmp_path):
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.Sequential([tf_keras.layers.Dense(16, activation="relu", input_shape=(3,)),
                                 tf_keras.layers.Dense(4, activation="tanh"), tf_keras.layers.Dense(2)])
    path = str(tmp_path / "keras_mlp")
    tf.saved_model.save(model, path)
    loaded = em.saved_model.load(path)
    signature = loaded.signatures["serving_default"]
    (name,) = signature._keywords
    x = _x(6, seed=2)
    out = signature(**{name: em.constant(x)})
    (key,) = out
    np.testing.assert_allclose(out[key].numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(loaded.variables) == 6


def test_ember_runs_a_tensorflow_l2hmc_saved_model(tmp_path):
    m = _l2hmc_module(tf)
    tf.saved_model.save(m, str(tmp_path / "tf_l2hmc"))
    loaded = em.saved_model.load(str(tmp_path / "tf_l2hmc"))
    inputs = _l2hmc_inputs()
    want = m.transition(*inputs)
    got = loaded.transition(*[em.constant(a) for a in inputs])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_nested_inputs_and_outputs_both_ways(tmp_path):
    class Nested(em.Module):
        def __init__(self):
            super().__init__()
            self.v = em.Variable(2.0)

        @em.function
        def f(self, inputs, pair):
            return (inputs["a"] * self.v + pair[1], [inputs["b"]])

    m = Nested()
    a, b = np.ones(3, np.float32), np.arange(3, dtype=np.float32)
    m.f({"a": em.constant(a), "b": em.constant(b)}, (1, em.constant(5.0)))
    signature = m.f.get_concrete_function({"a": em.TensorSpec([None]), "b": em.TensorSpec([None])},
                                          (1, em.TensorSpec([])))
    path = str(tmp_path / "nested")
    em.saved_model.save(m, path, signatures=signature)
    for framework in (tf, em):
        loaded = framework.saved_model.load(path)
        first, (second,) = loaded.f({"a": framework.constant(a), "b": framework.constant(b)},
                                    (1, framework.constant(5.0)))
        np.testing.assert_array_equal(first.numpy(), a * 2.0 + 5.0)
        np.testing.assert_array_equal(second.numpy(), b)
        out = loaded.signatures["serving_default"](inputs__a=framework.constant(a), inputs__b=framework.constant(b),
                                                   pair_1=framework.constant(5.0))
        np.testing.assert_array_equal(out["output_0"].numpy(), a * 2.0 + 5.0)
        np.testing.assert_array_equal(out["output_1"].numpy(), b)


def test_a_loaded_tensorflow_model_saved_again_by_ember_loads_in_both(tmp_path):
    m = _TfModule()
    m.scale(tf.constant([1.0, 2.0]))
    tf.saved_model.save(m, str(tmp_path / "tf"), signatures={"serving_default": m.__call__})
    loaded = em.saved_model.load(str(tmp_path / "tf"))
    loaded.w.assign(np.eye(2, dtype=np.float32))  # the new SavedModel holds the current values
    em.saved_model.save(loaded, str(tmp_path / "again"))
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    want = np.maximum(x @ np.eye(2) + [0.5, -0.5], 0)
    for framework in (em, tf):
        again = framework.saved_model.load(str(tmp_path / "again"))
        np.testing.assert_allclose(again(framework.constant(x)).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(again.signatures["serving_default"](x=framework.constant(x))["output_0"].numpy(),
                                   want, rtol=1e-6)
        np.testing.assert_array_equal(again.scale(framework.constant([1.0, 2.0]))["y"].numpy(), [2.0, 4.0])


def _control_flow_module(framework):
    class Loop(framework.Module):
        def __init__(self):
            super().__init__()
            self.v = framework.Variable(0.5)

        @framework.function(input_signature=[framework.TensorSpec([], framework.int32),
                                             framework.TensorSpec([None], framework.float32)])
        def loop(self, n, x):
            def body(i, x):
                return i + 1, framework.cond(framework.reduce_sum(x) > 10.0, lambda: x * self.v, lambda: x + 1.0)

            return framework.while_loop(lambda i, x: i < n, body, (0, x))[1]

    return Loop()


@pytest.mark.parametrize("writer", ["ember", "tensorflow"])
def test_control_flow_reading_variables_both_ways(tmp_path, writer):
    m = _control_flow_module(em if writer == "ember" else tf)
    (em if writer == "ember" else tf).saved_model.save(m, str(tmp_path / "loop"))
    x = np.array([1.0, 2.0], np.float32)
    want = [5.9375, 6.0]  # +1 until the sum passes 10, then halved by the variable, 20 steps
    for framework in (tf, em):
        loaded = framework.saved_model.load(str(tmp_path / "loop"))
        np.testing.assert_allclose(loaded.loop(framework.constant(20), framework.constant(x)).numpy(), want)
        out = loaded.signatures["serving_default"](n=framework.constant(20), x=framework.constant(x))
        np.testing.assert_allclose(out["output_0"].numpy(), want)


def test_saved_model_constants_are_tensorflows():
    names = [n for n in dir(tf.saved_model) if n.isupper()]
    assert len(names) > 20
    for name in names:
        assert getattr(em.saved_model, name) == getattr(tf.saved_model, name), name


def test_tensorflows_graph_mode_loader_restores_and_serves_an_ember_saved_model(tmp_path):
    # The path of TensorFlow Serving and other languages' bindings (LoadSavedModel): import the
    # MetaGraphDef, run saver_def's restore op, then run the signature's tensors.
    m = _EmberMLP()
    path = str(tmp_path / "ember_mlp")
    em.saved_model.save(m, path)
    x = _x(5, seed=4)
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        out = sess.run(signature.outputs["output_0"].name, {signature.inputs["x"].name: x})
    np.testing.assert_allclose(out, m(em.constant(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_captured_constants_load_and_save_again(tmp_path):
    c = tf.constant([10.0, 20.0])

    class Captures(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            return x * self.v + c  # TensorFlow saves c as a SavedConstant bound to the function

    tf.saved_model.save(Captures(), str(tmp_path / "tf"))
    loaded = em.saved_model.load(str(tmp_path / "tf"))
    np.testing.assert_array_equal(loaded.f(em.constant([1.0, 2.0])).numpy(), [12.0, 24.0])
    em.saved_model.save(loaded, str(tmp_path / "again"))
    for framework in (em, tf):
        again = framework.saved_model.load(str(tmp_path / "again"))
        np.testing.assert_array_equal(again.f(framework.constant([1.0, 2.0])).numpy(), [12.0, 24.0])
        out = again.signatures["serving_default"](x=framework.constant([1.0, 2.0]))
        np.testing.assert_array_equal(out["output_0"].numpy(), [12.0, 24.0])

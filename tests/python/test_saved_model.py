"""ember.saved_model round trips within ember (issue 16, part 2): objects, variables, functions and their
traces, signatures with None dimensions, the seed's export/import spelling, atomic replacement."""

import os
import sys

import numpy as np
import pytest

import ember as tf
from ember.saved_model.loader import read_saved_model

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))


class Dense(tf.Module):
    def __init__(self, n_in, n_out, seed, name=None):
        super().__init__(name=name)
        rng = np.random.default_rng(seed)
        self.w = tf.Variable(rng.normal(size=(n_in, n_out)).astype(np.float32), name="w")
        self.b = tf.Variable(rng.normal(size=(n_out,)).astype(np.float32), name="b")

    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class MLP(tf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(3, 8, 0), Dense(8, 2, 1)]
        self.steps = tf.Variable(0, trainable=False, name="steps")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        return self.layers[1](tf.nn.relu(self.layers[0](x)))

    @tf.function
    def scaled(self, x, k=2.0):
        return {"y": self.__call__(x) * k, "n": tf.shape(x)[0]}

    @tf.function
    def bump(self):
        self.steps.assign_add(1)
        return self.steps.read_value()


def _x(n=4, seed=3):
    return tf.constant(np.random.default_rng(seed).normal(size=(n, 3)).astype(np.float32))


def test_module_round_trip_functions_variables_and_signature(tmp_path):
    m = MLP()
    m.layers[0].b.assign(np.arange(8, dtype=np.float32))  # saved values are the current ones
    m.scaled(_x(4))
    m.bump()
    path = str(tmp_path / "mlp")
    tf.saved_model.save(m, path)
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.pb", "saved_model.pb", "variables"]
    loaded = tf.saved_model.load(path)

    x = _x(4)
    np.testing.assert_allclose(loaded(x).numpy(), m(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(loaded(_x(7, 5)).numpy(), m(_x(7, 5)).numpy(), rtol=1e-6)  # None batch
    out = loaded.scaled(x)
    np.testing.assert_allclose(out["y"].numpy(), m.scaled(x)["y"].numpy(), rtol=1e-6)
    assert int(out["n"]) == 4
    sig = loaded.signatures["serving_default"](x=x)
    assert list(sig) == ["output_0"]
    np.testing.assert_allclose(sig["output_0"].numpy(), m(x).numpy(), rtol=1e-6)

    np.testing.assert_array_equal(loaded.layers[0].b.numpy(), np.arange(8, dtype=np.float32))
    assert len(loaded.variables) == 5 and len(loaded.trainable_variables) == 4
    # Restored variables are live: a restored function that updates one updates it.
    assert int(loaded.steps.numpy()) == 1
    assert int(loaded.bump()) == 2 and int(loaded.steps.numpy()) == 2
    loaded.layers[1].b.assign(np.zeros(2, np.float32))
    np.testing.assert_allclose(loaded(x).numpy(), (m(x) - m.layers[1].b).numpy(), rtol=1e-5, atol=1e-6)


def test_incompatible_call_lists_the_saved_signatures(tmp_path):
    m = MLP()
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    with pytest.raises(ValueError, match=r"(?s)Could not find matching concrete function.*Option 1:.*None, 3"):
        loaded(tf.constant([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="Option 1"):
        loaded(tf.constant([[1, 2, 3]]))  # int32, saved for float32


def test_signature_def_keeps_none_dimensions_and_tensorflow_names(tmp_path):
    m = MLP()
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path, signatures={
        "serving_default": m.__call__,
        "fixed": m.scaled.get_concrete_function(tf.TensorSpec([2, 3], tf.float32, name="inp"))})
    saved_model, _ = read_saved_model(path)
    meta = saved_model.meta_graphs[0]
    assert list(meta.meta_info_def.tags) == ["serve"]
    default = meta.signature_def["serving_default"]
    assert default.method_name == "tensorflow/serving/predict"
    assert default.inputs["x"].name == "serving_default_x:0"
    assert [d.size for d in default.inputs["x"].tensor_shape.dim] == [-1, 3]
    assert default.outputs["output_0"].name.startswith("StatefulPartitionedCall")
    fixed = meta.signature_def["fixed"]
    assert sorted(fixed.outputs) == ["n", "y"] and list(fixed.inputs) == ["inp"]
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["fixed"](inp=_x(2))
    np.testing.assert_allclose(out["y"].numpy(), m.scaled(_x(2))["y"].numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="positional"):
        loaded.signatures["fixed"](_x(2))  # signatures take keywords, as TensorFlow's


def test_no_default_signature_without_an_input_signature(tmp_path):
    class NoSig(tf.Module):
        @tf.function
        def f(self, x):
            return x + 1.0

    m = NoSig()
    m.f(tf.constant(1.0))
    m.f(tf.constant([1.0, 2.0]))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert dict(loaded.signatures) == {}
    assert float(loaded.f(tf.constant(2.0))) == 3.0  # both traces saved
    np.testing.assert_array_equal(loaded.f(tf.constant([1.0, 5.0])).numpy(), [2.0, 6.0])
    with pytest.raises(ValueError, match="2 option"):
        loaded.f(tf.constant([[1.0]]))


def test_seed_spelling_export_and_import(tmp_path):
    m = MLP()
    tf.saved_model.export(str(tmp_path / "model"), m)
    loaded = getattr(tf.saved_model, "import")(str(tmp_path / "model"))
    np.testing.assert_allclose(loaded(_x()).numpy(), m(_x()).numpy(), rtol=1e-6)


def test_a_function_as_the_root_and_dict_containers(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def square(x):
        return x * x

    tf.saved_model.save(square, str(tmp_path / "f"))
    loaded = tf.saved_model.load(str(tmp_path / "f"))
    np.testing.assert_array_equal(loaded(tf.constant([3.0])).numpy(), [9.0])  # a function object: callable

    holder = tf.Module()
    holder.parts = {"a": Dense(2, 2, 0), "b": Dense(2, 1, 1)}
    holder.f = square
    tf.saved_model.save(holder, str(tmp_path / "h"))
    back = tf.saved_model.load(str(tmp_path / "h"))
    np.testing.assert_array_equal(back.parts["b"].w.numpy(), holder.parts["b"].w.numpy())
    np.testing.assert_array_equal(back.f(tf.constant([2.0])).numpy(), [4.0])


def test_shared_variables_are_saved_once(tmp_path):
    m = tf.Module()
    shared = Dense(2, 2, 0)
    m.a, m.b = shared, shared
    m.v = shared.w
    tf.saved_model.save(m, str(tmp_path / "m"))
    back = tf.saved_model.load(str(tmp_path / "m"))
    assert back.a is back.b and back.v is back.a.w
    assert len(back.variables) == 2


def test_unreachable_captured_variable_is_refused_and_leaves_the_old_model(tmp_path):
    m = MLP()
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path)
    before = open(os.path.join(path, "saved_model.pb"), "rb").read()
    hidden = tf.Variable(1.0)

    class Bad(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def f(self, x):
            return x * hidden

    with pytest.raises(ValueError, match="not reachable"):
        tf.saved_model.save(Bad(), path)
    assert open(os.path.join(path, "saved_model.pb"), "rb").read() == before
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # no temporary left behind


def test_saving_over_an_existing_model_replaces_it(tmp_path):
    path = str(tmp_path / "m")
    first, second = Dense(2, 2, 0), Dense(2, 2, 1)
    tf.saved_model.save(first, path)
    tf.saved_model.save(second, path)
    np.testing.assert_array_equal(tf.saved_model.load(path).w.numpy(), second.w.numpy())
    assert sorted(os.listdir(tmp_path)) == ["m"]


def test_l2hmc_model_saves_and_loads(tmp_path):
    import l2hmc_model as l2

    class L2HMC(tf.Module):
        def __init__(self):
            super().__init__()
            self.params = [tf.Variable(p) for p in l2.l2hmc_params(np.random.default_rng(0))]
            self.model = l2.tf_style(tf, self.params)

        @tf.function(input_signature=[tf.TensorSpec([l2.BATCH, l2.D], tf.float32)] * 2 +
                     [tf.TensorSpec([l2.BATCH], tf.float32)])
        def transition(self, x0, v0, u):
            return self.model.transition(x0, v0, u)

    m = L2HMC()
    path = str(tmp_path / "l2hmc")
    tf.saved_model.save(m, path)
    loaded = tf.saved_model.load(path)
    rng = np.random.default_rng(1)
    x0, v0 = (tf.constant(rng.normal(size=(l2.BATCH, l2.D)).astype(np.float32)) for _ in range(2))
    u = tf.constant(rng.uniform(size=(l2.BATCH,)).astype(np.float32))
    want = m.transition(x0, v0, u)
    got = loaded.transition(x0, v0, u)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    sig = loaded.signatures["serving_default"](x0=x0, v0=v0, u=u)
    np.testing.assert_allclose(sig["output_0"].numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)


_SAVE_LOOP = """
import sys
import numpy as np
import ember as tf
path = sys.argv[1]
class M(tf.Module):
    def __init__(self, k):
        super().__init__()
        self.v = tf.Variable(np.full((256, 256), float(k), np.float32))

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def f(self, x):
        return x + self.v[0, 0]

models = [M(0), M(1)]
tf.saved_model.save(models[0], path)
print("ready", flush=True)
k = 1
while True:
    tf.saved_model.save(models[k], path)
    k = 1 - k
"""


def test_a_save_killed_at_any_moment_leaves_a_whole_saved_model(tmp_path):
    import random
    import signal
    import subprocess
    import time

    path = str(tmp_path / "m")
    rng = random.Random(16)
    for trial in range(8):
        proc = subprocess.Popen([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", _SAVE_LOOP, path],
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        loaded = tf.saved_model.load(path)
        value = float(loaded.v.numpy()[0, 0])
        assert value in (0.0, 1.0), trial
        np.testing.assert_array_equal(loaded.v.numpy(), np.full((256, 256), value, np.float32))
        assert float(loaded.f(tf.constant(1.0))) == 1.0 + value


def test_restored_functions_in_new_functions_gradients_and_a_new_export(tmp_path):
    m = MLP()
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    x = _x(3)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(loaded(x))
    grads = tape.gradient(y, [loaded.layers[0].w, loaded.layers[1].b])
    with tf.GradientTape() as tape:
        y2 = tf.reduce_sum(m(x))
    want = tape.gradient(y2, [m.layers[0].w, m.layers[1].b])
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)

    class Wrapper(tf.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def doubled(self, x):
            return self.inner(x) * 2.0  # a restored function called while tracing: a call node

    wrapper = Wrapper(loaded)
    np.testing.assert_allclose(wrapper.doubled(x).numpy(), 2 * m(x).numpy(), rtol=1e-5)
    tf.saved_model.save(wrapper, str(tmp_path / "wrapped"))
    again = tf.saved_model.load(str(tmp_path / "wrapped"))
    np.testing.assert_allclose(again.signatures["serving_default"](x=x)["output_0"].numpy(), 2 * m(x).numpy(),
                               rtol=1e-5)


def test_the_saved_model_variables_are_a_checkpoint_of_the_object(tmp_path):
    m = MLP()
    m.layers[1].w.assign(np.full((8, 2), 3.0, np.float32))
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path)
    fresh = MLP()
    status = tf.train.Checkpoint(fresh).read(os.path.join(path, "variables", "variables"))
    status.expect_partial()  # the functions and signatures are nodes without values
    for a, b in zip(fresh.variables, m.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

"""SavedModels served from C++ with no Python in the process (issue 16, "C++ without Python").

TensorFlow 2.21 writes SavedModels (a tf.Module with variables and a dict-returning signature, a tf_keras
MLP, a module with two signatures, a while_loop and cond, one without variables), and ember writes one (an MLP module with two signatures), each in a
subprocess, with the writer's own predictions for fixed inputs saved as .npy; the example program examples/cpp/serve_saved_model.cc (built by CMake as example_serve_saved_model)
loads each in a process started with a clean environment (no PYTHONPATH, no LD_PRELOAD) and its printed
outputs must match TensorFlow's. The binary must not link libpython (ldd) and reports from /proc/self/maps
that none is mapped. Bad directories and inputs end with a clear error, never a crash.
"""

import glob
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example_binary():
    given = os.environ.get("EMBER_SERVE_SAVED_MODEL")
    if given:
        return given
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "example_serve_saved_model")), key=os.path.getmtime)
    assert found, ("example_serve_saved_model is not built: build the examples (EMBER_BUILD_EXAMPLES, on by "
                   "default) or set EMBER_SERVE_SAVED_MODEL")
    return found[-1]


def clean_env():
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "OMP_NUM_THREADS": "2"}


TF_WRITER = textwrap.dedent(r'''
    import os, sys
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    out = sys.argv[1]

    def record(path, fn, inputs):
        os.makedirs(os.path.join(out, "io", path), exist_ok=True)
        for key, value in inputs.items():
            np.save(os.path.join(out, "io", path, "in_" + key + ".npy"), value)
        for key, value in fn(**{k: tf.constant(v) for k, v in inputs.items()}).items():
            np.save(os.path.join(out, "io", path, "out_" + key + ".npy"), value.numpy())

    rng = np.random.default_rng(0)

    class Module(tf.Module):
        def __init__(self):
            self.w = tf.Variable(rng.normal(size=(3, 4)).astype(np.float32), name="w")
            self.b = tf.Variable(rng.normal(size=(4,)).astype(np.float32), name="b")
            self.scale = tf.Variable(2.0, name="scale")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            h = tf.matmul(x, self.w) + self.b
            return {"relu": tf.nn.relu(h), "total": tf.reduce_sum(tf.tanh(h), axis=1) * self.scale}

    m = Module()
    tf.saved_model.save(m, os.path.join(out, "module"), signatures=m.__call__)
    loaded = tf.saved_model.load(os.path.join(out, "module"))
    record("module", loaded.signatures["serving_default"], {"x": rng.normal(size=(5, 3)).astype(np.float32)})

    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(4)])
    tf.saved_model.save(model, os.path.join(out, "mlp"))
    loaded = tf.saved_model.load(os.path.join(out, "mlp"))
    record("mlp", loaded.signatures["serving_default"],
           {"dense_input": rng.normal(size=(7, 8)).astype(np.float32)})

    class Two(tf.Module):
        def __init__(self):
            self.v = tf.Variable([1.0, -2.0, 3.0], name="v")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def scale(self, x):
            return {"y": x * self.v}

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 3], tf.float32)])
        def combine(self, a, b):
            return {"sum": a + b * self.v, "max": tf.maximum(a, b)}

    class Loop(tf.Module):  # a while_loop and a cond reading a variable, an int32 scalar input
        def __init__(self):
            self.v = tf.Variable([0.5, -1.0, 2.0], name="v")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.int32)])
        def f(self, x, n):
            _, out = tf.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, tf.tanh(acc * self.v + 0.1)),
                                   (tf.constant(0), x))
            return {"y": tf.cond(tf.reduce_sum(out) > 0, lambda: out * self.v, lambda: out - self.v)}

    loop = Loop()
    tf.saved_model.save(loop, os.path.join(out, "loop"), signatures=loop.f)
    record("loop", tf.saved_model.load(os.path.join(out, "loop")).signatures["serving_default"],
           {"x": rng.normal(size=(4, 3)).astype(np.float32), "n": np.array(5, np.int32)})

    class NoVariables(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float64)])
        def f(self, x):
            return {"y": x * 2.0 + 1.0}

    n = NoVariables()
    tf.saved_model.save(n, os.path.join(out, "no_variables"), signatures=n.f)
    record("no_variables", tf.saved_model.load(os.path.join(out, "no_variables")).signatures["serving_default"],
           {"x": rng.normal(size=(6,))})

    class Unsupported(tf.Module):  # an op ember does not register
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(self, x):
            return {"y": tf.cast(tf.strings.unicode_script(tf.cast(x, tf.int32)), tf.float32)}

    u = Unsupported()
    tf.saved_model.save(u, os.path.join(out, "unsupported"), signatures=u.f)

    t = Two()
    tf.saved_model.save(t, os.path.join(out, "two"), signatures={"serving_default": t.scale, "combine": t.combine})
    loaded = tf.saved_model.load(os.path.join(out, "two"))
    record("two", loaded.signatures["serving_default"], {"x": rng.normal(size=(2, 3)).astype(np.float32)})
    record("two_combine", loaded.signatures["combine"],
           {"a": rng.normal(size=(4, 3)).astype(np.float32), "b": rng.normal(size=(4, 3)).astype(np.float32)})
''')


EMBER_WRITER = textwrap.dedent(r'''
    import os, sys
    import numpy as np
    import ember as tf
    out = sys.argv[1]
    rng = np.random.default_rng(1)

    class Mlp(tf.Module):
        def __init__(self):
            self.w1 = tf.Variable(rng.normal(size=(6, 16)).astype(np.float32), name="w1")
            self.b1 = tf.Variable(rng.normal(size=(16,)).astype(np.float32), name="b1")
            self.w2 = tf.Variable(rng.normal(size=(16, 3)).astype(np.float32), name="w2")
            self.b2 = tf.Variable(np.zeros(3, np.float32), name="b2")

        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32)])
        def predict(self, x):
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, self.w1) + self.b1), self.w2) + self.b2
            return {"logits": logits, "probabilities": tf.nn.softmax(logits)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
        def shifted(self, n):
            return {"n": n * 2 + 1}

    m = Mlp()
    path = os.path.join(out, "ember_mlp")
    tf.saved_model.save(m, path, signatures={"serving_default": m.predict, "shifted": m.shifted})
    loaded = tf.saved_model.load(path)
    for name, inputs in [("serving_default", {"x": rng.normal(size=(5, 6)).astype(np.float32)}),
                         ("shifted", {"n": np.arange(4, dtype=np.int64)})]:
        io = os.path.join(out, "io", "ember_mlp_" + name)
        os.makedirs(io)
        for key, value in inputs.items():
            np.save(os.path.join(io, "in_" + key + ".npy"), value)
        got = loaded.signatures[name](**{k: tf.constant(v) for k, v in inputs.items()})
        fn = m.predict if name == "serving_default" else m.shifted
        direct = fn(*[tf.constant(v) for v in inputs.values()])
        for key, value in got.items():
            np.testing.assert_allclose(value.numpy(), direct[key].numpy(), rtol=1e-6)
            np.save(os.path.join(io, "out_" + key + ".npy"), value.numpy())
''')


@pytest.fixture(scope="module")
def ember_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("ember_saved_models")
    # This interpreter's ember (-S kept, so an ember found through PYTHONPATH stays the one imported).
    python = [sys.executable] + (["-S"] if sys.flags.no_site else [])
    proc = subprocess.run([*python, "-c", EMBER_WRITER, str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def tf_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf_saved_models")
    proc = subprocess.run([sys.executable, "-c", TF_WRITER, str(out)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def serve(model_dir, *args, expect_ok=True):
    proc = subprocess.run([example_binary(), str(model_dir), *map(str, args)], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-3000:]}"
    if expect_ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def parse(stdout):
    """{key: array} from the example's "output KEY DTYPE [SHAPE]" lines and the value line after each, and
    the other "name value" lines."""
    lines = stdout.splitlines()
    outputs, info = {}, {}
    i = 0
    while i < len(lines):
        words = lines[i].split()
        if words and words[0] == "output":
            shape = [int(d) for d in words[3].strip("[]").split(",") if d]
            values = np.array([float(v) for v in lines[i + 1].split()], dtype=np.float64)
            outputs[words[1]] = (words[2], values.reshape(shape))
            i += 2
        else:
            if len(words) == 2:
                info[words[0]] = words[1]
            i += 1
    return outputs, info


def check_against_tf(models, model, io_name, signature="serving_default"):
    """Runs the example on `model` with the inputs saved under io/`io_name` and compares with the writer's
    outputs saved there."""
    io = models / "io" / io_name
    args = ["--signature", signature]
    for path in sorted(io.glob("in_*.npy")):
        args += ["--input", f"{path.stem[3:]}={path}"]
    outputs, info = parse(serve(models / model, *args).stdout)
    expected = {p.stem[4:]: np.load(p) for p in io.glob("out_*.npy")}
    assert sorted(outputs) == sorted(expected)
    for key, want in expected.items():
        dtype, got = outputs[key]
        assert dtype == want.dtype.name, key
        assert got.shape == want.shape, key
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=key)
    assert info["python_in_process"] == "no"
    return info


def test_binary_does_not_link_python():
    ldd = subprocess.run(["ldd", example_binary()], capture_output=True, text=True, check=True).stdout
    assert "python" not in ldd.lower(), ldd


def test_tf_module_with_variables_and_dict_outputs(tf_models):
    check_against_tf(tf_models, "module", "module")


def test_tf_keras_mlp(tf_models):
    check_against_tf(tf_models, "mlp", "mlp")


def test_two_signatures(tf_models):
    check_against_tf(tf_models, "two", "two")
    check_against_tf(tf_models, "two", "two_combine", signature="combine")


def test_while_loop_and_cond(tf_models):
    check_against_tf(tf_models, "loop", "loop")


def test_model_without_variables(tf_models):
    check_against_tf(tf_models, "no_variables", "no_variables")


def test_ember_written_mlp(ember_models):
    check_against_tf(ember_models, "ember_mlp", "ember_mlp_serving_default")
    check_against_tf(ember_models, "ember_mlp", "ember_mlp_shifted", signature="shifted")


def test_generated_inputs_with_another_batch(tf_models):
    outputs, info = parse(serve(tf_models / "mlp", "--batch", "3").stdout)
    assert outputs["dense_2"][1].shape == (3, 4)
    assert float(info["load_ms"]) > 0


def test_errors_are_clear_and_never_crash(tf_models, tmp_path):
    proc = serve(tmp_path / "missing", expect_ok=False)
    assert proc.returncode == 1 and "missing" in proc.stderr and "does not exist" in proc.stderr
    proc = serve(tf_models / "two", "--signature", "predict", expect_ok=False)
    assert proc.returncode == 1 and "'predict'" in proc.stderr and "combine, serving_default" in proc.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((2, 5), np.float32))
    proc = serve(tf_models / "mlp", "--input", f"dense_input={tmp_path / 'wrong.npy'}", expect_ok=False)
    assert proc.returncode == 1 and "'dense_input'" in proc.stderr and "[None, 8]" in proc.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((2, 8), np.int32))
    proc = serve(tf_models / "mlp", "--input", f"dense_input={tmp_path / 'wrong.npy'}", expect_ok=False)
    assert proc.returncode == 1 and "int32" in proc.stderr

    proc = serve(tf_models / "unsupported", expect_ok=False)
    assert proc.returncode == 1 and "'UnicodeScript'" in proc.stderr and "does not register" in proc.stderr

    broken = tmp_path / "broken"
    shutil.copytree(tf_models / "mlp", broken)
    data = (broken / "saved_model.pb").read_bytes()
    (broken / "saved_model.pb").write_bytes(data[: len(data) // 2])
    proc = serve(broken, expect_ok=False)
    assert proc.returncode == 1 and "saved_model.pb" in proc.stderr
    (broken / "saved_model.pb").write_bytes(data)
    for path in (broken / "variables").glob("variables.data*"):
        path.write_bytes(path.read_bytes()[:10])
    proc = serve(broken, expect_ok=False)
    assert proc.returncode == 1 and "variables" in proc.stderr


def test_text_saved_model_pbtxt_is_read(tf_models, tmp_path):
    """A SavedModel whose graph is saved_model.pbtxt (protobuf's text form) and no saved_model.pb loads as
    TensorFlow's loader reads it: from C++ and from Python, with the same outputs; a corrupt text file is a
    clear DataLoss error."""
    from google.protobuf import text_format

    import ember
    from ember.saved_model import loader

    text_dir = tmp_path / "mlp_text"
    shutil.copytree(tf_models / "mlp", text_dir)
    saved, _ = loader.read_saved_model(text_dir)
    (text_dir / "saved_model.pbtxt").write_text(text_format.MessageToString(saved))
    (text_dir / "saved_model.pb").unlink()
    outputs, info = parse(serve(text_dir, *_io_args(tf_models / "io" / "mlp")).stdout)
    expected = {p.stem[4:]: np.load(p) for p in (tf_models / "io" / "mlp").glob("out_*.npy")}
    assert sorted(outputs) == sorted(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(outputs[key][1], want, rtol=1e-5, atol=1e-5)
    loaded = ember.saved_model.load(str(text_dir))
    inputs = {p.stem[3:]: np.load(p) for p in (tf_models / "io" / "mlp").glob("in_*.npy")}
    got = loaded.signatures["serving_default"](**{k: ember.constant(v) for k, v in inputs.items()})
    for key, want in expected.items():
        np.testing.assert_allclose(got[key].numpy(), want, rtol=1e-5, atol=1e-5)

    (text_dir / "saved_model.pbtxt").write_text("meta_graphs { graph_def { node { name: ")
    proc = serve(text_dir, expect_ok=False)
    assert proc.returncode == 1 and "saved_model.pbtxt" in proc.stderr and "text format" in proc.stderr
    with pytest.raises(ember.errors.DataLossError, match="saved_model.pbtxt"):
        ember.saved_model.load(str(text_dir))
    (text_dir / "saved_model.pbtxt").unlink()
    with pytest.raises(ember.errors.NotFoundError, match=r"saved_model.pbtxt\|saved_model.pb"):
        ember.saved_model.load(str(text_dir))


def _io_args(io):
    args = []
    for path in sorted(io.glob("in_*.npy")):
        args += ["--input", f"{path.stem[3:]}={path}"]
    return args

"""TensorFlow 1 SavedModels (no object graph: the program at the GraphDef's top level, a name-based
checkpoint, signatures naming graph tensors) load in ember from Python (``ember.saved_model.load``:
``signatures``, ``variables``, ``prune``) and from C++ (examples/cpp/serve_saved_model.cc), with
TensorFlow's outputs. TensorFlow 2.21 writes them in a subprocess with tf.compat.v1 (graph mode)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import errors

from test_saved_model_cpp import clean_env, example_binary, parse

TF1_WRITER = textwrap.dedent(r'''
    import os, sys
    import numpy as np
    import tensorflow as tf
    out = sys.argv[1]
    tf.compat.v1.disable_eager_execution()
    x_value = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.save(os.path.join(out, "x.npy"), x_value)

    # simple_save: one signature, variables keyed by their names.
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.compat.v1.get_variable("w", initializer=np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
        b = tf.compat.v1.get_variable("b", initializer=np.ones(4, np.float32))
        y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.saved_model.simple_save(s, os.path.join(out, "simple"), inputs={"x": x}, outputs={"y": y})
            np.save(os.path.join(out, "simple_y.npy"), s.run(y, {x: x_value}))

    # Builder with two signatures and a saver that renames the checkpoint entries.
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="inputs")
        scale = tf.compat.v1.placeholder(tf.float32, [], name="scale")
        with tf.compat.v1.variable_scope("dense"):
            w = tf.compat.v1.get_variable("kernel", initializer=np.full((3, 2), 0.5, np.float32))
            b = tf.compat.v1.get_variable("bias", initializer=np.array([0.25, -0.25], np.float32))
        logits = tf.add(tf.matmul(x, w), b, name="logits")
        probs = tf.nn.softmax(logits * scale, name="probs")
        saver = tf.compat.v1.train.Saver({"renamed/kernel": w, "renamed/bias": b})
        info = tf.compat.v1.saved_model.utils.build_tensor_info
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            builder = tf.compat.v1.saved_model.Builder(os.path.join(out, "builder"))
            builder.add_meta_graph_and_variables(
                s, ["serve"], saver=saver, signature_def_map={
                    "serving_default": tf.compat.v1.saved_model.build_signature_def(
                        {"inputs": info(x), "scale": info(scale)}, {"probs": info(probs)}, "tensorflow/serving/predict"),
                    "logits": tf.compat.v1.saved_model.build_signature_def(
                        {"inputs": info(x)}, {"logits": info(logits)}, "tensorflow/serving/predict")})
            builder.save()
            np.save(os.path.join(out, "builder_probs.npy"), s.run(probs, {x: x_value, scale: 2.0}))
            np.save(os.path.join(out, "builder_logits.npy"), s.run(logits, {x: x_value}))
''')


@pytest.fixture(scope="module")
def tf1_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf1_saved_models")
    proc = subprocess.run([sys.executable, "-c", TF1_WRITER, str(out)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_simple_save_model_loads_with_tensorflows_outputs(tf1_models):
    x = np.load(tf1_models / "x.npy")
    loaded = ember.saved_model.load(str(tf1_models / "simple"))
    assert sorted(loaded.signatures) == ["serving_default"]
    sig = loaded.signatures["serving_default"]
    assert sig.structured_input_signature[1]["x"].shape.as_list() == [None, 3]
    np.testing.assert_allclose(sig(x=ember.constant(x))["y"].numpy(), np.load(tf1_models / "simple_y.npy"),
                               rtol=1e-6)
    assert [v.name for v in loaded.variables] == ["w:0", "b:0"]
    pruned = loaded.prune("x:0", "y:0")
    np.testing.assert_allclose(pruned(ember.constant(x)).numpy(), np.load(tf1_models / "simple_y.npy"), rtol=1e-6)
    # The signatures read the loaded variables: assigning one changes what they compute.
    loaded.variables[1].assign(np.full(4, -10.0, np.float32))
    assert np.all(sig(x=x)["y"].numpy() == 0)


def test_builder_model_with_two_signatures_and_renamed_checkpoint_entries(tf1_models):
    x = np.load(tf1_models / "x.npy")
    loaded = ember.saved_model.load(str(tf1_models / "builder"))
    assert sorted(loaded.signatures) == ["logits", "serving_default"]
    probs = loaded.signatures["serving_default"](inputs=x, scale=np.float32(2.0))["probs"]
    np.testing.assert_allclose(probs.numpy(), np.load(tf1_models / "builder_probs.npy"), rtol=1e-6)
    logits = loaded.signatures["logits"](inputs=x)["logits"]
    np.testing.assert_allclose(logits.numpy(), np.load(tf1_models / "builder_logits.npy"), rtol=1e-6)


def test_bad_calls_and_broken_models_are_clear_errors(tf1_models, tmp_path):
    import shutil

    loaded = ember.saved_model.load(str(tf1_models / "builder"))
    sig = loaded.signatures["serving_default"]
    with pytest.raises(TypeError, match="missing input"):
        sig(inputs=np.zeros((1, 3), np.float32))
    with pytest.raises(TypeError, match="no input 'x'"):
        sig(x=1.0)
    with pytest.raises(errors.InvalidArgumentError, match=r"'inputs'.*\(None, 3\)"):
        sig(inputs=np.zeros((1, 4), np.float32), scale=np.float32(1))
    broken = tmp_path / "no_variables"
    shutil.copytree(tf1_models / "simple", broken)
    shutil.rmtree(broken / "variables")
    with pytest.raises(errors.NotFoundError, match="no variables checkpoint"):
        ember.saved_model.load(str(broken))


def test_tf1_models_served_from_cpp(tf1_models):
    x_path = tf1_models / "x.npy"
    for model, args, expected in [
            ("simple", ["--input", f"x={x_path}"], {"y": "simple_y.npy"}),
            ("builder", ["--signature", "logits", "--input", f"inputs={x_path}"], {"logits": "builder_logits.npy"})]:
        proc = subprocess.run([example_binary(), str(tf1_models / model), *args], capture_output=True, text=True,
                              env=clean_env(), timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs, _ = parse(proc.stdout)
        for key, name in expected.items():
            np.testing.assert_allclose(outputs[key][1], np.load(tf1_models / name), rtol=1e-5)


def test_tensorflow_1_control_flow_is_a_clear_not_found(tmp_path):
    writer = textwrap.dedent(r'''
        import sys
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        tf.compat.v1.disable_control_flow_v2()
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
            r = tf.compat.v1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [0, x])[1]
            y = tf.identity(r, name="y")
            with tf.compat.v1.Session() as s:
                tf.compat.v1.saved_model.simple_save(s, sys.argv[1], inputs={"x": x}, outputs={"y": y})
    ''')
    path = tmp_path / "loop"
    proc = subprocess.run([sys.executable, "-c", writer, str(path)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with pytest.raises(errors.NotFoundError, match="'Enter', which ember does not register"):
        ember.saved_model.load(str(path))
    proc = subprocess.run([example_binary(), str(path), "--batch", "2"], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert proc.returncode == 1 and "'Enter'" in proc.stderr


def test_corrupt_tf1_graphs_are_errors_naming_the_saved_model(tf1_models, tmp_path):
    """Found by the SavedModel loader fuzzer: with the object graph gone a model takes the TensorFlow 1
    path, whose import errors (a bad node name) and unknown dtypes (DT_INVALID) must name the SavedModel
    like every other loader error."""
    import shutil

    from ember.saved_model import loader

    def rename_matmul(meta):  # a reached node, renamed (with its reader) to a name GraphDef forbids
        for node in meta.graph_def.node:
            if node.name == "MatMul":
                node.name = "_bad name"
            node.input[:] = ["_bad name" if i == "MatMul" else i for i in node.input]

    def _invalid_input_dtype(meta):
        meta.signature_def["serving_default"].inputs["x"].dtype = 0  # DT_INVALID

    for mutate, kind in [(rename_matmul, errors.InvalidArgumentError),
                         (_invalid_input_dtype,
                          errors.InvalidArgumentError)]:
        broken = tmp_path / f"broken_{mutate.__name__}"
        shutil.copytree(tf1_models / "simple", broken)
        saved, _ = loader.read_saved_model(broken)
        mutate(saved.meta_graphs[0])
        (broken / "saved_model.pb").write_bytes(saved.SerializeToString())
        with pytest.raises(kind) as info:
            ember.saved_model.load(str(broken))
        assert str(broken) in str(info.value)

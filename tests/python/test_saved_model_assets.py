"""SavedModel assets (issue 16): a tf.saved_model.Asset that TensorFlow 2.21 saves is loaded by ember (from
Python and from C++ without Python) with its path pointing at the copy in the loaded directory's assets/,
even after the directory moved and the original file is gone; a hostile asset file name is an error."""

import os
import shutil
import subprocess
import sys

import pytest

import ember as em
from ember import errors
from ember.framework import protos

sys.path.insert(0, os.path.dirname(__file__))
from test_saved_model_cpp import clean_env, example_binary  # noqa: E402

TF_WRITER = r"""
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
out, source = sys.argv[1], sys.argv[2]

class M(tf.Module):
    def __init__(self):
        self.vocab = tf.saved_model.Asset(source)

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def join(self, x):
        return {"path": tf.strings.join([self.vocab.asset_path, x])}

    @tf.function(input_signature=[tf.TensorSpec([1], tf.float32)])
    def length(self, x):
        return {"n": tf.strings.length(self.vocab.asset_path) + tf.cast(x, tf.int32)}

m = M()
tf.saved_model.save(m, out, signatures={"serving_default": m.join, "length": m.length})
"""


@pytest.fixture(scope="module")
def moved_tf_model(tmp_path_factory):
    base = tmp_path_factory.mktemp("assets")
    source = base / "vocab.txt"
    source.write_text("alpha\nbeta\n")
    written = base / "written"
    proc = subprocess.run([sys.executable, "-c", TF_WRITER, str(written), str(source)], capture_output=True,
                          text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert os.listdir(written / "assets") == ["vocab.txt"]
    moved = base / "moved"
    shutil.move(str(written), str(moved))
    source.unlink()  # a path still naming the original would now fail
    return moved


def test_ember_loads_tensorflow_asset(moved_tf_model):
    loaded = em.saved_model.load(str(moved_tf_model))
    expected = os.path.join(str(moved_tf_model), "assets", "vocab.txt")
    assert isinstance(loaded.vocab, em.saved_model.Asset)
    assert loaded.vocab.asset_path.numpy().decode() == expected
    with open(loaded.vocab.asset_path.numpy().decode()) as f:
        assert f.read() == "alpha\nbeta\n"
    out = loaded.signatures["serving_default"](x=em.constant("!"))
    assert out["path"].numpy().decode() == expected + "!"
    assert loaded.join(em.constant("?"))["path"].numpy().decode() == expected + "?"


def test_cpp_loader_reads_tensorflow_asset_path(moved_tf_model):
    proc = subprocess.run([example_binary(), str(moved_tf_model), "--signature", "length"], capture_output=True,
                          text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("output n ")))
    expected = len(os.path.join(str(moved_tf_model), "assets", "vocab.txt"))
    x = 0.8414709848  # the example's generated input: sin(1), cast to int32: 0
    assert float(lines[at + 1]) == expected + int(x)


def test_hostile_asset_file_name_is_an_error(moved_tf_model, tmp_path):
    copy = tmp_path / "hostile"
    shutil.copytree(moved_tf_model, copy)
    SavedModel = protos.message_class("SavedModel")
    saved = SavedModel.FromString((copy / "saved_model.pb").read_bytes())
    saved.meta_graphs[0].asset_file_def[0].filename = "../../etc/passwd"
    (copy / "saved_model.pb").write_bytes(saved.SerializeToString())
    with pytest.raises(errors.InvalidArgumentError, match=r"passwd.*not a plain name inside assets"):
        em.saved_model.load(str(copy))
    proc = subprocess.run([example_binary(), str(copy), "--signature", "length"], capture_output=True, text=True,
                          env=clean_env())
    assert proc.returncode != 0
    assert "not a plain name inside assets" in proc.stderr + proc.stdout


def test_asset_needs_a_path():
    with pytest.raises(TypeError, match="saved_model.Asset: expected a path"):
        em.saved_model.Asset(3)
    assert em.saved_model.Asset(b"/x/y").asset_path.numpy() == b"/x/y"

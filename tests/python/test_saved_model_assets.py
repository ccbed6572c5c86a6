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


# ---- ember writes, TensorFlow (and ember, and the C++ example) read: Note [Saving assets] in saver.py

TF_READER = r"""
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
out = {}
for key, fn in sorted(loaded.signatures.items()):
    result = fn(**{name: tf.constant(value) for name, value in json.loads(sys.argv[2])[key].items()})
    out[key] = {k: (v.numpy().decode() if v.dtype == tf.string else v.numpy().tolist()) for k, v in result.items()}
print(json.dumps(out))
"""


def _ember_module(vocab, other_vocab):
    class Inner(em.Module):
        def __init__(self):
            self.vocab = em.saved_model.Asset(other_vocab)  # the same base name as the outer one

        @em.function
        def words(self):
            return em.strings.split(em.io.read_file(self.vocab.asset_path))

    class M(em.Module):
        def __init__(self):
            self.vocab = em.saved_model.Asset(vocab)
            self.inner = Inner()
            self.scale = em.Variable(2.0)

        @em.function(input_signature=[em.TensorSpec([], em.string)])
        def join(self, x):
            return {"path": em.strings.join([self.vocab.asset_path, x]),
                    "text": em.io.read_file(self.vocab.asset_path)}

        @em.function(input_signature=[em.TensorSpec([], em.float32)])
        def count(self, x):
            # the inner asset reaches this function through a call of another ember.function
            return {"n": em.cast(em.size(self.inner.words()), em.float32) * self.scale + x}

    return M()


@pytest.fixture(scope="module")
def moved_ember_model(tmp_path_factory):
    base = tmp_path_factory.mktemp("ember_assets")
    (base / "a").mkdir()
    (base / "b").mkdir()
    vocab, other = base / "a" / "vocab.txt", base / "b" / "vocab.txt"
    vocab.write_text("alpha\nbeta\n")
    other.write_text("one two three\n")
    m = _ember_module(str(vocab), str(other))
    expected_eager = (m.join(em.constant("!"))["text"].numpy(), float(m.count(em.constant(0.5))["n"]))
    assert expected_eager == (b"alpha\nbeta\n", 6.5)
    written = base / "written"
    em.saved_model.save(m, str(written), signatures={"serving_default": m.join, "count": m.count})
    assert sorted(os.listdir(written / "assets")) == ["vocab.txt", "vocab_1.txt"]
    moved = base / "moved"
    shutil.move(str(written), str(moved))
    vocab.unlink()  # a path still naming the originals would now fail
    other.unlink()
    return moved


def test_tensorflow_loads_an_ember_asset_from_the_moved_copy(moved_ember_model):
    import json

    feeds = {"serving_default": {"x": "!"}, "count": {"x": 0.5}}
    proc = subprocess.run([sys.executable, "-c", TF_READER, str(moved_ember_model), json.dumps(feeds)],
                          capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    path = os.path.join(str(moved_ember_model), "assets", "vocab.txt")
    assert out["serving_default"] == {"path": path + "!", "text": "alpha\nbeta\n"}
    assert out["count"] == {"n": 6.5}


def test_ember_loads_its_own_asset_from_the_moved_copy(moved_ember_model):
    loaded = em.saved_model.load(str(moved_ember_model))
    path = os.path.join(str(moved_ember_model), "assets", "vocab.txt")
    assert loaded.vocab.asset_path.numpy().decode() == path
    assert loaded.inner.vocab.asset_path.numpy().decode() == path[:-4] + "_1.txt"
    out = loaded.signatures["serving_default"](x=em.constant("!"))
    assert out["path"].numpy().decode() == path + "!" and out["text"].numpy() == b"alpha\nbeta\n"
    assert float(loaded.signatures["count"](x=em.constant(0.5))["n"]) == 6.5
    assert float(loaded.count(em.constant(1.5))["n"]) == 7.5


def test_cpp_loader_reads_an_ember_asset_from_the_moved_copy(moved_ember_model):
    proc = subprocess.run([example_binary(), str(moved_ember_model), "--signature", "count"], capture_output=True,
                          text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("output n ")))
    assert float(lines[at + 1]) == pytest.approx(6.0 + 0.8414709848)  # the example's input: sin(1)


def test_a_loaded_model_saved_again_keeps_its_assets(moved_tf_model, tmp_path):
    loaded = em.saved_model.load(str(moved_tf_model))
    again = tmp_path / "again"
    em.saved_model.save(loaded, str(again))
    moved = tmp_path / "moved_again"
    shutil.move(str(again), str(moved))
    assert os.listdir(moved / "assets") == ["vocab.txt"]
    reloaded = em.saved_model.load(str(moved))
    out = reloaded.signatures["serving_default"](x=em.constant("!"))
    assert out["path"].numpy().decode() == os.path.join(str(moved), "assets", "vocab.txt") + "!"


def test_a_directory_asset_is_copied_whole(tmp_path):
    source = tmp_path / "tokenizer"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "merges.txt").write_text("a b\n")
    m = em.Module()
    m.tokenizer = em.saved_model.Asset(str(source))
    m.read = em.function(lambda: em.io.read_file(em.strings.join([m.tokenizer.asset_path, "/sub/merges.txt"])),
                         input_signature=[])
    em.saved_model.save(m, str(tmp_path / "out"))
    shutil.rmtree(source)
    loaded = em.saved_model.load(str(tmp_path / "out"))
    assert loaded.read().numpy() == b"a b\n"


def test_a_missing_asset_file_fails_the_save_and_leaves_nothing(tmp_path):
    m = em.Module()
    m.vocab = em.saved_model.Asset(str(tmp_path / "missing.txt"))
    with pytest.raises(errors.NotFoundError, match="missing.txt"):
        em.saved_model.save(m, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()

"""tf.io.gfile (python/ember/io/gfile.py) against TensorFlow: each call runs the same steps in a directory of
its own under each framework, and the results, the files left behind and the class of each error must agree."""
import os

import pytest
import tensorflow

import ember


def _outcome(fn):
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return ("error", type(e).__name__)
    if isinstance(value, list):
        value = sorted(value)
    return ("ok", value)


def _script(fw, root):
    g = fw.io.gfile
    j = os.path.join
    steps = [
        ("exists missing", lambda: g.exists(j(root, "nope"))),
        ("listdir missing", lambda: g.listdir(j(root, "nope"))),
        ("makedirs", lambda: g.makedirs(j(root, "a", "b"))),
        ("makedirs again", lambda: g.makedirs(j(root, "a", "b"))),
        ("mkdir existing", lambda: g.mkdir(j(root, "a"))),
        ("mkdir without parent", lambda: g.mkdir(j(root, "x", "y"))),
        ("write", lambda: _write(g, j(root, "a", "f.txt"), "w", "line1\nline2\n")),
        ("append bytes", lambda: _write(g, j(root, "a", "f.txt"), "a", b"line3\n")),
        ("read text", lambda: _read(g, j(root, "a", "f.txt"), "r")),
        ("read binary", lambda: _read(g, j(root, "a", "f.txt"), "rb")),
        ("readlines", lambda: g.GFile(j(root, "a", "f.txt")).readlines()),
        ("iterate", lambda: list(g.GFile(j(root, "a", "f.txt"), "rb"))),
        ("size", lambda: g.GFile(j(root, "a", "f.txt")).size()),
        ("read missing", lambda: g.GFile(j(root, "nope")).read()),
        ("bad mode", lambda: g.GFile(j(root, "a", "f.txt"), "x")),
        ("read a write-only file", lambda: g.GFile(j(root, "a", "w.txt"), "w").read()),
        ("listdir", lambda: g.listdir(j(root, "a"))),
        ("isdir", lambda: (g.isdir(j(root, "a")), g.isdir(j(root, "a", "f.txt")), g.isdir(j(root, "zz")))),
        ("glob", lambda: [os.path.relpath(p, root) for p in g.glob(j(root, "a", "*.txt"))]),
        ("glob list", lambda: sorted(os.path.relpath(p, root) for p in g.glob([j(root, "a", "*.txt"),
                                                                                 j(root, "*")]))),
        ("stat", lambda: (g.stat(j(root, "a", "f.txt")).length, g.stat(j(root, "a")).is_directory,
                          type(g.stat(j(root, "a")).mtime_nsec).__name__)),
        ("stat missing", lambda: g.stat(j(root, "zz"))),
        ("copy", lambda: g.copy(j(root, "a", "f.txt"), j(root, "a", "g.txt"))),
        ("copy onto existing", lambda: g.copy(j(root, "a", "f.txt"), j(root, "a", "g.txt"))),
        ("copy overwrite", lambda: g.copy(j(root, "a", "f.txt"), j(root, "a", "g.txt"), overwrite=True)),
        ("copy missing", lambda: g.copy(j(root, "zz"), j(root, "a", "zz"))),
        ("rename onto existing", lambda: g.rename(j(root, "a", "f.txt"), j(root, "a", "g.txt"))),
        ("rename", lambda: g.rename(j(root, "a", "g.txt"), j(root, "a", "h.txt"))),
        ("walk", lambda: [(os.path.relpath(d, root), sorted(s), sorted(f)) for d, s, f in g.walk(root)]),
        ("walk missing", lambda: list(g.walk(j(root, "zz")))),
        ("remove missing", lambda: g.remove(j(root, "zz"))),
        ("remove a directory", lambda: g.remove(j(root, "a", "b"))),
        ("remove", lambda: g.remove(j(root, "a", "h.txt"))),
        ("rmtree missing", lambda: g.rmtree(j(root, "zz"))),
        ("join", lambda: g.join("a", "b", "c")),
        ("rmtree", lambda: g.rmtree(j(root, "a"))),
        ("gone", lambda: g.exists(j(root, "a"))),
    ]
    return [(label, _outcome(step)) for label, step in steps]


def _write(g, path, mode, data):
    with g.GFile(path, mode) as f:
        f.write(data)
        return f.tell()


def _read(g, path, mode):
    with g.GFile(path, mode) as f:
        first = f.readline()
        position = f.tell()
        f.seek(0)
        return first, position, f.read(3), f.read()


def test_every_call_matches_tensorflow(tmp_path):
    (tmp_path / "ember").mkdir()
    (tmp_path / "tf").mkdir()
    ours = _script(ember, str(tmp_path / "ember"))
    theirs = _script(tensorflow, str(tmp_path / "tf"))
    for (label, got), (_, want) in zip(ours, theirs):
        assert got == want, label


def test_errors_are_embers_own_classes(tmp_path):
    with pytest.raises(ember.errors.NotFoundError, match="nope"):
        ember.io.gfile.GFile(str(tmp_path / "nope")).read()
    with pytest.raises(ember.errors.NotFoundError):
        ember.io.gfile.listdir(str(tmp_path / "nope"))


def test_a_scheme_other_than_local_files_is_refused_by_name():
    with pytest.raises(ember.errors.UnimplementedError, match="'gs'"):
        ember.io.gfile.exists("gs://bucket/model")
    assert ember.io.gfile.exists("file:///tmp")

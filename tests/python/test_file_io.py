"""tf.io.read_file / write_file (ReadFile, WriteFile: src/ember/ops/file_io.cc) against TensorFlow: contents,
errors, a directory created on write, and program order inside a function."""
import os

import numpy as np
import pytest
import tensorflow

import ember as tf


@pytest.mark.parametrize("fw", [tf, tensorflow], ids=["ember", "tensorflow"])
def test_write_then_read_round_trips_bytes_and_creates_the_directory(tmp_path, fw):
    path = str(tmp_path / "new" / "dir" / "f.bin")
    data = bytes(range(256)) * 3
    fw.io.write_file(path, data)
    assert open(path, "rb").read() == data
    got = fw.io.read_file(path)
    assert got.dtype == fw.string and got.shape == () and got.numpy() == data


def test_read_matches_tensorflow_inside_a_function(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nbb\nccc\n")

    def program(fw):
        @fw.function
        def f(p):
            return fw.strings.length(fw.io.read_file(p)), fw.strings.split(fw.io.read_file(p))

        return f

    got, want = program(tf)(str(path)), program(tensorflow)(str(path))
    assert int(got[0]) == int(want[0]) == 9
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_a_read_of_a_constant_path_sees_the_file_change_between_calls(tmp_path):
    path = tmp_path / "changing.txt"
    f = tf.function(lambda: tf.io.read_file(str(path)))
    path.write_text("one")
    assert f().numpy() == b"one"
    path.write_text("two!")
    assert f().numpy() == b"two!"  # not folded when the function was optimized


def test_write_and_read_keep_program_order_in_a_function(tmp_path):
    path = str(tmp_path / "order.txt")

    @tf.function
    def f(x):
        tf.io.write_file(path, tf.strings.as_string(x))
        first = tf.io.read_file(path)
        tf.io.write_file(path, tf.strings.as_string(x + 1))
        return first, tf.io.read_file(path)

    first, second = f(tf.constant(41))
    assert (first.numpy(), second.numpy()) == (b"41", b"42")


@pytest.mark.parametrize("make_path, error", [
    (lambda tmp: str(tmp / "missing.txt"), "NotFoundError"),
    (lambda tmp: str(tmp), "FailedPreconditionError"),
])
def test_errors_are_tensorflows(tmp_path, make_path, error):
    path = make_path(tmp_path)
    for fw in (tensorflow, tf):
        with pytest.raises(getattr(fw.errors, error), match="ReadFile|" + os.path.basename(path)) as info:
            fw.io.read_file(path)
        assert path in str(info.value)


def test_a_filename_that_is_not_a_scalar_string_is_rejected():
    with pytest.raises(tensorflow.errors.InvalidArgumentError, match="must be scalar"):
        tensorflow.io.read_file(["a", "b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ReadFile.*must be scalar"):
        tf.io.read_file(["a", "b"])
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
        tf.io.read_file(3)

"""ember.print: TensorFlow's formatting, streams, and program order inside functions."""
import sys

import pytest

import ember as tf


def test_formats_like_tf_print(capfd):
    tf.print("x:", tf.constant([1, 2, 3]), "y", tf.constant([[1.5, 2.0], [3, 4]]), tf.constant(2.5), tf.range(10))
    tf.print(tf.constant([True, False]), 3, "z", sep="|", end="!\n")
    err = capfd.readouterr().err
    assert err == "x: [1 2 3] y [[1.5 2]\n [3 4]] 2.5 [0 1 2 ... 7 8 9]\n[1 0]|3|z!\n"


def test_stdout_and_summarize(capfd):
    tf.print(tf.range(10), output_stream=sys.stdout, summarize=-1)
    tf.print(tf.range(10), output_stream=sys.stdout, summarize=1)
    assert capfd.readouterr().out == "[0 1 2 3 4 5 6 7 8 9]\n[0 ... 9]\n"
    with pytest.raises(ValueError):
        tf.print(1, output_stream=object())


def test_prints_on_every_call_in_program_order(capfd):
    counter = tf.Variable(0)

    @tf.function
    def f(x):
        tf.print("before", counter, x)
        counter.assign_add(1)
        tf.print("after", counter)
        return x

    f(tf.constant(7))
    f(tf.constant(8))
    err = capfd.readouterr().err
    assert err == "before 0 7\nafter 1\nbefore 1 8\nafter 2\n"

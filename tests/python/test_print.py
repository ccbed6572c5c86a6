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


def test_timestamp_is_read_when_it_runs_as_tensorflows():
    import time

    import tensorflow as real_tf

    ours, theirs = tf.timestamp(), real_tf.timestamp()
    assert ours.dtype == tf.float64 and ours.shape == theirs.shape == ()
    assert abs(float(ours) - float(theirs)) < 5.0 and abs(float(ours) - time.time()) < 5.0

    @tf.function
    def elapsed():
        start = tf.timestamp()
        tf.print("tick")
        return start, tf.timestamp()

    first, _ = elapsed()
    time.sleep(0.02)
    second, end = elapsed()
    assert float(second) - float(first) >= 0.015  # not folded into the trace's constant
    assert float(end) >= float(second)
    graph_def = elapsed.get_concrete_function().graph.as_graph_def()
    assert sum(n.op == "Timestamp" for n in graph_def.node) == 2

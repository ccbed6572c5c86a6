"""Helpers of the remapping passes' tests (test_fuse_conv.py, test_fuse_matmul.py): run a function with the
remapping switch on and off, and compare the results."""
import numpy as np

import ember as tf


def numpy_results(result):
    """A function's results (nested lists and tuples of tensors) as a flat list of arrays."""
    if isinstance(result, (list, tuple)):
        return [v for r in result for v in numpy_results(r)]
    return [result.numpy()]


def run_with_and_without_remapping(remapping, fused_op, fn, *args):
    """(fused results, unfused results, the fused graph's optimized text); each a fresh ember.function. The
    unfused graph must hold no `fused_op`."""
    remapping(True)
    fused = tf.function(fn)
    text = fused.get_concrete_function(*args).graph.optimized_as_text()
    got = numpy_results(fused(*args))
    remapping(False)
    plain = tf.function(fn)
    assert fused_op not in plain.get_concrete_function(*args).graph.optimized_as_text()
    want = numpy_results(plain(*args))
    return got, want, text


def assert_close(got, want, tolerance=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance)

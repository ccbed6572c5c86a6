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


def tensorflow_optimized(fn, *specs):
    """TensorFlow's grappler output for the real-TensorFlow function `fn` traced at `specs`: (optimized GraphDef,
    the inputs' names, the first output's name). Every node, library functions' included, is placed on the CPU
    first: the remapper only rewrites nodes placed on one."""
    import tensorflow as real_tf
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer
    concrete = real_tf.function(fn).get_concrete_function(*specs)
    gd = concrete.graph.as_graph_def()
    for node in [*gd.node, *(n for f in gd.library.function for n in f.node_def)]:
        node.device = "/job:localhost/replica:0/task:0/device:CPU:0"
    meta = real_tf.compat.v1.train.export_meta_graph(graph_def=gd, graph=concrete.graph)
    meta.collection_def["train_op"].node_list.value.extend(o.name.split(":")[0] for o in concrete.outputs)
    optimized = tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), meta)
    return optimized, [t.name for t in concrete.inputs], concrete.outputs[0].name


def run_tensorflow_graph_def(graph_def, feeds, fetch, *values):
    """TensorFlow running `graph_def` (a GraphDef of either runtime's message classes) from `feeds` to `fetch`."""
    import tensorflow as real_tf
    theirs = real_tf.compat.v1.GraphDef.FromString(graph_def.SerializeToString())
    run = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(theirs, name=""), [])
    return run.prune(feeds=feeds, fetches=[fetch])(*[real_tf.constant(v) for v in values])[0].numpy()

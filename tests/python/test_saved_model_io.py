"""ember.io.write_graph and ember.graph_util.import_graph_def as TensorFlow's (issue 16, part 2): text and
binary GraphDefs that TensorFlow reads, and that import back into a runnable graph."""

import os

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format

import ember as em
from ember.framework import graph_def as gdm


def _concrete():

    @em.function(input_signature=[em.TensorSpec([None], em.float32)])
    def f(x):
        return em.square(x) + 1.0

    return f.get_concrete_function()


def test_write_graph_binary_is_read_by_tensorflow_and_imports_back(tmp_path):
    cf = _concrete()
    path = em.io.write_graph(cf.graph, str(tmp_path / "logs"), "g.pb", as_text=False)
    assert path == os.path.join(str(tmp_path / "logs"), "g.pb")
    data = open(path, "rb").read()
    theirs = tf.compat.v1.GraphDef.FromString(data)
    assert [n.op for n in theirs.node] == [n.op for n in cf.graph.as_graph_def().node]
    graph = em.graph_util.import_graph_def(data)
    fn = em.NewGraphFunction(graph, inputs=["x:0"], outputs=[graph.get_operations()[-1].name + ":0"])
    np.testing.assert_array_equal(fn(em.constant([1.0, 2.0])).numpy(), [2.0, 5.0])
    # TensorFlow imports and runs it too.
    tf_fn = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(theirs, name=""), [])
    out = tf_fn.prune(feeds=["x:0"], fetches=[graph.get_operations()[-1].name + ":0"])
    (result,) = out(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(result.numpy(), [2.0, 5.0])


def test_write_graph_text(tmp_path):
    cf = _concrete()
    path = em.io.write_graph(cf.graph.as_graph_def(), str(tmp_path), "g.pbtxt")
    theirs = text_format.Parse(open(path).read(), tf.compat.v1.GraphDef())
    assert len(theirs.node) == len(cf.graph.as_graph_def().node)
    em.io.write_graph(cf, str(tmp_path), "again.pbtxt")  # a ConcreteFunction is accepted too
    assert sorted(os.listdir(tmp_path)) == ["again.pbtxt", "g.pbtxt"]  # no temporary left


def test_write_graph_rejects_other_values(tmp_path):
    with pytest.raises(TypeError, match="GraphDef"):
        em.io.write_graph(42, str(tmp_path), "x.pb")

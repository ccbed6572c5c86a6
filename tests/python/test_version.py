"""tf.version (python/ember/version.py): TensorFlow's names, of TensorFlow's types; the GraphDef versions
equal to TensorFlow 2.21's, so checks against a GraphDef's versions agree."""
import tensorflow as real_tf

import ember as tf

NAMES = ["COMPILER_VERSION", "GIT_VERSION", "GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER",
         "GRAPH_DEF_VERSION_MIN_PRODUCER", "VERSION"]


def test_names_and_types_match_tensorflow():
    assert sorted(n for n in dir(tf.version) if not n.startswith("_") and n.isupper()) == NAMES
    assert sorted(n for n in dir(real_tf.version) if not n.startswith("_")) == NAMES
    for name in NAMES:
        assert type(getattr(tf.version, name)) is type(getattr(real_tf.version, name)), name


def test_values():
    assert tf.version.VERSION == tf.__version__ and tf.version.VERSION.count(".") == 2
    assert tf.version.GIT_VERSION.startswith("v")
    assert tf.version.COMPILER_VERSION.split()[0] in ("GCC", "Clang")
    assert tf.version.GRAPH_DEF_VERSION == real_tf.version.GRAPH_DEF_VERSION
    assert tf.version.GRAPH_DEF_VERSION_MIN_CONSUMER == real_tf.version.GRAPH_DEF_VERSION_MIN_CONSUMER
    assert tf.version.GRAPH_DEF_VERSION_MIN_PRODUCER == real_tf.version.GRAPH_DEF_VERSION_MIN_PRODUCER


def test_exported_graph_defs_carry_the_version():
    fn = tf.function(lambda x: x + 1.0).get_concrete_function(tf.TensorSpec([2], tf.float32))
    graph_def = fn.graph.as_graph_def()
    assert graph_def.versions.producer == tf.version.GRAPH_DEF_VERSION

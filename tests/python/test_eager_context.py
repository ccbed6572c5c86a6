"""tf.executing_eagerly / tf.inside_function (python/ember/eager_context.py), and tf.group, tf.no_op, tf.tuple,
tf.identity_n, compared with TensorFlow: eagerly, while a function traces, under init_scope inside a trace,
and with functions run eagerly."""
import numpy as np
import pytest
import tensorflow

import ember


def _contexts(tf):
    seen = {"outside": (tf.executing_eagerly(), tf.inside_function())}

    @tf.function(autograph=False)
    def f(x):
        seen["tracing"] = (tf.executing_eagerly(), tf.inside_function())
        with tf.init_scope():
            seen["init_scope in a trace"] = (tf.executing_eagerly(), tf.inside_function())
        return x + 1

    f(tf.constant(1.0))
    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(2.0))
        seen["run eagerly"] = (tf.executing_eagerly(), tf.inside_function())
    finally:
        tf.config.run_functions_eagerly(False)
    with tf.init_scope():
        seen["init_scope outside"] = (tf.executing_eagerly(), tf.inside_function())
    return seen


def test_contexts_match_tensorflow():
    assert _contexts(ember) == _contexts(tensorflow)


@pytest.mark.parametrize("fw", [ember, tensorflow], ids=["ember", "tensorflow"])
def test_tuple_and_identity_n_values(fw):
    @fw.function(autograph=False)
    def f(x):
        a, b = fw.tuple([x, x * 2.0])
        c, d = fw.identity_n([x + 1.0, fw.cast(x, fw.int32)])
        return a, b, c, d

    for got in (f(fw.constant([1.5, 2.0])), (*fw.tuple([fw.constant([1.5, 2.0]), fw.constant([3.0, 4.0])]),
                                             *fw.identity_n([fw.constant([2.5, 3.0]), fw.constant([1, 2])]))):
        np.testing.assert_array_equal(got[0].numpy(), [1.5, 2.0])
        np.testing.assert_array_equal(got[1].numpy(), [3.0, 4.0])
        np.testing.assert_array_equal(got[2].numpy(), [2.5, 3.0])
        assert got[3].dtype == fw.int32


def test_group_and_no_op_return_none_eagerly_as_tensorflow():
    for fw in (ember, tensorflow):
        assert fw.group(fw.constant(1.0), [fw.constant(2)]) is None
        assert fw.no_op() is None
    assert ember.tuple([None, ember.constant(1)])[0] is None


def test_group_inside_a_function_keeps_the_stateful_updates_it_names():
    v = ember.Variable(0.0)

    @ember.function
    def step():
        return ember.group(v.assign_add(1.0), v.assign_add(2.0))

    assert step() is None
    assert float(v.numpy()) == 3.0

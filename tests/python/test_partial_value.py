"""Pad's paddings computed in the graph (graph/partial_value.cc, Note [Matrix partial values]): the static
shape a traced tf.pad gets, compared with TensorFlow's for the same function and input signature, and its
values compared with eager execution and with TensorFlow."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

# name -> build(module) -> fn(x) for x: float32 [None, 3]
CASES = {
    "constant_rows_stacked": lambda m: lambda x: m.pad(x, m.stack([m.constant([0, 0]), m.constant([1, 1])])),
    "stack_of_a_known_dim": lambda m: lambda x: m.pad(x, m.stack([[0, 0], [m.shape(x)[1], 1]])),
    "stack_with_an_unknown_row": lambda m: lambda x: m.pad(x, m.stack([[m.shape(x)[0], 0], [1, 1]])),
    "stack_along_axis_1": lambda m: lambda x: m.pad(x, m.stack([[0, 1], [0, m.shape(x)[1]]], axis=1)),
    "concat_of_rows": lambda m: lambda x: m.pad(x, m.concat([[[0, 0]], [[1, m.shape(x)[1]]]], 0)),
    "concat_of_expanded_vectors": lambda m: lambda x: m.pad(
        x, m.concat([m.expand_dims(m.constant([0, 0]), 0), m.expand_dims(m.stack([1, m.shape(x)[1]]), 0)], 0)),
    "reshape_of_a_vector": lambda m: lambda x: m.pad(x, m.reshape(m.stack([0, 0, 1, m.shape(x)[1]]), [2, 2])),
    "identity_of_a_constant": lambda m: lambda x: m.pad(x, m.identity(m.constant([[0, 0], [1, 1]]))),
    "cast_of_a_constant": lambda m: lambda x: m.pad(x, m.cast(m.constant([[0, 0], [1, 1]], m.int64), m.int32)),
    "product_with_a_dim": lambda m: lambda x: m.pad(x, m.constant([[0, 0], [1, 1]]) * m.shape(x)[1]),
    "transpose": lambda m: lambda x: m.pad(x, m.transpose(m.stack([[0, 1], [0, m.shape(x)[1]]]))),
    "row_slice": lambda m: lambda x: m.pad(x, m.stack([[9, 9], [0, 0], [2, m.shape(x)[1]]])[1:]),
    "reflect": lambda m: lambda x: m.pad(x, m.stack([[0, 0], [1, m.shape(x)[1] - 1]]), mode="REFLECT"),
    "symmetric_nested_list": lambda m: lambda x: m.pad(x, [[1, m.shape(x)[0]], [1, m.shape(x)[1]]],
                                                     mode="SYMMETRIC"),
    "unknown_row_in_a_nested_list": lambda m: lambda x: m.pad(x, [[m.shape(x)[0], 0], [1, m.shape(x)[1]]]),
}

# Where ember keeps a dimension TensorFlow loses (TensorFlow's tf.pad reads a nested list's rows only when
# each is constant, its C++ refiner a computed matrix only when all of it is).
EMBER_KNOWS_MORE = {"symmetric_nested_list": [None, 7], "unknown_row_in_a_nested_list": [None, 7]}


def _static_shape(module, build):
    fn = module.function(build(module), input_signature=[module.TensorSpec([None, 3], module.float32)])
    return fn, fn.get_concrete_function().structured_outputs.shape.as_list()


@pytest.mark.parametrize("case", sorted(CASES))
def test_traced_pad_keeps_what_tensorflow_knows(case):
    build = CASES[case]
    fn, ours = _static_shape(tf, build)
    real_fn, theirs = _static_shape(real_tf, build)
    if case in EMBER_KNOWS_MORE:
        assert ours == EMBER_KNOWS_MORE[case]
        assert all(t is None or t == o for o, t in zip(ours, theirs)) and len(ours) == len(theirs)
    else:
        assert ours == theirs
    assert ours[1] is not None  # every case knows the padded second dim
    for rows in (1, 4):
        x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        traced = fn(tf.constant(x)).numpy()
        assert list(traced.shape)[1] == ours[1]
        np.testing.assert_array_equal(traced, build(tf)(tf.constant(x)).numpy())
        np.testing.assert_array_equal(traced, real_fn(real_tf.constant(x)).numpy())


def test_paddings_of_unknown_values_give_the_rank():
    def build(m):
        return lambda x: m.pad(x, m.cast(m.stack([x[0, :2], x[0, 1:]]), m.int32))
    _, ours = _static_shape(tf, build)
    _, theirs = _static_shape(real_tf, build)
    assert ours == theirs == [None, None]


def test_a_negative_padding_computed_in_the_graph_is_the_ops_error():
    fn = tf.function(lambda x: tf.pad(x, tf.stack([[0, 0], [1, tf.shape(x)[0] - 5]])),
                     input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    assert fn.get_concrete_function().structured_outputs.shape.as_list() == [None, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Pad"):
        fn(tf.ones((2, 3)))

"""tf.sparse concat, split, softmax, minimum/maximum, fill_empty_rows, to_indicator, bincount, reset_shape
and map_values (python/ember/sparse/sparse_more_ops.py) against TensorFlow 2.21: each case runs with ember
and with TensorFlow (the module passed in), eagerly and inside ember.function; gradients where TF has them."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em


def _value(x):
    if isinstance(x, (em.SparseTensor, real_tf.SparseTensor)):
        return ("sparse", x.indices.numpy().tolist(), x.values.numpy().tolist(), x.dense_shape.numpy().tolist(),
                x.dtype.name)
    if isinstance(x, (tuple, list)):
        return tuple(_value(v) for v in x)
    return ("dense", x.numpy().tolist(), x.dtype.name, x.shape.as_list())


def _close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-5 * max(1.0, abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _both(case):
    theirs = _value(case(real_tf))
    assert _close(_value(case(em)), theirs)
    assert _close(_value(em.function(lambda: case(em))()), theirs)


def _a(m):
    return m.sparse.SparseTensor([[0, 1], [1, 0], [1, 2]], [1., 2., 3.], [2, 3])


def _unordered(m):
    return m.sparse.SparseTensor([[1, 0], [0, 1]], [1., 2.], [2, 3])


def _f(m):
    return m.sparse.SparseTensor([[1, 1], [3, 0], [1, 0]], [1, 2, 3], [5, 2])


CASES = {
    "concat_axis1_expand": lambda m: m.sparse.concat(1, [_a(m), m.sparse.SparseTensor([[0, 0], [1, 1]], [4., 5.],
                                                                                        [3, 2])],
                                                     expand_nonconcat_dims=True),
    "concat_axis0": lambda m: m.sparse.concat(0, [_a(m), m.sparse.SparseTensor([[0, 0]], [9.], [1, 3])]),
    "concat_axis_minus1": lambda m: m.sparse.concat(-1, [_a(m), m.sparse.SparseTensor([[0, 0], [1, 0]], [9., 8.],
                                                                                       [2, 1])]),
    "concat_unordered": lambda m: m.sparse.concat(1, [_unordered(m), _unordered(m)]),
    "concat_unordered_axis0": lambda m: m.sparse.concat(0, [_unordered(m), _unordered(m)]),
    "split": lambda m: m.sparse.split(sp_input=m.sparse.SparseTensor([[0, 0], [0, 4], [1, 2], [1, 3]],
                                                                     [1, 2, 3, 4], [2, 5]), num_split=3, axis=1),
    "split_axis0": lambda m: m.sparse.split(_a(m), 2, 0),
    "softmax": lambda m: m.sparse.softmax(m.sparse.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1]],
                                                                [1., 2., 3., 0.5, -1.], [3, 3])),
    "softmax_rank3": lambda m: m.sparse.softmax(m.sparse.SparseTensor([[0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 1, 0]],
                                                                      m.constant([1., 5., 2., 7.], m.float64),
                                                                      [2, 2, 3])),
    "maximum": lambda m: m.sparse.maximum(m.sparse.SparseTensor([[0, 0], [1, 1]], [-1., 2.], [2, 2]),
                                          m.sparse.SparseTensor([[0, 0], [0, 1]], [3., -4.], [2, 2])),
    "minimum": lambda m: m.sparse.minimum(m.sparse.SparseTensor([[0, 0], [1, 1]], [-1, 2], [2, 2]),
                                          m.sparse.SparseTensor([[0, 0], [0, 1]], [3, -4], [2, 2])),
    "fill_empty_rows": lambda m: m.sparse.fill_empty_rows(_f(m), -1),
    "fill_empty_rows_rank3": lambda m: m.sparse.fill_empty_rows(
        m.sparse.SparseTensor([[1, 0, 1]], [2.5], [3, 2, 2]), 0.5),
    "to_indicator": lambda m: m.sparse.to_indicator(m.sparse.SparseTensor([[0, 0], [0, 1], [1, 0], [1, 1]],
                                                                          [0, 3, 2, 2], [2, 4]), 5),
    "bincount_rows": lambda m: m.sparse.bincount(m.constant([[1, 1, 3], [2, 5, 1]]), axis=-1),
    "bincount_minlength": lambda m: m.sparse.bincount(m.constant([1, 1, 3, 7, 2]), minlength=9),
    "bincount_maxlength": lambda m: m.sparse.bincount(m.constant([1, 1, 3, 7, 2], m.int64), maxlength=3),
    "bincount_weights": lambda m: m.sparse.bincount(m.constant([1, 1, 3, 7, 2]),
                                                    weights=m.constant([1., -1., 2., 3., 4.])),
    "bincount_binary": lambda m: m.sparse.bincount(m.constant([[1, 1, 3], [2, 5, 1]]), binary_output=True, axis=-1),
    "bincount_sparse": lambda m: m.sparse.bincount(_f(m)),
    "bincount_sparse_rows": lambda m: m.sparse.bincount(_f(m), axis=-1),
    "bincount_ragged_rows": lambda m: m.sparse.bincount(m.ragged.constant([[1, 2], [3]]), axis=-1),
    "reset_shape_tight": lambda m: m.sparse.reset_shape(_f(m)),
    "reset_shape_new": lambda m: m.sparse.reset_shape(_f(m), [6, 3]),
    "map_values_binary": lambda m: m.sparse.map_values(m.multiply, _a(m), _a(m)),
    "map_values_unary": lambda m: m.sparse.map_values(m.ones_like, _a(m)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    _both(CASES[name])


def _gradient(m, fn):
    values = m.Variable([1., 2., 3., 0.5, -1.])
    with m.GradientTape() as tape:
        sp = m.sparse.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1]], values, [3, 3])
        out = fn(m, sp)
        loss = m.reduce_sum(out.values * m.constant(np.arange(1., 1. + out.values.shape[0], dtype=np.float32)))
    return tape.gradient(loss, values).numpy().tolist()


@pytest.mark.parametrize("fn", [
    lambda m, sp: m.sparse.softmax(sp),
    lambda m, sp: m.sparse.fill_empty_rows(m.sparse.reset_shape(sp, [5, 3]), 0.)[0],
    lambda m, sp: m.sparse.map_values(m.square, sp),
], ids=["softmax", "fill_empty_rows", "map_values"])
def test_gradients_match_tensorflow(fn):
    assert _close(_gradient(em, fn), _gradient(real_tf, fn))


def test_concat_shape_mismatch_is_invalid_argument():
    with pytest.raises(em.errors.InvalidArgumentError, match="SparseConcat: Input shapes must match: expected 2 "
                                                             "for dimension 0 but got 3 at position 1"):
        em.sparse.concat(1, [_a(em), em.sparse.SparseTensor([[0, 0]], [4.], [3, 2])])


def test_reset_shape_smaller_is_value_error():
    with pytest.raises(ValueError, match="Requested new_shape should have dimension sizes >= sp_input.shape"):
        em.sparse.reset_shape(_f(em), [2, 2])


def test_maximum_needs_equal_shapes():
    with pytest.raises(em.errors.InvalidArgumentError, match="SparseSparseMaximum: Operands' shapes do not match"):
        em.sparse.maximum(_a(em), em.sparse.SparseTensor([[0, 0]], [4.], [3, 2]))


def test_to_indicator_value_out_of_vocabulary():
    with pytest.raises(em.errors.InvalidArgumentError, match="to_indicator: values must be in \\[0, vocab_size=3\\)"):
        em.sparse.to_indicator(em.sparse.SparseTensor([[0, 0]], [5], [1, 2]), 3)


def test_bincount_bad_axis_and_negative_values():
    with pytest.raises(em.errors.InvalidArgumentError, match="axis must be 0 or -1"):
        em.sparse.bincount(em.constant([1]), axis=1)
    with pytest.raises(em.errors.InvalidArgumentError, match="must be non-negative"):
        em.sparse.bincount(em.constant([1, -2]))


def test_softmax_needs_floats():
    with pytest.raises(TypeError, match="SparseSoftmax: values must be floating point, got int32"):
        em.sparse.softmax(_f(em))


def test_split_into_more_pieces_than_elements_is_invalid_argument():
    one = lambda m: m.sparse.SparseTensor([[0, 0]], [1], [1, 1])  # noqa: E731
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="between 1 and the splitting dimension size"):
        real_tf.sparse.split(one(real_tf), 3, 0)
    with pytest.raises(em.errors.InvalidArgumentError,
                       match="SparseSplit: Input num_split should be between 1 and the splitting dimension size "
                             "\\(1\\), got 3"):
        em.sparse.split(one(em), 3, 0)


def test_traced_with_unknown_shapes_matches_tensorflow():
    def ops(m, s):
        return (m.sparse.bincount(s, axis=-1), m.sparse.fill_empty_rows(s, 7)[0], m.sparse.concat(1, [s, s]),
                m.sparse.split(s, 2, 0)[1], m.sparse.reset_shape(s), m.sparse.to_indicator(s, 6))

    def value(m):
        return m.sparse.SparseTensor([[0, 0], [0, 3], [2, 0]], m.constant([5, 1, 3]), [4, 4])

    traced = em.function(lambda s: ops(em, s), input_signature=[em.sparse.SparseTensorSpec([None, None], em.int32)])
    assert _value(traced(value(em))) == _value(ops(real_tf, value(real_tf)))

"""tf.sets (python/ember/sets.py) against TensorFlow 2.21: each case runs with ember and with TensorFlow
(the module passed in), eagerly and inside ember.function / tf.function; indices, values, dense shapes and
dtypes must agree."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em


def _value(x):
    if isinstance(x, (em.SparseTensor, real_tf.SparseTensor)):
        return ("sparse", x.indices.numpy().tolist(), x.values.numpy().tolist(), x.dense_shape.numpy().tolist(),
                x.dtype.name)
    return ("dense", x.numpy().tolist(), x.dtype.name, x.shape.as_list())


def _both(case, traced):
    ours, theirs = case(em), case(real_tf)
    assert _value(ours) == _value(theirs)
    if traced:
        assert _value(em.function(lambda: case(em))()) == _value(theirs)


def _sparse(m, dtype):
    return m.sparse.SparseTensor([[0, 0], [0, 3], [1, 1], [2, 0], [2, 2]],
                                 m.constant([5, 1, 5, 3, 3], dtype), [3, 4])


def _sparse_strings(m):
    return m.sparse.SparseTensor([[0, 1], [1, 0], [1, 2], [2, 0]], m.constant(["b", "a", "c", "a"]), [3, 3])


DENSE_CASES = {
    "intersection": lambda m: m.sets.intersection(m.constant([[1, 2, 3, 3], [4, 5, 6, 6]], m.int64),
                                                  m.constant([[2, 2, 7], [9, 9, 9]], m.int64)),
    "union": lambda m: m.sets.union(m.constant([[1, 2, 3, 3], [4, 5, 6, 6]]), m.constant([[2, 2, 7], [9, 9, 9]])),
    "difference": lambda m: m.sets.difference(m.constant([[1, 2, 3, 3], [4, 5, 6, 6]]),
                                              m.constant([[2, 2, 7], [9, 9, 9]])),
    "b_minus_a": lambda m: m.sets.difference(m.constant([[1, 2, 3, 3], [4, 5, 6, 6]], m.int16),
                                             m.constant([[2, 2, 7], [9, 9, 9]], m.int16), aminusb=False),
    "strings": lambda m: m.sets.union(m.constant([["a", "b"], ["c", "a"]]), m.constant([["z"], ["a"]])),
    "empty_result": lambda m: m.sets.intersection(m.constant([[1], [2]]), m.constant([[3], [4]])),
    "zero_width": lambda m: m.sets.union(m.zeros([2, 0], m.int32), m.zeros([2, 0], m.int32)),
    "rank3": lambda m: m.sets.union(m.constant([[[1, 2], [3, 3]]]), m.constant([[[1], [4]]])),
    "uint8": lambda m: m.sets.difference(m.constant([[200, 3, 1]], m.uint8), m.constant([[3]], m.uint8)),
}

SPARSE_CASES = {
    "size": lambda m: m.sets.size(_sparse(m, m.int32)),
    "size_strings": lambda m: m.sets.size(_sparse_strings(m)),
    "size_unvalidated": lambda m: m.sets.size(m.sparse.SparseTensor([[0, 1], [0, 0]], m.constant([5, 1]), [1, 4]),
                                              validate_indices=False),
    "sparse_dense_intersection": lambda m: m.sets.intersection(_sparse(m, m.int32),
                                                               m.constant([[1, 2, 3, 3]] * 3)),
    "dense_sparse_union": lambda m: m.sets.union(m.constant([[1, 2], [7, 7], [3, 9]], m.int64),
                                                 _sparse(m, m.int64)),
    "sparse_sparse_union": lambda m: m.sets.union(_sparse(m, m.int32), m.sparse.SparseTensor(
        [[0, 0], [2, 1]], m.constant([8, 3]), [3, 2])),
    "sparse_dense_difference": lambda m: m.sets.difference(_sparse(m, m.int32), m.constant([[5], [0], [3]])),
    "dense_sparse_difference": lambda m: m.sets.difference(m.constant([[5, 6], [0, 5], [3, 4]]),
                                                           _sparse(m, m.int32)),
    "sparse_b_minus_a": lambda m: m.sets.difference(_sparse(m, m.int32), m.constant([[5, 6], [0, 5], [3, 4]]),
                                                    aminusb=False),
    "sparse_strings": lambda m: m.sets.intersection(_sparse_strings(m), m.constant([["b", "x"], ["c", "c"],
                                                                                    ["y", "a"]])),
}


@pytest.mark.parametrize("name", sorted(DENSE_CASES))
def test_dense_operands_match_tensorflow(name):
    _both(DENSE_CASES[name], traced=True)


@pytest.mark.parametrize("name", sorted(SPARSE_CASES))
def test_sparse_operands_match_tensorflow(name):
    _both(SPARSE_CASES[name], traced=True)


def test_traced_result_has_static_rank_and_dtype():
    @em.function(input_signature=[em.TensorSpec([None, None], em.int32)])
    def f(a):
        out = em.sets.union(a, a)
        assert out.indices.shape.as_list() == [None, 2] and out.dense_shape.shape.as_list() == [2]
        return out

    out = f(em.constant([[3, 1, 3]]))
    assert _value(out) == ("sparse", [[0, 0], [0, 1]], [1, 3], [1, 2], "int32")


def test_size_needs_a_sparse_tensor():
    with pytest.raises(TypeError, match="expected a SparseTensor, got"):
        em.sets.size(em.constant([[1, 2]]))
    with pytest.raises(TypeError):
        real_tf.sets.size(real_tf.constant([[1, 2]]))


def test_unsupported_dtype_and_mismatched_dtypes_are_type_errors():
    with pytest.raises(TypeError, match="invalid dtype float32"):
        em.sets.union(em.constant([[1.]]), em.constant([[1.]]))
    with pytest.raises(TypeError, match="types don't match, int32 vs int64"):
        em.sets.union(em.constant([[1]]), em.constant([[1]], em.int64))


def test_rank_one_operand_is_invalid_argument():
    with pytest.raises(em.errors.InvalidArgumentError, match="DenseToDenseSetOperation: Shape \\[2\\] has rank 1 < 2"):
        em.sets.union(em.constant([1, 2]), em.constant([1]))
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="rank 1 < 2"):
        real_tf.sets.union(real_tf.constant([1, 2]), real_tf.constant([1]))


def test_scalar_operands_are_invalid_argument():
    with pytest.raises(em.errors.InvalidArgumentError, match="Shape \\[\\] has rank 0 < 2"):
        em.sets.union(em.constant("a b"), em.constant("a"))
    with pytest.raises(em.errors.InvalidArgumentError, match="Shape \\[\\] has rank 0 < 2"):
        em.function(lambda: em.sets.union(em.constant("a b"), em.constant("a")))()


def test_validate_indices_rejects_unordered_indices():
    unordered = em.sparse.SparseTensor([[0, 1], [0, 0]], em.constant([5, 1]), [1, 4])
    with pytest.raises(em.errors.InvalidArgumentError, match="SetSize: indices\\[1\\] = \\[0,0\\] is out of order"):
        em.sets.size(unordered)
    with pytest.raises(em.errors.InvalidArgumentError, match="out of order"):
        em.sets.union(unordered, em.constant([[1]]))
    assert _value(em.sets.union(unordered, em.constant([[1]]), validate_indices=False))[2] == [1, 5]


def test_group_shapes_must_agree():
    with pytest.raises(em.errors.InvalidArgumentError, match="DenseToDenseSetOperation: Mismatched shapes \\[1\\] vs \\[2\\]"):
        em.sets.union(em.constant([[1, 2]]), em.constant([[1], [2]]))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.sets.union(real_tf.constant([[1, 2]]), real_tf.constant([[1], [2]]))

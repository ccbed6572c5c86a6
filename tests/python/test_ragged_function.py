"""RaggedTensors as ember.function arguments and results (Note [Composite arguments] in
polymorphic_function.py), against TensorFlow's tf.function."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em


def _both(fn_body, **kwargs):
    """The same function body as an ember.function and a tf.function."""
    return em.function(fn_body(em), **kwargs), real_tf.function(fn_body(real_tf), **kwargs)


def test_argument_and_result_retrace_only_for_nrows():
    def body(m):
        def f(rt):
            return rt * 2, m.reduce_sum(rt, axis=1)
        return f

    ef, tf_f = _both(body)
    for rows in ([[1, 2], [3], []], [[1], [3, 4, 5], [6]], [[1], [3, 4, 5]]):
        got, want = ef(em.ragged.constant(rows)), tf_f(real_tf.ragged.constant(rows))
        assert got[0].to_list() == want[0].to_list()
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    # New row lengths reuse the trace; a new number of rows traces again, as in TensorFlow.
    assert ef.experimental_get_tracing_count() == tf_f.experimental_get_tracing_count() == 2
    assert ef.pretty_printed_concrete_signatures() == tf_f.pretty_printed_concrete_signatures()


def test_input_signature_ragged_tensor_spec():
    calls = []

    @em.function(input_signature=[em.RaggedTensorSpec([None, None], em.int32, 1)])
    def g(rt):
        calls.append(1)
        return rt + 1

    assert g(em.ragged.constant([[1, 2], [3], []])).to_list() == [[2, 3], [4], []]
    assert g(em.ragged.constant([[1], [3, 4, 5]])).to_list() == [[2], [4, 5, 6]]
    assert len(calls) == 1
    sig = g.get_concrete_function().structured_input_signature
    assert sig == ((em.RaggedTensorSpec([None, None], em.int32, 1),), {})
    with pytest.raises(TypeError, match="RaggedTensorSpec"):
        g(em.ragged.constant([[1.]]))  # float32 values against an int32 spec
    with pytest.raises(TypeError, match="RaggedTensorSpec"):
        g(em.constant([[1, 2]]))


def test_ragged_rank_2_and_int32_splits_and_nested_structures():
    @em.function
    def f(pair):
        a, b = pair
        return {"sum": em.reduce_sum(a, axis=2), "b": b.merge_dims(0, 1)}

    a = em.ragged.constant([[[1, 2], [3]], [[4]]])
    b = em.ragged.constant([[1], [2, 3]], row_splits_dtype=em.int32)
    out = f((a, b))
    assert out["sum"].to_list() == [[3, 3], [4]] and out["b"].numpy().tolist() == [1, 2, 3]
    out = f((em.ragged.constant([[[5], [6, 7]], [[8, 9, 10]]]), em.ragged.constant([[1, 2], [3]],
                                                                                  row_splits_dtype=em.int32)))
    assert out["sum"].to_list() == [[5, 13], [27]]
    assert f.experimental_get_tracing_count() == 1


def test_ragged_built_inside_from_dense_arguments():
    @em.function
    def h(values, lengths):
        rt = em.RaggedTensor.from_row_lengths(values, lengths)
        return rt, rt.to_tensor()

    rt, dense = h(em.constant([1., 2., 3.]), em.constant([2, 0, 1], em.int64))
    assert rt.to_list() == [[1., 2.], [], [3.]]
    np.testing.assert_array_equal(dense.numpy(), [[1, 2], [0, 0], [3, 0]])
    rt, _ = h(em.constant([1., 2., 3., 4.]), em.constant([1, 3, 0], em.int64))
    assert rt.to_list() == [[1.], [2., 3., 4.], []]


def test_gradient_through_function_with_ragged_argument():
    values = em.Variable([1., 2., 3.])

    @em.function
    def loss(splits):
        rt = em.RaggedTensor.from_row_splits(values * 1.0, splits)
        return em.reduce_sum(em.reduce_max(rt, axis=1))

    with em.GradientTape() as tape:
        y = loss(em.constant([0, 2, 3], em.int64))
    np.testing.assert_allclose(tape.gradient(y, values).numpy(), [0., 1., 1.])

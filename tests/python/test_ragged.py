"""tf.RaggedTensor and tf.ragged against TensorFlow 2.21: each case runs once with ember and once with
TensorFlow (the same code, the module passed in) and the values, dtypes and static shapes must agree."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em


def _value(x):
    if isinstance(x, (em.RaggedTensor, real_tf.RaggedTensor)):
        splits = [s.dtype.name for s in x.nested_row_splits]
        return ("ragged", x.to_list(), x.dtype.name, splits, x.shape.as_list() if x.shape.rank is not None else None)
    if isinstance(x, (tuple, list)):
        return tuple(_value(v) for v in x)
    return ("dense", np.asarray(x).tolist(), x.dtype.name, x.shape.as_list())


def _close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-5 * max(1.0, abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def rc(m, *a, **k):
    return m.ragged.constant(*a, **k)


CASES = {
    "constant": lambda m: rc(m, [[1, 2], [3], []]),
    "constant_float": lambda m: rc(m, [[1.5], [], [2.0, 3.0]]),
    "constant_bool": lambda m: rc(m, [[True], [False, True]]),
    "constant_dtype": lambda m: rc(m, [[1, 2], [3]], dtype=m.float64),
    "constant_rank3": lambda m: rc(m, [[[1, 2], [3]], [[4]]]),
    "constant_ragged_rank1": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1),
    "constant_inner_shape": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], inner_shape=(2,)),
    "constant_empty_rows": lambda m: rc(m, [[], []]),
    "constant_int32_splits": lambda m: rc(m, [[1], [2, 3]], row_splits_dtype=m.int32),
    "from_row_splits": lambda m: m.RaggedTensor.from_row_splits([3, 1, 4, 1, 5], [0, 2, 2, 5]),
    "from_row_splits_int32": lambda m: m.RaggedTensor.from_row_splits([3., 1.], m.constant([0, 1, 2], m.int32)),
    "from_row_lengths": lambda m: m.RaggedTensor.from_row_lengths([3, 1, 4, 1], [2, 0, 2]),
    "from_value_rowids": lambda m: m.RaggedTensor.from_value_rowids([3, 1, 4], [0, 0, 2], nrows=4),
    "from_value_rowids_no_nrows": lambda m: m.RaggedTensor.from_value_rowids([3, 1, 4], [0, 2, 2]),
    "from_row_starts": lambda m: m.RaggedTensor.from_row_starts([3, 1, 4, 1], [0, 2, 2]),
    "from_row_limits": lambda m: m.RaggedTensor.from_row_limits([3, 1, 4, 1], [2, 2, 4]),
    "from_uniform_row_length": lambda m: m.RaggedTensor.from_uniform_row_length([1, 2, 3, 4, 5, 6], 2),
    "from_nested_row_splits": lambda m: m.RaggedTensor.from_nested_row_splits([1, 2, 3, 4], [[0, 2, 3], [0, 1, 3, 4]]),
    "from_tensor": lambda m: m.RaggedTensor.from_tensor([[1, 2], [3, 4]]),
    "from_tensor_padding": lambda m: m.RaggedTensor.from_tensor([[1, 0, 0], [2, 0, 3], [0, 0, 0]], padding=0),
    "from_tensor_padding_3d": lambda m: m.RaggedTensor.from_tensor([[[1, 1], [0, 0]], [[0, 0], [0, 2]]],
                                                                   padding=[0, 0]),
    "from_tensor_lengths": lambda m: m.RaggedTensor.from_tensor([[1, 2, 3], [4, 5, 6]], lengths=[1, 3]),
    "from_tensor_ragged_rank2": lambda m: m.RaggedTensor.from_tensor(m.reshape(m.range(12), [2, 3, 2]),
                                                                     ragged_rank=2),
    "components": lambda m: (lambda r: (r.values, r.row_splits, r.flat_values, r.row_lengths(), r.value_rowids(),
                                        r.nrows(), r.row_starts(), r.row_limits(), r.bounding_shape()))(
        rc(m, [[1, 2], [], [3]])),
    "nested_components": lambda m: (lambda r: tuple(r.nested_row_splits) + tuple(r.nested_row_lengths()) +
                                    (r.row_lengths(axis=2),))(rc(m, [[[1, 2], [3]], [[4]], []])),
    "to_tensor": lambda m: rc(m, [[1, 2], [3], []]).to_tensor(),
    "to_tensor_default": lambda m: rc(m, [[1., 2.], [3.]]).to_tensor(default_value=-1.),
    "to_tensor_shape_cut": lambda m: rc(m, [[1, 2, 3], [4], [5, 6]]).to_tensor(shape=[2, 2]),
    "to_tensor_shape_pad": lambda m: rc(m, [[1, 2], [4]]).to_tensor(shape=[3, 4]),
    "to_tensor_shape_none": lambda m: rc(m, [[1, 2], [4]]).to_tensor(shape=[None, 4]),
    "to_tensor_default_inner": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1).to_tensor(
        default_value=[7, 8]),
    "to_tensor_rank3_shape": lambda m: rc(m, [[[1, 2], [3]], [[4]]]).to_tensor(shape=[3, 1, 3]),
    "to_tensor_rank3": lambda m: rc(m, [[[1, 2], [3]], [[4]]]).to_tensor(),
    "to_tensor_inner": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1).to_tensor(default_value=7),
    "getitem_row": lambda m: rc(m, [[1, 2], [3], []])[0],
    "getitem_neg_row": lambda m: rc(m, [[1, 2], [3], []])[-2],
    "getitem_rows": lambda m: rc(m, [[1, 2], [3], [], [4]])[1:3],
    "getitem_step": lambda m: rc(m, [[1, 2], [3], [], [4]])[::2],
    "getitem_row_then_col": lambda m: rc(m, [[1, 2], [3], []])[0, 1],
    "getitem_inner_slice": lambda m: rc(m, [[1, 2, 3], [4], []])[:, 1:],
    "getitem_inner_slice_neg": lambda m: rc(m, [[1, 2, 3], [4], []])[:, -2:],
    "getitem_uniform_inner": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)[:, :, 1],
    "getitem_rank3": lambda m: rc(m, [[[1, 2], [3]], [[4]]])[0],
    "getitem_rank3_inner": lambda m: rc(m, [[[1, 2], [3]], [[4, 5, 6]]])[:, :, :1],
    "add_scalar": lambda m: rc(m, [[1, 2], [3]]) + 1,
    "radd_scalar": lambda m: 1 + rc(m, [[1, 2], [3]]),
    "sub_same_splits": lambda m: rc(m, [[1, 2], [3]]) - rc(m, [[5, 6], [7]]),
    "mul": lambda m: rc(m, [[1., 2.], [3.]]) * rc(m, [[2., 2.], [2.]]),
    "div": lambda m: rc(m, [[1., 2.], [3.]]) / 2.,
    "rdiv": lambda m: 2. / rc(m, [[1., 2.], [4.]]),
    "neg": lambda m: -rc(m, [[1, 2], [3]]),
    "compare": lambda m: rc(m, [[1, 2], [3]]) > 1,
    "tf_add": lambda m: m.add(rc(m, [[1, 2], [3]]), rc(m, [[1, 1], [1]])),
    "tf_math_sin": lambda m: m.math.sin(rc(m, [[1., 2.], [3.]])),
    "tf_math_maximum": lambda m: m.math.maximum(rc(m, [[1, 5], [3]]), 2),
    "tf_cast": lambda m: m.cast(rc(m, [[1, 2], [3]]), m.float32),
    "broadcast_column": lambda m: rc(m, [[1, 2], [3], []]) + m.constant([[10], [20], [30]]),
    "broadcast_inner": lambda m: rc(m, [[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1) * m.constant([1, 10]),
    "broadcast_rank3_column": lambda m: rc(m, [[[1], [2, 3]], [[4]]]) + m.constant([[[100]], [[200]]]),
    "map_flat_values": lambda m: m.ragged.map_flat_values(m.ones_like, rc(m, [[1, 2], [3]])),
    "map_flat_values_two": lambda m: m.ragged.map_flat_values(m.add, rc(m, [[1, 2], [3]]), rc(m, [[3, 4], [5]])),
    "reduce_sum_1": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []]), axis=1),
    "reduce_sum_0": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []]), axis=0),
    "reduce_sum_all": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []])),
    "reduce_sum_neg": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []]), axis=-1),
    "reduce_max_1": lambda m: m.reduce_max(rc(m, [[1., 2.], [3.], []]), axis=1),
    "reduce_min_0": lambda m: m.reduce_min(rc(m, [[1, 5], [3]]), axis=0),
    "reduce_prod_1": lambda m: m.reduce_prod(rc(m, [[1, 5], [3]]), axis=1),
    "reduce_mean_1": lambda m: m.reduce_mean(rc(m, [[1., 2.], [3.], [4., 5., 6.]]), axis=1),
    "reduce_mean_0": lambda m: m.reduce_mean(rc(m, [[1., 2.], [3.], [4., 5., 6.]]), axis=0),
    "reduce_mean_int": lambda m: m.reduce_mean(rc(m, [[1, 2], [3]]), axis=0),
    "reduce_any_1": lambda m: m.reduce_any(rc(m, [[True, False], [False], []]), axis=1),
    "reduce_all_1": lambda m: m.reduce_all(rc(m, [[True, False], [True], []]), axis=1),
    "reduce_rank3_0": lambda m: m.reduce_sum(rc(m, [[[1, 2], [3]], [[4]], []]), axis=0),
    "reduce_rank3_1": lambda m: m.reduce_sum(rc(m, [[[1, 2], [3]], [[4]], []]), axis=1),
    "reduce_rank3_2": lambda m: m.reduce_sum(rc(m, [[[1, 2], [3]], [[4]], []]), axis=2),
    "reduce_rank3_12": lambda m: m.reduce_sum(rc(m, [[[1, 2], [3]], [[4]], []]), axis=[1, 2]),
    "reduce_keepdims_1": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []]), axis=1, keepdims=True),
    "reduce_keepdims_0": lambda m: m.reduce_max(rc(m, [[1, 2], [3], []]), axis=0, keepdims=True),
    "reduce_keepdims_all": lambda m: m.reduce_sum(rc(m, [[1, 2], [3], []]), keepdims=True),
    "reduce_mean_keepdims": lambda m: m.reduce_mean(rc(m, [[1., 2.], [3.]]), axis=1, keepdims=True),
    "reduce_inner_uniform": lambda m: m.reduce_sum(rc(m, [[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1), axis=2),
    "concat_0": lambda m: m.concat([rc(m, [[1, 2], [3]]), rc(m, [[4], [], [5]])], axis=0),
    "concat_1": lambda m: m.concat([rc(m, [[1, 2], [3]]), rc(m, [[4], [5, 6]])], axis=1),
    "concat_dense": lambda m: m.concat([rc(m, [[1, 2], [3]]), m.constant([[7, 8]])], axis=0),
    "stack_0": lambda m: m.stack([rc(m, [[1, 2], [3]]), rc(m, [[4], [], [5]])], axis=0),
    "stack_1": lambda m: m.stack([rc(m, [[1, 2], [3]]), rc(m, [[4], [5, 6]])], axis=1),
    "ragged_stack": lambda m: m.ragged.stack([rc(m, [[1, 2], [3]]), rc(m, [[4]])]),
    "gather": lambda m: m.gather(rc(m, [[1, 2], [3], [], [4, 5, 6]]), [3, 0, 0]),
    "gather_rank3": lambda m: m.gather(rc(m, [[[1, 2], [3]], [[4]], []]), [1, 0]),
    "gather_2d_indices": lambda m: m.gather(rc(m, [[1, 2], [3], [4]]), [[0, 1], [2, 2]]),
    "gather_ragged_indices": lambda m: m.gather(m.constant([10, 20, 30]), rc(m, [[0, 2], [1]])),
    "merge_dims_01": lambda m: rc(m, [[[1, 2], [3]], [[4]]]).merge_dims(0, 1),
    "merge_dims_12": lambda m: rc(m, [[[1, 2], [3]], [[4]]]).merge_dims(1, 2),
    "merge_dims_02": lambda m: rc(m, [[[1, 2], [3]], [[4]]]).merge_dims(0, 2),
    "merge_dims_inner": lambda m: rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1).merge_dims(1, 2),
    "with_values": lambda m: rc(m, [[1, 2], [3]]).with_values(m.constant([7., 8., 9.])),
    "ragged_range": lambda m: m.ragged.range([3, 5, 0]),
    "ragged_range_starts": lambda m: m.ragged.range([0, 5], [4, 8], 2),
    "row_splits_to_segment_ids": lambda m: m.ragged.row_splits_to_segment_ids([0, 2, 2, 5]),
    "segment_ids_to_row_splits": lambda m: m.ragged.segment_ids_to_row_splits([0, 0, 2], num_segments=4),
    "boolean_mask": lambda m: m.ragged.boolean_mask(rc(m, [[1, 2, 3], [4]]), rc(m, [[True, False, True], [False]])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    expected = _value(CASES[name](real_tf))
    actual = _value(CASES[name](em))
    assert _close(actual, expected), f"{name}:\n ember {actual}\n    tf {expected}"


@pytest.mark.parametrize("name", ["to_tensor", "reduce_sum_1", "reduce_rank3_1", "getitem_inner_slice", "gather",
                                  "concat_1", "stack_1", "merge_dims_12", "broadcast_column", "from_tensor_padding",
                                  "from_value_rowids", "to_tensor_shape_cut", "reduce_mean_0"])
def test_inside_function(name):
    """The same case built inside an ember.function (the row partitions are graph values there)."""
    expected = _value(CASES[name](em))
    actual = _value(em.function(lambda: CASES[name](em))())
    assert _close(actual[:3] if expected[0] == "ragged" else actual, expected[:3] if expected[0] == "ragged"
                  else expected)


def test_repr_and_numpy():
    rt = em.ragged.constant([[1, 2], [3], []])
    assert repr(rt) == "<tf.RaggedTensor [[1, 2], [3], []]>"
    assert str(rt) == repr(real_tf.ragged.constant([[1, 2], [3], []]))
    rows = rt.numpy()
    assert rows.dtype == object and [r.tolist() for r in rows] == [[1, 2], [3], []]
    assert rt.shape.as_list() == [3, None] and rt.ragged_rank == 1


@pytest.mark.parametrize("splits, message", [([0, 2, 4], "must equal the number of values"),
                                             ([1, 2, 3], "must start with 0"),
                                             ([0, 3, 2], "sorted in ascending order"),
                                             ([], "at least one element")])
def test_bad_row_splits_raise(splits, message):
    with pytest.raises(em.errors.InvalidArgumentError, match=message) as info:
        em.RaggedTensor.from_row_splits([1, 2, 3], splits)
    assert "RaggedTensor.from_row_splits" in str(info.value)


def test_bad_value_rowids_and_lengths_raise():
    with pytest.raises(em.errors.InvalidArgumentError, match="from_value_rowids"):
        em.RaggedTensor.from_value_rowids([1, 2, 3], [0, 2, 1])
    with pytest.raises(em.errors.InvalidArgumentError, match="from_row_lengths"):
        em.RaggedTensor.from_row_lengths([1, 2, 3], [4, -1])
    with pytest.raises(em.errors.InvalidArgumentError, match="RaggedGather"):
        em.gather(em.ragged.constant([[1], [2]]), [2])
    with pytest.raises(em.errors.InvalidArgumentError, match="identical row partitions"):
        em.ragged.constant([[1, 2], [3]]) + em.ragged.constant([[1], [2, 3]])


def test_to_tensor_shape_must_keep_inner_dims_as_tensorflow():
    for m in (em, real_tf):
        with pytest.raises(m.errors.InvalidArgumentError):
            rc(m, [[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1).to_tensor(shape=[2, 3, 1])


def test_tensorflow_errors_mirrored():
    rt = em.ragged.constant([[1, 2], [3]])
    with pytest.raises(ValueError, match="Cannot index into an inner ragged dimension"):
        rt[:, 0]
    with pytest.raises(ValueError, match="RaggedTensor constructor is private"):
        em.RaggedTensor(rt.values, rt.row_splits)
    with pytest.raises(ValueError, match="same nesting depth"):
        em.ragged.constant([[1, [2]], [3]])
    with pytest.raises(TypeError, match="RaggedTensor"):
        em.convert_to_tensor(rt)  # never silently densified (equal-length rows would be)


def test_gradient_through_flat_values():
    values = em.constant([1., 2., 3., 4.])
    with em.GradientTape() as tape:
        tape.watch(values)
        rt = em.RaggedTensor.from_row_splits(values, [0, 3, 3, 4])
        dense = (rt * rt).to_tensor(default_value=5.)
        y = em.reduce_sum(dense * em.constant([[1., 2., 3.], [1., 1., 1.], [4., 1., 1.]])) + \
            em.reduce_sum(em.reduce_max(rt, axis=1))
    grad = tape.gradient(y, values)
    tv = real_tf.constant([1., 2., 3., 4.])
    with real_tf.GradientTape() as tape:
        tape.watch(tv)
        rt = real_tf.RaggedTensor.from_row_splits(tv, [0, 3, 3, 4])
        dense = (rt * rt).to_tensor(default_value=5.)
        y = real_tf.reduce_sum(dense * real_tf.constant([[1., 2., 3.], [1., 1., 1.], [4., 1., 1.]])) + \
            real_tf.reduce_sum(real_tf.reduce_max(rt, axis=1))
    np.testing.assert_allclose(grad.numpy(), tape.gradient(y, tv).numpy())


def test_gradient_reduce_mean_and_gather():
    values = em.constant([1., 2., 3., 4.])
    with em.GradientTape() as tape:
        tape.watch(values)
        rt = em.RaggedTensor.from_row_lengths(values, [1, 3])
        y = em.reduce_sum(em.reduce_mean(em.gather(rt, [1, 1, 0]), axis=1) * em.constant([1., 2., 3.]))
    np.testing.assert_allclose(tape.gradient(y, values).numpy(), [3., 1., 1., 1.])


def test_dataset_from_tensor_slices_of_ragged():
    rows = [[1, 2], [3], [], [4, 5, 6]]
    ds = em.data.Dataset.from_tensor_slices(em.ragged.constant(rows))
    tds = real_tf.data.Dataset.from_tensor_slices(real_tf.ragged.constant(rows))
    assert [x.numpy().tolist() for x in ds] == [x.numpy().tolist() for x in tds] == rows
    assert len(ds) == 4
    got = [x.numpy().tolist() for x in ds.map(lambda x: x * 2).padded_batch(2)]
    want = [x.numpy().tolist() for x in tds.map(lambda x: x * 2).padded_batch(2)]
    assert got == want


def test_dispatch_takes_tensorflows_keyword_names():
    rt = em.ragged.constant([[1, 2], [3]])
    assert em.ones_like(input=rt).to_list() == [[1, 1], [1]]
    assert em.reduce_sum(input_tensor=rt, axis=1).numpy().tolist() == [3, 3]
    assert em.concat(values=[rt, rt], axis=0).to_list() == [[1, 2], [3], [1, 2], [3]]
    assert em.gather(params=rt, indices=[1]).to_list() == [[3]]
    assert em.math.add(x=rt, y=1).to_list() == [[2, 3], [4]]
    assert em.cast(rt, dtype=em.float32).dtype == em.float32
    # Dense arguments pass straight through to the original functions.
    assert em.reduce_sum(input_tensor=em.constant([1, 2]), axis=0).numpy() == 3
    assert em.concat(values=[em.constant([1]), em.constant([2])], axis=0).numpy().tolist() == [1, 2]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//"])
def test_dense_operator_ragged_calls_the_ragged_reflected_method(op):
    # Tensor's operator slot returns NotImplemented when the right operand does not convert but defines the
    # reflected method, so RaggedTensor.__radd__ and the others run, as in TensorFlow.
    def run(tf):
        dense = tf.constant([[2.0], [4.0]])
        ragged = tf.ragged.constant([[1.0, 2.0], [3.0]])
        return eval(f"dense {op} ragged").to_list()

    assert run(em) == run(real_tf)


def test_dense_operator_unconvertible_value_still_names_the_problem():
    class NoReflection:
        pass

    with pytest.raises((TypeError, ValueError)):
        em.constant([1.0]) + NoReflection()

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
    message = "DenseToDenseSetOperation: Mismatched shapes \\[1\\] vs \\[2\\]"  # TensorFlow's words
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        em.sets.union(em.constant([[1, 2]]), em.constant([[1], [2]]))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.sets.union(real_tf.constant([[1, 2]]), real_tf.constant([[1], [2]]))


# ---- random sets against TensorFlow: every dtype, dense and sparse operands, every operation, ranks 2-4

SET_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "string"]
POOL = {"string": ["a", "b", "cc", "", "d", "e"]}


def _random_operand(rng, dtype, group_shape, sparse):
    width = int(rng.integers(0, 5))
    pool = POOL.get(dtype, [0, 1, 2, 5, 7, 100])
    values = rng.choice(pool, size=group_shape + [width])
    if not sparse:
        return lambda m: m.constant(values.tolist(), getattr(m, dtype))
    keep = rng.random(values.shape) < 0.6
    indices = np.argwhere(keep).astype(np.int64)  # row-major, as TensorFlow's validation wants
    flat = values[keep].tolist()
    shape = group_shape + [width]
    return lambda m: m.sparse.SparseTensor(m.constant(indices.reshape(-1, len(shape)), m.int64),
                                           m.constant(flat, getattr(m, dtype)), shape)


@pytest.mark.parametrize("seed", range(36))
def test_random_sets_match_tensorflow(seed):
    rng = np.random.default_rng(seed)
    dtype = SET_DTYPES[seed % len(SET_DTYPES)]
    group_shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 4)))]  # ranks 2-4
    a_sparse, b_sparse = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    a = _random_operand(rng, dtype, group_shape, a_sparse)
    b = _random_operand(rng, dtype, group_shape, b_sparse)
    cases = [lambda m: m.sets.intersection(a(m), b(m)), lambda m: m.sets.union(a(m), b(m)),
             lambda m: m.sets.difference(a(m), b(m)), lambda m: m.sets.difference(a(m), b(m), aminusb=False)]
    if a_sparse:
        cases.append(lambda m: m.sets.size(a(m)))
    for case in cases:
        _both(case, traced=True)


VALIDATION_CASES = {
    "out_of_bounds": ([[0, 0], [0, 5]], [1, 2], [1, 3]),
    "negative": ([[0, -1]], [1], [1, 3]),
    "repeated": ([[0, 1], [0, 1]], [1, 2], [1, 3]),
    "out_of_order": ([[0, 2], [0, 1]], [1, 2], [1, 3]),
}


@pytest.mark.parametrize("name", VALIDATION_CASES)
@pytest.mark.parametrize("op", ["size", "dense_sparse", "sparse_sparse"])
def test_validate_indices_errors_carry_tensorflows_message(name, op):
    indices, values, shape = VALIDATION_CASES[name]

    def run(m):
        bad = m.sparse.SparseTensor(m.constant(indices, m.int64), m.constant(values), shape)
        good = m.sparse.SparseTensor(m.constant([[0, 0]], m.int64), m.constant([1]), [1, 3])
        if op == "size":
            return m.sets.size(bad)
        if op == "dense_sparse":
            return m.sets.union(m.constant([[1, 2]]), bad)
        return m.sets.union(good, bad)

    with pytest.raises(real_tf.errors.InvalidArgumentError) as theirs:
        run(real_tf)
    message = str(theirs.value).split("}}")[-1].split(" [Op:")[0].split(" Many sparse")[0].strip()
    for attempt in (lambda: run(em), em.function(lambda: run(em))):
        with pytest.raises(em.errors.InvalidArgumentError) as ours:
            attempt()
        assert message in str(ours.value)


def test_unvalidated_out_of_bounds_group_is_an_error_not_a_crash():
    bad = em.sparse.SparseTensor(em.constant([[5, 0]], em.int64), em.constant([1]), [2, 2])
    with pytest.raises(em.errors.InvalidArgumentError, match="SetSize: indices\\[0, 0\\] expected in \\[0, 2\\)"):
        em.sets.size(bad, validate_indices=False)


def test_bad_set_operation_attribute():
    op = em._C.op("DenseToDenseSetOperation")
    with pytest.raises(em.errors.InvalidArgumentError, match="Invalid set_operation bad"):
        op(em.constant([[1]]), em.constant([[1]]), "bad", True)


def test_graph_def_with_sets_and_decode_csv_runs_in_tensorflow():
    from test_graph_def_tf import run_in_tensorflow

    @em.function
    def tags(lines, wanted):
        first, second = em.io.decode_csv(lines, [[""], [""]], field_delim=";")
        a = em.strings.split(first, ",").to_sparse()
        b = em.strings.split(second, ",").to_sparse()
        both = em.sets.intersection(a, b)
        extra = em.sets.difference(wanted, b)
        return both.indices, both.values, both.dense_shape, em.sets.size(a), extra.values

    lines = ["x,y,z;y,z,w", "p;q", "a,b;b,a,a"]
    wanted = [["w", "q", "zz"], ["q", "x", "y"], ["a", "a", "c"]]
    graph = tags.get_concrete_function(em.TensorSpec([None], em.string), em.TensorSpec([None, 3], em.string)).graph
    gd = graph.as_graph_def()
    ops = [n.op for n in gd.node] + [n.op for f in gd.library.function for n in f.node_def]
    assert {"DecodeCSV", "SetSize", "SparseToSparseSetOperation", "DenseToSparseSetOperation"} <= set(ops)
    assert not {"PyFunc", "PyFuncStateless", "EagerPyFunc"} & set(ops)
    got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                            [t.name for t in graph.outputs], real_tf.constant(lines), real_tf.constant(wanted))
    want = tags(em.constant(lines), em.constant(wanted))
    for g, w in zip(got, want):
        assert g.numpy().tolist() == w.numpy().tolist()


def test_hostile_set_shapes_are_errors():
    op = em._C.op("SetSize")
    idx = em.constant([[0, 0, 0]], em.int64)
    with pytest.raises(em.errors.InvalidArgumentError, match="more rows than an int64 counts"):
        op(idx, em.constant([1]), em.constant([2**40, 2**40, 3], em.int64), True)
    with pytest.raises(em.errors.InvalidArgumentError, match="negative dims"):
        op(idx[:, :2], em.constant([1]), em.constant([-1, 3], em.int64), True)
    with pytest.raises(em.errors.ResourceExhaustedError):
        op(idx[:, :2], em.constant([1]), em.constant([2**62, 3], em.int64), True)


def test_tensorflow_graph_with_sets_and_decode_csv_runs_in_ember():
    """TensorFlow's DecodeCSV, SetSize and set-operation nodes import as the registry ops."""
    def program(lines, dense):
        a, b = real_tf.io.decode_csv(lines, [[0], [0]], select_cols=[0, 2])
        pairs = real_tf.stack([a, b], axis=1)
        both = real_tf.sets.union(pairs, dense)
        sparse = real_tf.sparse.from_dense(dense)
        return (both.indices, both.values, both.dense_shape, real_tf.sets.size(sparse),
                real_tf.sets.intersection(sparse, sparse).values, real_tf.sets.difference(pairs, sparse).values)

    fn = real_tf.function(program, input_signature=[real_tf.TensorSpec([None], real_tf.string),
                                                    real_tf.TensorSpec([None, 2], real_tf.int32)])
    concrete = fn.get_concrete_function()
    ops = {n.op for n in concrete.graph.as_graph_def().node}
    assert {"DecodeCSV", "SetSize", "DenseToDenseSetOperation", "SparseToSparseSetOperation",
            "DenseToSparseSetOperation"} <= ops
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    ours = em.NewGraphFunction(graph, ["lines:0", "dense:0"], [t.name for t in concrete.outputs])
    lines, dense = ["1,x,2", ",y,7", "3,z,3"], np.array([[2, 5], [7, 7], [0, 9]], np.int32)
    for got, want in zip(ours(em.constant(lines), dense), fn(lines, dense)):
        assert got.numpy().tolist() == want.numpy().tolist()

"""tf.sparse.SparseTensor and tf.sparse against TensorFlow 2.21: each case runs with ember and with
TensorFlow (the module passed in), and indices, values, dense shapes and dtypes must agree."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em


def _value(x):
    if isinstance(x, (em.SparseTensor, real_tf.SparseTensor)):
        return ("sparse", x.indices.numpy().tolist(), np.asarray(x.values).tolist(), x.dense_shape.numpy().tolist(),
                x.dtype.name)
    if isinstance(x, tuple):
        return tuple(_value(v) for v in x)
    return ("dense", np.asarray(x).tolist(), x.dtype.name, x.shape.as_list())


def _close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-5 * max(1.0, abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def sp(m, dtype=None):
    return m.sparse.SparseTensor(indices=[[0, 0], [1, 2], [2, 1], [2, 3]],
                                 values=m.constant([1., 2., 3., 4.], dtype or m.float32), dense_shape=[3, 4])


def sp3(m):
    return m.sparse.SparseTensor(indices=[[0, 0, 1], [0, 1, 0], [1, 0, 2], [1, 1, 1]], values=[1., 2., 3., 4.],
                                 dense_shape=[2, 2, 3])


def unordered(m):
    return m.sparse.SparseTensor(indices=[[2, 1], [0, 3], [1, 0], [0, 1]], values=[1., 2., 3., 4.],
                                 dense_shape=[3, 4])


DENSE_B = np.arange(8, dtype=np.float32).reshape(4, 2) - 3.

CASES = {
    "construct": lambda m: sp(m),
    "from_dense": lambda m: m.sparse.from_dense([[1, 0, 0], [0, 0, 2]]),
    "from_dense_3d": lambda m: m.sparse.from_dense(np.array([[[0., 1.], [2., 0.]], [[0., 0.], [0., 3.]]])),
    "to_dense": lambda m: m.sparse.to_dense(sp(m)),
    "to_dense_default": lambda m: m.sparse.to_dense(sp(m), default_value=-1.),
    "to_dense_3d": lambda m: m.sparse.to_dense(sp3(m)),
    "to_dense_int": lambda m: m.sparse.to_dense(m.sparse.SparseTensor([[1]], [7], [3])),
    "reorder": lambda m: m.sparse.reorder(unordered(m)),
    "matmul": lambda m: m.sparse.sparse_dense_matmul(sp(m), DENSE_B),
    "matmul_adjoint_a": lambda m: m.sparse.sparse_dense_matmul(sp(m), DENSE_B[:3], adjoint_a=True),
    "matmul_adjoint_b": lambda m: m.sparse.sparse_dense_matmul(sp(m), DENSE_B.T, adjoint_b=True),
    "matmul_both": lambda m: m.sparse.sparse_dense_matmul(sp(m), DENSE_B[:3].T, adjoint_a=True, adjoint_b=True),
    "matmul_unordered": lambda m: m.sparse.sparse_dense_matmul(unordered(m), DENSE_B),
    "matmul_dense_sparse": lambda m: m.sparse.sparse_dense_matmul(DENSE_B.T[:, :3], sp(m)),
    "matmul_float64": lambda m: m.sparse.sparse_dense_matmul(sp(m, m.float64), DENSE_B.astype(np.float64)),
    "add_sparse": lambda m: m.sparse.add(sp(m), m.sparse.reorder(unordered(m))),
    "add_sparse_threshold": lambda m: m.sparse.add(sp(m), m.sparse.SparseTensor([[0, 0], [1, 1]], [-0.5, 5.],
                                                                                 [3, 4]), threshold=0.6),
    "add_cancel_keeps_zero": lambda m: m.sparse.add(sp(m), m.sparse.SparseTensor([[0, 0]], [-1.], [3, 4])),
    "add_dense": lambda m: m.sparse.add(sp(m), m.ones([3, 4])),
    "add_dense_first": lambda m: m.sparse.add(m.ones([3, 4]), sp(m)),
    "reduce_sum_all": lambda m: m.sparse.reduce_sum(sp(m)),
    "reduce_sum_0": lambda m: m.sparse.reduce_sum(sp(m), axis=0),
    "reduce_sum_1": lambda m: m.sparse.reduce_sum(sp(m), axis=1),
    "reduce_sum_keepdims": lambda m: m.sparse.reduce_sum(sp(m), axis=1, keepdims=True),
    "reduce_sum_3d": lambda m: m.sparse.reduce_sum(sp3(m), axis=[0, 2]),
    "reduce_sum_neg": lambda m: m.sparse.reduce_sum(sp3(m), axis=-1),
    "reduce_sum_sparse": lambda m: m.sparse.reduce_sum(sp(m), axis=1, output_is_sparse=True),
    "reshape": lambda m: m.sparse.reshape(sp(m), [2, 6]),
    "reshape_infer": lambda m: m.sparse.reshape(sp(m), [-1, 2]),
    "reshape_3d": lambda m: m.sparse.reshape(sp3(m), [4, 3]),
    "slice": lambda m: m.sparse.slice(sp(m), [1, 1], [2, 2]),
    "slice_past_end": lambda m: m.sparse.slice(sp(m), [2, 2], [5, 5]),
    "retain": lambda m: m.sparse.retain(sp(m), [True, False, True, False]),
    "transpose": lambda m: m.sparse.transpose(sp(m)),
    "transpose_perm": lambda m: m.sparse.transpose(sp3(m), [1, 0, 2]),
    "cwise_mul_row": lambda m: sp(m) * m.constant([1., 2., 3., 4.]),
    "cwise_mul_col": lambda m: sp(m) * m.constant([[10.], [20.], [30.]]),
    "cwise_mul_scalar": lambda m: sp(m) * m.constant(3.),
    "cwise_div": lambda m: sp(m) / m.constant([1., 2., 4., 8.]),
    "maximum": lambda m: m.sparse.maximum(sp(m), m.sparse.SparseTensor([[0, 0], [1, 1]], [5., 1.], [3, 4])),
    "expand_dims": lambda m: m.sparse.expand_dims(sp(m), 1),
    "eye": lambda m: m.sparse.eye(3, 4),
    "reduce_max": lambda m: m.sparse.reduce_max(m.sparse.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1., -3., 2.],
                                                                       [2, 3]), axis=1),
    "ragged_to_sparse": lambda m: m.ragged.constant([[1, 2], [], [3]]).to_sparse(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    expected = _value(CASES[name](real_tf))
    actual = _value(CASES[name](em))
    assert _close(actual, expected), f"{name}:\n ember {actual}\n    tf {expected}"


@pytest.mark.parametrize("name", ["to_dense", "matmul", "matmul_adjoint_a", "add_sparse", "reduce_sum_1", "reshape",
                                  "slice", "transpose", "cwise_mul_col", "reorder"])
def test_inside_function(name):
    expected = _value(CASES[name](em))
    actual = _value(em.function(lambda: CASES[name](em))())
    assert _close(actual, expected)


def test_sparse_tensor_argument_and_result():
    def body(m):
        def f(s, dense):
            return m.sparse.sparse_dense_matmul(s, dense), s * 2.
        return f

    ef, tff = em.function(body(em)), real_tf.function(body(real_tf))
    for indices, values in (([[0, 0], [1, 2]], [1., 2.]), ([[0, 1], [2, 2], [2, 3]], [3., 4., 5.])):
        got = ef(em.sparse.SparseTensor(indices, values, [3, 4]), em.constant(DENSE_B))
        want = tff(real_tf.sparse.SparseTensor(indices, values, [3, 4]), real_tf.constant(DENSE_B))
        assert _close(_value(got), _value(want))
    assert ef.experimental_get_tracing_count() == tff.experimental_get_tracing_count() == 1
    assert ef.pretty_printed_concrete_signatures() == tff.pretty_printed_concrete_signatures()


def test_sparse_tensor_spec_signature():
    @em.function(input_signature=[em.SparseTensorSpec([None, 4], em.float32)])
    def f(s):
        return em.sparse.reduce_sum(s, axis=1)

    np.testing.assert_array_equal(f(sp(em)).numpy(), [1., 2., 7.])
    np.testing.assert_array_equal(f(em.sparse.SparseTensor([[1, 3]], [5.], [2, 4])).numpy(), [0., 5.])
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="SparseTensorSpec"):
        f(em.sparse.SparseTensor([[1, 3]], [5], [2, 4]))  # int32 values


def test_gradients_match_tensorflow():
    def grads(m):
        values = m.constant([1., 2., 3., 4.])
        b = m.constant(DENSE_B)
        with m.GradientTape(persistent=True) as tape:
            tape.watch(values)
            tape.watch(b)
            s = m.sparse.SparseTensor([[0, 0], [1, 2], [2, 1], [2, 3]], values, [3, 4])
            y = m.reduce_sum(m.sparse.sparse_dense_matmul(s, b) ** 2)
            y += m.reduce_sum(m.sparse.sparse_dense_matmul(s, b[:3], adjoint_a=True) * 3.)
            y += m.reduce_sum(m.sparse.to_dense(s) * m.reshape(m.range(12.), [3, 4]))
            y += m.reduce_sum((s * m.constant([1., 2., 3., 4.])).values ** 2)
            y += m.reduce_sum(m.sparse.reduce_sum(s, axis=0) ** 2)
            y += m.reduce_sum(m.sparse.add(s, m.ones([3, 4])) ** 2)
        return tape.gradient(y, values).numpy(), tape.gradient(y, b).numpy()

    for got, want in zip(grads(em), grads(real_tf)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("fn, op, message", [
    (lambda: em.sparse.to_dense(unordered(em)), "SparseToDense", "out of order"),
    (lambda: em.sparse.to_dense(em.sparse.SparseTensor([[0, 0], [0, 0]], [1., 2.], [2, 2])), "SparseToDense",
     "is repeated"),
    (lambda: em.sparse.to_dense(em.sparse.SparseTensor([[0, 0], [5, 0]], [1., 2.], [2, 2])), "SparseToDense",
     r"out of bounds: need 0 <= index < \[2,2\]"),
    (lambda: em.sparse.sparse_dense_matmul(em.sparse.SparseTensor([[0, 0], [5, 0]], [1., 2.], [2, 2]),
                                           em.ones([2, 2])), "SparseTensorDenseMatMul", "out of bounds"),
    (lambda: em.sparse.sparse_dense_matmul(sp(em), em.ones([3, 2])), "SparseTensorDenseMatMul",
     "inner dimension does not match"),
    (lambda: em.sparse.add(sp(em), em.sparse.SparseTensor([[0, 0]], [1.], [4, 4])), "SparseAdd", "shapes"),
    (lambda: em.sparse.reshape(sp(em), [5, -1]), "SparseReshape", "multiple of 5"),
    (lambda: em.sparse.reshape(sp(em), [5, 5]), "SparseReshape", "requested shape has 25"),
    (lambda: em.sparse.reduce_sum(sp(em), axis=2), "SparseReduceSum", "Invalid reduction dimension"),
])
def test_invalid_input_raises_naming_the_op(fn, op, message):
    with pytest.raises(em.errors.InvalidArgumentError, match=message) as info:
        fn()
    assert op in str(info.value)


def test_construction_errors():
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        em.sparse.SparseTensor([[0, 0], [1, 0]], [1., 2., 3.], [2, 2])
    with pytest.raises(TypeError, match="SparseTensor"):
        em.convert_to_tensor(sp(em))


def _components(s):
    return s.indices, s.values, s.dense_shape


def test_tensorflow_graph_with_sparse_and_counting_ops_runs_in_ember():
    """TensorFlow's SparseTensorDenseMatMul, SparseToDense, SparseAdd, SparseReshape, SparseReduceSum,
    Bincount, DenseBincount and HistogramFixedWidth nodes import as registry ops (src/ember/ops/sparse.cc,
    bincount.cc)."""
    def program(x, idx, vals):
        s = real_tf.sparse.SparseTensor(idx, vals, [3, 4])
        return (real_tf.sparse.sparse_dense_matmul(s, x), real_tf.math.bincount(real_tf.cast(real_tf.abs(x) * 3,
                                                                                             real_tf.int32)),
                real_tf.histogram_fixed_width(x, [-1., 1.], nbins=4), real_tf.sparse.to_dense(s),
                real_tf.raw_ops.Bincount(arr=real_tf.constant([1, 1, 2]), size=3,
                                         weights=real_tf.constant([], real_tf.float32)),
                *_components(real_tf.sparse.add(s, real_tf.sparse.SparseTensor([[0, 1], [1, 1]], [-1., 5.], [3, 4]),
                                                0.5)),
                real_tf.sparse.reshape(s, [2, -1]).indices, real_tf.sparse.reduce_sum(s, axis=1))

    fn = real_tf.function(program, input_signature=[real_tf.TensorSpec([4, 2], real_tf.float32),
                                                    real_tf.TensorSpec([None, 2], real_tf.int64),
                                                    real_tf.TensorSpec([None], real_tf.float32)])
    concrete = fn.get_concrete_function()
    ops = {n.op for n in concrete.graph.as_graph_def().node}
    assert {"SparseTensorDenseMatMul", "SparseToDense", "Bincount", "DenseBincount", "HistogramFixedWidth",
            "SparseAdd", "SparseReshape", "SparseReduceSum"} <= ops
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    ours = em.NewGraphFunction(graph, ["x:0", "idx:0", "vals:0"], [t.name for t in concrete.outputs])
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    idx, vals = np.array([[0, 1], [2, 3]], np.int64), np.array([1., 2.], np.float32)
    for got, want in zip(ours(x, idx, vals), fn(x, idx, vals)):
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_static_shape_inside_function_and_negative_shapes():
    shapes = []

    @em.function
    def f(s):
        shapes.append(s.shape.as_list())
        return em.sparse.to_dense(s)

    f(sp(em))
    assert shapes == [[3, 4]]  # as TensorFlow's: the spec keeps the dense shape
    with pytest.raises(em.errors.InvalidArgumentError, match="must not be negative"):
        em._C.op("SparseTensorDenseMatMul")(em.constant([[0, 0]], em.int64), em.constant([1.]),
                                            em.constant([-2, 1], em.int64), em.ones([1, 1]), False, False)
    with pytest.raises(em.errors.InvalidArgumentError, match="must be -1"):
        em._C.op("RaggedTensorToTensor")(em.constant([-3, -1], em.int64), em.constant([1.]), em.constant(0.),
                                         [em.constant([0, 1], em.int64)])


def test_tensorflow_runs_ember_graphs_with_sparse_and_counting_ops():
    """GraphDef export names the index types TensorFlow's OpDefs want (Tindices, Tidx:
    src/ember/graph/graph_def_ops.cc)."""
    @em.function(input_signature=[em.TensorSpec([4, 2]), em.TensorSpec([None, 2], em.int64), em.TensorSpec([None])])
    def f(x, idx, vals):
        s = em.sparse.SparseTensor(idx, vals, [3, 4])
        return (em.sparse.sparse_dense_matmul(s, x), em.math.bincount(em.cast(em.abs(x) * 3, em.int32)),
                em.histogram_fixed_width(x, [-1., 1.], nbins=4), em.sparse.to_dense(s),
                *_components(em.sparse.add(s, em.sparse.SparseTensor([[0, 1], [1, 1]], [-1., 5.], [3, 4]), 0.5)),
                em.sparse.reshape(s, [2, -1]).indices, em.sparse.reduce_sum(s, axis=1))

    graph = f.get_concrete_function().graph
    graph_def = real_tf.compat.v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    wrapped = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(graph_def, name=""), [])
    theirs = wrapped.prune(feeds=[t.name for t in graph.inputs], fetches=[t.name for t in graph.outputs])
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    idx, vals = np.array([[0, 1], [2, 3]], np.int64), np.array([1., 2.], np.float32)
    for got, want in zip(theirs(*[real_tf.constant(a) for a in (x, idx, vals)]), f(x, idx, vals)):
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_to_dense_of_strings_as_tensorflow():
    def run(tf):
        sp = tf.sparse.SparseTensor([[0, 1], [1, 0]], ["x", "yy"], [2, 3])
        return tf.sparse.to_dense(sp).numpy().tolist(), tf.sparse.to_dense(sp, default_value="-").numpy().tolist()

    assert run(em) == run(real_tf)

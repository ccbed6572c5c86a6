"""tf.linalg.diag, diag_part and set_diag for any diagonals k and alignment: TensorFlow's MatrixDiagV3 family
(src/ember/ops/matrix_diag.cc) against TensorFlow 2.21: values, errors and gradients, the raw ops eagerly and
inside ember.function, and TensorFlow's GraphDefs holding them."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import _C

X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
BANDS = [1, -1, 2, -2, (-1, 1), (0, 2), (-2, 0), (1, 3), (-2, -1), (0, 0)]
ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]
SIZES = [(-1, -1), (5, -1), (-1, 6), (5, 6), (2, 2)]


def _result(fn):
    try:
        return fn().numpy()
    except Exception as e:  # noqa: BLE001 - the error class is what is compared
        return type(e).__name__


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a.shape == b.shape and np.allclose(a, b)


@pytest.mark.parametrize("k", BANDS, ids=str)
@pytest.mark.parametrize("align", ALIGNS)
def test_diag_part_set_diag_and_diag_match_tensorflow(k, align):
    got = _result(lambda: em.linalg.diag_part(X, k=k, align=align, padding_value=9))
    want = _result(lambda: real_tf.linalg.diag_part(X, k=k, align=align, padding_value=9))
    assert _same(got, want)
    d = real_tf.linalg.diag_part(X, k=k, align=align).numpy() * 2
    assert _same(_result(lambda: em.linalg.set_diag(X, d, k=k, align=align)),
                 _result(lambda: real_tf.linalg.set_diag(X, d, k=k, align=align)))
    for rows, cols in SIZES:
        got = _result(lambda: em.linalg.diag(d, k=k, align=align, num_rows=rows, num_cols=cols, padding_value=7))
        want = _result(lambda: real_tf.linalg.diag(d, k=k, align=align, num_rows=rows, num_cols=cols,
                                                   padding_value=7))
        assert _same(got, want), (rows, cols, got, want)


def test_inside_function_and_gradients_match_tensorflow():
    def loss(m, x, d):
        a = m.linalg.diag_part(x, k=(-1, 1))
        b = m.linalg.set_diag(x, d, k=(0, 1))
        c = m.linalg.diag(d, k=(0, 1), num_rows=3, num_cols=5, padding_value=0.5)
        return m.reduce_sum(a * a) + m.reduce_sum(b * b * 3.) + m.reduce_sum(c ** 3)

    d = np.random.default_rng(1).standard_normal((2, 2, 3)).astype(np.float32)
    results = []
    for m, wrap in ((real_tf, lambda f: f), (em, em.function)):
        x, dv = m.constant(X), m.constant(d)
        with m.GradientTape() as tape:
            tape.watch(x)
            tape.watch(dv)
            y = wrap(lambda a, b: loss(m, a, b))(x, dv)
        results.append([y.numpy()] + [g.numpy() for g in tape.gradient(y, [x, dv])])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_bad_bands_raise_like_tensorflow():
    with pytest.raises(em.errors.InvalidArgumentError, match="MatrixDiagPartV3"):
        em.linalg.diag_part(X, k=(2, 1))
    with pytest.raises(em.errors.InvalidArgumentError, match="MatrixSetDiagV3"):
        em.linalg.set_diag(X, np.zeros((2, 5), np.float32), k=1)
    with pytest.raises(em.errors.InvalidArgumentError, match="MatrixDiagV3"):
        em.linalg.diag(np.zeros((2, 3), np.float32), k=1, num_rows=2, num_cols=2)


@pytest.mark.parametrize("call, error", [
    # Found by the API fuzzer: float and huge ints reached int() and raised OverflowError.
    (lambda: em.linalg.diag(3, k=float("inf")), TypeError),
    (lambda: em.linalg.diag([2, 2], num_cols=10 ** 30), em.errors.InvalidArgumentError),
    (lambda: em.linalg.diag([[1., 2.], [3., 4.]], num_cols=float("inf")), TypeError),
    # Hostile bands and sizes are refused before any table of positions is built.
    (lambda: em.linalg.diag_part(np.zeros((0, 3), np.float32), k=(-2 ** 62, 2 ** 62)), em.errors.InvalidArgumentError),
    (lambda: em.linalg.set_diag(X, X[:, :1], k=(-2 ** 62, 2 ** 62)), em.errors.InvalidArgumentError),
    # Beyond int32 (TensorFlow wraps these around silently).
    (lambda: em.linalg.diag([1., 2.], k=2 ** 62), em.errors.InvalidArgumentError),
    (lambda: em.linalg.diag([1., 2.], num_rows=2 ** 40, num_cols=2 ** 40), em.errors.InvalidArgumentError),
    (lambda: em.linalg.diag([1., 2.], num_rows=2 ** 30, num_cols=2 ** 30), em.errors.InvalidArgumentError),
])
def test_hostile_arguments_raise_ember_errors(call, error):
    with pytest.raises(error):
        call()


RAW = [("MatrixDiagPartV3", lambda x: [x, np.int32(1), np.float32(5)], "RIGHT_LEFT"),
       ("MatrixDiagPartV3", lambda x: [x, np.array([-1, 2], np.int32), np.float32(-1)], "LEFT_RIGHT"),
       ("MatrixDiagV3", lambda x: [x[:, :2, :3], np.array([0, 1], np.int32), np.int32(-1), np.int32(5),
                                   np.float32(2)], "LEFT_LEFT"),
       ("MatrixDiagV3", lambda x: [x[0, 0], np.int32(-2), np.int32(-1), np.int32(-1), np.float32(0)], "RIGHT_LEFT"),
       ("MatrixSetDiagV3", lambda x: [x, x[:, :3, :3] * 2, np.array([-1, 1], np.int32)], "RIGHT_RIGHT")]
_TF_ARGS = {"MatrixDiagPartV3": ["input", "k", "padding_value"],
            "MatrixDiagV3": ["diagonal", "k", "num_rows", "num_cols", "padding_value"],
            "MatrixSetDiagV3": ["input", "diagonal", "k"]}


@pytest.mark.parametrize("name, args, align", RAW, ids=[f"{r[0]}-{r[2]}" for r in RAW])
def test_raw_ops_match_tensorflow_eagerly_and_in_a_function(name, args, align):
    inputs = args(X)
    want = getattr(real_tf.raw_ops, name)(**dict(zip(_TF_ARGS[name], inputs)), align=align).numpy()
    op = _C.op(name)
    eager = op(*[em.constant(v) for v in inputs], align).numpy()
    staged = em.function(lambda *xs: op(*xs, align))(*inputs).numpy()
    for got in (eager, staged):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want)


def test_k_computed_in_the_graph():
    fn = em.function(lambda x, k: em.linalg.diag_part(x, k=(k - 1, k)),
                     input_signature=[em.TensorSpec([None, 3, 4]), em.TensorSpec([], em.int32)])
    for k in (0, 2):
        np.testing.assert_allclose(fn(X, k).numpy(), real_tf.linalg.diag_part(X, k=(k - 1, k)).numpy())


def test_tensorflows_graph_imports_and_gives_its_values():
    @real_tf.function(input_signature=[real_tf.TensorSpec([None, 3, 4])])
    def program(x):
        part = real_tf.linalg.diag_part(x, k=(-1, 1), padding_value=3.0, align="LEFT_RIGHT")
        return (part, real_tf.linalg.diag(part, k=(-1, 1), num_cols=5, align="LEFT_RIGHT"),
                real_tf.linalg.set_diag(x, part[:, 1] * 2.0), real_tf.linalg.trace(x))

    concrete = program.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert {"MatrixDiagV3", "MatrixDiagPartV3", "MatrixSetDiagV3"} <= {n.op for n in gd.node}
    fn = em.NewGraphFunction(em.graph_util.import_graph_def(gd), ["x:0"], [t.name for t in concrete.outputs])
    for batch in (1, 2):
        for got, want in zip(fn(X[:batch]), program(X[:batch])):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_embers_graph_holds_tensorflows_nodes():
    fn = em.function(lambda x: (em.linalg.diag(em.linalg.diag_part(x)), em.linalg.set_diag(x, x[:, 0, :3])))
    ops = {n.op for n in fn.get_concrete_function(em.TensorSpec([2, 3, 4])).graph.as_graph_def().node}
    assert {"MatrixDiagV3", "MatrixDiagPartV3", "MatrixSetDiagV3"} <= ops


def test_vectorized_map_and_jacobian():
    out = em.vectorized_map(lambda m: em.linalg.diag_part(m, k=(0, 1)), em.constant(X))
    np.testing.assert_allclose(out.numpy(), real_tf.linalg.diag_part(X, k=(0, 1)).numpy())
    d = em.constant(X[:, 0, :3])
    with em.GradientTape() as tape:
        tape.watch(d)
        y = em.linalg.diag(d, k=1)
    jac = tape.batch_jacobian(y, d)
    td = real_tf.constant(X[:, 0, :3])
    with real_tf.GradientTape() as tape:
        tape.watch(td)
        ty = real_tf.linalg.diag(td, k=1)
    np.testing.assert_allclose(jac.numpy(), tape.batch_jacobian(ty, td).numpy())

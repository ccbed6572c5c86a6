"""tf.linalg.eig / eigvals (the Eig op) and tf.linalg.lu / lu_solve / lu_reconstruct / lu_matrix_inverse (the
Lu op and its Python compositions, src/ember/ops/linalg_eig_lu.cc) against TensorFlow 2.21: float32,
float64, complex64 and complex128, batches, gradients (TensorFlow's rules, and finite differences), unknown
dims inside functions, errors.

Eig's eigenvalue order and each eigenvector's phase are LAPACK geev's, TensorFlow's are Eigen's: both are
valid decompositions, so eigenvalues are matched as sets, eigenvectors up to a phase, and gradients through
losses that depend on neither (docs/linalg.md)."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors
from linalg_testing import both, check_finite_differences, check_traced_like_eager, loss_gradient

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}
EIG_DTYPE = {np.float32: np.complex64, np.float64: np.complex128, np.complex64: np.complex64,
             np.complex128: np.complex128}


def _matrix(rng, shape, dtype):
    """A random matrix with well separated eigenvalues and pivots: noise around 3 I."""
    a = rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a.astype(dtype)


def _match(ours, theirs):
    """The permutation taking each of TensorFlow's eigenvalues to the nearest unused one of ours."""
    left, order = list(range(len(ours))), []
    for value in theirs:
        nearest = min(left, key=lambda i: abs(ours[i] - value))
        left.remove(nearest)
        order.append(nearest)
    return order


# ---- eig / eigvals


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3, 3), (1, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_eig_matches_tensorflow_up_to_order_and_phase(dtype, shape, rng):
    a = _matrix(rng, shape, dtype)
    (e, v), (te, tv) = both(lambda m: m.linalg.eig(a))
    assert e.dtype.name == te.dtype.name == np.dtype(EIG_DTYPE[dtype]).name
    assert v.dtype == e.dtype and tuple(e.shape) == tuple(te.shape) and tuple(v.shape) == tuple(tv.shape)
    e, v, te, tv = e.numpy(), v.numpy(), te.numpy(), tv.numpy()
    tol = TOL[dtype]
    n = shape[-1]
    for index in np.ndindex(*shape[:-2]):
        order = _match(e[index], te[index])
        np.testing.assert_allclose(e[index][order], te[index], rtol=tol, atol=tol)
        # Same unit eigenvector up to a phase: |<v_ours, v_theirs>| = 1.
        overlap = np.abs(np.sum(np.conj(v[index][:, order]) * tv[index], axis=0))
        np.testing.assert_allclose(overlap, np.ones(n), rtol=tol, atol=tol)
    # A V = V diag(e), unit columns.
    np.testing.assert_allclose(a @ v, v * e[..., None, :], rtol=10 * tol, atol=10 * tol)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), np.ones(e.shape), rtol=tol, atol=tol)
    ours_values = tf.linalg.eigvals(a).numpy()
    np.testing.assert_allclose(ours_values, e, rtol=tol, atol=tol)


def test_eig_of_a_real_matrix_with_complex_eigenvalues(rng):
    rotation = np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    (e, v), (te, _) = both(lambda m: m.linalg.eig(rotation))
    np.testing.assert_allclose(np.sort_complex(e.numpy()), np.sort_complex(te.numpy()), atol=1e-12)
    np.testing.assert_allclose(rotation @ v.numpy(), v.numpy() * e.numpy(), atol=1e-12)


def _eig_vector_loss(m, x):
    """Depends on neither the eigenvalues' order nor the vectors' phases: sum_j real(e_j) sum_i |V_ij|^4."""
    e, v = m.linalg.eig(x)
    weights = m.reduce_sum(m.abs(v) ** 4, axis=-2)
    return m.math.real(e) * m.cast(weights, m.math.real(e).dtype) + m.math.imag(e) ** 2


EIG_GRAD_CASES = {
    "eigvals": lambda m, x: m.linalg.eigvals(x),
    "eig_values": lambda m, x: m.linalg.eig(x)[0],
    "eig_vectors": _eig_vector_loss,
}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: d.__name__)
@pytest.mark.parametrize("case", sorted(EIG_GRAD_CASES))
def test_eig_gradients_match_tensorflow_and_finite_differences(case, dtype, rng):
    fn = EIG_GRAD_CASES[case]
    x = _matrix(rng, (2, 3, 3), dtype)
    (ours_loss, ours), (theirs_loss, theirs) = both(lambda m: loss_gradient(m, fn, x))
    assert ours.dtype.name == theirs.dtype.name == np.dtype(dtype).name
    np.testing.assert_allclose(ours_loss.numpy(), theirs_loss.numpy(), rtol=1e-9)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-8)
    direction = rng.uniform(-1, 1, x.shape)
    if np.issubdtype(dtype, np.complexfloating):
        direction = direction + 1j * rng.uniform(-1, 1, x.shape)
    check_finite_differences(fn, x, ours.numpy(), direction, rtol=1e-5, atol=1e-6)


def test_eig_gradient_in_float32_matches_tensorflow(rng):
    x = _matrix(rng, (3, 3), np.float32)
    (_, ours), (_, theirs) = both(lambda m: loss_gradient(m, EIG_GRAD_CASES["eig_vectors"], x))
    assert ours.dtype == tf.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", sorted(EIG_GRAD_CASES))
def test_eig_with_unknown_dims_in_a_function_matches_eager(case, rng):
    fn = EIG_GRAD_CASES[case]
    x = _matrix(rng, (2, 3, 3), np.float64)
    check_traced_like_eager(fn, x, tf.float64, rtol=1e-10, atol=1e-12)


def test_eig_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"Eig: input must be square .*\[2,3\]"):
        tf.linalg.eig(np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="Eig: matrix 1 holds a NaN"):
        tf.linalg.eig(np.array([np.eye(2), [[np.nan, 0.0], [0.0, 1.0]]]))
    with pytest.raises(ValueError, match="input must be of dtype"):
        tf.linalg.eig(np.ones((2, 2), np.int32))
    with pytest.raises(errors.InvalidArgumentError, match="Eig: Tout must be complex128 for a float64 input"):
        tf.raw_ops.Eig(input=np.eye(2), Tout=tf.complex64)


# ---- lu and its compositions


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("idx", ["int32", "int64"])
def test_lu_matches_tensorflow(idx, dtype, shape, rng):
    a = rng.uniform(-1, 1, shape).astype(dtype)
    (lu, p), (tlu, tp) = both(lambda m: m.linalg.lu(a, output_idx_type=getattr(m, idx)))
    assert lu.dtype.name == tlu.dtype.name and p.dtype.name == tp.dtype.name == idx
    np.testing.assert_array_equal(p.numpy(), tp.numpy())
    np.testing.assert_allclose(lu.numpy(), tlu.numpy(), rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: d.__name__)
def test_complex_lu_reconstructs(dtype, rng):
    """LAPACK picks a complex pivot by |re| + |im|, TensorFlow (Eigen) by modulus, so where the two rank the
    candidates differently the factors differ; both reconstruct the input, and they agree where the
    largest entry of each column wins under both measures (a dominant diagonal)."""
    a = _matrix(rng, (2, 4, 4), dtype)
    (lu, p), (tlu, tp) = both(lambda m: m.linalg.lu(a))
    np.testing.assert_array_equal(p.numpy(), tp.numpy())
    np.testing.assert_allclose(lu.numpy(), tlu.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    wild = (rng.uniform(-1, 1, (3, 4, 4)) + 1j * rng.uniform(-1, 1, (3, 4, 4))).astype(dtype)
    lu, p = tf.linalg.lu(wild)
    np.testing.assert_allclose(tf.linalg.lu_reconstruct(lu, p).numpy(), wild, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_lu_compositions_match_tensorflow(dtype, rng):
    a = _matrix(rng, (2, 4, 4), dtype)
    rhs = _matrix(rng, (2, 4, 4), dtype)[..., :2]
    tol = TOL[dtype]
    cases = {
        "reconstruct": lambda m: m.linalg.lu_reconstruct(*m.linalg.lu(a)),
        "solve": lambda m: m.linalg.lu_solve(*m.linalg.lu(a), rhs),
        "inverse": lambda m: m.linalg.lu_matrix_inverse(*m.linalg.lu(a)),
    }
    for name, fn in cases.items():
        ours, theirs = both(fn)
        assert ours.dtype.name == theirs.dtype.name, name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol, err_msg=name)


def test_lu_solve_broadcasts_batch_dims(rng):
    a = _matrix(rng, (4, 4), np.float64)
    rhs = rng.uniform(-1, 1, (3, 4, 2))
    ours, theirs = both(lambda m: m.linalg.lu_solve(*m.linalg.lu(a), rhs))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def _lu_gradients(m, lower_upper, perm, rhs):
    lower_upper, rhs = m.constant(lower_upper), m.constant(rhs)
    with m.GradientTape() as tape:
        tape.watch([lower_upper, rhs])
        loss = m.reduce_sum(m.sin(m.linalg.lu_solve(lower_upper, perm, rhs))) + m.reduce_sum(
            m.cos(m.linalg.lu_reconstruct(lower_upper, perm))) + m.reduce_sum(
                m.linalg.lu_matrix_inverse(lower_upper, perm) ** 2)
    return tape.gradient(loss, [lower_upper, rhs])


def test_gradients_through_the_lu_compositions_match_tensorflow(rng):
    lower_upper, perm = real_tf.linalg.lu(_matrix(rng, (2, 3, 3), np.float64))
    rhs = rng.uniform(-1, 1, (2, 3, 2))
    ours, theirs = both(lambda m: _lu_gradients(m, lower_upper.numpy(), perm.numpy(), rhs))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_lu_has_no_gradient_as_in_tensorflow(rng):
    """TensorFlow 2.21 registers no gradient for Lu and its tape raises LookupError; ember's registry marks
    Lu not differentiable, so the matrix gets no gradient (None)."""
    x = tf.constant(_matrix(rng, (3, 3), np.float64))
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.linalg.lu(x).lu)
    assert tape.gradient(loss, x) is None
    tx = real_tf.constant(x.numpy())
    with real_tf.GradientTape() as tape:
        tape.watch(tx)
        loss = real_tf.reduce_sum(real_tf.linalg.lu(tx).lu)
    with pytest.raises(LookupError):
        tape.gradient(loss, tx)


def test_lu_with_unknown_dims_in_a_function_matches_eager(rng):
    a = _matrix(rng, (2, 4, 4), np.float64)
    rhs = rng.uniform(-1, 1, (2, 4, 1))

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float64)] * 2)
    def traced(x, b):
        lu, p = tf.linalg.lu(x, output_idx_type=tf.int64)
        return lu, p, tf.linalg.lu_solve(lu, p, b), tf.linalg.lu_matrix_inverse(lu, p)

    lu, p = tf.linalg.lu(a, output_idx_type=tf.int64)
    eager = (lu, p, tf.linalg.lu_solve(lu, p, rhs), tf.linalg.lu_matrix_inverse(lu, p))
    for t, e in zip(traced(tf.constant(a), tf.constant(rhs)), eager):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


def test_lu_errors_as_tensorflow():
    with pytest.raises(errors.InvalidArgumentError, match="Lu: Input is not invertible"):
        tf.linalg.lu(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="not invertible"):
        real_tf.linalg.lu(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(errors.InvalidArgumentError, match=r"Lu: input must be square .*\[2,3\]"):
        tf.linalg.lu(np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="Lu: output_idx_type must be int32 or int64"):
        tf.linalg.lu(np.eye(2), output_idx_type=tf.float32)


def test_tensorflow_runs_an_exported_graph_of_the_new_ops(rng):
    """Eig's Tout, Lu's output_idx_type and the SparseSegment, MatrixSquareRoot and MatrixLogarithm nodes
    reach TensorFlow's GraphDef import as its ops (attribute names and types included)."""

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 3], tf.float64)])
    def f(x):
        lu, p = tf.linalg.lu(x, output_idx_type=tf.int64)
        c = tf.complex(x, x * 0.0) + 3.0
        return (tf.linalg.eigvals(x), lu, p, tf.linalg.sqrtm(x), tf.linalg.logm(c),
                tf.sparse.segment_mean(x[0], [2, 0, 1], [0, 0, 1]),
                tf.sparse.segment_sqrt_n(x[0], [2, 1], [1, 1], num_segments=3))

    graph = f.get_concrete_function().graph
    graph_def = real_tf.compat.v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    wrapped = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = wrapped.prune(feeds=[graph.inputs[0].name], fetches=[t.name for t in graph.outputs])
    a = _matrix(rng, (2, 3, 3), np.float64)
    theirs, ours = run(real_tf.constant(a)), f(a)
    # Eig's order is each library's own: compare the eigenvalues as sets.
    for t, o in zip(theirs[0].numpy(), ours[0].numpy()):
        np.testing.assert_allclose(o[_match(o, t)], t, rtol=1e-10)
    for t, o in zip(theirs[1:], ours[1:]):
        np.testing.assert_allclose(t.numpy(), np.asarray(o), rtol=1e-10, atol=1e-12)

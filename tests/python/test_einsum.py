"""tf.einsum and the Einsum op (src/ember/ops/einsum.cc) against TensorFlow and NumPy: the common equations
and the grammar's corners (ellipses that broadcast (size-1 and missing batch dims), implicit outputs, repeated
labels, spaces, upper-case labels, several operands), gradients eagerly and in functions, unknown dims,
vectorized_map, bad equations, and GraphDefs holding Einsum nodes both ways."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import _C

R = np.random.default_rng(3)


def f(*shape):
    return R.standard_normal(shape).astype(np.float32)


A = R.standard_normal((2, 3, 4)).astype(np.float32)
B = R.standard_normal((2, 4, 5)).astype(np.float32)
M = R.standard_normal((4, 4)).astype(np.float32)
V = R.standard_normal(4).astype(np.float32)

# The common equations (their first 8 rows also check gradients), then the grammar's corners.
BASIC = [
    ("ij,jk->ik", [A[0], B[0]]),
    ("bij,bjk->bik", [A, B]),
    ("bij,bjk", [A, B]),
    ("...ij,...jk->...ik", [A, B]),
    ("ij,j->i", [M, V]),
    ("i,i->", [V, V]),
    ("i,j->ij", [V, V[:3]]),
    ("ii->i", [M]),
    ("ii", [M]),
    ("ij->ji", [M]),
    ("bij->b", [A]),
    ("bqd,bkd->bqk", [A, A]),
    ("abc,cd,de->abe", [A, M, M]),
    ("ij,...j->...i", [M, A]),
    ("...j,j", [A, V]),
    ("bi,bi->b", [A[:, 0], A[:, 1]]),
    ("iij,jk->ik", [R.standard_normal((3, 3, 4)).astype(np.float32), M]),
    ("ab,cb->ac", [A[0], A[1]]),
]
TABLE = [
    ("...ij,...jk->...ik", [f(2, 1, 3, 4), f(5, 4, 2)]),     # batch dims broadcast: [2,1] against [5]
    ("b...i,b...i->b...", [f(2, 3, 4), f(2, 1, 4)]),         # ellipsis in the middle, size-1 broadcast
    ("i...,i...->...", [f(3, 2, 5), f(3, 2, 5)]),
    ("...,...->...", [f(2, 3), f(3)]),                       # element-wise product with broadcasting
    ("ij, jk -> ik", [f(2, 3), f(3, 4)]),                    # spaces
    ("Ab,bC->AC", [f(2, 3), f(3, 4)]),                       # upper-case labels
    ("ba", [f(2, 3)]),                                       # implicit output: labels sorted -> transpose
    ("iji->j", [f(3, 4, 3)]),                                # a repeated label: a diagonal, then a sum
    ("ii->", [f(4, 4)]),                                     # trace
    ("bii->bi", [f(2, 3, 3)]),                               # batched diagonal
    ("ij,ij,ij->i", [f(3, 4), f(3, 4), f(3, 4)]),            # three operands
    ("i,j,k->ijk", [f(2), f(3), f(4)]),                      # outer products
    ("bhqd,bhkd->bhqk", [f(2, 3, 4, 5), f(2, 3, 6, 5)]),     # attention scores
    ("bhqk,bhkd->bqhd", [f(2, 3, 4, 6), f(2, 3, 6, 5)]),     # attention output, transposed
    ("...d,de->...e", [f(2, 3, 4), f(4, 5)]),                # dense layer over any batch
    ("->", [np.float32(3.0)]),                               # scalar
    (",->", [np.float32(3.0), np.float32(2.0)]),
    ("i,->i", [f(3), np.float32(2.0)]),
]


@pytest.mark.parametrize("equation, operands", BASIC + TABLE, ids=[e for e, _ in BASIC + TABLE])
def test_matches_tensorflow_and_numpy(equation, operands):
    got = em.einsum(equation, *operands).numpy()
    want = real_tf.einsum(equation, *operands).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, np.einsum(equation.replace(" ", ""), *operands), rtol=1e-4, atol=1e-4)


GRADIENT_CASES = BASIC[:8] + TABLE[:6] + TABLE[8:12]


def _complex(x):
    """Complex64 operands from float32 ones (the imaginary parts a shifted copy)."""
    return (x + 1j * np.roll(x, 1)).astype(np.complex64) if np.ndim(x) else np.complex64(x + 0.5j)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("equation, operands", GRADIENT_CASES, ids=[e for e, _ in GRADIENT_CASES])
def test_gradients_match_tensorflow(equation, operands, dtype):
    """Complex operands: the product conjugates nothing; the gradient is TensorFlow's dz * conj(other)."""
    if dtype == "complex64":
        operands = [_complex(x) for x in operands]
    results = []
    for lib in (real_tf, em):
        xs = [lib.constant(x) for x in operands]
        with lib.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            y = lib.einsum(equation, *xs)
            loss = lib.reduce_sum(lib.abs(y) ** 2) if dtype == "complex64" else lib.reduce_sum(y * y)
        results.append([y.numpy()] + [g.numpy() for g in tape.gradient(loss, xs)])
    for got, want in zip(results[1], results[0]):
        assert got.dtype == want.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_inside_function_with_unknown_batch():
    fn = em.function(lambda a, b: em.einsum("...ij,jk->...ik", a, b),
                     input_signature=[em.TensorSpec([None, None, 3, 4]), em.TensorSpec([4, 2])])
    a, b = f(2, 5, 3, 4), f(4, 2)
    np.testing.assert_allclose(fn(a, b).numpy(), np.einsum("...ij,jk->...ik", a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation, operands", [
    ("ij,jk->ik", [f(2, 3), f(4, 2)]),      # contracted sizes differ
    ("ij->k", [f(2, 3)]),                   # output label in no input
    ("i...j...", [f(2, 3)]),                # two ellipses
    ("ij,jk", [f(2, 3)]),                   # operand count
])
def test_bad_equations_raise_as_tensorflow(equation, operands):
    with pytest.raises((ValueError, em.errors.InvalidArgumentError)):
        em.einsum(equation, *operands)
    with pytest.raises((ValueError, real_tf.errors.InvalidArgumentError)):
        real_tf.einsum(equation, *operands)


def test_einsum_with_unknown_dims_matches_eager_and_is_one_einsum_node():
    spec = [em.TensorSpec([None, None, None], em.float32)] * 2
    fn = em.function(lambda a, b: em.einsum("bij,bjk->bik", a, b), input_signature=spec)
    np.testing.assert_allclose(fn(A, B).numpy(), np.einsum("bij,bjk->bik", A, B), rtol=1e-5, atol=1e-5)
    nodes = [n for n in fn.get_concrete_function().graph.as_graph_def().node if n.op == "Einsum"]
    assert len(nodes) == 1 and nodes[0].attr["equation"].s == b"bij,bjk->bik" and nodes[0].attr["N"].i == 2


RAW = [("ij,jk->ik", [f(2, 3), f(3, 4)]), ("bij,bkj->bki", [f(2, 3, 4), f(2, 5, 4)]), ("ii->i", [f(3, 3)]),
       ("i->ii", [f(3)]), ("...ij,...jk->...ik", [f(2, 1, 3, 4), f(5, 4, 2)]), ("ij,k->", [f(2, 3), f(4)]),
       ("ij->jii", [f(2, 3)])]


@pytest.mark.parametrize("equation, operands", RAW, ids=[e for e, _ in RAW])
def test_raw_op_matches_tensorflow_eagerly_and_in_a_function(equation, operands):
    want = real_tf.raw_ops.Einsum(inputs=operands, equation=equation).numpy()
    op = _C.op("Einsum")
    eager = op([em.constant(x) for x in operands], equation).numpy()
    staged = em.function(lambda *xs: op(list(xs), equation))(*operands).numpy()
    for got in (eager, staged):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_gradients_inside_function_match_tensorflow(dtype):
    x, y = f(2, 3, 4), f(4, 5)
    if dtype == "complex64":
        x, y = _complex(x), _complex(y)
    results = []
    for lib, wrap in ((real_tf, real_tf.function), (em, em.function)):
        def step(a, b):
            with lib.GradientTape() as tape:
                tape.watch([a, b])
                z = lib.einsum("b...i,ij->...bj", a, b)
                loss = lib.reduce_sum(lib.abs(z) ** 2) if dtype == "complex64" else lib.reduce_sum(z * z)
            return tape.gradient(loss, [a, b])
        results.append([g.numpy() for g in wrap(step)(lib.constant(x), lib.constant(y))])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_tensorflows_graph_of_einsums_imports_and_gives_its_values():
    @real_tf.function(input_signature=[real_tf.TensorSpec([None, 3, 4]), real_tf.TensorSpec([4, 5]),
                                       real_tf.TensorSpec([5, 5])])
    def program(a, b, c):
        return (real_tf.einsum("bij,jk->bik", a, b), real_tf.einsum("bii->bi", a[:, :, :3]),
                real_tf.einsum("bij,jk,kl->bil", a, b, c), real_tf.einsum("...ij", a))

    concrete = program.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert sum(n.op == "Einsum" for n in gd.node) >= 4
    graph = em.graph_util.import_graph_def(gd)
    fn = em.NewGraphFunction(graph, ["a:0", "b:0", "c:0"], [t.name for t in concrete.outputs])
    for batch in (1, 3):
        args = [f(batch, 3, 4), f(4, 5), f(5, 5)]
        for got, want in zip(fn(*args), program(*args)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_tensorflow_runs_embers_einsum_graph():
    fn = em.function(lambda a, b: em.einsum("bij,bkj->bik", a, b),
                     input_signature=[em.TensorSpec([None, 3, 4]), em.TensorSpec([None, 5, 4])])
    gd = real_tf.compat.v1.GraphDef.FromString(fn.get_concrete_function().graph.as_graph_def().SerializeToString())
    names = [n.name for n in gd.node if n.op == "Placeholder"]
    out = [n.name for n in gd.node if n.op == "Einsum"][0]
    wrapped = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(gd, name=""), [])
    run = wrapped.prune(feeds=[n + ":0" for n in names], fetches=out + ":0")
    a, b = f(2, 3, 4), f(2, 5, 4)
    np.testing.assert_allclose(run(real_tf.constant(a), real_tf.constant(b)).numpy(),
                               np.einsum("bij,bkj->bik", a, b), rtol=1e-5, atol=1e-5)


def test_einsum_batched_by_vectorized_map():
    out = em.vectorized_map(lambda a: em.einsum("ij,jk->ik", a, M), em.constant(A[:, :, :4]))
    np.testing.assert_allclose(out.numpy(), np.einsum("bij,jk->bik", A[:, :, :4], M), rtol=1e-5, atol=1e-5)


EINSUM_ERRORS = {
    "operand_count": lambda tf: tf.einsum("ij,jk->ik", tf.constant(M)),
    "rank": lambda tf: tf.einsum("ijk->i", tf.constant(M)),
    "size_mismatch": lambda tf: tf.einsum("ij,jk->ik", tf.constant(A[0]), tf.constant(A[0])),
    "unknown_output_label": lambda tf: tf.einsum("ij->iz", tf.constant(M)),
}


@pytest.mark.parametrize("case", sorted(EINSUM_ERRORS))
def test_einsum_errors(case):
    with pytest.raises((ValueError, em.errors.InvalidArgumentError)):
        EINSUM_ERRORS[case](em)
    with pytest.raises((ValueError, real_tf.errors.InvalidArgumentError)):
        EINSUM_ERRORS[case](real_tf)


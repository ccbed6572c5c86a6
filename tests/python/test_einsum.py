"""tf.einsum's equation grammar against TensorFlow and NumPy, beyond test_special_math.py's table: ellipses
that broadcast (size-1 and missing batch dims), implicit outputs, repeated labels, spaces, upper-case labels,
several operands, and gradients of broadcasting equations."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em

R = np.random.default_rng(3)


def f(*shape):
    return R.standard_normal(shape).astype(np.float32)


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


@pytest.mark.parametrize("equation, operands", TABLE, ids=[e for e, _ in TABLE])
def test_matches_tensorflow_and_numpy(equation, operands):
    got = em.einsum(equation, *operands).numpy()
    want = real_tf.einsum(equation, *operands).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, np.einsum(equation.replace(" ", ""), *operands), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("equation, operands", TABLE[:6] + TABLE[8:12], ids=[e for e, _ in TABLE[:6] + TABLE[8:12]])
def test_gradients_match_tensorflow(equation, operands):
    grads = []
    for lib in (real_tf, em):
        xs = [lib.constant(x) for x in operands]
        with lib.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            y = lib.einsum(equation, *xs)
            loss = lib.reduce_sum(y * y)
        grads.append([g.numpy() for g in tape.gradient(loss, xs)])
    for got, want in zip(grads[1], grads[0]):
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

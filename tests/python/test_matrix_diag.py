"""tf.linalg.diag, diag_part and set_diag for any diagonals k and alignment (python/ember/ops/matrix_diag.py)
against TensorFlow 2.21: values, errors and gradients, eagerly and inside ember.function."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em

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
    (lambda: em.linalg.diag([1., 2.], k=2 ** 62), em.errors.ResourceExhaustedError),
    (lambda: em.linalg.diag([1., 2.], num_rows=2 ** 40, num_cols=2 ** 40), em.errors.ResourceExhaustedError),
])
def test_hostile_arguments_raise_ember_errors(call, error):
    with pytest.raises(error):
        call()

"""tf.linalg.normalize, tensor_diag, tensor_diag_part, tridiagonal_matmul (ops/linalg_composite_ops.py) and
tf.random.split / fold_in (ops/random_ops.py) against TensorFlow 2.21: values (the seeds bit for bit),
dtypes, shapes, eager and inside ember.function, gradients, errors."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def _close(ours, theirs, rtol=1e-6):
    ours = ours if isinstance(ours, (tuple, list)) else [ours]
    theirs = theirs if isinstance(theirs, (tuple, list)) else [theirs]
    for o, t in zip(ours, theirs):
        assert o.dtype.name == t.dtype.name and tuple(o.shape) == tuple(t.shape), (o, t)
        np.testing.assert_allclose(np.asarray(o.numpy(), np.float64), np.asarray(t.numpy(), np.float64),
                                   rtol=rtol, atol=rtol)


def _grads(em_fn, tf_fn, *values):
    ev, tv = [em.Variable(v) for v in values], [real_tf.Variable(v) for v in values]
    with em.GradientTape() as t1:
        y1 = em_fn(*ev)
    with real_tf.GradientTape() as t2:
        y2 = tf_fn(*tv)
    for a, b in zip(t1.gradient(y1, ev), t2.gradient(y2, tv)):
        np.testing.assert_allclose(em.convert_to_tensor(a).numpy(), real_tf.convert_to_tensor(b).numpy(),
                                   rtol=1e-10, atol=1e-12)


X = np.random.default_rng(0).normal(size=(3, 4))


@pytest.mark.parametrize("ord,axis", [("euclidean", None), ("euclidean", 1), (1, 0), (np.inf, -1), ("fro", [0, 1]),
                                      (2, 1)])
def test_normalize(ord, axis):
    for dtype, rtol in ((np.float32, 2e-6), (np.float64, 1e-13)):
        x = X.astype(dtype)
        theirs = real_tf.linalg.normalize(real_tf.constant(x), ord=ord, axis=axis)
        _close(em.linalg.normalize(em.constant(x), ord=ord, axis=axis), theirs, rtol)
        _close(em.function(lambda v: em.linalg.normalize(v, ord=ord, axis=axis))(em.constant(x)), theirs, rtol)
    w = np.random.default_rng(1).normal(size=X.shape)
    _grads(lambda v: em.reduce_sum(em.linalg.normalize(v, ord=ord, axis=axis)[0] * w),
           lambda v: real_tf.reduce_sum(real_tf.linalg.normalize(v, ord=ord, axis=axis)[0] * w), X)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 1, 2)])
def test_tensor_diag_and_part(shape):
    d = np.arange(1, 1 + np.prod(shape)).reshape(shape).astype(np.float64)
    theirs = real_tf.linalg.tensor_diag(real_tf.constant(d))
    _close(em.linalg.tensor_diag(em.constant(d)), theirs)
    _close(em.function(em.linalg.tensor_diag)(em.constant(d)), theirs)
    full = np.random.default_rng(2).normal(size=shape + shape)
    part = real_tf.linalg.tensor_diag_part(real_tf.constant(full))
    _close(em.linalg.tensor_diag_part(em.constant(full)), part)
    _close(em.function(em.linalg.tensor_diag_part)(em.constant(full)), part)
    w = np.random.default_rng(3).normal(size=shape + shape)
    _grads(lambda v: em.reduce_sum(em.linalg.tensor_diag(v) * w),
           lambda v: real_tf.reduce_sum(real_tf.linalg.tensor_diag(v) * w), d)
    _grads(lambda v: em.reduce_sum(em.linalg.tensor_diag_part(v) * d),
           lambda v: real_tf.reduce_sum(real_tf.linalg.tensor_diag_part(v) * d), full)
    _close(em.linalg.tensor_diag(em.constant(d.astype(np.int32))), real_tf.linalg.tensor_diag(d.astype(np.int32)))


def test_tensor_diag_errors():
    for bad in (np.zeros([2, 3]), np.zeros([2, 3, 2])):
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.linalg.tensor_diag_part(bad)
        with pytest.raises(errors.InvalidArgumentError):
            em.linalg.tensor_diag_part(bad)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.linalg.tensor_diag(np.float64(1.0))
    with pytest.raises(errors.InvalidArgumentError):
        em.linalg.tensor_diag(np.float64(1.0))


@pytest.mark.parametrize("fmt", ["compact", "sequence", "matrix"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_tridiagonal_matmul(fmt, batch):
    rng = np.random.default_rng(4)
    m, n = 5, 3
    sup, main, sub = (rng.normal(size=batch + (m,)) for _ in range(3))
    rhs = rng.normal(size=batch + (m, n))

    def args(lib):
        if fmt == "compact":
            return lib.constant(np.stack([sup, main, sub], axis=-2))
        if fmt == "sequence":
            return [lib.constant(sup), lib.constant(main), lib.constant(sub)]
        a = np.zeros(batch + (m, m))
        for i in range(m):
            a[..., i, i] = main[..., i]
            if i + 1 < m:
                a[..., i, i + 1] = sup[..., i]
                a[..., i + 1, i] = sub[..., i + 1]
        return lib.constant(a)

    theirs = real_tf.linalg.tridiagonal_matmul(args(real_tf), real_tf.constant(rhs), diagonals_format=fmt)
    _close(em.linalg.tridiagonal_matmul(args(em), em.constant(rhs), diagonals_format=fmt), theirs, 1e-13)
    if fmt != "sequence":
        _close(em.function(lambda d, r: em.linalg.tridiagonal_matmul(d, r, diagonals_format=fmt))(
            args(em), em.constant(rhs)), theirs, 1e-13)
    w = rng.normal(size=batch + (m, n))
    if fmt == "compact":
        d = np.stack([sup, main, sub], axis=-2)
        _grads(lambda dd, r: em.reduce_sum(em.linalg.tridiagonal_matmul(dd, r) * w),
               lambda dd, r: real_tf.reduce_sum(real_tf.linalg.tridiagonal_matmul(dd, r) * w), d, rhs)


def test_tridiagonal_matmul_errors():
    d4, r = np.random.default_rng(5).normal(size=(4, 5)), np.ones([5, 2])  # TF ignores a fourth row
    _close(em.linalg.tridiagonal_matmul(d4, r), real_tf.linalg.tridiagonal_matmul(d4, r), 1e-13)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.linalg.tridiagonal_matmul(np.zeros([3, 5]), np.zeros([4, 2]))
    with pytest.raises(errors.InvalidArgumentError):
        em.linalg.tridiagonal_matmul(np.zeros([3, 5]), np.zeros([4, 2]))
    with pytest.raises(ValueError):
        real_tf.linalg.tridiagonal_matmul(np.zeros([3, 5]), np.zeros([5, 2]), diagonals_format="bad")
    with pytest.raises(ValueError):
        em.linalg.tridiagonal_matmul(np.zeros([3, 5]), np.zeros([5, 2]), diagonals_format="bad")


@pytest.mark.parametrize("seed_dtype", [np.int32, np.int64])
def test_random_split_and_fold_in_equal_tensorflow(seed_dtype):
    for seed in ([1, 2], [0, 0], [-7, 123456789], [2**31 - 1, -2**31]):
        s = np.array(seed, seed_dtype)
        for num in (1, 2, 5):
            theirs = real_tf.random.split(real_tf.constant(s), num=num)
            ours = em.random.split(em.constant(s), num=num)
            assert ours.dtype.name == theirs.dtype.name
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            np.testing.assert_array_equal(em.function(lambda v: em.random.split(v, num))(em.constant(s)).numpy(),
                                          theirs.numpy())
        for data in (0, 7, -3, 2**31 - 1):
            d = np.array(data, seed_dtype)
            theirs = real_tf.random.fold_in(real_tf.constant(s), real_tf.constant(d))
            ours = em.random.fold_in(em.constant(s), em.constant(d))
            assert ours.dtype.name == theirs.dtype.name
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(em.random.split([3, 4]).numpy(), real_tf.random.split([3, 4]).numpy())
    np.testing.assert_array_equal(em.random.fold_in([3, 4], 9).numpy(), real_tf.random.fold_in([3, 4], 9).numpy())
    # the new seeds drive stateless ops as in TensorFlow
    ours = em.random.stateless_uniform([3], seed=em.random.split(em.constant([5, 6]))[1])
    theirs = real_tf.random.stateless_uniform([3], seed=real_tf.random.split(real_tf.constant([5, 6]))[1])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

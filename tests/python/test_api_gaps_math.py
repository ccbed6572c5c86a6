"""TensorFlow math helpers built from existing ops (python/ember/ops/math_composite_ops.py) against
TensorFlow 2.21: values bit for bit where TF is exact, dtypes, shapes, eager and inside ember.function,
gradients against TensorFlow's, and errors of the same kind."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def _same(ours, theirs, exact=True):
    assert ours.dtype.name == theirs.dtype.name, (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = np.asarray(ours.numpy()), np.asarray(theirs.numpy())
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, atol=1e-7)


def _both_modes(fn, *args):
    """fn's result eagerly and inside ember.function (the two must agree)."""
    eager = fn(*[em.constant(a) for a in args])
    traced = em.function(fn)(*[em.constant(a) for a in args])
    np.testing.assert_array_equal(np.asarray(eager.numpy()), np.asarray(traced.numpy()))
    return eager


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("op", ["truncatediv", "truncatemod"])
def test_truncatediv_truncatemod(op, dtype):
    if op == "truncatemod" and dtype in (np.int8, np.int16, np.uint8):  # TruncateMod does not list them
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.truncatemod(real_tf.constant([1], dtype), real_tf.constant([1], dtype))
        with pytest.raises(errors.InvalidArgumentError):
            em.truncatemod(em.constant([1], dtype), em.constant([1], dtype))
        return
    if dtype == np.uint8:
        x = np.array([7, 200, 0, 9, 255], dtype)
        y = np.array([2, 3, 5, 9, 1], dtype)
    else:
        x = np.array([-7, 7, -7, 7, 0, -6, 5, -1], dtype)
        y = np.array([2, -2, -3, 3, -4, 3, 7, 2], dtype)
        if np.dtype(dtype).kind == "f":
            x = x + np.array(0.5, dtype)
    if op == "truncatemod" and dtype == np.uint8:
        pass
    # TF 2.21 has them only at the top level (no tf.math.truncatediv).
    assert not hasattr(real_tf.math, op) and not hasattr(em.math, op)
    ours = _both_modes(getattr(em, op), x, y)
    _same(ours, getattr(real_tf, op)(real_tf.constant(x), real_tf.constant(y)))
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        x2 = np.array([info.min, info.max, info.min + 1], dtype)
        y2 = np.array([3, -5, 7], dtype)
        _same(getattr(em, op)(em.constant(x2), em.constant(y2)),
              getattr(real_tf, op)(real_tf.constant(x2), real_tf.constant(y2)))
    # broadcasting with a Python scalar
    _same(getattr(em, op)(em.constant(x), 3), getattr(real_tf, op)(real_tf.constant(x), 3))


def test_truncatediv_errors():
    with pytest.raises(errors.InvalidArgumentError):
        em.truncatediv(em.constant([1]), em.constant([1.0]))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.truncatediv(real_tf.constant([1]), real_tf.constant([1.0]))
    with pytest.raises(errors.InvalidArgumentError):
        em.truncatemod(em.constant([True]), em.constant([True]))


def test_reciprocal_no_nan_and_gradient():
    x = np.array([0.0, 2.0, -0.5, 4.0], np.float32)
    _same(_both_modes(em.math.reciprocal_no_nan, x), real_tf.math.reciprocal_no_nan(real_tf.constant(x)))
    with pytest.raises(errors.InvalidArgumentError):
        em.math.reciprocal_no_nan(em.constant([1, 2]))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.math.reciprocal_no_nan(real_tf.constant([1, 2]))
    xe, xt = em.Variable(x[1:]), real_tf.Variable(x[1:])
    with em.GradientTape() as t1:
        y1 = em.reduce_sum(em.math.reciprocal_no_nan(xe))
    with real_tf.GradientTape() as t2:
        y2 = real_tf.reduce_sum(real_tf.math.reciprocal_no_nan(xt))
    np.testing.assert_allclose(t1.gradient(y1, xe).numpy(), t2.gradient(y2, xt).numpy(), rtol=1e-6)


@pytest.mark.parametrize("values", [[1, 1, 2], [1, 2, 3], [3, 2], [], [5], [[1, 2], [3, 4]], [[1, 2], [2, 1]],
                                    [0.5, 0.5, np.nan]])
def test_monotonic(values):
    for name in ("is_non_decreasing", "is_strictly_increasing"):
        x = np.array(values, np.float32 if any(isinstance(v, float) for v in np.ravel(values)) else np.int32)
        ours = getattr(em.math, name)(em.constant(x))
        theirs = getattr(real_tf.math, name)(real_tf.constant(x))
        _same(ours, theirs)
        if x.size:
            _same(em.function(getattr(em.math, name))(em.constant(x)), theirs)
    with pytest.raises(TypeError):
        real_tf.math.is_non_decreasing(["a"])
    with pytest.raises(TypeError):
        em.math.is_non_decreasing(["a"])


@pytest.mark.parametrize("values,dtype", [([0, 1, 0, 3], np.int32), ([0.0, -0.0, 1.5], np.float32),
                                          ([True, False], np.bool_), ([], np.float32), ([[0, 2], [0, 0]], np.int64)])
def test_zero_fraction(values, dtype):
    x = np.array(values, dtype)
    assert em.nn.zero_fraction is em.math.zero_fraction
    theirs = real_tf.math.zero_fraction(real_tf.constant(x))
    _same(em.math.zero_fraction(em.constant(x)), theirs)
    _same(em.function(em.math.zero_fraction)(em.constant(x)), theirs)


def test_invert_permutation():
    for x in (np.array([2, 0, 1], np.int32), np.array([1, 0], np.int64), np.array([], np.int32)):
        _same(em.math.invert_permutation(em.constant(x)), real_tf.math.invert_permutation(real_tf.constant(x)))
        _same(em.invert_permutation(list(x)), real_tf.math.invert_permutation(list(x)))
        _same(em.invert_permutation(x), real_tf.math.invert_permutation(x))  # NumPy int64 -> int32, as TF
    for bad in ([0, 0], [3, 0, 1], [[0]]):
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.math.invert_permutation(bad)
        with pytest.raises(errors.InvalidArgumentError):
            em.math.invert_permutation(bad)


def test_accumulate_n():
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    _same(em.math.accumulate_n([em.constant(a), em.constant(b)]),
          real_tf.math.accumulate_n([real_tf.constant(a), real_tf.constant(b)]))
    _same(em.math.accumulate_n([em.constant([1, 2])], shape=[2], tensor_dtype=em.int32),
          real_tf.math.accumulate_n([real_tf.constant([1, 2])], shape=[2], tensor_dtype=real_tf.int32))
    for args, kwargs, exc in (([], {}, ValueError), ([[1.0], [1.0, 2.0]], {}, ValueError),
                              ([[1.0]], {"shape": [2]}, ValueError), ([[1.0]], {"tensor_dtype": "int32"}, TypeError)):
        with pytest.raises(exc):
            real_tf.math.accumulate_n([real_tf.constant(v) for v in args], **kwargs)
        with pytest.raises(exc):
            em.math.accumulate_n([em.constant(v) for v in args], **kwargs)
    xe = em.Variable(a)
    with em.GradientTape() as t:
        y = em.reduce_sum(em.math.accumulate_n([xe, xe * 2.0]))
    np.testing.assert_array_equal(t.gradient(y, xe).numpy(), [3.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_is_inf(dtype):
    x = np.array([np.inf, -np.inf, 1.0, np.nan, 0.0, 6e4], dtype)
    _same(_both_modes(em.math.is_inf, x), real_tf.math.is_inf(real_tf.constant(x)))
    with pytest.raises(errors.InvalidArgumentError):
        em.math.is_inf(em.constant([1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_bit_exact(dtype):
    info = np.finfo(dtype)
    tiny = np.array(info.smallest_subnormal, dtype)
    x1 = np.array([1.0, 0.0, -0.0, np.inf, np.nan, 1.0, -1.0, info.max, -info.max, tiny, -tiny, 2.0, 3.0, 0.0,
                   np.inf, 5.0], dtype)
    x2 = np.array([2.0, -1.0, 1.0, 0.0, 1.0, np.nan, -2.0, np.inf, -np.inf, 0.0, 0.0, 2.0, -np.inf, 0.0,
                   np.inf, 1e-30], dtype)
    ours = _both_modes(em.math.nextafter, x1, x2)
    theirs = real_tf.math.nextafter(real_tf.constant(x1), real_tf.constant(x2))
    assert ours.dtype.name == theirs.dtype.name
    np.testing.assert_array_equal(np.asarray(ours.numpy()).view(np.uint8), np.asarray(theirs.numpy()).view(np.uint8))
    # broadcasting
    _same(em.math.nextafter(em.constant(x1), em.constant(dtype(0))),
          real_tf.math.nextafter(real_tf.constant(x1), real_tf.constant(dtype(0))))
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.math.nextafter(real_tf.constant([1.0], real_tf.float16), real_tf.constant([2.0], real_tf.float16))
    with pytest.raises(errors.InvalidArgumentError):
        em.math.nextafter(em.constant([1.0], em.float16), em.constant([2.0], em.float16))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unravel_index(dtype):
    for indices, dims in (([5, 0, 11], [3, 4]), (7, [3, 4]), ([-1, -5, -12, -13, -100], [3, 4]), ([0, 23, 13], [2, 3, 4]), ([0], [])):
        i, d = np.array(indices, dtype), np.array(dims, dtype)
        theirs = real_tf.unravel_index(real_tf.constant(i), real_tf.constant(d))
        _same(em.unravel_index(em.constant(i), em.constant(d)), theirs)
        if i.size and d.size:
            _same(em.function(em.unravel_index)(em.constant(i), em.constant(d)), theirs)
    for indices, dims in (([12], [3, 4]), ([1], [0, 4]), ([1], [[3, 4]]), ([1.0], [3, 4]),
                          ([1], [-3, 4]), ([[1, 2]], [3, 4]), ([], [3, 4])):
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.unravel_index(indices, dims)
        with pytest.raises(errors.InvalidArgumentError):
            em.unravel_index(indices, dims)


@pytest.mark.parametrize("out", ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"])
@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "uint8"])
def test_saturate_cast(src, out):
    if np.dtype(src).kind == "f":
        x = np.array([-1e20, -300.0, -1.5, 0.5, 200.0, 300.0, 1e20, np.inf, -np.inf], src)
    else:
        info = np.iinfo(src)
        x = np.array([v for v in (info.min, -300, -5, 0, 200, 300, info.max) if info.min <= v <= info.max], src)
    ours = _both_modes(lambda v: em.saturate_cast(v, getattr(em, out)), x)
    _same(ours, real_tf.saturate_cast(real_tf.constant(x), getattr(real_tf, out)))


def test_saturate_cast_complex():
    z = np.array([1e300 + 2j, -1e300 - 1e300j], np.complex128)
    _same(em.saturate_cast(em.constant(z), em.complex64), real_tf.saturate_cast(real_tf.constant(z), real_tf.complex64))
    _same(em.saturate_cast(em.constant(z), em.float32), real_tf.saturate_cast(real_tf.constant(z), real_tf.float32))
    x = em.Variable([1.0, 5.0, -5.0])
    with em.GradientTape() as t:
        y = em.reduce_sum(em.saturate_cast(x * 100.0, em.int8) + 0)
    assert t.gradient(y, x) is None  # a cast to an integer dtype has no gradient, as in TF


def test_broadcast_shapes():
    for a, b in (([2, 1, 3], [4, 1]), ([], [5]), ([1], [0]), ([3, 4], [3, 4]), ([None, 1], [5, 3]), ([2, None], [1])):
        ours = em.broadcast_static_shape(em.TensorShape(a), em.TensorShape(b))
        theirs = real_tf.broadcast_static_shape(real_tf.TensorShape(a), real_tf.TensorShape(b))
        assert ours.as_list() == theirs.as_list()
    assert em.broadcast_static_shape(em.TensorShape(None), em.TensorShape([2])).rank is None
    with pytest.raises(ValueError):
        real_tf.broadcast_static_shape(real_tf.TensorShape([2]), real_tf.TensorShape([3]))
    with pytest.raises(ValueError):
        em.broadcast_static_shape(em.TensorShape([2]), em.TensorShape([3]))
    for a, b, dtype in (([2, 1, 3], [4, 1], np.int32), ([], [5], np.int64), ([1], [0], np.int32)):
        a, b = np.array(a, dtype), np.array(b, dtype)
        # NumPy shapes convert to int32 (the op's default) in both, even from int64 arrays
        _same(em.broadcast_dynamic_shape(a, b), real_tf.broadcast_dynamic_shape(a, b))
        theirs = real_tf.broadcast_dynamic_shape(real_tf.constant(a), real_tf.constant(b))
        _same(em.broadcast_dynamic_shape(em.constant(a), em.constant(b)), theirs)
        _same(em.function(em.broadcast_dynamic_shape)(em.constant(a), em.constant(b)), theirs)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.broadcast_dynamic_shape([2], [3])
    with pytest.raises(errors.InvalidArgumentError):
        em.broadcast_dynamic_shape([2], [3])


@pytest.mark.parametrize("dtype", [np.float32])
def test_histogram_fixed_width_bins(dtype):
    x = np.array([[-1.0, 0.0, 1.5, 2.0], [5.0, 12.0, 15.0, 9.99]], dtype)
    # value_range converts on its own (float32): float64 values with a list range fail in both.
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.histogram_fixed_width_bins(real_tf.constant(x, real_tf.float64), [0.0, 12.5])
    with pytest.raises(errors.InvalidArgumentError):
        em.histogram_fixed_width_bins(em.constant(x, em.float64), [0.0, 12.5])
    for nbins in (5, 1, 7):
        theirs = real_tf.histogram_fixed_width_bins(real_tf.constant(x), [0.0, 12.5], nbins=nbins)
        _same(em.histogram_fixed_width_bins(em.constant(x), [0.0, 12.5], nbins=nbins), theirs)
    theirs = real_tf.histogram_fixed_width_bins(real_tf.constant(x), [0.0, 12.5], nbins=4, dtype=real_tf.int64)
    _same(em.function(lambda v: em.histogram_fixed_width_bins(v, [0.0, 12.5], nbins=4, dtype=em.int64))(
        em.constant(x)), theirs)


@pytest.mark.parametrize("seq_axis,batch_axis", [(1, 0), (0, 1), (2, 0), (1, 2)])
@pytest.mark.parametrize("len_dtype", [np.int32, np.int64])
def test_reverse_sequence(seq_axis, batch_axis, len_dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    lengths = np.array([1, 3, 0, 4, 2, 5][:x.shape[batch_axis]], len_dtype) % (x.shape[seq_axis] + 1)
    theirs = real_tf.reverse_sequence(real_tf.constant(x), lengths, seq_axis=seq_axis, batch_axis=batch_axis)
    fn = lambda v: em.reverse_sequence(v, lengths, seq_axis=seq_axis, batch_axis=batch_axis)  # noqa: E731
    _same(_both_modes(fn, x), theirs)
    w = rng.normal(size=x.shape).astype(np.float32)
    xe, xt = em.Variable(x), real_tf.Variable(x)
    with em.GradientTape() as t1:
        y1 = em.reduce_sum(fn(xe) * w)
    with real_tf.GradientTape() as t2:
        y2 = real_tf.reduce_sum(real_tf.reverse_sequence(xt, lengths, seq_axis, batch_axis) * w)
    np.testing.assert_array_equal(t1.gradient(y1, xe).numpy(), t2.gradient(y2, xt).numpy())


def test_reverse_sequence_errors():
    x = np.zeros((2, 3), np.float32)
    for kwargs in (dict(seq_lengths=[1, 4], seq_axis=1), dict(seq_lengths=[1, 2, 3], seq_axis=1),
                   dict(seq_lengths=[1, 1], seq_axis=0, batch_axis=0), dict(seq_lengths=[1, 1], seq_axis=5)):
        with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
            real_tf.reverse_sequence(x, **kwargs)
        with pytest.raises((errors.InvalidArgumentError, ValueError)):
            em.reverse_sequence(x, **kwargs)


def test_grad_pass_through():
    xe, xt = em.Variable(2.5), real_tf.Variable(2.5)
    with em.GradientTape() as t1:
        y1 = em.grad_pass_through(lambda v: em.round(v) * 3.0)(xe)
    with real_tf.GradientTape() as t2:
        y2 = real_tf.grad_pass_through(lambda v: real_tf.round(v) * 3.0)(xt)
    assert float(y1) == float(y2)
    assert float(t1.gradient(y1, xe)) == float(t2.gradient(y2, xt)) == 1.0
    z = em.Variable([1.0, 2.0])
    with em.GradientTape() as t:
        y = em.reduce_sum(em.grad_pass_through(em.square)(z) * em.constant([2.0, 5.0]))
    np.testing.assert_array_equal(t.gradient(y, z).numpy(), [2.0, 5.0])

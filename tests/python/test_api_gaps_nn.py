"""tf.nn statistics, crelu, log_poisson_loss, collapse_repeated, approx_max_k, the candidate samplers,
compute_accidental_hits and the sampled losses (ops/nn_moments_ops.py, ops/ctc_ops.py,
ops/candidate_sampling_ops.py) against TensorFlow 2.21. Random draws cannot equal TensorFlow's stream: the
samplers are checked for shapes, dtypes, ranges, uniqueness and TensorFlow's expected-count formulas; the
losses exactly, with one ``sampled_values`` fed to both."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def _close(ours, theirs, rtol=1e-6):
    ours = ours if isinstance(ours, (tuple, list)) else [ours]
    theirs = theirs if isinstance(theirs, (tuple, list)) else [theirs]
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
            continue
        assert o.dtype.name == t.dtype.name and tuple(o.shape) == tuple(t.shape), (o, t)
        np.testing.assert_allclose(np.asarray(o.numpy(), np.float64), np.asarray(t.numpy(), np.float64),
                                   rtol=rtol, atol=rtol)


def _grads(em_fn, tf_fn, *values):
    ev = [em.Variable(v) for v in values]
    tv = [real_tf.Variable(v) for v in values]
    with em.GradientTape() as t1:
        y1 = em_fn(*ev)
    with real_tf.GradientTape() as t2:
        y2 = tf_fn(*tv)
    for a, b in zip(t1.gradient(y1, ev), t2.gradient(y2, tv)):
        np.testing.assert_allclose(em.convert_to_tensor(a).numpy(), real_tf.convert_to_tensor(b).numpy(), rtol=1e-9,
                                   atol=1e-12)


X = np.random.default_rng(0).normal(size=(3, 4, 5))


@pytest.mark.parametrize("axes", [[0], [1, 2], [0, 1, 2], [-1]])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shift", [None, 0.5])
def test_sufficient_statistics_and_normalize_moments(axes, keepdims, shift):
    for dtype in (np.float32, np.float64):
        x = X.astype(dtype)
        shift = None if shift is None else dtype(shift)
        ours = em.nn.sufficient_statistics(em.constant(x), axes, shift=shift, keepdims=keepdims)
        theirs = real_tf.nn.sufficient_statistics(real_tf.constant(x), axes, shift=shift, keepdims=keepdims)
        _close(ours[:3], theirs[:3], 1e-5 if dtype == np.float32 else 1e-12)
        assert (ours[3] is None) == (theirs[3] is None)
        _close(em.nn.normalize_moments(*ours), real_tf.nn.normalize_moments(*theirs),
               1e-5 if dtype == np.float32 else 1e-12)
        traced = em.function(lambda v: em.nn.sufficient_statistics(v, axes, shift=shift, keepdims=keepdims)[:3])(
            em.constant(x))
        _close(traced, theirs[:3], 1e-5 if dtype == np.float32 else 1e-12)
    _grads(lambda v: em.reduce_sum(em.nn.normalize_moments(*em.nn.sufficient_statistics(v, axes, shift))[1]),
           lambda v: real_tf.reduce_sum(real_tf.nn.normalize_moments(*real_tf.nn.sufficient_statistics(v, axes,
                                                                                                        shift))[1]), X)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("weights_shape", [(3, 4, 5), (3, 1, 5), (5,)])
def test_weighted_moments(dtype, weights_shape):
    rng = np.random.default_rng(1)
    w = rng.integers(0, 3, weights_shape).astype(dtype)
    x = X.astype(dtype)
    for axes, keepdims in (([0], False), ([1, 2], True), ([0, 1, 2], False)):
        ours = em.nn.weighted_moments(em.constant(x), axes, em.constant(w), keepdims=keepdims)
        theirs = real_tf.nn.weighted_moments(real_tf.constant(x), axes, real_tf.constant(w), keepdims=keepdims)
        _close(ours, theirs, {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype])
    zero = np.zeros(weights_shape, dtype)
    _close(em.nn.weighted_moments(em.constant(x), [0], em.constant(zero)),
           real_tf.nn.weighted_moments(real_tf.constant(x), [0], real_tf.constant(zero)))
    _grads(lambda v: em.reduce_sum(em.nn.weighted_moments(v, [1], w.astype(np.float64))[1]),
           lambda v: real_tf.reduce_sum(real_tf.nn.weighted_moments(v, [1], w.astype(np.float64))[1]), X)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_crelu(axis):
    x = X[0].astype(np.float32)
    _close(em.nn.crelu(em.constant(x), axis=axis), real_tf.nn.crelu(real_tf.constant(x), axis=axis))
    _close(em.function(lambda v: em.nn.crelu(v, axis=axis))(em.constant(x)),
           real_tf.nn.crelu(real_tf.constant(x), axis=axis))
    _grads(lambda v: em.reduce_sum(em.nn.crelu(v, axis=axis) * np.arange(1.0, 9.0).reshape(-1, 1)[:8, :].sum()),
           lambda v: real_tf.reduce_sum(real_tf.nn.crelu(v, axis=axis) * np.arange(1.0, 9.0).reshape(-1, 1)[:8, :]
                                        .sum()), X[0])


@pytest.mark.parametrize("full", [False, True])
def test_log_poisson_loss(full):
    targets = np.array([[0.0, 1.0, 2.0], [0.5, 5.0, 10.0]])
    log_input = np.random.default_rng(2).normal(size=(2, 3))
    for dtype in (np.float32, np.float64):
        _close(em.nn.log_poisson_loss(em.constant(targets.astype(dtype)), em.constant(log_input.astype(dtype)), full),
               real_tf.nn.log_poisson_loss(real_tf.constant(targets.astype(dtype)),
                                           real_tf.constant(log_input.astype(dtype)), full),
               1e-6 if dtype == np.float32 else 1e-13)
    _grads(lambda v: em.reduce_sum(em.nn.log_poisson_loss(targets, v, full)),
           lambda v: real_tf.reduce_sum(real_tf.nn.log_poisson_loss(targets, v, full)), log_input)
    with pytest.raises(ValueError):
        real_tf.nn.log_poisson_loss(real_tf.zeros([2]), real_tf.zeros([3]))
    with pytest.raises(ValueError):
        em.nn.log_poisson_loss(em.zeros([2]), em.zeros([3]))


def test_collapse_repeated():
    labels = np.array([[1, 1, 2, 2, 3], [4, 4, 4, 4, 4], [1, 2, 1, 2, 2], [7, 7, 8, 0, 0]], np.int32)
    for lengths in ([5, 5, 5, 2], [3, 1, 4, 5], [0, 5, 5, 5]):
        lengths = np.array(lengths, np.int32)
        theirs = real_tf.nn.collapse_repeated(real_tf.constant(labels), real_tf.constant(lengths))
        _close(em.nn.collapse_repeated(em.constant(labels), em.constant(lengths)), theirs)
        _close(em.function(em.nn.collapse_repeated)(em.constant(labels), em.constant(lengths)), theirs)


def test_approx_top_k_in_nn():
    x = np.random.default_rng(3).normal(size=(3, 10)).astype(np.float32)
    assert hasattr(em.nn, "approx_min_k") and hasattr(real_tf.nn, "approx_min_k")  # (no TF CPU kernel)
    for name in ("approx_max_k",):
        _close(getattr(em.nn, name)(em.constant(x), 3), getattr(real_tf.nn, name)(real_tf.constant(x), 3))


# ---- candidate samplers ------------------------------------------------------------------------------------

TRUE = np.array([[1, 5], [2, 3], [0, 9]], np.int64)


def _check_counts(p_true, p_sampled, result, num_sampled, unique):
    """TensorFlow's RangeSampler expected counts: p * k, or -expm1(n * log1p(-p)) for the n tries a unique
    draw took (n is not returned: find the one that fits)."""
    true_c, sampled_c = result.true_expected_count.numpy(), result.sampled_expected_count.numpy()
    candidates = [num_sampled] + (list(range(num_sampled + 1, 20 * num_sampled + 200)) if unique else [])
    for n in candidates:
        f = (lambda p: p * num_sampled) if n == num_sampled else (lambda p: -np.expm1(n * np.log1p(-p)))
        if (np.allclose(true_c, f(p_true).astype(np.float32), rtol=1e-6)
                and np.allclose(sampled_c, f(p_sampled).astype(np.float32), rtol=1e-6)):
            return n
    raise AssertionError(f"no number of tries fits the expected counts {true_c} {sampled_c}")


def _check_sample(result, num_sampled, range_max, unique):
    s = result.sampled_candidates
    assert s.dtype == em.int64 and tuple(s.shape) == (num_sampled,)
    assert result.true_expected_count.dtype == em.float32 and tuple(result.true_expected_count.shape) == TRUE.shape
    assert result.sampled_expected_count.dtype == em.float32
    values = s.numpy()
    assert values.min() >= 0 and values.max() < range_max
    if unique:
        assert len(set(values.tolist())) == num_sampled


@pytest.mark.parametrize("unique", [True, False])
def test_uniform_and_log_uniform_samplers(unique):
    for name, prob in (("uniform_candidate_sampler", lambda c, r: np.full(np.shape(c), 1.0 / r)),
                       ("log_uniform_candidate_sampler",
                        lambda c, r: (np.log(c + 2.0) - np.log(c + 1.0)) / np.log(r + 1.0))):
        for num_sampled, range_max in ((4, 10), (10, 10), (30, 1000)):
            if not unique and num_sampled == range_max:
                continue
            r = getattr(em.random, name)(em.constant(TRUE), 2, num_sampled, unique, range_max, seed=3)
            _check_sample(r, num_sampled, range_max, unique)
            _check_counts(prob(TRUE, range_max), prob(r.sampled_candidates.numpy(), range_max), r, num_sampled,
                          unique)
            traced = em.function(lambda t: getattr(em.random, name)(t, 2, num_sampled, unique, range_max))(
                em.constant(TRUE))
            _check_sample(traced, num_sampled, range_max, unique)
        # TensorFlow's own results fit the same formula.
        t = getattr(real_tf.random, name)(real_tf.constant(TRUE), 2, 6, unique, 50, seed=1)
        _check_counts(prob(TRUE, 50), prob(t.sampled_candidates.numpy(), 50), t, 6, unique)


def test_sampler_distribution_and_seed():
    draws = np.concatenate([em.random.log_uniform_candidate_sampler(TRUE, 2, 50, False, 20).sampled_candidates.numpy()
                            for _ in range(400)])
    expected = (np.log(np.arange(20) + 2.0) - np.log(np.arange(20) + 1.0)) / np.log(21.0)
    observed = np.bincount(draws, minlength=20) / draws.size
    np.testing.assert_allclose(observed, expected, atol=0.015)  # 4 standard deviations of 20000 draws
    em.random.set_seed(5)
    a = em.random.uniform_candidate_sampler(TRUE, 2, 5, True, 100, seed=2).sampled_candidates.numpy()
    em.random.set_seed(5)
    b = em.random.uniform_candidate_sampler(TRUE, 2, 5, True, 100, seed=2).sampled_candidates.numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("unique", [True, False])
def test_fixed_unigram_sampler(unique):
    unigrams = [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    for distortion, reserved, shards, shard in ((1.0, 0, 1, 0), (0.5, 2, 1, 0), (0.75, 3, 1, 0)):
        range_max = len(unigrams) + reserved
        full = np.concatenate([np.zeros(reserved), np.array(unigrams) ** distortion])
        full[np.arange(range_max) % shards != shard] = 0
        p = full / full.sum()
        num_sampled = 3
        kwargs = dict(distortion=distortion, num_reserved_ids=reserved, num_shards=shards, shard=shard,
                      unigrams=unigrams)
        r = em.random.fixed_unigram_candidate_sampler(TRUE, 2, num_sampled, unique, range_max, seed=1, **kwargs)
        _check_sample(r, num_sampled, range_max, unique)
        assert (p[r.sampled_candidates.numpy()] > 0).all()
        _check_counts(p[TRUE], p[r.sampled_candidates.numpy()], r, num_sampled, unique)
        t = real_tf.random.fixed_unigram_candidate_sampler(TRUE, 2, num_sampled, unique, range_max, seed=1, **kwargs)
        _check_counts(p[TRUE], p[t.sampled_candidates.numpy()], t, num_sampled, unique)


def test_all_candidate_sampler():
    ours = em.random.all_candidate_sampler(TRUE, 2, 12, True)
    theirs = real_tf.random.all_candidate_sampler(TRUE, 2, 12, True)
    _close(ours, theirs)
    assert em.nn.all_candidate_sampler is em.random.all_candidate_sampler


def test_sampler_errors():
    for kwargs in (dict(true_classes=np.array([[1, 12]], np.int64), num_true=2, num_sampled=2, unique=True,
                        range_max=8),
                   dict(true_classes=np.array([[-1, 2]], np.int64), num_true=2, num_sampled=2, unique=True,
                        range_max=8),
                   dict(true_classes=TRUE, num_true=1, num_sampled=2, unique=True, range_max=5),
                   dict(true_classes=TRUE, num_true=2, num_sampled=20, unique=True, range_max=5),
                   dict(true_classes=TRUE, num_true=2, num_sampled=0, unique=True, range_max=5)):
        with pytest.raises(real_tf.errors.InvalidArgumentError):
            real_tf.random.uniform_candidate_sampler(**kwargs)
        with pytest.raises(errors.InvalidArgumentError):
            em.random.uniform_candidate_sampler(**kwargs)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.random.uniform_candidate_sampler(real_tf.constant([[1]], real_tf.int32), 1, 2, True, 5)
    with pytest.raises(errors.InvalidArgumentError):
        em.random.uniform_candidate_sampler(em.constant([[1]], em.int32), 1, 2, True, 5)


def test_compute_accidental_hits():
    for true, sampled in ((TRUE, [5, 1, 2, 9, 3, 0]), (TRUE, [7, 8]), (np.array([[4]], np.int64), [4, 4, 1, 4]),
                          (np.array([[4, 4]], np.int64), [1, 4])):
        sampled = np.array(sampled, np.int64)
        ours = em.nn.compute_accidental_hits(em.constant(true), em.constant(sampled), true.shape[1])
        theirs = real_tf.nn.compute_accidental_hits(real_tf.constant(true), real_tf.constant(sampled), true.shape[1])
        _close(ours, theirs)


# ---- sampled losses ------------------------------------------------------------------------------------------


def _loss_case(num_true, num_classes=20, dim=6, batch=4, num_sampled=5, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(num_classes, dim)).astype(np.float32)
    biases = rng.normal(size=(num_classes,)).astype(np.float32)
    labels = np.stack([rng.choice(num_classes, num_true, replace=False) for _ in range(batch)]).astype(np.int64)
    inputs = rng.normal(size=(batch, dim)).astype(np.float32)
    sampled = real_tf.random.log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed=7)
    # one sampled candidate equal to a true label, so that accidental hits matter
    cand = sampled.sampled_candidates.numpy().copy()
    cand[0] = labels[0, 0]
    values = (cand, sampled.true_expected_count.numpy(), sampled.sampled_expected_count.numpy())
    return weights, biases, labels, inputs, num_sampled, num_classes, values


@pytest.mark.parametrize("loss", ["sampled_softmax_loss", "nce_loss"])
@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("remove_hits", [True, False])
def test_sampled_losses_equal_tensorflow(loss, num_true, remove_hits):
    w, b, labels, x, num_sampled, num_classes, values = _loss_case(num_true)
    kwargs = dict(num_true=num_true, sampled_values=values, remove_accidental_hits=remove_hits)
    theirs = getattr(real_tf.nn, loss)(w, b, labels, x, num_sampled, num_classes, **kwargs)
    ours = getattr(em.nn, loss)(w, b, labels, x, num_sampled, num_classes, **kwargs)
    _close(ours, theirs, 2e-5)
    traced = em.function(lambda ww, bb, xx: getattr(em.nn, loss)(ww, bb, labels, xx, num_sampled, num_classes,
                                                                 **kwargs))(em.constant(w), em.constant(b),
                                                                             em.constant(x))
    _close(traced, theirs, 2e-5)
    wd, bd, xd = w.astype(np.float64), b.astype(np.float64), x.astype(np.float64)
    vd = (values[0], values[1].astype(np.float64), values[2].astype(np.float64))
    kwargs["sampled_values"] = vd
    _grads(lambda ww, bb, xx: em.reduce_sum(getattr(em.nn, loss)(ww, bb, labels, xx, num_sampled, num_classes,
                                                                 **kwargs)),
           lambda ww, bb, xx: real_tf.reduce_sum(getattr(real_tf.nn, loss)(ww, bb, labels, xx, num_sampled,
                                                                           num_classes, **kwargs)), wd, bd, xd)


def test_sampled_losses_with_sharded_weights_and_own_sampler():
    w, b, labels, x, num_sampled, num_classes, values = _loss_case(1, num_classes=21)
    shards = [w[:8], w[8:15], w[15:]]
    theirs = real_tf.nn.sampled_softmax_loss(shards, b, labels, x, num_sampled, num_classes, sampled_values=values)
    ours = em.nn.sampled_softmax_loss([em.constant(s) for s in shards], b, labels, x, num_sampled, num_classes,
                                      sampled_values=values)
    _close(ours, theirs, 2e-5)
    for loss in (em.nn.sampled_softmax_loss, em.nn.nce_loss):
        out = loss(w, b, labels, x, num_sampled, num_classes)
        assert out.dtype == em.float32 and tuple(out.shape) == (4,) and np.isfinite(out.numpy()).all()


# ---- safe_embedding_lookup_sparse -----------------------------------------------------------------------------


def _sparse(lib, indices, values, shape):
    return lib.sparse.SparseTensor(indices, values, shape)


@pytest.mark.parametrize("combiner", ["mean", "sqrtn", "sum"])
@pytest.mark.parametrize("default_id", [None, 2])
@pytest.mark.parametrize("with_weights", [False, True])
def test_safe_embedding_lookup_sparse(combiner, default_id, with_weights):
    params = np.random.default_rng(6).normal(size=(6, 3))
    indices = [[0, 0], [0, 1], [2, 0], [2, 1], [3, 0]]
    ids = np.array([1, -1, 4, 5, 3], np.int64)  # a negative id is dropped; row 1 is empty
    weights = np.array([2.0, 1.0, 0.5, -1.0, 0.0])  # non-positive weights are dropped unless combiner is sum
    shape = [4, 2]
    theirs = real_tf.nn.safe_embedding_lookup_sparse(
        real_tf.constant(params), _sparse(real_tf, indices, ids, shape),
        _sparse(real_tf, indices, weights, shape) if with_weights else None, combiner=combiner, default_id=default_id)
    ours = em.nn.safe_embedding_lookup_sparse(
        em.constant(params), _sparse(em, indices, ids, shape),
        _sparse(em, indices, weights, shape) if with_weights else None, combiner=combiner, default_id=default_id)
    _close(ours, theirs, 1e-12)


def test_safe_embedding_lookup_sparse_rank3_and_shards():
    params = np.random.default_rng(7).normal(size=(6, 2))
    indices = [[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0]]
    ids = np.array([1, 2, 5, 0], np.int64)
    shape = [2, 2, 2]
    theirs = real_tf.nn.safe_embedding_lookup_sparse([real_tf.constant(params[:3]), real_tf.constant(params[3:])],
                                                     _sparse(real_tf, indices, ids, shape))
    ours = em.nn.safe_embedding_lookup_sparse([em.constant(params[:3]), em.constant(params[3:])],
                                              _sparse(em, indices, ids, shape))
    _close(ours, theirs, 1e-12)
    pv, tv = em.Variable(params), real_tf.Variable(params)
    with em.GradientTape() as t1:
        y1 = em.reduce_sum(em.nn.safe_embedding_lookup_sparse(pv, _sparse(em, indices, ids, shape)) ** 2)
    with real_tf.GradientTape() as t2:
        y2 = real_tf.reduce_sum(real_tf.nn.safe_embedding_lookup_sparse(tv, _sparse(real_tf, indices, ids, shape)) ** 2)
    np.testing.assert_allclose(em.convert_to_tensor(t1.gradient(y1, pv)).numpy(),
                               real_tf.convert_to_tensor(t2.gradient(y2, tv)).numpy(), rtol=1e-12)


def test_learned_unigram_sampler_learns_as_tensorflow():
    """Counts start at 1 and grow by the true classes of each call: the expected counts of three calls in a
    row equal TensorFlow's (with num_sampled draws, no retries: p * num_sampled)."""
    true = np.array([[1], [1], [3]], np.int64)
    assert em.nn.learned_unigram_candidate_sampler is em.random.learned_unigram_candidate_sampler
    for seed in (11, 12):
        for _ in range(3):
            ours = em.random.learned_unigram_candidate_sampler(em.constant(true), 1, 4, False, 5, seed=seed)
            theirs = real_tf.random.learned_unigram_candidate_sampler(real_tf.constant(true), 1, 4, False, 5,
                                                                      seed=seed)
            _close(ours.true_expected_count, theirs.true_expected_count)
            assert ours.sampled_candidates.dtype == em.int64 and tuple(ours.sampled_candidates.shape) == (4,)
            # the sampled counts follow the same learned probabilities
            counts_per_class = {c: v for c, v in zip(theirs.sampled_candidates.numpy(),
                                                     theirs.sampled_expected_count.numpy())}
            for c, v in zip(ours.sampled_candidates.numpy(), ours.sampled_expected_count.numpy()):
                if c in counts_per_class:
                    assert np.isclose(v, counts_per_class[c], rtol=1e-6)
    f = em.function(lambda t: em.random.learned_unigram_candidate_sampler(t, 1, 4, False, 5).true_expected_count)
    first, second = f(em.constant(true)).numpy(), f(em.constant(true)).numpy()
    np.testing.assert_allclose(first.ravel(), [0.8, 0.8, 0.8], rtol=1e-6)
    np.testing.assert_allclose(second.ravel(), [1.5, 1.5, 1.0], rtol=1e-6)  # the traced sampler learns too

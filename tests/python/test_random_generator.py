"""tf.random.Generator (python/ember/ops/stateful_random_ops.py): TensorFlow 2.21's streams value for value,
eagerly and in ember.function, checkpoints both ways with TensorFlow, and bad arguments."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors


def _both(fn):
    """fn(module) in ember and in TensorFlow, as NumPy values."""
    ours, theirs = fn(tf), fn(real_tf)
    def flat(r):
        return [np.asarray(x.numpy() if hasattr(x, "numpy") else x) for x in (r if isinstance(r, (list, tuple)) else [r])]
    return flat(ours), flat(theirs)


def _assert_same(fn):
    ours, theirs = _both(fn)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape and o.dtype == t.dtype, (o, t)
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("seed", [1, 0, 12345, 2**64 + 7, -3, [5, 6], [1, 2, 3, 4]])
def test_state_from_seed_matches_tensorflow(seed):
    _assert_same(lambda m: m.random.Generator.from_seed(seed).state.read_value())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_draws_match_tensorflow(dtype):
    def draws(m):
        g = m.random.Generator.from_seed(1, alg="philox")
        d = getattr(m, dtype)
        out = [g.normal([3], dtype=d), g.uniform([2, 5], dtype=d), g.truncated_normal([7], dtype=d),
               g.normal([2, 2], mean=3.0, stddev=2.0, dtype=d), g.uniform([4], minval=-2.0, maxval=5.0, dtype=d)]
        return [x if dtype not in ("float16", "bfloat16") else m.cast(x, m.float32) for x in out] + [g.state]
    _assert_same(draws)


def test_first_normal_draw_is_tensorflows():
    np.testing.assert_array_equal(tf.random.Generator.from_seed(1).normal([3]).numpy(),
                                  real_tf.random.Generator.from_seed(1).normal([3]).numpy())


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_draws_match_tensorflow(dtype):
    def draws(m):
        g = m.random.Generator.from_seed(77)
        d = getattr(m, dtype)
        return [g.uniform([5], minval=-3, maxval=1000, dtype=d), g.uniform_full_int([4], dtype=d), g.state]
    _assert_same(draws)


def test_skip_reset_make_seeds_split_match_tensorflow():
    def ops(m):
        g = m.random.Generator.from_seed(9)
        before = g.skip(5)
        after_skip = m.identity(g.state)
        seeds = g.make_seeds(3)
        children = g.split(2)
        child_draws = [c.normal([2]) for c in children]
        g.reset_from_seed(4)
        reset_draw = g.uniform([3])
        g.reset_from_key_counter(11, [2, 3])
        kc_draw = g.normal([2])
        g.reset([1, 2, 3])
        return [before, after_skip, seeds] + [c.state for c in children] + child_draws + [reset_draw, kc_draw,
                                                                                            g.state, g.key]
    _assert_same(ops)


def test_from_state_key_counter_copy():
    _assert_same(lambda m: m.random.Generator.from_state([3, 4, 5], alg="philox").normal([4]))
    _assert_same(lambda m: m.random.Generator.from_key_counter(7, [8, 9], alg="philox").uniform([4]))
    _assert_same(lambda m: m.random.Generator(copy_from=m.random.Generator.from_seed(3)).normal([2]))
    _assert_same(lambda m: m.random.Generator.from_seed(3, alg=m.random.Algorithm.PHILOX).normal([2]))
    _assert_same(lambda m: m.random.Generator.from_seed(3, alg="auto_select").normal([2]))


def test_from_non_deterministic_state_differs_and_advances():
    a, b = tf.random.Generator.from_non_deterministic_state(), tf.random.Generator.from_non_deterministic_state()
    assert a.state.shape == (3,) and a.state.dtype == tf.int64
    assert not np.array_equal(a.state.numpy(), b.state.numpy())
    x, y = a.normal([4]), a.normal([4])
    assert not np.array_equal(x.numpy(), y.numpy())


def test_in_function_orders_draws_and_matches_eager():
    g, ref = tf.random.Generator.from_seed(5), tf.random.Generator.from_seed(5)

    @tf.function
    def f():
        return g.normal([3]), g.uniform([2]), g.normal([3])

    for _ in range(2):  # the state persists between calls, as in TF
        got = f()
        want = (ref.normal([3]), ref.uniform([2]), ref.normal([3]))
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    np.testing.assert_array_equal(g.state.numpy(), ref.state.numpy())


def test_function_graph_has_tensorflows_op_names():
    g = tf.random.Generator.from_seed(5)
    f = tf.function(lambda: g.normal([3]))
    names = {n.op for n in f.get_concrete_function().graph.as_graph_def().node}
    assert {"RngReadAndSkip", "StatelessRandomNormalV2"} <= names


def test_checkpoint_round_trip_and_tensorflow_key(tmp_path):
    g = tf.random.Generator.from_seed(1)
    g.normal([3])
    path = tf.train.Checkpoint(generator=g).save(str(tmp_path / "ember"))
    assert "generator/_state_var/.ATTRIBUTES/VARIABLE_VALUE" in [n for n, _ in real_tf.train.list_variables(path)]
    expected = g.normal([4]).numpy()
    # TensorFlow restores ember's checkpoint and continues the same stream.
    tg = real_tf.random.Generator.from_seed(99)
    real_tf.train.Checkpoint(generator=tg).restore(path).assert_consumed()
    np.testing.assert_array_equal(tg.normal([4]).numpy(), expected)
    # ember restores it too.
    h = tf.random.Generator.from_seed(99)
    tf.train.Checkpoint(generator=h).restore(path)
    np.testing.assert_array_equal(h.normal([4]).numpy(), expected)


def test_restores_a_tensorflow_checkpoint(tmp_path):
    tg = real_tf.random.Generator.from_seed(123)
    tg.uniform([10])
    path = real_tf.train.Checkpoint(generator=tg).save(str(tmp_path / "tf"))
    g = tf.random.Generator.from_seed(0)
    tf.train.Checkpoint(generator=g).restore(path)
    np.testing.assert_array_equal(g.state.numpy(), tg.state.numpy())
    np.testing.assert_array_equal(g.normal([5]).numpy(), tg.normal([5]).numpy())


def test_global_generator():
    g = tf.random.get_global_generator()
    assert g is tf.random.get_global_generator()
    mine = tf.random.Generator.from_seed(2)
    try:
        tf.random.set_global_generator(mine)
        assert tf.random.get_global_generator() is mine
        np.testing.assert_array_equal(tf.random.get_global_generator().normal([2]).numpy(),
                                      real_tf.random.Generator.from_seed(2).normal([2]).numpy())
    finally:
        tf.random.set_global_generator(g)


def test_errors():
    g = tf.random.Generator.from_seed(1)
    with pytest.raises(ValueError, match="alg"):
        tf.random.Generator.from_seed(1, alg="mersenne")
    with pytest.raises(ValueError, match="alg"):
        tf.random.Generator.from_seed(1, alg=7)
    with pytest.raises(errors.UnimplementedError, match="threefry"):
        tf.random.Generator.from_seed(1, alg="threefry")
    with pytest.raises(ValueError, match="incompatible"):
        tf.random.Generator.from_state([1, 2], alg="philox")
    with pytest.raises(ValueError, match="incompatible"):
        g.reset([1, 2, 3, 4])
    with pytest.raises(TypeError, match="normal"):
        g.normal([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="dtype"):
        g.uniform([2], dtype=tf.bool)
    with pytest.raises(ValueError, match="minval and maxval"):
        g.uniform([2], maxval=None, minval=0, dtype=tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match="minval < maxval"):
        g.uniform([2], minval=5, maxval=5, dtype=tf.int32)
    with pytest.raises((errors.InvalidArgumentError, TypeError)):
        g.normal([[2, 3]])
    with pytest.raises(errors.InvalidArgumentError, match="RngReadAndSkip.*int64 of shape \\[3\\]"):
        bad = tf.random.Generator.from_seed(1)  # then pointed at a variable of the wrong kind
        object.__setattr__(bad, "_state_var", tf.Variable([1.0, 2.0, 3.0]))
        bad.normal([2])
    state_before = g.state.numpy().copy()
    with pytest.raises(errors.InvalidArgumentError):
        g.skip(-1)
    np.testing.assert_array_equal(g.state.numpy(), state_before)  # a failed draw leaves the state


def test_stateless_uniform_full_int_matches_tensorflow():
    for dtype in ("int32", "int64"):
        _assert_same(lambda m: m.random.stateless_uniform([5], seed=[3, 4], minval=None, maxval=None,
                                                          dtype=getattr(m, dtype)))


_LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))


@pytest.mark.parametrize("num_samples", [1, 3, 5, 8, 17])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_stateless_categorical_matches_tensorflow(num_samples, dtype):
    _assert_same(lambda m: m.random.stateless_categorical(_LOGITS, num_samples, seed=[3, 4],
                                                          dtype=getattr(m, dtype)))
    _assert_same(lambda m: m.random.stateless_categorical(_LOGITS.astype(np.float64), num_samples, seed=[9, -2]))


def test_stateless_categorical_skips_non_finite_logits():
    logits = np.array([[0, -np.inf, 1, np.nan], [-np.inf, -np.inf, 2, 3]], np.float32)
    _assert_same(lambda m: m.random.stateless_categorical(logits, 40, seed=[1, 2]))
    assert 1 not in tf.random.stateless_categorical(logits, 200, seed=[5, 6]).numpy()[0]


def test_categorical_first_call_matches_tensorflow_and_distribution():
    def first(m):
        m.random.set_seed(5)
        return m.random.categorical(_LOGITS, 5, seed=7)
    _assert_same(first)
    tf.random.set_seed(11)
    draws = tf.random.categorical(np.log(np.array([[0.1, 0.2, 0.3, 0.4]], np.float32)), 40000).numpy()[0]
    counts = np.bincount(draws, minlength=4)
    expected = 40000 * np.array([0.1, 0.2, 0.3, 0.4])
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 16.27, counts  # 3 degrees of freedom, p = 0.001
    a, b = tf.random.categorical(_LOGITS, 8, seed=3), tf.random.categorical(_LOGITS, 8, seed=3)
    assert a.shape == (2, 8) and a.dtype == tf.int64 and not np.array_equal(a.numpy(), b.numpy())


def test_categorical_in_function_and_errors():
    f = tf.function(lambda x: tf.random.stateless_categorical(x, 4, seed=[1, 2], dtype=tf.int32))
    np.testing.assert_array_equal(f(tf.constant(_LOGITS)).numpy(),
                                  real_tf.random.stateless_categorical(_LOGITS, 4, seed=[1, 2], dtype=real_tf.int32))
    with pytest.raises(errors.InvalidArgumentError, match="matrix"):
        tf.random.categorical([0.0, 1.0], 3)
    with pytest.raises(errors.InvalidArgumentError, match="nonnegative"):
        tf.random.stateless_categorical(_LOGITS, -1, seed=[1, 2])
    with pytest.raises(TypeError, match="floating"):
        tf.random.categorical([[1, 2]], 3)
    with pytest.raises(ValueError, match="dtype"):
        tf.random.categorical(_LOGITS, 3, dtype=tf.float32)
    with pytest.raises(errors.InvalidArgumentError, match="seed"):
        tf.random.stateless_categorical(_LOGITS, 3, seed=[1, 2, 3])
    assert tf.random.categorical(np.zeros([2, 0], np.float32), 0).shape == (2, 0)


def test_shuffle_matches_tensorflow_stream():
    def calls(m):
        m.random.set_seed(5)
        out = [m.random.shuffle(np.arange(10), seed=7) for _ in range(3)]
        out.append(m.random.shuffle(np.arange(12, dtype=np.float32).reshape(6, 2), seed=3))
        out.append(m.random.shuffle(np.arange(1000), seed=3))
        return out
    _assert_same(calls)


def test_shuffle_is_a_permutation():
    x = tf.random.shuffle(tf.reshape(tf.range(300), [100, 3])).numpy()
    np.testing.assert_array_equal(np.sort(x[:, 0]), np.arange(0, 300, 3))
    np.testing.assert_array_equal(x[:, 1:] - x[:, :1], np.tile([1, 2], (100, 1)))
    assert tf.random.shuffle(5).numpy() == 5
    assert tf.random.shuffle(np.zeros([0, 2])).shape == (0, 2)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("alpha", [[1.0], [0.3, 2.5], [[1.0, 7.0], [0.5, 40.0]]])
def test_stateless_gamma_matches_tensorflow(dtype, alpha):
    shape = [5] + list(np.shape(alpha))
    _assert_same(lambda m: m.random.stateless_gamma(shape, seed=[3, 4], alpha=alpha, dtype=getattr(m, dtype)))


def test_gamma_beta_and_stateful_stream_match_tensorflow():
    _assert_same(lambda m: m.random.stateless_gamma([3], seed=[1, 2], alpha=2.0, beta=[1.0, 2.0, 3.0]))

    def calls(m):
        m.random.set_seed(5)
        return [m.random.gamma([4], [0.5, 3.0], seed=7) for _ in range(3)] + [m.random.gamma([2], 2.0, beta=4.0)]
    _assert_same(calls)


def test_gamma_moments():
    x = tf.random.stateless_gamma([20000], seed=[7, 8], alpha=3.0, beta=2.0, dtype=tf.float64).numpy()
    assert abs(x.mean() - 1.5) < 0.03 and abs(x.var() - 0.75) < 0.04  # mean alpha/beta, variance alpha/beta^2
    assert (tf.random.gamma([100], 1e-4).numpy() > 0).all()  # clamped to the smallest normal float


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("lam", [[3.0], [0.5, 25.0, 1000.0]])
def test_stateless_poisson_matches_tensorflow(dtype, lam):
    _assert_same(lambda m: m.random.stateless_poisson([6, len(lam)], seed=[3, 4], lam=lam, dtype=getattr(m, dtype)))


def test_poisson_stream_and_moments():
    def calls(m):
        m.random.set_seed(5)
        return [m.random.poisson([4], [0.5, 30.0], seed=7) for _ in range(3)]
    _assert_same(calls)
    x = tf.random.stateless_poisson([20000], seed=[1, 1], lam=12.0, dtype=tf.float64).numpy()
    assert abs(x.mean() - 12) < 0.15 and abs(x.var() - 12) < 0.6
    counts = np.bincount(tf.random.stateless_poisson([20000], seed=[2, 2], lam=2.0).numpy(), minlength=6)[:6]
    from math import exp, factorial
    expected = 20000 * np.array([exp(-2) * 2 ** k / factorial(k) for k in range(6)])
    assert ((counts - expected) ** 2 / expected).sum() < 20.5  # 5 degrees of freedom, p = 0.001


def test_gamma_poisson_errors():
    with pytest.raises(errors.InvalidArgumentError, match="must end with"):
        tf.random.stateless_gamma([5, 3], seed=[1, 2], alpha=[1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="must end with"):
        tf.random.stateless_poisson([4], seed=[1, 2], lam=[1.0, 2.0])
    with pytest.raises(ValueError, match="dtype"):
        tf.random.gamma([2], 1.0, dtype=tf.int32)
    with pytest.raises(ValueError, match="dtype"):
        tf.random.poisson([2], 1.0, dtype=tf.bool)
    with pytest.raises(errors.InvalidArgumentError, match="seed"):
        tf.random.stateless_poisson([2], seed=[1], lam=1.0)
    assert tf.random.gamma([0], [1.0, 2.0]).shape == (0, 2)


_BINOMIAL_CASES = [([10.0], [0.5]), ([10.0, 20.0], [0.8]), ([[5.0], [200.0]], [0.1, 0.3, 0.95]), ([1000.0], [0.5]),
                   ([0.0, 3.0, 7.0], [0.0, 1.0, 0.2])]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("counts,probs", _BINOMIAL_CASES)
def test_stateless_binomial_matches_tensorflow(dtype, counts, probs):
    shape = [4] + list(np.broadcast_shapes(np.shape(counts), np.shape(probs)))
    _assert_same(lambda m: m.random.stateless_binomial(shape, seed=[3, 4], counts=counts, probs=probs,
                                                       output_dtype=getattr(m, dtype)))


def test_generator_binomial_matches_tensorflow():
    def calls(m):
        g = m.random.Generator.from_seed(234)
        out = [g.binomial([2], [10.0, 20.0], [0.8]), g.binomial([4, 1], [10.0], [0.5]), g.state]
        out.append(g.binomial([3, 4, 3, 4, 2], np.full([3, 1, 2], 30.0), np.full([1, 4, 2], 0.3)))
        return out + [g.state]
    _assert_same(calls)


def test_binomial_moments_and_errors():
    x = tf.random.stateless_binomial([20000], seed=[5, 5], counts=50.0, probs=0.3, output_dtype=tf.float64).numpy()
    assert abs(x.mean() - 15) < 0.1 and abs(x.var() - 10.5) < 0.5 and x.min() >= 0 and x.max() <= 50
    with pytest.raises(errors.InvalidArgumentError, match="must end with"):
        tf.random.stateless_binomial([4], seed=[1, 2], counts=[1.0, 2.0], probs=0.5)
    with pytest.raises(errors.InvalidArgumentError, match="broadcastable"):
        tf.random.stateless_binomial([4, 3], seed=[1, 2], counts=[1.0, 2.0], probs=[0.5, 0.1, 0.2])
    with pytest.raises(TypeError, match="one dtype"):
        tf.random.stateless_binomial([2], seed=[1, 2], counts=tf.constant([1.0, 2.0]),
                                     probs=tf.constant([0.5, 0.5], tf.float64))


def test_nan_parameters_end_instead_of_hanging():
    # TensorFlow's Poisson and binomial-inversion loops never end on a NaN parameter; ember's return NaN, or
    # raise for integer outputs, which cannot hold it.
    nan = float("nan")
    assert np.isnan(tf.random.stateless_poisson([3, 1], seed=[1, 2], lam=[nan], dtype=tf.float32).numpy()).all()
    assert np.isnan(tf.random.stateless_binomial([3, 1], seed=[1, 2], counts=[nan], probs=[0.5],
                                                 output_dtype=tf.float32).numpy()).all()
    with pytest.raises(errors.InvalidArgumentError, match="StatelessRandomPoisson.*NaN"):
        tf.random.stateless_poisson([3, 1], seed=[1, 2], lam=[nan], dtype=tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match="StatelessRandomBinomial.*NaN"):
        tf.random.stateless_binomial([3, 1], seed=[1, 2], counts=[5.0], probs=[nan])
    with pytest.raises(errors.InvalidArgumentError, match="RandomPoissonV2.*NaN"):
        tf.random.poisson([2], [nan], dtype=tf.int64)
    assert np.isnan(tf.random.gamma([2], [nan]).numpy()).all()

"""Bucketize and ApproxTopK (python/ember/ops/sort_ops.py, src/ember/ops/sort.cc) against TensorFlow 2.21:
values in every dtype TensorFlow takes, special values, errors naming the op, gradients, eager against
ember.function, GraphDef round trips, and keras' Discretization on top of Bucketize.

TensorFlow's eager ApproxTopK runs only the largest along the last axis on a CPU (its TopKV2 kernel); the
other directions and axes are compared with TensorFlow's XLA lowering (jit_compile=True), which is exact on a
CPU too (Note [ApproxTopK on a CPU])."""

import ml_dtypes
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors

BUCKETIZE_DTYPES = [np.int32, np.int64, np.float32, np.float64]


def _values(rng, dtype, n):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 20, n).astype(dtype)
    v = rng.uniform(-20, 20, n)
    on_boundary = rng.random(n) < 0.3
    v[on_boundary] = np.round(v[on_boundary])
    v[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", BUCKETIZE_DTYPES)
def test_bucketize_matches_tensorflow(dtype):
    rng = np.random.default_rng(7)
    for trial in range(20):
        boundaries = sorted(rng.choice(np.arange(-15, 15) + rng.choice([0.0, 0.1, 0.5]), rng.integers(0, 8)).tolist())
        x = _values(rng, dtype, 40).reshape(5, 8) if trial % 2 else _values(rng, dtype, 7)
        ours = em.raw_ops.Bucketize(input=em.constant(x), boundaries=boundaries)
        theirs = real_tf.raw_ops.Bucketize(input=real_tf.constant(x), boundaries=boundaries)
        assert ours.dtype == em.int32 and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=f"{boundaries} {x}")


def test_bucketize_compares_as_tensorflow_does():
    # The boundaries are float32: 0.1 rounds up, so a float64 0.1 is below it; an int32 value is compared
    # as a float32 (16777217 rounds to 16777216); a scalar stays a scalar.
    cases = [(np.array([0.1, 0.10000000149011612]), [0.1]), (np.array([16777217, 2 ** 31 - 1], np.int32),
                                                            [16777216.0, 16777218.0]),
             (np.array([2 ** 53 + 1, -3], np.int64), [2.0 ** 53]), (np.float32(3.0), [1, 5]),
             (np.zeros((2, 0), np.float32), [1.0]), (np.array([1.0, 1.0, 2.0]), [1.0, 1.0, 1.0])]
    for x, boundaries in cases:
        ours = em.raw_ops.Bucketize(input=em.constant(x), boundaries=boundaries)
        theirs = real_tf.raw_ops.Bucketize(input=real_tf.constant(x), boundaries=boundaries)
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=f"{x} {boundaries}")


def test_bucketize_traced_matches_eager_and_has_no_gradient():
    x = em.constant([[-5.0, 10000.0], [150.0, 10.0], [5.0, 100.0]])
    fn = em.function(lambda v: em.raw_ops.Bucketize(input=v, boundaries=[0.0, 10.0, 100.0]))
    np.testing.assert_array_equal(fn(x).numpy(), [[0, 3], [3, 2], [1, 3]])
    spec = fn.get_concrete_function(em.TensorSpec([None, 2], em.float32))
    assert spec.structured_outputs.shape.as_list() == [None, 2]
    with em.GradientTape() as tape:
        tape.watch(x)
        y = em.cast(em.raw_ops.Bucketize(input=x, boundaries=[1.0]), em.float32)
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.uint8, np.int16, np.bool_])
def test_bucketize_rejects_dtypes_tensorflow_rejects(dtype):
    x = np.array([1, 0]).astype(dtype)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.raw_ops.Bucketize(input=real_tf.constant(x), boundaries=[0.5])
    with pytest.raises(errors.InvalidArgumentError, match="Bucketize"):
        em.raw_ops.Bucketize(input=em.constant(x), boundaries=[0.5])


def test_bucketize_rejects_unsorted_boundaries():
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="sorted boundaries"):
        real_tf.raw_ops.Bucketize(input=real_tf.constant([1.0]), boundaries=[2.0, 1.0])
    with pytest.raises(errors.InvalidArgumentError, match=r"Bucketize: expected sorted boundaries, got 2 before 1"):
        em.raw_ops.Bucketize(input=em.constant([1.0]), boundaries=[2.0, 1.0])
    with pytest.raises(errors.InvalidArgumentError, match="Bucketize.*sorted"):
        em.function(lambda v: em.raw_ops.Bucketize(input=v, boundaries=[0.0, np.nan]))(em.constant([1.0]))
    with pytest.raises((TypeError, errors.InvalidArgumentError), match="Bucketize"):
        em.raw_ops.Bucketize(input=em.constant([1.0]), boundaries="abc")


def test_bucketize_graph_def_round_trips_with_tensorflow():
    from test_graph_def_tf import run_in_tensorflow

    fn = em.function(lambda v: em.raw_ops.Bucketize(input=v, boundaries=[0.0, 0.1, 100.0]),
                     input_signature=[em.TensorSpec([None], em.float64)])
    gd = fn.get_concrete_function().graph.as_graph_def()
    node = next(n for n in gd.node if n.op == "Bucketize")
    assert list(node.attr["boundaries"].list.f) == pytest.approx([0.0, 0.1, 100.0])
    x = np.array([-1.0, 0.1, 0.2, 1e3])
    out, = run_in_tensorflow(gd.SerializeToString(), ["v:0"], [fn.get_concrete_function().graph.outputs[0].name], x)
    np.testing.assert_array_equal(out.numpy(), fn(em.constant(x)).numpy())
    # TensorFlow's graph back into ember: the list(float) becomes the boundaries again.
    tf_gd = real_tf.function(lambda v: real_tf.raw_ops.Bucketize(input=v, boundaries=[0.0, 0.1, 100.0])) \
        .get_concrete_function(real_tf.TensorSpec([None], real_tf.float64)).graph.as_graph_def()
    imported = em.graph_util.import_graph_def(tf_gd.SerializeToString())
    back = em.NewGraphFunction(imported, ["v:0"], ["Bucketize:0"])
    np.testing.assert_array_equal(back(x).numpy(), out.numpy())


def test_discretization_is_tf_keras_bucketize():
    import tf_keras

    x = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.1]])
    for data in (x, x.astype(np.float32), np.array([[0, 1, 2, 3]], np.int64)):
        ours = em.keras.layers.Discretization(bin_boundaries=[0.0, 0.1, 1.0, 2.0])(data)
        theirs = tf_keras.layers.Discretization(bin_boundaries=[0.0, 0.1, 1.0, 2.0])(data)
        assert ours.dtype.name == theirs.dtype.name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- ApproxTopK


def _jit(fn):
    return real_tf.function(fn, jit_compile=True)


def _ties(rng, shape, dtype):
    return rng.integers(-4, 4, shape).astype(np.float32).astype(dtype) * 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_approx_max_k_matches_tensorflow_eager(dtype):
    rng = np.random.default_rng(3)
    for shape, k in (((7,), 3), ((4, 9), 9), ((2, 3, 6), 2), ((3, 5), 0)):
        x = _ties(rng, shape, dtype) if k % 2 else rng.normal(size=shape).astype(dtype)
        ours = em.math.approx_max_k(em.constant(x), k)
        theirs = real_tf.math.approx_max_k(real_tf.constant(x), k)
        for o, t in zip(ours, theirs):
            assert o.dtype.name == t.dtype.name and o.shape == t.shape
            np.testing.assert_array_equal(np.asarray(o.numpy(), np.float64), np.asarray(t.numpy(), np.float64))
        # The approximation arguments change nothing, in TensorFlow's eager kernel as in ember.
        loose = em.math.approx_max_k(em.constant(x), k, recall_target=0.5, reduction_input_size_override=1000,
                                     aggregate_to_topk=False)
        np.testing.assert_array_equal(loose.indices.numpy(), theirs.indices.numpy())


@pytest.mark.parametrize("is_max_k,axis", [(True, 0), (True, 1), (True, -3), (False, 0), (False, 1), (False, -1),
                                            (False, -3)])
def test_approx_top_k_any_axis_matches_tensorflow_xla(is_max_k, axis):
    """(The largest along the last axis is TensorFlow's eager kernel, compared above: XLA orders its ties
    differently there, by no documented rule.)"""
    rng = np.random.default_rng(11)
    x = _ties(rng, (4, 6, 5), np.float32)
    x[0, 0, :2] = [0.0, -0.0]
    k = 3
    ours_fn = em.math.approx_max_k if is_max_k else em.math.approx_min_k
    theirs_fn = real_tf.math.approx_max_k if is_max_k else real_tf.math.approx_min_k
    ours = ours_fn(em.constant(x), k, reduction_dimension=axis)
    theirs = _jit(lambda v: theirs_fn(v, k, reduction_dimension=axis))(real_tf.constant(x))
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    traced = em.function(lambda v: ours_fn(v, k, reduction_dimension=axis))(em.constant(x))
    np.testing.assert_array_equal(traced.indices.numpy(), ours.indices.numpy())


def test_approx_min_k_ties_and_nan():
    x = np.array([[3.0, 1.0, 0.5, 1.0, -np.inf, 0.0, -0.0]], np.float32)
    ours = em.math.approx_min_k(em.constant(x), 5)
    theirs = _jit(lambda v: real_tf.math.approx_min_k(v, 5))(real_tf.constant(x))
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    np.testing.assert_array_equal(ours.indices.numpy(), [[4, 5, 6, 2, 1]])
    # NaN: ember's one order (Note [Sort order]) puts it above +inf, so first for the largest, last for the
    # smallest. TensorFlow's eager kernel drops it below everything and its XLA lowering is not consistent
    # with NaN (min_k of this row returns NaN third), so NaN is checked against the documented order only.
    x[0, 2] = np.nan
    np.testing.assert_array_equal(em.math.approx_max_k(em.constant(x), 2).indices.numpy(), [[2, 0]])
    np.testing.assert_array_equal(em.math.approx_min_k(em.constant(x), 7).indices.numpy(), [[4, 5, 6, 1, 3, 0, 2]])
    np.testing.assert_array_equal(em.math.approx_min_k(em.constant(x.T), 7, reduction_dimension=0).indices.numpy(),
                                  [[4], [5], [6], [1], [3], [0], [2]])


@pytest.mark.parametrize("is_max_k,axis", [(True, -1), (True, 0), (False, -1), (False, 1)])
def test_approx_top_k_gradient_matches_tensorflow(is_max_k, axis):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 6, 4)).astype(np.float32)
    ours_fn = em.math.approx_max_k if is_max_k else em.math.approx_min_k
    theirs_fn = real_tf.math.approx_max_k if is_max_k else real_tf.math.approx_min_k
    out_shape = list(x.shape)
    out_shape[axis] = 2
    w = rng.normal(size=out_shape).astype(np.float32)

    def ours(v):
        with em.GradientTape() as tape:
            tape.watch(v)
            loss = em.reduce_sum(ours_fn(v, 2, reduction_dimension=axis).values * w)
        return tape.gradient(loss, v)

    @real_tf.function(jit_compile=True)
    def theirs(v):
        with real_tf.GradientTape() as tape:
            tape.watch(v)
            loss = real_tf.reduce_sum(theirs_fn(v, 2, reduction_dimension=axis).values * w)
        return tape.gradient(loss, v)

    expected = theirs(real_tf.constant(x)).numpy()
    np.testing.assert_array_equal(ours(em.constant(x)).numpy(), expected)
    np.testing.assert_array_equal(em.function(ours)(em.constant(x)).numpy(), expected)
    # Finite differences (ApproxTopK takes no float64: float32 values, a float64 sum): the selection is
    # locally constant, so the directional derivative is the scattered weights' dot product with the probe.
    eps = 1e-3
    probe = rng.normal(size=x.shape)

    def f(v):
        values = ours_fn(em.constant(v.astype(np.float32)), 2, reduction_dimension=axis).values.numpy()
        return float(np.sum(values.astype(np.float64) * w))

    numeric = (f(x + eps * probe) - f(x - eps * probe)) / (2 * eps)
    assert numeric == pytest.approx(float(np.sum(expected * probe)), rel=1e-2, abs=1e-3)


@pytest.mark.parametrize("call,match", [
    (lambda m: m.math.approx_max_k(m.constant([1.0, 2.0]), 3), "at least k"),
    (lambda m: m.math.approx_max_k(m.constant(1.0), 1), "1-D"),
    (lambda m: m.math.approx_max_k(m.constant([[1.0, 2.0]]), 1, reduction_dimension=2), "reduction_dimension"),
    (lambda m: m.math.approx_max_k(m.constant([1.0, 2.0], m.float64), 1), "float64|double"),
    (lambda m: m.math.approx_max_k(m.constant([1, 2]), 1), "int32"),
    (lambda m: m.math.approx_max_k(m.constant([1.0, 2.0]), -1), "k"),
])
def test_approx_top_k_errors(call, match):
    with pytest.raises((real_tf.errors.InvalidArgumentError, real_tf.errors.NotFoundError)):
        call(real_tf)
    with pytest.raises(errors.InvalidArgumentError, match=f"ApproxTopK.*({match})"):
        call(em)

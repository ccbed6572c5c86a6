"""tf.sparse.segment_sum / segment_mean / segment_sqrt_n (the SparseSegment* ops, src/ember/ops/sparse_segment.cc)
and tf.nn.embedding_lookup / embedding_lookup_sparse (python/ember/ops/embedding_ops.py) against TensorFlow
2.21: dtypes, with and without num_segments, gradients (TensorFlow's dense rule; with sparse_gradient
TensorFlow returns the same values as IndexedSlices), unknown dims inside functions, errors."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors

FUNCTIONS = ["segment_sum", "segment_mean", "segment_sqrt_n"]
DATA = np.arange(15, dtype=np.float64).reshape(5, 3) / 7.0 - 1.0
INDICES = np.array([0, 4, 2, 2, 1, 3], np.int32)
SEGMENT_IDS = np.array([0, 0, 2, 2, 2, 3], np.int32)


def _both(fn):
    return fn(tf), fn(real_tf)


def _dense(g):
    return real_tf.convert_to_tensor(g).numpy() if isinstance(g, real_tf.IndexedSlices) else g.numpy()


@pytest.mark.parametrize("num_segments", [None, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_values_match_tensorflow(fn, dtype, num_segments):
    if fn != "segment_sum" and np.issubdtype(dtype, np.integer):
        with pytest.raises(errors.InvalidArgumentError):  # TensorFlow: a NotFoundError, no such kernel
            getattr(tf.sparse, fn)(DATA.astype(dtype), INDICES, SEGMENT_IDS, num_segments=num_segments)
        return
    data = (DATA * 7).astype(dtype) if np.issubdtype(dtype, np.integer) else DATA.astype(dtype)
    for index_dtype in (np.int32, np.int64):
        ours, theirs = _both(lambda m: getattr(m.sparse, fn)(data, INDICES.astype(index_dtype),
                                                             SEGMENT_IDS.astype(index_dtype), num_segments))
        assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_empty_and_higher_rank_data():
    data = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    for fn in FUNCTIONS:
        ours, theirs = _both(lambda m: getattr(m.sparse, fn)(data, [3, 1, 1], [1, 1, 4]))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        ours, theirs = _both(lambda m: getattr(m.sparse, fn)(data, np.zeros([0], np.int32), np.zeros([0], np.int32)))
        assert ours.shape == theirs.shape == (0, 3, 2)
        ours, theirs = _both(lambda m: getattr(m.sparse, fn)(data, np.zeros([0], np.int32),
                                                             np.zeros([0], np.int32), num_segments=2))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _gradient(m, fn, num_segments, sparse_gradient):
    x = m.constant(DATA)
    with m.GradientTape() as tape:
        tape.watch(x)
        y = getattr(m.sparse, fn)(x, INDICES, SEGMENT_IDS, num_segments=num_segments,
                                  sparse_gradient=sparse_gradient)
        loss = m.reduce_sum(m.sin(y) * m.cast(m.range(m.size(y)), y.dtype)[:1])
        loss += m.reduce_sum(y * y)
    return tape.gradient(loss, x)


@pytest.mark.parametrize("sparse_gradient", [False, True])
@pytest.mark.parametrize("num_segments", [None, 6])
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_gradients_match_tensorflow(fn, num_segments, sparse_gradient):
    ours, theirs = _both(lambda m: _gradient(m, fn, num_segments, sparse_gradient))
    np.testing.assert_allclose(ours.numpy(), _dense(theirs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_unknown_dims_in_a_function_match_eager(fn):
    spec = [tf.TensorSpec([None, None], tf.float64), tf.TensorSpec([None], tf.int32),
            tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32)]

    @tf.function(input_signature=spec)
    def traced(x, indices, ids, num):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = getattr(tf.sparse, fn)(x, indices, ids) + getattr(tf.sparse, fn)(x, indices, ids, num)[:4]
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, x)

    x = tf.constant(DATA)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = getattr(tf.sparse, fn)(x, INDICES, SEGMENT_IDS) + getattr(tf.sparse, fn)(x, INDICES, SEGMENT_IDS, 4)
        loss = tf.reduce_sum(y * y)
    ty, tg = traced(x, INDICES, SEGMENT_IDS, tf.constant(4))
    np.testing.assert_allclose(ty.numpy(), y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tg.numpy(), tape.gradient(loss, x).numpy(), rtol=1e-12)


def test_errors_as_tensorflow():
    cases = [
        (dict(indices=[0, 1], segment_ids=[1, 0]), "SparseSegmentSum: segment ids are not increasing"),
        (dict(indices=[0, 5], segment_ids=[0, 0]), r"SparseSegmentSum: indices\[1\] = 5 is not in \[0, 5\)"),
        (dict(indices=[0, 1], segment_ids=[0, -1]), r"SparseSegmentSum: segment_ids\[1\] = -1 is out of range"),
        (dict(indices=[0, 1], segment_ids=[0, 4], num_segments=2),
         r"SparseSegmentSumWithNumSegments: segment_ids\[1\] = 4 is out of range \[0, 2\)"),
        (dict(indices=[0, 1], segment_ids=[0]), "SparseSegmentSum: segment_ids and indices should have the same"),
    ]
    for kwargs, message in cases:
        with pytest.raises(errors.InvalidArgumentError, match=message):
            tf.sparse.segment_sum(DATA, **kwargs)
        with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
            real_tf.sparse.segment_sum(DATA, **kwargs)
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        tf.sparse.segment_mean(DATA, [0.5], [0])


# ---- embedding lookups

PARAMS = np.arange(24, dtype=np.float32).reshape(6, 4) / 10.0 - 1.0


def _sparse_ids(m, with_weights):
    indices = [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2], [3, 0]]
    ids = m.sparse.SparseTensor(indices, m.constant([1, 3, 0, 1, 1, 5], m.int64), [5, 3])
    weights = m.sparse.SparseTensor(indices, [0.5, 2.0, 1.0, -1.0, 3.0, 0.25], [5, 3]) if with_weights else None
    return ids, weights


@pytest.mark.parametrize("max_norm", [None, 1.5])
@pytest.mark.parametrize("with_weights", [False, True])
@pytest.mark.parametrize("combiner", [None, "sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_matches_tensorflow(combiner, with_weights, max_norm):
    def run(m):
        params = m.constant(PARAMS)
        ids, weights = _sparse_ids(m, with_weights)
        with m.GradientTape() as tape:
            tape.watch(params)
            y = m.nn.embedding_lookup_sparse(params, ids, weights, combiner=combiner, max_norm=max_norm)
            loss = m.reduce_sum(m.sin(y))
        return y, tape.gradient(loss, params)

    (y, g), (ty, tg) = _both(run)
    assert y.shape == ty.shape and y.dtype.name == ty.dtype.name
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), _dense(tg), rtol=1e-6, atol=1e-6)


def test_embedding_lookup_sparse_in_a_function_matches_eager():
    ids, weights = _sparse_ids(tf, True)

    @tf.function
    def traced(params):
        return (tf.nn.embedding_lookup_sparse(params, ids, weights, combiner="sqrtn"),
                tf.nn.embedding_lookup_sparse(params, ids, None))

    for t, e in zip(traced(tf.constant(PARAMS)), (tf.nn.embedding_lookup_sparse(PARAMS, ids, weights, "sqrtn"),
                                                  tf.nn.embedding_lookup_sparse(PARAMS, ids, None))):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-6)


def test_embedding_lookup_matches_tensorflow():
    ids = np.array([[0, 5], [3, 3]])
    for max_norm in (None, 1.0):
        ours, theirs = _both(lambda m: m.nn.embedding_lookup(PARAMS, ids, max_norm=max_norm))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        ours, theirs = _both(lambda m: m.nn.embedding_lookup([PARAMS], ids, max_norm=max_norm))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_embedding_lookup_sparse_errors():
    ids, _ = _sparse_ids(tf, False)
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(PARAMS, ids, None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        tf.nn.embedding_lookup_sparse(PARAMS, np.array([1, 2]), None)
    with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
        tf.nn.embedding_lookup_sparse(PARAMS, ids, np.ones(6))
    with pytest.raises(errors.InvalidArgumentError, match=r"2 params shards of \[1, 5\] rows.*needs \[3, 3\]"):
        tf.nn.embedding_lookup_sparse([PARAMS[:1], PARAMS[1:]], ids, None)


@pytest.mark.parametrize("cuts", [[3], [2, 4], [1, 2, 3, 4, 5]], ids=str)
def test_sharded_params_as_tensorflows_div_strategy(cuts):
    """TensorFlow 2 splits ids over shards by its "div" strategy; shards cut that way (sizes 3+3, 2+2+2,
    ...) are looked up as one table, with and without weights, gradients per shard."""
    n = len(cuts) + 1
    sizes = [6 // n + (1 if k < 6 % n else 0) for k in range(n)]
    bounds = np.cumsum([0] + sizes)
    shards = [PARAMS[bounds[k]:bounds[k + 1]] for k in range(n)]

    def run(m):
        params = [m.constant(s) for s in shards]
        ids, weights = _sparse_ids(m, True)
        with m.GradientTape() as tape:
            tape.watch(params)
            y = m.nn.embedding_lookup_sparse(params, ids, weights, combiner="sqrtn")
            z = m.nn.embedding_lookup(params, [[5, 0], [2, 2]])
            loss = m.reduce_sum(m.sin(y)) + m.reduce_sum(z * z)
        return [y, z] + tape.gradient(loss, params)

    for o, t in zip(*_both(run)):
        np.testing.assert_allclose(o.numpy(), _dense(t), rtol=1e-6, atol=1e-6)

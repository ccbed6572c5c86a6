"""Reductions absorbed at the end of fused chains (issue 20; Note [Absorbed reductions] in
passes/fuse_elementwise.cc, Note [Fused reductions] in kernels/fused_elementwise.h), seen from Python:
the patterns fuse (the optimized graph shows one FusedReduction), the values match TensorFlow's within its
tolerance, the native kernels and the interpreter agree bit for bit, and the result does not depend on the
thread count. No timing is asserted; the run counters say which path ran."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

cfg = tf.config.experimental


@pytest.fixture
def native_mode():
    saved = cfg.get_native_kernels()
    yield
    cfg.set_native_kernels(saved)


def sum_mul_add(m, x, y, z):
    return m.reduce_sum(x * y + z)


def row_max_of_chain(m, x, y, z):
    return m.reduce_max(m.tanh(x) * y - z, axis=-1)


def mean_keepdims(m, x, y, z):
    return m.reduce_mean(x * y + z, axis=[-2, -1], keepdims=True)


def softmax(m, x, y, z):
    e = m.exp(x - m.reduce_max(x, axis=-1, keepdims=True))
    return e / m.reduce_sum(e, axis=-1, keepdims=True)


def layer_norm(m, x, y, z):
    d = x - m.reduce_mean(x, axis=-1, keepdims=True)
    return d * m.math.rsqrt(m.reduce_mean(d * d, axis=-1, keepdims=True) + 1e-5) * y + z


def min_also_returned(m, x, y, z):
    t = m.sin(x) * y
    return t, m.reduce_min(t, axis=-1), m.reduce_sum(t * z)


PATTERNS = [sum_mul_add, row_max_of_chain, mean_keepdims, softmax, layer_norm, min_also_returned]
# Rows shorter than a tile, rows cut into several tiles, one long row.
SHAPES = [(37, 20), (6, 3000), (1, 70000)]


def _inputs(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, shape).astype(dtype) for _ in range(3)]


def _as_list(v):
    return [t.numpy() for t in v] if isinstance(v, (list, tuple)) else [v.numpy()]


def _optimized_text(fn, arrays):
    specs = [tf.TensorSpec(a.shape, a.dtype) for a in arrays]
    return tf.function(lambda *a: fn(tf, *a)).get_concrete_function(*specs).graph.optimized_as_text()


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_tensorflow(pattern, shape):
    arrays = _inputs(shape)
    assert "FusedReduction(" in _optimized_text(pattern, arrays)
    got = _as_list(tf.function(lambda *a: pattern(tf, *a))(*[tf.constant(a) for a in arrays]))
    want = _as_list(real_tf.function(lambda *a: pattern(real_tf, *a))(*[real_tf.constant(a) for a in arrays]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        # Sums that cancel (t * z over 18000 terms) keep float32 rounding of the terms' size, not the result's.
        atol = max(1e-5 * max(1.0, float(np.abs(w).max())), 5e-7 * int(np.prod(shape)))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32"])
def test_other_dtypes_match_tensorflow(dtype):
    arrays = [(a * 100).astype(dtype) if dtype == "int32" else a.astype(dtype) for a in _inputs((9, 2000))]
    for fn in (sum_mul_add, lambda m, x, y, z: m.reduce_max(x * y + z, axis=-1)):
        got = tf.function(lambda *a: fn(tf, *a))(*[tf.constant(a) for a in arrays]).numpy()
        want = real_tf.function(lambda *a: fn(real_tf, *a))(*[real_tf.constant(a) for a in arrays]).numpy()
        rtol = {"float64": 1e-12, "float16": 1e-2, "int32": 0}[dtype]
        np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=rtol,
                                   atol=rtol * float(np.abs(want.astype("float64")).max()))


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.__name__)
def test_native_and_interpreter_agree_bit_for_bit(pattern, native_mode):
    arrays = [tf.constant(a) for a in _inputs((6, 3000), seed=1)]
    cfg.set_native_kernels("off")
    interpreted = _as_list(tf.function(lambda *a: pattern(tf, *a))(*arrays))
    cfg.set_native_kernels("sync")
    before = cfg.native_kernel_stats()["native_runs"]
    native = _as_list(tf.function(lambda *a: pattern(tf, *a))(*arrays))
    assert cfg.native_kernel_stats()["native_runs"] > before, "no native kernel ran"
    for i, n in zip(interpreted, native):
        np.testing.assert_array_equal(n.view(np.uint32), i.view(np.uint32))


def test_same_bits_whatever_the_thread_count():
    arrays = [tf.constant(a) for a in _inputs((1 << 21,), seed=2)]
    saved = tf.config.threading.get_intra_op_parallelism_threads()
    sums = []
    try:
        for threads in (1, 2, 3):
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            sums.append(tf.function(lambda *a: sum_mul_add(tf, *a))(*arrays).numpy())
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(saved)
    assert sums[0].tobytes() == sums[1].tobytes() == sums[2].tobytes(), sums

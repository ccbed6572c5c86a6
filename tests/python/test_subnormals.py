"""Subnormals: ember's kernels run with FTZ/DAZ set as TensorFlow's do (docs/subnormals.md). Every case runs in
ember and in TensorFlow 2 on the same values and must give the same bits (signed zeros included), eagerly and
inside a function; the calling thread's NumPy keeps its subnormals afterwards."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

SUB = 1e-40  # float32 subnormal
SUB64 = 1e-310  # float64 subnormal


def _full(shape, value, dtype=np.float32):
    return np.full(shape, value, dtype)


def _bf16_through_f32(tf_, value):
    return tf_.cast(tf_.constant(value), tf_.bfloat16)


# (name, fn(tf_module, *tensors), inputs as NumPy arrays). Each runs eagerly and inside a function.
CASES = [
    ("identity", lambda t, x: t.identity(x), [np.float32(SUB)]),
    ("reshape", lambda t, x: t.reshape(x, [4]), [_full([2, 2], SUB)]),
    ("transpose", lambda t, x: t.transpose(x), [_full([2, 3], -SUB)]),
    ("concat", lambda t, x: t.concat([x, x], 0), [_full([3], SUB)]),
    ("gather", lambda t, x: t.gather(x, [1, 0]), [np.array([SUB, 1.0], np.float32)]),
    ("where", lambda t, x: t.where(x > -1.0, x, 0.0), [_full([3], SUB)]),
    ("abs", lambda t, x: t.abs(x), [np.array([-SUB, SUB, -0.0, -1.0] * 8, np.float32)]),
    ("negative", lambda t, x: -x, [np.array([SUB, -SUB], np.float32)]),
    # x * 1 and x + 0 with a constant 1 or 0 are simplified away inside a function (ember's arithmetic pass,
    # TensorFlow's grappler), so the 1 and 0 come in as arguments.
    ("mul", lambda t, x, y: x * y, [np.array([SUB, -SUB, 1.0], np.float32), _full([3], 1.0)]),
    ("add", lambda t, x, y: x + y, [_full([5], SUB), _full([5], 0.0)]),
    ("mul long", lambda t, x, y: x * y, [_full([300_000], SUB), np.float32(1.0)]),  # parallel_for's workers
    ("underflow", lambda t, x: x * x, [np.array([1e-20, -1e-20], np.float32)]),
    ("div", lambda t, x: x / 1e10, [np.float32(1e-30)]),
    ("square", lambda t, x: t.square(x), [np.float32(1e-20)]),
    ("add_n", lambda t, x: t.add_n([x, x]), [np.float32(SUB)]),
    ("exp", lambda t, x: t.exp(x), [np.array([-100.0, -88.0, -87.0, 0.0], np.float32)]),
    ("exp float64", lambda t, x: t.exp(x), [np.array([-720.0, -700.0], np.float64)]),
    ("sigmoid", lambda t, x: t.sigmoid(x), [np.float32(-100.0)]),
    ("tanh", lambda t, x: t.tanh(x), [np.float32(SUB)]),
    ("sqrt", lambda t, x: t.sqrt(x), [np.float32(SUB)]),
    ("mul float64", lambda t, x, y: x * y, [np.array([SUB64, -SUB64], np.float64), np.float64(1.0)]),
    ("complex64 mul", lambda t, x, y: t.complex(x, x) * t.complex(y, 0.0), [np.float32(SUB), np.float32(1.0)]),
    ("matmul 1x1", lambda t, x: t.matmul(x, t.ones([1, 1])), [_full([1, 1], SUB)]),
    ("matmul 64", lambda t, x: t.matmul(x, t.eye(64)), [_full([64, 64], SUB)]),
    ("matmul 256", lambda t, x: t.matmul(x, t.eye(256)), [_full([256, 256], SUB)]),  # oneDNN's workers
    ("matmul float64", lambda t, x: t.matmul(x, t.ones([1, 1], t.float64)), [_full([1, 1], SUB64, np.float64)]),
    ("conv2d 1x1", lambda t, x: t.nn.conv2d(x, t.ones([1, 1, 1, 1]), 1, "VALID"), [_full([1, 3, 3, 1], SUB)]),
    ("conv2d 3x3", lambda t, x: t.nn.conv2d(x, t.ones([3, 3, 1, 1]), 1, "VALID"), [_full([1, 5, 5, 1], SUB)]),
    ("reduce_sum", lambda t, x: t.reduce_sum(x), [_full([2], SUB)]),
    ("reduce_sum 1000", lambda t, x: t.reduce_sum(x), [_full([1000], 1e-41)]),
    ("reduce_sum axis 1", lambda t, x: t.reduce_sum(x, 1), [_full([2, 2], SUB)]),
    ("reduce_mean", lambda t, x: t.reduce_mean(x), [_full([2], SUB)]),
    ("reduce_sum float64", lambda t, x: t.reduce_sum(x), [_full([2], SUB64, np.float64)]),
    ("reduce_sum of one", lambda t, x: t.reduce_sum(x), [_full([1], SUB)]),
    ("reduce_sum size-1 axis", lambda t, x: t.reduce_sum(x, 1), [_full([2, 1], SUB)]),
    ("reduce_mean of one", lambda t, x: t.reduce_mean(x), [_full([1, 1], -SUB)]),
    ("reduce_prod of one", lambda t, x: t.reduce_prod(x), [_full([1], SUB)]),
    ("reduce_max of one", lambda t, x: t.reduce_max(x), [_full([1], SUB)]),
    ("reduce_prod", lambda t, x: t.reduce_prod(x), [np.array([SUB, 1.0], np.float32)]),
    ("cast to float64", lambda t, x: t.cast(x, t.float64), [np.float32(SUB)]),
    ("cast to float32", lambda t, x: t.cast(x, t.float32), [np.float64(SUB)]),
    ("float16 mul", lambda t, x: x * t.constant(1.5, t.float16), [np.float16(1e-6)]),
    ("float16 exp", lambda t, x: t.exp(x), [np.float16(-14.0)]),
    ("float16 casts", lambda t, x: t.cast(t.cast(x, t.float16), t.float32), [np.float32(1e-6)]),
    ("bfloat16 cast", lambda t, x: t.cast(t.cast(x, t.bfloat16), t.float32), [np.float32(1e-39)]),
    ("bfloat16 mul", lambda t, x: t.cast(t.cast(x, t.bfloat16) * t.constant(1.5, t.bfloat16), t.float32),
     [np.float32(1e-39)]),
    ("equal", lambda t, x: t.equal(x, 0.0), [np.array([SUB, -SUB, 1.0], np.float32)]),
    ("greater", lambda t, x: t.greater(x, 0.0), [np.array([SUB, 1.0], np.float32)]),
    ("sign", lambda t, x: t.sign(x), [np.array([SUB, -SUB], np.float32)]),
    ("argmax", lambda t, x: t.argmax(x), [np.array([0.0, SUB], np.float32)]),
    ("relu, vectorised", lambda t, x: t.nn.relu(x), [np.tile(np.array([SUB, -SUB, -0.0, -1.0], np.float32), 16)]),
    ("maximum, vectorised", lambda t, x: t.maximum(x, t.zeros([64])),
     [np.tile(np.array([SUB, -SUB, -0.0, 2.0], np.float32), 16)]),
    ("softmax", lambda t, x: t.nn.softmax(x), [np.array([0.0, -100.0], np.float32)]),
]


def _bits(value):
    a = np.asarray(value)
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    return a, a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind in "fc" else a


def _assert_same_bits(ours, theirs, name):
    (a, a_bits), (b, b_bits) = _bits(ours), _bits(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (name, a.dtype, b.dtype, a.shape, b.shape)
    assert np.array_equal(a_bits, b_bits), f"{name}: ember {a.ravel()[:6]} TensorFlow {b.ravel()[:6]}"


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow_eagerly_and_in_a_function(name, fn, inputs):
    theirs = fn(real_tf, *[real_tf.constant(a) for a in inputs]).numpy()
    eager = fn(tf, *[tf.constant(a) for a in inputs]).numpy()
    staged = tf.function(lambda *xs: fn(tf, *xs))(*[tf.constant(a) for a in inputs]).numpy()
    _assert_same_bits(eager, theirs, name)
    _assert_same_bits(staged, theirs, name + " (function)")


# Constants alone in a function are folded while tracing (ember) or by grappler (TensorFlow): both fold under
# FTZ/DAZ, and a constant itself keeps its subnormal.
FOLDED = [
    ("constant", lambda t: t.constant(SUB)),
    ("constant float64", lambda t: t.constant(SUB64, t.float64)),
    ("folded mul", lambda t: t.constant(SUB) * t.constant(1.0)),
    ("folded exp", lambda t: t.exp(t.constant(-100.0))),
    ("folded reduce_sum", lambda t: t.reduce_sum(t.constant([SUB, SUB]))),
    ("folded reduce_sum of one", lambda t: t.reduce_sum(t.constant([SUB]))),
    ("folded cast", lambda t: t.cast(t.constant(SUB), t.float64)),
]


@pytest.mark.parametrize("name,fn", FOLDED, ids=[c[0] for c in FOLDED])
def test_constant_folding_matches_tensorflow(name, fn):
    theirs = real_tf.function(lambda: fn(real_tf))().numpy()
    _assert_same_bits(tf.function(lambda: fn(tf))().numpy(), theirs, name)
    _assert_same_bits(fn(tf).numpy(), fn(real_tf).numpy(), name + " (eager)")


def test_conversions_and_variables_keep_subnormals():
    for value, dtype in ((SUB, tf.float32), (SUB64, tf.float64)):
        t = tf.constant(value, dtype)
        assert t.numpy() == value and np.asarray(t) == value
        assert tf.constant(np.array([value])).numpy()[0] == value
    v = tf.Variable(SUB)
    assert v.numpy() == np.float32(SUB) and v.read_value().numpy() == np.float32(SUB)
    v.assign(tf.constant(-SUB))
    assert v.numpy() == np.float32(-SUB)
    v.assign_add(0.0)  # arithmetic: flushed, as in TensorFlow
    w = real_tf.Variable(-SUB)
    w.assign_add(0.0)
    _assert_same_bits(v.numpy(), w.numpy(), "assign_add")


@pytest.mark.parametrize("value", [1e-39, -1e-39, [1e-39, -1e-39, 2e-38], (1e-39,), np.float64(1e-39),
                                   np.array([1e-39, -1e-39])], ids=repr)
def test_python_numbers_to_bfloat16_flush_like_tensorflow(value):
    """TensorFlow's converter of Python numbers to bfloat16 flushes subnormals; NumPy values keep them."""
    def as_float(t):
        return t.numpy().astype(np.float32)

    _assert_same_bits(as_float(tf.constant(value, tf.bfloat16)), as_float(real_tf.constant(value, real_tf.bfloat16)),
                      "constant")
    _assert_same_bits(as_float(tf.constant(value, tf.bfloat16, shape=[2, 3] if np.size(value) == 1 else None)),
                      as_float(real_tf.constant(value, real_tf.bfloat16, shape=[2, 3] if np.size(value) == 1 else None)),
                      "constant with a shape")
    _assert_same_bits(as_float(tf.convert_to_tensor(value, dtype_hint=tf.bfloat16)),
                      as_float(real_tf.convert_to_tensor(value, dtype_hint=real_tf.bfloat16)), "dtype_hint")


def test_numpy_on_the_calling_thread_keeps_subnormals():
    """The guards restore the caller's MXCSR: after eager ops, a function call, a parallel product and an
    error raised by a kernel, NumPy on this thread still computes subnormals."""
    def numpy_keeps():
        return (np.float32(SUB) * np.float32(1.0) == np.float32(SUB) and
                np.float64(SUB64) * 1.0 == SUB64 and
                (np.full(64, SUB, np.float32) * np.float32(1.0) == np.float32(SUB)).all())

    assert numpy_keeps()
    tf.constant(SUB) * 1.0
    assert numpy_keeps()
    tf.function(lambda x: tf.exp(x) * x)(tf.constant(_full([1000], -100.0)))
    assert numpy_keeps()
    tf.matmul(tf.ones([256, 256]), tf.ones([256, 256]))
    assert numpy_keeps()
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather(tf.constant([1.0]), [5])
    assert numpy_keeps()
    real_tf.constant(SUB) * 1.0  # and TensorFlow's own guard, for the record
    assert numpy_keeps()



def test_simplified_products_keep_subnormals_like_grappler():
    """x * 1, x + 0 and x / 1 inside a function are removed by ember's arithmetic pass and by grappler alike, so
    the subnormal x reaches abs unflushed in both."""
    x = np.array([SUB, -SUB, 1.0], np.float32)
    for fn in (lambda t, a: t.abs(a * 1.0), lambda t, a: t.abs(a + 0.0), lambda t, a: t.abs(a / 1.0)):
        theirs = real_tf.function(lambda a: fn(real_tf, a))(real_tf.constant(x)).numpy()
        _assert_same_bits(tf.function(lambda a: fn(tf, a))(tf.constant(x)).numpy(), theirs, "simplified")


def test_numpy_inside_py_function_flushes_like_tensorflow():
    """The Python of a py_function runs under FTZ/DAZ in both, eagerly and inside a function, and a
    numpy_function's inside a function; an eager numpy_function's does not (TensorFlow calls it directly),
    and neither does NumPy after them."""
    def py_function_probe(t_mod, staged):
        def body(x):
            return t_mod.constant(x.numpy() * np.float32(1.0))

        call = lambda x: t_mod.py_function(body, [x], t_mod.float32)  # noqa: E731
        return (t_mod.function(call) if staged else call)(t_mod.constant(SUB)).numpy()

    def numpy_function_probe(t_mod, staged):
        call = lambda x: t_mod.numpy_function(lambda a: a * np.float32(1.0), [x], t_mod.float32)  # noqa: E731
        return np.asarray((t_mod.function(call) if staged else call)(t_mod.constant(SUB)))

    for staged in (False, True):
        _assert_same_bits(py_function_probe(tf, staged), py_function_probe(real_tf, staged), f"py_function {staged}")
        _assert_same_bits(numpy_function_probe(tf, staged), numpy_function_probe(real_tf, staged),
                          f"numpy_function {staged}")
        assert np.float32(SUB) * np.float32(1.0) == np.float32(SUB)


@pytest.mark.parametrize("native", ["off", "sync"])
def test_fused_chains_flush_in_the_interpreter_and_in_native_code(native):
    """A fused element-wise chain runs on the tile interpreter or as JIT-compiled native code: both under the
    caller's guard, both as TensorFlow's unfused kernels."""
    cfg = tf.config.experimental
    saved = cfg.get_native_kernels()
    x = np.concatenate([_full([500], SUB), _full([500], -1e-20), np.linspace(-90, 0, 1000, dtype=np.float32)])

    def chain(t, a):  # 1e-40 * 1 and (-1e-20)^2 * 3 flush; exp of -88 to -90 underflows to subnormals, which flush
        return t.concat([t.abs(t.exp(a) * a) * 0.5, a * a * 3.0 + 0.0, t.exp(a) * 1.5], 0)

    try:
        cfg.set_native_kernels(native)
        before = cfg.native_kernel_stats()["native_runs"]
        ours = tf.function(lambda a: chain(tf, a))(tf.constant(x)).numpy()
        ran = cfg.native_kernel_stats()["native_runs"] - before
    finally:
        cfg.set_native_kernels(saved)
    assert (ran >= 1) == (native == "sync")
    theirs = chain(real_tf, real_tf.constant(x)).numpy()
    assert (theirs[:500] == 0).all() and (theirs[2500:3000] == 0).all()
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=0)

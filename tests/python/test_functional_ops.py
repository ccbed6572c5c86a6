"""Issue 15: map_fn, scan, foldl, foldr and vectorized_map, eagerly and inside ember.function with a trip count
known only when the function runs, compared with TensorFlow running the same program (``import tensorflow as
tf`` vs ``import ember as tf``): values, dtypes, shapes and the class of an error; gradients."""

import numpy as np
import pytest
import tensorflow

import ember

from tf_differential import same as _same  # noqa: E402


X = np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0


def _run(tf, staged, fn, *arrays, signature=None):
    """fn(tf, *tensors) eagerly, or in a tf.function whose input_signature leaves every dimension None."""
    tensors = [tf.constant(a) for a in arrays]
    if not staged:
        return fn(tf, *tensors)
    spec = signature or [tf.TensorSpec([None] * a.ndim, tf.as_dtype(a.dtype.name)) for a in arrays]
    return tf.function(lambda *t: fn(tf, *t), input_signature=spec)(*tensors)


CASES = {
    "map_fn": lambda tf, x: tf.map_fn(lambda r: r * 2.0 + 1.0, x),
    "map_fn_scalar_out": lambda tf, x: tf.map_fn(lambda r: tf.reduce_sum(r), x),
    "map_fn_dtype_change": lambda tf, x: tf.map_fn(lambda r: tf.cast(r > 1.0, tf.int32), x,
                                                   fn_output_signature=tf.int32),
    "map_fn_dtype_arg": lambda tf, x: tf.map_fn(lambda r: tf.cast(r, tf.int64), x, dtype=tf.int64),
    "map_fn_nested_in": lambda tf, x: tf.map_fn(lambda p: p[0] * p[1]["b"], (x, {"b": x + 1.0}),
                                                fn_output_signature=tf.float32),
    "map_fn_nested_out": lambda tf, x: tf.map_fn(lambda r: {"s": tf.reduce_sum(r), "m": (r * 2.0, r[:1])}, x,
                                                 fn_output_signature={"s": tf.float32, "m": (tf.float32,
                                                                                              tf.float32)}),
    "map_fn_tensorspec": lambda tf, x: tf.map_fn(lambda r: tf.reduce_max(r), x,
                                                 fn_output_signature=tf.TensorSpec([], tf.float32)),
    "map_fn_wrong_dtype": lambda tf, x: tf.map_fn(lambda r: tf.cast(r, tf.int32), x),
    "map_fn_wrong_structure": lambda tf, x: tf.map_fn(lambda r: (r, r), x),
    "map_fn_scalar_elems": lambda tf, x: tf.map_fn(lambda r: r, x[0, 0]),
    "map_fn_closure": lambda tf, x: tf.map_fn(lambda r: r * x[0], x),
    "scan": lambda tf, x: tf.scan(lambda a, r: a + r, x),
    "scan_initializer": lambda tf, x: tf.scan(lambda a, r: a * 0.5 + r, x, initializer=tf.ones([3])),
    "scan_reverse": lambda tf, x: tf.scan(lambda a, r: a + r, x, reverse=True),
    "scan_reverse_initializer": lambda tf, x: tf.scan(lambda a, r: a - r, x, initializer=tf.zeros([3]),
                                                      reverse=True),
    "scan_nested": lambda tf, x: tf.scan(lambda a, r: (a[0] + r, a[1] * 2.0), x,
                                         initializer=(tf.zeros([3]), tf.constant(1.0))),
    "scan_scalar_acc": lambda tf, x: tf.scan(lambda a, r: a + tf.reduce_sum(r), x, initializer=tf.constant(0.0)),
    "scan_wrong_structure": lambda tf, x: tf.scan(lambda a, r: (a, a), x),
    "foldl": lambda tf, x: tf.foldl(lambda a, r: a + r, x),
    "foldl_initializer": lambda tf, x: tf.foldl(lambda a, r: a * 2.0 + r, x, initializer=tf.zeros([3])),
    "foldl_nested": lambda tf, x: tf.foldl(lambda a, r: (a[0] + r[0], a[1] + r[1]), (x, x * 2.0)),
    "foldr": lambda tf, x: tf.foldr(lambda a, r: a * 2.0 + r, x),
    "foldr_initializer": lambda tf, x: tf.foldr(lambda a, r: a - r, x, initializer=tf.ones([3])),
    "vectorized_map": lambda tf, x: tf.vectorized_map(lambda r: tf.reduce_sum(r * r) + r[0], x),
    "vectorized_map_matmul": lambda tf, x: tf.vectorized_map(
        lambda r: tf.matmul(tf.reshape(r, [1, 3]), tf.reshape(r, [3, 1])), x),
    "vectorized_map_nested": lambda tf, x: tf.vectorized_map(lambda p: {"a": p[0] + p[1], "b": p[0] * 2.0},
                                                             (x, x * 3.0)),
    "vectorized_map_closure": lambda tf, x: tf.vectorized_map(lambda r: r * x[0], x),
}


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_tensorflow(name, staged):
    case = CASES[name]
    if name == "map_fn_scalar_elems":
        _same(lambda tf: case(tf, tf.constant(X)))
        return
    _same(lambda tf: [_run(tf, staged, case, X), _run(tf, staged, case, X[:1])])


def test_staged_map_fn_is_one_while_op():
    f = ember.function(lambda x: ember.map_fn(lambda r: r * 2.0, x),
                       input_signature=[ember.TensorSpec([None, 3], ember.float32)])
    gf = f.get_concrete_function()._gf
    types = [gf.node(i)["type"] for i in range(gf.num_nodes)]
    assert types.count("StatelessWhile") == 1, types


def test_vectorized_map_has_no_loop_and_falls_back_to_one():
    from ember.ops import functional_ops

    f = ember.function(lambda x: ember.vectorized_map(lambda r: ember.reduce_sum(r * r), x),
                       input_signature=[ember.TensorSpec([None, 3], ember.float32)])
    gf = f.get_concrete_function()._gf
    types = [gf.node(i)["type"] for i in range(gf.num_nodes)]
    assert "StatelessWhile" not in types and "While" not in types, types
    # An op without a batching rule (PrintV2 is stateful): the map_fn loop, with the same values.
    functional_ops.last_fallback = None
    out = ember.vectorized_map(lambda r: (ember.print(r, output_stream="file:///dev/null"), r * 2.0)[1],
                               ember.constant(X), warn=False)
    np.testing.assert_allclose(out.numpy(), X * 2.0)
    assert functional_ops.last_fallback is not None
    with pytest.raises(ValueError, match="fallback_to_while_loop"):
        ember.vectorized_map(lambda r: (ember.print(r, output_stream="file:///dev/null"), r)[1], ember.constant(X),
                             fallback_to_while_loop=False)


def test_tf_and_compat_v1_names():
    for name in ("map_fn", "scan", "foldl", "foldr", "vectorized_map"):
        assert getattr(ember, name) is getattr(ember.compat.v1, name)
        assert hasattr(tensorflow, name) and hasattr(tensorflow.compat.v1, name)


@pytest.mark.parametrize("staged", [False, True])
def test_gradients_through_map_fn_scan_and_folds(staged):
    def case(tf):
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = (tf.reduce_sum(tf.map_fn(lambda r: tf.sin(r) * r, x))
                     + tf.reduce_sum(tf.scan(lambda a, r: a * r, x))
                     + tf.reduce_sum(tf.foldl(lambda a, r: a + r * r, x))
                     + tf.reduce_sum(tf.vectorized_map(lambda r: tf.exp(r) * 0.1, x)))
            return tape.gradient(y, x)
        return _run(tf, staged, lambda tf, x: f(x), X)

    # Staged with every dimension None, map_fn's output array enters the loop with 1s for its row shape and
    # the first write broadcasts it, so the loop variable changes shape across iterations: BroadcastTo's
    # gradient must stack Shape(buffer) per iteration, not the buffer (Note [Shapes of enclosing values]).
    _same(case)


def test_staged_map_fn_gradient_with_static_rows():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(tf.map_fn(lambda r: tf.sin(r) * r, x)) + tf.reduce_sum(
                    tf.scan(lambda a, r: a * r, x))
            return tape.gradient(y, x)
        return f(tf.constant(X))

    _same(case)


def test_map_fn_gradient_matches_finite_differences_eagerly():
    x = ember.constant(np.array([[0.3, -0.2], [0.9, 0.4], [0.1, 0.7]]), dtype=ember.float64)

    def loss(x):
        return ember.reduce_sum(ember.map_fn(lambda r: ember.sin(r) * ember.reduce_sum(r), x) ** 2)

    with ember.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    grad = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = np.zeros_like(grad)
    for idx in np.ndindex(*grad.shape):
        e = np.zeros(grad.shape)
        e[idx] = eps
        numeric[idx] = (loss(x + e).numpy() - loss(x - e).numpy()) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)

"""Dynamic shapes end to end (issue 13), compared with TensorFlow: functions traced with None dimensions,
shapes computed from tf.shape flowing into shape operands, and gradients through them."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf


def _both(build, signature, *args):
    """build(tf_module) traced with `signature` (a list of (shape, dtype name)) in ember and TensorFlow."""
    outs = []
    for module in (tf, real_tf):
        spec = [module.TensorSpec(shape, getattr(module, dtype)) for shape, dtype in signature]
        fn = module.function(build(module), input_signature=spec)
        out = fn(*args)
        outs.append([np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])])
    return outs


def test_the_issues_first_program_differentiates_a_none_batch():
    w = tf.Variable(tf.ones((3, 2)))

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def loss(x):
        return tf.reduce_sum(tf.matmul(x, w) ** 2)

    with tf.GradientTape() as t:
        value = loss(tf.ones((4, 3)))
    rw = real_tf.Variable(real_tf.ones((3, 2)))
    with real_tf.GradientTape() as rt:
        expected = real_tf.reduce_sum(real_tf.matmul(real_tf.ones((4, 3)), rw) ** 2)
    assert float(value) == float(expected)
    np.testing.assert_allclose(t.gradient(value, w).numpy(), rt.gradient(expected, rw).numpy())


def test_the_issues_second_program_reshapes_by_a_computed_shape():
    def build(m):
        def half(x):
            n = m.shape(x)[0]
            return m.reshape(x, [n // 2, 2])
        return half

    for n in (0, 2, 6):
        ours, theirs = _both(build, [([None], "float32")], np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(ours[0], theirs[0])
    half = tf.function(build(tf), input_signature=[tf.TensorSpec([None], tf.float32)])
    assert half.get_concrete_function().structured_outputs.shape.as_list() == [None, 2]


@pytest.mark.parametrize("case", ["slice", "range", "random_shape", "fill", "tile", "split", "gather", "pad",
                                  "one_hot", "transpose_unknown_rank", "reduce_unknown_rank", "boolean_mask"])
def test_shape_operands_computed_in_the_graph_match_tensorflow(case):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    builds = {
        "slice": lambda m: lambda x: x[1:m.shape(x)[0] - 1, ::2],
        "range": lambda m: lambda x: m.cast(m.range(m.shape(x)[0]), m.float32) + m.reduce_sum(x),
        "random_shape": lambda m: lambda x: m.shape(m.random.uniform(m.shape(x)) + x),
        "fill": lambda m: lambda x: m.fill(m.stack([m.shape(x)[1], m.shape(x)[0]]), 2.0),
        "tile": lambda m: lambda x: m.tile(x, [1, m.shape(x)[0] // 2]),
        "split": lambda m: lambda x: m.split(x, 2, axis=1)[1],
        "gather": lambda m: lambda x: m.gather(x, m.range(m.shape(x)[0] - 1), axis=0),
        "pad": lambda m: lambda x: m.pad(x, [[0, m.shape(x)[0] // 4], [1, 0]]),
        "one_hot": lambda m: lambda x: m.one_hot(m.range(3), m.shape(x)[1]),
        "transpose_unknown_rank": lambda m: lambda x: m.transpose(x),
        "reduce_unknown_rank": lambda m: lambda x: m.reduce_sum(x) + m.reduce_max(x),
        "boolean_mask": lambda m: lambda x: m.boolean_mask(x, x[:, 0] > 5.0),
    }
    signature = [(None if case.endswith("unknown_rank") else [None, None], "float32")]
    ours, theirs = _both(builds[case], signature, x)
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_gradients_through_dynamic_shapes_match_tensorflow():
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)

    def loss(m, x):
        n = m.shape(x)[0]
        y = m.reshape(x[: n - 1], [-1, 2]) * m.range(1.0, 3.0)
        z = m.tile(m.reduce_mean(y, axis=0, keepdims=True), [n, 1])
        return m.reduce_sum(m.gather(x, m.range(n) // 2)) + m.reduce_sum(z * z) + m.reduce_prod(x[:2, :2])

    grads = []
    for m in (tf, real_tf):
        @m.function(input_signature=[m.TensorSpec([None, None], m.float32)])
        def step(x):
            with m.GradientTape() as t:
                t.watch(x)
                value = loss(m, x)
            return value, t.gradient(value, x)

        grads.append([np.asarray(v) for v in step(x)])
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)


def test_batch_jacobian_with_an_unknown_batch_size_matches_tensorflow():
    w0 = np.random.default_rng(2).normal(size=(3, 2)).astype(np.float32)
    results = []
    for m in (tf, real_tf):
        w = m.Variable(w0)

        @m.function(input_signature=[m.TensorSpec([None, 3], m.float32)])
        def batch_jacobian(x):
            with m.GradientTape() as t:
                t.watch(x)
                y = m.tanh(m.matmul(x, w))
            return t.batch_jacobian(y, x)

        x = np.random.default_rng(3).normal(size=(4, 3)).astype(np.float32)
        results.append([batch_jacobian(x).numpy(), batch_jacobian(x[:1]).numpy()])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_second_order_gradients_with_unknown_dims_match_tensorflow():
    x0 = np.random.default_rng(4).normal(size=(3, 4)).astype(np.float32)
    b0 = np.random.default_rng(5).normal(size=(4,)).astype(np.float32)
    results = []
    for m in (tf, real_tf):
        @m.function(input_signature=[m.TensorSpec([None, None], m.float32), m.TensorSpec([None], m.float32)])
        def second(x, b):
            with m.GradientTape() as outer:
                outer.watch([x, b])
                with m.GradientTape() as inner:
                    inner.watch([x, b])
                    y = m.reduce_mean(m.tanh(x * b + m.reshape(b, [1, -1])) ** 2, axis=1)
                    loss = m.reduce_sum(m.tile(m.expand_dims(y, 0), [2, 1]))
                gx, gb = inner.gradient(loss, [x, b])
                total = m.reduce_sum(gx * gx) + m.reduce_sum(gb)
            return outer.gradient(total, [x, b])

        results.append([g.numpy() for g in second(x0, b0)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("a, b", [([2, 3], [3]), ([1], [1]), ([4, 1, 5], [3, 1]), ([], [2, 2]), ([2, 1], [2, 1])])
def test_broadcast_gradient_args_matches_tensorflow(a, b):
    ours = tf._C.op("BroadcastGradientArgs")(tf.constant(a, tf.int32), tf.constant(b, tf.int32))
    theirs = real_tf.raw_ops.BroadcastGradientArgs(s0=real_tf.constant(a, real_tf.int32),
                                                   s1=real_tf.constant(b, real_tf.int32))
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@pytest.mark.parametrize("perm", [[0], [2, 0, 1], [3, 1, 0, 2]])
def test_invert_permutation_matches_tensorflow(perm):
    ours = tf._C.op("InvertPermutation")(tf.constant(perm))
    np.testing.assert_array_equal(ours.numpy(), real_tf.math.invert_permutation(perm).numpy())


@pytest.mark.parametrize("axis", ["last", "first", "negative", "argument"])
def test_concat_with_an_axis_computed_in_the_graph_matches_tensorflow(axis):
    """ConcatV2's axis is an input (TensorFlow's signature): computed from tf.rank or passed in, it is a
    value of the graph, so the shape is resolved at run time and the gradient slices at run-time offsets
    (ConcatOffset)."""
    x0 = np.random.default_rng(6).normal(size=(3, 4)).astype(np.float32)
    y0 = np.random.default_rng(7).normal(size=(3, 4)).astype(np.float32)
    results = []
    for m in (tf, real_tf):
        def pick(x, a):
            return {"last": m.rank(x) - 1, "first": m.rank(x) - 2, "negative": -m.rank(x), "argument": a}[axis]

        @m.function(input_signature=[m.TensorSpec([None, None], m.float32), m.TensorSpec([None, None], m.float32),
                                     m.TensorSpec([], m.int32)])
        def step(x, y, a):
            with m.GradientTape() as t:
                t.watch([x, y])
                joined = m.concat([x, y * 2.0, x[:, :2] if axis in ("last", "argument") else x[:2]], pick(x, a))
                loss = m.reduce_sum(m.sin(joined) * m.cast(m.range(m.size(joined)), m.float32)[:, None][0])
                loss += m.reduce_sum(joined ** 2)
            gx, gy = t.gradient(loss, [x, y])
            return joined, gx, gy

        a = 1 if axis == "argument" else 0
        results.append([v.numpy() for v in step(x0, y0, a)] + [v.numpy() for v in step(x0[:2], y0[:2], a)])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    traced = tf.function(lambda x: tf.concat([x, x], tf.rank(x) - 1),
                         input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    # Tracing knows tf.rank(x) (PartialValue), so the axis and the joined dim are known: more than
    # TensorFlow's [None, None], and compatible with it.
    assert traced.get_concrete_function().structured_outputs.shape.as_list() == [None, 6]


@pytest.mark.parametrize("concat_dim, shapes, dtype", [
    (1, [[2, 3, 4], [2, 5, 4], [2, 1, 4]], "int32"), (-2, [[2, 3, 4], [2, 5, 4]], "int64"),
    (0, [[2], [0], [3]], "int32")])
def test_concat_offset_matches_tensorflow(concat_dim, shapes, dtype):
    ours = tf._C.op("ConcatOffset")(tf.constant(concat_dim), [tf.constant(s, getattr(tf, dtype)) for s in shapes])
    theirs = real_tf.raw_ops.ConcatOffset(concat_dim=concat_dim,
                                          shape=[real_tf.constant(s, getattr(real_tf, dtype)) for s in shapes])
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype.name == t.dtype.name
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_concat_offset_errors_name_the_op():
    op = tf._C.op("ConcatOffset")
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOffset: axis 3 is out of range"):
        op(tf.constant(3), [tf.constant([2, 3, 4]), tf.constant([2, 5, 4])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOffset: shape #1 is \\[3,5,4\\].*except 1"):
        op(tf.constant(1), [tf.constant([2, 3, 4]), tf.constant([3, 5, 4])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOffset: shape #1 has 2 elements"):
        op(tf.constant(1), [tf.constant([2, 3, 4]), tf.constant([2, 5])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOffset: expected at least 2 shapes"):
        op(tf.constant(1), [tf.constant([2, 3, 4])])


@pytest.mark.parametrize("axis", [1, -1, 0, 2])
def test_gather_gradient_with_an_axis_computed_in_the_graph_matches_tensorflow(axis):
    params = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    indices = np.array([1, 0, 1], np.int32)
    grads = {}
    for lib in (tf, real_tf):
        @lib.function(input_signature=[lib.TensorSpec([None, None, 3]), lib.TensorSpec([None], lib.int32),
                                       lib.TensorSpec([], lib.int32)])
        def g(p, i, a):
            with lib.GradientTape() as tape:
                tape.watch(p)
                y = lib.gather(p, i, axis=a)
                loss = lib.reduce_sum(y * y)
            return tape.gradient(loss, p)

        grads[lib] = g(params, indices, axis).numpy()
    np.testing.assert_array_equal(grads[tf], grads[real_tf])


def test_fill_gradient_with_dims_of_unknown_length_matches_tensorflow():
    out = {}
    for lib in (tf, real_tf):
        @lib.function(input_signature=[lib.TensorSpec([None], lib.int32), lib.TensorSpec([])])
        def f(dims, v):
            with lib.GradientTape() as tape:
                tape.watch(v)
                loss = lib.reduce_sum(lib.fill(dims, v) * 3.0)
            return tape.gradient(loss, v)

        out[lib] = [float(f(np.array(d, np.int32), 1.5)) for d in ([2, 3, 4], [5], [])]
    assert out[tf] == out[real_tf] == [72.0, 15.0, 3.0]


@pytest.mark.parametrize("first_dim", [5, None])
def test_rows_read_at_a_computed_index_match_tensorflow(first_dim):
    # x[i] and x[i, 1:] with i a tensor: static result specs from bounds computed in the graph, the plan's
    # StridedSlice resolving its shape in its kernel alone (Note [Unknown dimensions] in runtime/executor.cc).
    def build(m):
        def rows(x, i):
            return x[i], x[i, 1:] * 2.0, x[m.maximum(i - 1, 0)]

        return rows

    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    signature = [([first_dim, 3], "float32"), ([], "int32")]
    for i in (0, 3, -1, -5):
        ours, theirs = _both(build, signature, x, np.int32(i))
        for a, b in zip(ours, theirs):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    for i in (5, -6):
        errors = []
        for module in (tf, real_tf):
            spec = [module.TensorSpec(s, getattr(module, d)) for s, d in signature]
            fn = module.function(build(module), input_signature=spec)
            with pytest.raises(module.errors.InvalidArgumentError) as raised:
                fn(x, np.int32(i))
            errors.append(str(raised.value))
        assert "StridedSlice" in errors[0] and "out of bounds" in errors[0], errors[0]
        assert "out of bounds" in errors[1]

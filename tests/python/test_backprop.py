"""GradientTape: the seeds' examples, variables, persistence, nesting, functions under a tape, custom
gradients and jacobians."""
import numpy as np
import pytest

import ember as tf
from ember import errors


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_seed_nested_tapes_give_second_derivative():
    x = tf.constant(3.0)
    with tf.GradientTape() as t1:
        with tf.GradientTape() as t2:
            t1.watch(x)
            t2.watch(x)
            y = x * x
        dy_dx = t2.gradient(y, x)
    d2y_dx2 = t1.gradient(dy_dx, x)
    assert float(dy_dx) == 6.0
    assert float(d2y_dx2) == 2.0


def test_seed_jacobian():
    x = tf.constant([1., 2.])
    y = tf.constant([3., 4.])
    with tf.GradientTape() as t:
        t.watch(x)
        t.watch(y)
        z = x * x * y
    jx, jy = t.jacobian(z, [x, y])
    close(jx, np.diag(2 * np.array([1., 2.]) * np.array([3., 4.])))
    close(jy, np.diag(np.array([1., 2.]) ** 2))


def test_jacobian_loop_fallback_matches_and_shapes():
    x = tf.constant([[1., 2.], [3., 4.]])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.matmul(x, x)
    j1 = t.jacobian(y, x)
    j2 = t.jacobian(y, x, experimental_use_pfor=False)
    assert j1.shape == (2, 2, 2, 2)
    xn = x.numpy()
    expected = np.zeros((2, 2, 2, 2), np.float32)
    for i in range(2):
        for j in range(2):
            for k in range(2):
                for m in range(2):
                    # y[i, j] = sum_l x[i, l] x[l, j]
                    expected[i, j, k, m] = (xn[m, j] if i == k else 0) + (xn[i, k] if m == j else 0)
    close(j1, expected)
    close(j2, expected)


def test_batch_jacobian():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.concat([x * x, tf.reduce_sum(x, axis=1, keepdims=True)], axis=1)  # [3, 3]
    j = t.batch_jacobian(y, x)
    assert j.shape == (3, 3, 2)
    xn = x.numpy()
    for b in range(3):
        expected = np.array([[2 * xn[b, 0], 0], [0, 2 * xn[b, 1]], [1, 1]], np.float32)
        close(j[b], expected)


def test_trainable_variables_are_watched_and_summed_over_reads():
    v = tf.Variable(2.0)
    frozen = tf.Variable(5.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * v + v * frozen
    gv, gf = tape.gradient(y, [v, frozen])
    assert float(gv) == 2 * 2.0 + 5.0
    assert gf is None
    assert [w.name for w in tape.watched_variables()] == [v.name]


def test_watch_accessed_variables_false_and_explicit_watch():
    v = tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert float(tape.gradient(y, v)) == 6.0


def test_non_persistent_tape_used_again_after_its_gradient():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)
    with pytest.raises(errors.FailedPreconditionError, match="GradientTape.watch: this non-persistent tape"):
        tape.watch(x)
    with tape:  # entered again it records afresh, as TensorFlow's
        tape.watch(x)
        z = x * x * x
    assert float(tape.gradient(z, x)) == 3.0


def test_persistent_tape_gives_several_gradients():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 108.0
    assert float(tape.gradient(y, x)) == 6.0
    del tape


def test_stop_recording_and_stop_gradient():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * x * x
        w = y + z
        s = tf.stop_gradient(x) * x
    assert float(tape.gradient(w, x)) == 4.0
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(s, x)) == 2.0


def test_reset_forgets_what_was_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * 3.0
    assert tape.gradient(y, x) is None
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = x * 3.0
    assert float(tape.gradient(z, x)) == 3.0


def test_unconnected_gradients_and_structures():
    x = tf.constant([1.0, 2.0])
    u = tf.constant(5.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = tf.reduce_sum(x * x)
    g = tape.gradient(y, {"x": x, "u": u})
    close(g["x"], [2.0, 4.0])
    assert g["u"] is None
    g = tape.gradient(y, [x, u], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert float(g[1]) == 0.0
    g = tape.gradient(y, [x, u], unconnected_gradients="zero")
    assert float(g[1]) == 0.0


def test_output_gradients_and_non_scalar_targets():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    close(tape.gradient(y, x), [2.0, 4.0, 6.0])  # the target's elements are summed
    close(tape.gradient(y, x, output_gradients=tf.constant([1.0, 0.0, 2.0])), [2.0, 0.0, 12.0])
    close(tape.gradient([y, x], x), [3.0, 5.0, 7.0])


def test_integer_and_unwatched_sources_get_none():
    i = tf.constant(3)
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(i)
        y = tf.cast(i, tf.float32) * x
    assert tape.gradient(y, [i, x]) == [None, None]


def test_bad_sources_and_output_gradients_raise_clear_errors():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="source must be a Tensor or a Variable"):
        tape.gradient(y, [np.float32(1.0)])
    with pytest.raises(errors.InvalidArgumentError, match="output_gradients"):
        tape.gradient(y, x, output_gradients=tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="not tf.Tensor"):
        tape.watch("x")


def test_gradient_through_function_matches_eager():
    w = tf.Variable([[0.3], [0.4]])

    def body(a):
        return tf.reduce_sum(tf.tanh(tf.matmul(a, w)))

    staged = tf.function(body)
    a = tf.constant([[0.1, 0.2]])
    results = []
    for fn in (body, staged, staged):
        with tf.GradientTape() as tape:
            tape.watch(a)
            out = fn(a * 2.0)
        results.append([g.numpy() for g in tape.gradient(out, [a, w])])
    for r in results[1:]:
        close(r[0], results[0][0])
        close(r[1], results[0][1])


def test_gradient_through_nested_functions_and_second_order():
    @tf.function
    def inner(x):
        return x * x * x

    @tf.function
    def outer(x):
        return inner(x) + inner(2.0 * x)

    x = tf.constant(1.5)
    with tf.GradientTape() as t1:
        t1.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            y = outer(x)
        dy = t2.gradient(y, x)
    d2y = t1.gradient(dy, x)
    close(dy, 3 * 1.5 ** 2 + 24 * 1.5 ** 2)
    close(d2y, 6 * 1.5 + 48 * 1.5)


def test_training_step_inside_function_updates_in_place():
    w = tf.Variable([[0.5], [-0.5]])
    b = tf.Variable(0.0)
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    y = tf.constant([[1.0], [2.0]])

    def loss_fn():
        return tf.reduce_mean((tf.matmul(x, w) + b - y) ** 2)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.01 * gw)
        b.assign_sub(0.01 * gb)
        return loss

    losses = [float(step()) for _ in range(50)]
    assert losses[-1] < losses[0] * 0.5
    # The same step eagerly from the same point gives the same update.
    w2 = tf.Variable(w.numpy())
    b2 = tf.Variable(b.numpy())
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.matmul(x, w2) + b2 - y) ** 2)
    gw, gb = tape.gradient(loss, [w2, b2])
    step()
    close(w.numpy(), w2.numpy() - 0.01 * gw.numpy())


def test_custom_gradient():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))

        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0  # the naive gradient would be nan


def test_custom_gradient_with_variables():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            return dy * 10.0, [dy * 100.0]

        return x * v, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    gx, gv = tape.gradient(y, [x, v])
    assert float(gx) == 10.0 and float(gv) == 100.0


def test_custom_gradient_inside_a_function_differentiated_from_outside():
    @tf.custom_gradient
    def clipped_identity(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    @tf.custom_gradient
    def softplus_tripled_grad(x):
        e = tf.exp(x)  # the gradient function reads a forward value
        return tf.math.log(1 + e), lambda dy: dy * e / (1 + e) * 3.0

    @tf.function
    def f(x):
        return clipped_identity(x) * 5.0 + softplus_tripled_grad(x * 10.0)

    x = tf.constant(2.0)
    np.testing.assert_allclose(float(f(x)), 10.0 + 20.0, rtol=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    # d/dx: the clipped gradient of 5 is 1; the tripled softplus gradient at 20 is ~3, times 10. The
    # ordinary gradient would be 5 + 10.
    np.testing.assert_allclose(float(tape.gradient(y, x)), 1.0 + 30.0, rtol=1e-6)

    @tf.function
    def outer(x):  # through a nested function too
        return f(x) * 2.0

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = outer(x)
    # The clip sees dy = 10 and passes 1; the tripled softplus gradient is doubled.
    np.testing.assert_allclose(float(tape.gradient(y, x)), 1.0 + 2.0 * 30.0, rtol=1e-6)

    @tf.function
    def g(x):  # a tape inside the function keeps the custom gradient as well
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = clipped_identity(x) * 5.0
        return inner.gradient(y, x)

    assert float(g(x)) == 1.0


def test_custom_gradient_in_a_function_with_a_constant_made_outside_it():
    @tf.custom_gradient
    def scaled(x, c):
        return x * c, lambda dy: (dy * 5.0, None)

    @tf.function
    def g(x):
        c = tf.constant(3.0)  # its node is first used inside the decorated call
        return scaled(x, c) + c

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
    assert float(y) == 9.0
    assert float(tape.gradient(y, x)) == 5.0


def test_nested_custom_gradients_in_a_function_use_the_outer_one():
    @tf.custom_gradient
    def inner(x):
        return x * 1.0, lambda dy: dy * 7.0

    @tf.custom_gradient
    def outer(x):
        return inner(x) * 2.0, lambda dy: dy * 100.0

    x = tf.constant(2.0)
    for fn in (outer, tf.function(lambda x: outer(x))):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        assert float(tape.gradient(y, x)) == 100.0


def test_recompute_grad_matches_plain_gradient():
    w = tf.Variable([[1.0, -1.0], [0.5, 2.0]])

    def block(x):
        return tf.tanh(tf.matmul(x, w))

    x = tf.constant([[0.3, 0.7]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.recompute_grad(block)(x))
    g_re = tape.gradient(y, [x, w])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(block(x))
    g = tape.gradient(y, [x, w])
    close(g_re[0], g[0])
    close(g_re[1], g[1])


def test_recompute_grad_of_a_function_reading_no_variable():
    import tensorflow as real_tf

    def grads(lib):
        block = lib.recompute_grad(lambda a, b: lib.sin(a) * b)
        x, y = lib.constant([0.3, -1.2]), lib.constant([2.0, 0.5])
        with lib.GradientTape() as tape:
            tape.watch([x, y])
            z = lib.reduce_sum(block(x, y))
        return tape.gradient(z, [x, y])

    for ours, theirs in zip(grads(tf), grads(real_tf)):
        close(ours, theirs.numpy())


def test_long_chain_is_recorded_and_freed_without_recursion():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(20000):
            y = y * 1.0
    assert float(tape.gradient(y, x)) == 1.0
    del y


# Issue 12, item 1: an output of a function that the caller never uses gets no backward ops at all, so a
# gradient rule that is infinite at its value (sqrt at 0) cannot turn the used output's gradient into NaN.
def _sqrt_of_zero_and_cube(tf_module):
    def inner(a):
        unused = tf_module.sqrt(tf_module.abs(a - a))
        return unused, a * a * a

    return inner


def test_unused_function_output_does_not_poison_gradient_matches_tensorflow():
    import tensorflow as real_tf

    results = []
    for module in (tf, real_tf):
        f = module.function(_sqrt_of_zero_and_cube(module))
        x = module.constant([1.0, -2.0])
        with module.GradientTape() as t:
            t.watch(x)
            _, used = f(x)
            loss = module.reduce_sum(used)
        results.append(t.gradient(loss, x).numpy())
    np.testing.assert_allclose(results[0], [3.0, 12.0])
    np.testing.assert_allclose(results[0], results[1])


def test_unused_function_output_second_order_and_both_outputs_used():
    f = tf.function(_sqrt_of_zero_and_cube(tf))
    x = tf.constant([1.0, -2.0])
    with tf.GradientTape() as t1:
        t1.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            _, used = f(x)
            loss = tf.reduce_sum(used)
        g = t2.gradient(loss, x)
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    # Only the used output's backward ops run at second order too (TensorFlow gives NaN here).
    np.testing.assert_allclose(t1.gradient(g, x).numpy(), [6.0, -12.0])
    # When the caller does use the sqrt output, its gradient (NaN at 0) flows, as in eager execution.
    with tf.GradientTape() as t:
        t.watch(x)
        unused, used = f(x)
        loss = tf.reduce_sum(used) + tf.reduce_sum(unused)
    assert np.isnan(t.gradient(loss, x).numpy()).all()


def test_nested_function_with_unused_output_gradient():
    inner = tf.function(_sqrt_of_zero_and_cube(tf))

    @tf.function
    def outer(a):
        _, used = inner(a)
        return tf.reduce_sum(used)

    x = tf.constant([1.0, -2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        loss = outer(x)
    np.testing.assert_allclose(t.gradient(loss, x).numpy(), [3.0, 12.0])


# Issue 12, item 2: tape identity follows tensors, not buffers: after v.assign(c), reading v must not make
# earlier uses of c count as reads of v.
def test_assign_then_read_does_not_alias_the_assigned_tensor():
    v = tf.Variable([[5.0]])
    with tf.GradientTape() as t:
        c = tf.constant([[0.0]])
        v.assign(c)
        v.read_value()
        loss = tf.reduce_sum(c)
    assert t.gradient(loss, v) is None

    c = tf.constant([1.0, 2.0])
    w = tf.Variable([0.0, 0.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(c)
        w.assign(c)
        r = w.read_value()
        loss = tf.reduce_sum(c * 3.0) + tf.reduce_sum(r)
    np.testing.assert_allclose(t.gradient(loss, c).numpy(), [3.0, 3.0])
    np.testing.assert_allclose(t.gradient(loss, w).numpy(), [1.0, 1.0])


def test_assigned_value_is_not_overwritten_by_in_place_writes():
    v = tf.Variable(tf.zeros([1000]))

    @tf.function
    def f(x):
        y = x * 2.0
        v.assign(y)
        return (tf.exp(y) + 1.0) * 3.0  # y dies here: an in-place write would clobber v's value

    for i in range(3):
        x = tf.ones([1000]) + float(i)
        out = f(x)
        np.testing.assert_allclose(v.numpy(), 2.0 * (1.0 + i))
        np.testing.assert_allclose(out.numpy(), (np.exp(2.0 * (1.0 + i)) + 1.0) * 3.0, rtol=1e-6)
    a = tf.ones([1000]) * 4.0
    v.assign(a)
    b = tf.exp(a) + 1.0  # a's last use in eager code
    del a, b
    np.testing.assert_allclose(v.numpy(), 4.0)


# Found by the program fuzzer: with dimensions unknown while tracing, a broadcast operand's gradient was
# returned unreduced (a [3,3] gradient for a [1,3] input). Until gradients sum back along dimensions known
# only at run time, the broadcast case is a run-time error, never a silently wrong gradient.
def test_gradient_through_unknown_dims_sums_broadcasts_found_at_run_time():
    @tf.function(input_signature=[tf.TensorSpec([None, None]), tf.TensorSpec([None, None])])
    def f(a, b):
        return a * b + b

    a = tf.ones([3, 3])
    b = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    with tf.GradientTape() as t:
        t.watch(b)
        y = tf.reduce_sum(f(a, b))
    np.testing.assert_allclose(t.gradient(y, b).numpy(), np.full([3, 3], 2.0))
    # Whether b was broadcast is only known at run time: the gradient sums it back then, as TensorFlow.
    b = tf.ones([1, 3])
    with tf.GradientTape() as t:
        t.watch(b)
        y = tf.reduce_sum(f(a, b))
    np.testing.assert_allclose(t.gradient(y, b).numpy(), [[6.0, 6.0, 6.0]])


def _custom_gradient_of_shape(module, shape):
    """x * 2 whose custom gradient is ones of `shape`, whatever x's shape."""
    @module.custom_gradient
    def doubled(x):
        def grad(dy):
            return module.ones(shape)
        return x * 2.0, grad

    return doubled


def test_custom_gradient_of_another_shape_passes_on_a_tape_as_in_tensorflow():
    """TensorFlow's tapes hand a custom gradient on unchecked, eagerly and inside a function; ember's shape
    check (autodiff/tape.cc) holds for its own rules only there."""
    import tensorflow as real_tf

    for module in (tf, real_tf):
        doubled = _custom_gradient_of_shape(module, [3, 3])

        def gradient(x):
            with module.GradientTape() as t:
                t.watch(x)
                y = doubled(x)
            return t.gradient(y, x)

        x = module.ones([2])
        for g in (gradient(x), module.function(gradient)(x)):
            assert g.shape == (3, 3), module.__name__
            np.testing.assert_array_equal(g.numpy(), np.ones([3, 3]))


def test_custom_gradient_of_another_shape_fails_building_a_functions_gradient_as_in_tensorflow():
    """A function called under a tape gets its gradient built like TensorFlow's graph gradients, which check
    a custom gradient's shape against its input's: when the call runs, before any gradient is asked for
    (TensorFlow: ValueError; ember: InvalidArgumentError)."""
    import tensorflow as real_tf

    expected = {tf: (errors.InvalidArgumentError, r": the custom_gradient of 'doubled' returned a gradient of "
                                                  r"float32\[3,3\] for input 0, which is float32\[2\]"),
                real_tf: (ValueError, r"\. Forward operation: .* Original input shape: \(2,\)\. Calculated input "
                                      r"gradient shape: \(3, 3\)")}
    for module, (error, details) in expected.items():
        doubled = module.function(_custom_gradient_of_shape(module, [3, 3]))
        x = module.ones([2])
        with module.GradientTape() as t:
            t.watch(x)
            with pytest.raises(error, match="Incompatible shapes between op input and calculated input gradient"
                                            + details):
                doubled(x)
    # The same function with a right custom gradient works.
    fine = tf.function(_custom_gradient_of_shape(tf, [2]))
    x = tf.ones([2])
    with tf.GradientTape() as t:
        t.watch(x)
        y = fine(x)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [1.0, 1.0])


# ---- tape slots (Note [Tape slots and generations] in autodiff/tape.h)


def test_far_more_than_32_tapes_kept_after_their_blocks_each_see_their_own_records():
    x = tf.constant(2.0)
    kept = []
    for k in range(100):
        tape = tf.GradientTape(persistent=k % 2 == 0)
        with tape:
            tape.watch(x)
            y = x * x * float(k)
        kept.append((tape, y, 4.0 * k))
    for tape, y, want in kept:
        assert float(tape.gradient(y, x)) == want


def test_a_slot_reused_by_another_tape_shares_no_records_with_its_earlier_holder():
    # As TensorFlow: a tensor the first tape watched is not watched by later tapes, whatever slot they get,
    # and the first tape does not see what later tapes recorded.
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as first:
        first.watch(x)
        y = x * x
    later = []
    for _ in range(40):
        with tf.GradientTape() as tape:
            z = x * 3.0
        later.append((tape, z))
    for tape, z in later:
        assert tape.gradient(z, x) is None
    assert float(first.gradient(y, x)) == 4.0
    with tf.GradientTape() as other:
        other.watch(y)
        w = y * 5.0
    assert first.gradient(w, x) is None
    assert float(other.gradient(w, y)) == 5.0


def test_a_persistent_tape_entered_again_records_on_from_its_earlier_records():
    x = tf.constant(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        a = x * x
    for _ in range(40):  # other tapes take and free slots in between
        with tf.GradientTape() as other:
            other.watch(x)
            b = x * 5.0
        assert float(other.gradient(b, x)) == 5.0
    with tape:
        c = a * 3.0
    assert float(tape.gradient(c, x)) == 12.0
    assert float(tape.gradient(a, x)) == 4.0


def test_reset_also_forgets_watched_tensors():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.reset()
        y = x * x
    assert tape.gradient(y, x) is None  # as TensorFlow


def test_33_tapes_recording_at_once_is_a_clear_error_and_the_others_go_on():
    # TensorFlow nests any number; ember's tape masks have 32 slots (tensor_impl.h), so the 33rd tape to
    # record at once is refused, and the 32 recording keep working.
    x = tf.constant(2.0)
    tapes = []
    try:
        for _ in range(32):
            tape = tf.GradientTape(persistent=True)
            tape.__enter__()
            tape.watch(x)
            tapes.append(tape)
        extra = tf.GradientTape()
        with pytest.raises(errors.ResourceExhaustedError, match="at most 32 tapes can record at once"):
            extra.__enter__()
        y = x * x * x
    finally:
        for tape in reversed(tapes):
            tape.__exit__(None, None, None)
    assert [float(tapes[k].gradient(y, x)) for k in (0, 16, 31)] == [12.0] * 3
    with extra:  # a slot is free again
        extra.watch(x)
        z = x * x
    assert float(extra.gradient(z, x)) == 4.0



def test_tapes_on_several_threads_take_and_free_slots_without_mixing_records():
    import threading

    failures = []

    def work(seed):
        x = tf.constant(float(seed))
        kept = []
        for k in range(60):
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(x)
                y = x * x * float(k)
            kept.append((tape, y, 2.0 * seed * k))
            if k % 7 == 0:
                for old, old_y, want in kept[-8:]:
                    if float(old.gradient(old_y, x)) != want:
                        failures.append((seed, k))
        for tape, y, want in kept:
            if float(tape.gradient(y, x)) != want:
                failures.append((seed, "end"))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_a_tape_gives_none_for_a_source_only_another_tape_watched():
    import tensorflow as real_tf

    def grads(lib):
        c, d = lib.constant(2.0), lib.constant(1.5)
        with lib.GradientTape(persistent=True) as t1:
            t1.watch(c)
            with lib.GradientTape(persistent=True) as t2:
                t2.watch(d)
                y = c * d
                z = lib.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * c), (0, d))[1]
        return t2.gradient(y, [c, d]) + t1.gradient(y, [c, d]) + t2.gradient(z, [c, d]) + t1.gradient(z, [c, d])

    for ours, theirs in zip(grads(tf), grads(real_tf)):
        assert (ours is None) == (theirs is None)
        if theirs is not None:
            close(ours, theirs.numpy())

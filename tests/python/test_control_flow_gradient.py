"""Gradients through staged control flow (If/Case/While under a tape; src/ember/autodiff/control_flow_gradient.cc).

Each program is written once against a module ``tf`` and run with ember and with TensorFlow; the gradients must
agree, and float64 ones also agree with central finite differences. Trip counts and branch indices come in as
function inputs (input_signature with scalar specs), so they are known only at run time.
"""

import numpy as np
import pytest
import tensorflow  # the reference: the test command installs it, so this never skips

import ember


F64 = "float64"


def _np(v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [_np(x) for x in v]
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def _both(program, *args):
    """program(tf, *args) run with ember and TensorFlow; returns (ours, theirs) as NumPy (nested lists)."""
    return _np(program(ember, *args)), _np(program(tensorflow, *args))


def _close(ours, theirs, rtol=1e-9, atol=1e-9):
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b, rtol, atol)
        return
    assert ours is not None, f"ember gave no gradient where TensorFlow gave {theirs}"
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def _finite_difference(f, x, eps=1e-6):
    """d f(x) / dx for a scalar f of a float64 array x, by central differences."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


# ---- cond


def _cond_fn(tf):
    @tf.function(input_signature=[tf.TensorSpec([3], tf.float64), tf.TensorSpec([], tf.float64)])
    def f(x, p):
        return tf.cond(p > 0, lambda: tf.reduce_sum(x * x * x) * p, lambda: tf.reduce_sum(tf.sin(x) * x))
    return f


@pytest.mark.parametrize("p", [1.5, -0.5])
def test_cond_first_and_second_order_outer_tape(p):
    def program(tf, x, p):
        f = _cond_fn(tf)
        x = tf.constant(x)
        p = tf.constant(p, dtype=tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch([x, p])
                y = f(x, p)
            gx, gp = inner.gradient(y, [x, p])
        return [y, gx, gp, outer.gradient(gx, x)]

    x = np.array([0.3, -1.2, 2.0])
    ours, theirs = _both(program, x, p)
    _close(ours, theirs)
    f = _cond_fn(ember)
    fd = _finite_difference(lambda v: float(f(ember.constant(v), ember.constant(p, dtype=ember.float64))), x)
    np.testing.assert_allclose(ours[1], fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("p", [1.5, -0.5])
def test_cond_tape_inside_function(p):
    def program(tf, x, p):
        @tf.function(input_signature=[tf.TensorSpec([3], tf.float64), tf.TensorSpec([], tf.float64)])
        def f(x, p):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = tf.cond(p > 0, lambda: tf.reduce_sum(tf.exp(x) * p), lambda: tf.reduce_sum(x * x * x))
                g = inner.gradient(y, x)
            return y, g, outer.gradient(g, x)
        return list(f(tf.constant(x), tf.constant(p, dtype=tf.float64)))

    ours, theirs = _both(program, np.array([0.5, -1.0, 1.25]), p)
    _close(ours, theirs)


def test_cond_third_order():
    def program(tf, x, p):
        f = _cond_fn(tf)
        x = tf.constant(x)
        p = tf.constant(p, dtype=tf.float64)
        with tf.GradientTape() as t3:
            t3.watch(x)
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    y = f(x, p)
                g1 = t1.gradient(y, x)
            g2 = t2.gradient(g1, x)
        return [g1, g2, t3.gradient(g2, x)]

    for p in (2.0, -2.0):
        ours, theirs = _both(program, np.array([0.7, -0.4, 1.1]), p)
        _close(ours, theirs)


def test_cond_variables_read_in_one_branch():
    """A variable read by one branch only gets zeros from the other; tape.watched variables get gradients."""
    def program(tf, p):
        v = tf.Variable([1.0, -2.0], dtype=tf.float64)
        w = tf.Variable(3.0, dtype=tf.float64)

        @tf.function(input_signature=[tf.TensorSpec([], tf.float64)])
        def f(p):
            return tf.cond(p > 0, lambda: tf.reduce_sum(v * v) * w, lambda: p * w * w)

        with tf.GradientTape() as tape:
            y = f(tf.constant(p, dtype=tf.float64))
        gv, gw = tape.gradient(y, [v, w])
        gv = tf.zeros_like(v) if gv is None else gv
        return [y, gv, gw]

    for p in (1.0, -1.0):
        ours, theirs = _both(program, p)
        _close(ours, theirs)


def test_cond_outputs_with_different_static_shapes():
    """Branch intermediates of different shapes: the other branch's zeros must fit the joined spec."""
    def program(tf, x, p):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float64), tf.TensorSpec([], tf.float64)])
        def f(x, p):
            def a():
                m = tf.reshape(tf.concat([x, x], 0), [2, -1])
                return tf.reduce_sum(tf.tanh(m) * m)

            def b():
                return tf.reduce_sum(tf.sin(x) * p)
            return tf.cond(p > 0, a, b)

        x = tf.constant(x)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, tf.constant(p, dtype=tf.float64))
            g = tape.gradient(y, x)
        return [y, g, outer.gradient(g, x)]

    for p in (1.0, -1.0):
        ours, theirs = _both(program, np.array([0.2, -0.7, 1.3]), p)
        _close(ours, theirs)


# ---- switch_case


@pytest.mark.parametrize("index", [0, 1, 2, 7])
def test_switch_case_first_and_second_order(index):
    def program(tf, x, index):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float64), tf.TensorSpec([], tf.int32)])
        def f(x, i):
            return tf.switch_case(i, [lambda: tf.reduce_sum(x * x), lambda: tf.reduce_sum(tf.sin(x) * x),
                                      lambda: tf.reduce_prod(tf.exp(x))])

        x = tf.constant(x)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, tf.constant(index))
            g = tape.gradient(y, x)
        return [y, g, outer.gradient(g, x)]

    ours, theirs = _both(program, np.array([0.4, -0.9]), index)
    _close(ours, theirs)


# ---- while_loop


def _power_fn(tf):
    @tf.function(input_signature=[tf.TensorSpec([], tf.float64), tf.TensorSpec([], tf.int32)])
    def f(x, n):
        _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * x + tf.sin(y)),
                             (tf.constant(0), tf.constant(1.0, tf.float64)))
        return y
    return f


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_runtime_trip_count_first_and_second_order(n):
    def program(tf, x, n):
        f = _power_fn(tf)
        x = tf.constant(x, dtype=tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, tf.constant(n))
            g = tape.gradient(y, x)
        h = outer.gradient(g, x)
        return [y, g if g is not None else tf.constant(0.0, tf.float64),
                h if h is not None else tf.constant(0.0, tf.float64)]

    ours, theirs = _both(program, 0.8, n)
    _close(ours, theirs)
    f = _power_fn(ember)
    fd = _finite_difference(lambda v: float(f(ember.constant(float(v), dtype=ember.float64), ember.constant(n))),
                            np.array(0.8))
    np.testing.assert_allclose(ours[1], fd, rtol=1e-6, atol=1e-7)


def test_while_same_function_different_trip_counts():
    """One traced function, gradients at several run-time trip counts (no retrace per count)."""
    f = _power_fn(ember)
    g_tf = _power_fn(tensorflow)
    for n in (3, 0, 7, 2):
        x = ember.constant(1.1, dtype=ember.float64)
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = f(x, ember.constant(n))
        xt = tensorflow.constant(1.1, dtype=tensorflow.float64)
        with tensorflow.GradientTape() as tape_tf:
            tape_tf.watch(xt)
            yt = g_tf(xt, tensorflow.constant(n))
        expected = tape_tf.gradient(yt, xt)
        got = tape.gradient(y, x)
        np.testing.assert_allclose(0.0 if got is None else got.numpy(),
                                   0.0 if expected is None else expected.numpy(), rtol=1e-9)


def test_while_tape_inside_function():
    def program(tf, x, n):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float64), tf.TensorSpec([], tf.int32)])
        def f(x, n):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.tanh(y * x) + x),
                                         (0, tf.ones([2], tf.float64)))
                    loss = tf.reduce_sum(y * y)
                g = tape.gradient(loss, x)
            return loss, g, outer.gradient(g, x)
        return list(f(tf.constant(x), tf.constant(n)))

    ours, theirs = _both(program, np.array([0.3, -0.6]), 4)
    _close(ours, theirs)


def test_while_captures_tensor_and_variable():
    """A loop-invariant tensor and a variable read in the body get gradients summed over the iterations."""
    def program(tf, x, c, n):
        w = tf.Variable([[0.5, -0.3], [0.2, 0.4]], dtype=tf.float64)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float64), tf.TensorSpec([2], tf.float64),
                                      tf.TensorSpec([], tf.int32)])
        def f(x, c, n):
            def body(i, h):
                return i + 1, tf.tanh(tf.linalg.matvec(w, h) + c * x)
            _, h = tf.while_loop(lambda i, h: i < n, body, (0, x))
            return tf.reduce_sum(h * h)

        x, c = tf.constant(x), tf.constant(c)
        with tf.GradientTape() as outer:
            outer.watch(c)
            with tf.GradientTape() as tape:
                tape.watch([x, c])
                y = f(x, c, tf.constant(n))
            gx, gc, gw = tape.gradient(y, [x, c, w])
        return [y, gx, gc, gw, outer.gradient(gc, c)]

    ours, theirs = _both(program, np.array([0.4, -0.8]), np.array([1.5, 0.7]), 3)
    _close(ours, theirs)


def test_while_variable_second_order():
    def program(tf, n):
        w = tf.Variable(0.9, dtype=tf.float64)

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
        def f(n):
            _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y * w) + w),
                                 (0, tf.constant(0.5, tf.float64)))
            return y

        with tf.GradientTape() as outer:
            with tf.GradientTape() as tape:
                y = f(tf.constant(n))
            g = tape.gradient(y, w)
        return [y, g, outer.gradient(g, w)]

    ours, theirs = _both(program, 4)
    _close(ours, theirs)


def test_cond_in_while():
    def program(tf, x, n):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float64), tf.TensorSpec([], tf.int32)])
        def f(x, n):
            def body(i, y):
                y = tf.cond(i % 2 == 0, lambda: y * x, lambda: tf.sin(y) + x)
                return i + 1, y
            return tf.while_loop(lambda i, y: i < n, body, (0, tf.constant(1.0, tf.float64)))[1]

        x = tf.constant(x, dtype=tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, tf.constant(n))
            g = tape.gradient(y, x)
        return [y, g, outer.gradient(g, x)]

    ours, theirs = _both(program, 1.3, 5)
    _close(ours, theirs)


def test_while_in_while():
    def program(tf, x, n, m):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float64), tf.TensorSpec([], tf.int32),
                                      tf.TensorSpec([], tf.int32)])
        def f(x, n, m):
            def outer_body(i, y):
                _, z = tf.while_loop(lambda j, z: j < m, lambda j, z: (j + 1, tf.sin(z) * x + z * 0.5), (0, y))
                return i + 1, z
            return tf.while_loop(lambda i, y: i < n, outer_body, (0, x))[1]

        x = tf.constant(x, dtype=tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, tf.constant(n), tf.constant(m))
            g = tape.gradient(y, x)
        return [y, g, outer.gradient(g, x)]

    ours, theirs = _both(program, 0.7, 3, 2)
    _close(ours, theirs)
    fd = _finite_difference(lambda v: float(program(ember, float(v), 3, 2)[0]), np.array(0.7))
    np.testing.assert_allclose(ours[1], fd, rtol=1e-6, atol=1e-7)


def test_while_gradient_under_outer_tape_of_function_gradient():
    """The gradient of a function containing a while loop, differentiated again by an outer tape."""
    def program(tf, x, n):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float64), tf.TensorSpec([], tf.int32)])
        def grad_of_loop(x, n):
            with tf.GradientTape() as tape:
                tape.watch(x)
                _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * x + tf.cos(x)),
                                     (0, tf.constant(1.0, tf.float64)))
            return tape.gradient(y, x)

        x = tf.constant(x, dtype=tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            g = grad_of_loop(x, tf.constant(n))
        return [g, outer.gradient(g, x)]

    ours, theirs = _both(program, 0.9, 4)
    _close(ours, theirs)


def test_eager_tape_around_function_float32():
    def program(tf, x, n):
        f = tf.function(lambda x, n: tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * x),
                                                   (0, tf.ones([3])))[1],
                        input_signature=[tf.TensorSpec([3], tf.float32), tf.TensorSpec([], tf.int32)])
        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(f(x, tf.constant(n)))
        return [y, tape.gradient(y, x)]

    ours, theirs = _both(program, np.array([1.0, 0.5, -2.0], np.float32), 3)
    _close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_rnn_over_runtime_length_sequence():
    """The seed's dynamic_rnn_loop: h = tanh(x_t W + h U) over a sequence whose length is known at run time."""
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(6, 2, 3))  # [time, batch, features]
    w0 = rng.normal(size=(3, 4)) * 0.5
    u0 = rng.normal(size=(4, 4)) * 0.5

    def program(tf, xs, length):
        W = tf.Variable(w0)
        U = tf.Variable(u0)

        @tf.function(input_signature=[tf.TensorSpec([None, 2, 3], tf.float64), tf.TensorSpec([], tf.int32)])
        def rnn(xs, length):
            def body(t, h):
                return t + 1, tf.tanh(tf.matmul(xs[t], W) + tf.matmul(h, U))
            _, h = tf.while_loop(lambda t, h: t < length, body, (0, tf.zeros([2, 4], tf.float64)))
            return tf.reduce_sum(h * h)

        xs = tf.constant(xs)
        with tf.GradientTape() as tape:
            tape.watch(xs)
            loss = rnn(xs, tf.constant(length))
        gx, gw, gu = tape.gradient(loss, [xs, W, U])
        return [loss, gx, gw, gu]

    for length in (6, 3):
        ours, theirs = _both(program, xs, length)
        _close(ours, theirs)


def test_shape_changing_intermediate_is_a_clear_error():
    @ember.function(input_signature=[ember.TensorSpec([None], ember.float64), ember.TensorSpec([], ember.int32)])
    def f(x, n):
        _, y = ember.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, ember.concat([y, y * x[:1]], 0)),
                                (0, x), shape_invariants=(ember.TensorShape([]), ember.TensorShape([None])))
        return ember.reduce_sum(y * y)

    x = ember.constant([1.0, 2.0], dtype=ember.float64)
    with ember.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ember.errors.UnimplementedError, match="shape"):
            f(x, ember.constant(3))


# ---- the While kernel's _accumulate attribute (Note [Accumulating While] in src/ember/ops/control_flow.cc)


def _loop_functions(body):
    spec = [ember.TensorSpec([], ember.int32), ember.TensorSpec([2], ember.float32)]
    cond = ember.function(lambda i, x: i < 3).get_concrete_function(*spec)
    body = ember.function(body).get_concrete_function(*spec)
    return cond, body


def test_accumulating_while_stacks_per_iteration_values_and_returns_the_trip_count():
    cond, body = _loop_functions(lambda i, x: (i + 1, x * 2.0, x + 1.0))
    i, x, stack, count = ember._C.op("StatelessWhile")([ember.constant(0), ember.constant([1.0, 2.0])], cond.name,
                                                       body.name, 10, 1)
    assert int(i) == 3 and int(count) == 3
    np.testing.assert_allclose(x.numpy(), [8.0, 16.0])
    np.testing.assert_allclose(stack.numpy(), [[2.0, 3.0], [3.0, 5.0], [5.0, 9.0]])
    # No iteration: an empty stack shaped [0, 2].
    _, _, stack, count = ember._C.op("StatelessWhile")([ember.constant(5), ember.constant([1.0, 2.0])], cond.name,
                                                       body.name, 10, 1)
    assert int(count) == 0 and stack.shape == (0, 2)
    # The default (-1): the body returns the loop variables only, and so does the op.
    cond, body = _loop_functions(lambda i, x: (i + 1, x * 2.0))
    outs = ember._C.op("StatelessWhile")([ember.constant(0), ember.constant([1.0, 2.0])], cond.name, body.name, 10)
    assert len(outs) == 2


def test_accumulating_while_rejects_a_wrong_body_arity():
    cond, body = _loop_functions(lambda i, x: (i + 1, x * 2.0))
    with pytest.raises(ember.errors.InvalidArgumentError, match="accumulated"):
        ember._C.op("StatelessWhile")([ember.constant(0), ember.constant([1.0, 2.0])], cond.name, body.name, 10, 2)


def test_raw_if_executed_eagerly_under_a_tape():
    """The op itself, run eagerly with concrete inputs while a tape records (no ember.function around it)."""
    spec = ember.TensorSpec([2], ember.float64)
    cube = ember.function(lambda x: x * x * x).get_concrete_function(spec)
    sine = ember.function(lambda x: ember.sin(x)).get_concrete_function(spec)
    x = ember.constant([0.5, -1.5], dtype=ember.float64)
    for pred, expected in ((True, 3 * x.numpy() ** 2), (False, np.cos(x.numpy()))):
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = ember._C.op("StatelessIf")(ember.constant(pred), [x], cube.name, sine.name)
            y = y[0] if isinstance(y, (list, tuple)) else y
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-12)


def test_watched_variables_only_and_jacobian_through_while_then_switch_case():
    def program(tf):
        v = tf.Variable([0.5, -1.0], dtype=tf.float64)
        u = tf.Variable(2.0, dtype=tf.float64)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float64), tf.TensorSpec([], tf.int32)])
        def f(x, n):
            _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y * v) + x * u), (0, x))
            return tf.switch_case(n % 3, [lambda: y * v, lambda: y * u, lambda: y])

        x = tf.constant([0.3, 0.9], tf.float64)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(v)
            y = f(x, tf.constant(4))
        assert len(tape.watched_variables()) == 1
        gv, gu = tape.gradient(y, [v, u])
        assert gu is None  # u is read but not watched
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x, tf.constant(4))
        return [gv, tape.jacobian(y, x)]

    ours, theirs = _both(program)
    _close(ours, theirs)


def test_lstm_training_step_with_runtime_length():
    """An LSTM over a while loop, its gradient applied to the variables inside the same function."""
    rng = np.random.default_rng(1)
    T, B, D, H = 7, 3, 4, 5
    xs_np = rng.normal(size=(T, B, D))
    params = [rng.normal(size=(D, 4 * H)) * 0.3, rng.normal(size=(H, 4 * H)) * 0.3, np.zeros(4 * H)]

    def program(tf):
        variables = [tf.Variable(p) for p in params]

        @tf.function(input_signature=[tf.TensorSpec([None, B, D], tf.float64)])
        def train_step(xs):
            w, u, b = variables
            with tf.GradientTape() as tape:
                def body(t, h, c):
                    z = tf.matmul(xs[t], w) + tf.matmul(h, u) + b
                    i, f, g, o = tf.split(z, 4, axis=1)
                    c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                    return t + 1, tf.sigmoid(o) * tf.tanh(c), c
                _, h, _ = tf.while_loop(lambda t, h, c: t < tf.shape(xs)[0], body,
                                        (0, tf.zeros([B, H], tf.float64), tf.zeros([B, H], tf.float64)))
                loss = tf.reduce_mean(h)
            grads = tape.gradient(loss, variables)
            for var, grad in zip(variables, grads):
                var.assign_sub(0.1 * grad)
            return loss

        xs = tf.constant(xs_np)
        losses = [train_step(xs) for _ in range(3)] + [train_step(xs[:4])]
        return losses + [v.read_value() for v in variables]

    ours, theirs = _both(program)
    _close(ours, theirs)


def test_a_sequence_the_loop_only_indexes_gets_no_gradient_unless_watched():
    # Note [Loop variables that need gradients]: the RNN's input is a loop variable the body passes
    # through; its gradient (a full-size tensor per step) is summed only when the tape watches it.
    import ember as em

    w = em.Variable(np.full((3, 3), 0.1, np.float32))

    @em.function
    def loss_and_grads(xs, watch_xs):
        with em.GradientTape() as tape:
            if watch_xs:
                tape.watch(xs)
            h = em.while_loop(lambda t, h: t < em.shape(xs)[0],
                              lambda t, h: (t + 1, em.tanh(em.matmul(xs[t], w) + h)),
                              (0, em.zeros([2, 3])))[1]
            loss = em.reduce_sum(h)
        return tape.gradient(loss, [w, xs])

    xs = em.constant(np.random.default_rng(0).standard_normal((6, 2, 3)).astype(np.float32))
    for watch in (False, True):
        with em.profiler.profile() as metadata:
            gw, gxs = loss_and_grads(xs, watch)
        ops = {e["op"] for e in metadata.events if e["kind"] == "node"}
        assert ("StridedSliceGrad" in ops) == watch
        assert (gxs is not None) == watch
        assert gw.shape == (3, 3)


# ---- what the forward loop keeps for the backward one (Notes [Variables read in a differentiated loop],
# [Stacking in place] and [Reading a stack in the backward loop])


def _rnn_over_variable(tf, w_init, write_inside=False):
    w = tf.Variable(w_init)

    @tf.function(input_signature=[tf.TensorSpec([None, 2, w_init.shape[0]], tf.float64)])
    def loss_and_grad(xs):
        with tf.GradientTape() as tape:
            def body(t, h):
                if write_inside:
                    w.assign_add(tf.fill(w.shape, tf.constant(0.01, tf.float64)))
                return t + 1, tf.tanh(tf.matmul(xs[t] + h, w))
            h = tf.while_loop(lambda t, h: t < tf.shape(xs)[0], body, (0, tf.zeros([2, w_init.shape[0]], tf.float64)))[1]
            loss = tf.reduce_sum(h * h)
        return loss, tape.gradient(loss, w)

    return w, loss_and_grad


def test_a_variable_the_loop_only_reads_is_read_once_not_stacked():
    rng = np.random.default_rng(3)
    w_init = rng.normal(size=(16, 16)) * 0.3
    xs = rng.normal(size=(20, 2, 16))
    _, f = _rnn_over_variable(ember, w_init)
    # The loops as autodiff builds them: the optimizer's loop pass stacks more (the backward loop sums
    # (xs[t] + h)^T @ dz after the loop from stacks of both, Note [Products summed over a loop]).
    saved = ember.config.optimizer.get_experimental_options()
    ember.config.optimizer.set_experimental_options({"loop_optimization": False})
    try:
        with ember.profiler.profile() as metadata:
            loss, grad = f(ember.constant(xs))
    finally:
        ember.config.optimizer.set_experimental_options(saved)
    # Stacking the read would keep 20 copies of w (2 KiB each) in the forward loop's outputs and again in the
    # backward loop's (which passes the stacks through); without them the loops' outputs hold h-sized
    # values and the sequence, about 32 KiB in all.
    loop_bytes = sum(e["bytes"] for e in metadata.events if e["kind"] == "node" and e["op"] == "While")
    assert loop_bytes < 20 * w_init.nbytes, loop_bytes
    _, f_tf = _rnn_over_variable(tensorflow, w_init)
    _close(_np([loss, grad]), _np(list(f_tf(tensorflow.constant(xs)))))

    def loss_at(w):
        _, g = _rnn_over_variable(ember, w)
        return float(g(ember.constant(xs))[0])

    fd = _finite_difference(loss_at, w_init, eps=1e-6)
    np.testing.assert_allclose(_np(grad), fd, rtol=1e-5, atol=1e-6)


def test_a_variable_the_loop_writes_is_read_in_every_iteration():
    # Reading it once before the loop would see the value before the first write.
    rng = np.random.default_rng(4)
    w_init = rng.normal(size=(3, 3)) * 0.3
    xs = rng.normal(size=(5, 2, 3))
    w, f = _rnn_over_variable(ember, w_init, write_inside=True)
    w_tf, f_tf = _rnn_over_variable(tensorflow, w_init, write_inside=True)
    for _ in range(2):
        _close(_np(list(f(ember.constant(xs)))), _np(list(f_tf(tensorflow.constant(xs)))))
    _close(_np(w), _np(w_tf))


def test_a_second_backward_pass_reads_the_stacks_intact():
    # The backward loop reads iteration t's values as views of the forward loop's stacks; the element-wise
    # ops of the backward function must not write over them in place, or the second pass (which runs the
    # function's backward again on the same saved stacks) would differ from the first.
    def program(tf):
        xs = tf.constant(np.linspace(-1.0, 1.0, 24).reshape(6, 4))
        w = tf.constant(np.linspace(0.5, -0.5, 16).reshape(4, 4))

        @tf.function
        def run(xs, w):
            def body(t, h):
                # sigmoid(xs[t]) is stacked, and the backward's product with it (dh * sigmoid(xs[t])) is the
                # last reader of the view: without the buffer check the product would be written over it.
                return t + 1, h * tf.sigmoid(xs[t])

            h0 = tf.linalg.matvec(w, tf.ones([4], tf.float64))
            h = tf.while_loop(lambda t, h: t < 6, body, (0, h0))[1]
            return tf.reduce_sum(h * h)

        with tf.GradientTape(persistent=True) as tape:
            tape.watch([xs, w])
            loss = run(xs, w)
        first = tape.gradient(loss, [xs, w])
        second = tape.gradient(loss, [xs, w])
        return first + second

    ours, theirs = _both(program)
    _close(ours, theirs)
    _close(ours[:2], ours[2:], rtol=0, atol=0)


def test_stacks_across_changing_trip_counts():
    # The stacks start at the last call's trip count and grow by doubling; one that ends with spare rows is
    # returned as a view of its first rows. Every count, up and down and zero, gives TensorFlow's gradient.
    rng = np.random.default_rng(5)
    w_init = rng.normal(size=(4, 4)) * 0.4
    xs = rng.normal(size=(70, 2, 4))
    _, f = _rnn_over_variable(ember, w_init)
    _, f_tf = _rnn_over_variable(tensorflow, w_init)
    for n in (3, 70, 5, 0, 37, 37, 9):
        _close(_np(list(f(ember.constant(xs[:n])))), _np(list(f_tf(tensorflow.constant(xs[:n])))))


def test_accumulating_while_stacks_over_many_iterations():
    spec = [ember.TensorSpec([], ember.int32), ember.TensorSpec([2], ember.float32)]
    cond = ember.function(lambda i, x: i < 37).get_concrete_function(*spec)
    body = ember.function(lambda i, x: (i + 1, x + 1.0, x * 2.0)).get_concrete_function(*spec)
    for start in (0, 32, 0):  # 37 rows (doubling from the hint), then 5 in a 37-row stack, then 37 again
        _, _, stack, count = ember._C.op("StatelessWhile")([ember.constant(start), ember.constant([1.0, 2.0])],
                                                           cond.name, body.name, 10, 1)
        rows = np.arange(37 - start, dtype=np.float32)[:, None] + np.array([1.0, 2.0], np.float32)
        assert int(count) == 37 - start and stack.shape == (37 - start, 2)
        np.testing.assert_allclose(stack.numpy(), rows * 2.0)


def _entering_stack_loop(n, body_fn, specs):
    """The loop's condition and body as concrete functions: the caller keeps them alive while the While
    names them, since a function's library entry goes with its last Python reference."""
    cond = ember.function(lambda i, *rest: i < n).get_concrete_function(*specs)
    body = ember.function(body_fn).get_concrete_function(*specs)
    return cond, body


def test_a_loop_variable_stacked_as_it_enters_is_written_into_its_stack_row():
    # The body stacks x as it enters (as a gradient's forward loop stacks an RNN's h[t-1]) and returns the
    # previous x as a second loop variable. From the second call (the stacks sized by the last trip count)
    # the new x is written straight into the next stack row: only rows 0 and 1 are copied, whose values
    # enter from outside the loop and from the first iteration (Note [Stacking in place]).
    n = 37
    specs = [ember.TensorSpec([], ember.int32), ember.TensorSpec([64], ember.float32),
             ember.TensorSpec([64], ember.float32)]
    cond, body = _entering_stack_loop(n, lambda i, x, prev: (i + 1, x * 0.5 + 1.0, x, x), specs)
    x0 = np.linspace(-1.0, 1.0, 64).astype(np.float32)
    expected = [x0]
    for _ in range(n):
        expected.append(expected[-1] * np.float32(0.5) + np.float32(1.0))
    for call in range(3):
        before = ember._C.while_stack_bytes_copied()
        _, x, prev, stack, count = ember._C.op("StatelessWhile")(
            [ember.constant(0), ember.constant(x0), ember.constant(np.zeros(64, np.float32))], cond.name, body.name,
            10, 1)
        copied = ember._C.while_stack_bytes_copied() - before
        assert int(count) == n and stack.shape == (n, 64)
        np.testing.assert_array_equal(stack.numpy(), np.stack(expected[:n]))
        np.testing.assert_array_equal(x.numpy(), expected[n])
        np.testing.assert_array_equal(prev.numpy(), expected[n - 1])
        if call > 0:
            assert copied == 2 * 64 * 4, copied


def test_loop_variables_entering_as_one_tensor_are_stacked_apart():
    # a and b enter the first iteration as the same tensor, so which of them the stacked value is shows only
    # from the second iteration on; the stack must hold a's values, never b's.
    n = 9
    specs = [ember.TensorSpec([], ember.int32), ember.TensorSpec([16], ember.float32),
             ember.TensorSpec([16], ember.float32)]
    cond, body = _entering_stack_loop(n, lambda i, a, b: (i + 1, a * 2.0, b + 1.0, a), specs)
    start = ember.constant(np.arange(16, dtype=np.float32))
    for _ in range(2):
        _, a, b, stack, count = ember._C.op("StatelessWhile")([ember.constant(0), start, start], cond.name,
                                                              body.name, 10, 1)
        rows = np.arange(16, dtype=np.float32)[None, :] * (2.0 ** np.arange(n, dtype=np.float32))[:, None]
        np.testing.assert_array_equal(stack.numpy(), rows)
        np.testing.assert_array_equal(a.numpy(), np.arange(16, dtype=np.float32) * 2.0 ** n)
        np.testing.assert_array_equal(b.numpy(), np.arange(16, dtype=np.float32) + n)


def test_while_gradient_loop_variable_changing_shape_through_broadcast_to():
    """A loop variable of shape [1] broadcast to [3] in the first iteration: BroadcastTo's gradient reads only
    its input's shape, so the forward loop stacks that shape per iteration; stacking the input itself failed
    (a [1] then a [3] cannot be stacked)."""
    def program(tf, x0, w, n):
        @tf.function(input_signature=[tf.TensorSpec([None], F64), tf.TensorSpec([3], F64),
                                      tf.TensorSpec([], tf.int32)])
        def f(x0, w, n):
            with tf.GradientTape() as tape:
                tape.watch([x0, w])
                _, x = tf.while_loop(lambda i, x: i < n,
                                     lambda i, x: (i + 1, tf.broadcast_to(x, [3]) * w + x),
                                     (tf.constant(0), x0), shape_invariants=(tf.TensorShape([]),
                                                                             tf.TensorShape([None])))
                y = tf.reduce_sum(x * x)
            return [y] + tape.gradient(y, [x0, w])
        return f(tf.constant(x0), tf.constant(w), tf.constant(n))

    x0, w = np.array([0.7]), np.array([0.5, -1.25, 2.0])
    for n in (1, 3):
        ours, theirs = _both(program, x0, w, n)
        _close(ours, theirs)
    # Finite differences of the scalar start value, float64.
    fd = _finite_difference(lambda v: program(ember, v, w, 3)[0].numpy(), x0)
    _close(_np(program(ember, x0, w, 3)[1]), fd, rtol=1e-5, atol=1e-6)


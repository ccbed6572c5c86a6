"""tf.gradients and tf.hessians inside functions (symbolic gradients of already traced values), against
TensorFlow: several ys and xs, variables, grad_ys, stop_gradients, unconnected and integer tensors, control
flow, second order, and the errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

X = np.array([1.0, 2.0], np.float32)
V = np.array([0.5, -1.5], np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def same_as_tensorflow(body, *args):
    """Traces ``body(lib, variable, *args)`` as a function with ember and TensorFlow; compares the lists."""
    def run(lib):
        v = lib.Variable(V)
        return lib.function(lambda *a: body(lib, v, *a))(*[lib.constant(a) for a in args])

    got, want = run(em), run(tf)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if b is None:
            assert a is None
        else:
            close(a, b)
            assert a.shape == b.shape


def test_single_and_several_ys_and_xs_with_a_variable():
    def body(lib, v, x):
        y = x * x
        a = lib.reduce_sum(lib.tanh(y) * v)
        return lib.gradients(a, x) + lib.gradients([a, y], [x, v])

    same_as_tensorflow(body, X)


def test_grad_ys_and_unconnected_gradients():
    def body(lib, v, x):
        y = lib.exp(x) * 3.0
        c = lib.constant(3.0)
        return (lib.gradients(y, x, grad_ys=lib.constant([2.0, -1.0])) + lib.gradients(y, [c])
                + lib.gradients(y, [x, c], unconnected_gradients="zero"))

    same_as_tensorflow(body, X)


def test_stop_gradients_and_integer_tensors():
    def body(lib, v, x):
        y = x * x
        a = lib.reduce_sum(y * x)
        i = lib.cast(x, lib.int32)
        b = lib.reduce_sum(x * lib.cast(i, lib.float32))
        return lib.gradients(a, x, stop_gradients=[y]) + lib.gradients(b, [x, i])

    same_as_tensorflow(body, X)


def test_gradient_of_a_gradient_and_through_matmul_and_softmax():
    def body(lib, v, x):
        m = lib.reshape(lib.concat([x, v], 0), [2, 2])
        loss = lib.reduce_sum(lib.nn.softmax(lib.matmul(m, m)) * lib.sin(m))
        (g,) = lib.gradients(loss, x)
        return [g] + lib.gradients(lib.reduce_sum(g * g), x)

    same_as_tensorflow(body, X)


def test_through_control_flow():
    def body(lib, v, x):
        y = lib.cond(lib.reduce_sum(x) > 0, lambda: x * x, lambda: -x)
        z = lib.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * x), [lib.constant(0), lib.ones_like(x)])[1]
        return lib.gradients(lib.reduce_sum(y + z), x)

    same_as_tensorflow(body, X)


def test_hessians():
    def body(lib, v, x):
        y = lib.reduce_sum(x ** 3 * v.read_value())
        m = lib.reshape(lib.concat([x, x * 2.0], 0), [2, 2])
        return lib.hessians(y, x) + lib.hessians(lib.reduce_sum(lib.exp(m)), [m])

    same_as_tensorflow(body, X)


def test_eager_call_is_refused_as_tensorflow_refuses_it():
    for lib in (em, tf):
        with pytest.raises(RuntimeError, match="tf.gradients is not supported when eager execution is enabled"):
            lib.gradients(lib.constant(1.0), lib.constant(1.0))


def test_grad_ys_length_mismatch_matches_tensorflow():
    for lib in (em, tf):
        @lib.function
        def f(x):
            return lib.gradients(x, x, grad_ys=[x, x])

        with pytest.raises(ValueError, match="Length mismatch. Passed 2 grad_ys for 1 ys"):
            f(lib.constant(X))


def test_hessians_of_an_unconnected_x_fail_as_in_tensorflow():
    for lib in (em, tf):
        @lib.function
        def f(x):
            return lib.hessians(lib.reduce_sum(x), [lib.constant(2.0)])

        with pytest.raises(ValueError, match="None values not supported"):
            f(lib.constant(X))


def test_through_a_nested_function_without_effects():
    def body(lib, v, x):
        inner = lib.function(lambda a: lib.sin(a) * a)
        return lib.gradients(lib.reduce_sum(inner(x) * v), [x, v])

    same_as_tensorflow(body, X)


def test_nodes_off_the_path_may_be_stateful():
    def body(lib, v, x):
        v.assign(x * 2.0)
        noise = lib.random.uniform(lib.shape(x))
        return lib.gradients(lib.reduce_sum(v.read_value() * x + noise * 0.0), x)

    same_as_tensorflow(body, X)


def test_stateful_nodes_on_the_path_differentiate_where_they_stand():
    # A read after an assignment sees the new value; a py_function and tf.print pass gradients through; a
    # random op on the path has no gradient (None), as in TensorFlow.
    def body(lib, v, x):
        v.assign(x * 2.0)
        y = v.read_value() * x
        p = lib.py_function(lambda a: a * a * a, [x], lib.float32)
        lib.print(p)
        d = lib.nn.dropout(x, rate=0.0)
        return (lib.gradients(y, [x, v]) + lib.gradients(lib.reduce_sum(p * d), x)
                + lib.gradients(lib.random.shuffle(x * 2.0), x))

    same_as_tensorflow(body, X)


def test_custom_gradients_use_their_grad_fn():
    def body(lib, v, x):
        @lib.custom_gradient
        def scaled(t):
            return t * t, lambda dy: dy * 10.0

        @lib.custom_gradient
        def with_variable(t):
            def grad(dy, variables=None):
                return dy * 7.0, [dy * 5.0]
            return t * v, grad

        y = scaled(x * 2.0) * 3.0
        z = with_variable(x)
        return lib.gradients(y, x) + lib.gradients(z, [x, v]) + lib.gradients(y * z, [x, v])

    same_as_tensorflow(body, X)


def test_custom_gradient_reading_variables_needs_a_variables_argument_as_in_tensorflow():
    for lib in (em, tf):
        v = lib.Variable(V)

        @lib.function
        def f(x):
            @lib.custom_gradient
            def g(t):
                return t * v, lambda dy: dy
            return g(x)

        with pytest.raises(TypeError, match="variables"):
            f(lib.constant(X))


def test_calls_with_effects_run_once_and_differentiate():
    def run(lib):
        counter = lib.Variable(1.0)

        @lib.function
        def bump(a):
            counter.assign_add(1.0)
            return a * counter

        @lib.function
        def f(x):
            y = bump(x * 2.0)
            inner = lib.function(lambda a: lib.reduce_sum(a * a * a * counter))
            return lib.gradients(y, x) + lib.gradients(y, counter) + lib.hessians(inner(x), x)

        return list(f(lib.constant(X))) + [counter.read_value()]

    got, want = run(em), run(tf)
    assert len(got) == len(want) == 4
    for a, b in zip(got, want):
        close(a, b)


def test_conditionals_with_effects_run_once_and_differentiate():
    def run(lib):
        counter = lib.Variable(1.0)

        @lib.function
        def f(x):
            def bump():
                counter.assign_add(1.0)
                return x * counter

            y = lib.cond(lib.reduce_sum(x) > 0, bump, lambda: x)
            z = lib.switch_case(lib.constant(1), [lambda: y * 2.0, lambda: (counter.assign_add(1.0), y * y)[1]])
            return lib.gradients(y, [x, counter]) + lib.gradients(z, x) + lib.gradients(z, [x, counter])

        return list(f(lib.constant(X))) + [counter.read_value()]

    got, want = run(em), run(tf)
    assert len(got) == len(want) == 6
    for a, b in zip(got, want):
        close(a, b)


def compare_lists(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        close(a, b, 1e-4)


def test_loops_with_effects_in_body_or_condition_run_once_and_differentiate():
    def run(lib):
        counter, checks = lib.Variable(1.0), lib.Variable(0.0)

        @lib.function
        def f(x):
            def body(i, a):
                counter.assign_add(1.0)
                return i + 1, a * counter

            def cond(i, a):
                checks.assign_add(1.0)
                return i < 3

            _, y = lib.while_loop(cond, body, [lib.constant(0), x])
            return lib.gradients(y, [x, counter]) + [y]

        return list(f(lib.constant(X))) + [counter.read_value(), checks.read_value()]

    got, want = run(em), run(tf)
    compare_lists(got, want)
    assert got[-2] == 4.0 and got[-1] == 4.0  # three iterations, four tests of the condition


def test_loop_with_effects_gradient_matches_finite_differences():
    counter = em.Variable(1.0)

    @em.function
    def loop(x):
        def body(i, a):
            counter.assign_add(0.25)
            return i + 1, em.sin(a) * a + 0.1 * a * a

        return em.reduce_sum(em.while_loop(lambda i, a: i < 3, body, [em.constant(0), x])[1])

    @em.function
    def grad(x):
        return em.gradients(loop.python_function(x), x)[0]

    x = np.array([0.3, -0.7], np.float64)
    g = grad(em.constant(x)).numpy()
    assert counter.numpy() == 1.75  # one run of three iterations
    eps = 1e-6
    for k in range(2):
        step = np.zeros(2)
        step[k] = eps
        numeric = (loop(em.constant(x + step)).numpy() - loop(em.constant(x - step)).numpy()) / (2 * eps)
        np.testing.assert_allclose(g[k], numeric, rtol=1e-6)


def test_repeated_gradients_and_hessians_through_one_loop_with_effects():
    # Each tf.gradients rewrites the same loop again; the earlier gradients keep reading its trip count.
    def run(lib):
        counter = lib.Variable(1.0)

        @lib.function
        def f(x):
            def body(i, a):
                counter.assign_add(0.5)
                return i + 1, lib.sin(a) * counter

            _, y = lib.while_loop(lambda i, a: i < 3, body, [lib.constant(0), x])
            g1 = lib.gradients(y, x)
            g2 = lib.gradients(lib.reduce_sum(y * y), [x, counter])
            return g1 + g2 + lib.hessians(lib.reduce_sum(y), x) + [y]

        return list(f(lib.constant(np.array([0.5, 1.2], np.float32)))) + [counter.read_value()]

    compare_lists(run(em), run(tf))


def test_nested_loops_and_a_loop_in_a_called_function_with_effects():
    def run(lib):
        inner_steps, called_steps = lib.Variable(0.0), lib.Variable(0.0)

        @lib.function
        def nested(x):
            def outer(i, a):
                def inner(j, b):
                    inner_steps.assign_add(1.0)
                    return j + 1, b * 1.5 + lib.sin(b)

                _, a = lib.while_loop(lambda j, b: j < 2, inner, [lib.constant(0), a])
                return i + 1, a * a

            _, y = lib.while_loop(lambda i, a: i < 2, outer, [lib.constant(0), x])
            return lib.gradients(lib.reduce_sum(y), x)

        @lib.function
        def callee(x):
            def body(i, a):
                called_steps.assign_add(1.0)
                return i + 1, lib.tanh(a) * 2.0

            return lib.while_loop(lambda i, a: i < 3, body, [lib.constant(0), x])[1]

        @lib.function
        def caller(x):
            y = callee(x)
            return lib.gradients(y, x) + lib.gradients(y * y, x)

        got = list(nested(lib.constant(X * 0.3))) + list(caller(lib.constant(X)))
        return got + [inner_steps.read_value(), called_steps.read_value()]

    got, want = run(em), run(tf)
    compare_lists(got, want)
    assert got[-2] == 4.0 and got[-1] == 3.0


def test_a_printing_loop_prints_once_and_an_enclosing_tape_differentiates_its_gradient(capfd):
    def run(lib):
        @lib.function
        def f(x):
            def body(i, a):
                lib.print("step", i)
                return i + 1, a * a

            _, y = lib.while_loop(lambda i, a: i < 2, body, [lib.constant(0), x])
            return lib.gradients(y, x)[0]

        x = lib.constant(X)
        with lib.GradientTape() as tape:
            tape.watch(x)
            g = f(x)
            s = lib.reduce_sum(g)
        return [g, tape.gradient(s, x)]

    got = run(em)
    printed = capfd.readouterr().err
    assert printed.count("step 0") == 1 and printed.count("step 1") == 1
    compare_lists(got, run(tf))


def test_unknown_dimensions_and_an_enclosing_tape():
    def run(lib):
        spec = [lib.TensorSpec([None], lib.float32)]
        grad = lib.function(lambda a: lib.gradients(lib.reduce_sum(lib.sin(a) * a ** 3), a)[0],
                            input_signature=spec)
        x = lib.constant(X)
        with lib.GradientTape() as tape:
            tape.watch(x)
            g = grad(x)
            s = lib.reduce_sum(g * g)
        return g, tape.gradient(s, x)

    for a, b in zip(run(em), run(tf)):
        close(a, b, 1e-4)


def test_constants_made_inside_the_function_as_sources_and_targets():
    # Ops on constants run while tracing (folding); TensorFlow's graph keeps them, so the gradient flows
    # from a folded target back to the constant it came from, through folded and traced ops alike.
    def body(lib, v, x):
        c = lib.constant(2.0)
        d = lib.constant([1.0, -3.0])
        folded = c * 3.0 + lib.sin(c)
        mixed = lib.reduce_sum(x * (d * c))
        stopped = c * c
        return (lib.gradients(folded, c) + lib.gradients(mixed, [c, d]) + lib.gradients(c * 5.0, [c])
                + lib.gradients(stopped * x, c, stop_gradients=[stopped])
                + lib.gradients(lib.constant(1.0) * 2.0, c, unconnected_gradients="zero"))

    same_as_tensorflow(body, X)




def test_constant_source_read_inside_a_loop_body():
    """A loop body reading a constant of the function takes it as an input of the While (Note [Folded values of
    concrete arguments]), so its gradient through the loop is TensorFlow's (32), not partial."""
    def body(tf, v):
        c = tf.constant(2.0)
        start = c * 1.0
        y = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * c), (0, start))[1]
        return tf.gradients(y, c)

    same_as_tensorflow(body)


def test_sources_folded_from_other_sources_and_stopped_sources():
    # A source computed from another (d = c * 3.0, both folded while tracing) passes the other's gradient
    # on, as TensorFlow's unfolded graph does; a source named in stop_gradients keeps its own gradient.
    def body(lib, v, x):
        c = lib.constant([2.0, 1.0])
        d = c * 3.0
        e = d * d
        y = x * 2.0
        loss = lib.reduce_sum(e * x + d)
        return (lib.gradients(loss, [d, c]) + lib.gradients(loss, [c, d, e])
                + lib.gradients(lib.reduce_sum(e * x), [c, d], stop_gradients=[d])
                + lib.gradients(lib.reduce_sum(c * x), [c], stop_gradients=[c])
                + lib.gradients(y * y, [x, y], stop_gradients=[y])
                + lib.gradients(lib.gradients(lib.reduce_sum(e), [d, c])[1], c))

    same_as_tensorflow(body, X)


def test_a_long_chain_of_folded_constants():
    # Each op on constants folds while tracing; the replay walks the chain without recursing (a Python loop
    # of 20000 ops overflowed the thread's stack: a segfault).
    @em.function
    def f():
        c0 = em.constant(1.0, em.float64)
        c = c0
        for _ in range(20000):
            c = c * 1.0001
        return em.gradients(c, c0)[0]

    close(f(), 1.0001 ** 20000, 1e-6)

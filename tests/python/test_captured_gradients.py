"""Gradients with respect to tensors whose values are concrete while a function traces: eager tensors a
function captures, and constants made inside the function, read directly, through values folded from them,
or inside branches and loop bodies (Note [Folded values of concrete arguments] in
src/ember/trace/trace_context.cc).

Each program is written once against a module ``tf`` and run with ember and with TensorFlow; every value must
agree within 1e-5, and where TensorFlow gives a gradient ember must give one (not None).
"""

import numpy as np
import pytest
import tensorflow  # the reference: the test command installs it, so this never skips

import ember



def _np(v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [_np(x) for x in v]
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def _same(program):
    ours, theirs = _np(program(ember)), _np(program(tensorflow))
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if b is None:
            assert a is None, f"value {k}: ember gave {a} where TensorFlow gave None"
            continue
        assert a is not None, f"value {k}: ember gave None where TensorFlow gave {b}"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"value {k}")


# ---- an eager tape watching a tensor the function captures


def _eager_tape(body, trace_first=False, calls=1):
    """program(tf): x captured by tf.function f(a) = body(tf, a, x); gradients of f(a) w.r.t. [x, a] from an
    eager tape, `calls` times (the second call reuses the traced function and its gradient pair)."""
    def program(tf):
        x = tf.constant([3.0, -1.5])
        f = tf.function(lambda a: body(tf, a, x))
        if trace_first:
            f(tf.constant(2.0))
        out = []
        for _ in range(calls):
            with tf.GradientTape(persistent=True) as t:
                a = tf.constant(2.0)
                t.watch([x, a])
                y = f(a)
            out += [y] + t.gradient(y, [x, a])
        return out
    return program


EAGER_BODIES = {
    "mul": lambda tf, a, x: tf.reduce_sum(a * x),
    "folded": lambda tf, a, x: tf.reduce_sum(x * x) + a,
    "folded_chain": lambda tf, a, x: a * tf.reduce_sum(tf.sin(x * 2.0) * x),
    "cond": lambda tf, a, x: tf.cond(a > 0, lambda: tf.reduce_sum(a * x), lambda: a),
    "cond_folded_in_branch": lambda tf, a, x: tf.cond(a > 0, lambda: a * tf.reduce_sum(x * x), lambda: a),
    "case": lambda tf, a, x: tf.case([(a > 5, lambda: a), (a > 0, lambda: tf.reduce_sum(x) * a)],
                                     default=lambda: a * 2.0),
    "switch_case": lambda tf, a, x: tf.switch_case(tf.cast(a, tf.int32), [lambda: a, lambda: a * 3.0,
                                                                          lambda: tf.reduce_sum(x * x * a)]),
    "while": lambda tf, a, x: tf.reduce_sum(tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                                          [0, tf.ones([2]) * a])[1]),
    "map_fn": lambda tf, a, x: tf.reduce_sum(tf.map_fn(lambda r: r * x * a, tf.reshape(tf.range(4.0), [2, 2]))),
    "scan": lambda tf, a, x: tf.reduce_sum(tf.scan(lambda acc, r: acc * x + r * a, tf.ones([3, 2]))),
}


@pytest.mark.parametrize("name", sorted(EAGER_BODIES))
@pytest.mark.parametrize("trace_first", [False, True], ids=["traced_under_tape", "traced_before"])
def test_eager_tape_through_a_captured_tensor(name, trace_first):
    _same(_eager_tape(EAGER_BODIES[name], trace_first=trace_first, calls=2))


def test_eager_second_order_through_a_captured_tensor():
    def program(tf):
        x = tf.constant(1.5)
        f = tf.function(lambda a: a * tf.cond(a > 0, lambda: x * x * x, lambda: x))
        f2 = tf.function(lambda: x * x * x)
        out = []
        for g in (lambda: f(tf.constant(2.0)), f2):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = g()
                dx = inner.gradient(y, x)
            out += [dx, outer.gradient(dx, x)]
        return out
    _same(program)


def test_eager_tape_not_watching_the_capture_gets_none():
    def program(tf):
        x = tf.constant(3.0)
        f = tf.function(lambda a: a * x * x)
        with tf.GradientTape(persistent=True) as t:
            a = tf.constant(2.0)
            t.watch(a)
            y = f(a)
        return t.gradient(y, [x, a])
    _same(program)


# ---- a tape inside the function watching a constant made there


def _traced_tape(body, order=1):
    def program(tf):
        @tf.function
        def f():
            c = tf.constant(1.5)
            with tf.GradientTape() as outer:
                outer.watch(c)
                with tf.GradientTape() as t:
                    t.watch(c)
                    y = body(tf, c)
                g = t.gradient(y, c)
            return [y, g] + ([outer.gradient(g, c)] if order == 2 else [])
        return f()
    return program


TRACED_BODIES = {
    "cond": lambda tf, c: tf.cond(c > 0, lambda: c * c, lambda: c),
    "cond_of_folded": lambda tf, c: (lambda d: tf.cond(c > 0, lambda: d * c, lambda: d))(c * 2.0),
    "while": lambda tf, c: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * c), [0, 1.0])[1],
    "while_two_constants": lambda tf, c: (lambda d: tf.while_loop(
        lambda i, a: i < 3, lambda i, a: (i + 1, a * c + d), [0, 1.0])[1])(tf.sin(c)),
    "case": lambda tf, c: tf.case([(c > 5, lambda: c), (c > 0, lambda: c * c * c)], default=lambda: c),
    "switch_case": lambda tf, c: tf.switch_case(tf.constant(1), [lambda: c, lambda: tf.exp(c) * c]),
    "map_fn": lambda tf, c: tf.reduce_sum(tf.map_fn(lambda r: r * c * c, tf.constant([1.0, -2.0, 3.0]))),
    "scan": lambda tf, c: tf.reduce_sum(tf.scan(lambda acc, r: acc * c + r, tf.constant([1.0, 2.0, 3.0]))),
    "nested": lambda tf, c: tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, tf.cond(
        a > 0, lambda: a * c, lambda: a - c)), [0, c])[1],
}


@pytest.mark.parametrize("name", sorted(TRACED_BODIES))
@pytest.mark.parametrize("order", [1, 2])
def test_tape_inside_a_function_watching_a_constant(name, order):
    _same(_traced_tape(TRACED_BODIES[name], order))


def test_tape_inside_a_function_watching_a_captured_tensor():
    def program(tf):
        x = tf.constant(3.0)

        @tf.function
        def f(a):
            with tf.GradientTape() as t:
                t.watch(x)
                y = tf.cond(a > 0, lambda: a * x * x, lambda: a) + tf.while_loop(
                    lambda i, v: i < 2, lambda i, v: (i + 1, v * x), [0, a])[1]
            return [y, t.gradient(y, x)]
        return f(tf.constant(2.0)) + f(tf.constant(-1.0))
    _same(program)


# ---- tf.gradients inside the function


TF_GRADIENTS_BODIES = {
    "cond": lambda tf, c, d: tf.cond(c > 0, lambda: c * c * d, lambda: c),
    "while_two_constants": lambda tf, c, d: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * c * c + d),
                                                          [0, 1.0])[1],
    "while_from_folded_start": lambda tf, c, d: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * c),
                                                              (0, c * 1.0))[1],
    "case": lambda tf, c, d: tf.switch_case(tf.constant(2), [lambda: c, lambda: d, lambda: c * c * d]),
    "map_fn": lambda tf, c, d: tf.reduce_sum(tf.map_fn(lambda r: r * c * c + d, tf.constant([1.0, 2.0]))),
    "scan": lambda tf, c, d: tf.reduce_sum(tf.scan(lambda acc, r: acc * c + d * r, tf.constant([1.0, 2.0]))),
}


@pytest.mark.parametrize("name", sorted(TF_GRADIENTS_BODIES))
def test_tf_gradients_inside_a_function(name):
    body = TF_GRADIENTS_BODIES[name]

    def program(tf):
        x = tf.constant(0.5)

        @tf.function
        def f():
            c = tf.constant(2.0)
            d = tf.constant(-1.0) * 1.5
            y = body(tf, c, d) * x
            g = tf.gradients(y, [c, d, x])
            return [y] + g + tf.gradients(g[0], [c])
        return f()
    _same(program)


# ---- nested ember.functions read such values by value


def test_tape_inside_a_function_through_a_nested_function():
    def program(tf):
        @tf.function
        def f():
            c = tf.constant(1.5)
            inner = tf.function(lambda a: a * c * c)
            with tf.GradientTape() as t:
                t.watch(c)
                y = inner(tf.constant(2.0))
            return [y, t.gradient(y, c)]
        return f()
    _same(program)


def test_nested_function_reading_a_captured_tensor_or_a_constant():
    """A function traced inside another takes the floating values it reads from outside as call inputs, as a
    branch does, so eager tapes and tf.gradients see the edge."""
    def program(tf):
        x = tf.constant(3.0)
        inner = tf.function(lambda a: a * x * x)
        outer = tf.function(lambda a: inner(a) + tf.cond(a > 0, lambda: inner(a * x), lambda: a))
        with tf.GradientTape(persistent=True) as t:
            a = tf.constant(2.0)
            t.watch([x, a])
            y = outer(a)
        out = [y] + t.gradient(y, [x, a])

        @tf.function
        def f():
            c = tf.constant(3.0)
            y = tf.function(lambda: c * c * 2.0)()
            return [y] + tf.gradients(y, c)
        return out + f()
    _same(program)


def test_a_concrete_function_traced_outside_reading_a_watched_tensor_is_refused():
    """A concrete function traced eagerly captures x by value; called inside another function, no edge of that
    call carries x's gradient (TensorFlow gives 12.0 here): a clear error, not None or a partial gradient."""
    x = ember.constant(3.0)
    inner = ember.function(lambda a: a * x * x).get_concrete_function(ember.TensorSpec([], ember.float32))
    outer = ember.function(lambda a: inner(a) + 1.0)
    with pytest.raises(ember.errors.UnimplementedError, match="reads that tensor by value"):
        with ember.GradientTape() as t:
            t.watch(x)
            outer(ember.constant(2.0))

    c_fn = ember.function(lambda a: a * x * x).get_concrete_function(ember.TensorSpec([], ember.float32))

    @ember.function
    def f():
        return ember.gradients(c_fn(ember.constant(2.0)), x)

    with pytest.raises(ember.errors.UnimplementedError, match="captures it by value"):
        f()

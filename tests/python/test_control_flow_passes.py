"""The optimizer on control flow (src/ember/passes/control_flow.cc, issue 15): an If or Case whose predicate
becomes a constant folds to the branch taken (then inlined), and what a While body computes from
loop-invariant values moves out of the loop (ember.config.optimizer's "loop_optimization"). Each rewrite is
checked on the graph the executor runs and on the results, against the unoptimized graph and eager code."""

import os
import sys

import numpy as np
import pytest

import ember as em

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from control_flow import lstm_loss_and_gradients  # noqa: E402

CONTROL_FLOW = ("If", "StatelessIf", "Case", "StatelessCase")


@pytest.fixture
def restore_options():
    saved = em.config.optimizer.get_experimental_options()
    yield
    em.config.optimizer.set_experimental_options(saved)


def ops_of(text):
    return [line.split(" = ")[1].split("(")[0] for line in text.splitlines() if " = " in line]


def outside_the_loop(text, op):
    """Whether a node of `op` (or a fused kernel holding one, named after it) runs in the caller."""
    for line in text.splitlines():
        name, _, rest = line.partition(" = ")
        node_op = rest.split("(")[0]
        if "While" not in node_op and (node_op == op or op in name.rsplit("/", 1)[-1]):
            return True
    return False


def unoptimized(fn, *args):
    em.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        fn = em.function(fn.python_function)
        return fn(*args)
    finally:
        em.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})


@em.function
def always_true():
    return em.constant(True)  # a call: the predicate is constant only after inlining


@em.function
def index_five():
    return em.constant(5)


def test_a_predicate_constant_after_inlining_folds_to_the_branch_taken(restore_options):
    @em.function(input_signature=[em.TensorSpec([3], em.float32)])
    def f(x):
        return em.cond(always_true(), lambda: em.exp(x) * 2.0, lambda: em.sin(x) - 1.0)

    graph = f.get_concrete_function().graph
    assert any(op in CONTROL_FLOW for op in ops_of(graph.as_text()))
    optimized = ops_of(graph.optimized_as_text())
    assert not any(op in CONTROL_FLOW or op == "PartitionedCall" for op in optimized), optimized
    assert "Sin" not in optimized  # the branch not taken is gone
    x = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(f(x).numpy(), np.exp(x) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(unoptimized(f, x).numpy(), np.exp(x) * 2.0, rtol=1e-6)


def test_a_constant_case_index_takes_its_branch_or_the_default(restore_options):
    @em.function(input_signature=[em.TensorSpec([3], em.float32)])
    def f(x):
        return em.switch_case(index_five(), [lambda: x + 1.0, lambda: em.square(x), lambda: em.tanh(x)])

    optimized = ops_of(f.get_concrete_function().graph.optimized_as_text())
    assert not any(op in CONTROL_FLOW for op in optimized), optimized
    assert "Tanh" in optimized and "Square" not in optimized  # index 5 is out of range: the last branch
    x = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(f(x).numpy(), np.tanh(x), rtol=1e-6)


def test_a_stateful_branch_folds_and_keeps_its_effect(restore_options):
    v = em.Variable(1.0)

    @em.function(input_signature=[em.TensorSpec([], em.float32)])
    def f(x):
        def taken():
            v.assign_add(x)
            return x * 2.0

        return em.cond(always_true(), taken, lambda: x)

    assert "If" in ops_of(f.get_concrete_function().graph.as_text())
    optimized = ops_of(f.get_concrete_function().graph.optimized_as_text())
    assert "If" not in optimized and "AssignAddVariableOp" in optimized, optimized
    assert f(np.float32(3.0)).numpy() == 6.0
    assert v.numpy() == 4.0


def test_folding_is_part_of_constant_folding(restore_options):
    em.config.optimizer.set_experimental_options({"constant_folding": False})

    @em.function(input_signature=[em.TensorSpec([3], em.float32)])
    def f(x):
        return em.cond(always_true(), lambda: x * 2.0, lambda: x)

    assert "StatelessIf" in ops_of(f.get_concrete_function().graph.optimized_as_text())
    np.testing.assert_allclose(f(np.ones(3, np.float32)).numpy(), [2.0, 2.0, 2.0])


def loop_program():
    @em.function(input_signature=[em.TensorSpec([4], em.float32), em.TensorSpec([4], em.float32),
                                  em.TensorSpec([], em.int32)])
    def f(x, w, n):
        def body(k, acc):
            # exp(w) * 2 reads only w (captured, so passed through the loop unchanged): it leaves the loop;
            # acc-dependent work stays.
            return k + 1, acc * 0.5 + em.exp(w) * 2.0 + em.sin(acc)

        _, out = em.while_loop(lambda k, acc: k < n, body, [0, x])
        return out

    return f


def loop_reference(x, w, n):
    acc = x.astype(np.float64)
    for _ in range(n):
        acc = acc * 0.5 + np.exp(w.astype(np.float64)) * 2.0 + np.sin(acc)
    return acc


@pytest.mark.parametrize("n", [0, 1, 5])
def test_loop_invariant_work_moves_out_of_the_body(restore_options, n):
    f = loop_program()
    graph = f.get_concrete_function().graph
    assert "Exp" not in ops_of(graph.as_text())  # traced into the body
    text = graph.optimized_as_text()
    assert outside_the_loop(text, "Exp"), text  # hoisted into the caller
    loop = next(line for line in text.splitlines() if "While(" in line)
    assert len(loop.split("(")[1].split(")")[0].split(", ")) == 5, loop  # k, acc, n, w and exp(w) * 2
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    w = np.array([0.1, 0.2, -0.3, 1.0], np.float32)
    want = loop_reference(x, w, n)
    np.testing.assert_allclose(f(x, w, np.int32(n)).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(unoptimized(f, x, w, np.int32(n)).numpy(), want, rtol=1e-5)


def test_loop_optimization_can_be_switched_off(restore_options):
    em.config.optimizer.set_experimental_options({"loop_optimization": False})
    assert em.config.optimizer.get_experimental_options()["loop_optimization"] is False
    f = loop_program()
    assert not outside_the_loop(f.get_concrete_function().graph.optimized_as_text(), "Exp")
    x = np.ones(4, np.float32)
    np.testing.assert_allclose(f(x, x, np.int32(3)).numpy(), loop_reference(x, x, 3), rtol=1e-5)


def test_an_inner_loops_invariant_leaves_both_loops(restore_options):
    @em.function(input_signature=[em.TensorSpec([3], em.float32), em.TensorSpec([3], em.float32)])
    def f(x, w):
        def outer_body(i, acc):
            def inner_body(j, a):
                return j + 1, a + em.tanh(w) * em.cast(j, em.float32)

            _, a = em.while_loop(lambda j, a: j < i, inner_body, [0, acc])
            return i + 1, a

        return em.while_loop(lambda i, acc: i < 4, outer_body, [0, x])[1]

    text = f.get_concrete_function().graph.optimized_as_text()
    assert outside_the_loop(text, "Tanh"), text  # invariant in the inner loop and in the outer one
    x = np.array([0.5, -1.0, 2.0], np.float32)
    w = np.array([0.3, 0.2, -0.1], np.float32)
    want = x.astype(np.float64).copy()
    for i in range(4):
        for j in range(i):
            want = want + np.tanh(w) * j
    np.testing.assert_allclose(f(x, w).numpy(), want, rtol=1e-5)


def test_state_and_integer_work_stay_in_the_loop(restore_options):
    v = em.Variable([1.0, 2.0])

    @em.function(input_signature=[em.TensorSpec([2], em.float32), em.TensorSpec([], em.int32)])
    def f(x, d):
        def body(k, acc):
            v.assign_add(acc)
            q = em.cast(em.math.floordiv(em.constant(12), d), em.float32)  # may fail on d == 0: stays
            return k + 1, acc + v.read_value() + q

        return em.while_loop(lambda k, acc: k < 2, body, [0, x])[1]

    text = f.get_concrete_function().graph.optimized_as_text()
    assert not any(op in ("ReadVariableOp", "FloorDiv") for op in ops_of(text)), text
    got = f(np.array([1.0, 1.0], np.float32), np.int32(4)).numpy()
    # acc: [1,1] -> v=[2,3], acc=[1+2+3, 1+3+3]=[6,7] -> v=[8,10], acc=[6+8+3, 7+10+3]
    np.testing.assert_allclose(got, [17.0, 20.0])


def test_a_loop_that_runs_zero_times_runs_none_of_its_integer_work(restore_options):
    @em.function(input_signature=[em.TensorSpec([2], em.float32), em.TensorSpec([], em.int32),
                                  em.TensorSpec([], em.int32)])
    def f(x, d, n):
        def body(k, acc):
            return k + 1, acc + em.cast(em.math.floordiv(em.constant(12), d), em.float32)

        return em.while_loop(lambda k, acc: k < n, body, [0, x])[1]

    x = np.array([1.0, 1.0], np.float32)
    np.testing.assert_allclose(f(x, np.int32(0), np.int32(0)).numpy(), [1.0, 1.0])
    np.testing.assert_allclose(f(x, np.int32(4), np.int32(2)).numpy(), [7.0, 7.0])


# Note [Transposed operands hoisted]: a MatMul reading a loop-invariant operand transposed reads it
# transposed once, before the loop.


def transposed_program(tf, transpose_a):
    @tf.function(input_signature=[tf.TensorSpec([3, 5], tf.float32), tf.TensorSpec([5, 5], tf.float32),
                                  tf.TensorSpec([], tf.int32)])
    def f(h, w, n):
        def body(k, h):
            if transpose_a:  # h^T-free form: (w^T @ h^T)^T == h @ w
                return k + 1, tf.tanh(tf.transpose(tf.matmul(w, h, transpose_a=True, transpose_b=True)))
            return k + 1, tf.tanh(tf.matmul(h, w, transpose_b=True))

        return tf.while_loop(lambda k, h: k < n, body, [0, h])[1]

    return f


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_transposed_invariant_operand_is_transposed_once_outside_the_loop(restore_options, transpose_a, n):
    import tensorflow

    f = transposed_program(em, transpose_a)
    text = f.get_concrete_function().graph.optimized_as_text()
    assert outside_the_loop(text, "Transpose"), text
    rng = np.random.default_rng(n)
    h = rng.standard_normal((3, 5)).astype(np.float32)
    w = rng.standard_normal((5, 5)).astype(np.float32)
    want = transposed_program(tensorflow, transpose_a)(h, w, np.int32(n)).numpy()
    np.testing.assert_allclose(f(h, w, np.int32(n)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(unoptimized(f, h, w, np.int32(n)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_the_backward_loop_of_an_rnn_transposes_its_weight_once(restore_options):
    # The backward loop calls the body's backward function; the pass sees through the call (inlining it
    # into its copy of the body), so dz @ w^T gets its w^T outside the loop, and the gradients stay
    # TensorFlow's.
    import tensorflow

    rng = np.random.default_rng(7)
    w_init = (rng.standard_normal((6, 6)) * 0.4).astype(np.float32)
    xs = rng.standard_normal((5, 2, 6)).astype(np.float32)

    def program(tf):
        w = tf.Variable(w_init)

        @tf.function(input_signature=[tf.TensorSpec([None, 2, 6], tf.float32)])
        def grad(xs):
            with tf.GradientTape() as tape:
                h = tf.zeros([2, 6])
                for t in tf.range(tf.shape(xs)[0]):
                    h = tf.tanh(tf.matmul(xs[t], w) + tf.matmul(h, w))
                loss = tf.reduce_sum(h * h)
            return tape.gradient(loss, w)

        return grad

    f = program(em)
    text = f.get_concrete_function().graph.optimized_as_text()
    assert outside_the_loop(text, "Transpose"), text
    np.testing.assert_allclose(f(xs).numpy(), program(tensorflow)(xs).numpy(), rtol=1e-4, atol=1e-5)


# Note [Products of a loop-invariant sequence]: x[t] @ w in a loop over a loop-invariant sequence x becomes
# row t of x @ w, computed once for every row before the loop.


def sequence_program(tf, transpose_b, reverse):
    @tf.function(input_signature=[tf.TensorSpec([5, 2, 3], tf.float32), tf.TensorSpec([3, 4], tf.float32),
                                  tf.TensorSpec([4, 4], tf.float32), tf.TensorSpec([], tf.int32)])
    def f(xs, w, u, n):
        w_used = tf.transpose(w) if transpose_b else w
        h = tf.zeros([2, 4])
        for t in tf.range(n):
            x_t = xs[-1 - t] if reverse else xs[t]  # a negative index takes the same row of x @ w
            h = tf.tanh(tf.matmul(x_t, w_used, transpose_b=transpose_b) + tf.matmul(h, u))
        return h

    return f


def sequence_product_outside(text, shape="[5,2,4]"):
    """Whether the caller multiplies the whole sequence (a [5, 2, 4] product by default) outside the loop."""
    return any(" = MatMul(" in line and f"-> float32{shape}" in line for line in text.splitlines())


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_product_of_a_sequence_row_runs_once_for_all_rows(restore_options, transpose_b, reverse, n):
    import tensorflow

    f = sequence_program(em, transpose_b, reverse)
    text = f.get_concrete_function().graph.optimized_as_text()
    assert sequence_product_outside(text), text
    rng = np.random.default_rng(n)
    xs = rng.standard_normal((5, 2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4) if not transpose_b else (4, 3)).astype(np.float32)
    w = w if not transpose_b else w.T.copy()
    u = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    want = sequence_program(tensorflow, transpose_b, reverse)(xs, w, u, np.int32(n)).numpy()
    np.testing.assert_allclose(f(xs, w, u, np.int32(n)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(unoptimized(f, xs, w, u, np.int32(n)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_sequence_row_index_out_of_range_still_fails(restore_options):
    f = sequence_program(em, False, False)
    xs = np.ones((5, 2, 3), np.float32)
    with pytest.raises(em.errors.InvalidArgumentError, match="StridedSlice"):
        f(xs, np.ones((3, 4), np.float32), np.ones((4, 4), np.float32), np.int32(6))


def test_the_forward_loop_of_an_rnn_gradient_projects_every_step_at_once(restore_options):
    # The gradient's forward loop accumulates its intermediates (an accumulating While); the pass hoists out
    # of it too, and the gradients stay TensorFlow's.
    import tensorflow

    rng = np.random.default_rng(3)
    w_init = (rng.standard_normal((3, 4)) * 0.5).astype(np.float32)
    u_init = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    xs = rng.standard_normal((5, 2, 3)).astype(np.float32)

    def program(tf):
        w, u = tf.Variable(w_init), tf.Variable(u_init)

        @tf.function(input_signature=[tf.TensorSpec([5, 2, 3], tf.float32)])
        def grad(xs):
            with tf.GradientTape() as tape:
                h = tf.zeros([2, 4])
                for t in tf.range(tf.shape(xs)[0]):
                    h = tf.tanh(tf.matmul(xs[t], w) + tf.matmul(h, u))
                loss = tf.reduce_sum(h * h)
            return tape.gradient(loss, [w, u])

        return grad

    f = program(em)
    text = f.get_concrete_function().graph.optimized_as_text()
    assert sequence_product_outside(text), text
    got, want = f(xs), program(tensorflow)(xs)
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-4, atol=1e-5)


# Note [Products summed over a loop]: a loop variable that sums a^T @ d over the iterations sums one product
# of the stacked a and d after the loop.


def summed_program(tf):
    @tf.function(input_signature=[tf.TensorSpec([5, 2, 3], tf.float32), tf.TensorSpec([3, 4], tf.float32),
                                  tf.TensorSpec([], tf.int32)])
    def f(xs, w, n):
        g = tf.zeros([3, 4])
        h = tf.zeros([2, 4])
        for t in tf.range(n):
            h = tf.tanh(tf.matmul(xs[t], w) + h)
            g = g + tf.matmul(xs[t] * 2.0, h, transpose_a=True)
        return g, h

    return f


def summed_outside(text):
    return any(" = MatMul(" in line and "/summed" in line.split(" = ")[0] for line in text.splitlines())


@pytest.mark.parametrize("n", [0, 1, 5])
def test_products_summed_over_a_loop_are_one_product_after_it(restore_options, n):
    import tensorflow

    f = summed_program(em)
    text = f.get_concrete_function().graph.optimized_as_text()
    assert summed_outside(text), text
    rng = np.random.default_rng(n)
    xs = rng.standard_normal((5, 2, 3)).astype(np.float32)
    w = (rng.standard_normal((3, 4)) * 0.5).astype(np.float32)
    want = summed_program(tensorflow)(xs, w, np.int32(n))
    for got in (f(xs, w, np.int32(n)), unoptimized(f, xs, w, np.int32(n))):
        for g, t in zip(got, want):
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_a_partial_sum_read_in_the_loop_stays_in_the_loop(restore_options):
    @em.function(input_signature=[em.TensorSpec([5, 2, 3], em.float32), em.TensorSpec([2, 4], em.float32)])
    def f(xs, d):
        g = em.zeros([3, 4])
        h = em.zeros([2, 4])
        for t in em.range(5):
            g = g + em.matmul(xs[t], d + h, transpose_a=True)
            h = h + em.reduce_sum(g)  # reads the partial sum
        return g

    assert not summed_outside(f.get_concrete_function().graph.optimized_as_text())
    xs = np.ones((5, 2, 3), np.float32)
    d = np.ones((2, 4), np.float32)
    want_g, want_h = np.zeros((3, 4)), np.zeros((2, 4))
    for t in range(5):
        want_g = want_g + xs[t].T @ (d + want_h)
        want_h = want_h + want_g.sum()
    np.testing.assert_allclose(f(xs, d).numpy(), want_g, rtol=1e-5)


def test_the_backward_loop_of_an_lstm_sums_its_weight_gradients_after_the_loop(restore_options):
    # bench/control_flow.py's LSTM step at a small size: the forward loop projects every step at once
    # (Note [Products of a loop-invariant sequence]) and the backward loop sums x_t^T @ dz_t and
    # h_t^T @ dz_t after the loop; gradients and loss stay TensorFlow's.
    import tensorflow

    rng = np.random.default_rng(11)
    steps, batch, features, units = 6, 3, 4, 5
    inits = [(rng.standard_normal((features, 4 * units)) * 0.4).astype(np.float32),
             (rng.standard_normal((units, 4 * units)) * 0.4).astype(np.float32),
             (rng.standard_normal((4 * units,)) * 0.1).astype(np.float32)]
    xs = rng.standard_normal((steps, batch, features)).astype(np.float32)

    def program(tf):
        variables = [tf.Variable(v) for v in inits]

        @tf.function
        def step(xs):
            loss, grads = lstm_loss_and_gradients(tf, variables, xs, batch, units)
            return [loss] + grads

        return step

    f = program(em)
    got = f(xs)
    text = f.get_concrete_function(em.constant(xs)).graph.optimized_as_text()
    assert sequence_product_outside(text, f"[{steps},{batch},{4 * units}]"), text
    summed = [line.split(" = ")[1].split("(")[0] for line in text.splitlines() if "/summed" in line.split(" = ")[0]]
    assert sorted(summed) == ["MatMul", "MatMul", "Sum"], text  # w's, u's and b's gradients
    for g, t in zip(got, program(tensorflow)(xs)):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-4, atol=1e-5)


def test_a_sum_the_condition_reads_stays_in_the_loop(restore_options):
    @em.function(input_signature=[em.TensorSpec([4, 2, 3], em.float32)])
    def f(xs):
        def body(t, g):
            return t + 1, g + em.matmul(xs[t % 4], xs[t % 4], transpose_a=True)

        return em.while_loop(lambda t, g: em.reduce_sum(g) < 40.0, body, [0, em.zeros([3, 3])])

    assert not summed_outside(f.get_concrete_function().graph.optimized_as_text())
    xs = np.ones((4, 2, 3), np.float32)
    t, g = f(xs)
    assert int(t) == 3  # each step adds 2 to each of 9 entries: 18, 36, 54
    np.testing.assert_allclose(g.numpy(), np.full((3, 3), 6.0))

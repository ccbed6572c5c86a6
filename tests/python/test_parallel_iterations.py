"""Overlapped loop iterations (issue 15, Note [Parallel iterations] in src/ember/runtime/parallel_loop.cc): a
StatelessWhile whose iterations depend on each other only through a counter and per-iteration writes
(map_fn, a while_loop writing a TensorArray, a gradient's forward loop) runs up to parallel_iterations bodies
at once, with the sequential run's bits; carried loops (scan) and stateful bodies keep their order.
`_C.parallel_loop_stats()` counts what ran overlapped: "max_in_flight" is the largest wave issued at once
(deterministic), "max_running" the most bodies seen running at the same moment."""

import threading

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember import _C


@pytest.fixture
def stats():
    _C.reset_parallel_loop_stats()
    yield _C.parallel_loop_stats
    _C.reset_parallel_loop_stats()


@pytest.fixture
def quiet_machine():
    # Both cores count as free even while other processes keep the machine busy (docs/threads.md part 3).
    _C.force_other_processes_load(0.0)
    yield
    _C.force_other_processes_load(-1.0)


def data(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def map_program(lib, parallel):
    @lib.function
    def f(x, w):
        return lib.map_fn(lambda row: lib.tanh(lib.linalg.matvec(w, row)) * 2.0 + 1.0, x,
                          parallel_iterations=parallel)
    return f


def test_map_fn_overlaps_with_the_sequential_bits_and_tensorflows_results(stats):
    x, w = data(64, 24), data(24, 24, seed=1)
    want = map_program(tf, 10)(x, w).numpy()
    sequential = map_program(em, 1)(x, w).numpy()
    assert stats()["iterations"] == 0  # parallel_iterations=1 keeps the plain loop
    for parallel in (2, 10, 64, 100):
        _C.reset_parallel_loop_stats()
        got = map_program(em, parallel)(x, w).numpy()
        np.testing.assert_array_equal(got, sequential)
        assert stats()["iterations"] == 64
        assert stats()["max_in_flight"] == min(parallel, 64)
    np.testing.assert_allclose(sequential, want, rtol=1e-5, atol=1e-5)


def test_bodies_run_at_the_same_time(stats, quiet_machine):
    """Proof of overlap without timing: iteration 0's body waits until another body has started, which
    only happens if a second body runs while the first is in flight (a stateless numpy_function, so the
    loop is a StatelessWhile, as TensorFlow also overlaps it)."""
    started_other = threading.Event()

    def body_fn(value):
        if int(value) == 0:
            assert started_other.wait(60), "no other iteration started while iteration 0 ran"
        else:
            started_other.set()
        return np.float32(value * 2)

    @em.function
    def f(x):
        return em.map_fn(lambda e: em.reshape(em.numpy_function(body_fn, [e], em.float32, stateful=False), []),
                         x, parallel_iterations=4)

    np.testing.assert_array_equal(f(np.arange(8, dtype=np.float32)).numpy(), np.arange(8) * 2)
    assert stats()["max_running"] >= 2
    assert stats()["max_in_flight"] == 4


def test_while_loop_writing_a_tensor_array(stats):
    def program(lib, parallel):
        @lib.function
        def f(x):
            n = lib.shape(x)[0]
            ta = lib.TensorArray(lib.float32, size=n)

            def body(i, ta):
                row = lib.gather(x, i)
                return i + 1, ta.write(i, lib.reduce_sum(lib.exp(row[None, :] * row[:, None]), axis=0))
            _, ta = lib.while_loop(lambda i, ta: i < lib.shape(x)[0], body, (0, ta),
                                   parallel_iterations=parallel)
            return ta.stack()
        return f

    x = data(40, 16) * 0.3
    sequential = program(em, 1)(x).numpy()
    got = program(em, 8)(x).numpy()
    np.testing.assert_array_equal(got, sequential)
    assert stats()["iterations"] == 40 and stats()["max_in_flight"] == 8
    np.testing.assert_allclose(got, program(tf, 8)(x).numpy(), rtol=1e-5)


def test_scan_carries_its_accumulator_and_stays_sequential(stats):
    def program(lib, parallel):
        @lib.function
        def f(x):
            return lib.scan(lambda acc, row: lib.tanh(acc * 0.9 + row), x, parallel_iterations=parallel)
        return f

    x = data(30, 100)
    got = program(em, 10)(x).numpy()
    assert stats()["iterations"] == 0
    np.testing.assert_array_equal(got, program(em, 1)(x).numpy())
    np.testing.assert_allclose(got, program(tf, 10)(x).numpy(), rtol=1e-5, atol=1e-6)


def test_nested_map_fn(stats):
    def program(lib, parallel):
        @lib.function
        def f(x):
            return lib.map_fn(lambda block: lib.map_fn(lambda row: lib.reduce_max(lib.sin(row) * row), block,
                                                       parallel_iterations=parallel),
                              x, parallel_iterations=parallel)
        return f

    x = data(12, 9, 70)
    sequential = program(em, 1)(x).numpy()
    got = program(em, 5)(x).numpy()
    np.testing.assert_array_equal(got, sequential)
    assert stats()["iterations"] == 12 + 12 * 9
    np.testing.assert_allclose(got, program(tf, 5)(x).numpy(), rtol=1e-6)


def test_a_body_with_a_variable_assign_keeps_program_order(stats):
    """A stateful body makes the loop a While, never overlapped: the assigns run in iteration order (the
    result depends on it), as automatic control dependencies order them in TensorFlow."""
    def program(lib):
        v = lib.Variable(1.0)

        @lib.function
        def f(x):
            def body(e):
                v.assign(v * 0.5 + e)
                return v.read_value() * 1.0
            return lib.map_fn(body, x, parallel_iterations=10)
        return f

    x = data(20)
    got = program(em)(x).numpy()
    assert stats()["iterations"] == 0
    np.testing.assert_allclose(got, program(tf)(x).numpy(), rtol=1e-6)


def test_an_error_in_one_iteration_is_the_sequential_error(stats):
    def program(lib, parallel):
        @lib.function
        def f(indices, table):
            return lib.map_fn(lambda i: lib.gather(table, i) * 2.0, indices, fn_output_signature=lib.float32,
                              parallel_iterations=parallel)
        return f

    table = data(8)
    indices = np.array([0, 1, 2, 3, 4, 5, 6, 99, 1, 2, 3, 4], dtype=np.int32)
    errors = []
    for parallel in (1, 4, 10):
        with pytest.raises(em.errors.InvalidArgumentError) as caught:
            program(em, parallel)(indices, table)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] == errors[2]
    assert "iteration 7" in errors[0] and "99" in errors[0]
    assert stats()["iterations"] > 0  # the iterations before the failing one ran overlapped
    with pytest.raises(tf.errors.InvalidArgumentError):
        program(tf, 4)(indices, table)


def test_map_fn_gradient_overlaps_its_forward_loop_with_the_same_bits(stats):
    def program(lib, parallel):
        @lib.function
        def f(x, w):
            with lib.GradientTape() as tape:
                tape.watch([x, w])
                y = lib.map_fn(lambda row: lib.tanh(lib.linalg.matvec(w, row)), x, parallel_iterations=parallel)
                loss = lib.reduce_sum(y * y)
            return tape.gradient(loss, [x, w])
        return f

    x, w = data(16, 8), data(8, 8, seed=1)
    sequential = [g.numpy() for g in program(em, 1)(x, w)]
    assert stats()["iterations"] == 0
    got = [g.numpy() for g in program(em, 10)(x, w)]
    assert stats()["iterations"] == 32  # the accumulating forward loop and the backward loop
    for a, b in zip(got, sequential):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got, program(tf, 10)(x, w)):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-5)


def _row_loop(rows_of, n, parallel):
    """A StatelessWhile reading the rows it then writes (as the backward loop of a map_fn's gradient reads
    and zeroes row t of the incoming gradient): rows_of(i) gives iteration i's rows."""
    specs = [em.TensorSpec([], em.int32), em.TensorSpec([6, 5], em.float32)]
    inplace_update = _C.op("InplaceUpdate")

    def body(i, table):
        rows = rows_of(i)
        return i + 1, inplace_update(table, rows, em.tanh(em.gather(table, rows)) * 2.0 + 1.0)

    cond = em.function(lambda i, table: i < n).get_concrete_function(*specs)
    body = em.function(body).get_concrete_function(*specs)
    table = em.constant(data(6, 5))
    _, out = _C.op("StatelessWhile")([em.constant(0), table], cond.name, body.name, parallel, -1)
    return out.numpy(), table.numpy()


@pytest.mark.parametrize("rows_of,name", [(lambda i: em.reshape(5 - i, [1]), "distinct rows"),
                                          (lambda i: em.reshape(i % 3, [1]), "rows read again")])
def test_rows_read_then_written_stay_in_order(stats, rows_of, name):
    """Rows a later iteration reads must hold what earlier iterations wrote: a wave ends before an
    iteration whose rows an earlier iteration of the wave wrote, and the next wave starts there."""
    n = 6
    sequential, table = _row_loop(rows_of, n, 1)
    assert stats()["iterations"] == 0
    got, _ = _row_loop(rows_of, n, 4)
    np.testing.assert_array_equal(got, sequential)
    assert stats()["iterations"] == n and stats()["max_in_flight"] == 4
    want = table.copy()
    for i in range(n):
        r = (5 - i) if name == "distinct rows" else i % 3
        want[r] = np.tanh(want[r]) * np.float32(2.0) + np.float32(1.0)
    np.testing.assert_allclose(sequential, want, rtol=1e-6, atol=1e-6)

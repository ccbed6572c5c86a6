"""Issue 15, part 1: cond, case, switch_case and while_loop, eagerly and staged (If/While/Case functional ops),
each compared with TensorFlow running the same program (``import tensorflow as tf`` vs ``import ember as
tf``): values, dtypes, shapes and the class of an error."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow

import ember



from tf_differential import same as _same  # noqa: E402


def _graph_ops(fn, *args):
    gf = fn.get_concrete_function(*args)._gf
    return [gf.node(i)["type"] for i in range(gf.num_nodes)]


# ---- the seed: f(x, y) with `if tf.equal(y, 0.0)` (000, "defun-ing Python control flow")


def _seed_f(tf, staged):
    def f(x, y):
        return tf.cond(tf.equal(y, 0.0), lambda: tf.constant(1.0), lambda: x / y)

    g = tf.function(f) if staged else f
    return [g(tf.constant(3.0), tf.constant(0.0)), g(tf.constant(3.0), tf.constant(2.0))]


@pytest.mark.parametrize("staged", [False, True])
def test_seed_cond_example(staged):
    got = _same(lambda tf: _seed_f(tf, staged))
    assert got[1][0] == ("tensor", "float32", [], 1.0)


def test_staged_cond_is_one_if_op():
    f = ember.function(lambda x, y: ember.cond(ember.equal(y, 0.0), lambda: ember.constant(1.0), lambda: x / y))
    ops = _graph_ops(f, ember.constant(3.0), ember.constant(0.0))
    assert "StatelessIf" in ops and "RealDiv" not in ops  # the division lives in the else branch


# ---- cond


def _cond_cases():
    def nested_structures(tf):
        @tf.function
        def f(x):
            return tf.cond(x > 0, lambda: {"a": (x, x * 2), "b": [x + 1]}, lambda: {"a": (-x, x), "b": [x]})
        return [f(tf.constant(2.0)), f(tf.constant(-3.0))]

    def python_numbers(tf):
        return tf.function(lambda x: tf.cond(x > 0, lambda: 1, lambda: 2))(tf.constant(2.0))

    def none_outputs(tf):
        return tf.function(lambda x: tf.cond(x > 0, lambda: None, lambda: None))(tf.constant(2.0))

    def shapes_join(tf):
        @tf.function
        def f(x):
            out = tf.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: tf.concat([x, x], 0))
            return out, out.shape.as_list()
        return f(tf.constant([1.0, 2.0]))[0], f.get_concrete_function(tf.constant([1.0, 2.0])).outputs[0].shape.as_list()

    def dtype_mismatch(tf):
        return tf.function(lambda x: tf.cond(x > 0, lambda: x, lambda: tf.cast(x, tf.int32)))(tf.constant(2.0))

    def structure_mismatch(tf):
        return tf.function(lambda x: tf.cond(x > 0, lambda: [x], lambda: (x,)))(tf.constant(2.0))

    def key_mismatch(tf):
        return tf.function(lambda x: tf.cond(x > 0, lambda: {"a": x}, lambda: {"b": x}))(tf.constant(2.0))

    def python_bool_pred_staged(tf):
        return tf.function(lambda x: tf.cond(True, lambda: x, lambda: x * 2))(tf.constant(2.0))

    def python_bool_pred_eager(tf):
        return tf.cond(False, lambda: tf.constant(1), lambda: tf.constant(2))

    def captures_of_both_branches(tf):
        @tf.function
        def f(x, y, z):
            return tf.cond(x > 0, lambda: y * 2.0, lambda: z - x)
        return [f(tf.constant(1.0), tf.constant(5.0), tf.constant(7.0)),
                f(tf.constant(-1.0), tf.constant(5.0), tf.constant(7.0))]

    def nested_cond(tf):
        @tf.function
        def f(x, y):
            return tf.cond(x > 0, lambda: tf.cond(y > 0, lambda: x + y, lambda: x - y), lambda: x * y)
        return [f(tf.constant(a), tf.constant(b)) for a in (1.0, -1.0) for b in (2.0, -2.0)]

    def eager_tensor_capture(tf):
        w = tf.constant([1.0, 2.0])

        @tf.function
        def f(x):
            return tf.cond(x > 0, lambda: w * x, lambda: w)
        return [f(tf.constant(3.0)), f(tf.constant(-3.0))]

    def variables_in_branches(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            tf.cond(x > 0, lambda: v.assign_add(x), lambda: v.assign_sub(1.0))
            return v.read_value()
        return [f(tf.constant(2.0)), f(tf.constant(-2.0)), f(tf.constant(5.0))]

    def outer_tensors_returned_unchanged(tf):
        @tf.function(autograph=False)
        def f(i, b):
            return tf.cond(i > 6, lambda: i, lambda: b)

        @tf.function(autograph=False)
        def g(n, y):
            return tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, y), (0, 0.0))
        return [f(tf.constant(3), tf.constant(7)), f(tf.constant(9), tf.constant(7)),
                g(tf.constant(3), tf.constant(2.5)), g(tf.constant(0), tf.constant(2.5))]

    def non_callable(tf):
        return tf.cond(tf.constant(True), 1, lambda: 2)

    return [nested_structures, python_numbers, none_outputs, shapes_join, dtype_mismatch, structure_mismatch,
            key_mismatch, python_bool_pred_staged, python_bool_pred_eager, captures_of_both_branches, nested_cond,
            eager_tensor_capture, variables_in_branches, outer_tensors_returned_unchanged, non_callable]


@pytest.mark.parametrize("case", _cond_cases(), ids=lambda c: c.__name__)
def test_cond_matches_tensorflow(case):
    _same(case)


def test_stateful_branches_make_an_if_and_keep_program_order():
    v = ember.Variable(1.0)

    @ember.function
    def f(x):
        before = v.read_value()
        ember.cond(x > 0, lambda: v.assign(10.0), lambda: v.assign(20.0))
        return before, v.read_value()

    ops = _graph_ops(f, ember.constant(1.0))
    assert "If" in ops and "StatelessIf" not in ops
    before, after = f(ember.constant(1.0))
    assert float(before) == 1.0 and float(after) == 10.0


def test_constant_predicate_while_tracing_runs_one_branch():
    @ember.function
    def f(x):
        return ember.cond(ember.constant(True), lambda: x + 1.0, lambda: x - 1.0)

    assert float(f(ember.constant(1.0))) == 2.0
    assert not any(op in ("If", "StatelessIf") for op in _graph_ops(f, ember.constant(1.0)))


def test_non_scalar_predicate_is_a_clear_error():
    f = ember.function(lambda x: ember.cond(x > 0, lambda: x, lambda: -x))
    with pytest.raises(ValueError, match="scalar"):
        f(ember.constant([1.0, 2.0]))


# ---- switch_case and case


def _case_cases():
    def switch(tf):
        @tf.function
        def f(i):
            return tf.switch_case(i, [lambda: tf.constant(10), lambda: tf.constant(20)],
                                  default=lambda: tf.constant(-1))
        return [f(tf.constant(k)) for k in (0, 1, 2, -1, 9)]

    def switch_no_default(tf):
        @tf.function
        def f(i, x):
            return tf.switch_case(i, {0: lambda: x, 1: lambda: x * 2, 2: lambda: x * 3})
        return [f(tf.constant(k), tf.constant(1.5)) for k in (0, 1, 2, 5, -3)]

    def switch_eager(tf):
        return [tf.switch_case(tf.constant(k), [lambda: 1, lambda: 2]) for k in (0, 1, 5)]

    def switch_bad_keys(tf):
        return tf.function(lambda: tf.switch_case(tf.constant(0), {0: lambda: 1, 3: lambda: 2}))()

    def case_first_true(tf):
        @tf.function
        def f(x):
            return tf.case([(x < 0, lambda: tf.constant(-1.0)), (x < 10, lambda: x)], default=lambda: x * 0.0)
        return [f(tf.constant(v)) for v in (-5.0, 5.0, 50.0)]

    def case_no_default(tf):
        @tf.function
        def f(x):
            return tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))])
        return [f(tf.constant(v)) for v in (-5.0, 5.0)]

    def case_no_default_none_true_eager(tf):
        x = tf.constant(0.0)
        return tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))])

    def case_eager(tf):
        x = tf.constant(3.0)
        return tf.case([(x < 0, lambda: tf.constant(-1.0)), (x > 0, lambda: x)], default=lambda: x * 0.0)

    return [switch, switch_no_default, switch_eager, switch_bad_keys, case_first_true, case_no_default,
            case_no_default_none_true_eager, case_eager]


@pytest.mark.parametrize("case", _case_cases(), ids=lambda c: c.__name__)
def test_case_matches_tensorflow(case):
    _same(case)


# ---- while_loop


def _while_cases():
    def counter_sum(tf):
        @tf.function
        def f(n):
            return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + tf.cast(i, tf.float32)), (0, 0.0))
        return [f(tf.constant(10)), f(tf.constant(0))]

    def eager(tf):
        return tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * 2.0), [0, 1.0])

    def single_var_list(tf):
        return tf.function(lambda: tf.while_loop(lambda i: i < 5, lambda i: i + 1, [0]))()

    def maximum_iterations(tf):
        @tf.function
        def f(x):
            return tf.while_loop(lambda i, j: i < 5, lambda i, j: (i + 1, j * 2), (0, x), maximum_iterations=3)
        return f(tf.constant(1.0))

    def maximum_iterations_eager(tf):
        return tf.while_loop(lambda i, j: i < 5, lambda i, j: (i + 1, j * 2), (0, 1.0), maximum_iterations=3)

    def maximum_iterations_tensor(tf):
        @tf.function
        def f(x, m):
            return tf.while_loop(lambda j: j < 1000.0, lambda j: j * 2, [x], maximum_iterations=m)
        return [f(tf.constant(1.0), tf.constant(4)), f(tf.constant(1.0), tf.constant(0))]

    def shape_invariants(tf):
        @tf.function
        def f(v):
            return tf.while_loop(lambda v: tf.size(v) < 5, lambda v: tf.concat([v, v], 0), [v],
                                 shape_invariants=[tf.TensorShape([None])])
        return f(tf.constant([1.0]))

    def shape_changes_without_invariants(tf):
        return tf.function(lambda v: tf.while_loop(lambda v: tf.size(v) < 5, lambda v: tf.concat([v, v], 0),
                                                   [v]))(tf.constant([1.0]))

    def dtype_changes(tf):
        return tf.function(lambda v: tf.while_loop(lambda v: tf.size(v) < 5, lambda v: tf.cast(v, tf.int32),
                                                   [v]))(tf.constant([1.0]))

    def structure_changes(tf):
        return tf.function(lambda v: tf.while_loop(lambda v: tf.size(v) < 5, lambda v: (v, v),
                                                   [v]))(tf.constant([1.0]))

    def nested_structure(tf):
        @tf.function
        def f(x):
            def body(i, state):
                return i + 1, {"h": state["h"] * 2.0, "c": (state["c"][0] + 1.0,)}
            return tf.while_loop(lambda i, s: i < 3, body, (0, {"h": x, "c": (x,)}))
        return f(tf.constant([1.0, 2.0]))

    def captures(tf):
        @tf.function
        def f(x, step, limit):
            return tf.while_loop(lambda v: v < limit, lambda v: v + step, [x])
        return f(tf.constant(0.0), tf.constant(1.5), tf.constant(10.0))

    def nested_while(tf):
        @tf.function
        def f(n):
            def outer(i, total):
                inner = tf.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), (0, 0))[1]
                return i + 1, total + inner
            return tf.while_loop(lambda i, t: i < n, outer, (0, 0))
        return f(tf.constant(6))

    def cond_in_while(tf):
        @tf.function
        def f(n):
            def body(i, acc):
                return i + 1, tf.cond(i % 2 == 0, lambda: acc + i, lambda: acc - i)
            return tf.while_loop(lambda i, a: i < n, body, (0, 0))
        return f(tf.constant(7))

    def variable_updates(tf):
        v = tf.Variable(0.0)

        @tf.function
        def f(n):
            tf.while_loop(lambda i: i < n, lambda i: (v.assign_add(tf.cast(i, tf.float32)), i + 1)[1], [0])
            return v.read_value()
        return [f(tf.constant(4)), f(tf.constant(3))]

    def cond_not_bool(tf):
        return tf.function(lambda v: tf.while_loop(lambda v: v, lambda v: v, [v]))(tf.constant([1.0]))

    def no_loop_vars(tf):
        return tf.while_loop(lambda i: i < 5, lambda i: i + 1, [])

    return [counter_sum, eager, single_var_list, maximum_iterations, maximum_iterations_eager,
            maximum_iterations_tensor, shape_invariants, shape_changes_without_invariants, dtype_changes,
            structure_changes, nested_structure, captures, nested_while, cond_in_while, variable_updates,
            cond_not_bool, no_loop_vars]


@pytest.mark.parametrize("case", _while_cases(), ids=lambda c: c.__name__)
def test_while_loop_matches_tensorflow(case):
    _same(case)


def test_while_loop_runs_in_the_graph_for_a_trip_count_known_at_run_time():
    @ember.function(input_signature=[ember.TensorSpec([], ember.int32)])
    def f(n):
        return ember.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), (0, 0))[1]

    assert "StatelessWhile" in _graph_ops(f, ember.constant(3))
    for n in (0, 1, 10, 1000):
        assert int(f(ember.constant(n))) == n * (n - 1) // 2
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("fast", [False, True])
def test_profiler_shows_each_loop_iteration(fast):
    @ember.function
    def f(n):
        return ember.while_loop(lambda i: i < n, lambda i: i + 1, [0])

    f(ember.constant(2))
    ember._C.set_fast_loops(fast)
    try:
        with ember.profiler.profile() as metadata:
            f(ember.constant(7))
    finally:
        ember._C.set_fast_loops(True)
    steps = [e["name"] for e in metadata.events if e["kind"] == "span" and "while_body" in e["name"]]
    if fast:  # the iterations on the fast path are one span (Note [Fast loops] in runtime/fast_loop.cc)
        assert len(steps) == 1 and steps[0].endswith("(fast loop, 7 iterations)"), steps
    else:
        assert len(steps) == 7  # one step (body, then condition) per iteration
    first = [e for e in metadata.events if e["kind"] == "span" and "while_cond" in e["name"]]
    assert len(first) == 1  # the condition before the first iteration
    nodes = [e for e in metadata.events if e["kind"] == "node"]
    assert any(e["op"] == "StatelessWhile" for e in nodes)


# ---- loops on the fast path (runtime/fast_loop.cc): the same values as the normal path, bit for bit, and
# as TensorFlow


def _fast_and_normal(call):
    """call() with the fast path on, then off: both results as numpy, and the iterations run fast."""
    before = ember._C.fast_loop_iterations()
    fast = [np.asarray(t) for t in call()]
    ran = ember._C.fast_loop_iterations() - before
    ember._C.set_fast_loops(False)
    try:
        normal = [np.asarray(t) for t in call()]
    finally:
        ember._C.set_fast_loops(True)
    for a, b in zip(fast, normal):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)
    return fast, ran


def _scalar_loop(tf, dtype, n):
    step = tf.constant(1, dtype)
    scale = tf.constant(3, dtype)  # a captured eager scalar

    @tf.function
    def f(n, x):
        return tf.while_loop(lambda i, x: i < n,
                             lambda i, x: (i + step, x * scale - i if dtype.is_integer else x * 0.999 + 0.5),
                             (tf.constant(0, dtype), x))

    return f(tf.constant(n, dtype), tf.constant(2, dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_scalar_loops_run_fast_and_match_tensorflow(dtype, n):
    if dtype.startswith("int") and n == 1000:
        n = 15  # x * 3 - i stays in int32
    fast, ran = _fast_and_normal(lambda: _scalar_loop(ember, getattr(ember, dtype), n))
    assert ran == n
    expected = _scalar_loop(tensorflow, getattr(tensorflow, dtype), n)
    for got, want in zip(fast, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5)
        assert got.dtype == want.numpy().dtype


def test_bool_and_vector_loop_variables_run_fast():
    def flag(tf):
        @tf.function
        def f(x):
            return tf.while_loop(lambda go, x: go, lambda go, x: (tf.logical_and(go, x < 5.0), x + 1.0),
                                 (tf.constant(True), x))
        return f(tf.constant(0.0))

    def vector(tf):
        @tf.function
        def f(n, x):
            return tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 2.0 - 1.0), (0, x))
        return f(tf.constant(6), tf.constant([0.0, 1.0, 2.5]))

    def reduced(tf):  # the same with a reduction in the step: the normal path
        @tf.function
        def f(x):
            return tf.while_loop(lambda go, x: go, lambda go, x: (tf.reduce_all(x < 5.0) & go, x + 1.0),
                                 (tf.constant(True), x))
        return f(tf.constant([0.0, 1.0, 2.0]))

    for case, fast_iterations in ((flag, 6), (vector, 6), (reduced, 0)):
        _same(case)
        _, ran = _fast_and_normal(lambda: case(ember))
        assert ran == fast_iterations, case.__name__


def test_nested_loops_and_nan_come_out_the_same():
    def case(tf):
        @tf.function
        def f(n, x):
            def outer(i, x):
                inner = tf.while_loop(lambda j, y: j < i, lambda j, y: (j + 1, y * 0.5 + x), (0, x))[1]
                return i + 1, inner
            return tf.while_loop(lambda i, x: i < n, outer, (0, x))
        return [f(tf.constant(5), tf.constant(1.0)), f(tf.constant(3), tf.constant(float("nan")))]

    _same(lambda tf: case(tf)[0])
    assert np.isnan(case(tensorflow)[1][1].numpy())
    fast, ran = _fast_and_normal(lambda: [t for pair in case(ember) for t in pair])
    assert ran == (0 + 1 + 2 + 3 + 4) + (0 + 1 + 2) and np.isnan(fast[3])  # the inner loops only


def test_loops_that_must_not_run_fast_still_match_tensorflow():
    def matmul(tf):
        @tf.function
        def f(m):
            return tf.while_loop(lambda i, m: i < 3, lambda i, m: (i + 1, tf.matmul(m, m)), (0, m))
        return f(tf.constant([[1.0, 1.0], [0.0, 1.0]]))

    def growing(tf):
        @tf.function
        def f(x):
            return tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x],
                                 shape_invariants=[tf.TensorShape([None])])
        return f(tf.constant([1.0]))

    def stateful(tf):
        v = tf.Variable(0.0)

        @tf.function
        def f(n):
            def body(i):
                v.assign_add(1.0)
                return i + 1
            tf.while_loop(lambda i: i < n, body, [0])
            return v.read_value()
        return f(tf.constant(4))

    def maximum_iterations(tf):
        @tf.function
        def f(x):
            return tf.while_loop(lambda x: x < 100.0, lambda x: x + 1.0, [x], maximum_iterations=3)
        return f(tf.constant(0.0))

    for case, fast_iterations in ((matmul, 0), (growing, 0), (stateful, 0), (maximum_iterations, 3)):
        _same(case)
        before = ember._C.fast_loop_iterations()
        case(ember)
        assert ember._C.fast_loop_iterations() - before == fast_iterations, case.__name__


def test_a_failing_iteration_reports_as_on_the_normal_path():
    @ember.function
    def f(x):
        return ember.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, x + x // (3 - i)), (0, x))

    messages = []
    for fast in (True, False):
        ember._C.set_fast_loops(fast)
        try:
            with pytest.raises(ember.errors.InvalidArgumentError) as raised:
                f(ember.constant(12))
        finally:
            ember._C.set_fast_loops(True)
        messages.append(str(raised.value))
    assert "iteration 3" in messages[0] and messages[0] == messages[1]


def test_a_cap_on_loop_iterations_ends_an_endless_loop_as_resource_exhausted():
    # Fuzzers build valid programs that never stop; they set this cap (0, the default, is none).
    f = ember.function(lambda x: ember.while_loop(lambda v: v > 0.0, lambda v: v + 1.0, [x]))
    ember._C.set_max_loop_iterations(50)
    try:
        with pytest.raises(ember.errors.ResourceExhaustedError, match="more than 50 iterations"):
            f(ember.constant(1.0))
        assert float(f(ember.constant(-1.0))[0]) == -1.0
    finally:
        ember._C.set_max_loop_iterations(0)


def test_ember_fast_loops_0_turns_the_fast_path_off():
    env = dict(os.environ, EMBER_FAST_LOOPS="0", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = "import ember; print(ember._C.fast_loops())"
    command = [sys.executable] + (["-S"] if sys.flags.no_site else []) + ["-c", code]
    assert subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.strip() == "False"
    assert ember._C.fast_loops()


# ---- native loops, the fast path's second tier (Note [Native loops] in src/ember/jit/loop_codegen.cc)


def _native_loop_cases():
    def bench(tf):  # bench/control_flow.py's "while 10k", shorter
        @tf.function
        def f(n, x):
            return tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.999 + 0.5), (0, x))
        return f(tf.constant(500), tf.constant(1.0))

    def vector(tf):  # transcendentals over a vector, a captured scalar broadcast into it, a float condition
        scale = tf.constant(0.75)

        @tf.function
        def f(x, t):
            def body(x, t):
                return tf.sin(x) * scale + tf.exp(t * 0.1) - tf.tanh(x * t), t + 1.0
            return tf.while_loop(lambda x, t: t < 9.0, body, (x, t))
        return f(tf.constant([0.5, -1.0, 3.0, 1e5, -2e4, 0.0, 7.0, -0.25]), tf.constant(0.0))

    def half(tf):
        @tf.function
        def f(x):
            return tf.while_loop(lambda i, x: i < 20, lambda i, x: (i + 1, x * x - tf.cast(0.5, tf.float16)),
                                 (0, x))
        return f(tf.constant([0.25, -1.5, 2.0], tf.float16))

    return bench, vector, half


@pytest.mark.parametrize("case", _native_loop_cases(), ids=lambda case: case.__name__)
def test_native_loops_have_the_node_loops_and_the_normal_paths_bits(case):
    switches = ember.config.experimental
    previous = switches.get_native_kernels()
    try:
        switches.set_native_kernels("sync")  # the loop is compiled when its step is built
        before = ember._C.native_loop_iterations()
        native, ran = _fast_and_normal(lambda: case(ember))  # also checks them against the normal path
        assert ran > 0 and ember._C.native_loop_iterations() - before == ran
        switches.set_native_kernels("off")  # a new function: its step runs the node loop
        before = ember._C.native_loop_iterations()
        node_loop, ran_again = _fast_and_normal(lambda: case(ember))
        assert ran_again == ran and ember._C.native_loop_iterations() == before
    finally:
        switches.set_native_kernels(previous)
    for a, b in zip(native, node_loop):
        assert a.tobytes() == b.tobytes(), (a, b)
    expected = case(tensorflow)
    for got, want in zip(native, expected):
        np.testing.assert_allclose(got.astype(np.float64), want.numpy().astype(np.float64), rtol=2e-3, atol=1e-5)


def test_switch_case_takes_an_integer_tensor_as_tensorflow():
    import tensorflow as real_tf

    branches = lambda lib: [lambda: lib.constant(10), lambda: lib.constant(20)]  # noqa: E731
    for lib in (ember, real_tf):
        with pytest.raises(TypeError, match="must be a Tensor"):
            lib.switch_case(1, branches(lib))
        with pytest.raises(TypeError, match="must be an integer Tensor"):
            lib.switch_case(lib.constant(1.0), branches(lib))
    for index in (1, 0, 5):
        for dtype in ("int32", "int64"):
            ours = ember.switch_case(ember.constant(index, dtype), branches(ember))
            staged = ember.function(lambda i: ember.switch_case(i, branches(ember)))(ember.constant(index, dtype))
            theirs = real_tf.switch_case(real_tf.constant(index, dtype), branches(real_tf))
            assert int(ours) == int(staged) == int(theirs)

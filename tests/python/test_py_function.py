"""tf.py_function and tf.numpy_function (python/ember/ops/script_ops.py, src/ember/ops/py_func.cc) compared
with TensorFlow running the same program: eagerly and inside a function, their results and static shapes,
gradients through a py_function, errors of the function, program order of their side effects, and kernels
that call back into Python from the executor's threads without deadlocking."""

import threading

import numpy as np
import pytest
import tensorflow

import ember

from tf_differential import same as _same  # noqa: E402


def _both_ways(tf, body, *values):
    """body(tf, *tensors) eagerly and inside tf.function (with unknown dims)."""
    tensors = [tf.constant(v) for v in values]
    spec = [tf.TensorSpec([None] * np.ndim(v), t.dtype) for v, t in zip(values, tensors)]
    return body(tf, *tensors), tf.function(lambda *a: body(tf, *a), input_signature=spec)(*tensors)


@pytest.mark.parametrize("tout", ["single", "list", "tuple"])
def test_py_function_values(tout):
    def body(tf, x, y):
        t = {"single": tf.float32, "list": [tf.float32], "tuple": (tf.float32,)}[tout]
        return tf.py_function(lambda a, b: a * b + tf.reduce_sum(b), [x, y], t)
    _same(lambda tf: _both_ways(tf, body, [1.0, 2.0], [3.0, 4.0]))


def test_py_function_several_outputs_and_dtypes():
    def body(tf, x):
        return tf.py_function(lambda a: (tf.cast(a, tf.int64) * 2, tf.strings.as_string(a), a > 1),
                              [x], [tf.int64, tf.string, tf.bool])
    _same(lambda tf: _both_ways(tf, body, [1, 2, 3]))


def test_py_function_returning_python_values_is_converted_to_tout():
    _same(lambda tf: _both_ways(tf, lambda tf, x: tf.py_function(lambda a: 2.5, [x], tf.float64), [1.0]))


def test_py_function_without_outputs_runs_for_its_effect():
    def case(tf):
        seen = []

        def f(x):
            tf.py_function(lambda a: seen.append(float(a)), [x], [])
            return x + 1
        out = tf.function(f)(tf.constant(2.0))
        return out, seen, tf.py_function(lambda a: seen.append(1), [tf.constant(1.0)], [])
    _same(case)


@pytest.mark.parametrize("api", ["py_function", "numpy_function"])
def test_tout_is_required(api):
    _same(lambda tf: getattr(tf, api)(lambda a: a, [tf.constant(1.0)], None))
    with pytest.raises(TypeError, match=f"@tf.{api}\\(Tout=tout\\)"):
        getattr(ember, api)(lambda a: a, [ember.constant(1.0)], None)


def test_numpy_function_values():
    def body(tf, x):
        return tf.numpy_function(lambda a: (np.sort(a)[::-1].copy(), np.int32(a.size)), [x], [tf.float32, tf.int32])
    _same(lambda tf: _both_ways(tf, body, [3.0, 1.0, 2.0]))


@pytest.mark.parametrize("stateful", [True, False])
def test_numpy_function_stateful_flag(stateful):
    _same(lambda tf: tf.function(lambda x: tf.numpy_function(lambda a: a + 1, [x], tf.int32, stateful=stateful))(
        tf.constant([1, 2])))


def test_static_shape_of_the_results_is_unknown():
    def case(tf):
        shapes = []

        def f(x):
            a = tf.py_function(lambda v: v, [x], tf.float32)
            b = tf.numpy_function(lambda v: v, [x], tf.float32)
            shapes.extend([a.shape, b.shape])
            return a + b
        tf.function(f, input_signature=[tf.TensorSpec([2], tf.float32)]).get_concrete_function()
        return shapes
    _same(case)


# ---- gradients


def test_py_function_gradient_eager():
    def case(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.py_function(lambda v: v * v * v, [x], tf.float32)
        return tape.gradient(y, x)
    _same(case)


def test_py_function_gradient_through_a_function():
    def case(tf):
        x = tf.constant([0.5, 1.5])
        k = tf.constant(3.0)
        f = tf.function(lambda v, n: tf.py_function(lambda a, m: tf.sin(a) * m, [v, n], tf.float32))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x, k)
        return tape.gradient(y, x)
    _same(case)


def test_py_function_gradient_inside_a_function():
    def case(tf):
        @tf.function
        def grads(x, y):
            with tf.GradientTape() as tape:
                tape.watch([x, y])
                a, b = tf.py_function(lambda u, v: (u * v, tf.exp(u)), [x, y], [tf.float32, tf.float32])
                loss = tf.reduce_sum(a) + 2.0 * tf.reduce_sum(b)
            return tape.gradient(loss, [x, y])
        return grads(tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]))
    _same(case)


def test_numpy_function_has_no_gradient():
    def case(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.function(lambda v: tf.numpy_function(lambda a: a * 2, [v], tf.float32))(x)
        return tape.gradient(y, x)
    _same(case)


# ---- errors of the function


def _raising(exception):
    def f(*args):
        raise exception
    return f


@pytest.mark.parametrize("exception", [ValueError("boom"), TypeError("bad type"), KeyError("k"),
                                       StopIteration(), NotImplementedError("later")])
def test_py_function_errors_are_tensorflows(exception):
    _same(lambda tf: tf.py_function(_raising(exception), [tf.constant(1.0)], tf.float32))
    _same(lambda tf: tf.function(lambda x: tf.py_function(_raising(exception), [x], tf.float32))(tf.constant(1.0)))
    _same(lambda tf: tf.function(lambda x: tf.numpy_function(_raising(exception), [x], tf.float32))(
        tf.constant(1.0)))


def test_numpy_function_eager_raises_the_functions_own_error():
    _same(lambda tf: tf.numpy_function(_raising(KeyError("k")), [tf.constant(1.0)], tf.float32))


def test_error_message_names_the_python_error():
    for lib in (tensorflow, ember):
        with pytest.raises(lib.errors.InvalidArgumentError, match="ValueError: boom"):
            lib.function(lambda x: lib.py_function(_raising(ValueError("boom")), [x], lib.float32))(
                lib.constant(1.0))


def test_numpy_function_result_of_the_wrong_dtype():
    def run(tf):
        return tf.function(lambda x: tf.numpy_function(lambda a: np.float64(1.0), [x], tf.float32))(tf.constant(1.0))
    _same(run)
    with pytest.raises(ember.errors.InvalidArgumentError, match="is double, but expects float"):
        run(ember)


# ---- stateful order and threads


def test_side_effects_keep_program_order():
    def case(tf):
        log = []

        @tf.function
        def f(x):
            for i in range(6):
                tf.py_function(lambda v, i=i: log.append(i), [x], [])
                tf.numpy_function(lambda v, i=i: log.append(10 + i) or v, [x], tf.float32)
            return x
        f(tf.constant(1.0))
        f(tf.constant(2.0))
        return log
    _same(case)


def test_kernels_on_executor_threads_do_not_deadlock():
    """Two chains of matmuls, each ending in callbacks (stateless ones, so nothing orders them), run on two
    inter-op threads, called from several Python threads at once."""
    @ember.function
    def f(a, b):
        outs = []
        for i in range(6):
            a = ember.tanh(ember.matmul(a, a) * 0.01)
            b = ember.tanh(ember.matmul(b, b) * 0.01)
            outs.append(ember.numpy_function(lambda v, i=i: np.float32(v.sum() + i), [a], ember.float32,
                                             stateful=False))
            outs.append(ember.numpy_function(lambda v, i=i: np.float32(v.sum() - i), [b], ember.float32,
                                             stateful=False))
        outs.append(ember.py_function(lambda u, v: ember.reduce_sum(u) + ember.reduce_sum(v), [a, b],
                                      ember.float32))
        return ember.add_n(outs)

    a = ember.constant(np.random.RandomState(0).rand(64, 64).astype(np.float32))
    b = ember.constant(np.random.RandomState(1).rand(64, 64).astype(np.float32))
    assert f.get_concrete_function(a, b)._gf.runs_in_parallel  # the kernels run on the pool's threads
    ember.config.threading.set_inter_op_parallelism_threads(2)
    try:
        expected = float(f(a, b))
        results, errors_seen = [], []

        def worker():
            try:
                for _ in range(5):
                    results.append(float(f(a, b)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors_seen.append(e)

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        ember.config.threading.set_inter_op_parallelism_threads(0)
    assert not any(t.is_alive() for t in threads), "a py_function kernel deadlocked"
    assert not errors_seen
    assert results == [expected] * 15


def test_function_called_from_inside_a_py_function():
    def case(tf):
        inner = tf.function(lambda a: a * 2.0)
        outer = tf.function(lambda x: tf.py_function(lambda v: inner(v) + 1.0, [x], tf.float32))
        return outer(tf.constant([1.0, 2.0]))
    _same(case)


def test_decorator_form():
    def case(tf):
        @tf.py_function(Tout=tf.float32)
        def double(x):
            return x * 2
        return double(tf.constant(3.0)), tf.function(lambda v: double(v))(tf.constant(4.0))
    _same(case)


def test_gradient_skips_inputs_that_are_not_floating_point():
    """(TensorFlow's own py_function gradient fails here: it asks for an int32 gradient.)"""
    x, k = ember.constant([0.5, 1.5]), ember.constant(3)
    f = ember.function(lambda v, n: ember.py_function(lambda a, m: ember.sin(a) * ember.cast(m, ember.float32),
                                                      [v, n], ember.float32))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = f(x, k)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * np.cos([0.5, 1.5]), rtol=1e-6)


@pytest.mark.parametrize("func,tout", [(lambda a: a * 2, "list1"), (lambda a: (a * 2, a), "list2"),
                                       (lambda a: None, "empty"), (lambda a: np.array([1.0, 2.0]), "single")])
def test_numpy_function_eager_results_as_tensorflow(func, tout):
    def case(tf):
        t = {"list1": [tf.float32], "list2": [tf.float32, tf.float32], "empty": [], "single": tf.float32}[tout]
        return tf.numpy_function(func, [tf.constant(1.0)], t)
    _same(case)


# ---- how often the function runs for its gradient (TensorFlow's EagerFunc keeps the forward call's tape)


def _counting(tf):
    calls = []

    def cube(v):
        calls.append(1)
        return v * v * v
    return calls, cube


def _counting_function():
    calls, cube = _counting(ember)
    return calls, ember.function(lambda v: ember.py_function(cube, [v], ember.float32))


def test_gradient_inside_a_function_runs_the_function_once_per_call():
    def case(tf):
        calls, cube = _counting(tf)

        @tf.function
        def grad(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.py_function(cube, [x], tf.float32)
            return tape.gradient(y, x)
        x = tf.constant([1.0, 2.0])
        first = grad(x)
        runs_first = len(calls)
        second = grad(x * 2.0)
        return first, second, runs_first, len(calls)
    _same(case)


def test_gradient_of_a_function_under_a_tape_replays_the_forward_call():
    def case(tf):
        calls, cube = _counting(tf)
        f = tf.function(lambda v: tf.py_function(cube, [v], tf.float32))
        x = tf.constant([1.0, -2.0])
        runs = []
        for scale in (1.0, 3.0):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x * scale)
            runs.append(len(calls))
            g = tape.gradient(y, x)
            runs.append(len(calls))
        return g, runs
    _same(case)


def test_eager_gradient_runs_the_function_once():
    def case(tf):
        calls, cube = _counting(tf)
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.py_function(cube, [x], tf.float32)
        runs = len(calls)
        return tape.gradient(y, x), runs, len(calls)
    _same(case)


def test_second_gradient_of_a_persistent_tape_reruns_the_function():
    # TensorFlow's gradient pops the kept tape, so a second gradient fails with a KeyError (UnknownError);
    # ember runs the function again for it.
    calls, f = _counting_function()
    x = ember.constant(2.0)
    tape = ember.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        y = f(x)
    assert [float(tape.gradient(y, x)) for _ in range(2)] == [12.0, 12.0]
    assert len(calls) == 2


def test_gradient_of_an_earlier_call_is_not_taken_from_a_later_ones_tape():
    # Two calls before either gradient: the kept tape is the second call's, so the first call's gradient
    # runs the function again on its own inputs (TensorFlow would replay the second call's tape).
    calls, f = _counting_function()
    x = ember.constant(1.0)
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y1 = f(x)
        y2 = f(x * 2.0)
    assert float(tape.gradient(y2, x)) == 24.0 and len(calls) == 2
    assert float(tape.gradient(y1, x)) == 3.0 and len(calls) == 3


def test_far_more_than_32_differentiated_py_functions_each_keep_their_tape():
    # A kept tape holds no tape slot: every function keeps its last call's, and each gradient replays it
    # (func runs once per call, as in TensorFlow), while the user's tapes still record.
    calls = []

    def scaled(k):
        def func(a):
            calls.append(k)
            return a * float(k)
        return ember.function(lambda v: ember.py_function(func, [v], ember.float32))

    fs = [scaled(k) for k in range(100)]
    x = ember.constant(1.0)
    for f in fs:  # builds each gradient
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        assert float(tape.gradient(y, x)) == float(fs.index(f))
    assert len(calls) == 100
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ember.add_n([f(x) for f in fs])
    assert float(tape.gradient(y, x)) == 4950.0
    assert len(calls) == 200


# ---- the registry releases a traced function with the last graph that has its op


def _released(make_function, call):
    """Traces a function whose py_function closes over an array, drops it, and says whether the callable and
    the array went (and the handles count went back)."""
    import gc
    import weakref

    gc.collect()  # earlier tests' garbage may hold handles: collected below, they would count as ours
    before = ember._C.py_func_callable_handles()

    class Holder:
        pass
    holder = Holder()
    holder.array = np.ones(1000, np.float32)

    def func(v):
        return v * holder.array[0]
    function = make_function(func)
    assert float(call(function)) == 2.0
    assert ember._C.py_func_callable_handles() > before
    refs = weakref.ref(func), weakref.ref(holder)
    del func, holder, function
    gc.collect()
    return [r() is None for r in refs], ember._C.py_func_callable_handles() - before


@pytest.mark.parametrize("api", ["py_function", "numpy_function"])
def test_a_dropped_function_releases_its_py_function(api):
    def make(func):
        return ember.function(lambda v: getattr(ember, api)(func, [v], ember.float32))
    assert _released(make, lambda f: f(ember.constant(2.0))) == ([True, True], 0)


def test_a_caller_keeps_the_py_function_of_a_function_it_calls():
    import gc
    import weakref

    def plus_one(v):
        return v + 1.0
    inner = ember.function(lambda v: ember.py_function(plus_one, [v], ember.float32))
    outer = ember.function(lambda v: inner(v) * 2.0)
    x = ember.constant(2.0)
    assert float(outer(x)) == 6.0
    ref = weakref.ref(plus_one)
    del inner, plus_one
    gc.collect()
    assert ref() is not None and float(outer(x)) == 6.0
    del outer
    gc.collect()
    assert ref() is None


def test_a_function_that_drops_itself_while_running_finishes():
    import gc

    functions = {}

    def drop_the_function(v):
        functions.clear()
        gc.collect()
        return v + 1.0
    before = ember._C.py_func_callable_handles()
    functions["f"] = ember.function(lambda v: ember.py_function(drop_the_function, [v], ember.float32))
    assert float(functions["f"](ember.constant(1.0))) == 2.0
    gc.collect()
    assert not functions and ember._C.py_func_callable_handles() == before


def test_differentiated_and_branch_functions_are_released_when_their_caches_sweep():
    # The forward and backward functions built for a gradient, and a branch's compiled plan, are cached by
    # their function and dropped in the caches' sweeps: the handles stay bounded as functions come and go.
    x = ember.constant(1.0)
    before = ember._C.py_func_callable_handles()
    for k in range(300):
        f = ember.function(lambda v, b: ember.cond(
            b, lambda: ember.py_function(lambda a: a * 2.0, [v], ember.float32), lambda: v))
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = f(x, ember.constant(True))
        assert float(tape.gradient(y, x)) == 2.0
    del f, tape, y
    assert ember._C.py_func_callable_handles() - before < 200


# ---- GraphDef export


@pytest.mark.parametrize("api", ["py_function", "numpy_function"])
def test_graph_def_holds_the_token_and_tensorflows_attributes(api):
    def case(tf):
        f = tf.function(lambda v: getattr(tf, api)(lambda a: a * 2, [v], tf.float32))
        graph_def = f.get_concrete_function(tf.TensorSpec([2], tf.float32)).graph.as_graph_def()
        node = next(n for n in graph_def.node if n.op in ("EagerPyFunc", "PyFunc"))
        attrs = sorted((k, str(v)) for k, v in node.attr.items() if k != "token")
        return node.op, node.attr["token"].s.startswith(b"pyfunc_"), attrs
    _same(case)


def test_a_saved_model_loaded_in_the_same_process_keeps_its_py_functions(tmp_path):
    import gc

    def case(tf):
        def double(v):
            return v * 2.0
        module = tf.Module()
        module.f = tf.function(lambda v: tf.py_function(double, [v], tf.float32),
                               input_signature=[tf.TensorSpec([], tf.float32)])
        path = str(tmp_path / tf.__name__)
        tf.saved_model.save(module, path)
        loaded = tf.saved_model.load(path)
        del module, double
        gc.collect()
        return loaded.f(tf.constant(3.0))
    _same(case)


def test_a_call_whose_gradient_was_built_runs_when_32_tapes_record():
    # Every tape slot is taken: the call keeps no tape and runs plainly.
    calls, f = _counting_function()
    x = ember.constant(2.0)
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    tape.gradient(y, x)
    held = [ember.GradientTape() for _ in range(32)]
    for tape in held:
        tape.__enter__()
    try:
        assert float(f(x)) == 8.0
    finally:
        for tape in reversed(held):
            tape.__exit__(None, None, None)
    assert len(calls) == 2


def test_second_derivative_through_a_py_function_in_a_function_is_none():
    def case(tf):
        f = tf.function(lambda v: tf.py_function(lambda a: a * a * a, [v], tf.float32))
        x = tf.constant(2.0)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            dy = inner.gradient(y, x)
        return dy, outer.gradient(dy, x)
    _same(case)

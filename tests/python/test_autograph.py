"""AutoGraph: one test per construct, ember.function(autograph) against eager Python and, where the construct
stages, against TensorFlow's tf.function on the same program (each program is written once, as a factory
taking the framework module)."""

import inspect
import warnings

import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import autograph



def _line_of(fn, text):
    """The line number of the first line of ``fn``'s source that contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in the source of {fn}")


def _op_types(fn, *args):
    return {op.type for op in fn.get_concrete_function(*args).graph.get_operations()}


def _both(make, *args, **kwargs):
    """Runs ``make(module)`` under ember.function and tf.function: (ember result, TensorFlow result)."""
    ours = tf.function(make(tf), **kwargs)(*[tf.constant(a) for a in args])
    theirs = real_tf.function(make(real_tf), **kwargs)(*[real_tf.constant(a) for a in args])
    return ours, theirs


def _assert_same(ours, theirs, check_dtype=True):
    flat_ours = ours if isinstance(ours, (tuple, list)) else [ours]
    flat_theirs = theirs if isinstance(theirs, (tuple, list)) else [theirs]
    assert len(flat_ours) == len(flat_theirs)
    for a, b in zip(flat_ours, flat_theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        if check_dtype:
            assert np.asarray(a).dtype == np.asarray(b).dtype


# ---- the seeds -------------------------------------------------------------------------------------------

def _seed_f(tf):
    def f(x, y):
        if tf.equal(y, 0.0):
            return y
        return x / y
    return f


def test_seed_eager_python_control_flow():
    f = _seed_f(tf)
    assert float(f(tf.constant(2.0), tf.constant(2.0))) == 1.0
    assert float(f(tf.constant(2.0), tf.constant(0.0))) == 0.0


def test_seed_without_autograph_the_tensor_if_is_an_error():
    df = tf.function(_seed_f(tf), autograph=False)
    with pytest.raises(TypeError, match="ember.cond"):
        df(tf.constant(2.0), tf.constant(2.0))


def test_seed_staged_with_cond():
    def f(x, y):
        return tf.cond(tf.equal(y, 0.0), lambda: y, lambda: x / y)

    df = tf.function(f)
    assert float(df(tf.constant(2.0), tf.constant(2.0))) == 1.0
    assert float(df(tf.constant(2.0), tf.constant(0.0))) == 0.0


def test_seed_staged_with_autograph_matches_tensorflow():
    df = tf.function(_seed_f(tf))
    for y in (2.0, 0.0, -4.0):
        ours, theirs = _both(_seed_f, 2.0, y)
        _assert_same(ours, theirs)
    df(tf.constant(2.0), tf.constant(2.0))
    df(tf.constant(2.0), tf.constant(0.0))
    assert df.experimental_get_tracing_count() == 1  # one graph serves both branches


class _Cell:
    """The seed's cell: an Elman step with fixed weights."""

    def __init__(self, tf, units=3, features=2):
        self.tf = tf
        rng = np.random.default_rng(0)
        self.w = tf.constant(rng.standard_normal((features, units)).astype(np.float32))
        self.u = tf.constant(rng.standard_normal((units, units)).astype(np.float32) * 0.5)
        self.units = units

    def zero_state(self, batch=4):
        zeros = self.tf.zeros([batch, self.units])
        return zeros, zeros

    def __call__(self, inputs, state):
        new_state = self.tf.tanh(self.tf.matmul(inputs, self.w) + self.tf.matmul(state, self.u))
        return new_state, new_state


def _dynamic_rnn_loop(cell, seq):
    state, output = cell.zero_state()
    for input in seq:  # noqa: A001 - the seed's name
        state, output = cell(input, state)
    return output


def test_seed_dynamic_rnn_loop_over_a_sequence_of_unknown_length():
    seq = np.random.default_rng(1).standard_normal((5, 4, 2)).astype(np.float32)
    cell = _Cell(tf)
    f = tf.function(lambda s: _dynamic_rnn_loop(cell, s),
                    input_signature=[tf.TensorSpec([None, 4, 2], tf.float32)])
    expected = _dynamic_rnn_loop(cell, tf.constant(seq))  # eager: a Python loop
    np.testing.assert_allclose(f(tf.constant(seq)).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    # The same graph runs any length: the loop is staged, not unrolled.
    np.testing.assert_allclose(f(tf.constant(seq[:2])).numpy(), _dynamic_rnn_loop(cell, tf.constant(seq[:2])).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert f.experimental_get_tracing_count() == 1
    tf_cell = _Cell(real_tf)
    theirs = real_tf.function(lambda s: _dynamic_rnn_loop(tf_cell, s),
                              input_signature=[real_tf.TensorSpec([None, 4, 2], real_tf.float32)])(seq)
    np.testing.assert_allclose(f(tf.constant(seq)).numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


# ---- if / elif / else ------------------------------------------------------------------------------------

def _elif(tf):
    def f(x):
        if x > 1.0:
            y = x * 10.0
        elif x > 0.0:
            y = x + 100.0
        else:
            y = -x
        return y
    return f


@pytest.mark.parametrize("x", [2.0, 0.5, -3.0])
def test_if_elif_else_on_tensors_matches_tensorflow(x):
    ours, theirs = _both(_elif, x)
    _assert_same(ours, theirs)
    _assert_same(ours, _elif(tf)(tf.constant(x)))


def test_python_condition_stays_python():
    def make(flag):
        @tf.function
        def f(x):
            if flag:
                x = x * 2.0
            else:
                x = x + 1.0
            return x
        return f

    f = make(True)
    assert float(f(tf.constant(3.0))) == 6.0
    assert float(make(False)(tf.constant(3.0))) == 4.0
    assert not {"If", "StatelessIf"} & _op_types(f, tf.constant(3.0))


def test_tensor_condition_stages_an_if_op():
    f = tf.function(_elif(tf))
    types = _op_types(f, tf.constant(1.0))
    assert {"If", "StatelessIf"} & types, types


def test_variable_defined_in_one_branch_is_an_error_pointing_at_the_if():
    def f(x):
        if x > 0:
            y = x
        return y

    line = _line_of(f, "if x > 0")
    with pytest.raises(ValueError, match=r"'y' must also be initialized in the else branch") as info:
        tf.function(f)(tf.constant(1.0))
    assert f'line {line}' in str(info.value) and __file__ in str(info.value)
    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        real_tf.function(f)(real_tf.constant(1.0))  # the same message as TensorFlow


def test_variable_defined_in_one_branch_is_fine_for_a_python_condition():
    @tf.function
    def f(x):
        if True:
            y = x
        return y

    assert float(f(tf.constant(1.0))) == 1.0


def test_variable_local_to_one_branch_is_not_state():
    def make(tf):
        def f(x):
            if x > 0:
                y = x
                x = y + 1
            return x
        return f
    _assert_same(*_both(make, 1.0))
    _assert_same(*_both(make, -1.0))


def test_return_in_one_branch_only_is_an_error():
    def f(x):
        if x > 0:
            return x

    with pytest.raises(ValueError, match="the else branch must also have a return statement"):
        tf.function(f)(tf.constant(1.0))


def test_branches_with_different_dtypes_are_an_error():
    def f(x):
        if x > 0:
            y = 1
        else:
            y = 1.0
        return y

    with pytest.raises(TypeError, match="'y' has dtype int32 in the main branch, but dtype float32 in the else"):
        tf.function(f)(tf.constant(1.0))


def test_none_at_the_end_of_a_branch_is_an_error():
    def f(x):
        y = None
        if x > 0:
            y = x
        return y

    with pytest.raises(ValueError, match="'y' is None at the end of the else branch"):
        tf.function(f)(tf.constant(1.0))


def test_python_values_assigned_in_branches_become_tensors():
    def make(tf):
        def f(x):
            if x > 0:
                y = 1
            else:
                y = 2
            return y
        return f
    for x in (1.0, -1.0):
        _assert_same(*_both(make, x))


# ---- while ----------------------------------------------------------------------------------------------

def _collatz(tf):
    def f(n):
        steps = 0
        while n > 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps, n
    return f


@pytest.mark.parametrize("n", [1, 6, 27])
def test_while_on_a_tensor_matches_tensorflow(n):
    ours, theirs = _both(_collatz, n)
    _assert_same(ours, theirs)
    _assert_same(ours, _collatz(tf)(tf.constant(n)), check_dtype=False)  # eagerly a Python 0 stays an int


def test_while_on_a_tensor_stages_one_loop():
    f = tf.function(_collatz(tf))
    assert {"While", "StatelessWhile"} & _op_types(f, tf.constant(6))
    f(tf.constant(6))
    f(tf.constant(27))
    assert f.experimental_get_tracing_count() == 1


def test_while_on_python_values_unrolls():
    calls = []

    @tf.function
    def f(x):
        i = 0
        while i < 3:
            calls.append(i)
            x = x * 2.0
            i += 1
        return x

    assert float(f(tf.constant(1.0))) == 8.0
    assert calls == [0, 1, 2]
    assert not {"While", "StatelessWhile"} & _op_types(f, tf.constant(1.0))


def test_loop_variable_changing_dtype_is_an_error():
    def f(x):
        i = 0
        while x < 10:
            x = x + 1
            i = 1.5
        return i

    with pytest.raises(TypeError, match="'i' has dtype int32 before the loop, but dtype float32 after one"):
        tf.function(f)(tf.constant(1.0))


def test_loop_variable_changing_shape_needs_shape_invariants():
    def f(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            x = tf.concat([x, x], 0)
        return x

    with pytest.raises(ValueError, match="'x' has shape \\(1,\\) before the loop, but shape \\(2,\\) after one"):
        tf.function(f)(tf.constant(3))

    def g(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            autograph.experimental.set_loop_options(shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, x], 0)
        return x

    assert tf.function(g)(tf.constant(3)).shape == (8,)


def _first_assigned_in_the_loop(tf):
    def f(x):
        y = None
        while x > 0:
            x = x - 1
            w = x * 2
            y = w + 1
        return w, y
    return f


def test_loop_variables_first_assigned_in_the_loop_match_tensorflow():
    # Undefined (w) or None (y) before the loop: TensorFlow starts them at zeros of the body's dtype and shape.
    _assert_same(*_both(_first_assigned_in_the_loop, 3.0))


def test_loop_variables_first_assigned_in_a_loop_that_never_runs_are_a_runtime_error():
    for module, error in ((tf, tf.errors.InvalidArgumentError), (real_tf, real_tf.errors.InvalidArgumentError)):
        with pytest.raises(error, match="loop must iterate at least once to initialize w, y"):
            module.function(_first_assigned_in_the_loop(module))(module.constant(0.0))


def test_range_loops_iterate_without_indexing_the_range():
    f = tf.function(_sum_tf_range(tf))
    assert "Gather" not in " ".join(_op_types(f, tf.constant(3)))
    assert int(f(tf.constant(4))) == 14


def test_python_loop_whose_condition_becomes_a_tensor_is_an_error():
    def f(x):
        i = 0
        while i < 3:
            i = i + x
        return i

    with pytest.raises(NotImplementedError, match="started as non-Tensor, then changed to Tensor"):
        tf.function(f)(tf.constant(1))


# ---- for ------------------------------------------------------------------------------------------------

def _sum_range(tf):
    def f(n):
        s = 0
        for i in range(n):
            s += i * i
        return s
    return f


def _sum_tf_range(tf):
    def f(n):
        s = 0
        for i in tf.range(n):
            s += i * i
        return s
    return f


def _sum_rows(tf):
    def f(m):
        s = tf.zeros([3])
        for row in m:
            s = s + row * 2.0
        return s
    return f


@pytest.mark.parametrize("make", [_sum_range, _sum_tf_range])
def test_for_over_a_range_of_a_tensor_matches_tensorflow(make):
    for n in (0, 1, 7):
        ours, theirs = _both(make, n)
        _assert_same(ours, theirs)
    assert {"While", "StatelessWhile"} & _op_types(tf.function(make(tf)), tf.constant(3))


def test_for_over_a_tensors_first_dimension_matches_tensorflow():
    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    _assert_same(*_both(_sum_rows, m))
    f = tf.function(_sum_rows(tf), input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    np.testing.assert_allclose(f(tf.constant(m[:1])).numpy(), m[:1].sum(0) * 2)


def test_for_over_a_tensor_array_reads_each_element_in_a_staged_loop():
    # TensorFlow 2.21 raises "'TensorArray' object is not iterable" here even inside tf.function; the issue
    # asks for the loop, so ember stages it (a read per iteration) and matches TensorFlow eagerly, where
    # a TensorArray is not iterable in either.
    def f(m):
        ta = tf.TensorArray(tf.float32, size=tf.shape(m)[0]).unstack(m)
        s = tf.zeros([3])
        for row in ta:
            s = s + row * 2.0
        return s

    staged = tf.function(f, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    for rows in (0, 1, 4):
        m = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        np.testing.assert_allclose(staged(tf.constant(m)).numpy(), m.sum(0) * 2)
    assert {"While", "StatelessWhile"} & _op_types(staged, tf.constant(np.ones((2, 3), np.float32)))
    with pytest.raises(TypeError, match="'TensorArray' object is not iterable"):
        f(tf.constant(np.ones((2, 3), np.float32)))
    with pytest.raises(TypeError, match="'TensorArray' object is not iterable"):
        ta = real_tf.TensorArray(real_tf.float32, size=2).unstack(np.ones((2, 3), np.float32))
        iter(ta)  # TensorFlow's eager TensorArray


def test_for_over_a_python_iterable_unrolls():
    @tf.function
    def f(x):
        for scale in [1.0, 2.0, 3.0]:
            x = x * scale
        for i in range(2):
            x = x + i
        return x

    assert float(f(tf.constant(1.0))) == 7.0
    assert not {"While", "StatelessWhile"} & _op_types(f, tf.constant(1.0))


# ---- break / continue / return ---------------------------------------------------------------------------

def _break_continue(tf):
    def f(n):
        s = 0
        for i in tf.range(n):
            if i > 6:
                break
            if i % 2 == 1:
                continue
            s += i
        return s
    return f


def _while_break(tf):
    def f(x):
        i = tf.constant(0)
        while i < 100:
            x = x * 2
            if x > 50:
                break
            i += 1
        return i, x
    return f


@pytest.mark.parametrize("n", [0, 3, 20])
def test_break_and_continue_in_a_tensor_loop_match_tensorflow(n):
    _assert_same(*_both(_break_continue, n))
    _assert_same(tf.function(_break_continue(tf))(tf.constant(n)), _break_continue(tf)(tf.constant(n)),
                 check_dtype=False)


def test_break_in_a_while_loop_matches_tensorflow():
    _assert_same(*_both(_while_break, 3))


def _python_while_tensor_break(tf):
    def f(x):
        i = 0
        while i < 100:
            x = x * 2
            if x > 50:
                break
            i += 1
        return i, x
    return f


def test_tensor_break_in_a_python_while_loop_is_tensorflows_error():
    # The loop starts on a Python condition; the break flag then becomes a tensor (TensorFlow raises too).
    for module in (tf, real_tf):
        with pytest.raises(NotImplementedError, match="started as non-Tensor, then changed to Tensor"):
            module.function(_python_while_tensor_break(module))(module.constant(3))


def test_break_continue_return_in_python_loops():
    @tf.function
    def f(x):
        for i in range(10):
            if i == 1:
                continue
            if i == 4:
                break
            x = x + i
        for j in [5, 6, 7]:
            if j == 6:
                return x * 10.0
        return x

    assert float(f(tf.constant(0.0))) == 50.0  # 0 + 2 + 3, times ten


def _early_return(tf):
    def f(x):
        if x > 10.0:
            return x - 10.0
        elif x > 0.0:
            x = x * 3.0
        return x + 1.0
    return f


@pytest.mark.parametrize("x", [20.0, 2.0, -2.0])
def test_return_inside_branches_matches_tensorflow(x):
    _assert_same(*_both(_early_return, x))


def test_return_inside_a_tensor_loop_is_tensorflows_error():
    def f(n):
        i = 0
        while i < n:
            if i > 5:
                return i
            i += 1
        return -1

    with pytest.raises(NotImplementedError, match="a return statement cannot be placed inside this TensorFlow loop"):
        tf.function(f)(tf.constant(10))


def test_break_in_a_python_loop_on_a_tensor_condition_is_an_error():
    def f(x):
        for i in [1, 2, 3]:
            if x > i:
                break
            x = x + 1
        return x

    with pytest.raises(NotImplementedError, match="not supported in Python for loops"):
        tf.function(f)(tf.constant(1.0))


# ---- logical operators and conditional expressions -------------------------------------------------------

def _logical(tf):
    def f(x, y):
        a = x > 0 and y > 0
        b = x > 0 or y > 0
        c = not x > 0
        return a, b, c
    return f


@pytest.mark.parametrize("x,y", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)])
def test_and_or_not_on_tensors_match_tensorflow(x, y):
    _assert_same(*_both(_logical, x, y))


def test_and_or_on_tensors_are_lazy():
    counter = tf.Variable(0)

    @tf.function
    def f(n):
        # The right operand counts its runs: it must run only when the left one does not decide.
        a = n > 0 and counter.assign_add(1) > 0
        b = n > 0 or counter.assign_add(10) > 0
        return a, b

    assert [bool(v) for v in f(tf.constant(0))] == [False, True]
    assert int(counter.numpy()) == 10
    assert [bool(v) for v in f(tf.constant(1))] == [True, True]
    assert int(counter.numpy()) == 11


def test_and_or_not_on_python_values_keep_python_semantics():
    @tf.function
    def f(x):
        a = [] or [1]
        b = 0 and 1 / 0
        return x + len(a) + b + (not 0)

    assert float(f(tf.constant(0.0))) == 2.0


def _ifexp(tf):
    def f(x):
        return x * 2.0 if x > 0 else -x
    return f


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_conditional_expression_on_a_tensor_matches_tensorflow(x):
    _assert_same(*_both(_ifexp, x))


# ---- assert and print ------------------------------------------------------------------------------------

def test_assert_on_a_tensor_becomes_assert_op():
    @tf.function
    def f(x):
        assert x > 0, "x must be positive"
        return x * 2.0

    assert float(f(tf.constant(1.0))) == 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
        f(tf.constant(-1.0))


def test_assert_on_a_python_value_is_pythons():
    @tf.function
    def f(x):
        assert x.shape.rank == 0, "scalars only"
        return x

    with pytest.raises(AssertionError, match="scalars only"):
        f(tf.constant([1.0]))


def test_print_stays_pythons(capsys):
    @tf.function
    def f(x):
        print("tracing", x.shape)
        return x + 1.0

    f(tf.constant(1.0))
    f(tf.constant(2.0))
    out = capsys.readouterr().out
    assert out.count("tracing") == 1  # printed while tracing only, as TensorFlow documents


# ---- lists ---------------------------------------------------------------------------------------------

def test_list_append_in_a_python_loop():
    @tf.function
    def f(x):
        out = []
        for i in range(3):
            out.append(x * i)
        return tf.stack(out)

    np.testing.assert_allclose(f(tf.constant(2.0)).numpy(), [0.0, 2.0, 4.0])


def test_list_append_in_a_tensor_loop_is_an_error():
    def f(n):
        out = []
        for i in tf.range(n):
            out.append(i)
        return out

    with pytest.raises(ValueError, match="'out' is a Python list appended to inside a loop that is staged") as info:
        tf.function(f)(tf.constant(3))
    assert f"line {_line_of(f, 'for i in tf.range(n)')}" in str(info.value)
    with pytest.raises(Exception):  # TensorFlow refuses it too (InaccessibleTensorError)
        real_tf.function(f)(real_tf.constant(3))


# ---- calls -------------------------------------------------------------------------------------------

def _helper_abs(x):
    if x < 0:
        return -x
    return x


def test_called_user_functions_are_converted():
    @tf.function
    def f(x):
        return _helper_abs(x) + 1.0

    assert float(f(tf.constant(-2.0))) == 3.0
    assert float(f(tf.constant(2.0))) == 3.0


def test_functions_given_to_cond_and_while_loop_are_converted():
    def make(tf):
        def f(x, n):
            def body(i, acc):
                if i % 2 == 0:  # a tensor condition inside a while_loop body
                    acc = acc + x
                return i + 1, acc

            _, acc = tf.while_loop(lambda i, acc: i < n, body, (tf.constant(0), tf.zeros_like(x)))

            def positive():
                if acc > 2.0:
                    return acc * 10.0
                return acc
            return tf.cond(acc > 0, positive, lambda: acc)
        return f
    for n in (0, 3, 6):
        _assert_same(*_both(make, 1.0, n))


def test_generators_run_as_python_without_a_warning():
    def gen(x):
        for i in range(3):
            yield x * i

    @tf.function
    def f(x):
        return tf.add_n(list(gen(x)))

    with warnings.catch_warnings():
        warnings.simplefilter("error", autograph.AutoGraphWarning)
        assert float(f(tf.constant(2.0))) == 6.0


def test_library_functions_are_not_converted():
    import json

    converted = []

    @tf.function
    def f(x):
        converted.append(np.sum([1, 2]))
        return x + float(json.loads("1.5"))

    assert float(f(tf.constant(1.0))) == 2.5
    assert autograph.api.converted(np.sum, recursive_only=True) is np.sum
    assert autograph.api.converted(tf.reduce_sum, recursive_only=True) is tf.reduce_sum


def test_do_not_convert():
    @autograph.experimental.do_not_convert
    def g(x):
        if x > 0:  # not converted: a tensor condition fails as in plain tracing
            return x
        return -x

    @tf.function
    def f(x):
        return g(x)

    with pytest.raises(TypeError, match="ember.cond"):
        f(tf.constant(1.0))
    assert float(g(tf.constant(-1.0))) == 1.0


def test_methods_and_super_are_converted():
    class Base:
        def scale(self, x):
            return x * 2.0

    class Model(Base):
        def __init__(self, flag):
            self.flag = flag

        @tf.function
        def __call__(self, x):
            if self.flag:
                return super().scale(x)
            return x

    assert float(Model(True)(tf.constant(3.0))) == 6.0
    assert float(Model(False)(tf.constant(3.0))) == 3.0


def test_closures_share_cells():
    scale = 2.0

    def make():
        @tf.function
        def f(x):
            for _ in range(2):
                x = x * scale
            return x
        return f

    f = make()
    assert float(f(tf.constant(1.0))) == 4.0
    scale = 3.0  # noqa: F841 - the converted function reads the same cell
    assert float(make()(tf.constant(1.0))) == 9.0


def test_nested_functions_are_converted():
    @tf.function
    def f(x):
        def inner(y):
            total = y
            for i in range(3):
                if i == 1:
                    continue
                total = total + i
            return total
        return inner(x)

    assert float(f(tf.constant(1.0))) == 3.0


# ---- API and errors --------------------------------------------------------------------------------------

def test_to_code_shows_the_converted_source():
    code = autograph.to_code(_seed_f(tf))
    assert "ag__.if_stmt" in code and "def f(x, y)" in code
    assert "retval_" in code


def test_to_graph_runs_eagerly_as_python():
    g = autograph.to_graph(_seed_f(tf))
    assert float(g(tf.constant(2.0), tf.constant(4.0))) == 0.5
    assert float(g(tf.constant(2.0), tf.constant(0.0))) == 0.0


def test_to_code_of_an_ember_function():
    f = tf.function(_elif(tf))
    assert "ag__.if_stmt" in autograph.to_code(f)


def test_set_verbosity_and_features_are_accepted():
    autograph.set_verbosity(0)
    autograph.set_verbosity(1, alsologtostdout=True)
    autograph.set_verbosity(0)
    assert autograph.experimental.Feature.ALL.name == "ALL"
    assert tf.autograph is autograph


def test_source_not_available_warns_and_runs_unconverted():
    namespace = {"tf": tf}
    exec("def g(x):\n    for i in range(2):\n        x = x + 1.0\n    return x\n", namespace)  # noqa: S102
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tf.function(namespace["g"])(tf.constant(1.0))
    assert float(result) == 3.0
    messages = [str(w.message) for w in caught if issubclass(w.category, autograph.AutoGraphWarning)]
    assert messages and "could not get source code" in messages[0] and "run it as-is" in messages[0]


def test_straight_line_code_without_source_runs_as_it_is_silently():
    namespace = {"tf": tf}
    exec("def g(x):\n    return x * 2.0 + 1.0\n", namespace)  # noqa: S102 - no branch: the same either way
    with warnings.catch_warnings():
        warnings.simplefilter("error", autograph.AutoGraphWarning)
        assert float(tf.function(namespace["g"])(tf.constant(1.0))) == 3.0


def test_to_code_without_source_says_so():
    namespace = {}
    exec("def g(x):\n    return x\n", namespace)  # noqa: S102
    with pytest.raises(autograph.ConversionError, match="could not get source code"):
        autograph.to_code(namespace["g"])


def test_autograph_false_traces_the_function_as_written():
    @tf.function(autograph=False)
    def f(x):
        for i in range(2):
            x = x + 1.0
        return x

    assert float(f(tf.constant(0.0))) == 2.0
    assert "ag__" not in repr(f.python_function.__code__.co_names)


def test_runtime_errors_name_the_users_line_inside_a_branch():
    @tf.function
    def f(x, flag):
        if flag > 0:
            y = tf.matmul(x, x)  # the failing op's line
        else:
            y = x
        return y

    line = _line_of(f.python_function, "the failing op's line")
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"MatMul \(created at test_autograph.py:{line}\)"):
        f(tf.zeros([2, 3]), tf.constant(1))


def test_errors_in_converted_code_point_at_the_users_line():
    @tf.function
    def f(x):
        for i in range(2):
            if i == 1:
                x = x + undefined_name  # noqa: F821 - the line the traceback must show
        return x

    line = _line_of(f.python_function, "undefined_name")
    with pytest.raises(NameError) as info:
        f(tf.constant(1.0))
    frames = [(fr.filename, fr.lineno) for fr in __import__("traceback").extract_tb(info.value.__traceback__)]
    assert (__file__, line) in frames


def test_undefined_after_a_python_condition_is_pythons_error():
    @tf.function
    def f(x):
        if False:
            y = x
        return y  # noqa: F821

    with pytest.raises(UnboundLocalError, match="'y' is used before assignment"):
        f(tf.constant(1.0))


def _recursive_sum(values):
    if not values:
        return 0.0
    return values[0] + _recursive_sum(values[1:])


def test_recursive_module_level_function_is_converted_and_reads_itself_as_a_global():
    @tf.function
    def f(x):
        return _recursive_sum([x, x, 1.0])

    assert float(f(tf.constant(2.0))) == 5.0
    assert "ag__" in autograph.to_code(_recursive_sum)


_LAMBDAS = {"a": (lambda x: x * 2.0
                  + 1.0, lambda x: x - 1.0)}


def test_lambdas_are_converted_from_their_exact_source_span():
    first, second = _LAMBDAS["a"]
    assert "x * 2.0\n" in autograph.to_code(first) or "x * 2.0 + 1.0" in autograph.to_code(first)
    assert "x - 1.0" in autograph.to_code(second)

    @tf.function
    def f(x):
        return first(x) + second(x)

    assert float(f(tf.constant(3.0))) == 9.0  # 7 + 2: the lambda's second line is not dropped


def test_conditional_expression_in_a_lambda_on_python_values():
    pick = lambda flag, x: x * 2.0 if flag else x  # noqa: E731 - a lambda on purpose

    @tf.function
    def f(x):
        return pick(True, x) + pick(False, x)

    assert float(f(tf.constant(1.0))) == 3.0


class _Texts:
    @tf.function
    def tagged(self, x):
        text = """first
        second"""
        for _ in range(1):
            x = x + float(len(text))
        return x


def test_indented_source_keeps_its_strings_and_columns():
    # A method's source is indented: converting it must not dedent the string's second line.
    expected = len("first\n        second")
    assert float(_Texts().tagged(tf.constant(0.0))) == expected


_TRACE_COUNTER = 0


def test_global_declared_names_are_assigned_from_nested_branches_and_loops():
    @tf.function
    def f(x):
        global _TRACE_COUNTER
        for i in range(3):
            if i > 0:
                _TRACE_COUNTER += 1
        return x

    f(tf.constant(1.0))
    assert _TRACE_COUNTER == 2


def test_while_else_and_try_break_keep_python_semantics():
    @tf.function
    def f(x, n):
        i = 0
        while i < n:
            i += 1
            if i == 2:
                continue
            x = x + 1.0
        else:
            x = x * 10.0
        for k in range(3):
            try:
                if k == 1:
                    raise ValueError("stop")
                x = x + 1.0
            except ValueError:
                break
        return x

    assert float(f(tf.constant(0.0), 3)) == 21.0


def test_a_staged_loops_test_runs_once_per_iteration():
    calls = tf.Variable(0)

    def make(module, counter):
        def f(n):
            i = module.constant(0)
            while counter.assign_add(1) > 0 and i < n:  # a stateful test: counted each time it runs
                i += 1
            return i
        return f

    assert int(tf.function(make(tf, calls))(tf.constant(3))) == 3
    their_calls = real_tf.Variable(0)
    real_tf.function(make(real_tf, their_calls))(real_tf.constant(3))
    assert int(calls.numpy()) == int(their_calls.numpy()) == 4  # deciding to stage adds no run of the test


def _assigns_outer_tensors(tf):
    def f(n, y, z):
        x = tf.constant(0.0)
        for i in tf.range(n):
            x = y  # an argument of the function, unchanged, as the loop's result
        if n > 1:
            w = z
        else:
            w = y
        return x, w
    return f


@pytest.mark.parametrize("n", [0, 1, 3])
def test_branches_and_bodies_may_return_outer_tensors_unchanged(n):
    _assert_same(*_both(_assigns_outer_tensors, n, 5.0, 7.0))


class _Clipper:
    def __init__(self, limit):
        self.limit = limit

    def __call__(self, x):
        if x > self.limit:
            x = self.limit + 0.0 * x
        return x


def test_callable_objects_are_converted():
    f = tf.function(_Clipper(2.0))
    assert float(f(tf.constant(5.0))) == 2.0
    assert float(f(tf.constant(1.0))) == 1.0

    @tf.function
    def g(x):
        return _Clipper(3.0)(x)

    assert float(g(tf.constant(5.0))) == 3.0


class _Holder:
    pass


def _attribute_state(tf, holder):
    def f(x):
        holder.v = tf.constant(0.0)
        if x > 0:
            holder.v = x
        for _ in tf.range(3):
            holder.v = holder.v + 1.0
        return holder.v
    return f


@pytest.mark.parametrize("x", [2.0, -2.0])
def test_attributes_assigned_in_staged_control_flow_match_tensorflow(x):
    ours = tf.function(_attribute_state(tf, _Holder()))(tf.constant(x))
    theirs = real_tf.function(_attribute_state(real_tf, _Holder()))(real_tf.constant(x))
    _assert_same(ours, theirs)


def test_attribute_set_in_one_branch_only_is_an_error():
    holder = _Holder()

    def f(x):
        if x > 0:
            holder.w = x
        return x

    with pytest.raises(ValueError, match="'holder.w' must also be initialized in the else branch"):
        tf.function(f)(tf.constant(1.0))


def test_a_source_file_edited_after_loading_is_not_converted_from_the_wrong_text(tmp_path, monkeypatch):
    import importlib
    import linecache

    path = tmp_path / "ag_edited_module.py"
    path.write_text("def g(x):\n    for i in range(2):\n        x = x + 1.0\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ag_edited_module")
    path.write_text("def g(y):\n    for i in range(2):\n        y = y * 100.0\n    return y\n")  # other text
    linecache.clearcache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", autograph.AutoGraphWarning)  # whether a cached copy of the old text
        # converts it or the mismatch runs g as it is, g must run as loaded, not as the file reads now
        assert float(tf.function(module.g)(tf.constant(1.0))) == 3.0

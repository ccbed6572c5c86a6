"""Issue 15: tf.debugging.Assert (the stateful Assert op) and the assert_* checks, eagerly and inside
ember.function (program order by automatic control dependencies, trip counts and shapes known only when the
function runs), and tf.case's staged checks, compared with TensorFlow running the same program: values and
the class of an error."""

import numpy as np
import pytest
import tensorflow

import ember

from tf_differential import same as _same  # noqa: E402


def _staged(tf, fn, *values, signature=None):
    tensors = [tf.constant(v) for v in values]
    spec = signature or [tf.TensorSpec([None] * np.ndim(v), tf.as_dtype(np.asarray(v).dtype.name)) for v in values]
    return tf.function(fn, input_signature=spec)(*tensors)


def _returns_x(check):
    """A function that runs check(tf, x) and returns x + 1 (TensorFlow's function must return tensors)."""
    def make(tf):
        def f(*args):
            check(tf, *args)
            return args[0] + 1
        return f
    return make


CHECKS = {
    "Assert_true": (lambda tf, x: tf.debugging.Assert(tf.reduce_all(x > 0), ["x:", x]), [1.0, 2.0]),
    "Assert_false": (lambda tf, x: tf.debugging.Assert(tf.reduce_all(x > 0), ["x:", x], summarize=2),
                     [1.0, -2.0]),
    "Assert_alias": (lambda tf, x: tf.Assert(tf.reduce_all(x > 0), [x]), [-1.0]),
    "assert_equal_ok": (lambda tf, x: tf.debugging.assert_equal(x, x * 1.0), [1.0, 2.0]),
    "assert_equal_fails": (lambda tf, x: tf.debugging.assert_equal(x, x + 1.0, message="msg"), [1.0, 2.0]),
    "assert_equal_broadcast": (lambda tf, x: tf.debugging.assert_equal(x, 1.0), [1.0, 1.0]),
    "assert_equal_alias": (lambda tf, x: tf.assert_equal(x, 2.0), [1.0]),
    "assert_less_ok": (lambda tf, x: tf.debugging.assert_less(x, x + 1.0), [1.0, 2.0]),
    "assert_less_fails": (lambda tf, x: tf.debugging.assert_less(x, 2.0), [1.0, 2.0]),
    "assert_less_alias": (lambda tf, x: tf.assert_less(x, 0.0), [1.0]),
    "assert_less_equal": (lambda tf, x: tf.debugging.assert_less_equal(x, 2.0), [1.0, 2.0]),
    "assert_greater_ok": (lambda tf, x: tf.debugging.assert_greater(x, 0.0), [1.0, 2.0]),
    "assert_greater_fails": (lambda tf, x: tf.debugging.assert_greater(x, 1.0), [1.0, 2.0]),
    "assert_greater_alias": (lambda tf, x: tf.assert_greater(x, 5.0), [1.0]),
    "assert_greater_equal": (lambda tf, x: tf.debugging.assert_greater_equal(x, 1.5), [1.0, 2.0]),
    "assert_none_equal": (lambda tf, x: tf.debugging.assert_none_equal(x, 2.0), [1.0, 2.0]),
    "assert_positive_fails": (lambda tf, x: tf.debugging.assert_positive(x), [0.0, 2.0]),
    "assert_positive_ok": (lambda tf, x: tf.debugging.assert_positive(x), [0.5, 2.0]),
    "assert_negative": (lambda tf, x: tf.debugging.assert_negative(x), [-1.0, 2.0]),
    "assert_non_negative_ok": (lambda tf, x: tf.debugging.assert_non_negative(x), [0.0, 2.0]),
    "assert_non_negative_fails": (lambda tf, x: tf.debugging.assert_non_negative(x), [-0.5, 2.0]),
    "assert_non_positive": (lambda tf, x: tf.debugging.assert_non_positive(x), [0.0, -2.0]),
    "assert_int": (lambda tf, x: tf.debugging.assert_less(x, tf.constant([3, 3])), np.array([1, 4], np.int32)),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_checks_eager(name):
    check, value = CHECKS[name]
    _same(lambda tf: _returns_x(check)(tf)(tf.constant(value)))


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_checks_staged_with_unknown_shapes(name):
    check, value = CHECKS[name]
    array = np.asarray(value)
    _same(lambda tf: _staged(tf, _returns_x(check)(tf), array.astype(np.float32) if array.dtype.kind == "f" else array))


def test_checks_known_while_tracing_raise_while_tracing():
    """A check whose values are constants fails when the function is traced, as in TensorFlow."""
    for lib in (tensorflow, ember):
        traced = []

        def f():
            traced.append(1)
            lib.debugging.assert_less(lib.constant(3), lib.constant(2))
            return lib.constant(0)

        with pytest.raises(lib.errors.InvalidArgumentError):
            lib.function(f).get_concrete_function()
        assert traced


RANK_AND_SHAPES = {
    "rank_ok": lambda tf, x: tf.debugging.assert_rank(x, 2),
    "rank_fails": lambda tf, x: tf.debugging.assert_rank(x, 1),
    "rank_alias": lambda tf, x: tf.assert_rank(x, 3),
    "rank_at_least": lambda tf, x: tf.debugging.assert_rank_at_least(x, 3),
    "rank_in": lambda tf, x: tf.debugging.assert_rank_in(x, [1, 2]),
    "scalar": lambda tf, x: tf.debugging.assert_scalar(x),
    "type_fails": lambda tf, x: tf.debugging.assert_type(x, tf.int32),
    "type_ok": lambda tf, x: tf.debugging.assert_type(x, tf.float32),
    "integer": lambda tf, x: tf.debugging.assert_integer(x),
    "shapes_ok": lambda tf, x: tf.debugging.assert_shapes([(x, ("N", "D")), (x[:, 0], ("N",))]),
    "shapes_fails": lambda tf, x: tf.debugging.assert_shapes([(x, ("N", "D")), (x[0], ("N",))]),
    "shapes_fixed_size": lambda tf, x: tf.debugging.assert_shapes([(x, (2, "D"))]),
    "shapes_rank_fails": lambda tf, x: tf.debugging.assert_shapes([(x, ("N",))]),
}


@pytest.mark.parametrize("name", sorted(RANK_AND_SHAPES))
def test_rank_and_shape_checks_eager(name):
    _same(lambda tf: _returns_x(RANK_AND_SHAPES[name])(tf)(tf.ones([2, 3])))


@pytest.mark.parametrize("name", sorted(RANK_AND_SHAPES))
def test_rank_and_shape_checks_staged_with_none_dims(name):
    _same(lambda tf: _staged(tf, _returns_x(RANK_AND_SHAPES[name])(tf), np.ones([2, 3], np.float32)))


def test_shapes_staged_with_unknown_rank():
    _same(lambda tf: _staged(tf, _returns_x(lambda tf, x: tf.debugging.assert_rank(x, 2))(tf),
                             np.ones([2], np.float32), signature=[tf.TensorSpec(None, tf.float32)]))


def test_assert_message_names_the_data():
    @ember.function(input_signature=[ember.TensorSpec([None], ember.float32)])
    def f(x):
        ember.debugging.Assert(ember.reduce_all(x > 0), ["x must be positive:", x])
        return x

    with pytest.raises(ember.errors.InvalidArgumentError, match=r"assertion failed: \[x must be positive:\] "
                                                                r"\[1 -2\]"):
        f(ember.constant([1.0, -2.0]))
    assert f(ember.constant([1.0])).numpy().tolist() == [1.0]


def test_assert_keeps_program_order_and_is_not_pruned():
    """The Assert's result is unused; it still runs, and before the print that follows it."""
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "log.txt")

    @ember.function(input_signature=[ember.TensorSpec([None], ember.float32)])
    def f(x):
        ember.print("before", output_stream=f"file://{path}")
        ember.debugging.assert_positive(x)
        ember.print("after", output_stream=f"file://{path}")
        return x * 2.0

    f(ember.constant([1.0]))
    with pytest.raises(ember.errors.InvalidArgumentError):
        f(ember.constant([-1.0]))
    assert open(path).read().split() == ["before", "after", "before"]


def test_assert_inside_a_loop_body_fails_at_the_bad_iteration():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(x):
            def body(i, s):
                tf.debugging.assert_non_negative(x[i])
                return i + 1, s + x[i]
            return tf.while_loop(lambda i, s: i < tf.shape(x)[0], body, (0, 0.0))[1]
        return [f(tf.constant([1.0, 2.0])), f(tf.constant([1.0, -2.0, 3.0]))]

    _same(case)


def test_assert_condition_must_be_a_scalar_staged():
    @ember.function(input_signature=[ember.TensorSpec([None], ember.float32)])
    def f(x):
        ember.debugging.Assert(x > 0, [x])
        return x

    with pytest.raises((ValueError, ember.errors.InvalidArgumentError)):
        f(ember.constant([1.0, -1.0]))


def test_tf_and_compat_v1_names():
    for name in ("Assert", "assert_equal", "assert_greater", "assert_less", "assert_rank"):
        assert getattr(ember, name) is getattr(ember.debugging, name)
        assert hasattr(tensorflow, name)
    for name in ("Assert", "assert_equal", "assert_less", "assert_positive", "assert_non_negative", "assert_rank",
                 "assert_type", "assert_scalar"):
        assert getattr(ember.compat.v1, name) is getattr(ember.debugging, name)


# ---- tf.case's staged checks


@pytest.mark.parametrize("x", [1, 4, 9])
def test_case_without_default_checks_the_last_predicate_staged(x):
    _same(lambda tf: tf.function(lambda v: tf.case([(v > 5, lambda: tf.constant(1)), (v > 3, lambda: tf.constant(2))]),
                                 input_signature=[tf.TensorSpec([], tf.int32)])(tf.constant(x)))


@pytest.mark.parametrize("x", [1, -1, -5])
def test_case_exclusive_staged(x):
    _same(lambda tf: tf.function(lambda v: tf.case([(v > 0, lambda: tf.constant(1)), (v > -3, lambda: tf.constant(2))],
                                                   default=lambda: tf.constant(3), exclusive=True),
                                 input_signature=[tf.TensorSpec([], tf.int32)])(tf.constant(x)))


def test_case_exclusive_eager():
    _same(lambda tf: tf.case([(tf.constant(True), lambda: 1), (tf.constant(True), lambda: 2)],
                             default=lambda: 3, exclusive=True))
    _same(lambda tf: tf.case([(tf.constant(True), lambda: 1), (tf.constant(True), lambda: 2)], exclusive=True))
    _same(lambda tf: tf.case([(tf.constant(False), lambda: 1), (tf.constant(False), lambda: 2)]))


# ---- tf.ensure_shape (the EnsureShape op)


def _message(run, lib):
    try:
        run(lib)
    except Exception as e:  # noqa: BLE001 - the message is what is compared
        return str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("shape", [[2, 3], [None, 3], [2, None], None, tensorflow.TensorShape([None, None]),
                                   [3, 3], [None, 3, 1], [], [6]])
def test_ensure_shape_eager(shape):
    def case(tf):
        shape_arg = tf.TensorShape(shape.as_list()) if isinstance(shape, tensorflow.TensorShape) else shape
        return tf.ensure_shape(tf.reshape(tf.range(6.0), [2, 3]), shape_arg)
    _same(case)


def test_ensure_shape_eager_message_is_tensorflows():
    def run(tf):
        tf.ensure_shape(tf.zeros([2, 3]), [None, 4])
    expected = "Shape of tensor input [2,3] is not compatible with expected shape [?,4]."
    assert expected in _message(run, tensorflow) and expected in _message(run, ember)


def test_ensure_shape_refines_the_static_shape_in_a_function():
    def case(tf):
        seen = []

        def f(x):
            y = tf.ensure_shape(x, [None, 3])
            seen.append(y.shape)
            return y * 2
        out = tf.function(f, input_signature=[tf.TensorSpec([None, None], tf.float32)])(tf.ones([2, 3]))
        return seen[0], out
    _same(case)


@pytest.mark.parametrize("value", [[[1.0, 2.0, 3.0]], [[1.0, 2.0]], [[1.0], [2.0]]])
def test_ensure_shape_checks_at_run_time_in_a_function(value):
    _same(lambda tf: tf.function(lambda x: tf.ensure_shape(x, [1, 3]),
                                 input_signature=[tf.TensorSpec([None, None], tf.float32)])(tf.constant(value)))


def test_ensure_shape_run_time_message_in_a_function():
    def run(tf):
        tf.function(lambda x: tf.ensure_shape(x, [None, 3]),
                    input_signature=[tf.TensorSpec([None, None], tf.float32)])(tf.zeros([2, 4]))
    for lib in (tensorflow, ember):
        assert "[2,4] is not compatible with expected shape [?,3]." in _message(run, lib)


def test_ensure_shape_static_mismatch_is_a_value_error_while_tracing():
    _same(lambda tf: tf.function(lambda x: tf.ensure_shape(x, [5]),
                                 input_signature=[tf.TensorSpec([3], tf.float32)]).get_concrete_function())


def test_ensure_shape_gradient_is_identity():
    def case(tf):
        x = tf.constant([[1.0, 2.0, 3.0]])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.ensure_shape(x * x, [1, None])
        eager = tape.gradient(y, x)

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
        def traced(v):
            with tf.GradientTape() as inner:
                inner.watch(v)
                w = tf.reduce_sum(tf.ensure_shape(v * 3.0, [None, 3]))
            return inner.gradient(w, v)
        return eager, traced(x)
    _same(case)


def test_ensure_shape_non_float_and_bad_dims():
    _same(lambda tf: tf.ensure_shape([1, 2], [2]))
    _same(lambda tf: tf.ensure_shape(tf.constant(["a", "b"]), [None]))
    _same(lambda tf: tf.ensure_shape(tf.zeros([2]), [2.5]))


# ---- assert_near, assert_same_float_dtype, is_numeric_tensor, traceback filtering switches


def _outcome(fn):
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - compared by class
        return ("error", type(e).__name__)
    return ("ok", None if value is None else str(value))


@pytest.mark.parametrize("case", [
    lambda tf: tf.debugging.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0000001])),
    lambda tf: tf.debugging.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.1])),
    lambda tf: tf.debugging.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.1]), rtol=0.1),
    lambda tf: tf.debugging.assert_near(tf.constant([1.0]), tf.constant([1.05]), atol=0.1),
    lambda tf: tf.debugging.assert_near(tf.constant([1.0], tf.float64), tf.constant([1.0 + 1e-14], tf.float64)),
    lambda tf: tf.debugging.assert_near(tf.constant([1, 2]), tf.constant([1, 2])),
    lambda tf: tf.debugging.assert_near(tf.constant([1.0]), tf.constant([1.0], tf.float64)),
    lambda tf: tf.debugging.assert_same_float_dtype([tf.constant(1.0), tf.constant(2.0)]),
    lambda tf: tf.debugging.assert_same_float_dtype([tf.constant(1.0), tf.constant(2.0, tf.float64)]),
    lambda tf: tf.debugging.assert_same_float_dtype([tf.constant(1)]),
    lambda tf: tf.debugging.assert_same_float_dtype(None, tf.float16),
    lambda tf: tf.debugging.assert_same_float_dtype(None, None),
    lambda tf: tf.debugging.assert_same_float_dtype([tf.constant(1.0)], tf.float64),
    lambda tf: [tf.debugging.is_numeric_tensor(v) for v in
                (tf.constant(1), tf.constant("a"), 3, tf.constant(True), tf.constant(1.5, tf.float16))],
])
def test_more_checks_match_tensorflow(case):
    assert _outcome(lambda: case(ember)) == _outcome(lambda: case(tensorflow))


def test_assert_near_inside_a_function_checks_when_it_runs():
    @ember.function(input_signature=[ember.TensorSpec([None], ember.float32)] * 2)
    def f(x, y):
        ember.debugging.assert_near(x, y, atol=0.01)
        return x + 1

    np.testing.assert_array_equal(f(ember.constant([1.0]), ember.constant([1.005])).numpy(), [2.0])
    with pytest.raises(ember.errors.InvalidArgumentError, match="not equal to tolerance"):
        f(ember.constant([1.0]), ember.constant([1.5]))


def test_traceback_filtering_switches():
    assert ember.debugging.is_traceback_filtering_enabled()
    ember.debugging.disable_traceback_filtering()
    try:
        assert not ember.debugging.is_traceback_filtering_enabled()
    finally:
        ember.debugging.enable_traceback_filtering()
    assert ember.debugging.is_traceback_filtering_enabled()


@pytest.mark.parametrize("values, problem", [([1.0, float("nan"), float("inf")], "Inf and NaN"),
                                             ([1.0, float("nan")], "NaN"), ([float("-inf")], "Inf")])
def test_check_numerics_raises_tensorflows_message(values, problem):
    for module in (ember, tensorflow):
        with pytest.raises(module.errors.InvalidArgumentError, match=f"boom : Tensor had {problem} values"):
            module.debugging.check_numerics(module.constant(values), "boom")
        staged = module.function(lambda x, m=module: m.debugging.check_numerics(x, "in fn") + 1)
        with pytest.raises(module.errors.InvalidArgumentError, match=f"in fn : Tensor had {problem} values"):
            staged(module.constant(values))


def test_check_numerics_passes_values_and_gradients_as_tensorflow():
    def run(tf):
        x = tf.constant([1.0, -2.0, 3.5], tf.float64)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.debugging.check_numerics(x * x, "finite")
        staged = tf.function(lambda v: tf.debugging.check_numerics(v, "finite") * 2)(x)
        return y.numpy(), tape.gradient(y, x).numpy(), staged.numpy()

    for got, want in zip(run(ember), run(tensorflow)):
        np.testing.assert_array_equal(got, want)
    assert ember.compat.v1.check_numerics is ember.debugging.check_numerics
    with pytest.raises(ember.errors.InvalidArgumentError):  # TensorFlow declares it for floats only
        ember.debugging.check_numerics(ember.constant([1, 2]), "ints")

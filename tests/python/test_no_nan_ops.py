"""tf.math.divide_no_nan / multiply_no_nan / xdivy / xlogy / xlog1py (python/ember/ops/no_nan_ops.py) against
TensorFlow: values where an operand is 0, inf or nan, broadcasting, and the gradients of both operands,
eagerly and inside a function."""
import numpy as np
import pytest
import tensorflow

import ember as tf

NAMES = ["divide_no_nan", "multiply_no_nan", "xdivy", "xlogy", "xlog1py"]
INF, NAN = float("inf"), float("nan")


def _operands(dtype):
    x = np.array([[0.0, 1.5, -2.0, INF], [0.0, 3.0, NAN, 0.5], [2.0, 0.0, 1.0, -0.25]], dtype)
    y = np.array([0.0, 2.0, 0.5, 0.0], dtype)  # broadcast along x's rows
    return x, y


def _value_and_gradients(fw, name, x, y, staged):
    def run(x, y):
        with fw.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            out = getattr(fw.math, name)(x, y)
            loss = fw.reduce_sum(out * fw.constant([1.0, 2.0, 3.0, 4.0], out.dtype))
        return [out] + tape.gradient(loss, [x, y])

    if staged:
        run = fw.function(run)
    return [t.numpy() for t in run(fw.constant(x), fw.constant(y))]


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NAMES)
def test_values_and_gradients_are_tensorflows(name, dtype, staged):
    x, y = _operands(dtype)
    if name in ("xlogy", "xlog1py"):
        y = np.abs(y)  # logs of negative numbers are nan in both; keep the comparison about the masking
    got = _value_and_gradients(tf, name, x, y, staged)
    want = _value_and_gradients(tensorflow, name, x, y, staged)
    for g, w, what in zip(got, want, ("value", "dx", "dy")):
        assert g.shape == w.shape, what
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=f"{name} {what}")


@pytest.mark.parametrize("name", NAMES)
def test_the_masked_operand_can_be_anything(name):
    # the operand that is not tested for 0 is inf or nan: the result is still 0 where the mask holds
    masked_is_y = name in ("divide_no_nan", "multiply_no_nan")
    zeros, others = np.zeros(3, np.float32), np.array([INF, NAN, -INF], np.float32)
    x, y = (others, zeros) if masked_is_y else (zeros, others)
    np.testing.assert_array_equal(getattr(tf.math, name)(x, y).numpy(), getattr(tensorflow.math, name)(x, y).numpy())
    np.testing.assert_array_equal(getattr(tf.math, name)(x, y).numpy(), zeros)


def test_divide_no_nan_divides_integers_in_floating_point_as_tensorflow():
    for dtype in (np.int8, np.int32, np.int64):
        x, y = np.array([3, 1, 0], dtype), np.array([0, 2, 0], dtype)
        got, want = tf.math.divide_no_nan(x, y), tensorflow.math.divide_no_nan(x, y)
        assert got.dtype.name == want.dtype.name
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name, op", [("multiply_no_nan", "MulNoNan"), ("xdivy", "Xdivy"), ("xlogy", "Xlogy"),
                                      ("xlog1py", "Xlog1py")])
def test_integer_operands_are_refused(name, op):
    with pytest.raises(tensorflow.errors.InvalidArgumentError):
        getattr(tensorflow.math, name)(tensorflow.constant([1, 2]), tensorflow.constant([0, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=op):
        getattr(tf.math, name)(tf.constant([1, 2]), tf.constant([0, 1]))

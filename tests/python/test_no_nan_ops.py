"""tf.math.divide_no_nan / multiply_no_nan / xdivy / xlogy / xlog1py (the DivNoNan, MulNoNan, Xdivy, Xlogy and
Xlog1py rows of src/ember/kernels/elementwise_ops.h; python/ember/ops/no_nan_ops.py) against TensorFlow:
values where an operand is 0, inf or nan, broadcasting, complex operands, first and second gradients of both
operands eagerly and inside a function, and GraphDefs holding the ops in either direction."""
import numpy as np
import pytest
import tensorflow

import ember as tf

NAMES = ["divide_no_nan", "multiply_no_nan", "xdivy", "xlogy", "xlog1py"]
OPS = {"divide_no_nan": "DivNoNan", "multiply_no_nan": "MulNoNan", "xdivy": "Xdivy", "xlogy": "Xlogy",
       "xlog1py": "Xlog1py"}
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


def _second_order(fw, name, x, y, staged):
    """d/dx and d/dy of sum(w * d(sum out)/dx + v * d(sum out)/dy): every second derivative of the op."""
    def run(x, y):
        with fw.GradientTape(persistent=True) as outer:
            outer.watch([x, y])
            with fw.GradientTape() as inner:
                inner.watch([x, y])
                out = fw.reduce_sum(getattr(fw.math, name)(x, y))
            gx, gy = inner.gradient(out, [x, y])
            mixed = fw.reduce_sum(gx * fw.constant([[1.0], [2.0], [3.0]], x.dtype)) + fw.reduce_sum(gy * 0.5)
        return outer.gradient(mixed, [x, y])

    if staged:
        run = fw.function(run)
    return [t.numpy() for t in run(fw.constant(x), fw.constant(y))]


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", NAMES)
def test_second_order_gradients_are_tensorflows(name, staged):
    x, y = _operands(np.float64)
    if name in ("xlogy", "xlog1py"):
        y = np.abs(y)
    got, want = _second_order(tf, name, x, y, staged), _second_order(tensorflow, name, x, y, staged)
    for g, w, what in zip(got, want, ("dx", "dy")):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=f"{name} {what}")


@pytest.mark.parametrize("name", NAMES)
def test_complex_values_are_tensorflows(name):
    # (x at y == 0 is real: std::complex gives inf+infj for (1+2j) / 0 where TensorFlow's Eigen gives nan+nanj,
    # for RealDiv as for Xdivy)
    x = np.array([0, 2, -0.5j, 3 + 1j], np.complex128)
    y = np.array([0.5 - 1j, 0, 2 + 2j, -1j], np.complex128)
    np.testing.assert_allclose(getattr(tf.math, name)(x, y).numpy(), getattr(tensorflow.math, name)(x, y).numpy(),
                               rtol=1e-12)


def _program(fw):
    def program(x, y):
        return [getattr(fw.math, name)(x, y) for name in NAMES]
    return program


def test_ember_runs_tensorflows_graph_of_the_ops():
    signature = [tensorflow.TensorSpec([None, 4], tensorflow.float32), tensorflow.TensorSpec([4], tensorflow.float32)]
    concrete = tensorflow.function(_program(tensorflow), input_signature=signature).get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert set(OPS.values()) <= {n.op for n in gd.node}
    graph = tf.graph_util.import_graph_def(gd)
    fn = tf.NewGraphFunction(graph, ["x:0", "y:0"], [t.name for t in concrete.outputs])
    x, y = _operands(np.float32)
    y = np.abs(y)
    for g, w in zip(fn(x, y), concrete(tensorflow.constant(x), tensorflow.constant(y))):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, equal_nan=True)


def test_tensorflow_runs_embers_graph_of_the_ops():
    from test_graph_def_tf import run_in_tensorflow

    program = tf.function(_program(tf), input_signature=[tf.TensorSpec([None, 4], tf.float32),
                                                          tf.TensorSpec([4], tf.float32)])
    graph = program.get_concrete_function().graph
    gd = graph.as_graph_def()
    assert set(OPS.values()) <= {n.op for n in gd.node}
    x, y = _operands(np.float32)
    y = np.abs(y)
    got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs], [t.name for t in graph.outputs],
                            x, y)
    for g, w in zip(got, program(x, y)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
def test_fused_with_neighbouring_element_wise_ops(name):
    op = getattr(tf.math, name)
    spec = tf.TensorSpec([3, 4], tf.float32)
    fn = tf.function(lambda x, y: tf.sin(op(x * 2.0, y)) + 1.0, input_signature=[spec, spec])
    assert "FusedElementwise" in fn.get_concrete_function().graph.optimized_as_text()
    x, y = _operands(np.float32)
    y = np.abs(np.broadcast_to(y, x.shape)).copy()
    np.testing.assert_array_equal(fn(x, y).numpy(), (tf.sin(op(x * 2.0, y)) + 1.0).numpy())

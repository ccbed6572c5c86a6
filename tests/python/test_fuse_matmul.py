"""MatMul fusion (src/ember/passes/fuse_matmul.cc, TensorFlow's "remapping" option) and the _FusedMatMul op: the
op against TensorFlow's own _FusedMatMul (run from a GraphDef) and NumPy, every pattern the pass fuses against
the unfused graph, the chains it must leave alone (Note [Matching a MatMul chain]), and TensorFlow's optimized
graphs imported and ember's exported."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember.framework import graph_def as gdm
from remapping_testing import assert_close as _close
from remapping_testing import run_tensorflow_graph_def, run_with_and_without_remapping, tensorflow_optimized

RNG = np.random.default_rng(23)
ACTIVATIONS = ["", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "GeluExact", "GeluApproximate"]


def _f(*shape, dtype=np.float32):
    return tf.constant(RNG.standard_normal(shape).astype(dtype))


def _fused_ops(activation):
    return "BiasAdd" + ("," + activation if activation else "")


def _reference(activation, x, alpha=0.2):
    from scipy.special import erfc
    return {
        "": lambda: x,
        "Relu": lambda: np.maximum(x, 0),
        "Relu6": lambda: np.clip(x, 0, 6),
        "Elu": lambda: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        "LeakyRelu": lambda: np.where(x > 0, x, float(np.float32(alpha)) * x),  # a float32 attribute
        "Tanh": lambda: np.tanh(x),
        "Sigmoid": lambda: 1 / (1 + np.exp(-x)),
        "GeluExact": lambda: 0.5 * x * erfc(-x / np.sqrt(2)),
        "GeluApproximate": lambda: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    }[activation]()


def _tensorflow_fused_matmul(a, b, bias, activation, ta=False, tb=False, alpha=0.2):
    """TensorFlow's own _FusedMatMul kernel (grappler's op has no raw_ops entry): one node in a GraphDef."""
    graph = real_tf.Graph()
    with graph.as_default():
        ins = [real_tf.compat.v1.placeholder(real_tf.as_dtype(v.dtype), v.shape, name=n)
               for n, v in (("a", a), ("b", b), ("c", bias))]
    gd = graph.as_graph_def()
    node = gd.node.add(name="f", op="_FusedMatMul", input=["a", "b", "c"])
    node.attr["T"].type = ins[0].dtype.as_datatype_enum
    node.attr["num_args"].i = 1
    node.attr["fused_ops"].list.s.extend(s.encode() for s in _fused_ops(activation).split(","))
    node.attr["epsilon"].f = 0.0
    node.attr["leakyrelu_alpha"].f = alpha
    node.attr["transpose_a"].b, node.attr["transpose_b"].b = ta, tb
    run = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(gd, name=""), [])
    return run.prune(feeds=["a:0", "b:0", "c:0"], fetches=["f:0"])(
        real_tf.constant(a), real_tf.constant(b), real_tf.constant(bias))[0].numpy()


# ---- the op

# TensorFlow's oneDNN kernel declines transpose_a, and its Eigen fallback has no Gelu ("Fusion is not
# implemented: [BiasAdd,GeluExact]"): those cases are compared with NumPy instead.
TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]
TENSORFLOW_CASES = [(act, ta, tb) for act in ACTIVATIONS for ta, tb in TRANSPOSES if not (ta and "Gelu" in act)]
NUMPY_CASES = [(act, ta, tb) for act in ACTIVATIONS for ta, tb in TRANSPOSES if ta and "Gelu" in act]


def _op_cases(ta, tb):
    """Shapes for each kernel path: tiny/small loops ([7,5]x[5,6]), register tiles ([64,96]x[96,80]) and
    oneDNN ([200,300]x[300,260], and transposed products, which the tiles leave to oneDNN)."""
    for m, k, n in ((7, 5, 6), (64, 96, 80), (200, 300, 260)):
        a = RNG.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = RNG.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        yield k, a, b, RNG.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("activation,ta,tb", TENSORFLOW_CASES)
def test_op_matches_tensorflows_fused_matmul(activation, ta, tb):
    op = tf._C.op("_FusedMatMul")
    for k, a, b, bias in _op_cases(ta, tb):
        got = op(tf.constant(a), tf.constant(b), tf.constant(bias), ta, tb, 1, _fused_ops(activation), 0.0, 0.3)
        want = _tensorflow_fused_matmul(a, b, bias, activation, ta, tb, alpha=0.3)
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-5 * np.sqrt(k))


@pytest.mark.parametrize("activation,ta,tb", NUMPY_CASES)
def test_op_where_tensorflow_has_no_kernel_matches_numpy(activation, ta, tb):
    op = tf._C.op("_FusedMatMul")
    for k, a, b, bias in _op_cases(ta, tb):
        got = op(tf.constant(a), tf.constant(b), tf.constant(bias), ta, tb, 1, _fused_ops(activation), 0.0, 0.3)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = _reference(activation, (a64.T if ta else a64) @ (b64.T if tb else b64) + bias)
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-5 * np.sqrt(k))
    with pytest.raises(real_tf.errors.UnimplementedError, match="Fusion is not implemented"):
        _tensorflow_fused_matmul(a, b, bias, activation, ta, tb)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float16, tf.bfloat16])
def test_op_in_other_dtypes_matches_numpy(activation, dtype):
    """float64 (ember only: TensorFlow's kernel takes half, bfloat16 and float32), and the 16-bit floats, which
    compute in float32 (or oneDNN's bfloat16 kernel) and round once; batched left operands fold into rows."""
    op = tf._C.op("_FusedMatMul")
    tolerance = {np.float64: 1e-12, np.float16: 5e-3}.get(dtype, 3e-2)
    for shape_a, shape_b in (((2, 5, 7), (7, 9)), ((3, 20, 40), (40, 50)), ((30, 20), (20, 70))):
        a, b = RNG.standard_normal(shape_a) / 4, RNG.standard_normal(shape_b) / 4
        bias = RNG.standard_normal(shape_b[-1]) / 2
        args = [tf.cast(tf.constant(v), dtype) for v in (a, b, bias)]
        got = tf.cast(op(*args, False, False, 1, _fused_ops(activation), 0.0, 0.2), tf.float64).numpy()
        exact = [tf.cast(v, tf.float64).numpy() for v in args]  # the operands as rounded
        want = _reference(activation, exact[0] @ exact[1] + exact[2])
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_float64_leaky_relu_takes_the_float32_slope_as_the_unfused_op():
    """alpha is a float attribute (TensorFlow's LeakyRelu and _FusedMatMul): 0.3 means float32(0.3) in float64
    products too, as the unfused LeakyRelu computes it (the program fuzzer found the difference)."""
    a, b, bias = _f(4, 5, dtype=np.float64), _f(5, 40, dtype=np.float64), _f(40, dtype=np.float64)
    got = tf._C.op("_FusedMatMul")(a, b, bias, False, False, 1, "BiasAdd,LeakyRelu", 0.0, 0.3)
    want = tf.nn.leaky_relu(tf.nn.bias_add(tf.matmul(a, b), bias), alpha=0.3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15, atol=1e-15)


def test_op_errors_name_the_op():
    op = tf._C.op("_FusedMatMul")
    a, b = _f(3, 4), _f(4, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="_FusedMatMul: bias must be 1-D with one value per "
                                                           r"column of the product \(5\), got shape \[4\]"):
        op(a, b, _f(4), False, False, 1, "BiasAdd", 0.0, 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"_FusedMatMul: fused_ops must be BiasAdd.*got "
                                                           r"\[BiasAdd,Softplus\]"):
        op(a, b, _f(5), False, False, 1, "BiasAdd,Softplus", 0.0, 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="_FusedMatMul: num_args must be 1"):
        op(a, b, _f(5), False, False, 2, "BiasAdd", 0.0, 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="MatMul: .*inner dimensions 4 and 3 differ"):
        op(a, _f(3, 5), _f(5), False, False, 1, "BiasAdd", 0.0, 0.2)


# ---- the pass

def _run_both(remapping, fn, *args):
    return run_with_and_without_remapping(remapping, "_FusedMatMul", fn, *args)


PASS_ACTIVATIONS = {
    "": lambda y: y,
    "Relu": tf.nn.relu,
    "Relu6": tf.nn.relu6,
    "Elu": tf.nn.elu,
    "LeakyRelu": lambda y: tf.nn.leaky_relu(y, alpha=0.3),
    "Tanh": tf.tanh,
    "Sigmoid": tf.sigmoid,
}


@pytest.mark.parametrize("activation", sorted(PASS_ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_bias_activation_is_one_node_with_the_unfused_values(remapping, activation, dtype):
    x, w, b = _f(16, 24, dtype=dtype), _f(24, 40, dtype=dtype), _f(40, dtype=dtype)

    def f(x):
        return PASS_ACTIVATIONS[activation](tf.nn.bias_add(tf.matmul(x, w), b))

    got, want, text = _run_both(remapping, f, x)
    assert f'fused_ops="{_fused_ops(activation)}"' in text, text
    assert "= MatMul(" not in text and "= BiasAdd(" not in text, text
    if activation == "LeakyRelu":
        assert "leakyrelu_alpha=0.3" in text, text
    _close(got, want)


def test_a_dense_layer_with_a_transposed_batched_input_is_fused(remapping):
    x, w, b = _f(3, 10, 12), _f(16, 12), _f(16)
    got, want, text = _run_both(remapping, lambda x: tf.nn.relu(b + tf.matmul(x, w, transpose_b=True)), x)
    assert 'fused_ops="BiasAdd,Relu"' in text and "transpose_b=true" in text.lower(), text
    _close(got, want)


def test_an_activation_the_epilogue_does_not_take_still_fuses_elementwise(remapping):
    x, w, b = _f(8, 6), _f(6, 5), _f(5)
    got, want, text = _run_both(remapping, lambda x: tf.nn.softplus(tf.nn.bias_add(tf.matmul(x, w), b)) * 2.0, x)
    assert 'fused_ops="BiasAdd"' in text and "FusedElementwise" in text, text
    _close(got, want)


def test_a_pre_activation_read_elsewhere_keeps_the_activation_apart(remapping):
    x, w, b = _f(8, 6), _f(6, 5), _f(5)

    def f(x):
        pre = tf.nn.bias_add(tf.matmul(x, w), b)
        return tf.tanh(pre), tf.reduce_sum(pre, axis=1)

    got, want, text = _run_both(remapping, f, x)
    assert 'fused_ops="BiasAdd"' in text, text
    _close(got, want)


def test_a_product_read_twice_or_a_matrix_addend_is_not_fused(remapping):
    x, w, b, h = _f(8, 6), _f(6, 5), _f(5), _f(8, 5)

    def f(x):
        y = tf.matmul(x, w)
        lstm_gate = tf.matmul(x, w * 2.0) + h  # MatMul(h, U) + xW_t: an addend, not a bias
        return tf.nn.relu(tf.nn.bias_add(y, b)), y * 3.0, tf.sigmoid(lstm_gate)

    got, want, text = _run_both(remapping, f, x)
    assert "_FusedMatMul" not in text, text
    _close(got, want)


def test_integer_products_are_not_fused(remapping):
    xi, wi, bi = tf.constant([[1, 2]]), tf.constant([[3], [4]]), tf.constant([5])
    got, want, text = _run_both(remapping, lambda x: tf.nn.relu(tf.nn.bias_add(tf.matmul(x, wi), bi)), xi)
    assert "_FusedMatMul" not in text, text
    _close(got, want)


@pytest.mark.parametrize("activation", ["Relu", "Tanh", "Sigmoid", "Elu"])
def test_mlp_training_step_matches_the_unfused_graph(remapping, activation):
    """The pass runs after autodiff. Relu's gradient reads the pre-activation through Greater(pre, 0) or
    ReluGrad, which move onto the fused output; Tanh's and Sigmoid's read the output: those layers fuse
    whole. Elu's gradient reads the pre-activation, so only the bias fuses."""
    x, t = _f(32, 20), _f(32, 10)
    w1, b1, w2, b2 = _f(20, 48) / 4, _f(48), _f(48, 10) / 4, _f(10)

    def step(x, t):
        with tf.GradientTape() as tape:
            tape.watch([w1, b1, w2, b2])
            h = PASS_ACTIVATIONS[activation](tf.matmul(x, w1) + b1)
            y = tf.nn.bias_add(tf.matmul(h, w2), b2)
            loss = tf.reduce_mean(tf.square(y - t))
        return [loss] + tape.gradient(loss, [w1, b1, w2, b2])

    got, want, text = _run_both(remapping, step, x, t)
    assert text.count("_FusedMatMul(") == 2, text
    expected = "BiasAdd" if activation == "Elu" else "BiasAdd," + activation
    assert f'fused_ops="{expected}"' in text, text
    _close(got, want)


def test_env_switch_turns_the_pass_off():
    """EMBER_FUSE_MATMUL=0 is read once per process: checked in a child process with this checkout's path and
    this interpreter's flags (with -S only where this process has it: an editable install is found by a site
    hook)."""
    import os
    import subprocess
    import sys
    code = ("import ember as tf\n"
            "w, b = tf.ones([3, 4]), tf.ones([4])\n"
            "f = tf.function(lambda x: tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b)))\n"
            "print('_FusedMatMul' in f.get_concrete_function(tf.ones([2, 3])).graph.optimized_as_text())\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for value, fused in (("0", "False"), ("1", "True")):
        env["EMBER_FUSE_MATMUL"] = value
        out = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", code], env=env,
                             capture_output=True, text=True, check=True)
        assert out.stdout.strip() == fused, out.stderr


# ---- GraphDef

def _tensorflow_optimized_mlp(activation):
    """TensorFlow's grappler output for x -> activation(x @ w + b) -> @ w2 + b2: holds _FusedMatMul nodes."""
    w, b = RNG.standard_normal((8, 16)).astype(np.float32), RNG.standard_normal(16).astype(np.float32)
    w2, b2 = RNG.standard_normal((16, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    act = {"Relu": real_tf.nn.relu, "Tanh": real_tf.tanh, "LeakyRelu": lambda y: real_tf.nn.leaky_relu(y, 0.3),
           "GeluExact": lambda y: real_tf.nn.gelu(y, approximate=False),
           "GeluApproximate": lambda y: real_tf.nn.gelu(y, approximate=True)}[activation]

    def f(x):
        return real_tf.nn.bias_add(real_tf.matmul(act(real_tf.nn.bias_add(real_tf.matmul(x, w), b)), w2), b2)

    optimized, feeds, fetch = tensorflow_optimized(f, real_tf.TensorSpec([5, 8], real_tf.float32))
    return optimized, feeds[0], fetch


@pytest.mark.parametrize("activation", ["Relu", "Tanh", "LeakyRelu", "GeluExact", "GeluApproximate"])
def test_tensorflows_optimized_graph_imports_runs_and_exports_back(activation):
    optimized, feed, fetch = _tensorflow_optimized_mlp(activation)
    fused = [n for n in optimized.node if n.op == "_FusedMatMul"]
    assert [list(n.attr["fused_ops"].list.s) for n in fused] == [[b"BiasAdd", activation.encode()], [b"BiasAdd"]]
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    want = run_tensorflow_graph_def(optimized, [feed], fetch, x)

    graph = tf.graph_util.import_graph_def(optimized.SerializeToString())
    got = tf.NewGraphFunction(graph, [feed], [fetch])(x)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)

    # ember writes the fused nodes back with TensorFlow's attributes (fused_ops a list), and TensorFlow runs them.
    exported = graph.as_graph_def()
    again = [n for n in exported.node if n.op == "_FusedMatMul"]
    assert [list(n.attr["fused_ops"].list.s) for n in again] == [[b"BiasAdd", activation.encode()], [b"BiasAdd"]]
    assert all(n.attr["num_args"].i == 1 and n.attr["T"].type == 1 for n in again)
    np.testing.assert_allclose(run_tensorflow_graph_def(exported, [feed], fetch, x), want, rtol=1e-5, atol=1e-5)


def test_a_fused_ops_list_ember_cannot_run_is_refused_at_import():
    optimized, _, _ = _tensorflow_optimized_mlp("Relu")
    gd = gdm.GraphDef.FromString(optimized.SerializeToString())
    node = next(n for n in gd.node if n.op == "_FusedMatMul")
    del node.attr["fused_ops"].list.s[:]
    node.attr["fused_ops"].list.s.extend([b"BiasAdd", b"Softplus"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"node '{node.name}' \(_FusedMatMul\): fused_ops \[BiasAdd,Softplus\] is not one ember "
                             r"runs: BiasAdd, then optionally Add"):
        tf.graph_util.import_graph_def(gd.SerializeToString())

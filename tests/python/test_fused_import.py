"""TensorFlow's fused contraction nodes in a GraphDef (src/ember/graph/fused_import.cc, Note [TensorFlow's fused
nodes]): graphs run through TensorFlow's grappler hold _FusedConv2D, _FusedConv3D, _FusedDepthwiseConv2dNative and
_FusedMatMul nodes; ember imports them (onto its own fused ops or the plain ops they stand for), gives TensorFlow's
values, and writes its own fused ops back in a form TensorFlow runs."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember.framework import graph_def as gdm
from remapping_testing import run_tensorflow_graph_def, tensorflow_optimized

RNG = np.random.default_rng(41)
ACTIVATIONS = {
    "": lambda y: y,
    "Relu": real_tf.nn.relu,
    "Relu6": real_tf.nn.relu6,
    "Elu": real_tf.nn.elu,
    "LeakyRelu": lambda y: real_tf.nn.leaky_relu(y, 0.3),
    "Tanh": real_tf.tanh,
}


def _array(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _fused_nodes(graph_def, op):
    return [n for n in graph_def.node if n.op == op]


def _fused_ops(node):
    return [s.decode() for s in node.attr["fused_ops"].list.s]


def _import_and_run(optimized, feed, fetch, x):
    graph = tf.graph_util.import_graph_def(optimized.SerializeToString())
    return graph, tf.NewGraphFunction(graph, [feed], [fetch])(x).numpy()


def _check_round_trip(graph, feed, fetch, x, want):
    """ember's export of the imported graph runs in TensorFlow with the same values."""
    np.testing.assert_allclose(run_tensorflow_graph_def(graph.as_graph_def(), [feed], fetch, x), want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("activation", ["", "Relu", "Relu6", "Elu", "LeakyRelu"])
@pytest.mark.parametrize("rank", [4, 5])
def test_a_fused_convolution_with_bias_imports_as_embers_fused_op(rank, activation):
    conv = real_tf.nn.conv2d if rank == 4 else real_tf.nn.conv3d
    w, b = _array(*[3] * (rank - 2), 4, 8), _array(8)
    act = ACTIVATIONS[activation]
    optimized, feeds, fetch = tensorflow_optimized(
        lambda x: act(real_tf.nn.bias_add(conv(x, w, [1] * rank, "SAME"), b)),
        real_tf.TensorSpec([2] + [5] * (rank - 2) + [4]))
    fused_op = "_FusedConv2D" if rank == 4 else "_FusedConv3D"
    [node] = _fused_nodes(optimized, fused_op)
    assert _fused_ops(node) == ["BiasAdd"] + ([activation] if activation else [])
    x = _array(2, *[5] * (rank - 2), 4)
    want = run_tensorflow_graph_def(optimized, feeds, fetch, x)
    graph, got = _import_and_run(optimized, feeds[0], fetch, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # ember ran its own fused op, and writes it back with TensorFlow's attributes.
    [mine] = _fused_nodes(graph.as_graph_def(), fused_op)
    assert _fused_ops(mine) == _fused_ops(node) and mine.attr["num_args"].i == 1 and "activation" not in mine.attr
    _check_round_trip(graph, feeds[0], fetch, x, want)


@pytest.mark.parametrize("activation", ["", "Relu", "Relu6", "Elu"])
def test_a_fused_depthwise_convolution_imports_as_embers_fused_op(activation):
    w, b = _array(3, 3, 4, 2), _array(8)
    act = ACTIVATIONS[activation]
    optimized, feeds, fetch = tensorflow_optimized(
        lambda x: act(real_tf.nn.bias_add(real_tf.nn.depthwise_conv2d(x, w, [1] * 4, "SAME"), b)),
        real_tf.TensorSpec([2, 6, 6, 4]))
    [node] = _fused_nodes(optimized, "_FusedDepthwiseConv2dNative")
    assert _fused_ops(node) == ["BiasAdd"] + ([activation] if activation else [])
    x = _array(2, 6, 6, 4)
    want = run_tensorflow_graph_def(optimized, feeds, fetch, x)
    graph, got = _import_and_run(optimized, feeds[0], fetch, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    [mine] = _fused_nodes(graph.as_graph_def(), "_FusedDepthwiseConv2dNative")
    assert _fused_ops(mine) == _fused_ops(node) and "explicit_paddings" not in mine.attr
    _check_round_trip(graph, feeds[0], fetch, x, want)


@pytest.mark.parametrize("activation", ["", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_a_convolution_fused_with_an_inference_batch_norm_imports_as_plain_ops(data_format, activation):
    w = _array(3, 3, 4, 8)
    scale, offset, mean = _array(8) + 2, _array(8), _array(8)
    variance = np.abs(_array(8)) + 0.5
    act = ACTIVATIONS[activation]
    nchw = data_format == "NCHW"

    def f(x):
        if nchw:  # TensorFlow's CPU Conv2D runs NHWC only; the transposes keep the fused pair in NCHW
            x = real_tf.transpose(x, [0, 3, 1, 2])
        y = real_tf.nn.conv2d(x, w, 1, "SAME", data_format=data_format)
        y = real_tf.compat.v1.nn.fused_batch_norm(y, scale, offset, mean=mean, variance=variance, epsilon=0.01,
                                                  is_training=False, data_format=data_format)[0]
        return act(y)

    optimized, feeds, fetch = tensorflow_optimized(f, real_tf.TensorSpec([2, 6, 6, 4]))
    x = _array(2, 6, 6, 4)
    want = f(real_tf.constant(x)).numpy()  # eager: no grappler (its fused [FusedBatchNorm, Tanh] fails to run)
    graph, got = _import_and_run(optimized, feeds[0], fetch, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if nchw:
        return  # grappler fuses the pair in NHWC only
    [node] = _fused_nodes(optimized, "_FusedConv2D")
    assert _fused_ops(node) == ["FusedBatchNorm"] + ([activation] if activation else [])
    assert node.attr["num_args"].i == 4 and node.attr["epsilon"].f == pytest.approx(0.01)
    ops = [n.op for n in graph.as_graph_def().node]
    assert "Conv2D" in ops and "FusedBatchNormV3" in ops, ops
    if activation == "Tanh":
        return  # TensorFlow's CPU kernel refuses the [FusedBatchNorm, Tanh] its remapper writes (in every graph)
    np.testing.assert_allclose(run_tensorflow_graph_def(optimized, feeds, fetch, x), want, rtol=1e-4, atol=1e-4)
    _check_round_trip(graph, feeds[0], fetch, x, want)


def _hand_written_fused_node(op, fused_ops, x, w, args, **attrs):
    """A GraphDef with one TensorFlow fused node (x a placeholder, w and the args constants): the lists grappler
    writes only in TensorFlow's oneDNN builds of the remapper (a residual Add, _MklSwish)."""
    graph = real_tf.Graph()
    with graph.as_default():
        real_tf.compat.v1.placeholder(real_tf.float32, x.shape, name="x")
        real_tf.constant(w, name="w")
        for k, a in enumerate(args):
            real_tf.constant(a, name=f"arg{k}")
    gd = graph.as_graph_def()
    node = gd.node.add(name="fused", op=op, input=["x", "w"] + [f"arg{k}" for k in range(len(args))])
    node.device = "/device:CPU:0"
    node.attr["T"].type = real_tf.float32.as_datatype_enum
    node.attr["num_args"].i = len(args)
    node.attr["fused_ops"].list.s.extend(s.encode() for s in fused_ops)
    if op == "_FusedConv2D":
        node.attr["TArgs"].list.type.extend([real_tf.float32.as_datatype_enum] * len(args))
        node.attr["strides"].list.i.extend([1] * 4)
        node.attr["padding"].s = b"SAME"
    for name, value in attrs.items():
        node.attr[name].CopyFrom(value)
    return gd


# TensorFlow's composition of each activation a hand-written list ends in.
_TF_ACTIVATIONS = {**ACTIVATIONS, "Sigmoid": real_tf.sigmoid, "_MklSwish": lambda y: y * real_tf.sigmoid(y),
                   "GeluExact": real_tf.nn.gelu, "GeluApproximate": lambda y: real_tf.nn.gelu(y, approximate=True)}


# The lists after BiasAdd that TensorFlow 2.21's CPU _FusedConv2D kernel runs (checked by running each).
_TF_CPU_RUNS = {(), ("Relu",), ("_MklSwish",), ("Add",), ("Add", "Relu")}


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("activation", ["", "Relu", "Tanh", "Sigmoid", "_MklSwish", "GeluExact", "GeluApproximate"])
def test_tensorflows_onednn_conv_fusions_import_as_embers_fused_op(activation, residual):
    """The lists TensorFlow 2.21's CPU remapper does not write after a convolution (it fuses the bias alone and
    leaves Tanh, Sigmoid, _MklSwish and its Gelu ops apart; a residual Add stays an AddV2) but its oneDNN
    kernels run: ember's fused op takes them, and writes them back as TensorFlow wrote them."""
    x, w, b, shortcut = _array(2, 5, 5, 4), _array(3, 3, 4, 8), _array(8), _array(2, 5, 5, 8)
    fused_ops = ["BiasAdd"] + (["Add"] if residual else []) + ([activation] if activation else [])
    gd = _hand_written_fused_node("_FusedConv2D", fused_ops, x, w, [b, shortcut] if residual else [b])
    pre = real_tf.nn.bias_add(real_tf.nn.conv2d(x, w, 1, "SAME"), b) + (shortcut if residual else 0.0)
    want = _TF_ACTIVATIONS[activation](pre).numpy()
    graph, got = _import_and_run(gd, "x:0", "fused:0", x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    [mine] = _fused_nodes(graph.as_graph_def(), "_FusedConv2D")
    assert _fused_ops(mine) == fused_ops and mine.attr["num_args"].i == 1 + residual, mine
    assert len(mine.attr["TArgs"].list.type) == 1 + residual and "N" not in mine.attr, mine
    if tuple(fused_ops[1:]) not in _TF_CPU_RUNS:  # ember's export is the list TensorFlow gave, which it cannot run
        with pytest.raises(real_tf.errors.UnimplementedError, match="Fusion is not implemented"):
            run_tensorflow_graph_def(gd, ["x:0"], "fused:0", x)
        return
    np.testing.assert_allclose(run_tensorflow_graph_def(gd, ["x:0"], "fused:0", x), want, rtol=1e-4, atol=1e-4)
    _check_round_trip(graph, "x:0", "fused:0", x, want)


def test_a_gelu_ember_would_have_to_expand_is_refused():
    x, w, b = _array(2, 5, 5, 4), _array(3, 3, 4, 8), _array(8)
    for op, weights, fused_ops in (("_FusedMatMul", _array(4, 8), ["BiasAdd", "Add", "GeluExact"]),):
        gd = _hand_written_fused_node(op, fused_ops, x[0, 0], weights, [b, _array(5, 8)])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"node 'fused' \(_FusedMatMul\): fused_ops \[BiasAdd,Add,GeluExact\] in DT_FLOAT: "
                                 r"ember runs a Gelu only inside its fused ops"):
            tf.graph_util.import_graph_def(gd.SerializeToString())


def test_a_matmul_fused_with_a_residual_add_imports_as_plain_ops():
    x, w, b, residual = _array(3, 4), _array(4, 8), _array(8), _array(3, 8)
    gd = _hand_written_fused_node("_FusedMatMul", ["BiasAdd", "Add"], x, w, [b, residual])
    want = run_tensorflow_graph_def(gd, ["x:0"], "fused:0", x)
    graph, got = _import_and_run(gd, "x:0", "fused:0", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ops = [n.op for n in graph.as_graph_def().node]
    assert "_FusedMatMul" not in ops and {"MatMul", "BiasAdd", "AddV2"} <= set(ops), ops


def _relu_conv_graph_def():
    w, b = _array(3, 3, 4, 8), _array(8)
    optimized, _, _ = tensorflow_optimized(lambda x: real_tf.nn.relu(real_tf.nn.bias_add(
        real_tf.nn.conv2d(x, w, 1, "SAME"), b)), real_tf.TensorSpec([2, 5, 5, 4]))
    gd = gdm.GraphDef.FromString(optimized.SerializeToString())
    return gd, next(n for n in gd.node if n.op == "_FusedConv2D")


def test_a_fused_ops_list_ember_cannot_run_names_the_node_and_the_list():
    gd, node = _relu_conv_graph_def()
    del node.attr["fused_ops"].list.s[:]
    node.attr["fused_ops"].list.s.extend([b"BiasAdd", b"Relu", b"Relu"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"node '{node.name}' \(_FusedConv2D\): fused_ops \[BiasAdd,Relu,Relu\] is not one ember "
                             r"runs: BiasAdd or FusedBatchNorm, then optionally Add, then optionally one of Relu"):
        tf.graph_util.import_graph_def(gd.SerializeToString())


def test_a_fused_node_whose_args_do_not_match_its_fused_ops_is_refused():
    gd, node = _relu_conv_graph_def()
    node.attr["fused_ops"].list.s[0] = b"FusedBatchNorm"
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"node '{node.name}' \(_FusedConv2D\): fused_ops \[FusedBatchNorm,Relu\] takes 4 args "
                             r"after its 2 operands, got num_args 1 and 3 inputs"):
        tf.graph_util.import_graph_def(gd.SerializeToString())


@pytest.mark.parametrize("conv", ["conv2d", "depthwise", "conv2d_swish"])
def test_fused_nodes_in_a_library_function_import(conv):
    """grappler remaps the bodies of functions it does not inline; the callee's fused node imports as the graph's
    does. conv2d_swish makes it [BiasAdd, _MklSwish], which becomes a chain whose Identity the function's result
    names."""
    w, b = (_array(3, 3, 4, 2), _array(8)) if conv == "depthwise" else (_array(3, 3, 4, 8), _array(8))
    if conv == "depthwise":
        def op(x, w, strides, padding):
            return real_tf.nn.depthwise_conv2d(x, w, [1] * 4, padding)
    else:
        op = real_tf.nn.conv2d
    swish = conv == "conv2d_swish"

    @real_tf.function(experimental_attributes={"_noinline": True})
    def inner(x):
        return real_tf.nn.relu(real_tf.nn.bias_add(op(x, w, 1, "SAME"), b))

    optimized, feeds, fetch = tensorflow_optimized(lambda x: inner(x) * 2.0, real_tf.TensorSpec([2, 5, 5, 4]))
    optimized = gdm.GraphDef.FromString(optimized.SerializeToString())
    [body] = optimized.library.function
    [node] = [n for n in body.node_def if n.op.startswith("_Fused")]
    assert node.op == ("_FusedDepthwiseConv2dNative" if conv == "depthwise" else "_FusedConv2D")
    if swish:
        node.attr["fused_ops"].list.s[1] = b"_MklSwish"
    x = _array(2, 5, 5, 4)
    # (TensorFlow cannot import `optimized` beside the traced `inner` it holds under the same name, placed anew.)
    pre = real_tf.nn.bias_add(op(real_tf.constant(x), w, 1, "SAME"), b)
    want = ((pre * real_tf.sigmoid(pre) if swish else real_tf.nn.relu(pre)) * 2.0).numpy()
    graph, got = _import_and_run(optimized, feeds[0], fetch, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    _check_round_trip(graph, feeds[0], fetch, x, want)

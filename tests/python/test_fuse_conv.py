"""Conv fusion (src/ember/passes/fuse_conv.cc, TensorFlow's "remapping" option; Conv2D, Conv3D and
DepthwiseConv2dNative): every pattern the pass fuses gives what the unfused graph gives, and the chains it must
leave alone (Note [Matching a conv chain]) are left alone."""
import numpy as np
import pytest

import ember as tf
from remapping_testing import assert_close as _close
from remapping_testing import run_with_and_without_remapping

RNG = np.random.default_rng(17)


def _run_both(remapping, fn, *args):
    return run_with_and_without_remapping(remapping, "_FusedConv", fn, *args)  # 2-D and 3-D


def _f(*shape):
    return tf.constant(RNG.standard_normal(shape).astype(np.float32))


ACTIVATIONS = {
    "": lambda y: y,
    "Relu": tf.nn.relu,
    "Relu6": tf.nn.relu6,
    "Elu": tf.nn.elu,
    "LeakyRelu": lambda y: tf.nn.leaky_relu(y, alpha=0.3),
    "Tanh": tf.nn.tanh,
    "Sigmoid": tf.nn.sigmoid,
    "_MklSwish": tf.nn.silu,  # x * sigmoid(x), Note [Expression activations]
    "GeluExact": tf.nn.gelu,
    "GeluApproximate": lambda y: tf.nn.gelu(y, approximate=True),
}
# Whose gradients read the activation's output (or, Relu's, move onto it): a training step fuses them whole.
FUSED_WHOLE_IN_TRAINING = {"Relu", "Tanh", "Sigmoid"}


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_conv_bias_add_activation_is_one_node_with_the_unfused_values(remapping, activation, fmt):
    x = _f(2, 9, 7, 5) if fmt == "NHWC" else _f(2, 5, 9, 7)
    w, b = _f(3, 3, 5, 6), _f(6)

    def f(x):
        y = tf.nn.conv2d(x, w, [1, 2, 1, 1] if fmt == "NHWC" else [1, 1, 2, 1], "SAME", data_format=fmt)
        return ACTIVATIONS[activation](tf.nn.bias_add(y, b, data_format=fmt))

    got, want, text = _run_both(remapping, f, x)
    assert f'activation="{activation}"' in text, text
    assert "= Conv2D(" not in text and "= BiasAdd(" not in text, text
    if activation == "LeakyRelu":
        assert "leakyrelu_alpha=0.3" in text, text
    _close(got, want)


def test_conv_plus_a_channel_vector_is_fused(remapping):
    x, w, b = _f(3, 8, 8, 4), _f(1, 1, 4, 8), _f(8)
    got, want, text = _run_both(remapping, lambda x: tf.nn.relu(b + tf.nn.conv2d(x, w, 1, "VALID")), x)
    assert 'activation="Relu"' in text, text
    _close(got, want)


def test_an_add_that_broadcasts_more_than_channels_is_not_fused(remapping):
    x, w, b = _f(1, 4, 4, 2), _f(3, 3, 2, 3), _f(4, 4, 3)  # a full image's worth of bias
    got, want, text = _run_both(remapping, lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + b), x)
    assert "_FusedConv2D" not in text, text
    _close(got, want)


def test_a_pre_activation_read_elsewhere_keeps_the_activation_apart(remapping):
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)

    def f(x):
        pre = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        return tf.nn.relu(pre), pre * 2.0

    got, want, text = _run_both(remapping, f, x)
    assert 'activation=""' in text and "= Relu(" in text, text  # conv + bias fused, the Relu kept
    _close(got, want)


def test_a_pre_activation_that_is_a_result_keeps_the_activation_apart(remapping):
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)

    def f(x):
        pre = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        return tf.nn.elu(pre), pre

    got, want, text = _run_both(remapping, f, x)
    assert 'activation=""' in text and "= Elu(" in text, text
    _close(got, want)


def test_a_convolution_read_twice_is_not_fused(remapping):
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)

    def f(x):
        y = tf.nn.conv2d(x, w, 1, "SAME")
        return tf.nn.relu(tf.nn.bias_add(y, b)), tf.reduce_sum(y)

    got, want, text = _run_both(remapping, f, x)
    assert "_FusedConv2D" not in text, text
    _close(got, want)


@pytest.mark.parametrize("activation", sorted(set(ACTIVATIONS) - {""}))
def test_training_step_gradients_match_the_unfused_graph(remapping, activation):
    """The pass runs after autodiff: Relu's gradient reads the pre-activation through Greater(pre, 0), which
    moves onto the fused output, Tanh's and Sigmoid's read their output; the other activations' gradients read
    the pre-activation, so their activation stays apart."""
    x = _f(4, 8, 8, 3)
    w1, b1, w2, b2 = _f(3, 3, 3, 8), _f(8), _f(3, 3, 8, 4), _f(4)

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch([w1, b1, w2, b2])
            h = ACTIVATIONS[activation](tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME"), b1))
            y = ACTIVATIONS[activation](tf.nn.conv2d(h, w2, 2, "SAME") + b2)
            loss = tf.reduce_sum(y * y)
        return loss, tape.gradient(loss, [w1, b1, w2, b2])

    got, want, text = _run_both(remapping, step, x)
    assert text.count("_FusedConv2D(") == 2, text
    if activation in FUSED_WHOLE_IN_TRAINING:
        assert text.count(f'activation="{activation}"') == 2 and f"= {activation}(" not in text, text
    else:
        assert text.count('activation=""') == 2, text
    _close(got, want)


def _resnet_block(x, w1, b1, w2, b2, fmt="NHWC"):
    """Two convolutions, the second's sum plus the block's input, then Relu (the ResNet basic block)."""
    h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME", data_format=fmt), b1, data_format=fmt))
    return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w2, 1, "SAME", data_format=fmt), b2, data_format=fmt) + x)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_a_residual_block_fuses_its_shortcut_add_and_matches_tensorflow_and_eager(remapping, fmt):
    import tensorflow as real_tf
    x = _f(2, 8, 8, 6) if fmt == "NHWC" else _f(2, 6, 8, 8)
    weights = [_f(3, 3, 6, 6), _f(6), _f(3, 3, 6, 6), _f(6)]

    got, want, text = _run_both(remapping, lambda x: _resnet_block(x, *weights, fmt=fmt), x)
    assert text.count("_FusedConv2D(") == 2 and "= Add" not in text and "= Relu(" not in text, text
    assert text.count('activation="Relu"') == 2, text
    _close(got, want)
    _close(got, [_resnet_block(x, *weights, fmt=fmt).numpy()])  # eager
    if fmt == "NHWC":  # TensorFlow's CPU Conv2D runs NHWC only
        theirs = _resnet_block(real_tf.constant(x.numpy()), *(real_tf.constant(v.numpy()) for v in weights))
        _close(got, [theirs.numpy()], 1e-4)


def test_a_residual_block_of_an_unknown_batch_fuses_its_shortcut(remapping):
    """Note [Shortcuts of an unknown batch]: the shortcut and the second sum both carry the block input's batch."""
    weights = [_f(3, 3, 6, 6), _f(6), _f(3, 3, 6, 6), _f(6)]
    remapping(True)
    block = tf.function(lambda x: _resnet_block(x, *weights),
                        input_signature=[tf.TensorSpec([None, 8, 8, 6], tf.float32)])
    text = block.get_concrete_function().graph.optimized_as_text()
    assert text.count("_FusedConv2D(") == 2 and "= Add" not in text, text
    for batch in (1, 3):
        x = _f(batch, 8, 8, 6)
        _close([block(x).numpy()], [_resnet_block(x, *weights).numpy()])


def test_a_keras_residual_block_traced_with_an_unknown_batch_fuses_whole(remapping):
    """Keras adds its bias with Add of a 1-D value, which keeps the batch too."""
    layers = tf.keras.layers
    inputs = tf.keras.Input([8, 8, 16])
    h = layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    h = layers.Conv2D(16, 3, padding="same")(h)
    model = tf.keras.Model(inputs, layers.ReLU()(layers.Add()([h, inputs])))
    remapping(True)
    fn = tf.function(lambda x: model(x), input_signature=[tf.TensorSpec([None, 8, 8, 16], tf.float32)])
    text = fn.get_concrete_function().graph.optimized_as_text()
    assert text.count("_FusedConv2D(") == 2 and text.count('activation="Relu"') == 2, text
    assert "Add" not in text and "FusedElementwise" not in text, text
    x = _f(2, 8, 8, 16)
    _close([fn(x).numpy()], [model(x).numpy()])


def test_a_shortcut_of_another_unknown_batch_is_not_fused(remapping):
    """Both [?, 8, 8, 4], but the shortcut's batch is another input's: it may be 1 and broadcast."""
    w, b = _f(3, 3, 4, 4), _f(4)
    remapping(True)
    spec = tf.TensorSpec([None, 8, 8, 4], tf.float32)
    fn = tf.function(lambda x, y: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b) + y),
                     input_signature=[spec, spec])
    text = fn.get_concrete_function().graph.optimized_as_text()
    assert "_FusedConv2D(x:0, capture:0, capture_1:0)" in text, text  # the bias alone
    x, y = _f(3, 8, 8, 4), _f(1, 8, 8, 4)
    _close([fn(x, y).numpy()], [tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b) + y).numpy()])


@pytest.mark.parametrize("activation", ["", "Relu", "Tanh", "GeluExact"])
def test_a_residual_add_with_every_kind_of_activation(remapping, activation):
    x, w, b, shortcut = _f(2, 7, 7, 3), _f(3, 3, 3, 5), _f(5), _f(2, 7, 7, 5)
    got, want, text = _run_both(
        remapping, lambda x: ACTIVATIONS[activation](shortcut + tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)), x)
    assert "_FusedConv2D(x:0, capture:0, capture_1:0, capture_2:0)" in text, text
    assert f'activation="{activation}"' in text and "= Add" not in text, text
    _close(got, want)


def test_a_residual_block_training_step_matches_the_unfused_graph(remapping):
    """Add's gradient reads neither operand, and Relu's gradient moves: both convolutions fuse whole."""
    x = _f(2, 6, 6, 4)
    weights = [_f(3, 3, 4, 4), _f(4), _f(3, 3, 4, 4), _f(4)]

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(weights)
            loss = tf.reduce_sum(tf.square(_resnet_block(x, *weights)))
        return loss, tape.gradient(loss, weights)

    got, want, text = _run_both(remapping, step, x)
    assert text.count("_FusedConv2D(") == 2 and text.count('activation="Relu"') == 2, text
    assert "_FusedConv2D(x:0" in text and text.count(", x:0)") >= 1, text  # the shortcut is an argument
    _close(got, want, 1e-4)


def test_residual_adds_the_pass_leaves_alone(remapping):
    """A shortcut that broadcasts, a sum read twice, and a sum added to itself keep their Add."""
    x, w, b = _f(2, 5, 5, 3), _f(3, 3, 3, 4), _f(4)
    conv = lambda x: tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)  # noqa: E731
    small = _f(1, 5, 5, 4)

    def sum_read_twice(x):
        pre = conv(x)
        return tf.nn.relu(pre + small[0]), tf.reduce_sum(pre)

    for fn in (lambda x: tf.nn.relu(conv(x) + small), sum_read_twice, lambda x: (lambda s: s + s)(conv(x))):
        got, want, text = _run_both(remapping, fn, x)
        assert "_FusedConv2D(x:0, capture:0, capture_1:0)" in text, text  # bias fused, no residual
        _close(got, want)


@pytest.mark.parametrize("read", ["pre", "sigmoid", "half"])
def test_an_expression_activation_read_inside_is_not_fused(remapping, read):
    """Note [Expression activations]: swish's sigmoid or Gelu's 0.5 * x read by another op keeps the whole
    expression apart (only the bias is fused)."""
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)

    def f(x):
        pre = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        if read == "half":
            half = 0.5 * pre
            return half * (1 + tf.math.erf(pre / tf.constant(np.sqrt(2), tf.float32))), half
        sig = tf.nn.sigmoid(pre)
        return pre * sig, (pre if read == "pre" else sig) * 3.0

    got, want, text = _run_both(remapping, f, x)
    assert 'activation=""' in text, text
    _close(got, want)


@pytest.mark.parametrize("activation", ["GeluExact", "GeluApproximate"])
def test_tensorflows_graph_with_a_gelu_after_a_conv_imports_and_fuses(remapping, activation):
    """Note [Expression activations]: TensorFlow 2.21 writes gelu as erfc(-x / sqrt(2)) or with pow(x, 3), as
    ember's tf.nn.gelu now does; its unfused graph imports and the chain fuses whole."""
    import tensorflow as real_tf
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 6, 6, 3), (3, 3, 3, 4), (4,)))
    program = real_tf.function(lambda v: real_tf.nn.gelu(real_tf.nn.bias_add(real_tf.nn.conv2d(v, w, 1, "SAME"), b),
                                                          approximate=activation == "GeluApproximate"))
    concrete = program.get_concrete_function(real_tf.TensorSpec(x.shape, real_tf.float32))
    assert ("Erfc" if activation == "GeluExact" else "Pow") in [n.op for n in concrete.graph.as_graph_def().node]
    remapping(True)
    graph = tf.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    fn = tf.NewGraphFunction(graph, [concrete.inputs[0].name], [concrete.outputs[0].name])
    text = fn.graph.optimized_as_text()
    assert "_FusedConv2D(" in text and f'activation="{activation}"' in text, text
    assert "Erfc" not in text and "Pow" not in text and "Tanh" not in text, text
    _close([fn(x).numpy()], [program(x).numpy()], 1e-5)


def test_the_erf_form_of_earlier_tensorflow_versions_still_fuses(remapping):
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)

    def f(x):
        pre = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        return pre * 0.5 * (1.0 + tf.math.erf(pre / tf.constant(np.sqrt(2), tf.float32)))

    got, want, text = _run_both(remapping, f, x)
    assert 'activation="GeluExact"' in text and "Erf" not in text, text
    _close(got, want)


@pytest.mark.parametrize("variant", ["other constant", "constant of higher rank"])
def test_a_gelu_with_other_constants_is_not_fused(remapping, variant):
    """Only the constants of tf.nn.gelu match, and only of a shape that leaves the result the pre-activation's."""
    x, w, b = _f(2, 6, 6, 3), _f(3, 3, 3, 4), _f(4)
    half = tf.constant(0.5 if variant != "other constant" else 0.4, shape=[1] * (5 if "rank" in variant else 0))

    def f(x):
        pre = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        return half * pre * (1 + tf.math.erf(pre / tf.constant(np.sqrt(2), tf.float32)))

    got, want, text = _run_both(remapping, f, x)
    assert 'activation=""' in text and "Gelu" not in text, text
    _close(got, want)


def test_float64_is_not_fused(remapping):
    x = tf.constant(RNG.standard_normal((1, 5, 5, 2)))
    w, b = tf.constant(RNG.standard_normal((3, 3, 2, 2))), tf.constant(RNG.standard_normal(2))
    got, want, text = _run_both(remapping, lambda x: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)),
                                x)
    assert "_FusedConv2D" not in text
    _close(got, want)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("fmt", ["NDHWC", "NCDHW"])
def test_conv3d_bias_add_activation_is_one_node_with_the_unfused_values(remapping, activation, fmt):
    x = _f(2, 5, 6, 4, 3) if fmt == "NDHWC" else _f(2, 3, 5, 6, 4)
    w, b = _f(2, 3, 2, 3, 4), _f(4)
    strides = [1, 1, 2, 1, 1] if fmt == "NDHWC" else [1, 1, 1, 2, 1]

    def f(x):
        y = tf.nn.conv3d(x, w, strides, "SAME", data_format=fmt)
        return ACTIVATIONS[activation](tf.nn.bias_add(y, b, data_format=fmt))

    got, want, text = _run_both(remapping, f, x)
    assert f'_FusedConv3D(' in text and f'activation="{activation}"' in text, text
    assert "= Conv3D(" not in text and "= BiasAdd(" not in text, text
    _close(got, want)


def test_conv3d_training_step_fuses_both_convolutions_and_matches_the_unfused_graph(remapping):
    x = _f(2, 4, 5, 5, 2)
    w1, b1, w2, b2 = _f(2, 2, 2, 2, 4), _f(4), _f(3, 3, 3, 4, 3), _f(3)

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch([w1, b1, w2, b2])
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv3d(x, w1, [1] * 5, "SAME"), b1))
            y = tf.nn.relu(tf.nn.conv3d(h, w2, [1, 2, 2, 2, 1], "SAME") + b2)
            loss = tf.reduce_sum(y * y)
        return loss, tape.gradient(loss, [w1, b1, w2, b2])

    got, want, text = _run_both(remapping, step, x)
    assert text.count("_FusedConv3D(") == 2 and "= Relu(" not in text, text
    _close(got, want)


def test_conv3d_chains_the_pass_leaves_alone(remapping):
    """A Conv3D read twice, and float64 (fused by the rules of Conv2D's chains)."""
    x, w, b = _f(1, 4, 4, 4, 2), _f(2, 2, 2, 2, 3), _f(3)

    def read_twice(x):
        y = tf.nn.conv3d(x, w, [1] * 5, "VALID")
        return tf.nn.relu(tf.nn.bias_add(y, b)), tf.reduce_sum(y)

    x64, w64, b64 = (tf.cast(t, tf.float64) for t in (x, w, b))
    for fn, arg in ((read_twice, x),
                    (lambda x: tf.nn.relu(tf.nn.bias_add(tf.nn.conv3d(x, w64, [1] * 5, "VALID"), b64)), x64)):
        got, want, text = _run_both(remapping, fn, arg)
        assert "_FusedConv" not in text, text
        _close(got, want)


def _run_depthwise(remapping, fn, *args):
    return run_with_and_without_remapping(remapping, "_FusedDepthwise", fn, *args)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_depthwise_conv_bias_add_activation_is_one_node_with_the_unfused_values(remapping, activation, fmt):
    x = _f(2, 9, 7, 3) if fmt == "NHWC" else _f(2, 3, 9, 7)
    w, b = _f(3, 3, 3, 2), _f(6)  # output channel c * 2 + m

    def f(x):
        y = tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1] if fmt == "NHWC" else [1, 1, 2, 2], "SAME", data_format=fmt)
        return ACTIVATIONS[activation](tf.nn.bias_add(y, b, data_format=fmt))

    got, want, text = _run_depthwise(remapping, f, x)
    assert "_FusedDepthwiseConv2dNative(" in text and f'activation="{activation}"' in text, text
    assert "= DepthwiseConv2dNative(" not in text and "= BiasAdd(" not in text, text
    _close(got, want)


def test_depthwise_training_step_fuses_with_relu_and_matches_the_unfused_graph(remapping):
    x, w, b = _f(4, 8, 8, 3), _f(3, 3, 3, 2), _f(6)
    w2, b2 = _f(1, 1, 6, 4), _f(4)

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch([w, b, w2, b2])
            h = tf.nn.relu(tf.nn.depthwise_conv2d(x, w, [1] * 4, "SAME") + b)
            y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w2, 1, "VALID"), b2))
            loss = tf.reduce_sum(y * y)
        return loss, tape.gradient(loss, [w, b, w2, b2])

    got, want, text = _run_depthwise(remapping, step, x)
    assert text.count("_FusedDepthwiseConv2dNative(") == 1 and text.count("_FusedConv2D(") == 1, text
    assert "= Relu(" not in text, text
    _close(got, want)


def test_a_depthwise_conv_with_explicit_padding_is_not_fused(remapping):
    """TensorFlow's _FusedDepthwiseConv2dNative has no explicit paddings: ember's fused node could not be
    written to a GraphDef."""
    x, w, b = _f(1, 6, 6, 3), _f(3, 3, 3, 2), _f(6)
    pads = [[0, 0], [1, 2], [2, 1], [0, 0]]
    got, want, text = _run_depthwise(
        remapping, lambda x: tf.nn.relu(tf.nn.bias_add(tf.nn.depthwise_conv2d(x, w, [1] * 4, pads), b)), x)
    assert "_FusedDepthwise" not in text, text
    _close(got, want)


_FUSED_OPS = {
    "_FusedConv2D": ((2, 5, 6, 3), (3, 2, 3, 4), [[1, 1, 1, 1], True, "SAME", [], "NHWC", [1, 1, 1, 1]],
                     lambda x, w: tf.nn.conv2d(x, w, 1, "SAME")),
    "_FusedConv3D": ((2, 4, 5, 3, 2), (2, 3, 2, 2, 4), [[1, 1, 2, 1, 1], "SAME", "NDHWC", [1, 1, 1, 1, 1]],
                     lambda x, w: tf.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME")),
    "_FusedDepthwiseConv2dNative": ((2, 5, 6, 2), (3, 2, 2, 2), [[1, 1, 1, 1], "SAME", [], "NHWC", [1, 1, 1, 1]],
                                    lambda x, w: tf.nn.depthwise_conv2d(x, w, [1] * 4, "SAME")),
}


# Every activation of the fused ops, as the unfused graph computes it. The Gelus with their constants in full
# float64: tf.nn.gelu, as TensorFlow's, takes 0.044715 and 1 / sqrt(2) as float32 constants (about 1e-8 apart).
_EPILOGUES = {"": lambda y: y, "Relu": tf.nn.relu, "Elu": tf.nn.elu, "LeakyRelu": lambda y: tf.nn.leaky_relu(y, 0.25),
              "Relu6": tf.nn.relu6, "Tanh": tf.nn.tanh, "Sigmoid": tf.nn.sigmoid, "_MklSwish": tf.nn.silu,
              "GeluExact": lambda y: 0.5 * y * tf.math.erfc(-y * np.sqrt(0.5)),
              "GeluApproximate": lambda y: 0.5 * y * (1 + tf.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3)))}


@pytest.mark.parametrize("name", sorted(_FUSED_OPS))
def test_fused_op_float64_and_errors(name):
    """The op itself (the path without oneDNN runs float64; float32 runs oneDNN's post-ops): every activation,
    with and without a residual, against the composition; a bias of the wrong length, a residual of another
    shape and an unknown activation are InvalidArgumentErrors naming the op."""
    op = tf._C.op(name)
    x_shape, w_shape, attrs, conv = _FUSED_OPS[name]
    x, w = tf.constant(RNG.standard_normal(x_shape)), tf.constant(RNG.standard_normal(w_shape))
    b = tf.constant(RNG.standard_normal(4))
    residual = tf.constant(RNG.standard_normal(conv(x, w).shape))
    f32 = lambda v: tf.cast(v, tf.float32)  # noqa: E731
    for act, ref in _EPILOGUES.items():
        for args in ([b], [b, residual]):
            total = tf.nn.bias_add(conv(x, w), b) + (residual if len(args) == 2 else 0.0)
            want = ref(total).numpy()
            np.testing.assert_allclose(op(x, w, args, *attrs, act, 0.25).numpy(), want, rtol=1e-12, atol=1e-12)
            got32 = op(f32(x), f32(w), [f32(a) for a in args], *attrs, act, 0.25)
            np.testing.assert_allclose(got32.numpy(), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{name}: bias must be 1-D"):
        op(x, w, [tf.constant(RNG.standard_normal(3))], *attrs, "Relu", 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{name}: the residual .* must have the output's shape"):
        op(x, w, [b, residual[:1]], *attrs, "Relu", 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{name}: args must be"):
        op(x, w, [b, residual, residual], *attrs, "Relu", 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{name}: activation must be"):
        op(x, w, [b], *attrs, "Softplus", 0.2)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_relu_gradient_becomes_relu_grad_with_the_same_values(remapping, dtype):
    """Note [Relu gradients as ReluGrad]: SelectV2(Greater(x, 0), dy, 0) -> ReluGrad(dy, x); NaN, zeros and
    negative inputs give what the select gives."""
    x = tf.constant(np.array([[-1.0, 0.0, 2.0, np.nan], [3.0, -0.0, -2.5, 1e-30]]), dtype)
    dy = tf.constant(np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]), dtype)

    def f(x, dy):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.relu(x)
        return [tape.gradient(y, x, output_gradients=dy)]

    got, want, text = _run_both(remapping, f, x, dy)
    assert "= ReluGrad(" in text and "= SelectV2(" not in text, text
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(want[0], [[0, 0, 3, 0], [5, 0, 0, 8]])


def test_a_select_that_broadcasts_dy_stays(remapping):
    x, dy = _f(3, 4), _f(4)

    def f(x, dy):
        return [tf.where(x > 0.0, dy, 0.0)]

    got, want, text = _run_both(remapping, f, x, dy)
    assert "ReluGrad" not in text, text
    _close(got, want)

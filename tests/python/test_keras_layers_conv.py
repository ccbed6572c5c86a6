"""Conv1D/2D/3D, Conv1D/2D/3DTranspose and DepthwiseConv1D/2D (python/ember/keras/layers/convolutional.py) against
tf_keras with the same weights: forward, gradients, eager vs ember.function, None batch; bad inputs raise
ember.errors naming the layer."""

import numpy as np
import pytest
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras.layers import convolutional as C


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CONV_CASES = [
    ("Conv1D", dict(filters=4, kernel_size=3), (2, 9, 3)),
    ("Conv1D", dict(filters=4, kernel_size=3, padding="same", strides=2), (2, 9, 3)),
    ("Conv1D", dict(filters=4, kernel_size=3, padding="causal", dilation_rate=2), (2, 9, 3)),
    ("Conv1D", dict(filters=4, kernel_size=2, use_bias=False, activation="relu"), (2, 9, 3)),
    ("Conv2D", dict(filters=5, kernel_size=3), (2, 8, 7, 3)),
    ("Conv2D", dict(filters=5, kernel_size=(3, 2), strides=(2, 1), padding="same", activation="relu"), (2, 8, 7, 3)),
    ("Conv2D", dict(filters=4, kernel_size=3, dilation_rate=2, padding="same"), (2, 9, 9, 2)),
    ("Conv2D", dict(filters=4, kernel_size=3, groups=2), (2, 6, 6, 4)),
    ("Conv2D", dict(filters=3, kernel_size=1, use_bias=False), (2, 5, 5, 2)),
    ("Conv3D", dict(filters=3, kernel_size=2), (2, 4, 5, 4, 2)),
    ("Conv3D", dict(filters=3, kernel_size=3, strides=2, padding="same", activation="tanh"), (2, 5, 5, 5, 2)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3), (2, 4, 5, 2)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"), (2, 4, 5, 2)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="valid", output_padding=1), (2, 4, 4, 2)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=2, strides=2, activation="relu"), (2, 3, 3, 4)),
    ("Conv1DTranspose", dict(filters=3, kernel_size=3), (2, 5, 2)),
    ("Conv1DTranspose", dict(filters=3, kernel_size=4, strides=2, padding="same"), (2, 5, 2)),
    ("Conv1DTranspose", dict(filters=2, kernel_size=3, strides=3, output_padding=1, activation="relu"), (2, 4, 3)),
    ("Conv1DTranspose", dict(filters=2, kernel_size=3, dilation_rate=2, use_bias=False), (2, 6, 3)),
    ("Conv3DTranspose", dict(filters=2, kernel_size=2), (2, 3, 4, 3, 2)),
    ("Conv3DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"), (1, 3, 3, 4, 2)),
    ("Conv3DTranspose", dict(filters=2, kernel_size=(2, 3, 2), strides=(2, 1, 2), output_padding=(1, 0, 1),
                             activation="tanh"), (1, 2, 3, 3, 2)),
    ("DepthwiseConv1D", dict(kernel_size=3), (2, 7, 3)),
    ("DepthwiseConv1D", dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same"), (2, 9, 3)),
    ("DepthwiseConv1D", dict(kernel_size=2, dilation_rate=2, use_bias=False, activation="relu"), (2, 8, 2)),
    ("DepthwiseConv2D", dict(kernel_size=3), (2, 6, 6, 3)),
    ("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same"), (2, 7, 7, 3)),
    ("DepthwiseConv2D", dict(kernel_size=2, dilation_rate=2, use_bias=False), (2, 6, 6, 2)),
]


@pytest.mark.parametrize("name,kwargs,shape", CONV_CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CONV_CASES)])
def test_conv_matches_tf_keras(name, kwargs, shape):
    layer, _ = check_layer(lambda: getattr(C, name)(**kwargs), lambda: getattr(tf_keras.layers, name)(**kwargs),
                           [data(*shape)])
    want = getattr(tf_keras.layers, name)(**kwargs).compute_output_shape((None,) + shape[1:])
    assert layer.compute_output_shape((None,) + shape[1:]).as_list() == list(want)


def test_conv2d_weights_are_kernel_then_bias_in_keras_layout():
    layer = C.Conv2D(6, (3, 2))
    layer(tf.zeros([1, 5, 5, 4]))
    assert [w.shape for w in layer.get_weights()] == [(3, 2, 4, 6), (6,)]
    t = C.Conv2DTranspose(6, 3)
    t(tf.zeros([1, 5, 5, 4]))
    assert [w.shape for w in t.get_weights()] == [(3, 3, 6, 4), (6,)]
    d = C.DepthwiseConv2D(3, depth_multiplier=2)
    d(tf.zeros([1, 5, 5, 4]))
    assert [w.shape for w in d.get_weights()] == [(3, 3, 4, 2), (8,)]
    t1 = C.Conv1DTranspose(6, 3)
    t1(tf.zeros([1, 5, 4]))
    assert [w.shape for w in t1.get_weights()] == [(3, 6, 4), (6,)]
    t3 = C.Conv3DTranspose(6, 3)
    t3(tf.zeros([1, 5, 5, 5, 4]))
    assert [w.shape for w in t3.get_weights()] == [(3, 3, 3, 6, 4), (6,)]
    d1 = C.DepthwiseConv1D(3, depth_multiplier=2)
    d1(tf.zeros([1, 5, 4]))
    assert [w.shape for w in d1.get_weights()] == [(3, 4, 2), (8,)]


@pytest.mark.parametrize("name,kwargs", [
    ("Conv1DTranspose", dict(filters=3, kernel_size=3, strides=2, output_padding=1, dilation_rate=1)),
    ("Conv3DTranspose", dict(filters=3, kernel_size=2, strides=2, padding="same")),
    ("DepthwiseConv1D", dict(kernel_size=3, depth_multiplier=2, padding="same", activation="relu")),
])
def test_new_conv_configs_equal_tf_keras(name, kwargs):
    ours = getattr(C, name)(name="layer", **kwargs).get_config()
    want = getattr(tf_keras.layers, name)(name="layer", **kwargs).get_config()
    assert set(ours) == set(want)
    for key in ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "output_padding",
                "depth_multiplier", "activation", "use_bias"):
        if key in want:
            assert ours[key] == want[key], key
    assert type(getattr(C, name)(**kwargs)).from_config(ours).get_config() == ours


def test_transposed_conv_with_unknown_spatial_size_matches_tf_keras():
    """A None steps/rows axis: the output length is computed when the graph runs."""
    for name, kwargs, shape in [("Conv1DTranspose", dict(filters=2, kernel_size=3, strides=2), (2, 5, 3)),
                                ("Conv3DTranspose", dict(filters=2, kernel_size=3, strides=2, padding="same"),
                                 (1, 3, 2, 3, 2))]:
        x = data(*shape)
        ref = getattr(tf_keras.layers, name)(**kwargs)
        want = ref(x).numpy()
        layer = getattr(C, name)(**kwargs)
        layer(tf.constant(x))
        layer.set_weights(ref.get_weights())
        spec = tf.TensorSpec([None] * (len(shape) - 1) + [shape[-1]], tf.float32)
        got = tf.function(layer, input_signature=[spec])(tf.constant(x)).numpy()
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_depthwise_conv1d_and_transposed_convs_refuse_causal_padding():
    for make in (lambda: C.DepthwiseConv1D(3, padding="causal"), lambda: C.Conv1DTranspose(2, 3, padding="causal")):
        with pytest.raises(ValueError, match="causal"):
            make()


@pytest.mark.parametrize("name,kwargs,shape", [
    ("Conv1D", dict(filters=3, kernel_size=2), (2, 7, 3)),
    ("Conv2D", dict(filters=3, kernel_size=3, strides=2, padding="same"), (2, 7, 6, 2)),
    ("Conv3D", dict(filters=2, kernel_size=2), (1, 4, 4, 4, 2)),
    ("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2), (2, 6, 6, 3)),
    ("DepthwiseConv1D", dict(kernel_size=3, depth_multiplier=2), (2, 6, 3)),
    ("Conv1DTranspose", dict(filters=3, kernel_size=3, strides=2), (2, 5, 2)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"), (2, 4, 5, 2)),
    ("Conv3DTranspose", dict(filters=2, kernel_size=2, strides=2), (1, 2, 3, 2, 2)),
])
def test_channels_first_is_channels_last_transposed(name, kwargs, shape):
    """TensorFlow's CPU kernels have no NCHW convolution, so channels_first is checked against ember's own
    channels_last layer with the same weights."""
    x = data(*shape)
    last = getattr(C, name)(**kwargs)
    want = last(tf.constant(x)).numpy()
    first = getattr(C, name)(data_format="channels_first", **kwargs)
    perm = [0, len(shape) - 1] + list(range(1, len(shape) - 1))
    back = [0] + list(range(2, len(shape))) + [1]
    got = first(tf.constant(x.transpose(perm)))
    first.set_weights(last.get_weights())
    got = first(tf.constant(x.transpose(perm))).numpy().transpose(back)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("make,bad,words", [
    (lambda: C.Conv2D(2, 3), np.zeros((2, 5, 5), np.float32), ["Conv2D", "rank 4", "(2, 5, 5)"]),
    (lambda: C.Conv1D(2, 3), np.zeros((2, 5, 5, 1), np.float32), ["Conv1D", "rank 3", "(2, 5, 5, 1)"]),
    (lambda: C.Conv3D(2, 2), np.zeros((2, 5, 5, 1), np.float32), ["Conv3D", "rank 5"]),
    (lambda: C.DepthwiseConv2D(3), np.zeros((5, 5, 1), np.float32), ["DepthwiseConv2D", "rank 4"]),
    (lambda: C.Conv2DTranspose(2, 3), np.zeros((5, 1), np.float32), ["Conv2DTranspose", "rank 4"]),
])
def test_bad_rank_raises_naming_the_layer(make, bad, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        make()(tf.constant(bad))
    for word in words:
        assert word in str(info.value)


def test_channels_differing_from_build_raise():
    layer = C.Conv2D(2, 3, name="my_conv")
    layer(tf.zeros([1, 5, 5, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2D 'my_conv': expected 3 input channels.*got 4"):
        layer(tf.zeros([1, 5, 5, 4]))
    with pytest.raises(ValueError):  # Keras raises ValueError: the error is one too
        layer(tf.zeros([1, 5, 5, 4]))


def test_groups_must_divide_input_channels():
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible by groups=2.*got 3"):
        C.Conv2D(4, 3, groups=2)(tf.zeros([1, 5, 5, 3]))


def test_bad_arguments_raise_value_error_as_keras():
    with pytest.raises(ValueError, match="filters"):
        C.Conv2D(0, 3)
    with pytest.raises(ValueError, match="padding"):
        C.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="dilation_rate"):
        C.Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="kernel_size"):
        C.Conv2D(2, (3, 3, 3))


@pytest.mark.parametrize("options", [{}, {"padding": "same", "strides": 2},
                                     {"padding": "causal", "dilation_rate": 2, "depth_multiplier": 2},
                                     {"data_format": "channels_first"}], ids=str)
def test_separable_conv1d_matches_tf_keras(options):
    import tensorflow
    import tf_keras

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 11, 3)).astype(np.float32)
    if options.get("data_format") == "channels_first":
        x = np.transpose(x, (0, 2, 1)).copy()
    results = []
    for keras, fw in ((tf.keras, tf), (tf_keras, tensorflow)):
        layer = keras.layers.SeparableConv1D(4, 3, **options)
        layer.build(x.shape)
        weights = np.random.default_rng(1)
        layer.depthwise_kernel.assign(weights.standard_normal(tuple(layer.depthwise_kernel.shape)).astype(np.float32))
        layer.pointwise_kernel.assign(weights.standard_normal(tuple(layer.pointwise_kernel.shape)).astype(np.float32))
        layer.bias.assign(np.arange(4, dtype=np.float32))
        results.append((layer(fw.constant(x)).numpy(), tuple(layer.depthwise_kernel.shape),
                        layer.get_config()["padding"]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-5)
    assert results[0][1:] == results[1][1:]

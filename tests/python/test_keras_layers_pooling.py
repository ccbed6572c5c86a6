"""Max/AveragePooling 1-3D and the global poolings (python/ember/keras/layers/pooling.py) against tf_keras:
forward, gradients, eager vs ember.function, None batch; bad inputs raise ember.errors naming the layer."""

import numpy as np
import pytest
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras.layers import pooling as P


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CASES = [
    ("MaxPooling1D", {}, (2, 9, 3)),
    ("MaxPooling1D", dict(pool_size=3, strides=2, padding="same"), (2, 9, 3)),
    ("AveragePooling1D", dict(pool_size=2), (2, 9, 3)),
    ("AveragePooling1D", dict(pool_size=3, strides=1, padding="same"), (2, 9, 3)),
    ("MaxPooling2D", {}, (2, 8, 7, 3)),
    ("MaxPooling2D", dict(pool_size=(3, 2), strides=(2, 1), padding="same"), (2, 8, 7, 3)),
    ("AveragePooling2D", {}, (2, 8, 7, 3)),
    ("AveragePooling2D", dict(pool_size=3, strides=2, padding="same"), (2, 8, 7, 3)),
    ("MaxPooling3D", {}, (2, 4, 5, 4, 2)),
    ("MaxPooling3D", dict(pool_size=2, strides=1, padding="same"), (1, 3, 4, 3, 2)),
    ("AveragePooling3D", {}, (2, 4, 5, 4, 2)),
    ("AveragePooling3D", dict(pool_size=(2, 3, 2), padding="same"), (1, 3, 4, 5, 2)),
    ("GlobalAveragePooling1D", {}, (2, 9, 3)),
    ("GlobalAveragePooling2D", {}, (2, 5, 4, 3)),
    ("GlobalAveragePooling2D", dict(keepdims=True), (2, 5, 4, 3)),
    ("GlobalAveragePooling3D", {}, (2, 3, 4, 3, 2)),
    ("GlobalMaxPooling1D", {}, (2, 9, 3)),
    ("GlobalMaxPooling2D", {}, (2, 5, 4, 3)),
    ("GlobalMaxPooling2D", dict(keepdims=True), (2, 5, 4, 3)),
    ("GlobalMaxPooling3D", {}, (2, 3, 4, 3, 2)),
]


@pytest.mark.parametrize("name,kwargs,shape", CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_pooling_matches_tf_keras(name, kwargs, shape):
    layer, _ = check_layer(lambda: getattr(P, name)(**kwargs), lambda: getattr(tf_keras.layers, name)(**kwargs),
                           [data(*shape)])
    want = getattr(tf_keras.layers, name)(**kwargs).compute_output_shape((None,) + shape[1:])
    assert layer.compute_output_shape((None,) + shape[1:]).as_list() == list(want)


def test_global_average_pooling_1d_with_a_mask_averages_the_unmasked_steps():
    x = data(2, 5, 3)
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], bool)
    want = tf_keras.layers.GlobalAveragePooling1D()(x, mask=mask).numpy()
    got = P.GlobalAveragePooling1D()(tf.constant(x), mask=tf.constant(mask)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_channels_first_is_channels_last_transposed():
    x = data(2, 6, 6, 3)
    want = P.MaxPooling2D(2)(tf.constant(x)).numpy()
    got = P.MaxPooling2D(2, data_format="channels_first")(tf.constant(x.transpose(0, 3, 1, 2))).numpy()
    np.testing.assert_allclose(got.transpose(0, 2, 3, 1), want)
    want = P.GlobalAveragePooling2D()(tf.constant(x)).numpy()
    got = P.GlobalAveragePooling2D(data_format="channels_first")(tf.constant(x.transpose(0, 3, 1, 2))).numpy()
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("make,shape,words", [
    (lambda: P.MaxPooling2D(), (2, 5, 5), ["MaxPooling2D", "rank 4", "(2, 5, 5)"]),
    (lambda: P.AveragePooling1D(), (2, 5), ["AveragePooling1D", "rank 3"]),
    (lambda: P.MaxPooling3D(), (2, 5, 5, 5), ["MaxPooling3D", "rank 5"]),
    (lambda: P.GlobalAveragePooling2D(), (2, 5, 5), ["GlobalAveragePooling2D", "rank 4"]),
    (lambda: P.GlobalMaxPooling1D(), (2, 5, 5, 1), ["GlobalMaxPooling1D", "rank 3"]),
])
def test_bad_rank_raises_naming_the_layer(make, shape, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        make()(tf.zeros(shape))
    for word in words:
        assert word in str(info.value)


def test_bad_arguments_raise_value_error_as_keras():
    with pytest.raises(ValueError, match="pool_size"):
        P.MaxPooling2D((2, 2, 2))
    with pytest.raises(ValueError, match="padding"):
        P.MaxPooling2D(padding="full")
    with pytest.raises(ValueError, match="data_format"):
        P.AveragePooling2D(data_format="NHWC")


@pytest.mark.parametrize("shape,ksize,strides,padding", [
    ((3, 7, 6, 5), 2, 2, "VALID"),
    ((2, 7, 6, 70), 3, 2, "SAME"),  # overlapping windows; channels in more than one chunk of 64
    ((2, 5, 5, 3), 3, 1, "SAME"),
])
def test_max_pool_gradient_lands_where_tensorflow_puts_it(shape, ksize, strides, padding):
    """The channels-last gradient kernel (Note [Channels-last max pooling gradient] in kernels/pool.cc)
    keeps TensorFlow's choice among equal maxima (the first in the window), in float32 and float64; the
    values are rounded so ties are common. (TensorFlow's 3-D gradient picks among ties differently:
    docs/convolutions.md.)"""
    import tensorflow

    rng = np.random.default_rng(0)
    x = np.round(rng.standard_normal(shape) * 1.5).astype(np.float32)
    k, s = [1, ksize, ksize, 1], [1, strides, strides, 1]
    y = tensorflow.raw_ops.MaxPool(input=x, ksize=k, strides=s, padding=padding).numpy()
    dy = rng.standard_normal(y.shape).astype(np.float32)
    want = tensorflow.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy, ksize=k, strides=s,
                                          padding=padding).numpy()
    for dtype in (np.float32, np.float64):
        got = tf._C.op("MaxPoolGrad")(*[tf.constant(v.astype(dtype)) for v in (x, y, dy)], k, s, padding, [], "NHWC")
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)

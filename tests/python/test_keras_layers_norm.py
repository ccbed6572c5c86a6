"""BatchNormalization, LayerNormalization and GroupNormalization (python/ember/keras/layers/normalization.py) against tf_keras:
forward in training and inference, the moving statistics after training steps (eagerly and inside
ember.function), gradients, None batch; bad inputs raise ember.errors naming the layer."""

import numpy as np
import pytest
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras.layers import normalization as N


def data(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 1).astype(np.float32)


BN_CASES = [
    (dict(), (4, 5, 5, 3)),  # the fused path, NHWC
    (dict(axis=1), (4, 3, 5, 5)),  # the fused path, NCHW
    (dict(), (6, 4)),  # after a Dense layer
    (dict(axis=1), (4, 3, 6)),
    (dict(momentum=0.5, epsilon=1e-2, center=False), (4, 3, 3, 2)),
    (dict(scale=False), (3, 2, 3, 4, 2)),
    (dict(axis=[1, 2]), (3, 2, 3, 4)),
]


@pytest.mark.parametrize("kwargs,shape", BN_CASES, ids=[str(i) for i in range(len(BN_CASES))])
@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_matches_tf_keras(kwargs, shape, training):
    def tf_layer():
        layer = tf_keras.layers.BatchNormalization(**kwargs)
        layer.build(shape)
        rng = np.random.default_rng(1)  # moving statistics away from (0, 1), so inference is tested too
        layer.set_weights([w + rng.uniform(0.1, 0.5, w.shape).astype(np.float32) for w in layer.get_weights()])
        return layer

    check_layer(lambda: N.BatchNormalization(**kwargs), tf_layer, [data(*shape)], dict(training=training))


@pytest.mark.parametrize("kwargs,shape", [(dict(), (8, 3, 3, 4)), (dict(momentum=0.9), (8, 5)),
                                          (dict(axis=1), (6, 4, 3, 3))])
@pytest.mark.parametrize("in_function", [False, True])
def test_moving_statistics_follow_tf_keras_over_training_steps(kwargs, shape, in_function):
    ref = tf_keras.layers.BatchNormalization(**kwargs)
    ours = N.BatchNormalization(**kwargs)
    step = tf.function(lambda x: ours(x, training=True)) if in_function else (lambda x: ours(x, training=True))
    for i in range(3):
        x = data(*shape, seed=i)
        want = ref(x, training=True).numpy()
        got = step(tf.constant(x)).numpy()
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    for ours_w, ref_w in zip(ours.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(ours_w, ref_w, atol=1e-5, rtol=1e-5)
    moving = ours.get_weights()[2:]
    assert not np.allclose(moving[0], 0) and not np.allclose(moving[1], 1)  # they did move
    x = data(*shape, seed=9)
    np.testing.assert_allclose(ours(tf.constant(x)).numpy(), ref(x).numpy(), atol=1e-4, rtol=1e-4)


def test_batch_norm_weights_are_gamma_beta_moving_mean_moving_variance():
    layer = N.BatchNormalization()
    layer(tf.zeros([2, 3]))
    assert [w.name.split("/")[-1].split(":")[0] for w in layer.weights] == ["gamma", "beta", "moving_mean",
                                                                          "moving_variance"]
    assert [w.trainable for w in layer.weights] == [True, True, False, False]


def test_frozen_batch_norm_runs_in_inference_mode():
    """Keras 2: trainable=False makes BatchNormalization use (and keep) its moving statistics."""
    layer = N.BatchNormalization()
    x = data(4, 3)
    layer(tf.constant(x))
    layer.trainable = False
    before = layer.get_weights()
    got = layer(tf.constant(x), training=True).numpy()
    np.testing.assert_allclose(got, x / np.sqrt(1 + 1e-3), rtol=1e-5)
    for a, b in zip(layer.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_training_as_a_tensor_selects_the_branch():
    layer = N.BatchNormalization()
    x = data(8, 3)

    @tf.function
    def f(x, training):
        return layer(x, training=training)

    ref = tf_keras.layers.BatchNormalization()
    np.testing.assert_allclose(f(tf.constant(x), tf.constant(True)).numpy(), ref(x, training=True).numpy(),
                               atol=1e-4)
    np.testing.assert_allclose(f(tf.constant(x), tf.constant(False)).numpy(), ref(x, training=False).numpy(),
                               atol=1e-4)


LN_CASES = [(dict(), (3, 6)), (dict(), (2, 4, 5)), (dict(axis=[1, 2]), (2, 3, 4)), (dict(axis=1), (2, 3, 4)),
            (dict(center=False, epsilon=1e-5), (2, 3, 4)), (dict(scale=False), (2, 5))]


@pytest.mark.parametrize("kwargs,shape", LN_CASES, ids=[str(i) for i in range(len(LN_CASES))])
def test_layer_norm_matches_tf_keras(kwargs, shape):
    def tf_layer():
        layer = tf_keras.layers.LayerNormalization(**kwargs)
        layer.build(shape)
        rng = np.random.default_rng(2)
        layer.set_weights([w + rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in layer.get_weights()])
        return layer

    check_layer(lambda: N.LayerNormalization(**kwargs), tf_layer, [data(*shape)])


def test_bad_inputs_raise_naming_the_layer():
    bn = N.BatchNormalization(name="bn")
    bn(tf.zeros([2, 4, 4, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BatchNormalization 'bn': expected 3 features.*got 5"):
        bn(tf.zeros([2, 4, 4, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BatchNormalization 'bn': expected an input of rank 4"):
        bn(tf.zeros([2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"LayerNormalization .*axis 3.*rank 2"):
        N.LayerNormalization(axis=3)(tf.zeros([2, 3]))
    ln = N.LayerNormalization()
    ln(tf.zeros([2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"LayerNormalization .*expected 3 features.*got 4"):
        ln(tf.zeros([2, 4]))


GN_CASES = [
    (dict(groups=2), (3, 5, 4)),
    (dict(groups=3, epsilon=1e-2), (2, 4, 4, 6)),
    (dict(groups=-1, center=False), (2, 3, 4)),  # one channel per group: instance normalisation
    (dict(groups=1, scale=False), (2, 3, 2, 2, 4)),
    (dict(groups=2, axis=1), (2, 4, 3, 3)),  # channels first
    (dict(groups=4, axis=-2), (2, 3, 8, 2)),
]


@pytest.mark.parametrize("kwargs,shape", GN_CASES, ids=[str(i) for i in range(len(GN_CASES))])
def test_group_norm_matches_tf_keras(kwargs, shape):
    def tf_layer():
        layer = tf_keras.layers.GroupNormalization(**kwargs)
        layer.build(shape)
        rng = np.random.default_rng(1)  # gamma and beta away from (1, 0)
        layer.set_weights([w + rng.uniform(0.1, 0.5, w.shape).astype(np.float32) for w in layer.get_weights()])
        return layer

    layer, ref = check_layer(lambda: N.GroupNormalization(**kwargs), tf_layer, [data(*shape)])
    assert [w.name.split("/")[-1] for w in layer.weights] == [w.name.split("/")[-1] for w in ref.weights]
    config = layer.get_config()
    assert config == ref.get_config() | {"name": config["name"]}
    assert N.GroupNormalization.from_config(config).get_config() == config


def test_group_norm_with_a_mask_matches_tf_keras():
    x = data(2, 5, 4)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)[:, :, None]
    ref = tf_keras.layers.GroupNormalization(groups=2)
    want = ref(x, mask=mask).numpy()
    ours = N.GroupNormalization(groups=2)
    np.testing.assert_allclose(ours(tf.constant(x), mask=tf.constant(mask)).numpy(), want, atol=1e-5, rtol=1e-5)


def test_group_norm_bad_groups_raise_as_tf_keras():
    with pytest.raises(ValueError, match="cannot be more than the number of channels"):
        N.GroupNormalization(groups=8)(tf.zeros([2, 3, 4]))
    with pytest.raises(ValueError, match="must be a multiple"):
        N.GroupNormalization(groups=3)(tf.zeros([2, 3, 4]))
    layer = N.GroupNormalization(groups=2, name="gn")
    layer(tf.zeros([2, 3, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="gn.*4 channels.*6"):
        layer(tf.zeros([2, 3, 6]))

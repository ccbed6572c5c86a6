"""MultiHeadAttention (python/ember/keras/layers/attention.py) against tf_keras with the same weights:
forward, attention scores, masks (attention_mask, use_causal_mask), gradients, eager vs ember.function, None
batch; dropout only in training; bad inputs raise ember.errors naming the layer."""

import numpy as np
import pytest
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras.layers.attention import MultiHeadAttention


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CASES = [
    (dict(num_heads=2, key_dim=3), {}, False),
    (dict(num_heads=3, key_dim=2, value_dim=4), {}, True),
    (dict(num_heads=2, key_dim=4, use_bias=False, output_shape=5), {}, True),
    (dict(num_heads=2, key_dim=3), dict(use_causal_mask=True), False),
    (dict(num_heads=2, key_dim=3), dict(return_attention_scores=True), True),
    (dict(num_heads=1, key_dim=3), dict(use_causal_mask=True, return_attention_scores=True), True),
]


@pytest.mark.parametrize("kwargs,call_kwargs,with_key", CASES, ids=[str(i) for i in range(len(CASES))])
def test_attention_matches_tf_keras(kwargs, call_kwargs, with_key):
    query, value, key = data(2, 4, 5), data(2, 4, 6, seed=1), data(2, 4, 3, seed=2)
    inputs = [query, value, key] if with_key else [query, value]
    check_layer(lambda: MultiHeadAttention(**kwargs), lambda: tf_keras.layers.MultiHeadAttention(**kwargs), inputs,
                call_kwargs)


def test_self_attention_with_attention_mask_matches_tf_keras():
    x = data(2, 5, 4)
    mask = np.random.default_rng(3).uniform(size=(2, 5, 5)) > 0.3
    mask[:, :, 0] = True  # every query attends somewhere
    for causal in (False, True):
        ref = tf_keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
        want, want_scores = ref(x, x, attention_mask=mask, use_causal_mask=causal, return_attention_scores=True)
        layer = MultiHeadAttention(num_heads=2, key_dim=3)
        layer(tf.constant(x), tf.constant(x))
        layer.set_weights(ref.get_weights())
        got, scores = layer(tf.constant(x), tf.constant(x), attention_mask=tf.constant(mask),
                            use_causal_mask=causal, return_attention_scores=True)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
        np.testing.assert_allclose(scores.numpy(), want_scores.numpy(), atol=1e-6)


def test_weights_are_keras_order_and_shapes():
    layer = MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4)
    layer(tf.zeros([1, 2, 5]), tf.zeros([1, 3, 6]))
    assert [w.shape for w in layer.get_weights()] == [(5, 2, 3), (2, 3), (6, 2, 3), (2, 3), (6, 2, 4), (2, 4),
                                                      (2, 4, 5), (5,)]


def test_dropout_only_in_training():
    x = data(2, 5, 4)
    layer = MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.5)
    a = layer(tf.constant(x), tf.constant(x)).numpy()
    np.testing.assert_array_equal(a, layer(tf.constant(x), tf.constant(x), training=False).numpy())
    assert not np.allclose(a, layer(tf.constant(x), tf.constant(x), training=True).numpy())
    _, scores = layer(tf.constant(x), tf.constant(x), training=True, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy().sum(-1), 1, rtol=1e-5)  # the scores returned are before dropout


def test_bad_inputs_raise_naming_the_layer():
    layer = MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"MultiHeadAttention 'mha': expected an input of rank 3"):
        layer(tf.zeros([2, 5]), tf.zeros([2, 5, 4]))
    layer(tf.zeros([2, 5, 4]), tf.zeros([2, 5, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"MultiHeadAttention 'mha': expected 4 value features.*got 3"):
        layer(tf.zeros([2, 5, 4]), tf.zeros([2, 5, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"attention_mask of shape"):
        layer(tf.zeros([2, 5, 4]), tf.zeros([2, 5, 4]), attention_mask=tf.ones([2, 1, 5, 5], tf.bool))

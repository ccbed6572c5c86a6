"""The Keras Layer base class (ember/keras/engine/base_layer.py): build/call, weights, losses, training,
masking, input checks, config; initializers, activations and regularizers by name."""

import numpy as np
import pytest

import ember as tf
from ember.keras import activations, initializers, regularizers


class Linear(tf.keras.layers.Layer):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight("w", shape=(input_shape[-1], self.units), initializer="ones")
        self.b = self.add_weight("b", shape=(self.units,), initializer="zeros", regularizer=regularizers.L2(0.5))
        self.count = self.add_weight("count", shape=(), dtype=tf.int64, trainable=False)

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return dict(super().get_config(), units=self.units)


def test_layer_builds_on_first_call_and_names_weights():
    layer = Linear(3, name="lin")
    assert not layer.built
    y = layer(np.ones((2, 4)))  # float64 NumPy: converted, then cast to the layer's float32
    assert layer.built and y.dtype == tf.float32 and y.shape == (2, 3)
    np.testing.assert_allclose(y.numpy(), np.full((2, 3), 4.0))
    assert [v.name for v in layer.weights] == ["lin/w:0", "lin/b:0", "lin/count:0"]
    assert [v.name for v in layer.trainable_weights] == ["lin/w:0", "lin/b:0"]
    assert [v.name for v in layer.non_trainable_variables] == ["lin/count:0"]
    assert layer.trainable_variables == layer.trainable_weights
    assert layer.count_params() == 4 * 3 + 3 + 1


def test_unique_names_and_nested_weights_order():
    tf.keras.backend.clear_session()
    a, b = tf.keras.layers.Dense(1), tf.keras.layers.Dense(1)
    assert (a.name, b.name) == ("dense", "dense_1")

    class Block(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = [tf.keras.layers.Dense(2), tf.keras.layers.Dense(3)]
            self.scale = tf.Variable(2.0)

        def call(self, x):
            return self.inner[1](self.inner[0](x)) * self.scale

    block = Block()
    block(np.ones((1, 4), np.float32))
    shapes = [tuple(v.shape.as_list()) for v in block.trainable_weights]
    assert shapes == [(), (4, 2), (2,), (2, 3), (3,)]
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 5
    assert not block.inner[0].trainable  # Keras 2: trainable propagates to nested layers


def test_gradient_through_layer_and_regularization_loss():
    layer = Linear(2)
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x)) + tf.add_n(layer.losses)
    grads = tape.gradient(y, layer.trainable_variables)
    np.testing.assert_allclose(grads[0].numpy(), [[1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_allclose(grads[1].numpy(), [1.0, 1.0])  # b is zero: its L2 gradient is zero
    layer.b.assign([1.0, 2.0])
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.5 * 5.0)


def test_add_loss_cleared_at_each_outer_call():
    class WithLoss(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = WithLoss()

        def call(self, x):
            return self.inner(x)

    outer = Outer()
    outer(tf.constant([1.0, 2.0]))
    outer(tf.constant([3.0]))
    assert [float(l) for l in outer.losses] == [3.0]


def test_training_argument_propagates_to_nested_layers():
    seen = []

    class Probe(tf.keras.layers.Layer):
        def call(self, x, training=None):
            seen.append(training)
            return x

    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.probe = Probe()

        def call(self, x, training=True):
            return self.probe(x)

    outer = Outer()
    outer(tf.constant(1.0))
    outer(tf.constant(1.0), training=False)
    Probe()(tf.constant(1.0))
    assert seen == [True, False, None]


def test_dropout_only_when_training():
    layer = tf.keras.layers.Dropout(0.5)
    x = np.ones((100, 10), np.float32)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    y = layer(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.3 < (y == 0).mean() < 0.7


def test_embedding_mask_zero_propagates_to_outputs():
    emb = tf.keras.layers.Embedding(5, 3, mask_zero=True)
    out = emb(np.array([[1, 0, 2]]))
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[True, False, True]])
    dense_out = tf.keras.layers.Dense(2)(out)  # Dense supports masking: passes it on
    np.testing.assert_array_equal(dense_out._keras_mask.numpy(), [[True, False, True]])
    assert getattr(tf.constant(1.0), "_keras_mask", None) is None


def test_wrong_input_shape_to_built_layer_names_layer_expected_and_got():
    layer = tf.keras.layers.Dense(2, name="head")
    layer(np.ones((1, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        layer(np.ones((1, 4)))
    text = str(info.value)
    assert '"head"' in text and "value 3" in text and "(1, 4)" in text
    assert isinstance(info.value, ValueError)  # what Keras raises, for code that catches it
    with pytest.raises(tf.errors.InvalidArgumentError, match="min_ndim=2, found ndim=1"):
        layer(np.ones((3,)))


def test_config_round_trip():
    layer = Linear(5, name="cfg")
    clone = Linear.from_config(layer.get_config())
    assert clone.units == 5 and clone.name == "cfg"
    dense = tf.keras.layers.Dense(4, activation="relu", kernel_regularizer="l2", name="d")
    clone = tf.keras.layers.Dense.from_config(dense.get_config())
    assert clone.activation is activations.relu and isinstance(clone.kernel_regularizer, regularizers.L2)


def test_get_set_weights():
    layer = Linear(2)
    layer(np.ones((1, 3), np.float32))
    values = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2], np.float32), np.array(7)]
    layer.set_weights(values)
    for got, want in zip(layer.get_weights(), values):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="expecting 3 weights"):
        layer.set_weights(values[:2])


def test_get_by_name():
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert activations.get(None) is activations.linear and activations.get("softmax") is activations.softmax
    # float32 penalties, as tf_keras keeps them
    assert regularizers.get("l1_l2").get_config() == {"l1": 0.009999999776482582, "l2": 0.009999999776482582}
    with pytest.raises(ValueError, match="Unknown activation"):
        activations.get("nope")
    init = initializers.get({"class_name": "RandomNormal", "config": {"stddev": 2.0, "seed": 1}})
    assert init.stddev == 2.0 and init(shape=(3,)).shape == (3,)


def test_initializers_statistics_match_keras_formulas():
    w = initializers.GlorotUniform(seed=1)((200, 300)).numpy()
    limit = np.sqrt(6.0 / 500)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.9 * limit
    w = initializers.HeNormal(seed=1)((400, 400)).numpy()
    assert abs(w.std() - np.sqrt(2.0 / 400)) < 0.1 * np.sqrt(2.0 / 400)
    q = initializers.Orthogonal(seed=3)((4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)


def test_activations_against_tf_keras():
    import tensorflow as real_tf
    import tf_keras

    x = np.linspace(-4, 4, 17).astype(np.float32).reshape(1, 17)
    for name in ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "softplus", "softsign", "swish", "gelu",
                 "exponential", "hard_sigmoid", "mish", "linear"]:
        ours = activations.get(name)(tf.constant(x)).numpy()
        theirs = tf_keras.activations.get(name)(real_tf.constant(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=name)
    ours = activations.relu(tf.constant(x), alpha=0.1, max_value=2.0, threshold=0.5).numpy()
    theirs = tf_keras.activations.relu(real_tf.constant(x), alpha=0.1, max_value=2.0, threshold=0.5).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_backend_helpers():
    v = tf.Variable(0.5)
    tf.keras.backend.set_value(v, 0.25)
    assert tf.keras.backend.get_value(v) == np.float32(0.25)
    assert tf.keras.backend.int_shape(tf.zeros((2, 3))) == (2, 3)
    assert tf.keras.backend.int_shape(tf.keras.Input((4,))) == (None, 4)
    assert tf.keras.backend.is_keras_tensor(tf.keras.Input((4,)))
    assert tf.keras.backend.floatx() == "float32" and tf.keras.backend.epsilon() == 1e-7


def test_training_and_mask_given_positionally():
    seen = []

    class Probe(tf.keras.layers.Layer):
        def call(self, x, training=None, mask=None):
            seen.append((training, mask))
            return x

    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.probe = Probe()

        def call(self, x, training=None):
            return self.probe(x)

    probe = Probe()
    probe(tf.constant([1.0]), True)
    probe(tf.constant([1.0]), False, "m")
    Outer()(tf.constant([1.0]), True)
    assert seen == [(True, None), (False, "m"), (True, None)]


def test_default_layer_names_follow_keras_not_tf_module():
    """Keras' rule: digits split nothing (Conv2D -> conv2d; tf.Module's rule gives conv2_d)."""
    import tf_keras

    cases = {"Conv2D": (1, 1), "LocallyConnected1D": (1, 1), "UpSampling2D": (), "PReLU": (), "Dense": (1,),
             "Conv2DTranspose": (1, 1), "GlobalAveragePooling2D": (), "BatchNormalization": ()}
    for cls, args in cases.items():
        ours = getattr(tf.keras.layers, cls)(*args).name
        theirs = getattr(tf_keras.layers, cls)(*args).name
        assert _strip_counter(ours) == _strip_counter(theirs), (cls, ours, theirs)


def _strip_counter(name):
    base, _, counter = name.rpartition("_")
    return base if base and counter.isdigit() else name

"""The core layers (ember/keras/layers/core.py), each against tf_keras: equal weights (set_weights) give
equal outputs and equal gradients with respect to inputs and weights; plus shapes, masks and errors."""

import numpy as np
import pytest

import ember as tf


@pytest.fixture(scope="module")
def keras():
    import tensorflow
    import tf_keras

    return tensorflow, tf_keras


def _compare(make, inputs, keras, training=None, rtol=1e-5, atol=1e-6):
    """Builds the layer in both frameworks, copies ember's weights over, and compares the output and the
    gradients of sum(output * r) for a fixed random r."""
    real_tf, tf_keras = keras
    ours, theirs = make(tf.keras), make(tf_keras)
    single = not isinstance(inputs, list)
    xs = [inputs] if single else inputs
    ember_in = [tf.constant(x) for x in xs]
    tf_in = [real_tf.constant(x) for x in xs]
    kwargs = {} if training is None else {"training": training}
    out = ours(ember_in[0] if single else ember_in, **kwargs)
    theirs(tf_in[0] if single else tf_in, **kwargs)
    theirs.set_weights(ours.get_weights())
    r = np.random.default_rng(7).normal(size=out.shape.as_list()).astype(np.float32)
    with tf.GradientTape(persistent=True) as tape:
        for t in ember_in:
            tape.watch(t)
        out = ours(ember_in[0] if single else ember_in, **kwargs)
        loss = tf.reduce_sum(tf.cast(out, tf.float32) * r)
    with real_tf.GradientTape(persistent=True) as real_tape:
        for t in tf_in:
            real_tape.watch(t)
        ref = theirs(tf_in[0] if single else tf_in, **kwargs)
        real_loss = real_tf.reduce_sum(real_tf.cast(ref, real_tf.float32) * r)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=rtol, atol=atol)
    float_inputs = [i for i, x in enumerate(xs) if np.issubdtype(x.dtype, np.floating)]
    grads = tape.gradient(loss, [ember_in[i] for i in float_inputs] + list(ours.trainable_weights))
    real_grads = real_tape.gradient(real_loss, [tf_in[i] for i in float_inputs] + list(theirs.trainable_weights))
    assert len(grads) == len(real_grads)
    for g, rg in zip(grads, real_grads):
        if rg is None:
            assert g is None
            continue
        rg = real_tf.convert_to_tensor(rg).numpy()
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), rg, rtol=rtol, atol=atol)
    return ours, out


RNG = np.random.default_rng(0)
X2 = RNG.normal(size=(4, 3)).astype(np.float32)
X3 = RNG.normal(size=(2, 5, 3)).astype(np.float32)


@pytest.mark.parametrize("kwargs", [{"units": 4}, {"units": 2, "activation": "relu"},
                                    {"units": 3, "use_bias": False, "activation": "tanh"}])
def test_dense(keras, kwargs):
    _compare(lambda k: k.layers.Dense(**kwargs), X2, keras)
    _compare(lambda k: k.layers.Dense(**kwargs), X3, keras)  # rank 3: tensordot on the last axis


@pytest.mark.parametrize("name", ["relu", "sigmoid", "softmax", "tanh", "elu", "selu", "softplus", "gelu", "swish"])
def test_activation(keras, name):
    _compare(lambda k: k.layers.Activation(name), X3, keras)


def test_flatten_reshape(keras):
    _compare(lambda k: k.layers.Flatten(), X3, keras)
    _compare(lambda k: k.layers.Reshape((3, 5)), X3, keras)
    _compare(lambda k: k.layers.Reshape((-1, 3)), X3, keras)
    x4 = RNG.normal(size=(2, 2, 3, 4)).astype(np.float32)
    _compare(lambda k: k.layers.Flatten(data_format="channels_first"), x4, keras)


def test_dropout_inference_and_training_statistics(keras):
    _compare(lambda k: k.layers.Dropout(0.5), X3, keras, training=False)
    layer = tf.keras.layers.Dropout(0.25)
    x = np.ones((200, 50), np.float32)
    with tf.GradientTape() as tape:
        t = tf.constant(x)
        tape.watch(t)
        y = layer(t, training=True)
    kept = y.numpy() != 0
    assert 0.70 < kept.mean() < 0.80
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(y, t).numpy(), kept / 0.75, rtol=1e-6)
    shared = tf.keras.layers.Dropout(0.5, noise_shape=(None, 1))(x[:4], training=True).numpy()
    assert all(len(set(row)) == 1 for row in shared)  # one decision per row


@pytest.mark.parametrize("cls", ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"])
def test_merge_layers(keras, cls):
    a, b = RNG.normal(size=(2, 4, 3)).astype(np.float32), RNG.normal(size=(2, 4, 3)).astype(np.float32)
    _compare(lambda k: getattr(k.layers, cls)(), [a, b], keras)
    if cls not in ("Subtract",):
        c = RNG.normal(size=(2, 4, 3)).astype(np.float32)
        _compare(lambda k: getattr(k.layers, cls)(), [a, b, c], keras)
    _compare(lambda k: k.layers.Concatenate(axis=1), [a, b], keras)


def test_merge_errors():
    with pytest.raises(ValueError, match="list of at least 2 inputs"):
        tf.keras.layers.Add()([np.ones((2, 3), np.float32)])
    with pytest.raises(ValueError, match="matching shapes except for the concatenation axis"):
        tf.keras.layers.Concatenate()([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        tf.keras.layers.Subtract()([np.ones((2, 3), np.float32)] * 3)


def test_embedding(keras):
    ids = np.array([[1, 0, 3], [4, 4, 2]], np.int32)
    layer, out = _compare(lambda k: k.layers.Embedding(5, 3, mask_zero=True), ids, keras)
    np.testing.assert_array_equal(out._keras_mask.numpy(), ids != 0)
    assert layer.compute_output_shape((None, 3)) == tf.TensorShape([None, 3, 3])


def test_lambda(keras):
    _compare(lambda k: k.layers.Lambda(lambda x: x * 2.0 + 1.0), X3, keras)
    layer = tf.keras.layers.Lambda(lambda x, scale: x * scale, arguments={"scale": 3.0})
    np.testing.assert_allclose(layer(X2).numpy(), X2 * 3.0)


def test_compute_output_shapes_match_tf_keras(keras):
    real_tf, tf_keras = keras
    cases = [(lambda k: k.layers.Dense(7), (None, 5, 3)), (lambda k: k.layers.Flatten(), (None, 5, 3)),
             (lambda k: k.layers.Reshape((-1, 5)), (None, 5, 3)), (lambda k: k.layers.Activation("relu"), (None, 2)),
             (lambda k: k.layers.Embedding(10, 4), (None, 6)), (lambda k: k.layers.Dropout(0.1), (None, 3))]
    for make, shape in cases:
        assert tf.TensorShape(make(tf.keras).compute_output_shape(shape)).as_list() == \
            real_tf.TensorShape(make(tf_keras).compute_output_shape(shape)).as_list()


def test_configs_match_tf_keras(keras):
    _, tf_keras = keras
    for make in [lambda k: k.layers.Dense(3, activation="relu", name="d"), lambda k: k.layers.Dropout(0.3, name="d"),
                 lambda k: k.layers.Flatten(name="d"), lambda k: k.layers.Reshape((2, 3), name="d"),
                 lambda k: k.layers.Activation("tanh", name="d"), lambda k: k.layers.Concatenate(axis=1, name="d"),
                 lambda k: k.layers.Embedding(5, 2, name="d"), lambda k: k.layers.Add(name="d")]:
        assert make(tf.keras).get_config() == make(tf_keras).get_config()


def test_dense_errors_name_the_layer():
    layer = tf.keras.layers.Dense(2, name="proj")
    with pytest.raises(ValueError, match="last dimension of the inputs to a Dense layer should be defined"):
        layer.build(tf.TensorShape([None, None]))
    layer(np.ones((2, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'layer "proj".*value 3.*\(2, 5\)'):
        layer(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match="positive integer"):
        tf.keras.layers.Dense(0)


def test_kernel_regularizer_loss_matches_tf_keras(keras):
    _, tf_keras = keras
    ours = tf.keras.layers.Dense(3, kernel_regularizer=tf.keras.regularizers.L1L2(0.01, 0.02),
                                 activity_regularizer="l2")
    theirs = tf_keras.layers.Dense(3, kernel_regularizer=tf_keras.regularizers.L1L2(0.01, 0.02),
                                   activity_regularizer="l2")
    ours(X2)
    theirs(X2)
    theirs.set_weights(ours.get_weights())
    ours(X2)
    theirs(X2)
    np.testing.assert_allclose(sorted(float(l) for l in ours.losses), sorted(float(l) for l in theirs.losses),
                               rtol=1e-5)


def test_constraints_applied_after_each_update_as_tf_keras(keras):
    real_tf, tf_keras = keras
    x = RNG.normal(size=(8, 3)).astype(np.float32)
    y = RNG.normal(size=(8, 2)).astype(np.float32)
    results = []
    for k, optimizer in ((tf.keras, tf.keras.optimizers.SGD(0.5)), (tf_keras, tf_keras.optimizers.SGD(0.5))):
        model = k.Sequential([k.layers.Dense(2, input_shape=(3,), kernel_constraint="non_neg",
                                             bias_constraint=k.constraints.MaxNorm(0.1))])
        model.set_weights([np.full((3, 2), 0.2, np.float32), np.zeros(2, np.float32)])
        model.compile(optimizer, "mse")
        model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0)
        results.append(model.get_weights())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert (results[0][0] >= 0).all()
    assert tf.keras.layers.Dense(2, kernel_constraint="max_norm").get_config()["kernel_constraint"] == \
        tf_keras.layers.Dense(2, kernel_constraint="max_norm").get_config()["kernel_constraint"]


def test_constraint_with_compat_v1_optimizer():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,), kernel_constraint="non_neg")])
    model.set_weights([np.full((2, 1), 0.01, np.float32), np.zeros(1, np.float32)])
    model.compile(tf.compat.v1.train.GradientDescentOptimizer(1.0), "mse")
    model.fit(np.ones((4, 2), np.float32), np.full((4, 1), -10.0, np.float32), epochs=1, verbose=0)
    assert (model.layers[0].kernel.numpy() == 0).all()

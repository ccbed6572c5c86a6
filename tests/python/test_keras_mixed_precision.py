"""Mixed precision (python/ember/keras/mixed_precision/) against tf_keras: policies, the dtypes of layers'
outputs and variables under "mixed_float16" (variables float32, read as float16 inside the layer's call),
LossScaleOptimizer's dynamic scale step by step, and a small model that compiles, trains and lowers its loss
as tf_keras' does."""

import numpy as np
import pytest
import tensorflow
import tf_keras

import ember as tf
from ember.keras import mixed_precision as mp
from ember.keras.mixed_precision.autocast_variable import AutoCastVariable


@pytest.fixture
def mixed():
    mp.set_global_policy("mixed_float16")
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    mp.set_global_policy(None)
    tf_keras.mixed_precision.set_global_policy(None)


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", ["mixed_float16", "mixed_bfloat16", "float32", "float16", "float64"])
def test_policy_matches_tf_keras(name):
    ours, ref = mp.Policy(name), tf_keras.mixed_precision.Policy(name)
    assert (ours.name, ours.compute_dtype, ours.variable_dtype) == (ref.name, ref.compute_dtype, ref.variable_dtype)
    assert repr(ours) == repr(ref)
    assert ours.get_config() == ref.get_config()
    assert mp.Policy.from_config(ours.get_config()) == ours


def test_global_policy_and_bad_names():
    assert repr(mp.global_policy()) == '<Policy "float32">'
    mp.set_global_policy("mixed_bfloat16")
    try:
        assert mp.global_policy().compute_dtype == "bfloat16"
        assert tf.keras.layers.Dense(2).compute_dtype == "bfloat16"
    finally:
        mp.set_global_policy(None)
    assert mp.global_policy().name == "float32"
    with pytest.raises(ValueError, match="Cannot convert value foo to a mixed precision Policy"):
        mp.Policy("foo")
    with pytest.raises(ValueError, match="floating-point policies"):
        mp.set_global_policy("int32")


LAYERS = [
    ("Dense", lambda k: k.layers.Dense(3, activation="relu"), (2, 4)),
    ("Conv2D", lambda k: k.layers.Conv2D(2, 3, padding="same"), (2, 5, 5, 3)),
    ("DepthwiseConv2D", lambda k: k.layers.DepthwiseConv2D(3), (2, 5, 5, 2)),
    ("Conv1DTranspose", lambda k: k.layers.Conv1DTranspose(2, 3, strides=2), (2, 5, 3)),
    ("MaxPooling2D", lambda k: k.layers.MaxPooling2D(), (2, 4, 4, 2)),
    ("BatchNormalization", lambda k: k.layers.BatchNormalization(), (4, 3)),
    ("LayerNormalization", lambda k: k.layers.LayerNormalization(), (2, 3, 4)),
    ("GroupNormalization", lambda k: k.layers.GroupNormalization(2), (2, 3, 4)),
    ("LSTM", lambda k: k.layers.LSTM(3, return_sequences=True), (2, 4, 3)),
    ("GRU", lambda k: k.layers.GRU(3), (2, 4, 3)),
    ("ConvLSTM2D", lambda k: k.layers.ConvLSTM2D(2, 3), (2, 3, 5, 5, 1)),
    ("MultiHeadAttention", lambda k: k.layers.MultiHeadAttention(2, 3), (2, 3, 4)),
]


@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[n for n, _, _ in LAYERS])
def test_layers_compute_in_float16_with_float32_variables_as_tf_keras(mixed, name, make, shape):
    x = data(*shape)
    ref, ours = make(tf_keras), make(tf.keras)
    args = (x, x) if name == "MultiHeadAttention" else (x,)
    want = ref(*args)
    ours(*[tf.constant(a) for a in args])
    ours.set_weights(ref.get_weights())
    got = ours(*[tf.constant(a) for a in args])
    assert got.dtype.name == want.dtype.name == "float16"
    assert [w.dtype.name for w in ours.weights] == [w.dtype.name for w in ref.weights]
    assert (ours.dtype, ours.compute_dtype, ours.variable_dtype) == (ref.dtype, ref.compute_dtype, ref.variable_dtype)
    assert repr(ours.dtype_policy) == repr(ref.dtype_policy)
    assert ours.get_config()["dtype"] == ref.get_config()["dtype"]
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.numpy().astype(np.float32), atol=1e-2, rtol=1e-2)


def test_variables_read_as_float16_only_inside_the_call(mixed):
    layer = tf.keras.layers.Dense(2)
    x = tf.constant(data(3, 4))
    with tf.GradientTape() as tape:
        y = layer(x)
    assert isinstance(layer.kernel, AutoCastVariable) and isinstance(layer.kernel, tf.Variable)
    assert layer.kernel.dtype == tf.float32 and layer.kernel.read_value().dtype == tf.float32
    assert layer.get_weights()[0].dtype == np.float32
    grads = tape.gradient(y, layer.trainable_weights)
    assert [g.dtype for g in grads] == [tf.float32, tf.float32]
    assert y.dtype == tf.float16
    float32_layer = tf.keras.layers.Dense(2, dtype="float32")
    assert float32_layer(x).dtype == tf.float32 and float32_layer.get_config()["dtype"] == "float32"
    assert not isinstance(float32_layer.kernel, AutoCastVariable)


def _tf_keras_sequence(optimizer, var, gradients):
    out = []
    for g in gradients:
        optimizer.apply_gradients([(tensorflow.constant(g, tensorflow.float32), var)])
        out.append((float(optimizer.loss_scale.numpy()), int(optimizer.dynamic_counter.numpy()),
                    int(optimizer.iterations.numpy()), var.numpy().copy()))
    return out


GRADIENTS = [[1.0, 1.0], [np.inf, 1.0], [2.0, 2.0], [1.0, 1.0], [np.nan, 0.0], [1.0, 1.0], [0.5, 0.5]]


@pytest.mark.parametrize("in_function", [False, True])
def test_dynamic_loss_scale_follows_tf_keras_step_by_step(in_function):
    ref = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(0.1), initial_scale=8.0,
                                                      dynamic_growth_steps=2)
    want = _tf_keras_sequence(ref, tensorflow.Variable([1.0, 2.0]), GRADIENTS)
    ours = mp.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), initial_scale=8.0, dynamic_growth_steps=2)
    var = tf.Variable([1.0, 2.0])
    ours.build([var])
    step = (lambda g: ours.apply_gradients([(g, var)]))
    if in_function:
        step = tf.function(step)
    for g, (scale, counter, iterations, value) in zip(GRADIENTS, want):
        step(tf.constant(g, tf.float32))
        assert (float(ours.loss_scale.numpy()), int(ours.dynamic_counter.numpy()),
                int(ours.iterations.numpy())) == (scale, counter, iterations)
        np.testing.assert_allclose(var.numpy(), value, rtol=1e-6)


def test_scaled_loss_unscaled_gradients_fixed_scale_and_config():
    ours = mp.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), dynamic=False, initial_scale=4.0)
    assert float(ours.get_scaled_loss(tf.constant(2.0)).numpy()) == 8.0
    assert float(ours.get_scaled_loss(lambda: tf.constant(3.0))().numpy()) == 12.0
    grads = ours.get_unscaled_gradients([tf.constant(4.0), None])
    assert float(grads[0].numpy()) == 1.0 and grads[1] is None
    assert ours.dynamic_counter is None and not ours.dynamic
    var = tf.Variable([1.0, 2.0])
    ours.apply_gradients([(tf.constant([np.inf, 1.0]), var)])  # a fixed scale applies every step, as tf_keras
    ref = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(0.1), dynamic=False,
                                                      initial_scale=4.0)
    ref_var = tensorflow.Variable([1.0, 2.0])
    ref.apply_gradients([(tensorflow.constant([np.inf, 1.0]), ref_var)])
    np.testing.assert_array_equal(var.numpy(), ref_var.numpy())
    dynamic = mp.LossScaleOptimizer(tf.keras.optimizers.Adam(0.01))
    ref_dynamic = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.Adam(0.01))
    assert (dynamic.initial_scale, dynamic.dynamic_growth_steps) == (ref_dynamic.initial_scale,
                                                                    ref_dynamic.dynamic_growth_steps)
    config = dynamic.get_config()
    assert {k: config[k] for k in ("dynamic", "initial_scale", "dynamic_growth_steps")} == \
        {k: ref_dynamic.get_config()[k] for k in ("dynamic", "initial_scale", "dynamic_growth_steps")}
    again = mp.LossScaleOptimizer.from_config(config)
    assert again.get_config() == config and type(again.inner_optimizer).__name__ == "Adam"
    assert dynamic.learning_rate.numpy() == pytest.approx(0.01)
    with pytest.raises(ValueError, match='"initial_scale" must be specified'):
        mp.LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False)
    with pytest.raises(TypeError, match="inner_optimizer"):
        mp.LossScaleOptimizer("sgd")


def _model(keras, float16_output=False):
    inputs = keras.Input((6, 6, 1))
    x = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(8, activation="relu", kernel_regularizer="l2")(x)
    x = keras.layers.Dense(3)(x)
    outputs = x if float16_output else keras.layers.Activation("softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize("float16_output", [False, True])
def test_small_model_trains_under_mixed_float16_as_tf_keras(mixed, float16_output):
    ref, ours = _model(tf_keras, float16_output), _model(tf.keras, float16_output)
    ours.set_weights(ref.get_weights())
    x = data(32, 6, 6, 1, seed=1)
    y = np.random.default_rng(2).integers(0, 3, 32)
    loss = "sparse_categorical_crossentropy" if not float16_output else \
        tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ours_loss = "sparse_categorical_crossentropy" if not float16_output else \
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ref.compile(tf_keras.optimizers.SGD(0.1), loss)
    ours.compile(tf.keras.optimizers.SGD(0.1), ours_loss)
    assert type(ours.optimizer).__name__ == "LossScaleOptimizer"
    assert ours.output.dtype.name == ref.output.dtype.name
    assert [w.dtype.name for w in ours.weights] == [w.dtype.name for w in ref.weights]
    want = ref.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0).history["loss"]
    assert got[-1] < got[0]
    np.testing.assert_allclose(got, want, rtol=2e-2)
    assert float(ours.optimizer.loss_scale.numpy()) == float(ref.optimizer.loss_scale.numpy())
    assert int(ours.optimizer.iterations.numpy()) == int(ref.optimizer.iterations.numpy()) == 16
    assert ours.predict(x[:4], verbose=0).dtype == ref.predict(x[:4], verbose=0).dtype


def _dense_model(keras):
    inputs = keras.Input((4,))
    x = keras.layers.Dense(8, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1, dtype="float32")(x))


@pytest.mark.parametrize("writer,reader", [("ember", "ember"), ("tf_keras", "ember"), ("ember", "tf_keras")])
def test_mixed_model_with_loss_scale_optimizer_goes_through_hdf5(mixed, tmp_path, writer, reader):
    x, y = data(8, 4, seed=3), data(8, 1, seed=4)
    keras = {"ember": tf.keras, "tf_keras": tf_keras}
    model = _dense_model(keras[writer])
    model.compile(keras[writer].optimizers.Adam(0.01), "mse")
    model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    path = str(tmp_path / "model.h5")
    model.save(path)
    loaded = keras[reader].models.load_model(path)
    assert type(loaded.optimizer).__name__.startswith("LossScaleOptimizer")
    assert type(loaded.optimizer.inner_optimizer).__name__ == "Adam"
    # tf_keras does not restore a LossScaleOptimizer's state from HDF5, not even from its own files (it warns
    # and starts afresh); ember restores it from either.
    assert int(loaded.optimizer.iterations.numpy()) == (4 if reader == "ember" else 0)
    assert loaded.layers[1].dtype_policy.name == "mixed_float16" and loaded.layers[2].dtype_policy.name == "float32"
    # float16 outputs of two frameworks: within two float16 ulps (2^-9 relative near 1)
    np.testing.assert_allclose(np.asarray(loaded.predict(x, verbose=0)), np.asarray(model.predict(x, verbose=0)),
                               rtol=2e-3, atol=2e-3)
    loaded.fit(x, y, epochs=1, batch_size=4, verbose=0)  # the restored slots train on


def test_mixed_model_savedmodel_round_trip(mixed, tmp_path):
    model = _dense_model(tf.keras)
    model.compile("adam", "mse")
    x = data(4, 4)
    model.fit(x, data(4, 1), epochs=1, verbose=0)
    model.save(str(tmp_path / "saved"))
    loaded = tf.keras.models.load_model(str(tmp_path / "saved"))
    assert type(loaded.optimizer).__name__ == "LossScaleOptimizer"
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    assert tf.keras.Model.from_config(model.get_config()).layers[1].dtype_policy.name == "mixed_float16"


def test_a_functional_model_leaves_the_casting_to_its_layers(mixed):
    """A float32 first layer of a mixed model gets the float32 input itself, as tf_keras's graph networks do
    not autocast."""
    def model(keras):
        inputs = keras.Input((3,))
        x = keras.layers.Dense(2, dtype="float32", kernel_initializer="ones")(inputs)
        return keras.Model(inputs, x)

    x = np.array([[1.0001, 2.0, 3.0]], np.float32)
    got, want = model(tf.keras)(tf.constant(x)), model(tf_keras)(x)
    assert got.dtype == tf.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())  # float16 would round 1.0001 to 1.0


@pytest.mark.parametrize("shape", [(4, 3, 3, 5), (4, 5)], ids=["fused", "not_fused"])
def test_batch_normalization_trains_in_float16_with_float32_statistics_as_tf_keras(mixed, shape):
    """The 4-D input takes FusedBatchNormV3 with a float16 x and float32 parameters (TensorFlow's T and U), the
    2-D one is normalised in float32; in both the weights are never autocast, as tf_keras' are."""
    x = data(*shape) * 3 + 1
    ref, ours = tf_keras.layers.BatchNormalization(), tf.keras.layers.BatchNormalization()
    ref(x), ours(tf.constant(x))
    ours.set_weights(ref.get_weights())
    for training in (True, False):
        with tensorflow.GradientTape() as tape:
            want = ref(x, training=training)
            want_loss = tensorflow.reduce_sum(tensorflow.sin(tensorflow.cast(want, "float32")))
        want_grads = tape.gradient(want_loss, ref.trainable_weights)
        with tf.GradientTape() as tape:
            got = ours(tf.constant(x), training=training)
            got_loss = tf.reduce_sum(tf.sin(tf.cast(got, "float32")))
        got_grads = tape.gradient(got_loss, ours.trainable_weights)
        assert got.dtype.name == want.dtype.name == "float16"
        assert [g.dtype.name for g in got_grads] == [g.dtype.name for g in want_grads] == ["float32", "float32"]
        np.testing.assert_allclose(got.numpy().astype(np.float32), want.numpy().astype(np.float32), atol=4e-3,
                                   rtol=4e-3)
        for g, w in zip(got_grads, want_grads):
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-2, rtol=2e-2)
        for g, w in zip(ours.get_weights(), ref.get_weights()):  # the moving statistics, updated in training
            assert g.dtype == w.dtype == np.float32
            np.testing.assert_allclose(g, w, atol=1e-4, rtol=1e-4)

"""Models (ember/keras/engine/{training,functional,sequential}.py, models.py): the seed 002 example,
the functional API, Sequential, summary text against tf_keras, configs, and save/load round trips."""

import io
import contextlib
import os

import numpy as np
import pytest

import ember as tf


@pytest.fixture(scope="module")
def keras():
    import tensorflow
    import tf_keras

    return tensorflow, tf_keras


X = np.array([[2.0, 3.0]], np.float32)


class SeedModel(tf.keras.Model):
    """Seed 002's MyModel: Dense(4, relu) -> Dense(5, softmax), dropout only when training."""

    def __init__(self, keep_probability=0.2):
        super(SeedModel, self).__init__()
        self.dense1 = tf.keras.layers.Dense(4, activation=tf.nn.relu)
        self.dense2 = tf.keras.layers.Dense(5, activation=tf.nn.softmax)
        self.keep_probability = keep_probability

    def call(self, inputs, training=True):
        x = self.dense2(self.dense1(inputs))
        if training:
            return tf.nn.dropout(x, self.keep_probability)
        return x


def test_seed_002_model_through_function_and_v1_optimizer():
    model = SeedModel()
    compiled = tf.function(lambda x, training: model(x, training=training))
    inference = compiled(tf.constant(X), False)
    np.testing.assert_allclose(inference.numpy().sum(), 1.0, rtol=1e-6)  # softmax, no dropout
    np.testing.assert_allclose(model(X, training=False).numpy(), inference.numpy(), rtol=1e-6)
    tf.random.set_seed(3)
    dropped = np.concatenate([compiled(tf.constant(X), True).numpy() for _ in range(20)])
    kept = dropped != 0
    assert kept.any() and not kept.all()
    # tf.nn.dropout's second argument is the rate: kept values are the inference outputs / (1 - 0.2)
    np.testing.assert_allclose(dropped[kept], np.broadcast_to(inference.numpy() / 0.8, dropped.shape)[kept],
                               rtol=1e-5)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01)
    step = tf.function(lambda x: model(x))  # the default training=True of call
    with tf.GradientTape() as tape:
        outputs = step(tf.constant(X))
    gradient = tape.gradient(outputs, model.trainable_variables)
    assert len(gradient) == 4 and all(g is not None for g in gradient)
    before = [v.numpy().copy() for v in model.trainable_variables]
    optimizer.apply_gradients((grad, var) for grad, var in zip(gradient, model.trainable_variables))
    for b, v, g in zip(before, model.trainable_variables, gradient):
        np.testing.assert_allclose(v.numpy(), b - 0.01 * tf.convert_to_tensor(g).numpy(), rtol=1e-5, atol=1e-7)


def test_seed_002_model_with_decorated_call():
    class Decorated(SeedModel):
        @tf.function
        def call(self, inputs, training=True):
            return SeedModel.call(self, inputs, training)

    model = Decorated()
    out = model(X, training=False)
    assert out.shape == (1, 5) and len(model.trainable_variables) == 4
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(X, training=False) ** 2)
    assert all(g is not None for g in tape.gradient(loss, model.trainable_variables))


def test_functional_model_replays_the_graph_and_shares_weights():
    inputs = tf.keras.Input((3,), name="x")
    shared = tf.keras.layers.Dense(3, name="shared")
    a = shared(inputs)
    b = shared(a * 0.5)  # arithmetic on KerasTensors is a layer of the graph
    out = tf.keras.layers.Add(name="sum")([a, b])
    model = tf.keras.Model(inputs, out)
    assert type(model).__name__ == "Functional" and model.name.startswith("model")
    assert [l.name for l in model.layers][0] == "x" and len(model.trainable_weights) == 2
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    k, bias = shared.kernel.numpy(), shared.bias.numpy()
    hidden = x @ k + bias
    np.testing.assert_allclose(model(x).numpy(), hidden + ((hidden * 0.5) @ k + bias), rtol=1e-5)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    assert all(g is not None for g in tape.gradient(loss, model.trainable_variables))


def test_functional_layer_order_matches_tf_keras(keras):
    _, tf_keras = keras

    def build(k):
        a = k.Input((3,), name="a")
        b = k.Input((2,), name="b")
        h = k.layers.Dense(4, name="h")(a)
        g = k.layers.Dense(2, name="g")(b)
        c = k.layers.Concatenate(name="c")([h, g])
        o1 = k.layers.Dense(1, name="o1")(c)
        o2 = k.layers.Dense(2, name="o2")(h)
        return k.Model([a, b], [o1, o2], name="two")

    ours, theirs = build(tf.keras), build(tf_keras)
    assert [l.name for l in ours.layers] == [l.name for l in theirs.layers]
    theirs.set_weights(ours.get_weights())
    xa, xb = np.ones((2, 3), np.float32), np.full((2, 2), 0.5, np.float32)
    # Random weights can cancel to an output near zero, where a different
    # summation order leaves a relative error above 1e-6: bound it absolutely too.
    for o, t in zip(ours([xa, xb]), theirs([xa, xb])):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    assert ours.output_names == theirs.output_names


def test_nested_models_and_training_flag():
    seen = []

    class Probe(tf.keras.layers.Layer):
        def call(self, x, training=None):
            seen.append(training)
            return x

    inner_in = tf.keras.Input((2,))
    inner = tf.keras.Model(inner_in, Probe()(tf.keras.layers.Dense(2)(inner_in)), name="inner")
    outer_in = tf.keras.Input((2,))
    outer = tf.keras.Model(outer_in, tf.keras.layers.Dense(1)(inner(outer_in)))
    seen.clear()
    outer(np.ones((1, 2), np.float32), training=True)
    outer(np.ones((1, 2), np.float32))
    assert seen == [True, None]
    assert len(outer.trainable_weights) == 4


def test_masks_flow_through_functional_and_sequential():
    class MaskSum(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.supports_masking = True

        def call(self, x, mask=None):
            m = tf.cast(mask, x.dtype)[..., None]
            return tf.reduce_sum(x * m, axis=1)

        def compute_mask(self, inputs, mask=None):
            return None

    ids = np.array([[1, 2, 0, 0]], np.int32)
    emb = tf.keras.layers.Embedding(5, 3, mask_zero=True)
    inputs = tf.keras.Input((4,), dtype=tf.int32)
    model = tf.keras.Model(inputs, MaskSum()(emb(inputs)))
    table = emb.embeddings.numpy()
    np.testing.assert_allclose(model(ids).numpy(), table[[1, 2]].sum(0, keepdims=True), rtol=1e-6)
    seq = tf.keras.Sequential([tf.keras.layers.Embedding(5, 3, mask_zero=True), MaskSum()])
    seq.layers[0].build(None)
    seq.layers[0].embeddings.assign(table)
    np.testing.assert_allclose(seq(ids).numpy(), table[[1, 2]].sum(0, keepdims=True), rtol=1e-6)


def test_sequential_add_pop_build():
    model = tf.keras.Sequential(name="seq")
    model.add(tf.keras.layers.Dense(3))
    assert not model.built
    model.build((None, 4))
    assert model.built and [tuple(v.shape.as_list()) for v in model.weights] == [(4, 3), (3,)]
    model.add(tf.keras.layers.Dense(2))
    assert model.output_shape == (None, 2) and len(model.layers) == 2
    model.pop()
    assert model.output_shape == (None, 3) and len(model.layers) == 1
    deferred = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    assert deferred(np.ones((3, 5), np.float32)).shape == (3, 2)  # built from the data
    assert deferred.input_shape == (None, 5)
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add(object())


def _summary(model):
    lines = []
    model.summary(print_fn=lines.append)
    return "\n".join(lines)


def test_summary_text_matches_tf_keras(keras):
    _, tf_keras = keras

    def sequential(k):
        return k.Sequential([k.layers.Dense(4, activation="relu", input_shape=(3,), name="dense"),
                             k.layers.Dropout(0.2, name="dropout"), k.layers.Dense(5, name="dense_1")],
                            name="sequential")

    def functional(k):
        a = k.Input((3,), name="input_1")
        b = k.Input((2,), name="aux")
        h = k.layers.Dense(4, name="dense_2")(a)
        c = k.layers.Concatenate(name="concatenate")([h, b])
        return k.Model([a, b], k.layers.Dense(1, name="dense_3")(c), name="model")

    def chain(k):
        a = k.Input((4,), name="input_2")
        return k.Model(a, k.layers.Dense(2, name="a_very_long_layer_name_that_wraps")(a), name="chain")

    def subclassed(k):
        class Sub(k.Model):
            def __init__(self):
                super().__init__(name="sub")
                self.d = k.layers.Dense(2, name="d")

            def call(self, x):
                return self.d(x)

        model = Sub()
        model(np.ones((1, 3), np.float32))
        return model

    for make in (sequential, functional, chain, subclassed):
        assert _summary(make(tf.keras)) == _summary(make(tf_keras)), make.__name__
    ours, theirs = sequential(tf.keras), sequential(tf_keras)
    ours.layers[0].trainable = theirs.layers[0].trainable = False
    for kwargs in ({"show_trainable": True}, {"line_length": 80}, {"expand_nested": True}):
        a, b = [], []
        ours.summary(print_fn=a.append, **kwargs)
        theirs.summary(print_fn=b.append, **kwargs)
        assert a == b, kwargs
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        ours.summary()
    assert buffer.getvalue().startswith('Model: "sequential"\n')


def test_summary_of_unbuilt_model_raises():
    with pytest.raises(ValueError, match="has not yet been built"):
        tf.keras.Sequential([tf.keras.layers.Dense(2)]).summary()


def test_configs_round_trip():
    seq = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,), name="d0"), tf.keras.layers.Dense(2)],
                              name="s")
    clone = tf.keras.Sequential.from_config(seq.get_config())
    assert [l.name for l in clone.layers] == ["d0", seq.layers[1].name] and clone.output_shape == (None, 2)
    a = tf.keras.Input((3,), name="in_a")
    h = tf.keras.layers.Dense(4, name="h")(a)
    out = tf.keras.layers.Concatenate(name="cat")([h, a])
    model = tf.keras.Model(a, out, name="f")
    copy = tf.keras.Model.from_config(model.get_config())
    assert [l.name for l in copy.layers] == [l.name for l in model.layers] and copy.output_shape == (None, 7)
    copy.set_weights(model.get_weights())
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(copy(x).numpy(), model(x).numpy())
    assert tf.keras.models.model_from_json(model.to_json()).output_shape == (None, 7)


def _functional():
    a = tf.keras.Input((3,), name="x")
    h = tf.keras.layers.Dense(8, activation="relu")(a)
    return tf.keras.Model(a, tf.keras.layers.Dense(2, activation="softmax")(tf.keras.layers.Dropout(0.5)(h)))


def test_save_and_load_model_round_trip(tmp_path):
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 1, 0, 1, 0])
    for make in (_functional, lambda: tf.keras.Sequential([tf.keras.layers.Dense(8, input_shape=(3,)),
                                                           tf.keras.layers.Dense(2, activation="softmax")])):
        model = make()
        model.compile(tf.keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(x, y, epochs=2, verbose=0)
        path = str(tmp_path / model.name)
        model.save(path)
        assert os.path.exists(os.path.join(path, "saved_model.pb"))
        restored = tf.keras.models.load_model(path)
        assert type(restored) is type(model) and [l.name for l in restored.layers] == [l.name for l in model.layers]
        np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
        np.testing.assert_allclose(restored.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0), rtol=1e-6)
        restored.fit(x, y, epochs=1, verbose=0)  # compiled again from the saved training config


def test_save_subclassed_model_loads_as_callable(tmp_path):
    model = SeedModel()
    model(X, training=False)
    model.save(str(tmp_path / "sub"))
    loaded = tf.keras.models.load_model(str(tmp_path / "sub"))
    np.testing.assert_allclose(loaded(tf.constant(X)).numpy(), model(X, training=False).numpy(), rtol=1e-6)
    serving = loaded.signatures["serving_default"]
    served = serving(input_1=tf.constant(X))["output_1"]  # tf_keras' names for a subclassed model
    np.testing.assert_allclose(served.numpy(), model(X, training=False).numpy(),
                               rtol=1e-6)
    assert len(loaded.trainable_variables) == 4


def test_save_weights_round_trip_and_tf_keras_checkpoint_keys(tmp_path, keras):
    real_tf, tf_keras = keras
    model = _functional()
    path = str(tmp_path / "w")
    model.save_weights(path)
    other = _functional()
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    a = tf_keras.Input((3,), name="x")
    h = tf_keras.layers.Dense(8, activation="relu")(a)
    theirs = tf_keras.Model(a, tf_keras.layers.Dense(2, activation="softmax")(tf_keras.layers.Dropout(0.5)(h)))
    their_path = str(tmp_path / "theirs")
    theirs.save_weights(their_path)
    ours_keys = sorted(name for name, _ in tf.train.list_variables(path))
    their_keys = sorted(name for name, _ in real_tf.train.list_variables(their_path))
    assert ours_keys == their_keys
    other.load_weights(their_path)  # a checkpoint TensorFlow wrote
    for a, b in zip(other.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, b)
    sub = SeedModel()
    sub(X)
    sub.save_weights(str(tmp_path / "sub"))
    names = sorted(name for name, _ in tf.train.list_variables(str(tmp_path / "sub")))
    assert names[1:] == ["dense1/bias/.ATTRIBUTES/VARIABLE_VALUE", "dense1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                         "dense2/bias/.ATTRIBUTES/VARIABLE_VALUE", "dense2/kernel/.ATTRIBUTES/VARIABLE_VALUE"]


def test_functional_model_input_errors():
    model = _functional()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'layer "model\S*".*expected shape=\(None, 3\), '
                                                            r"found shape=\(2, 4\)"):
        model(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="must come from `tf.keras.Input`"):
        tf.keras.Model(np.ones((1, 3)), tf.keras.Input((3,)))
    a, b = tf.keras.Input((3,)), tf.keras.Input((3,))
    with pytest.raises(ValueError, match="Graph disconnected"):
        tf.keras.Model(a, tf.keras.layers.Dense(1)(b))


def test_functional_subclass_and_dict_inputs_save(tmp_path):
    class FromGraph(tf.keras.Model):
        def __init__(self):
            i = tf.keras.Input((3,))
            super().__init__(inputs=i, outputs=tf.keras.layers.Dense(2)(i))

    model = FromGraph()
    assert model(np.ones((1, 3), np.float32)).shape == (1, 2) and len(model.weights) == 2
    a, b = tf.keras.Input((2,), name="a"), tf.keras.Input((1,), name="b")
    f = tf.keras.Model({"a": a, "b": b}, tf.keras.layers.Dense(1)(tf.keras.layers.Concatenate()([a, b])))
    data = {"a": np.ones((4, 2), np.float32), "b": np.full((4, 1), 2.0, np.float32)}
    f.save(str(tmp_path / "dict"))
    restored = tf.keras.models.load_model(str(tmp_path / "dict"))
    np.testing.assert_allclose(restored.predict(data, verbose=0), f.predict(data, verbose=0), rtol=1e-6)


def test_load_model_with_lambda_layer_falls_back_to_restored_object(tmp_path):
    a = tf.keras.Input((3,))
    model = tf.keras.Model(a, tf.keras.layers.Lambda(lambda t: t * 3.0)(tf.keras.layers.Dense(2)(a)))
    model.save(str(tmp_path / "lambda"))
    with pytest.warns(UserWarning, match="could not be rebuilt from its config"):
        loaded = tf.keras.models.load_model(str(tmp_path / "lambda"))
    np.testing.assert_allclose(loaded(tf.constant(np.ones((2, 3), np.float32))).numpy(),
                               model(np.ones((2, 3), np.float32)).numpy(), rtol=1e-6)


def test_saved_models_cross_load_with_tensorflow(tmp_path, keras):
    real_tf, tf_keras = keras
    x = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    # tf_keras writes (keras_metadata.pb), ember rebuilds the Keras model and its weights.
    a = tf_keras.Input((3,), name="x")
    theirs = tf_keras.Model(a, tf_keras.layers.Dense(2, name="o")(tf_keras.layers.Dense(4, activation="relu",
                                                                                            name="h")(a)))
    theirs.compile(tf_keras.optimizers.Adam(0.01), "mse")
    theirs.save(str(tmp_path / "theirs"))
    ours = tf.keras.models.load_model(str(tmp_path / "theirs"))
    assert type(ours).__name__ == "Functional" and [l.name for l in ours.layers] == ["x", "h", "o"]
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    ours.fit(x, np.zeros((4, 2), np.float32), verbose=0)  # compiled again from tf_keras' training config
    # ember writes, TensorFlow's tf.saved_model.load serves it.
    model = _functional()
    model.save(str(tmp_path / "ours"))
    served = real_tf.saved_model.load(str(tmp_path / "ours")).signatures["serving_default"]
    (arg_name,) = served.structured_input_signature[1]  # signatures take keywords
    out = list(served(**{arg_name: real_tf.constant(x)}).values())[0].numpy()
    np.testing.assert_allclose(out, model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)

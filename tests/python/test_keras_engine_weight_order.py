"""A model's weight order (`weights`, `trainable_weights`, `non_trainable_weights`, `get_weights`) against
tf_keras': layer by layer, each layer's trainable then non-trainable weights, the model's own last (Note [A
model's weight order] in keras/engine/training.py); and weights moved between the two libraries by
`get_weights`/`set_weights`, HDF5 files and checkpoints."""
import numpy as np
import pytest
import tensorflow as real_tf
import tf_keras

import ember as tf


def _build(keras, kind):
    """The same model in either library; the names are fixed so the weights' names compare."""
    layers = keras.layers
    keras.backend.clear_session()
    if kind == "sequential":
        return keras.Sequential([layers.Dense(3, input_shape=(4,), name="d1"), layers.BatchNormalization(name="bn"),
                                 layers.Dense(2, name="d2")])
    if kind in ("functional", "frozen_nested", "frozen_model"):
        inputs = keras.Input((4,))
        x = layers.BatchNormalization(name="fbn")(layers.Dense(3, name="fa")(inputs))
        inner = keras.Sequential([layers.Dense(3, input_shape=(3,), name="in_d"),
                                  layers.BatchNormalization(name="in_bn")], name="inner")
        shared = layers.Dense(3, name="shared")
        model = keras.Model(inputs, shared(shared(inner(x))))
        if kind == "frozen_nested":
            inner.trainable = False
        if kind == "frozen_model":  # every weight non-trainable: all that were trainable first, as tf_keras
            model.trainable = False
        return model
    if kind == "subclassed":
        class Sub(keras.Model):
            def __init__(self):
                super().__init__(name="sub")
                self.bn = layers.BatchNormalization(name="sbn")
                self.dense = layers.Dense(2, name="sd")
                self.own = self.add_weight(name="own", shape=(2,), trainable=False, initializer="ones")
                self.blocks = [layers.Dense(2, name="b1"), layers.BatchNormalization(name="b2")]

            def call(self, x):
                x = self.dense(self.bn(x))
                for block in self.blocks:
                    x = block(x)
                return x * self.own

        model = Sub()
        model(np.zeros((2, 3), np.float32))
        return model
    if kind == "subclassed_with_module":  # a plain tf.Module attribute keeps its place among the layers
        module_library = real_tf if keras is tf_keras else tf

        class Scale(module_library.Module):
            def __init__(self):
                super().__init__(name="scale")
                self.w = module_library.Variable(2.0, name="mw")
                self.c = module_library.Variable(1.0, trainable=False, name="mc")

        class WithModule(keras.Model):
            def __init__(self):
                super().__init__(name="with_module")
                self.own = module_library.Variable(3.0, name="own")
                self.dense = layers.Dense(2, name="d")
                self.scale = Scale()
                self.bn = layers.BatchNormalization(name="bn")

            def call(self, x):
                return self.bn(self.dense(x)) * self.scale.w + self.own

        model = WithModule()
        model(np.zeros((2, 3), np.float32))
        return model
    if kind == "subclassed_with_containers":  # a list or dict attribute lists all its trainable weights first,
        # a dict's layers in the order of its keys
        class WithContainers(keras.Model):
            def __init__(self):
                super().__init__(name="with_containers")
                self.first = layers.BatchNormalization(name="c_bn0")
                self.by_key = {"z": layers.Dense(3, name="c_dz"), "a": layers.BatchNormalization(name="c_bna")}
                self.blocks = [layers.BatchNormalization(name="c_bn1"),
                               {"y": layers.Dense(3, name="c_d2"), "b": layers.BatchNormalization(name="c_bn2")},
                               (layers.Dense(2, name="c_dt"),)]

            def call(self, x):
                x = self.by_key["a"](self.by_key["z"](self.first(x)))
                x = self.blocks[1]["b"](self.blocks[1]["y"](self.blocks[0](x)))
                return self.blocks[2][0](x)

        model = WithContainers()
        model(np.zeros((2, 3), np.float32))
        return model
    if kind == "layer_with_sublayers":  # a plain Layer inside lists its trainable weights first
        class Block(keras.layers.Layer):
            def __init__(self):
                super().__init__(name="block")
                self.bn = layers.BatchNormalization(name="lbn")
                self.dense = layers.Dense(2, name="ld")

            def call(self, x):
                return self.dense(self.bn(x))

        return keras.Sequential([layers.Dense(3, input_shape=(4,), name="x1"), Block()])
    raise ValueError(kind)


KINDS = ["sequential", "functional", "frozen_nested", "frozen_model", "subclassed", "subclassed_with_module",
         "subclassed_with_containers", "layer_with_sublayers"]


def _names(weights):
    return [w.name for w in weights]


@pytest.mark.parametrize("kind", KINDS)
def test_weight_order_matches_tf_keras(kind):
    theirs, ours = _build(tf_keras, kind), _build(tf.keras, kind)
    for attribute in ("weights", "trainable_weights", "non_trainable_weights", "variables",
                      "trainable_variables", "non_trainable_variables"):
        assert _names(getattr(ours, attribute)) == _names(getattr(theirs, attribute)), attribute
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]


def _randomised(model, seed):
    rng = np.random.default_rng(seed)
    values = [rng.uniform(0.5, 1.5, w.shape).astype(np.float32) for w in model.get_weights()]
    model.set_weights(values)
    return values


@pytest.mark.parametrize("kind", KINDS)
def test_set_weights_of_tf_keras_values_predicts_the_same(kind):
    theirs, ours = _build(tf_keras, kind), _build(tf.keras, kind)
    _randomised(theirs, 3)
    ours.set_weights(theirs.get_weights())
    width = 3 if kind.startswith("subclassed") else 4
    x = np.random.default_rng(4).normal(size=(5, width)).astype(np.float32)
    np.testing.assert_allclose(ours(x, training=False).numpy(), theirs(x, training=False).numpy(), rtol=1e-5,
                               atol=1e-5)


def _assert_weights(model, values):
    for got, want in zip(model.get_weights(), values, strict=True):
        np.testing.assert_array_equal(got, want)


# HDF5 weight files need a config-less layer list (no subclassed models, as in tf_keras); checkpoints take all.
@pytest.mark.parametrize("kind, suffix", [(kind, ".h5") for kind in ("sequential", "functional")] +
                         [(kind, "") for kind in KINDS])
def test_weight_files_cross_both_ways(kind, suffix, tmp_path):
    theirs, ours = _build(tf_keras, kind), _build(tf.keras, kind)
    _randomised(theirs, 5)
    theirs.save_weights(str(tmp_path / f"theirs{suffix}"))
    ours.load_weights(str(tmp_path / f"theirs{suffix}"))
    _assert_weights(ours, theirs.get_weights())
    values = _randomised(ours, 6)
    ours.save_weights(str(tmp_path / f"ours{suffix}"))
    theirs.load_weights(str(tmp_path / f"ours{suffix}"))
    _assert_weights(theirs, values)
    again = _build(tf.keras, kind)
    again.load_weights(str(tmp_path / f"ours{suffix}"))
    _assert_weights(again, values)


def test_hdf5_model_file_round_trips(tmp_path):
    model = _build(tf.keras, "functional")
    values = _randomised(model, 8)
    model.save(str(tmp_path / "m.h5"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.h5"))
    assert _names(loaded.weights) == _names(model.weights)
    _assert_weights(loaded, values)

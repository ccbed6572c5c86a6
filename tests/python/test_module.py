"""ember.Module, ember.method and the seeds' classes examples."""
import gc
import weakref

import numpy as np
import pytest

import ember as tf


def test_seed_scalar_model_with_defun():
    class ScalarModel(object):
        def __init__(self):
            self.v = tf.Variable(0)

        @tf.defun
        def increment(self, amount):
            self.v.assign_add(amount)

    model1 = ScalarModel()
    model1.increment(tf.constant(3))
    assert int(model1.v) == 3
    model1.increment(tf.constant(4))
    assert int(model1.v) == 7
    model2 = ScalarModel()
    model2.increment(tf.constant(5))
    assert int(model2.v) == 5


class AnyShapeModel(object):
    def __init__(self):
        self.v = None

    @tf.method
    def increment(self, amount):
        if self.v is None:
            self.v = tf.Variable(tf.zeros_like(amount))
        self.v.assign_add(amount)


def test_seed_any_shape_model_with_method():
    model1 = AnyShapeModel()
    model1.increment(tf.constant(3))
    assert int(model1.v) == 3
    model1.increment(tf.constant(4))
    assert int(model1.v) == 7
    model2 = AnyShapeModel()
    model2.increment(tf.constant([4, 5]))
    assert model2.v.numpy().tolist() == [4, 5]


def test_seed_any_shape_model_with_defun_rejects_a_second_instance():
    class DefunModel(object):
        def __init__(self):
            self.v = None

        @tf.defun
        def increment(self, amount):
            if self.v is None:
                self.v = tf.Variable(tf.zeros_like(amount))
            self.v.assign_add(amount)

    model1 = DefunModel()
    model1.increment(tf.constant(3))
    assert int(model1.v) == 3
    model2 = DefunModel()
    with pytest.raises(ValueError, match="'increment' tried to create a variable"):
        model2.increment(tf.constant([4, 5]))


def test_function_on_a_method_lets_each_instance_create_its_variables_and_frees_them():
    # TF 2 (seed 001): each instance may create variables in each tf.function once; an instance and the
    # variables its methods made are freed with it (no cycle through the per-instance function cache).
    class FunctionModel(object):
        def __init__(self):
            self.v = None

        @tf.function
        def increment(self, amount):
            if self.v is None:
                self.v = tf.Variable(tf.zeros_like(amount))
            self.v.assign_add(amount)
            return self.v.read_value()

    model1, model2 = FunctionModel(), FunctionModel()
    assert model1.increment(tf.constant(3)).numpy() == 3
    assert model2.increment(tf.constant([4, 5])).numpy().tolist() == [4, 5]
    assert model1.increment(tf.constant(1)).numpy() == 4
    model1.v = None  # a creation on a later trace of the same instance's function is still refused
    with pytest.raises(ValueError, match="tried to create a variable"):
        model1.increment(tf.constant(1.0))
    instance, variable = weakref.ref(model2), weakref.ref(model2.v)
    del model2
    gc.collect()
    assert instance() is None and variable() is None


def test_module_tracks_variables_and_submodules():
    class Dense(tf.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(tf.random.normal([n_in, n_out]), name="w")
            self.b = tf.Variable(tf.zeros([n_out]), name="b", trainable=False)

        def __call__(self, x):
            return tf.matmul(x, self.w) + self.b

    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(3, 4, name="first"), Dense(4, 2, name="second")]
            self.extra = {"scale": tf.Variable(1.0, name="scale")}

        @tf.function
        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x * self.extra["scale"]

    model = MLP()
    assert model.name == "mlp"
    assert len(model.variables) == 5
    assert len(model.trainable_variables) == 3
    assert [m.name for m in model.submodules] == ["first", "second"]
    out = model(tf.ones([1, 3]))
    assert out.shape == (1, 2)
    with pytest.raises(ValueError):
        tf.Module(name="bad name!")


def test_name_scopes_prefix_variable_names():
    class Block(tf.Module):
        def __init__(self):
            super().__init__(name="block")
            with self.name_scope:
                self.w = tf.Variable(1.0, name="w")

    assert Block().w.name == "block/w:0"
    with tf.name_scope("outer"):
        with tf.name_scope("inner"):
            assert tf.Variable(1.0, name="v").name == "outer/inner/v:0"
    assert tf.Variable(1.0, name="v").name == "v:0"

"""TensorFlow ops called on Keras symbolic tensors (the functional API) become TFOpLambda layers, as in
tf_keras: ember/util/dispatch.py wraps the public op functions, keras/engine/keras_tensor.py dispatches."""
import inspect

import numpy as np
import pytest

import ember as tf
from ember import _C, errors
from ember.util import dispatch


@pytest.fixture(scope="module")
def tf_keras():
    import tf_keras

    return tf_keras


def _build(tf_module, k):
    inp = k.Input(shape=(4,), name="input_1")
    x = k.layers.Dense(3, name="dense")(inp)
    y = tf_module.nn.relu(x) + 1.0
    z = tf_module.reduce_sum(y, axis=-1, keepdims=True)
    w = tf_module.concat([x, y], axis=-1)
    v = tf_module.concat(values=[w, 2.0 * w], axis=1)  # keyword-only call
    s = v[:, 1:4] - tf_module.math.square(x) / 2.0
    c = tf_module.cast(s > 0.0, "float32") * tf_module.matmul(inp, tf_module.ones((4, 3)))
    return k.Model(inp, [z, c, tf_module.reshape(-c, (-1, 3, 1))], name="model")


def _summary(model):
    lines = []
    model.summary(print_fn=lines.append)
    return lines


def test_summary_matches_tf_keras(tf_keras):
    import tensorflow

    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = _build(tf, tf.keras), _build(tensorflow, tf_keras)
    assert _summary(ours) == _summary(theirs)
    assert [type(layer).__name__ for layer in ours.layers] == [type(layer).__name__ for layer in theirs.layers]


def test_values_and_training_through_op_layers(tf_keras):
    import tensorflow

    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = _build(tf, tf.keras), _build(tensorflow, tf_keras)
    theirs.set_weights(ours.get_weights())
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    for a, b in zip(ours(x), theirs(x)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # gradients reach the Dense kernel and bias through relu and reduce_sum
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(ours(x)[0])
    grads = tape.gradient(loss, ours.trainable_variables)
    with tensorflow.GradientTape() as tape:
        their_loss = tensorflow.reduce_sum(theirs(x)[0])
    their_grads = tape.gradient(their_loss, theirs.trainable_variables)
    for g, h in zip(grads, their_grads):
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-5, atol=1e-5)
    # and fit trains a model that uses them
    inp = tf.keras.Input(shape=(4,))
    out = tf.keras.layers.Dense(1)(tf.nn.tanh(inp) * 2.0)
    model = tf.keras.Model(inp, out)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, np.ones((5, 1), np.float32), epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_operator_layer_names_match_tf_keras(tf_keras):
    import tensorflow

    def ops(t, k):
        inp = k.Input(shape=(4,), name="input_1")
        b = inp > 0.0
        # (not b ^ b: tf_keras records TF's xor as the three logical layers it is made of; ember makes one
        # tf.math.logical_xor layer)
        outs = [1.0 - inp, 2.0 * inp, 2.0 / (inp + 3.0), inp // 2.0, inp % 2.0, inp ** 2.0, abs(-inp),
                inp >= 1.0, inp < 1.0, inp <= 1.0, ~b, b & b, b | b, inp @ t.ones((4, 2)), inp[:, 0],
                t.constant([1.0, 2.0, 3.0, 4.0]) + inp, t.ones((2, 4)) @ t.transpose(inp)]  # tensor on the left
        return [(o._keras_history[0].name, type(o._keras_history[0]).__name__) for o in outs]

    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    assert ops(tf, tf.keras) == ops(tensorflow, tf_keras)


def test_api_names_are_tensorflows():
    """Each wrapped function carries TensorFlow's canonical API name (tf_export's), except where tf_keras
    shows the tf.compat.v1 name because the TF 2 function calls its v1 version."""
    import tensorflow
    from tensorflow.python.util import tf_export

    compat_v1 = {"tf.transpose", "tf.gather", "tf.shape"}
    checked = 0
    for namespace in ["", "math", "linalg", "nn", "image"]:
        theirs, ours = (tensorflow, tf) if not namespace else (getattr(tensorflow, namespace),
                                                               getattr(tf, namespace))
        for name in dir(theirs):
            fn = getattr(ours, name, None)
            if name.startswith("_") or not isinstance(fn, _C.ApiFunction):
                continue
            want = "tf." + tf_export.get_canonical_name_for_symbol(getattr(theirs, name),
                                                                    add_prefix_to_v1_names=True)
            if want in compat_v1:
                want = want.replace("tf.", "tf.compat.v1.")
            assert fn._ember_api_name == want, (namespace, name)
            checked += 1
    assert checked > 250


def test_wrappers_are_transparent():
    assert tf.add is tf.math.add and tf.matmul is tf.linalg.matmul
    assert isinstance(tf.concat, _C.ApiFunction)
    original = dispatch.unwrap(tf.concat)
    assert tf.concat.__name__ == original.__name__ and tf.concat.__doc__ == original.__doc__
    assert tf.concat.__module__ == original.__module__
    assert inspect.signature(tf.concat) == inspect.signature(original)
    assert repr(tf.concat) == repr(original)
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_array_equal(tf.concat([x, x], axis=0).numpy(), [[1, 2], [1, 2]])
    np.testing.assert_array_equal(tf.concat(values=[x, x], axis=1).numpy(), [[1, 2, 1, 2]])
    # inside ember.function too
    np.testing.assert_array_equal(tf.function(lambda a: tf.nn.relu(a - 1.5))(x).numpy(), [[0, 0.5]])
    dispatch.install()  # idempotent: a second install wraps nothing twice
    assert dispatch.unwrap(tf.concat) is original


def test_errors_without_keras_tensors_are_unchanged():
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.concat([tf.zeros([2, 3]), tf.zeros([3, 2])], axis=0)
    assert "ConcatV2" in str(info.value)
    with pytest.raises(TypeError):
        tf.nn.relu(object())
    with pytest.raises(TypeError):
        _C.ApiFunction(5, "tf.five")
    with pytest.raises(TypeError):
        _C.set_api_fallback_dispatch(5)


def test_fallback_errors_propagate_and_can_be_removed():
    calls = []

    def failing(fn, args, kwargs, error):
        calls.append((fn._ember_api_name, type(error).__name__))
        raise RuntimeError("fallback failed")

    from ember.keras.engine import keras_tensor

    try:
        dispatch.set_fallback(failing)
        with pytest.raises(RuntimeError, match="fallback failed"):
            tf.nn.relu(object())
        assert calls == [("tf.nn.relu", "TypeError")]
        dispatch.set_fallback(None)
        with pytest.raises(TypeError):
            tf.nn.relu(object())
        assert len(calls) == 1
    finally:
        dispatch.set_fallback(keras_tensor.dispatch_keras_tensors)


def test_tf_op_lambda_config_round_trip():
    tf.keras.backend.clear_session()
    inp = tf.keras.Input(shape=(3,))
    out = tf.math.reduce_max(inp, axis=1)
    layer = out._keras_history[0]
    config = layer.get_config()
    assert config["function"] == "math.reduce_max" and config["name"] == "tf.math.reduce_max"  # as tf_keras
    clone = type(layer).from_config(config)
    assert dispatch.unwrap(clone.function) is dispatch.unwrap(tf.math.reduce_max)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(clone(x, axis=1).numpy(), [2, 5])


def test_complex_is_named_dtypes_complex_and_restores():
    # TensorFlow exports tf.complex as dtypes.complex (there is no tf.math.complex); ember.dtypes is the dtype
    # module, so the name is looked up where the function is.
    tf.keras.backend.clear_session()
    inp = tf.keras.Input(shape=(3,))
    out = tf.complex(inp, inp)
    layer = out._keras_history[0]
    config = layer.get_config()
    assert config["function"] == "dtypes.complex" and config["name"] == "tf.dtypes.complex"
    clone = type(layer).from_config(config)
    assert dispatch.unwrap(clone.function) is dispatch.unwrap(tf.complex)


def test_pre_dispatch_sees_registered_types_before_the_op():
    """Composite tensors (ember.ragged) are dispatched before the op runs, by exact type, also inside a
    list argument; other calls run the op untouched."""

    class Composite:
        pass

    seen = []

    def handler(fn, args, kwargs, _):
        seen.append(fn._ember_api_name)
        if kwargs.get("axis") == 99:
            return NotImplemented  # let the op run (and fail on the unknown argument)
        return "handled"

    try:
        dispatch.set_pre_dispatch((Composite,), handler)
        c = Composite()
        assert tf.nn.relu(c) == "handled"
        assert tf.concat([tf.zeros([1]), c], axis=0) == "handled"
        assert tf.math.add(1.0, y=c) == "handled"
        assert seen == ["tf.nn.relu", "tf.concat", "tf.math.add"]
        with pytest.raises(TypeError):
            tf.concat([c], axis=99)
        np.testing.assert_array_equal(tf.concat([tf.ones([1]), tf.zeros([1])], 0).numpy(), [1, 0])
        assert len(seen) == 4
        with pytest.raises(TypeError):
            dispatch.set_pre_dispatch((5,), handler)
        with pytest.raises(ValueError):
            dispatch.set_pre_dispatch((Composite,) * 9, handler)
    finally:
        dispatch.set_pre_dispatch((), None)
        # The pre-dispatch is one global hook: give it back to ember.ragged, which registered it at import.
        from ember.ragged import ragged_dispatch

        ragged_dispatch.install()
    assert isinstance(tf.nn.relu(tf.constant(-1.0)), tf.Tensor)


def test_reflected_operators_with_python_and_numpy_numbers_on_the_left(tf_keras):
    tf.keras.backend.clear_session()
    inp = tf.keras.Input(shape=(3,))
    outs = [1 - inp, 2 * inp, 1 + inp, 1 / (inp + 3), 2 ** inp, 10 // (inp + 3), 5 % (inp + 3),
            np.float32(1) - inp, np.ones(3, np.float32) * inp]
    model = tf.keras.Model(inp, outs)
    x = np.array([[0.5, 1.0, 2.0]], np.float32)
    want = [1 - x, 2 * x, 1 + x, 1 / (x + 3), 2 ** x, 10 // (x + 3), 5 % (x + 3), 1 - x, x]
    for got, expected in zip(model(x), want):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    with pytest.raises(TypeError):
        list(inp)


def test_op_functions_pickle_copy_weakref_and_help():
    import copy
    import io
    import pickle
    import pydoc
    import weakref

    relu = tf.nn.relu
    assert copy.copy(relu) is relu and copy.deepcopy(relu) is relu
    again = pickle.loads(pickle.dumps(relu))
    assert dispatch.unwrap(again) is dispatch.unwrap(relu) and again._ember_api_name == "tf.nn.relu"
    layer = tf.keras.layers.Dense(3, activation=tf.nn.relu)
    assert copy.deepcopy(layer).activation is relu
    assert weakref.ref(relu)() is relu
    assert inspect.isroutine(relu)
    text = io.StringIO()
    pydoc.Helper(output=text).help(tf.concat)
    assert dispatch.unwrap(tf.concat).__doc__.strip().splitlines()[0] in text.getvalue()

    class Holder:
        act = tf.nn.relu  # no `self` bound: the op itself

    np.testing.assert_array_equal(Holder().act(tf.constant([-1.0, 2.0])).numpy(), [0, 2])


def test_stop_gradient_on_keras_tensors():
    inp = tf.keras.Input(shape=(2,))
    stopped = tf.stop_gradient(inp)
    assert stopped._keras_history[0].name.startswith("tf.stop_gradient")
    out = stopped * 2.0
    np.testing.assert_array_equal(tf.keras.Model(inp, out)(np.ones((1, 2), np.float32)).numpy(), [[2, 2]])


def test_tf_op_lambda_reads_tf_keras_configs(tf_keras):
    from ember.keras.layers import core

    for function, symbol in [("nn.relu", "tf.nn.relu"), ("math.reduce_sum", "tf.math.reduce_sum"),
                             ("__operators__.add", "tf.__operators__.add")]:
        layer = tf.keras.layers.deserialize({"class_name": "TFOpLambda", "config": {
            "name": symbol, "trainable": True, "dtype": "float32", "function": function}})
        assert isinstance(layer, core.TFOpLambda) and layer.symbol == symbol
    for bad in ["concat.nothing", "nn", "keras"]:
        with pytest.raises(ValueError, match="no function"):
            core.TFOpLambda.from_config({"name": "x", "function": bad})

"""A functional model's config keeps the constant arguments of its op layers (TFOpLambda) in tf_keras' node
form (models.py, Note [Node data in a functional config]), so from_config, clone_model and save/load_model
rebuild the same computation; and op layers on shape tensors keep what is known of the shape
(node.py, Note [Inferred values of KerasTensors]). Each is checked against tf_keras."""

import json

import numpy as np
import pytest

import ember as tf


@pytest.fixture(scope="module")
def keras():
    import tensorflow
    import tf_keras

    return tensorflow, tf_keras


def _constants_model(t, k):
    """Op layers whose results depend on constant arguments: positional, keyword, reflected, in a list."""
    inp = k.Input((4,), name="x")
    h = k.layers.Dense(4, name="h")(inp)
    a = h + 1.5
    b = 2.0 - h
    c = t.concat([a, b], axis=1)
    d = t.reduce_sum(c, axis=1, keepdims=True)
    e = c[:, 1:6:2] * 3.0
    f = t.clip_by_value(e, -0.5, 4.0)
    g = t.math.maximum(d, 0.25)
    m = 1 - h @ t.ones((4, 2)) // 2.0
    return k.Model(inp, [d, f, g, m], name="consts")


X = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)


def _assert_outputs_equal(ours, want):
    for a, b in zip(ours(X), want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _without_default_names(value):
    """TensorFlow's generated op wrappers (tf.math.maximum) pass name=None to the dispatch, where ember
    records only the arguments given: drop name=None from kwargs."""
    if isinstance(value, dict):
        return {k: _without_default_names(v) for k, v in value.items() if not (k == "name" and v is None)}
    if isinstance(value, list):
        return [_without_default_names(v) for v in value]
    return value


def _nodes(config, drop_default_names=False):
    """layer name -> its inbound_nodes, as JSON reads them back (tuples as lists)."""
    nodes = {layer["name"]: json.loads(json.dumps(layer["inbound_nodes"])) for layer in config["layers"]}
    return _without_default_names(nodes) if drop_default_names else nodes


def test_op_layer_nodes_match_tf_keras(keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours = _constants_model(tf, tf.keras)
    theirs = _constants_model(real_tf, tf_keras)
    assert _nodes(ours.get_config(), True) == _nodes(theirs.get_config(), True)
    # the operators' own records are equal as they are: name=None, the reflected constant as a float
    ours_nodes, their_nodes = _nodes(ours.get_config()), _nodes(theirs.get_config())
    for name in ["tf.__operators__.add", "tf.math.subtract", "tf.math.multiply", "tf.linalg.matmul",
                 "tf.compat.v1.floor_div", "tf.math.subtract_1", "tf.__operators__.getitem"]:
        assert ours_nodes[name] == their_nodes[name], name


def test_from_config_clone_and_json_keep_constants(keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    model = _constants_model(tf, tf.keras)
    want = [o.numpy() for o in model(X)]
    rebuilt = [tf.keras.Model.from_config(model.get_config()), tf.keras.models.clone_model(model),
               tf.keras.models.model_from_json(model.to_json())]
    for copy in rebuilt:
        copy.set_weights(model.get_weights())
        _assert_outputs_equal(copy, want)
    # a config tf_keras wrote (JSON, so tuples became lists) rebuilds the same model in ember
    tf_keras.backend.clear_session()
    theirs = _constants_model(real_tf, tf_keras)
    theirs.set_weights(model.get_weights())
    from_theirs = tf.keras.models.model_from_json(theirs.to_json())
    from_theirs.set_weights(model.get_weights())
    _assert_outputs_equal(from_theirs, [o.numpy() for o in theirs(X)])
    # and tf_keras rebuilds ember's config
    ours_in_tf_keras = tf_keras.models.model_from_json(model.to_json())
    ours_in_tf_keras.set_weights(model.get_weights())
    for a, b in zip(ours_in_tf_keras(X), want):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-5, atol=1e-6)


def test_save_and_load_model_keep_constants(tmp_path):
    tf.keras.backend.clear_session()
    model = _constants_model(tf, tf.keras)
    want = [o.numpy() for o in model(X)]
    model.save(str(tmp_path / "m"))
    restored = tf.keras.models.load_model(str(tmp_path / "m"))
    assert isinstance(restored, tf.keras.Model)
    _assert_outputs_equal(restored, want)


def test_tensor_and_array_constants_are_written_as_lists():
    tf.keras.backend.clear_session()
    inp = tf.keras.Input((3,), name="x")
    out = inp * tf.constant([1.0, 2.0, 3.0]) + np.array([0.5, 0.5, 0.5], np.float32)
    model = tf.keras.Model(inp, out)
    nodes = _nodes(model.get_config())
    assert nodes["tf.math.multiply"] == [["x", 0, 0, {"y": [1.0, 2.0, 3.0], "name": None}]]
    copy = tf.keras.Model.from_config(json.loads(json.dumps(model.get_config())))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(copy(x).numpy(), model(x).numpy())


def test_unserializable_argument_raises_naming_the_layer():
    tf.keras.backend.clear_session()
    inp = tf.keras.Input((3,))
    out = tf.math.multiply(inp, 2.0, name=object())
    model = tf.keras.Model(inp, out)
    with pytest.raises(TypeError, match="tf.math.multiply was passed non-JSON-serializable arguments"):
        model.get_config()


def test_bad_node_data_raises():
    tf.keras.backend.clear_session()
    inp = tf.keras.Input((3,), name="x")
    config = tf.keras.Model(inp, inp + 1.0).get_config()
    config["layers"][1]["inbound_nodes"] = [[5]]
    with pytest.raises(ValueError, match="Improperly formatted model config"):
        tf.keras.Model.from_config(config)
    config["layers"][1]["inbound_nodes"] = [["nowhere", 0, 0, {}]]
    with pytest.raises(ValueError, match="wait for inputs no layer produces"):
        tf.keras.Model.from_config(config)


def _shape_ops(t, k):
    inp = k.Input((3,), name="x")
    seq = k.Input((None, 5), name="s")
    shape = t.shape(inp)
    outs = [t.fill(shape, 1.0), t.zeros(t.shape(seq)), t.ones([t.shape(inp)[0], 2]),
            t.reshape(seq, [t.shape(seq)[0], -1, 5]), t.fill(t.shape(seq)[1:], 0.0),
            t.ones(t.shape(inp)[1:] * 2)]
    return [tuple(o.shape.as_list()) for o in outs], [o._inferred_value for o in (shape, t.shape(seq)[1:])]


def test_shape_tensors_keep_their_inferred_values(keras):
    real_tf, tf_keras = keras
    ours = _shape_ops(tf, tf.keras)
    theirs = _shape_ops(real_tf, tf_keras)
    assert ours == theirs
    assert ours[0][0] == (None, 3)
    inp = tf.keras.Input((3,))
    model = tf.keras.Model(inp, tf.fill(tf.shape(inp), 2.0) * inp)
    assert model.output_shape == (None, 3)
    np.testing.assert_array_equal(model(np.ones((2, 3), np.float32)).numpy(), np.full((2, 3), 2.0))


def _nested_shared(t, k):
    a = k.Input((3,), name="a")
    shared = k.layers.Dense(3, name="shared")
    inner_in = k.Input((3,), name="ii")
    inner = k.Model(inner_in, k.layers.Dense(2, name="id")(inner_in) * 2.0, name="inner")
    return k.Model(a, inner(shared(shared(a)) + 1.0), name="outer")


def test_nested_model_and_shared_layer_nodes_match_tf_keras(keras):
    """A nested model's first call is its node 1 in a config (tf_keras' node 0 built its graph); a shared
    layer's second call uses its first's output."""
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = _nested_shared(tf, tf.keras), _nested_shared(real_tf, tf_keras)
    assert _nodes(ours.get_config()) == _nodes(theirs.get_config())
    assert ours.get_config()["output_layers"] == theirs.get_config()["output_layers"] == [["inner", 1, 0]]
    theirs.set_weights(ours.get_weights())
    for config in (ours.to_json(), theirs.to_json()):
        copy = tf.keras.models.model_from_json(config)
        copy.set_weights(ours.get_weights())
        np.testing.assert_allclose(copy(X[:, :3]).numpy(), ours(X[:, :3]).numpy(), rtol=1e-6)
    mirrored = tf_keras.models.model_from_json(ours.to_json())
    mirrored.set_weights(ours.get_weights())
    np.testing.assert_allclose(mirrored(X[:, :3]).numpy(), ours(X[:, :3]).numpy(), rtol=1e-5, atol=1e-6)


def test_ellipsis_and_newaxis_slices_round_trip_through_json(keras):
    real_tf, tf_keras = keras

    def make(k):
        inp = k.Input((2, 3), name="x")
        return k.Model(inp, inp[..., 1:][:, None, 0])

    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = make(tf.keras), make(tf_keras)
    assert json.loads(ours.to_json())["config"]["layers"][1]["inbound_nodes"] == \
        json.loads(theirs.to_json())["config"]["layers"][1]["inbound_nodes"]
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    for config in (ours.to_json(), theirs.to_json()):
        np.testing.assert_array_equal(tf.keras.models.model_from_json(config)(x).numpy(), theirs(x).numpy())
    assert ours.output_shape == theirs.output_shape == (None, 1, 2)


def test_dict_inputs_and_outputs_survive_the_config_as_tf_keras(keras):
    tensorflow, tf_keras = keras
    x = {"a": np.ones((2, 4), np.float32), "b": np.full((2, 2), 0.5, np.float32)}
    results = []
    for k in (tf.keras, tf_keras):
        ia, ib = k.Input((4,), name="a"), k.Input((2,), name="b")
        merged = k.layers.concatenate([ia, ib])
        outputs = {"cls": k.layers.Dense(3, name="cls", kernel_initializer="ones")(merged),
                   "reg": k.layers.Dense(1, name="reg", kernel_initializer="ones")(merged)}
        model = k.Model({"a": ia, "b": ib}, outputs)
        config = model.get_config()
        rebuilt = k.Model.from_config(config)
        predicted = rebuilt.predict(x, verbose=0)
        assert isinstance(predicted, dict) and sorted(predicted) == ["cls", "reg"]
        results.append((config["input_layers"], config["output_layers"], predicted))
    assert results[0][0] == results[1][0] and results[0][1] == results[1][1]
    for name in ("cls", "reg"):
        np.testing.assert_allclose(results[0][2][name], results[1][2][name], rtol=1e-6)

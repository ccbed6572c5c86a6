"""``keras_metadata.pb``: tf_keras' record of the Keras objects in a SavedModel, read and written.

tf_keras' ``load_model`` rebuilds a Keras model from a SavedModel only through this file: a SavedMetadata
protobuf (``nodes = 1``) of SavedObject messages (``node_id = 2``: the object's id in the SavedModel's
object graph; ``node_path = 3``: "root", "root.layer-0", ...; ``identifier = 4``: "_tf_keras_network",
"_tf_keras_sequential", "_tf_keras_layer", "_tf_keras_input_layer"; ``metadata = 5``: a JSON string with the
object's class name, config, name, dtype, trainable and build input shape; ``version = 6``: a VersionDef).
tf_keras creates each layer from its config, builds it with the build input shape, recreates the model's
graph from the model's config, and restores the variables through the object graph, whose ``layer-N``
children and the layers' weight names are tf_keras' (ember's checkpoint names). The JSON is tf_keras'
dialect: tuples as ``{"class_name": "__tuple__", "items": [...]}``, shapes as ``{"class_name":
"TensorShape", "items": [...]}``.

``write`` covers functional and Sequential models (nested ones too); a subclassed model gets no file, so
tf_keras falls back to ``tf.saved_model.load``, as for a SavedModel that ``tf.saved_model.save`` wrote.
``read`` takes the root model's class, config and compile arguments out of a file tf_keras wrote.
"""

import json

from ember.framework.tensor_shape import TensorShape

FILENAME = "keras_metadata.pb"
_IDENTIFIERS = {"network": "_tf_keras_network", "sequential": "_tf_keras_sequential", "model": "_tf_keras_model",
                "layer": "_tf_keras_layer", "input_layer": "_tf_keras_input_layer"}
_PRODUCER, _MIN_CONSUMER = 2, 1  # tf_keras' version of the metadata format


# ---- protobuf, the few wire types SavedMetadata uses
def _read_varint(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data):
    """(field number, value) of a protobuf message's varint and length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"keras_metadata.pb: unsupported wire type {wire}")
        yield number, value


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint_field(number, value):
    return _varint(number << 3) + _varint(value)


def _bytes_field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _saved_object(node_id, path, identifier, metadata):
    version = _varint_field(1, _PRODUCER) + _varint_field(2, _MIN_CONSUMER)
    return (_varint_field(2, node_id) + _bytes_field(3, path.encode()) + _bytes_field(4, identifier.encode())
            + _bytes_field(5, metadata.encode()) + _bytes_field(6, version))


# ---- tf_keras' JSON dialect
def _untuple(value):
    """tf_keras' JSON writes tuples as {"class_name": "__tuple__", "items": [...]}."""
    if isinstance(value, dict):
        if value.get("class_name") in ("__tuple__", "TensorShape") and "items" in value:
            return [_untuple(v) for v in value["items"]] if value["items"] is not None else None
        return {k: _untuple(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untuple(v) for v in value]
    return value


def _encode(value):
    """A Python structure in tf_keras' JSON dialect (tuples and shapes tagged), ready for json.dumps."""
    import numpy as np

    from ember import dtypes

    if isinstance(value, TensorShape):
        return {"class_name": "TensorShape", "items": value.as_list() if value.rank is not None else None}
    if isinstance(value, tuple):
        return {"class_name": "__tuple__", "items": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


# ---- reading
def read(path):
    """The root model's class and config from tf_keras' keras_metadata.pb (ember's keras_metadata.json form:
    class_name, config, training_config); None when the root is not a model ember can rebuild."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        for number, node in _fields(data):
            if number != 1:
                continue
            fields = dict(_fields(node))
            if fields.get(3, b"").decode() != "root":
                continue
            root = _untuple(json.loads(fields.get(5, b"{}").decode()))
            config = root.get("config")
            if root.get("class_name") not in ("Functional", "Sequential", "Model") or "layers" not in (config or {}):
                return None
            training = root.get("training_config") or {}
            optimizer = training.get("optimizer_config")
            if optimizer is not None:
                optimizer = {"class_name": optimizer["class_name"].replace("Custom>", ""),
                             "config": {k: v for k, v in optimizer["config"].items()
                                        if k not in ("is_legacy_optimizer", "jit_compile")}}
            return {"class_name": root["class_name"], "config": config,
                    "training_config": dict(training, optimizer=optimizer) if training else None}
    except (ValueError, KeyError, UnicodeDecodeError, IndexError):
        return None
    return None


# ---- writing
def _identifier(obj):
    from ember.keras.engine.input_layer import InputLayer
    from ember.keras.engine.sequential import Sequential
    from ember.keras.engine.training import Model

    if isinstance(obj, Sequential):
        return _IDENTIFIERS["sequential"]
    if isinstance(obj, Model):
        return _IDENTIFIERS["network"] if obj._ember_graph is not None else _IDENTIFIERS["model"]
    if isinstance(obj, InputLayer):
        return _IDENTIFIERS["input_layer"]
    return _IDENTIFIERS["layer"]


def _layer_metadata(layer, training_config=None):
    from ember.keras.engine.input_layer import InputLayer
    from ember.keras.engine.training import Model

    class_name = "Functional" if isinstance(layer, Model) and type(layer).__name__ == "Model" else \
        type(layer).__name__
    config = layer.get_config()
    if isinstance(layer, InputLayer):
        return {"class_name": "InputLayer", "name": layer.name, "dtype": layer.dtype, "sparse": False,
                "ragged": False, "batch_input_shape": config.get("batch_input_shape"), "config": config}
    metadata = {"name": layer.name, "trainable": layer.trainable,
                "expects_training_arg": bool(layer._expects_training_arg), "dtype": layer.dtype,
                "batch_input_shape": layer._batch_input_shape, "stateful": bool(getattr(layer, "stateful", False)),
                "must_restore_from_config": class_name in ("TFOpLambda", "SlicingOpLambda"),
                "preserve_input_structure_in_config": layer._preserve_input_structure_in_config,
                "autocast": bool(layer._autocast), "class_name": class_name, "config": config}
    if isinstance(layer, Model):
        metadata["is_graph_network"] = layer._ember_graph is not None
        metadata["keras_version"] = "2.21.0"
        metadata["backend"] = "tensorflow"
        metadata["model_config"] = {"class_name": class_name, "config": config}
        if training_config is not None:
            metadata["training_config"] = training_config
    build_shape = getattr(layer, "_build_input_shape", None)
    if build_shape is not None:
        metadata["build_input_shape"] = build_shape
    return metadata


def _object_graph(export_dir):
    import os

    from ember.framework import protos

    saved = protos.message_class("SavedModel")()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return saved.meta_graphs[0].object_graph_def


def write(model, export_dir, training_config=None):
    """Writes ``export_dir/keras_metadata.pb`` for a functional or Sequential ``model`` just saved there by
    ember.saved_model (whose object graph gives the node ids); does nothing for a subclassed model."""
    import os

    from ember.keras.engine.base_layer import Layer
    from ember.keras.engine.training import Model

    if not isinstance(model, Model) or model._ember_graph is None:
        return
    graph = _object_graph(export_dir)
    nodes = []
    queue, seen = [(0, model, "root")], set()
    # The model, then every layer of every graph network below it, by their "layer-N" edges, and the layers
    # other layers hold (TextVectorization's `_lookup_layer`): tf_keras' loader rebuilds those from their
    # config too, and reads their metadata.
    while queue:
        node_id, obj, path = queue.pop(0)
        if node_id in seen:
            continue
        seen.add(node_id)
        metadata = _layer_metadata(obj, training_config if node_id == 0 else None)
        nodes.append(_saved_object(node_id, path, _identifier(obj), json.dumps(_encode(metadata),
                                                                              default=_json_default)))
        graph_network = isinstance(obj, Model) and obj._ember_graph is not None
        children = dict(obj._trackable_children())
        for reference in graph.nodes[node_id].children:
            name = reference.local_name
            child = children.get(name)
            if isinstance(child, Layer) and (name.startswith("layer-") or not graph_network):
                queue.append((reference.node_id, child, f"{path}.{name}"))
    payload = b"".join(_bytes_field(1, node) for node in nodes)
    with open(os.path.join(export_dir, FILENAME), "wb") as f:
        f.write(payload)


def _json_default(obj):
    if obj is Ellipsis:  # x[..., 0] in an op layer's arguments, written as tf_keras writes it
        return {"class_name": "__ellipsis__"}
    if callable(obj) and hasattr(obj, "__name__"):  # a metric's or activation's function: its name
        return obj.__name__
    if hasattr(obj, "as_list"):
        return obj.as_list()
    if hasattr(obj, "name") and hasattr(obj, "as_numpy_dtype"):
        return obj.name
    raise TypeError(f"keras_metadata.pb: cannot write {type(obj).__name__} {obj!r} as JSON")

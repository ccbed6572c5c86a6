"""``ember.keras.models``: Model, Sequential, ``save_model``/``load_model`` (SavedModel format),
``clone_model``, ``model_from_json``, and the functional model's config.

``model.save(path)`` writes a SavedModel with ember.saved_model: the model's variables (its checkpoint
object graph, so a functional model's keys are tf_keras' "layer_with_weights-N/..."), a ``serving_default``
signature and a ``__call__`` function traced at inference (``training=False``) with the batch dimension
left unknown, plus ``keras_metadata.json``: the model's class, its config (functional and Sequential
models) and the compile arguments when they are names. ``load_model(path)`` then rebuilds the Keras model
from the config, restores its variables from ``path/variables/variables`` and compiles it again. A
subclassed model has no config to rebuild from: ``load_model`` returns ember.saved_model's restored
object, callable (``loaded(x)``) with the saved weights, and ``loaded.signatures["serving_default"]``; so
does a model whose config cannot be rebuilt (a Lambda layer, a custom class missing from
``custom_objects``), with a warning.
"""

import json
import os
import shutil

from ember.keras import hdf5_format
from ember.util import nest
from ember.keras.engine.input_layer import Input, InputLayer  # noqa: F401
from ember.keras.engine.keras_tensor import KerasTensor
from ember.keras.engine.sequential import Sequential  # noqa: F401
from ember.keras.engine.training import Functional, Model  # noqa: F401

_METADATA = "keras_metadata.json"


# ---- functional config
def _serialize_layer(layer):
    from ember.keras import layers as layers_mod

    config = layers_mod.serialize(layer) if not isinstance(layer, Model) else {
        "module": "keras.engine.functional" if isinstance(layer, Functional) else "keras.models",
        "class_name": type(layer).__name__, "config": layer.get_config(), "registered_name": None}
    return config


def functional_config(model):
    graph = model._ember_graph
    node_index = {}  # id(node) -> its index among the layer's nodes that belong to this model
    for layer in graph.layers:
        kept = [n for n in layer._inbound_nodes if id(n) in graph.node_ids or n.is_input]
        for i, n in enumerate(kept):
            node_index[id(n)] = i
    layers = []
    for layer in graph.layers:
        entry = _serialize_layer(layer)
        entry["name"] = layer.name
        inbound = []
        for node in layer._inbound_nodes:
            if id(node) not in graph.node_ids or node.is_input:
                continue
            args = []
            for x in node.keras_inputs:
                source, idx, tensor_index = x._keras_history
                kwargs = {k: v for k, v in node.call_kwargs.items() if not isinstance(v, KerasTensor)}
                args.append([source.name, node_index.get(id(source._inbound_nodes[idx]), idx), tensor_index, kwargs])
            inbound.append(args)
        entry["inbound_nodes"] = inbound
        layers.append(entry)

    def ref(x):
        layer, idx, tensor_index = x._keras_history
        return [layer.name, node_index.get(id(layer._inbound_nodes[idx]), idx), tensor_index]

    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": [ref(x) for x in graph.inputs], "output_layers": [ref(x) for x in graph.outputs]}


def functional_from_config(cls, config, custom_objects=None):
    from ember.keras import layers as layers_mod

    created, produced = {}, {}  # name -> layer; (name, node index) -> flat outputs
    pending = []
    for entry in config["layers"]:
        class_name = entry["class_name"]
        if class_name in ("Functional", "Model") and "layers" in entry["config"]:
            layer = functional_from_config(Functional, entry["config"], custom_objects)
        elif class_name == "Sequential":
            layer = Sequential.from_config(entry["config"], custom_objects)
        else:
            layer = layers_mod.deserialize(entry, custom_objects)
        created[entry["name"]] = layer
        if isinstance(layer, InputLayer):
            produced[(entry["name"], 0)] = [layer._inbound_nodes[0].outputs]
        for node_data in entry.get("inbound_nodes", []):
            pending.append((entry["name"], node_data))
    counts = {}
    while pending:
        progress = False
        for item in list(pending):
            name, node_data = item
            if not all((src, idx) in produced for src, idx, _, _ in node_data):
                continue
            inputs = [produced[(src, idx)][t] for src, idx, t, _ in node_data]
            kwargs = node_data[0][3] if node_data else {}
            outputs = created[name](inputs[0] if len(inputs) == 1 else inputs, **kwargs)
            index = counts.get(name, 0)
            counts[name] = index + 1
            produced[(name, index)] = nest.flatten(outputs)
            pending.remove(item)
            progress = True
        if not progress:
            raise ValueError(f"Cannot rebuild the functional model '{config.get('name')}' from its config: the nodes "
                             f"of {sorted({n for n, _ in pending})} wait for inputs no layer produces")
    inputs = [produced[(n, i)][t] for n, i, t in config["input_layers"]]
    outputs = [produced[(n, i)][t] for n, i, t in config["output_layers"]]
    return cls(inputs=inputs[0] if len(inputs) == 1 else inputs, outputs=outputs[0] if len(outputs) == 1 else outputs,
               name=config.get("name"))


def model_from_config(config, custom_objects=None):
    from ember.keras import layers as layers_mod

    class_name = config["class_name"]
    if class_name == "Sequential":
        return Sequential.from_config(config["config"], custom_objects)
    if class_name in ("Functional", "Model"):
        return functional_from_config(Functional, config["config"], custom_objects)
    return layers_mod.deserialize(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    return model_from_config(json.loads(json_string), custom_objects)


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model of the same architecture with new weights (functional and Sequential models)."""
    if input_tensors is not None or clone_function is not None:
        raise NotImplementedError("ember.keras: clone_model(input_tensors=..., clone_function=...) is not implemented")
    if isinstance(model, Sequential):
        return Sequential.from_config(model.get_config())
    if isinstance(model, Model) and model._ember_graph is not None:
        return functional_from_config(Functional, model.get_config())
    raise ValueError(f"Expected `model` argument to be a functional `Model` instance, but got a subclassed model "
                     f"instead: {model}")


# ---- SavedModel
def _compile_config(model):
    from ember.keras import optimizers

    if model._ember_compiled is None:
        return None
    losses, metrics = model._ember_compiled
    names_only = all(isinstance(v, str) or v is None for v in nest.flatten(
        (losses._user_loss, metrics._user_metrics, metrics._user_weighted)))
    if not names_only:
        return None
    try:
        optimizer = optimizers.serialize(model.optimizer)
    except (ValueError, AttributeError, TypeError):
        return None
    return {"optimizer": optimizer, "loss": losses._user_loss, "metrics": metrics._user_metrics,
            "weighted_metrics": metrics._user_weighted, "loss_weights": losses._user_weights}


def save_model(model, filepath, overwrite=True, save_format=None, include_optimizer=True, signatures=None,
               options=None, save_traces=True):
    from ember import saved_model
    from ember.polymorphic_function import function

    filepath = os.fspath(filepath)
    if hdf5_format.is_hdf5_path(filepath, save_format):
        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"{filepath} exists and overwrite=False")
        return hdf5_format.save_model(model, filepath, include_optimizer)
    if save_format == "keras" or filepath.endswith(".keras"):
        raise NotImplementedError(f"ember.keras: saving {filepath!r} in the Keras-v3 (.keras) format is not "
                                  "implemented; give a directory path to write a SavedModel, or a .h5 path")
    if os.path.exists(filepath):
        if not overwrite:
            raise FileExistsError(f"{filepath} exists and overwrite=False")
    specs = model._ember_input_specs
    if specs is None:
        raise ValueError(f"Model {model.name} cannot be saved because the input shape is not available. Please specify "
                         "an input shape either by calling `build(input_shape)` directly, or by calling the model on "
                         "actual data using `Model()`, `Model.fit()`, or `Model.predict()`.")

    def serve(inputs):
        return model(inputs, training=False)

    serving = function(serve, input_signature=[specs], autograph=False)
    optimizer = model.__dict__.get("optimizer")
    model.__dict__["__call__"] = serving
    if not include_optimizer:
        model.__dict__["optimizer"] = None
    tmp = filepath + ".ember-tmp"
    try:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        saved_model.save(model, tmp, signatures=signatures if signatures is not None else serving)
    finally:
        del model.__dict__["__call__"]
        model.__dict__["optimizer"] = optimizer
    metadata = {"class_name": type(model).__name__, "keras_version": "2.21.0 (ember)"}
    if isinstance(model, Sequential) or model._ember_graph is not None:
        metadata["config"] = model.get_config()
    if include_optimizer:
        metadata["training_config"] = _compile_config(model)
    with open(os.path.join(tmp, _METADATA), "w") as f:
        json.dump(metadata, f, default=_json_default)
    if os.path.exists(filepath):
        shutil.rmtree(filepath) if os.path.isdir(filepath) else os.remove(filepath)
    os.replace(tmp, filepath)


def load_model(filepath, custom_objects=None, compile=True, options=None, safe_mode=True):  # noqa: A002
    from ember import errors, saved_model
    from ember.train import Checkpoint

    filepath = os.fspath(filepath)
    if hdf5_format.is_hdf5_path(filepath):
        return hdf5_format.load_model(filepath, custom_objects, compile)
    if filepath.endswith(".keras"):
        raise NotImplementedError(f"ember.keras: loading {filepath!r} (Keras-v3 .keras format) is not "
                                  "implemented; ember reads SavedModel directories and HDF5 files")
    if not os.path.isdir(filepath):
        raise errors.NotFoundError(None, None, f"No file or directory found at {filepath}")
    metadata_path = os.path.join(filepath, _METADATA)
    metadata = None
    if os.path.exists(metadata_path):
        with open(metadata_path) as f:
            metadata = json.load(f)
    elif os.path.exists(os.path.join(filepath, "keras_metadata.pb")):
        metadata = _tf_keras_metadata(os.path.join(filepath, "keras_metadata.pb"))
    if metadata is None or "config" not in metadata:
        return saved_model.load(filepath)
    try:
        model = model_from_config({"class_name": metadata["class_name"], "config": metadata["config"]},
                                  custom_objects)
    except (NotImplementedError, ValueError, TypeError, KeyError) as e:
        # A layer that cannot be rebuilt from its config (a Lambda, an unknown custom class): the SavedModel's
        # own restored object still runs the model with its weights.
        import warnings

        warnings.warn(f"load_model({filepath!r}): the Keras model could not be rebuilt from its config ({e}); "
                      "returning the restored SavedModel object (callable, with its variables and signatures)",
                      stacklevel=2)
        return saved_model.load(filepath)
    training = metadata.get("training_config")
    if compile and training and training.get("optimizer") is not None:
        model.compile(optimizer=training["optimizer"], loss=training["loss"], metrics=training["metrics"],
                      weighted_metrics=training.get("weighted_metrics"), loss_weights=training.get("loss_weights"))
    Checkpoint(root=model).restore(os.path.join(filepath, "variables", "variables")).expect_partial()
    return model


# ---- SavedModels written by tf_keras: their keras_metadata.pb
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


def _untuple(value):
    """tf_keras' JSON writes tuples as {"class_name": "__tuple__", "items": [...]}."""
    if isinstance(value, dict):
        if value.get("class_name") == "__tuple__" and "items" in value:
            return [_untuple(v) for v in value["items"]]
        return {k: _untuple(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untuple(v) for v in value]
    return value


def _tf_keras_metadata(path):
    """The root model's class and config from tf_keras' keras_metadata.pb (SavedMetadata: nodes = 1;
    SavedObject: node_path = 3, metadata = 5, a JSON string), in keras_metadata.json's form; None when the
    root is not a model ember can rebuild."""
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


def _json_default(obj):
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, (tuple, set)):
        return list(obj)
    if hasattr(obj, "as_list"):
        return obj.as_list()
    if hasattr(obj, "name") and hasattr(obj, "as_numpy_dtype"):
        return obj.name
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable: {obj!r}")

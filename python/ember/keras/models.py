"""``ember.keras.models``: Model, Sequential, ``save_model``/``load_model`` (SavedModel format),
``clone_model``, ``model_from_json``, and the functional model's config.

``model.save(path)`` writes a SavedModel with ember.saved_model: the model's variables (its checkpoint
object graph, so a functional model's keys are tf_keras' "layer_with_weights-N/..."), a ``serving_default``
signature and a ``__call__`` function traced at inference (``training=False``) with the batch dimension
left unknown, plus ``keras_metadata.json``: the model's class, its config (functional and Sequential
models) and the compile arguments when they are names, and tf_keras' ``keras_metadata.pb``
(keras_metadata.py), from which ``tf_keras.models.load_model`` rebuilds the model. ``load_model(path)`` then rebuilds the Keras model
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
from ember.keras import keras_metadata
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
        "class_name": _registered_name(layer), "config": layer.get_config(), "registered_name": None}
    return config


# Note [Node data in a functional config]
# A layer's "inbound_nodes" list one entry per call, in tf_keras' form. The call's first argument keeps its
# structure, each tensor in it written [layer name, node index, tensor index, kwargs] and each constant
# ["_CONSTANT_VALUE", -1, value, kwargs]; every other argument goes into `kwargs` under its parameter name
# (positional ones too, so `x + 1` records {"y": 1}), with KerasTensors as [layer, node, tensor] and tensors
# and arrays as nested lists. A single tensor is wrapped in a list unless the layer preserves its input
# structure (TFOpLambda: tf.concat([a, b], axis=1) keeps its list of two). Rebuilding calls the layer on the
# same structure with the same kwargs, so the constants come back.
_CONSTANT = "_CONSTANT_VALUE"


def _constant(value, ref):
    """A call argument as a config holds it."""
    import numpy as np

    from ember.framework.tensor import Tensor

    if isinstance(value, KerasTensor):
        return ref(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Tensor):
        return value.numpy().tolist()
    return value


def _serialize_node(node, ref):
    layer = node.layer
    inputs, rest = node.call_args[0], node.call_args[1:]
    names = list(layer._call_arg_names[1:])
    if len(rest) > len(names):
        raise ValueError(f"Layer {layer.name} was called with {len(rest) + 1} positional arguments, but its call "
                         f"names only {len(names) + 1} ({['inputs'] + names}); the config cannot record the others")
    arguments = dict(zip(names, rest))
    arguments.update(node.call_kwargs)
    kwargs = nest.map_structure(lambda v: _constant(v, ref), arguments)
    try:
        json.dumps(kwargs, default=_json_default)
    except TypeError:
        types = nest.map_structure(lambda v: type(v).__name__, arguments)
        raise TypeError(f"Layer {layer.name} was passed non-JSON-serializable arguments. Arguments had types: "
                        f"{types}. They cannot be serialized out when saving the model.") from None

    def first(value):
        if isinstance(value, KerasTensor):
            return ref(value) + [kwargs]
        return [_CONSTANT, -1, _constant(value, ref), kwargs]

    data = nest.map_structure(first, inputs)
    if not nest.is_nested(inputs) and not layer._preserve_input_structure_in_config:
        data = [data]
    return data


def functional_config(model):
    graph = model._ember_graph
    node_index = {}  # id(node) -> its index among the layer's nodes that belong to this model
    for layer in graph.layers:
        kept = [n for n in layer._inbound_nodes if id(n) in graph.node_ids or n.is_input]
        for i, n in enumerate(kept):
            node_index[id(n)] = i + _first_node_index(layer)

    def ref(x):
        layer, idx, tensor_index = x._keras_history
        return [layer.name, node_index.get(id(layer._inbound_nodes[idx]), idx), tensor_index]

    layers = []
    for layer in graph.layers:
        entry = _serialize_layer(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [_serialize_node(node, ref) for node in layer._inbound_nodes
                                  if id(node) in graph.node_ids and not node.is_input]
        layers.append(entry)
    def refs(nested, flat):
        # A dict of inputs or outputs is written as a dict of refs, as tf_keras does, so that a model rebuilt
        # from the config takes and returns dicts again; anything else as a list.
        if isinstance(nested, dict):
            return {k: ref(v) for k, v in nested.items()}
        return [ref(x) for x in flat]

    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": refs(getattr(graph, "nested_inputs", None), graph.inputs),
            "output_layers": refs(getattr(graph, "nested_outputs", None), graph.outputs)}


def _first_node_index(layer):
    """The index of a layer's first call in a config: 1 for a nested functional or Sequential model, whose
    node 0 is, in tf_keras, the call that built its own graph (ember records no such node)."""
    return 1 if isinstance(layer, Model) and layer._ember_graph is not None else 0


class _NotReady(Exception):
    """A node's inputs include a tensor of a node not rebuilt yet."""


def _is_tensor_ref(x):
    return (isinstance(x, (list, tuple)) and len(x) == 3 and isinstance(x[0], str) and x[0] != _CONSTANT
            and isinstance(x[1], int) and isinstance(x[2], int))


def _is_node_entry(x):
    return (isinstance(x, (list, tuple)) and len(x) in (3, 4) and isinstance(x[0], str) and isinstance(x[1], int)
            and (x[0] == _CONSTANT or isinstance(x[2], int)) and (len(x) == 3 or isinstance(x[3], dict)))


def _tensor_of(x, produced):
    key = (x[0], x[1])
    if key not in produced:
        raise _NotReady
    outputs = produced[key]
    if not 0 <= x[2] < len(outputs):
        raise ValueError(f"The config refers to output {x[2]} of layer '{x[0]}' (node {x[1]}), which has "
                         f"{len(outputs)} output(s)")
    return outputs[x[2]]


def _rebuild_kwargs(value, produced):
    if _is_tensor_ref(value):
        return _tensor_of(value, produced)
    if isinstance(value, list):
        return [_rebuild_kwargs(v, produced) for v in value]
    if isinstance(value, tuple):
        return tuple(_rebuild_kwargs(v, produced) for v in value)
    if isinstance(value, dict):
        return {k: _rebuild_kwargs(v, produced) for k, v in value.items()}
    return value


def _rebuild_call(layer, node_data, produced):
    """(inputs, kwargs) of one node of the config (Note [Node data in a functional config])."""
    kwargs = {}

    def walk(data):
        nonlocal kwargs
        if _is_node_entry(data):
            if len(data) == 4:
                kwargs = data[3]
            return data[2] if data[0] == _CONSTANT else _tensor_of(data, produced)
        if isinstance(data, (list, tuple)):
            return [walk(d) for d in data]
        if isinstance(data, dict):
            return {k: walk(d) for k, d in data.items()}
        raise ValueError(f"Improperly formatted model config: the node data of layer '{layer.name}' holds {data!r}, "
                         "expected [layer name, node index, tensor index, kwargs] entries")

    inputs = walk(node_data)
    if isinstance(inputs, list) and len(inputs) == 1 and not layer._preserve_input_structure_in_config:
        inputs = inputs[0]
    return inputs, _rebuild_kwargs(kwargs, produced)


def functional_from_config(cls, config, custom_objects=None):
    from ember.keras import layers as layers_mod

    created, produced = {}, {}  # name -> layer; (name, node index) -> flat outputs
    pending = {}  # name -> its nodes still to rebuild, in order
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
        if entry.get("inbound_nodes"):
            pending[entry["name"]] = list(entry["inbound_nodes"])
    counts = {}
    while pending:
        progress = False
        for name in list(pending):
            nodes = pending[name]
            while nodes:  # a shared layer's nodes in order: node i+1 may use node i's outputs
                try:
                    inputs, kwargs = _rebuild_call(created[name], nodes[0], produced)
                except _NotReady:
                    break
                outputs = created[name](inputs, **kwargs)
                index = counts.get(name, _first_node_index(created[name]))
                counts[name] = index + 1
                produced[(name, index)] = nest.flatten(outputs)
                nodes.pop(0)
                progress = True
            if not nodes:
                del pending[name]
        if not progress:
            raise ValueError(f"Cannot rebuild the functional model '{config.get('name')}' from its config: the nodes "
                             f"of {sorted(pending)} wait for inputs no layer produces")
    try:
        inputs, outputs = (_model_tensors(config[key], produced) for key in ("input_layers", "output_layers"))
    except _NotReady:
        raise ValueError(f"Cannot rebuild the functional model '{config.get('name')}' from its config: its "
                         f"input_layers {config['input_layers']} or output_layers {config['output_layers']} name "
                         "a layer call the config does not have") from None
    return cls(inputs=inputs, outputs=outputs, name=config.get("name"))


def _model_tensors(refs, produced):
    """A config's input_layers/output_layers as tensors: one [name, node, tensor], a list of them (one
    alone unwrapped), or a dict of them (tf_keras writes a model's dict inputs so)."""
    if _is_tensor_ref(refs):
        return _tensor_of(refs, produced)
    if isinstance(refs, dict):
        return {k: _tensor_of(v, produced) for k, v in refs.items()}
    tensors = [_tensor_of(r, produced) for r in refs]
    return tensors[0] if len(tensors) == 1 else tensors


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
    if signatures is None:
        signatures = model._ember_default_save_signature()
    optimizer = model.__dict__.get("optimizer")
    model.__dict__["__call__"] = serving
    if not include_optimizer:
        model.__dict__["optimizer"] = None
    tmp = filepath + ".ember-tmp"
    try:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        saved_model.save(model, tmp, signatures=signatures)
    finally:
        del model.__dict__["__call__"]
        model.__dict__["optimizer"] = optimizer
    metadata = {"class_name": type(model).__name__, "keras_version": "2.21.0 (ember)"}
    config = None
    if isinstance(model, Sequential) or model._ember_graph is not None:
        try:
            config = model.get_config()
        except NotImplementedError as e:
            # A custom layer without get_config: saved all the same (as tf_keras saves it), but loaded back
            # as the SavedModel's callable object, by ember and by tf_keras alike.
            import warnings

            warnings.warn(f"model.save({filepath!r}): the model's config is not available ({e}); the SavedModel "
                          "loads back as a callable object, not a Keras model", stacklevel=3)
        else:
            metadata["config"] = config
    training_config = _compile_config(model) if include_optimizer else None
    if include_optimizer:
        metadata["training_config"] = training_config
    with open(os.path.join(tmp, _METADATA), "w") as f:
        json.dump(metadata, f, default=_json_default)
    if config is not None:
        keras_metadata.write(model, tmp, _tf_keras_training_config(model, training_config))
    if os.path.exists(filepath):
        shutil.rmtree(filepath) if os.path.isdir(filepath) else os.remove(filepath)
    os.replace(tmp, filepath)


def _tf_keras_training_config(model, training_config):
    """ember's compile arguments as tf_keras' metadata holds them: the optimizer as "optimizer_config", and
    the metrics, once built, as the metric objects they resolved to, per output (tf_keras compiles a loaded
    model with its outputs standing for the labels, so "accuracy" must come resolved)."""
    if training_config is None:
        return None
    metrics, weighted = training_config["metrics"], training_config["weighted_metrics"]
    container = model._ember_compiled[1]
    if container.built:
        def resolved(groups, user):
            if not user:
                return user
            return [[{"class_name": type(m).__name__, "config": m.get_config()} for m in group] for group in groups]

        metrics = resolved(container._per_output[0], metrics)
        weighted = resolved(container._per_output[1], weighted)
    optimizer = dict(training_config["optimizer"])
    # Keras 3 arguments tf_keras' optimizers do not take
    optimizer["config"] = {k: v for k, v in optimizer["config"].items()
                           if k not in ("loss_scale_factor", "gradient_accumulation_steps")}
    optimizer["config"].setdefault("is_legacy_optimizer", False)
    return {"loss": training_config["loss"], "metrics": metrics, "weighted_metrics": weighted,
            "loss_weights": training_config["loss_weights"],
            "optimizer_config": {"class_name": optimizer["class_name"], "config": optimizer["config"]}}


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
        metadata = keras_metadata.read(os.path.join(filepath, "keras_metadata.pb"))
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
    _restore_vocabularies(model, filepath)
    return model


def _restore_vocabularies(model, filepath):
    """The vocabularies of the text layers (StringLookup, IntegerLookup, the one inside TextVectorization):
    a config holds a vocabulary given as a list, but not one set by ``adapt``, which only the layer's table
    in the SavedModel (its child ``lookup_table``) holds; each layer takes its table's entries, found by the
    same path of children in the restored object graph. So are "tf_idf" weights: the layer's child
    ``idf_weights``, a variable (tf_keras' and ember's alike)."""
    from ember import Variable, saved_model, trackable
    from ember.keras.layers.text_lookup import _IndexLookup
    from ember.saved_model.loader import RestoredTable

    layers, seen, stack = [], set(), [((), model)]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, _IndexLookup):
            layers.append((path, obj))
        stack += [(path + (name,), child) for name, child in trackable.children(obj)]
    if not layers:
        return
    restored = saved_model.load(filepath)
    for path, layer in layers:
        restored_layer = restored
        for name in path:
            restored_layer = getattr(restored_layer, name, None) if not isinstance(restored_layer, (list, dict)) \
                else None
        table = getattr(restored_layer, "lookup_table", None)
        if isinstance(table, RestoredTable):
            layer._ember_set_table_entries(*table.export())
        idf_weights = getattr(restored_layer, "idf_weights", None)
        if layer.output_mode == "tf_idf" and isinstance(idf_weights, Variable):
            layer._set_idf(idf_weights.numpy())


def _json_default(obj):
    import numpy as np

    if obj is Ellipsis:  # x[..., 0] in an op layer's arguments, written as tf_keras writes it
        return {"class_name": "__ellipsis__"}
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


def _registered_name(layer):
    """The name deserialization finds the layer's class by: its registered "package>name", else the class's."""
    from ember.keras.utils.object_registration import get_registered_name

    return get_registered_name(type(layer))

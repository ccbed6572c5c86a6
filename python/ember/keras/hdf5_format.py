"""Keras' HDF5 files (`.h5`/`.hdf5`), in tf_keras' layout so that either side reads what the other wrote:
``save_weights``/``load_weights`` and ``model.save``/``load_model``. Read through h5py (the well-kept HDF5
binding TensorFlow itself depends on), imported only when an HDF5 path is used.

A weights file holds, at its root (or in a model file's ``model_weights`` group), the attributes
``layer_names``, ``backend`` and ``keras_version``, and one group per layer whose attribute ``weight_names``
lists that layer's weights (trainable first, then non-trainable) as ``layer/var:0``; each weight is the
dataset at that path inside the layer's group. A model file adds the ``model_config`` and
``training_config`` JSON attributes and an ``optimizer_weights`` group. Design: docs/keras.md.
"""

import json
import os

import numpy as np

from ember import errors

HDF5_SUFFIXES = (".h5", ".hdf5")
_KERAS_VERSION = "2.21.0"


def is_hdf5_path(filepath, save_format=None):
    return save_format == "h5" or os.fspath(filepath).endswith(HDF5_SUFFIXES)


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("ember.keras: HDF5 files need the h5py package (pip install h5py)") from None
    return h5py


def _layer_weights(layer):
    """A layer's weights in the order tf_keras writes them: trainable, then non-trainable. A weight that is
    not a variable (an adapted lookup layer's vocabulary) has no place in the format: tf_keras'
    NotImplementedError, on saving and on loading alike."""
    from ember.keras.engine.base_layer import TrackableWeightHandler

    weights = list(layer.trainable_weights) + list(layer.non_trainable_weights)
    if any(isinstance(w, TrackableWeightHandler) for w in weights):
        raise NotImplementedError("Save or restore weights that is not an instance of `tf.Variable` is not "
                                  "supported in h5, use `save_format='tf'` instead. Received a model or layer "
                                  f"{type(layer).__name__} with weights {weights}")
    return weights


def _str_list(values):
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]


def _write_weights(group, model):
    layers = model.layers
    group.attrs["layer_names"] = np.array([layer.name.encode("utf8") for layer in layers])
    group.attrs["backend"] = "tensorflow"
    group.attrs["keras_version"] = _KERAS_VERSION
    in_layers = {id(w) for layer in layers for w in layer.weights}
    top_level = [w for w in _layer_weights(model) if id(w) not in in_layers]
    for name, weights in [(layer.name, _layer_weights(layer)) for layer in layers] + \
            [("top_level_model_weights", top_level)]:
        layer_group = group.create_group(name)
        layer_group.attrs["weight_names"] = np.array([w.name.encode("utf8") for w in weights])
        for w in weights:
            layer_group.create_dataset(w.name, data=w.numpy())


def _read_layer_values(group, name):
    layer_group = group[name]
    return [np.asarray(layer_group[n]) for n in _str_list(layer_group.attrs.get("weight_names", []))]


def _assign(layer, values, skip_mismatch, where):
    weights = _layer_weights(layer)
    if len(weights) != len(values):
        if skip_mismatch:
            return
        raise ValueError(f"{where}: layer {layer.name!r} expects {len(weights)} weight(s), but the saved weights "
                         f"have {len(values)} element(s)")
    # A weight whose shape leaves a dimension unknown (a lookup layer's idf weights, (None,)) takes any
    # value that fits it, as tf_keras' assign does.
    for w, v in zip(weights, values):
        if not w.shape.is_compatible_with(v.shape):
            if skip_mismatch:
                continue
            raise ValueError(f"{where}: shape mismatch in layer {layer.name!r} for weight {w.name}: the weight "
                             f"has shape {tuple(w.shape)}, the saved value has shape {v.shape}")
    for w, v in zip(weights, values):
        if w.shape.is_compatible_with(v.shape):
            w.assign(v.astype(w.dtype.as_numpy_dtype))


def _read_weights(group, model, by_name, skip_mismatch, where):
    saved_names = _str_list(group.attrs.get("layer_names", []))
    if by_name:
        layers = {layer.name: layer for layer in model.layers}
        for name in saved_names:
            if name in layers:
                _assign(layers[name], _read_layer_values(group, name), skip_mismatch, where)
        return
    # By topology, as tf_keras: the layers that have weights, in order, against the saved ones that do.
    layers = [layer for layer in model.layers if layer.weights]
    saved = [(name, values) for name in saved_names if (values := _read_layer_values(group, name))]
    if len(saved) != len(layers):
        raise ValueError(f"{where}: the file holds weights for {len(saved)} layer(s) "
                         f"({[n for n, _ in saved]}), but the model has {len(layers)} layer(s) with weights "
                         f"({[layer.name for layer in layers]})")
    for layer, (_, values) in zip(layers, saved):
        _assign(layer, values, skip_mismatch, where)
    if "top_level_model_weights" in group:
        in_layers = {id(w) for layer in model.layers for w in layer.weights}
        top_level = [w for w in _layer_weights(model) if id(w) not in in_layers]
        values = _read_layer_values(group, "top_level_model_weights")
        for w, v in zip(top_level, values):
            w.assign(v)


def _open_for_read(filepath, where):
    h5py = _h5py()
    if not os.path.exists(filepath):
        raise errors.NotFoundError(None, None, f"{where}: no file at {filepath}")
    try:
        return h5py.File(filepath, "r")
    except OSError as e:
        raise errors.DataLossError(None, None, f"{where}: {filepath} is not a readable HDF5 file ({e})") from None


def _atomic_write(filepath, write):
    """Writes the file under a temporary name and renames it, so a failed save keeps the previous file."""
    h5py = _h5py()
    tmp = filepath + ".ember-tmp"
    try:
        with h5py.File(tmp, "w") as f:
            write(f)
        os.replace(tmp, filepath)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_weights(model, filepath, overwrite=True):
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    _atomic_write(filepath, lambda f: _write_weights(f, model))


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    filepath = os.fspath(filepath)
    where = f"load_weights({filepath!r})"
    with _open_for_read(filepath, where) as f:
        _read_weights(f["model_weights"] if "model_weights" in f else f, model, by_name, skip_mismatch, where)


def _optimizer_slots(optimizer):
    """The optimizer's state in tf_keras' order: the iteration count, then each variable's slots (tf_keras
    keeps the learning rate out of its variables)."""
    return [v for v in optimizer.variables if not v.name.split("/")[-1].startswith("learning_rate")]


def _tf_keras_optimizer_config(serialized):
    """An optimizer's config as tf_keras writes it into HDF5 files: its optimizers are registered as
    "Custom>Name", and their constructors refuse Keras 3's loss_scale_factor and gradient_accumulation_steps."""
    config = dict(serialized["config"])
    if serialized["class_name"] == "LossScaleOptimizer":  # tf_keras' name for it; the inner one as tf_keras nests it
        inner = _tf_keras_optimizer_config(config["inner_optimizer"])
        inner = {"module": "keras.optimizers", "class_name": inner["class_name"].removeprefix("Custom>"),
                 "config": inner["config"], "registered_name": None}
        return {"class_name": "LossScaleOptimizerV3", "config": {**config, "inner_optimizer": inner}}
    for key in ("loss_scale_factor", "gradient_accumulation_steps"):
        if config.get(key) is not None:
            raise NotImplementedError(f"ember.keras: an optimizer with {key}={config[key]!r} cannot be written to "
                                      "HDF5 (tf_keras has no such argument)")
        config.pop(key, None)
    config.setdefault("jit_compile", False)
    config["is_legacy_optimizer"] = False
    return {"class_name": "Custom>" + serialized["class_name"], "config": config}


def save_model(model, filepath, include_optimizer=True):
    from ember.keras import models, optimizers

    if model._ember_graph is None and not isinstance(model, models.Sequential):
        raise NotImplementedError(f"ember.keras: saving the subclassed model {model.name!r} to HDF5 needs its "
                                  "config, which only functional and Sequential models have (tf_keras refuses it "
                                  "too); save a SavedModel directory or save_weights instead")
    config = json.dumps({"class_name": type(model).__name__, "config": model.get_config()},
                        default=models._json_default)
    training = models._compile_config(model) if include_optimizer else None
    optimizer = model.__dict__.get("optimizer") if include_optimizer else None

    def write(f):
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = _KERAS_VERSION
        f.attrs["model_config"] = config
        if training is not None:
            training_config = {k: v for k, v in training.items() if k != "optimizer"}
            training_config["optimizer_config"] = _tf_keras_optimizer_config(optimizers.serialize(optimizer))
            f.attrs["training_config"] = json.dumps(training_config, default=models._json_default)
        _write_weights(f.create_group("model_weights"), model)
        if optimizer is not None and training is not None:
            slots = _optimizer_slots(optimizer)
            group = f.create_group("optimizer_weights")
            group.attrs["weight_names"] = np.array([v.name.encode("utf8") for v in slots])
            for v in slots:
                group.create_dataset(v.name, data=v.numpy())

    filepath = os.fspath(filepath)
    _atomic_write(filepath, write)


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 - Keras' argument name
    from ember.keras import keras_metadata, models

    filepath = os.fspath(filepath)
    where = f"load_model({filepath!r})"
    with _open_for_read(filepath, where) as f:
        if "model_config" not in f.attrs:
            raise ValueError(f"{where}: the file has no model_config (a weights-only file? use load_weights)")
        config = keras_metadata._untuple(json.loads(f.attrs["model_config"]))
        model = models.model_from_config(config, custom_objects)
        _read_weights(f["model_weights"], model, False, False, where)
        training = json.loads(f.attrs["training_config"]) if "training_config" in f.attrs else None
        if compile and training:
            optimizer = training.get("optimizer_config") or training.get("optimizer")
            model.compile(optimizer=optimizer, loss=training.get("loss"), metrics=training.get("metrics"),
                          weighted_metrics=training.get("weighted_metrics"),
                          loss_weights=training.get("loss_weights"))
            if "optimizer_weights" in f:
                group = f["optimizer_weights"]
                values = [np.asarray(group[n]) for n in _str_list(group.attrs.get("weight_names", []))]
                model.optimizer.build(model.trainable_variables)
                slots = _optimizer_slots(model.optimizer)
                if len(slots) != len(values):
                    raise ValueError(f"{where}: the file holds {len(values)} optimizer value(s), the optimizer "
                                     f"has {len(slots)}")
                for v, value in zip(slots, values):
                    v.assign(value.astype(v.dtype.as_numpy_dtype))
    return model

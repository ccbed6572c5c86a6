"""``ember.keras.optimizers``: Keras' optimizers as ``tf.keras.optimizers`` has them.

SGD, Adam, AdamW, Adamax, Nadam, Lion, RMSprop, Adagrad, Adadelta and Ftrl, each with the options every
Keras optimizer takes (a float, schedule or callable learning rate, clipnorm / clipvalue / global_clipnorm,
weight_decay, use_ema); ``schedules`` holds the learning-rate schedules. Update formulas are Keras 2's
(``tf_keras``); checkpoints and ``get_config`` match TF 2.21's Keras 3 key for key (optimizer.py explains).
``get(identifier)`` resolves what ``Model.compile(optimizer=...)`` accepts.
"""

from ember.keras.optimizers import schedules
from ember.keras.optimizers.optimizer import Optimizer
from ember.keras.optimizers.sgd import SGD
from ember.keras.optimizers.adam import Adam, Adamax, AdamW, Lion, Nadam
from ember.keras.optimizers.adaptive import Adadelta, Adagrad, Ftrl, RMSprop
from ember.keras.optimizers import legacy  # noqa: E402,F401 - after the classes it subclasses

_BUILTIN = {cls.__name__.lower(): cls for cls in (SGD, Adam, AdamW, Adamax, Nadam, Lion, RMSprop, Adagrad,
                                                  Adadelta, Ftrl)}


def serialize(optimizer, use_legacy_format=False):
    """An optimizer as Keras writes it: ``{'module', 'class_name', 'config', 'registered_name'}``."""
    del use_legacy_format
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"optimizers.serialize expects an Optimizer instance; got {optimizer!r}")
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None, use_legacy_format=False):
    """An optimizer from ``serialize``'s dict (or tf_keras'); built-in class names match in any case."""
    del use_legacy_format
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized optimizer: expected a dict with 'class_name' and "
                         f"'config'; got {config!r}")
    class_name = config["class_name"]
    if custom_objects and class_name in custom_objects:
        cls = custom_objects[class_name]
    else:
        # tf_keras registers its optimizers under the "Custom>" package ("Custom>Adam" in its HDF5 files).
        cls = _BUILTIN.get(str(class_name).lower().removeprefix("custom>"))
        if cls is None and str(class_name).lower().removeprefix("custom>") in ("lossscaleoptimizer",
                                                                                "lossscaleoptimizerv3"):
            from ember.keras.mixed_precision import LossScaleOptimizer as cls  # it imports this package
        if cls is None:
            raise ValueError(f"Unknown optimizer: '{class_name}'. Expected one of {sorted(_BUILTIN)} or a name "
                             "in custom_objects.")
    return cls.from_config(dict(config.get("config") or {}), custom_objects=custom_objects)


def get(identifier, **kwargs):
    """An optimizer from what ``compile(optimizer=...)`` accepts: an instance (returned as is), a name such as
    'adam' (a new instance with Keras' defaults), or a dict from ``serialize``."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, **kwargs)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}}, **kwargs)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")

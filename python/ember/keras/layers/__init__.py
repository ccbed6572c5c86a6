"""``ember.keras.layers``: Keras 2's layers (tf_keras).

The engine (Layer, InputLayer, Input, InputSpec) and the core layers live here; the other families
(convolutional, pooling, normalization, recurrent, attention) are modules of this package, each exporting
its public names in ``__all__``: a module present in the package is imported below, so adding one needs no
edit of this file.
"""

import importlib as _importlib
import importlib.util as _importlib_util

from ember.keras.engine.base_layer import Layer  # noqa: F401
from ember.keras.engine.input_layer import Input, InputLayer  # noqa: F401
from ember.keras.engine.input_spec import InputSpec  # noqa: F401
from ember.keras.layers.core import *  # noqa: F401,F403

_FAMILIES = ("convolutional", "pooling", "normalization", "recurrent", "attention", "merging", "reshaping",
             "preprocessing", "text_lookup", "regularization", "activation", "rnn", "wrappers", "einsum_dense",
             "conv_recurrent", "locally_connected", "image_augmentation")
for _family in _FAMILIES:
    if _importlib_util.find_spec(f"{__name__}.{_family}") is not None:
        _module = _importlib.import_module(f"{__name__}.{_family}")
        globals().update({_n: getattr(_module, _n) for _n in getattr(_module, "__all__", ())})


def serialize(layer):
    from ember.keras.utils.object_registration import get_registered_name

    return {"module": "keras.layers", "class_name": get_registered_name(type(layer)), "config": layer.get_config(),
            "registered_name": None}


def deserialize(config, custom_objects=None):
    """A layer from ``{"class_name": ..., "config": ...}``, looked up in ``custom_objects`` then here."""
    from ember.keras.utils.object_registration import effective_custom_objects

    custom_objects = effective_custom_objects(custom_objects)
    name = config["class_name"]
    cls = custom_objects.get(name) or globals().get(name)
    if cls is None and name in ("TFOpLambda", "SlicingOpLambda"):  # not public names, as in tf_keras
        from ember.keras.layers import core

        cls = getattr(core, name)
    if cls is None:
        from ember.keras import models

        cls = getattr(models, name, None)
    if cls is None or not isinstance(cls, type):
        raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a `keras.utils.custom_object_scope` "
                         "and that this object is included in the scope.")
    if hasattr(cls, "_from_config_with_custom_objects"):
        return cls._from_config_with_custom_objects(config["config"], custom_objects)
    return cls.from_config(config["config"])


from ember.keras.layers import experimental  # noqa: E402,F401 - the older home of the preprocessing layers

"""``ember.keras``: Keras 2's API as TensorFlow's ``tf_keras`` package has it; layers are ember.Modules.

``import ember as tf`` then ``tf.keras.layers.Dense``, ``tf.keras.Model``, ``tf.keras.Sequential``,
``tf.keras.Input``, ``tf.keras.optimizers``, ``tf.keras.losses``, ``tf.keras.callbacks`` ... (docs/keras.md).
Modules written alongside (metrics, for one) are imported here when present.
"""

import importlib as _importlib
import importlib.util as _importlib_util

from ember.keras import activations, backend, constraints, initializers, optimizers, regularizers  # noqa: F401
from ember.keras import layers  # noqa: F401
from ember.keras import losses  # noqa: F401
from ember.keras import callbacks, models, preprocessing, utils  # noqa: F401
from ember.keras.engine.input_layer import Input  # noqa: F401
from ember.keras.engine.sequential import Sequential  # noqa: F401
from ember.keras.engine.training import Model  # noqa: F401
from ember.keras.engine import keras_tensor as _keras_tensor
from ember.util import dispatch as _dispatch

_dispatch.set_fallback(_keras_tensor.dispatch_keras_tensors)  # tf.nn.relu(keras_input) -> a TFOpLambda layer

for _name in ("metrics", "mixed_precision", "preprocessing", "datasets"):
    if _importlib_util.find_spec(f"{__name__}.{_name}") is not None:
        globals()[_name] = _importlib.import_module(f"{__name__}.{_name}")

"""``ember.keras.backend``: the few Keras 2 backend functions that models use."""

from ember import dtypes
from ember.keras.engine import base_layer

_FLOATX = ["float32"]
_EPSILON = [1e-7]
_IMAGE_DATA_FORMAT = ["channels_last"]


def clear_session():
    """Resets layer-name numbering ("dense", "dense_1", ... starts again)."""
    base_layer.reset_names()


def floatx():
    return _FLOATX[0]


def set_floatx(value):
    _FLOATX[0] = dtypes.as_dtype(value).name


def epsilon():
    return _EPSILON[0]


def set_epsilon(value):
    _EPSILON[0] = float(value)


def image_data_format():
    return _IMAGE_DATA_FORMAT[0]


def set_image_data_format(value):
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: {value}")
    _IMAGE_DATA_FORMAT[0] = value


def learning_phase():
    value = base_layer._learning_phase[0]
    return 0 if value is None else int(value)


def set_learning_phase(value):
    if value not in (0, 1):
        raise ValueError(f"Expected learning phase to be 0 or 1. Received: {value}")
    base_layer._learning_phase[0] = bool(value)


def get_uid(prefix=""):
    base_layer._name_counts[prefix] += 1
    return base_layer._name_counts[prefix]


def get_value(x):
    """A variable's or tensor's value as NumPy (a float32 scalar stays a NumPy scalar, as Keras')."""
    return x.numpy() if hasattr(x, "numpy") else x


def set_value(x, value):
    import numpy as np

    x.assign(np.asarray(value, dtype=x.dtype.as_numpy_dtype))


def batch_get_value(tensors):
    return [get_value(x) for x in tensors]


def batch_set_value(tuples):
    for x, value in tuples:
        set_value(x, value)


def int_shape(x):
    shape = x.shape
    return tuple(shape.as_list()) if shape.rank is not None else None


def ndim(x):
    return x.shape.rank


def dtype(x):
    return x.dtype.name


def is_keras_tensor(x):
    from ember.keras.engine.keras_tensor import KerasTensor

    return isinstance(x, KerasTensor)

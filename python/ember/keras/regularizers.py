"""``ember.keras.regularizers``: Keras 2's weight regularizers (tf_keras): callables ``reg(weight)`` that
return a scalar loss, with ``get_config``, and ``get`` / ``serialize`` / ``deserialize``."""

from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.keras.utils.object_table import ObjectTable


def _check_penalty(value, name):
    if not isinstance(value, (float, int)) or value < 0:
        raise ValueError(f"Value '{value}' is not a valid regularization penalty number, expected a "
                         f"non-negative float for `{name}`")


def _as_floatx(value):
    """tf_keras keeps a penalty as a number of the backend's float type, so get_config() gives 0.01 as
    0.009999999776482582 under float32."""
    import numpy

    from ember.keras import backend

    return float(numpy.asarray(value, dtype=backend.floatx()))


class Regularizer:
    def __call__(self, x):
        return 0.0

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        _check_penalty(l1, "l1")
        _check_penalty(l2, "l2")
        self.l1, self.l2 = _as_floatx(l1), _as_floatx(l2)

    def __call__(self, x):
        x = convert_to_tensor(x)
        total = convert_to_tensor(0.0, dtype=x.dtype)
        if self.l1:
            total = total + convert_to_tensor(self.l1, dtype=x.dtype) * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            total = total + convert_to_tensor(self.l2, dtype=x.dtype) * math_ops.reduce_sum(math_ops.square(x))
        return total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    def __init__(self, l1=0.01, **kwargs):
        l1 = kwargs.pop("l", l1)  # Keras 2's backward-compatible spelling
        _check_penalty(l1, "l1")
        self.l1 = _as_floatx(l1)

    def __call__(self, x):
        x = convert_to_tensor(x)
        return convert_to_tensor(self.l1, dtype=x.dtype) * math_ops.reduce_sum(math_ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    def __init__(self, l2=0.01, **kwargs):
        l2 = kwargs.pop("l", l2)
        _check_penalty(l2, "l2")
        self.l2 = _as_floatx(l2)

    def __call__(self, x):
        x = convert_to_tensor(x)
        return convert_to_tensor(self.l2, dtype=x.dtype) * math_ops.reduce_sum(math_ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Penalizes non-orthogonal rows (or columns) of a 2-D weight: factor * mean |off-diagonal of W W^T|
    over the normalized rows."""

    def __init__(self, factor=0.01, mode="rows"):
        _check_penalty(factor, "factor")
        if mode not in {"rows", "columns"}:
            raise ValueError(f"Invalid value for argument `mode`. Expected one of {{'rows', 'columns'}}. "
                             f"Received: mode={mode}")
        self.factor, self.mode = _as_floatx(factor), mode

    def __call__(self, x):
        x = convert_to_tensor(x)
        if x.shape.rank != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. Received: inputs.shape={x.shape}")
        if self.mode == "columns":
            x = array_ops.transpose(x)
        norm = math_ops.sqrt(math_ops.reduce_sum(math_ops.square(x), axis=1, keepdims=True))
        x = x / math_ops.maximum(norm, convert_to_tensor(1e-12, dtype=x.dtype))
        product = math_ops.matmul(x, x, transpose_b=True)
        n = x.shape[0]
        off = math_ops.abs(product) * convert_to_tensor(1.0 - np.eye(n), dtype=x.dtype)
        return convert_to_tensor(self.factor, dtype=x.dtype) * math_ops.reduce_sum(off) / (n * (n - 1))

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


import numpy as np  # noqa: E402 - used by OrthogonalRegularizer only


def l1_l2(l1=0.01, l2=0.01):
    return L1L2(l1=l1, l2=l2)


l1 = L1
l2 = L2
orthogonal_regularizer = OrthogonalRegularizer
_CLASSES = {c.__name__: c for c in (Regularizer, L1L2, L1, L2, OrthogonalRegularizer)}
_NAMES = {"l1": L1, "l2": L2, "l1_l2": L1L2, "orthogonal_regularizer": OrthogonalRegularizer}

_TABLE = ObjectTable("regularizer", "keras.regularizers", _CLASSES, _NAMES,
                     "Could not interpret regularizer identifier", factories={"l1_l2": l1_l2})
serialize, deserialize, get = _TABLE.serialize, _TABLE.deserialize, _TABLE.get

"""``ember.keras.constraints``: Keras 2's weight constraints (tf_keras): callables ``c(weight) -> projected
weight`` that the optimizer applies after each update (``add_weight(constraint=...)`` records them on the
variable as ``variable.constraint``)."""

from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.keras.utils.object_table import ObjectTable

_EPSILON = 1e-7


class Constraint:
    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescales each slice along ``axis`` whose L2 norm exceeds ``max_value`` down to it."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = math_ops.minimum(norms, convert_to_tensor(float(self.max_value), dtype=w.dtype))
        return w * (desired / (convert_to_tensor(_EPSILON, dtype=w.dtype) + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    def __call__(self, w):
        w = convert_to_tensor(w)
        return w * math_ops.cast(w >= convert_to_tensor(0.0, dtype=w.dtype), w.dtype)


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        return w / (convert_to_tensor(_EPSILON, dtype=w.dtype) + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        clipped = array_ops.clip_by_value(norms, self.min_value, self.max_value)
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (convert_to_tensor(_EPSILON, dtype=w.dtype) + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_CLASSES = {c.__name__: c for c in (Constraint, MaxNorm, NonNeg, UnitNorm, MinMaxNorm)}
_NAMES = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}

_TABLE = ObjectTable("constraint", "keras.constraints", _CLASSES, _NAMES,
                     "Could not interpret constraint function identifier")
serialize, deserialize, get = _TABLE.serialize, _TABLE.deserialize, _TABLE.get

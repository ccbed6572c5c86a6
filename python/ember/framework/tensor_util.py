"""``tf.get_static_value``: what is known of a tensor's value without running anything.

An eager tensor knows its value. Inside ``ember.function`` tracing already folds every op whose inputs are
constant, so a tensor computed only from constants is concrete too; of a graph tensor ember knows the int
values that shape inference tracks (PartialValue, src/ember/graph/partial_value.h: shapes built from
``tf.shape(x)``, ``tf.stack`` of known and unknown parts, slices of them). Where TensorFlow's constant
folding gives up (``tf.constant(3) + 1`` in a graph) ember may still know the answer.
"""

import numpy as np

from ember import _C
from ember.framework.tensor import Tensor


def get_static_value(tensor, partial=False):
    """``tensor``'s value as a NumPy array when it is known while tracing, else None. Anything that is not a
    tensor is returned as it is; a variable gives None (its value may change). With ``partial=True`` an int
    vector known only in part is an object array holding None where an element is unknown."""
    if getattr(tensor, "_ember_variable", False):
        return None
    if not isinstance(tensor, Tensor):
        return tensor
    if not tensor._is_symbolic:
        return tensor.numpy()
    if not tensor.dtype.is_integer:
        return None
    known = _C.partial_value(tensor)
    if known is None:
        return None
    scalar, values = known
    dtype = tensor.dtype.as_numpy_dtype
    if all(v is not None for v in values):
        array = np.array(values, dtype=dtype)
        return array.reshape(()) if scalar else array
    if not partial or scalar:
        return None
    parts = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        parts[i] = None if v is None else np.array(v, dtype=dtype)
    return parts

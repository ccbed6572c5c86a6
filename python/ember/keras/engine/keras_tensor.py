"""Symbolic tensors of the functional API, and the masks that ride on real tensors.

``tf.keras.Input(shape)`` returns a ``KerasTensor``: a shape and a dtype with no value, which remembers the
layer call that made it (``_keras_history``). Calling a layer on KerasTensors records a ``Node`` (the
layer and its arguments) and returns new KerasTensors; ``Model(inputs, outputs)`` walks these back from its
outputs and, when called on real tensors, replays the nodes in order.

Keras sets ``tensor._keras_mask`` on a layer's outputs (Embedding(mask_zero=True) and what follows it).
ember's Tensor has no instance dictionary, so the masks live in a side table keyed by the tensor's id and
dropped when the tensor dies; ``_keras_mask`` is a property installed on ember's Tensor class that reads
and writes that table (AttributeError when a tensor has no mask, as Keras' getattr(t, "_keras_mask",
None) expects).
"""

import weakref

from ember import dtypes
from ember.framework.tensor import Tensor
from ember.framework.tensor_shape import TensorShape

_masks = {}  # id(tensor) -> (weak reference to the tensor, its mask)


def get_mask(tensor):
    if isinstance(tensor, KerasTensor):
        return tensor._mask
    entry = _masks.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def set_mask(tensor, mask):
    if isinstance(tensor, KerasTensor):
        tensor._mask = mask
        return
    key = id(tensor)
    if mask is None:
        _masks.pop(key, None)
        return
    _masks[key] = (weakref.ref(tensor, lambda _, key=key: _masks.pop(key, None)), mask)


def _mask_get(self):
    mask = get_mask(self)
    if mask is None:
        raise AttributeError("'Tensor' object has no attribute '_keras_mask'")
    return mask


def _mask_set(self, mask):
    set_mask(self, mask)


Tensor._keras_mask = property(_mask_get, _mask_set, lambda self: set_mask(self, None))


class KerasTensor:
    """A symbolic input or output of a functional model: shape, dtype and the layer call that made it."""

    def __init__(self, shape, dtype=dtypes.float32, name=None, keras_history=None, sparse=False):
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name
        self._keras_history = keras_history  # (layer, node_index, tensor_index)
        self._mask = None
        self.sparse = sparse

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    @property
    def ndim(self):
        return self._shape.rank

    def get_shape(self):
        return self._shape

    @property
    def _keras_mask(self):
        if self._mask is None:
            raise AttributeError("'KerasTensor' object has no attribute '_keras_mask'")
        return self._mask

    @property
    def node(self):
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __repr__(self):
        layer = self._keras_history[0].name if self._keras_history else None
        shape = tuple(self._shape.as_list()) if self._shape.rank is not None else None
        created = f" (created by layer '{layer}')" if layer else ""
        return f"<KerasTensor: shape={shape} dtype={self._dtype.name}{created}>"

    def __str__(self):
        return repr(self)

    def __len__(self):
        raise TypeError("Keras symbolic inputs/outputs do not implement `__len__`. You may be trying to pass "
                        "Keras symbolic inputs/outputs to an ember API that does not register dispatching.")

    def __bool__(self):
        raise TypeError("Using a symbolic KerasTensor as a Python `bool` is not allowed: its value is only "
                        "known when the model is called.")

    def __array__(self, *args, **kwargs):
        raise TypeError(f"You are passing {self}, an intermediate Keras symbolic input/output, to an API that "
                        "needs a value (NumPy). Wrap the computation in a Keras layer (e.g. Lambda).")

    # Python operators on KerasTensors become TFOpLambda layers, named as tf_keras names them.
    def _op(self, symbol, *others, reflected=False):
        from ember.keras.layers.core import SlicingOpLambda, TFOpLambda

        layer_class = SlicingOpLambda if symbol == "tf.__operators__.getitem" else TFOpLambda
        layer = layer_class(operator_function(symbol), symbol)
        if reflected:  # other + self: Keras calls the op with the operands in the written order
            return layer(others[0], self)
        return layer(self, *others)

    def __add__(self, other):
        return self._op("tf.__operators__.add", other)

    def __radd__(self, other):
        return self._op("tf.__operators__.add", other, reflected=True)

    def __sub__(self, other):
        return self._op("tf.math.subtract", other)

    def __rsub__(self, other):
        return self._op("tf.math.subtract", other, reflected=True)

    def __mul__(self, other):
        return self._op("tf.math.multiply", other)

    def __rmul__(self, other):
        return self._op("tf.math.multiply", other, reflected=True)

    def __truediv__(self, other):
        return self._op("tf.math.truediv", other)

    def __rtruediv__(self, other):
        return self._op("tf.math.truediv", other, reflected=True)

    def __floordiv__(self, other):
        return self._op("tf.compat.v1.floor_div", other)  # tf_keras' name: TF's // calls the v1 function

    def __rfloordiv__(self, other):
        return self._op("tf.compat.v1.floor_div", other, reflected=True)

    def __mod__(self, other):
        return self._op("tf.math.floormod", other)

    def __rmod__(self, other):
        return self._op("tf.math.floormod", other, reflected=True)

    def __pow__(self, other):
        return self._op("tf.math.pow", other)

    def __rpow__(self, other):
        return self._op("tf.math.pow", other, reflected=True)

    def __matmul__(self, other):
        return self._op("tf.linalg.matmul", other)

    def __rmatmul__(self, other):
        return self._op("tf.linalg.matmul", other, reflected=True)

    def __neg__(self):
        return self._op("tf.math.negative")

    def __abs__(self):
        return self._op("tf.math.abs")

    def __invert__(self):
        return self._op("tf.math.logical_not")

    def __and__(self, other):
        return self._op("tf.math.logical_and", other)

    def __or__(self, other):
        return self._op("tf.math.logical_or", other)

    def __xor__(self, other):
        return self._op("tf.math.logical_xor", other)

    def __lt__(self, other):
        return self._op("tf.math.less", other)

    def __le__(self, other):
        return self._op("tf.math.less_equal", other)

    def __gt__(self, other):
        return self._op("tf.math.greater", other)

    def __ge__(self, other):
        return self._op("tf.math.greater_equal", other)

    def __getitem__(self, key):
        return self._op("tf.__operators__.getitem", key)


def _operators():
    """TensorFlow API name -> the function a Python operator on tensors runs."""
    import operator

    from ember.ops import math_ops

    return {"tf.__operators__.add": operator.add, "tf.math.subtract": math_ops.subtract,
            "tf.math.multiply": math_ops.multiply, "tf.math.truediv": operator.truediv,
            "tf.compat.v1.floor_div": operator.floordiv, "tf.math.floormod": operator.mod, "tf.math.pow": math_ops.pow,
            "tf.linalg.matmul": math_ops.matmul, "tf.math.negative": math_ops.negative, "tf.math.abs": math_ops.abs,
            "tf.math.logical_not": operator.invert, "tf.math.logical_and": operator.and_,
            "tf.math.logical_or": operator.or_, "tf.math.logical_xor": operator.xor, "tf.math.less": operator.lt,
            "tf.math.less_equal": operator.le, "tf.math.greater": operator.gt, "tf.math.greater_equal": operator.ge,
            "tf.__operators__.getitem": operator.getitem}


_OPERATORS = {}


def operator_function(symbol):
    """The function of an operator's API name, or None."""
    if not _OPERATORS:
        _OPERATORS.update(_operators())
    return _OPERATORS.get(symbol)


def dispatch_keras_tensors(api_function, args, kwargs, error):
    """The fallback of ember's op functions (ember/util/dispatch.py): an op called on Keras symbolic tensors
    becomes a TFOpLambda layer of the functional model; any other failure keeps its error."""
    from ember.util import nest

    if not any(isinstance(x, KerasTensor) for x in nest.flatten((args, kwargs))):
        return NotImplemented
    from ember.keras.layers.core import TFOpLambda

    return TFOpLambda(api_function, api_function._ember_api_name)(*args, **kwargs)


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)

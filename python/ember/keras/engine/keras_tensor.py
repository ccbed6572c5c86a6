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

    # Arithmetic on KerasTensors becomes a Lambda layer of the graph, as Keras' TFOpLambda does.
    def _op(self, fn, name, *others):
        from ember.keras.layers.core import _OpLambda

        return _OpLambda(fn, name)(self, *others)

    def __add__(self, other):
        return self._op(lambda a, b: a + b, "add", other)

    def __radd__(self, other):
        return self._op(lambda a, b: b + a, "add", other)

    def __sub__(self, other):
        return self._op(lambda a, b: a - b, "subtract", other)

    def __rsub__(self, other):
        return self._op(lambda a, b: b - a, "subtract", other)

    def __mul__(self, other):
        return self._op(lambda a, b: a * b, "multiply", other)

    def __rmul__(self, other):
        return self._op(lambda a, b: b * a, "multiply", other)

    def __truediv__(self, other):
        return self._op(lambda a, b: a / b, "truediv", other)

    def __rtruediv__(self, other):
        return self._op(lambda a, b: b / a, "truediv", other)

    def __pow__(self, other):
        return self._op(lambda a, b: a ** b, "pow", other)

    def __neg__(self):
        return self._op(lambda a: -a, "negative")

    def __matmul__(self, other):
        from ember.ops import math_ops

        return self._op(math_ops.matmul, "matmul", other)

    def __getitem__(self, key):
        return self._op(lambda a: a[key], "getitem")


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)

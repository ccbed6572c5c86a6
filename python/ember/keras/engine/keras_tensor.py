"""Symbolic tensors of the functional API, and the masks that ride on real tensors.

``tf.keras.Input(shape)`` returns a ``KerasTensor``: a shape and a dtype with no value, which remembers the
layer call that made it (``_keras_history``). Calling a layer on KerasTensors records a ``Node`` (the
layer and its arguments) and returns new KerasTensors; ``Model(inputs, outputs)`` walks these back from its
outputs and, when called on real tensors, replays the nodes in order.

Keras sets ``tensor._keras_mask`` on a layer's outputs (Embedding(mask_zero=True) and what follows it), and
``tensor._keras_logits`` on what its sigmoid and softmax activations return (the cross-entropy losses then
use the logits, as tf_keras does). ember's Tensor has no instance dictionary, so these live in side tables
keyed by the tensor's id and dropped when the tensor dies (framework/side_attributes.py); each is a property installed on ember's Tensor
class that reads and writes its table (AttributeError when a tensor has none, as Keras' getattr(t,
"_keras_mask", None) and hasattr(t, "_keras_logits") expect).
"""

from ember import dtypes
from ember.framework.side_attributes import SideAttribute
from ember.framework.tensor import Tensor
from ember.framework.tensor_shape import TensorShape


class _SideAttribute(SideAttribute):
    """A side attribute of ember tensors that a KerasTensor (a plain Python object) keeps as an attribute."""

    def __init__(self, name, keras_attribute):
        super().__init__(name)
        self.keras_attribute = keras_attribute

    def get(self, tensor):
        if isinstance(tensor, KerasTensor):
            return getattr(tensor, self.keras_attribute, None)
        return super().get(tensor)

    def set(self, tensor, value):
        if isinstance(tensor, KerasTensor):
            setattr(tensor, self.keras_attribute, value)
        else:
            super().set(tensor, value)

    def install(self):
        """Tensor.<name>: this attribute, an AttributeError where a tensor has none."""
        def getter(tensor):
            value = self.get(tensor)
            if value is None:
                raise AttributeError(f"'Tensor' object has no attribute '{self.name}'")
            return value

        setattr(Tensor, self.name, property(getter, self.set, lambda tensor: self.set(tensor, None)))


_mask = _SideAttribute("_keras_mask", "_mask")
_mask.install()
_logits = _SideAttribute("_keras_logits", "_logits")
_logits.install()


def get_mask(tensor):
    return _mask.get(tensor)


def set_mask(tensor, mask):
    _mask.set(tensor, mask)


def get_logits(tensor):
    """The logits a Keras sigmoid or softmax activation made ``tensor`` from, or None."""
    return _logits.get(tensor) if isinstance(tensor, (Tensor, KerasTensor)) else None


def set_logits(tensor, logits):
    _logits.set(tensor, logits)


class KerasTensor:
    """A symbolic input or output of a functional model: shape, dtype and the layer call that made it."""

    def __init__(self, shape, dtype=dtypes.float32, name=None, keras_history=None, sparse=False):
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name
        self._keras_history = keras_history  # (layer, node_index, tensor_index)
        self._mask = None
        self.sparse = sparse
        # What is known of the value of an int32 scalar or vector (tf.shape(x) of an Input (None, 3) is
        # [None, 3]): the next layer's trace sees it, so tf.fill(tf.shape(x), 1.) keeps the shape (None, 3).
        self._inferred_value = None

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
        inferred = f" inferred_value={self._inferred_value}" if self._inferred_value is not None else ""
        return f"<KerasTensor: shape={shape} dtype={self._dtype.name}{inferred}{created}>"

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

    # Python operators on KerasTensors become TFOpLambda layers, named as tf_keras names them. A reflected
    # operator (1 - x) is the op with the constant first, as TensorFlow calls it: the node's arguments, and
    # so the model's config, are tf_keras' (the constant is its first input, the KerasTensor its `y`).
    def _op(self, symbol, *others, reflected=False):
        from ember.keras.layers.core import SlicingOpLambda, TFOpLambda

        if symbol == "tf.__operators__.getitem":
            return SlicingOpLambda(operator_function(symbol), symbol)(self, *others)
        # TensorFlow's operators pass name=None, and a reflected one converts its constant to the tensor's
        # dtype first (1 - x records 1.0): the recorded arguments are the same
        args = (_as_operand(others[0], self.dtype), self) if reflected else (self,) + others
        return TFOpLambda(operator_function(symbol), symbol)(*args, name=None)

    def __iter__(self):
        raise TypeError(f"Iterating over a symbolic KerasTensor is not allowed: {self}")

    # NumPy scalars and arrays on the left (np.float32(1) - x) defer to the KerasTensor's reflected operators.
    __array_ufunc__ = None

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
        # As tf_keras records them: slices as {"start", "stop", "step"} dicts, so the config is JSON
        return self._op("tf.__operators__.getitem", _slices_to_dicts(key))


def _as_operand(value, dtype):
    """A constant left of an operator, as a tensor of the KerasTensor's dtype when it converts to one."""
    import numpy as np

    from ember.framework.tensor import convert_to_tensor

    if not isinstance(value, (int, float, np.ndarray, np.generic)) or isinstance(value, bool):
        return value
    try:
        return convert_to_tensor(value, dtype=dtype)
    except (TypeError, ValueError):
        return value


def _binary(name, op):
    """An operator as a function of (x, y, name), the parameters TensorFlow's operator functions have (a
    node's arguments are recorded by these names)."""
    def function(x, y, name=None):
        return op(x, y)

    function.__name__ = name
    return function


def _matmul(a, b, name=None):  # tf.linalg.matmul's parameter names
    return a @ b


def _unary(name, op):
    def function(x, name=None):
        return op(x)

    function.__name__ = name
    return function


def _slices_to_dicts(key):
    if isinstance(key, slice):
        return {"start": key.start, "stop": key.stop, "step": key.step}
    if isinstance(key, (list, tuple)):
        return type(key)(_slices_to_dicts(k) for k in key)
    return key


def _dicts_to_slices(key):
    if isinstance(key, dict) and set(key) == {"start", "stop", "step"}:
        return slice(key["start"], key["stop"], key["step"])
    if isinstance(key, dict) and key.get("class_name") == "__ellipsis__":  # ... read back from JSON
        return Ellipsis
    if isinstance(key, list):  # a config read back from JSON has lists where the call had tuples
        return tuple(_dicts_to_slices(k) for k in key)
    if isinstance(key, tuple):
        return tuple(_dicts_to_slices(k) for k in key)
    return key


def _getitem(tensor, slice_spec, var=None):
    return tensor[_dicts_to_slices(slice_spec)]


def _operators():
    """TensorFlow API name -> the function a Python operator on tensors runs."""
    import operator

    binary = {"tf.__operators__.add": operator.add, "tf.math.subtract": operator.sub,
              "tf.math.multiply": operator.mul, "tf.math.truediv": operator.truediv,
              "tf.compat.v1.floor_div": operator.floordiv, "tf.math.floormod": operator.mod,
              "tf.math.pow": operator.pow,
              "tf.math.logical_and": operator.and_, "tf.math.logical_or": operator.or_,
              "tf.math.logical_xor": operator.xor, "tf.math.less": operator.lt, "tf.math.less_equal": operator.le,
              "tf.math.greater": operator.gt, "tf.math.greater_equal": operator.ge}
    unary = {"tf.math.negative": operator.neg, "tf.math.abs": operator.abs,
             "tf.math.logical_not": operator.invert}
    table = {symbol: _binary(symbol.rsplit(".", 1)[-1], op) for symbol, op in binary.items()}
    table["tf.linalg.matmul"] = _matmul
    table.update({symbol: _unary(symbol.rsplit(".", 1)[-1], op) for symbol, op in unary.items()})
    table["tf.__operators__.getitem"] = _getitem
    return table


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

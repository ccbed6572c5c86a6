"""``tf.keras.Input`` and ``InputLayer``: the entry points of a functional model.

``Input(shape=(3,))`` makes an InputLayer (named "input_1", "input_2", ... as Keras 2 names them) and
returns its output: a KerasTensor of shape ``(batch_size,) + shape``.
"""

from ember import dtypes
from ember.framework.tensor_shape import TensorShape
from ember.keras.engine import base_layer
from ember.keras.engine.keras_tensor import KerasTensor
from ember.keras.engine.node import Node


class InputLayer(base_layer.Layer):
    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None, sparse=None, name=None,
                 ragged=None, type_spec=None, **kwargs):
        batch_input_shape = kwargs.pop("batch_input_shape", None) or kwargs.pop("batch_shape", None)
        if kwargs.pop("optional", False):
            raise NotImplementedError("ember.keras: optional inputs are not implemented")
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {list(kwargs)}")
        if sparse or ragged:
            raise NotImplementedError("ember.keras: sparse and ragged inputs are not implemented")
        if input_tensor is not None:
            raise NotImplementedError("ember.keras: Input(tensor=...) is not implemented; pass shape and dtype")
        if input_shape is not None and batch_input_shape is not None:
            raise ValueError("Only provide the input_shape OR batch_input_shape argument to InputLayer, not both "
                             f"at the same time. Received: input_shape={input_shape}, "
                             f"batch_input_shape={batch_input_shape}")
        if name is None:
            base_layer._name_counts["input"] += 1
            name = f"input_{base_layer._name_counts['input']}"
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` argument. Note "
                                 "that `shape` does not include the batch dimension.")
            input_shape = (input_shape,) if isinstance(input_shape, int) else tuple(input_shape)
            batch_input_shape = (batch_size,) + input_shape
        batch_input_shape = tuple(TensorShape(batch_input_shape).as_list())
        super().__init__(name=name, dtype=dtype)
        self._batch_input_shape = batch_input_shape
        self.built = True
        self.sparse, self.ragged = False, False
        self.is_placeholder = True
        output = KerasTensor(batch_input_shape, self._dtype, name=name, keras_history=(self, 0, 0))
        self._ember_inbound_nodes.append(Node(self, (), {}, output))

    @property
    def output_shape(self):
        return [self._batch_input_shape]  # tf_keras reports an InputLayer's shape as a one-element list

    def get_config(self):
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype, "sparse": False,
                "ragged": False, "name": self.name}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None, ragged=None,  # noqa: N802
          type_spec=None, **kwargs):
    """A symbolic input of a functional model: ``Input(shape=(28, 28))`` has shape (None, 28, 28)."""
    batch_shape = kwargs.pop("batch_shape", None) or kwargs.pop("batch_input_shape", None)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments to Input: {list(kwargs)}")
    if shape is not None and batch_shape is not None:
        raise ValueError("Only provide the `shape` OR `batch_shape` argument to Input, not both at the same time.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype or dtypes.float32, name=name,
                       sparse=sparse, ragged=ragged, input_tensor=tensor, type_spec=type_spec,
                       batch_input_shape=batch_shape)
    return layer._inbound_nodes[0].outputs

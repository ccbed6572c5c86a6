"""``tf.keras.Sequential``: a stack of layers, each called on the previous one's output.

As in Keras 2, once the input shape is known (``input_shape=`` on the first layer, an ``Input``/InputLayer
first, ``build(input_shape)``, or the first call on data) the model becomes a functional graph: an
InputLayer named "<first layer>_input" and one node per layer, so ``summary()`` shows output shapes and
weights are saved as a functional model's. ``model.layers`` never lists that InputLayer.
"""

from ember.framework.tensor_shape import TensorShape
from ember.util import nest
from ember.keras.engine import base_layer
from ember.keras.engine.input_layer import Input, InputLayer
from ember.keras.engine.keras_tensor import KerasTensor
from ember.keras.engine.training import Model


class Sequential(Model):
    def __init__(self, layers=None, name=None):
        if name is None:
            name = base_layer.unique_object_name("sequential")
        super().__init__(name=name)
        self._ember_stack = []
        self._ember_input_layer = None
        self._ember_outputs = []  # the KerasTensor after each layer, the Input first, once the graph exists
        if layers:
            if not isinstance(layers, (list, tuple)):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    @property
    def layers(self):
        return list(self._ember_stack)

    def _sublayers(self):
        return base_layer._dedupe(list(self._ember_stack) + base_layer.Layer._sublayers(self))

    def add(self, layer):
        if isinstance(layer, KerasTensor):  # Sequential.add(Input(...))
            layer = layer._keras_history[0]
        if not isinstance(layer, base_layer.Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: layer={layer} of type "
                            f"{type(layer)}.")
        if isinstance(layer, InputLayer):
            if self._ember_stack or self._ember_input_layer is not None:
                raise ValueError("An InputLayer can only be the first layer of a Sequential model")
            self._ember_input_layer = layer
            return
        if any(layer.name == other.name for other in self._ember_stack):
            raise ValueError(f'All layers added to a Sequential model should have unique names. Name "{layer.name}" '
                             "is already the name of a layer in this model. Update the `name` argument to pass a "
                             "unique name.")
        self._ember_stack.append(layer)
        self._ember_functions = {}
        if self._ember_input_layer is None and len(self._ember_stack) == 1 and layer._batch_input_shape is not None:
            self._ember_input_layer = InputLayer(batch_input_shape=layer._batch_input_shape, dtype=layer.dtype,
                                                 name=f"{layer.name}_input")
        if self._ember_input_layer is None:
            return
        if self._ember_graph is None:
            self._build_graph()
            return
        # Keras 2 calls only the new layer on the previous output, so older nodes are left as they were.
        self._ember_outputs.append(self._call_symbolic(layer, self._ember_outputs[-1]))
        self._init_graph_network(self._ember_graph.nested_inputs, self._ember_outputs[-1])

    def pop(self):
        if not self._ember_stack:
            raise TypeError("There are no layers in the model.")
        layer = self._ember_stack.pop()
        self._ember_functions = {}
        if self._ember_graph is not None:
            self._ember_outputs.pop()
            if len(self._ember_outputs) > 1:
                self._init_graph_network(self._ember_graph.nested_inputs, self._ember_outputs[-1])
            else:
                self._ember_graph = None
                self._ember_outputs = []
                self.built = False
        return layer

    @staticmethod
    def _call_symbolic(layer, x):
        y = layer(x)
        if len(nest.flatten(y)) != 1:
            raise ValueError("All layers in a Sequential model should have a single output tensor. For multi-output "
                             "layers, use the functional API.")
        return nest.flatten(y)[0]

    def _build_graph(self):
        """Makes the functional graph over the whole stack (the input shape has just become known)."""
        x = self._ember_input_layer._inbound_nodes[0].outputs
        self._ember_outputs = [x]
        for layer in self._ember_stack:
            self._ember_outputs.append(self._call_symbolic(layer, self._ember_outputs[-1]))
        if self._ember_stack:
            self._init_graph_network(x, self._ember_outputs[-1])

    def build(self, input_shape=None):
        if self._ember_graph is not None:
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        if self._ember_input_layer is None:
            name = f"{self._ember_stack[0].name}_input" if self._ember_stack else None
            self._ember_input_layer = InputLayer(batch_input_shape=tuple(TensorShape(input_shape).as_list()),
                                                 name=name)
        self._build_graph()
        self.built = True

    def _maybe_build(self, inputs):
        if self._ember_graph is None and self._ember_input_layer is None and self._ember_stack:
            shape = TensorShape(getattr(inputs, "shape", None))
            if shape.rank is not None and not nest.is_nested(inputs):
                # From the first data: the graph's batch dimension is left unknown (tf_keras first fixes it to
                # this batch's size, then relaxes it when another size comes).
                self._ember_input_layer = InputLayer(batch_input_shape=[None] + shape.as_list()[1:],
                                                     dtype=inputs.dtype, name=f"{self._ember_stack[0].name}_input")
                self._build_graph()
        if self._ember_graph is not None:
            self.built = True
        return super()._maybe_build(inputs)

    def call(self, inputs, training=None, mask=None):
        if self._ember_graph is None and self._ember_input_layer is None and self._ember_stack:
            shape = TensorShape(getattr(inputs, "shape", None))
            if shape.rank is not None and not nest.is_nested(inputs):
                # Keras 2 builds the graph from the first data it sees (batch dimension left unknown).
                self._ember_input_layer = InputLayer(batch_input_shape=[None] + shape.as_list()[1:],
                                                     dtype=inputs.dtype, name=f"{self._ember_stack[0].name}_input")
                self._build_graph()
        if self._ember_graph is not None:
            return self._ember_graph.run(inputs, self.name, mask)
        x = inputs
        for layer in self._ember_stack:
            x = layer(x)
        return x

    @property
    def input_spec(self):
        return self.__dict__.get("_ember_seq_input_spec")

    @input_spec.setter
    def input_spec(self, value):
        self.__dict__["_ember_seq_input_spec"] = value

    def get_config(self):
        layers = []
        if self._ember_input_layer is not None:
            layers.append(_serialize(self._ember_input_layer))
        layers.extend(_serialize(layer) for layer in self._ember_stack)
        return {"name": self.name, "layers": layers}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import layers as layers_mod

        model = cls(name=config.get("name"))
        for layer_config in config["layers"]:
            model.add(layers_mod.deserialize(layer_config, custom_objects))
        return model

    _from_config_with_custom_objects = from_config


def _serialize(layer):
    return {"module": "keras.layers", "class_name": _registered_name(layer), "config": layer.get_config(),
            "registered_name": None}


def _registered_name(layer):
    """The name deserialization finds the layer's class by: its registered "package>name", else the class's."""
    from ember.keras.utils.object_registration import get_registered_name

    return get_registered_name(type(layer))

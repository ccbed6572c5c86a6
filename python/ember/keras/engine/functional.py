"""The functional API's graph: ``Model(inputs, outputs)`` over the Nodes that KerasTensors recorded.

``GraphNetwork`` finds the nodes between the inputs and the outputs and orders them as Keras 2 does (by
depth, inputs first; within a depth, by first appearance walking back from the outputs), which fixes the
order of ``model.layers``, of the weights and of ``summary()``'s rows. ``run`` replays the nodes on real
tensors: each layer is called as usual, so training mode and masks flow as in a subclassed model.
"""

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import math_ops
from ember.util import nest
from ember.keras.engine import input_spec as input_spec_lib
from ember.keras.engine.input_layer import InputLayer
from ember.keras.engine.keras_tensor import KerasTensor, get_mask, set_mask


class GraphNetwork:
    def __init__(self, inputs, outputs, model_name):
        if isinstance(inputs, dict):
            nested_inputs = dict(inputs)
        elif isinstance(inputs, (list, tuple)):
            nested_inputs = list(inputs)
        else:
            nested_inputs = inputs
        self.nested_inputs = nested_inputs
        self.nested_outputs = list(outputs) if isinstance(outputs, tuple) else outputs
        self.inputs = nest.flatten(nested_inputs)
        self.outputs = nest.flatten(self.nested_outputs)
        for x in self.inputs:
            if not isinstance(x, KerasTensor):
                raise ValueError(f"Input tensors to a Functional model must come from `tf.keras.Input`. Received "
                                 f"inputs={x} (missing previous layer metadata).")
            layer = x._keras_history[0] if x._keras_history else None
            if not isinstance(layer, InputLayer):
                raise ValueError(f"Input tensors to a Functional model must come from `tf.keras.Input`. Received "
                                 f"inputs={x} (created by layer '{layer.name if layer else None}', not an "
                                 "InputLayer).")
        for x in self.outputs:
            if not isinstance(x, KerasTensor):
                raise ValueError(f"Output tensors of a Functional model must be the output of a Keras Layer (thus "
                                 f"holding past layer metadata). Found: {x} (model {model_name})")
        self.input_layers = [x._keras_history[0] for x in self.inputs]
        self.output_layers = [x._keras_history[0] for x in self.outputs]
        self._map_graph()

    def _map_graph(self):
        finished, in_progress, order = set(), set(), []
        layer_indices = {}

        def visit(tensor):
            layer, node_index, _ = tensor._keras_history
            node = layer._inbound_nodes[node_index]
            if id(node) in finished:
                return
            if id(node) in in_progress:
                raise ValueError(f"Tensor {tensor} from layer '{layer.name}' is part of a cycle.")
            layer_indices.setdefault(id(layer), len(layer_indices))
            in_progress.add(id(node))
            if not node.is_input and not any(x is tensor for x in self.inputs):
                for x in node.keras_inputs:
                    visit(x)
            finished.add(id(node))
            in_progress.discard(id(node))
            order.append(node)

        for x in self.outputs:
            visit(x)
        node_depth, layer_depth, layers_by_id = {}, {}, {}
        for node in reversed(order):
            depth = node_depth.setdefault(id(node), 0)
            depth = max(depth, layer_depth.get(id(node.layer), 0))
            layer_depth[id(node.layer)] = depth
            node_depth[id(node)] = depth
            layers_by_id[id(node.layer)] = node.layer
            for x in node.keras_inputs:
                parent = x.node
                node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
        depths = sorted(set(node_depth.values()), reverse=True)
        self.nodes_in_order = []
        self.nodes_by_depth = {}
        for depth in depths:
            self.nodes_by_depth[depth] = [n for n in order if node_depth[id(n)] == depth]
            self.nodes_in_order.extend(self.nodes_by_depth[depth])
        self.layers = []
        for depth in depths:
            at_depth = [layers_by_id[i] for i, d in layer_depth.items() if d == depth]
            self.layers.extend(sorted(at_depth, key=lambda l: layer_indices[id(l)]))
        # Inputs the outputs do not depend on are still inputs of the model (and layers of it).
        for layer in self.input_layers:
            if all(layer is not l for l in self.layers):
                self.layers.insert(0, layer)
        available = {id(x) for x in self.inputs}
        for node in self.nodes_in_order:
            if node.is_input:
                continue
            missing = [x for x in node.keras_inputs if id(x) not in available]
            if missing:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {missing[0]} at layer "
                                 f'"{missing[0]._keras_history[0].name}". The following previous layers were '
                                 f"accessed without issue: {[l.name for l in self.layers[:3]]}")
            available.update(id(x) for x in nest.flatten(node.outputs))
        self.node_ids = {id(n) for n in self.nodes_in_order}

    def input_specs(self):
        return [input_spec_lib.InputSpec(shape=x.shape, allow_last_axis_squeeze=True, name=x.name)
                for x in self.inputs]

    def flatten_call_inputs(self, inputs, model_name):
        """The call's inputs as a flat list in the order of ``self.inputs`` (a dict is matched by name)."""
        if isinstance(inputs, dict) and not isinstance(self.nested_inputs, dict):
            names = [x._keras_history[0].name for x in self.inputs]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(f"Missing data for input(s) {missing} of model {model_name}. Expected the following "
                                 f"keys: {names}")
            return [inputs[n] for n in names]
        flat = nest.flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f'Layer "{model_name}" expects {len(self.inputs)} input(s), but it received '
                             f"{len(flat)} input tensors. Inputs received: {flat}")
        return flat

    def run(self, inputs, model_name, mask=None):
        flat = self.flatten_call_inputs(inputs, model_name)
        masks = nest.flatten(mask) if mask is not None else [None] * len(flat)
        values = {}
        for kt, value, m in zip(self.inputs, flat, masks):
            value = _conform(value, kt)
            if m is not None:
                set_mask(value, m)
            values[id(kt)] = value
        for node in self.nodes_in_order:
            if node.is_input:
                continue
            results = node.replay(values)
            for kt, value in zip(nest.flatten(node.outputs), results):
                values[id(kt)] = value
        return nest.pack_sequence_as(self.nested_outputs, [values[id(x)] for x in self.outputs])


def _conform(value, keras_tensor):
    """Casts to the Input's dtype and adds or drops a trailing axis of 1, as Keras 2 conforms inputs."""
    value = convert_to_tensor(value) if not isinstance(value, Tensor) else value
    mask = get_mask(value)
    if value.dtype != keras_tensor.dtype:
        value = math_ops.cast(value, keras_tensor.dtype)
    rank, want = value.shape.rank, keras_tensor.shape.rank
    if rank is not None and want is not None and rank == want + 1 and value.shape[-1] == 1:
        from ember.ops import array_ops

        value = array_ops.squeeze(value, axis=-1)
    elif rank is not None and want is not None and rank + 1 == want and keras_tensor.shape[-1] == 1:
        from ember.ops import array_ops

        value = array_ops.expand_dims(value, -1)
    if mask is not None:
        set_mask(value, mask)
    return value


def is_float(dtype):
    return dtypes.as_dtype(dtype).is_floating

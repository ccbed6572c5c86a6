"""A ``Node``: one call of a layer on KerasTensors, recorded by the functional API.

``call_symbolic`` is what ``Layer.__call__`` does with symbolic inputs: it builds the layer from their
shapes, traces the real ``__call__`` once on placeholders in a scratch ember.function (so output shapes,
dtypes and masks come from the code that will run, whatever the layer), and returns KerasTensors that point
back at the new Node. A model replays nodes with ``Node.replay``.
"""

from ember.framework.tensor import Tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec
from ember.util import nest
from ember.keras.engine import input_spec as input_spec_lib
from ember.keras.engine.keras_tensor import KerasTensor, get_mask, set_mask


class Node:
    def __init__(self, layer, call_args=(), call_kwargs=None, outputs=None):
        self.layer = layer
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        self.outputs = outputs
        self.keras_inputs = [x for x in nest.flatten((self.call_args, self.call_kwargs))
                             if isinstance(x, KerasTensor)]
        self.is_input = not self.keras_inputs

    @property
    def input_tensors(self):
        if self.is_input:
            return self.outputs
        return self.call_args[0]

    @property
    def output_tensors(self):
        return self.outputs

    @property
    def parent_nodes(self):
        return [x.node for x in self.keras_inputs if x._keras_history is not None]

    @property
    def inbound_layers(self):
        layers = [x._keras_history[0] for x in self.keras_inputs]
        return layers[0] if len(layers) == 1 else layers

    def replay(self, values):
        """Calls the layer with each KerasTensor replaced by ``values[id(kt)]``; returns the flat outputs."""
        def substitute(x):
            return values[id(x)] if isinstance(x, KerasTensor) else x

        args = nest.map_structure(substitute, self.call_args)
        kwargs = nest.map_structure(substitute, self.call_kwargs)
        return nest.flatten(self.layer(*args, **kwargs))


def _spec(x):
    return TensorSpec(x.shape, x.dtype)


# Note [Inferred values of KerasTensors]
# Each layer call is traced in its own scratch function, so the partial value that ember's shape inference
# propagates through Shape, StridedSlice, Pack, ... would stop at the layer's boundary: tf.shape(x) and
# tf.fill(that, 1.) are two layers. An int32 scalar or vector output keeps what its trace knows of its
# value (the static shape of ones(shape=value)), and the next trace receives it as the Shape of a
# placeholder of that shape, which carries the same partial value; as tf_keras does.
_MAX_INFERRED_RANK = 254


def _input_spec(x):
    if x._inferred_value is not None:
        return TensorSpec(x._inferred_value if x.shape.rank == 1 else [x._inferred_value[0]], x.dtype)
    return _spec(x)


def _with_inferred_value(placeholder, x):
    if x._inferred_value is None:
        return placeholder
    from ember.ops import array_ops

    value = array_ops.shape(placeholder, out_type=x.dtype)
    return value if x.shape.rank == 1 else value[0]


def _inferred_value(t):
    from ember import dtypes
    from ember.ops import array_ops

    if not isinstance(t, Tensor) or t.dtype != dtypes.int32 or t.shape.rank not in (0, 1):
        return None
    if t.shape.rank == 1 and (t.shape[0] is None or t.shape[0] > _MAX_INFERRED_RANK):
        return None
    try:  # a value no shape can have (a negative entry) is no shape information
        shape = array_ops.ones(array_ops.reshape(t, [1]) if t.shape.rank == 0 else t).shape
    except Exception:  # noqa: BLE001 - any shape function error means "nothing known"
        return None
    if shape.rank is None:
        return None
    return shape.as_list()


def call_symbolic(layer, inputs, rest, kwargs):
    """Layer.__call__ on KerasTensors: records a Node and returns KerasTensors of the outputs."""
    from ember.polymorphic_function import function

    input_spec_lib.assert_input_compatibility(layer.input_spec, inputs, layer.name)
    structure = (inputs, rest, kwargs)
    flat = nest.flatten(structure)
    keras_inputs = [x for x in flat if isinstance(x, KerasTensor)]
    masked = [x for x in keras_inputs if x._mask is not None]
    layer._maybe_build(inputs)

    def trace(*placeholders):
        it = iter(placeholders[:len(keras_inputs)])
        mask_it = iter(placeholders[len(keras_inputs):])
        by_id = {}
        for kt in keras_inputs:
            by_id[id(kt)] = _with_inferred_value(next(it), kt)
        for kt in masked:
            set_mask(by_id[id(kt)], next(mask_it))
        values = nest.pack_sequence_as(structure, [by_id[id(x)] if isinstance(x, KerasTensor) else x
                                                   for x in flat])
        args, more, kw = values
        outputs = layer(args, *more, **kw)
        flat_outputs = nest.flatten(outputs)
        masks = [get_mask(t) if isinstance(t, Tensor) else None for t in flat_outputs]
        inferred[:] = [_inferred_value(t) for t in flat_outputs]
        return outputs, masks

    inferred = []  # filled in by the trace: what it knows of the int32 outputs' values
    specs = [_input_spec(x) for x in keras_inputs] + [_spec(x._mask) for x in masked]
    traced = function(trace, autograph=False).get_concrete_function(*specs)
    outputs, masks = traced._structured_outputs
    node = Node(layer, (inputs,) + tuple(rest), kwargs)
    node_index = len(layer._inbound_nodes)
    flat_out = nest.flatten(outputs)
    results = []
    for i, (out, mask) in enumerate(zip(flat_out, masks)):
        if not isinstance(out, Tensor):
            raise TypeError(f"Layer {layer.name} returned {out!r}, not a tensor, when called on symbolic inputs "
                            "(the functional API needs tensors)")
        kt = KerasTensor(out.shape, out.dtype, name=f"{layer.name}/{i}" if len(flat_out) > 1 else layer.name,
                         keras_history=(layer, node_index, i))
        if isinstance(mask, Tensor):
            kt._mask = KerasTensor(mask.shape, mask.dtype)
        kt._inferred_value = inferred[i] if i < len(inferred) else None
        results.append(kt)
    packed = nest.pack_sequence_as(outputs, results)
    node.outputs = packed
    layer._inbound_nodes.append(node)
    for kt in keras_inputs:
        if kt._keras_history is not None:
            kt._keras_history[0]._outbound_nodes.append(node)
    return packed


def traced_output_shape(layer, input_shape):
    """The output shape(s) of ``layer`` on inputs of ``input_shape``, found by tracing its call."""
    from ember.polymorphic_function import function

    if isinstance(input_shape, (list, tuple)) and input_shape and all(
            isinstance(s, (list, tuple, TensorShape)) or s is None for s in input_shape) and not all(
            isinstance(s, int) or s is None for s in input_shape):
        shapes = [TensorShape(s) for s in input_shape]
    else:
        shapes = TensorShape(input_shape)
    flat = nest.flatten(shapes) if isinstance(shapes, list) else [shapes]
    dtype = layer._dtype

    def trace(*placeholders):
        inputs = list(placeholders) if isinstance(shapes, list) else placeholders[0]
        return layer(inputs)

    traced = function(trace, autograph=False).get_concrete_function(*[TensorSpec(s, dtype) for s in flat])
    return nest.map_structure(lambda t: t.shape, traced._structured_outputs)

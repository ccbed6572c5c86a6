"""``model.summary()``: the table Keras 2 prints, with its column positions, line wrapping and footer.

A Sequential model, a subclassed model, and a functional model whose graph is a chain print three columns
(65 characters wide); other functional models add "Connected to" (98 wide). A cell too long for its
column continues on the next line, broken after "),", "},", "]," or "'," when one fits, as Keras does.
"""

import numpy as np

from ember.util import nest


def _shapes(weights):
    """The shapes of the distinct weights, as Keras counts them: a weight handler (a lookup layer's
    vocabulary) has none; a dimension may be unknown (a lookup layer's idf weights, (None,))."""
    unique = {id(w): w for w in weights if hasattr(w, "shape")}.values()
    return [(w.shape.as_list(), w.dtype.size) for w in unique]


def count_params(weights):
    """Keras' count: a dimension of unknown size counts as 0."""
    return int(sum(np.prod([d or 0 for d in shape]) for shape, _ in _shapes(weights)))


def weight_memory_size(weights):
    return int(sum(np.prod(shape) * size for shape, size in _shapes(weights) if None not in shape))


def readable_memory_size(size):
    units = ["Byte", "KB", "MB", "GB", "TB", "PB"]
    for unit in units:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} {units[-1]}"


def _is_sequential_like(model):
    graph = model._ember_graph
    if type(model).__name__ == "Sequential" or graph is None:
        return True
    nodes = []
    for depth_nodes in graph.nodes_by_depth.values():
        if len(depth_nodes) > 1 or (len(depth_nodes) == 1 and len(depth_nodes[0].keras_inputs) > 1):
            return False
        nodes.extend(depth_nodes)
    node_ids = {id(n) for n in nodes}
    for layer in model.layers:
        if sum(1 for n in layer._inbound_nodes if id(n) in node_ids) > 1:
            return False
    return True


def _output_shape(layer):
    try:
        return layer.output_shape
    except AttributeError:
        return "multiple"
    except RuntimeError:
        return "?"


def _layer_range(model, layer_range):
    if layer_range is None:
        return 0, len(model.layers)
    import re

    if len(layer_range) != 2:
        raise ValueError(f"layer_range must be a list or tuple of length 2. Received: layer_range = {layer_range} "
                         f"of length {len(layer_range)}")
    names = [layer.name for layer in model.layers]
    first = [i for i, n in enumerate(names) if re.match(layer_range[0], n)]
    last = [i for i, n in enumerate(names) if re.match(layer_range[1], n)]
    if not first or not last:
        raise ValueError(f"Passed layer_names do not match the layer names in the model. Received: {layer_range}")
    if first[0] > last[-1]:
        raise ValueError("layer_range[0] should come before layer_range[1] in the model.")
    return first[0], last[-1] + 1


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                  layer_range=None):
    if print_fn is None:
        print_fn = print
    sequential_like = _is_sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = list(positions or [0.45, 0.85, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = list(positions or [0.3, 0.6, 0.70, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    relevant = set()
    if not sequential_like:
        relevant = {id(n) for nodes in model._ember_graph.nodes_by_depth.values() for n in nodes}
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        header.append("Trainable")

    def print_row(fields, nested_level=0):
        left = [str(x) for x in fields]
        while any(left):
            line = ""
            for col in range(len(left)):
                start = positions[col - 1] if col > 0 else 0
                end = positions[col]
                last_col = col == len(positions) - 1
                space = 0 if last_col else 2
                cutoff = end - start - space - (0 if last_col else 1) - (nested_level if col == 0 else 0)
                piece = left[col][:cutoff]
                breaks = [piece.find(m) + len(m) for m in ("),", "},", "],", "',") if piece.find(m) >= 0]
                if breaks:
                    cutoff = min(breaks)
                    piece = piece[:cutoff]
                if col == 0:
                    line += "|" * nested_level + " "
                line += piece + " " * space
                left[col] = left[col][cutoff:]
                if nested_level and last_col:
                    line += " " * (positions[col] - len(line) - nested_level)
                else:
                    line += " " * (positions[col] - len(line))
            line += "|" * nested_level
            print_fn(line)

    def layer_fields(layer):
        name = f"{layer.name} ({type(layer).__name__})"
        if sequential_like:
            if not layer.built and not getattr(layer, "_is_graph_network", False):
                params = "0 (unused)"
            else:
                params = layer.count_params()
            fields = [name, _output_shape(layer), params]
        else:
            connections = []
            for node in layer._inbound_nodes:
                if relevant and id(node) not in relevant:
                    continue
                for x in node.keras_inputs:
                    inbound, node_index, tensor_index = x._keras_history
                    connections.append(f"{inbound.name}[{node_index}][{tensor_index}]")
            fields = [name, _output_shape(layer), layer.count_params(), connections]
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        return fields

    def print_layer(layer, nested_level=0, is_nested_last=False):
        print_row(layer_fields(layer), nested_level)
        if expand_nested and getattr(layer, "layers", None):
            print_fn("|" * (nested_level + 1) + "\u00af" * (line_length - 2 * nested_level - 2)
                     + "|" * (nested_level + 1))
            inner = layer.layers
            for i, sub in enumerate(inner):
                print_layer(sub, nested_level + 1, i == len(inner) - 1)
            print_fn("|" * nested_level + "\u00af" * (line_length - 2 * nested_level) + "|" * nested_level)
        if not is_nested_last:
            print_fn("|" * nested_level + " " * (line_length - 2 * nested_level) + "|" * nested_level)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(header)
    print_fn("=" * line_length)
    first, last = _layer_range(model, layer_range)
    for layer in model.layers[first:last]:
        print_layer(layer)
    print_fn("=" * line_length)
    trainable = count_params(model.trainable_weights)
    non_trainable = count_params(model.non_trainable_weights)
    trainable_size = weight_memory_size(model.trainable_weights)
    non_trainable_size = weight_memory_size(model.non_trainable_weights)
    print_fn(f"Total params: {trainable + non_trainable} ({readable_memory_size(trainable_size + non_trainable_size)})")
    print_fn(f"Trainable params: {trainable} ({readable_memory_size(trainable_size)})")
    print_fn(f"Non-trainable params: {non_trainable} ({readable_memory_size(non_trainable_size)})")
    print_fn("_" * line_length)


del nest

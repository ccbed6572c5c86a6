"""``ember.graph_util``: graphs from GraphDefs.

``import_graph_def`` rebuilds a graph from a GraphDef (ember's own, or TensorFlow's when ember registers
its ops) as a FuncGraph to inspect, or to carve a function out of by tensor names::

    gd = f.get_concrete_function(tf.TensorSpec(None, tf.float32)).graph.as_graph_def()
    g = tf.graph_util.import_graph_def(gd)
    square_twice = tf.NewGraphFunction(g, inputs=["x:0"], outputs=["Square_1:0"])
    square_twice(2.0)  # 16.0
"""

from google.protobuf.message import DecodeError as _DecodeError

from ember import _C, errors
from ember.framework import graph_def as _graph_def
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.function_graph import FuncGraph, GraphTensor


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Imports ``graph_def`` (a GraphDef, or its serialized bytes) into a new graph.

    Unlike TensorFlow, which adds the nodes to the default graph, ember builds a standalone graph and
    returns it as a FuncGraph: its inputs are the Placeholders in order of appearance; it has no outputs
    (carve a function with ``ember.NewGraphFunction``). Its node names are the GraphDef's unless ``name``
    is given (TensorFlow's default "import" is not applied, since the graph stands alone), in which case
    they are prefixed with "name/".

    ``input_map`` maps tensor names of the GraphDef ("x:0", or "x" for output 0) to values: each becomes a
    Const the consumers read instead. It also binds variables: a graph that uses variables has, as
    TensorFlow writes it, one Placeholder of dtype DT_RESOURCE per variable (named after the variable), and
    each must be mapped to an ``ember.Variable`` (``input_map={"v:0": v}``), as TensorFlow binds a captured
    resource to a variable's handle. The graph reaches those variables and no others; an unbound one is an
    ``InvalidArgumentError`` at import. ``return_elements`` lists names to return instead of the graph:
    "op" for an Operation, "op:0" for a tensor. ``op_dict`` and ``producer_op_list`` are accepted for
    TensorFlow's signature and ignored.

    Errors: ``DataLossError`` for corrupt bytes, ``NotFoundError`` for an op ember does not register,
    ``InvalidArgumentError`` for a graph that does not make sense, each naming the node.
    """
    del op_dict, producer_op_list
    if isinstance(graph_def, (bytes, bytearray, memoryview)):
        data = bytes(graph_def)
    elif getattr(getattr(graph_def, "DESCRIPTOR", None), "name", None) == "GraphDef":
        data = graph_def.SerializeToString()  # ember's GraphDef, or TensorFlow's: the same bytes
    else:
        raise TypeError(f"import_graph_def: graph_def must be a GraphDef, got {type(graph_def).__name__}")
    variables = {}
    if input_map or name:  # edited in Python, then read by the C++ importer like any bytes
        graph_def = _parse(data)
        variables = _map_inputs(graph_def, input_map) if input_map else {}
        if name:
            _prefix_names(graph_def, name)
            variables = {f"{name}/{node}": variable for node, variable in variables.items()}
        data = graph_def.SerializeToString()
    graph_function = _C.function_from_graph_def(data, name or "imported",
                                                {node: v._id for node, v in variables.items()})
    graph = FuncGraph(graph_function, name or "imported")
    graph._bound_variables = list(variables.values())  # the graph uses them by id: keep them alive
    if return_elements is None:
        return graph
    return [_element(graph, element) for element in return_elements]


def _parse(data):
    try:
        return _graph_def.GraphDef.FromString(data)
    except _DecodeError as e:
        raise errors.DataLossError(None, None, f"GraphDef: the bytes are not a serialized GraphDef ({e})") from None


def _canonical(tensor_name):
    return tensor_name if ":" in tensor_name else tensor_name + ":0"


def _node_of(tensor_name):
    return tensor_name.rpartition(":")[0] if ":" in tensor_name else tensor_name


def _is_resource_placeholder(node):
    return node.op == "Placeholder" and "dtype" in node.attr and node.attr["dtype"].type == _graph_def.DT_RESOURCE


def _map_inputs(graph_def, input_map):
    """Rewrites ``graph_def`` for the mapped values; returns the variables bound, by node name."""
    names = {node.name for node in graph_def.node}
    resources = {node.name for node in graph_def.node if _is_resource_placeholder(node)}
    for key in input_map:
        if key.startswith("^"):
            raise ValueError(f"input_map: ember maps tensors, not control inputs ('{key}')")
    missing = [key for key in input_map if _node_of(key) not in names]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: {missing}")
    variables = {}
    for key, value in input_map.items():
        if _node_of(key) in resources:
            if _canonical(key) != _node_of(key) + ":0":
                raise ValueError(f"input_map['{key}']: a resource Placeholder has one output, '{_node_of(key)}:0'")
            if not getattr(value, "_ember_variable", False):
                raise TypeError(f"input_map['{key}']: '{_node_of(key)}' is a variable of the graph (a DT_RESOURCE "
                                f"Placeholder) and must be bound to an ember.Variable, got {type(value).__name__}")
            variables[_node_of(key)] = value
            continue
        if isinstance(value, GraphTensor):
            raise TypeError(f"input_map['{key}']: ember imports a GraphDef as a standalone graph, so a mapped "
                            f"input must be a value (a tensor or something convertible), not a graph tensor")
        tensor = convert_to_tensor(value)
        if _C.symbolic_name(tensor) is not None:
            raise TypeError(f"input_map['{key}']: a symbolic tensor cannot be mapped into a standalone graph")
        const_name = _unique(f"input_map/{_canonical(key).replace(':', '_')}", names)
        names.add(const_name)
        proto = _graph_def.make_tensor_proto(tensor)
        graph_def.node.append(_graph_def.NodeDef(
            name=const_name, op="Const",
            attr={"value": _graph_def.AttrValue(tensor=proto), "dtype": _graph_def.AttrValue(type=proto.dtype)}))
        mapped = _canonical(key)
        for node in graph_def.node:
            node.input[:] = [const_name if not inp.startswith("^") and _canonical(inp) == mapped else inp
                          for inp in node.input]
    return variables


def _unique(base, names):
    candidate, count = base, 0
    while candidate in names:
        count += 1
        candidate = f"{base}_{count}"
    return candidate


def _prefix_names(graph_def, prefix):
    for node in graph_def.node:
        node.name = f"{prefix}/{node.name}"
        node.input[:] = ["^" + prefix + "/" + inp[1:] if inp.startswith("^") else f"{prefix}/{inp}"
                      for inp in node.input]
    traces = graph_def.debug_info.traces
    renamed = {f"{prefix}/{key}": value for key, value in traces.items()}
    graph_def.debug_info.ClearField("traces")
    for key, value in renamed.items():
        traces[key].CopyFrom(value)


def _element(graph, element):
    try:
        if ":" in element:
            return graph.get_tensor_by_name(element)
        return graph.get_operation_by_name(element)
    except KeyError:
        raise ValueError(f"Requested return_element '{element}' not found in graph_def.") from None

"""Concrete functions and their graphs: what ``ember.function`` traces, for calling and for inspection
(``.graph.get_operations()``, tensor names like ``Square:0``, carving subgraphs)."""

import inspect

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec
from ember.util import nest

_PartitionedCall = _C.op("PartitionedCall")
_RESULT = object()  # marks where a traced tensor result goes in the output template


class GraphTensor:
    """A tensor of a traced graph, for inspection: ``name`` ("Square:0"), ``dtype``, ``shape``, ``op``."""

    __slots__ = ("_graph", "_node", "_index")

    def __init__(self, graph, node, index):
        self._graph = graph
        self._node = node
        self._index = index

    @property
    def graph(self):
        return self._graph

    @property
    def op(self):
        return Operation(self._graph, self._node)

    @property
    def value_index(self):
        return self._index

    @property
    def name(self):
        return f"{self._graph._node(self._node)['name']}:{self._index}"

    @property
    def dtype(self):
        return dtypes.ALL[self._graph._node(self._node)["outputs"][self._index][0]]

    @property
    def shape(self):
        return TensorShape(self._graph._node(self._node)["outputs"][self._index][1])

    def get_shape(self):
        return self.shape

    def __eq__(self, other):
        return (isinstance(other, GraphTensor) and other._graph is self._graph and other._node == self._node
                and other._index == self._index)

    def __hash__(self):
        return hash((id(self._graph), self._node, self._index))

    def __repr__(self):
        shape = self.shape
        return f"<ember.Tensor '{self.name}' shape={shape} dtype={self.dtype.name}>"


class Operation:
    """A node of a traced graph: ``name``, ``type``, ``inputs``, ``outputs``, ``control_inputs``."""

    __slots__ = ("_graph", "_node")

    def __init__(self, graph, node):
        self._graph = graph
        self._node = node

    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        return self._graph._node(self._node)["name"]

    @property
    def type(self):
        return self._graph._node(self._node)["type"]

    @property
    def inputs(self):
        return [GraphTensor(self._graph, n, i) for n, i in self._graph._node(self._node)["inputs"]]

    @property
    def outputs(self):
        return [GraphTensor(self._graph, self._node, i)
                for i in range(len(self._graph._node(self._node)["outputs"]))]

    @property
    def control_inputs(self):
        return [Operation(self._graph, c) for c in self._graph._node(self._node)["control_inputs"]]

    @property
    def attrs(self):
        return self._graph._node(self._node)["attrs"]

    @property
    def source_location(self):
        """(file, line) of the user's code that created this node, or None."""
        return self._graph._node(self._node)["location"]

    def __eq__(self, other):
        return isinstance(other, Operation) and other._graph is self._graph and other._node == self._node

    def __hash__(self):
        return hash((id(self._graph), self._node))

    def __repr__(self):
        return f"<ember.Operation '{self.name}' type={self.type}>"


class FuncGraph:
    """The graph of a concrete function."""

    def __init__(self, graph_function, name=None):
        self._gf = graph_function
        self._nodes = {}
        self.name = name or graph_function.name

    def _node(self, i):
        node = self._nodes.get(i)
        if node is None:
            node = self._nodes[i] = self._gf.node(i)
        return node

    def get_operations(self):
        return [Operation(self, i) for i in range(self._gf.num_nodes)]

    def get_operation_by_name(self, name):
        i = self._gf.find(name)
        if i < 0:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return Operation(self, i)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError(f"The name '{name}' looks like an (invalid) Operation name, not a Tensor name: "
                             "tensor names look like '<op_name>:<output_index>'.")
        op_name, _, index = name.rpartition(":")
        i = self._gf.find(op_name)
        if i < 0:
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist: the operation "
                           f"'{op_name}' does not exist in the graph.")
        if not index.isdigit() or int(index) >= len(self._node(i)["outputs"]):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist: the operation "
                           f"'{op_name}' has {len(self._node(i)['outputs'])} output(s).")
        return GraphTensor(self, i, int(index))

    @property
    def inputs(self):
        return [GraphTensor(self, a, 0) for a in self._gf.args]

    @property
    def outputs(self):
        return [GraphTensor(self, n, i) for n, i in self._gf.results]

    @property
    def captures(self):
        """(captured eager value, placeholder) pairs."""
        values = self._gf.captured_values
        placeholders = self.inputs[len(self.inputs) - len(values):]
        return list(zip(values, placeholders))

    def as_text(self):
        """A readable listing of the nodes, one a line."""
        return self._gf.to_text()

    def optimized_as_text(self):
        """The graph the executor runs, after the optimizer's passes (ember.config.optimizer)."""
        return self._gf.optimized_text()

    def partitions_as_text(self):
        """One listing per device when the nodes sit on several devices (docs/devices.md), else []."""
        return list(self._gf.partition_texts())

    def as_graph_def(self):
        from ember.framework import graph_def

        return graph_def.to_graph_def(self)

    def __repr__(self):
        return f"<ember.FuncGraph {self.name} with {self._gf.num_nodes} nodes>"


def _results_packer(structure, template):
    """A function packing a call's flat results as ``structure``, made once per concrete function. A flat
    tuple, list or dict of results is rebuilt directly: nest's walk cost ten times the rest of a call."""
    def general(flat_results):
        results = iter(flat_results)
        return nest.pack_sequence_as(structure, [next(results) if t is _RESULT else t for t in template])

    def leaf(value):
        return nest._children(value, False) is None

    n = len(template)
    if not all(t is _RESULT for t in template):
        return general
    if type(structure) in (tuple, list) and all(leaf(v) for v in structure):
        kind = type(structure)
        return lambda flat_results: kind(flat_results) if len(flat_results) == n else general(flat_results)
    if type(structure) is dict and all(leaf(v) for v in structure.values()):
        position = {k: i for i, k in enumerate(nest._sorted_keys(structure))}  # nest orders keys sorted
        order = [(k, position[k]) for k in structure]
        return lambda flat_results: ({k: flat_results[i] for k, i in order} if len(flat_results) == n
                                     else general(flat_results))
    return general


class ConcreteFunction:
    """One traced graph of a polymorphic function: callable with tensors matching its signature."""

    def __init__(self, graph_function, structured_outputs, template, input_specs, name):
        self._gf = graph_function
        self._structured_outputs = structured_outputs
        self._template = template
        self._input_specs = input_specs
        self._name = name
        self._graph = None

    @property
    def graph(self):
        if self._graph is None:
            self._graph = FuncGraph(self._gf, self._name)
        return self._graph

    @property
    def name(self):
        return self._gf.library_name

    @property
    def inputs(self):
        return self.graph.inputs

    @property
    def outputs(self):
        return self.graph.outputs

    @property
    def captured_inputs(self):
        return self._gf.captured_values

    _parameters = None  # function_type.Parameter list, set by the trace
    _output_type = None

    @property
    def structured_input_signature(self):
        """``(positional arguments, keyword-only arguments)`` with TensorSpecs in place of tensors."""
        if self._parameters is None:
            return (tuple(self._input_specs), {})
        positional = tuple(p.named for p in self._parameters if p.kind not in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD))
        keywords = {p.name: p.named for p in self._parameters if p.kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)}
        return positional, keywords

    @property
    def function_type(self):
        from ember import function_type

        return function_type.signature_of(self._parameters or [], self._output_type)

    @property
    def structured_outputs(self):
        graph_results = iter(self.graph.outputs)
        flat = [next(graph_results) if t is _RESULT else t for t in self._template]
        return nest.pack_sequence_as(self._structured_outputs, flat)

    _packer = None

    def _pack(self, flat_results):
        packer = self._packer
        if packer is None:
            packer = self._packer = _results_packer(self._structured_outputs, self._template)
        return packer(flat_results)

    def _call_flat(self, tensors):
        lifted = self._gf.lifted_captures
        if _C.in_trace():
            # Called while another function traces: a call node in that graph (tensors of an enclosing
            # trace that this function uses are passed along explicitly).
            out = _PartitionedCall(list(tensors) + lifted, self._gf.library_name)
            flat = list(out) if isinstance(out, tuple) else [out]
        elif lifted:
            from ember import errors

            raise errors.FailedPreconditionError(
                None, None, f"{self._name}: this function uses tensors of the function that traced it, so it "
                "can only be called while that function traces")
        else:
            flat = self._gf(list(tensors))
        return self._pack(flat)

    def __call__(self, *args, **kwargs):
        flat = nest.flatten(list(args) + [kwargs[k] for k in sorted(kwargs)])
        if len(flat) != len(self._input_specs):
            raise TypeError(f"{self._name}: this concrete function takes {len(self._input_specs)} tensor "
                            f"argument(s) {self._input_specs}, got {len(flat)}")
        tensors = []
        for value, spec in zip(flat, self._input_specs):
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=spec.dtype)
            if not spec.is_compatible_with(t):
                raise TypeError(f"{self._name}: argument {spec.name or ''} must match {spec}, got a "
                                f"{t.dtype.name} tensor of shape {t.shape}")
            tensors.append(t)
        return self._call_flat(tensors)

    def run_with_metadata(self, *args, **kwargs):
        """Calls the function under a profiling session (the seeds' RunOptions/RunMetadata) and returns
        ``(outputs, metadata)``: per-node timings and bytes; see ``ember.profiler.RunMetadata``."""
        from ember import profiler

        return profiler.run_with_metadata(self, *args, **kwargs)

    def prune(self, feeds, fetches):
        """A function computing ``fetches`` from ``feeds`` (tensor names or graph tensors)."""
        return _carve(self._gf, feeds, fetches)

    def pretty_printed_signature(self, verbose=True):
        """TensorFlow's listing of the parameters, output type and captures (``verbose=False``: one line)."""
        from ember import function_type

        if not verbose:
            return str(self.function_type)
        captures = [f"{id(t)}: {function_type.type_text(t)}" for t in self.captured_inputs]
        return function_type.pretty_text(self._parameters or [], self._output_type, captures)

    def __repr__(self):
        return f"<ConcreteFunction {self._name}{self.function_type}>"


class CarvedFunction:
    """A subgraph cut out of a traced graph: called with values for its feeds, returns its fetches."""

    def __init__(self, graph_function, single):
        self._gf = graph_function
        self._single = single
        self._graph = FuncGraph(graph_function)
        self._specs = [(t.dtype, t.shape) for t in self._graph.inputs[:graph_function.num_user_args]]

    @property
    def graph(self):
        return self._graph

    def __call__(self, *feeds):
        if len(feeds) != len(self._specs):
            raise TypeError(f"this function takes {len(self._specs)} feed(s), got {len(feeds)}")
        tensors = []
        for value, (dtype, shape) in zip(feeds, self._specs):
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=dtype)
            if t.dtype != dtype or not shape.is_compatible_with(t.shape):
                raise TypeError(f"a feed must be a {dtype.name} tensor of shape {shape}, got {t.dtype.name} "
                                f"{t.shape}")
            tensors.append(t)
        out = self._gf(tensors)
        return out[0] if self._single else out


def _names(items):
    return [t.name if isinstance(t, GraphTensor) else str(t) for t in items]


def _carve(graph_function, inputs, outputs):
    single = not isinstance(outputs, (list, tuple)) or len(outputs) == 1
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
    return CarvedFunction(graph_function.prune(_names(inputs), _names(outputs)), single)


def NewGraphFunction(graph, inputs, outputs, prune=True):  # noqa: N802 - the seeds' name
    """The seeds' way to carve a function out of a traced graph by tensor names:
    ``NewGraphFunction(graph, inputs=["Square:0"], outputs=["Square_1:0"])``."""
    return _carve(graph._gf, inputs, outputs)

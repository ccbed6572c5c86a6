"""TensorFlow's GraphDef and the messages inside it, and a traced graph as one.

``func_graph.as_graph_def()`` (or ``to_graph_def(func_graph)``) gives a ``GraphDef`` whose bytes
(``SerializeToString()``) are what TensorFlow's ``graph_pb2.GraphDef.FromString`` reads::

    gd = f.get_concrete_function(tf.TensorSpec(None, tf.float32)).graph.as_graph_def()
    [(n.name, n.op, list(n.input)) for n in gd.node]
    # [('x', 'Placeholder', []), ('Square', 'Square', ['x']), ('Square_1', 'Square', ['Square'])]
    gd.node[1].attr["T"].type == DT_FLOAT

The messages (GraphDef, NodeDef, AttrValue, NameAttrList, TensorProto, TensorShapeProto, VersionDef,
GraphDebugInfo, FunctionDefLibrary, FunctionDef, OpDef, GradientDef) are real protobuf messages (the
``protobuf`` package) of proto/ember/*.proto, which carries TensorFlow's field numbers under the package
``ember.proto``; fields they do not declare are kept as unknown fields. Inputs read "name" for output 0,
"name:1" for others and "^name" for control inputs; inside a FunctionDef, "node:output_arg:index". Dtypes
are TensorFlow's DataType numbers (DT_FLOAT = 1), not ember's dtype enum: convert with
``as_datatype_enum`` and ``as_dtype``. ``ember.graph_util.import_graph_def`` turns a GraphDef back into a
graph; the C++ side (src/ember/graph/graph_def.h) does all graph <-> bytes work, and decodes TensorProtos.
"""

import numpy as np
from ember import _C, dtypes, errors
from ember.framework import protos
from ember.framework.tensor import convert_to_tensor

def as_datatype_enum(dtype):
    """TensorFlow's DataType number of an ember dtype (``as_datatype_enum(tf.float32) == DT_FLOAT``)."""
    return dtypes.as_dtype(dtype).as_datatype_enum


def as_dtype(datatype_enum):
    """The ember dtype of a TensorFlow DataType number; TypeError for types ember lacks (DT_RESOURCE, ...)."""
    dtype = dtypes._FROM_TF_DATATYPE.get(datatype_enum)
    if dtype is None:
        name = _DT_NAMES.get(datatype_enum, str(datatype_enum))
        raise TypeError(f"ember has no dtype for TensorFlow's DataType {name}")
    return dtype


# ---- the messages


# The classes come from ember/framework/protos.py (see Note [Python message classes from the C++
# descriptors] there).
def _message_classes():
    global _DT_NAMES
    _DT_NAMES = {number: name for name, number in protos.enum_values("DataType").items()}
    globals().update({name: number for number, name in _DT_NAMES.items()})  # DT_FLOAT = 1, ...
    names = ("TensorShapeProto", "TensorProto", "AttrValue", "NameAttrList", "NodeDef", "OpDef", "FunctionDef",
             "GradientDef", "FunctionDefLibrary", "VersionDef", "GraphDebugInfo", "GraphDef")
    return tuple(protos.message_class(name) for name in names)


_DT_NAMES = {}
(TensorShapeProto, TensorProto, AttrValue, NameAttrList, NodeDef, OpDef, FunctionDef, GradientDef,
 FunctionDefLibrary, VersionDef, GraphDebugInfo, GraphDef) = _message_classes()
DT_FLOAT, DT_RESOURCE = globals()["DT_FLOAT"], globals()["DT_RESOURCE"]  # named here for readers and linters


# ---- graphs and tensors


def to_graph_def(func_graph):
    """The GraphDef of a traced graph (a FuncGraph, e.g. ``concrete_function.graph``)."""
    graph_function = getattr(func_graph, "_gf", None)
    if graph_function is None:
        raise TypeError(f"to_graph_def expects an ember FuncGraph, got {type(func_graph).__name__}")
    return GraphDef.FromString(_C.graph_def_from_function(graph_function))


def make_tensor_proto(values, dtype=None):
    """A TensorProto holding ``values`` as raw little-endian bytes (strings, which have no raw form, as
    ``string_val``, as TensorFlow writes them). ``values`` converts as ``ember.constant`` converts it
    (Python floats become float32, ints int32)."""
    tensor = convert_to_tensor(values, dtype=dtype)
    array = np.asarray(tensor.numpy(), dtype=object if tensor.dtype.name == "string" else None)
    proto = TensorProto(dtype=as_datatype_enum(tensor.dtype),
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in array.shape]))
    if tensor.dtype.name == "string":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in array.ravel())
    elif array.size:
        proto.tensor_content = array.tobytes()  # ember runs on little-endian machines only
    return proto


def make_ndarray(tensor_proto):
    """The NumPy array a TensorProto holds: raw tensor_content, or the typed values (float_val, int_val,
    ...), where the last value repeats to fill the shape and no values mean zeros. Decoded by the C++
    reader that reads Const values from GraphDefs, so both agree; a TensorProto that does not make sense
    raises ValueError, as TensorFlow's ``make_ndarray`` does."""
    if not hasattr(tensor_proto, "SerializeToString"):
        raise TypeError(f"make_ndarray expects a TensorProto, got {type(tensor_proto).__name__}")
    try:
        return _C.tensor_from_tensor_proto(tensor_proto.SerializeToString()).numpy()
    except (errors.InvalidArgumentError, errors.DataLossError) as e:
        raise ValueError(str(e)) from None

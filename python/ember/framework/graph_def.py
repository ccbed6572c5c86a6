"""TensorFlow's GraphDef and the messages inside it, and a traced graph as one.

``func_graph.as_graph_def()`` (or ``to_graph_def(func_graph)``) gives a ``GraphDef`` whose bytes
(``SerializeToString()``) are what TensorFlow's ``graph_pb2.GraphDef.FromString`` reads::

    gd = f.get_concrete_function(tf.TensorSpec(None, tf.float32)).graph.as_graph_def()
    [(n.name, n.op, list(n.input)) for n in gd.node]
    # [('x', 'Placeholder', []), ('Square', 'Square', ['x']), ('Square_1', 'Square', ['Square'])]
    gd.node[1].attr["T"].type == DT_FLOAT

The messages (GraphDef, NodeDef, AttrValue, TensorProto, TensorShapeProto, VersionDef, GraphDebugInfo)
have protobuf's Python API (proto_wire.py); fields they do not declare, such as GraphDef.library, are
kept as raw bytes. Inputs read "name" for output 0, "name:1" for others and "^name" for control inputs.
Dtypes are TensorFlow's DataType numbers (DT_FLOAT = 1), not ember's dtype enum: convert with
``as_datatype_enum`` and ``as_dtype``. ``ember.graph_util.import_graph_def`` turns a GraphDef back into a
graph; the C++ side (src/ember/graph/graph_def.h) does the graph <-> bytes work.
"""

import math

import numpy as np

from ember import _C, dtypes
from ember.framework.proto_wire import Field, Message
from ember.framework.tensor import convert_to_tensor

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto), for the dtypes ember has and a few
# it does not, so they print by name.
DT_INVALID = 0
DT_FLOAT = 1
DT_DOUBLE = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_INT16 = 5
DT_INT8 = 6
DT_STRING = 7
DT_COMPLEX64 = 8
DT_INT64 = 9
DT_BOOL = 10
DT_BFLOAT16 = 14
DT_HALF = 19
DT_RESOURCE = 20
DT_VARIANT = 21

# A few bytes of typed values must not expand to unbounded memory (as kMaxExpandedTensorBytes in C++).
_MAX_EXPANDED_TENSOR_BYTES = 1 << 30

_DT_NAMES = {value: name for name, value in globals().items() if name.startswith("DT_")}

def as_datatype_enum(dtype):
    """TensorFlow's DataType number of an ember dtype (``as_datatype_enum(tf.float32) == DT_FLOAT``)."""
    return dtypes.as_dtype(dtype).as_datatype_enum


def as_dtype(datatype_enum):
    """The ember dtype of a TensorFlow DataType number; TypeError for types ember lacks (DT_STRING, ...)."""
    dtype = dtypes._FROM_TF_DATATYPE.get(datatype_enum)
    if dtype is None:
        name = _DT_NAMES.get(datatype_enum, str(datatype_enum))
        raise TypeError(f"ember has no dtype for TensorFlow's DataType {name}")
    return dtype


# ---- the messages (field numbers from tensorflow/core/framework/*.proto)


class TensorShapeProto(Message):
    class Dim(Message):
        FIELDS = (Field(1, "size", "int64"), Field(2, "name", "string"))

    FIELDS = (Field(2, "dim", "message", repeated=True, message=Dim), Field(3, "unknown_rank", "bool"))


class TensorProto(Message):
    FIELDS = (
        Field(1, "dtype", "enum", enum_names=_DT_NAMES),
        Field(2, "tensor_shape", "message", message=TensorShapeProto),
        Field(3, "version_number", "int32"),
        Field(4, "tensor_content", "bytes"),
        Field(5, "float_val", "float", repeated=True),
        Field(6, "double_val", "double", repeated=True),
        Field(7, "int_val", "int32", repeated=True),
        Field(8, "string_val", "bytes", repeated=True),
        Field(10, "int64_val", "int64", repeated=True),
        Field(11, "bool_val", "bool", repeated=True),
        Field(13, "half_val", "int32", repeated=True),
        Field(16, "uint32_val", "uint32", repeated=True),
        Field(17, "uint64_val", "uint64", repeated=True),
    )


class NameAttrList(Message):
    FIELDS = (Field(1, "name", "string"), Field(2, "attr", "map", message=lambda: AttrValue))


class AttrValue(Message):
    class ListValue(Message):
        FIELDS = (
            Field(2, "s", "bytes", repeated=True),
            Field(3, "i", "int64", repeated=True),
            Field(4, "f", "float", repeated=True),
            Field(5, "b", "bool", repeated=True),
            Field(6, "type", "enum", repeated=True, enum_names=_DT_NAMES),
            Field(7, "shape", "message", repeated=True, message=TensorShapeProto),
            Field(8, "tensor", "message", repeated=True, message=TensorProto),
            Field(9, "func", "message", repeated=True, message=NameAttrList),
        )

    FIELDS = (
        Field(1, "list", "message", message=ListValue, oneof="value"),
        Field(2, "s", "bytes", oneof="value"),
        Field(3, "i", "int64", oneof="value"),
        Field(4, "f", "float", oneof="value"),
        Field(5, "b", "bool", oneof="value"),
        Field(6, "type", "enum", oneof="value", enum_names=_DT_NAMES),
        Field(7, "shape", "message", message=TensorShapeProto, oneof="value"),
        Field(8, "tensor", "message", message=TensorProto, oneof="value"),
        Field(9, "placeholder", "string", oneof="value"),
        Field(10, "func", "message", message=NameAttrList, oneof="value"),
    )


class NodeDef(Message):
    FIELDS = (
        Field(1, "name", "string"),
        Field(2, "op", "string"),
        Field(3, "input", "string", repeated=True),
        Field(4, "device", "string"),
        Field(5, "attr", "map", message=AttrValue),
    )


class VersionDef(Message):
    FIELDS = (Field(1, "producer", "int32"), Field(2, "min_consumer", "int32"),
              Field(3, "bad_consumers", "int32", repeated=True))


class GraphDebugInfo(Message):
    class FileLineCol(Message):
        FIELDS = (Field(1, "file_index", "int32"), Field(2, "line", "int32"), Field(3, "col", "int32"),
                  Field(4, "func", "string"), Field(5, "code", "string"))

    class StackTrace(Message):
        FIELDS = (Field(1, "file_line_cols", "message", repeated=True, message=lambda: GraphDebugInfo.FileLineCol),)

    FIELDS = (Field(1, "files", "string", repeated=True), Field(2, "traces", "map", message=StackTrace))


class GraphDef(Message):
    """A serialized graph: ``node`` (NodeDefs), ``versions``, ``debug_info`` (source locations by node)."""

    FIELDS = (
        Field(1, "node", "message", repeated=True, message=NodeDef),
        Field(3, "version", "int32"),  # deprecated in TensorFlow; kept so old GraphDefs read back unchanged
        Field(4, "versions", "message", message=VersionDef),
        Field(5, "debug_info", "message", message=GraphDebugInfo),
    )


# ---- graphs and tensors


def to_graph_def(func_graph):
    """The GraphDef of a traced graph (a FuncGraph, e.g. ``concrete_function.graph``)."""
    graph_function = getattr(func_graph, "_gf", None)
    if graph_function is None:
        raise TypeError(f"to_graph_def expects an ember FuncGraph, got {type(func_graph).__name__}")
    return GraphDef.FromString(_C.graph_def_from_function(graph_function))


def make_tensor_proto(values, dtype=None):
    """A TensorProto holding ``values`` as raw little-endian bytes. ``values`` converts as
    ``ember.constant`` converts it (Python floats become float32, ints int32)."""
    tensor = convert_to_tensor(values, dtype=dtype)
    array = np.ascontiguousarray(tensor.numpy())
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in array.shape])
    proto = TensorProto(dtype=as_datatype_enum(tensor.dtype), tensor_shape=shape)
    if array.size:
        proto.tensor_content = array.tobytes()  # ember runs on little-endian machines only
    return proto


def make_ndarray(tensor_proto):
    """The NumPy array a TensorProto holds: raw tensor_content, or the typed values (float_val, int_val,
    ...), where the last value repeats to fill the shape and no values mean zeros."""
    dtype = as_dtype(tensor_proto.dtype)
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    shape = [d.size for d in tensor_proto.tensor_shape.dim]
    if any(d < 0 for d in shape):
        raise ValueError(f"TensorProto has the shape {shape}, with a negative dimension")
    count = math.prod(shape)  # exact: a product that wraps could pass the size checks below
    content = tensor_proto.tensor_content
    if content:
        if len(content) != count * np_dtype.itemsize:
            raise ValueError(f"TensorProto.tensor_content has {len(content)} bytes; a {dtype.name} tensor of "
                             f"shape {shape} needs {count * np_dtype.itemsize}")
        if dtype == dtypes.bool:
            return np.frombuffer(content, dtype=np.uint8).astype(np.bool_).reshape(shape)
        return np.frombuffer(content, dtype=np_dtype).reshape(shape).copy()
    if dtype in (dtypes.float16, dtypes.bfloat16):
        values = np.asarray(tensor_proto.half_val, dtype=np.uint16).view(np_dtype)
    else:
        field = {dtypes.float32: "float_val", dtypes.float64: "double_val", dtypes.int64: "int64_val",
                 dtypes.bool: "bool_val"}.get(dtype, "int_val")
        values = np.asarray(getattr(tensor_proto, field)).astype(np_dtype)
    if values.size > count:
        raise ValueError(f"TensorProto lists {values.size} values for a tensor of shape {shape}")
    if count * np_dtype.itemsize > _MAX_EXPANDED_TENSOR_BYTES:
        raise ValueError(f"TensorProto of shape {shape} and dtype {dtype.name} would expand its listed values to "
                         f"more than {_MAX_EXPANDED_TENSOR_BYTES} bytes")
    if values.size == 0:
        return np.zeros(shape, dtype=np_dtype)
    return np.concatenate([values, np.repeat(values[-1:], count - values.size)]).reshape(shape)

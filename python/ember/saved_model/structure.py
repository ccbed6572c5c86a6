"""Nested Python values <-> TensorFlow's StructuredValue (proto/ember/struct.proto).

A SavedModel records each concrete function's input signature ``((args...), {kwargs})`` and its output
structure with TensorSpecs where tensors are, and each function's argument spec as a "FullArgSpec" named
tuple. Encoding takes lists, tuples, dicts with string keys, named tuples, TensorSpecs, shapes, dtypes,
None, bool, int, float and str; anything else is a ValueError naming it. Decoding builds only those types
(named tuples come back as plain dicts' values in a ``_NamedTuple``): nothing in a file names a class to
instantiate, so loading executes no code from the file.
"""

from ember import dtypes
from ember.framework import graph_def as _gd
from ember.framework import protos
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec

StructuredValue = protos.message_class("StructuredValue")
TensorSpecProto = protos.message_class("TensorSpecProto")
PairValue = protos.message_class("PairValue")


class SavedModelFormatError(ValueError):
    """A StructuredValue that ember cannot decode (the loader turns it into an error naming the file)."""


class CompositeSignatureError(SavedModelFormatError):
    """A signature holding a composite value (a TypeSpec: RaggedTensorSpec, IteratorSpec, ...), which ember
    cannot call a function with; the loader restores such a function as one that says so when called."""


def shape_proto(shape):
    shape = TensorShape(shape)
    proto = _gd.TensorShapeProto()
    if shape.rank is None:
        proto.unknown_rank = True
    else:
        for d in shape.as_list():
            proto.dim.add(size=-1 if d is None else d)
    return proto


def shape_from_proto(proto):
    if proto.unknown_rank:
        return TensorShape(None)
    dims = []
    for d in proto.dim:
        if d.size < -1:
            raise SavedModelFormatError(f"a shape has dimension {d.size} (only -1, for unknown, may be negative)")
        dims.append(None if d.size == -1 else d.size)
    return TensorShape(dims)


def spec_proto(spec, name=None):
    return TensorSpecProto(name=name if name is not None else (spec.name or ""), shape=shape_proto(spec.shape),
                           dtype=_gd.as_datatype_enum(spec.dtype))


def spec_from_proto(proto):
    try:
        dtype = _gd.as_dtype(proto.dtype)
    except TypeError as e:
        raise SavedModelFormatError(str(e)) from None
    return TensorSpec(shape_from_proto(proto.shape), dtype, proto.name or None)


def encode(value):
    """The StructuredValue of ``value``."""
    out = StructuredValue()
    if value is None:
        out.none_value.SetInParent()
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, float):
        out.float64_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, TensorSpec):
        out.tensor_spec_value.CopyFrom(spec_proto(value))
    elif isinstance(value, TensorShape):
        out.tensor_shape_value.CopyFrom(shape_proto(value))
    elif isinstance(value, dtypes.DType):
        out.tensor_dtype_value = _gd.as_datatype_enum(value)
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        out.named_tuple_value.name = type(value).__name__
        for key, item in zip(value._fields, value):
            out.named_tuple_value.values.add(key=key).value.CopyFrom(encode(item))
    elif isinstance(value, tuple):
        out.tuple_value.SetInParent()
        for item in value:
            out.tuple_value.values.add().CopyFrom(encode(item))
    elif isinstance(value, list):
        out.list_value.SetInParent()
        for item in value:
            out.list_value.values.add().CopyFrom(encode(item))
    elif isinstance(value, dict):
        out.dict_value.SetInParent()
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"a SavedModel stores dicts with string keys only, got key {key!r}")
            out.dict_value.fields[key].CopyFrom(encode(item))
    else:
        raise ValueError(f"a SavedModel cannot record a value of type {type(value).__name__} ({value!r}) in a "
                         f"function's signature")
    return out


class NamedTuple(tuple):
    """A named tuple read from a SavedModel: a tuple with its field names (``.name``, ``._fields``) and
    attribute access; no class is looked up by the saved name."""

    def __new__(cls, name, fields, values):
        self = super().__new__(cls, values)
        self.name, self._fields = name, tuple(fields)
        return self

    def __getattr__(self, key):
        try:
            return self[self._fields.index(key)]
        except ValueError:
            raise AttributeError(key) from None


def decode(proto):
    """The Python value of a StructuredValue."""
    kind = proto.WhichOneof("kind")
    if kind is None or kind == "none_value":
        return None
    if kind in ("bool_value", "int64_value", "float64_value", "string_value"):
        return getattr(proto, kind)
    if kind == "tensor_spec_value":
        return spec_from_proto(proto.tensor_spec_value)
    if kind == "bounded_tensor_spec_value":
        return spec_from_proto(proto.bounded_tensor_spec_value)
    if kind == "tensor_shape_value":
        return shape_from_proto(proto.tensor_shape_value)
    if kind == "tensor_dtype_value":
        try:
            return _gd.as_dtype(proto.tensor_dtype_value)
        except TypeError as e:
            raise SavedModelFormatError(str(e)) from None
    if kind == "tuple_value":
        return tuple(decode(v) for v in proto.tuple_value.values)
    if kind == "list_value":
        return [decode(v) for v in proto.list_value.values]
    if kind == "dict_value":
        return {key: decode(proto.dict_value.fields[key]) for key in sorted(proto.dict_value.fields)}
    if kind == "named_tuple_value":
        pairs = proto.named_tuple_value.values
        return NamedTuple(proto.named_tuple_value.name, [p.key for p in pairs], [decode(p.value) for p in pairs])
    if kind == "type_spec_value":
        spec = proto.type_spec_value
        name = spec.type_spec_class_name or protos.POOL.FindEnumTypeByName(
            "ember.proto.TypeSpecProto.TypeSpecClass").values_by_number.get(spec.type_spec_class).name
        raise CompositeSignatureError(f"a composite value ({name}) is in a function's signature; ember reads "
                                    f"tensors, Python values and nested lists, tuples and dicts of them")
    raise SavedModelFormatError(f"a StructuredValue of kind {kind} is not supported")

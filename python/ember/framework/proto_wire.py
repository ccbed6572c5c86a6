"""Protocol buffer messages in plain Python, without the protobuf package.

A message class lists its fields; instances have protobuf's Python API (field attributes, repeated fields
as lists, maps as dicts, ``SerializeToString``, ``FromString``, ``ParseFromString``, ``HasField``,
``WhichOneof``, ``CopyFrom``, text printing), and the wire format is written by hand, as in the C++ codec
(src/ember/graph/proto_wire.h). Fields a class does not declare are kept as raw bytes and written back.
Malformed bytes raise ``ember.errors.DataLossError`` naming the byte offset::

    class VersionDef(Message):
        FIELDS = (Field(1, "producer", "int32"), Field(2, "min_consumer", "int32"))

    VersionDef.FromString(b"\\x08\\x01").producer == 1
"""

import struct

from ember import errors

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
_WIRE_NAMES = {VARINT: "varint", FIXED64: "fixed64", LENGTH_DELIMITED: "length-delimited", FIXED32: "fixed32"}
_MASK64 = (1 << 64) - 1

_WIRE_OF = {"int64": VARINT, "int32": VARINT, "uint64": VARINT, "uint32": VARINT, "bool": VARINT, "enum": VARINT,
            "float": FIXED32, "double": FIXED64, "string": LENGTH_DELIMITED, "bytes": LENGTH_DELIMITED,
            "message": LENGTH_DELIMITED, "map": LENGTH_DELIMITED}
_DEFAULT_OF = {"int64": 0, "int32": 0, "uint64": 0, "uint32": 0, "bool": False, "enum": 0, "float": 0.0,
               "double": 0.0, "string": "", "bytes": b""}
_PACKABLE = {"int64", "int32", "uint64", "uint32", "bool", "enum", "float", "double"}
_MAX_DEPTH = 100  # nested messages, as protobuf's own parsers limit them (NameAttrList and AttrValue nest)


def _data_loss(message):
    return errors.DataLossError(None, None, message)


class Field:
    """One field: its number, name and kind ("int64", "int32", "uint64", "uint32", "bool", "enum", "float",
    "double", "string", "bytes", "message", or "map" for map<string, message>); whether it repeats; the
    oneof it belongs to; for messages and maps the value class (or a function returning it, for classes
    defined later); for enums a {value: name} dict used when printing."""

    __slots__ = ("number", "name", "kind", "repeated", "oneof", "_message", "enum_names", "_entry")

    def __init__(self, number, name, kind, repeated=False, message=None, oneof=None, enum_names=None):
        self.number = number
        self.name = name
        self.kind = kind
        self.repeated = repeated
        self.oneof = oneof
        self._message = message
        self.enum_names = enum_names or {}
        self._entry = None

    @property
    def message(self):
        if self._message is not None and not isinstance(self._message, type):
            self._message = self._message()
        return self._message

    @property
    def wire_type(self):
        return _WIRE_OF[self.kind]

    def default(self):
        return self.message() if self.kind == "message" else _DEFAULT_OF[self.kind]

    def entry_class(self):
        """The implicit message of one map entry: key = 1, value = 2."""
        if self._entry is None:
            value = Field(2, "value", "message", message=self._message)
            self._entry = type(f"{self.name}_entry", (Message,), {"FIELDS": (Field(1, "key", "string"), value)})
        return self._entry


class Message:
    """The base of message classes; subclasses set FIELDS."""

    FIELDS = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._by_name = {f.name: f for f in cls.FIELDS}
        cls._by_number = {f.number: f for f in cls.FIELDS}
        cls._sorted_fields = sorted(cls.FIELDS, key=lambda f: f.number)

    def __init__(self, **fields):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_oneofs", {})  # oneof name -> the member that is set
        object.__setattr__(self, "_present", set())  # singular message fields that were set or parsed
        object.__setattr__(self, "_unknown", [])  # (number, raw bytes) of undeclared fields, written back
        for name, value in fields.items():
            setattr(self, name, value)

    # ---- field access
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        field = self._field(name)
        values = self._values
        if name in values:
            return values[name]
        if field.repeated:
            return values.setdefault(name, [])
        if field.kind == "map":
            return values.setdefault(name, {})
        if field.oneof is not None:
            return field.default()  # an unset member reads as its default and stays unset
        if field.kind == "message":
            return values.setdefault(name, field.message())
        return _DEFAULT_OF[field.kind]

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        field = self._field(name)
        if field.repeated:
            value = [self._coerce(field, v) for v in value]
        elif field.kind == "map":
            value = {str(k): self._coerce(field, v) for k, v in dict(value).items()}
        else:
            value = self._coerce(field, value)
        if field.oneof is not None:
            previous = self._oneofs.get(field.oneof)
            if previous is not None and previous != name:
                self._values.pop(previous, None)
            self._oneofs[field.oneof] = name
        if field.kind == "message" and not field.repeated:
            self._present.add(name)
        self._values[name] = value

    def _field(self, name):
        field = type(self)._by_name.get(name)
        if field is None:
            raise AttributeError(f"{type(self).__name__} has no field '{name}'")
        return field

    @staticmethod
    def _coerce(field, value):
        kind = field.kind
        if kind in ("message", "map"):
            cls = field.message
            if isinstance(value, dict) and kind == "message":
                return cls(**value)
            if not isinstance(value, cls):
                raise TypeError(f"field '{field.name}' takes {cls.__name__} messages, got {type(value).__name__}")
            return value
        if kind == "string":
            return value.decode("utf-8") if isinstance(value, bytes) else str(value)
        if kind == "bytes":
            return value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if kind == "bool":
            return bool(value)
        if kind in ("float", "double"):
            return float(value)
        return int(value)

    def HasField(self, name):  # noqa: N802 - protobuf's name
        if name in {f.oneof for f in self.FIELDS if f.oneof}:
            return name in self._oneofs
        field = self._field(name)
        if field.repeated or field.kind == "map":
            raise ValueError(f"HasField does not apply to the repeated field '{name}'")
        if field.oneof is not None:
            return self._oneofs.get(field.oneof) == name
        if field.kind == "message":
            return name in self._present or (name in self._values and bool(self._values[name].ByteSize()))
        return self._values.get(name, _DEFAULT_OF[field.kind]) != _DEFAULT_OF[field.kind]

    def WhichOneof(self, oneof):  # noqa: N802
        return self._oneofs.get(oneof)

    def ClearField(self, name):  # noqa: N802
        field = self._field(name)
        self._values.pop(name, None)
        self._present.discard(name)
        if field.oneof is not None and self._oneofs.get(field.oneof) == name:
            del self._oneofs[field.oneof]

    def Clear(self):  # noqa: N802
        self._values.clear()
        self._oneofs.clear()
        self._present.clear()
        self._unknown.clear()

    def CopyFrom(self, other):  # noqa: N802
        self.Clear()
        self.MergeFrom(other)

    def MergeFrom(self, other):  # noqa: N802
        self.MergeFromString(other.SerializeToString())

    def ByteSize(self):  # noqa: N802
        return len(self.SerializeToString())

    def __eq__(self, other):
        return type(other) is type(self) and other.SerializeToString() == self.SerializeToString()

    def __hash__(self):
        raise TypeError(f"unhashable type: '{type(self).__name__}'")

    def __repr__(self):
        return self._text(0)

    __str__ = __repr__

    # ---- writing
    def SerializeToString(self, deterministic=True):  # noqa: N802 - maps are always written sorted by key
        out = bytearray()
        self._write(out)
        return bytes(out)

    def _write(self, out):
        values = self._values
        unknown = sorted(self._unknown, key=lambda u: u[0])  # stable: repeated fields keep their order
        k = 0
        for field in self._sorted_fields:
            while k < len(unknown) and unknown[k][0] < field.number:
                out += unknown[k][1]
                k += 1
            name = field.name
            if name not in values:
                continue
            value = values[name]
            if field.oneof is not None:
                if self._oneofs.get(field.oneof) == name:
                    _write_value(out, field, value)
            elif field.repeated:
                if not value:
                    continue
                if field.kind in _PACKABLE:
                    packed = bytearray()
                    for v in value:
                        _put_scalar(packed, field.kind, v)
                    _put_tag(out, field.number, LENGTH_DELIMITED)
                    _put_varint(out, len(packed))
                    out += packed
                else:
                    for v in value:
                        _write_value(out, field, v)
            elif field.kind == "map":
                entry_class = field.entry_class()
                for key in sorted(value):
                    _write_value(out, field, entry_class(key=key, value=value[key]), message=True)
            elif field.kind == "message":
                if name in self._present or value.ByteSize():
                    _write_value(out, field, value)
            elif value != _DEFAULT_OF[field.kind]:
                _write_value(out, field, value)
        for _, raw in unknown[k:]:
            out += raw

    # ---- reading
    @classmethod
    def FromString(cls, data):  # noqa: N802
        message = cls()
        message.MergeFromString(data)
        return message

    def ParseFromString(self, data):  # noqa: N802
        self.Clear()
        return self.MergeFromString(data)

    def MergeFromString(self, data):  # noqa: N802
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{type(self).__name__}: expected bytes, got {type(data).__name__}")
        data = bytes(data)
        self._read(data, 0, len(data))
        return len(data)

    def _read(self, data, pos, end, depth=0):
        if depth > _MAX_DEPTH:
            raise _data_loss(f"messages are nested more than {_MAX_DEPTH} deep at byte {pos}")
        by_number = self._by_number
        while pos < end:
            tag_at = pos
            tag, pos = _read_varint(data, pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise _data_loss(f"invalid field number 0 at byte {tag_at}")
            if wire == VARINT:
                value, pos = _read_varint(data, pos, end)
            elif wire in (FIXED64, FIXED32):
                width = 8 if wire == FIXED64 else 4
                if end - pos < width:
                    raise _data_loss(f"truncated {width}-byte value of field {number} at byte {tag_at}")
                value = data[pos:pos + width]
                pos += width
            elif wire == LENGTH_DELIMITED:
                length, pos = _read_varint(data, pos, end)
                if length > end - pos:
                    raise _data_loss(f"field {number} at byte {tag_at} has length {length} but only {end - pos} "
                                     f"byte(s) remain in its message")
                value = (pos, pos + length)
                pos += length
            else:
                raise _data_loss(f"field {number} at byte {tag_at} has wire type {wire}, which this reader does "
                                 f"not support (3/4 are deprecated groups; 6/7 do not exist)")
            field = by_number.get(number)
            if field is None:
                self._unknown.append((number, data[tag_at:pos]))
            else:
                self._read_field(field, wire, value, data, tag_at, depth)

    def _read_field(self, field, wire, value, data, tag_at, depth):
        what = f"{type(self).__name__}.{field.name}"
        if field.repeated and field.kind in _PACKABLE and wire == LENGTH_DELIMITED:
            items = getattr(self, field.name)
            start, end = value
            pos = start
            width = {FIXED32: 4, FIXED64: 8}.get(field.wire_type)
            while pos < end:
                if width is None:
                    raw, pos = _read_varint(data, pos, end)
                else:
                    if end - pos < width:
                        raise _data_loss(f"packed {what} at byte {start} has {end - start} bytes, not a multiple "
                                         f"of {width}")
                    raw = data[pos:pos + width]
                    pos += width
                items.append(_decode_scalar(field.kind, raw))
            return
        if wire != field.wire_type:
            raise _data_loss(f"{what} (field {field.number}) at byte {tag_at} should have wire type "
                             f"{_WIRE_NAMES[field.wire_type]}, got {_WIRE_NAMES[wire]}")
        if field.kind == "map":
            entry = field.entry_class()()
            entry._read(data, *value, depth + 1)
            getattr(self, field.name)[entry.key] = entry.value
            return
        if field.kind == "message":
            if field.repeated:
                item = field.message()
                item._read(data, *value, depth + 1)
                getattr(self, field.name).append(item)
                return
            # A singular message given twice merges, as protobuf does.
            is_set = field.oneof is None or self._oneofs.get(field.oneof) == field.name
            current = self._values.get(field.name) if is_set else None
            item = current if current is not None else field.message()
            item._read(data, *value, depth + 1)
            setattr(self, field.name, item)
            return
        if field.kind in ("string", "bytes"):
            start, end = value
            raw = data[start:end]
            if field.kind == "string":
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise _data_loss(f"{what} at byte {tag_at} is not valid UTF-8") from None
            decoded = raw
        else:
            decoded = _decode_scalar(field.kind, value)
        if field.repeated:
            getattr(self, field.name).append(decoded)
        else:
            setattr(self, field.name, decoded)

    # ---- text format
    def _text(self, indent):
        pad = "  " * indent
        lines = []
        values = self._values
        for field in self.FIELDS:
            name = field.name
            if name not in values:
                continue
            value = values[name]
            if field.oneof is not None:
                if self._oneofs.get(field.oneof) == name:
                    lines.append(_text_value(field, value, indent))
            elif field.repeated:
                lines.extend(_text_value(field, v, indent) for v in value)
            elif field.kind == "map":
                for key in sorted(value):
                    inner = value[key]._text(indent + 2)
                    lines.append(f"{pad}{name} {{\n{pad}  key: {_quote(key)}\n{pad}  value {{\n{inner}"
                                 f"{pad}  }}\n{pad}}}\n")
            elif field.kind == "message":
                if name in self._present or value.ByteSize():
                    lines.append(_text_value(field, value, indent))
            elif value != _DEFAULT_OF[field.kind]:
                lines.append(_text_value(field, value, indent))
        return "".join(lines)


# ---- the wire format


def _put_varint(out, value):
    value &= _MASK64
    while value >= 0x80:
        out.append((value & 0x7f) | 0x80)
        value >>= 7
    out.append(value)


def _put_tag(out, number, wire):
    _put_varint(out, (number << 3) | wire)


def _put_scalar(out, kind, value):
    if kind == "float":
        out += struct.pack("<f", value)
    elif kind == "double":
        out += struct.pack("<d", value)
    else:  # varints; negative ints are sign-extended to 64 bits (ten bytes), as protobuf writes them
        _put_varint(out, int(value))


def _write_value(out, field, value, message=False):
    _put_tag(out, field.number, field.wire_type)
    kind = field.kind
    if kind in ("message", "map") or message:
        payload = value.SerializeToString()
    elif kind == "string":
        payload = value.encode("utf-8")
    elif kind == "bytes":
        payload = value
    else:
        _put_scalar(out, kind, value)
        return
    _put_varint(out, len(payload))
    out += payload


def _read_varint(data, pos, end):
    start = pos
    result = 0
    shift = 0
    while shift < 64:
        if pos >= end:
            raise _data_loss(f"truncated varint at byte {start} (the message ends at byte {end})")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7f) << shift
        if not byte & 0x80:
            return result & _MASK64, pos
        shift += 7
    raise _data_loss(f"varint at byte {start} is longer than 10 bytes")


def _decode_scalar(kind, raw):
    if kind == "float":
        return struct.unpack("<f", raw)[0]
    if kind == "double":
        return struct.unpack("<d", raw)[0]
    if kind == "bool":
        return raw != 0
    if kind == "int64":
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind in ("int32", "enum"):  # the low 32 bits, as protobuf truncates
        raw &= 0xFFFFFFFF
        return raw - (1 << 32) if raw >= 1 << 31 else raw
    if kind == "uint32":
        return raw & 0xFFFFFFFF
    return raw


# ---- text format


def _quote(value):
    if isinstance(value, str):
        value = value.encode("utf-8")
    out = []
    for b in value:
        c = chr(b)
        if c in "\"\\":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _text_value(field, value, indent):
    pad = "  " * indent
    kind = field.kind
    if kind == "message":
        return f"{pad}{field.name} {{\n{value._text(indent + 1)}{pad}}}\n"
    if kind in ("string", "bytes"):
        text = _quote(value)
    elif kind == "bool":
        text = "true" if value else "false"
    elif kind == "enum":
        text = field.enum_names.get(value, str(value))
    else:
        text = repr(value)
    return f"{pad}{field.name}: {text}\n"

"""A minimal LevelDB-table reader and writer for tests that hand-craft checkpoint indexes (hostile entries
with valid checksums). Uncompressed blocks only, every entry a restart point; the writer's output is a valid
table that TensorFlow and ember read."""

import struct

from ember import _C

MAGIC = 0xdb4775248b80fb57


def _mask(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xa282ead8) & 0xFFFFFFFF


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _get_varint(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _block(entries):
    body, restarts = bytearray(), []
    for key, value in entries:
        restarts.append(len(body))
        body += _varint(0) + _varint(len(key)) + _varint(len(value)) + key + value
    for r in restarts or [0]:
        body += struct.pack("<I", r)
    body += struct.pack("<I", len(restarts or [0]))
    return bytes(body)


def _with_trailer(block):
    return block + b"\x00" + struct.pack("<I", _mask(_C.crc32c(block + b"\x00")))


def write(path, entries):
    """Writes {key (str or bytes): value (bytes)} as a one-data-block table."""
    items = sorted((k.encode() if isinstance(k, str) else k, v) for k, v in entries.items())
    out = bytearray()
    data = _block(items)
    data_handle = _varint(0) + _varint(len(data))
    out += _with_trailer(data)
    meta = _block([])
    meta_handle = _varint(len(out)) + _varint(len(meta))
    out += _with_trailer(meta)
    index = _block([(items[-1][0] if items else b"", data_handle)])
    index_handle = _varint(len(out)) + _varint(len(index))
    out += _with_trailer(index)
    footer = meta_handle + index_handle
    out += footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", MAGIC)
    with open(path, "wb") as f:
        f.write(out)


def _entries(block):
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end, pos, key, out = len(block) - 4 - 4 * restarts, 0, b"", []
    while pos < end:
        shared, pos = _get_varint(block, pos)
        non_shared, pos = _get_varint(block, pos)
        size, pos = _get_varint(block, pos)
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        out.append((key, block[pos:pos + size]))
        pos += size
    return out


def read(path):
    """{key (str): value (bytes)} of a table (trusting it: for tests on files they wrote)."""
    data = open(path, "rb").read()
    footer = data[-48:]
    _, pos = _get_varint(footer, 0)
    _, pos = _get_varint(footer, pos)
    offset, pos = _get_varint(footer, pos)
    size, pos = _get_varint(footer, pos)
    out = {}
    for _, handle in _entries(data[offset:offset + size]):
        o, p = _get_varint(handle, 0)
        s, _ = _get_varint(handle, p)
        for key, value in _entries(data[o:o + s]):
            out[key.decode()] = value
    return out

"""``tf.io.decode_raw``, ``encode_base64`` and ``decode_base64``: strings as bytes (ops/strings_bytes.cc)."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor

_DecodeRaw = _C.op("DecodeRaw")
_DecodePaddedRaw = _C.op("DecodePaddedRaw")
_EncodeBase64 = _C.op("EncodeBase64")
_DecodeBase64 = _C.op("DecodeBase64")


def _strings(value, what):
    value = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=dtypes.string)
    if value.dtype != dtypes.string:
        raise TypeError(f"{what}: expected a string tensor, got dtype {value.dtype.name}")
    return value


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """The bytes of each string read as numbers of ``out_type``: shape input.shape + [n]. Without
    ``fixed_length`` every string must have the same length, a multiple of out_type's size; with it each
    string is cut or zero-padded to ``fixed_length`` bytes first."""
    input_bytes = _strings(input_bytes, "decode_raw")
    out_type = dtypes.as_dtype(out_type)
    if fixed_length is None:
        return _DecodeRaw(input_bytes, out_type, bool(little_endian))
    fixed_length = fixed_length if isinstance(fixed_length, Tensor) else convert_to_tensor(fixed_length,
                                                                                          dtype=dtypes.int32)
    return _DecodePaddedRaw(input_bytes, fixed_length, out_type, bool(little_endian))


def encode_base64(input, pad=False, name=None):  # noqa: A002 - TensorFlow's argument name
    """Web-safe base64 ('-' and '_' for '+' and '/') of each string, '='-padded when ``pad``."""
    return _EncodeBase64(_strings(input, "encode_base64"), bool(pad))


def decode_base64(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """The bytes of each web-safe base64 string."""
    return _DecodeBase64(_strings(input, "decode_base64"))


def decode_raw_v1(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """``tf.compat.v1.decode_raw``: ``bytes`` is the deprecated name of ``input_bytes``."""
    if input_bytes is None and bytes is None:
        raise ValueError("decode_raw: input_bytes is required")
    if input_bytes is not None and bytes is not None:
        raise ValueError("decode_raw: cannot specify both 'input_bytes' and 'bytes'")
    return decode_raw(input_bytes if input_bytes is not None else bytes, out_type, little_endian)

"""tf.strings: operations on string tensors (TensorFlow's names and arguments).

Each function calls the op of the same name in the registry (src/ember/ops/strings.cc); what TensorFlow's
Python adds on top (axis handling, the RaggedTensor results of split and unicode_decode, the static regex
forms) is done here. Design: docs/strings.md.
"""

import codecs
import operator

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor

__all__ = ["as_string", "bytes_split", "format", "join", "length", "lower", "ngrams", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket_fast", "to_number",
           "unicode_decode", "unicode_decode_with_offsets", "unicode_encode", "unicode_split",
           "unicode_split_with_offsets", "unicode_transcode", "unsorted_segment_join", "upper"]

_StringLength = _C.op("StringLength")
_StringJoin = _C.op("StringJoin")
_ReduceJoin = _C.op("ReduceJoin")
_StringFormat = _C.op("StringFormat")
_StringToNumber = _C.op("StringToNumber")
_AsString = _C.op("AsString")
_RegexReplace = _C.op("RegexReplace")
_StaticRegexReplace = _C.op("StaticRegexReplace")
_RegexFullMatch = _C.op("RegexFullMatch")
_StaticRegexFullMatch = _C.op("StaticRegexFullMatch")
_Substr = _C.op("Substr")
_StringUpper = _C.op("StringUpper")
_StringLower = _C.op("StringLower")
_StringStrip = _C.op("StringStrip")
_StringSplitV2 = _C.op("StringSplitV2")
_StringToHashBucketFast = _C.op("StringToHashBucketFast")
_StringNGrams = _C.op("StringNGrams")
_UnicodeDecode = _C.op("UnicodeDecode")
_UnicodeEncode = _C.op("UnicodeEncode")
_UnicodeTranscode = _C.op("UnicodeTranscode")
_Reshape = _C.op("Reshape")


def _int(value, what):
    """An integer argument (Python or NumPy int, or an int scalar tensor); TypeError otherwise."""
    if isinstance(value, Tensor) and not value._is_symbolic and value.dtype.is_integer and value.ndim == 0:
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"tf.strings: {what} must be an integer, got {value!r}") from None


def _strings(x):
    return convert_to_tensor(x, dtype=dtypes.string) if not isinstance(x, Tensor) else x


def _unit(unit):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be one of ['BYTE', 'UTF8_CHAR'], got {unit!r}")
    return unit


def length(input, unit="BYTE", name=None):  # noqa: A002 - TensorFlow's argument name
    """The length of each string in bytes, or (``unit="UTF8_CHAR"``) in UTF-8 characters."""
    return _StringLength(_strings(input), _unit(unit))


def join(inputs, separator="", name=None):
    """Joins the strings of ``inputs`` element-wise (scalars broadcast): ``join(["a", ["b", "c"]], "-")``."""
    if isinstance(inputs, Tensor):  # a single tensor is one input (TensorFlow iterates a list)
        inputs = [inputs]
    return _StringJoin([_strings(x) for x in inputs], separator)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins the strings along ``axis`` (all axes when None), in row-major order. A RaggedTensor joins each
    row's strings along a ragged axis (Note [Joining ragged strings])."""
    from ember.ragged import RaggedTensor

    if isinstance(inputs, RaggedTensor):
        return _ragged_reduce_join(inputs, axis, keepdims, separator)
    inputs = _strings(inputs)
    if axis is None:
        axis = list(range(inputs.ndim)) if not inputs._is_symbolic else _C.op("Range")(0, _C.op("Rank")(inputs), 1)
    axes = convert_to_tensor(axis, dtype=dtypes.int32) if not isinstance(axis, Tensor) else axis
    return _ReduceJoin(inputs, axes, bool(keepdims), separator)


# Note [Joining ragged strings]
# tf.strings.reduce_join of a RaggedTensor, as TensorFlow's ragged dispatch: with no axis, every string in
# row-major order (the flat values, joined); along the innermost ragged axis, each innermost row's strings
# (UnsortedSegmentJoin of the flat values by their row), which leaves one ragged partition fewer (a dense
# vector from a ragged_rank-1 tensor); along an axis of the flat values, those values joined in place; and
# along axis 0 of a ragged_rank-1 tensor, the strings at each position across the rows (segment = position
# in its row), a vector as long as the longest row. Other axes are refused with a ValueError naming them.
def _ragged_reduce_join(rt, axis, keepdims, separator):
    from ember.ragged import RaggedTensor

    ragged_rank = rt.ragged_rank
    rank = ragged_rank + rt.flat_values.shape.rank
    if axis is None:
        return reduce_join(rt.flat_values, None, keepdims, separator)
    if not isinstance(axis, (int, np.integer)):
        raise ValueError(f"reduce_join of a RaggedTensor: axis must be a Python int or None, got {axis!r}")
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ValueError(f"reduce_join: axis={axis} out of bounds for a RaggedTensor of rank {rank}")
    axis %= rank
    if axis > ragged_rank:  # a dense axis of the flat values
        return rt.with_flat_values(reduce_join(rt.flat_values, axis - ragged_rank, keepdims, separator))
    if keepdims:
        raise ValueError("reduce_join of a RaggedTensor along a ragged axis: keepdims=True is not supported")
    if axis == ragged_rank:  # each innermost row's strings
        inner = rt
        outer_splits = []
        while isinstance(inner.values, RaggedTensor):
            outer_splits.append(inner.row_splits)
            inner = inner.values
        joined = unsorted_segment_join(inner.values, inner.value_rowids(), inner.nrows(), separator)
        for splits in reversed(outer_splits):
            joined = RaggedTensor.from_row_splits(joined, splits, validate=False)
        return joined
    if axis == 0 and ragged_rank == 1:  # the strings at each position, across the rows
        values, splits = rt.values, _C.op("Cast")(rt.row_splits, dtypes.int64)
        rows = _C.op("Cast")(rt.value_rowids(), dtypes.int64)
        positions = _range64(_C.op("Size")(values, dtypes.int64)) - _C.op("GatherV2")(splits, rows, 0, 0)
        longest = _C.op("Max")(_C.op("ConcatV2")([splits[1:] - splits[:-1],
                                                   convert_to_tensor([0], dtype=dtypes.int64)], 0), [0], False)
        return unsorted_segment_join(values, positions, longest, separator)
    raise ValueError(f"reduce_join of a RaggedTensor of ragged_rank {ragged_rank} along axis {axis}: ember joins "
                     f"along no axis, the innermost ragged axis ({ragged_rank}), a dense axis, or axis 0 of a "
                     f"ragged_rank-1 tensor")


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001 - TensorFlow's name
    """Formats tensors into ``template`` (each ``placeholder`` takes the next tensor, written as tf.print
    writes it): ``format("x={}", [tf.constant([1, 2])])`` is ``b"x=[1 2]"``."""
    if isinstance(inputs, (list, tuple)):
        tensors = [x if isinstance(x, Tensor) else convert_to_tensor(x) for x in inputs]
    else:
        tensors = [inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)]
    summarize = -1 if summarize is None else _int(summarize, "summarize")
    return _StringFormat(tensors, template, placeholder, max(summarize, -1))


def to_number(input, out_type=dtypes.float32, name=None):  # noqa: A002
    """Parses each string as a number of ``out_type`` (float32, float64, int32, int64)."""
    return _StringToNumber(_strings(input), dtypes.as_dtype(out_type))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Formats each element as a string: floats as ``%f`` unless ``precision``/``scientific``/``shortest``
    say otherwise, integers as ``%d``, bools as ``true``/``false``; ``width`` and ``fill`` pad."""
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    return _AsString(x, _int(precision, "precision"), bool(scientific), bool(shortest), _int(width, "width"), fill)


def _static_string(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else None


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of the RE2 ``pattern`` with ``rewrite`` (``\\1`` names a group): the first match, or
    every one when ``replace_global``."""
    p, r = _static_string(pattern), _static_string(rewrite)
    if p is not None and r is not None:  # TensorFlow's StaticRegexReplace: compiled once per call
        return _StaticRegexReplace(_strings(input), p, r, bool(replace_global))
    return _RegexReplace(_strings(input), _strings(pattern), _strings(rewrite), bool(replace_global))


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each string matches the RE2 ``pattern`` entirely."""
    p = _static_string(pattern)
    if p is not None:
        return _StaticRegexFullMatch(_strings(input), p)
    return _RegexFullMatch(_strings(input), _strings(pattern))


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002 - TensorFlow's argument names
    """The substring of each string from ``pos`` (from the end when negative), at most ``len`` long."""
    pos_t = pos if isinstance(pos, Tensor) else convert_to_tensor(pos, dtype_hint=dtypes.int32)
    len_t = len if isinstance(len, Tensor) else convert_to_tensor(len, dtype=pos_t.dtype)
    return _Substr(_strings(input), pos_t, len_t, _unit(unit))


def upper(input, encoding="", name=None):  # noqa: A002
    """ASCII letters to upper case (TensorFlow's default encoding "")."""
    return _StringUpper(_strings(input), encoding)


def lower(input, encoding="", name=None):  # noqa: A002
    """ASCII letters to lower case (TensorFlow's default encoding "")."""
    return _StringLower(_strings(input), encoding)


def strip(input, name=None):  # noqa: A002
    """Removes leading and trailing whitespace."""
    return _StringStrip(_strings(input))


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """FarmHash Fingerprint64 of each string modulo ``num_buckets``: TensorFlow's buckets."""
    return _StringToHashBucketFast(_strings(input), _int(num_buckets, "num_buckets"))


def _ragged_from_row_splits(values, row_splits):
    """A RaggedTensor from the composite layer (ember.ragged); the pieces as a _SplitResult where that layer
    is missing from this build."""
    try:
        from ember.ragged import RaggedTensor
    except ImportError:
        return _SplitResult(values, row_splits)
    return RaggedTensor.from_row_splits(values, row_splits, validate=False)


class _SplitResult:
    """What split and unicode_decode return without ember.ragged: flat values and row splits, with
    RaggedTensor's to_list, values and row_splits."""

    def __init__(self, values, row_splits):
        self.values = values
        self.row_splits = row_splits

    def to_list(self):
        splits = self.row_splits.numpy().tolist()
        flat = self.values.numpy().tolist()
        return [flat[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]

    def __repr__(self):
        return f"<ember.strings split result {self.to_list()!r}>"


def _row_splits_from_indices(indices, batch):
    """Row splits [batch + 1] from StringSplitV2's sorted [n, 2] indices."""
    rows = _C.op("Cast")(indices[:, 0], dtypes.int32) if indices.dtype != dtypes.int32 else indices[:, 0]
    counts = _C.op("UnsortedSegmentSum")(_C.op("OnesLike")(rows), rows, batch)
    zero = convert_to_tensor([0], dtype=dtypes.int32)
    splits = _C.op("ConcatV2")([zero, _C.op("Cumsum")(counts, 0, False, False)], 0)
    return _C.op("Cast")(splits, dtypes.int64)


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits each string on ``sep`` (runs of whitespace when None): a scalar gives a vector, a [d1, ..., dn]
    tensor a RaggedTensor [d1, ..., dn, None] of its pieces (TensorFlow's tf.strings.split)."""
    x = _strings(input)
    sep_t = _strings("" if sep is None else sep)
    if x.ndim == 0:
        _, values, _ = _StringSplitV2(_Reshape(x, [1]), sep_t, _int(maxsplit, "maxsplit"))
        return values
    if x.ndim != 1:
        return _per_string(x, lambda flat: split(flat, sep, maxsplit))
    indices, values, shape = _StringSplitV2(x, sep_t, _int(maxsplit, "maxsplit"))
    return _ragged_from_row_splits(values, _row_splits_from_indices(indices, _C.op("Size")(x, dtypes.int32)))


def _per_string(x, ragged_of_vector):
    """``ragged_of_vector`` (a vector of strings -> a RaggedTensor with one row per string) applied to a
    tensor of rank >= 2: its outer dimensions become uniform row partitions, as TensorFlow nests the result
    ([2, 3] strings -> [2, 3, None])."""
    from ember.ragged import RaggedTensor

    shape = x.shape.as_list()
    dims = _C.op("Shape")(x, dtypes.int64)
    result = ragged_of_vector(_Reshape(x, [-1]))
    for axis in range(len(shape) - 1, 0, -1):
        # nrows given, since a zero-size dimension leaves it unknowable from the lengths
        outer = shape[:axis]
        nrows = int(np.prod(outer)) if None not in outer else _C.op("Prod")(dims[:axis], 0, False)
        result = RaggedTensor.from_uniform_row_length(result, shape[axis] if shape[axis] is not None else
                                                      dims[axis], nrows=nrows, validate=False)
    return result


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """The code points of each string (int32): a scalar gives a vector, a [d1, ..., dn] tensor a RaggedTensor
    [d1, ..., dn, None]."""
    x = _strings(input)
    splits, chars = _UnicodeDecode(x, input_encoding, errors, _int(replacement_char, "replacement_char"),
                                   bool(replace_control_characters), dtypes.int64)
    if x.ndim == 0:
        return chars
    if x.ndim != 1:  # the op decodes the flattened strings
        return _per_string(x, lambda _: _ragged_from_row_splits(chars, splits))
    return _ragged_from_row_splits(chars, splits)


def _to_list_of_bytes(t):
    return np.asarray(t.numpy(), dtype=object).tolist()


_ENCODINGS = ("UTF-8", "UTF-16-BE", "UTF-32-BE")


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Encodes int32 code points as strings: the innermost dimension (dense or ragged) holds each string's
    characters, so a [..., k] tensor gives [...] strings (TensorFlow's tf.strings.unicode_encode)."""
    import ember as tf

    if output_encoding not in _ENCODINGS:
        raise ValueError(f"tf.strings.unicode_encode: output_encoding must be one of {list(_ENCODINGS)}, got "
                         f"{output_encoding!r}")
    attrs = (errors, output_encoding, _int(replacement_char, "replacement_char"), dtypes.int64)
    if isinstance(input, tf.RaggedTensor):
        if isinstance(input.values, tf.RaggedTensor) or input.values.shape.rank != 1:
            return input.with_values(unicode_encode(input.values, output_encoding, errors, replacement_char))
        return _UnicodeEncode(tf.cast(input.values, tf.int32), tf.cast(input.row_splits, tf.int64), *attrs)
    x = convert_to_tensor(input, dtype=dtypes.int32) if not isinstance(input, Tensor) else input
    if x.dtype != dtypes.int32:
        raise TypeError(f"tf.strings.unicode_encode: input must be int32 code points, got {x.dtype.name}")
    if x.shape.rank == 0:
        raise ValueError("tf.strings.unicode_encode: input must have rank >= 1 (its last dimension holds the "
                         "characters), got a scalar")
    shape = tf.shape(x, out_type=tf.int64)
    outer, k = shape[:-1], shape[-1]
    rows = tf.reduce_prod(outer)
    splits = tf.range(rows + 1, dtype=tf.int64) * k
    encoded = _UnicodeEncode(tf.reshape(x, [-1]), splits, *attrs)
    return tf.reshape(encoded, outer)


def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                      replace_control_characters=False, name=None):
    """Each string re-encoded from ``input_encoding`` (UTF-8, UTF-16-BE or UTF-32-BE) to ``output_encoding``
    (the same three); ill-formed input is replaced, dropped or an error as ``errors`` says (Note [Ill-formed
    UTF-16 and UTF-32] in src/ember/ops/strings.cc). A RaggedTensor's values are transcoded."""
    import ember as tf

    attrs = (input_encoding, output_encoding, errors, _int(replacement_char, "replacement_char"),
             bool(replace_control_characters))
    if isinstance(input, tf.RaggedTensor):
        return input.with_flat_values(_UnicodeTranscode(_strings(input.flat_values), *attrs))
    return _UnicodeTranscode(_strings(input), *attrs)


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Each string's characters as one-character strings: a scalar gives a vector, a vector a RaggedTensor
    (TensorFlow's tf.strings.unicode_split)."""
    import ember as tf

    chars = unicode_decode(input, input_encoding, errors, replacement_char)
    if isinstance(chars, tf.RaggedTensor):
        return chars.with_flat_values(unicode_encode(tf.expand_dims(chars.flat_values, -1), input_encoding,
                                                     errors, replacement_char))
    return unicode_encode(tf.expand_dims(chars, -1), input_encoding, errors, replacement_char)


def unicode_decode_with_offsets(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                                replace_control_characters=False, name=None):
    """unicode_decode's code points and, shaped alike (int64), the byte offset in its string where each
    character starts. The offsets come from a host pass over the bytes (Python's UTF-8 decoder, which
    groups an invalid sequence into replacement characters as TensorFlow's does)."""
    chars = unicode_decode(input, input_encoding, errors, replacement_char, replace_control_characters)
    return chars, _like(chars, _char_offsets(_strings(input), input_encoding, errors))


def unicode_split_with_offsets(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                               name=None):
    """unicode_split's characters and, shaped alike (int64), the byte offset where each starts."""
    chars = unicode_split(input, input_encoding, errors, replacement_char)
    return chars, _like(chars, _char_offsets(_strings(input), input_encoding, errors))


def _like(result, flat_offsets):
    """flat_offsets shaped as result (a vector, or a RaggedTensor whose flat values they replace)."""
    flat = result if isinstance(result, Tensor) else result.flat_values
    if not flat._is_symbolic and not flat_offsets._is_symbolic and flat.shape[0] != flat_offsets.shape[0]:
        from ember import errors

        # Both replace each maximal subpart of ill-formed UTF-8 once (Note [Ill-formed UTF-8] in
        # kernels/strings.cc): a disagreement is ember's bug, said rather than misaligned.
        raise errors.InternalError(None, None, f"tf.strings: the decoder gave {flat.shape[0]} characters "
                                               f"where the offsets count {flat_offsets.shape[0]}")
    if isinstance(result, Tensor):
        return _Reshape(flat_offsets, _C.op("Shape")(result, dtypes.int64))
    return result.with_flat_values(_Reshape(flat_offsets, _C.op("Shape")(result.flat_values, dtypes.int64)))


def _char_offsets(x, input_encoding, errors):
    """The start offset of every decoded character of every string of x (row-major), as one int64 vector."""
    if input_encoding != "UTF-8":
        raise ValueError(f"tf.strings: the offsets are computed for input_encoding \"UTF-8\" only, got "
                         f"{input_encoding!r}")

    def offsets(strings):
        flat = [_starts(s, errors) for s in np.asarray(strings, dtype=object).reshape(-1).tolist()]
        return np.array([o for row in flat for o in row], np.int64)

    if not x._is_symbolic:
        return convert_to_tensor(offsets(x.numpy()), dtype=dtypes.int64)
    from ember.ops.script_ops import numpy_function

    return _Reshape(numpy_function(offsets, [x], dtypes.int64, stateful=False), [-1])


def _starts(data, errors):
    """Where each character decoded from the bytes ``data`` starts: a valid character where it is, an
    invalid sequence (one replacement character, or none with errors="ignore") where it begins."""
    bad = []
    try:
        text = codecs.utf_8_decode(data, "strict", True)[0]
        bad_at = {}
    except UnicodeDecodeError:
        position = 0
        pieces = []
        while position < len(data):  # decode valid runs, recording each invalid span Python's decoder finds
            try:
                pieces.append(data[position:].decode("utf-8"))
                break
            except UnicodeDecodeError as e:
                pieces.append(data[position:position + e.start].decode("utf-8"))
                bad.append((position + e.start, position + e.end))
                pieces.append(None)
                position += e.end
        text = pieces
        bad_at = dict(bad)
    if not bad_at:
        starts, position = [], 0
        for ch in text:
            starts.append(position)
            position += len(ch.encode("utf-8", "surrogatepass"))
        return starts
    starts, position = [], 0
    for piece in text:
        if piece is None:
            if errors != "ignore":
                starts.append(position)
            position = bad_at[position]
            continue
        for ch in piece:
            starts.append(position)
            position += len(ch.encode("utf-8", "surrogatepass"))
    return starts


def bytes_split(input, name=None):  # noqa: A002
    """Each string's bytes as one-byte strings: a scalar gives a vector, a [d1, ..., dn] tensor a RaggedTensor
    [d1, ..., dn, None] (TensorFlow's tf.strings.bytes_split)."""
    x = _strings(input)
    if x.ndim == 0:
        return bytes_split(_Reshape(x, [1])).flat_values
    if x.ndim != 1:
        return _per_string(x, bytes_split)
    from ember.ragged import RaggedTensor

    lengths = _C.op("Cast")(_StringLength(x, "BYTE"), dtypes.int64)
    splits = _C.op("ConcatV2")([convert_to_tensor([0], dtype=dtypes.int64), _C.op("Cumsum")(lengths, 0, False,
                                                                                           False)], 0)
    total = splits[-1]
    positions = _range64(total)
    rows = RaggedTensor.from_row_splits(positions, splits, validate=False).value_rowids()
    within = positions - _C.op("GatherV2")(splits, rows, 0, 0)
    pieces = _Substr(_C.op("GatherV2")(x, rows, 0, 0), within, _C.op("OnesLike")(within), "BYTE")
    return RaggedTensor.from_row_splits(pieces, splits, validate=False)


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """UnsortedSegmentJoin: output[s] joins (with separator, in their order) the slices of inputs whose
    segment id is s; a segment without one is "". segment_ids index inputs' leading dimensions."""
    x = _strings(inputs)
    ids = segment_ids if isinstance(segment_ids, Tensor) else convert_to_tensor(segment_ids, dtype_hint=dtypes.int32)
    if not ids.dtype.is_integer:
        raise TypeError(f"UnsortedSegmentJoin: segment_ids must be integers, got {ids.dtype.name}")
    k = ids.shape.rank
    if k is None or x.shape.rank is None:
        raise ValueError("UnsortedSegmentJoin: the ranks of inputs and segment_ids must be known")
    if x.shape.rank < k or any(a is not None and b is not None and a != b
                               for a, b in zip(x.shape.as_list()[:k], ids.shape.as_list())):
        raise ValueError(f"UnsortedSegmentJoin: segment_ids' shape {ids.shape} must be a prefix of inputs' "
                         f"shape {x.shape}")
    segments = _C.op("Cast")(num_segments if isinstance(num_segments, Tensor)
                             else convert_to_tensor(num_segments, dtype=dtypes.int64), dtypes.int64)
    ids = _Reshape(_C.op("Cast")(ids, dtypes.int64), [-1])
    if not ids._is_symbolic and not segments._is_symbolic:
        v, n = ids.numpy(), int(segments.numpy())
        if v.size and (v.min() < 0 or v.max() >= n):
            raise _invalid("UnsortedSegmentJoin", "segment_ids are not allowed to exceed num_segments or to have "
                                                  "negative values.")
    inner = _C.op("Shape")(x, dtypes.int64)[k:]
    flat = _Reshape(x, _C.op("ConcatV2")([convert_to_tensor([-1], dtype=dtypes.int64), inner], 0))
    from ember.ops import sort_ops

    order = sort_ops.argsort(ids, stable=True)  # each segment's slices together, in their order
    ids_sorted = _C.op("GatherV2")(ids, order, 0, 0)
    flat = _C.op("GatherV2")(flat, order, 0, 0)
    count = _C.op("UnsortedSegmentSum")(_C.op("OnesLike")(ids), ids, segments)
    start = _C.op("Cumsum")(count, 0, True, False)
    n = _C.op("Size")(ids, dtypes.int64)
    rank_in_segment = _range64(n) - _C.op("GatherV2")(start, ids_sorted, 0, 0)
    # The separator goes before every slice but its segment's first, so a padded row joins with "".
    first = _C.op("Equal")(rank_in_segment, _C.op("ZerosLike")(rank_in_segment))
    first = _Reshape(first, _C.op("ConcatV2")([convert_to_tensor([-1], dtype=dtypes.int64),
                                                _C.op("OnesLike")(inner)], 0))
    prefixed = _C.op("SelectV2")(first, flat, _StringJoin([_strings(separator), flat], ""))
    padded = _C.op("ConcatV2")([prefixed, _C.op("ZerosLike")(prefixed[:1])], 0)  # index n: the empty string
    width = _C.op("Max")(_C.op("ConcatV2")([count, convert_to_tensor([0], dtype=dtypes.int64)], 0), [0], False)
    j = _range64(width)
    table = _Reshape(start, [-1, 1]) + _Reshape(j, [1, -1])
    inside = _C.op("Less")(_Reshape(j, [1, -1]), _Reshape(count, [-1, 1]))
    table = _C.op("SelectV2")(inside, table, _C.op("Fill")(_C.op("Shape")(table, dtypes.int64), n))
    return _ReduceJoin(_C.op("GatherV2")(padded, table, 0, 0), convert_to_tensor([1], dtype=dtypes.int32), False, "")


def _range64(limit):
    return _C.op("Range")(convert_to_tensor(0, dtype=dtypes.int64), limit, convert_to_tensor(1, dtype=dtypes.int64))


def _invalid(op, message):
    from ember import errors

    return errors.InvalidArgumentError(None, None, f"{op}: {message}")



def _ngram_pads(pad_values):
    """(left, right) pad strings from ``pad_values``: None, one string for both sides, or a (left, right)
    pair; TensorFlow's TypeError otherwise."""
    if pad_values is None:
        return "", ""
    pads = tuple(pad_values) if isinstance(pad_values, (list, tuple)) else (pad_values, pad_values)
    if len(pads) != 2 or not all(isinstance(p, (str, bytes)) for p in pads):
        raise TypeError(f"pad_values must be a string, tuple of strings, or None. Got {pad_values!r}")
    return tuple(_static_string(p) for p in pads)


def _ngram_widths(ngram_width):
    """The widths as Python ints (the op's attribute): TensorFlow takes an int-like value or a list of them,
    and rejects a width below 1 with its ValueError."""
    widths = list(ngram_width) if isinstance(ngram_width, (list, tuple)) else [ngram_width]
    converted = []
    for width in widths:
        if isinstance(width, (str, bytes)) or (isinstance(width, Tensor) and width._is_symbolic):
            raise TypeError(f"Expected int for argument 'ngram_widths' not {width!r}.")
        try:
            converted.append(int(width))
        except (TypeError, ValueError):
            raise TypeError(f"Expected int for argument 'ngram_widths' not {width!r}.") from None
    if any(width < 1 for width in converted):
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    return converted


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,  # noqa: PLR0913
           preserve_short_sequences=False, name=None):
    """The n-grams of the innermost axis of ``data`` (a string tensor of rank >= 1 or a RaggedTensor), each
    window of ``ngram_width`` adjacent strings joined by ``separator`` (every width of a list, in turn).
    ``pad_values`` (one string or a (left, right) pair) adds ``padding_width`` pads to each side (default
    width - 1); ``preserve_short_sequences`` keeps a non-empty row too short for any n-gram as one n-gram.
    A dense tensor [..., S] gives a dense [..., n-grams per row], a RaggedTensor a RaggedTensor of the same
    ragged rank: ``ngrams(["A", "B", "C"], 2)`` is ``[b"A B", b"B C"]`` (TensorFlow's tf.strings.ngrams)."""
    from ember.ragged import RaggedTensor

    left_pad, right_pad = _ngram_pads(pad_values)
    if padding_width is not None and padding_width < 1:
        raise ValueError(f"padding_width must be greater than 0. Got {padding_width}")
    if padding_width is not None and pad_values is None:
        raise ValueError("pad_values must be provided if padding_width is set.")
    if not isinstance(separator, (str, bytes)):
        raise TypeError(f"Expected string for argument 'separator' not {separator!r}.")
    # The op's pad_width: 0 without pads; -1 (each width - 1) when padded without a width.
    pad_width = 0 if pad_values is None else (-1 if padding_width is None else _int(padding_width, "padding_width"))

    def grams_of_rows(values, row_splits):
        return _StringNGrams(values, row_splits, _static_string(separator), _ngram_widths(ngram_width), left_pad,
                             right_pad, pad_width, bool(preserve_short_sequences))

    if isinstance(data, RaggedTensor):
        if data.dtype != dtypes.string:
            raise ValueError(f"tf.strings.ngrams: data must hold strings, got a RaggedTensor of {data.dtype.name}")
        if data.ragged_rank > 1:  # the n-grams of the innermost rows, under the same outer partitions
            return data.with_values(ngrams(data.values, ngram_width, separator, pad_values, padding_width,
                                           preserve_short_sequences))
        values, splits = grams_of_rows(data.values, data.row_splits)
        return RaggedTensor.from_row_splits(values, splits, validate=False)

    x = convert_to_tensor(data, dtype=dtypes.string)  # TensorFlow's ValueError for a tensor of another dtype
    if x.shape.rank is None:
        raise ValueError("Rank of data must be known.")
    if x.shape.rank == 0:
        raise ValueError("Data must have rank>0")
    shape = _C.op("Shape")(x, dtypes.int64)
    row_length = shape[-1]
    rows = _C.op("Prod")(shape[:-1], 0, False)
    # Every row of a dense tensor is as long as the last dimension: uniform splits over the flattened rows.
    splits = _C.op("Range")(0, rows + 1, 1) * row_length
    values, _ = grams_of_rows(_Reshape(x, [-1]), splits)
    if x.shape.rank == 1:
        return values
    minus_one = convert_to_tensor([-1], dtype=dtypes.int64)
    return _Reshape(values, _C.op("ConcatV2")([shape[:-1], minus_one], 0))

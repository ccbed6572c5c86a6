"""tf.strings.unicode_transcode (UnicodeTranscode, src/ember/ops/strings.cc) against TensorFlow 2.21: every
pair of UTF-8, UTF-16-BE and UTF-32-BE, each errors mode, replacement characters and control characters, on
hand-picked and random ill-formed byte strings (Note [Ill-formed UTF-8], Note [Ill-formed UTF-16 and
UTF-32]); errors name the op; eager against ember.function."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors

ENCODINGS = ["UTF-8", "UTF-16-BE", "UTF-32-BE"]

HAND_PICKED = {
    "UTF-8": [b"", b"a\xe2\x82", b"\xed\xa0\x80x", b"\xf0\x90\x80", b"\xc0\xaf", b"\x01\x1f\x7f\xc2\x85",
              b"\xef\xbb\xbfa", b"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", b"\xf4\x90\x80\x80", b"\xff\xfe",
              b"a\x00b"],
    "UTF-16-BE": [b"\x00a\xd8\x00", b"\x00a\x00", b"\xdc\x00\x00b", b"\xd8\x00\xdc\x00", b"\xd8\x00\xd8\x00\xdc\x00",
                  b"\xd8\x00\x00", b"\xd8\x00\x00a", b"\xfe\xff\x00a", b"\x00\x01\x00\x7f"],
    "UTF-32-BE": [b"\x00\x00\x00a\x00\x11\x00\x00", b"\x00\x00\xd8\x00", b"\x00\x00\x00", b"\xff\xff\xff\xff\x00\x00\x00b",
                  b"\x00\x00\x00a\x00\x00", b"\x00\x01\xf6\x00\x00\x00\x00\x1f"],
}


def _random_strings(rng, encoding, count):
    """Byte strings mostly well-formed in `encoding`, with damage: bytes flipped, cut short, surrogates,
    values past U+10FFFF, stray continuation bytes."""
    out = []
    for _ in range(count):
        cps = rng.choice([rng.integers(0, 0x80), rng.integers(0x80, 0x800), rng.integers(0x800, 0xD800),
                          rng.integers(0xE000, 0x10000), rng.integers(0x10000, 0x110000)], rng.integers(0, 6))
        text = "".join(chr(int(c)) for c in cps)
        data = bytearray(text.encode({"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}[encoding]))
        for _ in range(rng.integers(0, 3)):
            kind = rng.integers(0, 5)
            if kind == 0 and data:
                data[rng.integers(0, len(data))] = rng.integers(0, 256)
            elif kind == 1 and data:
                del data[rng.integers(0, len(data)):]
            elif kind == 2:
                at = rng.integers(0, len(data) + 1)
                data[at:at] = bytes(rng.integers(0, 256, rng.integers(1, 4)).tolist())
            elif kind == 3:
                surrogate = int(rng.integers(0xD800, 0xE000))
                data += {"UTF-8": bytes([0xED, 0xA0 | ((surrogate >> 6) & 0x1F), 0x80 | (surrogate & 0x3F)]),
                         "UTF-16-BE": surrogate.to_bytes(2, "big"),
                         "UTF-32-BE": surrogate.to_bytes(4, "big")}[encoding]
            elif kind == 4 and encoding == "UTF-32-BE":
                data += int(rng.integers(0x110000, 0xFFFFFFFF)).to_bytes(4, "big")
        out.append(bytes(data))
    return out


def _both(strings, *args, **kwargs):
    ours = em.strings.unicode_transcode(em.constant(strings), *args, **kwargs)
    theirs = real_tf.strings.unicode_transcode(real_tf.constant(strings), *args, **kwargs)
    return ours.numpy().tolist(), theirs.numpy().tolist()


@pytest.mark.parametrize("input_encoding", ENCODINGS)
@pytest.mark.parametrize("output_encoding", ENCODINGS)
def test_transcode_matches_tensorflow(input_encoding, output_encoding):
    rng = np.random.default_rng(len(input_encoding) * 31 + len(output_encoding))
    strings = HAND_PICKED[input_encoding] + _random_strings(rng, input_encoding, 300)
    for kwargs in ({}, {"errors": "ignore"}, {"replacement_char": ord("?"), "replace_control_characters": True},
                   {"replacement_char": 0x1F600}, {"replacement_char": 0}, {"replacement_char": 0xD800}):
        ours, theirs = _both(strings, input_encoding, output_encoding, **kwargs)
        for s, o, t in zip(strings, ours, theirs):
            assert o == t, f"{s!r} {input_encoding} -> {output_encoding} {kwargs}: ember {o!r}, TensorFlow {t!r}"


@pytest.mark.parametrize("input_encoding", ENCODINGS)
def test_strict_errors_match_tensorflow(input_encoding):
    rng = np.random.default_rng(1)
    for s in HAND_PICKED[input_encoding] + _random_strings(rng, input_encoding, 100):
        try:
            expected = real_tf.strings.unicode_transcode(s, input_encoding, "UTF-8", errors="strict").numpy()
        except real_tf.errors.InvalidArgumentError:
            with pytest.raises(errors.InvalidArgumentError, match="UnicodeTranscode: invalid"):
                em.strings.unicode_transcode(s, input_encoding, "UTF-8", errors="strict")
        else:
            assert em.strings.unicode_transcode(s, input_encoding, "UTF-8", errors="strict").numpy() == expected


def test_shapes_ragged_and_traced():
    x = [[b"ab", b""], [b"\xff", b"c"]]
    ours, theirs = _both(x, "UTF-8", "UTF-32-BE")
    assert ours == theirs
    fn = em.function(lambda s: em.strings.unicode_transcode(s, "UTF-8", "UTF-16-BE"))
    assert fn(em.constant(x)).numpy().tolist() == _both(x, "UTF-8", "UTF-16-BE")[0]
    assert fn.get_concrete_function(em.TensorSpec([None, 2], em.string)).structured_outputs.shape.as_list() == \
        [None, 2]
    assert em.strings.unicode_transcode(b"\xc3\xa9", "utf8", "UTF-16-BE").numpy() == b"\x00\xe9"
    ragged = em.ragged.constant([[b"a\xff"], [b"b", b"c"]])
    out = em.strings.unicode_transcode(ragged, "UTF-8", "UTF-8", replacement_char=ord("?"))
    assert out.to_list() == [[b"a?"], [b"b", b"c"]]


@pytest.mark.parametrize("kwargs,match", [
    ({"output_encoding": "UTF-16-LE"}, "output_encoding"),
    ({"input_encoding": "bogus"}, "input_encoding"),
    ({"errors": "bad"}, "errors"),
    ({"replacement_char": 0x110000}, "replacement_char"),
    ({"replacement_char": -1}, "replacement_char"),
])
def test_bad_attributes_are_errors_naming_the_op(kwargs, match):
    args = {"input_encoding": "UTF-8", "output_encoding": "UTF-8", **kwargs}
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.strings.unicode_transcode(b"a\xff", **args)
    with pytest.raises(errors.InvalidArgumentError, match=f"UnicodeTranscode.*{match}"):
        em.strings.unicode_transcode(b"a\xff", **args)
    with pytest.raises(errors.InvalidArgumentError, match="UnicodeTranscode"):
        em.strings.unicode_transcode(em.constant([1.0]), "UTF-8", "UTF-8")

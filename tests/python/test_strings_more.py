"""tf.strings.bytes_split, unsorted_segment_join, unicode_decode_with_offsets and unicode_split_with_offsets
(python/ember/strings.py) against TensorFlow 2.21: each case runs with ember and with TensorFlow (the module
passed in), eagerly and inside ember.function."""
import pytest
import tensorflow as real_tf

import ember as em


def _value(x):
    if isinstance(x, (tuple, list)):
        return tuple(_value(v) for v in x)
    if isinstance(x, (em.RaggedTensor, real_tf.RaggedTensor)):
        return ("ragged", x.to_list(), x.flat_values.dtype.name)
    return ("dense", x.numpy().tolist(), x.dtype.name, x.shape.as_list())


def _both(case):
    theirs = _value(case(real_tf))
    assert _value(case(em)) == theirs
    assert _value(em.function(lambda: case(em))()) == theirs


MIXED = ["héllo", b"\xffa\x82b", "€x", b"", b"\xc0\xafz", b"\xed\xa0\x80q", b"\xf0\x9f\x98\x80a"]

CASES = {
    "bytes_split_scalar": lambda m: m.strings.bytes_split("héllo"),
    "bytes_split_vector": lambda m: m.strings.bytes_split(["ab", "", "c"]),
    "bytes_split_matrix": lambda m: m.strings.bytes_split([["ab"], ["c"]]),
    "bytes_split_empty_vector": lambda m: m.strings.bytes_split(m.constant([], m.string)),
    "join_vector": lambda m: m.strings.unsorted_segment_join(["a", "b", "c", "d"], [1, 0, 1, 1], 3, separator=":"),
    "join_rows": lambda m: m.strings.unsorted_segment_join([["a", "x"], ["b", "y"], ["c", "z"]], [1, 0, 1], 2,
                                                           separator="-"),
    "join_matrix_ids": lambda m: m.strings.unsorted_segment_join([["a", "x"], ["b", "y"]], [[0, 1], [1, 1]], 2),
    "join_int64_ids": lambda m: m.strings.unsorted_segment_join(["p", "q"], m.constant([1, 1], m.int64),
                                                                m.constant(3, m.int64), separator=", "),
    "join_no_inputs": lambda m: m.strings.unsorted_segment_join(m.constant([], m.string), m.constant([], m.int32), 2),
    "decode_offsets": lambda m: m.strings.unicode_decode_with_offsets(MIXED, "UTF-8"),
    "decode_offsets_ignore": lambda m: m.strings.unicode_decode_with_offsets(MIXED, "UTF-8", errors="ignore"),
    "decode_offsets_scalar": lambda m: m.strings.unicode_decode_with_offsets(b"\xf0\x9f\x98\x80a", "UTF-8"),
    "decode_offsets_matrix": lambda m: m.strings.unicode_decode_with_offsets([["ab", "é"], ["€", ""]], "UTF-8"),
    "decode_offsets_control": lambda m: m.strings.unicode_decode_with_offsets(["a\x01b"], "UTF-8",
                                                                              replace_control_characters=True),
    "decode_control_del_c1": lambda m: m.strings.unicode_decode(["\x1f\x7f\x80\x9f\xa0", b"\xc2\x85\x00"], "UTF-8",
                                                                replace_control_characters=True),
    "split_offsets": lambda m: m.strings.unicode_split_with_offsets(["héllo", b"\xffa"], "UTF-8"),
    "split_offsets_scalar": lambda m: m.strings.unicode_split_with_offsets("h€", "UTF-8"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    _both(CASES[name])


def test_segment_ids_out_of_range_is_invalid_argument():
    for ids in ([-1, 0], [5, 0]):
        with pytest.raises(em.errors.InvalidArgumentError,
                           match="UnsortedSegmentJoin: segment_ids are not allowed to exceed num_segments"):
            em.strings.unsorted_segment_join(["a", "b"], ids, 2)
        with pytest.raises(real_tf.errors.InvalidArgumentError, match="not allowed to exceed num_segments"):
            real_tf.strings.unsorted_segment_join(["a", "b"], ids, 2)


def test_segment_ids_shape_must_prefix_inputs():
    with pytest.raises(ValueError, match="must be a prefix of inputs' shape"):
        em.strings.unsorted_segment_join(["a", "b"], [0, 1, 1], 2)


def test_strict_errors_raise_on_invalid_utf8():
    with pytest.raises(em.errors.InvalidArgumentError):
        em.strings.unicode_decode_with_offsets([b"\xff"], "UTF-8", errors="strict")


def test_truncated_sequence_decodes_to_one_replacement_with_its_offset():
    # A cut-off b"\xe2\x82" is one ill-formed subpart: one replacement character, as TensorFlow.
    for data in (b"a\xe2\x82", b"\xe2\x82b"):
        ours = em.strings.unicode_decode_with_offsets([data], "UTF-8")
        theirs = real_tf.strings.unicode_decode_with_offsets([data], "UTF-8")
        assert [o.to_list() for o in ours] == [t.to_list() for t in theirs]

"""tf.nest (python/ember/util/nest.py): flatten, pack_sequence_as, map_structure, assert_same_structure and
is_nested, each compared with TensorFlow 2 on the same structures, error types and messages included."""
import collections

import attr
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

Point = collections.namedtuple("Point", "x y")
Other = collections.namedtuple("Other", "x y")


@attr.s
class Pair:
    first = attr.ib()
    second = attr.ib()


STRUCTURES = [
    1, None, "abc", {1, 2}, [], (), {}, [1, (2, 3)], {"b": 1, "a": [2, (3, None)]}, Point(1, [2, 3]),
    collections.OrderedDict([("b", 1), ("a", 2)]), collections.defaultdict(list, {"z": 1, "y": (2,)}),
    Pair(1, {"k": [2]}), [[[]]], ({"a": ()}, [None])
]


@pytest.mark.parametrize("structure", STRUCTURES, ids=repr)
def test_flatten_pack_and_map_match_tensorflow(structure):
    assert tf.nest.flatten(structure) == real_tf.nest.flatten(structure)
    assert tf.nest.is_nested(structure) == real_tf.nest.is_nested(structure)
    flat = list(range(100, 100 + len(real_tf.nest.flatten(structure))))
    ours = tf.nest.pack_sequence_as(structure, flat)
    theirs = real_tf.nest.pack_sequence_as(structure, flat)
    assert type(ours) is type(theirs) and ours == theirs
    if isinstance(ours, dict):
        assert list(ours.keys()) == list(theirs.keys())
    assert tf.nest.map_structure(repr, structure) == real_tf.nest.map_structure(repr, structure)


def test_map_structure_over_several_structures():
    a, b = {"p": (1, 2), "q": [3]}, {"q": [30], "p": (10, 20)}
    assert tf.nest.map_structure(lambda x, y: x + y, a, b) == real_tf.nest.map_structure(lambda x, y: x + y, a, b)
    mixed = ((1, 2), [3, 4])
    assert tf.nest.map_structure(max, *mixed, check_types=False) == (3, 4)
    assert tf.nest.map_structure(max, Point(1, 2), Other(3, 0), check_types=False) == Point(3, 2)


def error_of(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except (ValueError, TypeError) as e:
        return type(e), str(e)
    return None


MISMATCHES = [
    ((1, 2), [1, 2]), ((1, 2), (1,)), ({"a": 1}, {"b": 1}), ((1, (2,)), (1, 2)), ([1], 1), (1, [1]),
    (Point(1, 2), Other(1, 2)), (Point(1, 2), (1, 2)), ({"a": [1, 2]}, {"a": [1, (2,)]}),
]


@pytest.mark.parametrize("first,second", MISMATCHES, ids=repr)
def test_assert_same_structure_errors_match_tensorflow(first, second):
    ours = error_of(tf.nest.assert_same_structure, first, second)
    assert ours is not None
    assert ours == error_of(real_tf.nest.assert_same_structure, first, second)
    assert error_of(tf.nest.map_structure, lambda *x: x, first, second) == \
        error_of(real_tf.nest.map_structure, lambda *x: x, first, second)


def test_assert_same_structure_without_type_checks():
    for first, second in [((1, 2), [3, 4]), (Point(1, 2), Other(3, 4)), (Point(1, 2), (3, 4))]:
        tf.nest.assert_same_structure(first, second, check_types=False)
        real_tf.nest.assert_same_structure(first, second, check_types=False)


@pytest.mark.parametrize("call", [
    lambda nest: nest.pack_sequence_as((1, 2), [1]),
    lambda nest: nest.pack_sequence_as((1, 2), [1, 2, 3]),
    lambda nest: nest.pack_sequence_as(1, [1, 2]),
    lambda nest: nest.pack_sequence_as([1], 5),
    lambda nest: nest.map_structure(lambda x: x, (1,), foo=1),
    lambda nest: nest.map_structure(lambda x: x),
    lambda nest: nest.map_structure(5, (1,)),
])
def test_bad_arguments_raise_as_tensorflow(call):
    ours = error_of(call, tf.nest)
    assert ours is not None and ours[0] is error_of(call, real_tf.nest)[0]
    if "5" not in str(ours[1]):  # messages that print the value itself differ only in its repr
        assert ours == error_of(call, real_tf.nest)


def components(values):
    return [np.asarray(v) for v in values]


def assert_components_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(components(ours), components(theirs)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_composites_are_leaves_unless_expanded():
    rt = tf.ragged.constant([[1, 2], [3]])
    assert tf.nest.flatten(rt) == [rt] and not tf.nest.is_nested(rt)
    assert tf.nest.map_structure(lambda x: x * 2, rt).to_list() == [[2, 4], [6]]


def test_expand_composites_flattens_to_components_like_tensorflow():
    ragged, real_ragged = tf.ragged.constant([[1, 2], [3]]), real_tf.ragged.constant([[1, 2], [3]])
    assert_components_equal(tf.nest.flatten({"r": ragged}, expand_composites=True),
                            real_tf.nest.flatten({"r": real_ragged}, expand_composites=True))
    sparse = tf.sparse.SparseTensor([[0, 1]], [1.5], [2, 3])
    real_sparse = real_tf.sparse.SparseTensor([[0, 1]], [1.5], [2, 3])
    assert_components_equal(tf.nest.flatten(sparse, expand_composites=True),
                            real_tf.nest.flatten(real_sparse, expand_composites=True))
    doubled = tf.nest.map_structure(lambda x: x * 2, (ragged,), expand_composites=True)
    real_doubled = real_tf.nest.map_structure(lambda x: x * 2, (real_ragged,), expand_composites=True)
    assert doubled[0].to_list() == real_doubled[0].to_list()
    packed = tf.nest.pack_sequence_as([sparse], [tf.constant([[1, 2]], tf.int64), tf.constant([7.0]),
                                                 tf.constant([3, 4], tf.int64)], expand_composites=True)
    np.testing.assert_array_equal(tf.sparse.to_dense(packed[0]).numpy()[1, 2], 7.0)


def test_assert_same_structure_compares_composite_specs():
    ragged = tf.ragged.constant([[1, 2], [3]])
    tf.nest.assert_same_structure(ragged, tf.ragged.constant([[5]]), expand_composites=True)
    with pytest.raises(ValueError, match="Incompatible CompositeTensor TypeSpecs"):
        tf.nest.assert_same_structure(ragged, tf.ragged.constant([[[1]]]), expand_composites=True)
    with pytest.raises(ValueError, match="Incompatible CompositeTensor TypeSpecs"):
        tf.nest.assert_same_structure(ragged, tf.sparse.SparseTensor([[0, 0]], [1.0], [2, 2]),
                                      expand_composites=True)
    with pytest.raises(ValueError, match="Incompatible CompositeTensor TypeSpecs"):
        real_tf.nest.assert_same_structure(real_tf.ragged.constant([[1]]), real_tf.ragged.constant([[[1]]]),
                                           expand_composites=True)


def test_public_names_match_tensorflow():
    ours = {n for n in dir(tf.nest) if not n.startswith("_")}
    assert ours == {n for n in dir(real_tf.nest) if not n.startswith("_")}

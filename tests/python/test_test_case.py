"""tf.test (python/ember/test.py): TestCase's assertions pass and fail where TensorFlow's do, on the same
values (tensors, NumPy arrays, nested structures); evaluate, session().run, compute_gradient and test_session
as TF's tests use them."""
import collections
import unittest

import numpy as np
import pytest
import tensorflow

import ember

Pair = collections.namedtuple("Pair", "a b")

CASES = [
    ("close dict", lambda tf, t: t.assertAllClose({"a": tf.constant([1.0])}, {"a": [1.0000001]})),
    ("close nested", lambda tf, t: t.assertAllClose([tf.constant([1.0, 2.0]), (3.0, {"k": tf.constant(4)})],
                                                     [[1.0, 2.0], (3.0, {"k": 4})])),
    ("close namedtuple", lambda tf, t: t.assertAllClose(Pair(tf.constant(1.0), 2), Pair(1.0, 2.0))),
    ("close list of tensors", lambda tf, t: t.assertAllClose([tf.constant(1.0), tf.constant(2.0)], [1.0, 2.0])),
    ("not close", lambda tf, t: t.assertAllClose([1.0, 2.0], [1.0, 2.1])),
    ("close keys differ", lambda tf, t: t.assertAllClose({"a": 1}, {"b": 1})),
    ("close shapes differ", lambda tf, t: t.assertAllClose(tf.constant([1.0, 2.0]), [[1.0, 2.0]])),
    ("close tolerance", lambda tf, t: t.assertAllClose([1.0], [1.05], atol=0.1)),
    ("close nan", lambda tf, t: t.assertAllClose([np.nan], [np.nan])),
    ("equal", lambda tf, t: t.assertAllEqual(tf.constant([1, 2]), [1, 2])),
    ("equal strings", lambda tf, t: t.assertAllEqual(tf.constant(["a", "b"]), [b"a", b"b"])),
    ("not equal", lambda tf, t: t.assertAllEqual(tf.constant([1, 2]), [1, 3])),
    ("equal shape", lambda tf, t: t.assertAllEqual(tf.constant([1, 2]), [[1, 2]])),
    ("not all close", lambda tf, t: t.assertNotAllClose([1.0], [2.0])),
    ("not all close fails", lambda tf, t: t.assertNotAllClose([1.0], [1.0])),
    ("not all equal", lambda tf, t: t.assertNotAllEqual([1], [1])),
    ("greater", lambda tf, t: t.assertAllGreater(tf.constant([2, 3]), 1)),
    ("greater fails", lambda tf, t: t.assertAllGreater(tf.constant([2, 3]), 2)),
    ("less equal", lambda tf, t: t.assertAllLessEqual(tf.constant([2, 3]), 3)),
    ("in range", lambda tf, t: t.assertAllInRange(tf.constant([1, 2]), 1, 2)),
    ("in open range", lambda tf, t: t.assertAllInRange(tf.constant([1, 2]), 1, 2, open_lower_bound=True)),
    ("in set", lambda tf, t: t.assertAllInSet(tf.constant([1, 2]), {1, 2, 3})),
    ("not in set", lambda tf, t: t.assertAllInSet(tf.constant([1, 4]), {1, 2, 3})),
    ("near", lambda tf, t: t.assertNear(1.0, 1.05, 0.1)),
    ("array near fails", lambda tf, t: t.assertArrayNear([1.0, 2.0], [1.0, 2.5], 0.1)),
    ("shape equal", lambda tf, t: t.assertShapeEqual(np.zeros((2, 1)), tf.constant([[1], [2]]))),
    ("dtype", lambda tf, t: t.assertDTypeEqual(tf.constant([1.0]), tf.float32)),
    ("dtype fails", lambda tf, t: t.assertDTypeEqual(tf.constant([1.0]), tf.float64)),
    ("according to type", lambda tf, t: t.assertAllCloseAccordingToType(tf.constant([1.0], tf.float16), [1.0005])),
    ("according to type fails", lambda tf, t: t.assertAllCloseAccordingToType(tf.constant([1.0]), [1.0005])),
    ("starts with", lambda tf, t: t.assertStartsWith("abc", "ab")),
    ("equal str and bytes", lambda tf, t: t.assertAllEqual(tf.constant(["a", "b"]), ["a", "b"])),
    ("equal bytes and str arrays", lambda tf, t: t.assertAllEqual(np.array([b"a"]), np.array(["a"]))),
    ("not equal strings", lambda tf, t: t.assertAllEqual(tf.constant(["a"]), ["b"])),
    ("equal ragged", lambda tf, t: t.assertAllEqual(tf.ragged.constant([[1, 2], [3]]), [[1, 2], [3]])),
    ("equal ragged pair", lambda tf, t: t.assertAllEqual(tf.ragged.constant([[1, 2], [3]]),
                                                         tf.ragged.constant([[1, 2], [3]]))),
    ("not equal ragged", lambda tf, t: t.assertAllEqual(tf.ragged.constant([[1, 2], [3]]), [[1, 2], [4]])),
    ("evaluate ragged", lambda tf, t: t.assertEqual(t.evaluate(tf.ragged.constant([[1], []])).to_list(),
                                                    [[1], []])),
]


def _outcome(tf, case):
    class Probe(tf.test.TestCase):
        def runTest(self):  # noqa: N802 - unittest's name
            pass

    probe = Probe()
    try:
        case(tf, probe)
    except AssertionError:
        return "fails"
    return "passes"


@pytest.mark.parametrize("label,case", CASES, ids=[c[0] for c in CASES])
def test_assertions_agree_with_tensorflow(label, case):
    assert _outcome(ember, case) == _outcome(tensorflow, case)


def test_evaluate_session_and_error_matchers():
    class Case(ember.test.TestCase):
        def runTest(self):  # noqa: N802
            values = self.evaluate({"a": ember.constant([1.0]), "b": [ember.constant(2)]})
            np.testing.assert_array_equal(values["a"], [1.0])
            assert values["b"][0] == 2
            with self.cached_session() as session:
                assert session.run(ember.constant(3)) == 3
            with self.assertRaisesOpError("reshape|Reshape"):
                ember.reshape(ember.constant([1, 2, 3]), [2])
            with self.assertRaisesWithPredicateMatch(ValueError, lambda e: "boom" in str(e)):
                raise ValueError("boom")

    result = unittest.TestResult()
    Case().run(result)
    assert result.wasSuccessful(), result.errors + result.failures


def test_test_session_is_not_collected_as_a_test():
    class Case(ember.test.TestCase):
        def test_something(self):
            self.assertAllEqual([1], [1])

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
    assert result.wasSuccessful() and result.testsRun == 2 and len(result.skipped) == 1


def test_compute_gradient_matches_tensorflow():
    x = np.array([[1.0, 2.0, -0.5]], np.float64)
    ours = ember.test.compute_gradient(lambda v: ember.sin(v) * v, [ember.constant(x)])
    theirs = tensorflow.test.compute_gradient(lambda v: tensorflow.sin(v) * v, [tensorflow.constant(x)])
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-8)
    assert ours[0][0].shape == (3, 3)

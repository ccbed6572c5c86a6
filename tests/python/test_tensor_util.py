"""tf.get_static_value (python/ember/framework/tensor_util.py) compared with TensorFlow: eager tensors,
Python values, variables, and graph tensors inside a traced function, where ember knows at least what
TensorFlow knows (and may know more: it folds constants while tracing)."""

import numpy as np
import pytest
import tensorflow

import ember

from tf_differential import same as _same  # noqa: E402


def _plain(value):
    if isinstance(value, np.ndarray) and value.dtype == object:
        return ["object", [None if v is None else v.tolist() for v in value]]
    if isinstance(value, (np.ndarray, np.generic)):
        return ["array", value.dtype.name, list(np.shape(value)), value.tolist()]
    return value


@pytest.mark.parametrize("make", [
    lambda tf: tf.constant([1, 2]),
    lambda tf: tf.constant(2.5),
    lambda tf: tf.constant([["a"]]),
    lambda tf: 5,
    lambda tf: [1, 2],
    lambda tf: np.float32(2.0),
    lambda tf: tf.Variable([1.0, 2.0]),
])
def test_eager_and_python_values(make):
    _same(lambda tf: _plain(tf.get_static_value(make(tf))))


def _traced(tf, body, spec, partial=False):
    seen = []

    def f(x):
        seen.append(_plain(tf.get_static_value(body(tf, x), partial=partial)))
        return x
    tf.function(f, input_signature=[spec(tf)]).get_concrete_function()
    return seen[0]


_KNOWN_TO_BOTH = [
    (lambda tf, x: tf.shape(x), lambda tf: tf.TensorSpec([2, 3], tf.float32)),
    (lambda tf, x: tf.rank(x), lambda tf: tf.TensorSpec([None, 3], tf.float32)),
    (lambda tf, x: tf.constant([1, 2]), lambda tf: tf.TensorSpec([None], tf.float32)),
    (lambda tf, x: tf.zeros([2]), lambda tf: tf.TensorSpec([None], tf.float32)),
    (lambda tf, x: x, lambda tf: tf.TensorSpec([None], tf.float32)),
    (lambda tf, x: x, lambda tf: tf.TensorSpec([2], tf.int32)),
    (lambda tf, x: tf.shape(x), lambda tf: tf.TensorSpec([None, 3], tf.float32)),
]


@pytest.mark.parametrize("body,spec", _KNOWN_TO_BOTH)
def test_traced_values_match_tensorflow(body, spec):
    _same(lambda tf: _traced(tf, body, spec))


def test_partial_value_of_a_stacked_shape():
    stacked = (lambda tf, x: tf.stack([tf.shape(x)[0], 4]))
    spec = (lambda tf: tf.TensorSpec([None, 3], tf.float32))
    _same(lambda tf: _traced(tf, stacked, spec, partial=True))
    _same(lambda tf: _traced(tf, stacked, spec, partial=False))


def test_ember_knows_what_tracing_folded():
    """Where TensorFlow's constant folding gives up, ember's trace has already folded."""
    spec = (lambda tf: tf.TensorSpec([None, 3], tf.float32))
    assert _traced(tensorflow, lambda tf, x: tf.constant(3) + 1, spec) is None
    assert _traced(ember, lambda tf, x: tf.constant(3) + 1, spec) == ["array", "int32", [], 4]
    assert _traced(tensorflow, lambda tf, x: tf.shape(x)[1], spec) is None
    assert _traced(ember, lambda tf, x: tf.shape(x)[1], spec) == ["array", "int32", [], 3]
    assert _traced(ember, lambda tf, x: tf.shape(x), spec, partial=True) == ["object", [None, 3]]

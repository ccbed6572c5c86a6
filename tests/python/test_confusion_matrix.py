"""tf.math.confusion_matrix (python/ember/ops/confusion_matrix.py) against TensorFlow 2.21: counts and weights in
each dtype, eagerly and in a function, and the errors for out-of-range classes."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(4)


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("num_classes", [None, 5])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_confusion_matrix(num_classes, dtype):
    labels = RNG.integers(0, 5, 40)
    predictions = RNG.integers(0, 4, 40)
    weights = RNG.uniform(0, 2, 40).astype(dtype)
    for w in (None, weights):
        ours = em.math.confusion_matrix(labels, predictions, num_classes, w, getattr(em, dtype))
        traced = em.function(lambda a, b: em.math.confusion_matrix(a, b, num_classes, w, getattr(em, dtype)))(
            em.constant(labels), em.constant(predictions))
        theirs = tf.math.confusion_matrix(labels, predictions, num_classes, w, getattr(tf, dtype))
        _same(ours, theirs)
        _same(traced, theirs)
    _same(em.math.confusion_matrix(labels[:, None], predictions), tf.math.confusion_matrix(labels[:, None],
                                                                                           predictions))


@pytest.mark.parametrize("labels,predictions,num_classes,message", [
    ([0, 3], [1, 1], 2, "`labels` out of bound"), ([0, 1], [1, 2], 2, "`predictions` out of bound"),
    ([0, -1], [1, 1], None, "`labels` contains negative values"),
    ([0, 1], [-1, 1], 3, "`predictions` contains negative values")])
def test_confusion_matrix_errors(labels, predictions, num_classes, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.math.confusion_matrix(labels, predictions, num_classes)
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        em.math.confusion_matrix(labels, predictions, num_classes)
    traced = em.function(lambda a, b: em.math.confusion_matrix(a, b, num_classes))
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        traced(em.constant(labels), em.constant(predictions))

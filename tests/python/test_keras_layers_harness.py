"""The check every Keras layer test runs (python/ember/keras/layers/): a layer built by tf_keras (Keras 2) and
the same layer built by ember, given tf_keras's weights through ``set_weights`` (Keras's order), agree on

- the forward output (and every output, for layers returning several);
- the gradients of sum(output * r), r fixed, w.r.t. the input and every trainable weight (GradientTape);
- eager and ``ember.function`` (traced with a None batch dimension, whose output shape keeps the None and
  matches ``compute_output_shape``).

The tests of each layer family call ``check_layer``; the tests in this file check the harness itself."""

import numpy as np
import pytest
import tensorflow
import tf_keras

import ember as tf

ATOL = 2e-4  # float32 kernels (oneDNN vs Eigen) and summation orders differ by a few ulps per element


def _list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _numpy(values):
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in values]


def _weights(layer):
    return [w for w in layer.trainable_weights]


def reference(tf_layer, inputs, call_kwargs, seed=0):
    """tf_keras's outputs and gradients (input grads first, then trainable weight grads) of sum(out * r)."""
    tensors = [tensorflow.constant(x) for x in inputs]
    with tensorflow.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        outs = _list(tf_layer(*tensors, **call_kwargs))
        rs = [np.random.default_rng(seed + i).standard_normal(o.shape).astype(np.float32) for i, o in enumerate(outs)]
        loss = tensorflow.add_n([tensorflow.reduce_sum(o * r) for o, r in zip(outs, rs)])
    grads = tape.gradient(loss, tensors + list(tf_layer.trainable_weights))
    return _numpy(outs), _numpy([g if g is not None else np.zeros(v.shape, np.float32)
                                 for g, v in zip(grads, tensors + list(tf_layer.trainable_weights))]), rs


def run_ember(layer, inputs, call_kwargs, rs):
    tensors = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        outs = _list(layer(*tensors, **call_kwargs))
        loss = tf.add_n([tf.reduce_sum(o * r) for o, r in zip(outs, rs)])
    variables = tensors + _weights(layer)
    grads = tape.gradient(loss, variables)
    grads = [g if g is not None else tf.zeros(v.shape) for g, v in zip(grads, variables)]
    return _numpy(outs), _numpy(grads)


def check_layer(make_ember, make_tf, inputs, call_kwargs=None, atol=ATOL, grad=True, function=True,
                none_batch=True):
    """Builds both layers on ``inputs`` (a list of arrays, the call's positional arguments), copies
    tf_keras's weights into ember's, and compares outputs, gradients, and eager vs ember.function. Returns
    (ember layer, tf_keras layer)."""
    call_kwargs = dict(call_kwargs or {})
    inputs = [np.asarray(x, np.float32) for x in _list(inputs)]
    tf_layer = make_tf()
    want, want_grads, rs = reference(tf_layer, inputs, call_kwargs)
    layer = make_ember()
    layer(*[tf.constant(x) for x in inputs], **call_kwargs)  # builds
    tf_weights = tf_layer.get_weights()
    ours = layer.get_weights()
    assert [w.shape for w in ours] == [w.shape for w in tf_weights], "weights differ in order or shape"
    layer.set_weights(tf_weights)
    got, got_grads = run_ember(layer, inputs, call_kwargs, rs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=atol, rtol=atol)
    if grad:
        assert len(got_grads) == len(want_grads)
        for i, (g, w) in enumerate(zip(got_grads, want_grads)):
            np.testing.assert_allclose(g, w, atol=10 * atol, rtol=10 * atol, err_msg=f"gradient {i}")
    if function:
        traced = tf.function(lambda *xs: layer(*xs, **call_kwargs))
        for g, w in zip(_numpy(_list(traced(*[tf.constant(x) for x in inputs]))), want):
            np.testing.assert_allclose(g, w, atol=atol, rtol=atol)
    if none_batch:
        specs = [tf.TensorSpec([None] + list(x.shape[1:]), tf.float32) for x in inputs]
        shapes = []

        def body(*xs):
            outs = _list(layer(*xs, **call_kwargs))
            shapes.extend(o.shape for o in outs)
            return outs

        traced = tf.function(body, input_signature=specs)
        outs = _numpy(traced(*[tf.constant(x) for x in inputs]))
        for g, w in zip(outs, want):
            np.testing.assert_allclose(g, w, atol=atol, rtol=atol)
        for shape, w in zip(shapes, want):
            assert shape.as_list()[0] is None and shape.as_list()[1:] == list(w.shape[1:]), shape
    return layer, tf_layer


def test_harness_catches_a_wrong_layer():
    """A layer that differs from tf_keras's must fail the check (the harness can fail)."""
    from ember.keras.layers.pooling import AveragePooling2D

    x = np.random.default_rng(0).standard_normal((2, 4, 4, 3))
    with pytest.raises(AssertionError):
        check_layer(lambda: AveragePooling2D(2), lambda: tf_keras.layers.MaxPooling2D(2), [x])

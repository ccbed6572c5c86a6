"""``Layer.add_metric`` (engine/base_layer.py): a Mean of a value computed in ``call``, listed in
``metrics`` and in fit/evaluate's logs, as tf_keras does."""

import numpy as np
import pytest

import ember as tf


@pytest.fixture(scope="module")
def keras():
    import tensorflow
    import tf_keras

    return tensorflow, tf_keras


def _model(k, t):
    class Activity(k.layers.Layer):
        def call(self, inputs):
            self.add_metric(t.reduce_mean(inputs), name="activity")
            self.add_metric(t.reduce_max(inputs), name="peak", aggregation="mean")
            return inputs

    inp = k.Input((3,), name="x")
    h = Activity(name="activity_layer")(k.layers.Dense(4, activation="relu", name="h")(inp))
    model = k.Model(inp, k.layers.Dense(1, name="o")(h))
    model.compile(k.optimizers.SGD(0.05), "mse", metrics=["mae"])
    return model


def test_add_metric_in_fit_and_evaluate_matches_tf_keras(keras):
    real_tf, tf_keras = keras
    tf.keras.backend.clear_session()
    tf_keras.backend.clear_session()
    ours, theirs = _model(tf.keras, tf), _model(tf_keras, real_tf)
    theirs.set_weights(ours.get_weights())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 3)).astype(np.float32)
    y = rng.normal(size=(10, 1)).astype(np.float32)
    got = ours.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history
    want = theirs.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-6)
    assert ours.metrics_names == theirs.metrics_names
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0), rtol=1e-4)
    # the metrics' state is not part of the model's weights
    assert len(ours.weights) == len(theirs.weights) == 4


def test_add_metric_eagerly_and_its_errors():
    class Bad(tf.keras.layers.Layer):
        def __init__(self, **options):
            super().__init__(name="bad")
            self.options = options

        def call(self, inputs):
            self.add_metric(tf.reduce_sum(inputs), **self.options)
            return inputs

    layer = Bad(name="s")  # the metric's name
    layer(np.ones((2, 2), np.float32))
    layer(np.zeros((2, 2), np.float32))
    assert [m.name for m in layer.metrics] == ["s"]
    assert layer.metrics[0].result().numpy() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="Please provide a name for your metric"):
        Bad()(np.ones((1, 1), np.float32))
    with pytest.raises(ValueError, match="only `mean` sample-wise metric aggregation"):
        Bad(name="m", aggregation="sum")(np.ones((1, 1), np.float32))
    with pytest.raises(ValueError, match="Expected a symbolic Tensor for the metric value"):
        tf.keras.layers.Dense(1).add_metric(tf.constant(1.0), name="outside")

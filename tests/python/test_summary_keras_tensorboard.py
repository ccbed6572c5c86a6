"""The Keras TensorBoard callback (issue 18): the same model fit by tf_keras (Keras 2) and by ember, from
equal weights, writes the same epoch curves (train and validation), evaluation-vs-iterations points and
weight histograms, read back with tensorboard's loader; update_freq adds batch curves and write_graph the
model config and the train step's graph."""

import glob
import os

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.util import tensor_util

import ember as tf




def _summaries(path):
    out = []
    for f in sorted(glob.glob(os.path.join(path, "events.out.tfevents.*"))):
        for e in event_file_loader.EventFileLoader(f).Load():
            for v in e.summary.value:
                out.append((e.step, v.tag, v.metadata.plugin_data.plugin_name, tensor_util.make_ndarray(v.tensor)))
    return out


def _fit(keras, logdir, weights=None, **tb):
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,)), keras.layers.Dense(1)])
    if weights is not None:
        model.set_weights(weights)
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    rng = np.random.RandomState(0)
    x, y = rng.rand(20, 4).astype("float32"), rng.rand(20, 1).astype("float32")
    model.fit(x, y, batch_size=5, epochs=2, validation_data=(x, y), shuffle=False, verbose=0,
              callbacks=[keras.callbacks.TensorBoard(str(logdir), **tb)])
    return model


def test_epoch_curves_and_histograms_match_tf_keras(tmp_path):
    import tf_keras
    init = tf_keras.Sequential([tf_keras.layers.Dense(3, activation="relu", input_shape=(4,)),
                                tf_keras.layers.Dense(1)]).get_weights()
    # Fresh layer names ("dense", "dense_1") in both, so the histogram tags can be compared.
    tf_keras.backend.clear_session()
    tf.keras.backend.clear_session()
    _fit(tf_keras, tmp_path / "tf2", weights=init, histogram_freq=1, write_graph=False)
    _fit(tf.keras, tmp_path / "ember", weights=init, histogram_freq=1, write_graph=False)
    for part in ("train", "validation"):
        want = _summaries(str(tmp_path / "tf2" / part))
        got = _summaries(str(tmp_path / "ember" / part))
        assert [(s, t, p) for s, t, p, _ in got] == [(s, t, p) for s, t, p, _ in want], part
        for (_, tag, plugin, have), (_, _, _, value) in zip(got, want):
            if plugin == "scalars":
                np.testing.assert_allclose(have, value, rtol=1e-4, err_msg=tag)
            else:
                np.testing.assert_array_equal(have[:, 2], value[:, 2], err_msg=tag)
                np.testing.assert_allclose(have[:, :2], value[:, :2], rtol=1e-4, atol=1e-6, err_msg=tag)


def test_update_freq_writes_batch_curves(tmp_path):
    _fit(tf.keras, tmp_path, update_freq=2, write_graph=False)
    batch = [(s, t) for s, t, _, _ in _summaries(str(tmp_path / "train")) if t.startswith("batch_")]
    assert batch == [(2, "batch_loss"), (2, "batch_mae"), (4, "batch_loss"), (4, "batch_mae"),
                     (6, "batch_loss"), (6, "batch_mae"), (8, "batch_loss"), (8, "batch_mae")]
    _fit(tf.keras, tmp_path / "epoch", write_graph=False)
    assert not [t for _, t, _, _ in _summaries(str(tmp_path / "epoch" / "train")) if t.startswith("batch_")]


def test_write_graph_writes_the_model_config_and_train_graph(tmp_path):
    _fit(tf.keras, tmp_path, write_graph=True)
    config = [(s, p, v) for s, t, p, v in _summaries(str(tmp_path / "train")) if t == "keras"]
    assert len(config) == 1 and config[0][:2] == (0, "graph_keras_model")
    assert b"Dense" in config[0][2].reshape(-1)[0]
    acc = event_accumulator.EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    ops = {n.op for n in acc.Graph().node}
    assert "MatMul" in ops or "PartitionedCall" in ops, ops


def test_resolves_from_keras_callbacks():
    from ember.keras import callbacks
    from ember.keras.callbacks_tensorboard import TensorBoard
    assert callbacks.TensorBoard is TensorBoard and tf.keras.callbacks.TensorBoard is TensorBoard
    with pytest.raises(ValueError, match="update_freq"):
        TensorBoard(update_freq="sometimes")

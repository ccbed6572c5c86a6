"""BackupAndRestore and BaseLogger against tf_keras: a fit interrupted by an exception in a callback, then run
again with a fresh model, resumes at the same epoch and batch with the same weights and optimizer state."""

import os

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import callbacks

RNG = np.random.default_rng(5)
X = RNG.normal(size=(24, 4)).astype(np.float32)
Y = RNG.normal(size=(24, 2)).astype(np.float32)
INITIAL_WEIGHTS = [RNG.normal(size=(4, 3)).astype(np.float32), np.zeros(3, np.float32),
                   RNG.normal(size=(3, 2)).astype(np.float32), np.zeros(2, np.float32)]


class Interrupt(Exception):
    pass


def make_model(keras):
    model = keras.Sequential([keras.layers.Dense(3, activation="tanh", input_shape=(4,)), keras.layers.Dense(2)])
    model.set_weights(INITIAL_WEIGHTS)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    return model


def fit_interrupted_then_resumed(keras, backup_dir, save_freq, stop_at):
    """The (epoch, batch) pairs the resumed fit runs, the weights and optimizer step it resumes with, and
    its final weights."""

    class Watch(keras.callbacks.Callback):
        def __init__(self, interrupt_at=None):
            super().__init__()
            self.interrupt_at, self.epoch, self.seen, self.resumed_with = interrupt_at, None, [], None

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_begin(self, batch, logs=None):
            if (self.epoch, batch) == self.interrupt_at:
                raise Interrupt()
            if not self.seen:
                self.resumed_with = (self.model.get_weights(), int(self.model.optimizer.iterations.numpy()))
            self.seen.append((self.epoch, batch))

    with pytest.raises(Interrupt):
        make_model(keras).fit(X, Y, batch_size=6, epochs=4, shuffle=False, verbose=0,
                              callbacks=[keras.callbacks.BackupAndRestore(backup_dir, save_freq=save_freq),
                                         Watch(interrupt_at=stop_at)])
    assert os.path.isdir(os.path.join(backup_dir, "chief"))
    model = make_model(keras)
    watch = Watch()
    model.fit(X, Y, batch_size=6, epochs=4, shuffle=False, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(backup_dir, save_freq=save_freq), watch])
    assert not os.path.exists(os.path.join(backup_dir, "chief"))  # deleted after a fit that ends normally
    return watch.seen, watch.resumed_with, model.get_weights()


def assert_weights_close(ours, theirs, rtol=2e-5, atol=2e-6):
    assert len(ours) == len(theirs)
    for our_weight, their_weight in zip(ours, theirs):
        np.testing.assert_allclose(our_weight, their_weight, rtol=rtol, atol=atol)


def uninterrupted_weights():
    model = make_model(ember.keras)
    model.fit(X, Y, batch_size=6, epochs=4, shuffle=False, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize("save_freq, stop_at", [("epoch", (2, 1)), (3, (1, 2)), (2, (2, 0)), (4, (1, 0))])
def test_an_interrupted_fit_resumes_where_tf_keras_does(tmp_path, save_freq, stop_at):
    our_seen, our_resumed_with, our_weights = fit_interrupted_then_resumed(
        ember.keras, str(tmp_path / "ours"), save_freq, stop_at)
    their_seen, their_resumed_with, their_weights = fit_interrupted_then_resumed(
        tf_keras, str(tmp_path / "theirs"), save_freq, stop_at)
    assert our_seen == their_seen
    assert our_resumed_with[1] == their_resumed_with[1]  # the optimizer's step count
    assert_weights_close(our_resumed_with[0], their_resumed_with[0])
    # Without shuffling, the resumed fit trains as an uninterrupted one (the optimizer's slots were restored
    # too). tf_keras matches that only after an epoch backup: resumed mid-epoch it retrains the epoch's first
    # batches (docs/keras.md).
    assert_weights_close(our_weights, uninterrupted_weights(), rtol=1e-5, atol=1e-6)
    if save_freq == "epoch":
        assert_weights_close(our_weights, their_weights)


def test_delete_checkpoint_false_keeps_the_backup_and_a_later_fit_starts_after_it(tmp_path):
    model = make_model(ember.keras)
    model.fit(X, Y, batch_size=6, epochs=2, verbose=0,
              callbacks=[callbacks.BackupAndRestore(str(tmp_path), delete_checkpoint=False)])
    assert os.path.isdir(tmp_path / "chief")
    history = make_model(ember.keras).fit(X, Y, batch_size=6, epochs=3, verbose=0,
                                          callbacks=[callbacks.BackupAndRestore(str(tmp_path))])
    assert history.epoch == [2]
    # A fit without the callback is not affected by the last one's state.
    assert make_model(ember.keras).fit(X, Y, batch_size=6, epochs=2, verbose=0).epoch == [0, 1]


def test_backup_and_restore_rejects_bad_arguments():
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.BackupAndRestore("/tmp/x", save_freq=None)
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.BackupAndRestore("/tmp/x", save_freq="batch")
    with pytest.raises(ValueError, match="backup_dir"):
        callbacks.BackupAndRestore("")


def test_base_logger_averages_as_tf_keras():
    batches = [{"loss": 2.0, "acc": 0.5, "size": 4}, {"loss": 1.0, "acc": 1.0, "size": 2},
               {"loss": 4.0, "acc": 0.0, "size": 2}]
    results = []
    for module in (callbacks, tf_keras.callbacks):
        logger = module.BaseLogger(stateful_metrics=["acc"])
        logger.set_params({"metrics": ["loss", "acc"]})
        logger.on_epoch_begin(0)
        for i, logs in enumerate(batches):
            logger.on_batch_end(i, dict(logs))
        epoch_logs = {"loss": 0.0, "acc": 0.0}
        logger.on_epoch_end(0, epoch_logs)
        results.append(epoch_logs)
    assert results[0] == results[1] == {"loss": 2.25, "acc": 0.0}


def test_base_logger_in_fit_leaves_the_logs_alone():
    # fit's batch logs carry no "size" and its params no "metrics" (tf_keras' BaseLogger raises KeyError there).
    plain = make_model(ember.keras).fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    logged = make_model(ember.keras).fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0,
                                         callbacks=[callbacks.BaseLogger()])
    assert logged.history == plain.history

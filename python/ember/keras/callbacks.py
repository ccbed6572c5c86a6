"""``ember.keras.callbacks``: Keras 2's callbacks (tf_keras) for fit/evaluate/predict.

A ``Callback`` gets ``set_model``/``set_params`` and the ``on_*`` hooks with ``logs`` (a dict of Python
floats: "loss", the metrics, "val_*" at epoch end). ``fit`` wraps the user's callbacks in a
``CallbackList`` that appends a ``History`` (returned by fit) and, when verbose, a ``ProgbarLogger``, in
that order, after the user's, as Keras 2 does (so a learning rate that ReduceLROnPlateau logs is printed).
The TensorBoard callback is written on this base by ember's summary module.
"""

import os
import sys
import warnings

import numpy as np

from ember.keras.utils.generic_utils import Progbar


def _print(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Callback:
    def __init__(self):
        self.validation_data = None
        self.model = None
        self.params = {}
        self._supports_tf_logs = False

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_batch_begin(self, batch, logs=None):
        """A backwards compatibility alias for `on_train_batch_begin`."""

    def on_batch_end(self, batch, logs=None):
        """A backwards compatibility alias for `on_train_batch_end`."""

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass


class CallbackList:
    """Calls each hook on every callback in order."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        self.callbacks = list(callbacks) if callbacks else []
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        self._progbar = next((c for c in self.callbacks if isinstance(c, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger(count_mode="steps")
            self.callbacks.append(self._progbar)
        self.model = None
        self.params = {}
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        self.model = model
        if self._history is not None:
            model.history = self._history
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, hook, *args):
        for c in self.callbacks:
            getattr(c, hook)(*args)

    def on_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call("on_predict_batch_end", batch, logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs)

    def __iter__(self):
        return iter(self.callbacks)


class History(Callback):
    """Records each epoch's logs: ``history.history["loss"]`` is the list of epoch losses."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


class ProgbarLogger(Callback):
    """Prints the progress bar (ember.keras.utils.Progbar) as fit/evaluate/predict run."""

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError(f'Unknown `count_mode`: {count_mode}. Expected values are ["samples", "steps"]')
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics or ())
        self.seen = 0
        self.progbar = None
        self.target = None
        self.verbose = 1
        self.epochs = 1
        self._called_in_fit = False

    def set_params(self, params):
        self.verbose = params.get("verbose", 1)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps") if self.use_steps else params.get("samples")

    def on_train_begin(self, logs=None):
        self._called_in_fit = True

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset()
            self._progbar()

    def on_predict_begin(self, logs=None):
        self._reset()
        self._progbar()

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()
        self._progbar()  # its clock starts here, so the first step's time (tracing included) counts
        if self.verbose and self.epochs > 1:
            _print(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._batch_update(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._batch_update(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_update(batch, None)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize(logs)

    def on_predict_end(self, logs=None):
        self._finalize(logs)

    def _reset(self):
        self.seen = 0
        self.progbar = None

    def _progbar(self):
        if self.model is not None:
            self.stateful_metrics |= {m.name for m in getattr(self.model, "metrics", [])}
        if self.progbar is None:
            self.progbar = Progbar(target=self.target, verbose=self.verbose, stateful_metrics=self.stateful_metrics,
                                   unit_name="step" if self.use_steps else "sample")
        self.progbar._update_stateful_metrics(self.stateful_metrics)
        return self.progbar

    def _batch_update(self, batch, logs):
        logs = dict(logs or {})
        progbar = self._progbar()
        if self.use_steps:
            self.seen = batch + 1
        else:
            self.seen += int(logs.pop("size", 1))
            logs.pop("batch", None)
        if self.verbose == 1:
            progbar.update(self.seen, list(logs.items()), finalize=False)

    def _finalize(self, logs):
        progbar = self._progbar()
        if self.target is None:
            self.target = self.seen
            progbar.target = self.seen
        progbar.update(self.target, list((logs or {}).items()), finalize=True)


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None, on_batch_end=None,
                 on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        hooks = dict(kwargs, on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_batch_begin=on_batch_begin,
                     on_batch_end=on_batch_end, on_train_begin=on_train_begin, on_train_end=on_train_end)
        for name, fn in hooks.items():
            if fn is not None:
                if not hasattr(Callback, name):
                    raise ValueError(f"LambdaCallback got an unknown hook {name!r}")
                setattr(self, name, fn)


def _monitor_op(mode, monitor, name):
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{name} mode {mode} is unknown, fallback to auto mode.", stacklevel=3)
        mode = "auto"
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure")
                                            or monitor.endswith("auc"))):
        return np.greater
    return np.less


class ModelCheckpoint(Callback):
    """Saves the model (or its weights) after each epoch or every ``save_freq`` batches; ``filepath`` may
    hold ``{epoch:02d}`` and ``{val_loss:.2f}``-style fields; ``save_best_only`` keeps the best by ``monitor``."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", options=None, initial_value_threshold=None, **kwargs):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are 'epoch' or integer")
        self.monitor_op = _monitor_op(mode, monitor, "ModelCheckpoint")
        default = np.inf if self.monitor_op is np.less else -np.inf
        self.best = initial_value_threshold if initial_value_threshold is not None else default
        self._batches_seen = 0
        self._current_epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, int):
            self._batches_seen += 1
            if self._batches_seen % self.save_freq == 0:
                self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in (logs or {}):
                return self.filepath.format(epoch=epoch + 1, **(logs or {}))
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **(logs or {}))
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {e}') from None

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        filepath = self._file_path(epoch, batch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, skipping.", stacklevel=2)
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    _print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose > 0:
                _print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, "
                       f"saving model to {filepath}")
            self.best = current
        elif self.verbose > 0:
            _print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience`` epochs; with
    ``restore_best_weights`` the weights of the best epoch are put back."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.monitor_op = _monitor_op(mode, monitor, "EarlyStopping")
        if self.monitor_op is np.less:
            self.min_delta *= -1
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def _is_improvement(self, value, reference):
        return self.monitor_op(value - self.min_delta, reference)

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not available. Available "
                          f"metrics are: {','.join(logs or {})}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    _print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            _print(f"Epoch {self.stopped_epoch + 1}: early stopping")


def _get_lr(model):
    # A float32 scalar, as tf_keras' backend.get_value gives: logs["lr"] and the messages print as Keras'.
    return np.float32(np.asarray(model.optimizer.learning_rate))


def _set_lr(model, value):
    optimizer = model.optimizer
    lr = getattr(optimizer, "_learning_rate", None)
    if lr is not None and hasattr(lr, "assign"):
        lr.assign(value)
    else:
        optimizer.learning_rate = value


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` when ``monitor`` stops improving for ``patience`` epochs."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Got {factor}")
        self.monitor = monitor
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = kwargs.pop("epsilon", min_delta)
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.mode = mode
        self._reset()

    def _reset(self):
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = _get_lr(self.model)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs)}", stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _get_lr(self.model)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    _set_lr(self.model, new_lr)
                    if self.verbose > 0:
                        _print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class LearningRateScheduler(Callback):
    """Sets the learning rate to ``schedule(epoch, lr)`` at the start of each epoch."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        try:
            lr = self.schedule(epoch, _get_lr(self.model))
        except TypeError:  # the older one-argument schedules
            lr = self.schedule(epoch)
        lr = float(np.asarray(lr))
        _set_lr(self.model, lr)
        if self.verbose > 0:
            _print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_lr(self.model)


class CSVLogger(Callback):
    """Writes each epoch's logs as a row of a CSV file: ``epoch`` then the log keys in sorted order."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._file = None
        self._writer = None
        self._keys = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._header_needed = not exists
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._writer = None
        self._keys = None

    def on_epoch_end(self, epoch, logs=None):
        import csv

        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
        if self.model is not None and self.model.stop_training:
            logs = {k: logs.get(k, "NA") for k in self._keys}
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys,
                                          delimiter=self.sep, lineterminator="\n")
            if self._header_needed:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, _csv_value(logs.get(k, "NA"))) for k in self._keys)
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None
        self._writer = None


def _csv_value(value):
    if isinstance(value, str):
        return value
    array = np.asarray(value)
    if array.ndim == 0:
        return value
    return f'"[{", ".join(map(str, array.ravel()))}]"'


class TerminateOnNaN(Callback):
    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            _print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class BaseLogger(Callback):
    """Replaces each epoch-end metric in ``logs`` by its average over the epoch's batches, weighted by the
    ``size`` the batch logs carry (a ``stateful_metrics`` one keeps its last value), for the metrics named in
    ``params["metrics"]``. Keras 2's fit gives neither (tf_keras then fails with KeyError 'metrics'); in
    ember's fit the logs are left as they are."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        batch_size = logs.get("size", 0)
        self.seen += batch_size * logs.get("num_steps", 1)
        for key, value in logs.items():
            if key in self.stateful_metrics:
                self.totals[key] = value
            else:
                self.totals[key] = self.totals.get(key, 0) + value * batch_size

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for key in self.params.get("metrics", []):
            if key in self.totals:
                logs[key] = self.totals[key] if key in self.stateful_metrics else self.totals[key] / self.seen


class _TrainingState:
    """What BackupAndRestore saves: the model (its weights and its optimizer's variables) and the epoch and
    batch the backup was taken at, as a checkpoint in ``<backup_dir>/chief`` (tf_keras' layout)."""

    kUnused = -1

    def __init__(self, model, backup_dir, save_freq):
        from ember import train
        from ember.variables import Variable

        self.save_freq = save_freq
        self.saved_epoch = Variable(self.kUnused, dtype="int64", name="ckpt_saved_epoch")
        self.saved_batch = Variable(self.kUnused, dtype="int64", name="ckpt_saved_batch")
        checkpoint = train.Checkpoint(model=model, ckpt_saved_epoch=self.saved_epoch,
                                      ckpt_saved_batch=self.saved_batch)
        self.manager = train.CheckpointManager(checkpoint, directory=os.path.join(backup_dir, "chief"),
                                               max_to_keep=1)

    def restore(self):
        self.manager.restore_or_initialize()

    def back_up(self):
        self.manager.save()

    def delete(self):
        import shutil

        shutil.rmtree(self.manager.directory, ignore_errors=True)

    def resume_point(self, initial_epoch, steps_per_epoch):
        """After a batch backup, the step after the saved one (the next epoch after its last step); after an
        epoch backup, the next epoch; with no backup, ``initial_epoch``."""
        epoch, batch = int(self.saved_epoch.numpy()), int(self.saved_batch.numpy())
        if isinstance(self.save_freq, int):
            if batch < 0:
                return initial_epoch, 0
            if steps_per_epoch is None or batch == steps_per_epoch - 1:
                return epoch + 1, 0
            return epoch, batch + 1
        return (epoch + 1, 0) if epoch >= 0 else (initial_epoch, 0)


class BackupAndRestore(Callback):
    """Backs up the model and optimizer state into ``backup_dir`` at the end of each epoch (``save_freq="epoch"``)
    or every ``save_freq`` batches; a fit that starts with a backup there restores it and carries on from
    where the backup was taken (the epoch after it, or the batch after it). The backup is deleted when fit
    ends normally (unless ``delete_checkpoint=False``), so it survives only an interrupted fit.

    As in tf_keras, the model should be built before fit: its optimizer is built in on_train_begin, so that
    the restore finds the optimizer's slots to fill."""

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True, save_before_preemption=False):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_before_preemption:
            raise NotImplementedError("BackupAndRestore(save_before_preemption=True) needs a multi-worker "
                                      "cluster's preemption notices, which ember does not have")
        if not save_freq:
            raise ValueError("Either `save_freq` or `save_before_preemption` must be set.")
        if save_freq != "epoch" and (not isinstance(save_freq, int) or isinstance(save_freq, bool)):
            raise ValueError(f"Unrecognized save_freq: {save_freq!r}; expected 'epoch' or a positive integer")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.save_before_preemption = save_before_preemption
        self._batches_count = 0
        self._current_epoch = 0
        self._training_state = None

    def on_train_begin(self, logs=None):
        model = self.model
        optimizer = getattr(model, "optimizer", None)
        if model.built:
            if optimizer is not None and callable(getattr(optimizer, "build", None)) and \
                    not getattr(optimizer, "built", False):
                optimizer.build(model.trainable_variables)
        else:
            warnings.warn(f"To use the BackupAndRestore callback, you model must be built before you call `fit()`. "
                          f"Model {model} is unbuilt. You can build it beforehand by calling it on a batch of data.")
        self._training_state = _TrainingState(model, self.backup_dir, self.save_freq)
        self._training_state.restore()
        model._ember_training_state = self._training_state  # read (and cleared) by fit, just after this hook

    def on_epoch_begin(self, epoch, logs=None):
        self._training_state.saved_epoch.assign(epoch)
        self._current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        self._training_state.saved_batch.assign(batch)

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches_count += 1
            if self._batches_count >= self.save_freq:
                self._batches_count = 0
                self._training_state.back_up()

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._training_state.back_up()

    def on_train_end(self, logs=None):
        if self.delete_checkpoint:
            self._training_state.delete()
        self._training_state = None


def __getattr__(name):
    # The TensorBoard callback lives with ember's summaries (written on this base by that module).
    if name == "TensorBoard":
        import importlib

        for module in ("ember.keras.callbacks_tensorboard", "ember.summary.keras"):
            try:
                return getattr(importlib.import_module(module), "TensorBoard")
            except (ImportError, AttributeError):
                continue
        raise AttributeError("ember.keras.callbacks.TensorBoard is not available yet (it is written by the "
                             "summary work)")
    raise AttributeError(f"module 'ember.keras.callbacks' has no attribute {name!r}")

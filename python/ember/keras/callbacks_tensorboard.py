"""``tf.keras.callbacks.TensorBoard`` (Keras 2, as tf_keras writes it), on ``ember.summary``.

``ember.keras.callbacks`` resolves ``TensorBoard`` to this class lazily (its module ``__getattr__``).

Under ``log_dir``: ``train/`` gets ``epoch_<metric>`` at each epoch (step = epoch), ``batch_<metric>`` every
``update_freq`` batches when it is ``"batch"`` or an int (step = the training batch count), the weights'
histograms (``<weight name>/histogram``) every ``histogram_freq`` epochs, and with ``write_graph`` the model's
config (tag ``keras``) and the graph of the train step function; ``validation/`` gets ``epoch_<metric>`` and
``evaluation_<metric>_vs_iterations`` (step = training batches so far) for the ``val_`` logs.
"""

import json
import os

from ember import summary
from ember.keras.callbacks import Callback


class TensorBoard(Callback):
    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None, **kwargs):
        super().__init__()
        unknown = set(kwargs) - {"batch_size", "write_grads", "embeddings_layer_names", "embeddings_data"}
        if unknown:
            raise ValueError(f"Unrecognized arguments in `TensorBoard` Callback: {sorted(unknown)}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = int(histogram_freq)
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        if update_freq == "batch":
            update_freq = 1
        elif update_freq != "epoch" and not isinstance(update_freq, int):
            raise ValueError(f"update_freq must be 'batch', 'epoch' or an int, got {update_freq!r}")
        self.update_freq = update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self._train_writer = None
        self._val_writer = None
        self._train_step = 0
        self._graph_written = False

    # ---- writers
    @property
    def _train(self):
        if self._train_writer is None:
            self._train_writer = summary.create_file_writer(os.path.join(self.log_dir, "train"))
        return self._train_writer

    @property
    def _val(self):
        if self._val_writer is None:
            self._val_writer = summary.create_file_writer(os.path.join(self.log_dir, "validation"))
        return self._val_writer

    def _close_writers(self):
        for w in (self._train_writer, self._val_writer):
            if w is not None:
                w.close()
        self._train_writer = self._val_writer = None

    # ---- hooks
    def on_train_begin(self, logs=None):
        self._graph_written = False
        if self.write_graph:
            self._write_model_config()

    def on_train_batch_end(self, batch, logs=None):
        self._train_step += 1
        if self.write_graph and not self._graph_written:
            self._graph_written = True  # the train step is traced by its first batch
            self._write_train_graph()
        if isinstance(self.update_freq, int) and logs and self._train_step % self.update_freq == 0:
            with self._train.as_default(step=self._train_step), summary.record_if(True):
                for name, value in logs.items():
                    if _is_number(value):
                        summary.scalar("batch_" + name, value)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_") and _is_number(v)}
        val_logs = {k[4:]: v for k, v in logs.items() if k.startswith("val_") and _is_number(v)}
        with summary.record_if(True):
            if train_logs:
                with self._train.as_default(step=epoch):
                    for name, value in train_logs.items():
                        summary.scalar("epoch_" + name, value)
            if val_logs:
                with self._val.as_default():
                    for name, value in val_logs.items():
                        summary.scalar("evaluation_" + name + "_vs_iterations", value, step=self._train_step)
                    for name, value in val_logs.items():
                        summary.scalar("epoch_" + name, value, step=epoch)
            if self.histogram_freq and epoch % self.histogram_freq == 0:
                self._log_weights(epoch)

    def on_train_end(self, logs=None):
        self._close_writers()

    # ---- pieces
    def _log_weights(self, epoch):
        with self._train.as_default(step=epoch):
            for layer in getattr(self.model, "layers", []):
                for weight in getattr(layer, "weights", []):
                    name = weight.name.replace(":", "_")
                    summary.histogram(name + "/histogram", weight)
                    if self.write_images and len(weight.shape) == 2:
                        import numpy as np
                        w = np.asarray(weight.numpy())
                        summary.image(name + "/image", w.reshape(1, w.shape[0], w.shape[1], 1))

    def _write_model_config(self):
        to_json = getattr(self.model, "to_json", None)
        if to_json is None:
            return
        try:
            config = to_json()
        except (NotImplementedError, TypeError, ValueError, AttributeError):
            return  # a subclassed model has no config, as in Keras
        from ember.framework import protos
        metadata = protos.message_class("SummaryMetadata")()
        metadata.plugin_data.plugin_name = "graph_keras_model"
        metadata.plugin_data.content = b"1"
        with self._train.as_default(), summary.record_if(True):
            summary.write("keras", [config if isinstance(config, str) else json.dumps(config)], step=0,
                          metadata=metadata)

    def _write_train_graph(self):
        functions = getattr(self.model, "_ember_functions", {}) or {}
        for key, fn in functions.items():
            if isinstance(key, tuple) and key and key[0] == "train" and hasattr(fn, "get_concrete_function"):
                with self._train.as_default(), summary.record_if(True):
                    summary.graph(fn.get_concrete_function().graph)
                return


def _is_number(value):
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False

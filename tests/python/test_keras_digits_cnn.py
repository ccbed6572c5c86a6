"""End to end (issue 18's "done when"): examples/python/keras_digits_cnn.py, a Conv2D/MaxPooling/Flatten/Dense
CNN on scikit-learn's digits upsampled to 28x28, trained with ``fit`` (progress bar, TensorBoard callback,
ModelCheckpoint keeping the best validation accuracy), reaches above 97% accuracy on the held-out fifth of
the images; the event files, read with tensorboard's loader, hold an epoch loss curve per epoch. Seeds are
fixed."""

import importlib.util
import os

import numpy as np
import pytest

pytest.importorskip("sklearn.datasets")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "keras_digits_cnn.py")


def load_example():
    spec = importlib.util.spec_from_file_location("keras_digits_cnn", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_data_is_digits_upsampled_to_28x28():
    example = load_example()
    (x_train, y_train), (x_test, y_test) = example.load_digits_28()
    assert x_train.shape == (1437, 28, 28, 1) and x_test.shape == (360, 28, 28, 1)
    assert x_train.dtype == np.float32 and 0 <= x_train.min() and x_train.max() <= 1
    assert sorted(set(y_test.tolist())) == list(range(10))
    # Bilinear upsampling keeps each image's mean (up to the border rows and cols).
    from sklearn.datasets import load_digits

    assert abs(float(np.mean(x_train)) - float(np.mean(load_digits().images / 16.0))) < 0.02


def epoch_losses(logdir):
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.util import tensor_util

    steps = {}
    for name in sorted(os.listdir(logdir)):
        if name.startswith("events.out.tfevents"):
            for event in event_file_loader.EventFileLoader(os.path.join(logdir, name)).Load():
                for value in event.summary.value:
                    if value.tag == "epoch_loss":
                        steps[event.step] = float(tensor_util.make_ndarray(value.tensor))
    return [steps[k] for k in sorted(steps)]


def test_digits_cnn_fit_reaches_97_percent(tmp_path, capsys):
    example = load_example()
    checkpoints, logs = tmp_path / "checkpoints", tmp_path / "logs"
    accuracy = example.main(["--checkpoint-dir", str(checkpoints), "--logdir", str(logs)], verbose=1)
    out = capsys.readouterr().out
    assert "Epoch 1/15" in out and "41/41 [==============================]" in out  # Keras's progress bar
    assert "val_accuracy improved from" in out  # ModelCheckpoint's message
    assert any(name.startswith("best") for name in os.listdir(checkpoints))
    train, validation = epoch_losses(logs / "train"), epoch_losses(logs / "validation")
    assert len(train) == len(validation) == 15
    assert train[-1] < 0.25 * train[0]
    assert accuracy > 0.97, f"test accuracy {accuracy:.4f}"

"""End to end (issue 18's "done when"): examples/python/keras_digits_cnn.py, a Conv2D/MaxPooling/Flatten/Dense
CNN on scikit-learn's digits upsampled to 28x28, trained with ``fit`` (progress bar, ModelCheckpoint keeping
the best validation accuracy), reaches above 97% accuracy on the held-out fifth of the images. Seeds are
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


def test_digits_cnn_fit_reaches_97_percent(tmp_path, capsys):
    example = load_example()
    accuracy = example.main(["--checkpoint-dir", str(tmp_path)], verbose=1)
    out = capsys.readouterr().out
    assert "Epoch 1/15" in out and "41/41 [==============================]" in out  # Keras's progress bar
    assert "val_accuracy improved from" in out  # ModelCheckpoint's message
    assert any(name.startswith("best") for name in os.listdir(tmp_path))
    assert accuracy > 0.97, f"test accuracy {accuracy:.4f}"

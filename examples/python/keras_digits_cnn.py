"""A small CNN trained with Keras's ``fit`` on scikit-learn's digits (1,797 8x8 images, bundled with
scikit-learn, no download), upsampled to 28x28 as MNIST's:

    python3 examples/python/keras_digits_cnn.py [--epochs 15] [--checkpoint-dir DIR] [--logdir DIR]
    tensorboard --logdir DIR    # the loss and accuracy curves, the weights' histograms, the graph

Conv2D(16, 3, relu) -> MaxPooling2D -> Conv2D(32, 3, relu) -> MaxPooling2D -> Flatten -> Dense(64, relu) ->
Dense(10), Adam, sparse categorical cross-entropy on the logits. ``fit`` prints Keras's progress bar, the
TensorBoard callback writes the training and validation curves, and a ModelCheckpoint callback keeps the
weights of the epoch with the best validation accuracy, which are loaded back before the held-out test set
(a fifth of the images) is evaluated. It reaches about 98-99% test accuracy
in a few seconds. The same functions build the model for tf_keras (Keras 2) and time it in
bench/keras_fit.py.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

SIZE = 28


def upsample_matrix(n_in, n_out):
    """[n_out, n_in] bilinear interpolation with half-pixel centers (as tf.image.resize)."""
    a = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        src = min(max((i + 0.5) * n_in / n_out - 0.5, 0.0), n_in - 1.0)
        lo = int(np.floor(src))
        hi = min(lo + 1, n_in - 1)
        a[i, lo] += 1.0 - (src - lo)
        a[i, hi] += src - lo
    return a


def load_digits_28(n_test=360, seed=0):
    """((x_train, y_train), (x_test, y_test)): images [N, 28, 28, 1] in [0, 1], labels int32, a fixed
    shuffle."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    a = upsample_matrix(8, SIZE)
    x = np.einsum("ij,njk,lk->nil", a, digits.images / 16.0, a).astype(np.float32)[..., None]
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    return (x[n_test:], y[n_test:]), (x[:n_test], y[:n_test])


def build_model(keras, seed=0):
    """The CNN, compiled, in ``keras`` (ember.keras or tf_keras)."""
    if hasattr(keras, "utils") and hasattr(keras.utils, "set_random_seed"):
        keras.utils.set_random_seed(seed)
    layers = keras.layers
    model = keras.Sequential([
        layers.Input((SIZE, SIZE, 1)),
        layers.Conv2D(16, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=2e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def main(argv=None, verbose=1):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--checkpoint-dir", default=None, help="where ModelCheckpoint writes (default: a temp dir)")
    parser.add_argument("--logdir", default=None, help="where TensorBoard's event files go (default: a temp dir)")
    args = parser.parse_args(argv)

    import ember as tf

    keras = tf.keras
    (x_train, y_train), (x_test, y_test) = load_digits_28()
    model = build_model(keras)
    if verbose:
        model.summary()
    directory = args.checkpoint_dir or tempfile.mkdtemp(prefix="keras_digits_cnn_")
    path = os.path.join(directory, "best")  # a TF checkpoint prefix: save_weights' default format
    logdir = args.logdir or tempfile.mkdtemp(prefix="keras_digits_cnn_logs_")
    callbacks = [keras.callbacks.ModelCheckpoint(path, monitor="val_accuracy", save_best_only=True,
                                                 save_weights_only=True, verbose=verbose),
                 keras.callbacks.TensorBoard(logdir, histogram_freq=1)]
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.1,
                        callbacks=callbacks, verbose=verbose)
    model.load_weights(path)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy {accuracy:.4f} (loss {loss:.4f}) after {len(history.history['loss'])} epochs; best "
          f"weights from {path}; TensorBoard logs in {logdir}")
    return accuracy


if __name__ == "__main__":
    sys.exit(0 if main() > 0.97 else 1)

"""ember end to end: train a small classifier eagerly and as an ember.function, checkpoint it, export a
SavedModel and serve it from C++ with no Python in the process.

    python3 examples/python/train_and_serve.py [--serve-binary build/py/example_serve_saved_model]

The data are scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes). The model is a two-layer
perceptron written as a tf.Module; the training step (forward, GradientTape backward, Adam update) runs first
eagerly, op by op, and then staged as one ember.function, and the script prints both speeds. A
tf.train.CheckpointManager keeps the checkpoints; a fresh model restored from the latest one gives the same
accuracy. tf.saved_model.save writes the model with a serving signature whose batch dimension is None, and
the C++ example program loads that directory and prints its predictions for the held-out images, which
are checked against Python's.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits

import ember as tf

HIDDEN, STEPS, BATCH = 64, 300, 64


class MLP(tf.Module):
    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = tf.Variable((rng.standard_normal((64, HIDDEN)) * np.sqrt(2 / 64)).astype(np.float32), name="w1")
        self.b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="b1")
        self.w2 = tf.Variable((rng.standard_normal((HIDDEN, 10)) * np.sqrt(1 / HIDDEN)).astype(np.float32), name="w2")
        self.b2 = tf.Variable(np.zeros(10, np.float32), name="b2")

    def __call__(self, x):
        return tf.nn.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2

    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32)])
    def serve(self, x):
        return {"probabilities": tf.nn.softmax(self(x))}


def make_step(model, optimizer):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


def train(step, images, labels, steps, seed):
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(steps):
        idx = rng.integers(0, len(images), BATCH)
        loss = step(tf.constant(images[idx]), tf.constant(labels[idx]))
    float(loss)  # wait for the last step
    return (time.perf_counter() - start) / steps, float(loss)


def accuracy(model, images, labels):
    return float(np.mean(np.argmax(model(tf.constant(images)).numpy(), 1) == labels))


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--serve-binary", default=os.path.join(here, "..", "..", "build", "py",
                                                               "example_serve_saved_model"))
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="ember-demo-")

    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    train_x, test_x, train_y, test_y = images[:1500], images[1500:], labels[:1500], labels[1500:]

    model = MLP()
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)
    step = make_step(model, optimizer)
    eager_s, _ = train(step, train_x, train_y, 50, seed=1)
    staged = tf.function(step)
    staged(tf.constant(train_x[:BATCH]), tf.constant(train_y[:BATCH]))  # trace once
    staged_s, loss = train(staged, train_x, train_y, STEPS, seed=2)
    print(f"training step: eager {eager_s * 1e3:.3f} ms, ember.function {staged_s * 1e3:.3f} ms "
          f"({eager_s / staged_s:.1f}x faster); loss {loss:.4f}")
    print(f"test accuracy {accuracy(model, test_x, test_y):.3f}")

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(checkpoint, os.path.join(workdir, "checkpoints"), max_to_keep=2)
    path = manager.save()
    fresh = MLP(seed=7)
    tf.train.Checkpoint(model=fresh).restore(manager.latest_checkpoint).expect_partial()
    print(f"checkpoint {path}: a fresh model restored from it scores {accuracy(fresh, test_x, test_y):.3f}")

    export_dir = os.path.join(workdir, "saved_model")
    tf.saved_model.save(model, export_dir, signatures=model.serve)
    print(f"SavedModel written to {export_dir}")

    inputs = os.path.join(workdir, "test_images.npy")
    np.save(inputs, test_x)
    expected = np.argmax(model.serve(tf.constant(test_x))["probabilities"].numpy(), 1)
    if not os.path.exists(args.serve_binary):
        print(f"(the C++ server {args.serve_binary} is not built; skipping the C++ part)")
        return
    out = subprocess.run([args.serve_binary, export_dir, "--input", f"x={inputs}"], capture_output=True,
                         text=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, check=True).stdout
    lines = out.splitlines()
    timing = {ln.split()[0]: ln.split()[1] for ln in lines if ln.startswith(("load_ms", "first_call_ms"))}
    values = lines[[i for i, ln in enumerate(lines) if ln.startswith("output probabilities")][0] + 1]
    probabilities = np.array(values.split(), np.float32).reshape(len(test_x), 10)
    served = np.argmax(probabilities, 1)
    print(f"C++ (no Python in the process): load {timing.get('load_ms')} ms, first call "
          f"{timing.get('first_call_ms')} ms; {np.mean(served == test_y):.3f} accuracy, "
          f"{int(np.sum(served == expected))}/{len(expected)} predictions equal Python's")
    if not np.array_equal(served, expected):
        sys.exit("the C++ server's predictions differ from Python's")


if __name__ == "__main__":
    main()

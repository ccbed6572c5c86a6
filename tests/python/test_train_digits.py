"""End to end: an MLP trained on scikit-learn's 8x8 digits (1,797 images, bundled with scikit-learn, no
download) with GradientTape and a Keras optimizer inside an ember.function step reaches > 95% accuracy on
a held-out fifth of the data. Seeds are fixed; it takes about a second."""

import numpy as np
import pytest

import ember as tf

datasets = pytest.importorskip("sklearn.datasets")


def load_split(n_test=360):
    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    return (x[n_test:], y[n_test:]), (x[:n_test], y[:n_test])


class MLP(tf.Module):
    """64 -> 64 -> 10, ReLU, He-normal weights."""

    def __init__(self, sizes, seed):
        super().__init__()
        self.weights, self.biases = [], []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            init = tf.random.stateless_normal([n_in, n_out], seed=[seed, i], stddev=np.sqrt(2.0 / n_in))
            self.weights.append(tf.Variable(init, name=f"w{i}"))
            self.biases.append(tf.Variable(tf.zeros([n_out]), name=f"b{i}"))

    def __call__(self, x):
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = tf.matmul(x, w) + b
            if i < len(self.weights) - 1:
                x = tf.nn.relu(x)
        return x


@pytest.mark.parametrize("make_optimizer", [
    lambda: tf.keras.optimizers.Adam(learning_rate=0.01),
    lambda: tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
], ids=["adam", "sgd_momentum"])
def test_mlp_learns_digits(make_optimizer):
    (x_train, y_train), (x_test, y_test) = load_split()
    model = MLP([64, 64, 10], seed=1)
    optimizer = make_optimizer()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        assert all(g is not None for g in grads), grads
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(1)
    batch_size, epochs = 64, 20
    losses = []
    for _ in range(epochs):
        order = rng.permutation(len(x_train))
        for start in range(0, len(x_train) - batch_size + 1, batch_size):
            batch = order[start:start + batch_size]
            losses.append(float(train_step(tf.constant(x_train[batch]), tf.constant(y_train[batch]))))

    steps = epochs * (len(x_train) // batch_size)
    assert optimizer.iterations.numpy() == steps
    assert np.mean(losses[-20:]) < 0.25 * np.mean(losses[:20])
    predictions = tf.argmax(model(tf.constant(x_test)), axis=1).numpy()
    accuracy = np.mean(predictions == y_test)
    assert accuracy > 0.95, f"held-out accuracy {accuracy:.3f}"

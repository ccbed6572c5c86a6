"""The main demo: fit a small two-layer model to generated data by hand-written gradient descent, with
eager ember ops only (autodiff arrives in a later milestone), printing the loss as it falls.

    python3 examples/python/fit_linear_regression.py
"""

import ember as tf

tf.random.set_seed(42)

# Data: y = sin(3 x0) + 0.5 x1 - x2^2 + noise, 512 samples of 3 features.
n, features, hidden = 512, 3, 32
x = tf.random.uniform([n, features], minval=-1.0, maxval=1.0)
target = (tf.sin(3.0 * x[:, 0:1]) + 0.5 * x[:, 1:2] - tf.square(x[:, 2:3])
          + 0.05 * tf.random.normal([n, 1]))

# Parameters of y = tanh(x W1 + b1) W2 + b2.
w1 = tf.random.normal([features, hidden], stddev=0.5)
b1 = tf.zeros([hidden])
w2 = tf.random.normal([hidden, 1], stddev=0.5)
b2 = tf.zeros([1])

learning_rate = 0.1
for step in range(301):
    # Forward.
    h = tf.tanh(tf.linalg.matmul(x, w1) + b1)
    prediction = tf.linalg.matmul(h, w2) + b2
    error = prediction - target
    loss = tf.reduce_mean(tf.square(error))

    # Backward, by hand: d loss / d prediction = 2 error / n.
    d_pred = 2.0 * error / n
    d_w2 = tf.linalg.matmul(h, d_pred, transpose_a=True)
    d_b2 = tf.reduce_sum(d_pred, axis=0)
    d_h = tf.linalg.matmul(d_pred, w2, transpose_b=True) * (1.0 - tf.square(h))
    d_w1 = tf.linalg.matmul(x, d_h, transpose_a=True)
    d_b1 = tf.reduce_sum(d_h, axis=0)

    w1, b1 = w1 - learning_rate * d_w1, b1 - learning_rate * d_b1
    w2, b2 = w2 - learning_rate * d_w2, b2 - learning_rate * d_b2
    if step % 30 == 0:
        print(f"step {step:3d}  loss {float(loss):.5f}")

baseline = float(tf.reduce_mean(tf.square(target - tf.reduce_mean(target))))
print(f"final loss {float(loss):.5f} (predicting the mean gives {baseline:.5f})")
assert float(loss) < 0.5 * baseline, "the model did not learn"

"""Helpers shared by the tf.linalg tests (test_linalg.py for real matrices, test_linalg_complex.py for complex
ones): run a case with ember and TensorFlow, take the gradient of a real loss of its result, and check a
gradient against central finite differences."""
import numpy as np
import tensorflow as real_tf

import ember as tf


def both(fn, *args):
    """fn(module, *args) run with ember and with TensorFlow: (ours, theirs)."""
    return fn(tf, *args), fn(real_tf, *args)


def loss_gradient(m, fn, x):
    """(loss, d loss / d x) with module m for the real loss sum sin(y) of y = fn(m, x), or sum |sin(y)|^2
    when y is complex."""
    x = m.constant(x)
    with m.GradientTape() as tape:
        tape.watch(x)
        y = fn(m, x)
        loss = m.reduce_sum(m.abs(m.sin(y)) ** 2) if y.dtype.is_complex else m.reduce_sum(m.sin(y))
    return loss, tape.gradient(loss, x)


def check_finite_differences(fn, x, gradient, direction, gradient_direction=None, eps=1e-6, rtol=1e-6,
                             atol=1e-7):
    """ember's loss of fn along `direction` (central differences) against the gradient's prediction. For a
    real loss of complex x the gradient is dL/dRe x + i dL/dIm x, so the prediction is Re <gradient, d>;
    `gradient_direction` (default: `direction`) is the part of the step the gradient is taken along, for
    gradients folded onto the triangle an op reads."""
    f = lambda z: loss_gradient(tf, fn, z)[0].numpy()  # noqa: E731
    numeric = (f(x + eps * direction) - f(x - eps * direction)) / (2 * eps)
    seen = direction if gradient_direction is None else gradient_direction
    predicted = np.sum(np.real(np.conj(gradient) * seen))
    np.testing.assert_allclose(predicted, numeric, rtol=rtol, atol=atol)


def check_traced_like_eager(fn, x, dtype, rtol=1e-12, atol=1e-12):
    """The loss and gradient inside a function whose input_signature leaves every dim unknown equal the
    eager ones."""

    @tf.function(input_signature=[tf.TensorSpec([None] * np.ndim(x), dtype)])
    def traced(v):
        return loss_gradient(tf, fn, v)

    y, g = traced(tf.constant(x))
    ey, eg = loss_gradient(tf, fn, x)
    np.testing.assert_allclose(y.numpy(), ey.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), eg.numpy(), rtol=rtol, atol=atol)

import numpy as np
import pytest

import ember as tf

FLOAT_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
INT_DTYPES = [tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [tf.bool]

# Relative tolerance per dtype when comparing with a float64 NumPy reference.
RTOL = {tf.float16: 2e-3, tf.bfloat16: 1.6e-2, tf.float32: 2e-6, tf.float64: 1e-13}


def tolerance(dtype):
    return RTOL.get(dtype, 0)


def assert_close(actual, expected, dtype):
    actual = np.asarray(actual).astype(np.float64) if dtype != tf.bool else np.asarray(actual)
    expected = np.asarray(expected)
    if dtype.is_floating:
        rtol = tolerance(dtype)
        np.testing.assert_allclose(actual, expected.astype(np.float64), rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.fixture(autouse=True)
def _no_global_seed_left_behind():
    """A test that sets ember's global seed (tf.random.set_seed, keras.utils.set_random_seed) must not change
    the random streams of the tests after it: with a global seed, op-seeded ops such as Dataset.shuffle(seed=7)
    draw another sequence, as in TensorFlow. Only then: unsetting also restarts every seeded kernel's
    stream, which tests comparing stateful random ops with TensorFlow's call by call rely on not happening."""
    before = tf._C.random_global_seed()
    yield
    if tf._C.random_global_seed() != before:
        tf.random.set_seed(None)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(params=[1, 2, 4], ids=lambda n: f"{n}threads")
def threads(request):
    """Runs a test with the intra-op pool at several sizes (results must not depend on it)."""
    saved = tf._C.intra_op_threads()
    tf._C.set_intra_op_threads(request.param)
    yield request.param
    tf._C.set_intra_op_threads(saved)


@pytest.fixture
def remapping():
    """Sets ember.config.optimizer's remapping switch (the conv, MatMul and batch-norm fusions) for the test:
    remapping(True/False); the setting before the test comes back after it."""
    before = tf.config.optimizer.get_experimental_options()["remapping"]

    def set_(on):
        tf.config.optimizer.set_experimental_options({"remapping": on})

    yield set_
    set_(before)

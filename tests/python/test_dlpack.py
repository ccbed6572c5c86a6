"""tf.experimental.dlpack and Tensor.__dlpack__ (issue 14, item 12): zero-copy exchange with NumPy and with
TensorFlow itself, lifetimes across the boundary, and clear errors for what ember cannot hold."""

import gc
import threading

import numpy as np
import pytest
import tensorflow

import ember as tf

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_,
          np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_round_trip_shares_memory(dtype):
    source = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    if np.dtype(dtype).kind == "c":  # imaginary parts unlike the real ones: a float view would show them
        source = (source + 1j * np.arange(12, 0, -1).reshape(3, 4)).astype(dtype)
    imported = tf.experimental.dlpack.from_dlpack(source)
    assert imported._data_ptr == source.ctypes.data  # no copy
    assert imported.dtype.as_numpy_dtype == np.dtype(dtype)
    np.testing.assert_array_equal(imported.numpy(), source)
    exported = np.from_dlpack(imported)
    assert exported.ctypes.data == source.ctypes.data
    np.testing.assert_array_equal(exported, source)


def test_capsules_both_ways_and_bfloat16():
    t = tf.cast(tf.constant([[1.5, -2.0], [0.25, 8.0]]), tf.bfloat16)
    back = tf.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(t))
    assert back.dtype == tf.bfloat16 and back._data_ptr == t._data_ptr
    np.testing.assert_array_equal(tf.cast(back, tf.float32).numpy(), [[1.5, -2.0], [0.25, 8.0]])


def test_lifetimes_cross_the_boundary():
    source = np.arange(1 << 16, dtype=np.float32)
    imported = tf.experimental.dlpack.from_dlpack(source)
    del source
    gc.collect()
    assert float(tf.reduce_sum(imported)) == float(np.arange(1 << 16, dtype=np.float32).sum())
    t = tf.range(10.0)
    view = np.from_dlpack(t)
    del t
    gc.collect()
    assert view.tolist() == list(np.arange(10.0))


def test_imported_memory_is_never_written_over():
    source = np.linspace(-1, 1, 4096, dtype=np.float32)
    keep = source.copy()
    f = tf.function(lambda x: tf.exp(x) * 2.0 + 1.0)
    for _ in range(3):
        out = f(tf.experimental.dlpack.from_dlpack(source))
        eager = tf.sqrt(tf.abs(tf.experimental.dlpack.from_dlpack(source)))
    np.testing.assert_array_equal(source, keep)
    np.testing.assert_allclose(out.numpy(), np.exp(keep) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(eager.numpy(), np.sqrt(np.abs(keep)), rtol=1e-6)


def test_released_from_other_threads():
    # The last reference to an imported buffer may drop on a thread without the GIL.
    source = np.ones((256, 256), np.float32)
    imported = [tf.experimental.dlpack.from_dlpack(source) for _ in range(8)]

    def worker(t):
        tf.reduce_sum(t * 2.0)

    threads = [threading.Thread(target=worker, args=(t,)) for t in imported]
    del imported
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    gc.collect()
    assert source.sum() == 256 * 256


def test_strided_arrays_are_copied_in_row_major_order():
    source = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for view in (source.T, source[:, ::2, 1:], np.broadcast_to(np.arange(3.0), (2, 3))):
        np.testing.assert_array_equal(tf.experimental.dlpack.from_dlpack(view).numpy(), view)


def test_exchange_with_tensorflow():
    ours = tf.constant([[1.0, 2.0, 3.0]])
    theirs = tensorflow.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(ours))
    assert theirs.dtype == tensorflow.float32 and theirs.numpy().tolist() == [[1.0, 2.0, 3.0]]
    back = tf.experimental.dlpack.from_dlpack(tensorflow.experimental.dlpack.to_dlpack(tensorflow.range(5)))
    assert back.dtype == tf.int32 and back.numpy().tolist() == [0, 1, 2, 3, 4]


def test_complex_exports_as_complex():
    # The export's dtype was float32 (of 8-byte complex64 elements): consumers read the parts as elements.
    z = tf.complex(tf.constant([1.0, -2.0, 3.5]), tf.constant([0.5, 4.0, -1.0]))
    exported = np.from_dlpack(z)
    assert exported.dtype == np.complex64 and exported.shape == (3,)
    np.testing.assert_array_equal(exported, [1 + 0.5j, -2 + 4j, 3.5 - 1j])
    theirs = tensorflow.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(tf.cast(z, tf.complex128)))
    assert theirs.dtype == tensorflow.complex128
    np.testing.assert_array_equal(theirs.numpy(), [1 + 0.5j, -2 + 4j, 3.5 - 1j])
    back = tf.experimental.dlpack.from_dlpack(tensorflow.experimental.dlpack.to_dlpack(theirs))
    assert back.dtype == tf.complex128
    np.testing.assert_array_equal(back.numpy(), [1 + 0.5j, -2 + 4j, 3.5 - 1j])


def test_what_ember_cannot_hold_is_a_clear_error():
    with pytest.raises(TypeError, match="no ember equivalent"):
        tf.experimental.dlpack.from_dlpack(np.ones(2, np.uint16))
    with pytest.raises(TypeError, match="no string dtype"):
        tf.experimental.dlpack.to_dlpack(tf.constant(["a"]))
    with pytest.raises(TypeError, match="DLPack"):
        tf.experimental.dlpack.from_dlpack(3)
    with pytest.raises(TypeError, match="expected an ember tensor"):
        tf.experimental.dlpack.to_dlpack(np.ones(2))

    @tf.function
    def f(x):
        with pytest.raises(TypeError, match="symbolic"):
            tf.experimental.dlpack.to_dlpack(x)
        return x

    f(tf.ones([2]))

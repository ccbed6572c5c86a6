"""tf.signal.kaiser_window, kaiser_bessel_derived_window and vorbis_window (python/ember/ops/spectral_ops.py) against
TensorFlow 2.21: lengths 1 to 40 and large, several beta, every float dtype, eager and in ember.function."""

import ml_dtypes
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em

TOL = {np.float64: 1e-12, np.float32: 2e-6, np.float16: 2e-3, ml_dtypes.bfloat16: 1.6e-2}


@pytest.mark.parametrize("name", ["kaiser_window", "kaiser_bessel_derived_window"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_windows_match_tensorflow(name, dtype):
    ours_fn, theirs_fn = getattr(em.signal, name), getattr(real_tf.signal, name)
    em_dtype, tf_dtype = em.as_dtype(np.dtype(dtype).name), real_tf.as_dtype(np.dtype(dtype).name)
    for length in list(range(1, 41)) + [255, 1024]:
        for beta in (0.0, 4.0, 12.0, 40.0):
            ours = ours_fn(length, beta, dtype=em_dtype)
            theirs = theirs_fn(length, beta, dtype=tf_dtype)
            assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape, (length, beta)
            np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), np.asarray(theirs.numpy(), np.float64),
                                       rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"{name}({length}, {beta})")


@pytest.mark.parametrize("name", ["kaiser_window", "kaiser_bessel_derived_window"])
def test_bfloat16_windows_round_the_float32_ones(name):
    """TensorFlow's CPU has no bfloat16 BesselI0e, so its bfloat16 windows fail; ember computes them in bfloat16
    (close to the float32 window rounded)."""
    with pytest.raises(real_tf.errors.NotFoundError):
        getattr(real_tf.signal, name)(8, dtype=real_tf.bfloat16)
    for length in (1, 2, 7, 16, 33):
        ours = getattr(em.signal, name)(length, 5.0, dtype=em.bfloat16)
        reference = getattr(real_tf.signal, name)(length, 5.0).numpy()
        assert ours.dtype == em.bfloat16
        np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), reference, rtol=3e-2, atol=3e-2)


def test_windows_traced_defaults_and_errors():
    for name in ("kaiser_window", "kaiser_bessel_derived_window"):
        ours_fn, theirs_fn = getattr(em.signal, name), getattr(real_tf.signal, name)
        traced = em.function(lambda: ours_fn(16))()
        np.testing.assert_allclose(traced.numpy(), theirs_fn(16).numpy(), rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(ours_fn(em.constant(9), em.constant(3.0)).numpy(),
                                   theirs_fn(real_tf.constant(9), real_tf.constant(3.0)).numpy(), rtol=2e-6,
                                   atol=2e-6)
        with pytest.raises(ValueError, match="floating point"):
            ours_fn(8, dtype=em.int32)
        with pytest.raises(ValueError, match="floating point"):
            theirs_fn(8, dtype=real_tf.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_vorbis_window_matches_tensorflow(dtype):
    em_dtype, tf_dtype = em.as_dtype(np.dtype(dtype).name), real_tf.as_dtype(np.dtype(dtype).name)
    staged = em.function(lambda: em.signal.vorbis_window(33, dtype=em_dtype))
    for length in list(range(0, 41)) + [255, 1024]:
        ours = em.signal.vorbis_window(length, dtype=em_dtype)
        theirs = real_tf.signal.vorbis_window(length, dtype=tf_dtype)
        assert ours.dtype.name == theirs.dtype.name and ours.shape == theirs.shape, length
        np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), np.asarray(theirs.numpy(), np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"vorbis_window({length})")
    np.testing.assert_array_equal(staged().numpy(), em.signal.vorbis_window(33, dtype=em_dtype).numpy())
    with pytest.raises(ValueError):
        em.signal.vorbis_window(8, dtype=em.int32)

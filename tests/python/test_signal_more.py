"""tf.signal's frame, overlap_and_add, windows, stft and inverse_stft (python/ember/ops/spectral_ops.py) against
TensorFlow 2.21: values eagerly and in a function (with the signal length unknown), gradients, and errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em
from tf_differential import values_and_gradient

RNG = np.random.default_rng(3)
WAVE = RNG.standard_normal((2, 300)).astype(np.float32)


def _same(ours, theirs, tol=1e-5):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def _compare(fn, x, tol=1e-5, grad=True, unknown=None, unknown_grad=True):
    """fn(module, x) eagerly, in ember.function and (``unknown``: a TensorSpec shape) traced with unknown dims,
    against TensorFlow: values and the gradient of sum(|y|^2 * 0.5 + real(y)) (with unknown dims only when
    ``unknown_grad``)."""
    theirs = values_and_gradient(fn, x, tf, grad=grad)
    for mode in ["eager", "traced"] + (["unknown"] if unknown else []):
        ours = values_and_gradient(fn, x, em, mode, unknown, grad and (mode != "unknown" or unknown_grad))
        for o, t in zip(ours, theirs):
            _same(o, t, tol)


@pytest.mark.parametrize("length,step", [(16, 8), (25, 10), (300, 7), (301, 1), (8, 16)])
@pytest.mark.parametrize("pad_end", [False, True])
def test_frame(length, step, pad_end):
    _compare(lambda m, x: m.signal.frame(x, length, step, pad_end=pad_end), WAVE, unknown=[2, None])
    _compare(lambda m, x: m.signal.frame(x, length, step, pad_end=pad_end, pad_value=3.0, axis=0), WAVE.T.copy())


def test_frame_of_a_short_signal_has_no_frames():
    _compare(lambda m, x: m.signal.frame(x, 400, 10), WAVE, grad=False)


@pytest.mark.parametrize("step", [1, 3, 8, 12])
def test_overlap_and_add(step):
    frames = RNG.standard_normal((2, 3, 5, 8)).astype(np.float32)
    _compare(lambda m, x: m.signal.overlap_and_add(x, step), frames, unknown=[2, 3, None, 8])


@pytest.mark.parametrize("fn", ["hann_window", "hamming_window"])
@pytest.mark.parametrize("length", [1, 2, 5, 16, 255, 400])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_windows(fn, length, periodic, dtype):
    _same(getattr(em.signal, fn)(length, periodic, dtype=getattr(em, dtype)),
          getattr(tf.signal, fn)(length, periodic, dtype=getattr(tf, dtype)), 1e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("frame_length,step,fft_length", [(255, 128, None), (64, 16, 64), (100, 25, 256), (32, 8, 16)])
@pytest.mark.parametrize("pad_end", [False, True])
def test_stft(frame_length, step, fft_length, pad_end):
    cropped = fft_length is not None and fft_length < frame_length  # TensorFlow's RFFT gradient fails on that
    _compare(lambda m, x: m.signal.stft(x, frame_length, step, fft_length, pad_end=pad_end), WAVE, tol=1e-4,
             grad=not cropped, unknown=[2, None], unknown_grad=False)  # ember's RFFT gradient needs static shapes
    _compare(lambda m, x: m.signal.stft(x, frame_length, step, fft_length, window_fn=m.signal.hamming_window),
             WAVE.astype(np.float64), tol=1e-9, grad=not cropped)


@pytest.mark.parametrize("frame_length,step,fft_length", [(64, 16, None), (100, 25, 128), (32, 8, 16)])
def test_inverse_stft_inverts_stft_as_tensorflow(frame_length, step, fft_length):
    spectra = tf.signal.stft(WAVE, frame_length, step, fft_length).numpy()
    _compare(lambda m, x: m.signal.inverse_stft(x, frame_length, step, fft_length), spectra, tol=1e-4)
    _compare(lambda m, x: m.signal.inverse_stft(x, frame_length, step, fft_length,
                                                window_fn=m.signal.inverse_stft_window_fn(step)), spectra, tol=1e-4)
    _compare(lambda m, x: m.signal.inverse_stft(x, frame_length, step, fft_length, window_fn=None),
             spectra.astype(np.complex128), tol=1e-9)


def test_signal_errors():
    with pytest.raises(ValueError, match="rank at least 1"):
        em.signal.frame(em.constant(1.0), 2, 1)
    with pytest.raises(ValueError, match="rank at least 2"):
        em.signal.overlap_and_add(em.constant([1.0]), 1)
    with pytest.raises(ValueError, match="must be positive"):
        em.signal.frame(WAVE, 4, 0)
    with pytest.raises(ValueError, match="dtype must be a floating point type"):
        em.signal.hann_window(4, dtype=em.int32)


@pytest.mark.parametrize("unknown_length", [False, True])
def test_tensorflow_runs_ember_graphs_of_stft_and_inverse_stft_with_a_longer_fft(unknown_length):
    """fft_length 256 > frame_length 200: the RFFT/IRFFT operands are padded in the graph, as TensorFlow's
    Python pads them (its kernels refuse shorter operands; ember's pad themselves)."""
    @em.function(input_signature=[em.TensorSpec([2, None if unknown_length else 300], em.float32)])
    def round_trip(wave):
        spectra = em.signal.stft(wave, frame_length=200, frame_step=50, fft_length=256)
        return em.signal.inverse_stft(spectra, frame_length=200, frame_step=50, fft_length=256)

    concrete = round_trip.get_concrete_function()
    graph_def = tf.compat.v1.GraphDef.FromString(concrete.graph.as_graph_def().SerializeToString())
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    theirs = wrapped.prune(feeds=concrete.inputs[0].name, fetches=concrete.outputs[0].name)(tf.constant(WAVE))
    expected = tf.signal.inverse_stft(tf.signal.stft(WAVE, 200, 50, 256), 200, 50, 256)
    np.testing.assert_allclose(theirs.numpy(), expected.numpy(), atol=1e-5)
    np.testing.assert_allclose(round_trip(WAVE).numpy(), expected.numpy(), atol=1e-5)

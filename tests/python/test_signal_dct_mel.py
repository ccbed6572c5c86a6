"""ember.signal's DCTs and mel features (python/ember/ops/dct_mel_ops.py) against TensorFlow 2.21: dct and idct
of types 1-4 with both norms and cut or padded lengths, their gradients, linear_to_mel_weight_matrix,
mfccs_from_log_mel_spectrograms, ember.function with unknown dims, a GraphDef TensorFlow runs, and bad
arguments raising TensorFlow's errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(31)
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def _same(ours, theirs, tol):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dct_type,norm", [(1, None), (2, None), (2, "ortho"), (3, None), (3, "ortho"), (4, None),
                                           (4, "ortho")])
@pytest.mark.parametrize("fn", ["dct", "idct"])
def test_dct_and_idct_and_their_gradients_match_tensorflow(fn, dct_type, norm, dtype):
    x = RNG.standard_normal((3, 8)).astype(dtype)
    for n in (None, 5, 11):
        if fn == "idct" and n is not None:
            continue  # TensorFlow's idct takes n too, but documents it "must be None": compared once below
        weights = RNG.standard_normal((3, n or 8)).astype(dtype)

        def run(m):
            t = m.constant(x)
            with m.GradientTape() as tape:
                tape.watch(t)
                y = getattr(m.signal, fn)(t, type=dct_type, n=n, norm=norm)
                loss = m.reduce_sum(y * weights)
            return y, tape.gradient(loss, t)

        for ours, theirs in zip(run(em), run(tf)):
            _same(ours, theirs, TOL[dtype] * 10)
    _same(em.signal.idct(x, type=dct_type, n=6, norm=norm), tf.signal.idct(x, type=dct_type, n=6, norm=norm),
          TOL[dtype] * 10)


def test_ortho_dct_inverts_and_matches_scipys_convention():
    x = RNG.standard_normal((2, 9))
    for t in (2, 3, 4):
        np.testing.assert_allclose(em.signal.idct(em.signal.dct(x, type=t, norm="ortho"), type=t, norm="ortho"), x,
                                   atol=1e-12)
    # DCT-II: X_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N)
    k, n = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    np.testing.assert_allclose(em.signal.dct(x), x @ (2 * np.cos(np.pi * k * (2 * n + 1) / 18)).T, atol=1e-12)


def test_dct_in_a_function_with_unknown_dims():
    @em.function(input_signature=[em.TensorSpec([None, None], em.float32)])
    def transforms(x):
        return em.signal.dct(x, type=2, norm="ortho"), em.signal.dct(x, type=4, n=6), em.signal.dct(x, type=1)

    x = RNG.standard_normal((2, 7)).astype(np.float32)
    for ours, theirs in zip(transforms(x), (tf.signal.dct(x, type=2, norm="ortho"), tf.signal.dct(x, type=4, n=6),
                                            tf.signal.dct(x, type=1))):
        _same(ours, theirs, 1e-4)


@pytest.mark.parametrize("fn,error,message", [
    (lambda m: m.signal.dct(np.ones((2, 4), np.float32), axis=0), NotImplementedError, "axis must be -1"),
    (lambda m: m.signal.dct(np.ones((2, 4), np.float32), n=0), ValueError, "n should be a positive integer"),
    (lambda m: m.signal.dct(np.ones((2, 4), np.float32), type=5), ValueError, "Types I, II, III and IV"),
    (lambda m: m.signal.dct(np.ones((2, 4), np.float32), type=1, norm="ortho"), ValueError, "not supported for the Type-I"),
    (lambda m: m.signal.dct(np.ones((2, 1), np.float32), type=1), ValueError, "greater than one"),
    (lambda m: m.signal.idct(np.ones((2, 4), np.float32), norm="forward"), ValueError, "Unknown normalization"),
])
def test_dct_bad_arguments_raise_as_tensorflow(fn, error, message):
    with pytest.raises(error, match=message):
        fn(tf)
    with pytest.raises(error, match=message):
        fn(em)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bins,spectrogram_bins,rate,lower,upper", [
    (20, 129, 8000, 125.0, 3800.0), (40, 257, 16000, 20.0, 8000.0), (1, 5, 100, 0.0, 50.0), (64, 513, 22050, 80.0, 7600.0),
])
def test_linear_to_mel_weight_matrix_matches_tensorflow(bins, spectrogram_bins, rate, lower, upper, dtype):
    ours = em.signal.linear_to_mel_weight_matrix(bins, spectrogram_bins, rate, lower, upper, em.as_dtype(dtype))
    theirs = tf.signal.linear_to_mel_weight_matrix(bins, spectrogram_bins, rate, lower, upper, tf.as_dtype(dtype))
    _same(ours, theirs, TOL[dtype] * 10)
    # A sample rate given as a tensor (its value read while tracing where it is a constant).
    _same(em.signal.linear_to_mel_weight_matrix(bins, spectrogram_bins, em.constant(rate), lower, upper,
                                                em.as_dtype(dtype)), theirs, TOL[dtype] * 10)


@pytest.mark.parametrize("kwargs,message", [
    (dict(num_mel_bins=0), "num_mel_bins must be positive"),
    (dict(lower_edge_hertz=-1.0), "lower_edge_hertz must be non-negative"),
    (dict(lower_edge_hertz=4000.0, upper_edge_hertz=3000.0), "lower_edge_hertz 4000.0 >= upper_edge_hertz 3000.0"),
    (dict(sample_rate=0), "sample_rate must be positive"),
    (dict(sample_rate=6000), "Nyquist"),
    (dict(dtype="int32"), "dtype must be a floating point type"),
])
def test_linear_to_mel_weight_matrix_bad_arguments_raise_value_error(kwargs, message):
    tf_kwargs = {k: (tf.as_dtype(v) if k == "dtype" else v) for k, v in kwargs.items()}
    with pytest.raises(ValueError, match=message):
        tf.signal.linear_to_mel_weight_matrix(**tf_kwargs)
    with pytest.raises(ValueError, match=message):
        em.signal.linear_to_mel_weight_matrix(**kwargs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mfccs_of_an_stft_pipeline_and_their_gradient_match_tensorflow(dtype):
    """The tutorial pipeline: |stft| -> mel -> log -> MFCCs, with the gradient w.r.t. the waveform."""
    wave = RNG.standard_normal((2, 1600)).astype(dtype)

    def run(m):
        w = m.constant(wave)
        with m.GradientTape() as tape:
            tape.watch(w)
            spectra = m.abs(m.signal.stft(w, frame_length=256, frame_step=128, fft_length=256))
            mel = m.signal.linear_to_mel_weight_matrix(40, 129, 8000, 20.0, 4000.0, getattr(m, np.dtype(dtype).name))
            mfccs = m.signal.mfccs_from_log_mel_spectrograms(m.math.log(m.tensordot(spectra, mel, 1) + 1e-6))[..., :13]
            loss = m.reduce_sum(mfccs)
        return mfccs, tape.gradient(loss, w)

    for ours, theirs in zip(run(em), run(tf)):
        _same(ours, theirs, 1e-3 if dtype == np.float32 else 1e-9)
    with pytest.raises(ValueError, match="num_mel_bins must be positive"):
        em.signal.mfccs_from_log_mel_spectrograms(np.zeros((3, 0), np.float32))


def test_tensorflow_runs_an_ember_graph_of_mfccs():
    """The mel matrix is built inside the graph too (LinSpace, the frame's Gather)."""
    @em.function(input_signature=[em.TensorSpec([None, 33], em.float32)])
    def mfccs(spectra):
        mel = em.signal.linear_to_mel_weight_matrix(16, 33, 8000, 50.0, 4000.0)
        return em.signal.mfccs_from_log_mel_spectrograms(em.math.log(em.matmul(spectra, mel) + 1e-3))

    concrete = mfccs.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    graph_def = tf.compat.v1.GraphDef.FromString(gd.SerializeToString())
    feed = next(n.name for n in gd.node if n.op == "Placeholder")
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    spectra = np.abs(RNG.standard_normal((5, 33))).astype(np.float32)
    theirs = wrapped.prune(feeds=f"{feed}:0", fetches=concrete.outputs[0].name)(tf.constant(spectra))
    _same(theirs, mfccs(spectra), 1e-5)
    _same(theirs, tf.signal.mfccs_from_log_mel_spectrograms(tf.math.log(tf.matmul(
        spectra, tf.signal.linear_to_mel_weight_matrix(16, 33, 8000, 50.0, 4000.0)) + 1e-3)),
          1e-4)

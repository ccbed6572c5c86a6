"""tf.signal FFTs (FFTW underneath) against TensorFlow 2: values, fft_length cropping and padding, gradients
with TensorFlow's convention, eager and inside ember.function, errors, and calls from several threads."""
import threading

import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import _C, errors

RNG = np.random.default_rng(5)


def cplx(shape, dtype=np.complex64):
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.complex64, np.float32) else 1e-10


def check(fn, x, dtype, **kw):
    ours = fn(tf, tf.constant(x), **kw)
    staged = tf.function(lambda a: fn(tf, a, **kw))(tf.constant(x))
    theirs = fn(real_tf, real_tf.constant(x), **kw)
    assert ours.dtype.name == theirs.dtype.name
    assert list(ours.shape) == list(theirs.shape), (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol(dtype), atol=tol(dtype))
    np.testing.assert_allclose(staged.numpy(), theirs.numpy(), rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,shape", [("fft", [3, 8]), ("ifft", [7]), ("fft", [2, 5]), ("fft2d", [2, 4, 6]),
                                        ("ifft2d", [3, 5]), ("fft3d", [2, 3, 4, 5]), ("ifft3d", [3, 2, 4])])
def test_complex_ffts_match_tensorflow(name, shape, dtype):
    check(lambda lib, a: getattr(lib.signal, name)(a), cplx(shape, dtype), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,fft_length", [(8, None), (7, None), (8, [6]), (6, [9]), (5, [5]), (2, None)])
def test_rfft_irfft_match_tensorflow(n, fft_length, dtype):
    x = RNG.normal(size=[3, n]).astype(dtype)
    check(lambda lib, a: lib.signal.rfft(a, fft_length=fft_length), x, dtype)
    spectrum = cplx([3, n // 2 + 1], np.complex64 if dtype == np.float32 else np.complex128)
    check(lambda lib, a: lib.signal.irfft(a, fft_length=fft_length), spectrum, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,fft_length", [([2, 4, 6], None), ([3, 5], [4, 4]), ([4, 3], [5, 7])])
def test_rfft2d_irfft2d_match_tensorflow(shape, fft_length, dtype):
    x = RNG.normal(size=shape).astype(dtype)
    check(lambda lib, a: lib.signal.rfft2d(a, fft_length=fft_length), x, dtype)
    half = list(shape[:-1]) + [shape[-1] // 2 + 1]
    spectrum = cplx(half, np.complex64 if dtype == np.float32 else np.complex128)
    check(lambda lib, a: lib.signal.irfft2d(a, fft_length=fft_length), spectrum, dtype)


def test_rfft3d_round_trip():
    x = RNG.normal(size=[2, 3, 4, 6]).astype(np.float32)
    check(lambda lib, a: lib.signal.irfft3d(lib.signal.rfft3d(a)), x, np.float32)


def _grad(lib, fn, x):
    v = lib.Variable(x)
    with lib.GradientTape() as tape:
        loss = fn(lib, v)
    return tape.gradient(loss, v).numpy()


WEIGHT = RNG.normal(size=[16]).astype(np.float32)
GRAD_CASES = {
    "fft": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.fft(v)) * WEIGHT[:8]), lambda: cplx([3, 8])),
    "ifft": (lambda lib, v: lib.reduce_sum(lib.math.real(lib.signal.ifft(v * v))), lambda: cplx([5])),
    "fft2d": (lambda lib, v: lib.reduce_sum(lib.math.imag(lib.signal.fft2d(v)) ** 2), lambda: cplx([2, 3, 4])),
    "ifft2d": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.ifft2d(v))), lambda: cplx([4, 3])),
    "fft3d": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.fft3d(v))), lambda: cplx([2, 3, 2])),
    "rfft_even": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft(v)) * WEIGHT[:5]),
                  lambda: RNG.normal(size=[2, 8]).astype(np.float32)),
    "rfft_odd": (lambda lib, v: lib.reduce_sum(lib.math.real(lib.signal.rfft(v)) * WEIGHT[:4] +
                                              lib.math.imag(lib.signal.rfft(v)) * WEIGHT[4:8]),
                 lambda: RNG.normal(size=[7]).astype(np.float32)),
    "rfft_padded": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft(v, fft_length=[10]))),
                    lambda: RNG.normal(size=[6]).astype(np.float32)),
    "irfft_even": (lambda lib, v: lib.reduce_sum(lib.signal.irfft(v) * WEIGHT[:8]), lambda: cplx([2, 5])),
    "irfft_odd": (lambda lib, v: lib.reduce_sum(lib.signal.irfft(v, fft_length=[7]) ** 2), lambda: cplx([4])),
    "rfft2d": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft2d(v))), lambda: RNG.normal(size=[4, 6]).astype(
        np.float32)),
    "irfft2d": (lambda lib, v: lib.reduce_sum(lib.signal.irfft2d(v) * WEIGHT[:6]), lambda: cplx([3, 4])),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_tensorflow(name):
    fn, make = GRAD_CASES[name]
    x = make()
    np.testing.assert_allclose(_grad(tf, fn, x), _grad(real_tf, fn, x), rtol=2e-3, atol=2e-3)


def test_gradient_of_a_cropped_rfft_is_zero_past_the_crop():
    # TensorFlow's own gradient fails here ("Incompatible shapes: [4] vs. [6]"): rfft(x, [4]) is rfft(x[:4]),
    # whose gradient TensorFlow computes, padded with zeros.
    x = RNG.normal(size=[6]).astype(np.float32)
    ours = _grad(tf, lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft(v, fft_length=[4]))), x)
    theirs = _grad(real_tf, lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft(v))), x[:4])
    np.testing.assert_allclose(ours, np.concatenate([theirs, [0, 0]]), rtol=2e-3, atol=2e-3)


def test_gradient_inside_a_function():
    fn, make = GRAD_CASES["rfft_even"]
    x = make()

    @tf.function
    def staged(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            loss = fn(tf, a)
        return tape.gradient(loss, a)

    np.testing.assert_allclose(staged(tf.constant(x)).numpy(), _grad(real_tf, fn, x), rtol=2e-3, atol=2e-3)


def test_errors_name_the_op():
    with pytest.raises(TypeError, match="fft"):
        tf.signal.fft(tf.ones([4]))
    with pytest.raises(TypeError, match="rfft"):
        tf.signal.rfft(tf.ones([4], tf.complex64))
    with pytest.raises(errors.InvalidArgumentError, match="FFT2D"):
        tf.signal.fft2d(tf.ones([4], tf.complex64))
    with pytest.raises(ValueError, match="fft_length"):
        tf.signal.rfft(tf.ones([4]), fft_length=[4, 4])
    with pytest.raises(errors.InvalidArgumentError, match="RFFT"):
        _C.op("RFFT")(tf.ones([4]), tf.constant([-2]))


def test_zero_length_transforms_are_empty():
    # TensorFlow aborts the process here (FFTW's "no zero-sized FFTs"); ember returns the empty result.
    assert tf.signal.irfft(tf.ones([3, 1], tf.complex64)).shape == [3, 0]
    assert tf.signal.rfft(tf.ones([3, 4]), fft_length=[0]).shape == [3, 1]


def test_empty_and_unaligned_inputs():
    x = cplx([0, 4])
    assert tf.signal.fft(tf.constant(x)).shape == [0, 4]
    y = cplx([3, 9])  # row i starts at an odd multiple of 8 bytes when sliced
    sliced = tf.constant(y)[1:]
    np.testing.assert_allclose(tf.signal.fft(sliced).numpy(), np.fft.fft(y[1:]).astype(np.complex64), rtol=1e-4,
                               atol=1e-4)


def test_fftshift_matches_tensorflow():
    x = RNG.normal(size=[3, 5]).astype(np.float32)
    check(lambda lib, a: lib.signal.fftshift(a), x, np.float32)
    check(lambda lib, a: lib.signal.ifftshift(a, axes=1), x, np.float32)


def test_many_threads_plan_and_run_at_once():
    sizes = [5, 6, 7, 8, 12, 16, 31, 64]
    inputs = {n: cplx([4, n]) for n in sizes}
    failures = []

    def work(k):
        try:
            for i in range(20):
                n = sizes[(k + i) % len(sizes)]
                got = tf.signal.fft(tf.constant(inputs[n])).numpy()
                np.testing.assert_allclose(got, np.fft.fft(inputs[n]), rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def _finite_difference(loss, x, eps=1e-6):
    x = np.asarray(x)
    out = np.zeros_like(x)
    units = (1, 1j) if x.dtype.kind == "c" else (1,)
    for i in np.ndindex(x.shape):
        for unit in units:
            step = np.zeros_like(x)
            step[i] = unit * eps
            d = (loss(tf, tf.constant(x + step)).numpy() - loss(tf, tf.constant(x - step)).numpy()) / (2 * eps)
            out[i] += d * unit
    return out


W64 = np.linspace(-1, 1, 24)
FD_CASES = {
    "FFT": (lambda lib, v: lib.reduce_sum(lib.math.real(lib.signal.fft(v)) * W64[:8]), [8], True),
    "IFFT": (lambda lib, v: lib.reduce_sum(lib.math.imag(lib.signal.ifft(v)) * W64[:5]), [5], True),
    "FFT2D": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.fft2d(v))), [3, 4], True),
    "IFFT2D": (lambda lib, v: lib.reduce_sum(lib.math.real(lib.signal.ifft2d(v)) * W64[:4]), [2, 4], True),
    "FFT3D": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.fft3d(v))), [2, 2, 3], True),
    "IFFT3D": (lambda lib, v: lib.reduce_sum(lib.math.imag(lib.signal.ifft3d(v))), [2, 3, 2], True),
    "RFFT": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft(v, fft_length=[8]))), [6], False),
    "IRFFT": (lambda lib, v: lib.reduce_sum(lib.signal.irfft(v, fft_length=[7]) * W64[:7]), [5], True),
    "RFFT2D": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft2d(v))), [3, 5], False),
    "IRFFT2D": (lambda lib, v: lib.reduce_sum(lib.signal.irfft2d(v) * W64[:6]), [2, 4], True),
    "RFFT3D": (lambda lib, v: lib.reduce_sum(lib.abs(lib.signal.rfft3d(v))), [2, 2, 4], False),
    "IRFFT3D": (lambda lib, v: lib.reduce_sum(lib.signal.irfft3d(v) ** 2), [2, 2, 3], True),
}


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_fft_gradients_match_finite_differences(name):
    loss, shape, is_complex = FD_CASES[name]
    x = cplx(shape, np.complex128) if is_complex else RNG.normal(size=shape)
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(tf, x)
    ours = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(ours, _finite_difference(loss, x.numpy()), rtol=1e-5, atol=1e-5)


def test_signal_and_strings_functions_dispatch_keras_tensors_with_tensorflows_names():
    """tf.signal and tf.strings functions are wrapped like the other API modules (util/dispatch.py): each
    carries TensorFlow's canonical name, and on a Keras symbolic tensor it becomes a TFOpLambda layer of the
    model. (TensorFlow itself does not dispatch its rfft family; ember's wrapping of every function is a
    superset.)"""
    from tensorflow.python.util import tf_export

    checked = 0
    for module in ("signal", "strings"):
        for name in dir(getattr(tf, module)):
            fn = getattr(getattr(tf, module), name)
            theirs = getattr(getattr(real_tf, module), name, None)
            if name.startswith("_") or not callable(fn) or theirs is None:  # helpers the module imported
                continue
            assert isinstance(fn, _C.ApiFunction), (module, name)
            want = "tf." + tf_export.get_canonical_name_for_symbol(theirs, add_prefix_to_v1_names=True)
            assert fn._ember_api_name == want, (module, name)
            checked += 1
    assert checked >= 25
    tf.keras.backend.clear_session()
    z = tf.keras.Input(shape=(8,), dtype=tf.complex64)
    s = tf.keras.Input(shape=(2,), dtype=tf.string)
    spectrum, lengths = tf.signal.fft(z), tf.strings.length(s)
    assert spectrum._keras_history[0].name == "tf.signal.fft"
    assert lengths._keras_history[0].get_config()["function"] == "strings.length"
    model = tf.keras.Model([z, s], [spectrum, lengths])
    values = cplx([3, 8])
    got_spectrum, got_lengths = model([tf.constant(values), tf.constant([["ab", "c"]] * 3)])
    np.testing.assert_allclose(got_spectrum.numpy(), np.fft.fft(values), rtol=tol(np.complex64),
                               atol=tol(np.complex64))
    assert got_lengths.numpy().tolist() == [[2, 1]] * 3

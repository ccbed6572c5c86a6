"""``tf.signal``'s cosine transforms and mel features (exported by ``ember.signal``): dct and idct of types
1-4 (norm None or "ortho"), linear_to_mel_weight_matrix and mfccs_from_log_mel_spectrograms.

As TensorFlow's, the DCTs are real parts of length-2N RFFTs (type 1: of the even extension; type 2: Makhoul's
padded transform, each bin turned by exp(-i pi k / 2N); type 3: its inverse through an IRFFT; type 4: the odd
bins of a type 2 of twice the length), so they differentiate and trace through RFFT/IRFFT. The mel matrix is
TensorFlow's HTK-style triangles (mel = 1127 ln(1 + f / 700)) over the spectrogram bins, the DC bin zeroed;
MFCCs are an orthonormal-scaled type 2 DCT of log mel spectra."""

import math

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_util import get_static_value
from ember.ops import array_ops, math_ops
from ember.ops.math_ops import cast


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _check_dct_arguments(x, dct_type, n, axis, norm):
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None and n < 1:
        raise ValueError("n should be a positive integer or None")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        if x.shape.rank and x.shape[-1] is not None and x.shape[-1] < 2:
            raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")


def _last_dim(x):
    """The innermost dim: a Python int where tracing knows it, else an int32 scalar tensor."""
    known = x.shape[-1] if x.shape.rank else None
    return known if known is not None else array_ops.shape(x)[-1]


def _to_length(x, n):
    """x cut or zero-padded to n samples along its innermost dim."""
    x = x[..., :n]
    short = n - _last_dim(x)
    if isinstance(short, int) and short == 0:
        return x
    rank = x.shape.rank
    paddings = array_ops.stack([array_ops.stack([0, 0])] * (rank - 1) +
                               [array_ops.stack([0, math_ops.maximum(short, 0)])])
    return array_ops.pad(x, paddings)


def _first_and_rest(first, rest, length, dtype):
    """[first, rest, rest, ...] of `length` elements: the orthonormal scalings."""
    return array_ops.where(array_ops.range(length) == 0, cast(first, dtype), cast(rest, dtype))


def _lengths(length):
    return [length] if isinstance(length, int) else array_ops.reshape(cast(length, dtypes.int32), [1])


def _rfft(x, length):
    from ember import signal  # imports this module

    return signal.rfft(x, _lengths(length))


def _irfft(x, length):
    from ember import signal

    return signal.irfft(x, _lengths(length))


def _turn(length, dtype, sign):
    """2 exp(sign * i pi k / (2 length)) for k < length."""
    n = cast(length, dtype)
    angle = sign * array_ops.range(n) * (math.pi * 0.5) / n
    return 2.0 * math_ops.exp(math_ops.complex(array_ops.zeros_like(angle), angle))


def _dct(x, dct_type, n, norm):
    if n is not None:
        x = _to_length(x, n)
    length = _last_dim(x)
    n_float = cast(length, x.dtype)
    if dct_type == 1:
        return math_ops.real(_rfft(array_ops.concat([x, x[..., -2:0:-1]], axis=-1),
                                   2 * length - 2))
    if dct_type == 2:
        y = math_ops.real(_rfft(x, 2 * length)[..., :length] * _turn(length, x.dtype, -1.0))
        if norm == "ortho":
            first = 0.5 * math_ops.rsqrt(n_float)
            y = y * _first_and_rest(first, first * math.sqrt(2.0), length, x.dtype)
        return y
    if dct_type == 3:
        if norm == "ortho":
            first = math_ops.sqrt(n_float)
            x = x * _first_and_rest(first, first * math.sqrt(0.5), length, x.dtype)
        else:
            x = x * n_float
        spectrum = _turn(length, x.dtype, 1.0) * math_ops.complex(x, array_ops.zeros_like(x))
        return math_ops.real(_irfft(spectrum, 2 * length))[..., :length]
    y = _dct(x, 2, 2 * length, None)[..., 1::2]  # type 4
    if norm == "ortho":
        y = y * (math.sqrt(0.5) * math_ops.rsqrt(n_float))
    return y


def dct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002 - TensorFlow's names
    """The type 1-4 discrete cosine transform over the innermost dim (SciPy's fftpack.dct), ``n`` cutting or
    zero-padding the signal; ``norm="ortho"`` scales it orthonormal."""
    x = _tensor(input)
    _check_dct_arguments(x, type, n, axis, norm)
    return _dct(x, type, n, norm)


def idct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The inverse of dct of the same type up to 1 / (2 N) (exactly with ``norm="ortho"``): a DCT of type
    1, 3, 2 or 4 for type 1, 2, 3 or 4."""
    x = _tensor(input)
    _check_dct_arguments(x, type, n, axis, norm)
    return _dct(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)


_MEL_BREAK_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(hertz):
    return _MEL_HIGH_FREQUENCY_Q * math_ops.log(1.0 + hertz / _MEL_BREAK_HERTZ)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000, lower_edge_hertz=125.0,
                                upper_edge_hertz=3800.0, dtype=dtypes.float32, name=None):
    """[num_spectrogram_bins, num_mel_bins] weights that turn a linear magnitude spectrum into mel bands:
    triangles between adjacent mel band edges spaced evenly from lower to upper_edge_hertz."""
    dtype = dtypes.as_dtype(dtype)
    if isinstance(sample_rate, Tensor):
        known = get_static_value(sample_rate)
        if known is not None:
            sample_rate = known
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz:.1f} >= upper_edge_hertz {upper_edge_hertz:.1f}")
    if not isinstance(sample_rate, Tensor):
        if sample_rate <= 0.0:
            raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
        if upper_edge_hertz > sample_rate / 2:
            raise ValueError("upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
                             f"Got {upper_edge_hertz} for sample_rate: {sample_rate}")
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {dtype}")
    from ember.ops.spectral_ops import frame

    sample_rate = cast(_tensor(sample_rate), dtype)
    zero = convert_to_tensor(0.0, dtype=dtype)
    # Bin 0 (DC) gets no weight: its frequency is 0 Hz, below every band.
    bin_mels = array_ops.expand_dims(
        _hertz_to_mel(array_ops.linspace(zero, sample_rate / 2.0, num_spectrogram_bins)[1:]), 1)
    edges = frame(array_ops.linspace(_hertz_to_mel(convert_to_tensor(lower_edge_hertz, dtype=dtype)),
                                     _hertz_to_mel(convert_to_tensor(upper_edge_hertz, dtype=dtype)),
                                     num_mel_bins + 2), frame_length=3, frame_step=1)
    lower, center, upper = (array_ops.reshape(t, [1, num_mel_bins]) for t in array_ops.split(edges, 3, axis=1))
    rising = (bin_mels - lower) / (center - lower)
    falling = (upper - bin_mels) / (upper - center)
    weights = math_ops.maximum(zero, math_ops.minimum(rising, falling))
    return array_ops.pad(weights, [[1, 0], [0, 0]])


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """Mel-frequency cepstral coefficients: the orthonormal-scaled type 2 DCT of [..., num_mel_bins] log mel
    spectra (keep the first ~13 for speech)."""
    x = _tensor(log_mel_spectrograms)
    bins = _last_dim(x) if x.shape.rank else array_ops.shape(x)[-1]
    if isinstance(bins, int) and bins == 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {x}")
    return dct(x, type=2) * math_ops.rsqrt(cast(bins, x.dtype) * 2.0)

"""``ember.signal``: TensorFlow's ``tf.signal`` FFTs (FFTW underneath; docs/complex.md), the framing, windows
and short-time Fourier transforms of ops/spectral_ops.py on them, and the DCTs and mel features of
ops/dct_mel_ops.py.

fft/ifft (1-3 D) transform complex64/complex128 tensors over their innermost dims; rfft/irfft (1-3 D) go
between float32/float64 signals and their half spectra, with ``fft_length`` cropping or zero-padding the
input as TensorFlow's."""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_util import get_static_value
from ember.ops import array_ops, indexing_ops, math_ops

__all__ = ["dct", "fft", "fft2d", "fft3d", "fftshift", "frame", "hamming_window", "hann_window", "idct", "ifft",
           "ifft2d", "ifft3d", "ifftshift", "inverse_stft", "inverse_stft_window_fn", "irfft", "irfft2d", "irfft3d",
           "kaiser_bessel_derived_window", "kaiser_window",
           "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms", "overlap_and_add", "rfft", "rfft2d",
           "rfft3d", "stft", "vorbis_window"]


def _t(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _complex_input(x, name):
    x = _t(x)
    if not x.dtype.is_complex:
        raise TypeError(f"{name}: input must be complex64 or complex128, got {x.dtype.name}")
    return x


def fft(input, name=None):  # noqa: A002 - TensorFlow's name
    """The DFT over the innermost dim of a complex tensor."""
    return _C.op("FFT")(_complex_input(input, "fft"))


def ifft(input, name=None):  # noqa: A002
    """The inverse DFT over the innermost dim, scaled by 1/n."""
    return _C.op("IFFT")(_complex_input(input, "ifft"))


def fft2d(input, name=None):  # noqa: A002
    """The 2-D DFT over the two innermost dims."""
    return _C.op("FFT2D")(_complex_input(input, "fft2d"))


def ifft2d(input, name=None):  # noqa: A002
    """The inverse 2-D DFT over the two innermost dims."""
    return _C.op("IFFT2D")(_complex_input(input, "ifft2d"))


def fft3d(input, name=None):  # noqa: A002
    """The 3-D DFT over the three innermost dims."""
    return _C.op("FFT3D")(_complex_input(input, "fft3d"))


def ifft3d(input, name=None):  # noqa: A002
    """The inverse 3-D DFT over the three innermost dims."""
    return _C.op("IFFT3D")(_complex_input(input, "ifft3d"))


def _inner_dims(x, rank, name):
    dims = x.shape.as_list() if x.shape.rank is not None else None
    if dims is None or len(dims) < rank or any(d is None for d in dims[-rank:]):
        raise ValueError(f"{name}: fft_length is required when the innermost {rank} dim(s) of the input are not "
                         f"known, got shape {x.shape}")
    return dims[-rank:]


def _fft_length(fft_length, rank, name):
    if isinstance(fft_length, Tensor):
        return fft_length
    values = [int(v) for v in (fft_length if hasattr(fft_length, "__len__") else [fft_length])]
    if len(values) != rank:
        raise ValueError(f"{name}: fft_length must have {rank} element(s), got {values}")
    return convert_to_tensor(values, dtype=dtypes.int32)


def _pad_to(x, lengths, rank):
    """x zero-padded at the end of its innermost `rank` dims up to `lengths` (an int32 tensor of `rank`
    elements). TensorFlow's RFFT and IRFFT kernels refuse shorter operands and its Python pads them so; ember's
    kernels pad themselves, but a GraphDef must carry the padding for TensorFlow to run it."""
    dims = x.shape.as_list() if x.shape.rank is not None else None
    if dims is None:
        return x  # unknown rank: left to ember's kernel
    wanted = get_static_value(lengths)
    if wanted is not None and all(d is not None for d in dims[-rank:]):
        extra = [max(int(w) - d, 0) for w, d in zip(wanted, dims[-rank:])]
        if not any(extra):
            return x
        return array_ops.pad(x, [[0, 0]] * (len(dims) - rank) + [[0, e] for e in extra])
    extra = math_ops.maximum(lengths - array_ops.shape(x)[-rank:], 0)
    tail = array_ops.stack([array_ops.zeros_like(extra), extra], axis=1)
    return array_ops.pad(x, array_ops.concat([array_ops.zeros([len(dims) - rank, 2], dtypes.int32), tail], 0))


def _rfft(op, rank, name, input_tensor, fft_length):
    x = _t(input_tensor)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{name}: input must be float32 or float64, got {x.dtype.name}")
    if fft_length is None:
        fft_length = _inner_dims(x, rank, name)
    lengths = _fft_length(fft_length, rank, name)
    return _C.op(op)(_pad_to(x, lengths, rank), lengths)


def _irfft(op, rank, name, input_tensor, fft_length):
    x = _complex_input(input_tensor, name)
    if fft_length is None:
        dims = _inner_dims(x, rank, name)
        fft_length = dims[:-1] + [2 * (dims[-1] - 1)]
    lengths = _fft_length(fft_length, rank, name)
    bins = array_ops.concat([lengths[:-1], lengths[-1:] // 2 + 1], 0)
    return _C.op(op)(_pad_to(x, bins, rank), lengths)


def rfft(input_tensor, fft_length=None, name=None):
    """The half spectrum (bins 0..n/2) of the DFT of a real signal over its innermost dim."""
    return _rfft("RFFT", 1, "rfft", input_tensor, fft_length)


def irfft(input_tensor, fft_length=None, name=None):
    """The real signal of a half spectrum (default length 2 * (bins - 1)), scaled by 1/n."""
    return _irfft("IRFFT", 1, "irfft", input_tensor, fft_length)


def rfft2d(input_tensor, fft_length=None, name=None):
    """The 2-D real DFT over the two innermost dims (half spectrum along the last)."""
    return _rfft("RFFT2D", 2, "rfft2d", input_tensor, fft_length)


def irfft2d(input_tensor, fft_length=None, name=None):
    """The inverse of rfft2d."""
    return _irfft("IRFFT2D", 2, "irfft2d", input_tensor, fft_length)


def rfft3d(input_tensor, fft_length=None, name=None):
    """The 3-D real DFT over the three innermost dims."""
    return _rfft("RFFT3D", 3, "rfft3d", input_tensor, fft_length)


def irfft3d(input_tensor, fft_length=None, name=None):
    """The inverse of rfft3d."""
    return _irfft("IRFFT3D", 3, "irfft3d", input_tensor, fft_length)


def _shift(x, axes, sign):
    x = _t(x)
    if axes is None:
        axes = list(range(x.shape.rank))
    elif isinstance(axes, int):
        axes = [axes]
    dims = x.shape.as_list()
    shifts = [sign * (dims[a] // 2) for a in axes]
    return indexing_ops.roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """Moves the zero-frequency bin to the centre (NumPy's fftshift)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift."""
    return _shift(x, axes, -1)


from ember.ops.dct_mel_ops import (dct, idct, linear_to_mel_weight_matrix,  # noqa: E402
                                   mfccs_from_log_mel_spectrograms)
from ember.ops.spectral_ops import (frame, hamming_window, hann_window, inverse_stft,  # noqa: E402
                                    inverse_stft_window_fn, kaiser_bessel_derived_window, kaiser_window,
                                    overlap_and_add, stft, vorbis_window)

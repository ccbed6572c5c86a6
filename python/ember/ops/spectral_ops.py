"""``tf.signal``'s framing and short-time Fourier transforms: frame, overlap_and_add, hann_window,
hamming_window, stft, inverse_stft and inverse_stft_window_fn (exported by ``ember.signal``).

As TensorFlow's Python, they compose registry ops — frame gathers the frames, overlap_and_add sums them back
with a segment sum, stft multiplies by the window and takes RFFT, inverse_stft takes IRFFT — so they trace and
differentiate. A signal length unknown while tracing is handled with shape tensors (a dataset map over
waveforms of varying length); frame_length and frame_step must be Python ints or tensors known now."""

import numpy as np

from ember import dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.ops.math_ops import cast


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _known_int(value, what):
    if isinstance(value, Tensor):
        if value._is_symbolic or value.shape.rank != 0:
            raise ValueError(f"{what} must be an int scalar known while tracing, got {value!r}")
        value = value.numpy()
    if np.ndim(value) != 0 or isinstance(value, (bool, float, np.floating)):
        raise ValueError(f"{what} must be an int scalar, got {value!r}")
    return int(value)


def _length(x, axis):
    d = x.shape[axis]
    return d if d is not None else array_ops.shape(x)[axis]


def _max0(v):
    return math_ops.maximum(v, 0) if isinstance(v, Tensor) else max(v, 0)


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """The frames of ``frame_length`` samples, ``frame_step`` apart, along ``axis``: [..., samples, ...] ->
    [..., frames, frame_length, ...]; with ``pad_end`` the end is padded with ``pad_value`` so that a frame
    starts at every frame_step samples (ceil(samples / frame_step) frames)."""
    x = _tensor(signal)
    if x.shape.rank is not None and x.shape.rank < 1:
        raise ValueError(f"Shape {x.shape} must have rank at least 1")
    frame_length = _known_int(frame_length, "frame: frame_length")
    frame_step = _known_int(frame_step, "frame: frame_step")
    if frame_length < 1 or frame_step < 1:
        raise ValueError(f"frame: frame_length and frame_step must be positive, got {frame_length} and {frame_step}")
    rank = x.shape.rank
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ValueError(f"frame: axis {axis} is out of range for a signal of rank {rank}")
    length = _length(x, axis)
    if pad_end:
        frames = -(-length // frame_step)
        padding = _max0(frame_length + frame_step * (frames - 1) - length)
        x = array_ops.pad(x, [[0, 0]] * axis + [[0, padding]] + [[0, 0]] * (rank - axis - 1),
                          constant_values=pad_value)
    else:
        frames = _max0(1 + (length - frame_length) // frame_step)
    starts = array_ops.range(frames) * frame_step if isinstance(frames, Tensor) else \
        convert_to_tensor(np.arange(frames, dtype=np.int32) * frame_step)
    indices = array_ops.expand_dims(starts, 1) + convert_to_tensor(np.arange(frame_length, dtype=np.int32))
    return array_ops.gather(x, indices, axis=axis)


def overlap_and_add(signal, frame_step, name=None):
    """The inverse of frame with the frames summed where they overlap: [..., frames, frame_length] ->
    [..., (frames - 1) * frame_step + frame_length]."""
    from ember.ops.array_ops import unsorted_segment_sum

    x = _tensor(signal)
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(f"Shape {x.shape} must have rank at least 2")
    frame_step = _known_int(frame_step, "overlap_and_add: frame_step")
    if frame_step < 1:
        raise ValueError(f"overlap_and_add: frame_step must be positive, got {frame_step}")
    rank = x.shape.rank
    frames, frame_length = _length(x, -2), _length(x, -1)
    outer = array_ops.shape(x)[:-2]
    output_length = (frames - 1) * frame_step + frame_length
    starts = array_ops.range(frames) * frame_step if isinstance(frames, Tensor) else \
        convert_to_tensor(np.arange(frames, dtype=np.int32) * frame_step)
    taps = array_ops.range(frame_length) if isinstance(frame_length, Tensor) else \
        convert_to_tensor(np.arange(frame_length, dtype=np.int32))
    positions = array_ops.reshape(array_ops.expand_dims(starts, 1) + taps, [-1])
    samples = array_ops.transpose(x, [rank - 2, rank - 1] + list(range(rank - 2)))  # [frames, length, ...]
    samples = array_ops.reshape(samples, array_ops.concat([convert_to_tensor([-1]), outer], 0))
    summed = unsorted_segment_sum(samples, positions, output_length)  # [output_length, ...]
    result = array_ops.transpose(summed, list(range(1, rank - 1)) + [0])
    static = x.shape.as_list()[:-2]
    if all(d is not None for d in static) and not isinstance(output_length, Tensor):
        return array_ops.reshape(result, static + [output_length])
    return result


def _raised_cosine_window(name, window_length, periodic, dtype, a, b):
    """a - b cos(2 pi n / N), N = length for a periodic window of even length and length - 1 otherwise, as
    TensorFlow computes it in ``dtype``; a window of length 1 is [1]."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dtype!r}")
    length = _known_int(window_length, f"{name}: window_length")
    if length == 1:
        return array_ops.ones([1], dtype)
    periodic = bool(periodic.numpy()) if isinstance(periodic, Tensor) else bool(periodic)
    n = length + (1 if periodic and length % 2 == 0 else 0) - 1
    count = cast(array_ops.range(length), dtype)
    angle = convert_to_tensor(2 * np.pi, dtype=dtype) * count / convert_to_tensor(float(n), dtype=dtype)
    return convert_to_tensor(a, dtype=dtype) - convert_to_tensor(b, dtype=dtype) * math_ops.cos(angle)


def hann_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """0.5 - 0.5 cos(2 pi n / N) (TensorFlow's rule for N)."""
    return _raised_cosine_window("hann_window", window_length, periodic, dtype, 0.5, 0.5)


def hamming_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """0.54 - 0.46 cos(2 pi n / N) (TensorFlow's rule for N)."""
    return _raised_cosine_window("hamming_window", window_length, periodic, dtype, 0.54, 0.46)


def _window_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dtype!r}")
    return dtype


def kaiser_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """The Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta), computed as TensorFlow does: the
    positions in float32, then exp(num - beta) * i0e(num) / i0e(beta) in ``dtype`` (no overflow of I0)."""
    dtype = _window_dtype(dtype)
    length = _known_int(window_length, "kaiser_window: window_length")
    if length == 1:
        return array_ops.ones([1], dtype)
    half = np.float32((np.float32(length) - np.float32(1.0)) / np.float32(2.0))
    position = cast(array_ops.range(-half, half + np.float32(0.1), dtype=dtypes.float32), dtype)
    beta = convert_to_tensor(beta, dtype=dtype) if not isinstance(beta, Tensor) else cast(beta, dtype)
    one = convert_to_tensor(1.0, dtype=dtype)
    ratio = position / convert_to_tensor(half, dtype=dtype)
    num = beta * math_ops.sqrt(math_ops.relu(one - math_ops.square(ratio)))
    return math_ops.exp(num - beta) * (math_ops.bessel_i0e(num) / math_ops.bessel_i0e(beta))


def vorbis_window(window_length, dtype=dtypes.float32, name=None):
    """The Vorbis power-complementary window sin(pi / 2 sin^2(pi (n + 1/2) / N)), computed in ``dtype``."""
    dtype = _window_dtype(dtype)
    length = _known_int(window_length, "vorbis_window: window_length")
    n = cast(array_ops.range(length), dtype)
    # TensorFlow's order of operations, so 16-bit windows round as its do: (pi / N) (n + 1/2).
    step = convert_to_tensor(np.pi, dtype=dtype) / convert_to_tensor(float(length), dtype)
    inner = math_ops.sin(step * (n + convert_to_tensor(0.5, dtype=dtype)))
    return math_ops.sin(convert_to_tensor(np.pi / 2.0, dtype=dtype) * math_ops.square(inner))


def kaiser_bessel_derived_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """The Kaiser-Bessel-derived window (the MDCT's): the square roots of the running sums of a Kaiser window
    of length N // 2 + 1, normalised by its total, then mirrored."""
    dtype = _window_dtype(dtype)
    length = _known_int(window_length, "kaiser_bessel_derived_window: window_length")
    kaiser = kaiser_window(length // 2 + 1, beta, dtype=dtype)
    running = math_ops.cumsum(kaiser)
    half = math_ops.sqrt(running[:-1] / running[-1])
    from ember.ops.indexing_ops import reverse

    return array_ops.concat([half, reverse(half, [0])], 0)


def _stft_operands(op, x, min_rank, frame_length, fft_length):
    """x as a tensor of rank >= min_rank, frame_length, and fft_length (by default the power of two enclosing
    frame_length), as TensorFlow's stft and inverse_stft check and default them."""
    x = _tensor(x)
    if x.shape.rank is not None and x.shape.rank < min_rank:
        raise ValueError(f"Shape {x.shape} must have rank at least {min_rank}")
    frame_length = _known_int(frame_length, f"{op}: frame_length")
    if fft_length is None:
        return x, frame_length, int(2 ** np.ceil(np.log(frame_length) / np.log(2.0)))
    return x, frame_length, _known_int(fft_length, f"{op}: fft_length")


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window, pad_end=False, name=None):
    """The short-time Fourier transform: the RFFT (``fft_length``, by default the power of two enclosing
    frame_length) of each windowed frame: [..., samples] -> [..., frames, fft_length // 2 + 1], complex."""
    from ember.signal import rfft

    x, frame_length, fft_length = _stft_operands("stft", signals, 1, frame_length, fft_length)
    framed = frame(x, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(frame_length, dtype=framed.dtype)
    return rfft(framed, [fft_length])


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window, name=None):
    """Overlap-adds the IRFFTs of the frames, each cut or zero-padded to frame_length and windowed by
    ``window_fn`` (``inverse_stft_window_fn`` gives the window that inverts stft's)."""
    from ember.signal import irfft

    x, frame_length, fft_length = _stft_operands("inverse_stft", stfts, 2, frame_length, fft_length)
    frames = irfft(x, [fft_length])
    if fft_length > frame_length:
        frames = frames[..., :frame_length]
    elif fft_length < frame_length:
        frames = array_ops.pad(frames, [[0, 0]] * (frames.shape.rank - 1) + [[0, frame_length - fft_length]])
    if window_fn is not None:
        frames = frames * window_fn(frame_length, dtype=frames.dtype)
    return overlap_and_add(frames, frame_step)


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """A window_fn for inverse_stft that undoes stft's ``forward_window_fn`` with hop ``frame_step``: the
    forward window divided by the overlap-added squares of the windows covering each sample."""
    frame_step = _known_int(frame_step, "inverse_stft_window_fn: frame_step")

    def window_fn(frame_length, dtype):
        frame_length = _known_int(frame_length, "inverse_stft_window_fn: frame_length")
        forward = forward_window_fn(frame_length, dtype=dtype)
        overlaps = -(-frame_length // frame_step)
        squares = array_ops.pad(math_ops.square(forward), [[0, overlaps * frame_step - frame_length]])
        per_phase = math_ops.reduce_sum(array_ops.reshape(squares, [overlaps, frame_step]), 0, keepdims=True)
        denominator = array_ops.reshape(array_ops.tile(per_phase, [overlaps, 1]), [overlaps * frame_step])
        return forward / denominator[:frame_length]

    return window_fn

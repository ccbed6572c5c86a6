"""``ember.audio``: TensorFlow's ``tf.audio`` WAV codec on the DecodeWav and EncodeWav ops
(src/ember/ops/audio.cc): 16-bit PCM only, as TensorFlow's."""

import collections

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor

__all__ = ["decode_wav", "encode_wav"]

DecodeWav = collections.namedtuple("DecodeWav", ["audio", "sample_rate"])


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """(audio float32 [samples, channels] in [-1, 1), sample_rate int32) of a WAV file's contents; -1 keeps the
    file's channels and samples, other values drop or repeat the last channel and cut or pad with silence."""
    from ember.ops.nn_conv_ops import _int

    contents = contents if isinstance(contents, Tensor) else convert_to_tensor(contents, dtype=dtypes.string)
    audio, sample_rate = _C.op("DecodeWav")(contents, _int(desired_channels, "decode_wav: desired_channels"),
                                            _int(desired_samples, "decode_wav: desired_samples"))
    return DecodeWav(audio, sample_rate)


def encode_wav(audio, sample_rate, name=None):
    """The WAV file (a scalar string) of float32 audio [samples, channels] at ``sample_rate`` (an int32 scalar)."""
    audio = audio if isinstance(audio, Tensor) else convert_to_tensor(audio, dtype=dtypes.float32)
    if not isinstance(sample_rate, Tensor):
        sample_rate = convert_to_tensor(sample_rate, dtype=dtypes.int32)
    return _C.op("EncodeWav")(audio, sample_rate)

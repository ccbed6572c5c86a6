"""tf.audio.decode_wav / encode_wav (python/ember/audio.py, ops in src/ember/ops/audio.cc) against TensorFlow 2.21:
byte-identical files, equal decodes (channel and sample reshaping), files with extra chunks, inside a function,
and InvalidArgumentError for every kind of corrupt file, never a crash."""
import struct

import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(6)
AUDIO = np.concatenate([RNG.uniform(-1.2, 1.2, (50, 2)), [[1.0, -1.0], [0.99999, -0.99999], [np.nan, 0.0]]])
AUDIO = AUDIO.astype(np.float32)


def _wav(audio=AUDIO, rate=16000):
    return tf.audio.encode_wav(audio, rate).numpy()


@pytest.mark.parametrize("shape", [(53, 2), (7, 1), (0, 3), (4, 5)])
@pytest.mark.parametrize("rate", [8000, 44100, 1])
def test_encode_wav_writes_tensorflows_bytes(shape, rate):
    audio = AUDIO.ravel()[:int(np.prod(shape))].reshape(shape) if np.prod(shape) else np.zeros(shape, np.float32)
    ours = em.audio.encode_wav(audio, rate)
    assert ours.dtype == em.string and ours.shape == ()
    assert ours.numpy() == tf.audio.encode_wav(audio, rate).numpy()
    traced = em.function(lambda a, r: em.audio.encode_wav(a, r))(em.constant(audio), em.constant(rate))
    assert traced.numpy() == ours.numpy()


@pytest.mark.parametrize("channels,samples", [(-1, -1), (1, -1), (3, -1), (-1, 10), (-1, 80), (4, 2), (0, 0)])
def test_decode_wav_matches_tensorflow(channels, samples):
    contents = _wav()
    ours = em.audio.decode_wav(contents, channels, samples)
    theirs = tf.audio.decode_wav(contents, channels, samples)
    assert type(ours).__name__ == "DecodeWav" and ours._fields == ("audio", "sample_rate")
    np.testing.assert_array_equal(ours.audio.numpy(), theirs.audio.numpy())
    assert ours.audio.dtype == em.float32 and int(ours.sample_rate) == int(theirs.sample_rate) == 16000
    assert ours.sample_rate.dtype == em.int32
    traced = em.function(lambda c: em.audio.decode_wav(c, channels, samples))
    audio, rate = traced(em.constant(contents))
    np.testing.assert_array_equal(audio.numpy(), theirs.audio.numpy())
    assert int(rate) == 16000


def test_decode_wav_of_a_file_read_in_a_function(tmp_path):
    path = str(tmp_path / "a.wav")
    em.io.write_file(path, _wav())
    load = em.function(lambda p: em.audio.decode_wav(em.io.read_file(p), desired_channels=1).audio)
    audio = load(em.constant(path))
    assert audio.shape == (53, 1)
    np.testing.assert_array_equal(audio.numpy(), tf.audio.decode_wav(_wav(), 1).audio.numpy())


def _chunk(name, payload):
    return name + struct.pack("<I", len(payload)) + payload


def _header(fmt_size=16, audio_format=1, channels=2, rate=8000, bits=16, second=None, frame=None):
    frame = channels * bits // 8 if frame is None else frame
    second = frame * rate if second is None else second
    body = struct.pack("<HHIIHH", audio_format, channels, rate, second, frame, bits)
    return b"fmt " + struct.pack("<I", fmt_size) + body + (b"\0\0" if fmt_size == 18 else b"")


def _riff(*parts):
    body = b"WAVE" + b"".join(parts)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_decode_wav_skips_other_chunks_and_reads_an_18_byte_format():
    samples = struct.pack("<6h", 1, -2, 300, -400, 32767, -32768)
    for contents in [_riff(_header(), _chunk(b"LIST", b"abcd"), _chunk(b"data", samples)),
                     _riff(_header(fmt_size=18), _chunk(b"data", samples), _chunk(b"junk", b"xy"))]:
        ours, theirs = em.audio.decode_wav(contents), tf.audio.decode_wav(contents)
        np.testing.assert_array_equal(ours.audio.numpy(), theirs.audio.numpy())
        assert int(ours.sample_rate) == int(theirs.sample_rate) == 8000


DATA = _chunk(b"data", struct.pack("<4h", 1, 2, 3, 4))


@pytest.mark.parametrize("contents,message", [
    (b"", "too short"), (b"RIFF", "too short"), (b"RIFX" + b"\0" * 40, "header mismatch"),
    (_riff(_header())[:30], "too short"), (b"RIFF\0\0\0\0WAVX", "header mismatch"),
    (_riff(_header(fmt_size=20), DATA), "format chunk size"), (_riff(_header(audio_format=3), DATA), "audio format"),
    (_riff(_header(channels=0), DATA), "number of channels"), (_riff(_header(bits=8), DATA), "16-bit"),
    (_riff(_header(second=5), DATA), "bytes per second"), (_riff(_header(frame=6, second=32000), DATA),
                                                            "bytes per sample"),
    (_riff(_header()), "no data chunk"), (_riff(_header(), DATA, DATA), "more than one data chunk"),
    (_riff(_header(), DATA)[:-2], "too short"), (_riff(_header(), _chunk(b"LIST", b"ab"))[:-1], "too short"),
    (_riff(_header(), b"data" + struct.pack("<I", 1 << 31)), "too large"),
    (_riff(_header(), DATA) + b"x", "too short"),
])
def test_corrupt_files_raise_invalid_argument(contents, message):
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.audio.decode_wav(contents)
    with pytest.raises(em.errors.InvalidArgumentError, match=f"DecodeWav: (?i:.*{message})"):
        em.audio.decode_wav(contents)
    traced = em.function(lambda c: em.audio.decode_wav(c).audio)
    with pytest.raises(em.errors.InvalidArgumentError, match="DecodeWav"):
        traced(em.constant(contents))


@pytest.mark.parametrize("fn,message", [
    (lambda m: m.audio.encode_wav(np.zeros([3], np.float32), 8000), "2-dimensional"),
    (lambda m: m.audio.encode_wav(np.zeros([3, 1], np.float32), 0), "sample_rate must be in"),
    (lambda m: m.audio.encode_wav(np.zeros([3, 0], np.float32), 8000), "num_channels must be in"),
    (lambda m: m.audio.decode_wav(_wav(), desired_channels=-2), "desired_channels"),
    (lambda m: m.audio.decode_wav([_wav(), _wav()]), "contents must be scalar"),
])
def test_bad_arguments_raise_invalid_argument(fn, message):
    with pytest.raises(tf.errors.InvalidArgumentError):
        fn(tf)
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        fn(em)


def test_tensorflow_runs_ember_graphs_of_both_ops():
    """A GraphDef of decode then encode carries TensorFlow's op and attribute names: TensorFlow imports and
    runs it."""
    @em.function(input_signature=[em.TensorSpec([], em.string)])
    def mono_copy(contents):
        audio, rate = em.audio.decode_wav(contents, desired_channels=1, desired_samples=40)
        return em.audio.encode_wav(audio, rate)

    gd = mono_copy.get_concrete_function().graph.as_graph_def()
    decode = next(n for n in gd.node if n.op == "DecodeWav")
    assert decode.attr["desired_channels"].i == 1 and decode.attr["desired_samples"].i == 40
    feed = next(n.name for n in gd.node if n.op == "Placeholder")
    fetch = next(n.name for n in gd.node if n.op == "EncodeWav")
    graph_def = tf.compat.v1.GraphDef.FromString(gd.SerializeToString())
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    theirs = wrapped.prune(feeds=f"{feed}:0", fetches=f"{fetch}:0")(tf.constant(_wav()))
    assert theirs.numpy() == mono_copy(_wav()).numpy()
    assert theirs.numpy() == tf.audio.encode_wav(tf.audio.decode_wav(_wav(), 1, 40).audio, 16000).numpy()


def test_randomly_damaged_files_decode_as_tensorflow_or_raise_as_it():
    """Bytes overwritten and files cut at random: ember decodes what TensorFlow decodes, to the same values,
    and raises InvalidArgumentError where TensorFlow does (ember's messages escape the file's bytes, so they
    are text; TensorFlow's are not, and then its Python raises UnicodeDecodeError)."""
    rng = np.random.default_rng(12)
    base = bytearray(_riff(_header(channels=2), _chunk(b"LIST", b"abcdef"),
                           _chunk(b"data", struct.pack("<10h", *range(-5, 5)))))
    for trial in range(400):
        damaged = bytearray(base)
        for _ in range(rng.integers(1, 4)):
            damaged[rng.integers(0, len(damaged))] = int(rng.integers(0, 256))
        if trial % 3 == 0:
            damaged = damaged[:rng.integers(0, len(damaged) + 1)]
        contents = bytes(damaged)
        try:
            theirs = tf.audio.decode_wav(contents)
        except (tf.errors.InvalidArgumentError, UnicodeDecodeError):  # TF puts the file's bytes in its message
            with pytest.raises(em.errors.InvalidArgumentError, match="DecodeWav"):
                em.audio.decode_wav(contents)
            continue
        ours = em.audio.decode_wav(contents)
        np.testing.assert_array_equal(ours.audio.numpy(), theirs.audio.numpy())
        assert int(ours.sample_rate) == int(theirs.sample_rate)


def test_messages_show_a_damaged_headers_bytes_escaped():
    with pytest.raises(em.errors.InvalidArgumentError, match=r"expected RIFF but found R\\xa6FF"):
        em.audio.decode_wav(b"R\xa6FF" + _riff(_header(), DATA)[4:])

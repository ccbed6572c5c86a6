"""Fuzzing the image file codecs (issue 17): src/ember/kernels/image_codecs.h under the DecodeJpeg, DecodePng,
DecodeGif, DecodeBmp and DecodeImage ops.

- the libFuzzer target tests/fuzz/cpp/image_fuzzer.cc (ASan + UBSan, coverage-guided), seeded with JPEG
  (baseline, progressive, gray, CMYK), PNG (RGB, 16-bit RGBA, palette with tRNS, 1-bit), GIF (animated with
  transparency, interlaced) and BMP files (tests/fuzz/cpp/corpus/image), each after an option byte that
  picks the decoder's settings;
- a differential test: 300 damaged files per seed (bit flips, truncations, overwritten and inserted runs,
  headers rewritten to claim huge or zero sizes with their CRCs mended), decoded by ember in a worker
  subprocess (a crash or a hang fails the test with its reproducer) and by TensorFlow here; the outcome
  class (decoded, or which error) and the decoded shape must be TensorFlow's.

Each prints one ``FUZZ-COUNTS`` line.
"""

import io
import json
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

from fuzz_harness import SEEDS, fuzz_seconds, libfuzzer_corpus_run

LIBFUZZER_SECONDS = fuzz_seconds(15)  # per seed
CASES = 300


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_image_codecs(seed, tmp_path):
    # malloc_limit above the largest image a file may decode to (2^29 bytes plus the library's buffers):
    # headers that claim more must be refused before allocating.
    libfuzzer_corpus_run("image_fuzzer", "EMBER_IMAGE_FUZZER", "image", seed, tmp_path, LIBFUZZER_SECONDS,
                         limits=["-timeout=20", "-rss_limit_mb=2560", "-malloc_limit_mb=1200", "-max_len=8192"],
                         label="image libfuzzer", may_return_null=False, slow_is_failure=True)


# ---- the differential test


def _valid_files():
    import tensorflow as tf
    from PIL import Image

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:24, 0:32]
    photo = np.stack([x * 8, y * 10, (x + y) * 4], -1).astype(np.uint8)

    def pil(image, fmt, **kwargs):
        out = io.BytesIO()
        image.save(out, format=fmt, **kwargs)
        return out.getvalue()

    frames = [Image.fromarray(np.roll(photo, 5 * k, axis=1)).convert("P", palette=Image.ADAPTIVE, colors=16)
              for k in range(3)]
    return [
        ("jpeg", tf.io.encode_jpeg(photo, quality=80).numpy()),
        ("jpeg", tf.io.encode_jpeg(photo, progressive=True).numpy()),
        ("jpeg", tf.io.encode_jpeg(photo[..., :1], quality=60).numpy()),
        ("png", tf.io.encode_png(photo).numpy()),
        ("png", pil(Image.fromarray(photo).convert("P", palette=Image.ADAPTIVE, colors=9), "PNG", transparency=3)),
        ("png", tf.io.encode_png(tf.constant(rng.integers(0, 65536, (9, 7, 4), dtype=np.uint16))).numpy()),
        ("gif", pil(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=30, transparency=0)),
        ("gif", pil(frames[1], "GIF", interlace=True)),
        ("bmp", pil(Image.fromarray(photo), "BMP")),
        ("bmp", pil(Image.fromarray(rng.integers(0, 256, (5, 6, 4), dtype=np.uint8), "RGBA"), "BMP")),
    ]


def _mend_png_crcs(data):
    """Recomputes every chunk's CRC, so that a rewritten header is hostile rather than merely damaged."""
    out, pos = bytearray(data[:8]), 8
    while pos + 12 <= len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        end = pos + 12 + length
        if end > len(data):
            out += data[pos:]
            return bytes(out)
        body = data[pos + 4:pos + 8 + length]
        out += data[pos:pos + 4] + body + struct.pack(">I", zlib.crc32(body))
        pos = end
    return bytes(out + data[pos:])


def _damage(kind, data, rng):
    data = bytearray(data)
    how = rng.integers(6)
    if how == 0:  # bit flips
        for _ in range(rng.integers(1, 9)):
            i = rng.integers(len(data))
            data[i] ^= 1 << rng.integers(8)
    elif how == 1:  # cut short
        data = data[:rng.integers(1, len(data))]
    elif how == 2:  # a run overwritten with random bytes
        start = rng.integers(len(data))
        run = rng.integers(1, 32)
        data[start:start + run] = rng.integers(0, 256, min(run, len(data) - start), dtype=np.uint8).tobytes()
    elif how == 3:  # random bytes inserted
        start = rng.integers(len(data))
        data[start:start] = rng.integers(0, 256, rng.integers(1, 16), dtype=np.uint8).tobytes()
    elif how == 4:  # the header claims another size: huge, zero or odd
        size = int(rng.choice([0, 1, 65535, 100000, 1 << 20, 0x7FFFFFFF]))
        if kind == "png":
            data[16:24] = struct.pack(">II", min(size, 0x7FFFFFFF), min(size, 0x7FFFFFFF))
            return _mend_png_crcs(bytes(data))
        if kind == "gif":
            data[6:10] = struct.pack("<HH", size & 0xFFFF, size & 0xFFFF)
            descriptor = data.find(b"\x2c", 13)
            if descriptor > 0 and rng.integers(2):
                data[descriptor + 5:descriptor + 9] = struct.pack("<HH", size & 0xFFFF, size & 0xFFFF)
        elif kind == "bmp":
            data[18:26] = struct.pack("<ii", min(size, 0x7FFFFFFF), -min(size, 0x7FFFFFFF))
        else:
            sof = max(data.find(b"\xff\xc0"), data.find(b"\xff\xc2"))
            if sof > 0:
                data[sof + 5:sof + 9] = struct.pack(">HH", size & 0xFFFF, size & 0xFFFF)
    else:  # a marker or chunk repeated
        start = rng.integers(len(data))
        data[start:start] = data[start:start + rng.integers(4, 64)]
    return bytes(data)


def make_cases(seed):
    rng = np.random.default_rng(seed)
    files = _valid_files()
    return [(kind, _damage(kind, data, rng)) for kind, data in (files[i % len(files)] for i in range(CASES))]


def _outcome(decode):
    try:
        image = decode()
        return f"OK {list(image.shape)}"
    except Exception as e:  # noqa: BLE001 - the class is the outcome
        return "ERR " + type(e).__name__


# The decodes each file gets: (name, function of the module (tf or ember) and the contents). The last one
# runs in ember only: TensorFlow's JPEG source manager loops for ever with try_recover_truncated on some of
# these files (a segment claiming more bytes than remain; see docs/image_and_audio.md), ember's must not.
DECODES = [
    ("decode_image", lambda m, c: m.io.decode_image(c)),
    ("decode_gif", lambda m, c: m.io.decode_gif(c)),
    ("decode_jpeg_recover", lambda m, c: m.io.decode_jpeg(c, try_recover_truncated=True, acceptable_fraction=0.3)),
]
COMPARED = 2

WORKER = r'''
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
sys.path.insert(0, sys.argv[1])
import ember
from test_image_fuzz import DECODES, _outcome
cases = json.load(open(sys.argv[2]))
for number, hex_data in enumerate(cases):
    print("CASE", number, flush=True)
    contents = bytes.fromhex(hex_data)
    print(json.dumps([_outcome(lambda: decode(ember, contents)) for _, decode in DECODES]), flush=True)
'''


@pytest.mark.parametrize("seed", SEEDS)
def test_damaged_files_fail_as_tensorflow(seed, tmp_path):
    import tensorflow as tf

    cases = make_cases(seed)
    case_file = tmp_path / "cases.json"
    case_file.write_text(json.dumps([data.hex() for _, data in cases]))
    here = os.path.dirname(os.path.abspath(__file__))
    flags = ["-S"] if sys.flags.no_site else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + sys.path), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, *flags, "-c", WORKER, here, str(case_file)], env=env,
                          capture_output=True, text=True, timeout=600)
    ours, current = {}, None
    for line in proc.stdout.splitlines():
        if line.startswith("CASE "):
            current = int(line.split()[1])
        elif current is not None:
            ours[current] = json.loads(line)
    if proc.returncode != 0 or len(ours) != len(cases):
        crashed = current if current is not None else 0
        path = tmp_path / f"crash-{crashed}.{cases[crashed][0]}"
        path.write_bytes(cases[crashed][1])
        pytest.fail(f"the worker died at case {crashed} (exit {proc.returncode}); reproducer {path}\n"
                    + proc.stderr[-4000:])
    mismatches, decoded = [], 0
    for number, (kind, contents) in enumerate(cases):
        theirs = [_outcome(lambda: decode(tf, contents)) for _, decode in DECODES[:COMPARED]]
        decoded += sum(a.startswith("OK") for a in ours[number])
        for (name, _), a, b in zip(DECODES, ours[number], theirs):
            # ember names its error classes as TensorFlow does.
            if a != b:
                mismatches.append(f"case {number} ({kind}) {name}: ember {a}, TensorFlow {b}")
    print(f"FUZZ-COUNTS image differential seed={seed} cases={len(cases)} decodes={len(cases) * len(DECODES)} "
          f"decoded={decoded} crashes=0 mismatches={len(mismatches)}")
    assert not mismatches, "\n".join(mismatches[:40])

"""Fuzzing the TFRecord reader (issue 18): state/record_io.h, which tf.io, tf.data.TFRecordDataset and
event file readers read through.

Two fuzzers, each with a fixed seed and the date's rotating one (printed; replay with EMBER_FUZZ_SEED):

- the libFuzzer target tests/fuzz/cpp/record_fuzzer.cc (ASan + UBSan, coverage-guided), seeded with
  record files in every compression and an event file (tests/fuzz/cpp/corpus/record);
- a differential mutation fuzzer in Python: valid files (random records, every compression) damaged by
  bit flips, truncations, random bytes and lengths rewritten with their valid CRC (a hostile file, not a
  damaged one), read by ember's tf_record_iterator in a worker subprocess, so that a crash or a hang fails
  the test with its reproducer; for uncompressed files the records read and the error class must equal
  TensorFlow's reader's.

Each prints one ``FUZZ-COUNTS`` line.
"""

import os
import tempfile

import pytest

from fuzz_harness import SEEDS, fuzz_seconds, libfuzzer_corpus_run, mutation_fuzz

LIBFUZZER_SECONDS = fuzz_seconds(15)  # per seed
PYTHON_SECONDS = fuzz_seconds(15)


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_record_reader(seed, tmp_path):
    # malloc_limit far under what a corrupt length asks for: the reader must not trust it.
    libfuzzer_corpus_run("record_fuzzer", "EMBER_RECORD_FUZZER", "record", seed, tmp_path, LIBFUZZER_SECONDS,
                         limits=["-timeout=20", "-rss_limit_mb=2048", "-malloc_limit_mb=64", "-max_len=8192"],
                         label="tfrecord libfuzzer", may_return_null=False)


# ---- the Python differential mutation fuzzer

WORKER = r'''
import os, random, resource, sys, tempfile
resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))
sys.path.insert(0, sys.argv[1])
import ember
from ember import errors
from test_tfrecord_fuzz import make_case

seed, first = int(sys.argv[2]), int(sys.argv[3])
work = tempfile.mkdtemp(prefix="ember-record-fuzz-")
path = os.path.join(work, "r")

from test_tfrecord_fuzz import outcome

for index in range(first, 1 << 62):
    flags, blob = make_case(random.Random(seed * 1000003 + index))
    compression = flags & 3
    print("CASE", index, bytes([flags]).hex() + blob.hex(), flush=True)
    with open(path, "wb") as f:
        f.write(blob)
    name = ["", "ZLIB", "GZIP"][compression]
    got = outcome(lambda: ember.compat.v1.io.tf_record_iterator(path, name or None))
    if got[1] not in ("end", "DataLossError"):
        print("BAD", got[1], flush=True)
        continue
    # the parent compares the outcome with TensorFlow's reader (importing TensorFlow here is slow)
    print("ERR" if got[1] != "end" else "OK", got[0], got[1], flush=True)
'''

def outcome(read):
    """(a digest of the records read before the end or the error, how it ended)."""
    import hashlib
    digest, count = hashlib.sha256(), 0
    try:
        for r in read():
            digest.update(len(r).to_bytes(8, "little") + bytes(r))
            count += 1
        return f"{count}:{digest.hexdigest()[:16]}", "end"
    except Exception as e:  # noqa: BLE001 - the class is the outcome
        return f"{count}:{digest.hexdigest()[:16]}", type(e).__name__


def tensorflow_outcome(case_hex):
    import tensorflow as real_tf
    blob = bytes.fromhex(case_hex)
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(blob[1:])
    try:
        return outcome(lambda: real_tf.compat.v1.io.tf_record_iterator(f.name))
    finally:
        os.unlink(f.name)


# TensorFlow 2.21's reader aborts the process on a length like 2^40 under a valid CRC (it allocates the
# length before reading); such cases are checked for ember's DataLossError but not compared.
HOSTILE_LENGTH = 0x80
HUGE = [2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**64 - 1, 13, 0]


def make_case(rng):
    """(flags, file bytes): a valid TFRecord file, then damaged or made hostile. flags & 3 is the compression
    (none, ZLIB, GZIP); HOSTILE_LENGTH is set when a length was rewritten under a valid CRC."""
    import gzip
    import struct
    import zlib

    from ember import _C
    compression = rng.choice([0, 0, 0, 1, 2])
    records = [bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 5, 40, 300]))) for _ in
               range(rng.randrange(0, 5))]
    framed = [bytearray(_C.encode_record(r)) for r in records]
    hostile = 0
    if framed and compression == 0 and rng.random() < 0.3:  # a length rewritten under a valid CRC
        target = rng.choice(framed)
        length = struct.pack("<Q", rng.choice(HUGE + [len(target) - 16 + rng.choice([-1, 1, 4])]) % 2**64)
        target[:12] = length + struct.pack("<I", _masked_crc(_C, length))
        hostile = HOSTILE_LENGTH
    data = bytearray(b"".join(framed))
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        choice = rng.random()
        if choice < 0.35 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif choice < 0.7 and data:
            data = data[:rng.randrange(len(data))]
        elif choice < 0.85 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
    if compression:
        packed = zlib.compress(bytes(data)) if compression == 1 else gzip.compress(bytes(data))
        packed = bytearray(packed)
        if packed and rng.random() < 0.4:  # damage the compressed stream itself
            if rng.random() < 0.5:
                packed = packed[:rng.randrange(len(packed))]
            else:
                packed[rng.randrange(len(packed))] ^= 1 << rng.randrange(8)
        data = packed
    return compression | hostile, bytes(data)


def _masked_crc(_C, data):
    crc = _C.crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


@pytest.mark.parametrize("seed", SEEDS)
def test_python_record_mutations(seed):
    import tensorflow  # noqa: F401 - imported before the clock starts (slow on a loaded machine)

    def against_tensorflow(case, line):
        if line.startswith(("OK", "ERR")) and case[1].startswith("00"):  # uncompressed, not hostile: as TF
            _, digest, ended = line.split(" ")
            want = tensorflow_outcome(case[1])
            if want != (digest, ended):
                return f"MISMATCH TensorFlow {want}, ember {(digest, ended)}"
        return line

    mutation_fuzz("tfrecord python", seed, WORKER, PYTHON_SECONDS, "compression byte + file hex",
                  check=against_tensorflow)

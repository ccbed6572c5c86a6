"""Seed checkpoints for the checkpoint fuzzers, written by ember and by TensorFlow 2.21 from one model
shape, each packed in one buffer: [uint32 index size][<prefix>.index][<prefix>.data-00000-of-00001] (what
tests/fuzz/cpp/checkpoint_fuzzer.cc reads). The packed seeds live in tests/fuzz/cpp/corpus/checkpoint;
``python3 tests/fuzz/checkpoint_seeds.py`` rewrites them (TensorFlow's with TensorFlow installed)."""

import os
import struct
import sys
import tempfile

import numpy as np

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp", "corpus", "checkpoint")


def make_model(lib):
    """The model every seed saves (and the fuzz worker restores into)."""
    m = lib.Module()
    m.dense = [lib.Variable(np.ones((3, 4), np.float32)), lib.Variable(np.zeros(4, np.float32))]
    m.table = {"ids": lib.Variable(np.arange(5, dtype=np.int64)), "flag": lib.Variable(True)}
    m.half = lib.Variable(np.ones(2, np.float16))
    return m


def train_step(lib, model, optimizer):
    with lib.GradientTape() as tape:
        loss = lib.reduce_sum(lib.matmul(lib.ones((1, 3)), model.dense[0]) + model.dense[1])
    variables = [model.dense[0], model.dense[1]]
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))


def pack(prefix):
    index = open(prefix + ".index", "rb").read()
    data = open(prefix + ".data-00000-of-00001", "rb").read()
    return struct.pack("<I", len(index)) + index + data


def unpack(blob, prefix):
    """Writes a packed checkpoint to ``prefix``'s two files."""
    (size,) = struct.unpack_from("<I", blob) if len(blob) >= 4 else (0,)
    body = blob[4:]
    size = min(size, len(body))
    with open(prefix + ".index", "wb") as f:
        f.write(body[:size])
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(body[size:])


def write_seeds(lib, tag):
    with tempfile.TemporaryDirectory() as d:
        model = make_model(lib)
        optimizer = lib.keras.optimizers.Adam(0.1)
        lib.train.Checkpoint(model=model).write(os.path.join(d, "plain"))
        train_step(lib, model, optimizer)
        lib.train.Checkpoint(model=model, optimizer=optimizer).save(os.path.join(d, "opt"))
        for name in ("plain", "opt-1"):
            with open(os.path.join(CORPUS, f"{tag}_{name}"), "wb") as f:
                f.write(pack(os.path.join(d, name)))


def seeds():
    """{name: packed bytes} of the committed seeds."""
    return {name: open(os.path.join(CORPUS, name), "rb").read() for name in sorted(os.listdir(CORPUS))}


if __name__ == "__main__":
    os.makedirs(CORPUS, exist_ok=True)
    if "--tensorflow" in sys.argv:
        import tensorflow
        write_seeds(tensorflow, "tf")
    else:
        import ember
        write_seeds(ember, "ember")

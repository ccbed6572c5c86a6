"""Fuzzing the readers of untrusted bytes: GraphDefs (issue 12, fuzzer (c)).

Two fuzzers, each run with a fixed seed and with a rotating one (the date's, printed so that a failure can
be replayed with EMBER_FUZZ_SEED=<seed>):

- the libFuzzer target tests/fuzz/cpp/graph_def_fuzzer.cc (ASan + UBSan, coverage-guided), which parses,
  imports, compiles and runs each input; built here into build/fuzz when it is not there yet (clang and
  libclang-rt-14-dev, from scripts/install_deps.sh; EMBER_GRAPH_DEF_FUZZER names a prebuilt binary);
- a mutation fuzzer in Python that edits real exported GraphDefs (bit flips, truncated, duplicated and
  dropped fields, huge varints, huge dims and counts) and sends them through the public path,
  ``ember.graph_util.import_graph_def`` then ``NewGraphFunction`` and a call, in worker subprocesses so a
  crash or a hang fails the test with its reproducer instead of killing pytest.

Each prints one ``FUZZ-COUNTS`` line. A crash, hang, sanitizer report or an exception other than a clear one
(an ember.errors class, or the TypeError/ValueError of the Python API) fails the test.
"""

import pytest

from fuzz_harness import SEEDS, fuzz_seconds, libfuzzer_corpus_run, mutation_fuzz

LIBFUZZER_SECONDS = fuzz_seconds(25)  # per seed
PYTHON_SECONDS = fuzz_seconds(25)


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_graph_def(seed, tmp_path):
    libfuzzer_corpus_run("graph_def_fuzzer", "EMBER_GRAPH_DEF_FUZZER", "graph_def", seed, tmp_path,
                         LIBFUZZER_SECONDS, limits=["-timeout=20", "-rss_limit_mb=3072", "-malloc_limit_mb=2048",
                                                    "-max_len=4096"], label="graph_def libfuzzer")


# ---- the Python mutation fuzzer

WORKER = r'''
import random, resource, sys
import numpy as np
# A mutated graph may ask for a tensor of many gigabytes (a padding of 2^30, say): with this limit the
# allocation fails at once as ResourceExhausted instead of paging for longer than a case may take.
# RLIMIT_DATA, not RLIMIT_AS: thread stacks and allocator arenas reserve address space they never use.
resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))
sys.path.insert(0, sys.argv[1])
import ember as tf
from ember import errors
import graph_def_seeds
tf._C.set_max_loop_iterations(100000)  # a mutated loop condition may never turn false
from test_graph_def_fuzz import mutate

seed, first = int(sys.argv[2]), int(sys.argv[3])
seeds = sorted(graph_def_seeds.seeds(tf).items())
variables = graph_def_seeds.variables(tf)
CLEAR = (errors.OpError, TypeError, ValueError)

def run(data):
    graph = tf.graph_util.import_graph_def(data, input_map={k: v for k, v in variables.items()
                                                            if k in names(data)})
    inputs = [t.name for t in graph.inputs]
    outputs = [t.name for op in graph.get_operations() if op.type != "Placeholder" for t in op.outputs][:64]
    fn = tf.NewGraphFunction(graph, inputs=inputs, outputs=outputs)
    args = []
    for t in graph.inputs:
        shape = [2 if d is None else d for d in (t.shape.as_list() if t.shape.rank is not None else [2])]
        if int(np.prod(shape, dtype=np.int64)) > 4096 or min(shape, default=0) < 0:
            return
        args.append(tf.zeros(shape, t.dtype))
    fn(*args)

def names(data):
    from ember.framework import graph_def as gdm
    try:
        return {n.name for n in gdm.GraphDef.FromString(data).node}
    except Exception:
        return set()

for index in range(first, 1 << 62):
    data = mutate(random.Random(seed * 1000003 + index), seeds)
    print("CASE", index, data.hex(), flush=True)
    for variable in variables.values():  # each case starts from the same state, so it replays alone
        variable.assign(tf.zeros_like(variable))
    try:
        run(data)
        print("OK", flush=True)
    except CLEAR as e:
        print("ERR", type(e).__name__, flush=True)
    except BaseException as e:
        print("BAD", type(e).__name__, repr(str(e)[:300]), flush=True)
'''


def varint(value):
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_varint(data, pos, end):
    """(value, position after it) of the varint at `pos`; IndexError past `end` or an over-long one."""
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise IndexError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data):
    """(start, end, tag, payload_start) of the top-level fields of `data`, or None if they do not parse."""
    out, pos = [], 0
    try:
        while pos < len(data):
            start = pos
            tag, pos = _read_varint(data, pos, len(data))
            wire = tag & 7
            payload = None
            if wire == 0:
                _, pos = _read_varint(data, pos, len(data))
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length, pos = _read_varint(data, pos, len(data))
                payload = pos
                pos += length
            else:
                return None
            if pos > len(data):
                return None
            out.append((start, pos, tag, payload))
        return out
    except IndexError:
        return None


HUGE = [2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 3037000500, 2**40, -1, -2**63]


def mutate_message(rng, data, depth=0):
    """Edits one field somewhere in the message tree of `data` (a guess: any length-delimited payload that
    parses as fields is treated as a message)."""
    parsed = fields(data)
    if not parsed:
        return data
    start, end, tag, payload = parsed[rng.randrange(len(parsed))]
    wire = tag & 7
    choice = rng.random()
    if payload is not None and depth < 8 and choice < 0.5 and fields(data[payload:end]):
        inner = mutate_message(rng, data[payload:end], depth + 1)
        return data[:start] + varint(tag) + varint(len(inner)) + inner + data[end:]
    if choice < 0.6:  # duplicate the field
        return data[:end] + data[start:end] + data[end:]
    if choice < 0.7:  # drop it
        return data[:start] + data[end:]
    if wire == 0 or choice < 0.8:  # a huge varint in its place (wire type varint, same field number)
        return data[:start] + varint((tag >> 3) << 3) + varint(rng.choice(HUGE)) + data[end:]
    if payload is not None and choice < 0.9:  # a length that lies
        length = end - payload + rng.choice([1, -1, 2**31, 2**63])
        return data[:start] + varint(tag) + varint(max(length, 0)) + data[payload:end] + data[end:]
    return data[:start] + data[start:start + rng.randrange(1, end - start + 1)]  # truncated


def mutate(rng, seeds):
    _, data = seeds[rng.randrange(len(seeds))]
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        r = rng.random()
        if r < 0.7:
            data = mutate_message(rng, data)
        elif r < 0.8 and data:  # bit flip
            at = rng.randrange(len(data))
            data = data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
        elif r < 0.87 and data:  # truncation
            data = data[:rng.randrange(len(data))]
        elif r < 0.95 and data:  # a random byte
            at = rng.randrange(len(data))
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
        else:  # a graph's nodes twice (duplicate names) or spliced from another seed
            data = data + seeds[rng.randrange(len(seeds))][1][:rng.randrange(64, 4096)]
    return data


@pytest.mark.parametrize("seed", SEEDS)
def test_python_graph_def_mutations(seed):
    mutation_fuzz("graph_def python", seed, WORKER, PYTHON_SECONDS, "GraphDef hex")

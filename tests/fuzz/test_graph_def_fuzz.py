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

import datetime
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "cpp", "corpus", "graph_def")
FUZZ_BUILD = os.path.join(ROOT, "build", "fuzz")
LIBFUZZER_SECONDS = int(os.environ.get("EMBER_FUZZ_SECONDS", "25"))  # per seed
PYTHON_SECONDS = int(os.environ.get("EMBER_FUZZ_SECONDS", "25"))
CASE_TIMEOUT = 20  # seconds one Python case may take before it counts as a hang


def rotating_seed():
    return int(os.environ.get("EMBER_FUZZ_SEED", datetime.date.today().strftime("%Y%m%d")))


SEEDS = [1, rotating_seed()]


# ---- libFuzzer


def fuzzer_binary():
    given = os.environ.get("EMBER_GRAPH_DEF_FUZZER")
    if given:
        return given
    binary = os.path.join(FUZZ_BUILD, "graph_def_fuzzer")
    if not os.path.exists(os.path.join(FUZZ_BUILD, "build.ninja")):
        subprocess.run(["cmake", "-S", ROOT, "-B", FUZZ_BUILD, "-GNinja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_CXX_COMPILER=clang++", "-DEMBER_BUILD_FUZZERS=ON", "-DEMBER_BUILD_PYTHON=OFF",
                        "-DEMBER_BUILD_EXAMPLES=OFF", "-DEMBER_BUILD_TESTS=OFF"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", FUZZ_BUILD, "graph_def_fuzzer"], check=True, stdout=subprocess.DEVNULL)
    return binary


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_graph_def(seed, tmp_path):
    binary = fuzzer_binary()
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    artifacts = str(tmp_path) + os.sep
    env = dict(os.environ, ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1", OMP_NUM_THREADS="1")
    cmd = [binary, f"-seed={seed}", f"-max_total_time={LIBFUZZER_SECONDS}", "-timeout=20", "-rss_limit_mb=3072",
           "-malloc_limit_mb=2048", "-max_len=4096", f"-artifact_prefix={artifacts}", "-print_final_stats=1",
           str(corpus)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace",
                          timeout=LIBFUZZER_SECONDS + 120)
    log = proc.stderr
    runs = 0
    for line in log.splitlines():
        if line.startswith("stat::number_of_executed_units:"):
            runs = int(line.split(":")[-1])
    crashes = [name for name in os.listdir(tmp_path) if name.split("-")[0] in ("crash", "timeout", "oom", "leak")]
    print(f"FUZZ-COUNTS graph_def libfuzzer seed={seed} cases={runs} crashes={len(crashes) or int(proc.returncode != 0)} "
          f"mismatches=0")
    if proc.returncode != 0 or crashes:
        kept = os.path.join(tempfile.gettempdir(), f"ember-graph-def-fuzz-{seed}")
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(tmp_path, kept, ignore=shutil.ignore_patterns("corpus"))
        pytest.fail(f"graph_def_fuzzer (seed {seed}) failed; reproducers in {kept}, replay with "
                    f"{binary} {kept}/<file>\n" + log[-6000:])


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


def run_worker(seed, first, deadline, env, here, on_line, worker=WORKER):
    """Runs cases from `first` on until `deadline` in a subprocess running `worker` (a script that prints
    "CASE <n> <hex>" before each case and one result line after it); returns (the case in progress when the
    worker died or hung, or None; how it ended; stderr)."""
    # The worker imports the ember this process would: the same path, and -S if this process has no site.
    flags = ["-S"] if sys.flags.no_site else []
    proc = subprocess.Popen([sys.executable, *flags, "-c", worker, here, str(seed), str(first)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    current, buffer, last, ended, eof = None, b"", time.monotonic(), None, False
    while ended is None:
        chunk = b""
        if not eof and select.select([proc.stdout], [], [], 0.05)[0]:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            eof = not chunk
            last = time.monotonic()
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            line = line.decode(errors="replace")
            if line.startswith("CASE "):
                _, number, data = line.split(" ")
                current = (int(number), data)
            elif current is not None:
                on_line(current, line)
                current = None
        now = time.monotonic()
        if eof and proc.poll() is not None:
            ended = f"exit code {proc.returncode}"
        elif current is not None and now - last > CASE_TIMEOUT:
            ended = f"hang (no result in {CASE_TIMEOUT} s)"
        elif current is None and now > deadline:
            ended = "deadline"
        elif eof:
            time.sleep(0.01)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    return current, ended, proc.stderr.read().decode(errors="replace")


@pytest.mark.parametrize("seed", SEEDS)
def test_python_graph_def_mutations(seed):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + sys.path), OMP_NUM_THREADS="1")
    deadline = time.monotonic() + PYTHON_SECONDS
    counts = {"cases": 0, "clear_errors": 0, "crashes": 0, "mismatches": 0}
    failures = []
    done = [-1]

    def on_line(case, line):
        counts["cases"] += 1
        done[0] = case[0]
        if line.startswith("ERR"):
            counts["clear_errors"] += 1
        elif line.startswith("BAD"):
            counts["mismatches"] += 1
            failures.append(f"case {case[0]}: an unclear exception {line[4:]}; GraphDef hex {case[1]}")

    first = 0
    while time.monotonic() < deadline:
        current, ended, stderr = run_worker(seed, first, deadline, env, here, on_line)
        if current is not None:
            counts["crashes"] += 1
            failures.append(f"case {current[0]}: {ended}; GraphDef hex {current[1]}\n{stderr[-2000:]}")
            first = current[0] + 1
        elif ended != "deadline":
            pytest.fail(f"the fuzz worker stopped outside a case ({ended}):\n{stderr[-4000:]}")
        else:
            first = done[0] + 1
    print(f"FUZZ-COUNTS graph_def python seed={seed} " + " ".join(f"{k}={v}" for k, v in counts.items()))
    assert not failures, f"seed {seed} (replay: EMBER_FUZZ_SEED={seed}):\n" + "\n".join(failures[:10])

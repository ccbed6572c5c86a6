"""Fuzzing the checkpoint readers (issue 16, part 3): the tensor bundle (index table, entries, data
shards, string encoding) and the object graph a restore matches.

Two fuzzers, each with a fixed seed and the date's rotating one (printed; replay with EMBER_FUZZ_SEED):

- the libFuzzer target tests/fuzz/cpp/checkpoint_fuzzer.cc (ASan + UBSan, coverage-guided) on packed
  checkpoints, seeded with real ones ember and TensorFlow wrote (tests/fuzz/checkpoint_seeds.py);
- a mutation fuzzer in Python that damages those checkpoints (truncation, bit flips, random bytes, entries
  rewritten with huge sizes and offsets, wrong dtypes and shapes, under valid table checksums, and mutated
  object graphs) and restores them through ``ember.train.Checkpoint`` and ``load_checkpoint`` in worker
  subprocesses, so that a crash or a hang fails the test with its reproducer.

Each prints one ``FUZZ-COUNTS`` line. A crash, a hang, a sanitizer report or an exception other than a
clear one (an ember.errors class, TypeError or ValueError) fails the test.
"""

import os
import sys

import pytest

from fuzz_harness import ROOT, SEEDS, fuzz_seconds, libfuzzer_corpus_run, mutation_fuzz

LIBFUZZER_SECONDS = fuzz_seconds(20)  # per seed
PYTHON_SECONDS = fuzz_seconds(20)


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_checkpoint(seed, tmp_path):
    # malloc_limit well under rss_limit: no input of 8 KiB may make the reader allocate 64 MiB.
    libfuzzer_corpus_run("checkpoint_fuzzer", "EMBER_CHECKPOINT_FUZZER", "checkpoint", seed, tmp_path,
                         LIBFUZZER_SECONDS, limits=["-timeout=20", "-rss_limit_mb=2048", "-malloc_limit_mb=64",
                                                    "-max_len=8192"], label="checkpoint libfuzzer",
                         may_return_null=False)


# ---- the Python mutation fuzzer

WORKER = r'''
import os, random, resource, sys, tempfile
resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "python"))
import ember
from ember import errors
import checkpoint_seeds
from test_checkpoint_fuzz import mutate

seed, first = int(sys.argv[2]), int(sys.argv[3])
seeds = sorted(checkpoint_seeds.seeds().items())
work = tempfile.mkdtemp(prefix="ember-ckpt-fuzz-")
prefix = os.path.join(work, "ck")
CLEAR = (errors.OpError, TypeError, ValueError)

def run(blob):
    checkpoint_seeds.unpack(blob, prefix)
    reader = ember.train.load_checkpoint(prefix)
    for key in sorted(reader.get_variable_to_shape_map()):
        try:
            reader.get_tensor(key)
        except CLEAR:
            pass
    model = checkpoint_seeds.make_model(ember)
    optimizer = ember.keras.optimizers.Adam(0.1)
    ember.train.Checkpoint(model=model, optimizer=optimizer).restore(prefix)
    checkpoint_seeds.train_step(ember, model, optimizer)  # slots restored on creation

for index in range(first, 1 << 62):
    blob = mutate(random.Random(seed * 1000003 + index), seeds, work)
    print("CASE", index, blob.hex(), flush=True)
    try:
        run(blob)
        print("OK", flush=True)
    except CLEAR as e:
        print("ERR", type(e).__name__, flush=True)
    except BaseException as e:
        print("BAD", type(e).__name__, repr(str(e)[:300]), flush=True)
'''

HUGE = [2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, -1, -2**62]


def _rewrite(blob, work, edit):
    """Unpacks `blob`, lets `edit(entries)` change the index's {key: value bytes}, repacks with valid
    table checksums (a hostile file, not a damaged one)."""
    import checkpoint_seeds
    import leveldb_table
    prefix = os.path.join(work, "m")
    checkpoint_seeds.unpack(blob, prefix)
    entries = leveldb_table.read(prefix + ".index")
    edit(entries)
    leveldb_table.write(prefix + ".index", entries)
    return checkpoint_seeds.pack(prefix)


def mutate(rng, seeds, work):
    """A damaged or hostile variant of a random seed."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from ember.framework import protos
    from test_graph_def_fuzz import mutate_message
    _, blob = seeds[rng.randrange(len(seeds))]
    r = rng.random()
    if r < 0.35:  # one entry rewritten: a field set to a huge or wrong value, or mutated as a message
        def edit(entries):
            keys = [k for k in entries if k]
            key = rng.choice(keys)
            entry = protos.message_class("BundleEntryProto").FromString(entries[key])
            choice = rng.random()
            if choice < 0.25:
                setattr(entry, rng.choice(["offset", "size"]), rng.choice(HUGE + [0, 1, entry.size + 1]))
            elif choice < 0.45:
                entry.dtype = rng.choice([0, 1, 2, 3, 7, 8, 9, 10, 14, 19, 20, 21, 23, 99])
            elif choice < 0.65:
                del entry.shape.dim[:]
                for _ in range(rng.randrange(0, 9)):
                    entry.shape.dim.add(size=rng.choice(HUGE + [0, 1, 2, 3, -1]))
            elif choice < 0.75:
                entry.shard_id = rng.choice([1, -1, 2**31 - 1])
            else:
                entries[key] = mutate_message(rng, entries[key])
                return
            entries[key] = entry.SerializeToString()
            if rng.random() < 0.1:
                entries[""] = mutate_message(rng, entries[""])  # the header too
        return _rewrite(blob, work, edit)
    if r < 0.55:  # the object graph mutated, rewritten as a valid string entry
        import checkpoint_seeds
        import ember
        prefix = os.path.join(work, "g")
        checkpoint_seeds.unpack(blob, prefix)
        reader = ember._C.BundleReader.open(prefix)
        writer = ember._C.BundleWriter(prefix + "2")
        for key in reader.keys():
            if key == "_CHECKPOINTABLE_OBJECT_GRAPH":
                graph = reader.read_string(key)
                for _ in range(rng.choice([1, 1, 2, 4])):
                    graph = mutate_message(rng, graph)
                writer.add_strings(key, [graph])
            else:
                writer.add(key, reader.read(key))
        writer.finish()
        return checkpoint_seeds.pack(prefix + "2")
    data = bytearray(blob)
    for _ in range(rng.choice([1, 1, 2, 3])):
        choice = rng.random()
        if choice < 0.4 and data:  # bit flip
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        elif choice < 0.7 and len(data) > 4:  # truncation (of the index, through its size, or of the data)
            data = data[:rng.randrange(4, len(data))]
        elif choice < 0.85 and data:  # a random byte
            data[rng.randrange(len(data))] = rng.randrange(256)
        else:  # the index size field lies
            data[:4] = rng.choice(HUGE[:4] + [0, 48, len(data)]).to_bytes(8, "little", signed=True)[:4]
    return bytes(data)


@pytest.mark.parametrize("seed", SEEDS)
def test_python_checkpoint_mutations(seed):
    mutation_fuzz("checkpoint python", seed, WORKER, PYTHON_SECONDS, "packed checkpoint hex",
                  extra_paths=[os.path.join(ROOT, "tests", "python")])

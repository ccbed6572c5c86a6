"""Fuzzing the Python SavedModel loader with structured mutations (issue 16, part 3).

Real SavedModels written by ember (a Module with variables, nested modules, a traced function with Python
arguments, a signature, a while_loop) are mutated field by field through protobuf reflection: any int,
enum, string or bool in saved_model.pb (object ids, bound inputs, dims, dtypes, function names, keywords,
attribute values of FunctionDef nodes, ...) set to an edge value, repeated entries dropped or duplicated,
messages cleared, oneofs switched; a few cases flip bytes or truncate instead. Each case goes through
``ember.saved_model.load`` and a call of its signature, in a worker subprocess that reports every case,
so a crash or a hang fails the test with its seed and case number (replay with EMBER_FUZZ_SEED=<seed>).

Load must succeed or raise an ember.errors exception that names the SavedModel's directory; the call after
a successful load may also raise the TypeError/ValueError/KeyError of a call that no longer fits. Prints
one ``FUZZ-COUNTS`` line per seed.
"""

import datetime
import os
import select
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = int(os.environ.get("EMBER_FUZZ_SECONDS", "20"))  # per seed
CASE_TIMEOUT = 30


def rotating_seed():
    return int(os.environ.get("EMBER_FUZZ_SEED", datetime.date.today().strftime("%Y%m%d")))


WORKER = r'''
import os, random, shutil, sys, time
import numpy as np
import ember as tf
from ember import errors
from ember.saved_model.loader import read_saved_model

src_dir, seed, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tf._C.set_max_loop_iterations(100000)  # a mutated loop condition may never turn false, as a valid one may not


class Inner(tf.Module):
    def __init__(self):
        super().__init__()
        self.b = tf.Variable(np.zeros(3, np.float32), name="b")
        self.items = [tf.Variable(1.0), {"k": tf.Variable(2)}]


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.ones((2, 3), np.float32), name="w")
        self.inner = Inner()

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def __call__(self, x):
        y = tf.matmul(x, self.w) + self.inner.b
        return tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * self.inner.items[0]), (0, y))[1]

    @tf.function
    def scaled(self, x, k=2.0):
        return {"y": x * k}


m = Model()
m.scaled(tf.constant([1.0]))
base = os.path.join(src_dir, "base")
tf.saved_model.save(m, base)
saved_model, path = read_saved_model(base)
original = saved_model.SerializeToString()
rng = random.Random(seed)
EDGE_INTS = [0, 1, -1, 2, 3, 7, 20, 2**31 - 1, -2**31, 2**40, -2**62]


def scalar_fields(message, out):
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                for key in list(value.keys()):
                    item = value[key]
                    if hasattr(item, "ListFields"):
                        out.append((value, key, None))
                        scalar_fields(item, out)
                    else:
                        out.append((value, key, "mapvalue"))
            elif field.is_repeated:
                out.append((message, field, "repeated"))
                for item in value:
                    scalar_fields(item, out)
            else:
                out.append((message, field, "message"))
                scalar_fields(value, out)
        else:
            out.append((message, field, "repeated" if field.is_repeated else "scalar"))


def edge_value(field, old):
    t = field.type
    if t == field.TYPE_STRING:
        return rng.choice(["", "x", "__inference_missing_1", "serving_default", "trace_0", "a/b", "\u00e9" * 3,
                           "z" * 300, old[::-1] if isinstance(old, str) else ""])
    if t == field.TYPE_BYTES:
        return rng.choice([b"", b"\x00", b"\xff" * 9])
    if t == field.TYPE_BOOL:
        return not old
    if t in (field.TYPE_FLOAT, field.TYPE_DOUBLE):
        return rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf")])
    if t == field.TYPE_ENUM:
        return rng.choice([0, 1, 7, 20, 21, 99, 255])
    value = rng.choice(EDGE_INTS + [old + 1 if isinstance(old, int) else 1, old - 1 if isinstance(old, int) else 0])
    unsigned = t in (field.TYPE_UINT32, field.TYPE_UINT64, field.TYPE_FIXED32, field.TYPE_FIXED64)
    bits = 32 if t in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32, field.TYPE_UINT32,
                       field.TYPE_FIXED32) else 64
    if unsigned:
        return abs(value) % (2 ** bits)
    return max(-(2 ** (bits - 1)), min(2 ** (bits - 1) - 1, value))


def mutate(message):
    spots = []
    scalar_fields(message, spots)
    for _ in range(rng.randint(1, 3)):
        owner, field, kind = rng.choice(spots)
        try:
            if kind == "scalar":
                setattr(owner, field.name, edge_value(field, getattr(owner, field.name)))
            elif kind == "repeated":
                values = getattr(owner, field.name)
                if len(values) and rng.random() < 0.5:
                    del values[rng.randrange(len(values))]
                elif len(values):
                    if field.type == field.TYPE_MESSAGE:
                        values.add().CopyFrom(values[rng.randrange(len(values))])
                    else:
                        values[rng.randrange(len(values))] = edge_value(field, values[0])
            elif kind == "message":
                owner.ClearField(field.name)
            elif kind == "mapvalue":
                del owner[field]
            else:
                del owner[field]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            pass
    return message


SavedModel = type(saved_model)
end = time.time() + seconds
case = loaded_count = rejected = 0
work = os.path.join(src_dir, "work")
while time.time() < end:
    case += 1
    choice = rng.random()
    if choice < 0.8:
        data = mutate(SavedModel.FromString(original)).SerializeToString()
    elif choice < 0.9:
        data = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        data = bytes(data)
    else:
        data = original[:rng.randrange(len(original))]
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    with open(os.path.join(work, "saved_model.pb"), "wb") as f:
        f.write(data)
    print("CASE", case, flush=True)
    try:
        loaded = tf.saved_model.load(work)
    except errors.OpError as e:
        if work not in str(e):
            print("UNNAMED", case, type(e).__name__, str(e)[:400], flush=True)
            sys.exit(3)
        rejected += 1
        continue
    except Exception as e:
        print("UNEXPECTED", case, type(e).__name__, str(e)[:400], flush=True)
        sys.exit(2)
    loaded_count += 1
    try:
        signature = loaded.signatures["serving_default"]
        signature(x=tf.constant([[1.0, 2.0]]))
        loaded.scaled(tf.constant([1.0]))
    except (errors.OpError, TypeError, ValueError, KeyError, AttributeError):
        pass
print("DONE", case, loaded_count, rejected, flush=True)
'''


def run_seed(seed):
    with tempfile.TemporaryDirectory(prefix="ember-saved-model-fuzz-") as tmp:
        proc = subprocess.Popen([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", WORKER, tmp,
                                 str(seed), str(SECONDS)],
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last_case, lines = None, []
        deadline = time.time() + SECONDS + 120  # the setup (import, trace, save) included
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], CASE_TIMEOUT)
            if not ready or time.time() > deadline:
                proc.kill()
                proc.wait()
                raise AssertionError(f"seed {seed}: hang in case {last_case}")
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
            if line.startswith("CASE"):
                last_case = int(line.split()[1])
        proc.wait()
        stderr = proc.stderr.read()
        assert proc.returncode == 0, (f"seed {seed}: case {last_case} ended the worker with {proc.returncode}\n"
                                      + "\n".join(lines[-3:]) + "\n" + stderr[-3000:])
        done = [l for l in lines if l.startswith("DONE")]
        assert done, stderr[-3000:]
        _, cases, loaded, rejected = done[0].split()
        return int(cases), int(loaded), int(rejected)


def test_saved_model_loader_structured_mutations():
    for seed in (1, rotating_seed()):
        cases, loaded, rejected = run_seed(seed)
        print(f"FUZZ-COUNTS saved_model loader seed {seed}: cases {cases}, loaded {loaded}, rejected {rejected}, "
              f"crashes 0, unclear errors 0")
        assert cases > 0

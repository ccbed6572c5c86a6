"""Fuzzing the C++ SavedModel loader (issue 16, part 3) with the libFuzzer target
tests/fuzz/cpp/saved_model_fuzzer.cc (ASan + UBSan, coverage-guided; built into build/fuzz when it is not
there yet, or EMBER_SAVED_MODEL_FUZZER names a prebuilt binary).

The seeds are SavedModels TensorFlow 2.21 writes at run time (a tf.Module with variables, a tf_keras MLP, a
module with two signatures, a while_loop and cond): each corpus file is a selector byte (which model's variables checkpoint the
target loads against) and the model's saved_model.pb. Two runs:

- byte-level: libFuzzer mutates the corpus for a bounded time, with a fixed seed and a rotating one (the
  date's, printed so that a failure replays with EMBER_FUZZ_SEED=<seed>);
- structure-aware: hostile edits made through TensorFlow's proto classes (huge dims, wrong dtypes, cycles
  of node inputs and of function calls, calls of missing functions, signatures naming missing tensors,
  object ids out of range, variables bound to non-variables, dropped nodes) each run once by the target.

Each prints one FUZZ-COUNTS line; a crash, hang, sanitizer report or an error with no message fails.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from fuzz_harness import SEEDS, fuzz_seconds, libfuzzer_binary, run_libfuzzer

LIBFUZZER_SECONDS = fuzz_seconds(25)  # per seed
STRUCTURED_CASES = 300


TF_WRITER = textwrap.dedent(r'''
    import os, sys
    import tensorflow as tf
    import tf_keras as keras
    out = sys.argv[1]

    class Module(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.ones([3, 4]), name="w")
            self.b = tf.Variable(tf.zeros([4]), name="b")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            h = tf.matmul(x, self.w) + self.b
            return {"relu": tf.nn.relu(h), "sum": tf.reduce_sum(h, axis=1)}

    m = Module()
    tf.saved_model.save(m, os.path.join(out, "module"), signatures=m.__call__)
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)), keras.layers.Dense(2)])
    tf.saved_model.save(model, os.path.join(out, "mlp"))

    class Two(tf.Module):
        def __init__(self):
            self.v = tf.Variable([1.0, 2.0, 3.0], name="v")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def scale(self, x):
            return {"y": x * self.v}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
        def count(self, n):
            return {"n": n + 1}

    t = Two()
    tf.saved_model.save(t, os.path.join(out, "two"), signatures={"serving_default": t.scale, "count": t.count})

    class Loop(tf.Module):
        def __init__(self):
            self.v = tf.Variable([0.5, -1.0, 2.0], name="v")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.int32)])
        def f(self, x, n):
            _, out = tf.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, tf.tanh(acc * self.v)),
                                   (tf.constant(0), x))
            return {"y": tf.cond(tf.reduce_sum(out) > 0, lambda: out * self.v, lambda: out - self.v)}

    loop = Loop()
    tf.saved_model.save(loop, os.path.join(out, "loop"), signatures=loop.f)
''')

MODELS = ["module", "mlp", "two", "loop"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz_saved_models")
    proc = subprocess.run([sys.executable, "-c", TF_WRITER, str(out)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def variables_env(models):
    prefixes = ":".join(str(models / name / "variables" / "variables") for name in MODELS)
    return dict(os.environ, EMBER_SAVED_MODEL_FUZZ_VARIABLES=prefixes, OMP_NUM_THREADS="1",
                ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0",
                UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")


def write_corpus(models, corpus):
    corpus.mkdir()
    for index, name in enumerate(MODELS):
        (corpus / name).write_bytes(bytes([index]) + (models / name / "saved_model.pb").read_bytes())


def run_fuzzer(args, env, tmp_path, label, seed):
    run_libfuzzer(libfuzzer_binary("saved_model_fuzzer", "EMBER_SAVED_MODEL_FUZZER"), args, tmp_path,
                  label=f"saved_model {label}", seed=seed, env=env, timeout=LIBFUZZER_SECONDS + 300,
                  limits=["-timeout=20", "-rss_limit_mb=3072", "-malloc_limit_mb=2048", "-max_len=65536"],
                  replay_hint="EMBER_SAVED_MODEL_FUZZ_VARIABLES=<the models' variables prefixes> ")


@pytest.mark.parametrize("seed", SEEDS)
def test_libfuzzer_saved_model(seed, models, tmp_path):
    corpus = tmp_path / "corpus"
    write_corpus(models, corpus)
    run_fuzzer([f"-seed={seed}", f"-max_total_time={LIBFUZZER_SECONDS}", str(corpus)], variables_env(models),
               tmp_path, "libfuzzer", seed)


# ---- structure-aware mutations


def mutate(rng, saved):
    """One hostile edit of a SavedModel message (TensorFlow's class), in place."""
    meta = saved.meta_graphs[0]
    graph = meta.graph_def
    nodes = list(graph.node)
    functions = list(graph.library.function)
    objects = meta.object_graph_def
    signature = meta.signature_def[rng.choice(sorted(meta.signature_def))]
    kind = rng.randrange(14)
    if kind == 0:  # a huge or negative dimension in a signature or a Placeholder
        info = rng.choice(list(signature.inputs.values()) + list(signature.outputs.values()))
        info.tensor_shape.dim.add().size = rng.choice([-7, 1 << 40, (1 << 63) - 1, 0])
    elif kind == 1:  # a dtype ember lacks, or a wrong one
        info = rng.choice(list(signature.inputs.values()) + list(signature.outputs.values()))
        info.dtype = rng.choice([0, 7, 9, 20, 21, 99, 3])
    elif kind == 2:  # a signature naming a missing tensor or output
        info = rng.choice(list(signature.outputs.values()))
        info.name = rng.choice(["nope:0", "StatefulPartitionedCall:99", "", "^NoOp", ":", "a:b:c"])
    elif kind == 3:  # a cycle of node inputs
        a, b = rng.sample(nodes, 2)
        a.input.append(b.name)
        b.input.append(a.name)
    elif kind == 4 and functions:  # a call of a missing function or a function calling itself
        calls = [n for f in functions for n in f.node_def if "f" in n.attr] + [n for n in nodes if "f" in n.attr]
        if calls:
            call = rng.choice(calls)
            call.attr["f"].func.name = rng.choice(["missing"] + [f.signature.name for f in functions])
    elif kind == 5:  # object ids out of range or bound to a non-variable
        for fn in objects.concrete_functions.values():
            for i in range(len(fn.bound_inputs)):
                fn.bound_inputs[i] = rng.choice([-1, 0, len(objects.nodes), 1 << 30, fn.bound_inputs[i]])
    elif kind == 6:  # drop a node
        del graph.node[rng.randrange(len(graph.node))]
    elif kind == 7:  # a variable handle of another dtype or shape
        handles = [n for n in nodes if n.op == "VarHandleOp"]
        if handles:
            h = rng.choice(handles)
            h.attr["dtype"].type = rng.choice([2, 3, 9, 7])
            h.attr["shape"].shape.dim.add().size = rng.choice([1, 5, 1 << 40])
    elif kind == 8:  # duplicate node names
        graph.node.add().CopyFrom(rng.choice(nodes))
    elif kind == 9:  # a cycle in the object graph
        for i, node in enumerate(objects.nodes):
            ref = node.children.add()
            ref.node_id = (i + 1) % len(objects.nodes)
            ref.local_name = "cycle"
    elif kind == 10 and functions:  # a function body edge to a missing node or argument
        f = rng.choice(functions)
        if f.node_def:
            rng.choice(f.node_def).input.append(rng.choice(["missing:output:0", "x", "^nothing", "a:b:c:d"]))
    elif kind == 11:  # a shared_name that matches two SavedVariables
        objects.concrete_functions.clear()
        for node in objects.nodes:
            if node.WhichOneof("kind") == "variable":
                node.variable.name = "same"
        for n in nodes:
            if n.op == "VarHandleOp":
                n.attr["shared_name"].s = b"same"
    elif kind == 12:  # an attribute of the wrong type
        n = rng.choice(nodes + [n for f in functions for n in f.node_def])
        if n.attr:
            key = rng.choice(sorted(n.attr))
            n.attr[key].Clear()
            n.attr[key].i = rng.choice([-1, 1 << 62])
    else:  # no tags, or another tag set
        del meta.meta_info_def.tags[:]
        meta.meta_info_def.tags.append(rng.choice(["serve", "train", ""]))


STRUCTURED_WRITER = textwrap.dedent(r'''
    import random, sys
    sys.path.insert(0, sys.argv[1])
    from tensorflow.core.protobuf import saved_model_pb2
    from test_saved_model_fuzz import mutate, MODELS
    models, out, seed, cases = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    originals = [open(f"{models}/{name}/saved_model.pb", "rb").read() for name in MODELS]
    for case in range(cases):
        rng = random.Random(seed * 1000003 + case)
        index = rng.randrange(len(MODELS))
        saved = saved_model_pb2.SavedModel.FromString(originals[index])
        for _ in range(rng.randint(1, 3)):
            mutate(rng, saved)
        with open(f"{out}/case{case:05d}", "wb") as f:
            f.write(bytes([index]) + saved.SerializeToString())
''')


@pytest.mark.parametrize("seed", SEEDS)
def test_structured_saved_model_mutations(seed, models, tmp_path):
    cases = tmp_path / "corpus"
    cases.mkdir()
    proc = subprocess.run([sys.executable, "-c", STRUCTURED_WRITER, os.path.dirname(os.path.abspath(__file__)),
                           str(models), str(cases), str(seed), str(STRUCTURED_CASES)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-4000:]
    # -runs=0: each file once, no mutation (libFuzzer still reports a crash with the file as reproducer).
    run_fuzzer(["-runs=0", str(cases)], variables_env(models), tmp_path, "structured", seed)

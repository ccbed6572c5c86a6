"""Python-API fuzz smoke: the public ``ember`` functions called with hostile argument values.

Each case picks a public function (``ember.*``, ``ember.math``, ``ember.nn``, ``ember.linalg``,
``ember.random``, ``ember.strings``, ``ember.ragged``, ``ember.sparse``, and every raw op caller ``ember._C.op(name)``, whose attribute conversion is the
binding's) and fills its parameters from a pool of hostile values: ints beyond int64, negative
ints, None, nested and ragged lists, NumPy scalars, strings, NaN/inf, dtypes, bfloat16/int8/bool/empty
tensors. It runs eagerly and inside ``ember.function`` (the tensors become symbolic arguments, some with
unknown dimensions). The only acceptable outcomes are a result, an ``ember.errors`` exception, a
TypeError or a ValueError (or, for a few calls, the exception TensorFlow raises there by design:
``REFUSED_BY_DESIGN``); a crash, hang, SystemError, RuntimeError or any other exception fails.

Cases run in worker subprocesses (a segfault or abort becomes a failure naming the case, and the run goes
on from the next case). A fixed seed and a rotating one (from the date) each run for a bounded time;
``FUZZ-COUNTS`` reports the counts, and every failure prints how to replay it:

    python3 tests/fuzz/test_api_fuzz.py SEED INDEX      # runs one case in this process, with a traceback
"""

import datetime
import os
import select
import subprocess
import sys
import time

FIXED_SEED = 20261125
BUDGET_S = float(os.environ.get("EMBER_FUZZ_SECONDS", "25"))  # per seed; two seeds
# Workers import ember exactly as this process did (an editable install's import hook needs site).
PYTHON_FLAGS = ["-S"] if sys.flags.no_site else []
CASE_TIMEOUT_S = 30.0  # a case with no progress for this long is a hang
MEMORY_LIMIT = 2 << 30  # data of a worker: big allocations fail fast instead of filling gigabytes

# Callables that are not ops (decorators, context managers, global switches) or that would only print.
SKIP = {"function", "defun", "method", "custom_gradient", "recompute_grad", "control_dependencies", "device",
        "init_scope", "name_scope", "print", "NewGraphFunction", "Module", "Variable", "GradientTape",
        "TensorShape", "TensorSpec", "DType", "Tensor"}


# Raw ops (ember._C.op) reached through the op caller's attribute conversion; ops naming variables or
# functions by id/name (the GraphDef/resource owners' fuzzers cover them) and printing are left out.
RAW_SKIP = {"Placeholder", "PartitionedCall", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
            "AssignSubVariableOp", "PrintV2"}


def public_functions(tf):
    import inspect

    from ember import _C

    found = {}
    for name in _C.op_names():
        if name not in RAW_SKIP:
            found["_C.op." + name] = _C.op(name)
    for prefix, module in (("", tf), ("math.", tf.math), ("nn.", tf.nn), ("linalg.", tf.linalg),
                           ("random.", tf.random), ("strings.", tf.strings), ("ragged.", tf.ragged),
                           ("sparse.", tf.sparse)):
        for name in sorted(dir(module)):
            value = getattr(module, name)
            if name.startswith("_") or name in SKIP or inspect.isclass(value) or inspect.ismodule(value):
                continue
            if callable(value):
                found[prefix + name] = value
    return found


def value_pool(tf, np):
    """Hostile argument values; each is a factory so a case builds fresh objects."""
    huge = [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**70, -(2**70), 10**30, 2**31, 2**31 - 1]
    small = [0, 1, 2, 3, -1, -2, -7]
    pool = [lambda v=v: v for v in huge + small]
    pool += [
        lambda: None, lambda: True, lambda: False, lambda: 1.5, lambda: -0.0, lambda: float("nan"),
        lambda: float("inf"), lambda: -1e308, lambda: "abc", lambda: "", lambda: b"x", lambda: 1j,
        lambda: [], lambda: [[]], lambda: [1, 2], lambda: [[1, 2], [3]], lambda: [[1.0, 2.0], [3.0, 4.0]],
        lambda: [2**70], lambda: [-1, -1], lambda: [None, 2], lambda: (1, (2, 3)), lambda: [[[0]]],
        lambda: [0, 2**63], lambda: {"a": 1}, lambda: object(), lambda: slice(1, 2),
        lambda: np.int64(3), lambda: np.int32(-1), lambda: np.uint8(200), lambda: np.float32(1.5),
        lambda: np.float64("nan"), lambda: np.bool_(True), lambda: np.int64(2**62),
        lambda: np.array([1, 2], np.int8), lambda: np.zeros([0, 3]), lambda: np.array(2**70, dtype=object),
        lambda: np.array([[1, 2]], np.uint64), lambda: np.array(["a"]),
        lambda: tf.float32, lambda: tf.bfloat16, lambda: tf.int8, lambda: tf.bool, lambda: tf.TensorShape([None, 2]),
        lambda: tf.constant([[1.0, -2.0], [3.0, 4.0]]), lambda: tf.constant([1.5, 2.5], tf.bfloat16),
        lambda: tf.constant([[1, 2], [3, 4]], tf.bfloat16), lambda: tf.constant(2.0, tf.bfloat16),
        lambda: tf.constant([1, 2, 3]), lambda: tf.constant(3), lambda: tf.constant(-1, tf.int64),
        lambda: tf.constant([1, 0], tf.int8), lambda: tf.constant([True, False]), lambda: tf.constant(2**62, tf.int64),
        lambda: tf.zeros([0, 3]), lambda: tf.zeros([2, 0, 3], tf.float16), lambda: tf.constant([0.0, float("nan")]),
        lambda: tf.constant([[[1.0]]], tf.float64), lambda: tf.constant([200], tf.uint8), lambda: tf.constant([2, 2]),
        lambda: tf.constant("a b"), lambda: tf.constant(["", "x,y", "\xff"]), lambda: tf.constant([["é"], ["("]]),
    ]
    return pool


def build_case(tf, np, functions, seed, index):
    """The case (name, args, kwargs, mode) of (seed, index): a pure function of the two numbers."""
    import inspect
    import random

    rng = random.Random(seed * 1_000_003 + index)
    pool = value_pool(tf, np)
    names = sorted(functions)
    name = names[rng.randrange(len(names))]
    fn = functions[name]
    if name.startswith("_C.op."):  # inputs then attributes, positionally
        from ember import _C

        info = _C.op_info(name[len("_C.op."):])
        params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in info["inputs"] + info["attrs"]]
    else:
        try:
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        except (TypeError, ValueError):
            params = []
    # Mostly sensible first arguments (so the hostile value reaches deeper code), hostile everything else.
    sane = [lambda: tf.constant([[1.0, 2.0], [3.0, 4.0]]), lambda: tf.constant([1.0, 2.0, 3.0]),
            lambda: tf.constant([[1, 2], [3, 4]], tf.bfloat16), lambda: tf.constant([0, 1]), lambda: [[1.0, 2.0]],
            lambda: 2, lambda: [2, 2]]
    args, kwargs = [], {}
    count = len(params) if params else rng.randint(0, 4)
    for i in range(count):
        param = params[i] if params else None
        has_default = param is not None and param.default is not inspect.Parameter.empty
        if has_default and rng.random() < 0.5:
            continue  # keep the default
        factory = sane[rng.randrange(len(sane))] if i == 0 and rng.random() < 0.6 else pool[rng.randrange(len(pool))]
        if param is None or param.kind == param.POSITIONAL_ONLY:
            args.append(factory)
        elif has_default or param.kind == param.KEYWORD_ONLY:
            kwargs[param.name] = factory
        else:
            args.append(factory)
    mode = rng.choice(["eager", "eager", "function", "function_unknown_dims"])
    return name, fn, args, kwargs, mode


def describe(name, args, kwargs, mode):
    parts = [repr_short(a) for a in args] + [f"{k}={repr_short(v)}" for k, v in kwargs.items()]
    return f"[{mode}] tf.{name}({', '.join(parts)})"


def repr_short(value):
    text = repr(value).replace("\n", " ")
    return text if len(text) < 80 else text[:77] + "..."


# Calls TensorFlow refuses by design with another exception class, and the message it gives.
REFUSED_BY_DESIGN = {
    ("gradients", "eager"): (RuntimeError, "not supported when eager execution is enabled"),
    ("hessians", "eager"): (RuntimeError, "not supported when eager execution is enabled"),
    ("parallel_stack", "eager"): (RuntimeError, "not compatible with eager execution"),
    # TensorFlow's Python raises NotImplementedError for complex128 with a regularizer (its accuracy).
    **{("linalg.lstsq", mode): (NotImplementedError, "currently disabled for complex128")
       for mode in ("eager", "function", "function_unknown_dims")},
}


def run_case(tf, np, functions, seed, index):
    """Runs one case; returns None when the outcome is acceptable, else a description of the problem."""
    from ember import errors

    name, fn, arg_factories, kwarg_factories, mode = build_case(tf, np, functions, seed, index)
    args = [f() for f in arg_factories]
    kwargs = {k: f() for k, f in kwarg_factories.items()}
    label = describe(name, args, kwargs, mode)
    try:
        if mode == "eager":
            fn(*args, **kwargs)
        else:
            call_traced(tf, fn, args, kwargs, unknown_dims=mode == "function_unknown_dims")
    except (errors.OpError, TypeError, ValueError):
        return None, label
    except SystemError as e:
        return f"SystemError: {e}", label
    except BaseException as e:  # noqa: B036 - anything else is the defect this fuzzer looks for
        if isinstance(e, KeyboardInterrupt):
            raise
        refused = REFUSED_BY_DESIGN.get((name, mode))
        if refused is not None and isinstance(e, refused[0]) and refused[1] in str(e):
            return None, label
        return f"{type(e).__module__}.{type(e).__name__}: {str(e)[:300]}", label
    return None, label


def call_traced(tf, fn, args, kwargs, unknown_dims):
    """Calls fn inside ember.function with every tensor argument (top level or in a list) a function input."""
    slots = []

    def collect(value):
        if isinstance(value, tf.Tensor):
            slots.append(value)
            return ("__tensor__", len(slots) - 1)
        if isinstance(value, list):
            return [collect(v) for v in value]
        return value

    packed_args = [collect(a) for a in args]
    packed_kwargs = {k: collect(v) for k, v in kwargs.items()}

    def unpack(value, tensors):
        if isinstance(value, tuple) and len(value) == 2 and value[0] == "__tensor__":
            return tensors[value[1]]
        if isinstance(value, list):
            return [unpack(v, tensors) for v in value]
        return value

    def body(*tensors):
        out = fn(*[unpack(a, tensors) for a in packed_args], **{k: unpack(v, tensors) for k, v in packed_kwargs.items()})
        return [t for t in _flatten(out) if isinstance(t, tf.Tensor)]

    signature = None
    if unknown_dims:
        signature = [tf.TensorSpec([None] * t.ndim, t.dtype) for t in slots]
    return tf.function(body, input_signature=signature)(*slots)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flatten(v)
    else:
        yield value


# ---- the worker: runs cases [start, end) of a seed, announcing each before it starts -----------------

def worker(seed, start, end, deadline):
    import resource

    # RLIMIT_DATA, not RLIMIT_AS: thread stacks and allocator arenas reserve much address space they never use.
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_LIMIT, MEMORY_LIMIT))
    import warnings

    warnings.simplefilter("ignore")
    import numpy as np

    import ember as tf

    functions = public_functions(tf)
    out = sys.stdout
    for index in range(start, end):
        if time.time() > deadline:
            break
        out.write(f"START {index}\n")
        out.flush()
        problem, label = run_case(tf, np, functions, seed, index)
        if problem is not None:
            out.write(f"BAD {index} {problem!r} {label!r}\n")
        out.write(f"DONE {index}\n")
        out.flush()
        tf.random.set_seed(None)  # a case may set a global seed or thread count; start the next one clean
        tf.config.threading.set_intra_op_parallelism_threads(0)
        tf.config.run_functions_eagerly(False)


def run_seed(seed, budget_s):
    """Runs cases of `seed` in workers until the budget is spent; returns (cases, failures by kind)."""
    import tempfile

    deadline = time.time() + budget_s
    index, cases, failures = 0, 0, {"crash": [], "hang": [], "bad": []}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    while time.time() < deadline:
        with tempfile.TemporaryFile() as stderr_file:  # a file, not a pipe: a chatty worker never blocks
            proc = subprocess.Popen([sys.executable, *PYTHON_FLAGS, __file__, "--worker", str(seed), str(index),
                                     str(index + 10_000_000), str(deadline)],
                                    stdout=subprocess.PIPE, stderr=stderr_file, env=env)
            current, hung, pending, last_progress = None, False, b"", time.time()
            fd = proc.stdout.fileno()
            while True:
                # Raw reads and our own line splitting: a buffered readline can hold lines select cannot see.
                ready, _, _ = select.select([fd], [], [], 1.0)
                if not ready:
                    if time.time() - last_progress > CASE_TIMEOUT_S:
                        proc.kill()
                        hung = True
                        break
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                last_progress = time.time()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    kind, _, rest = line.decode().partition(" ")
                    if kind == "START":
                        current = int(rest)
                    elif kind == "DONE":
                        cases += 1
                        current = None
                        index = int(rest) + 1
                    elif kind == "BAD":
                        case, _, what = rest.partition(" ")
                        failures["bad"].append((seed, int(case), what))
            proc.wait()
            stderr_file.seek(0)
            stderr = stderr_file.read().decode(errors="replace")
        if current is not None:  # died or hung inside a case: report it and go on after it
            if hung:
                failures["hang"].append((seed, current, f"no progress for {CASE_TIMEOUT_S:.0f} s"))
            else:
                failures["crash"].append((seed, current, f"exit status {proc.returncode}: {stderr[-500:]}"))
            cases += 1
            index = current + 1
        elif hung or proc.returncode != 0:
            kind = "hang" if hung else "crash"
            failures[kind].append((seed, index, f"worker failed outside a case ({proc.returncode}): {stderr[-800:]}"))
            break
        else:
            break  # the worker stopped at the deadline
    return cases, failures


def rotating_seed():
    """From the date (EMBER_FUZZ_SEED overrides it, e.g. for long runs over many seeds)."""
    if os.environ.get("EMBER_FUZZ_SEED"):
        return int(os.environ["EMBER_FUZZ_SEED"])
    return int(datetime.date.today().strftime("%Y%m%d")) * 7 + 1


def test_api_fuzz():
    totals = {"cases": 0, "crash": [], "hang": [], "bad": []}
    seeds = [FIXED_SEED, rotating_seed()]
    for seed in seeds:
        cases, failures = run_seed(seed, BUDGET_S)
        totals["cases"] += cases
        for kind in ("crash", "hang", "bad"):
            totals[kind] += failures[kind]
    print(f"FUZZ-COUNTS api_fuzz seeds={seeds} cases={totals['cases']} crashes={len(totals['crash'])} "
          f"hangs={len(totals['hang'])} bad_exceptions={len(totals['bad'])}")
    problems = totals["crash"] + totals["hang"] + totals["bad"]
    if os.environ.get("EMBER_FUZZ_REPORT"):  # every failure, one per line, for triage
        with open(os.environ["EMBER_FUZZ_REPORT"], "w") as f:
            f.writelines(f"{s} {i} {what!r}\n" for s, i, what in problems)
    if problems:
        lines = [f"seed {s} case {i}: {what}\n    replay: python3 tests/fuzz/test_api_fuzz.py {s} {i}"
                 for s, i, what in problems[:20]]
        raise AssertionError(f"{len(problems)} API fuzz failure(s):\n" + "\n".join(lines))


def replay(seed, index):
    import numpy as np

    import ember as tf

    functions = public_functions(tf)
    name, fn, args, kwargs, mode = build_case(tf, np, functions, seed, index)
    args = [f() for f in args]
    kwargs = {k: f() for k, f in kwargs.items()}
    print(describe(name, args, kwargs, mode), flush=True)
    if mode == "eager":
        print(fn(*args, **kwargs))
    else:
        print(call_traced(tf, fn, args, kwargs, unknown_dims=mode == "function_unknown_dims"))


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        replay(int(sys.argv[1]), int(sys.argv[2]))

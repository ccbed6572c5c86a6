"""The op fuzzer's worker: runs cases of test_op_fuzz.py in a process of its own, so that a crash or a hang
costs the parent one case, not the test run.

A case is fully determined by (seed, index): it picks a registered op, starts from that op's valid example
call in tests/python/test_op_registry.py (which holds one for every op, so the example also tells the type
of each attribute), and replaces inputs and attributes with edge cases: zero-size and huge dims, every
dtype, NaN/inf and integer extremes, negative/huge axes and sizes, wrong ranks, too few or too many
attributes. It runs the call eagerly and, for some cases, inside ember.function, and compares the two.

Protocol (stdout, one line each, flushed): `CASE <index> <op calls so far>` before a case runs, `FAIL <index> <text>`
for an exception that is not an ember.errors class (TypeError/ValueError are accepted: TensorFlow raises
those for Python-level misuse), `MISMATCH <index> <text>` when eager and traced results differ, and
`DONE <calls>` at the end. Replay one case: python3 op_fuzz_worker.py --seed S --start I --count 1 -v
"""
import argparse
import atexit
import importlib.util
import math
import os
import resource
import shutil
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

import ember as tf
from ember import _C, errors

HERE = os.path.dirname(os.path.abspath(__file__))
REGISTRY_TEST = os.path.join(HERE, "..", "python", "test_op_registry.py")

ALL_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
              tf.uint8, tf.bool, tf.complex64, tf.complex128, tf.string]
BY_ENUM = {d._enum: d for d in ALL_DTYPES}
# Graph-only (a Placeholder must be fed) or writing to the terminal on every call; a While whose inputs the
# fuzzer mutates may loop for ever, as a valid program can (loops are fuzzed by test_program_fuzz.py, whose
# generator bounds their trip counts). A broadcast receive waits for its sending worker (tested across
# processes in tests/python/test_multi_worker.py). The Python-function ops run whatever a trace registered
# under their token: what they return is the callback's, and a stateless one whose outputs nothing reads is
# pruned from a traced call as TensorFlow prunes it (tests/python/test_py_function.py tests their errors).
SKIPPED = {"Placeholder", "PrintV2", "While", "StatelessWhile", "CollectiveBcastRecvV2", "PyFunc",
           "PyFuncStateless", "EagerPyFunc"}
SYMBOLIC_ATTRS = os.environ.get("EMBER_OP_FUZZ_SYMBOLIC_ATTRS", "1") == "1"
# Ops whose every call advances the state it draws from: their values are not compared. Filled from
# tests/python/test_op_registry.py's set when the examples load, so the two never disagree.
NON_DETERMINISTIC = set()
HUGE_DIMS = [2**31 - 1, 2**31, 3037000500, 2**40, 2**62, 2**63 - 1]
EDGE_INTS = [-2**63, -2**63 + 1, -2**31 - 1, -2**31, -1000, -9, -3, -2, -1, 0, 1, 2, 3, 4, 7, 100, 2**31 - 1,
             2**31, 2**40, 2**62, 2**63 - 1]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e-30, 1e30, 65504.0, 1e300, -1e300, math.nan,
               math.inf, -math.inf, 5e-324]
# String tensor elements: empty, patterns and formats the string ops parse, invalid and truncated UTF-8,
# regex syntax, numbers at the edges, long strings (heap-allocated std::strings).
STRING_VALUES = [b"", b" ", b"a", b"a b  c", b"\xc3\xa9", b"\xff\xfe", b"\xc3", b"\xf0\x9f\x98", b"(", b"a+",
                 b"[", b"\\1", b"1.5", b"-7", b"2147483648", b"1e400", b"nan", b" 3 ", b"x" * 100, b"\x00",
                 b",", b"{}", b"%s %d %n"]
# When set (comma-separated op names), the fuzzer draws only those ops (e.g. the string ops).
ONLY_OPS = [n for n in os.environ.get("EMBER_OP_FUZZ_OPS", "").split(",") if n]
STRINGS = ["", "CONSTANT", "REFLECT", "SYMMETRIC", "NHWC", "NCHW", "stderr", "stdout", "bogus", "\x00",
           "x" * 300]


def load_examples():
    spec = importlib.util.spec_from_file_location("op_registry_examples", REGISTRY_TEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    NON_DETERMINISTIC.update(module.NON_DETERMINISTIC)
    examples = dict(module.EXAMPLES)
    # The registry test has no eager example of these partition-only ops (they need a rendezvous); called
    # here with mutated attributes, they must still fail with a clear error.
    examples.setdefault("_Send", ([tf.constant([1.0, 2.0])], [0, "t", "/cpu:0", "/cpu:1"]))
    examples.setdefault("_Recv", ([], [0, "t", "/cpu:0", "/cpu:1", tf.float32, [2]]))
    return examples


class Case:
    """Random choices of one case, drawn from its own generator so that cases replay independently."""

    def __init__(self, seed, index):
        self.rng = np.random.default_rng([seed, index])

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, items):
        return items[int(self.rng.integers(len(items)))]

    # ---- tensors
    def shape(self, like=None):
        if like is not None and self.chance(0.5):
            dims = list(like)
            if dims and self.chance(0.3):
                dims[int(self.rng.integers(len(dims)))] = self.pick([0, 1, 2, 4])
            return dims
        rank = self.pick([0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 5, 8, 9])
        dims = [self.pick([0, 1, 1, 2, 2, 3, 5]) for _ in range(rank)]
        if rank and self.chance(0.15):
            # Huge dims only in empty tensors (otherwise the case is just an allocation failure).
            dims[int(self.rng.integers(rank))] = self.pick(HUGE_DIMS)
            if 0 not in dims:
                dims[int(self.rng.integers(rank))] = 0
        return dims

    def values(self, dtype, n):
        if dtype == tf.string:
            out = np.empty(n, dtype=object)
            out[:] = [self.pick(STRING_VALUES) * int(self.pick([1, 1, 1, 2, 50])) for _ in range(n)]
            return out
        if dtype == tf.bool:
            return self.rng.random(n) < 0.5
        if dtype.is_complex:  # edge values and normal draws in each part
            part = dtype.real_dtype
            return (self.values(part, n) + 1j * self.values(part, n)).astype(dtype._np)
        if dtype.is_floating:
            pool = np.array(EDGE_FLOATS)
            v = np.where(self.rng.random(n) < 0.3, pool[self.rng.integers(len(pool), size=n)],
                         self.rng.normal(size=n) * self.pick([1.0, 3.0, 100.0]))
            with np.errstate(over="ignore", invalid="ignore"):
                return v.astype(dtype._np)
        info = np.iinfo(dtype._np)
        edges = np.array([info.min, info.min + 1, -1 if info.min < 0 else 0, 0, 1, 2, info.max - 1, info.max],
                         dtype=dtype._np)
        small = self.rng.integers(max(info.min, -5), min(info.max, 6), size=n, endpoint=True).astype(dtype._np)
        return np.where(self.rng.random(n) < 0.3, edges[self.rng.integers(len(edges), size=n)], small)

    def tensor(self, dtype=None, like=None):
        dtype = dtype or self.pick(ALL_DTYPES)
        dims = self.shape(like)
        if len(dims) > 8 or any(d > 64 for d in dims):
            return tf.zeros(dims, dtype)  # rank-9 / huge-dim shapes: ember's own validation decides
        n = int(np.prod(dims)) if dims else 1
        return tf.constant(self.values(dtype, n).reshape(dims), dtype=dtype)

    def dtype_for(self, supported, original):
        if original is not None and self.chance(0.4):
            return original
        if supported and self.chance(0.7):
            return BY_ENUM[self.pick(supported)]
        return self.pick(ALL_DTYPES)

    # ---- attributes, by the type of the example's value
    def int_attr(self, original):
        if self.chance(0.4):
            return int(original + self.pick([-2, -1, 1, 2]))
        return int(self.pick(EDGE_INTS))

    def attr(self, original):
        if isinstance(original, bool):
            return not original
        if isinstance(original, int):
            return self.int_attr(original)
        if isinstance(original, float):
            return float(self.pick(EDGE_FLOATS))
        if isinstance(original, str):
            return self.pick(STRINGS)
        if isinstance(original, tf.DType):
            return self.pick(ALL_DTYPES)
        if isinstance(original, list) and all(isinstance(x, int) for x in original):
            if original and self.chance(0.5):
                out = list(original)
                out[int(self.rng.integers(len(out)))] = self.int_attr(0)
                return out
            return [int(self.pick(EDGE_INTS)) if self.chance(0.3) else int(self.rng.integers(-3, 6))
                    for _ in range(self.pick([0, 1, 2, 3, 4, 6, 9]))]
        if isinstance(original, list) and original and all(isinstance(x, tf.DType) for x in original):
            # a list of dtypes (TensorFlow's list(type)): one element changed, or a list of another length
            if self.chance(0.5):
                out = list(original)
                out[int(self.rng.integers(len(out)))] = self.pick(ALL_DTYPES)
                return out
            return [self.pick(ALL_DTYPES) for _ in range(self.pick([0, 1, 2, 5]))]
        if isinstance(original, list) and original and all(x is None or isinstance(x, list) for x in original):
            # a list of shapes (list(shape)): None is an unknown rank, None or -1 an unknown dim
            def shape():
                if self.chance(0.1):
                    return None
                return [self.pick([None, -1, 0, 1, 3, int(self.pick(EDGE_INTS))])
                        for _ in range(self.pick([0, 1, 2, 9]))]
            if self.chance(0.5):
                out = list(original)
                out[int(self.rng.integers(len(out)))] = shape()
                return out
            return [shape() for _ in range(self.pick([0, 1, 3]))]
        if isinstance(original, tf.Tensor):
            return self.tensor()
        return original


def make_case(seed, index, examples, op_names, info):
    case = Case(seed, index)
    name = case.pick(op_names)
    inputs, attrs = examples[name]
    supported = info[name]["kernel_dtypes"]
    # One dtype for most inputs of a case, since most ops need their inputs to agree.
    shared = case.dtype_for(supported, inputs[0].dtype if inputs and isinstance(inputs[0], tf.Tensor) else None)
    new_inputs = []
    for x in inputs:
        if isinstance(x, tf.Tensor) and case.chance(0.8):
            dtype = shared if case.chance(0.8) else case.dtype_for(supported, x.dtype)
            new_inputs.append(case.tensor(dtype, like=x.shape.as_list() if case.chance(0.5) else None))
        elif isinstance(x, list) and case.chance(0.8):
            members = x if case.chance(0.3) else x[:1] * case.pick([0, 1, 2, 3])
            new_inputs.append([case.tensor(shared, like=m.shape.as_list()) for m in members])
        else:
            new_inputs.append(x)
    new_attrs = [case.attr(a) if case.chance(0.35) else a for a in attrs]
    if case.chance(0.05) and new_attrs:
        new_attrs.pop()
    if case.chance(0.03):
        new_attrs.append(case.attr(case.pick([0, 1.0, [1], "x", tf.float32])))
    if case.chance(0.03) and new_inputs:
        new_inputs.pop(int(case.rng.integers(len(new_inputs))))
    traced = case.chance(0.3)
    # Traced, an attribute may be given a symbolic tensor (a function argument), which has no value to read
    # (issue 12 item 7 segfaulted on it); EMBER_OP_FUZZ_SYMBOLIC_ATTRS=0 leaves that out.
    symbolic_attr = None
    if traced and SYMBOLIC_ATTRS and new_attrs and case.chance(0.1):
        symbolic_attr = int(case.rng.integers(len(new_attrs)))
    return name, new_inputs, new_attrs, traced, symbolic_attr


ACCEPTED = (errors.OpError, TypeError, ValueError)


def describe(value):
    if isinstance(value, tf.Tensor):
        return f"{value.dtype.name}{value.shape.as_list()}"
    if isinstance(value, list):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return repr(value)[:80]


def outputs_of(result):
    outs = result if isinstance(result, tuple) else (result,)
    arrays = []
    for o in outs:
        if isinstance(o, tf.Tensor):
            arrays.append((o.dtype, np.asarray(o.numpy())))  # reading the value is part of the call
    return arrays


def same(name, eager, traced):
    if len(eager) != len(traced):
        return f"{len(eager)} outputs eagerly, {len(traced)} traced"
    for i, ((de, e), (dt, t)) in enumerate(zip(eager, traced)):
        if de != dt or e.shape != t.shape:
            return f"output {i}: {de.name}{list(e.shape)} eagerly, {dt.name}{list(t.shape)} traced"
        if name in NON_DETERMINISTIC or e.size == 0:
            continue  # (NumPy cannot even convert some empty arrays: [0, 2**62] float64 is "too big")
        if de.is_floating or de.is_complex:
            rtol = 1e-2 if de in (tf.float16, tf.bfloat16) else 1e-5
            wide = np.complex128 if de.is_complex else np.float64
            a, b = e.astype(wide), t.astype(wide)
            close = np.isclose(a, b, rtol=rtol, atol=rtol, equal_nan=True) | (a == b)
            if not close.all():
                return f"output {i} differs at {np.argwhere(~close)[0].tolist()}: {a[~close][0]} vs {b[~close][0]}"
        elif not np.array_equal(e, t):
            return f"output {i} differs"
    return None


def run_case(name, inputs, attrs, traced, symbolic_attr=None):
    """Returns (calls, failure, mismatch): failure/mismatch are None or a message."""
    op = _C.op(name)
    calls = 1
    eager = eager_error = None
    try:
        eager = outputs_of(op(*inputs, *attrs))
    except MemoryError:
        return calls, None, None  # NumPy could not copy a legal but large result under MEMORY_HEADROOM_BYTES
    except ACCEPTED as e:
        eager_error = e
    except Exception as e:  # noqa: BLE001 - the point of the fuzzer
        return calls, f"eager {type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}", None
    if not traced:
        return calls, None, None

    def call(*tensors):
        it = iter(tensors)
        rebuilt = [next(it) if isinstance(x, tf.Tensor) else [next(it) for _ in x] if isinstance(x, list) else x
                   for x in inputs]
        used_attrs = list(attrs)
        if symbolic_attr is not None and tensors:
            used_attrs[symbolic_attr] = tensors[0]
        return op(*rebuilt, *used_attrs)

    args = []
    for x in inputs:
        args.extend(x if isinstance(x, list) else [x] if isinstance(x, tf.Tensor) else [])
    calls += 1
    try:
        staged = outputs_of(tf.function(call)(*args))
    except (MemoryError, *ACCEPTED):
        return calls, None, None  # a traced program may reject what eager accepts only in its shape checks
    except Exception as e:  # noqa: BLE001
        return calls, f"traced {type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}", None
    if symbolic_attr is not None:
        return calls, None, None  # not the eager call's attributes: nothing to compare
    if eager_error is not None:
        if name == "Reshape" and [a.shape for _, a in staged] == [tuple(inputs[0].shape)]:
            # A reshape to its input's static shape is removed from the graph, so its runtime shape
            # argument goes unchecked; TensorFlow's optimizer does the same (traced reshape(x, [-4]) of a
            # [2] tensor returns x there too).
            return calls, None, None
        return calls, None, f"traced call succeeded, eager raised {type(eager_error).__name__}: {eager_error}"
    return calls, None, same(name, eager, staged)


# Legal but huge requests (Eye(2**31), a [2**31] random tensor) would spend the case filling gigabytes;
# with this much address space beyond what the started worker maps (thread stacks and malloc arenas grow
# with the core count) they take the out-of-memory path instead, which must be a ResourceExhaustedError.
MEMORY_HEADROOM_BYTES = 3 << 29


def mapped_bytes():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmSize:"))
    return int(line.split()[1]) * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=1 << 62)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    examples = load_examples()
    # Ops that write files (WriteFile) take fuzzed strings as relative paths: they write into a scratch
    # directory, never into the checkout the fuzzer runs from.
    scratch = tempfile.mkdtemp(prefix="ember-op-fuzz-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.chdir(scratch)
    op_names = sorted(n for n in _C.op_names()
                      if n not in SKIPPED and n in examples and (not ONLY_OPS or n in ONLY_OPS))
    missing = sorted(set(_C.op_names()) - SKIPPED - set(examples))
    if missing and not ONLY_OPS:  # the registry test fails on an op without an example; so does the fuzzer
        sys.exit(f"ops without an example to fuzz: {missing}")
    info = {n: _C.op_info(n) for n in op_names}
    tf.zeros([64, 64]) @ tf.zeros([64, 64])  # start the thread pools before measuring what is mapped
    resource.setrlimit(resource.RLIMIT_AS, (mapped_bytes() + MEMORY_HEADROOM_BYTES, resource.RLIM_INFINITY))
    # test_op_fuzz.py checks its own harness with "abort:I,hang:J,stop:K": die, stall or finish at a case.
    selftest = dict(item.split(":") for item in os.environ.get("EMBER_OP_FUZZ_SELFTEST", "").split(",") if item)
    calls = 0
    for index in range(args.start, args.start + args.count):
        print(f"CASE {index} {calls}", flush=True)
        if str(index) == selftest.get("abort"):
            os.abort()
        if str(index) == selftest.get("hang"):
            time.sleep(3600)
        if str(index) == selftest.get("stop"):
            break
        try:
            name, inputs, attrs, traced, symbolic_attr = make_case(args.seed, index, examples, op_names, info)
        except ACCEPTED:
            continue  # the case's own inputs were rejected (a rank-9 or too-large tensor)
        if args.verbose:
            print(f"  {name}({', '.join(describe(x) for x in inputs + attrs)}) traced={traced}", flush=True)
        n, failure, mismatch = run_case(name, inputs, attrs, traced, symbolic_attr)
        calls += n
        what = f"{name}({', '.join(describe(x) for x in inputs + attrs)})"
        if failure:
            print(f"FAIL {index} {what}: {failure}".replace("\n", " | "), flush=True)
        if mismatch:
            print(f"MISMATCH {index} {what}: {mismatch}".replace("\n", " | "), flush=True)
    print(f"DONE {calls}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

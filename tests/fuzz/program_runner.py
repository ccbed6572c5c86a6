"""Runs generated programs (program_gen.py) in this process and compares the ways of running them.

    python3 tests/fuzz/program_runner.py SEED [SEED ...]      # prints BEGIN/END lines (the fuzzer's protocol)
    python3 tests/fuzz/program_runner.py --show SEED          # one program, its text and the verdict

Each program runs, with fresh variables of the same initial values each time:
  eager                the reference;
  function             every ``def`` wrapped in ``ember.function``, default optimizer;
  native               the same with native fused kernels (jit/), bit for bit equal to ``function``;
  slow_loops           the same with the While kernels' fast path off (runtime/fast_loop.cc), bit for bit
                       equal to ``function`` (programs with a while loop);
  passes_off           the same with ``disable_meta_optimizer`` (the traced graphs run as they are);
  parallel             default optimizer, two inter-op threads (every third program);
  dynamic              the outer function traced with every dim unknown (input_signature), no gradients
                       (every third program);
  some_passes_off      a random subset of the passes (every third program);
and, for smooth float programs, first- and second-order gradients with tapes around the calls, and both
taken inside an ``ember.function``. Results, variables afterwards and gradients must
agree within the dtype's tolerance. A crash kills this process: the parent reads the last BEGIN line.
"""
import json
import os
import random
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import program_gen  # noqa: E402

import ember as tf  # noqa: E402

PASS_OPTIONS = ["constant_folding", "arithmetic_optimization", "common_subgraph_elimination", "function_optimization",
                "elementwise_fusion", "sibling_matmul_merging", "memory_optimization", "disable_model_pruning",
                "loop_optimization", "remapping"]
RTOL = {"float32": 2e-4, "float64": 1e-9, "float16": 2e-2, "int32": 0}


class Mismatch(Exception):
    pass


def _inputs(spec, seed):
    rng = np.random.RandomState((seed * 7 + 1) % 2 ** 32)
    dt = spec["DTYPE"]
    if dt == "int32":
        make = lambda s: rng.randint(-2, 3, size=s).astype(np.int32)  # noqa: E731
    else:
        make = lambda s: rng.uniform(-1.5, 1.5, size=s).astype(dt)  # noqa: E731
    return [make(s) for s in spec["INPUTS"]], [make(s) for s in spec["VARIABLES"]]


def _namespace(source, spec, var_inits, mode):
    ns = {"tf": tf, "np": np}
    for i, init in enumerate(var_inits):
        ns[f"v{i}"] = tf.Variable(init)
    exec(compile(source, "<program>", "exec"), ns)
    if mode != "eager":
        for name in [k for k in ns if k[0] == "f" and k[1:].isdigit()]:
            ns[name] = tf.function(ns[name])
    if mode == "dynamic":  # every dim unknown to the outer function's graph
        dtype = getattr(tf, spec["DTYPE"])
        signature = [tf.TensorSpec([None] * len(s), dtype) for s in spec["INPUTS"]]
        ns["f0"] = tf.function(ns["f0"].python_function, input_signature=signature)
    return ns


def _np(t):
    return None if t is None else np.array(t.numpy(), copy=True)


def _weights(results):
    # Distinct weights per result so that the loss does not cancel symmetric errors.
    return [0.5 + 0.25 * i for i in range(len(results))]


def _loss(results, dtype):
    total = None
    for w, r in zip(_weights(results), results):
        if r is None:  # an unconnected gradient (None eagerly, zeros from a function): adds nothing
            continue
        term = tf.reduce_sum(r * tf.constant(w, dtype))
        total = term if total is None else total + term
    return total


def run_mode(source, spec, seed, mode):
    """Everything observable of one way of running the program, as name -> array (or None)."""
    inputs, var_inits = _inputs(spec, seed)
    graph = mode != "eager"
    ns = _namespace(source, spec, var_inits, mode)
    variables = [ns[f"v{i}"] for i in range(len(var_inits))]
    out = {}
    xs = [tf.constant(a) for a in inputs]
    results = ns["f0"](*xs)
    for i, r in enumerate(results):
        out[f"result {i}"] = _np(r)
    for i, v in enumerate(variables):
        out[f"v{i} after the call"] = _np(v)
    # A second call must leave the first call's results and the inputs as they were (buffer reuse and
    # in-place writes of the memory plan).
    again = ns["f0"](*xs)
    for i, r in enumerate(again):
        out[f"result {i} of a second call"] = _np(r)
    for i, r in enumerate(results):
        if not np.array_equal(out[f"result {i}"], r.numpy(), equal_nan=True):
            raise Mismatch(f"{mode}: result {i} of the first call changed during the second call")
    for i, (a, x) in enumerate(zip(inputs, xs)):
        if not np.array_equal(a, x.numpy(), equal_nan=True):
            raise Mismatch(f"{mode}: input x{i} changed by the calls (written in place?)")
    if not spec["SMOOTH"] or mode == "dynamic":  # gradients need static shapes in ember so far
        return out
    dtype = getattr(tf, spec["DTYPE"])
    f0 = ns["f0"]

    def first_order(*xs):
        with tf.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            loss = _loss(f0(*xs), dtype)
        return tape.gradient(loss, list(xs) + variables)

    for i, g in enumerate(first_order(*xs)):
        out[f"gradient {i}"] = _np(g)
    def second_order(*xs):
        with tf.GradientTape() as outer:
            for x in xs:
                outer.watch(x)
            with tf.GradientTape() as inner:
                for x in xs:
                    inner.watch(x)
                loss = _loss(f0(*xs), dtype)
            loss2 = _loss(inner.gradient(loss, list(xs)), dtype)
        return outer.gradient(loss2, list(xs)) if loss2 is not None else [None] * len(xs)

    for i, g in enumerate(second_order(*xs)):
        out[f"second-order gradient {i}"] = _np(g)
    # The same taken inside an ember.function: the backward graphs are traced and optimized too.
    inside = tf.function if graph else (lambda f: f)
    for i, g in enumerate(inside(first_order)(*xs)):
        out[f"gradient {i} inside a function"] = _np(g)
    for i, g in enumerate(inside(second_order)(*xs)):
        out[f"second-order gradient {i} inside a function"] = _np(g)
    for i, v in enumerate(variables):
        out[f"v{i} at the end"] = _np(v)
    return out


def compare(expected, got, dtype, mode):
    if list(expected) != list(got):
        raise Mismatch(f"{mode}: observed {list(got)}, eager observed {list(expected)}")
    rtol = RTOL[dtype]
    for key, want in expected.items():
        have = got[key]
        if want is None or have is None:
            # A function's gradient is zeros for what its own graph connects, even through an output the
            # caller drops, where the eager tape has no path at all (TensorFlow does the same).
            other = have if want is None else want
            if other is not None and not np.any(other):
                continue
            if (want is None) != (have is None):
                raise Mismatch(f"{mode}: {key} is {have if have is None else 'a value'}, eager: "
                               f"{want if want is None else 'a value'}")
            continue
        if want.shape != have.shape or want.dtype != have.dtype:
            raise Mismatch(f"{mode}: {key} is {have.dtype}{list(have.shape)}, eager: {want.dtype}{list(want.shape)}")
        if rtol == 0:
            if not np.array_equal(want, have):
                raise Mismatch(f"{mode}: {key} differs:\n{have}\neager:\n{want}")
            continue
        w64, h64 = want.astype(np.float64), have.astype(np.float64)
        finite = np.isfinite(w64)
        scale = max(1.0, float(np.max(np.abs(w64[finite])))) if finite.any() else 1.0
        if not np.allclose(h64, w64, rtol=rtol, atol=rtol * scale, equal_nan=True):
            raise Mismatch(f"{mode}: {key} differs (rtol {rtol}):\n{have}\neager:\n{want}")


def compare_exact(interpreted, native, mode="native"):
    """Native fused kernels compute what the interpreter computes, bit for bit (NaNs as NaNs), and so does a
    loop on its normal path what it computes on its fast path. Gradients are left to `compare`: two runs of
    one function's gradient may already differ in the last bits on the interpreter (the order in which a
    variable's gradients are summed is not fixed)."""
    for key, want in interpreted.items():
        if "gradient" in key:
            continue
        have = native[key]
        if want is None or have is None:
            if (want is None) != (have is None):
                raise Mismatch(f"{mode}: {key} is {have if have is None else 'a value'}, interpreter: {want}")
            continue
        same = want.dtype == have.dtype and want.shape == have.shape and (
            np.array_equal(want, have, equal_nan=True) if want.dtype.kind in "fc" else np.array_equal(want, have))
        if same and want.dtype.kind == "f":  # and the same signs: -0.0 is not 0.0 (a NaN's sign is free:
            numbers = ~np.isnan(want)       # LLVM may swap an add's operands, and NaN + NaN keeps the first)
            same = np.array_equal(np.signbit(want[numbers]), np.signbit(have[numbers]))
        if not same:
            raise Mismatch(f"{mode}: {key} differs from the interpreter's:\n{have}\ninterpreter:\n{want}")


def check(seed):
    """('ok' | 'mismatch' | 'eager_error', message) for program `seed`."""
    source = program_gen.generate(seed)
    spec = {}
    exec(source.split("\ndef ")[0], spec)
    try:
        expected = run_mode(source, spec, seed, "eager")
    except Exception as e:  # noqa: BLE001 - an invalid program (a generator bug) or an eager bug
        return "eager_error", f"eager: {type(e).__name__}: {e}"
    modes = ["function", "passes_off"] + (["parallel"] if seed % 3 == 0 else []) + \
        (["dynamic"] if seed % 3 == 1 else []) + (["some_passes_off"] if seed % 3 == 2 else [])
    modes.insert(1, "native")
    if "tf.while_loop(" in source:
        modes.insert(2, "slow_loops")
    saved = tf.config.optimizer.get_experimental_options()
    threads = tf.config.threading.get_inter_op_parallelism_threads()
    # Every mode but "native" runs its fused groups on the interpreter; "native" runs the same functions with
    # native kernels compiled before the first call and must match "function" bit for bit (docs/fusion.md).
    tf.config.experimental.set_native_kernels("off")
    interpreted = None
    try:
        for mode in modes:
            if mode == "native":
                tf.config.experimental.set_native_kernels("sync")
                try:
                    before = tf.config.experimental.native_kernel_stats()["native_runs"]
                    got = run_mode(source, spec, seed, "function")
                    compare(expected, got, spec["DTYPE"], mode)
                    compare_exact(interpreted, got)
                    if before == tf.config.experimental.native_kernel_stats()["native_runs"] and \
                            tf.config.experimental.native_kernel_stats()["failures"] > 0:
                        return "mismatch", "native: the JIT failed to compile a fused program"
                except Mismatch as e:
                    return "mismatch", str(e)
                except Exception as e:  # noqa: BLE001 - the interpreter ran it, so native code must too
                    return "mismatch", f"native: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
                finally:
                    tf.config.experimental.set_native_kernels("off")
                continue
            if mode == "slow_loops":
                tf._C.set_fast_loops(False)
                try:
                    compare_exact(interpreted, run_mode(source, spec, seed, "function"), mode)
                except Mismatch as e:
                    return "mismatch", str(e)
                except Exception as e:  # noqa: BLE001 - the fast path ran it, so the normal one must too
                    return "mismatch", f"{mode}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
                finally:
                    tf._C.set_fast_loops(True)
                continue
            if mode == "passes_off":
                tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
            if mode == "some_passes_off":  # passes meet each other's output in other combinations
                rng = random.Random(seed)
                tf.config.optimizer.set_experimental_options(
                    {name: (not on if name == "disable_model_pruning" else on)
                     for name, on in ((n, rng.random() < 0.6) for n in PASS_OPTIONS)})
            if mode == "parallel":
                tf.config.threading.set_inter_op_parallelism_threads(2)
                tf._C.force_other_processes_load(0.0)  # parallel even on a busy machine (docs/threads.md)
            want = expected
            if mode == "dynamic":
                want = {k: v for k, v in expected.items() if "gradient" not in k and "at the end" not in k}
            try:
                got = run_mode(source, spec, seed, mode)
                if mode == "function":
                    interpreted = got
                compare(want, got, spec["DTYPE"], mode)
            except Mismatch as e:
                return "mismatch", str(e)
            except Exception as e:  # noqa: BLE001 - eager ran it, so the graph must too
                return "mismatch", f"{mode}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
            finally:
                tf.config.optimizer.set_experimental_options(saved)
                tf.config.threading.set_inter_op_parallelism_threads(threads)
                tf._C.force_other_processes_load(-1.0)
    finally:
        tf.config.optimizer.set_experimental_options(saved)
    return "ok", ""


def main(argv):
    if argv and argv[0] == "--show":
        seed = int(argv[1])
        print(program_gen.generate(seed))
        print(check(seed))
        return
    print(f"EMBER {tf.__file__}", flush=True)
    for arg in argv:
        seed = int(arg)
        print(f"BEGIN {seed}", flush=True)
        status, message = check(seed)
        print(f"END {seed} " + json.dumps({"status": status, "message": message[:4000]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

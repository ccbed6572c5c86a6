"""Native fused kernels (issue 20 §1, docs/fusion.md): ember's fused element-wise chains against JAX jit,
torch.compile and hand-written C++.

Rows, each on 1M float32:
- arithmetic chain, 100 cheap ops (arithmetic_chain below): ember function with native kernels, the same on
  the interpreter (EMBER_JIT=0), JAX jit, torch.compile, and the one-loop C++ program of
  bench/native_baselines.cc (Note [Arithmetic chain loop]) on all threads and on one;
- transcendental chain (bench/executor.py's elementwise_chain): ember native and interpreter against the
  hand-fused C++ bound (Note [Hand-fused chain]);
- a fresh 100-op function: the first call's time (trace + optimize + plan + run) with native kernels on
  (compiled in the background) and with EMBER_JIT=0, and the time from the first call until a call runs
  native code, with an empty and with a warm disk cache.

Each framework runs in a process of its own; JAX and PyTorch come from EMBER_BENCH_PATH_JAX /
EMBER_BENCH_PATH_TORCH (directories of packages) when set. Times are medians of repeated calls in ms, on
a machine others may share: read ratios, and rerun when the load changes. --rounds N repeats ember's
chains and first calls N times, each beside its reference, and prints the median ratio (Note [Paired rounds]).
Usage: python3 bench/fusion.py [--quick] [--threads N] [--cpu-time] [--rounds N]
(python3 -S with PYTHONPATH=site-packages to bench a worktree)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

SIZE = 1 << 20
ROUNDS = 10


def arithmetic_chain(m, x, y):
    """100 cheap element-wise ops (keep in step with arith_chain_loop in bench/native_baselines.cc)."""
    v = x
    for i in range(ROUNDS):
        c = 0.1 * i / ROUNDS
        v = v * (0.9 - c)
        v = v + y
        v = v - (0.25 + c)
        v = m.maximum(v, y)
        v = v * (0.5 + c)
        v = m.clamp_max(v, 2.0) if hasattr(m, "clamp_max") else m.minimum(v, 2.0)  # torch wants a tensor
        v = v - y
        v = v * 0.75
        v = v + x
        v = m.abs(v)
    return v


def transcendental_chain(m, x, y):
    from executor import elementwise_chain

    return elementwise_chain(m, x, y)


def inputs():
    import numpy as np

    rng = np.random.default_rng(0)
    return (rng.uniform(-1, 1, SIZE).astype(np.float32),
            np.clip(rng.standard_normal(SIZE), -2, 2).astype(np.float32))


def median_ms(fn, calls):
    """The best of `calls` timed calls in ms (BEST=1, the default: on a shared machine the best call is the
    one least disturbed by others) or their median (BEST=0). With --cpu-time, the process's CPU time of a call
    (every thread's, so JAX's and PyTorch's workers count) instead of wall time: on a loaded machine wall
    times mostly measure the wait for a core."""
    import statistics

    clock = time.process_time if os.environ.get("EMBER_BENCH_CLOCK") == "cpu" else time.perf_counter
    fn()
    fn()
    times = []
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    pick = min if os.environ.get("BEST", "1") == "1" else statistics.median
    return pick(times) * 1e3


# ---- reductions at the end of fused chains (Note [Absorbed reductions] in passes/fuse_elementwise.cc)

RED_SIZE = 16 << 20          # reduce_sum(x * y + z) over 16M float32: 192 MB of input
ROWS, COLS = 4096, 1024       # softmax and layer norm over the last axis of a [4096, 1024] float32


class Ops:
    """The few ops the reduction benchmarks need, in one framework's spelling."""

    def __init__(self, kind, m):
        self.kind, self.m = kind, m

    def reduce(self, name, v, axis=None, keep=False):
        if self.kind in ("ember", "tf"):
            return getattr(self.m, "reduce_" + name)(v, axis=axis, keepdims=keep)
        if self.kind == "jax":
            return getattr(self.m, {"sum": "sum", "max": "max", "mean": "mean"}[name])(v, axis=axis, keepdims=keep)
        if axis is None:
            return getattr(self.m, name)(v)
        out = getattr(self.m, {"sum": "sum", "max": "amax", "mean": "mean"}[name])(v, dim=axis, keepdim=keep)
        return out

    def exp(self, v):
        return self.m.exp(v)

    def rsqrt(self, v):
        if self.kind in ("ember", "tf"):
            return self.m.math.rsqrt(v)
        if self.kind == "jax":
            import jax

            return jax.lax.rsqrt(v)
        return self.m.rsqrt(v)


def sum_mul_add(o, x, y, z):
    return o.reduce("sum", x * y + z)


def softmax(o, x):
    e = o.exp(x - o.reduce("max", x, -1, True))
    return e / o.reduce("sum", e, -1, True)


def layer_norm(o, x):
    d = x - o.reduce("mean", x, -1, True)
    return d * o.rsqrt(o.reduce("mean", d * d, -1, True) + 1e-5)


def reduction_inputs():
    import numpy as np

    rng = np.random.default_rng(1)
    vectors = [rng.uniform(-1, 1, RED_SIZE).astype(np.float32) for _ in range(3)]
    return vectors, rng.standard_normal((ROWS, COLS)).astype(np.float32)


def time_reductions(kind, m, to_tensor, compile_fn, sync, calls):
    (xn, yn, zn), rn = reduction_inputs()
    x, y, z, r = (to_tensor(a) for a in (xn, yn, zn, rn))
    o = Ops(kind, m)
    out = {}
    for name, fn, args in (("sum", sum_mul_add, (x, y, z)), ("softmax", softmax, (r,)),
                           ("layernorm", layer_norm, (r,))):
        f = compile_fn(lambda *a, fn=fn: fn(o, *a))
        sync(f(*args))
        if kind == "ember":
            m.config.experimental.wait_for_native_kernels()
        out[name] = median_ms(lambda: sync(f(*args)), calls)
    return out


def worker_reduce_ember(calls):
    import ember as tf

    out = time_reductions("ember", tf, tf.constant, tf.function, lambda v: v, calls)
    out["stats"] = tf.config.experimental.native_kernel_stats()
    return out


def worker_reduce_tf(calls):
    import tensorflow as tf

    if os.environ.get("OMP_NUM_THREADS") == "1":
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    return time_reductions("tf", tf, tf.constant, tf.function, lambda v: v.numpy(), calls)


def worker_reduce_jax(calls):
    if os.environ.get("OMP_NUM_THREADS") == "1":
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    import jax
    import jax.numpy as jnp

    return time_reductions("jax", jnp, jnp.asarray, jax.jit, lambda v: v.block_until_ready(), calls)


def worker_reduce_torch(calls):
    import torch

    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    with torch.no_grad():
        return time_reductions("torch", torch, torch.from_numpy, torch.compile, lambda v: v, calls)


# ---- workers (each prints one JSON line)

def worker_ember(calls):
    import ember as tf

    xn, yn = inputs()
    x, y = tf.constant(xn), tf.constant(yn)
    out = {}
    for name, chain in (("arith", arithmetic_chain), ("transc", transcendental_chain)):
        f = tf.function(lambda a, b, chain=chain: chain(tf, a, b))
        f(x, y)
        tf.config.experimental.wait_for_native_kernels()
        out[name] = median_ms(lambda: f(x, y), calls)
    out["stats"] = tf.config.experimental.native_kernel_stats()
    return out


def worker_first_call(_calls):
    """A fresh 100-op function: first call, then calls until one runs native code."""
    import ember as tf

    xn, yn = inputs()
    x, y = tf.constant(xn), tf.constant(yn)
    f = tf.function(lambda a, b: arithmetic_chain(tf, a, b))
    t0 = time.perf_counter()
    f(x, y)
    first = time.perf_counter() - t0
    until = None
    if tf.config.experimental.get_native_kernels() != "off":
        while time.perf_counter() - t0 < 120:
            before = tf.config.experimental.native_kernel_stats()["native_runs"]
            f(x, y)
            if tf.config.experimental.native_kernel_stats()["native_runs"] > before:
                until = time.perf_counter() - t0
                break
    return {"first_ms": first * 1e3, "native_after_ms": None if until is None else until * 1e3,
            "stats": tf.config.experimental.native_kernel_stats()}


def worker_jax(calls):
    if os.environ.get("OMP_NUM_THREADS") == "1":  # XLA's CPU runtime has its own pool
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    import jax
    import jax.numpy as jnp

    xn, yn = inputs()
    x, y = jnp.asarray(xn), jnp.asarray(yn)
    out = {}
    for name, chain in (("arith", arithmetic_chain), ("transc", transcendental_chain)):
        f = jax.jit(lambda a, b, chain=chain: chain(jnp, a, b))
        out[name] = median_ms(lambda: f(x, y).block_until_ready(), calls)
    return out


def worker_torch(calls):
    import torch

    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    xn, yn = inputs()
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)
    out = {}
    for name, chain in (("arith", arithmetic_chain), ("transc", transcendental_chain)):
        f = torch.compile(lambda a, b, chain=chain: chain(torch, a, b))
        with torch.no_grad():
            out[name] = median_ms(lambda: f(x, y), calls)
    return out


WORKERS = {"ember": worker_ember, "first_call": worker_first_call, "jax": worker_jax, "torch": worker_torch,
           "reduce_ember": worker_reduce_ember, "reduce_tf": worker_reduce_tf, "reduce_jax": worker_reduce_jax,
           "reduce_torch": worker_reduce_torch}


def run_worker(kind, calls, env_extra=None, path_var=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    paths = [os.path.join(ROOT, "python"), HERE]
    if path_var and os.environ.get(path_var):
        paths.insert(0, os.environ[path_var])
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    flags = ["-S"] if sys.flags.no_site else []  # as this process: -S keeps an installed ember off the path
    proc = subprocess.run([sys.executable, *flags, __file__, "--worker", kind, "--calls", str(calls)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def native_loops():
    from run import native_baselines

    try:
        return native_baselines()
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time calls by process CPU time (a loaded machine; use with --threads 1)")
    parser.add_argument("--threads", type=int, default=0,
                        help="OMP_NUM_THREADS for every worker and the C++ loops (0: all cores)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat ember's chains and first calls with their references this many times, "
                             "each ember figure timed right beside its reference, and print the median ratio")
    parser.add_argument("--reductions-only", action="store_true",
                        help="only the reductions at the end of fused chains (reduce_sum(x*y+z), softmax, layer norm)")
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.cpu_time:
        os.environ["EMBER_BENCH_CLOCK"] = "cpu"  # inherited by the workers
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.calls)))
        return
    calls = 10 if args.quick else args.calls
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    how = "best" if os.environ.get("BEST", "1") == "1" else "median"
    clock = "process CPU time" if args.cpu_time else "wall time"
    if args.reductions_only:
        reductions(calls, how, clock, threads)
        return
    print(f"# Fused element-wise chains on {SIZE:,} float32, {how} of {calls} calls in ms ({clock}), "
          f"threads: {threads}, load average {open('/proc/loadavg').read().split()[0]}")
    with tempfile.TemporaryDirectory() as cache:
        jit_env = {"EMBER_JIT_CACHE_DIR": cache}
        native, err_n = run_worker("ember", calls, jit_env)
        interp, err_i = run_worker("ember", calls, {"EMBER_JIT": "0"})
        first_off, _ = run_worker("first_call", 1, {"EMBER_JIT": "0"})
        with tempfile.TemporaryDirectory() as fresh:
            first_cold, _ = run_worker("first_call", 1, {"EMBER_JIT_CACHE_DIR": fresh})
            first_warm, _ = run_worker("first_call", 1, {"EMBER_JIT_CACHE_DIR": fresh})
    jax, err_j = run_worker("jax", calls, path_var="EMBER_BENCH_PATH_JAX")
    torch, err_t = run_worker("torch", calls, path_var="EMBER_BENCH_PATH_TORCH")
    loops = native_loops() or {}

    def row(label, ms, ref=None, note=""):
        ratio = f"{ms / ref:6.2f}x" if ms is not None and ref else "      "
        text = f"{ms:9.3f}" if ms is not None else "      n/a"
        print(f"  {label:44s} {text} ms  {ratio} {note}")

    for key, title in (("arith", "arithmetic chain, 100 ops"), ("transc", "transcendental chain, 100 ops")):
        bound = loops.get("arith_chain_loop_ms") if key == "arith" else loops.get("chain_fused_ideal_ms")
        print(f"\n{title} (ratio: to {'the C++ loop' if key == 'arith' else 'the hand-fused C++ bound'})")
        row("ember function, native kernels", native and native[key], bound)
        row("ember function, interpreter (EMBER_JIT=0)", interp and interp[key], bound)
        row("JAX jit", jax and jax[key], bound, "" if jax else f"({err_j})")
        row("torch.compile", torch and torch[key], bound, "" if torch else f"({err_t})")
        if key == "arith":
            row("C++ loop, all threads", loops.get("arith_chain_loop_ms"), bound)
            row("C++ loop, one thread", loops.get("arith_chain_loop_1thread_ms"), bound)
            if native and jax:
                print(f"  ember native / JAX jit: {native[key] / jax[key]:.2f}x")
            if native and torch:
                print(f"  ember native / torch.compile: {native[key] / torch[key]:.2f}x")
        else:
            row("hand-fused C++ (bound)", loops.get("chain_fused_ideal_ms"), bound)
    print("\nfresh 100-op function (first call: trace, optimize, plan, run)")
    row("first call, EMBER_JIT=0", first_off and first_off["first_ms"])
    row("first call, native kernels, empty cache", first_cold and first_cold["first_ms"],
        first_off and first_off["first_ms"])
    row("  ... until a call runs native code", first_cold and first_cold["native_after_ms"])
    row("first call, native kernels, warm disk cache", first_warm and first_warm["first_ms"],
        first_off and first_off["first_ms"])
    row("  ... until a call runs native code", first_warm and first_warm["native_after_ms"])
    if native:
        s = native["stats"]
        print(f"\nJIT: {s['compiled']} kernels compiled in {s['compile_seconds']:.2f} s, "
              f"{s['native_runs']} native runs, {s['interpreted_runs']} interpreted")
    for label, err in (("ember", err_n), ("ember EMBER_JIT=0", err_i)):
        if err:
            print(f"{label} failed: {err}")
    if args.rounds > 1:
        paired_rounds(args.rounds, calls, native, loops, first_off, first_cold)


def paired_ratios(native, loops, first_off, first_cold):
    """One round's ratios of ember to its references, or None for a figure either side lacks."""
    def ratio(a, b):
        return a / b if a is not None and b else None

    return {"load": open("/proc/loadavg").read().split()[0],
            "arith": ratio(native and native["arith"], loops.get("arith_chain_loop_ms")),
            "transc": ratio(native and native["transc"], loops.get("chain_fused_ideal_ms")),
            "first": ratio(first_cold and first_cold["first_ms"], first_off and first_off["first_ms"])}


def paired_rounds(rounds, calls, native, loops, first_off, first_cold):
    """Note [Paired rounds]: a reference timed minutes apart from ember's figure on a machine whose speed
    drifts (other tenants, frequency) gives a ratio that moves with the drift; each round here times ember
    and its reference back to back, and the median over rounds damps what one round caught."""
    import statistics

    print(f"\npaired rounds (ember / reference, each pair timed back to back), {rounds} rounds")
    print(f"  {'round':>5} {'arith/loop':>11} {'transc/bound':>13} {'first call/JIT=0':>17}  load")
    table = [paired_ratios(native, loops, first_off, first_cold)]
    for _ in range(rounds - 1):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as fresh:
            native, _ = run_worker("ember", calls, {"EMBER_JIT_CACHE_DIR": cache})
            loops = native_loops() or {}
            first_off, _ = run_worker("first_call", 1, {"EMBER_JIT": "0"})
            first_cold, _ = run_worker("first_call", 1, {"EMBER_JIT_CACHE_DIR": fresh})
        table.append(paired_ratios(native, loops, first_off, first_cold))
    for i, r in enumerate(table, 1):
        cells = [f"{r[k]:.2f}x" if r[k] is not None else "n/a" for k in ("arith", "transc", "first")]
        print(f"  {i:>5} {cells[0]:>11} {cells[1]:>13} {cells[2]:>17}  {r['load']}")
    medians = {k: statistics.median(v) for k in ("arith", "transc", "first")
               if (v := [r[k] for r in table if r[k] is not None])}
    print("  median " + ", ".join(f"{k} {v:.2f}x" for k, v in medians.items()))


def reductions(calls, how, clock, threads):
    print(f"# Reductions ending fused chains, {how} of {calls} calls in ms ({clock}), threads: {threads}, "
          f"load average {open('/proc/loadavg').read().split()[0]}")
    with tempfile.TemporaryDirectory() as cache:
        runs = [("ember, absorbed, native kernels", "reduce_ember", {"EMBER_JIT_CACHE_DIR": cache}, None),
                ("ember, absorbed, interpreter (EMBER_JIT=0)", "reduce_ember", {"EMBER_JIT": "0"}, None),
                ("ember, not absorbed (EMBER_FUSE_REDUCTIONS=0)", "reduce_ember",
                 {"EMBER_FUSE_REDUCTIONS": "0", "EMBER_JIT_CACHE_DIR": cache}, None),
                ("TensorFlow tf.function", "reduce_tf", {}, "EMBER_BENCH_PATH_TF"),
                ("JAX jit", "reduce_jax", {}, "EMBER_BENCH_PATH_JAX"),
                ("torch.compile", "reduce_torch", {}, "EMBER_BENCH_PATH_TORCH")]
        results = [(label, *run_worker(kind, calls, env, path_var=var)) for label, kind, env, var in runs]
    loops = native_loops() or {}
    add_gbs = loops.get("add_loop_1thread_gbs" if threads == "1" else "add_loop_allthreads_gbs")
    print(f"C++ add loop (bench/native_baselines.cc, {'one thread' if threads == '1' else 'all threads'}): "
          f"{add_gbs} GB/s" if add_gbs else "C++ add loop: n/a (bench_native_baselines not built)")
    sizes = {"sum": 3 * RED_SIZE * 4, "softmax": 2 * ROWS * COLS * 4, "layernorm": 2 * ROWS * COLS * 4}
    for key, title in (("sum", f"reduce_sum(x * y + z), {RED_SIZE:,} float32 (GB/s of input read)"),
                       ("softmax", f"softmax over the last axis of [{ROWS}, {COLS}] (GB/s of input + output)"),
                       ("layernorm", f"layer norm over the last axis of [{ROWS}, {COLS}] (GB/s of input + output)")):
        print(f"\n{title}")
        for label, res, err in results:
            if res is None:
                print(f"  {label:48s}       n/a  ({err})")
                continue
            ms = res[key]
            gbs = sizes[key] / ms / 1e6
            share = f"  {gbs / add_gbs:5.0%} of the add loop" if add_gbs else ""
            print(f"  {label:48s} {ms:9.3f} ms {gbs:7.1f} GB/s{share}")
    stats = results[0][1] and results[0][1]["stats"]
    if stats:
        print(f"\nJIT: {stats['native_runs']} native runs, {stats['interpreted_runs']} interpreted")


if __name__ == "__main__":
    main()

"""Side-by-side benchmarks: ember against TensorFlow, JAX and PyTorch (CPU builds from PyPI) and native
baselines, in one run. Each framework runs in its own subprocess so their thread pools never meet.
Peers that are not installed are skipped. Prints the measurements and the ratios the issues target.

    python3 bench/run.py            # everything
    python3 bench/run.py --quick    # fewer repetitions
"""

import argparse
import json
import os
import subprocess
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def best_per_call(stmt, globals_, number, repeat=7):
    return min(timeit.repeat(stmt, globals=globals_, number=number, repeat=repeat)) / number


def worker(framework, quick):
    import numpy as np

    rng = np.random.default_rng(0)
    small = rng.standard_normal((2, 2)).astype(np.float32)
    big_a = rng.standard_normal(16 << 20).astype(np.float32)
    big_b = rng.standard_normal(16 << 20).astype(np.float32)
    mat_a = rng.standard_normal((1024, 1024)).astype(np.float32)
    mat_b = rng.standard_normal((1024, 1024)).astype(np.float32)
    n_small = 20000 if quick else 200000
    results = {}

    if framework == "ember":
        import ember as tf

        x, y = tf.constant(small), tf.constant(small)
        a, b = tf.constant(big_a), tf.constant(big_b)
        ma, mb = tf.constant(mat_a), tf.constant(mat_b)
        add = lambda: a + b  # noqa: E731
        mm = lambda: tf.linalg.matmul(ma, mb)  # noqa: E731
    elif framework == "torch":
        import torch

        torch.set_num_threads(os.cpu_count())
        x, y = torch.from_numpy(small), torch.from_numpy(small.copy())
        a, b = torch.from_numpy(big_a), torch.from_numpy(big_b)
        ma, mb = torch.from_numpy(mat_a), torch.from_numpy(mat_b)
        add = lambda: a + b  # noqa: E731
        mm = lambda: torch.matmul(ma, mb)  # noqa: E731
    elif framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf

        x, y = tf.constant(small), tf.constant(small)
        a, b = tf.constant(big_a), tf.constant(big_b)
        ma, mb = tf.constant(mat_a), tf.constant(mat_b)
        add = lambda: a + b  # noqa: E731
        mm = lambda: tf.linalg.matmul(ma, mb)  # noqa: E731
    elif framework == "jax":
        import jax
        import jax.numpy as jnp

        x, y = jnp.asarray(small), jnp.asarray(small)
        a, b = jnp.asarray(big_a), jnp.asarray(big_b)
        ma, mb = jnp.asarray(mat_a), jnp.asarray(mat_b)
        add = lambda: (a + b).block_until_ready()  # noqa: E731
        mm = lambda: jnp.matmul(ma, mb).block_until_ready()  # noqa: E731
        (x + y).block_until_ready()
    else:
        raise ValueError(framework)

    if framework == "jax":
        results["tiny_add_us"] = best_per_call("(x + y).block_until_ready()", {"x": x, "y": y}, n_small // 10) * 1e6
    else:
        results["tiny_add_us"] = best_per_call("x + y", {"x": x, "y": y}, n_small) * 1e6
    add()
    results["add16m_gbs"] = 3 * 4 * (16 << 20) / best_per_call("add()", {"add": add}, 5 if quick else 20) / 1e9
    mm()
    results["matmul1024_gflops"] = 2 * 1024**3 / best_per_call("mm()", {"mm": mm}, 3 if quick else 10) / 1e9
    results.update(function_benchmarks(framework, x, y, quick))
    print(json.dumps(results))


def function_benchmarks(framework, x, y, quick):
    """Calling a cached one-op staged function, and tracing a function of 1,000 element-wise ops."""
    n_calls = 5000 if quick else 50000
    out = {}
    if framework == "ember":
        import ember as tf

        f = tf.function(lambda a, b: a + b)
        f(x, y)
        out["function_call_us"] = best_per_call("f(x, y)", {"f": f, "x": x, "y": y}, n_calls) * 1e6

        def trace_once():
            g = tf.function(_thousand_ops(tf.sin))
            g.get_concrete_function(tf.TensorSpec([2, 2], tf.float32))

        out["trace1000_ms"] = best_per_call("t()", {"t": trace_once}, 3, repeat=3) * 1e3
    elif framework == "tensorflow":
        import tensorflow as tf

        f = tf.function(lambda a, b: a + b)
        f(x, y)
        out["function_call_us"] = best_per_call("f(x, y)", {"f": f, "x": x, "y": y}, n_calls // 10) * 1e6

        def trace_once():
            g = tf.function(_thousand_ops(tf.sin))
            g.get_concrete_function(tf.TensorSpec([2, 2], tf.float32))

        out["trace1000_ms"] = best_per_call("t()", {"t": trace_once}, 1, repeat=3) * 1e3
    elif framework == "jax":
        import jax

        f = jax.jit(lambda a, b: a + b)
        f(x, y).block_until_ready()
        out["function_call_us"] = best_per_call("f(x, y)", {"f": f, "x": x, "y": y}, n_calls // 10) * 1e6
    elif framework == "torch":
        import torch

        @torch.jit.script
        def f(a, b):
            return a + b

        for _ in range(3):
            f(x, y)
        out["function_call_us"] = best_per_call("f(x, y)", {"f": f, "x": x, "y": y}, n_calls // 10) * 1e6
    return out


def _thousand_ops(op):
    def body(v):
        for _ in range(1000):
            v = op(v)
        return v

    return body


def worker_env(framework, env):
    """EMBER_BENCH_PATH_JAX (or _TORCH, ...) names a directory of packages for that framework's worker alone
    (e.g. `pip install --target DIR jax jaxlib`), so a peer whose pins clash with TensorFlow's (numpy,
    ml_dtypes) can be measured without changing the environment the tests run in."""
    extra = os.environ.get(f"EMBER_BENCH_PATH_{framework.upper()}")
    if extra:
        env = dict(env, PYTHONPATH=extra + os.pathsep + env.get("PYTHONPATH", ""))
    return env


def run_worker(framework, quick):
    cmd = [sys.executable, __file__, "--worker", framework] + (["--quick"] if quick else [])
    env = worker_env(framework, dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        if "ModuleNotFoundError" in proc.stderr:
            return None, "not installed"
        return None, last
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


NATIVE_BUILDS = ("build/py", "build/dev", "build")


def native_baselines():
    """The JSON that bench_native_baselines prints (bench/native_baselines.cc; bench/executor.py shares it),
    or None when it is not built. EMBER_NATIVE_BASELINES=/path/to/binary picks the binary instead of the
    first of NATIVE_BUILDS that has one."""
    exe = os.environ.get("EMBER_NATIVE_BASELINES")
    if exe is None:
        candidates = (os.path.join(ROOT, build, "bench_native_baselines") for build in NATIVE_BUILDS)
        exe = next((c for c in candidates if os.path.exists(c)), None)
    if exe is None or not os.path.exists(exe):
        return None
    return json.loads(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return

    results = {}
    for fw in ("ember", "torch", "tensorflow", "jax"):
        r, err = run_worker(fw, args.quick)
        if r is None:
            print(f"{fw:>11}: skipped ({err})")
            continue
        results[fw] = r
        print(f"{fw:>11}: tiny x+y {r['tiny_add_us']:7.3f} us | add 16M {r['add16m_gbs']:6.1f} GB/s | "
              f"matmul 1024 {r['matmul1024_gflops']:6.1f} GFLOP/s | function call "
              f"{r.get('function_call_us', float('nan')):7.3f} us | trace 1000 ops "
              f"{r.get('trace1000_ms', float('nan')):8.2f} ms")
    native = native_baselines()
    if native:
        print(f"{'native':>11}: plain loop add 16M {native['add_loop_1thread_gbs']:.1f} GB/s (1 thread), "
              f"{native['add_loop_allthreads_gbs']:.1f} GB/s ({native['threads']} threads) | "
              f"dnnl_sgemm 1024 {native['dnnl_sgemm_gflops']:.1f} GFLOP/s")
    e = results.get("ember")
    if not e:
        return
    print("\nratios (issue 2 targets):")
    if "torch" in results:
        print(f"  eager x+y time, ember / PyTorch        = {e['tiny_add_us'] / results['torch']['tiny_add_us']:.3f}"
              "  (target <= 0.25)")
    if "tensorflow" in results:
        print(f"  eager x+y time, ember / TensorFlow     = "
              f"{e['tiny_add_us'] / results['tensorflow']['tiny_add_us']:.3f}  (target <= 0.10)")
    if "jax" in results:
        print(f"  eager x+y time, ember / JAX            = {e['tiny_add_us'] / results['jax']['tiny_add_us']:.3f}")
    if native:
        print(f"  matmul GFLOP/s, ember / dnnl_sgemm     = {e['matmul1024_gflops'] / native['dnnl_sgemm_gflops']:.3f}"
              "  (target >= 0.95)")
        best_loop = max(native["add_loop_1thread_gbs"], native["add_loop_allthreads_gbs"])
        print(f"  add 16M GB/s, ember / plain C++ loop   = {e['add16m_gbs'] / best_loop:.3f}"
              "  (target >= 0.80; loop at its best thread count)")
    print("\nratios (issue 3 targets):")
    targets = {"jax": "<= 0.25 (JAX jit dispatch)", "torch": "<= 0.33 (TorchScript)",
               "tensorflow": "<= 0.10 (tf.function)"}
    for fw, target in targets.items():
        if fw in results and "function_call_us" in results[fw]:
            ratio = e["function_call_us"] / results[fw]["function_call_us"]
            print(f"  cached function call, ember / {fw:<10} = {ratio:.3f}  (target {target})")
    if "tensorflow" in results and "trace1000_ms" in results["tensorflow"]:
        speedup = results["tensorflow"]["trace1000_ms"] / e["trace1000_ms"]
        print(f"  tracing 1,000 ops, TensorFlow / ember   = {speedup:.1f}x faster  (target >= 5x)")


if __name__ == "__main__":
    main()

"""Optimizing-executor benchmarks (issue 5), side by side in one run, one subprocess per framework:

    python3 bench/executor.py [--quick] [--torch-staged {compile,torchscript}]

Workloads, each written once (TF2 style for ember and TensorFlow; the same maths for JAX and PyTorch):
- L2HMC sampling: one Metropolis-Hastings transition of 200 chains on a strongly correlated 2-D Gaussian,
  10 leapfrog steps calling width-10 MLPs, the energy's gradient by autodiff inside each step
  (bench/l2hmc_model.py, shared with bench/autodiff.py). Small ops: dispatch and scheduling dominate.
- Element-wise chain: 100 element-wise ops (scalar and tensor add/mul/sub, sin, tanh, exp, maximum) on
  2**20 float32 values and a second input of that size. Memory-bound unless fused.
- MLP forward 784-256-256-10 (relu, relu, logits) at batch 64 and 512, float32.

The element-wise chain also gets a row "hand-fused C++ (bound)": the same 100 ops fused by hand in C++ with
ember's own float math (bench_native_baselines, found as bench/run.py finds it, or named by
EMBER_NATIVE_BASELINES=/path/to/binary). No fusion of these ops runs faster, so ember eager's time over it
bounds the speed-up any fused ember function can have over ember eager: a bound, not a target. Its time is
the best of its runs (at the best of a few tile sizes), checked against a float64 loop in the C++ program.

Measured: ember eager and ember.function, TensorFlow eager and tf.function, JAX jit, PyTorch eager and
torch.compile (inductor; with ``--torch-staged torchscript``, or when torch.compile fails, TorchScript
``torch.jit.trace`` under its own label). Each call is timed alone after warm-up; tables show the median per
call and the first call (tracing and compiling). Every result is checked against a float64 NumPy
reference, so a fast wrong answer shows up as FAIL. Thread settings: every framework uses all cores
(PyTorch via ``torch.set_num_threads(os.cpu_count())``, the others by default); NumPy's BLAS gets one
thread so its idle pool does not take a core. On a 2-core machine a process busy elsewhere ruins timings
(a descheduled pool thread stalls every parallel op), so the parent measures, from /proc/stat, how much CPU
other processes used while each worker ran, reruns a disturbed worker (up to 3 runs, the quietest counts)
and says so in the output.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy starts its BLAS pool

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from workers import QUIET_CORES, others_cores_during, worker_env  # noqa: E402

from l2hmc_model import BATCH, D, jax_port, l2hmc_params, numpy_transition, tf_style, torch_port  # noqa: E402
from run import NATIVE_BUILDS, native_baselines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHAIN_SIZE = 1 << 20
CHAIN_ROUNDS = 10  # 10 ops per round
MLP_BATCHES = (64, 512)
WORKLOADS = ["l2hmc", "chain"] + [f"mlp{b}" for b in MLP_BATCHES]
TITLES = {
    "l2hmc": f"L2HMC sampling: one transition, {BATCH} chains, 10 leapfrog steps, width-10 MLPs",
    "chain": f"Element-wise chain: {CHAIN_ROUNDS * 10} ops on {CHAIN_SIZE:,} float32",
    **{f"mlp{b}": f"MLP forward 784-256-256-10, batch {b}, float32" for b in MLP_BATCHES},
}
SHORT = {"l2hmc": "L2HMC sampling", "chain": "element-wise chain", **{f"mlp{b}": f"MLP batch {b}" for b in MLP_BATCHES}}
VARIANTS = ["ember eager", "ember function", "TF eager", "TF function", "JAX jit", "PyTorch eager",
            "PyTorch staged"]
# What "PyTorch staged" is per --torch-staged mode; a workload whose torch.compile fails shows TorchScript.
TORCH_STAGED = {"compile": "torch.compile", "torchscript": "TorchScript (jit.trace)"}


# ---------------------------------------------------------------------------------------------------------
# The workloads, written once over a module `m` (ember, tensorflow, jax.numpy, torch or numpy).

def elementwise_chain(m, x, y):
    """100 element-wise ops; values stay bounded (exp only of tanh, y within [-2, 2])."""
    v = x
    for i in range(CHAIN_ROUNDS):
        c = 0.1 * i / CHAIN_ROUNDS
        v = v * (0.9 - c)
        v = v + y
        v = m.sin(v)
        v = v - (0.25 + c)
        v = m.tanh(v)
        v = m.exp(v)
        v = v * y
        v = m.maximum(v, y)
        v = v - y
        v = v * (0.5 + c)
    return v


def mlp_forward(matmul, relu, params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = relu(matmul(x, w1) + b1)
    h = relu(matmul(h, w2) + b2)
    return matmul(h, w3) + b3


def make_inputs():
    """Deterministic inputs; every worker and the reference build the same ones."""
    rng = np.random.default_rng(0)
    # Chains start at draws from the target N(0, [[1, .99], [.99, 1]]), as a running sampler's state is.
    z = rng.standard_normal((BATCH, D))
    x0 = np.stack([z[:, 0], 0.99 * z[:, 0] + np.sqrt(1 - 0.99 ** 2) * z[:, 1]], axis=1).astype(np.float32)
    data = {
        "l2hmc_params": l2hmc_params(np.random.default_rng(1)),
        "x0": x0,
        "v0": rng.standard_normal((BATCH, D)).astype(np.float32),
        "u": rng.uniform(0, 1, BATCH).astype(np.float32),
        "chain_x": rng.uniform(-1, 1, CHAIN_SIZE).astype(np.float32),
        "chain_y": np.clip(rng.standard_normal(CHAIN_SIZE), -2, 2).astype(np.float32),
        "mlp_params": [rng.normal(0, 0.05, s).astype(np.float32)
                       for s in [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]],
    }
    for b in MLP_BATCHES:
        data[f"mlp_x{b}"] = rng.standard_normal((b, 784)).astype(np.float32)
    return data


def references(data):
    """float64 NumPy results, as lists of arrays like the workers return."""
    refs = {"l2hmc": list(numpy_transition(data["l2hmc_params"], data["x0"], data["v0"], data["u"])),
            "chain": [elementwise_chain(np, data["chain_x"].astype(np.float64), data["chain_y"].astype(np.float64))]}
    p64 = [p.astype(np.float64) for p in data["mlp_params"]]
    for b in MLP_BATCHES:
        refs[f"mlp{b}"] = [mlp_forward(np.matmul, lambda z: np.maximum(z, 0.0), p64, data[f"mlp_x{b}"])]
    return refs


# ---------------------------------------------------------------------------------------------------------
# Cases per framework: (workload, variant, build), where build() returns a zero-argument call that runs the
# workload once and returns its outputs (finished computing), and a converter of those outputs to NumPy.

def tf_cases(tf, prefix, data):
    """ember and TensorFlow run the very same TF2-style code."""
    to_np = lambda outs: [t.numpy() for t in outs]  # noqa: E731
    cases = []

    def l2hmc(staged):
        def build():
            model = tf_style(tf, [tf.Variable(p) for p in data["l2hmc_params"]])
            fn = tf.function(model.transition) if staged else model.transition
            x0, v0, u = (tf.constant(data[k]) for k in ("x0", "v0", "u"))
            return lambda: fn(x0, v0, u), to_np
        return build

    def chain(staged):
        def build():
            body = lambda x, y: elementwise_chain(tf, x, y)  # noqa: E731
            fn = tf.function(body) if staged else body
            x, y = tf.constant(data["chain_x"]), tf.constant(data["chain_y"])
            return lambda: [fn(x, y)], to_np
        return build

    def mlp(b, staged):
        def build():
            params = [tf.Variable(p) for p in data["mlp_params"]]
            body = lambda x: mlp_forward(tf.matmul, tf.nn.relu, params, x)  # noqa: E731
            fn = tf.function(body) if staged else body
            x = tf.constant(data[f"mlp_x{b}"])
            return lambda: [fn(x)], to_np
        return build

    for staged, kind in ((False, "eager"), (True, "function")):
        label = f"{prefix} {kind}"
        cases += [("l2hmc", label, l2hmc(staged)), ("chain", label, chain(staged))]
        cases += [(f"mlp{b}", label, mlp(b, staged)) for b in MLP_BATCHES]
    return cases


def jax_cases(data):
    import jax
    import jax.numpy as jnp

    def to_np(outs):
        return [np.asarray(t) for t in outs]

    def ready(outs):
        return [t.block_until_ready() for t in outs]

    def l2hmc():
        model = jax_port(jax, jnp)
        fn = jax.jit(model.transition)
        p = [jnp.asarray(a) for a in data["l2hmc_params"]]
        x0, v0, u = (jnp.asarray(data[k]) for k in ("x0", "v0", "u"))
        return lambda: ready(fn(p, x0, v0, u)), to_np

    def chain():
        fn = jax.jit(lambda x, y: elementwise_chain(jnp, x, y))
        x, y = jnp.asarray(data["chain_x"]), jnp.asarray(data["chain_y"])
        return lambda: ready([fn(x, y)]), to_np

    def mlp(b):
        def build():
            fn = jax.jit(lambda p, x: mlp_forward(jnp.matmul, jax.nn.relu, p, x))
            p = [jnp.asarray(a) for a in data["mlp_params"]]
            x = jnp.asarray(data[f"mlp_x{b}"])
            return lambda: ready([fn(p, x)]), to_np
        return build

    return [("l2hmc", "JAX jit", l2hmc), ("chain", "JAX jit", chain)] + \
        [(f"mlp{b}", "JAX jit", mlp(b)) for b in MLP_BATCHES]


def torch_cases(data, staged_mode, notes):
    import torch

    torch.set_num_threads(os.cpu_count())

    def to_np(outs):
        return [t.detach().numpy() for t in outs]

    def stage(workload, fn, example_args, fn_to_trace=None):
        """torch.compile (inductor, static shapes, one whole graph), or TorchScript's trace of
        ``fn_to_trace`` (default ``fn``) when asked or when compiling fails; the tables say which ran."""
        if staged_mode == "compile":
            compiled = torch.compile(fn, fullgraph=True, dynamic=False)
            try:
                compiled(*example_args)
                return compiled
            except Exception as e:  # noqa: BLE001 - reported, then the fallback is measured
                message = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
                notes.setdefault("torch.compile failed", {})[workload] = message
        return torch.jit.trace(fn_to_trace or fn, example_args, check_trace=False)

    def l2hmc(staged):
        def build():
            params = [torch.from_numpy(a) for a in data["l2hmc_params"]]
            # Eager PyTorch's own idiom for the energy's gradient is torch.autograd.grad, which torch.jit.trace
            # also records; torch.compile traces torch.func.grad into its graph instead.
            model = torch_port(torch, params, "autograd")
            args = tuple(torch.from_numpy(data[k]) for k in ("x0", "v0", "u"))
            if not staged:
                return lambda: list(model.transition(*args)), to_np
            fn = stage("l2hmc", torch_port(torch, params, "func").transition, args, model.transition)
            return lambda: list(fn(*args)), to_np
        return build

    def chain(staged):
        def build():
            body = lambda x, y: elementwise_chain(torch, x, y)  # noqa: E731
            args = (torch.from_numpy(data["chain_x"]), torch.from_numpy(data["chain_y"]))
            fn = stage("chain", body, args) if staged else body
            return lambda: [fn(*args)], to_np
        return build

    def mlp(b, staged):
        def build():
            params = [torch.from_numpy(a) for a in data["mlp_params"]]
            body = lambda x: mlp_forward(torch.matmul, torch.relu, params, x)  # noqa: E731
            x = torch.from_numpy(data[f"mlp_x{b}"])
            fn = stage(f"mlp{b}", body, (x,)) if staged else body
            return lambda: [fn(x)], to_np
        return build

    cases = []
    for staged, label in ((False, "PyTorch eager"), (True, "PyTorch staged")):
        cases += [("l2hmc", label, l2hmc(staged)), ("chain", label, chain(staged))]
        cases += [(f"mlp{b}", label, mlp(b, staged)) for b in MLP_BATCHES]
    return cases


def measure(build, seconds, min_calls=5, max_calls=200_000):
    """Build and first call (tracing, compiling), warm-up, then each call timed alone. Returns the
    converter to NumPy, the first and the last outputs, the first call's time and the timed calls' median."""
    t0 = time.perf_counter()
    call, to_np = build()
    first_out = call()
    first = time.perf_counter() - t0
    warm_until = time.perf_counter() + 0.2 * seconds
    for _ in range(2):
        call()
    while time.perf_counter() < warm_until:
        call()
    samples = []
    start = time.perf_counter()
    while len(samples) < min_calls or (time.perf_counter() - start < seconds and len(samples) < max_calls):
        t0 = time.perf_counter()
        last_out = call()
        samples.append(time.perf_counter() - t0)
    return to_np, first_out, last_out, first, statistics.median(samples), len(samples)


def worker(framework, quick, staged_mode, out_path):
    data = make_inputs()
    seconds = 0.3 if quick else 1.0
    notes = {}
    if framework == "ember":
        import ember

        cases, version = tf_cases(ember, "ember", data), ember.__version__
    elif framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow

        cases, version = tf_cases(tensorflow, "TF", data), tensorflow.__version__
    elif framework == "jax":
        import jax

        cases, version = jax_cases(data), jax.__version__
    elif framework == "torch":
        import torch

        cases, version = torch_cases(data, staged_mode, notes), torch.__version__
    else:
        raise ValueError(framework)
    results, outputs = {"version": version, "times": {}, "errors": {}, "notes": notes}, {}
    for workload, variant, build in cases:
        key = f"{workload}/{variant}"
        try:
            to_np, first_out, last_out, first, median, calls = measure(build, seconds)
            for which, outs in (("first", first_out), ("last", last_out)):
                for i, a in enumerate(to_np(outs)):
                    outputs[f"{key}/{which}/{i}"] = a
            results["times"][key] = {"median": median, "first": first, "calls": calls}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            results["errors"][key] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
    np.savez(out_path, **outputs)
    print(json.dumps(results))


# ---------------------------------------------------------------------------------------------------------
# The parent: run the workers, check the results, print the tables and the targets.

def check(workload, outs, ref, u):
    """Largest error relative to the reference's scale; None when the outputs do not match at all.

    L2HMC: the acceptance probabilities, and the next states of chains whose accept decision is clear
    (|u - p| > 1e-3: a float32 rounding may flip a coin toss that lands on the edge)."""
    if len(outs) != len(ref) or any(o.shape != r.shape for o, r in zip(outs, ref)):
        return None
    errs = []
    for i, (o, r) in enumerate(zip(outs, ref)):
        if not np.all(np.isfinite(o)):
            return float("inf")
        mask = np.abs(u - ref[1]) > 1e-3 if workload == "l2hmc" and i == 0 else np.ones(r.shape[:1], bool)
        errs.append(float(np.max(np.abs(o[mask] - r[mask]) / (1.0 + np.abs(r[mask])))))
    return max(errs)


TOLERANCE = 1e-4  # on |out - ref| / (1 + |ref|): float32 results against float64 ones
ATTEMPTS = 3


def run_worker(framework, args, out_path):
    """Runs one framework's worker; returns its results (with "others_cores": the cores other processes
    kept busy meanwhile, on average) or None, and an error."""
    env = worker_env(framework)
    cmd = [sys.executable, __file__, "--worker", framework, "--out", out_path,
           "--torch-staged", args.torch_staged] + (["--quick"] if args.quick else [])
    proc, others = others_cores_during(lambda: subprocess.run(cmd, capture_output=True, text=True, env=env))
    if proc.returncode != 0:
        if "ModuleNotFoundError" in proc.stderr:
            return None, "not installed"
        return None, (proc.stderr.strip().splitlines() or ["?"])[-1]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    if others is not None:
        results["others_cores"] = others
    return results, None


NATIVE_CHAIN = "hand-fused C++ (bound)"


def native_chain():
    """The hand-fused C++ chain (Note [Hand-fused chain] in bench/native_baselines.cc) as a timing like the
    workers' (its best run, not a median), and the cores other processes kept busy meanwhile; or None and
    why it is missing."""
    try:
        native, others = others_cores_during(native_baselines)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        return None, None, f"bench_native_baselines failed: {e}"
    if native is None:
        where = f"EMBER_NATIVE_BASELINES or {', '.join(NATIVE_BUILDS)}"
        return None, None, f"bench_native_baselines not found ({where})"
    if "chain_fused_ideal_ms" not in native:
        return None, None, "bench_native_baselines predates this measurement; rebuild it"
    timing = {"median": native["chain_fused_ideal_ms"] / 1e3, "first": None,
              "calls": native["chain_fused_ideal_runs"], "error": native["chain_fused_ideal_max_rel_err"]}
    return timing, others, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--torch-staged", choices=sorted(TORCH_STAGED), default="compile")
    parser.add_argument("--worker")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick, args.torch_staged, args.out)
        return

    started = time.perf_counter()
    data = make_inputs()
    refs = references(data)
    times, errors, notes, failed, busy = {}, {}, {}, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for fw in ("ember", "tensorflow", "jax", "torch"):
            # A worker that shared the machine with other busy processes runs again (up to ATTEMPTS in
            # all); the quietest run counts.
            r, err, out_path = None, None, None
            for attempt in range(ATTEMPTS):
                path = os.path.join(tmp, f"{fw}{attempt}.npz")
                run, err = run_worker(fw, args, path)
                if run is None:
                    break
                if r is None or run.get("others_cores", 0) < r.get("others_cores", 0):
                    r, out_path = run, path
                if r.get("others_cores", 0) <= QUIET_CORES:
                    break
            if r is None:
                failed.append(f"{fw}: skipped ({err})")
                continue
            notes.update(r["notes"])
            notes[fw] = r["version"]
            if r.get("others_cores", 0) > QUIET_CORES:
                busy.append(f"{fw} {r['others_cores']:.2f}")
            errors.update(r["errors"])
            outputs = np.load(out_path)
            for key, t in r["times"].items():
                workload = key.split("/")[0]
                errs = []
                for which in ("first", "last"):
                    n = len(refs[workload])
                    outs = [outputs[f"{key}/{which}/{i}"] for i in range(n) if f"{key}/{which}/{i}" in outputs]
                    errs.append(check(workload, outs, refs[workload], data["u"]))
                t["error"] = None if None in errs else max(errs)
                times[key] = t

    native, others, native_missing = native_chain()
    if native:
        times[f"chain/{NATIVE_CHAIN}"] = native
    if others is not None and others > QUIET_CORES:
        busy.append(f"native {others:.2f}")

    compile_failed = notes.get("torch.compile failed", {})

    def label(variant, workload):
        if variant != "PyTorch staged":
            return variant
        return TORCH_STAGED["torchscript" if workload in compile_failed else args.torch_staged]

    versions = ", ".join(f"{fw} {notes[fw]}" for fw in ("ember", "tensorflow", "jax", "torch") if fw in notes)
    print(f"bench/executor.py: {os.cpu_count()} CPU threads; {versions}")
    for line in failed:
        print(f"  {line}")
    if busy:
        print(f"  WARNING: other processes kept CPU cores busy during the workers (cores, on average, in the "
              f"quietest of {ATTEMPTS} runs: {', '.join(busy)} of {os.cpu_count()}); timings are disturbed")
    for workload, message in compile_failed.items():
        print(f"  {SHORT[workload]}: torch.compile failed, {TORCH_STAGED['torchscript']} measured instead: {message}")

    summary, wrong = [], []

    def ms(key):
        t = times.get(key)
        return t["median"] * 1e3 if t else None

    def target(workload, line, ember_key, peer_keys, goal):
        e = ms(f"{workload}/{ember_key}")
        peers = {k: ms(f"{workload}/{k}") for k in peer_keys if ms(f"{workload}/{k}") is not None}
        if e is None or not peers:
            missing = ember_key if e is None else "any peer"
            summary.append(f"  {SHORT[workload]:<19} {line:<44} not measured ({missing} missing)")
            return
        best = min(peers, key=peers.get)
        speedup = peers[best] / e
        versus = label(best, workload) if len(peers) == 1 else f"{label(best, workload)} (fastest)"
        if goal is None:
            verdict = "bound, not a target"
        else:
            verdict = f"target >= {goal:g}x  " + ("met" if speedup >= goal else "MISSED")
        text = f"{line:<44} {speedup:6.2f}x  vs {versus:<28} {verdict}"
        print(f"  {text}")
        summary.append(f"  {SHORT[workload]:<19} {text}")

    for workload in WORKLOADS:
        print(f"\n{TITLES[workload]}")
        print(f"  {'':<26}{'median ms':>11}{'first call ms':>15}{'calls':>8}{'max rel err':>13}  check")
        for v in VARIANTS + ([NATIVE_CHAIN] if workload == "chain" else []):
            key = f"{workload}/{v}"
            if key in errors:
                print(f"  {label(v, workload):<26}  error: {errors[key]}")
                wrong.append(f"{label(v, workload)} on {SHORT[workload]}: error")
                continue
            t = times.get(key)
            if t is None:
                continue
            err = t["error"]
            ok = err is not None and err <= TOLERANCE
            if not ok:
                problem = "shape mismatch" if err is None else f"error {err:.2e}"
                wrong.append(f"{label(v, workload)} on {SHORT[workload]}: {problem}")
            err_text = "mismatch" if err is None else f"{err:.1e}"
            first_text = "-" if t["first"] is None else f"{t['first'] * 1e3:.1f}"
            print(f"  {label(v, workload):<26}{t['median'] * 1e3:11.3f}{first_text:>15}{t['calls']:8d}"
                  f"{err_text:>13}  {'ok' if ok else 'FAIL'}")
        if workload == "chain" and native_missing:
            print(f"  {NATIVE_CHAIN}: not measured ({native_missing})")
        staged_peers = ["TF function", "JAX jit", "PyTorch staged"]
        all_peers = staged_peers + ["TF eager", "PyTorch eager"]
        if workload in ("l2hmc", "chain"):
            target(workload, "ember function vs ember eager", "ember function", ["ember eager"], 5)
        if workload == "l2hmc":
            for peer in staged_peers:
                target(workload, f"ember function vs {label(peer, workload)}", "ember function", [peer], 2)
        elif workload == "chain":
            target(workload, "ember function vs fastest staged peer", "ember function", staged_peers, 1)
            target(workload, "ideal fusion vs ember eager", NATIVE_CHAIN, ["ember eager"], None)
        else:
            target(workload, "ember function vs fastest peer", "ember function", all_peers, 1)

    print("\nSummary (speed-up = peer's median time / ember's; ember function must be this much faster):")
    for line in summary:
        print(line)
    print("Correctness: " + ("all results match the float64 NumPy reference (max rel err <= "
                             f"{TOLERANCE:g})" if not wrong else "WRONG OR MISSING RESULTS: " + "; ".join(wrong)))
    print("Machine: " + (f"BUSY with other processes ({', '.join(busy)} cores), timings disturbed" if busy
                         else f"quiet (other processes below {QUIET_CORES:g} core during every worker)"))
    print(f"Total wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
